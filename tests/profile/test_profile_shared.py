#!/usr/bin/env python3
"""Python reads a shared-memory profile buffer.

libsonde is loaded with ctypes (SONDE_LIBRARY) to create a shared profile buffer in a file and
count into it; the file is then mapped with Python's mmap and parsed from the documented layout
(docs/profile-arrays.md): header, array directory, buckets. Values read that way must equal
what the library reports, and the mapping must see later updates without re-mapping.
"""
import ctypes
import mmap
import os
import struct
import subprocess
import sys
import tempfile

MAGIC = struct.unpack("<Q", b"SONDEPRF")[0]
HEADER = struct.Struct("<QIIQQIIQ16x")  # 64 bytes
ENTRY = struct.Struct("<QQIIIIII24x")   # 64 bytes
SUCCESS = 0


class ProfileView(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("bucket", ctypes.c_uint32),
                ("bucket_base", ctypes.c_void_p), ("base", ctypes.c_void_p),
                ("chunk_size", ctypes.c_uint64), ("record_size", ctypes.c_uint32),
                ("num_records", ctypes.c_uint32), ("bucket_mask", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32)]


def load():
    lib = ctypes.CDLL(os.environ.get("SONDE_LIBRARY", "libsonde.so.1"))
    p, u32, u64, st = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32
    sig = {
        "sonde_profile_buffer_create_shared": (st, [ctypes.c_char_p, u64, ctypes.POINTER(p)]),
        "sonde_profile_buffer_destroy": (None, [p]),
        "sonde_profile_array_create": (st, [u32, u32, u32, u32, ctypes.POINTER(p)]),
        "sonde_profile_array_allocate": (st, [p, p]),
        "sonde_profile_array_initialize": (st, [p, p]),
        "sonde_profile_array_write": (st, [p, p, p, u32, u32, u32]),
        "sonde_profile_array_sum_u64": (st, [p, p, u32, u32, ctypes.POINTER(u64)]),
        "sonde_profile_array_offset": (u64, [p]),
        "sonde_profile_array_destroy": (None, [p]),
        "sonde_profile_array_view": (st, [p, p, ctypes.POINTER(ProfileView)]),
        "sonde_profile_set_thread_index": (st, [u32]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def check(status, what):
    if status != SUCCESS:
        raise AssertionError(f"{what} returned status {status}")


def parse(mm, creator):
    """The arrays of a mapped shared profile buffer made by process `creator`: their geometry."""
    magic, version, header_size, size, bump, max_arrays, num_arrays, pid = HEADER.unpack_from(mm, 0)
    assert magic == MAGIC, hex(magic)
    assert version == 1 and header_size == 4096 and size == len(mm), (version, header_size, size)
    assert num_arrays <= max_arrays == 63 and header_size <= bump <= size
    assert pid == creator, (pid, creator)
    arrays = []
    for i in range(num_arrays):
        off, asize, rsize, nrec, nbuck, chunk, align, _ = ENTRY.unpack_from(mm, 64 + 64 * i)
        assert asize == chunk * nbuck and off % max(align, 64) == 0 and off + asize <= size
        arrays.append(dict(offset=off, record_size=rsize, num_records=nrec, buckets=nbuck,
                           chunk=chunk))
    return arrays


def counter(mm, a, record, bucket, field=0):
    return struct.unpack_from("<Q", mm, a["offset"] + bucket * a["chunk"] +
                              record * a["record_size"] + field)[0]


def main():
    lib = load()
    with tempfile.TemporaryDirectory(prefix="sonde-profile-py-") as d:
        path = os.path.join(d, "counters.prof")
        pb = ctypes.c_void_p()
        check(lib.sonde_profile_buffer_create_shared(path.encode(), 1 << 16, ctypes.byref(pb)),
              "create_shared")
        arrays = []
        for rsize, nrec, nbuck in ((16, 5, 3), (8, 2, 1)):
            arr = ctypes.c_void_p()
            check(lib.sonde_profile_array_create(rsize, nrec, nbuck, 64, ctypes.byref(arr)), "create")
            check(lib.sonde_profile_array_allocate(arr, pb), "allocate")
            check(lib.sonde_profile_array_initialize(arr, pb), "initialize")
            arrays.append(arr)
        a0 = arrays[0]
        # bucket b, record r: field 0 = 100 * b + r, field 8 = r
        for b in range(4):
            recs = (ctypes.c_uint64 * 10)(*[v for r in range(5) for v in (100 * b + r, r)])
            check(lib.sonde_profile_array_write(a0, pb, recs, 0, 5, b), "write")

        with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as mm:
            parsed = parse(mm, os.getpid())
            assert len(parsed) == 2
            p0, p1 = parsed
            assert (p0["record_size"], p0["num_records"], p0["buckets"], p0["chunk"]) == (16, 5, 4, 128)
            assert (p1["record_size"], p1["num_records"], p1["buckets"], p1["chunk"]) == (8, 2, 1, 64)
            assert p0["offset"] == lib.sonde_profile_array_offset(a0) == 4096
            assert p1["offset"] == lib.sonde_profile_array_offset(arrays[1])
            for r in range(5):
                total = ctypes.c_uint64()
                check(lib.sonde_profile_array_sum_u64(a0, pb, r, 0, ctypes.byref(total)), "sum")
                mine = sum(counter(mm, p0, r, b) for b in range(4))
                assert mine == total.value == sum(100 * b + r for b in range(4)), (r, mine, total.value)
                assert all(counter(mm, p0, r, b, 8) == r for b in range(4))

            # Counting through the library is visible in the existing mapping.
            check(lib.sonde_profile_set_thread_index(2), "set_thread_index")
            view = ProfileView(struct_size=ctypes.sizeof(ProfileView))
            check(lib.sonde_profile_array_view(arrays[1], pb, ctypes.byref(view)), "view")
            assert view.bucket == 0 and view.record_size == 8 and view.num_records == 2
            cell = ctypes.c_uint64.from_address(view.bucket_base + 8)
            for i in range(1, 1001):
                cell.value += 1
                if i % 250 == 0:
                    assert counter(mm, p1, 1, 0) == i
            # and a reader's write is visible to the library
            struct.pack_into("<Q", mm, p1["offset"], 4242)
            total = ctypes.c_uint64()
            check(lib.sonde_profile_array_sum_u64(arrays[1], pb, 0, 0, ctypes.byref(total)), "sum")
            assert total.value == 4242

        for arr in arrays:
            lib.sonde_profile_array_destroy(arr)
        lib.sonde_profile_buffer_destroy(pb)
        assert os.path.getsize(path) == 4096 + (1 << 16)
    check_example_file()
    print("profile python: ok")
    return 0


def check_example_file():
    """Another process (examples/profile_counters) writes the counters; Python reads the file."""
    exe = os.path.join(os.environ.get("SONDE_BUILD_ROOT", ""), "examples", "profile_counters")
    if not os.path.exists(exe):
        return
    with tempfile.TemporaryDirectory(prefix="sonde-profile-py-") as d:
        path = os.path.join(d, "example.prof")
        proc = subprocess.Popen([exe, path], stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate()
        assert proc.returncode == 0, out
        printed = {}
        for line in out.splitlines()[2:]:
            name, items, nbytes = line.split()
            printed[name] = (int(items), int(nbytes))
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
            (a,) = parse(mm, proc.pid)
            sums = [(sum(counter(mm, a, r, b) for b in range(a["buckets"])),
                     sum(counter(mm, a, r, b, 8) for b in range(a["buckets"])))
                    for r in range(a["num_records"])]
        assert sums == [printed[n] for n in ("small", "medium", "large", "huge")], (sums, printed)


if __name__ == "__main__":
    sys.exit(main())
