"""Loading libsonde.so.1, the C structures of the public headers and the status check.

The library is found in this order: the path in the environment variable ``SONDE_LIBRARY``
when it is set; a ``libsonde.so.1`` in the package's own folder; the one of the prefix the
package was installed into (``_config.LIBDIR_FROM_PACKAGE``, written by ``meson install``);
last the dynamic loader's search (``LD_LIBRARY_PATH``, ``ldconfig``'s cache).
"""
import atexit
import ctypes
import os
import threading

c_u8 = ctypes.c_uint8
c_u16 = ctypes.c_uint16
c_u32 = ctypes.c_uint32
c_u64 = ctypes.c_uint64
c_vp = ctypes.c_void_p
c_size = ctypes.c_size_t
c_bool = ctypes.c_bool
c_char_p = ctypes.c_char_p
P = ctypes.POINTER

SONAME = "libsonde.so.1"


class SondeError(Exception):
    """A Sonde call failed.

    ``status`` is the ``sonde_status_t`` value, ``name`` its enum name (``sonde_status_name``,
    e.g. ``"SONDE_STATUS_ERROR_INVALID_ARGUMENT"``), ``description`` its sentence
    (``sonde_status_string``) and ``detail`` the object's own message when it has one (the
    analyzer's or a trace reader's error), else ``""``.
    """

    def __init__(self, status, name, description, detail="", call=""):
        self.status = status
        self.name = name
        self.description = description
        self.detail = detail
        self.call = call
        text = "%s: %s (%s)" % (call, description, name) if call else "%s (%s)" % (description, name)
        if detail:
            text += ": " + detail
        super().__init__(text)


class Id(ctypes.Structure):
    """A session or buffer id: ``{ uint64_t handle; }`` (sonde/defs.h)."""

    _fields_ = [("handle", c_u64)]


class RecordHeader(ctypes.Structure):
    """``sonde_record_header_t`` (sonde/record.h)."""

    _fields_ = [("size", c_u32), ("kind", c_u16), ("flags", c_u16)]


class BufferProperty(ctypes.Structure):
    """``sonde_buffer_property_t`` (sonde/buffer.h)."""

    _fields_ = [("kind", c_u32), ("reserved", c_u32), ("value", c_u64)]


class BufferStatsStruct(ctypes.Structure):
    """``sonde_buffer_stats_t`` (sonde/buffer.h)."""

    _fields_ = [("struct_size", c_u32), ("reserved", c_u32), ("records_emitted", c_u64),
                ("records_delivered", c_u64), ("records_dropped", c_u64), ("bytes_delivered", c_u64),
                ("callbacks", c_u64), ("callback_failures", c_u64)]


class SessionProperties(ctypes.Structure):
    """``sonde_session_properties_t`` (sonde/session.h)."""

    _fields_ = [("struct_size", c_u32), ("flags", c_u32), ("name", c_char_p)]


class ProfileView(ctypes.Structure):
    """``sonde_profile_view_t`` (sonde/profile.h)."""

    _fields_ = [("struct_size", c_u32), ("bucket", c_u32), ("bucket_base", c_vp), ("base", c_vp),
                ("chunk_size", c_u64), ("record_size", c_u32), ("num_records", c_u32),
                ("bucket_mask", c_u32), ("reserved", c_u32)]


class StackdistOptions(ctypes.Structure):
    """``sonde_stackdist_options_t`` (sonde/stackdist.h)."""

    _fields_ = [("struct_size", c_u32), ("flags", c_u32), ("initial_capacity", c_u64), ("sampling", c_u32),
                ("workers", c_u32), ("sample_rate", ctypes.c_double), ("sample_size", c_u64), ("seed", c_u64)]


class HistogramSummary(ctypes.Structure):
    """``sonde_histogram_summary_t`` (sonde/stackdist.h)."""

    _fields_ = [("struct_size", c_u32), ("sampling", c_u32), ("accesses", c_u64), ("reads", c_u64),
                ("writes", c_u64), ("infinite", c_u64), ("infinite_reads", c_u64), ("infinite_writes", c_u64),
                ("sampled", c_u64), ("sample_rate", ctypes.c_double), ("max_distance", c_u64)]


