"""The analyzer (sonde/analysis.h): analysis tools run over memory-reference traces, serially
(one stream interleaved by timestamp) or in parallel (whole shards per worker), with results
as dicts parsed from the analyzer's JSON.

:func:`analyze` does what ``sonde analyze --json`` does and returns the dict it writes.
"""
import ctypes
import json
import os
import time

from . import _lib
from .trace import FORMATS, _memref_array
from ._lib import check, lib


class Analyzer:
    """An analyzer (``sonde_analyzer_create``): add tools and inputs, :meth:`run` once, then
    read :meth:`results`. Parallel mode with one worker per core by default. Usable as a context
    manager (leaving it destroys the analyzer)."""

    def __init__(self):
        """Creates an analyzer with no tools and no inputs."""
        self._a = ctypes.c_void_p()
        check(lib.sonde_analyzer_create(ctypes.byref(self._a)), "sonde_analyzer_create")
        self._shards = []  # memory shards are borrowed until the run

    def _check(self, status, call):
        return check(status, call, lambda: _lib.text(lib.sonde_analyzer_error(self._a)))

    def add_tool(self, name, options=None):
        """Adds a built-in tool (``"basic_counts"``, ``"cache_sim"``, ``"reuse_distance"``) with
        its options string (e.g. ``"line_size=32"``; see sonde/analysis.h and docs/analysis.md)."""
        self._check(lib.sonde_analyzer_add_tool(self._a, name.encode(), None if options is None else options.encode()),
                    "sonde_analyzer_add_tool")

    def load_tool(self, path, options=None):
        """Loads an external tool from the shared object ``path`` (it exports
        ``sonde_tool_create``)."""
        self._check(lib.sonde_analyzer_load_tool(self._a, os.fsencode(path),
                                                 None if options is None else options.encode()),
                    "sonde_analyzer_load_tool")

    def add_input(self, path, format="auto"):
        """Opens an input trace; ``format`` is ``"auto"``, ``"sonde"``, ``"lackey"``, ``"raw64"`` or
        ``"drmemtrace"`` (a drmemtrace directory or thread file)."""
        if format not in FORMATS:
            raise ValueError("format must be one of %s" % ", ".join(FORMATS))
        self._check(lib.sonde_analyzer_add_input(self._a, os.fsencode(path), FORMATS[format]),
                    "sonde_analyzer_add_input")

    def add_memory_shard(self, memrefs):
        """Adds one shard of :class:`sonde.Memref` (or 6-tuples in its field order) held in
        memory; returns its shard number. Each record's ``shard`` field should hold that number."""
        arr = _memref_array(memrefs)
        shard = ctypes.c_uint32()
        self._check(lib.sonde_analyzer_add_memory_shard(self._a, arr, len(arr) if len(memrefs) else 0,
                                                        ctypes.byref(shard)), "sonde_analyzer_add_memory_shard")
        self._shards.append(arr)
        return shard.value

    def set_parallel(self, parallel):
        """Parallel (True, the default) or serial mode."""
        self._check(lib.sonde_analyzer_set_parallel(self._a, bool(parallel)), "sonde_analyzer_set_parallel")

    def set_workers(self, workers):
        """Parallel workers (0: one per core)."""
        self._check(lib.sonde_analyzer_set_workers(self._a, workers), "sonde_analyzer_set_workers")

    def run(self):
        """Runs every tool over every input (once)."""
        self._check(lib.sonde_analyzer_run(self._a), "sonde_analyzer_run")

    def run_info(self):
        """``(parallel, workers)`` of the last run."""
        parallel = ctypes.c_bool()
        workers = ctypes.c_uint32()
        self._check(lib.sonde_analyzer_run_info(self._a, ctypes.byref(parallel), ctypes.byref(workers)),
                    "sonde_analyzer_run_info")
        return parallel.value, workers.value

    def progress(self):
        """``(done, total)``: bytes of the file inputs read so far and in all, as stored
        (``sonde_analyzer_progress``); ``total`` is 0 when an input is a pipe. Any thread may
        ask while :meth:`run` runs on another."""
        done, total = ctypes.c_uint64(), ctypes.c_uint64()
        self._check(lib.sonde_analyzer_progress(self._a, ctypes.byref(done), ctypes.byref(total)),
                    "sonde_analyzer_progress")
        return done.value, total.value

    def input_warnings(self, index):
        """``(complete, warnings)`` of input ``index``: whether it was read as written, and its
        reader's warnings as a list of strings."""
        complete = ctypes.c_bool()
        text = ctypes.c_char_p()
        self._check(lib.sonde_analyzer_input_warnings(self._a, index, ctypes.byref(complete), ctypes.byref(text)),
                    "sonde_analyzer_input_warnings")
        return complete.value, [w for w in _lib.text(text.value).split("\n") if w]

    def results_json(self):
        """The results of every tool as the analyzer's JSON text."""
        need = ctypes.c_size_t()
        st = lib.sonde_analyzer_results_json(self._a, None, 0, ctypes.byref(need))
        if st not in (0, 15):
            self._check(st, "sonde_analyzer_results_json")
        buf = ctypes.create_string_buffer(need.value)
        self._check(lib.sonde_analyzer_results_json(self._a, buf, need.value, ctypes.byref(need)),
                    "sonde_analyzer_results_json")
        return buf.value.decode("utf-8")

    def results(self):
        """The results as a dict: one key per tool name, plus ``"inputs"`` and ``"warnings"``
        when file inputs were added."""
        return json.loads(self.results_json())

    @property
    def error(self):
        """The message of the last failed call, or ``""``."""
        return _lib.text(lib.sonde_analyzer_error(self._a))

    def destroy(self):
        """Destroys the analyzer and its tools."""
        if self._a:
            lib.sonde_analyzer_destroy(self._a)
            self._a = None
            self._shards = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    def __del__(self):
        self.destroy()


