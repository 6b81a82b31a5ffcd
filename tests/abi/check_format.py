#!/usr/bin/env python3
"""Every C and C++ file under src/, tests/, bench/ and examples/ follows the checked-in
.clang-format (include/ is laid out by hand). Usage: check_format.py SOURCE_ROOT. Exits 77
(skipped) when clang-format is not installed."""
import os
import shutil
import subprocess
import sys

root = sys.argv[1]
tool = shutil.which("clang-format") or shutil.which("clang-format-14")
if tool is None:
    print("clang-format not found: skipped")
    sys.exit(77)
files = []
for top in ("src", "tests", "bench", "examples"):
    for dirpath, _, names in os.walk(os.path.join(root, top)):
        if "/corpus" in dirpath or "/data" in dirpath:
            continue
        files += [os.path.join(dirpath, n) for n in names if n.endswith((".c", ".cpp", ".h", ".hpp"))]
bad = []
for f in sorted(files):
    r = subprocess.run([tool, "--dry-run", "-Werror", "--style=file", f], capture_output=True, text=True)
    if r.returncode != 0:
        bad.append(os.path.relpath(f, root))
for f in bad:
    print("FAIL: not clang-formatted: %s (run: clang-format -i %s)" % (f, f))
print("%d files checked, %d not formatted" % (len(files), len(bad)))
sys.exit(1 if bad else 0)
