"""Minimal ctypes bindings for libsonde.so.1's core (sessions, buffers, records).

No compiled glue: the library is loaded with ctypes.CDLL and every prototype is declared here.
Set SONDE_LIBRARY to the library's path, or let the dynamic loader find libsonde.so.1.
"""
import ctypes
import os

SUCCESS = 0
RECORD_KIND_THREAD = 1
RECORD_KIND_LOSS = 2
RECORD_KIND_USER = 0x8000
RECORD_FLAG_TIMESTAMP = 1
PROPERTY_POLICY = 1
PROPERTY_CHUNK_SIZE = 4
POLICY_LOSSLESS = 0


class Id(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_uint64)]


class RecordHeader(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("kind", ctypes.c_uint16), ("flags", ctypes.c_uint16)]


class ThreadRecord(ctypes.Structure):
    _fields_ = [("thread_id", ctypes.c_uint64), ("os_tid", ctypes.c_uint64)]


class BufferProperty(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("value", ctypes.c_uint64)]


class BufferStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                ("records_emitted", ctypes.c_uint64), ("records_delivered", ctypes.c_uint64),
                ("records_dropped", ctypes.c_uint64), ("bytes_delivered", ctypes.c_uint64),
                ("callbacks", ctypes.c_uint64), ("callback_failures", ctypes.c_uint64)]


RecordPtr = ctypes.POINTER(RecordHeader)
Callback = ctypes.CFUNCTYPE(None, RecordPtr, RecordPtr, Id, Id, ctypes.c_void_p)


def load(path=None):
    lib = ctypes.CDLL(path or os.environ.get("SONDE_LIBRARY", "libsonde.so.1"))
    u32, u64, st = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32
    proto = {
        "sonde_initialize": (st, []),
        "sonde_finalize": (st, []),
        "sonde_status_name": (ctypes.c_char_p, [st]),
        "sonde_create_session": (st, [ctypes.c_void_p, ctypes.POINTER(Id)]),
        "sonde_start_session": (st, [Id]),
        "sonde_stop_session": (st, [Id]),
        "sonde_destroy_session": (st, [Id]),
        "sonde_create_buffer": (st, [Id, u64, Callback, ctypes.c_void_p,
                                     ctypes.POINTER(BufferProperty), u32, ctypes.POINTER(Id)]),
        "sonde_flush_data": (st, [Id, Id]),
        "sonde_emit": (st, [Id, u32, ctypes.c_void_p, u32]),
        "sonde_emit_timestamped": (st, [Id, u32, ctypes.c_void_p, u32]),
        "sonde_next_record": (st, [RecordPtr, ctypes.POINTER(RecordPtr), Id, Id]),
        "sonde_record_kind": (u32, [RecordPtr]),
        "sonde_record_payload": (ctypes.c_void_p, [RecordPtr, ctypes.POINTER(u32)]),
        "sonde_record_timestamp": (st, [RecordPtr, ctypes.POINTER(u64)]),
        "sonde_get_buffer_stats": (st, [Id, Id, ctypes.POINTER(BufferStats)]),
        "sonde_get_timestamp": (u64, []),
    }
    for name, (res, args) in proto.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def check(lib, status, what):
    if status != SUCCESS:
        raise RuntimeError("%s: %s" % (what, lib.sonde_status_name(status).decode()))


def walk(lib, begin, end, session, buffer):
    """Yields (kind, flags, payload bytes, timestamp or None) for each record of a span."""
    rec = ctypes.cast(begin, RecordPtr)
    end_addr = ctypes.cast(end, ctypes.c_void_p).value
    while ctypes.cast(rec, ctypes.c_void_p).value < end_addr:
        nxt = RecordPtr()  # a new object each time: rec must not alias it
        check(lib, lib.sonde_next_record(rec, ctypes.byref(nxt), session, buffer), "sonde_next_record")
        size = ctypes.c_uint32()
        payload = lib.sonde_record_payload(rec, ctypes.byref(size))
        ts = None
        if rec.contents.flags & RECORD_FLAG_TIMESTAMP:
            t = ctypes.c_uint64()
            check(lib, lib.sonde_record_timestamp(rec, ctypes.byref(t)), "sonde_record_timestamp")
            ts = t.value
        yield lib.sonde_record_kind(rec), rec.contents.flags, ctypes.string_at(payload, size.value), ts
        rec = nxt
