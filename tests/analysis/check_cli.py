#!/usr/bin/env python3
"""Runs the `sonde` executable (argv[1]) on a small lackey trace and checks its exit codes, its
human summary and the JSON it writes with --json (the keys the CLI documents)."""
import json
import os
import subprocess
import sys
import tempfile

SONDE = sys.argv[1]

LACKEY = """==1== Lackey, an example Valgrind tool
I  00400000,4
 L 00001000,8
 S 00001040,8
 M 0000103c,8
I  00400004,4
 L 00001000,4
==1== exiting
"""


def run(*args, code=0):
    p = subprocess.run([SONDE, *args], capture_output=True, text=True)
    if p.returncode != code:
        sys.exit(f"sonde {' '.join(args)}: exit {p.returncode}, expected {code}\n{p.stdout}\n{p.stderr}")
    return p


with tempfile.TemporaryDirectory() as tmp:
    trace = os.path.join(tmp, "small.lackey")
    with open(trace, "w") as f:
        f.write(LACKEY)
    out = os.path.join(tmp, "out.json")

    for serial in ([], ["--serial"]):
        p = run("analyze", trace, "--format", "lackey", "--tool", "basic_counts,cache_sim",
                "--cache", "I1:1K:2:64,D1:1K:2:64,LL:4K:4:64", "--json", out, *serial)
        assert "basic_counts" in p.stdout and "cache_sim" in p.stdout, p.stdout
        with open(out) as f:
            j = json.load(f)
        assert set(j) == {"metadata", "basic_counts", "cache_sim", "inputs", "warnings"}, j.keys()
        assert j["inputs"] == [{"path": trace, "format": "lackey", "complete": True, "warnings": []}], j["inputs"]
        assert j["warnings"] == [], j["warnings"]
        b = j["basic_counts"]
        for key in ("reads", "writes", "ifetches", "total", "distinct_lines"):
            assert key in b, key
        # L, L and M read; S and M write; two I lines; lines 0x1000>>6=64, 65 (S, M straddles
        # 64 and 65) and the code line 0x400000>>6.
        assert (b["reads"], b["writes"], b["ifetches"], b["total"], b["distinct_lines"]) == (3, 2, 2, 6, 3), b
        levels = j["cache_sim"]["levels"]
        assert [lv["name"] for lv in levels] == ["I1", "D1", "LL"], levels
        for lv in levels:
            for key in ("name", "accesses", "hits", "misses", "miss_ratio", "compulsory_misses"):
                assert key in lv, (key, lv)
            assert lv["hits"] + lv["misses"] == lv["accesses"], lv
        i1, d1, ll = levels
        assert (i1["accesses"], i1["misses"]) == (2, 1), i1
        # D1: L miss (64), S miss (65), M hits both, L hits.
        assert (d1["accesses"], d1["misses"], d1["compulsory_misses"]) == (4, 2, 2), d1
        assert (ll["accesses"], ll["misses"]) == (3, 3), ll
        assert abs(d1["miss_ratio"] - 0.5) < 1e-12, d1

    p = run("analyze", trace, "--format", "lackey", "--line-size", "4096", "--jobs", "1", "--json", out)
    with open(out) as f:
        j = json.load(f)
    assert j["basic_counts"]["distinct_lines"] == 2, j
    assert "parallel, 1 worker" in p.stdout, p.stdout

    # Errors, all refused before the run as usage errors (check_cli_usage.py has the full table):
    # a missing input, an unknown tool, a bad cache, a missing tool library, bad usage.
    p = run("analyze", os.path.join(tmp, "missing.lackey"), "--format", "lackey", code=2)
    assert "missing.lackey" in p.stderr, p.stderr
    p = run("analyze", trace, "--tool", "nope", code=2)
    assert "nope" in p.stderr, p.stderr
    p = run("analyze", trace, "--tool", "cache_sim", "--cache", "D1:1K:3:64", code=2)
    assert "--cache" in p.stderr, p.stderr
    p = run("analyze", trace, "--tool", os.path.join(tmp, "missing.so"), code=2)
    assert "missing.so" in p.stderr, p.stderr
    run("analyze", trace, "--format", "elf", code=2)
    run("analyze", code=2)
    run("frobnicate", code=2)
    assert "analyze" in run("--help").stdout
    assert run("--version").stdout.startswith("sonde ")
print("ok")
