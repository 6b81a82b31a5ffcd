"""Reads a call-graph trace (`sonde record`) with the Python package sonde (docs/python.md).

    python3 sonde_trace.py sonde.trace      # calls per function, most called first

Uses an installed package sonde, else the one of this source tree (bindings/python); the
library is found as the package finds it (SONDE_LIBRARY overrides).
"""
import os
import sys

try:
    import sonde
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
    import sonde


def qualified_name(method):
    """class::name of a method, or its address when the trace does not name it."""
    if not method.name:
        return "0x%x" % method.address
    return method.class_name + "::" + method.name if method.class_name else method.name


def call_counts(trace):
    """Calls per function name (class::name), every thread together."""
    names = [qualified_name(m) for m in trace.methods()]
    counts = {}
    for shard in range(trace.event_info.num_shards):
        for event in trace.events(shard):
            if event.kind == sonde.EVENT_METHOD_ENTER:
                name = names[event.id] if event.id < len(names) else "0x%x" % event.id
                counts[name] = counts.get(name, 0) + 1
    return counts


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: sonde_trace.py TRACE")
    with sonde.TraceReader(sys.argv[1], "sonde") as trace:
        for warning in trace.warnings:
            print(warning, file=sys.stderr)
        for name, calls in sorted(call_counts(trace).items(), key=lambda kv: (-kv[1], kv[0])):
            print("%d\t%s" % (calls, name))
