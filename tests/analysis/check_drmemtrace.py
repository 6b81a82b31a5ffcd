#!/usr/bin/env python3
"""DynamoRIO's own drcachesim test expectations, checked on its test traces
(tests/data/drmemtrace, each test's numbers in its expected.json).

1. core_serial/: `sonde analyze DIR --tool basic_counts`, parallel and serial, gives every
   basic_counts total of tool.core_serial; the schedule-independent numbers of schedule_stats,
   tool.core_sharded (reuse_time, reuse_distance, histogram, opcode_mix totals, syscall_mix),
   tool.multi_indir and tool.counts_only_thread come from the built-in tools or from the trace
   reader (sonde/trace.h through ctypes); the trace facts (threads, pid, version, file type,
   line and page size, chunk size) from the reader's markers.
2. reuse_offline/: `--reuse-model drcachesim` gives every number of tool.reuse_offline (totals,
   limit and pruning, mean, median, deviation, both histograms, the top lines), serial and
   parallel; with the threadsig directory, 922,934 accesses. A reference model of drcachesim's
   line list (its gate and its pruning, written out here) agrees with the tool on a random trace
   for several thresholds and limits.
3. drcacheoff.cpu/: `--cache-model drcachesim` gives every number of tool.drcacheoff.cpu: the
   traced cpus of each core and each level's hits, misses, compulsory misses, invalidations,
   prefetch hits and misses, child hits and miss rates.
4. `sonde convert --format drmemtrace` of each trace gives a Sonde trace on which the three
   tools' results are those of the drmemtrace input.
5. A schedule file given as a trace, a zip with no chunk members, a chunk cut in the middle of
   a record, an unknown version and a pipe fail (exit 1) with the file and the offset.

The few numbers that depend on DynamoRIO's scheduler replay or on decoding x86 opcodes are
listed in SKIPPED with the reason, so that nothing is left out silently.

Usage: check_drmemtrace.py SONDE_EXE (SONDE_SHARED_DATA and SONDE_LIBRARY set by meson)."""
import ctypes
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile

SONDE = sys.argv[1]
DATA = os.path.join(os.environ["SONDE_SHARED_DATA"], "drmemtrace")
LIB = ctypes.CDLL(os.environ["SONDE_LIBRARY"])
failures = []

# What is not checked, and why (printed; each is a number of an expected.json).
SKIPPED = {
    "core_serial tool.core_serial schedule_stats cores, *_context_switches":
        "depend on drcachesim's scheduler (-core_serial), not on the trace",
    "core_serial tool.core_serial basic_counts idle_markers": "null in expected.json (schedule dependent)",
    "core_serial tool.core_sharded opcode_mix_mov_count": "needs an x86 decoder of the encodings",
    "core_serial tool.skip_to_timestamp": "needs the as-traced replay of cpu_schedule.bin.zip",
}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def equal(got, want, what):
    check(got == want, "%s: %r (expected %r)" % (what, got, want))


def load(rel):
    with open(os.path.join(DATA, rel, "expected.json")) as f:
        return json.load(f)


