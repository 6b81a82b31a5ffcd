#!/usr/bin/env python3
"""`sonde dump` (argv[1]) against the public reader, read here through ctypes (SONDE_LIBRARY):

1. a Sonde trace written here (two shards, markers, 1.2 record kinds): every line exactly;
   the whole output is the serial view of the reader, --shard the shard's records in order;
2. program events of a Sonde trace (--events): methods, threads, marks, ranges, losses, API
   calls, an unknown kind, names escaped on one line; --shard on events;
3. lackey text (plain, zstd, from a file and from a pipe), raw64 from a pipe, and DynamoRIO
   drmemtrace traces (a file and a directory of threads): each line equals the reader's record;
4. --limit over the whole output, --shard errors, usage errors (exit 2), a missing file, a
   corrupted trace (exit 1, the message names the file and the offset), a Sonde trace from a
   pipe (refused), an input without events;
5. the output: `sonde dump big | head -1` ends quietly with status 0 (EPIPE), a full disk
   (/dev/full) is an error.
Every run has a time limit, so a hang fails."""
import ctypes
import os
import re
import struct
import subprocess
import sys
import tempfile

SONDE = sys.argv[1]
lib = ctypes.CDLL(os.environ["SONDE_LIBRARY"])
DATA = os.path.join(os.environ["SONDE_SHARED_DATA"], "drmemtrace")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class Memref(ctypes.Structure):
    _fields_ = [("address", ctypes.c_uint64), ("pc", ctypes.c_uint64), ("timestamp", ctypes.c_uint64),
                ("shard", ctypes.c_uint32), ("type", ctypes.c_uint16), ("size", ctypes.c_uint16)]


class Event(ctypes.Structure):
    _fields_ = [("timestamp", ctypes.c_uint64), ("value", ctypes.c_uint64), ("id", ctypes.c_uint32),
                ("shard", ctypes.c_uint32), ("kind", ctypes.c_uint32), ("aux", ctypes.c_uint32)]


class Method(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("index", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("class_name", ctypes.c_char_p), ("full_name", ctypes.c_char_p),
                ("mangled_name", ctypes.c_char_p), ("source_file", ctypes.c_char_p),
                ("source_line", ctypes.c_uint32), ("module", ctypes.c_uint32), ("address", ctypes.c_uint64),
                ("size", ctypes.c_uint64), ("visibility", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


assert ctypes.sizeof(Memref) == 32 and ctypes.sizeof(Event) == 32 and ctypes.sizeof(Method) == 80
vp = ctypes.c_void_p
lib.sonde_trace_writer_create.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp)]
lib.sonde_trace_writer_write.argtypes = [vp, ctypes.c_uint32, ctypes.POINTER(Memref), ctypes.c_size_t]
lib.sonde_trace_writer_write_events.argtypes = [vp, ctypes.c_uint32, ctypes.POINTER(Event), ctypes.c_size_t]
lib.sonde_trace_writer_add_string.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32)]
lib.sonde_trace_writer_add_method.argtypes = [vp, ctypes.POINTER(Method)]
lib.sonde_trace_writer_close.argtypes = [vp]
lib.sonde_trace_reader_open.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.POINTER(vp)]
lib.sonde_trace_reader_num_shards.argtypes = [vp, ctypes.POINTER(ctypes.c_uint32)]
lib.sonde_trace_reader_read.argtypes = [vp, ctypes.POINTER(Memref), ctypes.c_size_t,
                                        ctypes.POINTER(ctypes.c_size_t)]
lib.sonde_trace_reader_read_shard.argtypes = [vp, ctypes.c_uint32, ctypes.POINTER(Memref), ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_size_t)]
lib.sonde_trace_reader_close.argtypes = [vp]

