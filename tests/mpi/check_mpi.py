#!/usr/bin/env python3
"""`sonde analyze --mpi` under mpirun (argv: sonde, mpirun, trace_record, data directory):
with 2 and 3 ranks on real traces (the gzip lackey trace as zstd, whose ranks take record
slices, and as plain text, whose ranks read byte ranges; raw64 addresses; a Sonde trace of two
shards given twice), the merged JSON of rank 0 equals the one process's for every built-in tool,
metadata start_time and command aside, and for reuse_distance with SHARDS at a fixed rate. A
rank's default threads are its share of the node's cores. Byte ranges at their edges: a range that starts among
data lines whose instruction line is in the range before, several inputs in one stream, a file
smaller than the rank count, an empty file. Then the errors: an input that one rank cannot read
(every rank stops, exit non-zero, the reason named), ranks started with other options, a tool
that cannot run partitioned, and --mpi without mpirun (one rank)."""
import ctypes
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

SONDE, MPIRUN, TRACE_RECORD, DATA = (os.path.abspath(a) for a in sys.argv[1:5])
MPI = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
LACKEY = os.path.join(DATA, "gzip-gpl3.lackey.zst")

# Each case: the tool options.
CASES = [
    ["--tool", "basic_counts"],
    ["--tool", "cache_sim"],
    ["--tool", "reuse_distance"],  # gem5's histogram
    ["--tool", "basic_counts,cache_sim,reuse_distance", "--cache", "I1:8K:2:64,D1:16K:4:64,LL:256K:8:64:fifo"],
]


def run(args, code=0, env=None):
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != code:
        sys.exit(f"{' '.join(args)}: exit {p.returncode}, expected {code}\n{p.stdout}\n{p.stderr}")
    return p


def results(path):
    with open(path) as f:
        j = json.load(f)
    del j["metadata"]["start_time"]
    del j["metadata"]["command"]
    return j


def unzstd(src, dst):
    """Decompresses a zstd file with libzstd (which libsonde links), streaming."""
    z = ctypes.CDLL("libzstd.so.1")
    z.ZSTD_createDStream.restype = ctypes.c_void_p
    z.ZSTD_decompressStream.restype = ctypes.c_size_t
    z.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    z.ZSTD_isError.argtypes = [ctypes.c_size_t]
    z.ZSTD_freeDStream.argtypes = [ctypes.c_void_p]

    class Buffer(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]

    ds = z.ZSTD_createDStream()
    out = ctypes.create_string_buffer(1 << 20)
    with open(src, "rb") as f, open(dst, "wb") as g:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            held = ctypes.create_string_buffer(chunk, len(chunk))
            inb = Buffer(ctypes.cast(held, ctypes.c_void_p), len(chunk), 0)
            while inb.pos < inb.size:
                outb = Buffer(ctypes.cast(out, ctypes.c_void_p), len(out), 0)
                if z.ZSTD_isError(z.ZSTD_decompressStream(ds, ctypes.byref(outb), ctypes.byref(inb))):
                    sys.exit(f"{src}: zstd error")
                g.write(out.raw[:outb.pos])
    z.ZSTD_freeDStream(ds)


def check_equal(tmp, inputs, tool_args, extra=(), counts=(2, 3)):
    one = os.path.join(tmp, "one.json")
    run([SONDE, "analyze", *inputs, *tool_args, *extra, "--json", one])
    expected = results(one)
    for n in counts:
        merged = os.path.join(tmp, f"np{n}.json")
        p = run(MPI + ["-np", str(n), SONDE, "analyze", "--mpi", *inputs, *tool_args, *extra, "--json", merged])
        got = results(merged)
        if got != expected:
            sys.exit(f"np {n} {' '.join(tool_args + list(extra))} on {inputs}: merged results differ\n"
                     f"merged   {json.dumps(got)[:2000]}\nexpected {json.dumps(expected)[:2000]}")
        assert f"{n} MPI rank(s)" in p.stdout, p.stdout
        # Only rank 0 prints the results.
        assert p.stdout.count("sonde analyze:") == 1, p.stdout


