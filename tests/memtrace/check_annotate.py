#!/usr/bin/env python3
"""`sonde annotate` on traces whose every count is known (annotate_trace.c), in every build
(the sanitizer builds too: only the `sonde` program runs):

1. a trace with module, method and line tables: the accesses of each function and line (walk:
   4096 reads and 4096 writes on lines 12 and 13, 64 fetches and 100 reads without a line;
   ns::Table::get(int) const: 2048 reads on table.h:7; 50 writes of "???" outside every
   function), reuse distances, and each level's misses summed over the functions and over the
   lines equal to `sonde analyze --serial --tool cache_sim`, with the default levels and with
   --cache; the JSON keys pinned; --sort and --limit; the source of a function, found at its
   recorded path and below --source-dir;
2. a trace with a module table only (its file gone) and one with no table: by raw pc, said in a
   note, the same totals; a lackey trace: by raw pc;
3. bad input: a missing file and a FIFO (2), a file that is not a trace (1), a trace cut short
   (recovered, with a warning), a bad --cache, --sort or --limit (2, the option named).
Usage: check_annotate.py SONDE ANNOTATE_TRACE"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from checks import check, finish, run  # noqa: E402

sonde, writer = sys.argv[1], sys.argv[2]


def annotate(trace, *args):
    """The JSON results of `sonde annotate` (and the process)."""
    out = os.path.join(tmp, "a.json")
    if os.path.exists(out):
        os.unlink(out)
    r = run([sonde, "annotate", trace, "--json", out] + list(args))
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        return None, r
    with open(out) as f:
        return json.load(f), r


def analyze_levels(trace, *args):
    out = os.path.join(tmp, "b.json")
    r = run([sonde, "analyze", trace, "--serial", "--tool", "cache_sim", "--json", out] + list(args))
    check(r.returncode == 0, "sonde analyze --serial --tool cache_sim runs: " + r.stderr.strip())
    with open(out) as f:
        return {l["name"]: l for l in json.load(f)["cache_sim"]["levels"]}


def check_totals(j, trace, what, *cache):
    """Misses per level summed over functions and over lines, and the totals, equal analyze's."""
    levels = analyze_levels(trace, *cache)
    names = [l["name"] for l in j["levels"]]
    check(names == list(levels), what + ": the levels are cache_sim's: %s" % names)
    for name, lv in levels.items():
        fsum = sum(f["misses"][name] for f in j["functions"])
        check(fsum == lv["misses"], "%s: %s misses over the functions %d == cache_sim's %d" % (what, name, fsum,
                                                                                             lv["misses"]))
        check(j["totals"]["misses"][name] == lv["misses"], "%s: %s total misses" % (what, name))
        if j["lines"]:
            lsum = sum(l["misses"][name] for l in j["lines"])
            check(lsum == lv["misses"], "%s: %s misses over the lines %d" % (what, name, lsum))
    d1 = levels.get("D1")
    if d1 is not None:
        check(sum(f["reads"] + f["writes"] for f in j["functions"]) == d1["accesses"],
              what + ": reads and writes over the functions are D1's accesses")