# Names the dump gives to record types 0..55 and to the named markers (sonde/trace.h).
TYPES = {0: "read", 1: "write", 2: "modify", 3: "ifetch", 4: "marker", 5: "instr_no_fetch", 6: "direct_jump",
         7: "indirect_jump", 8: "conditional_jump", 9: "taken_jump", 10: "untaken_jump", 11: "direct_call",
         12: "indirect_call", 13: "return", 14: "sysenter", 15: "encoding", 16: "instr_flush", 17: "data_flush",
         32: "prefetch", 33: "prefetch_read_l1", 34: "prefetch_read_l2", 35: "prefetch_read_l3",
         36: "prefetchnta", 37: "prefetch_read", 38: "prefetch_write", 39: "prefetch_instr",
         40: "prefetch_hardware", 41: "prefetch_read_l1_nt", 42: "prefetch_read_l2_nt",
         43: "prefetch_read_l3_nt", 44: "prefetch_instr_l1", 45: "prefetch_instr_l1_nt",
         46: "prefetch_instr_l2", 47: "prefetch_instr_l2_nt", 48: "prefetch_instr_l3",
         49: "prefetch_instr_l3_nt", 50: "prefetch_write_l1", 51: "prefetch_write_l1_nt",
         52: "prefetch_write_l2", 53: "prefetch_write_l2_nt", 54: "prefetch_write_l3",
         55: "prefetch_write_l3_nt"}
MARKERS = {1: "timestamp", 2: "thread_switch", 3: "cpu_id", 4: "thread_id", 5: "process_id", 6: "thread_exit",
           0x100: "kernel_event", 0x101: "kernel_xfer", 0x104: "func_id", 0x105: "func_retaddr",
           0x106: "func_arg", 0x107: "func_retval", 0x109: "filetype", 0x10A: "cache_line_size",
           0x10C: "version", 0x10F: "physical_address", 0x110: "physical_address_not_available",
           0x111: "virtual_address", 0x112: "page_size", 0x114: "chunk_instr_count", 0x115: "chunk_footer",
           0x119: "syscall", 0x11A: "maybe_blocking_syscall", 0x11D: "branch_target", 0x120: "core_wait",
           0x121: "core_idle", 0x12B: "hardware_event", 0x12C: "hardware_context_return",
           0x12E: "skipped_memref"}


def line_of(m):
    """The line the dump prints for a record, written independently of dump.cpp."""
    if m.type == 4:
        name = MARKERS.get(m.size) or ("drmemtrace+%#x" % (m.size - 0x100) if m.size >= 0x100 else "%#x" % m.size)
        return "%d %d marker:%s %#x - %#x" % (m.shard, m.timestamp, name, m.address, m.pc)
    return "%d %d %s %#x %d %#x" % (m.shard, m.timestamp, TYPES.get(m.type, "type:%d" % m.type), m.address,
                                    m.size, m.pc)


def reader_lines(path, fmt=0, shard=None):
    """Every record of the reader's serial view (or of one shard) as dump lines."""
    r = vp()
    err = ctypes.create_string_buffer(512)
    assert lib.sonde_trace_reader_open(path.encode(), fmt, err, 512, ctypes.byref(r)) == 0, err.value
    batch = (Memref * 4096)()
    n = ctypes.c_size_t()
    lines = []
    while True:
        s = (lib.sonde_trace_reader_read(r, batch, 4096, ctypes.byref(n)) if shard is None else
             lib.sonde_trace_reader_read_shard(r, shard, batch, 4096, ctypes.byref(n)))
        assert s == 0, s
        if n.value == 0:
            break
        lines += [line_of(batch[i]) for i in range(n.value)]
    lib.sonde_trace_reader_close(r)
    return lines


def run(*args, code=0, input=None, stdout=subprocess.PIPE):
    p = subprocess.run([SONDE, *args], stdout=stdout, stderr=subprocess.PIPE, input=input, timeout=120)
    out = p.stdout.decode() if p.stdout is not None else ""
    err = p.stderr.decode()
    if p.returncode != code:
        check(False, "%s: exit %d, expected %d\n%s\n%s" % (args, p.returncode, code, out[:2000], err))
    return out, err


