#!/usr/bin/env python3
"""Tests of the Python package `sonde` (bindings/python) against the built library: sessions and
buffers with a callback and as an iterator, emitting from threads, statistics and errors; profile
arrays; the stack-distance calculator against gem5's answers; the analyzer and sonde.analyze()
against `sonde analyze --json`; writing and reading traces with memrefs and program events."""
import ctypes
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

SOURCE = os.environ["SONDE_SOURCE_ROOT"]
BUILD = os.environ["SONDE_BUILD_ROOT"]
DATA = os.environ.get("SONDE_SHARED_DATA", os.path.join(SOURCE, "tests", "data"))
sys.path.insert(0, os.path.join(SOURCE, "bindings", "python"))
import sonde  # noqa: E402

LACKEY = os.path.join(DATA, "gzip-gpl3.lackey.zst")
SONDE_CLI = os.path.join(BUILD, "src", "cli", "sonde")

try:
    import numpy
except ImportError:
    numpy = None


class LoadingTest(unittest.TestCase):
    def test_version_is_the_loaded_library(self):
        lib = ctypes.CDLL(os.environ["SONDE_LIBRARY"])
        major, minor, patch = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint32()
        lib.sonde_get_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
        self.assertEqual(sonde.__version__, "%d.%d.%d" % (major.value, minor.value, patch.value))
        self.assertEqual(sonde.version(), (major.value, minor.value, patch.value))
        self.assertEqual(os.path.realpath(sonde.library_path), os.path.realpath(os.environ["SONDE_LIBRARY"]))

    def test_status_names(self):
        self.assertEqual(sonde.status_name(0), "SONDE_STATUS_SUCCESS")
        self.assertEqual(sonde.status_name(7), "SONDE_STATUS_ERROR_SESSION_NOT_FOUND")
        self.assertTrue(sonde.status_string(7))

    def test_every_public_name_has_a_docstring(self):
        missing = []
        for name in sonde.__all__:
            obj = getattr(sonde, name)
            if callable(obj) and not (obj.__doc__ or "").strip():
                missing.append(name)
            if isinstance(obj, type):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") and callable(member) and not (member.__doc__ or "").strip():
                        missing.append(name + "." + attr)
        self.assertEqual(missing, [])


