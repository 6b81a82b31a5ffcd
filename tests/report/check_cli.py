#!/usr/bin/env python3
"""`sonde report` and `sonde export` from the command line, on the fixture of fixture.py:
usage errors exit 2 naming the option, input errors exit 1 naming the file (and line), the
report's numbers equal an independent computation, JSON/HTML/exports are written through
temporary files (an existing output is refused without --force, a failed export leaves
nothing), and the exports agree with the report: the same calls in chrome, chrome's outermost
durations equal the totals, folded weights sum to the self times, one CSV row per call.
Usage: check_cli.py SONDE"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402

sonde = sys.argv[1]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        print("FAIL:", what)
        failures += 1


def run(*args):
    return subprocess.run([sonde] + list(args), capture_output=True, text=True, timeout=60)


with tempfile.TemporaryDirectory() as tmp:
    events = os.path.join(tmp, "calls.txt")
    fixture.write(events)
    want, want_threads = fixture.expected()

    # --- usage -----------------------------------------------------------------------------
    r = run("report", "--help")
    check(r.returncode == 0 and "--sort" in r.stdout and "--html" in r.stdout, "report --help")
    r = run("export", "--help")
    check(r.returncode == 0 and "--format" in r.stdout and "--force" in r.stdout, "export --help")
    for args, option in [
        (["report"], "FILE"),
        (["report", events, "--sort", "speed"], "--sort"),
        (["report", events, "--depth", "x"], "--depth"),
        (["report", events, "--bogus"], "--bogus"),
        (["report", events, "--analysis", os.path.join(tmp, "none.json"), "--html", "x.html"], "--analysis"),
        (["export", events, "-o", "x"], "--format"),
        (["export", events, "--format", "xml", "-o", "x"], "--format"),
        (["export", events, "--format", "chrome"], "--output"),
    ]:
        r = run(*args)
        check(r.returncode == 2 and option in r.stderr, "%s: exit 2 naming %s (got %d: %s)" % (
            " ".join(args), option, r.returncode, r.stderr.strip()))
    r = run("report", events, "--analysis", events)
    check(r.returncode == 2 and "--analysis" in r.stderr and "--html" in r.stderr, "--analysis needs --html")
    r = run("help")
    check(r.returncode == 0 and "report FILE" in r.stdout and "export FILE" in r.stdout, "usage lists the verbs")

    # --- input errors ----------------------------------------------------------------------
    missing = os.path.join(tmp, "missing.txt")
    r = run("report", missing)
    check(r.returncode == 2 and missing in r.stderr, "missing input (a usage error): %s" % r.stderr)
    other = os.path.join(tmp, "other.bin")
    with open(other, "wb") as f:
        f.write(b"SONDETRC\0\0\0\0")
    r = run("report", other)
    check(r.returncode == 1 and other in r.stderr and "truncated header" in r.stderr,
          "a cut Sonde trace: %s" % r.stderr)
    junk = os.path.join(tmp, "junk.bin")
    with open(junk, "wb") as f:
        f.write(b"\x7fELF not a trace")
    memrefs = os.path.join(tmp, "m.lackey")
    with open(memrefs, "w") as f:
        f.write("I  04011c0,3\n L 1ffefffd70,8\n S 1ffefffd78,8\n")
    converted = os.path.join(tmp, "m.sonde")
    r = run("convert", memrefs, "-o", converted)
    check(r.returncode == 0, "a memory-reference trace to report: %s" % r.stderr)
    r = run("report", converted)
    check(r.returncode == 1 and "holds no call events" in r.stderr, "a trace of memory references: %s" % r.stderr)
    r = run("report", junk)
    check(r.returncode == 1 and "not a trace of call events" in r.stderr, "not an event file: %s" % r.stderr)
    bad = os.path.join(tmp, "bad.txt")
    with open(bad, "w") as f:
        f.write("sonde-events 1\nthread 1 1 t\nenter 10 0\nleave ten 0\n")
    r = run("report", bad)
    check(r.returncode == 1 and bad + ":4: expected a timestamp" in r.stderr, "malformed line: %s" % r.stderr)

    # --- report ----------------------------------------------------------------------------
    out_json = os.path.join(tmp, "report.json")
    r = run("report", events, "--json", out_json)
    check(r.returncode == 0, "report: %s" % r.stderr)
    check(r.stderr == "", "no warnings for a clean fixture: %s" % r.stderr)
    lines = r.stdout.splitlines()
    check(lines[0] == "  Total time   Self time       Calls  Function", "text header: %r" % lines[:2])
    check(lines[2].endswith("  fibo") and lines[2].split()[-2] == str(want["fibo"][0]),
          "fibo has the most self time: %r" % lines[2])
    rep = json.load(open(out_json))
    check(isinstance(rep["sonde_version"], str) and rep["sonde_version"].count(".") == 2, "sonde_version")
    meta = rep.get("metadata", {})
    check(list(rep)[0] == "metadata" and meta.get("sonde_version") == rep["sonde_version"]
          and meta.get("command") == "report" and meta.get("inputs") == [events]
          and meta.get("options") == {"sort": "self", "tree": False, "depth": 0, "threads": False}
          and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta.get("start_time", "")),
          "the metadata block: %r" % meta)
    got = {f["name"]: [f["calls"], f["total_ns"], f["self_ns"]] for f in rep["functions"]}
    check(got == want, "functions equal the independent computation:\n%s\n%s" % (got, want))
    selfs = [f["self_ns"] for f in rep["functions"]]
    check(selfs == sorted(selfs, reverse=True), "sorted by self time")
    check([t["name"] for t in rep["threads"]] == ["main", "worker <pool>"], "thread names")
    for t in rep["threads"]:
        got_t = {f["name"]: [f["calls"], f["total_ns"], f["self_ns"]] for f in t["functions"]}
        check(got_t == want_threads[t["id"]], "thread %d functions" % t["id"])
    check(rep["threads"][0]["marks"] == 1 and rep["threads"][0]["tid"] == 4100, "thread 1 marks and tid")
    check(rep["warnings"] == [], "no warnings")
    r = run("report", events, "--sort", "calls", "--json", out_json, "-q")
    check(r.returncode == 0 and r.stdout == "", "--quiet prints nothing")
    calls = [f["calls"] for f in json.load(open(out_json))["functions"]]
    check(calls == sorted(calls, reverse=True) and calls[0] == want["fibo"][0], "--sort calls")
    r = run("report", events, "--sort", "name", "--threads")
    check(r.returncode == 0 and "thread 2 (tid 4101, worker <pool>)" in r.stdout, "--threads prints per thread")

    r = run("report", events, "--tree", "--json", out_json)
    check(r.returncode == 0 and "thread 1 (tid 4100, main)\n  TOTAL TIME   FUNCTION\n" in r.stdout, "--tree text")
    check(" : (1) main\n" in r.stdout and " :  +-(1) work\n" in r.stdout, "--tree guides: %s" % r.stdout[:400])
    tree = json.load(open(out_json))["threads"][0]["tree"]
    check(tree[0] == {"parent": -1, "name": "main", "calls": 1, "total_ns": want["main"][1],
                      "self_ns": want["main"][2]}, "JSON tree root: %s" % tree[0])
    fibo_nodes = [n for n in tree if n["name"] == "fibo"]
    check(len(fibo_nodes) == 12 and sum(n["calls"] for n in fibo_nodes) == want_threads[1]["fibo"][0],
          "fibo(12) has 12 levels holding all its calls")
    r = run("report", events, "--tree", "--depth", "2")
    check(r.returncode == 0 and "(1) fibo" not in r.stdout and "(1) work" in r.stdout, "--depth 2")

    # --- html ------------------------------------------------------------------------------
    analysis = os.path.join(tmp, "analysis.json")
    with open(analysis, "w") as f:
        f.write('{"cache_sim": {"levels": []}}')
    out_html = os.path.join(tmp, "report.html")
    r = run("report", events, "--html", out_html, "--analysis", analysis, "-q")
    check(r.returncode == 0 and os.path.exists(out_html), "--html: %s" % r.stderr)
    page = open(out_html, encoding="utf-8").read()
    check('id="cache-sim"' in page and "<img" not in page and "worker &lt;pool&gt;" in page, "page content")
    with open(analysis, "w") as f:
        f.write("not json")
    r = run("report", events, "--html", out_html, "--analysis", analysis)
    check(r.returncode == 1 and analysis in r.stderr, "bad --analysis: %s" % r.stderr)
    # A device that never ends is refused at its first bytes, not read until memory runs out.
    r = run("report", events, "--html", out_html, "--analysis", "/dev/zero")
    check(r.returncode == 1 and "/dev/zero: not the results of sonde analyze --json" in r.stderr,
          "--analysis /dev/zero: %d %r" % (r.returncode, r.stderr))

    # --- export ----------------------------------------------------------------------------
    chrome = os.path.join(tmp, "calls.json")
    r = run("export", events, "--format", "chrome", "-o", chrome)
    check(r.returncode == 0 and "exported" in r.stdout, "export chrome: %s" % r.stderr)
    before = open(chrome, "rb").read()
    r = run("export", events, "--format", "chrome", "-o", chrome)
    check(r.returncode == 1 and "--force" in r.stderr and open(chrome, "rb").read() == before,
          "an existing output is refused without --force: %s" % r.stderr)
    r = run("export", events, "--format", "csv", "-o", chrome, "--force")
    check(r.returncode == 0 and open(chrome).readline() == "thread,depth,name,begin_ns,duration_ns\n",
          "--force overwrites")
    mask = os.umask(0)
    os.umask(mask)
    check(os.stat(chrome).st_mode & 0o777 == 0o666 & ~mask, "the output has the mode of a new file")
    r = run("export", events, "--format", "chrome", "-o", chrome, "--force")
    trace = json.load(open(chrome))
    count, spans = {}, {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            count[e["name"]] = count.get(e["name"], 0) + 1
            b = round(e["ts"] * 1000)
            spans.setdefault((e["tid"], e["name"]), []).append((b, b + round(e["dur"] * 1000)))
    check(count == {n: v[0] for n, v in want.items()}, "chrome: one X event per call")
    outer = {}
    for (tid, name), v in spans.items():
        v.sort(key=lambda s: (s[0], -s[1]))
        end = None
        for b, e in v:
            if end is None or b >= end:
                outer[name] = outer.get(name, 0) + e - b
                end = e
            else:
                end = max(end, e)
    check(outer == {n: v[1] for n, v in want.items()}, "chrome: outermost durations are the totals")
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    check(names == {"main", "worker <pool>"}, "thread names: %s" % names)
    check([e["name"] for e in trace["traceEvents"] if e["ph"] == "i"] == ["checkpoint <1> & co"], "mark")

    r = run("export", events, "--format", "folded", "-o", "-")
    check(r.returncode == 0 and r.stdout.startswith("main 150\n"), "folded to stdout: %r" % r.stdout[:80])
    leaf_self = {}
    for line in r.stdout.splitlines():
        stack, weight = line.rsplit(" ", 1)
        leaf = stack.split(";")[-1]
        leaf_self[leaf] = leaf_self.get(leaf, 0) + int(weight)
    check(leaf_self == {n: v[2] for n, v in want.items() if v[2]}, "folded: weights sum to self times")
    check("main;work;fibo;fibo;fibo 3" in r.stdout or "main;work;fibo;fibo;fibo " in r.stdout, "folded stacks")

    out_csv = os.path.join(tmp, "calls.csv")
    r = run("export", events, "--format", "csv", "-o", out_csv)
    rows = list(csv.DictReader(io.StringIO(open(out_csv, encoding="utf-8").read())))
    check(len(rows) == sum(v[0] for v in want.values()), "csv: one row per call")
    vec = [x for x in rows if x["name"].startswith("std::vector")]
    check(len(vec) == 3 and [int(x["duration_ns"]) for x in vec] == [40, 41, 42] and vec[0]["depth"] == "1",
          "csv: push_back rows (quoted name with commas)")

    # A failed export leaves neither the output nor a temporary file.
    broken = os.path.join(tmp, "broken.txt")
    with open(broken, "w") as f:
        f.write("sonde-events 1\nmethod 0 - - 0 f\nthread 1 1 t\nenter 10 0\n" + "leave 20 0\nenter 20 0\n" * 5000
                + "oops\n")
    out_broken = os.path.join(tmp, "broken.json")
    r = run("export", broken, "--format", "chrome", "-o", out_broken)
    check(r.returncode == 1 and broken + ":10005: unknown line" in r.stderr, "broken input: %s" % r.stderr)
    check(not os.path.exists(out_broken), "no output after a failed export")
    check(not [n for n in os.listdir(tmp) if ".tmp-" in n], "no temporary file left: %s" % os.listdir(tmp))
    r = run("export", events, "--format", "csv", "-o", os.path.join(tmp, "no", "such", "dir.csv"))
    check(r.returncode == 1 and "no/such/dir.csv" in r.stderr, "unwritable output: %s" % r.stderr)

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
