#!/usr/bin/env python3
"""The example clients on real -finstrument-functions programs, through `sonde run`:

1. call_counter on examples/clients/calls.c: its counts equal the Calls column of
   `uftrace record --no-libcall` + `uftrace report` on the same binary, function by function.
2. The same program linked with libsonde-instrument.so (no preload) and SONDE_CLIENTS.
3. class_filter on examples/clients/shapes.cpp: only geo::Circle's methods, with exact counts,
   equal to uftrace's for those methods.
4. thread_module_logger on examples/clients/threads.c: both threads start and end (with the
   names they set), the dlopen'ed plugin is loaded and unloaded.
5. `sonde run` checks every client given as a path before it starts the program: one that does
   not exist, is not a regular file, is not an ELF shared object, is of the wrong class, is cut
   short, has no entry point of its own or requires a newer client ABI stops it with exit 2 and
   the reason, and the program does not run.
6. A client whose entry point fails inside the program (it refuses, it throws) is reported on
   stderr with its status and message, and the program still runs with the others; so is a
   client that fails to load when SONDE_CLIENTS is set by hand.
   With --strict, a client that fails inside the program ends it before main with status 125;
   a statically linked program (where LD_PRELOAD cannot bring Sonde in) gets a warning, and
   under --strict is refused (exit 2).
7. The exit status of `sonde run` is the program's; 127 when the program cannot be started.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

build = os.environ["SONDE_BUILD_ROOT"]
plugins = os.environ["SONDE_TEST_PLUGIN_DIR"]
sonde = os.path.join(build, "src", "cli", "sonde")
ex = os.path.join(build, "examples")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, env=None, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, **kw)
    if r.returncode != 0:
        print("command failed:", " ".join(cmd), r.returncode, r.stdout, r.stderr)
    return r


def read_counts(path):
    counts = {}
    for line in open(path):
        calls, name = line.rstrip("\n").split("\t")
        counts[name] = int(calls)
    return counts


def uftrace_counts(tmp, program, args):
    data = os.path.join(tmp, "uftrace.data")
    shutil.rmtree(data, ignore_errors=True)
    r = run(["uftrace", "record", "--no-libcall", "-d", data, program] + args)
    if r.returncode != 0:
        return None
    rep = run(["uftrace", "report", "-d", data])
    counts = {}
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*[\d.]+ \S+\s+[\d.]+ \S+\s+(\d+)\s+(.+?)\s*$", line)
        # "linux:schedule" rows are uftrace's kernel scheduling events, not functions.
        if m and not m.group(2).startswith("linux:"):
            counts[m.group(2)] = int(m.group(1))
    return counts


with tempfile.TemporaryDirectory() as tmp:
    have_uftrace = shutil.which("uftrace") is not None
    if not have_uftrace:
        print("uftrace not installed: the comparisons below are skipped, the checks still run")

    # 1. call_counter vs uftrace.
    out = os.path.join(tmp, "calls.txt")
    calls = os.path.join(ex, "calls")
    r = run([sonde, "run", "--client", os.path.join(ex, "call_counter.so") + "=out=" + out, "--", calls, "18"])
    check(r.returncode == 0 and "fib(18) = 2584" in r.stdout, "calls runs under sonde run")
    ours = read_counts(out)
    check(ours.get("fib") == 8361 and ours.get("less") == 2016 and ours.get("main") == 1,
          "call_counter counts fib, less and main exactly: %s" % ours)
    if have_uftrace:
        theirs = uftrace_counts(tmp, calls, ["18"])
        check(theirs is not None and theirs == ours, "call_counter equals uftrace report, function by function:"
              "\n  sonde   %s\n  uftrace %s" % (sorted(ours.items()), sorted((theirs or {}).items())))

    # 2. Linked instead of preloaded.
    out2 = os.path.join(tmp, "linked.txt")
    env = dict(os.environ, SONDE_CLIENTS=os.path.join(ex, "call_counter.so") + "=out=" + out2)
    env.pop("LD_PRELOAD", None)
    r = run([os.path.join(ex, "calls_linked"), "18"], env=env)
    check(r.returncode == 0 and os.path.exists(out2) and read_counts(out2) == ours,
          "the linked program gives the same counts")

    # 3. class filter: only geo::Circle.
    out3 = os.path.join(tmp, "circle.txt")
    shapes = os.path.join(ex, "shapes")
    r = run([sonde, "run", "--client", os.path.join(ex, "class_filter.so") + "=class=geo::Circle,out=" + out3,
             "--", shapes, "7"])
    circle = read_counts(out3) if os.path.exists(out3) else {}
    check(r.returncode == 0 and circle == {"geo::Circle::Circle": 7, "geo::Circle::area": 7,
                                            "geo::Circle::perimeter": 7},
          "class_filter sees exactly geo::Circle's methods: %s" % circle)
    if have_uftrace:
        theirs = uftrace_counts(tmp, shapes, ["7"])
        theirs_circle = {k: v for k, v in (theirs or {}).items() if k.startswith("geo::Circle::")}
        check(theirs_circle == circle, "geo::Circle counts equal uftrace's: %s" % theirs_circle)

    # 4. threads and modules.
    out4 = os.path.join(tmp, "log.txt")
    lib = os.path.join(plugins, "plugin_ok.so")
    r = run([sonde, "run", "--client", os.path.join(ex, "thread_module_logger.so") + "=out=" + out4, "--",
             os.path.join(ex, "threads"), lib])
    log = [l.split("\t") for l in open(out4).read().splitlines()] if os.path.exists(out4) else []
    ends = [l[2] for l in log if l[0] == "thread-end"]
    starts = [l for l in log if l[0] == "thread-start"]
    check(r.returncode == 0 and len(starts) == 3, "three thread starts (main and two workers): %s" % starts)
    check("worker-a" in ends and "worker-b" in ends, "thread ends carry the names the threads set: %s" % ends)
    loads = [l[2] for l in log if l[0] == "module-load"]
    unloads = [l[2] for l in log if l[0] == "module-unload"]
    check(any(p.endswith("/threads") for p in loads), "the program is reported as a module")
    check(lib in loads and lib in unloads, "the dlopen'ed library is loaded then unloaded")
    check(loads.index(lib) < len(loads), "module ids are listed in load order")

    # 5. Clients refused before the program starts.
    not_elf = os.path.join(tmp, "not_elf.so")
    with open(not_elf, "w") as f:
        f.write("#!/bin/sh\n")
    class32 = os.path.join(tmp, "class32.so")
    with open(os.path.join(plugins, "plugin_ok.so"), "rb") as f:
        image = bytearray(f.read())
    image[4] = 1  # EI_CLASS: ELFCLASS32
    with open(class32, "wb") as f:
        f.write(image)
    cut = os.path.join(tmp, "cut.so")  # a copy cut short: libelf opens it, dlopen would not
    with open(os.path.join(plugins, "plugin_ok.so"), "rb") as f, open(cut, "wb") as g:
        whole = f.read()
        g.write(whole[:len(whole) // 2])
    fifo = os.path.join(tmp, "fifo.so")  # no writer: opening it would block
    os.mkfifo(fifo)
    out5 = os.path.join(tmp, "calls5.txt")
    counter = os.path.join(ex, "call_counter.so") + "=out=" + out5
    for client, reason in [
        (os.path.join(tmp, "missing.so"), "No such file or directory"),
        (tmp, "is a directory"),
        (fifo, "is not a regular file"),
        (not_elf, "is not an ELF file"),
        (class32, "32-bit"),
        (cut, "is not a whole shared object"),
        (calls, "does not export sonde_client_instantiate"),
        (os.path.join(plugins, "plugin_noentry.so"), "a dependency"),
        (os.path.join(plugins, "plugin_needs_v99.so"), "requires client ABI version 99"),
    ]:
        r = run([sonde, "run", "--client", counter, "--client", client + "=opt", "--", calls, "10"])
        check(r.returncode == 2 and reason in r.stderr and os.path.basename(client) in r.stderr
              and r.stdout == "" and not os.path.exists(out5),
              "sonde run refuses %s (%s) without running the program: %d %r"
              % (os.path.basename(client), reason, r.returncode, r.stderr))

    # 6. Entry points that fail inside the program, next to a working client.
    r = run([sonde, "run", "--client", os.path.join(plugins, "plugin_refuses.so"),
             "--client", os.path.join(plugins, "plugin_throws.so"), "--client", counter, "--", calls, "10"])
    check(r.returncode == 0 and "fib(10) = 55" in r.stdout, "the program runs when entry points fail")
    check("plugin_refuses.so' failed: SONDE_STATUS_ERROR_NOT_SUPPORTED: needs a newer Sonde" in r.stderr,
          "a refusing client is reported with its status and message: %r" % r.stderr)
    check("plugin_throws.so' failed: SONDE_STATUS_ERROR: " in r.stderr and "threw" in r.stderr,
          "a throwing client is reported with its status and message: %r" % r.stderr)
    check(os.path.exists(out5) and read_counts(out5).get("fib") == 177, "the working client still counts")
    out6 = os.path.join(tmp, "calls6.txt")
    env = dict(os.environ, SONDE_CLIENTS=os.path.join(tmp, "missing.so") + ";" +
               os.path.join(plugins, "plugin_noentry.so") + ";" +
               os.path.join(ex, "call_counter.so") + "=out=" + out6)
    env.pop("LD_PRELOAD", None)
    r = run([os.path.join(ex, "calls_linked"), "10"], env=env)
    check(r.returncode == 0 and "missing.so' failed: SONDE_STATUS_ERROR_LOAD_FAILED" in r.stderr
          and "no entry point" in r.stderr, "with SONDE_CLIENTS, failing clients are reported by name and reason")
    check(os.path.exists(out6) and read_counts(out6).get("fib") == 177, "and the working client still counts")

    # 6b. --strict: a client that fails inside the program ends it before main, status 125.
    out6b = os.path.join(tmp, "calls6b.txt")
    r = run([sonde, "run", "--strict", "--client", os.path.join(plugins, "plugin_refuses.so"),
             "--client", counter.replace(out5, out6b), "--", calls, "10"])
    check(r.returncode == 125 and "fib(10)" not in r.stdout and "plugin_refuses.so' failed" in r.stderr
          and "the program does not run" in r.stderr and not os.path.exists(out6b),
          "--strict: a failing client stops the program before main (exit 125): %d %r" % (r.returncode, r.stderr))
    r = run([sonde, "run", "--strict", "--client", counter.replace(out5, out6b), "--", calls, "10"])
    check(r.returncode == 0 and "fib(10) = 55" in r.stdout and read_counts(out6b).get("fib") == 177,
          "--strict with clients that load runs as without it: %d %r" % (r.returncode, r.stderr))
    # A statically linked program: the loader never brings Sonde in, so no client could run.
    static_src = os.path.join(tmp, "static.c")
    with open(static_src, "w") as f:
        f.write("#include <stdio.h>\nint main(void) { puts(\"static ran\"); return 3; }\n")
    static_prog = os.path.join(tmp, "static_prog")
    if subprocess.run(["cc", "-static", "-o", static_prog, static_src], capture_output=True).returncode == 0:
        r = run([sonde, "run", "--client", counter, "--", static_prog])
        check(r.returncode == 3 and "static ran" in r.stdout and "statically linked" in r.stderr
              and "no client runs" in r.stderr, "a static program runs with a warning: %d %r" % (r.returncode, r.stderr))
        r = run([sonde, "run", "--strict", "--client", counter, "--", static_prog])
        check(r.returncode == 2 and "static ran" not in r.stdout and "statically linked" in r.stderr,
              "--strict refuses a static program before it runs: %d %r" % (r.returncode, r.stderr))
    else:
        print("skip static program checks: cc -static failed")

    # 7. Exit statuses.
    r = run([sonde, "run", "--client", counter, "--", "/bin/sh", "-c", "exit 7"])
    check(r.returncode == 7, "sonde run exits with the program's status (%d)" % r.returncode)
    r = run([sonde, "run", "--client", counter, "--", os.path.join(tmp, "not_elf.so")])
    check(r.returncode == 127 and "Permission denied" in r.stderr,
          "a program that cannot be executed: exit 127 with the reason: %r" % r.stderr)

    # A client by bare name: the build tree's examples/, then $SONDE_CLIENT_PATH first.
    out7 = os.path.join(tmp, "byname.txt")
    r = run([sonde, "run", "--client", "call_counter=out=" + out7, "--", calls, "10"])
    check(r.returncode == 0 and os.path.exists(out7) and read_counts(out7).get("fib") == 177, "--client call_counter finds the client by name")
    r = run([sonde, "run", "--client", "no_such_client", "--", calls, "10"])
    check(r.returncode == 2 and "no client named 'no_such_client'" in r.stderr and "examples" in r.stderr,
          "an unknown client name is refused, saying where Sonde looked: %r" % r.stderr)
    mine = os.path.join(tmp, "mine")
    os.mkdir(mine)
    shutil.copy(os.path.join(ex, "call_counter.so"), os.path.join(mine, "my_counter.so"))
    out8 = os.path.join(tmp, "mine.txt")
    r = run([sonde, "run", "--client", "my_counter=out=" + out8, "--", calls, "10"],
            env=dict(os.environ, SONDE_CLIENT_PATH=mine))
    check(r.returncode == 0 and os.path.exists(out8) and read_counts(out8).get("fib") == 177, "SONDE_CLIENT_PATH is searched: %r" % r.stderr)

    # Usage errors of the launcher.
    r = run([sonde, "run", "--", calls])
    check(r.returncode == 2, "sonde run without --client is a usage error")
    r = run([sonde, "run", "--client", os.path.join(ex, "call_counter.so")])
    check(r.returncode == 2 and "no program" in r.stderr, "sonde run without a program is a usage error")
    r = run([sonde, "run", "--client", os.path.join(ex, "call_counter.so"), "--", os.path.join(tmp, "nope")])
    check(r.returncode == 127 and "No such file or directory" in r.stderr,
          "sonde run with a missing program exits 127 with the reason")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