class HistogramBin(ctypes.Structure):
    """``sonde_histogram_bin_t`` (sonde/stackdist.h)."""

    _fields_ = [("first", c_u64), ("last", c_u64), ("count", c_u64), ("reads", c_u64), ("writes", c_u64)]


class MrcPoint(ctypes.Structure):
    """``sonde_mrc_point_t`` (sonde/stackdist.h)."""

    _fields_ = [("cache_lines", c_u64), ("miss_ratio", ctypes.c_double)]


class MemrefStruct(ctypes.Structure):
    """``sonde_memref_t`` (sonde/trace.h): 32 bytes."""

    _fields_ = [("address", c_u64), ("pc", c_u64), ("timestamp", c_u64), ("shard", c_u32), ("type", c_u16),
                ("size", c_u16)]


class TraceWriterProperties(ctypes.Structure):
    """``sonde_trace_writer_properties_t`` (sonde/trace.h)."""

    _fields_ = [("struct_size", c_u32), ("compression_level", ctypes.c_int32), ("chunk_records", c_u32),
                ("reserved", c_u32)]


class TraceEventStruct(ctypes.Structure):
    """``sonde_trace_event_t`` (sonde/trace_events.h): 32 bytes."""

    _fields_ = [("timestamp", c_u64), ("value", c_u64), ("id", c_u32), ("shard", c_u32), ("kind", c_u32),
                ("aux", c_u32)]


class TraceMethodStruct(ctypes.Structure):
    """``sonde_trace_method_t`` (sonde/trace_events.h)."""

    _fields_ = [("struct_size", c_u32), ("index", c_u32), ("name", c_char_p), ("class_name", c_char_p),
                ("full_name", c_char_p), ("mangled_name", c_char_p), ("source_file", c_char_p),
                ("source_line", c_u32), ("module", c_u32), ("address", c_u64), ("size", c_u64),
                ("visibility", c_u32), ("reserved", c_u32)]


class TraceModuleStruct(ctypes.Structure):
    """``sonde_trace_module_t`` (sonde/trace_events.h)."""

    _fields_ = [("struct_size", c_u32), ("index", c_u32), ("path", c_char_p), ("name", c_char_p),
                ("address", c_u64), ("size", c_u64)]


class TraceThreadStruct(ctypes.Structure):
    """``sonde_trace_thread_t`` (sonde/trace_events.h)."""

    _fields_ = [("struct_size", c_u32), ("shard", c_u32), ("os_thread_id", c_u64), ("name", c_char_p)]


class TraceEventInfoStruct(ctypes.Structure):
    """``sonde_trace_event_info_t`` (sonde/trace_events.h)."""

    _fields_ = [("struct_size", c_u32), ("num_shards", c_u32), ("num_events", c_u64), ("num_methods", c_u32),
                ("num_modules", c_u32), ("num_strings", c_u32), ("num_threads", c_u32),
                ("first_timestamp", c_u64), ("last_timestamp", c_u64)]


def sized(struct_type):
    """A zeroed instance of ``struct_type`` with ``struct_size`` set to its ``ctypes.sizeof``."""
    s = struct_type()
    s.struct_size = ctypes.sizeof(struct_type)
    return s


BufferCallback = ctypes.CFUNCTYPE(None, P(RecordHeader), P(RecordHeader), Id, Id, c_vp)
ProfileAllocate = ctypes.CFUNCTYPE(c_bool, c_vp, c_u64, c_u64, P(c_u64))

