#!/usr/bin/env python3
"""`sonde analyze --live`: the analysis of a running program's memory references, without a
trace file, against `sonde record --memory` followed by `sonde analyze` of the same run.

usage: check_live.py SONDE WORKLOAD [--stress | --clang]

WORKLOAD is live_workload.c built by meson (it calls the sanitizer-coverage callbacks itself, so
it runs in every build, the sanitizer builds included). With SONDE_MEMTRACE set as well, the
program writes the trace of the very run that is analysed live (docs/memory-traces.md), so a
multithreaded program's interleaving can be compared exactly:

1. the workload (main, five workers, one ending early and one starting late) analysed live,
   serially by basic_counts, cache_sim and reuse_distance and in parallel (a worker per thread)
   by basic_counts and cache_sim, three runs each: the JSON
   equals that of `sonde analyze` over the run's own trace (metadata, inputs and warnings
   aside), nothing is lost (every access the program describes is counted), the metadata names
   the live program and its exit status; sampling at the source (--sample-rate) the same way;
2. errors: a program that cannot start (127 and the reason), one that is not instrumented (2,
   the flags named, as sonde record --memory says), bad options (2, the option named), a
   program that crashes (the results of what arrived, then 128 + SIGABRT and the signal named),
   one killed by SIGKILL (an incomplete input with a warning, 137);
3. with --clang (a build without sanitizers) and clang installed: real programs built with
   -fsanitize-coverage, a single-threaded and a two-threaded one (tests/memtrace/fill_sum.c,
   threads.c): `sonde record --memory` then `sonde analyze` against `sonde analyze --live` of
   another run for the single thread (serial, parallel, --blocks), and of the same run for the
   two threads (serial and parallel); a SIGSEGV crash.

With --stress only part 1, with more threads (twelve workers).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sonde, workload = sys.argv[1], sys.argv[2]
stress = "--stress" in sys.argv[3:]
with_clang = "--clang" in sys.argv[3:]
here = os.path.dirname(os.path.abspath(__file__))
build = os.environ.get("SONDE_BUILD_ROOT", "")
failures = []
TOOLS = "basic_counts,cache_sim,reuse_distance"


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def results(path):
    """The tools' results of a --json file: metadata, inputs and warnings aside."""
    with open(path) as f:
        r = json.load(f)
    return {k: v for k, v in r.items() if k not in ("metadata", "inputs", "warnings")}


def live_and_recorded(tmp, program, mode, extra=(), tools=TOOLS):
    """Analyses `program` live (with `extra`: sampling at the source) while it also writes its
    trace; returns (live run, live JSON, results of the trace analysed in the same mode)."""
    trace = os.path.join(tmp, "run.sonde")
    if os.path.exists(trace):
        os.unlink(trace)
    live_json, file_json = os.path.join(tmp, "live.json"), os.path.join(tmp, "file.json")
    live = run([sonde, "analyze", "--live", "--tool", tools, "--json", live_json] + mode + list(extra) +
               ["--"] + program, env={"SONDE_MEMTRACE": trace})
    if live.returncode != 0:
        print(live.stdout, live.stderr)
        return live, None, None
    recorded = run([sonde, "analyze", trace, "--tool", tools, "--json", file_json] + mode)
    if recorded.returncode != 0:
        print(recorded.stdout, recorded.stderr)
        return live, None, None
    with open(live_json) as f:
        whole = json.load(f)
    return live, whole, results(file_json)


