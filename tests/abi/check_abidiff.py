#!/usr/bin/env python3
"""abidiff of the built library against the baseline abi/libsonde.abi: fails on any removed
or changed function, variable or type; additions pass. Types defined outside the public headers
(the layout behind opaque handles) are suppressed by abi/suppressions.ini.
Usage: check_abidiff.py BASELINE LIB HEADERS"""
import os
import re
import subprocess
import sys
import tempfile

baseline, lib, headers = sys.argv[1:4]
suppressions = os.path.join(os.path.dirname(os.path.abspath(baseline)), "suppressions.ini")
if not os.path.exists(baseline):
    print("FAIL: %s is missing; run scripts/update-abi.sh" % baseline)
    sys.exit(1)
with tempfile.TemporaryDirectory() as tmp:
    current = os.path.join(tmp, "current.abi")
    subprocess.run(["abidw", "--no-corpus-path", "--headers-dir", headers, "--out-file", current, lib], check=True)
    r = subprocess.run(["abidiff", "--no-show-locs", "--suppressions", suppressions, baseline, current], capture_output=True, text=True)
report = r.stdout + r.stderr
print(report)
bad = []
if r.returncode & 1:
    bad.append("abidiff failed to run")
if r.returncode & 8:
    bad.append("incompatible change")
for what in ("Functions", "Variables"):
    m = re.search(r"%s changes summary: (\d+) Removed(?: \([^)]*\))?, (\d+) Changed" % what, report)
    if m and (int(m.group(1)) or int(m.group(2))):
        bad.append("%s removed or changed" % what.lower())
m = re.search(r"Unreachable types summary: (\d+) removed(?: \([^)]*\))?, (\d+) changed", report)
if m and (int(m.group(1)) or int(m.group(2))):
    bad.append("types removed or changed")
for b in bad:
    print("FAIL:", b)
print("%d passed, %d failed" % (0 if bad else 1, 1 if bad else 0))
sys.exit(1 if bad else 0)
