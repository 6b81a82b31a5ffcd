#!/usr/bin/env python3
"""End-to-end test of the core through ctypes only: create, emit from Python, flush, iterate
records with sonde_next_record inside the callback, and check statuses of bad calls."""
import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.environ["SONDE_SOURCE_ROOT"], "examples", "python"))
import sonde_ctypes as sc  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def main():
    lib = sc.load(os.environ["SONDE_LIBRARY"])
    name = lambda s: lib.sonde_status_name(s).decode()  # noqa: E731
    session = sc.Id()
    expect(name(lib.sonde_create_session(None, ctypes.byref(session))) == "SONDE_STATUS_ERROR_NOT_INITIALIZED",
           "create before initialize")
    sc.check(lib, lib.sonde_initialize(), "sonde_initialize")
    sc.check(lib, lib.sonde_create_session(None, ctypes.byref(session)), "sonde_create_session")

    seen = []
    threads = set()
    errors = []

    @sc.Callback
    def on_records(begin, end, sess, buf, _user):
        try:
            first = True
            for kind, flags, payload, ts in sc.walk(lib, begin, end, sess, buf):
                if first:
                    expect(kind == sc.RECORD_KIND_THREAD, "span starts with THREAD")
                    threads.add(sc.ThreadRecord.from_buffer_copy(payload[:16]).thread_id)
                    first = False
                elif kind >= sc.RECORD_KIND_USER:
                    seen.append((kind, struct.unpack_from("<Q", payload)[0], ts))
        except Exception as e:  # never let an exception escape into C
            errors.append(str(e))

    props = (sc.BufferProperty * 2)(sc.BufferProperty(sc.PROPERTY_POLICY, 0, sc.POLICY_LOSSLESS),
                                    sc.BufferProperty(sc.PROPERTY_CHUNK_SIZE, 0, 4096))
    buffer = sc.Id()
    sc.check(lib, lib.sonde_create_buffer(session, 1 << 16, on_records, None, props, 2, ctypes.byref(buffer)),
             "sonde_create_buffer")
    value = ctypes.c_uint64(1)
    expect(name(lib.sonde_emit(buffer, sc.RECORD_KIND_USER, ctypes.byref(value), 8)) ==
           "SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE", "emit while stopped")
    sc.check(lib, lib.sonde_start_session(session), "start")
    t0 = lib.sonde_get_timestamp()
    for i in range(3000):
        value.value = i
        emit = lib.sonde_emit_timestamped if i % 3 == 0 else lib.sonde_emit
        sc.check(lib, emit(buffer, sc.RECORD_KIND_USER + (i % 3), ctypes.byref(value), 8), "emit")
    sc.check(lib, lib.sonde_flush_data(session, buffer), "flush")
    t1 = lib.sonde_get_timestamp()
    expect(not errors, "callback errors: %s" % errors)
    expect([v for _, v, _ in seen] == list(range(3000)), "all 3000 records in order")
    expect(all(k == sc.RECORD_KIND_USER + (v % 3) for k, v, _ in seen), "kinds")
    stamps = [ts for _, v, ts in seen if v % 3 == 0]
    expect(all(ts is not None and t0 <= ts <= t1 for ts in stamps), "timestamps within the run")
    expect(stamps == sorted(stamps), "timestamps ascend")
    expect(len(threads) == 1, "one producing thread")
    stats = sc.BufferStats(struct_size=ctypes.sizeof(sc.BufferStats))
    sc.check(lib, lib.sonde_get_buffer_stats(session, buffer, ctypes.byref(stats)), "stats")
    expect(stats.records_emitted == 3000 and stats.records_delivered == 3000 and stats.records_dropped == 0,
           "stats %d %d %d" % (stats.records_emitted, stats.records_delivered, stats.records_dropped))
    stale = sc.Id(buffer.handle ^ (1 << 40))
    expect(name(lib.sonde_emit(stale, sc.RECORD_KIND_USER, ctypes.byref(value), 8)) ==
           "SONDE_STATUS_ERROR_BUFFER_NOT_FOUND", "stale buffer id")
    expect(name(lib.sonde_emit(buffer, sc.RECORD_KIND_USER, None, 8)) == "SONDE_STATUS_ERROR_NULL_POINTER",
           "NULL payload")
    sc.check(lib, lib.sonde_destroy_session(session), "destroy")
    sc.check(lib, lib.sonde_finalize(), "finalize")
    print("%d passed, %d failed" % (1 if not failures else 0, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
