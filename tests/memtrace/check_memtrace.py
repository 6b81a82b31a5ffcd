#!/usr/bin/env python3
"""`sonde record --memory` on real programs built with clang's sanitizer coverage and linked
through `pkg-config --libs sonde-instrument` (the uninstalled .pc files of the build tree):

1. fill and sum of a 64-byte-aligned 4 MiB int array at -O1: exactly 2^20 4-byte stores and
   2^20 4-byte loads (basic_counts), cachegrind's analytic misses (cache_sim), one shard with
   the thread id, process id and thread-exit markers, pcs inside the program;
2. two threads: one shard per thread, each with its own thread id, 4096 stores each;
3. a program that crashes after the fill: the trace keeps the fill's 2^20 stores, and the exit
   status is the program's (clang's own sanitizer runtime, linked by default, turns SIGSEGV into
   exit 1; without it, -fno-sanitize-link-runtime, the status says SIGSEGV);
   SIGKILL after the fill: the reader recovers the chunks written before, with a warning;
4. -fsanitize-coverage=inline-8bit-counters,trace-loads,trace-stores records the same accesses;
5. errors: an uninstrumented program (exit 2, the flags named), --memory with --api, an
   unwritable output (exit 1), a pipe as the output (exit 2, before the program runs), a file size limit reached mid-run (the recording stops with a
   message, the program runs to its end, the trace so far stays readable);
6. sampling at the source (--sample-rate 0.01, seeds 1..5) on a program with reuse at several
   distances: every data reference recorded is of a line the SHARDS hash keeps, reuse_distance
   reads the trace as sampled at that rate and seed and counts every reference the program made
   (the recorded ones and the skipped ones), and its miss-ratio curve is within a small error of
   the full trace's (mean absolute error over 17 cache sizes, median over the seeds, printed);
   a different rate, seed or line size at analysis is refused, and --sample-rate is checked;
7. --blocks: every guard hit is an instruction fetch (2^21 and a few for fill and sum's loops);
   a program linked with clang's own guard callback is refused, naming -fno-sanitize-link-runtime.
Skipped (77) when clang is missing.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

build = os.environ["SONDE_BUILD_ROOT"]
source = os.environ["SONDE_SOURCE_ROOT"]
sonde = os.path.join(build, "src", "cli", "sonde")
summary_exe = os.path.join(build, "tests", "memtrace", "memtrace_summary")
here = os.path.join(source, "tests", "memtrace")
FLAGS = ["-fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def pkg_libs():
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(build, "meson-uninstalled"))
    r = run(["pkg-config", "--libs", "sonde-instrument"], env=env)
    if r.returncode != 0:
        print(r.stderr)
        sys.exit(1)
    libs = r.stdout.split()
    # The build tree's libraries are found at run time through an rpath.
    return libs + ["-Wl,-rpath," + f[2:] for f in libs if f.startswith("-L")]


def compile_prog(tmp, name, extra=(), flags=FLAGS, out_name=None):
    out = os.path.join(tmp, out_name or os.path.splitext(name)[0])
    r = run(["clang", "-O1", "-g", "-pthread"] + flags + [os.path.join(here, name), "-o", out] + list(extra))
    if r.returncode != 0:
        print(r.stderr)
    check(r.returncode == 0, "clang builds " + name)
    return out


def read_trace(path):
    """Per-shard summaries (memtrace_summary.c) and the reader's warnings."""
    r = run([summary_exe, path])
    check(r.returncode == 0, "the trace is readable: " + r.stderr.strip())
    shards, warnings = [], ""
    for line in r.stdout.splitlines():
        if line.startswith("warnings="):
            warnings = line[len("warnings="):]
            continue
        shards.append(dict(w.split("=", 1) for w in line.split()))
    return shards, warnings


def analyze(path, *args):
    out = path + ".json"
    r = run([sonde, "analyze", path, "--json", out] + list(args))
    check(r.returncode == 0, "sonde analyze " + " ".join(args) + " runs: " + r.stderr.strip())
    with open(out) as f:
        return json.load(f)