def analyze(*args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        p = subprocess.run([SONDE, "analyze", *args, "--json", out], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            sys.exit("sonde analyze %s: exit %d\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
        with open(out) as f:
            return json.load(f), p.stdout


# ---- the public C API through ctypes ----

class Memref(ctypes.Structure):
    _fields_ = [("address", ctypes.c_uint64), ("pc", ctypes.c_uint64), ("timestamp", ctypes.c_uint64),
                ("shard", ctypes.c_uint32), ("type", ctypes.c_uint16), ("size", ctypes.c_uint16)]


LIB.sonde_trace_reader_open.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.POINTER(ctypes.c_void_p)]
LIB.sonde_trace_reader_num_shards.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
LIB.sonde_trace_reader_read_shard.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(Memref),
                                              ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
LIB.sonde_trace_reader_close.argtypes = [ctypes.c_void_p]
LIB.sonde_trace_reader_error.argtypes = [ctypes.c_void_p]
LIB.sonde_trace_reader_error.restype = ctypes.c_char_p
FORMAT_LACKEY, FORMAT_DRMEMTRACE = 2, 4
READ, WRITE, IFETCH, MARKER = 0, 1, 3, 4
MARKER_THREAD_ID, MARKER_PROCESS_ID = 4, 5
MARKER_DR = 0x100
MARKER_FILETYPE, MARKER_CACHE_LINE, MARKER_VERSION = MARKER_DR + 9, MARKER_DR + 10, MARKER_DR + 12
MARKER_PAGE_SIZE, MARKER_CHUNK_INSTRS, MARKER_SYSCALL = MARKER_DR + 18, MARKER_DR + 20, MARKER_DR + 25


def is_instr(t):
    return t == IFETCH or 6 <= t <= 14


def is_prefetch(t):
    return 32 <= t <= 55


def shards(path, fmt=FORMAT_DRMEMTRACE):
    """Every shard's records, as lists of (type, size, address)."""
    err = ctypes.create_string_buffer(1024)
    r = ctypes.c_void_p()
    st = LIB.sonde_trace_reader_open(path.encode(), fmt, err, len(err), ctypes.byref(r))
    if st != 0:
        sys.exit("open %s: %s" % (path, err.value.decode()))
    n = ctypes.c_uint32()
    LIB.sonde_trace_reader_num_shards(r, ctypes.byref(n))
    buf = (Memref * 65536)()
    got = ctypes.c_size_t()
    out = []
    for s in range(n.value):
        recs = []
        while True:
            st = LIB.sonde_trace_reader_read_shard(r, s, buf, len(buf), ctypes.byref(got))
            if st != 0:
                sys.exit("read %s: %s" % (path, LIB.sonde_trace_reader_error(r).decode()))
            if got.value == 0:
                break
            recs.extend((m.type, m.size, m.address) for m in buf[:got.value])
        out.append(recs)
    LIB.sonde_trace_reader_close(r)
    return out


def markers(recs, kind):
    return [a for (t, s, a) in recs if t == MARKER and s == kind]


def trace_facts(path, want, what):
    """The header facts of expected.json's "trace" block, from the reader's markers."""
    sh = shards(path)
    tids = [markers(r, MARKER_THREAD_ID) for r in sh]
    equal(sorted(t[0] for t in tids), sorted(want["threads"]), what + " thread ids, one per shard")
    equal({p for r in sh for p in markers(r, MARKER_PROCESS_ID)}, {want["pid"]}, what + " pid")
    versions = {v for r in sh for v in markers(r, MARKER_VERSION)}
    # Versions below 2 have no version marker; the reader took the header's version.
    equal(versions or {1}, {want["version"]}, what + " version")
    if "filetype" in want:
        equal({v for r in sh for v in markers(r, MARKER_FILETYPE)}, {int(want["filetype"].split()[0], 16)},
              what + " file type")
    for key, kind in (("cache_line_size", MARKER_CACHE_LINE), ("page_size", MARKER_PAGE_SIZE),
                      ("chunk_instr_count", MARKER_CHUNK_INSTRS)):
        if key in want:
            equal({v for r in sh for v in markers(r, kind)}, {want[key]}, what + " " + key)
    return sh


LIB.sonde_analyzer_create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
LIB.sonde_analyzer_destroy.argtypes = [ctypes.c_void_p]
LIB.sonde_analyzer_add_tool.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
LIB.sonde_analyzer_add_input.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32]
LIB.sonde_analyzer_set_parallel.argtypes = [ctypes.c_void_p, ctypes.c_bool]
LIB.sonde_analyzer_run.argtypes = [ctypes.c_void_p]
LIB.sonde_analyzer_error.argtypes = [ctypes.c_void_p]
LIB.sonde_analyzer_error.restype = ctypes.c_char_p
LIB.sonde_analyzer_results_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                            ctypes.POINTER(ctypes.c_size_t)]


def run_tool(path, fmt, tool, options, parallel):
    a = ctypes.c_void_p()
    LIB.sonde_analyzer_create(ctypes.byref(a))
    try:
        for st in (LIB.sonde_analyzer_add_tool(a, tool.encode(), options.encode()),
                   LIB.sonde_analyzer_add_input(a, path.encode(), fmt),
                   LIB.sonde_analyzer_set_parallel(a, parallel), LIB.sonde_analyzer_run(a)):
            if st != 0:
                sys.exit("analyzer: %s" % LIB.sonde_analyzer_error(a).decode())
        need = ctypes.c_size_t()
        LIB.sonde_analyzer_results_json(a, None, 0, ctypes.byref(need))
        buf = ctypes.create_string_buffer(need.value)
        LIB.sonde_analyzer_results_json(a, buf, need.value, ctypes.byref(need))
        return json.loads(buf.value.decode())[tool]
    finally:
        LIB.sonde_analyzer_destroy(a)


