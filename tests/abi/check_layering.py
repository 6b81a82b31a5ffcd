#!/usr/bin/env python3
"""The folders of src/ use each other only along the edges of docs/architecture.md: every
`#include "<folder>/..."` in src/<x>/ must name x itself or a folder x may use. Public headers
(<sonde/...>) are allowed everywhere. Usage: check_layering.py SOURCE_ROOT"""
import os
import re
import sys

ALLOWED = {
    "core": set(),
    "buffer": {"core"},
    "profile": {"core"},
    "stackdist": {"core"},
    "trace": {"core"},
    "analysis": {"core", "trace", "stackdist"},
    "client": {"core", "symbols"},
    "record": {"core", "client", "trace", "apitrace"},
    "apitrace": {"core"},
    "instrument": {"memtrace"},
    "memtrace": set(),
    "symbols": set(),
    "report": set(),
    "mpi": set(),
    "cli": {"report", "mpi", "symbols"},
}

root = sys.argv[1]
src = os.path.join(root, "src")
include = re.compile(r'^\s*#\s*include\s*"([a-z_]+)/')
failures = 0
folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
for folder in folders:
    if folder not in ALLOWED:
        print("FAIL: src/%s/ is not in the layering table (docs/architecture.md, this script)" % folder)
        failures += 1
        continue
    for dirpath, _, names in os.walk(os.path.join(src, folder)):
        for name in sorted(names):
            if not name.endswith((".c", ".cpp", ".h", ".hpp")):
                continue
            path = os.path.join(dirpath, name)
            for lineno, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = include.match(line)
                if not m:
                    continue
                used = m.group(1)
                if used != folder and used not in ALLOWED[folder]:
                    print("FAIL: %s:%d: src/%s/ may not include %s/ (allowed: %s)" % (
                        os.path.relpath(path, root), lineno, folder, used,
                        ", ".join(sorted(ALLOWED[folder])) or "nothing"))
                    failures += 1
print("%d folders checked, %d forbidden includes" % (len(folders), failures))
sys.exit(1 if failures else 0)
