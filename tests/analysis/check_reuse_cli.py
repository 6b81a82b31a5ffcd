#!/usr/bin/env python3
"""reuse_distance through `sonde analyze`: on the gzip lackey trace at 64-byte lines the JSON
histogram is exactly gem5's (tests/data/gzip-gpl3.l64.hist); the parallel exact mode
(--jobs) gives the same; SHARDS sampling reports its rate and stays close to the exact MRC;
--per-shard adds the shards list; bad options are usage or tool errors. A histogram of over
200,000 distinct distances is written a pair a line, the same text for 1 job and for 2 (whose
arrays are formatted in pieces on two threads), and equal to the text document's values.
Usage: check_reuse_cli.py SONDE_EXE"""
import json
import os
import subprocess
import sys
import tempfile

exe = sys.argv[1]
data = os.environ["SONDE_SHARED_DATA"]
trace = os.path.join(data, "gzip-gpl3.lackey.zst")
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        r = subprocess.run([exe, "analyze", trace, "--format", "lackey", "--tool", "reuse_distance",
                            "--json", out] + list(args), capture_output=True, text=True)
        if r.returncode != 0:
            return r.returncode, r.stdout + r.stderr, None
        return 0, r.stdout, json.load(open(out))["reuse_distance"]


ref, accesses, infinite = {}, None, None
for line in open(os.path.join(data, "gzip-gpl3.l64.hist")):
    k, v = line.split()
    if k == "accesses":
        accesses = int(v)
    elif k == "infinite":
        infinite = int(v)
    else:
        ref[int(k)] = int(v)

rc, text, exact = run("--line-size", "64")
expect(rc == 0, "exact run: " + text)
if exact:
    expect(exact["line_size"] == 64, "line_size")
    expect(exact["accesses"] == accesses, "accesses %s != %s" % (exact["accesses"], accesses))
    expect(exact["infinite"] == infinite, "infinite %s != %s" % (exact["infinite"], infinite))
    hist = exact["histogram"]
    expect([d for d, _ in hist] == sorted(d for d, _ in hist), "histogram ascending")
    expect(all(c > 0 for _, c in hist), "no zero counts")
    expect(dict(map(tuple, hist)) == ref, "histogram equals gem5's")
    expect("sample_rate" not in exact, "no sample_rate when exact")
    mrc = exact["mrc"]
    expect(all(0 <= r <= 1 for _, r in mrc), "miss ratios in [0, 1]")
    expect(all(mrc[i][1] >= mrc[i + 1][1] for i in range(len(mrc) - 1)), "MRC does not increase")
    expect("reuse_distance:" in text, "human summary printed")

rc, text, par = run("--line-size", "64", "--jobs", "2")
expect(rc == 0 and par is not None and par["histogram"] == exact["histogram"] and par["infinite"] == infinite,
       "parallel exact mode equals serial")