# ---- 1. core_serial ----

CORE = load("core_serial")
TRACEDIR = os.path.join(DATA, "core_serial", CORE["trace"]["directory"])
BASIC = {  # expected.json key -> (our key, inside marker_kinds)
    "fetched_instructions": ("ifetches", False),
    "unique_fetched_instructions": ("unique_ifetches", False),
    "non_fetched_instructions": ("non_fetched_ifetches", False),
    "prefetches": ("prefetches", False),
    "data_loads": ("reads", False),
    "data_stores": ("writes", False),
    "icache_flushes": ("icache_flushes", False),
    "dcache_flushes": ("dcache_flushes", False),
    "threads": ("threads", False),
    "encodings": ("encodings", False),
    "timestamp_plus_cpuid_markers": ("timestamp_cpuid", True),
    "idle_markers": ("core_idle", True),
    "wait_markers": ("core_wait", True),
    "kernel_transfer_markers": ("kernel_transfer", True),
    "function_id_markers": ("function_id", True),
    "function_return_address_markers": ("function_return_address", True),
    "function_argument_markers": ("function_argument", True),
    "function_return_value_markers": ("function_return_value", True),
    "physical_address_plus_virtual_address_marker_pairs": ("physical_address", True),
    "physical_address_unavailable_markers": ("physical_address_unavailable", True),
    "system_call_number_markers": ("syscall", True),
    "blocking_system_call_markers": ("blocking_syscall", True),
    "skipped_memref_markers": ("skipped_memref", True),
    "other_markers": ("other", True),
}
tests = CORE["tests"]
want = tests["tool.core_serial"]["basic_counts_total"]
check(set(want) == set(BASIC), "every basic_counts total of expected.json has a key here")
runs = {}
for mode in ([], ["--serial"], ["--jobs", "3"]):
    j, text = analyze(TRACEDIR, "--tool", "basic_counts", *mode)
    b = j["basic_counts"]
    runs[" ".join(mode) or "parallel"] = b
    equal(len(b["shards"]), len(CORE["trace"]["threads"]), "core_serial %s: one shard per thread file" % mode)
    equal(j["inputs"][0]["format"], "drmemtrace", "core_serial input format")
    for key, (ours, in_kinds) in sorted(BASIC.items()):
        if want[key] is None:
            continue
        got = b["marker_kinds"][ours] if in_kinds else b[ours]
        equal(got, want[key], "core_serial %s basic_counts %s" % (" ".join(mode) or "parallel", key))
    # Totals are the sums of the shards (threads: one per shard).
    for key in ("ifetches", "reads", "writes", "non_fetched_ifetches", "encodings", "threads"):
        equal(sum(s[key] for s in b["shards"]), b[key], "core_serial %s: shards add up to the total %s" % (mode, key))
    check("unique ifetches 6360" in text and "syscall 480" in text, "the printed summary has the categories")
check(runs["parallel"] == runs["--serial"] == runs["--jobs 3"], "serial and parallel basic_counts agree")
total = runs["parallel"]

sched = tests["tool.core_serial"]["schedule_stats_total_schedule_dependent"]
equal(total["threads"], sched["threads"], "schedule_stats threads")
equal(total["ifetches"], sched["instructions"], "schedule_stats instructions")
equal(total["marker_kinds"]["syscall"], sched["system_calls"], "schedule_stats system_calls")
equal(total["marker_kinds"]["blocking_syscall"], sched["maybe_blocking_system_calls"],
      "schedule_stats maybe_blocking_system_calls")

sh = trace_facts(TRACEDIR, CORE["trace"], "core_serial trace")
for name in sorted(os.listdir(TRACEDIR)):
    if name.endswith(".trace.zip"):
        with zipfile.ZipFile(os.path.join(TRACEDIR, name)) as z:
            equal(z.namelist(), CORE["trace"]["zip_members_per_file"], "core_serial %s members" % name)
            equal(z.getinfo("chunk.0000").file_size % CORE["trace"]["record_size_bytes"], 0,
                  "core_serial %s: whole records" % name)
