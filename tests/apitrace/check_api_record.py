#!/usr/bin/env python3
"""`sonde record --api` on an unmodified program (tests/apitrace/api_prog.c), read back with
`sonde report --json` and `sonde export --format chrome`:

1. zlib's crc32, compress2 and uncompress: the call counts equal ltrace's, and every crc32
   call's arguments and return value equal ltrace's, call by call (both runs without address
   randomisation, so that the buffers' addresses agree);
2. two threads; recursion between two traced libraries; errno kept both ways; a double and a
   struct pointer argument; libraries loaded with dlopen after the start;
3. --api combined with the call graph of an instrumented program, and --api alone on an
   uninstrumented one without the warning about missing instrumentation;
4. errors: a bad spec, a prototype file with an error (its line), a missing symbol, no
   signature: exit status 2, a clear message, the program never runs and no trace is left; a
   library that is never loaded: a warning.
Exits 77 (skipped) when ltrace is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

build = os.environ["SONDE_BUILD_ROOT"]
sonde = os.path.join(build, "src", "cli", "sonde")
prog = os.path.join(build, "tests", "apitrace", "api_prog")
lib_d = os.path.join(build, "tests", "apitrace", "libapitrace_d.so")
instrumented = os.path.join(build, "tests", "record", "record_prog")
failures = []

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "zlib.protos")) as _f:
    ZLIB_PROTOS = _f.read()  # zlib's declarations, also used by check_api_client.py

AT_PROTOS = """int at_ping(int n);
int at_pong(int n);
double at_scale(double k, const struct at_point *p);
int at_set_errno(int code);
int at_late(int n);
"""


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, **kw)


def norandom():
    """The prefix that runs a command without address randomisation, [] when it cannot."""
    r = run(["setarch", "-R", "true"]) if shutil.which("setarch") else None
    return ["setarch", "-R"] if r is not None and r.returncode == 0 else []


def record(tmp, name, api, args, protos=None, program=prog, prefix=()):
    out = os.path.join(tmp, name + ".sonde")
    cmd = list(prefix) + [sonde, "record", "--force", "-o", out, "--api", api]
    if protos is not None:
        path = os.path.join(tmp, name + ".h")
        with open(path, "w") as f:
            f.write(protos)
        cmd += ["--api-prototypes", path]
    r = run(cmd + ["--", program] + args)
    return r, out


def report(trace):
    r = run([sonde, "report", trace, "--json", "-", "-q"])
    if r.returncode != 0:
        print(r.stderr)
        return {}
    return json.loads(r.stdout)


def api_counts(rep):
    return {(a["library"], a["function"]): a["calls"] for a in rep.get("api", [])}


def chrome_calls(trace):
    r = run([sonde, "export", trace, "--format", "chrome", "-o", "-"])
    if r.returncode != 0:
        print(r.stderr)
        return []
    events = json.loads(r.stdout)["traceEvents"]
    return [e for e in events if e.get("cat", "").startswith("api:")]


def ltrace_calls(prefix, args):
    r = run(prefix + ["ltrace", "-e", "crc32+compress2+uncompress", prog] + args)
    calls = []
    for line in r.stderr.splitlines():
        m = re.match(r"\S+->(\w+)\((.*)\)\s*= (\S+)$", line)
        if m:
            calls.append((m.group(1), [a.strip() for a in m.group(2).split(",")], int(m.group(3), 0)))
    return r.returncode, calls


def test_zlib(tmp):
    prefix = norandom()
    rc, expected = ltrace_calls(prefix, ["zlib", "300"])
    check(rc == 0 and len(expected) == 306, "ltrace sees 300 crc32 and 3 compress2/uncompress pairs (%d)" % len(expected))
    r, trace = record(tmp, "zlib", "libz:crc32,compress2,uncompress", ["zlib", "300"], ZLIB_PROTOS, prefix=prefix)
    check(r.returncode == 0, "sonde record --api libz: exit 0 (%s)" % r.stderr.strip())
    check("no instrumentation hooks" not in r.stderr, "--api alone: no warning about missing instrumentation")
    check("3 API functions" in r.stderr, "the summary counts the traced functions")
    counts = api_counts(report(trace))
    want = {}
    for name, _, _ in expected:
        want[("libz.so.1", name)] = want.get(("libz.so.1", name), 0) + 1
    check(counts == want, "call counts per function equal ltrace's: %s vs %s" % (counts, want))
    got = [c for c in chrome_calls(trace) if c["name"] == "crc32"]
    exp = [c for c in expected if c[0] == "crc32"]
    check(len(got) == len(exp) == 300, "300 crc32 calls in the chrome export")
    same = True
    for g, (_, a, ret) in zip(got, exp):
        mine = (g["args"]["crc"], g["args"]["len"], g["args"]["ret"])
        theirs = (int(a[0], 0), int(a[2], 0), ret)
        if mine != theirs or (prefix and int(g["args"]["buf"], 16) != int(a[1], 0)):
            print("differs:", g["args"], a, ret)
            same = False
            break
    check(same, "every crc32 call's crc, buf, len and return value equal ltrace's, call by call")
    comp = [c for c in chrome_calls(trace) if c["name"] == "compress2"]
    check([c["args"]["level"] for c in comp] == [1, 2, 3] and all(c["args"]["ret"] == 0 for c in comp),
          "compress2's level argument and return value by name")


def test_threads(tmp):
    r, trace = record(tmp, "threads", "libz:crc32", ["threads", "5000"], ZLIB_PROTOS)
    check(r.returncode == 0, "two threads: exit 0")
    rep = report(trace)
    per_thread = sorted(t["api_calls"] for t in rep.get("threads", []) if t["api_calls"])
    check(per_thread == [5000, 5000], "two threads: 5000 calls each (%s)" % per_thread)
    check(api_counts(rep) == {("libz.so.1", "crc32"): 10000}, "two threads: 10000 calls in all")


def test_libraries(tmp):
    r, trace = record(tmp, "recursion", "libapitrace_a:at_ping;libapitrace_b:at_pong", ["recursion", "5"],
                      AT_PROTOS)
    check(r.returncode == 0, "recursion: exit 0")
    calls = chrome_calls(trace)
    check(api_counts(report(trace)) == {("libapitrace_a.so", "at_ping"): 3, ("libapitrace_b.so", "at_pong"): 3},
          "recursion: 3 at_ping and 3 at_pong calls")
    outer = max(calls, key=lambda c: c["dur"]) if calls else {}
    check(outer.get("name") == "at_ping" and outer["args"] == {"n": 5, "ret": 5, "correlation": outer["args"]["correlation"]},
          "recursion: the outer call is at_ping(5) = 5")
    check(calls and calls[-1] is outer, "recursion: inner calls are recorded before the outer one")

    r, trace = record(tmp, "errno", "libapitrace_a:at_set_errno", ["errno"], AT_PROTOS)
    check(r.returncode == 0 and "seen 11 after 42" in r.stdout, "errno is kept both ways (%s)" % r.stdout.strip())
    calls = chrome_calls(trace)
    check(len(calls) == 1 and calls[0]["args"]["code"] == 42 and calls[0]["args"]["ret"] == 11,
          "errno: the call is recorded with its argument and return value")

    r, trace = record(tmp, "scale", "libapitrace_a:at_scale", ["scale"], AT_PROTOS)
    check(r.returncode == 0, "double and struct pointer: exit 0")
    m = re.search(r"point (0x[0-9a-f]+) result", r.stdout)
    calls = chrome_calls(trace)
    check(len(calls) == 1 and calls[0]["args"]["k"] == 2.5 and calls[0]["args"]["ret"] == 4.375,
          "a double argument and a double return value")
    check(m is not None and calls and int(calls[0]["args"]["p"], 16) == int(m.group(1), 16),
          "a struct pointer argument is the program's address")

    r, trace = record(tmp, "dlopen", "libapitrace_c:at_late;libapitrace_a:at_ping", ["dlopen", lib_d], AT_PROTOS)
    check(r.returncode == 0, "dlopen: exit 0 (%s)" % r.stderr.strip())
    counts = api_counts(report(trace))
    check(counts == {("libapitrace_c.so", "at_late"): 1, ("libapitrace_a.so", "at_ping"): 2},
          "dlopen: a library loaded later is traced from its load (%s)" % counts)
    check("never loaded" not in r.stderr, "dlopen: no warning for a library loaded later")


def test_call_graph(tmp):
    r, trace = record(tmp, "both", "libc:strcmp", ["marks"], None, program=instrumented)
    rep = report(trace)
    names = {f["name"] for f in rep.get("functions", [])}
    check("main" in names and "step" in names, "--api with the call graph: the program's functions are recorded")
    check(api_counts(rep) == {("libc.so.6", "strcmp"): 1}, "--api with the call graph: one strcmp call")
    calls = chrome_calls(trace)
    # The parameter names are the built-in table's (s1, s2) or, where libc's debug information
    # is installed (libc6-dbg), glibc's own.
    args = calls[0]["args"] if calls else {}
    strings = [v for k, v in args.items() if k not in ("ret", "correlation")]
    check(len(calls) == 1 and strings == ["marks", "marks"] and args.get("ret") == 0,
          "const char * arguments are copied (%s)" % args)


def test_errors(tmp):
    def refused(name, api, protos, words):
        r, trace = record(tmp, name, api, ["zlib", "3"], protos)
        check(r.returncode == 2, "%s: exit 2 (%d)" % (name, r.returncode))
        check(all(w in r.stderr for w in words), "%s: the message says %s (%s)" % (name, words, r.stderr.strip()))
        check("crc " not in r.stdout, "%s: the program did not run" % name)
        check(not os.path.exists(trace), "%s: no trace is left" % name)

    refused("bad-spec", "libz", ZLIB_PROTOS, ["sonde record", "--api 'libz'", "no ':'"])
    refused("bad-protos", "libz:crc32", "typedef unsigned long uLong;\nuLong crc32(uLong crc, struct q s);\n",
            ["bad-protos.h:2:", "crc32"])
    refused("missing-symbol", "libz:crc33", ZLIB_PROTOS, ["libz.so.1", "no function 'crc33'"])
    refused("no-signature", "libz:crc32", None, ["crc32: no signature known", "--api-prototypes"])
    r, _ = record(tmp, "missing-library", "libnotthere:foo;libz:crc32", ["zlib", "3"], ZLIB_PROTOS)
    check(r.returncode == 0 and "libnotthere: never loaded" in r.stderr,
          "a library never loaded: the program runs and a warning says so (%s)" % r.stderr.strip())
    r = run([sonde, "record", "--api-prototypes", "/nonexistent.h", "--api", "libz:crc32", "--", prog])
    check(r.returncode == 2 and "/nonexistent.h" in r.stderr, "a prototype file that does not exist: exit 2")
    r = run([sonde, "record", "--api-prototypes", os.path.join(tmp, "zlib.h"), "--", prog, "zlib", "1"])
    check(r.returncode == 2 and "needs --api" in r.stderr, "--api-prototypes without --api: exit 2")


def main():
    if shutil.which("ltrace") is None:
        print("ltrace is not installed: skipped")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        test_zlib(tmp)
        test_threads(tmp)
        test_libraries(tmp)
        test_call_graph(tmp)
        test_errors(tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