_st = c_u32
_PROTOTYPES = {
    # sonde/defs.h, sonde/status.h
    "sonde_get_version": (c_u32, [P(c_u32), P(c_u32), P(c_u32)]),
    "sonde_status_name": (c_char_p, [_st]),
    "sonde_status_string": (c_char_p, [_st]),
    # sonde/session.h
    "sonde_initialize": (_st, []),
    "sonde_finalize": (_st, []),
    "sonde_is_initialized": (c_bool, []),
    "sonde_create_session": (_st, [P(SessionProperties), P(Id)]),
    "sonde_start_session": (_st, [Id]),
    "sonde_stop_session": (_st, [Id]),
    "sonde_destroy_session": (_st, [Id]),
    "sonde_session_is_active": (_st, [Id, P(c_bool)]),
    "sonde_get_timestamp": (c_u64, []),
    # sonde/buffer.h, sonde/record.h
    "sonde_create_buffer": (_st, [Id, c_u64, BufferCallback, c_vp, P(BufferProperty), c_u32, P(Id)]),
    "sonde_flush_data": (_st, [Id, Id]),
    "sonde_next_record": (_st, [P(RecordHeader), P(P(RecordHeader)), Id, Id]),
    "sonde_get_buffer_stats": (_st, [Id, Id, P(BufferStatsStruct)]),
    "sonde_destroy_buffer": (_st, [Id, Id]),
    "sonde_emit": (_st, [Id, c_u32, c_vp, c_u32]),
    "sonde_emit_timestamped": (_st, [Id, c_u32, c_vp, c_u32]),
    "sonde_record_kind": (c_u32, [P(RecordHeader)]),
    "sonde_record_payload": (c_vp, [P(RecordHeader), P(c_u32)]),
    "sonde_record_timestamp": (_st, [P(RecordHeader), P(c_u64)]),
    # sonde/profile.h
    "sonde_profile_thread_index": (c_u32, []),
    "sonde_profile_set_thread_index": (_st, [c_u32]),
    "sonde_profile_buffer_create": (_st, [c_u64, P(c_vp)]),
    "sonde_profile_buffer_create_shared": (_st, [c_char_p, c_u64, P(c_vp)]),
    "sonde_profile_buffer_open_shared": (_st, [c_char_p, P(c_vp)]),
    "sonde_profile_buffer_destroy": (None, [c_vp]),
    "sonde_profile_buffer_size": (c_u64, [c_vp]),
    "sonde_profile_buffer_num_arrays": (_st, [c_vp, P(c_u32)]),
    "sonde_profile_array_create": (_st, [c_u32, c_u32, c_u32, c_u32, P(c_vp)]),
    "sonde_profile_array_open": (_st, [c_vp, c_u32, P(c_vp)]),
    "sonde_profile_array_destroy": (None, [c_vp]),
    "sonde_profile_array_allocate": (_st, [c_vp, c_vp]),
    "sonde_profile_array_initialize": (_st, [c_vp, c_vp]),
    "sonde_profile_array_read": (_st, [c_vp, c_vp, c_vp, c_u32, c_u32, c_u32]),
    "sonde_profile_array_write": (_st, [c_vp, c_vp, c_vp, c_u32, c_u32, c_u32]),
    "sonde_profile_array_record_offset": (_st, [c_vp, c_u32, c_u32, P(c_u64)]),
    "sonde_profile_array_size": (c_u64, [c_vp]),
    "sonde_profile_array_offset": (c_u64, [c_vp]),
    "sonde_profile_array_is_allocated": (c_bool, [c_vp]),
    "sonde_profile_array_record_size": (c_u32, [c_vp]),
    "sonde_profile_array_num_records": (c_u32, [c_vp]),
    "sonde_profile_array_num_thread_buckets": (c_u32, [c_vp]),
    "sonde_profile_array_chunk_size": (c_u32, [c_vp]),
    "sonde_profile_array_thread_bucket": (c_u32, [c_vp]),
    "sonde_profile_array_thread_record": (_st, [c_vp, c_vp, c_u32, P(c_vp)]),
    "sonde_profile_array_view": (_st, [c_vp, c_vp, P(ProfileView)]),
    "sonde_profile_array_sum_u64": (_st, [c_vp, c_vp, c_u32, c_u32, P(c_u64)]),
    "sonde_profile_array_snapshot": (_st, [c_vp, c_vp, c_vp, c_u64]),
    "sonde_profile_array_emit": (_st, [c_vp, c_vp, Id, c_u32, P(c_u64)]),
    # sonde/stackdist.h
    "sonde_stackdist_create": (_st, [P(StackdistOptions), P(c_vp)]),
    "sonde_stackdist_calc_and_update": (_st, [c_vp, c_u64, c_bool, P(c_u64), P(c_bool)]),
    "sonde_stackdist_calc": (_st, [c_vp, c_u64, c_bool, P(c_u64), P(c_bool)]),
    "sonde_stackdist_batch": (_st, [c_vp, c_vp, c_vp, c_size, c_vp]),
    "sonde_stackdist_size": (_st, [c_vp, P(c_u64)]),
    "sonde_stackdist_destroy": (None, [c_vp]),
    "sonde_histogram_create": (_st, [P(c_vp)]),
    "sonde_histogram_destroy": (None, [c_vp]),
    "sonde_histogram_reset": (_st, [c_vp]),
    "sonde_histogram_get_summary": (_st, [c_vp, P(HistogramSummary)]),
    "sonde_histogram_get_bins": (_st, [c_vp, c_u32, c_u64, P(HistogramBin), c_u32, P(c_u32)]),
    "sonde_histogram_get_mrc": (_st, [c_vp, P(MrcPoint), c_u32, P(c_u32)]),
    "sonde_histogram_miss_ratio": (_st, [c_vp, c_u64, P(ctypes.c_double)]),
    # sonde/analysis.h
    "sonde_analyzer_create": (_st, [P(c_vp)]),
    "sonde_analyzer_destroy": (_st, [c_vp]),
    "sonde_analyzer_add_tool": (_st, [c_vp, c_char_p, c_char_p]),
    "sonde_analyzer_load_tool": (_st, [c_vp, c_char_p, c_char_p]),
    "sonde_analyzer_set_parallel": (_st, [c_vp, c_bool]),
    "sonde_analyzer_set_workers": (_st, [c_vp, c_u32]),
    "sonde_analyzer_add_input": (_st, [c_vp, c_char_p, c_u32]),
    "sonde_analyzer_input_warnings": (_st, [c_vp, c_u32, P(c_bool), P(c_char_p)]),
    "sonde_analyzer_add_memory_shard": (_st, [c_vp, P(MemrefStruct), c_size, P(c_u32)]),
    "sonde_analyzer_run": (_st, [c_vp]),
    "sonde_analyzer_error": (c_char_p, [c_vp]),
    "sonde_analyzer_run_info": (_st, [c_vp, P(c_bool), P(c_u32)]),
    "sonde_analyzer_progress": (_st, [c_vp, P(c_u64), P(c_u64)]),
    "sonde_analyzer_results_json": (_st, [c_vp, c_char_p, c_size, P(c_size)]),
    # sonde/trace.h
    "sonde_trace_reader_open": (_st, [c_char_p, c_u32, c_char_p, c_size, P(c_vp)]),
    "sonde_trace_reader_num_shards": (_st, [c_vp, P(c_u32)]),
    "sonde_trace_reader_format": (_st, [c_vp, P(c_u32)]),
    "sonde_trace_reader_read_shard": (_st, [c_vp, c_u32, P(MemrefStruct), c_size, P(c_size)]),
    "sonde_trace_reader_read": (_st, [c_vp, P(MemrefStruct), c_size, P(c_size)]),
    "sonde_trace_reader_error": (c_char_p, [c_vp]),
    "sonde_trace_reader_warnings": (c_char_p, [c_vp]),
    "sonde_trace_reader_progress": (_st, [c_vp, P(c_u64), P(c_u64)]),
    "sonde_trace_reader_close": (_st, [c_vp]),
    "sonde_trace_writer_create": (_st, [c_char_p, P(TraceWriterProperties), P(c_vp)]),
    "sonde_trace_writer_write": (_st, [c_vp, c_u32, P(MemrefStruct), c_size]),
    "sonde_trace_writer_error": (c_char_p, [c_vp]),
    "sonde_trace_writer_close": (_st, [c_vp]),
    # sonde/trace_events.h
    "sonde_trace_reader_event_info": (_st, [c_vp, P(TraceEventInfoStruct)]),
    "sonde_trace_reader_shard_events": (_st, [c_vp, c_u32, P(c_u64)]),
    "sonde_trace_reader_read_events": (_st, [c_vp, c_u32, P(TraceEventStruct), c_size, P(c_size)]),
    "sonde_trace_reader_rewind_events": (_st, [c_vp, c_u32]),
    "sonde_trace_reader_get_method": (_st, [c_vp, c_u32, P(TraceMethodStruct)]),
    "sonde_trace_reader_get_module": (_st, [c_vp, c_u32, P(TraceModuleStruct)]),
    "sonde_trace_reader_get_thread": (_st, [c_vp, c_u32, P(TraceThreadStruct)]),
    "sonde_trace_reader_get_string": (_st, [c_vp, c_u32, P(c_char_p)]),
    "sonde_trace_writer_write_events": (_st, [c_vp, c_u32, P(TraceEventStruct), c_size]),
    "sonde_trace_writer_add_string": (_st, [c_vp, c_char_p, P(c_u32)]),
    "sonde_trace_writer_add_method": (_st, [c_vp, P(TraceMethodStruct)]),
    "sonde_trace_writer_add_module": (_st, [c_vp, P(TraceModuleStruct)]),
    "sonde_trace_writer_add_thread": (_st, [c_vp, P(TraceThreadStruct)]),
}


