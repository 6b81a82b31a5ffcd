#!/usr/bin/env python3
"""`sonde analyze --mpi` under mpirun (argv: sonde, mpirun, trace_record, data directory):
with 2 and 3 ranks on real traces (the gzip lackey trace, a Sonde trace of two shards given
twice), the merged JSON of rank 0 equals the one process's for every built-in tool, metadata
start_time and command aside; then the errors: an input that one rank cannot read (every rank
stops, exit non-zero, the reason named), ranks started with other options, a tool that cannot
run partitioned, and --mpi without mpirun (one rank)."""
import json
import os
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


def check_equal(tmp, inputs, tool_args, extra=()):
    one = os.path.join(tmp, "one.json")
    run([SONDE, "analyze", *inputs, *tool_args, *extra, "--json", one])
    expected = results(one)
    for n in (2, 3):
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
    for case in CASES:
        check_equal(tmp, [LACKEY], case)
        check_equal(tmp, [sonde_trace, sonde_trace], case)                # 4 shards: by shards
        check_equal(tmp, [sonde_trace, sonde_trace], case, ["--serial"])  # time slices

    # --mpi without mpirun: one rank, the same results.
    one = os.path.join(tmp, "one.json")
    single = os.path.join(tmp, "single.json")
    run([SONDE, "analyze", LACKEY, "--json", one])
    p = run([SONDE, "analyze", "--mpi", LACKEY, "--json", single])
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
    p = run(MPI + ["-np", "2", SONDE, "analyze", "--mpi", LACKEY, "--tool", "reuse_distance", "--sample-rate", "0.1"],
            code=1)
    assert "SHARDS sampling (sample_rate, sample_size) does not run partitioned" in p.stderr, p.stderr

    # Ranks started with other options.
    p = subprocess.run(MPI + ["-np", "1", SONDE, "analyze", "--mpi", LACKEY, ":",
                              "-np", "1", SONDE, "analyze", "--mpi", "--line-size", "128", LACKEY],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "rank 1 was started with other options or inputs than rank 0" in p.stderr, p.stderr

print("ok")
