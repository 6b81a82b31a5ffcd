#!/usr/bin/env python3
"""The exported dynamic symbols of libsonde equal the names in abi/libsonde.map, every one is
versioned in a SONDE_1.x node, and the SONAME is libsonde.so.1. Usage: check_symbols.py MAP LIB"""
import re
import subprocess
import sys

map_path, lib = sys.argv[1], sys.argv[2]
text = re.sub(r"/\*.*?\*/", "", open(map_path).read(), flags=re.S)
text = re.sub(r"#[^\n]*", "", text)
mapped = {}
for node, body in re.findall(r"(SONDE_\d+\.\d+)\s*\{(.*?)\}", text, re.S):
    glob = body.split("local:")[0].replace("global:", "")
    for name in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*;", glob):
        if name in mapped:
            print("FAIL: %s listed twice (%s, %s)" % (name, mapped[name], node))
            sys.exit(1)
        mapped[name] = node
out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
exported = {}
for line in out.splitlines():
    parts = line.split()
    if len(parts) < 3:
        continue
    sym = parts[2]
    if parts[1] == "A":  # version node symbols
        continue
    name, _, version = sym.partition("@")
    exported[name] = version.lstrip("@")
errors = []
for name in sorted(set(mapped) - set(exported)):
    errors.append("in the map but not exported: " + name)
for name in sorted(set(exported) - set(mapped)):
    errors.append("exported but not in the map: " + name)
for name, ver in sorted(exported.items()):
    if name in mapped and ver != mapped[name]:
        errors.append("%s exported as @%s, map says %s" % (name, ver, mapped[name]))
dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
if "[libsonde.so.1]" not in dyn:
    errors.append("SONAME is not libsonde.so.1")
for e in errors:
    print("FAIL:", e)
print("%d symbols checked" % len(exported))
print("%d passed, %d failed" % (0 if errors else 1, 1 if errors else 0))
sys.exit(1 if errors else 0)
