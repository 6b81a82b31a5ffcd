#!/usr/bin/env python3
"""`sonde record --memory` names a trace's pcs, and `sonde annotate` reads them, on fill_sum.c
built with clang -O1 -g and its sanitizer coverage:

1. the recording names its pcs (the summary says so) and the trace's header is of minor
   version 4; annotate puts each of fill's 2^20 stores on fill and on the line of its loop body,
   and each of sum's 2^20 loads on sum and its line (the lines marked "annotate:" in the source),
   nothing unattributed;
2. each level's misses over the functions and over the lines equal `sonde analyze --tool
   cache_sim`'s (serial, and the default parallel run of one thread), with the default levels
   and with --cache; the reuse distances add up to reuse_distance's accesses and cold accesses
   (sum's first access of each line comes back after the 65,535 others);
3. the program deleted, the trace annotates the same; the source moved, --source-dir finds it;
4. a trace recorded by setting SONDE_MEMTRACE by hand has a module table and no names: annotate
   names the pcs from the program's file (the same answers), and by raw pc once it is deleted;
5. `sonde annotate --live -- PROGRAM` gives the recorded trace's functions and lines, named
   from the program's file, with the program's exit status; --live with FILE, without a
   program, with --format, or with a program that is not instrumented, is refused (exit 2).
Skipped (77) when clang is missing."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from checks import check, finish, run  # noqa: E402

build = os.environ["SONDE_BUILD_ROOT"]
source = os.environ["SONDE_SOURCE_ROOT"]
sonde = os.path.join(build, "src", "cli", "sonde")
here = os.path.join(source, "tests", "memtrace")
N = 1 << 20


def marked_line(path, marker):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise SystemExit("no line marked %r in %s" % (marker, path))


def annotate(trace, tmp, *args):
    out = os.path.join(tmp, "annotate.json")
    r = run([sonde, "annotate", trace, "--json", out] + list(args))
    check(r.returncode == 0, "sonde annotate %s runs: %s" % (" ".join(args), r.stderr.strip()))
    if r.returncode != 0:
        return None, r
    with open(out) as f:
        return json.load(f), r


def analyze(trace, tmp, *args):
    out = os.path.join(tmp, "analyze.json")
    r = run([sonde, "analyze", trace, "--json", out] + list(args))
    check(r.returncode == 0, "sonde analyze %s runs: %s" % (" ".join(args), r.stderr.strip()))
    with open(out) as f:
        return json.load(f)


def check_fill_sum(j, src, what):
    fn = {f["name"]: f for f in j["functions"]}
    fill, total = fn.get("fill"), fn.get("sum")
    check(fill is not None and total is not None, what + ": fill and sum are named: %s" % sorted(fn))
    if fill is None or total is None:
        return
    check((fill["writes"], fill["reads"]) == (N, 0), what + ": fill makes the 2^20 stores")
    check((total["reads"], total["writes"]) == (N, 0), what + ": sum makes the 2^20 loads")
    check(j["unattributed_accesses"] == 0 and j["accesses_without_line"] == 0, what + ": every access named")
    store, load = marked_line(src, "annotate: fill's store"), marked_line(src, "annotate: sum's load")
    lines = {(os.path.basename(l["file"]), l["line"]): l for l in j["lines"]}
    check(lines.get(("fill_sum.c", store), {}).get("writes") == N,
          what + ": the stores are on fill's line %d: %s" % (store, sorted(lines)))
    check(lines.get(("fill_sum.c", load), {}).get("reads") == N, what + ": the loads are on sum's line %d" % load)
    check(lines.get(("fill_sum.c", store), {}).get("function") == "fill", what + ": the line belongs to fill")


def check_levels(j, trace, tmp, what, *args):
    for mode in (["--serial"], []):
        a = analyze(trace, tmp, "--tool", "cache_sim", *(mode + list(args)))
        for lv in a["cache_sim"]["levels"]:
            name = lv["name"]
            fsum = sum(f["misses"][name] for f in j["functions"])
            lsum = sum(l["misses"][name] for l in j["lines"])
            check(fsum == lv["misses"] and lsum == lv["misses"],
                  "%s: %s misses over functions %d and lines %d == analyze %s %d" % (what, name, fsum, lsum,
                                                                                     " ".join(mode), lv["misses"]))


def main():
    if shutil.which("clang") is None or shutil.which("pkg-config") is None:
        print("clang or pkg-config missing")
        return 77
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(build, "meson-uninstalled"))
    libs = run(["pkg-config", "--libs", "sonde-instrument"], env=env).stdout.split()
    libs += ["-Wl,-rpath," + f[2:] for f in libs if f.startswith("-L")]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src", "fill_sum.c")
        os.makedirs(os.path.dirname(src))
        shutil.copy(os.path.join(here, "fill_sum.c"), src)
        prog = os.path.join(tmp, "fill_sum")
        r = run(["clang", "-O1", "-g", "-fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores", src, "-o",
                 prog] + libs)
        check(r.returncode == 0, "clang builds fill_sum.c: " + r.stderr.strip())

        # 1. Recorded and named.
        trace = os.path.join(tmp, "fill.sonde")
        r = run([sonde, "record", "--memory", "-o", trace, "--", prog])
        check(r.returncode == 0, "record --memory runs: " + r.stderr.strip())
        check("pcs named: 2 functions" in r.stderr, "the recording names its pcs: " + r.stderr.strip())
        with open(trace, "rb") as f:
            check(f.read(32)[28] == 4, "the trace is of minor version 4")
        j, r = annotate(trace, tmp)
        if j is None:
            return 1
        check(j["naming"] == "trace", "named from the trace's tables")
        check_fill_sum(j, src, "tables")
        fn = {f["name"]: f for f in j["functions"]}
        check("fill_sum.c" in r.stdout and "annotate: sum's load" in r.stdout, "the text shows the source")

        # 2. The same misses as cache_sim, and the reuse distances add up to reuse_distance's.
        check_levels(j, trace, tmp, "default levels")
        j2, _ = annotate(trace, tmp, "--cache", "D1:16K:4:64,LL:512K:8:64")
        if j2 is not None:
            check_fill_sum(j2, src, "--cache")
            check_levels(j2, trace, tmp, "--cache", "--cache", "D1:16K:4:64,LL:512K:8:64")
        rd = analyze(trace, tmp, "--tool", "reuse_distance")["reuse_distance"]
        check(sum(f["reuse"]["accesses"] for f in j["functions"]) == rd["accesses"], "reuse: the accesses add up")
        check(sum(f["reuse"]["cold"] for f in j["functions"]) == rd["infinite"], "reuse: the cold ones add up")
        check(fn["fill"]["reuse"]["cold"] == N // 16 and fn["sum"]["reuse"]["cold"] == 0, "fill touches each line first")
        check(fn["sum"]["reuse"]["max"] == N // 16 - 1 and fn["sum"]["reuse"]["median"] == 0,
              "sum comes back to each line after the 65,535 others")

        # 3. Without the program, and with the source moved.
        saved = prog + ".saved"
        os.rename(prog, saved)
        j3, _ = annotate(trace, tmp)
        if j3 is not None:
            check(j3["functions"] == j["functions"] and j3["lines"] == j["lines"],
                  "the program deleted: the same functions and lines")
        moved = os.path.join(tmp, "elsewhere")
        shutil.move(os.path.join(tmp, "src"), moved)
        r = run([sonde, "annotate", trace])
        check("source not found" in r.stdout, "the source moved: said")
        r = run([sonde, "annotate", trace, "--source-dir", moved])
        check("annotate: sum's load" in r.stdout, "--source-dir finds it")
        shutil.move(moved, os.path.join(tmp, "src"))
        os.rename(saved, prog)

        # 5. Live: the same functions and lines, named from the program's file, without a trace.
        out = os.path.join(tmp, "live.json")
        r = run([sonde, "annotate", "--live", "--json", out, "--", prog])
        check(r.returncode == 0, "annotate --live runs: " + r.stderr.strip())
        if r.returncode == 0:
            with open(out) as f:
                jl = json.load(f)
            check(jl["naming"] == "module_files", "live: named from the program's file: " + jl["naming"])
            check_fill_sum(jl, src, "live")
            def placed(rows):  # a run's load address is its own (ASLR)
                return [{k: v for k, v in row.items() if k != "address"} for row in rows]
            check(placed(jl["functions"]) == placed(j["functions"]) and placed(jl["lines"]) == placed(j["lines"]),
                  "live: the recorded trace's functions and lines")
            check(jl["metadata"]["options"]["live"] is True, "live: said in the metadata")
            check("annotate: sum's load" in r.stdout, "live: the text shows the source")
        own = run([prog, "crash"]).returncode
        own = own if own >= 0 else 128 - own
        r = run([sonde, "annotate", "--live", "--", prog, "crash"])
        check(own != 0 and r.returncode == own, "live: the program's status %d is the command's: %d" % (own, r.returncode))
        for args, why in ((["--live", trace, "--", prog], "not FILE"), (["--live"], "no program"),
                          (["--live", "--format", "sonde", "--", prog], "--format"),
                          (["--live", "--", "/bin/true"], "-fsanitize-coverage")):
            r = run([sonde, "annotate"] + args)
            check(r.returncode == 2 and why in r.stderr, "annotate %s: refused (%d): %s" % (" ".join(args), r.returncode,
                                                                                         r.stderr.strip()))

        # 4. SONDE_MEMTRACE by hand: a module table, no names.
        hand = os.path.join(tmp, "hand.sonde")
        r = run([prog], env=dict(os.environ, SONDE_MEMTRACE=hand))
        check(r.returncode == 0, "the program records with SONDE_MEMTRACE set")
        j4, _ = annotate(hand, tmp)
        if j4 is not None:
            check(j4["naming"] == "module_files", "named from the program's file")
            check_fill_sum(j4, src, "module files")
        os.unlink(prog)
        j5, r = annotate(hand, tmp)
        if j5 is not None:
            check(j5["naming"] == "raw_pc" and "raw pc" in r.stdout, "the program deleted: by raw pc, said")
            check(sum(f["writes"] for f in j5["functions"]) == N, "by raw pc: the same stores")
    return 0


if main() == 77:
    sys.exit(77)
finish()
