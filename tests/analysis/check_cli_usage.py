#!/usr/bin/env python3
"""The `sonde` command line refuses bad usage uniformly and never destroys data.

1. Every usage error of every command (analyze, convert, run, the program itself) exits 2,
   before anything is read, written or run, with a message on stderr that names the option.
   This covers values that used to pass silently or fail only once the run had started: NaN and
   infinities, negative and zero counts, huge --jobs, --line-size not a power of two, malformed
   --cache levels, --tool lists with empty items or unknown names, unknown --format, missing
   inputs, --json into a directory that does not exist, options that no chosen tool reads.
   Options may come before the inputs (`--tool LIST` takes one list, never the paths after it).
2. Every command answers --version and --help (exit 0); --help shows the accepted ranges.
3. `sonde convert`: an output that is the input (directly, through a symbolic link, through a
   hard link) is refused and the input is intact; an existing output is refused without
   --force; an interrupted conversion (SIGINT, SIGTERM) leaves no output and no temporary file;
   every warning of the reader is printed, one line each.
4. `sonde run` refuses a client that does not exist or is not an ELF shared object without
   running the program, and exits 127 with the reason when the program cannot be started.

Usage: check_cli_usage.py SONDE_EXE"""
import os
import signal
import subprocess
import sys
import tempfile
import time

SONDE = sys.argv[1]
DATA = os.environ["SONDE_SHARED_DATA"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args, **kw):
    return subprocess.run([SONDE, *args], capture_output=True, text=True, timeout=120, **kw)


def usage_error(args, names, what=None):
    """`sonde ARGS` must exit 2 with a message that contains every string of `names`."""
    r = run(*args)
    first = r.stderr.splitlines()[0] if r.stderr else ""
    ok = r.returncode == 2 and all(n in first for n in names) and r.stdout == ""
    check(ok, "%s: exit 2 naming %s%s" % (what or "sonde " + " ".join(args), ", ".join(names),
                                          "" if ok else " (exit %d: %r)" % (r.returncode, r.stderr)))


LACKEY = "I  00400000,4\n L 00001000,8\n S 00001040,8\n"