equal(sorted(f for f in os.listdir(TRACEDIR) if not f.endswith(".trace.zip")), sorted(CORE["trace"]["ignore_files"]),
      "core_serial: the files besides the thread files are the schedule files the reader skips")
sharded = tests["tool.core_sharded"]["exact_totals"]
for mode in ([], ["--serial"]):
    j, _ = analyze(TRACEDIR, "--tool", "reuse_distance", "--reuse-model", "drcachesim", *mode)
    r = j["reuse_distance"]
    equal(r["total_accesses"], sharded["reuse_distance_total_accesses"], "core_sharded reuse_distance accesses %s" % mode)
    equal(r["instruction_accesses"], sharded["reuse_distance_instruction_accesses"],
          "core_sharded reuse_distance instruction accesses %s" % mode)
    # reuse_time counts the data accesses and, apart, the instructions.
    equal(r["data_accesses"], sharded["reuse_time_total_accesses"], "core_sharded reuse_time total accesses")
    equal(r["instruction_accesses"], sharded["reuse_time_total_instructions"], "core_sharded reuse_time instructions")
equal(total["ifetches"] + total["non_fetched_ifetches"], sharded["opcode_mix_total_executed_instructions"],
      "core_sharded opcode_mix total executed instructions (fetched + non-fetched)")
# The histogram tool's unique lines: every line an access covers, of fetched instructions
# (and instruction prefetches) and of loads, stores and the other prefetches, every thread
# together.
PREFETCH_INSTR = 39


def covered(recs, pick):
    return {line for r in recs for (t, s, a) in r if pick(t) for line in range(a >> 6, ((a + s - 1) >> 6) + 1)}


ilines = covered(sh, lambda t: is_instr(t) or t == PREFETCH_INSTR)
dlines = covered(sh, lambda t: t in (READ, WRITE) or (is_prefetch(t) and t != PREFETCH_INSTR))
equal(len(ilines), sharded["histogram_icache_unique_cache_lines"], "core_sharded histogram icache lines")
equal(len(dlines), sharded["histogram_dcache_unique_cache_lines"], "core_sharded histogram dcache lines")
equal(sum(1 for r in sh for a in markers(r, MARKER_SYSCALL) if a == 15), sharded["syscall_mix_count_for_syscall_15"],
      "core_sharded syscall_mix: calls of system call 15")

# Every built-in tool in its default model, serial and parallel: cachegrind's hierarchy and gem5's
# reuse distances see the 1.0 view (every fetched instruction an IFETCH, loads and stores).
for mode in ([], ["--serial"]):
    j, _ = analyze(TRACEDIR, "--tool", "basic_counts,cache_sim,reuse_distance", *mode)
    levels = {lv["name"]: lv for lv in j["cache_sim"]["levels"]}
    equal(levels["I1"]["accesses"], total["ifetches"], "cachegrind model I1 accesses %s" % mode)
    equal(levels["D1"]["accesses"], total["reads"] + total["writes"], "cachegrind model D1 accesses %s" % mode)
    equal(j["reuse_distance"]["accesses"], total["reads"] + total["writes"], "gem5 reuse_distance accesses %s" % mode)
    equal(j["basic_counts"], total, "basic_counts beside the other tools %s" % mode)

multi = tests["tool.multi_indir"]["exact"]
j, _ = analyze(TRACEDIR, TRACEDIR, TRACEDIR, "--tool", "basic_counts")
equal(j["basic_counts"]["threads"], multi["threads"], "multi_indir threads (the directory three times)")
equal(j["basic_counts"]["ifetches"], multi["instructions"], "multi_indir instructions")
only = tests["tool.counts_only_thread"]["exact"]
one = [f for f in os.listdir(TRACEDIR) if ".872906." in f][0]
j, _ = analyze(os.path.join(TRACEDIR, one), "--tool", "basic_counts")
equal(j["basic_counts"]["threads"], only["total_threads"], "counts_only_thread: thread 872906 alone")

# ---- 2. reuse_offline ----