class BufferTest(unittest.TestCase):
    def test_callback_receives_every_record_in_order_per_thread(self):
        spans = []
        delivery_threads = set()

        def on_records(records):
            delivery_threads.add(threading.get_ident())
            spans.append(records)

        per_thread = 2000
        with sonde.Session("python-callback") as s:
            buf = s.create_buffer(1 << 20, on_records, chunk_size=4096)
            s.start()

            def produce(tag):
                for i in range(per_thread):
                    buf.emit(sonde.RECORD_KIND_USER + tag, struct.pack("<QQ", tag, i))

            threads = [threading.Thread(target=produce, args=(t,)) for t in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            buf.flush()
            stats = buf.stats()
            s.stop()
        self.assertEqual(stats.records_emitted, 3 * per_thread)
        self.assertEqual(stats.records_delivered, 3 * per_thread)
        self.assertEqual(stats.records_dropped, 0)
        self.assertGreaterEqual(stats.callbacks, 3)
        seen = {}
        for records in spans:
            self.assertEqual(len({r.thread_id for r in records}), 1, "a span holds one thread's records")
            for r in records:
                tag, i = struct.unpack("<QQ", r.payload)
                self.assertEqual(r.kind, sonde.RECORD_KIND_USER + tag)
                seen.setdefault(tag, []).append(i)
        self.assertEqual(sorted(seen), [0, 1, 2])
        for tag, numbers in seen.items():
            self.assertEqual(numbers, list(range(per_thread)), "thread %d in emission order" % tag)

    def test_iterator_keeps_records_with_timestamps_and_fields(self):
        with sonde.Session() as s:
            buf = s.create_buffer(1 << 16)
            s.start()
            before = sonde.timestamp()
            buf.emit(sonde.RECORD_KIND_MEMREF, struct.pack("<QQII", 0x1000, 0x400, 8, 1), timestamped=True)
            buf.emit(sonde.RECORD_KIND_USER, b"abc")
            self.assertEqual(list(buf), [], "nothing delivered before a flush")
            buf.flush()
            records = list(buf.records())
            self.assertEqual(list(buf), [], "records are yielded once")
        self.assertEqual([r.kind for r in records], [sonde.RECORD_KIND_MEMREF, sonde.RECORD_KIND_USER])
        memref, user = records
        self.assertEqual(memref.fields(), {"address": 0x1000, "pc": 0x400, "size": 8, "type": 1})
        self.assertGreaterEqual(memref.timestamp, before)
        self.assertIsNone(user.timestamp)
        self.assertEqual(user.payload[:3], b"abc")
        self.assertEqual(len(user.payload), 8, "payloads are padded to 8 bytes")
        self.assertIsNone(user.fields())

    def test_errors_carry_status_and_name(self):
        with sonde.Session() as s:
            buf = s.create_buffer(1 << 16)
            with self.assertRaises(sonde.SondeError) as cm:
                buf.emit(sonde.RECORD_KIND_USER, b"x")
            self.assertEqual(cm.exception.status, 10)
            self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE")
            self.assertEqual(cm.exception.description, sonde.status_string(10))
            s.start()
            with self.assertRaises(sonde.SondeError) as cm:
                buf.emit(sonde.RECORD_KIND_THREAD, bytes(16))
            self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_INVALID_ARGUMENT")
            with self.assertRaises(sonde.SondeError) as cm:
                s.start()
            self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_SESSION_ACTIVE")
            self.assertTrue(s.active)
        with self.assertRaises(TypeError):
            with sonde.Session() as s:
                s.create_buffer(1 << 16, colour=1)
        with self.assertRaises(sonde.SondeError) as cm:
            with sonde.Session() as s:
                s.create_buffer(1 << 16, policy=7)
        self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_INVALID_ARGUMENT")

    def test_callback_exception_is_raised_by_flush(self):
        def failing(records):
            raise RuntimeError("consumer failed on %d records" % len(records))

        with sonde.Session() as s:
            buf = s.create_buffer(1 << 16, failing)
            s.start()
            buf.emit(sonde.RECORD_KIND_USER, b"1")
            with self.assertRaisesRegex(RuntimeError, "consumer failed on 1 records"):
                buf.flush()
            buf.flush()  # raised once

    def test_discard_policy_counts_drops(self):
        gate = threading.Event()

        def slow(records):
            gate.wait(10)

        with sonde.Session() as s:
            buf = s.create_buffer(2 * 4096, slow, policy=sonde.POLICY_DISCARD, chunk_size=4096)
            s.start()
            dropped = 0
            for i in range(5000):
                try:
                    buf.emit(sonde.RECORD_KIND_USER, struct.pack("<Q", i))
                except sonde.SondeError as e:
                    self.assertEqual(e.name, "SONDE_STATUS_ERROR_BUFFER_FULL")
                    dropped += 1
            gate.set()
            buf.flush()
            stats = buf.stats()
        self.assertGreater(dropped, 0)
        self.assertEqual(stats.records_dropped, dropped)
        self.assertEqual(stats.records_emitted, stats.records_delivered + stats.records_dropped)


class ProfileTest(unittest.TestCase):
    def test_counters_read_write_snapshot_and_emit(self):
        with sonde.ProfileBuffer(1 << 16) as pb:
            arr = sonde.ProfileArray(16, 8, num_thread_buckets=3)
            self.assertFalse(arr.is_allocated)
            arr.allocate(pb)
            arr.initialize()
            self.assertTrue(arr.is_allocated)
            self.assertEqual(arr.num_thread_buckets, 4)
            self.assertEqual((arr.record_size, arr.num_records), (16, 8))
            self.assertEqual(arr.size, 4 * arr.chunk_size)
            arr.write(struct.pack("<QQ", 5, 7), first_record=2, thread_bucket=1)
            arr.write(struct.pack("<QQ", 1, 2), first_record=2, thread_bucket=3)
            mine = arr.thread_bucket
            for _ in range(10):
                arr.add_u64(4, 8)
            self.assertEqual(arr.read(2, 1, 1), struct.pack("<QQ", 5, 7))
            self.assertEqual(arr.sum_u64(2, 0), 6)
            self.assertEqual(arr.sum_u64(2, 8), 9)
            self.assertEqual(arr.sum_u64(4, 8), 10)
            snap = arr.snapshot()
            self.assertEqual(len(snap), arr.size)
            off = mine * arr.chunk_size + 4 * 16 + 8
            self.assertEqual(struct.unpack_from("<Q", snap, off)[0], 10)
            self.assertEqual(arr.record_offset(2, 1) - arr.record_offset(2, 0), arr.chunk_size)
            with self.assertRaises(sonde.SondeError) as cm:
                arr.read(7, 2)
            self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_INVALID_ARGUMENT")
            with sonde.Session() as s:
                buf = s.create_buffer(1 << 16)
                s.start()
                n = arr.emit(buf, summed=True)
                buf.flush()
                records = [r.fields() for r in buf]
            self.assertEqual(n, 3)
            counters = {sonde.counter_id_parts(r["counter_id"])[1:]: r["value"] for r in records}
            self.assertEqual(counters, {(2, 0): 6, (2, 1): 9, (4, 1): 10})


def gem5_answers(sd, path):
    mismatches = 0
    with open(path) as f:
        for line in f:
            op, addr, arg, dist, marked = line.split()
            if op == "U":
                got = sd.calc_and_update(int(addr), arg == "1")
            else:
                got = sd.calc(int(addr), arg == "1")
            want = (sonde.INFINITY if dist == "inf" else int(dist), marked == "1")
            mismatches += got != want
    return mismatches


class StackDistanceTest(unittest.TestCase):
    def test_gem5_answers(self):
        path = os.path.join(DATA, "stackdist-ops-seed1.txt")
        self.assertEqual(gem5_answers(sonde.StackDistance(), path), 0)
        self.assertEqual(gem5_answers(sonde.StackDistance(verify=True), path), 0)

    def test_batch_histogram_and_mrc_match_a_naive_stack(self):
        rng = random.Random(7)
        addrs = [rng.randrange(64) for _ in range(3000)]
        writes = [rng.random() < 0.25 for _ in addrs]
        stack, dists = [], []
        for a in addrs:
            if a in stack:
                dists.append(len(stack) - 1 - stack.index(a))
                stack.remove(a)
            else:
                dists.append(None)
            stack.append(a)
        sd = sonde.StackDistance()
        hist = sd.batch(addrs, writes)
        self.assertEqual(sd.size, len(set(addrs)))
        summary = hist.summary()
        self.assertEqual(summary["accesses"], len(addrs))
        self.assertEqual(summary["infinite"], dists.count(None))
        self.assertEqual(summary["writes"], sum(writes))
        bins = hist.bins(numpy=False)
        want = {}
        for d, w in zip(dists, writes):
            if d is not None:
                c = want.setdefault(d, [0, 0])
                c[1 if w else 0] += 1
        self.assertEqual([(b.first, b.reads, b.writes) for b in bins],
                         [(d, r, w) for d, (r, w) in sorted(want.items())])
        self.assertEqual(sum(b.count for b in hist.bins("log2", numpy=False)), len(addrs) - dists.count(None))
        self.assertTrue(all(b.last - b.first == 9 for b in hist.bins("linear", 10, numpy=False)))
        mrc = hist.mrc(numpy=False)
        self.assertEqual(mrc[0], sonde.MrcPoint(0, 1.0))
        for p in mrc:
            misses = sum(1 for d in dists if d is None or d >= p.cache_lines)
            self.assertAlmostEqual(p.miss_ratio, misses / len(addrs))
            self.assertAlmostEqual(hist.miss_ratio(p.cache_lines), p.miss_ratio)
        with self.assertRaises(ValueError):
            hist.bins("cubic")
        hist.reset()
        self.assertEqual(hist.summary()["accesses"], 0)
        self.assertEqual(hist.mrc(numpy=False), [])

    def test_sampling_and_bad_options(self):
        sd = sonde.StackDistance(sampling="fixed_rate", sample_rate=0.5, seed=3)
        hist = sd.batch(list(range(1000)) * 3)
        self.assertTrue(hist.summary()["sampling"])
        self.assertEqual(hist.summary()["accesses"], 3000)
        with self.assertRaises(sonde.SondeError) as cm:
            sonde.StackDistance(sampling="fixed_rate", sample_rate=2.0)
        self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_INVALID_ARGUMENT")
        with self.assertRaises(sonde.SondeError) as cm:
            sd.calc(1)
        self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_NOT_SUPPORTED")

    def test_lists_when_numpy_cannot_be_imported(self):
        # A Python without NumPy, whether or not this one has it: the package falls back to
        # lists of named tuples, equal to what numpy=False gives here, and numpy=True refuses.
        rng = random.Random(11)
        addrs = [rng.randrange(200) for _ in range(5000)]
        writes = [rng.random() < 0.3 for _ in addrs]
        script = (
            "import json, sys\n"
            "sys.modules['numpy'] = None\n"  # makes `import numpy` raise ImportError
            "sys.path.insert(0, sys.argv[1])\n"
            "import sonde\n"
            "addrs, writes = json.load(sys.stdin)\n"
            "h = sonde.StackDistance().batch(addrs, writes)\n"
            "out = {'types': [type(h.bins()).__name__, type(h.bins()[0]).__name__,\n"
            "                 type(h.mrc()).__name__, type(h.mrc()[0]).__name__]}\n"
            "for b in ('exact', 'log2', 'linear'):\n"
            "    out[b] = [list(x) for x in h.bins(b, 16)]\n"
            "out['mrc'] = [list(p) for p in h.mrc()]\n"
            "try:\n"
            "    h.bins(numpy=True)\n"
            "except ImportError as e:\n"
            "    out['numpy_true'] = str(e)\n"
            "print(json.dumps(out))\n")
        r = subprocess.run([sys.executable, "-c", script, os.path.join(SOURCE, "bindings", "python")],
                           input=json.dumps([addrs, writes]), capture_output=True, text=True, check=True)
        out = json.loads(r.stdout)
        self.assertEqual(out["types"], ["list", "Bin", "list", "MrcPoint"])
        self.assertIn("NumPy cannot be imported", out["numpy_true"])
        hist = sonde.StackDistance().batch(addrs, writes)
        for b in ("exact", "log2", "linear"):
            self.assertEqual([sonde.Bin(*x) for x in out[b]], hist.bins(b, 16, numpy=False))
        self.assertEqual([sonde.MrcPoint(*p) for p in out["mrc"]], hist.mrc(numpy=False))

    def test_numpy_false_gives_lists(self):
        hist = sonde.StackDistance().batch([1, 2, 3, 1, 2, 3, 4, 1])
        self.assertEqual(hist.bins(numpy=False), [sonde.Bin(2, 2, 3, 3, 0), sonde.Bin(3, 3, 1, 1, 0)])
        self.assertEqual(hist.mrc(numpy=False),
                         [sonde.MrcPoint(0, 1.0), sonde.MrcPoint(3, 5 / 8), sonde.MrcPoint(4, 4 / 8)])
        if numpy is None:  # the default is the list path too
            self.assertEqual(hist.bins(), hist.bins(numpy=False))
            self.assertEqual(hist.mrc(), hist.mrc(numpy=False))
            with self.assertRaises(ImportError):
                hist.bins(numpy=True)


def cli_json(inputs, *args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        subprocess.run([SONDE_CLI, "analyze", *inputs, *args, "--json", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def write_trace(path):
    """A trace with two memref shards, one event shard and its tables."""
    with sonde.TraceWriter(path, chunk_records=64) as w:
        for shard in range(2):
            w.write(shard, [sonde.Memref(0x1000 * (shard + 1) + 8 * (i % 50), 0x400 + i, 100 + 2 * i + shard, shard,
                                         sonde.MEMREF_WRITE if i % 3 == 0 else sonde.MEMREF_READ, 8)
                            for i in range(500)])
        w.add_module(0, path="/usr/bin/prog", name="prog", address=0x400000, size=0x1000)
        w.add_method(0, name="main", full_name="main", module=0, address=0x400100, source_file="prog.c",
                     source_line=3)
        w.add_method(1, name="area", class_name="geo::Circle", full_name="geo::Circle::area() const",
                     mangled_name="_ZNK3geo6Circle4areaEv", module=0, address=0x400200, size=32)
        name = w.add_string("worker")
        mark = w.add_string("checkpoint")
        w.add_thread(0, os_thread_id=4242, name="worker")
        events = [sonde.Event(10, 4242, 0, 0, sonde.EVENT_THREAD_START, 0),
                  sonde.Event(11, 0, name, 0, sonde.EVENT_THREAD_NAME, 0),
                  sonde.Event(12, 0, 0, 0, sonde.EVENT_METHOD_ENTER, 0)]
        for i in range(100):
            events.append(sonde.Event(20 + 2 * i, 0, 1, 0, sonde.EVENT_METHOD_ENTER, 0))
            events.append(sonde.Event(21 + 2 * i, 0, 1, 0, sonde.EVENT_METHOD_LEAVE, 0))
        events += [sonde.Event(300, 0, mark, 0, sonde.EVENT_MARK, 0),
                   sonde.Event(301, 0, 0, 0, sonde.EVENT_METHOD_LEAVE, 0),
                   sonde.Event(302, 4242, 0, 0, sonde.EVENT_THREAD_END, 0)]
        w.write_events(0, events)
    return events


class TraceTest(unittest.TestCase):
    def test_write_then_read_memrefs_events_and_tables(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.sonde")
            events = write_trace(path)
            with sonde.TraceReader(path) as r:
                self.assertEqual(r.format, "sonde")
                self.assertEqual(r.num_shards, 2)
                self.assertEqual(r.warnings, [])
                shard1 = list(r.memrefs(1))
                self.assertEqual(len(shard1), 500)
                self.assertEqual(shard1[3], sonde.Memref(0x2000 + 24, 0x403, 107, 1, sonde.MEMREF_WRITE, 8))
                serial = list(r.memrefs())
                self.assertEqual(len(serial), 1000)
                stamps = [m.timestamp for m in serial]
                self.assertEqual(stamps, sorted(stamps), "the serial view is interleaved by timestamp")
                info = r.event_info
                self.assertEqual((info.num_shards, info.num_events, info.num_methods, info.num_modules),
                                 (1, len(events), 2, 1))
                self.assertEqual((info.first_timestamp, info.last_timestamp), (10, 302))
                self.assertEqual(r.shard_events(0), len(events))
                self.assertEqual(list(r.events(0)), events)
                self.assertEqual(list(r.events(0)), events, "events() starts from the first event each time")
                methods = r.methods()
                self.assertEqual(methods[1].full_name, "geo::Circle::area() const")
                self.assertEqual((methods[1].class_name, methods[1].size), ("geo::Circle", 32))
                self.assertEqual((methods[0].source_file, methods[0].source_line), ("prog.c", 3))
                self.assertEqual(r.modules(), [sonde.Module(0, "/usr/bin/prog", "prog", 0x400000, 0x1000)])
                self.assertEqual(r.threads()[0], sonde.Thread(0, 4242, "worker"))
                self.assertEqual(r.string(events[-3].id), "checkpoint")
                with self.assertRaises(sonde.SondeError) as cm:
                    r.string(10 ** 6)
                self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_INVALID_ARGUMENT")

    def test_open_errors_carry_the_readers_message(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "junk.sonde")
            with open(path, "wb") as f:
                f.write(b"not a trace at all")
            with self.assertRaises(sonde.SondeError) as cm:
                sonde.TraceReader(path, format="sonde")
            self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_FORMAT")
            self.assertIn(path, cm.exception.detail)
            with self.assertRaises(sonde.SondeError) as cm:
                sonde.TraceReader(os.path.join(tmp, "missing"))
            self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_IO")

    def test_recorded_trace_through_the_example(self):
        calls = os.path.join(BUILD, "examples", "calls")
        if not os.access(calls, os.X_OK):
            self.skipTest("examples/calls is not built")
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "calls.trace")
            subprocess.run([SONDE_CLI, "record", "-o", trace, "--", calls, "8"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out = subprocess.run([sys.executable, os.path.join(SOURCE, "examples", "python", "sonde_trace.py"), trace],
                                 check=True, capture_output=True, text=True).stdout
            with sonde.TraceReader(trace) as r:
                enters = sum(1 for shard in range(r.event_info.num_shards) for e in r.events(shard)
                             if e.kind == sonde.EVENT_METHOD_ENTER)
                self.assertIn("main", [m.name for m in r.methods()])
        counts = {line.split("\t")[1]: int(line.split("\t")[0]) for line in out.splitlines()}
        self.assertEqual(counts["main"], 1)
        self.assertGreater(counts["fib"], 1)
        self.assertEqual(sum(counts.values()), enters)

    def test_drmemtrace_directory_reads(self):
        tracedir = os.path.join(DATA, "drmemtrace", "core_serial",
                                "drmemtrace.threadsig.x64.tracedir")
        with sonde.TraceReader(tracedir) as r:
            self.assertEqual((r.format, r.num_shards), ("drmemtrace", 9))
            fetched = sum(1 for shard in range(9) for m in r.memrefs(shard) if m.type == sonde.MEMREF_IFETCH)
        # Plain fetches only (the branch kinds are types of their own): DynamoRIO's threadsig
        # trace has 499,388 of its 650,576 fetched instructions without a branch kind.
        self.assertEqual(fetched, 499388)
        self.assertEqual(sonde.analyze(tracedir)["basic_counts"]["ifetches"], 650576)

    def test_lackey_reads(self):
        with sonde.TraceReader(LACKEY, "lackey") as r:
            self.assertEqual(r.format, "lackey")
            first = [m for _, m in zip(range(1000), r.memrefs(0))]
        self.assertEqual(len(first), 1000)
        self.assertTrue(all(m.type in (0, 1, 2, 3, 4) for m in first))


class AnalyzeTest(unittest.TestCase):
    def test_analyze_returns_what_the_cli_writes(self):
        self.assertTrue(os.access(SONDE_CLI, os.X_OK), SONDE_CLI)
        cases = [
            (dict(), []),
            (dict(tools=["basic_counts"], line_size=32, jobs=2), ["--tool", "basic_counts", "--line-size", "32",
                                                                   "-j", "2"]),
            (dict(cache="L1:32K:8:64,LL:256K:16:64"), ["--cache", "L1:32K:8:64,LL:256K:16:64"]),
            (dict(tools=["reuse_distance", "basic_counts"], format="lackey", jobs=1),
             ["--tool", "reuse_distance,basic_counts", "--format", "lackey", "-j", "1"]),
        ]
        for kwargs, args in cases:
            with self.subTest(args=args):
                got, want = sonde.analyze(LACKEY, **kwargs), cli_json([LACKEY], *args)
                # The two runs may start in different seconds.
                self.assertRegex(got["metadata"].pop("start_time"), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
                want["metadata"].pop("start_time")
                self.assertEqual(got, want)
                self.assertEqual(got["metadata"]["sonde_version"], sonde.__version__)
        with tempfile.TemporaryDirectory() as tmp:
            traced = os.path.join(tmp, "t.sonde")
            write_trace(traced)
            got = sonde.analyze([traced, LACKEY], tools=["cache_sim", "basic_counts"], cache="D1:4K:4:64")
            want = cli_json([traced, LACKEY], "--tool", "cache_sim,basic_counts", "--cache", "D1:4K:4:64")
            got["metadata"].pop("start_time")
            want["metadata"].pop("start_time")
            self.assertEqual(got, want)
            self.assertEqual([i["path"] for i in got["inputs"]], [traced, LACKEY])

    def test_analyze_errors(self):
        with self.assertRaises(sonde.SondeError) as cm:
            sonde.analyze(LACKEY, tools=["no_such_tool"])
        self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_NOT_SUPPORTED")
        with self.assertRaises(sonde.SondeError) as cm:
            sonde.analyze(LACKEY, format="raw64", cache="L1:3K:8:64")
        self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_INVALID_ARGUMENT")
        self.assertTrue(cm.exception.detail)
        with self.assertRaises(ValueError):
            sonde.analyze(LACKEY, tools=["basic_counts"], cache="L1:32K:8:64")
        with self.assertRaises(ValueError):
            sonde.analyze(LACKEY, tools=["basic_counts=line_size=8"])

    def test_progress(self):
        size = os.path.getsize(LACKEY)
        with sonde.Analyzer() as a:
            a.add_tool("basic_counts")
            a.add_input(LACKEY, "lackey")
            self.assertEqual(a.progress(), (0, size))
            a.run()
            self.assertEqual(a.progress(), (size, size))  # the zstd file, read once
        with sonde.TraceReader(LACKEY, "lackey") as r:
            self.assertEqual(r.progress, (0, size))
            first = next(iter(r.memrefs(0)))
            self.assertTrue(first.size > 0)
            done, total = r.progress
            self.assertTrue(0 < done <= total == size)

    def test_analyzer_memory_shards(self):
        refs = [sonde.Memref(64 * (i % 10), 0, 0, 0, sonde.MEMREF_READ, 8) for i in range(100)]
        with sonde.Analyzer() as a:
            a.add_tool("basic_counts", "line_size=64")
            self.assertEqual(a.add_memory_shard(refs), 0)
            self.assertEqual(a.add_memory_shard([m._replace(shard=1) for m in refs]), 1)
            a.set_parallel(False)
            a.run()
            self.assertEqual(a.run_info(), (False, 1))
            results = a.results()
            with self.assertRaises(sonde.SondeError) as cm:
                a.run()
            self.assertEqual(cm.exception.name, "SONDE_STATUS_ERROR_PHASE_FAILURE")
        self.assertIn("basic_counts", results)
        self.assertNotIn("inputs", results)
        counts = results["basic_counts"]
        self.assertEqual((counts["total"], counts["reads"], counts["distinct_lines"]), (200, 200, 10))
        self.assertEqual([sh["total"] for sh in counts["shards"]], [100, 100])


if __name__ == "__main__":
    unittest.main(verbosity=2)
