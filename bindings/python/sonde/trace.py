"""Trace files (sonde/trace.h, sonde/trace_events.h): memory references of Sonde traces, valgrind
lackey text, raw 64-bit addresses and DynamoRIO drmemtrace traces (a directory or a thread file); program events (method enter and leave, threads, marks,
ranges) and the tables that name them (methods, modules, threads, strings); and a writer of
Sonde traces.
"""
import collections
import ctypes
import os

from . import _lib
from ._lib import check, lib

FORMATS = {"auto": 0, "sonde": 1, "lackey": 2, "raw64": 3, "drmemtrace": 4}
"""Input format names and their ``sonde_trace_format_value``."""
_FORMAT_NAMES = {v: k for k, v in FORMATS.items()}

MEMREF_READ, MEMREF_WRITE, MEMREF_MODIFY, MEMREF_IFETCH, MEMREF_MARKER = range(5)
"""Memref types (``Memref.type``): data read, write, modify, instruction fetch, marker."""
MARKER_TIMESTAMP, MARKER_THREAD_SWITCH, MARKER_CPU_ID = 1, 2, 3
"""Marker types (``Memref.size`` of a marker)."""

(EVENT_METHOD_ENTER, EVENT_METHOD_LEAVE, EVENT_THREAD_START, EVENT_THREAD_END, EVENT_THREAD_NAME, EVENT_MARK,
 EVENT_RANGE_PUSH, EVENT_RANGE_POP, EVENT_LOSS) = range(1, 10)
"""Program event kinds (``Event.kind``), as ``sonde_trace_event_kind``."""

NO_MODULE = 0xFFFFFFFF
"""``Method.module`` of a method outside every known module."""

Memref = collections.namedtuple("Memref", "address pc timestamp shard type size")
Memref.__doc__ = """One memory reference or marker (``sonde_memref_t``): for a marker
(``type == MEMREF_MARKER``) ``size`` is the marker type and ``address`` its value."""
Event = collections.namedtuple("Event", "timestamp value id shard kind aux")
Event.__doc__ = """One program event (``sonde_trace_event_t``); ``id``, ``aux`` and ``value`` mean
what its ``kind`` says (sonde/trace_events.h)."""
Method = collections.namedtuple(
    "Method", "index name class_name full_name mangled_name source_file source_line module address size visibility")
Method.__doc__ = "An entry of a trace's method table (``sonde_trace_method_t``)."
Module = collections.namedtuple("Module", "index path name address size")
Module.__doc__ = "An entry of a trace's module table (``sonde_trace_module_t``)."
Thread = collections.namedtuple("Thread", "shard os_thread_id name")
Thread.__doc__ = "An entry of a trace's thread table (``sonde_trace_thread_t``)."
EventInfo = collections.namedtuple(
    "EventInfo", "num_shards num_events num_methods num_modules num_strings num_threads first_timestamp last_timestamp")
EventInfo.__doc__ = "Counts of a trace's events and tables (``sonde_trace_event_info_t``)."

_BATCH = 4096


def _memref_array(memrefs):
    arr = (_lib.MemrefStruct * max(len(memrefs), 1))()
    for i, m in enumerate(memrefs):
        arr[i] = _lib.MemrefStruct(*m)
    return arr


def _event_array(events):
    arr = (_lib.TraceEventStruct * max(len(events), 1))()
    for i, e in enumerate(events):
        arr[i] = _lib.TraceEventStruct(*e)
    return arr


def _s(b):
    return _lib.text(b)


