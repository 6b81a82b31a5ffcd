#!/usr/bin/env python3
"""Compiles and runs every complete C example in docs/*.md.

A fenced block tagged `c` that defines `int main(` is a complete program: it is built against
the in-tree headers and library with -Werror and run (it must exit 0 within 60 s). Blocks
without main are fragments and are not checked. Usage: check_doc_examples.py SRC BUILD CC."""
import glob
import os
import re
import subprocess
import sys
import tempfile

src, build, cc = sys.argv[1], sys.argv[2], sys.argv[3]
lib_dir = build
passed = failed = 0
with tempfile.TemporaryDirectory() as tmp:
    for md in sorted(glob.glob(os.path.join(src, "docs", "*.md"))):
        text = open(md, encoding="utf-8").read()
        for i, block in enumerate(re.findall(r"```c\n(.*?)```", text, re.S)):
            if "int main(" not in block:
                continue
            name = "%s_%d" % (os.path.basename(md)[:-3].replace("-", "_"), i)
            c_file = os.path.join(tmp, name + ".c")
            exe = os.path.join(tmp, name)
            with open(c_file, "w") as f:
                f.write(block)
            cmd = [cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(src, "include"),
                   c_file, "-L", lib_dir, "-lsonde", "-pthread", "-o", exe]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL: %s block %d does not compile:\n%s" % (md, i, r.stderr))
                failed += 1
                continue
            env = dict(os.environ, LD_LIBRARY_PATH=lib_dir)
            try:
                r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60, cwd=tmp)
                ok = r.returncode == 0
            except subprocess.TimeoutExpired:
                ok, r = False, None
            if ok:
                print("ok: %s block %d" % (os.path.basename(md), i))
                passed += 1
            else:
                print("FAIL: %s block %d exits %s\n%s" % (md, i, r.returncode if r else "timeout",
                                                            (r.stdout + r.stderr) if r else ""))
                failed += 1
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