def _tool_options(tool, cache, line_size, jobs):
    # The options `sonde analyze` gives each built-in tool (src/cli/analyze.cpp).
    if tool == "cache_sim":
        return cache or ""
    if tool == "basic_counts":
        return "" if line_size is None else "line_size=%d" % line_size
    if tool == "reuse_distance":
        options = "line_size=%d" % (line_size or 64)
        if jobs is not None and jobs > 1:
            options += ",jobs=%d" % jobs
        return options
    return ""


def _split_tool(tool):
    # "PATH=OPTIONS" for a tool shared object (a path, with a '/'), as ``--tool`` takes it.
    path, eq, options = tool.partition("=")
    if eq and "/" not in path:
        raise ValueError("analyze: only a tool shared object (a path) takes options after '=': %r" % tool)
    return (path, options) if eq else (tool, "")


def analyze(inputs, tools=None, format="auto", cache=None, line_size=None, jobs=None):
    """Runs analysis tools over trace files and returns the dict that
    ``sonde analyze INPUT... --json FILE`` writes for the same arguments, its ``"metadata"``
    block included (``start_time`` is when this call started, to the second).

    ``inputs`` is a path or a list of paths; ``tools`` a list of built-in tool names
    (``"basic_counts"``, ``"cache_sim"``, ``"reuse_distance"``) or paths of tool shared objects,
    each with its options after ``=`` (``"./mytool.so=k=1,j=2"``) (default ``["basic_counts"]``,
    or ``["cache_sim"]`` when ``cache`` is given); ``format`` as ``--format``; ``cache`` the
    cache_sim levels as ``--cache`` (``"L1:32K:8:64,LL:1M:16:64"``); ``line_size`` as
    ``--line-size`` (basic_counts and reuse_distance; None: their default, 64); ``jobs`` as
    ``--jobs`` (parallel workers; None: one per core). Raises :class:`sonde.SondeError` when a
    tool, an input or the run fails, with the analyzer's message in ``detail``.
    """
    from . import __version__  # the package's, set once it has loaded this module
    start_time = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    inputs = [os.fsdecode(p) for p in inputs]
    if not inputs:
        raise ValueError("analyze: no input")
    if isinstance(tools, str):
        tools = [t for t in tools.split(",") if t]
    if not tools:
        tools = ["cache_sim"] if cache else ["basic_counts"]
    split = [_split_tool(t) for t in tools]
    names = [name for name, _ in split]
    if len(set(names)) != len(names):
        raise ValueError("analyze: a tool is given twice")
    if cache and "cache_sim" not in names:
        raise ValueError("analyze: only cache_sim reads cache, and it is not among the tools")
    if jobs is not None and not 1 <= jobs <= 1024:
        raise ValueError("analyze: jobs must be 1..1024")
    given = []
    with Analyzer() as a:
        for name, options in split:
            if "/" in name:
                a.load_tool(name, options)
            else:
                options = _tool_options(name, cache, line_size, jobs)
                a.add_tool(name, options)
            given.append({"name": name, "options": options})
        for path in inputs:
            a.add_input("/dev/stdin" if path == "-" else path, format)
        a.set_parallel(True)
        a.set_workers(jobs or 0)
        a.run()
        results = a.results()
    metadata = {
        "sonde_version": __version__,
        "command": "analyze",
        "inputs": inputs,
        "options": {"format": format, "tools": given, "serial": False, "jobs": jobs or 0,
                    "strict": False},
        "start_time": start_time,
    }
    return {"metadata": metadata, **results}