THREAD_ID, THREAD_EXIT = "4", "6"


def marker(shard, key):
    """(first value, count) of a marker kind in a shard summary."""
    value, count = shard[key].split("/")
    return int(value), int(count)


def main():
    if shutil.which("clang") is None or shutil.which("pkg-config") is None:
        print("clang or pkg-config missing")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        libs = pkg_libs()
        fill_sum = compile_prog(tmp, "fill_sum.c", libs)
        threads = compile_prog(tmp, "threads.c", libs)
        bare = compile_prog(tmp, "fill_sum.c", libs + ["-fno-sanitize-link-runtime"], out_name="bare")
        counters = compile_prog(tmp, "fill_sum.c", libs,
                                flags=["-fsanitize-coverage=inline-8bit-counters,trace-loads,trace-stores"],
                                out_name="counters")
        plain = compile_prog(tmp, "threads.c", flags=[], out_name="plain")

        # 1. fill and sum
        trace = os.path.join(tmp, "fill.sonde")
        r = run([sonde, "record", "--memory", "-o", trace, "--", fill_sum])
        check(r.returncode == 0, "record --memory exits with the program's status: " + r.stderr.strip())
        check(r.stdout.strip() == str((1 << 20) * ((1 << 20) - 1) // 2), "the program's output is unchanged")
        check("2097152 memory references, 1 threads," in r.stderr, "the summary counts the references")
        shards, warnings = read_trace(trace)
        check(warnings == "", "the trace is complete")
        check(len(shards) == 1, "one thread, one shard")
        s = shards[0]
        tid, pid, ex = marker(s, "tid"), marker(s, "pid"), marker(s, "exit")
        check(tid[1] == 1 and pid[1] == 1 and ex[1] == 1, "one thread id, process id and thread-exit marker")
        check(ex[0] == tid[0] and pid[0] == tid[0], "the main thread's id is the process id and exits")
        check(s["first"] == THREAD_ID and s["last"] == THREAD_EXIT,
              "the shard starts with its thread id and ends with its exit")
        check(s["writes"] == str(1 << 20) and s["write_sizes"] == "4", "2^20 4-byte stores")
        check(s["reads"] == str(1 << 20) and s["read_sizes"] == "4", "2^20 4-byte loads")
        check(s["write_walk"] == "1" and s["read_walk"] == "1", "stores, then loads, walk the aligned array in order")
        check(s["write_pcs"] == "1" and s["read_pcs"] == "1", "one call site for the stores, one for the loads")
        check(s["ts_ok"] == "1", "every record has a timestamp and none goes back")

        res = analyze(trace, "--tool", "basic_counts,cache_sim")
        bc = res["basic_counts"]
        check(bc["reads"] == 1 << 20 and bc["writes"] == 1 << 20 and bc["total"] == 1 << 21,
              "basic_counts: 2^20 reads, 2^20 writes")
        check(bc["distinct_lines"] == (4 << 20) // 64, "basic_counts: 65536 distinct lines")
        levels = {lv["name"]: lv for lv in res["cache_sim"]["levels"]}
        # Sequential 4-byte accesses: the first of each 64-byte line misses. The array (4 MiB) is
        # larger than LL (1 MiB, LRU), so the sum misses every line again, in D1 and in LL.
        lines = (4 << 20) // 64
        check(levels["D1"]["accesses"] == 1 << 21 and levels["D1"]["misses"] == 2 * lines,
              "cache_sim D1: 2^21 accesses, 2 x 65536 misses (got %d)" % levels["D1"]["misses"])
        check(levels["LL"]["accesses"] == 2 * lines and levels["LL"]["misses"] == 2 * lines,
              "cache_sim LL: every D1 miss misses (got %d)" % levels["LL"]["misses"])
        check(levels["I1"]["accesses"] == 0, "no instruction fetches")

        # 2. threads
        trace2 = os.path.join(tmp, "threads.sonde")
        r = run([sonde, "record", "--memory", "-o", trace2, "--", threads])
        check(r.returncode == 0 and r.stdout.strip() == "8190", "the two-thread program runs: " + r.stderr.strip())
        shards, _ = read_trace(trace2)
        workers = [sh for sh in shards if sh["writes"] == "4096"]
        check(len(workers) == 2, "two shards of 4096 stores each (%d shards)" % len(shards))
        wtids = [marker(sh, "tid") for sh in workers]
        check(all(t[1] == 1 for t in wtids) and wtids[0][0] != wtids[1][0], "each worker has its own thread id")
        check(all(marker(sh, "exit") == marker(sh, "tid") for sh in shards),
              "every shard ends with its thread's exit marker")
        check(len({marker(sh, "pid")[0] for sh in shards}) == 1, "one process id for every shard")
        check(all(sh["first"] == THREAD_ID for sh in shards), "every shard starts with its thread id")

        # 3. a crash after the fill
        for program, status in ((fill_sum, run([fill_sum, "crash"]).returncode), (bare, 128 + signal.SIGSEGV)):
            trace3 = os.path.join(tmp, "crash.sonde")
            r = run([sonde, "record", "--memory", "--force", "-o", trace3, "--", program, "crash"])
            name = os.path.basename(program)
            check(status != 0 and r.returncode == status, "%s: the crash's status %d is passed on (%d)"
                  % (name, status, r.returncode))
            if status > 128:
                check("killed by signal 11" in r.stderr, name + ": the crash is reported")
            shards, _ = read_trace(trace3)
            check(len(shards) == 1 and shards[0]["writes"] == str(1 << 20),
                  name + ": the crashed program's trace keeps its 2^20 stores")

        # SIGKILL: the chunks written before it stay (the buffer is flushed every 100 ms).
        trace6 = os.path.join(tmp, "killed.sonde")
        p = subprocess.Popen([sonde, "record", "--memory", "-o", trace6, "--", fill_sum, "wait"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pid = int(p.stdout.readline())
        time.sleep(1)
        os.kill(pid, signal.SIGKILL)
        _, err = p.communicate(timeout=60)
        check(p.returncode == 128 + signal.SIGKILL, "SIGKILL: the status says so (%d)" % p.returncode)
        shards, warnings = read_trace(trace6)
        check("recovered" in warnings, "SIGKILL: the reader recovers the trace with a warning: " + warnings)
        check(len(shards) == 1 and int(shards[0]["writes"]) >= (1 << 20) - 2048,
              "SIGKILL: the fill's stores are kept, all but the last staged batch (%s)"
              % (shards[0]["writes"] if shards else "no shard"))

        # 4. inline 8-bit counters instead of guards
        trace5 = os.path.join(tmp, "counters.sonde")
        r = run([sonde, "record", "--memory", "-o", trace5, "--", counters])
        shards, _ = read_trace(trace5)
        check(r.returncode == 0 and len(shards) == 1 and shards[0]["writes"] == str(1 << 20)
              and shards[0]["reads"] == str(1 << 20), "inline-8bit-counters: the same 2^20 stores and loads")

        # 5. errors
        r = run([sonde, "record", "--memory", "-o", os.path.join(tmp, "p.sonde"), "--", plain])
        check(r.returncode == 2, "an uninstrumented program is refused with exit 2")
        check("-fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores" in r.stderr
              and "pkg-config --libs sonde-instrument" in r.stderr, "the message names the flags")
        check(not os.path.exists(os.path.join(tmp, "p.sonde")), "nothing is written for it")
        r = run([sonde, "record", "--memory", "--api", "libc:puts", "--", fill_sum])
        check(r.returncode == 2 and "cannot be combined" in r.stderr, "--memory with --api is refused")
        r = run([sonde, "record", "--memory", "-o", os.path.join(tmp, "no", "such", "dir.sonde"), "--", fill_sum])
        check(r.returncode == 1 and "cannot write" in r.stderr, "an unwritable output: exit 1")
        for args in (["--memory"], []):  # a pipe as the output: refused before the program runs
            r = run([sonde, "record"] + args + ["--force", "-o", "/dev/stdout", "--", fill_sum])
            check(r.returncode == 2 and "not a regular file" in r.stderr and r.stdout == "",
                  "record %s-o /dev/stdout (a pipe) is refused: %r" % (" ".join(args) + " " if args else "", r.stderr))
        # A file size limit of 100 KiB (the whole trace takes about 600 KiB): the recording stops when the trace reaches it; the
        # program, ignoring SIGXFSZ as the shell sets it up, runs on and prints its sum.
        trace4 = os.path.join(tmp, "limited.sonde")
        r = run(["bash", "-c", 'trap "" XFSZ; ulimit -f 200; exec "$@"', "limit",
                 sonde, "record", "--memory", "-o", trace4, "--", fill_sum])
        check(r.returncode == 0 and r.stdout.strip() == str((1 << 20) * ((1 << 20) - 1) // 2),
              "the program runs to its end when the trace cannot grow")
        check("memory trace stopped" in r.stderr and "the program goes on" in r.stderr,
              "the recording stops with a message: " + r.stderr.strip().replace("\n", " | "))
        shards, warnings = read_trace(trace4)
        got = sum(int(sh["reads"]) + int(sh["writes"]) for sh in shards)
        check(0 < got < 1 << 21, "the trace so far stays readable (%d references)" % got)

        # 6. sampling at the source
        sampling(tmp, libs)

        # 7. basic blocks (--blocks): each guard hit an IFETCH at the block
        trace7 = os.path.join(tmp, "blocks.sonde")
        r = run([sonde, "record", "--memory", "--blocks", "-o", trace7, "--", bare])
        check(r.returncode == 0, "record --memory --blocks runs: " + r.stderr.strip())
        bc = analyze(trace7, "--tool", "basic_counts")["basic_counts"]
        # fill and sum: a guard on each loop's back edge (2^20 - 1 hits) and on entry and exit.
        check(bc["reads"] == 1 << 20 and bc["writes"] == 1 << 20, "the data references are unchanged")
        check((1 << 21) <= bc["ifetches"] <= (1 << 21) + 16,
              "one instruction fetch per block entered: %d" % bc["ifetches"])
        check(0 < bc["unique_ifetches"] < 32, "a few distinct blocks: %d" % bc["unique_ifetches"])
        r = run([sonde, "record", "--memory", "--blocks", "-o", os.path.join(tmp, "b2.sonde"), "--", fill_sum])
        check(r.returncode == 2 and "-fno-sanitize-link-runtime" in r.stderr,
              "--blocks with clang's own guard callback linked is refused, naming the flag")
        r = run([sonde, "record", "--blocks", "-o", os.path.join(tmp, "b3.sonde"), "--", bare])
        check(r.returncode == 2 and "need --memory" in r.stderr, "--blocks without --memory: exit 2")

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def mrc_at(mrc, lines):
    """The miss ratio of a fully associative LRU cache of `lines` lines (a step function)."""
    value = 1.0
    for size, ratio in mrc:
        if size > lines:
            break
        value = ratio
    return value


def sampling(tmp, libs):
    prog = compile_prog(tmp, "mixed_reuse.c", libs)
    full = os.path.join(tmp, "full.sonde")
    r = run([sonde, "record", "--memory", "-o", full, "--", prog])
    check(r.returncode == 0, "the full trace is recorded")
    full_rd = analyze(full, "--tool", "reuse_distance")["reuse_distance"]
    full_bc = analyze(full, "--tool", "basic_counts")["basic_counts"]
    refs = full_bc["reads"] + full_bc["writes"]
    check(full_rd["accesses"] == refs and refs > 3000000, "the full trace: %d data references" % refs)
    rate, sizes, errors = 0.01, [1 << k for k in range(17)], []
    threshold = int(rate * 4294967296.0 + 0.5)
    for seed in range(1, 6):
        trace = os.path.join(tmp, "sampled%d.sonde" % seed)
        r = run([sonde, "record", "--memory", "--sample-rate", str(rate), "--sample-seed", str(seed),
                 "-o", trace, "--", prog])
        check(r.returncode == 0, "seed %d: the sampled trace is recorded: %s" % (seed, r.stderr.strip()))
        d = run([sonde, "dump", trace])
        check(d.returncode == 0, "seed %d: the sampled trace dumps" % seed)
        key, kept, bad, skipped, meta = mix64((seed + 0x9E3779B97F4A7C15) & M64), 0, 0, 0, {}
        for line in d.stdout.splitlines()[1:]:
            f = line.split()
            if f[2] in ("read", "write"):
                kept += 1
                bad += (mix64(((int(f[3], 16) >> 6) ^ key) & M64) >> 32) >= threshold
            elif f[2] == "marker:sample_skipped":
                skipped += int(f[3], 16)
            elif f[2].startswith("marker:sample_"):
                meta[f[2][len("marker:sample_"):]] = int(f[3], 16)
        check(meta == {"threshold": threshold, "seed": seed, "line_size": 64},
              "seed %d: the shard starts with the sampling's threshold, seed and line size" % seed)
        check(bad == 0 and 0.005 * refs < kept < 0.02 * refs,
              "seed %d: %d references kept, each of a line the hash keeps" % (seed, kept))
        check(kept + skipped == refs, "seed %d: kept + skipped = every reference of the program" % seed)
        rd = analyze(trace, "--tool", "reuse_distance")["reuse_distance"]
        check(rd.get("sample_rate") == threshold / 4294967296.0 and rd["accesses"] == refs,
              "seed %d: reuse_distance reads it as sampled at the rate and counts every reference" % seed)
        same = analyze(trace, "--tool", "reuse_distance", "--sample-rate", str(rate), "--sample-seed",
                       str(seed))["reuse_distance"]
        check(same == rd, "seed %d: the same rate and seed given again change nothing" % seed)
        errors.append(sum(abs(mrc_at(full_rd["mrc"], c) - mrc_at(rd["mrc"], c)) for c in sizes) / len(sizes))
    median = sorted(errors)[len(errors) // 2]
    print("miss-ratio curve at rate %g against the full trace: mean absolute error %s, median %.4f"
          % (rate, " ".join("%.4f" % e for e in errors), median))
    check(median < 0.04, "the sampled curves follow the full one (median error %.4f)" % median)
    trace = os.path.join(tmp, "sampled1.sonde")
    for args, what in ((["--sample-rate", "0.5"], "another rate"), (["--sample-seed", "9"], "another seed"),
                       (["--line-size", "32"], "another line size")):
        r = run([sonde, "analyze", trace, "--tool", "reuse_distance"] + args)
        check(r.returncode != 0 and "sampled at the source at rate" in r.stderr,
              "analysis with %s is refused: %s" % (what, r.stderr.strip()))
    for args, what in ((["--sample-rate", "0"], "rate 0"), (["--sample-rate", "1.5"], "rate 1.5"),
                       (["--sample-rate", "0.1", "--line-size", "48"], "line size 48")):
        r = run([sonde, "record", "--memory", "-o", os.path.join(tmp, "bad.sonde"), "--force"] + args + ["--", prog])
        check(r.returncode == 2, "record --memory %s: exit 2" % what)
    r = run([sonde, "record", "--sample-rate", "0.1", "-o", os.path.join(tmp, "bad2.sonde"), "--", prog])
    check(r.returncode == 2 and "need --memory" in r.stderr, "--sample-rate without --memory: exit 2")


if __name__ == "__main__":
    sys.exit(main())
