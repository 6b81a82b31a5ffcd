#!/usr/bin/env python3
"""`sonde record` on real -finstrument-functions programs, read back with ctypes through the
public reading API (examples/python/sonde_trace.py):

1. a two-thread C++ program (recursion, virtual calls, static functions): call counts equal
   `uftrace record --no-libcall` + `uftrace report`, function by function; thread names;
   `sonde report --json` and `sonde export` of the recorded trace count the same calls;
2. the trace stays readable, names and source lines included, after the binary is deleted;
3. marks and ranges; the exit status is the program's;
4. SIGSEGV, abort() and _exit(): the trace keeps every event up to the end and is complete;
5. SIGKILL: the reader recovers the trace with a warning;
6. errors: an existing output, an unwritable output, a missing program (127), and the warning
   for a program without instrumentation (also for `sonde run`).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

build = os.environ["SONDE_BUILD_ROOT"]
source = os.environ["SONDE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(source, "examples", "python"))
os.environ.setdefault("SONDE_LIBRARY", os.path.join(build, "libsonde.so.1"))
import sonde_trace  # noqa: E402

sonde = os.path.join(build, "src", "cli", "sonde")
callgraph = os.path.join(build, "tests", "record", "record_callgraph")
prog = os.path.join(build, "tests", "record", "record_prog")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def uftrace_counts(tmp, program, args):
    data = os.path.join(tmp, "uftrace.data")
    shutil.rmtree(data, ignore_errors=True)
    r = run(["uftrace", "record", "--no-libcall", "-d", data, program] + args)
    if r.returncode != 0:
        print("uftrace record failed:", r.stderr)
        return None
    rep = run(["uftrace", "report", "-d", data])
    counts = {}
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*[\d.]+ \S+\s+[\d.]+ \S+\s+(\d+)\s+(.+?)\s*$", line)
        if m and not m.group(2).startswith("linux:"):
            counts[m.group(2)] = int(m.group(1))
    return counts


with tempfile.TemporaryDirectory() as tmp:
    # 1. Two threads, compared with uftrace.
    out = os.path.join(tmp, "callgraph.trace")
    r = run([sonde, "record", "-o", out, "--", callgraph, "12"])
    check(r.returncode == 0 and "checksum" in r.stdout, "the program runs under sonde record: %s" % r.stderr)
    summary = re.search(r"sonde record: (\d+) events, (\d+) threads, (\d+) methods, .* in (.+)$", r.stderr, re.M)
    check(summary is not None and int(summary.group(2)) == 2 and summary.group(4) == out,
          "one summary line with events, threads, methods and the file: %s" % r.stderr.strip())
    trace = sonde_trace.Trace(out)
    check(trace.warnings == "", "the trace opens without warnings")
    ours = trace.call_counts()
    check(ours.get("fib", 0) == 2 * 465 and ours.get("zoo::Cat::legs") == 24 and ours.get("zoo::Bird::legs") == 12
          and ours.get("count_legs") == 12 and ours.get("main") == 1 and ours.get("worker") == 1,
          "recursion, virtual and static calls are counted: %s" % sorted(ours.items()))
    names = [t["name"] for t in trace.threads]
    check(len(trace.threads) == 2 and "walker" in names and all(t["tid"] > 0 for t in trace.threads),
          "both threads with their OS ids and the name the worker set: %s" % trace.threads)
    enters = leaves = 0
    nesting_ok = True
    for shard in range(trace.info.num_shards):
        depth = 0
        last = 0
        for ts, kind, _, _, _ in trace.events(shard):
            nesting_ok = nesting_ok and ts >= last
            last = ts
            if kind == sonde_trace.METHOD_ENTER:
                enters += 1
                depth += 1
            elif kind == sonde_trace.METHOD_LEAVE:
                leaves += 1
                depth -= 1
                nesting_ok = nesting_ok and depth >= 0
    check(enters == leaves and nesting_ok and enters == sum(ours.values()),
          "every enter has its leave, nested, timestamps rising: %d enters, %d leaves" % (enters, leaves))
    fib = [m for m in trace.methods if m["name"] == "fib"]
    check(len(fib) == 1 and fib[0]["file"].endswith("callgraph.cpp") and fib[0]["line"] > 0
          and fib[0]["mangled"].startswith("_Z"), "methods carry mangled names and DWARF lines: %s" % fib)
    trace.close()
    if shutil.which("uftrace"):
        theirs = uftrace_counts(tmp, callgraph, ["12"])
        check(theirs == ours, "call counts equal uftrace report, function by function:"
              "\n  sonde   %s\n  uftrace %s" % (sorted(ours.items()), sorted((theirs or {}).items())))
    else:
        print("uftrace not installed: the comparison is skipped")
    # The same trace through sonde report and sonde export (the trace's own tables name them).
    rj = os.path.join(tmp, "callgraph.json")
    r = run([sonde, "report", out, "--json", rj, "--quiet"])
    report = json.load(open(rj)) if r.returncode == 0 else {}
    reported = {f["name"]: f["calls"] for f in report.get("functions", [])}
    check(reported == ours and r.stderr == "",
          "sonde report of the recorded trace counts the same calls, without warnings: %s %s" % (
              sorted(reported.items()), r.stderr.strip()))
    fib = [f for f in report.get("functions", []) if f["name"] == "fib"]
    check(len(fib) == 1 and fib[0]["file"].endswith("callgraph.cpp") and fib[0]["line"] > 0
          and 0 < fib[0]["self_ns"] <= fib[0]["total_ns"],
          "the report names the source line and has self <= total: %s" % fib)
    threads = report.get("threads", [])
    check(len(threads) == 2 and any(t.get("name") == "walker" for t in threads),
          "the report lists both threads with their names: %s" % threads)
    rc = os.path.join(tmp, "callgraph.chrome.json")
    r = run([sonde, "export", out, "--format", "chrome", "-o", rc])
    chrome = json.load(open(rc)) if r.returncode == 0 else {}
    spans = [e for e in chrome.get("traceEvents", []) if e.get("ph") == "X"]
    check(len(spans) == sum(ours.values()), "sonde export writes one span per call: %d" % len(spans))

    # 2. The binary deleted after recording: names come from the trace's own tables.
    copy = os.path.join(tmp, "gone")
    shutil.copy(callgraph, copy)
    out2 = os.path.join(tmp, "gone.trace")
    r = run([sonde, "record", "-o", out2, "--", copy, "8"])
    os.unlink(copy)
    trace = sonde_trace.Trace(out2)
    counts = trace.call_counts()
    check(r.returncode == 0 and counts.get("fib") == 2 * 67 and any(m["file"].endswith("callgraph.cpp")
                                                                   for m in trace.methods),
          "a trace of a deleted binary still names its functions: %s" % sorted(counts.items())[:5])
    fib = [m for m in trace.methods if m["name"] == "fib"]
    check(len(fib) == 1 and trace.modules[fib[0]["module"]]["name"] == "gone",
          "a method's module is named: %s" % trace.modules[:2])
    trace.close()

    # 3. Marks and ranges; the exit status is the program's.
    out3 = os.path.join(tmp, "marks.trace")
    r = run([sonde, "record", "-o", out3, "--", prog, "marks"])
    check(r.returncode == 3, "sonde record exits with the program's status (3): %d" % r.returncode)
    trace = sonde_trace.Trace(out3)
    user = [(k, trace.strings[i], aux) for _, k, i, _, aux in trace.events(0)
            if k in (sonde_trace.MARK, sonde_trace.RANGE_PUSH, sonde_trace.RANGE_POP)]
    check(user == [(sonde_trace.MARK, "start", 0), (sonde_trace.RANGE_PUSH, "outer", 0),
                   (sonde_trace.RANGE_PUSH, "inner", 1), (sonde_trace.RANGE_POP, "inner", 1),
                   (sonde_trace.RANGE_POP, "outer", 0), (sonde_trace.MARK, "done", 0)],
          "marks and ranges in order with their texts and depths: %s" % user)
    check(trace.call_counts().get("step") == 10, "the calls between them are recorded")
    trace.close()

    # 4. Fatal signals: everything up to the crash, in a complete trace.
    for mode, sig in (("segv", signal.SIGSEGV), ("abort", signal.SIGABRT)):
        out4 = os.path.join(tmp, mode + ".trace")
        r = run([sonde, "record", "-o", out4, "--", prog, mode, "5000"])
        check(r.returncode == 128 + sig, "%s: sonde record exits with 128 + the signal: %d" % (mode, r.returncode))
        trace = sonde_trace.Trace(out4)
        counts = trace.call_counts()
        check(trace.warnings == "" and counts.get("step") == 5000 and counts.get("main") == 1,
              "%s: the trace is complete and holds every call up to the crash: %s %s"
              % (mode, trace.warnings, counts))
        if mode == "segv":
            check(counts.get("crash") == 1, "the crashing function's enter is recorded")
        trace.close()

    out4 = os.path.join(tmp, "_exit.trace")
    r = run([sonde, "record", "-o", out4, "--", prog, "_exit", "300"])
    trace = sonde_trace.Trace(out4)
    check(r.returncode == 4 and trace.warnings == "" and trace.call_counts().get("step") == 300,
          "_exit(): the trace is complete: %d %s" % (r.returncode, trace.warnings))
    trace.close()

    # 5. SIGKILL: no footer, recovered by the reader's scan with a warning.
    out5 = os.path.join(tmp, "killed.trace")
    p = subprocess.Popen([sonde, "record", "-o", out5, "--", prog, "spin"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.readline()  # "spinning": the program runs
    deadline = time.time() + 30
    while time.time() < deadline and os.path.getsize(out5) < 200000:
        time.sleep(0.05)
    children = open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()
    for c in children:
        os.kill(int(c), signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    check(p.returncode == 128 + signal.SIGKILL, "SIGKILL: exit status 137: %d" % p.returncode)
    check("no footer" in err and "recovered" in err, "sonde record reports the recovery: %s" % err.strip())
    trace = sonde_trace.Trace(out5)
    counts = trace.call_counts()
    check("no footer" in trace.warnings and counts.get("step", 0) > 1000,
          "the reader recovers a killed trace's events and names with a warning: %s, %d steps"
          % (trace.warnings.splitlines()[0] if trace.warnings else "", counts.get("step", 0)))
    trace.close()

    # 6. Errors.
    r = run([sonde, "record", "-o", out3, "--", prog, "marks"])
    check(r.returncode == 2 and "exists" in r.stderr and "--force" in r.stderr,
          "an existing output is refused without --force (exit 2): %s" % r.stderr.strip())
    r = run([sonde, "record", "--force", "-o", out3, "--", prog, "marks"])
    check(r.returncode == 3, "--force overwrites it")
    marker = os.path.join(tmp, "ran")
    r = run([sonde, "record", "-o", os.path.join(tmp, "no", "such", "dir.trace"), "--", "sh", "-c",
             "touch " + marker])
    check(r.returncode == 1 and "cannot write" in r.stderr and not os.path.exists(marker),
          "an unwritable output is an error before the program runs: %s" % r.stderr.strip())
    missing = os.path.join(tmp, "missing.trace")
    r = run([sonde, "record", "-o", missing, "--", os.path.join(tmp, "nope")])
    check(r.returncode == 127 and "cannot run" in r.stderr and not os.path.exists(missing),
          "a program that cannot be started exits 127 with the reason: %s" % r.stderr.strip())
    plain = shutil.which("true") or "/bin/true"
    r = run([sonde, "record", "-o", os.path.join(tmp, "true.trace"), "--", plain])
    check(r.returncode == 0 and "-finstrument-functions" in r.stderr,
          "sonde record warns about a program without instrumentation: %s" % r.stderr.strip())
    r = run([sonde, "run", "--client", os.path.join(build, "examples", "call_counter.so") + "=out=/dev/null",
             "--", plain])
    check(r.returncode == 0 and "-finstrument-functions" in r.stderr,
          "sonde run warns about it too: %s" % r.stderr.strip())
    r = run([sonde, "run", "--client", os.path.join(build, "examples", "call_counter.so") + "=out=/dev/null",
             "--", os.path.join(build, "examples", "calls"), "3"])
    check(r.returncode == 0 and "finstrument" not in r.stderr, "and not about an instrumented one")
    r = run([sonde, "record", "--", prog], cwd=tmp)
    check(os.path.exists(os.path.join(tmp, "sonde.trace")), "the default output is sonde.trace in the current directory")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