with tempfile.TemporaryDirectory() as tmp:
    # Sources: walk.c where its recorded path says, and a copy below a --source-dir.
    src = os.path.join(tmp, "walk.c")
    with open(src, "w") as f:
        f.write("".join("// line %d\n" % n for n in range(1, 12)))
        f.write("    x = a[i];     // line 12\n    a[i] = x + 1; // line 13\n// line 14\n")
    trace = os.path.join(tmp, "t.sonde")
    r = run([writer, trace, "tables", src])
    check(r.returncode == 0, "annotate_trace writes the trace")

    # 1. Names from the tables.
    j, r = annotate(trace)
    check(j is not None and r.returncode == 0, "annotate runs")
    keys = list(j)
    check(keys[:4] == ["sonde_version", "metadata", "functions", "lines"], "top-level keys pinned: %s" % keys[:4])
    check(j["metadata"]["command"] == "annotate" and j["metadata"]["inputs"] == [trace], "metadata block")
    check(j["naming"] == "trace", "named from the trace's tables")
    fn = {f["name"]: f for f in j["functions"]}
    check(set(fn) == {"walk(int*)", "ns::Table::get(int) const", "???"}, "functions: %s" % sorted(fn))
    for f in j["functions"]:
        check(all(k in f for k in ("name", "accesses", "reads", "writes", "misses")), "function keys pinned")
        check(set(f["misses"]) == {"I1", "D1", "LL"}, "misses by cache_sim's level names")
    walk, get, unknown = fn["walk(int*)"], fn["ns::Table::get(int) const"], fn["???"]
    check((walk["reads"], walk["writes"], walk["ifetches"]) == (4196, 4096, 64), "walk's accesses")
    check(walk["accesses"] == 4196 + 4096 + 64, "walk: accesses are reads, writes and fetches")
    check((get["reads"], get["writes"]) == (2048, 0), "get's accesses")
    check((unknown["reads"], unknown["writes"]) == (0, 50), "??? has the writes outside every function")
    check(j["unattributed_accesses"] == 50, "50 accesses unattributed")
    check(j["accesses_without_line"] == 214, "214 accesses without a line (walk's fetches and last reads, ???)")
    check(walk["file"] == src and walk["line"] == 10, "walk's file and line")
    # Each read of walk's line 12 misses D1 (a new line each time); the write after it hits.
    check(walk["read_misses"]["D1"] >= 4096 and walk["write_misses"]["D1"] == 0,
          "walk: its reads miss D1, its writes hit")
    lines = {(l["file"], l["line"]): l for l in j["lines"]}
    check((src, 12) in lines and lines[(src, 12)]["reads"] == 4096 and lines[(src, 12)]["writes"] == 0,
          "line 12: 4096 reads")
    check(lines[(src, 13)]["writes"] == 4096 and lines[(src, 13)]["misses"]["D1"] == 0, "line 13: 4096 writes, hits")
    check(lines[("/src/project/table.h", 7)]["reads"] == 2048, "table.h:7: 2048 reads")
    check(lines[("???", 0)]["accesses"] == 164 + 50, "??? line: the accesses without a line")
    for l in j["lines"]:
        check(all(k in l for k in ("file", "line", "accesses", "misses")), "line keys pinned")
    # Reuse: walk's writes touch the line its read just touched (distance 0); get's reads go
    # over 128 lines twice.
    check(walk["reuse"]["accesses"] == 8292 and walk["reuse"]["cold"] == 4196, "walk's reuse: cold reads")
    check(walk["reuse"]["median"] == 0, "walk's writes reuse at distance 0")
    check(get["reuse"]["cold"] == 128 and get["reuse"]["accesses"] == 2048, "get's reuse: 128 cold lines")
    check_totals(j, trace, "default levels")
    j2, _ = annotate(trace, "--cache", "L1:4K:2:64,L2:64K:4:64:fifo")
    check(j2 is not None and [l["name"] for l in j2["levels"]] == ["L1", "L2"], "--cache levels")
    if j2:
        check_totals(j2, trace, "--cache L1,L2", "--cache", "L1:4K:2:64,L2:64K:4:64:fifo")

    # Text: the table, the unattributed count, the source with its counts.
    r = run([sonde, "annotate", trace])
    out = r.stdout
    check(r.returncode == 0 and "walk(int*)" in out and "???" in out, "text names the functions")
    check("unattributed: 50 accesses" in out, "text says how many accesses are unattributed")
    check("x = a[i];     // line 12" in out, "text shows walk's source line")
    src_line = [l for l in out.splitlines() if "// line 12" in l]
    check(bool(src_line) and "4,096" in src_line[0], "line 12 carries its count: %s" % src_line[:1])
    check("Dr" in out and "D1mr" in out and "Dw" in out and "Ir" in out, "cg_annotate's columns")
    r = run([sonde, "annotate", trace, "--limit", "1", "--sort", "name"])
    check(r.returncode == 0 and "(1 of 3)" in r.stdout, "--limit 1 shows one function")
    j3, _ = annotate(trace, "--sort", "name")
    check([f["name"] for f in j3["functions"]] == sorted(fn), "--sort name")
    j3, _ = annotate(trace, "--sort", "writes")
    check(j3["functions"][0]["name"] == "walk(int*)" and j3["functions"][1]["name"] == "???", "--sort writes")
    # The source found below --source-dir by the recorded path's last components.
    moved = os.path.join(tmp, "moved.sonde")
    run([writer, moved, "tables", "/src/project/walk.c"])
    os.makedirs(os.path.join(tmp, "tree", "project"))
    with open(os.path.join(tmp, "tree", "project", "walk.c"), "w") as f, open(src) as g:
        f.write(g.read())
    r = run([sonde, "annotate", moved])
    check(r.returncode == 0 and "source not found" in r.stdout, "a source that is not there is said")
    r = run([sonde, "annotate", moved, "--source-dir", os.path.join(tmp, "tree")])
    check(r.returncode == 0 and "x = a[i];     // line 12" in r.stdout, "--source-dir finds the source")

    # 2. Without names.
    for mode, note in (("modules", "not"), ("bare", "raw pc")):
        t = os.path.join(tmp, mode + ".sonde")
        run([writer, t, mode])
        jm, r = annotate(t)
        check(jm is not None and jm["naming"] == "raw_pc", mode + ": annotated by raw pc")
        if jm:
            names = {f["name"] for f in jm["functions"]}
            check(names == {"0x401010", "0x401020", "0x401030", "0x401040", "0x402010", "0x500000"},
                  mode + ": one row per pc")
            check(jm["lines"] == [] and any("raw pc" in n for n in jm["notes"]), mode + ": no lines, a note")
            check_totals(jm, t, mode)
        r = run([sonde, "annotate", t])
        check("raw pc" in r.stdout, mode + ": the text says so")
        if mode == "modules":
            check("/nonexistent/annotate/prog" in r.stdout, "modules: the missing module file is named")
    lackey = os.path.join(tmp, "t.lackey")
    with open(lackey, "w") as f:
        for i in range(300):
            f.write("I  %08x,3\n L %08x,8\n" % (0x400000 + 16 * (i % 7), 0x7000000 + 64 * i))
            f.write(" S %08x,4\n" % (0x7000000 + 64 * i))
    jl, r = annotate(lackey)
    check(jl is not None and jl["naming"] == "raw_pc" and len(jl["functions"]) == 7, "lackey: by raw pc")
    if jl:
        check(sum(f["ifetches"] for f in jl["functions"]) == 300, "lackey: 300 fetches")
        check_totals(jl, lackey, "lackey")

    # 3. Bad input.
    r = run([sonde, "annotate", os.path.join(tmp, "missing.sonde")])
    check(r.returncode == 2 and "missing.sonde" in r.stderr, "a missing file: exit 2, named")
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    r = run([sonde, "annotate", fifo])
    check(r.returncode == 2 and "not a regular file" in r.stderr, "a FIFO: exit 2")
    junk = os.path.join(tmp, "junk.sonde")
    with open(junk, "wb") as f:
        f.write(b"not a trace at all" * 10)
    r = run([sonde, "annotate", junk, "--format", "sonde"])
    check(r.returncode == 1 and "bad magic" in r.stderr, "not a trace: exit 1, said: " + r.stderr.strip())
    with open(trace, "rb") as f:
        data = f.read()
    cut = os.path.join(tmp, "cut.sonde")
    with open(cut, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    jc, r = annotate(cut)
    check(jc is not None and "warning" in r.stderr and "recovered" in r.stderr, "a cut trace: recovered, warned")
    if jc:
        check(jc["totals"]["accesses"] < 4196 + 4096 + 64 + 2048 + 50, "a cut trace: fewer accesses")
        check(any("incomplete" in n for n in jc["notes"]), "a cut trace: a note")
    for args, needle in ((["--cache", "D1:32K:3:64"], "--cache"), (["--cache", "D1:32K:8"], "--cache"),
                         (["--sort", "L9"], "--sort"), (["--limit", "0"], "--limit"),
                         (["--line-size", "48"], "--line-size"), (["--format", "xml"], "--format"),
                         (["--json", tmp], "--json")):
        r = run([sonde, "annotate", trace] + args)
        check(r.returncode == 2 and needle in r.stderr, "%s: exit 2 naming %s: %s" % (" ".join(args), needle,
                                                                                      r.stderr.strip()[:120]))
    r = run([sonde, "annotate", "--help"])
    check(r.returncode == 0 and "--source-dir" in r.stdout, "--help")

finish()