REUSE = load("reuse_offline")
small = os.path.join(DATA, "reuse_offline", REUSE["trace"]["file"])
exp = REUSE["test"]["expected"]
defaults = REUSE["test"]["defaults"]
equal(os.path.getsize(small), REUSE["trace"]["bytes"], "reuse_offline trace bytes")
equal(os.path.getsize(small) // 12, REUSE["trace"]["records"], "reuse_offline trace records of 12 bytes")
trace_facts(small, REUSE["trace"], "reuse_offline trace")
for mode in ([], ["--serial"]):
    j, text = analyze(small, "--tool", "reuse_distance", "--reuse-model", "drcachesim", *mode)
    r = j["reuse_distance"]
    what = "reuse_offline %s " % (" ".join(mode) or "parallel")
    equal(r["line_size"], defaults["line_size"], what + "line size")
    equal(r["distance_threshold"], defaults["reuse_distance_threshold"], what + "threshold")
    equal(r["report_top"], defaults["report_top"], what + "report_top")
    equal(r["distance_limit"], defaults["reuse_distance_limit"], what + "default limit")
    for key, ours in (("total_accesses", "total_accesses"), ("instruction_accesses", "instruction_accesses"),
                      ("data_accesses", "data_accesses"), ("unique_accesses", "unique_accesses"),
                      ("unique_cache_lines_accessed", "unique_cache_lines"), ("distance_limit", "distance_limit"),
                      ("pruned_addresses", "pruned_addresses"), ("pruned_address_hits", "pruned_address_hits"),
                      ("reuse_distance_median", "median")):
        equal(r[ours], exp[key], what + key)
    for key, ours in (("reuse_distance_mean", "mean"), ("reuse_distance_standard_deviation", "standard_deviation")):
        equal(round(r[ours], 2), exp[key], what + key + " (2 decimals, as printed)")
    equal({str(d): c for d, c in r["histogram"]}, {k: v for k, v in exp["histogram_all"].items()},
          what + "histogram (all)")
    equal({str(d): c for d, c in r["data_histogram"]}, exp["histogram_data"], what + "histogram (data)")
    equal([(l["address"], l["references"], l["distant_references"]) for l in r["top_lines"]],
          [(l["line"], l["references"], l["distant_refs"]) for l in exp["top_cache_lines_by_references"]],
          what + "top lines by references")
    check("Reuse distance mean: 1.42" in text and "Pruned address hits: 0" in text, what + "printed summary")


# --reuse-options reaches the tool: drcachesim's -reuse_distance_threshold and -report_top.
j, _ = analyze(small, "--tool", "reuse_distance", "--reuse-model", "drcachesim", "--reuse-options",
               "distance_threshold=2,report_top=3")
r = j["reuse_distance"]
equal((r["distance_threshold"], r["report_top"], len(r["top_lines"])), (2, 3, 3), "--reuse-options threshold and top")
# Distances 3 and 4 are above the threshold of 2: 13 + 53 = 66 distant references on the five lines.
j, _ = analyze(small, "--tool", "reuse_distance", "--reuse-model", "drcachesim", "--reuse-options",
               "distance_threshold=2")
equal(sum(l["distant_references"] for l in j["reuse_distance"]["top_lines"]), 13 + 53,
      "--reuse-options: distant references (distance above the threshold)")


# A model of drcachesim's line list (reuse_distance.h): most recent first, the gate at the
# threshold-th line, distant references older than the gate, and the tail pruned once the
# list is longer than the limit. Slow and plain; small traces only.
def reference(accesses, threshold, limit, report_top):
    lst, refs, pruned = [], {}, set()  # lst: tags, most recent first; refs: tag -> [total, distant]
    gate = None  # the gate's tag
    unique_lines = cur_time = total = data = pruned_count = pruned_hits = 0
    hist, dhist = {}, {}
    for tag, is_data in accesses:
        total += 1
        data += is_data
        if tag not in refs:
            refs[tag] = [1, 0]
            lst.insert(0, tag)
            if gate is None:
                gate = tag
            if unique_lines > threshold:
                gate = lst[lst.index(gate) - 1]
            unique_lines += 1
            cur_time += 1
            if tag in pruned:
                pruned_hits += 1
                pruned.discard(tag)
            if limit and limit < len(refs):
                tail = lst.pop()
                if tail == gate:
                    gate = lst[-1]
                del refs[tail]
                pruned.add(tail)
                pruned_count += 1
        else:
            refs[tag][0] += 1
            pos = lst.index(tag)
            if pos == 0:
                dist = 0
            else:
                gpos = lst.index(gate)
                if pos > gpos:
                    refs[tag][1] += 1
                    gate = lst[gpos - 1]
                elif pos == gpos:
                    gate = lst[gpos - 1]
                dist = pos
                lst.pop(pos)
                lst.insert(0, tag)
                cur_time += 1
            hist[dist] = hist.get(dist, 0) + 1
            if is_data:
                dhist[dist] = dhist.get(dist, 0) + 1
    order = sorted(refs.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))[:report_top]
    dorder = sorted(refs.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))[:report_top]
    return {"total_accesses": total, "data_accesses": data, "unique_accesses": cur_time,
            "unique_cache_lines": len(refs) + len(pruned), "pruned_addresses": pruned_count,
            "pruned_address_hits": pruned_hits, "histogram": sorted(hist.items()),
            "data_histogram": sorted((d, dhist.get(d, 0)) for d in hist),
            "top_lines": [(t << 6, r[0], r[1]) for t, r in order],
            "top_distant_lines": [(t << 6, r[0], r[1]) for t, r in dorder]}


