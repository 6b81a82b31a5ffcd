#!/usr/bin/env python3
"""API_CALL client events: `sonde run --api SPEC --client api_logger=...` on the unmodified
program tests/apitrace/api_prog.c, with the example client examples/clients/api_logger.c:

1. zlib: the API_CALL filter is asked exactly once per traced function, with its name, library
   and declaration; a function it refuses (compress2) sends no event; every crc32 call gives
   one API_CALL_ENTER and one API_CALL_LEAVE with the same correlation id and arguments, the
   enter before the begin and the begin before the end; crc32's return values chain (each call's
   crc argument is the previous call's return value) and the last equals what the program
   printed; the function indices are dense;
2. two threads: each thread's calls on its own thread id, 2 x N calls in all;
3. recursion between two traced libraries: depths 0, 1, 2, ... and leaves innermost first;
4. a library loaded with dlopen after the start: its functions are announced and observed;
5. errors: a spec naming a missing function ends the program before main with status 2 and
   the reason; --api-prototypes without --api is a usage error.
"""
import os
import subprocess
import sys
import tempfile

build = os.environ["SONDE_BUILD_ROOT"]
sonde = os.path.join(build, "src", "cli", "sonde")
prog = os.path.join(build, "tests", "apitrace", "api_prog")
lib_d = os.path.join(build, "tests", "apitrace", "libapitrace_d.so")
logger = os.path.join(build, "examples", "api_logger.so")
failures = []

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "zlib.protos")) as _f:
    ZLIB_PROTOS = _f.read()  # the declarations check_api_record.py uses

AT_PROTOS = """int at_ping(int n);
int at_pong(int n);
int at_late(int n);
int at_outer(int n);
"""


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run_logged(tmp, name, api, args, protos, only=None):
    out = os.path.join(tmp, name + ".log")
    path = os.path.join(tmp, name + ".h")
    with open(path, "w") as f:
        f.write(protos)
    opts = "out=" + out + (",only=" + only if only else "")
    cmd = [sonde, "run", "--api", api, "--api-prototypes", path, "--client", logger + "=" + opts, "--", prog] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    functions, enters, leaves = [], [], []
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                p = line.rstrip("\n").split("\t")
                if p[0] == "function":
                    functions.append({"index": int(p[1]), "name": p[2], "library": p[3], "decl": p[4],
                                      "accepted": p[5] == "1"})
                elif p[0] == "enter":
                    enters.append({"corr": int(p[1]), "thread": int(p[2]), "fn": int(p[3]), "depth": int(p[4]),
                                   "name": p[5], "ts": int(p[6]), "args": [int(x) for x in p[7:]]})
                elif p[0] == "leave":
                    leaves.append({"corr": int(p[1]), "thread": int(p[2]), "fn": int(p[3]), "depth": int(p[4]),
                                   "name": p[5], "begin": int(p[6]), "end": int(p[7]), "ret": int(p[8]),
                                   "args": [int(x) for x in p[9:]]})
    return r, functions, enters, leaves