with tempfile.TemporaryDirectory() as tmp:
    trace = os.path.join(tmp, "t.lackey")
    with open(trace, "w") as f:
        f.write(LACKEY)
    json_out = os.path.join(tmp, "r.json")
    missing = os.path.join(tmp, "missing.lackey")

    # 1. analyze.
    A = ["analyze", trace]
    for args, names in [
        (["analyze"], ["INPUT"]),
        (["analyze", missing], ["INPUT", "missing.lackey"]),
        (A + ["--format", "elf"], ["--format", "elf"]),
        (A + ["--cache-model", "gem5"], ["--cache-model", "gem5"]),
        (A + ["--reuse-model", "lru"], ["--reuse-model", "lru"]),
        (A + ["--tool", "basic_counts", "--cache-model", "drcachesim"], ["--cache-model", "cache_sim"]),
        (A + ["--tool", "basic_counts", "--reuse-model", "drcachesim"], ["--reuse-model", "reuse_distance"]),
        (A + ["--cache-model", "drcachesim", "--cache", "I1:32K:8:64"], ["--cache", "KEY=VALUE"]),
        (A + ["--cache-model", "drcachesim", "--cache", "cores=0"], ["--cache", "cores"]),
        (A + ["--cache-model", "drcachesim", "--cache", "ways=2"], ["--cache", "ways"]),
        (A + ["--cache-model", "drcachesim", "--cache", "LL_size=3M"], ["--cache", "LL"]),
        (A + ["--cache", "cores=2"], ["--cache", "cores=2"]),
        (A + ["--tool", "reuse_distance", "--reuse-model", "drcachesim", "--sample-rate", "0.5"],
         ["--sample-rate", "gem5"]),
        (A + ["--tool", "reuse_distance", "--reuse-model", "drcachesim", "--per-shard"],
         ["--per-shard", "gem5"]),
        (A + ["--tool", "reuse_distance", "--reuse-options", "report_top=3"], ["--reuse-options", "drcachesim"]),
        (A + ["--tool", "reuse_distance", "--reuse-model", "drcachesim", "--reuse-options", "line_size=8"],
         ["--reuse-options", "line_size=8"]),
        (A + ["--tool", "reuse_distance", "--reuse-model", "drcachesim", "--reuse-options", "report_top=-1"],
         ["--reuse-options", "report_top"]),
        (A + ["--tool", "reuse_distance", "--reuse-model", "drcachesim", "--reuse-options",
              "distance_threshold=50,distance_limit=50"], ["--reuse-options", "distance_limit"]),
        (A + ["--jobs", "0"], ["--jobs", "0"]),
        (A + ["--jobs", "-1"], ["--jobs", "-1"]),
        (A + ["--jobs", "1025"], ["--jobs", "1025"]),
        (A + ["--jobs", "99999999999999999999999"], ["--jobs"]),
        (A + ["--jobs", "2x"], ["--jobs", "2x"]),
        (A + ["--line-size", "0"], ["--line-size", "0"]),
        (A + ["--line-size", "48"], ["--line-size", "power of two"]),
        (A + ["--line-size", "-64"], ["--line-size"]),
        (A + ["--line-size", "4194304"], ["--line-size"]),
        (A + ["--tool", "reuse_distance", "--sample-rate", "nan"], ["--sample-rate", "finite"]),
        (A + ["--tool", "reuse_distance", "--sample-rate", "inf"], ["--sample-rate", "finite"]),
        (A + ["--tool", "reuse_distance", "--sample-rate", "-inf"], ["--sample-rate", "finite"]),
        (A + ["--tool", "reuse_distance", "--sample-rate", "0"], ["--sample-rate", "0"]),
        (A + ["--tool", "reuse_distance", "--sample-rate", "1.5"], ["--sample-rate", "1.5"]),
        (A + ["--tool", "reuse_distance", "--sample-rate", "0.5x"], ["--sample-rate", "0.5x"]),
        (A + ["--tool", "reuse_distance", "--sample-size", "0"], ["--sample-size", "0"]),
        (A + ["--tool", "reuse_distance", "--sample-size", "-1"], ["--sample-size", "-1"]),
        (A + ["--tool", "reuse_distance", "--sample-size", "18446744073709551616"], ["--sample-size"]),
        (A + ["--tool", "reuse_distance", "--sample-rate", "0.5", "--sample-size", "10"], ["--sample"]),
        (A + ["--tool", "basic_counts,"], ["--tool", "empty"]),
        (A + ["--tool", ",basic_counts"], ["--tool", "empty"]),
        (A + ["--tool", "basic_counts,,cache_sim"], ["--tool", "empty"]),
        (A + ["--tool", ""], ["--tool", "empty"]),
        (A + ["--tool", "basic_counts,basic_counts"], ["--tool", "twice"]),
        (A + ["--tool", "basic_counts", "--tool", "basic_counts"], ["--tool", "twice"]),
        (A + ["--tool", "nope"], ["--tool", "nope"]),
        (A + ["--tool", os.path.join(tmp, "missing.so")], ["--tool", "missing.so"]),
        (A + ["--tool", "./" + os.path.relpath(trace)], ["--tool"]),
        (A + ["--cache", ""], ["--cache"]),
        (A + ["--cache", "D1:32K:8:64,"], ["--cache", "empty"]),
        (A + ["--cache", "D1:32K:8:64,,LL:1M:16:64"], ["--cache", "empty"]),
        (A + ["--cache", "D1:32K:8"], ["--cache", "NAME:SIZE:WAYS:LINE"]),
        (A + ["--cache", ":32K:8:64"], ["--cache", "name"]),
        (A + ["--cache", "D1:32KB:8:64"], ["--cache", "32KB"]),
        (A + ["--cache", "D1:32X:8:64"], ["--cache", "32X"]),
        (A + ["--cache", "D1:-32K:8:64"], ["--cache", "-32K"]),
        (A + ["--cache", "D1: 32K:8:64"], ["--cache"]),
        (A + ["--cache", "D1:0:8:64"], ["--cache", "size"]),
        (A + ["--cache", "D1:99999999999999999G:8:64"], ["--cache", "too large"]),
        (A + ["--cache", "D1:8G:8:64"], ["--cache", "4G"]),
        (A + ["--cache", "D1:32K:0:64"], ["--cache", "ways"]),
        (A + ["--cache", "D1:1K:32:64"], ["--cache", "32 ways exceed the 16 lines"]),
        (A + ["--cache", "D1:32K:8:48"], ["--cache", "power of two"]),
        (A + ["--cache", "D1:32K:8:0"], ["--cache", "line size"]),
        (A + ["--cache", "D1:40K:8:64"], ["--cache", "power-of-two number of sets"]),
        (A + ["--cache", "D1:1000:2:64"], ["--cache", "whole number"]),
        (A + ["--cache", "D1:32K:8:64:plru"], ["--cache", "plru"]),
        (A + ["--cache", ",".join(["L%d:1K:1:64" % i for i in range(17)])], ["--cache", "16"]),
        (A + ["--cache", "D1:1K:2:64", "--tool", "basic_counts"], ["--cache", "cache_sim"]),
        (A + ["--line-size", "64", "--tool", "cache_sim"], ["--line-size"]),
        (A + ["--sample-rate", "0.5"], ["--sample-rate", "reuse_distance"]),
        (A + ["--sample-size", "5"], ["--sample-size", "reuse_distance"]),
        (A + ["--per-shard"], ["--per-shard", "reuse_distance"]),
        (A + ["--json", os.path.join(tmp, "no", "dir", "r.json")], ["--json", "No such file"]),
        (A + ["--json", tmp], ["--json", "directory"]),
        (A + ["--json", trace], ["--json", "input"]),
        (A + ["--bogus"], ["--bogus"]),
    ]:
        usage_error(args, names)
    check(os.listdir(tmp) == ["t.lackey"], "usage errors write nothing: %s" % os.listdir(tmp))
    # A directory is a drmemtrace trace: one whose files are not thread traces fails as an input
    # (exit 1) naming the file, and writes nothing.
    r = run("analyze", tmp, "--json", os.path.join(tmp, "d.json"))
    check(r.returncode == 1 and "t.lackey" in r.stderr and "not a drmemtrace trace" in r.stderr,
          "a directory of other files: exit 1 naming the file (exit %d: %r)" % (r.returncode, r.stderr))
    check(os.listdir(tmp) == ["t.lackey"], "a failed input writes nothing: %s" % os.listdir(tmp))
    # The values at the edges of the ranges are accepted.
    for args in (["--jobs", "1"], ["--jobs", "1024"], ["--line-size", "1"], ["--line-size", "1048576"],
                 ["--tool", "reuse_distance", "--sample-rate", "1"],
                 ["--tool", "reuse_distance", "--sample-size", "18446744073709551615"],
                 ["--cache", "I1:32K:8:64,D1:48K:12:64,LL:1M:16:64:fifo"],
                 ["--cache", "LL:2G:1024:65536:random"],
                 ["--cache-model", "drcachesim", "--cache", "cores=1,L1D_size=48K,L1D_assoc=12,data_prefetcher=none"],
                 ["--tool", "reuse_distance", "--reuse-model", "drcachesim", "--jobs", "2"],
                 ["--tool", "reuse_distance", "--reuse-model", "drcachesim", "--reuse-options",
                  "distance_threshold=5,distance_limit=6,report_top=2"]):
        r = run(*A, *args)
        check(r.returncode == 0, "accepted: %s (exit %d %s)" % (" ".join(args), r.returncode, r.stderr))
    # Options before the inputs: --tool takes one list, and the paths after it stay inputs.
    for args in (["--tool", "basic_counts"], ["--tool", "basic_counts", "--tool", "cache_sim"],
                 ["--tool", "reuse_distance,cache_sim"]):
        r = run("analyze", *args, trace, trace)
        counts = "reads 2, writes 2, ifetches 2" in r.stdout
        check(r.returncode == 0 and "2 input(s)" in r.stdout and counts == (args[1] == "basic_counts"),
              "sonde analyze %s INPUT INPUT: both paths are inputs (exit %d %r %r)"
              % (" ".join(args), r.returncode, r.stdout, r.stderr))

    # convert.
    out = os.path.join(tmp, "out.sonde")
    C = ["convert", trace, "-o", out]
    for args, names in [
        (["convert"], ["INPUT"]),
        (["convert", trace], ["--output"]),
        (["convert", missing, "-o", out], ["INPUT", "missing.lackey"]),
        (C + ["--format", "gzip"], ["--format", "gzip"]),
        (C + ["--level", "0"], ["--level", "0"]),
        (C + ["--level", "20"], ["--level", "20"]),
        (C + ["--level", "-3"], ["--level", "-3"]),
        (C + ["--level", "nan"], ["--level", "nan"]),
        (C + ["--chunk-records", "0"], ["--chunk-records", "0"]),
        (C + ["--chunk-records", "-1"], ["--chunk-records", "-1"]),
        (C + ["--chunk-records", "1048577"], ["--chunk-records", "1048577"]),
        (["convert", trace, "-o", os.path.join(tmp, "no", "dir", "x.sonde")], ["--output", "No such file"]),
        (["convert", trace, "-o", tmp], ["--output", "directory"]),
        (["convert", trace, "-o", "/dev/null", "--force"], ["--output", "not a regular file"]),
        (C + ["--bogus"], ["--bogus"]),
    ]:
        usage_error(args, names)
    check(not os.path.exists(out), "usage errors of convert write nothing")

    # run.
    marker = os.path.join(tmp, "ran")
    prog = ["--", "/bin/sh", "-c", "touch " + marker]
    notelf = os.path.join(tmp, "notelf.so")
    with open(notelf, "w") as f:
        f.write("not an ELF file\n")
    for args, names in [
        (["run"], ["--client"]),
        (["run"] + prog, ["--client"]),
        (["run", "--client", "x.so"], ["program"]),
        (["run", "--client", "x.so", "--"], ["program"]),
        (["run", "--client", "", *prog], ["--client"]),
        (["run", "--client", "=opts", *prog], ["--client"]),
        (["run", "--client", "a.so;b.so", *prog], ["--client", ";"]),
        (["run", "--client", "/no/such.so", *prog], ["--client", "/no/such.so", "No such file"]),
        (["run", "--client", notelf, *prog], ["--client", "notelf.so", "not an ELF file"]),
        (["run", "--client", tmp, *prog], ["--client", "directory"]),
        (["run", "--bogus", "--client", "x.so", *prog], ["--bogus"]),
        (["run", "--client", "bare-name.so", *prog], ["--client", "no client named 'bare-name.so'"]),
    ]:
        usage_error(args, names)
    check(not os.path.exists(marker), "a refused `sonde run` does not start the program")
    r = run("run", "--client", "call_counter", "--", os.path.join(tmp, "no-such-program"))
    check(r.returncode == 127 and "no-such-program" in r.stderr and "No such file" in r.stderr,
          "a program that does not exist: exit 127 with the reason: %d %r" % (r.returncode, r.stderr))
    r = run("run", "--client", "call_counter", "--", trace)
    check(r.returncode == 127 and "Permission denied" in r.stderr,
          "a program that cannot be executed: exit 127 with the reason: %d %r" % (r.returncode, r.stderr))

    # The program itself.
    for args, names in [([], ["no command"]), (["frobnicate"], ["frobnicate"]), (["--bogus"], ["--bogus"])]:
        r = run(*args)
        check(r.returncode == 2 and all(n in r.stderr for n in names), "sonde %s: exit 2" % " ".join(args))

    # 2. --version and --help everywhere.
    version = run("--version").stdout
    check(version.startswith("sonde ") and version.count(".") == 2, "sonde --version: %r" % version)
    for cmd in ("analyze", "convert", "run", "record", "report", "export"):
        r = run(cmd, "--version")
        check(r.returncode == 0 and r.stdout == version, "sonde %s --version: %r" % (cmd, r.stdout))
        r = run(cmd, "--help")
        check(r.returncode == 0 and "--version" in r.stdout, "sonde %s --help" % cmd)
        if cmd not in ("report", "export"):
            check("Exit status" in r.stdout, "sonde %s --help gives the exit statuses" % cmd)
        usage = [line for line in r.stdout.splitlines() if line.lower().startswith("usage:")]
        check(len(usage) == 1 and usage[0].startswith("Usage: sonde " + cmd + " "),
              "sonde %s --help has one usage line: %r" % (cmd, usage))
    usage = [line for line in run("--help").stdout.splitlines() if line.lower().startswith("usage:")]
    check(len(usage) == 1, "sonde --help has one usage line: %r" % usage)
    h = run("analyze", "--help").stdout
    check(all(s in h for s in ("1..1024", "power of two, 1..1048576", "1e-09..1", "NAME:SIZE:WAYS:LINE")),
          "analyze --help shows the ranges")
    h = run("convert", "--help").stdout
    check(all(s in h for s in ("1..19", "1..1048576", "--force", "--strict")), "convert --help shows the ranges")

    # 3. convert never destroys data.
    link = os.path.join(tmp, "link.sonde")
    hard = os.path.join(tmp, "hard.sonde")
    os.symlink(trace, link)
    os.link(trace, hard)
    for target in (trace, link, hard):
        r = run("convert", trace, "-o", target, "--force")
        check(r.returncode == 2 and "is the input" in r.stderr, "convert to %s: refused" % os.path.basename(target))
    check(open(trace).read() == LACKEY, "the input is intact")
    r = run("convert", trace, "-o", out)
    check(r.returncode == 0 and os.path.exists(out), "a first conversion writes the output")
    before = open(out, "rb").read()
    r = run("convert", trace, "-o", out)
    check(r.returncode == 2 and "--force" in r.stderr and open(out, "rb").read() == before,
          "an existing output is refused without --force: %r" % r.stderr)

    # An interrupted conversion: a large input compressed slowly (level 19), a signal once the
    # temporary file exists.
    big = os.path.join(DATA, "gzip-gpl3.lackey.zst")
    for sig in (signal.SIGINT, signal.SIGTERM):
        d = tempfile.mkdtemp(dir=tmp)
        target = os.path.join(d, "big.sonde")
        p = subprocess.Popen([SONDE, "convert", big, "-o", target, "--level", "19"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while not os.listdir(d) and p.poll() is None and time.time() < deadline:
            time.sleep(0.001)
        seen = os.listdir(d)
        p.send_signal(sig)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        check(len(seen) == 1 and seen[0].startswith(".big.sonde."), "the conversion writes a temporary file: %s" % seen)
        check(p.returncode == -sig, "%s ends the conversion (%s)" % (signal.Signals(sig).name, p.returncode))
        check(os.listdir(d) == [], "after %s nothing is left: %s" % (signal.Signals(sig).name, os.listdir(d)))

    # Warnings of the reader, one line each: a Sonde trace cut short.
    full = os.path.join(tmp, "full.sonde")
    raw = os.path.join(tmp, "in.raw64")
    with open(raw, "wb") as f:
        f.write(b"".join((0x1000 + 64 * i).to_bytes(8, "little") for i in range(1000)))
    run("convert", raw, "-o", full, "--chunk-records", "100")
    size = os.path.getsize(full)
    with open(full, "r+b") as f:
        f.truncate(size - 500)
    r = run("convert", full, "-o", os.path.join(tmp, "copy.sonde"))
    warnings = [l for l in r.stderr.splitlines() if l.startswith("sonde convert: warning: ")]
    check(r.returncode == 0 and len(warnings) == 2 and "no footer" in warnings[0] and "recovered" in warnings[1],
          "every warning on its own line: %r" % r.stderr)
    r = run("convert", full, "-o", os.path.join(tmp, "strict.sonde"), "--strict")
    check(r.returncode == 1 and not os.path.exists(os.path.join(tmp, "strict.sonde")),
          "--strict refuses an incomplete input: %r" % r.stderr)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
