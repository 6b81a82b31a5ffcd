"""Calls Sonde's stack-distance calculator from Python with ctypes: gem5-style single calls
(distances and marks), then a batch into a histogram and its miss-ratio curve.

Set SONDE_LIBRARY to libsonde.so.1's path, or let the dynamic loader find it.
"""
import ctypes
import os
import sys

SUCCESS = 0
INFINITY = 2**64 - 1
BINS_EXACT = 0


class HistogramBin(ctypes.Structure):
    _fields_ = [("first", ctypes.c_uint64), ("last", ctypes.c_uint64), ("count", ctypes.c_uint64),
                ("reads", ctypes.c_uint64), ("writes", ctypes.c_uint64)]


class MrcPoint(ctypes.Structure):
    _fields_ = [("cache_lines", ctypes.c_uint64), ("miss_ratio", ctypes.c_double)]


def load():
    lib = ctypes.CDLL(os.environ.get("SONDE_LIBRARY", "libsonde.so.1"))
    p, u64, u32, b = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_bool
    protos = {
        "sonde_stackdist_create": [p, ctypes.POINTER(p)],
        "sonde_stackdist_calc_and_update": [p, u64, b, ctypes.POINTER(u64), ctypes.POINTER(b)],
        "sonde_stackdist_calc": [p, u64, b, ctypes.POINTER(u64), ctypes.POINTER(b)],
        "sonde_stackdist_batch": [p, ctypes.POINTER(u64), ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t, p],
        "sonde_histogram_create": [ctypes.POINTER(p)],
        "sonde_histogram_get_bins": [p, u32, u64, ctypes.POINTER(HistogramBin), u32, ctypes.POINTER(u32)],
        "sonde_histogram_get_mrc": [p, ctypes.POINTER(MrcPoint), u32, ctypes.POINTER(u32)],
    }
    for name, args in protos.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_uint32
    lib.sonde_stackdist_destroy.argtypes = [p]
    lib.sonde_stackdist_destroy.restype = None
    lib.sonde_histogram_destroy.argtypes = [p]
    lib.sonde_histogram_destroy.restype = None
    return lib


def check(status):
    if status != SUCCESS:
        raise RuntimeError("sonde status %d" % status)


def main():
    lib = load()
    sd = ctypes.c_void_p()
    check(lib.sonde_stackdist_create(None, ctypes.byref(sd)))
    dist, marked = ctypes.c_uint64(), ctypes.c_bool()

    def update(addr):
        check(lib.sonde_stackdist_calc_and_update(sd, addr, True, ctypes.byref(dist), ctypes.byref(marked)))
        return None if dist.value == INFINITY else dist.value

    # A B C A: A's reuse distance is 2 (B and C in between).
    answers = [update(a) for a in (0xA, 0xB, 0xC, 0xA)]
    print("distances:", answers)
    assert answers == [None, None, None, 2]
    # Marks, as in gem5: calc returns the old mark and sets the new one.
    check(lib.sonde_stackdist_calc(sd, 0xB, True, ctypes.byref(dist), ctypes.byref(marked)))
    assert dist.value == 2 and not marked.value
    check(lib.sonde_stackdist_calc(sd, 0xB, False, ctypes.byref(dist), ctypes.byref(marked)))
    assert marked.value

    # A batch: a loop over 100 lines, ten times, into a histogram.
    hist = ctypes.c_void_p()
    check(lib.sonde_histogram_create(ctypes.byref(hist)))
    trace = (ctypes.c_uint64 * 1000)(*[1000 + i % 100 for i in range(1000)])
    check(lib.sonde_stackdist_batch(sd, trace, None, len(trace), hist))
    n = ctypes.c_uint32()
    bins = (HistogramBin * 8)()
    check(lib.sonde_histogram_get_bins(hist, BINS_EXACT, 0, bins, 8, ctypes.byref(n)))
    print("histogram:", [(bins[i].first, bins[i].count) for i in range(n.value)])
    assert n.value == 1 and bins[0].first == 99 and bins[0].count == 900
    points = (MrcPoint * 8)()
    check(lib.sonde_histogram_get_mrc(hist, points, 8, ctypes.byref(n)))
    mrc = [(points[i].cache_lines, round(points[i].miss_ratio, 3)) for i in range(n.value)]
    print("miss-ratio curve:", mrc)
    assert mrc == [(0, 1.0), (100, 0.1)]
    lib.sonde_histogram_destroy(hist)
    lib.sonde_stackdist_destroy(sd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
