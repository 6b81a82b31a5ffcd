"""Exact LRU stack distances (sonde/stackdist.h, gem5 ``StackDistCalc`` semantics), reuse
histograms and miss-ratio curves.

:class:`StackDistance` answers one access at a time (:meth:`StackDistance.calc_and_update`,
:meth:`StackDistance.calc`) or a whole batch into a :class:`Histogram`
(:meth:`StackDistance.batch`). Histogram bins and miss-ratio curves come back as Python lists
of named tuples, or as NumPy structured arrays with the same field names when NumPy is
importable (``numpy=None``, the default) or asked for (``numpy=True``).
"""
import collections
import ctypes

from . import _lib
from ._lib import check, lib

try:
    import numpy as _np
except ImportError:  # NumPy is optional
    _np = None

INFINITY = 0xFFFFFFFFFFFFFFFF
"""The distance of a line never seen (or removed): a cold access (``SONDE_STACKDIST_INFINITY``)."""

_SAMPLING = {None: 0, "none": 0, "fixed_rate": 1, "fixed_size": 2}
_BINNING = {"exact": 0, "linear": 1, "log2": 2}

Bin = collections.namedtuple("Bin", "first last count reads writes")
Bin.__doc__ = "One histogram bin: distances ``first..last`` inclusive, with its counts."
MrcPoint = collections.namedtuple("MrcPoint", "cache_lines miss_ratio")
MrcPoint.__doc__ = "One point of a miss-ratio curve: a fully associative LRU cache of ``cache_lines`` lines."


def _use_numpy(numpy):
    if numpy is None:
        return _np is not None
    if numpy and _np is None:
        raise ImportError("numpy=True, but NumPy cannot be imported")
    return bool(numpy)


def _check_ndarray(values, what, kinds):
    # A NumPy array is read as is, so refuse what would be misread: more than one dimension, or
    # a type whose values are not integers (a float address would be truncated in the cast).
    if values.ndim != 1:
        raise ValueError("%s must be one-dimensional, not of shape %s" % (what, values.shape))
    if values.dtype.kind not in kinds:
        raise TypeError("%s must hold integers, not %s" % (what, values.dtype))


def _as_u64_array(values):
    """(pointer, count, keepalive) of a contiguous uint64 array for ``values``: a NumPy array of
    unsigned 64-bit integers is used in place, other integer arrays are converted."""
    if _np is not None and isinstance(values, _np.ndarray):
        _check_ndarray(values, "addrs", "iu")
        arr = _np.ascontiguousarray(values, dtype=_np.uint64)
        return arr.ctypes.data, len(arr), arr
    arr = (ctypes.c_uint64 * len(values))(*values)
    return ctypes.addressof(arr), len(values), arr


def _as_u8_array(values, n):
    if values is None:
        return None, None
    if len(values) != n:
        raise ValueError("is_write has %d entries for %d addresses" % (len(values), n))
    if _np is not None and isinstance(values, _np.ndarray):
        _check_ndarray(values, "is_write", "biu")
        arr = _np.ascontiguousarray(values != 0, dtype=_np.uint8)
        return arr.ctypes.data, arr
    arr = (ctypes.c_uint8 * n)(*[1 if v else 0 for v in values])
    return ctypes.addressof(arr), arr


def _to_numpy(ctypes_array, count):
    # A structured array with the C struct's field names, copied out of the ctypes array.
    return _np.ctypeslib.as_array(ctypes_array)[:count].copy()


class Histogram:
    """A reuse histogram (``sonde_histogram_t``), filled by :meth:`StackDistance.batch`."""

    def __init__(self):
        """Creates an empty histogram."""
        self._h = ctypes.c_void_p()
        check(lib.sonde_histogram_create(ctypes.byref(self._h)), "sonde_histogram_create")

    def reset(self):
        """Empties the histogram."""
        check(lib.sonde_histogram_reset(self._h), "sonde_histogram_reset")

    def summary(self):
        """The totals as a dict: ``accesses``, ``reads``, ``writes``, ``infinite``,
        ``infinite_reads``, ``infinite_writes``, ``sampled``, ``sample_rate``, ``max_distance``
        and ``sampling`` (true when the counts are SHARDS estimates)."""
        s = _lib.sized(_lib.HistogramSummary)
        check(lib.sonde_histogram_get_summary(self._h, ctypes.byref(s)), "sonde_histogram_get_summary")
        out = {name: getattr(s, name) for name, _ in _lib.HistogramSummary._fields_ if name != "struct_size"}
        out["sampling"] = bool(s.sampling)
        return out

    def bins(self, binning="exact", width=1, numpy=None):
        """The bins: ``binning`` is ``"exact"`` (one bin per distance with a count),
        ``"linear"`` (bins of ``width`` distances) or ``"log2"`` ([0,0], [1,1], [2,3], [4,7],
        ...). A list of :class:`Bin`, or a NumPy structured array with fields ``first``,
        ``last``, ``count``, ``reads``, ``writes``. Cold accesses are not in the bins: see
        :meth:`summary`'s ``infinite``."""
        if binning not in _BINNING:
            raise ValueError("binning must be one of %s" % ", ".join(_BINNING))
        need = ctypes.c_uint32()
        st = lib.sonde_histogram_get_bins(self._h, _BINNING[binning], width, None, 0, ctypes.byref(need))
        if st not in (0, 15):
            check(st, "sonde_histogram_get_bins")
        arr = (_lib.HistogramBin * max(need.value, 1))()
        check(lib.sonde_histogram_get_bins(self._h, _BINNING[binning], width, arr, need.value, ctypes.byref(need)),
              "sonde_histogram_get_bins")
        if _use_numpy(numpy):
            return _to_numpy(arr, need.value)
        return [Bin(b.first, b.last, b.count, b.reads, b.writes) for b in arr[:need.value]]

    def mrc(self, numpy=None):
        """The miss-ratio curve (Mattson): point (0, 1.0), then (d + 1, miss ratio) for every
        distance d with a count. A list of :class:`MrcPoint`, or a NumPy structured array with
        fields ``cache_lines`` and ``miss_ratio``."""
        need = ctypes.c_uint32()
        st = lib.sonde_histogram_get_mrc(self._h, None, 0, ctypes.byref(need))
        if st not in (0, 15):
            check(st, "sonde_histogram_get_mrc")
        arr = (_lib.MrcPoint * max(need.value, 1))()
        check(lib.sonde_histogram_get_mrc(self._h, arr, need.value, ctypes.byref(need)), "sonde_histogram_get_mrc")
        if _use_numpy(numpy):
            return _to_numpy(arr, need.value)
        return [MrcPoint(p.cache_lines, p.miss_ratio) for p in arr[:need.value]]

    def miss_ratio(self, cache_lines):
        """The LRU miss ratio of a fully associative cache of ``cache_lines`` lines."""
        r = ctypes.c_double()
        check(lib.sonde_histogram_miss_ratio(self._h, cache_lines, ctypes.byref(r)), "sonde_histogram_miss_ratio")
        return r.value

    def destroy(self):
        """Frees the histogram."""
        if self._h:
            lib.sonde_histogram_destroy(self._h)
            self._h = None

    def __del__(self):
        self.destroy()