def _candidates():
    """The paths tried, in order, with the reason each one is tried."""
    env = os.environ.get("SONDE_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(here, SONAME)]
    try:
        from . import _config  # written by meson install
        paths.append(os.path.normpath(os.path.join(here, _config.LIBDIR_FROM_PACKAGE, SONAME)))
    except ImportError:
        pass
    paths.append(SONAME)
    return paths


def _open():
    env = os.environ.get("SONDE_LIBRARY")
    errors = []
    for path in _candidates():
        if path != SONAME and not env and not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            f = getattr(lib, name)
            f.restype = restype
            f.argtypes = argtypes
        return lib, path
    raise ImportError("sonde: cannot load %s (set SONDE_LIBRARY to its path): %s" % (SONAME, "; ".join(errors)))


lib, path = _open()
"""The loaded library (a ``ctypes.CDLL``) and the path it was loaded from."""

_lock = threading.Lock()


def text(b):
    """A C string from the library as ``str`` (``""`` for NULL)."""
    return b.decode("utf-8", "replace") if b is not None else ""


def status_name(status):
    """The enum name of a status value (``sonde_status_name``)."""
    return text(lib.sonde_status_name(status))


def status_string(status):
    """The sentence of a status value (``sonde_status_string``)."""
    return text(lib.sonde_status_string(status))


def error(status, call="", detail=""):
    """A :class:`SondeError` for ``status``."""
    return SondeError(status, status_name(status), status_string(status), detail, call)


def check(status, call="", detail=None, partial_ok=True):
    """Raises :class:`SondeError` unless ``status`` is SUCCESS (or PARTIAL_INFO when allowed).

    ``detail`` may be a function called only on failure, giving the object's own message.
    """
    if status == 0 or (partial_ok and status == 1):
        return status
    raise error(status, call, detail() if callable(detail) else (detail or ""))


_atexit_registered = False


def _finalize_at_exit():
    # Deliver what is left while the interpreter can still run Python callbacks.
    if lib.sonde_is_initialized():
        lib.sonde_finalize()


def ensure_initialized():
    """Calls ``sonde_initialize`` unless the runtime is initialised already. The first call that
    initialises it also registers an ``atexit`` handler that finalises it, so that the last
    deliveries reach Python callbacks before the interpreter shuts down."""
    global _atexit_registered
    with _lock:
        if not lib.sonde_is_initialized():
            st = lib.sonde_initialize()
            if st != 4:  # ALREADY_INITIALIZED: another thread or the program got there first
                check(st, "sonde_initialize")
            if not _atexit_registered:
                atexit.register(_finalize_at_exit)
                _atexit_registered = True