def test_zlib(tmp):
    r, functions, enters, leaves = run_logged(tmp, "zlib", "libz:crc32,compress2,uncompress", ["zlib", "200"],
                                              ZLIB_PROTOS, only="crc32:uncompress")
    check(r.returncode == 0, "zlib: exit 0 (%s)" % r.stderr.strip())
    check("no instrumentation hooks" not in r.stderr, "--api: no warning about missing instrumentation")
    names = sorted(f["name"] for f in functions)
    check(names == ["compress2", "crc32", "uncompress"], "the filter is asked once per traced function: %s" % names)
    check(sorted(f["index"] for f in functions) == [0, 1, 2], "function indices are dense")
    crc = [f for f in functions if f["name"] == "crc32"]
    check(len(crc) == 1 and crc[0]["library"] == "libz.so.1" and
          crc[0]["decl"] == "unsigned long crc32(unsigned long crc, void *buf, unsigned int len)",
          "the filter element names the library and the declaration: %s" % crc)
    check(not any(e["name"] == "compress2" for e in enters + leaves), "a function the filter refuses sends no event")
    ce = [e for e in enters if e["name"] == "crc32"]
    cl = [e for e in leaves if e["name"] == "crc32"]
    check(len(ce) == 200 and len(cl) == 200, "200 crc32 enters and leaves (%d, %d)" % (len(ce), len(cl)))
    check(len([e for e in leaves if e["name"] == "uncompress"]) == 3, "3 uncompress calls")
    by_corr = {e["corr"]: e for e in ce}
    paired = all(l["corr"] in by_corr and by_corr[l["corr"]]["args"] == l["args"] for l in cl)
    check(paired and len(set(by_corr)) == 200, "each leave has its enter's correlation id and arguments")
    ordered = all(by_corr[l["corr"]]["ts"] <= l["begin"] <= l["end"] for l in cl if l["corr"] in by_corr)
    check(ordered, "enter timestamp <= begin_timestamp <= end timestamp")
    chain = all(cl[i]["args"][0] == cl[i - 1]["ret"] for i in range(1, len(cl)))
    check(chain and cl and cl[0]["args"][0] == 0, "crc32's return values chain into the next call's crc argument")
    printed = [l for l in r.stdout.splitlines() if l.startswith("crc ")]
    check(printed and cl and int(printed[0].split()[1]) == cl[-1]["ret"], "the last return value is the program's crc")
    check(all(len(l["args"]) == 3 and l["args"][2] == 16 + (i % 100) for i, l in enumerate(cl)),
          "crc32's len argument, call by call")


def test_threads(tmp):
    r, _, enters, leaves = run_logged(tmp, "threads", "libz:crc32", ["threads", "2000"], ZLIB_PROTOS)
    check(r.returncode == 0, "threads: exit 0")
    per = {}
    for l in leaves:
        per[l["thread"]] = per.get(l["thread"], 0) + 1
    check(sorted(per.values()) == [2000, 2000], "two threads: 2000 calls each on its own thread id (%s)" % per)
    check(len(enters) == 4000, "two threads: 4000 enters")


def test_recursion(tmp):
    r, _, enters, leaves = run_logged(tmp, "recursion", "libapitrace_a:at_ping;libapitrace_b:at_pong",
                                      ["recursion", "4"], AT_PROTOS)
    check(r.returncode == 0, "recursion: exit 0 (%s)" % r.stderr.strip())
    check([e["depth"] for e in enters] == list(range(len(enters))) and len(enters) >= 4,
          "recursion: enter depths 0, 1, 2, ... (%s)" % [e["depth"] for e in enters])
    check([l["depth"] for l in leaves] == list(reversed(range(len(leaves)))),
          "recursion: leaves innermost first")
    check([l["corr"] for l in leaves] == [e["corr"] for e in reversed(enters)], "recursion: correlation ids nest")


def test_dlopen(tmp):
    r, functions, enters, leaves = run_logged(tmp, "dlopen", "libapitrace_c:at_late", ["dlopen", lib_d], AT_PROTOS)
    check(r.returncode == 0, "dlopen: exit 0 (%s)" % r.stderr.strip())
    check([f["name"] for f in functions] == ["at_late"], "a library loaded later: its function is announced")
    check([l["name"] for l in leaves] == ["at_late"] and leaves and leaves[0]["args"] == [3],
          "a library loaded later: its call is observed with its argument")


def test_errors(tmp):
    out = os.path.join(tmp, "err.log")
    r = subprocess.run([sonde, "run", "--api", "libz:no_such_function", "--client", logger + "=out=" + out, "--",
                        prog, "zlib", "10"], capture_output=True, text=True, timeout=120)
    check(r.returncode == 2 and "no_such_function" in r.stderr and "crc " not in r.stdout,
          "a missing function: status 2, the reason, the program does not run (%d, %s)" % (r.returncode, r.stderr.strip()))
    r = subprocess.run([sonde, "run", "--api-prototypes", __file__, "--client", logger, "--", prog, "zlib", "1"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "needs --api" in r.stderr, "--api-prototypes without --api: usage error")


with tempfile.TemporaryDirectory() as tmp:
    test_zlib(tmp)
    test_threads(tmp)
    test_recursion(tmp)
    test_dlopen(tmp)
    test_errors(tmp)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