class StackDistance:
    """A stack-distance calculator (``sonde_stackdist_create``).

    ``verify`` checks every answer against a naive stack (slow; a mismatch raises
    :class:`sonde.SondeError` VERIFY_FAILED). ``sampling`` is ``None`` (exact),
    ``"fixed_rate"`` (SHARDS with ``sample_rate`` in (0, 1]) or ``"fixed_size"`` (SHARDS keeping
    at most ``sample_size`` lines), with ``seed`` for the hash; sampling applies to batches
    only. ``workers`` > 1 splits each exact batch over that many threads.
    """

    def __init__(self, verify=False, sampling=None, sample_rate=0.0, sample_size=0, seed=0, workers=0,
                 initial_capacity=0):
        """Creates the calculator."""
        if sampling not in _SAMPLING:
            raise ValueError("sampling must be None, 'fixed_rate' or 'fixed_size'")
        o = _lib.sized(_lib.StackdistOptions)
        o.flags = 1 if verify else 0
        o.initial_capacity = initial_capacity
        o.sampling = _SAMPLING[sampling]
        o.workers = workers
        o.sample_rate = sample_rate
        o.sample_size = sample_size
        o.seed = seed
        self._sd = ctypes.c_void_p()
        check(lib.sonde_stackdist_create(ctypes.byref(o), ctypes.byref(self._sd)), "sonde_stackdist_create")

    def calc_and_update(self, addr, add_new_node=True):
        """gem5 ``calcStackDistAndUpdate``: ``(distance, marked)`` of ``addr`` (distance
        :data:`INFINITY` for a line not in the stack); with ``add_new_node`` the line becomes the
        most recent, unmarked, without it the line is removed from the stack."""
        d = ctypes.c_uint64()
        m = ctypes.c_bool()
        check(lib.sonde_stackdist_calc_and_update(self._sd, addr, add_new_node, ctypes.byref(d), ctypes.byref(m)),
              "sonde_stackdist_calc_and_update")
        return d.value, m.value

    def calc(self, addr, mark=False):
        """gem5 ``calcStackDist``: ``(distance, previous mark)`` of ``addr`` without changing the
        stack; sets the line's mark to ``mark``."""
        d = ctypes.c_uint64()
        m = ctypes.c_bool()
        check(lib.sonde_stackdist_calc(self._sd, addr, mark, ctypes.byref(d), ctypes.byref(m)), "sonde_stackdist_calc")
        return d.value, m.value

    def batch(self, addrs, is_write=None, histogram=None):
        """Updates the stack with every line address of ``addrs`` in order and adds each
        distance to ``histogram`` (a new :class:`Histogram` when None), which it returns.
        ``addrs`` is a sequence of ints or a one-dimensional NumPy integer array (uint64 is read
        in place); ``is_write`` an optional sequence or NumPy bool or integer array of the same
        length (true or non-zero for a write). Other NumPy arrays raise ``ValueError`` (more than
        one dimension) or ``TypeError`` (not integers)."""
        if histogram is None:
            histogram = Histogram()
        ptr, n, keep = _as_u64_array(addrs)
        wptr, wkeep = _as_u8_array(is_write, n)
        check(lib.sonde_stackdist_batch(self._sd, ptr if n else None, wptr, n, histogram._h), "sonde_stackdist_batch")
        del keep, wkeep
        return histogram

    @property
    def size(self):
        """Lines currently in the stack (sampled lines under SHARDS)."""
        n = ctypes.c_uint64()
        check(lib.sonde_stackdist_size(self._sd, ctypes.byref(n)), "sonde_stackdist_size")
        return n.value

    def destroy(self):
        """Frees the calculator (and joins its worker threads)."""
        if self._sd:
            lib.sonde_stackdist_destroy(self._sd)
            self._sd = None

    def __del__(self):
        self.destroy()