class TraceReader:
    """An open trace (``sonde_trace_reader_open``). ``format`` is ``"auto"``, ``"sonde"``,
    ``"lackey"``, ``"raw64"`` or ``"drmemtrace"`` (``path`` a drmemtrace directory or file). Usable as a context manager (leaving it closes the reader).

    Memory references: :meth:`memrefs` (one shard, or every shard interleaved by timestamp).
    Program events: :attr:`event_info`, :meth:`events`, and the tables :meth:`methods`,
    :meth:`modules`, :meth:`threads`, :meth:`string`.
    """

    def __init__(self, path, format="auto"):
        """Opens ``path``; raises :class:`sonde.SondeError` with the reader's message."""
        if format not in FORMATS:
            raise ValueError("format must be one of %s" % ", ".join(FORMATS))
        err = ctypes.create_string_buffer(512)
        self._r = ctypes.c_void_p()
        check(lib.sonde_trace_reader_open(os.fsencode(path), FORMATS[format], err, len(err), ctypes.byref(self._r)),
              "sonde_trace_reader_open", lambda: _s(err.value))
        self.path = os.fspath(path)

    def _check(self, status, call):
        return check(status, call, lambda: _s(lib.sonde_trace_reader_error(self._r)))

    @property
    def num_shards(self):
        """Memref shards (threads); lackey and raw64 inputs have one, a drmemtrace directory one
        per thread file."""
        n = ctypes.c_uint32()
        self._check(lib.sonde_trace_reader_num_shards(self._r, ctypes.byref(n)), "sonde_trace_reader_num_shards")
        return n.value

    @property
    def format(self):
        """The resolved format: ``"sonde"``, ``"lackey"``, ``"raw64"`` or ``"drmemtrace"``."""
        f = ctypes.c_uint32()
        self._check(lib.sonde_trace_reader_format(self._r, ctypes.byref(f)), "sonde_trace_reader_format")
        return _FORMAT_NAMES.get(f.value, str(f.value))

    @property
    def warnings(self):
        """Warnings found while opening (e.g. a truncated trace recovered), a list of strings."""
        return [w for w in _s(lib.sonde_trace_reader_warnings(self._r)).split("\n") if w]

    @property
    def progress(self):
        """``(done, total)``: bytes of the input read so far and in all, as stored
        (``sonde_trace_reader_progress``); ``total`` is 0 for a pipe."""
        done, total = ctypes.c_uint64(), ctypes.c_uint64()
        self._check(lib.sonde_trace_reader_progress(self._r, ctypes.byref(done), ctypes.byref(total)),
                    "sonde_trace_reader_progress")
        return done.value, total.value

    def memrefs(self, shard=None, batch=_BATCH):
        """Yields the :class:`Memref` records of ``shard``, or with ``shard=None`` of every shard
        interleaved by timestamp. Each shard has its own position: a second pass over a shard
        continues where the first stopped."""
        arr = (_lib.MemrefStruct * batch)()
        n = ctypes.c_size_t()
        while True:
            if shard is None:
                self._check(lib.sonde_trace_reader_read(self._r, arr, batch, ctypes.byref(n)),
                            "sonde_trace_reader_read")
            else:
                self._check(lib.sonde_trace_reader_read_shard(self._r, shard, arr, batch, ctypes.byref(n)),
                            "sonde_trace_reader_read_shard")
            if n.value == 0:
                return
            for m in arr[:n.value]:
                yield Memref(m.address, m.pc, m.timestamp, m.shard, m.type, m.size)

    def __iter__(self):
        return self.memrefs()

    @property
    def event_info(self):
        """The counts of the trace's events and tables, an :class:`EventInfo`."""
        i = _lib.sized(_lib.TraceEventInfoStruct)
        self._check(lib.sonde_trace_reader_event_info(self._r, ctypes.byref(i)), "sonde_trace_reader_event_info")
        return EventInfo(i.num_shards, i.num_events, i.num_methods, i.num_modules, i.num_strings, i.num_threads,
                         i.first_timestamp, i.last_timestamp)

    def shard_events(self, shard):
        """Number of events of an event shard."""
        n = ctypes.c_uint64()
        self._check(lib.sonde_trace_reader_shard_events(self._r, shard, ctypes.byref(n)),
                    "sonde_trace_reader_shard_events")
        return n.value

    def events(self, shard, batch=_BATCH):
        """Yields the :class:`Event` records of an event shard from its first, in the order the
        thread produced them."""
        self._check(lib.sonde_trace_reader_rewind_events(self._r, shard), "sonde_trace_reader_rewind_events")
        arr = (_lib.TraceEventStruct * batch)()
        n = ctypes.c_size_t()
        while True:
            self._check(lib.sonde_trace_reader_read_events(self._r, shard, arr, batch, ctypes.byref(n)),
                        "sonde_trace_reader_read_events")
            if n.value == 0:
                return
            for e in arr[:n.value]:
                yield Event(e.timestamp, e.value, e.id, e.shard, e.kind, e.aux)

    def method(self, index):
        """Entry ``index`` of the method table, a :class:`Method` (empty for an index no entry
        names)."""
        m = _lib.sized(_lib.TraceMethodStruct)
        self._check(lib.sonde_trace_reader_get_method(self._r, index, ctypes.byref(m)), "sonde_trace_reader_get_method")
        return Method(m.index, _s(m.name), _s(m.class_name), _s(m.full_name), _s(m.mangled_name), _s(m.source_file),
                      m.source_line, m.module, m.address, m.size, m.visibility)

    def methods(self):
        """The whole method table, a list indexed by method index."""
        return [self.method(i) for i in range(self.event_info.num_methods)]

    def module(self, index):
        """Entry ``index`` of the module table, a :class:`Module`."""
        m = _lib.sized(_lib.TraceModuleStruct)
        self._check(lib.sonde_trace_reader_get_module(self._r, index, ctypes.byref(m)), "sonde_trace_reader_get_module")
        return Module(m.index, _s(m.path), _s(m.name), m.address, m.size)

    def modules(self):
        """The whole module table."""
        return [self.module(i) for i in range(self.event_info.num_modules)]

    def thread(self, shard):
        """The thread of an event shard, a :class:`Thread`."""
        t = _lib.sized(_lib.TraceThreadStruct)
        self._check(lib.sonde_trace_reader_get_thread(self._r, shard, ctypes.byref(t)), "sonde_trace_reader_get_thread")
        return Thread(t.shard, t.os_thread_id, _s(t.name))

    def threads(self):
        """The whole thread table."""
        return [self.thread(i) for i in range(self.event_info.num_threads)]

    def string(self, id):
        """String ``id`` of the string table (mark and range texts, thread names)."""
        t = ctypes.c_char_p()
        self._check(lib.sonde_trace_reader_get_string(self._r, id, ctypes.byref(t)), "sonde_trace_reader_get_string")
        return _s(t.value)

    def close(self):
        """Closes the reader. Calling it again does nothing."""
        if self._r:
            lib.sonde_trace_reader_close(self._r)
            self._r = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self.close()


