#!/usr/bin/env python3
"""Every public header compiles alone, as the first include of a translation unit, as C99, C11,
C++11 and C++17 with warnings as errors (gcc and, when present, clang); C++ helper headers
(.hpp) as C++11 and C++17 only. C headers include only <stdint.h>, <stddef.h>, <stdbool.h> and
other sonde/ headers, and sonde/sonde.h includes every other C header. Usage: check_headers.py
INCLUDE_DIR"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

inc = sys.argv[1]
flags = ["-Wall", "-Wextra", "-Wpedantic", "-Werror", "-fsyntax-only", "-I", inc]
c_compilers = [c for c in ("gcc", "clang") if shutil.which(c)]
cxx_compilers = [c for c in ("g++", "clang++") if shutil.which(c)]
allowed = {"stdint.h", "stddef.h", "stdbool.h"}
failures = checks = 0
umbrella = open(os.path.join(inc, "sonde", "sonde.h")).read()
for header in sorted(glob.glob(os.path.join(inc, "sonde", "*.h"))):
    rel = "sonde/" + os.path.basename(header)
    if rel != "sonde/sonde.h" and not re.search(r'#\s*include\s*<%s>' % re.escape(rel), umbrella):
        print("FAIL: sonde/sonde.h does not include <%s>" % rel)
        failures += 1
with tempfile.TemporaryDirectory() as tmp:
    for header in sorted(glob.glob(os.path.join(inc, "sonde", "*.h*"))):
        rel = "sonde/" + os.path.basename(header)
        is_hpp = header.endswith(".hpp")
        if not is_hpp:
            for inc_name in re.findall(r'#\s*include\s*[<"]([^>"]+)[>"]', open(header).read()):
                if inc_name not in allowed and not inc_name.startswith("sonde/"):
                    print("FAIL: %s includes <%s>" % (rel, inc_name))
                    failures += 1
        variants = []
        if not is_hpp:
            for cc in c_compilers:
                variants += [(cc, "c", std) for std in ("c99", "c11")]
        for cxx in cxx_compilers:
            variants += [(cxx, "c++", std) for std in ("c++11", "c++17")]
        for compiler, lang, std in variants:
            src = os.path.join(tmp, "tu." + ("c" if lang == "c" else "cpp"))
            with open(src, "w") as f:
                f.write('#include <%s>\n#include <%s>\nint sonde_header_check_%d;\n' % (rel, rel, checks))
            r = subprocess.run([compiler, "-std=" + std, "-x", lang] + flags + [src], capture_output=True, text=True)
            checks += 1
            if r.returncode != 0:
                failures += 1
                print("FAIL: %s with %s -std=%s\n%s" % (rel, compiler, std, r.stderr))
print("%d compilations checked" % checks)
print("%d passed, %d failed" % (checks - failures if checks >= failures else 0, failures))
sys.exit(1 if failures else 0)