rng = random.Random(20)
with tempfile.TemporaryDirectory() as tmp:
    lackey = os.path.join(tmp, "mixed.lackey")
    accesses = []
    with open(lackey, "w") as f:
        hot = [rng.randrange(40) for _ in range(8)]
        for i in range(6000):
            tag = rng.choice(hot) if rng.random() < 0.5 else rng.randrange(400 if i < 3000 else 60)
            kind = rng.choice("ILS")
            if kind == "I":
                f.write("I  %08x,4\n" % (tag * 64 + 8))
            else:
                f.write(" %s %08x,8\n" % (kind, tag * 64 + 8))
            accesses.append((tag, kind != "I"))
    for threshold, limit in ((100, 0), (20, 0), (5, 0), (20, 50), (10, 200), (3, 4)):
        opts = "model=drcachesim,distance_threshold=%d,distance_limit=%d,report_top=7" % (threshold, limit)
        want = reference(accesses, threshold, limit, 7)
        for parallel in (False, True):
            got = run_tool(lackey, FORMAT_LACKEY, "reuse_distance", opts, parallel)
            fields = {k: got[k] for k in want if not k.startswith("top") and "histogram" not in k}
            fields["histogram"] = [tuple(e) for e in got["histogram"]]
            fields["data_histogram"] = [tuple(e) for e in got["data_histogram"]]
            for k in ("top_lines", "top_distant_lines"):
                fields[k] = [(l["line"], l["references"], l["distant_references"]) for l in got[k]]
            equal(fields, want, "reuse_distance model=drcachesim threshold %d limit %d (%s) = the list model"
                  % (threshold, limit, "parallel" if parallel else "serial"))

# ---- 3. drcacheoff.cpu ----

CPU = load("drcacheoff.cpu")
simple = os.path.join(DATA, "drcacheoff.cpu", CPU["trace"]["file"])
exp = CPU["test"]["expected"]
cfg = CPU["test"]["simulator_config_defaults"]
trace_facts(simple, CPU["trace"], "drcacheoff.cpu trace")
with zipfile.ZipFile(simple) as z:
    equal(z.namelist(), CPU["trace"]["zip_members"], "drcacheoff.cpu zip members")
    equal(z.getinfo("chunk.0000").file_size, CPU["trace"]["records"] * CPU["trace"]["record_size_bytes"],
          "drcacheoff.cpu records of %d bytes" % CPU["trace"]["record_size_bytes"])