def body(out, header="# shard timestamp type address size pc"):
    lines = out.splitlines()
    check(lines[:1] == [header], "the output starts with the header (%r)" % lines[:1])
    return lines[1:]


def mk(addr, pc, ts, typ, size):
    m = Memref()
    m.address, m.pc, m.timestamp, m.type, m.size = addr, pc, ts, typ, size
    return m


def write_sonde(path):
    w = vp()
    assert lib.sonde_trace_writer_create(path.encode(), None, ctypes.byref(w)) == 0
    s0 = [mk(1000, 0, 1000, 4, 1), mk(0x1000, 0x400000, 1000, 0, 8), mk(0x2000, 0x400004, 1500, 1, 4),
          mk(0x3000, 0x400008, 3000, 2, 2), mk(0x400010, 0x400010, 3000, 3, 4), mk(4242, 0, 3000, 4, 4),
          mk(0x400020, 0x400020, 3500, 9, 2), mk(0x5000, 0x400024, 3500, 33, 64), mk(4242, 0, 3600, 4, 6)]
    s1 = [mk(2000, 0, 2000, 4, 1), mk(0x9000, 0x500000, 2000, 0, 16), mk(0x9010, 0x500004, 4000, 1, 1)]
    for shard, recs in ((0, s0), (1, s1)):
        arr = (Memref * len(recs))(*recs)
        assert lib.sonde_trace_writer_write(w, shard, arr, len(recs)) == 0, "write %d" % shard
    sid = {}
    for text in (b"main", b'hello "x"\n\\', b"phase"):
        v = ctypes.c_uint32()
        assert lib.sonde_trace_writer_add_string(w, text, ctypes.byref(v)) == 0
        sid[text] = v.value
    m = Method(struct_size=80, index=0, name=b"area", class_name=b"geo::Circle",
               full_name=b"geo::Circle::area() const", mangled_name=b"_ZNK3geo6Circle4areaEv",
               source_file=b"", source_line=0, module=0xFFFFFFFF, address=0x401000, size=16)
    assert lib.sonde_trace_writer_add_method(w, ctypes.byref(m)) == 0
    m2 = Method(struct_size=80, index=1, name=b"helper", class_name=b"", full_name=b"", mangled_name=b"helper",
                source_file=b"", module=0xFFFFFFFF)
    assert lib.sonde_trace_writer_add_method(w, ctypes.byref(m2)) == 0

    def ev(ts, kind, id=0, value=0, aux=0):
        e = Event()
        e.timestamp, e.kind, e.id, e.value, e.aux = ts, kind, id, value, aux
        return e
    e0 = [ev(10, 3, 0, 4242), ev(11, 5, sid[b"main"]), ev(12, 1, 0), ev(13, 6, sid[b'hello "x"\n\\']),
          ev(14, 7, sid[b"phase"], 0, 0), ev(15, 8, sid[b"phase"], 0, 0), ev(16, 1, 1), ev(17, 2, 1),
          ev(18, 2, 0), ev(19, 9, 0, 3), ev(30, 10, 7, 20, 1), ev(30, 11, 0, 0xff, 1), ev(30, 12, 0, 0),
          ev(30, 13, 7, 99, 0), ev(31, 99, 5, 0x10, 6), ev(40, 4, 0, 4242)]
    e1 = [ev(20, 3, 1, 4243), ev(21, 1, 1), ev(22, 2, 1), ev(23, 4, 1, 4243)]
    for shard, evs in ((0, e0), (1, e1)):
        arr = (Event * len(evs))(*evs)
        assert lib.sonde_trace_writer_write_events(w, shard, arr, len(evs)) == 0
    assert lib.sonde_trace_writer_close(w) == 0


LACKEY = "==1== Lackey, an example Valgrind tool\n" + "".join(
    "I  %08x,4\n L %08x,8\n S %08x,4\n M %08x,8\n" % (0x400000 + 4 * i, 0x1000 + 8 * i, 0x9000 + 4 * i, 0x1000 + 8 * i)
    for i in range(250)) + "==1== exiting\n"
