"""Test helper of the script tests: each check prints "ok" or "FAIL" with what it checks, and the
script ends with the count of failures. Import it with the folder on sys.path:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))"""
import subprocess
import sys

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def run(cmd, **kw):
    """The finished process, its output as text; at most two minutes."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def finish():
    """Exits 1 when a check failed, else 0."""
    if failures:
        print("%d failed" % len(failures))
        sys.exit(1)
    print("all passed")
    sys.exit(0)