class TraceWriter:
    """Writes a Sonde trace file (``sonde_trace_writer_create``): memrefs, program events and
    their tables. ``compression_level`` is zstd's 1..19 (0: the default), ``chunk_records`` the
    records per chunk (0: the default). Usable as a context manager (leaving it closes the file)."""

    def __init__(self, path, compression_level=0, chunk_records=0):
        """Creates (truncates) ``path`` and writes the header."""
        p = _lib.sized(_lib.TraceWriterProperties)
        p.compression_level = compression_level
        p.chunk_records = chunk_records
        self._w = ctypes.c_void_p()
        check(lib.sonde_trace_writer_create(os.fsencode(path), ctypes.byref(p), ctypes.byref(self._w)),
              "sonde_trace_writer_create")

    def _check(self, status, call):
        return check(status, call, lambda: _s(lib.sonde_trace_writer_error(self._w)))

    def write(self, shard, memrefs):
        """Appends :class:`Memref` records (or 6-tuples) to a memref shard."""
        arr = _memref_array(memrefs)
        self._check(lib.sonde_trace_writer_write(self._w, shard, arr, len(memrefs)), "sonde_trace_writer_write")

    def write_events(self, shard, events):
        """Appends :class:`Event` records (or 6-tuples) to an event shard."""
        arr = _event_array(events)
        self._check(lib.sonde_trace_writer_write_events(self._w, shard, arr, len(events)),
                    "sonde_trace_writer_write_events")

    def add_string(self, text):
        """Adds ``text`` to the string table (or finds it) and returns its id."""
        i = ctypes.c_uint32()
        self._check(lib.sonde_trace_writer_add_string(self._w, text.encode(), ctypes.byref(i)),
                    "sonde_trace_writer_add_string")
        return i.value

    def add_method(self, index, name="", class_name="", full_name="", mangled_name="", source_file="",
                   source_line=0, module=NO_MODULE, address=0, size=0, visibility=0):
        """Adds (or replaces) entry ``index`` of the method table."""
        m = _lib.sized(_lib.TraceMethodStruct)
        m.index, m.source_line, m.module, m.address, m.size, m.visibility = (index, source_line, module, address,
                                                                             size, visibility)
        m.name, m.class_name, m.full_name = name.encode(), class_name.encode(), full_name.encode()
        m.mangled_name, m.source_file = mangled_name.encode(), source_file.encode()
        self._check(lib.sonde_trace_writer_add_method(self._w, ctypes.byref(m)), "sonde_trace_writer_add_method")

    def add_module(self, index, path="", name="", address=0, size=0):
        """Adds (or replaces) entry ``index`` of the module table."""
        m = _lib.sized(_lib.TraceModuleStruct)
        m.index, m.path, m.name, m.address, m.size = index, path.encode(), name.encode(), address, size
        self._check(lib.sonde_trace_writer_add_module(self._w, ctypes.byref(m)), "sonde_trace_writer_add_module")

    def add_thread(self, shard, os_thread_id=0, name=""):
        """Adds (or replaces) the thread table entry of an event shard."""
        t = _lib.sized(_lib.TraceThreadStruct)
        t.shard, t.os_thread_id, t.name = shard, os_thread_id, name.encode()
        self._check(lib.sonde_trace_writer_add_thread(self._w, ctypes.byref(t)), "sonde_trace_writer_add_thread")

    def close(self):
        """Writes the pending chunks, the index and the footer and closes the file. Calling it
        again does nothing."""
        if self._w:
            w, self._w = self._w, None
            st = lib.sonde_trace_writer_close(w)
            check(st, "sonde_trace_writer_close")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        if self._w:
            lib.sonde_trace_writer_close(self._w)
            self._w = None
