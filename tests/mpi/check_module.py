#!/usr/bin/env python3
"""`sonde analyze --mpi` loads the MPI module sonde-mpi.so (src/mpi/ranks_module.cpp); `sonde`
itself links no MPI library. A copy of `sonde` outside the build tree looks for the module beside
its library directory (bin/../LIBDIR/sonde/sonde-mpi.so): with none there (and none installed at
the prefix), or a library there that is not the module, --mpi fails with exit 1 and a message
saying which, and the other commands run as before. With the real module copied there, --mpi
runs (one rank, no mpirun) and gives the answer of the run without --mpi.
Usage: check_module.py SONDE_EXE MODULE LIBDIR TRACE (LD_LIBRARY_PATH names libsonde's folder)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

exe, module, libdir, trace = sys.argv[1:5]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


ldd = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
check("libmpi" not in ldd and "open-pal" not in ldd, "sonde links no MPI library:\n" + ldd)

with tempfile.TemporaryDirectory() as tmp:
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    copy = os.path.join(bindir, "sonde")
    shutil.copy(exe, copy)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.dirname(os.environ["SONDE_LIBRARY"]) + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")

    def analyze(*extra):
        return subprocess.run([copy, "analyze", trace, "--format", "lackey", "--tool", "basic_counts",
                               "--json", "/dev/stdout", *extra], capture_output=True, text=True, env=env,
                              timeout=120)

    plain = analyze()
    check(plain.returncode == 0, "the copy runs without --mpi: %r" % plain.stderr)
    where = os.path.join(tmp, libdir, "sonde")
    if not any(os.path.exists(os.path.join(p, libdir, "sonde", "sonde-mpi.so")) for p in ("/usr", "/usr/local")):
        p = analyze("--mpi")
        check(p.returncode == 1 and "sonde-mpi.so is not installed" in p.stderr
              and bindir + "/../" + os.path.join(libdir, "sonde", "sonde-mpi.so") in p.stderr,
              "no module: exit 1 naming where it was looked for (exit %d: %r)" % (p.returncode, p.stderr))
    os.makedirs(where)
    src = os.path.join(tmp, "x.c")
    with open(src, "w") as f:
        f.write("int not_the_module(void) { return 0; }\n")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is not None:
        subprocess.run([cc, "-shared", "-fPIC", "-o", os.path.join(where, "sonde-mpi.so"), src], check=True)
        p = analyze("--mpi")
        check(p.returncode == 1 and "is not sonde's MPI module" in p.stderr,
              "a stand-in module: exit 1 naming it (exit %d: %r)" % (p.returncode, p.stderr))
        os.remove(os.path.join(where, "sonde-mpi.so"))
    shutil.copy(module, os.path.join(where, "sonde-mpi.so"))
    p = analyze("--mpi")
    check(p.returncode == 0, "the copied module runs one rank: exit %d: %r" % (p.returncode, p.stderr))
    if p.returncode == 0 and plain.returncode == 0:
        first = lambda text: json.JSONDecoder().raw_decode(text)[0]
        check(first(p.stdout)["basic_counts"] == first(plain.stdout)["basic_counts"],
              "one rank's basic_counts equal the run without --mpi")

if failures:
    sys.exit("%d failed" % len(failures))
print("all passed")