def part_workload(tmp):
    threads = "12" if stress else "5"
    refs = "20000" if stress else "60000"
    for mode in ([], ["--serial"]):
        name = "serial" if mode else "parallel"
        # reuse_distance keeps one stack over every shard: a run with it is serial.
        tools = TOOLS if mode else "basic_counts,cache_sim"
        for attempt in range(1 if stress else 3):
            live, whole, recorded = live_and_recorded(tmp, [workload, threads, refs], mode, tools=tools)
            check(live.returncode == 0 and whole is not None, "workload %s run %d analysed live" % (name, attempt))
            if whole is None:
                continue
            mine = {k: v for k, v in whole.items() if k not in ("metadata", "inputs", "warnings")}
            check(mine == recorded, "workload %s run %d: live results equal the run's trace's" % (name, attempt))
            made = int(live.stdout.split()[0])
            counts = whole["basic_counts"]
            check(counts["reads"] + counts["writes"] == made,
                  "workload %s: every access made is counted (%d)" % (name, made))
            check(len(counts["shards"]) == int(threads) + 2, "workload %s: a shard per thread" % name)
            meta = whole["metadata"]
            check(meta["live"]["command"] == [workload, threads, refs] and meta["live"]["exit_status"] == 0
                  and meta["live"]["signal"] is None, "workload %s: the metadata names the live program" % name)
            check(whole["inputs"][0]["format"] == "live" and whole["inputs"][0]["complete"],
                  "workload %s: the input is live and complete" % name)
            header = live.stdout.splitlines()[1] if len(live.stdout.splitlines()) > 1 else ""
            check(("parallel, %d worker(s)" % (int(threads) + 2) if not mode else "serial") in header,
                  "workload %s: %s" % (name, header))
    if stress:
        return
    live, whole, recorded = live_and_recorded(tmp, [workload, "3", "40000"], ["--serial"],
                                              ["--sample-rate", "0.25", "--sample-seed", "3"])
    check(whole is not None and {k: v for k, v in whole.items() if k not in ("metadata", "inputs", "warnings")}
          == recorded, "--sample-rate 0.25 live: the results equal the run's trace's")
    if whole is not None:
        check(whole["reuse_distance"].get("sample_rate") == 0.25,
              "--sample-rate live: reuse_distance reads the sample at its rate")