for mode in ([], ["--serial"]):
    j, text = analyze(simple, "--cache-model", "drcachesim", *mode)
    c = j["cache_sim"]
    what = "drcacheoff.cpu %s " % (" ".join(mode) or "default")
    equal(c["model"], "drcachesim", what + "model")
    equal(len(c["cores"]), cfg["cores"], what + "cores")
    equal(c["line_size"], cfg["line_size"], what + "line size")
    levels = {lv["name"]: lv for lv in c["levels"]}
    equal(sorted(levels), sorted(["L1I%d" % i for i in range(4)] + ["L1D%d" % i for i in range(4)] + ["LL"]),
          what + "levels named as drcachesim names them")
    for name, geo in (("L1I0", cfg["L1I"]), ("L1D0", cfg["L1D"]), ("LL", cfg["LL"])):
        equal((levels[name]["size"], levels[name]["assoc"]), (geo["size"], geo["assoc"]), what + name + " geometry")
    equal(c["cores"][0]["traced_cpus"], [exp["core0_traced_cpu"]], what + "core 0 traced cpu")
    equal(c["cores"][1]["traced_cpus"], [exp["core1_traced_cpu"]], what + "core 1 traced cpu")
    equal(len(c["cores"][2]["traced_cpus"]), exp["core2_traced_cpus"], what + "core 2 traced cpus")
    equal(len(c["cores"][3]["traced_cpus"]), exp["core3_traced_cpus"], what + "core 3 traced cpus")
    for name in ("L1I0", "L1D0", "L1I1", "L1D1", "LL"):
        lv = levels[name]
        for key, want in exp[name].items():
            if key == "miss_rate_percent" or key == "local_miss_rate_percent":
                got = round(100 * lv["miss_ratio"], 2)
            elif key == "total_miss_rate_percent":
                got = round(100 * lv["total_miss_ratio"], 2)
            elif key == "compulsory_misses":
                got = lv["compulsory_misses"]
            else:
                got = lv[key]
            equal(got, want, what + name + " " + key)
    for name in ("L1I2", "L1D2", "L1I3", "L1D3"):
        equal(levels[name]["hits"] + levels[name]["misses"], 0, what + name + " untouched")
    check("Core #0 (1 traced CPU(s): #8)" in text and "L1D1: hits 32,672" in text, what + "printed summary")

# ---- 4. sonde convert keeps everything: the same results from the Sonde trace ----

with tempfile.TemporaryDirectory() as tmp:
    for src in (TRACEDIR, small, simple):
        out = os.path.join(tmp, os.path.basename(src) + ".sonde")
        p = subprocess.run([SONDE, "convert", "--format", "drmemtrace", src, "-o", out], capture_output=True,
                           text=True, timeout=600)
        check(p.returncode == 0 and "converted" in p.stdout, "sonde convert %s (%s)" % (src, p.stderr))
        # A Sonde trace named like a drmemtrace file is still a Sonde trace (its magic decides).
        named = os.path.join(tmp, os.path.basename(src) + ".copy.trace")
        with open(out, "rb") as f, open(named, "wb") as g:
            g.write(f.read())
        j, _ = analyze(named, "--tool", "basic_counts")
        equal(j["inputs"][0]["format"], "sonde", "%s converted, named .trace: read as a Sonde trace" % src)
        for tool in (["--tool", "basic_counts"], ["--tool", "reuse_distance", "--reuse-model", "drcachesim"],
                     ["--cache-model", "drcachesim"]):
            before, _ = analyze(src, *tool)
            after, _ = analyze(out, *tool)
            for j in (before, after):  # they differ in their inputs and start times only
                j.pop("inputs")
                j.pop("metadata")
            equal(after, before, "%s, %s: the same results after sonde convert" % (os.path.basename(src),
                                                                                    " ".join(tool)))

# ---- 5. inputs that are not whole drmemtrace traces: exit 1, a message naming file and offset ----


