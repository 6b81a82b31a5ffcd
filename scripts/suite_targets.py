#!/usr/bin/env python3
"""Prints the ninja targets that the tests of one suite need (their executables and the targets
they depend on), so that a build directory used for one suite only builds those:

    ninja -C build-tsan $(python3 scripts/suite_targets.py build-tsan stress)

Usage: suite_targets.py BUILD_DIR SUITE. Prints nothing when no test is in the suite."""
import json
import os
import subprocess
import sys


def introspect(build, what):
    out = subprocess.run(["meson", "introspect", build, what], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build, suite = os.path.abspath(sys.argv[1]), sys.argv[2]
    files = {}
    for t in introspect(build, "--targets"):
        files[t["id"]] = t["filename"]
    wanted = set()
    for test in introspect(build, "--tests"):
        if not any(s == suite or s.endswith(":" + suite) for s in test["suite"]):
            continue
        paths = [test["cmd"][0]] if test["cmd"] else []
        for dep in test.get("depends", []):
            paths += files.get(dep, [])
        for p in paths:
            if p.startswith(build + os.sep):
                wanted.add(os.path.relpath(p, build))
    print(" ".join(sorted(wanted)))


if __name__ == "__main__":
    main()
