"""Sonde from Python: a pure-Python package over ``libsonde.so.1`` with ctypes.

It covers sessions and buffers (records delivered to a Python callback or kept for iteration),
emitting from Python, buffer statistics, profile arrays, the stack-distance calculator with
reuse histograms and miss-ratio curves, the trace analyzer (:func:`analyze` returns what
``sonde analyze --json`` writes) and trace reading (memory references, program events and
their tables). Every failed call raises :class:`SondeError`.

The library is loaded from ``SONDE_LIBRARY`` when that is set, else from the package's own
folder or the prefix the package was installed into, else through the dynamic loader.
``__version__`` is the loaded library's version (``sonde_get_version``). See docs/python.md.
"""
import ctypes as _ctypes

from ._lib import SondeError, lib as _cdll, path as library_path, status_name, status_string
from .core import (POLICY_DISCARD, POLICY_LOSSLESS, RECORD_FLAG_TIMESTAMP, RECORD_KIND_CALL, RECORD_KIND_LOSS,
                   RECORD_KIND_MEMREF, RECORD_KIND_PROFILER, RECORD_KIND_THREAD, RECORD_KIND_TRACER,
                   RECORD_KIND_USER, RECORD_KIND_USER_MAX, Buffer, BufferStats, Record, Session, finalize,
                   initialize, is_initialized, timestamp)
from .profile import ProfileArray, ProfileBuffer, counter_id_parts
from .stackdist import INFINITY, Bin, Histogram, MrcPoint, StackDistance
from .trace import (EVENT_LOSS, EVENT_MARK, EVENT_METHOD_ENTER, EVENT_METHOD_LEAVE, EVENT_RANGE_POP,
                    EVENT_RANGE_PUSH, EVENT_THREAD_END, EVENT_THREAD_NAME, EVENT_THREAD_START, MEMREF_IFETCH,
                    MEMREF_MARKER, MEMREF_MODIFY, MEMREF_READ, MEMREF_WRITE, Event, EventInfo, Memref, Method,
                    Module, Thread, TraceReader, TraceWriter)
from .analysis import Analyzer, analyze


def version():
    """The loaded library's version as ``(major, minor, patch)`` (``sonde_get_version``)."""
    major, minor, patch = _ctypes.c_uint32(), _ctypes.c_uint32(), _ctypes.c_uint32()
    _cdll.sonde_get_version(_ctypes.byref(major), _ctypes.byref(minor), _ctypes.byref(patch))
    return major.value, minor.value, patch.value


__version__ = "%d.%d.%d" % version()
"""The loaded library's version, "major.minor.patch"."""

__all__ = [
    "SondeError", "status_name", "status_string", "library_path", "version", "__version__",
    "initialize", "finalize", "is_initialized", "timestamp", "Session", "Buffer", "BufferStats", "Record",
    "POLICY_LOSSLESS", "POLICY_DISCARD", "RECORD_FLAG_TIMESTAMP", "RECORD_KIND_THREAD", "RECORD_KIND_LOSS",
    "RECORD_KIND_TRACER", "RECORD_KIND_PROFILER", "RECORD_KIND_MEMREF", "RECORD_KIND_CALL", "RECORD_KIND_USER",
    "RECORD_KIND_USER_MAX", "ProfileBuffer", "ProfileArray", "counter_id_parts", "StackDistance", "Histogram",
    "Bin", "MrcPoint", "INFINITY", "Analyzer", "analyze", "TraceReader", "TraceWriter", "Memref", "Event",
    "EventInfo", "Method", "Module", "Thread", "MEMREF_READ", "MEMREF_WRITE", "MEMREF_MODIFY", "MEMREF_IFETCH",
    "MEMREF_MARKER", "EVENT_METHOD_ENTER", "EVENT_METHOD_LEAVE", "EVENT_THREAD_START", "EVENT_THREAD_END",
    "EVENT_THREAD_NAME", "EVENT_MARK", "EVENT_RANGE_PUSH", "EVENT_RANGE_POP", "EVENT_LOSS",
]
