"""Reads a call-graph trace (`sonde record`) with ctypes through sonde/trace_events.h.

    python3 sonde_trace.py sonde.trace      # calls per function, most called first

As a module: Trace(path) opens a trace; .info, .methods, .modules, .threads, .strings and .events(shard)
give its content. Set SONDE_LIBRARY to libsonde.so.1's path, or let the loader find it.
"""
import ctypes
import os
import sys

SUCCESS = 0
PARTIAL_INFO = 1
METHOD_ENTER, METHOD_LEAVE, THREAD_START, THREAD_END, THREAD_NAME, MARK, RANGE_PUSH, RANGE_POP, LOSS = range(1, 10)


class Event(ctypes.Structure):
    _fields_ = [("timestamp", ctypes.c_uint64), ("value", ctypes.c_uint64), ("id", ctypes.c_uint32),
                ("shard", ctypes.c_uint32), ("kind", ctypes.c_uint32), ("aux", ctypes.c_uint32)]


class EventInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("num_shards", ctypes.c_uint32), ("num_events", ctypes.c_uint64),
                ("num_methods", ctypes.c_uint32), ("num_modules", ctypes.c_uint32),
                ("num_strings", ctypes.c_uint32), ("num_threads", ctypes.c_uint32),
                ("first_timestamp", ctypes.c_uint64), ("last_timestamp", ctypes.c_uint64)]


class Method(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("index", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("class_name", ctypes.c_char_p), ("full_name", ctypes.c_char_p), ("mangled_name", ctypes.c_char_p),
                ("source_file", ctypes.c_char_p), ("source_line", ctypes.c_uint32), ("module", ctypes.c_uint32),
                ("address", ctypes.c_uint64), ("size", ctypes.c_uint64), ("visibility", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32)]


class Module(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("index", ctypes.c_uint32), ("path", ctypes.c_char_p),
                ("name", ctypes.c_char_p), ("address", ctypes.c_uint64), ("size", ctypes.c_uint64)]


class Thread(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("shard", ctypes.c_uint32), ("os_thread_id", ctypes.c_uint64),
                ("name", ctypes.c_char_p)]


def load(path=None):
    lib = ctypes.CDLL(path or os.environ.get("SONDE_LIBRARY", "libsonde.so.1"))
    vp, u32, st = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32
    proto = {
        "sonde_trace_reader_open": [ctypes.c_char_p, u32, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(vp)],
        "sonde_trace_reader_close": [vp],
        "sonde_trace_reader_event_info": [vp, ctypes.POINTER(EventInfo)],
        "sonde_trace_reader_read_events": [vp, u32, ctypes.POINTER(Event), ctypes.c_size_t,
                                           ctypes.POINTER(ctypes.c_size_t)],
        "sonde_trace_reader_rewind_events": [vp, u32],
        "sonde_trace_reader_get_method": [vp, u32, ctypes.POINTER(Method)],
        "sonde_trace_reader_get_module": [vp, u32, ctypes.POINTER(Module)],
        "sonde_trace_reader_get_thread": [vp, u32, ctypes.POINTER(Thread)],
        "sonde_trace_reader_get_string": [vp, u32, ctypes.POINTER(ctypes.c_char_p)],
    }
    for name, args in proto.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = st
    lib.sonde_trace_reader_warnings.argtypes = [vp]
    lib.sonde_trace_reader_warnings.restype = ctypes.c_char_p
    lib.sonde_trace_reader_error.argtypes = [vp]
    lib.sonde_trace_reader_error.restype = ctypes.c_char_p
    return lib


def _text(b):
    return b.decode("utf-8", "replace") if b is not None else ""


class Trace:
    """An open call-graph trace; the tables are read at open, events on demand."""

    def __init__(self, path, lib=None):
        self.lib = lib or load()
        self.handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        st = self.lib.sonde_trace_reader_open(path.encode(), 1, err, len(err), ctypes.byref(self.handle))
        if st != SUCCESS:
            raise OSError("%s (status %d)" % (_text(err.value), st))
        self.warnings = _text(self.lib.sonde_trace_reader_warnings(self.handle))
        self.info = EventInfo()
        self.info.struct_size = ctypes.sizeof(EventInfo)
        self.lib.sonde_trace_reader_event_info(self.handle, ctypes.byref(self.info))
        self.methods = []
        for i in range(self.info.num_methods):
            m = Method()
            m.struct_size = ctypes.sizeof(Method)
            self.lib.sonde_trace_reader_get_method(self.handle, i, ctypes.byref(m))
            self.methods.append({"name": _text(m.name), "class": _text(m.class_name), "full": _text(m.full_name),
                                 "mangled": _text(m.mangled_name), "file": _text(m.source_file),
                                 "line": m.source_line, "module": m.module, "address": m.address})
        self.modules = []
        for i in range(self.info.num_modules):
            m = Module()
            m.struct_size = ctypes.sizeof(Module)
            self.lib.sonde_trace_reader_get_module(self.handle, i, ctypes.byref(m))
            self.modules.append({"path": _text(m.path), "name": _text(m.name), "address": m.address, "size": m.size})
        self.threads = []
        for i in range(self.info.num_threads):
            t = Thread()
            t.struct_size = ctypes.sizeof(Thread)
            self.lib.sonde_trace_reader_get_thread(self.handle, i, ctypes.byref(t))
            self.threads.append({"tid": t.os_thread_id, "name": _text(t.name)})
        self.strings = []
        for i in range(self.info.num_strings):
            s = ctypes.c_char_p()
            self.lib.sonde_trace_reader_get_string(self.handle, i, ctypes.byref(s))
            self.strings.append(_text(s.value))

    def events(self, shard):
        """Yields (timestamp, kind, id, value, aux) of one shard, in order, from its start."""
        self.lib.sonde_trace_reader_rewind_events(self.handle, shard)
        buf = (Event * 4096)()
        n = ctypes.c_size_t()
        while True:
            st = self.lib.sonde_trace_reader_read_events(self.handle, shard, buf, 4096, ctypes.byref(n))
            if st != SUCCESS:
                raise OSError(_text(self.lib.sonde_trace_reader_error(self.handle)))
            if n.value == 0:
                return
            for e in buf[:n.value]:
                yield e.timestamp, e.kind, e.id, e.value, e.aux

    def qualified_name(self, index):
        m = self.methods[index]
        if not m["name"]:
            return "0x%x" % m["address"]
        return m["class"] + "::" + m["name"] if m["class"] else m["name"]

    def call_counts(self):
        """Calls per function name (class::name), every thread together."""
        counts = {}
        for shard in range(self.info.num_shards):
            for _, kind, mid, _, _ in self.events(shard):
                if kind == METHOD_ENTER:
                    name = self.qualified_name(mid)
                    counts[name] = counts.get(name, 0) + 1
        return counts

    def close(self):
        if self.handle:
            self.lib.sonde_trace_reader_close(self.handle)
            self.handle = ctypes.c_void_p()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: sonde_trace.py TRACE")
    trace = Trace(sys.argv[1])
    if trace.warnings:
        print(trace.warnings, file=sys.stderr)
    for name, calls in sorted(trace.call_counts().items(), key=lambda kv: (-kv[1], kv[0])):
        print("%d\t%s" % (calls, name))
    trace.close()
