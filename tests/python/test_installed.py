#!/usr/bin/env python3
"""The installed Python package: `meson install --destdir` into a temporary folder, then
`import sonde` from that prefix's site-packages with PYTHONPATH only (no SONDE_LIBRARY, no
LD_LIBRARY_PATH): it must load the installed libsonde.so.1 and report its version, also after
the whole prefix is moved elsewhere.

    test_installed.py BUILD_DIR
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ["SONDE_BUILD_ROOT"]

PROBE = "import sonde, os; print(sonde.__version__); print(os.path.realpath(sonde.library_path)); " \
        "print(os.path.realpath(sonde.__file__))"


def built_version():
    lib = ctypes.CDLL(os.path.join(BUILD, "libsonde.so.1"))
    major, minor, patch = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint32()
    lib.sonde_get_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    return "%d.%d.%d" % (major.value, minor.value, patch.value)


def probe(site_packages):
    env = {k: v for k, v in os.environ.items() if k not in ("SONDE_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = site_packages
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd="/", check=True, capture_output=True,
                         text=True).stdout.split("\n")
    return out[0], out[1], out[2]


class InstalledPackageTest(unittest.TestCase):
    def test_import_from_installed_prefix(self):
        with tempfile.TemporaryDirectory() as dest:
            subprocess.run(["meson", "install", "-C", BUILD, "--destdir", dest, "--no-rebuild", "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
            found = [root for root, _, files in os.walk(dest)
                     if os.path.basename(root) == "sonde" and "__init__.py" in files]
            self.assertEqual(len(found), 1, "one installed package sonde: %s" % found)
            package = found[0]
            for name in ("_config.py", "_lib.py", "core.py", "profile.py", "stackdist.py", "analysis.py",
                         "trace.py"):
                self.assertTrue(os.path.isfile(os.path.join(package, name)), name)
            site_packages = os.path.dirname(package)
            version, library, module = probe(site_packages)
            self.assertEqual(version, built_version())
            self.assertTrue(library.startswith(os.path.realpath(dest) + os.sep), library)
            self.assertTrue(module.startswith(os.path.realpath(package)), module)
            # A moved prefix: the package finds the library relative to itself.
            moved = os.path.join(dest, "moved")
            prefix_top = os.path.join(dest, os.path.relpath(site_packages, dest).split(os.sep)[0])
            shutil.move(prefix_top, moved)
            moved_site = os.path.join(moved, os.path.relpath(site_packages, prefix_top))
            version, library, _ = probe(moved_site)
            self.assertEqual(version, built_version())
            self.assertTrue(library.startswith(os.path.realpath(moved) + os.sep), library)


if __name__ == "__main__":
    unittest.main(verbosity=2)