def part_errors(tmp):
    r = run([sonde, "analyze", "--live", "--", os.path.join(tmp, "no-such-program")])
    check(r.returncode == 127 and "cannot run" in r.stderr and "No such file" in r.stderr,
          "a program that cannot start: 127 and the reason (%d: %s)" % (r.returncode, r.stderr.strip()))
    true = shutil.which("true") or "/bin/true"
    r = run([sonde, "analyze", "--live", "--", true])
    check(r.returncode == 2 and "not instrumented" in r.stderr and "trace-loads,trace-stores" in r.stderr
          and "pkg-config --libs sonde-instrument" in r.stderr,
          "an uninstrumented program: 2 and the flags (%s)" % r.stderr.strip())
    bad = [
        (["--live", "--format", "sonde", "--", workload, "1", "10"], "--format"),
        (["--live", "--strict", "--", workload, "1", "10"], "--strict"),
        (["--live", "--jobs", "2", "--", workload, "1", "10"], "--jobs"),
        (["--live"], "--live"),
        (["--live", workload], "INPUT"),
        (["--blocks", os.path.join(here, "fill_sum.c")], "--blocks"),
        (["--live", "--sample-rate", "2", "--", workload, "1", "10"], "--sample-rate"),
        (["--live", "--line-size", "3", "--", workload, "1", "10"], "--line-size"),
    ]
    for args, option in bad:
        r = run([sonde, "analyze"] + args)
        check(r.returncode == 2 and option in r.stderr,
              "bad usage %s: 2, naming %s (%d: %s)" % (" ".join(args[:3]), option, r.returncode,
                                                      r.stderr.strip().splitlines()[0] if r.stderr else ""))
    out = os.path.join(tmp, "crash.json")
    r = run([sonde, "analyze", "--live", "--tool", "basic_counts", "--json", out, "--", workload, "2", "20000",
             "crash"])
    check(r.returncode == 128 + signal.SIGABRT and "killed by signal %d" % signal.SIGABRT in r.stderr,
          "a crash: 128 + SIGABRT, the signal named (%d: %s)" % (r.returncode, r.stderr.strip()))
    if os.path.exists(out):
        with open(out) as f:
            j = json.load(f)
        made = int(r.stdout.split()[0])
        check(j["basic_counts"]["reads"] + j["basic_counts"]["writes"] == made and "basic_counts:" in r.stdout,
              "a crash: the results of what arrived are printed and written")
        check(j["metadata"]["live"]["signal"] == signal.SIGABRT, "a crash: the metadata names the signal")
    else:
        check(False, "a crash: the JSON is written")
    # SIGKILL: the stream ends without its end message.
    out = os.path.join(tmp, "killed.json")
    p = subprocess.Popen([sonde, "analyze", "--live", "--tool", "basic_counts", "--json", out, "--", workload,
                          "1", "5000", "wait"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    os.kill(pid, signal.SIGKILL)
    stdout, stderr = p.communicate(timeout=60)
    check(p.returncode == 128 + signal.SIGKILL and "without its end message" in stderr,
          "SIGKILL: 137 and a warning (%d: %s)" % (p.returncode, stderr.strip()))
    if os.path.exists(out):
        with open(out) as f:
            j = json.load(f)
        check(not j["inputs"][0]["complete"] and j["warnings"], "SIGKILL: the input is incomplete")


def pkg_libs():
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(build, "meson-uninstalled"))
    r = subprocess.run(["pkg-config", "--libs", "sonde-instrument"], capture_output=True, text=True, env=env)
    libs = r.stdout.split()
    return libs + ["-Wl,-rpath," + f[2:] for f in libs if f.startswith("-L")]


def part_clang(tmp):
    flags = ["-O1", "-g", "-pthread", "-fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores",
             "-fno-sanitize-link-runtime"]
    progs = {}
    for name in ("fill_sum", "threads"):
        out = os.path.join(tmp, name)
        r = run(["clang"] + flags + [os.path.join(here, name + ".c"), "-o", out] + pkg_libs())
        check(r.returncode == 0, "clang builds %s.c" % name)
        progs[name] = out
    # Separate runs of the single-threaded program: record, then analyze; and live. (Two threads
    # take their shard numbers in the order of their first access, which changes from one run to
    # the next; they are compared within one run below.)
    cases = [("fill_sum", [], [], TOOLS), ("fill_sum", ["--serial"], [], TOOLS), ("fill_sum", [], ["--blocks"], TOOLS)]
    for name, mode, extra, tools in cases:
        trace = os.path.join(tmp, "rec.sonde")
        rec = run([sonde, "record", "--memory", "--force", "-o", trace] + extra + ["--", progs[name]])
        a = run([sonde, "analyze", trace, "--tool", tools, "--json", os.path.join(tmp, "rec.json")] + mode)
        live = run([sonde, "analyze", "--live", "--tool", tools, "--json", os.path.join(tmp, "live.json")] + mode +
                   extra + ["--", progs[name]])
        ok = rec.returncode == 0 and a.returncode == 0 and live.returncode == 0
        if not ok:
            print(rec.stderr, a.stderr, live.stderr)
        check(ok and results(os.path.join(tmp, "rec.json")) == results(os.path.join(tmp, "live.json")),
              "%s %s %s: record then analyze equals --live" % (name, " ".join(mode), " ".join(extra)))
        check(ok and live.stdout.split()[0] == rec.stdout.split()[0], "%s: the program's output passes" % name)
    # The same run, two threads: analysed live and recorded at once.
    for mode in ([], ["--serial"]):
        live, whole, recorded = live_and_recorded(tmp, [progs["threads"]], mode,
                                                  tools=TOOLS if mode else "basic_counts,cache_sim")
        check(whole is not None and {k: v for k, v in whole.items() if k not in ("metadata", "inputs", "warnings")}
              == recorded, "threads %s: live equals the same run's trace" % " ".join(mode))
    crash = run([sonde, "analyze", "--live", "--", progs["fill_sum"], "crash"])
    check(crash.returncode == 128 + signal.SIGSEGV and "killed by signal %d" % signal.SIGSEGV in crash.stderr
          and "writes 1048576" in crash.stdout,
          "fill_sum crash: the fill's stores are analysed, then 139 (%d)" % crash.returncode)


def main():
    tmp = tempfile.mkdtemp(prefix="sonde-live-")
    try:
        part_workload(tmp)
        if not stress:
            part_errors(tmp)
            if with_clang and shutil.which("clang") and shutil.which("pkg-config") and build:
                part_clang(tmp)
            else:
                print("skip the clang-built programs (no clang, or a sanitizer build)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
