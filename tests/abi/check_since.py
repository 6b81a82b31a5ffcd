#!/usr/bin/env python3
"""Every public declaration of include/sonde/ says since which release it exists (`@since 1.N`),
and what can be checked mechanically agrees with it. Usage: check_since.py INCLUDE_DIR MAP CC...

- Macros, typedefs, structs, enums, exported and static inline functions, and C++ classes carry
  their own @since. A struct field, an enum value or a class member inherits its parent's unless
  it was added later, and then carries its own, never older than its parent's.
- Every @since names a release of this major version no newer than SONDE_VERSION_MINOR.
- An exported function's @since is the version node that lists it in abi/libsonde.map; every
  exported declaration is in the map, every name of the map is declared, and no static inline
  helper is in the map (it is compiled into the caller, not exported).
- A growable struct (one that starts with `uint32_t struct_size`) has the pinned size macros
  SONDE_<NAME>_SIZE_<M>_<N> of abi/POLICY.md; the struct's @since is the release of its smallest
  one, and a field at an offset past the size pinned for release M.N was appended later: it
  carries an @since newer than M.N, the release of the next pinned size that covers it (or, past
  every pinned size, a release newer than the last). Offsets come from the C compiler CC (a
  command line).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import public_decls  # noqa: E402

inc, map_path, cc = sys.argv[1], sys.argv[2], sys.argv[3:]
errors = []
defs = open(os.path.join(inc, "sonde", "defs.h")).read()
major = int(re.search(r"#define SONDE_VERSION_MAJOR (\d+)", defs).group(1))
minor = int(re.search(r"#define SONDE_VERSION_MINOR (\d+)", defs).group(1))
nodes = public_decls.parse_map(open(map_path).read())


def fmt(v):
    return "%d.%d" % v


decls = []  # (header, Decl)
for path in sorted(glob.glob(os.path.join(inc, "sonde", "*.h")) +
                   glob.glob(os.path.join(inc, "sonde", "*.hpp"))):
    header = "sonde/" + os.path.basename(path)
    text = open(path).read()
    for m in re.finditer(r"@since\b(.*)", text):
        if not re.match(r"\s+\d+\.\d+\b", m.group(1)):
            errors.append("%s:%d: '@since%s' does not name a version MAJOR.MINOR"
                          % (header, text.count("\n", 0, m.start()) + 1, m.group(1)[:20]))
    for d in public_decls.parse_header(text):
        decls.append((header, d))


def where(header, d):
    return "%s:%d: %s %s" % (header, d.line, d.kind, d.name)


def effective(d):
    s = d.since()
    if s is None and d.parent is not None:
        return effective(d.parent)
    return s


for header, d in decls:
    own = d.all_since()
    if len(set(own)) > 1:
        errors.append("%s has different @since tags: %s" % (where(header, d),
                                                             ", ".join(fmt(v) for v in own)))
    s = d.since()
    if s is None and d.parent is None:
        errors.append("%s has no @since" % where(header, d))
        continue
    if s is not None and (s[0] != major or s[1] > minor):
        errors.append("%s: @since %s is not a release of %d.x up to %d.%d"
                      % (where(header, d), fmt(s), major, major, minor))
    if s is not None and d.parent is not None:
        ps = effective(d.parent)
        if ps is not None and s < ps:
            errors.append("%s: @since %s is older than its %s's (%s)"
                          % (where(header, d), fmt(s), d.parent.kind, fmt(ps)))

# Functions against the version script.
declared = {}
for header, d in decls:
    if d.kind == "function" and d.exported:
        declared[d.name] = (header, d)
        if d.name not in nodes:
            errors.append("%s is declared SONDE_API but not in %s"
                          % (where(header, d), os.path.basename(map_path)))
        elif d.since() is not None and d.since() != nodes[d.name]:
            errors.append("%s: @since %s, but the map lists it in SONDE_%s"
                          % (where(header, d), fmt(d.since()), fmt(nodes[d.name])))
    if d.kind == "inline" and d.name in nodes:
        errors.append("%s is a static inline helper but the map exports it" % where(header, d))
for name in sorted(set(nodes) - set(declared)):
    errors.append("%s is in the map (SONDE_%s) but no public header declares it with SONDE_API"
                  % (name, fmt(nodes[name])))

# Growable structs: pinned sizes and the fields appended after them.
macros = {d.name for _, d in decls if d.kind == "macro"}
growable = []
for header, d in decls:
    if d.kind != "struct" or d.parent is not None:
        continue
    fields = [f for _, f in decls if f.parent is d]
    if not fields or fields[0].name != d.name + ".struct_size":
        continue
    stem = re.sub(r"^sonde_", "", re.sub(r"_t$", "", d.name)).upper()
    sizes = []
    for m in macros:
        mm = re.match(r"SONDE_%s_SIZE_(\d+)_(\d+)$" % stem, m)
        if mm:
            sizes.append(((int(mm.group(1)), int(mm.group(2))), m))
    if not sizes:
        errors.append("%s starts with struct_size but has no SONDE_%s_SIZE_<M>_<N> macro"
                      % (where(header, d), stem))
        continue
    sizes.sort()
    if d.since() is not None and d.since() != sizes[0][0]:
        errors.append("%s: @since %s, but its first pinned size is %s's (%s)"
                      % (where(header, d), fmt(d.since()), fmt(sizes[0][0]), sizes[0][1]))
    growable.append((header, d, fields, sizes))

if growable:
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "offsets.c")
        exe = os.path.join(tmp, "offsets")
        with open(src, "w") as f:
            f.write("#include <stddef.h>\n#include <stdio.h>\n#include <sonde/sonde.h>\n"
                    "int main(void) {\n")
            for _, d, fields, sizes in growable:
                for _, macro in sizes:
                    f.write('    printf("%s %%lu\\n", (unsigned long)(%s));\n' % (macro, macro))
                for fld in fields:
                    member = fld.name.split(".", 1)[1]
                    f.write('    printf("%s %%lu\\n", (unsigned long)offsetof(%s, %s));\n'
                            % (fld.name, d.name, member))
            f.write("    return 0;\n}\n")
        r = subprocess.run(cc + ["-std=c11", "-I", inc, "-o", exe, src], capture_output=True,
                           text=True)
        if r.returncode != 0:
            print("FAIL: cannot compile the offset probe:\n" + r.stderr)
            sys.exit(1)
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
        values = {k: int(v) for k, v in (line.split() for line in out.splitlines())}
    for header, d, fields, sizes in growable:
        for fld in fields:
            offset = values[fld.name]
            covering = [v for v, macro in sizes if offset < values[macro]]
            s = effective(fld)
            if covering:
                want = covering[0]
                if s != want:
                    errors.append("%s at offset %d is inside the size pinned for %s: @since "
                                  "should be %s, not %s" % (where(header, fld), offset,
                                                            fmt(want), fmt(want),
                                                            fmt(s) if s else "missing"))
            elif s is None or s <= sizes[-1][0]:
                errors.append("%s at offset %d lies past every pinned size (the last, %s, is "
                              "%s's): it needs an @since newer than %s"
                              % (where(header, fld), offset, sizes[-1][1], fmt(sizes[-1][0]),
                                 fmt(sizes[-1][0])))

for e in errors:
    print("FAIL: " + e)
counted = len(decls)
print("%d declarations checked, %d exported functions against the map, %d growable structs"
      % (counted, len(declared), len(growable)))
sys.exit(1 if errors else 0)
