#!/usr/bin/env python3
"""A Sonde consumer in Python: create a session and a buffer, emit records, flush, and walk
what the callback receives with sonde_next_record. Run: SONDE_LIBRARY=path/libsonde.so.1 python3 consumer.py"""
import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sonde_ctypes as sc  # noqa: E402


def main():
    lib = sc.load()
    sc.check(lib, lib.sonde_initialize(), "sonde_initialize")
    session = sc.Id()
    sc.check(lib, lib.sonde_create_session(None, ctypes.byref(session)), "sonde_create_session")
    received = []

    @sc.Callback
    def on_records(begin, end, sess, buf, _user):
        for kind, _flags, payload, ts in sc.walk(lib, begin, end, sess, buf):
            if kind >= sc.RECORD_KIND_USER:
                received.append((struct.unpack_from("<Q", payload)[0], ts))

    buffer = sc.Id()
    sc.check(lib, lib.sonde_create_buffer(session, 1 << 20, on_records, None, None, 0, ctypes.byref(buffer)),
             "sonde_create_buffer")
    sc.check(lib, lib.sonde_start_session(session), "sonde_start_session")
    for i in range(1000):
        value = ctypes.c_uint64(i)
        sc.check(lib, lib.sonde_emit_timestamped(buffer, sc.RECORD_KIND_USER, ctypes.byref(value), 8), "emit")
    sc.check(lib, lib.sonde_flush_data(session, buffer), "sonde_flush_data")
    stats = sc.BufferStats(struct_size=ctypes.sizeof(sc.BufferStats))
    sc.check(lib, lib.sonde_get_buffer_stats(session, buffer, ctypes.byref(stats)), "stats")
    print("received %d records, first %d, last %d; emitted %d delivered %d dropped %d callbacks %d" % (
        len(received), received[0][0], received[-1][0], stats.records_emitted, stats.records_delivered,
        stats.records_dropped, stats.callbacks))
    sc.check(lib, lib.sonde_destroy_session(session), "sonde_destroy_session")
    sc.check(lib, lib.sonde_finalize(), "sonde_finalize")
    return 0 if [v for v, _ in received] == list(range(1000)) else 1


if __name__ == "__main__":
    sys.exit(main())
