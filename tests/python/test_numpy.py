#!/usr/bin/env python3
"""The NumPy path of the Python package `sonde` (bindings/python/sonde/stackdist.py): with NumPy
importable, reuse histograms and miss-ratio curves come back as NumPy structured arrays that hold
exactly what the list path (numpy=False) holds, and batches take NumPy arrays of addresses and
access types. Exits 77 (skipped) when this Python cannot import NumPy; the list path without
NumPy is tested by test_sonde.py."""
import os
import random
import sys
import unittest

try:
    import numpy
except ImportError:
    print("NumPy cannot be imported by %s: skipped" % sys.executable)
    sys.exit(77)

SOURCE = os.environ["SONDE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(SOURCE, "bindings", "python"))
import sonde  # noqa: E402


def trace(seed, n, lines):
    rng = random.Random(seed)
    addrs = [rng.randrange(lines) if rng.random() < 0.9 else rng.randrange(1 << 40) for _ in range(n)]
    return addrs, [rng.random() < 0.3 for _ in addrs]


class NumpyResultsTest(unittest.TestCase):
    def setUp(self):
        addrs, writes = trace(5, 20000, 500)
        self.hist = sonde.StackDistance().batch(addrs, writes)

    def assert_same(self, array, items, fields):
        self.assertIsInstance(array, numpy.ndarray)
        self.assertEqual(array.ndim, 1)
        self.assertEqual(array.dtype.names, fields)
        self.assertEqual(len(array), len(items))
        for name in fields:
            self.assertEqual(array[name].tolist(), [getattr(x, name) for x in items], name)

    def test_bins_are_structured_arrays_with_the_values_of_the_lists(self):
        for binning, width in (("exact", 1), ("log2", 1), ("linear", 1), ("linear", 37)):
            items = self.hist.bins(binning, width, numpy=False)
            self.assertGreater(len(items), 1)
            self.assertTrue(all(isinstance(b, sonde.Bin) for b in items))
            for array in (self.hist.bins(binning, width), self.hist.bins(binning, width, numpy=True)):
                self.assert_same(array, items, sonde.Bin._fields)
                for name in sonde.Bin._fields:
                    self.assertEqual(array.dtype[name], numpy.dtype(numpy.uint64), name)
        self.assertEqual(int(self.hist.bins()["count"].sum()),
                         self.hist.summary()["accesses"] - self.hist.summary()["infinite"])

    def test_mrc_is_a_structured_array_with_the_values_of_the_list(self):
        items = self.hist.mrc(numpy=False)
        self.assertGreater(len(items), 2)
        for array in (self.hist.mrc(), self.hist.mrc(numpy=True)):
            self.assert_same(array, items, sonde.MrcPoint._fields)
            self.assertEqual(array.dtype["cache_lines"], numpy.dtype(numpy.uint64))
            self.assertEqual(array.dtype["miss_ratio"], numpy.dtype(numpy.float64))
        array = self.hist.mrc()
        self.assertEqual((int(array["cache_lines"][0]), float(array["miss_ratio"][0])), (0, 1.0))
        self.assertTrue(numpy.all(numpy.diff(array["miss_ratio"]) <= 0))
        for p in array[::7]:
            self.assertAlmostEqual(self.hist.miss_ratio(int(p["cache_lines"])), float(p["miss_ratio"]))

    def test_results_are_copies(self):
        array = self.hist.bins()
        array["count"][:] = 0
        self.assertEqual(self.hist.bins()["count"].tolist(), [b.count for b in self.hist.bins(numpy=False)])

    def test_empty_histogram_gives_empty_arrays_with_the_fields(self):
        hist = sonde.Histogram()
        self.assertEqual(hist.bins(numpy=False), [])
        self.assertEqual(hist.mrc(numpy=False), [])
        bins, mrc = hist.bins(), hist.mrc()
        self.assertEqual((len(bins), bins.dtype.names), (0, sonde.Bin._fields))
        self.assertEqual((len(mrc), mrc.dtype.names), (0, sonde.MrcPoint._fields))


class NumpyInputTest(unittest.TestCase):
    def test_arrays_of_addresses_and_access_types_equal_lists(self):
        addrs, writes = trace(9, 8000, 300)
        want = sonde.StackDistance().batch(addrs, writes)
        for a in (numpy.array(addrs, dtype=numpy.uint64), numpy.array(addrs, dtype=numpy.int64),
                  numpy.array(addrs, dtype=numpy.uint64)[::-1][::-1].copy(order="C")):
            for w in (numpy.array(writes, dtype=bool), numpy.array(writes, dtype=numpy.uint8) * 5, writes):
                got = sonde.StackDistance().batch(a, w)
                self.assertEqual(got.summary(), want.summary())
                self.assertEqual(got.bins(numpy=False), want.bins(numpy=False))
                self.assertEqual(got.mrc(numpy=False), want.mrc(numpy=False))

    def test_strided_array_is_read_in_order(self):
        addrs, _ = trace(13, 4000, 100)
        wide = numpy.zeros(2 * len(addrs), dtype=numpy.uint64)
        wide[::2] = addrs
        got = sonde.StackDistance().batch(wide[::2])
        want = sonde.StackDistance().batch(addrs)
        self.assertEqual(got.bins(numpy=False), want.bins(numpy=False))

    def test_arrays_that_would_be_misread_are_refused(self):
        sd = sonde.StackDistance()
        with self.assertRaises(ValueError):
            sd.batch(numpy.zeros((4, 2), dtype=numpy.uint64))
        with self.assertRaises(TypeError):
            sd.batch(numpy.array([1.5, 2.0]))
        with self.assertRaises(TypeError):
            sd.batch(numpy.array([1, 2], dtype=numpy.uint64), numpy.array([0.0, 1.0]))
        with self.assertRaises(ValueError):
            sd.batch(numpy.array([1, 2], dtype=numpy.uint64), numpy.array([True]))
        self.assertEqual(sd.size, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