RAW64 = b"".join(struct.pack("<Q", 0x7000 + 16 * i) for i in range(3000))

with tempfile.TemporaryDirectory() as tmp:
    # ---- 1. a Sonde trace: every line, the serial view, --shard ----
    trace = os.path.join(tmp, "t.sonde")
    write_sonde(trace)
    out, err = run("dump", trace)
    check(err == "", "a complete trace dumps without a message (%r)" % err)
    expected = [
        "0 1000 marker:timestamp 0x3e8 - 0x0",
        "0 1000 read 0x1000 8 0x400000",
        "0 1500 write 0x2000 4 0x400004",
        "1 2000 marker:timestamp 0x7d0 - 0x0",
        "1 2000 read 0x9000 16 0x500000",
        "1 4000 write 0x9010 1 0x500004",
        "0 3000 modify 0x3000 2 0x400008",
        "0 3000 ifetch 0x400010 4 0x400010",
        "0 3000 marker:thread_id 0x1092 - 0x0",
        "0 3500 taken_jump 0x400020 2 0x400020",
        "0 3500 prefetch_read_l1 0x5000 64 0x400024",
        "0 3600 marker:thread_exit 0x1092 - 0x0",
    ]
    lines = body(out)
    check(sorted(lines) == sorted(expected), "Sonde trace: every record, one line each")
    check(lines == reader_lines(trace), "Sonde trace: the order of the reader's serial view")
    check([ln for ln in lines if ln.startswith("0 ")] == [ln for ln in expected if ln.startswith("0 ")],
          "Sonde trace: shard 0 in its own order")
    out, _ = run("dump", trace, "--shard", "1")
    check(body(out) == expected[3:6], "--shard 1: that shard only")
    check(body(run("dump", trace, "--shard", "0", "--format", "sonde")[0]) == reader_lines(trace, 1, 0),
          "--shard 0 --format sonde: the reader's shard 0")
    out, _ = run("dump", trace, "--limit", "4")
    check(body(out) == lines[:4], "--limit 4: the first four records of the whole output")
    out, _ = run("dump", trace, "--limit", "100")
    check(body(out) == lines, "--limit above the record count: everything")
    out, _ = run("dump", trace, "--shard", "0", "--limit", "2")
    check(body(out) == expected[:2], "--shard 0 --limit 2")

    # ---- 2. program events ----
    out, err = run("dump", trace, "--events")
    ev_expected = [
        "0 10 thread_start tid=4242",
        '0 11 thread_name "main"',
        "0 12 method_enter geo::Circle::area() const",
        '0 13 mark "hello \\"x\\"\\n\\\\"',
        '0 14 range_push "phase" depth=0',
        '0 15 range_pop "phase" depth=0',
        "0 16 method_enter helper",
        "0 17 method_leave helper",
        "0 18 method_leave geo::Circle::area() const",
        "0 19 loss lost=3",
        "0 30 api_call api#7 args=1 begin=20",
        "0 30 api_arg pos=1 value=0xff",
        "0 30 api_return value=0x0",
        "0 30 api_end api#7 correlation=99 depth=0",
        "0 31 kind:99 id=5 aux=6 value=0x10",
        "0 40 thread_end tid=4242",
        "1 20 thread_start tid=4243",
        "1 21 method_enter helper",
        "1 22 method_leave helper",
        "1 23 thread_end tid=4243",
    ]
    check(err == "" and body(out, "# shard timestamp event details") == ev_expected,
          "--events: every event, shard by shard, named and escaped")
    out, _ = run("dump", trace, "--events", "--shard", "1")
    check(body(out, "# shard timestamp event details") == ev_expected[-4:], "--events --shard 1")
    out, _ = run("dump", trace, "--events", "--limit", "17")
    check(body(out, "# shard timestamp event details") == ev_expected[:17], "--events --limit 17 across shards")
    _, err = run("dump", trace, "--events", "--shard", "2", code=1)
    check("--shard 2" in err and trace in err and "2 event shard(s)" in err, "--events --shard 2: refused (%r)" % err)

    # ---- 3. lackey, raw64, drmemtrace ----
    lackey = os.path.join(tmp, "t.lackey")
    with open(lackey, "w") as f:
        f.write(LACKEY)
    subprocess.run(["zstd", "-q", "-f", lackey, "-o", lackey + ".zst"], check=True)
    with open(lackey + ".zst", "rb") as f:
        lackey_zst = f.read()
    want = reader_lines(lackey, 2)
    check(len(want) == 1000 and want[:4] == ["0 0 ifetch 0x400000 4 0x400000", "0 0 read 0x1000 8 0x400000",
                                             "0 0 write 0x9000 4 0x400000", "0 0 modify 0x1000 8 0x400000"],
          "the lackey reference lines (%s)" % want[:4])
    check(body(run("dump", lackey)[0]) == want, "lackey file")
    check(body(run("dump", lackey + ".zst", "--format", "lackey")[0]) == want, "lackey .zst file")
    check(body(run("dump", "-", input=LACKEY.encode())[0]) == want, "lackey from a pipe (-)")
    check(body(run("dump", "-", "--format", "lackey", input=lackey_zst)[0]) == want, "lackey .zst from a pipe")
    check(body(run("dump", "-", "--limit", "10", input=LACKEY.encode())[0]) == want[:10], "lackey pipe --limit")
    check(body(run("dump", "-", "--shard", "0", input=LACKEY.encode())[0]) == want, "lackey pipe --shard 0")
    raw = os.path.join(tmp, "t.raw64")
    with open(raw, "wb") as f:
        f.write(RAW64)
    want = reader_lines(raw, 3)
    check(len(want) == 3000 and want[1] == "0 0 read 0x7010 8 0x0", "the raw64 reference lines")
    check(body(run("dump", "-", "--format", "raw64", input=RAW64)[0]) == want, "raw64 from a pipe")
    check(body(run("dump", raw, "--format", "raw64")[0]) == want, "raw64 file")

    drfile = os.path.join(DATA, "drcacheoff.cpu", "drmemtrace.simple_app.trace.zip")
    want = reader_lines(drfile, 4)
    lines = body(run("dump", drfile)[0])
    check(len(lines) > 1000 and lines == want, "drmemtrace file: %d records, each the reader's" % len(lines))
    check(any(":version " in ln for ln in lines) and any(" ifetch " in ln for ln in lines),
          "drmemtrace file: markers are named, fetches shown")
    drdir = os.path.join(DATA, "core_serial", "drmemtrace.threadsig.x64.tracedir")
    shards = ctypes.c_uint32()
    r = vp()
    assert lib.sonde_trace_reader_open(drdir.encode(), 4, None, 0, ctypes.byref(r)) == 0
    lib.sonde_trace_reader_num_shards(r, ctypes.byref(shards))
    lib.sonde_trace_reader_close(r)
    check(shards.value > 1, "the drmemtrace directory has %d shards" % shards.value)
    last = shards.value - 1
    lines = body(run("dump", drdir, "--format", "drmemtrace", "--shard", str(last))[0])
    check(lines == reader_lines(drdir, 4, last) and all(ln.startswith("%d " % last) for ln in lines),
          "drmemtrace directory --shard %d" % last)
    lines = body(run("dump", drdir, "--limit", "5000")[0])
    check(lines == reader_lines(drdir, 4)[:5000], "drmemtrace directory, serial view, --limit 5000")

    # ---- 4. errors ----
    _, err = run("dump", trace, "--shard", "2", code=1)
    check(err == "sonde dump: --shard 2: %s has 2 shard(s)\n" % trace, "--shard 2 of 2 shards: %r" % err)
    _, err = run("dump", "-", "--shard", "1", input=LACKEY.encode(), code=1)
    check("has 1 shard(s)" in err, "--shard 1 of a lackey pipe")
    for bad in (["--shard", "x"], ["--shard", "-1"], ["--shard", "65536"], ["--limit", "0"], ["--limit", "-3"],
                ["--format", "csv"], ["--bogus"]):
        _, err = run("dump", trace, *bad, code=2)
        check(err.startswith("sonde dump: ") and bad[0] in err, "usage error %s: %r" % (bad, err.splitlines()[:1]))
    _, err = run("dump", code=2)
    check("INPUT" in err, "no input: usage error")
    missing = os.path.join(tmp, "missing.sonde")
    _, err = run("dump", missing, code=2)
    check(missing in err, "a missing file is named (%r)" % err)
    with open(trace, "rb") as f:
        whole = f.read()
    piped, _ = run("dump", "-", input=whole)
    check(body(piped) == body(run("dump", trace)[0]), "a Sonde trace from a pipe dumps as from its file")
    junk = os.path.join(tmp, "junk.sonde")
    with open(junk, "wb") as f:
        f.write(b"SONDE-NOT" * 10)
    _, err = run("dump", junk, "--format", "sonde", code=1)
    check(err.startswith("sonde dump: %s: " % junk), "not a trace: %r" % err)
    # A trace whose chunks are damaged (the index and footer intact): the batches read before
    # the damage are printed, then the reader's message with the file and the offset.
    rawbig = os.path.join(tmp, "20k.raw64")
    with open(rawbig, "wb") as f:
        f.write(b"".join(struct.pack("<Q", 0x10000 + 8 * i) for i in range(20000)))
    big = os.path.join(tmp, "big.sonde")
    run("convert", rawbig, "--format", "raw64", "-o", big, "--chunk-records", "1000")
    with open(big, "rb") as f:
        data = bytearray(f.read())
    at = len(data) * 3 // 4
    data[at:at + 64] = b"\xa5" * 64
    bad = os.path.join(tmp, "bad.sonde")
    with open(bad, "wb") as f:
        f.write(data)
    out, err = run("dump", bad, "--shard", "0", code=1)
    check(re.match(r"sonde dump: %s: offset \d+: " % re.escape(bad), err) is not None,
          "a damaged chunk: the file and the offset (%r)" % err)
    printed = body(out)
    check(0 < len(printed) < 20000 and printed == reader_lines(rawbig, 3)[:len(printed)],
          "a damaged chunk: the records before it are printed (%d)" % len(printed))
    out, err = run("dump", lackey, "--events")
    check(body(out, "# shard timestamp event details") == [] and
          err == "sonde dump: warning: %s has no program events\n" % lackey, "--events of lackey: %r" % err)

    # ---- 5. the output ----
    bigraw = os.path.join(tmp, "big.raw64")
    with open(bigraw, "wb") as f:
        f.write(b"".join(struct.pack("<Q", 64 * i) for i in range(1 << 20)))
    p = subprocess.Popen("'%s' dump '%s' --format raw64 | head -2" % (SONDE, bigraw), shell=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, executable="/bin/bash")
    out, err = p.communicate(timeout=120)
    check(out.decode().splitlines() == ["# shard timestamp type address size pc", "0 0 read 0x0 8 0x0"],
          "dump | head -2: the first lines")
    q = subprocess.run(["bash", "-c", "set -o pipefail; '%s' dump '%s' --format raw64 | head -1 >/dev/null" %
                        (SONDE, bigraw)], capture_output=True, timeout=120)
    check(q.returncode == 0 and q.stderr == b"", "dump | head: status 0, nothing on stderr (%d, %r)" %
          (q.returncode, q.stderr))
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            _, err = run("dump", lackey, stdout=full, code=1)
        check(err == "sonde dump: standard output: No space left on device\n", "a full disk: %r" % err)

if failures:
    sys.exit("%d check(s) failed: %s" % (len(failures), "; ".join(failures)))
print("all dump checks passed")