def fails(args, needles, what):
    p = subprocess.run([SONDE, *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == 1 and all(n in p.stderr for n in needles), "%s: exit 1 naming %s (exit %d: %r)"
          % (what, needles, p.returncode, p.stderr))


with tempfile.TemporaryDirectory() as tmp:
    schedule = os.path.join(TRACEDIR, "cpu_schedule.bin.zip")
    fails(["analyze", schedule], [schedule, "offset 0", "schedule file", "not a thread trace"],
          "a schedule file given as a trace")
    fails(["analyze", "--format", "drmemtrace", os.path.join(TRACEDIR, "serial_schedule.bin.gz")],
          ["serial_schedule.bin.gz: offset 0", "schedule file"], "the serial schedule given as a trace")
    readme = os.path.join(tmp, "readme.trace.zip")
    with zipfile.ZipFile(readme, "w") as z:
        z.writestr("README", "not a chunk")
    fails(["analyze", readme], [readme + ": member README: offset 0", "not a chunk member"],
          "a zip whose member is not a chunk")
    empty = os.path.join(tmp, "empty.trace.zip")
    zipfile.ZipFile(empty, "w").close()
    fails(["analyze", empty], [empty + ": offset 0", "no chunk members"], "a zip with no chunk members")
    with zipfile.ZipFile(simple) as z:
        chunk = z.read("chunk.0000")
    cut = os.path.join(tmp, "cut.trace.zip")
    with zipfile.ZipFile(cut, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("chunk.0000", chunk[:12 * 1000 + 5])
    fails(["analyze", cut], [cut + ": member chunk.0000: offset 12000", "ends inside a record (5 of 12 bytes)"],
          "a chunk cut in the middle of a record")
    out = os.path.join(tmp, "cut.sonde")
    fails(["convert", cut, "-o", out], ["offset 12000", "was not written"], "sonde convert of the cut chunk")
    check(not os.path.exists(out), "a failed conversion leaves no output")
    v9 = os.path.join(tmp, "v9.trace")
    with open(v9, "wb") as f:
        f.write((25).to_bytes(2, "little") + bytes(2) + (9).to_bytes(8, "little") + chunk[12:12 * 100])
    fails(["analyze", v9], [v9 + ": offset 0", "unsupported drmemtrace version 9", "versions 1 to 7"],
          "an unknown version")
    with open(small, "rb") as f:
        raw = f.read()
    for fmt in (["--format", "drmemtrace"], []):
        p = subprocess.run([SONDE, "analyze", *fmt, "-"], input=raw, capture_output=True, timeout=120)
        err = p.stderr.decode()
        check(p.returncode == 1 and "not from a pipe" in err, "a drmemtrace trace on a pipe %s: %r" % (fmt, err))

# libzip is loaded when the first .zip is opened (src/trace/drmemtrace_container.cpp). A library
# of its name without its functions, found first on the library path, is reported by name for a
# .zip input and changes nothing for the other containers.
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
if CC is None:
    SKIPPED["a broken libzip"] = "no C compiler to build the stand-in library"
else:
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "notzip.c")
        with open(src, "w") as f:
            f.write("int not_libzip(void) { return 0; }\n")
        for soname in ("libzip.so.5", "libzip.so.4", "libzip.so"):
            subprocess.run([CC, "-shared", "-fPIC", "-o", os.path.join(tmp, soname), "-Wl,-soname," + soname, src],
                           check=True)
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = tmp + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        p = subprocess.run([SONDE, "analyze", simple], capture_output=True, text=True, timeout=120, env=env)
        check(p.returncode == 1 and simple + ": offset 0: cannot read a .zip container" in p.stderr
              and "libzip.so.5 has no zip_open" in p.stderr,
              "a .zip with a broken libzip: exit 1 naming the library and the function (exit %d: %r)"
              % (p.returncode, p.stderr))
        p = subprocess.run([SONDE, "--version"], capture_output=True, text=True, timeout=120, env=env)
        check(p.returncode == 0, "sonde starts with a broken libzip on the library path: %r" % p.stderr)
        with zipfile.ZipFile(simple) as z:
            chunk = z.read("chunk.0000")
        plain = os.path.join(tmp, "simple.trace")
        with open(plain, "wb") as f:
            f.write(chunk)
        a = subprocess.run([SONDE, "analyze", plain, "--json", "/dev/stdout"], capture_output=True, text=True,
                           timeout=120, env=env)
        b = subprocess.run([SONDE, "analyze", plain, "--json", "/dev/stdout"], capture_output=True, text=True,
                           timeout=120)
        check(a.returncode == 0 and b.returncode == 0 and json.loads(a.stdout.split("\n}\n")[0] + "}")["basic_counts"]
              == json.loads(b.stdout.split("\n}\n")[0] + "}")["basic_counts"],
              "a plain drmemtrace file reads the same with a broken libzip on the library path (%r)" % a.stderr)

for reason in sorted(SKIPPED.items()):
    print("skip %s: %s" % reason)
if failures:
    sys.exit("%d failed" % len(failures))
print("all passed")