# --jobs N on more CPUs than the process has: decoding and the calculator share them
# (reuse_stage_threads in src/cli/analyze.cpp), N each while N < 4 or 2N fit the CPUs, else half
# of max(N, CPUs) each. The calculator's jobs= is in the metadata; the histogram never changes.
# The process's CPUs are set by its affinity (os.sched_setaffinity in the child).
def tool_jobs(jobs, cpus):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        r = subprocess.run([exe, "analyze", trace, "--format", "lackey", "--tool", "reuse_distance",
                            "--line-size", "64", "--json", out, "--jobs", str(jobs)], capture_output=True,
                           text=True, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        if r.returncode != 0:
            return None, r.stdout + r.stderr
        doc = json.load(open(out))
        return doc["metadata"]["options"]["tools"][0]["options"], doc["reuse_distance"]


cpus = sorted(os.sched_getaffinity(0))
for jobs, ncpus, want in ((3, 1, "jobs=3"), (4, 1, "jobs=2"), (16, 1, "jobs=8"), (5, 2, "jobs=3"), (4, 8, "jobs=4")):
    if ncpus > len(cpus):
        continue
    options, result = tool_jobs(jobs, set(cpus[:ncpus]))
    expect(options is not None and options.endswith("," + want),
           "--jobs %d on %d CPU(s): the calculator gets %s (%s)" % (jobs, ncpus, want, options))
    if exact and options is not None:
        expect(result["histogram"] == exact["histogram"] and result["infinite"] == infinite,
               "--jobs %d on %d CPU(s): the histogram is the serial one" % (jobs, ncpus))

rc, text, shards = run("--sample-rate", "0.1", "--per-shard")
expect(rc == 0 and shards is not None, "sampled run: " + text)
if shards and exact:
    expect(abs(shards["sample_rate"] - 0.1) < 1e-6, "sample_rate reported")
    expect(len(shards["shards"]) == 1, "one shard for a lackey input")
    # The metric of docs/stack-distance.md: mean absolute error over every cache size from 1 to
    # the largest exact distance + 1.
    top = max(d for d, _ in exact["histogram"]) + 1
    sizes = range(1, top + 1)
    ex = {}
    k = 0
    cur = 1.0
    for size in sizes:
        while k < len(exact["mrc"]) and exact["mrc"][k][0] <= size:
            cur = exact["mrc"][k][1]
            k += 1
        ex[size] = cur
    sm = {}
    k = 0
    cur = 1.0
    for size in sizes:
        while k < len(shards["mrc"]) and shards["mrc"][k][0] <= size:
            cur = shards["mrc"][k][1]
            k += 1
        sm[size] = cur
    err = sum(abs(sm[x] - ex[x]) for x in sizes) / len(sizes)
    print("SHARDS R=0.1 mean absolute MRC error on gzip: %.4f (documented bound 0.01)" % err)
    expect(err <= 0.01, "SHARDS error %.4f above the documented bound" % err)

# A large histogram (about 1 M accesses over 300,000 lines): its arrays are written as text, in
# pieces when several jobs run; the reuse_distance member's text must not depend on --jobs. Two
# jobs calculate it in two batches (the first parallel batch is 512 K accesses), the first while
# the second is gathered.
with tempfile.TemporaryDirectory() as tmp:
    raw = os.path.join(tmp, "big.raw64")
    x, words = 12345, []
    for i in range(1 << 20):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        words.append(0x10000000 + ((x >> 33) % 300000) * 64)
    with open(raw, "wb") as f:
        f.write(b"".join(w.to_bytes(8, "little") for w in words))
    texts = []
    for jobs in ("1", "2"):
        out = os.path.join(tmp, "big%s.json" % jobs)
        r = subprocess.run([exe, "analyze", raw, "--format", "raw64", "--tool", "reuse_distance", "--jobs", jobs,
                            "--json", out], capture_output=True, text=True)
        expect(r.returncode == 0, "large histogram, --jobs %s: %s" % (jobs, r.stdout + r.stderr))
        texts.append(open(out).read() if r.returncode == 0 else "")
    if texts[0] and texts[1]:
        member = [t[t.index('"reuse_distance": {'):] for t in texts]
        expect(member[0] == member[1], "the reuse_distance JSON text is the same for 1 and 2 jobs")
        big = json.loads(texts[0])["reuse_distance"]
        expect(big["accesses"] == 1 << 20, "large histogram: accesses")
        expect(len(big["histogram"]) > 200000, "large histogram: %d distinct distances" % len(big["histogram"]))
        expect(sum(c for _, c in big["histogram"]) + big["infinite"] == 1 << 20, "large histogram: counts sum")
        expect(len(big["mrc"]) == len(big["histogram"]) + 1, "large histogram: an MRC point per distance")
        lines = member[0].split("\n")
        start = lines.index('    "histogram": [')
        body = lines[start + 1:start + 1 + len(big["histogram"])]
        expect(all(l.startswith("      [") and (l.endswith("],") or l.endswith("]")) and l.count(", ") == 1
                   for l in body), "a histogram pair a line")
        expect(lines[start + 1 + len(big["histogram"])] == "    ],", "the histogram array closes on its own line")

rc, text, _ = run("--sample-rate", "0.1", "--sample-size", "100")
expect(rc == 2, "rate and size together are a usage error")
rc, text, _ = run("--sample-rate", "2")
expect(rc == 2, "rate above 1 is a usage error")
print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
sys.exit(1 if failures else 0)