with tempfile.TemporaryDirectory() as tmp:
    sonde_trace = os.path.join(tmp, "two_threads.sonde")
    run([TRACE_RECORD, sonde_trace])
    plain = os.path.join(tmp, "gzip.lackey")  # the same trace as plain text: byte ranges
    unzstd(LACKEY, plain)
    raw = os.path.join(tmp, "t.raw64")
    rng = random.Random(17)
    with open(raw, "wb") as f:
        f.write(b"".join(struct.pack("<Q", 0x10000000 + rng.randrange(1 << 16) * 24) for _ in range(300000)))
    for case in CASES:
        check_equal(tmp, [LACKEY], case)                                  # zstd: record slices
        check_equal(tmp, [plain], case)                                   # plain: byte ranges
        check_equal(tmp, [raw], case, ["--format", "raw64"])
        check_equal(tmp, [sonde_trace, sonde_trace], case)                # 4 shards: by shards
        check_equal(tmp, [sonde_trace, sonde_trace], case, ["--serial"])  # time slices

    # Byte ranges at their edges. Data lines whose instruction line lies in the range before
    # (the ranges of 2 and 3 ranks start inside the run of data lines); several inputs in one
    # stream, a tiny and an empty file among them; a file smaller than the rank count; an empty
    # file alone.
    edges = os.path.join(tmp, "edges.lackey")
    with open(edges, "w") as f:
        f.write(" L 00000100,8\nI  00401000,4\n")
        f.write("".join(f" {'LSM'[i % 3]} {0x10000 + 40 * i:08x},8\n" for i in range(3000)))
        f.write("I  00401004,4\n S 00020000,8\n")
    tiny = os.path.join(tmp, "tiny.lackey")
    with open(tiny, "w") as f:
        f.write("I  10,4\n")
    empty = os.path.join(tmp, "empty.lackey")
    open(empty, "w").close()
    for case in CASES:
        check_equal(tmp, [edges], case)
        check_equal(tmp, [tiny, edges, empty, tiny], case, ["--serial", "--format", "lackey"], counts=(3,))
        check_equal(tmp, [tiny], case, ["--format", "lackey"], counts=(3,))
    check_equal(tmp, [empty], ["--tool", "basic_counts,cache_sim,reuse_distance"], ["--format", "lackey"])

    # A rank takes its share of the node's cores when --jobs does not say (ranks unbound here):
    # never more workers than the cores divided by the ranks; with --jobs, what it says.
    for n in (2, 3):
        share = max(1, min(len(os.sched_getaffinity(0)), (os.cpu_count() or 1) // n))
        for jobs, most in (([], share), (["--jobs", "2"], 2)):
            p = run(MPI + ["-np", str(n), SONDE, "analyze", "--mpi", *jobs, sonde_trace, sonde_trace,
                           "--tool", "basic_counts"])
            got = re.search(r"parallel, (\d+) worker\(s\)", p.stdout)
            assert got and 1 <= int(got.group(1)) <= most, (n, jobs, share, p.stdout)
            if jobs:
                assert int(got.group(1)) == 2, p.stdout

    # SHARDS at a fixed rate composes with the slices (PARDA over the sampled lines): the same
    # estimate as one process, bit for bit. At R = 0.01 the scaled distances near the start of a
    # later rank's slice reach its position in the slice and wait for rank 0's cap.
    for rate, seed in (("0.1", "0"), ("0.01", "7")):
        case = ["--tool", "reuse_distance", "--sample-rate", rate, "--sample-seed", seed]
        check_equal(tmp, [LACKEY], case)
        check_equal(tmp, [plain], case)
        check_equal(tmp, [sonde_trace, sonde_trace], case, ["--serial"])

    # --mpi without mpirun: one rank, the same results.
    one = os.path.join(tmp, "one.json")
    single = os.path.join(tmp, "single.json")
    for trace in (LACKEY, plain):
        run([SONDE, "analyze", trace, "--tool", "basic_counts,cache_sim", "--json", one])
        p = run([SONDE, "analyze", "--mpi", trace, "--tool", "basic_counts,cache_sim", "--json", single])
        assert "1 MPI rank(s)" in p.stdout, p.stdout
        assert results(single) == results(one)

    # One rank cannot read its input: the same relative path in two working directories, a
    # lackey trace in one and text that is no lackey trace in the other. Every rank stops,
    # the exit status is not 0, and the others name rank 1 and the reason.
    good, bad = os.path.join(tmp, "good"), os.path.join(tmp, "bad")
    os.mkdir(good)
    os.mkdir(bad)
    with open(os.path.join(good, "t.lackey"), "w") as f:
        f.write("I  00400000,4\n L 00001000,8\n S 00001040,8\n")
    with open(os.path.join(bad, "t.lackey"), "w") as f:  # the bad line in rank 1's half
        f.write("I  00400000,4\n L 00001000,8\n this is not lackey\n")
    args = ["analyze", "--mpi", "--format", "lackey", "t.lackey"]
    p = subprocess.run(MPI + ["-np", "1", "-wdir", good, SONDE, *args, ":", "-np", "1", "-wdir", bad, SONDE, *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert "stopped because rank 1:" in p.stderr and "t.lackey" in p.stderr, p.stderr
    assert "basic_counts:" not in p.stdout, p.stdout

    # An input that does not exist on one rank: refused by its option check (exit 2).
    os.remove(os.path.join(bad, "t.lackey"))
    p = subprocess.run(MPI + ["-np", "1", "-wdir", good, SONDE, *args, ":", "-np", "1", "-wdir", bad, SONDE, *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert "stopped because rank 1:" in p.stderr and "bad usage" in p.stderr, p.stderr

    # A tool that cannot run partitioned is refused on every rank, with the reason.
    p = run(MPI + ["-np", "2", SONDE, "analyze", "--mpi", LACKEY, "--tool", "reuse_distance", "--sample-size", "1000"],
            code=1)
    assert "SHARDS at a fixed size (sample_size) does not run partitioned" in p.stderr, p.stderr

    # Ranks started with other options.
    p = subprocess.run(MPI + ["-np", "1", SONDE, "analyze", "--mpi", LACKEY, ":",
                              "-np", "1", SONDE, "analyze", "--mpi", "--line-size", "128", LACKEY],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "rank 1 was started with other options or inputs than rank 0" in p.stderr, p.stderr

print("ok")
