#!/usr/bin/env python3
"""Runs the `sonde` executable (argv[1]) on inputs other programs wrote: a truncated Sonde
trace (warnings on stderr and in the JSON, --strict), an input without records, and inputs
that are not files: standard input (`-`), a FIFO, bash's process substitution, plain and
zstd, lackey and raw64 (each opened once, so the bytes the format probe reads are not lost),
and a Sonde trace from a pipe (copied to a temporary file as it arrives, its index being at its
end; a truncated one recovered; no room for the copy is an error naming the directory). Every
run has a time limit, so a hang fails."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading

SONDE = sys.argv[1]

# 1000 references: enough text that the first block read to tell the format matters.
LACKEY = "==1== Lackey, an example Valgrind tool\n" + "".join(
    "I  %08x,4\n L %08x,8\n S %08x,4\n M %08x,8\n" % (0x400000 + 4 * i, 0x1000 + 8 * i, 0x9000 + 4 * i, 0x1000 + 8 * i)
    for i in range(250)) + "==1== exiting\n"
RAW64 = b"".join(struct.pack("<Q", 0x7000 + 16 * i) for i in range(3000))


def run(*args, code=0, stdin=None, input=None, shell=False, env=None):
    cmd = args[0] if shell else [SONDE, *args]
    p = subprocess.run(cmd, capture_output=True, stdin=stdin, input=input, timeout=60, shell=shell,
                       executable="/bin/bash" if shell else None, env=env)
    out, err = p.stdout.decode(), p.stderr.decode()
    if p.returncode != code:
        sys.exit(f"{cmd}: exit {p.returncode}, expected {code}\n{out}\n{err}")
    return out, err


def counts(path):
    with open(path) as f:
        return json.load(f)


def check_lackey(j, what):
    b = j["basic_counts"]
    assert (b["ifetches"], b["reads"], b["writes"], b["total"]) == (250, 500, 500, 1000), (what, b)


def check_raw64(j, what):
    b = j["basic_counts"]
    assert (b["reads"], b["total"]) == (3000, 3000), (what, b)


def feed_fifo(path, data):
    """Writes `data` into the FIFO from a thread (opening it waits for the reader)."""
    def writer():
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass  # the reader refused the input
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    return t


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out.json")
    lackey = os.path.join(tmp, "t.lackey")
    with open(lackey, "w") as f:
        f.write(LACKEY)
    subprocess.run(["zstd", "-q", "-f", lackey, "-o", lackey + ".zst"], check=True)
    with open(lackey + ".zst", "rb") as f:
        lackey_zst = f.read()
    raw = os.path.join(tmp, "t.raw64")
    with open(raw, "wb") as f:
        f.write(RAW64)
    subprocess.run(["zstd", "-q", "-f", raw, "-o", raw + ".zst"], check=True)
    with open(raw + ".zst", "rb") as f:
        raw_zst = f.read()

    # A Sonde trace of 10 chunks, and the same cut inside its sixth chunk.
    trace = os.path.join(tmp, "t.sonde")
    run("convert", lackey, "-o", trace, "--chunk-records", "100")
    with open(trace, "rb") as f:
        whole = f.read()
    cut = os.path.join(tmp, "cut.sonde")
    with open(cut, "wb") as f:
        f.write(whole[:len(whole) * 55 // 100])

    # ---- truncated traces are reported ----
    o, e = run("analyze", cut, "--json", out)
    assert f"sonde analyze: warning: {cut}: no footer (the writer did not finish)\n" in e, e
    m = re.search(r"sonde analyze: warning: %s: recovered (\d+) complete chunks \((\d+) records\) by scanning; "
                  r"truncated chunk at offset \d+" % re.escape(cut), e)
    assert m and 0 < int(m.group(2)) < 1000 and int(m.group(2)) == 100 * int(m.group(1)), e
    j = counts(out)
    assert j["basic_counts"]["total"] == int(m.group(2)), j
    assert len(j["warnings"]) == 2 and j["warnings"][0] == f"{cut}: no footer (the writer did not finish)", j
    assert j["inputs"] == [{"path": cut, "format": "sonde", "complete": False, "warnings": j["warnings"]}], j
    o, e = run("analyze", cut, "--strict", code=1)
    assert cut in e and "incomplete" in e and "basic_counts" not in o, (o, e)
    o, e = run("analyze", trace, "--strict", "--json", out)
    assert "warning" not in e, e
    j = counts(out)
    check_lackey(j, "complete trace")
    assert j["inputs"] == [{"path": trace, "format": "sonde", "complete": True, "warnings": []}], j
    assert j["warnings"] == [], j

    # ---- an input without records says so ----
    empty = os.path.join(tmp, "empty.lackey")
    with open(empty, "w") as f:
        f.write("==1== nothing traced\n")
    o, e = run("analyze", empty, "--json", out)
    assert f"sonde analyze: warning: {empty}: no records" in e, e
    assert counts(out)["warnings"] == [f"{empty}: no records"]
    nothing = os.path.join(tmp, "nothing")
    open(nothing, "w").close()
    o, e = run("analyze", nothing, code=1)
    assert "empty input" in e and "no records" in e, e

    # ---- standard input ----
    for data, fmt, check in ((LACKEY.encode(), "lackey", check_lackey), (lackey_zst, "lackey", check_lackey),
                             (RAW64, "raw64", check_raw64), (raw_zst, "raw64", check_raw64)):
        run("analyze", "-", "--format", fmt, "--json", out, input=data)  # a pipe
        check(counts(out), f"stdin pipe {fmt}")
    for data in (LACKEY.encode(), lackey_zst):  # format told by the content
        run("analyze", "-", "--json", out, input=data)
        check_lackey(counts(out), "stdin auto")
    with open(lackey, "rb") as f:  # a file on standard input
        run("analyze", "-", "--format", "lackey", "--json", out, stdin=f)
    check_lackey(counts(out), "stdin file")
    for fmt in ("sonde", "auto"):  # a Sonde trace: copied to a temporary file, then read
        run("analyze", "-", "--format", fmt, "--json", out, input=whole)
        check_lackey(counts(out), f"stdin sonde ({fmt})")
    o, e = run("analyze", "-", "--json", out, input=whole[:len(whole) * 55 // 100])
    assert "no footer" in e and "recovered" in e, e
    assert 0 < counts(out)["basic_counts"]["total"] < 1000, counts(out)
    o, e = run("analyze", "-", input=whole, code=1, env=dict(os.environ, TMPDIR=os.path.join(tmp, "no-such-dir")))
    assert "/dev/stdin: cannot make a temporary file in " + os.path.join(tmp, "no-such-dir") in e, e

    # ---- a FIFO ----
    fifo = os.path.join(tmp, "fifo")
    for data, fmt, check in ((LACKEY.encode(), "lackey", check_lackey), (lackey_zst, "lackey", check_lackey),
                             (LACKEY.encode(), "auto", check_lackey), (lackey_zst, "auto", check_lackey),
                             (RAW64, "raw64", check_raw64), (raw_zst, "raw64", check_raw64)):
        os.mkfifo(fifo)
        t = feed_fifo(fifo, data)
        run("analyze", fifo, "--format", fmt, "--json", out)
        t.join(timeout=10)
        os.unlink(fifo)
        check(counts(out), f"fifo {fmt}")
    os.mkfifo(fifo)
    t = feed_fifo(fifo, whole)
    run("analyze", fifo, "--json", out)
    check_lackey(counts(out), "fifo sonde")
    t.join(timeout=10)
    os.unlink(fifo)

    # ---- process substitution ----
    if shutil.which("bash"):
        for fmt in ("--format lackey", ""):
            run(f"'{SONDE}' analyze <(zstdcat '{lackey}.zst') {fmt} --json '{out}'", shell=True)
            check_lackey(counts(out), f"process substitution {fmt}")
        run(f"'{SONDE}' analyze <(cat '{raw}') --format raw64 --serial --json '{out}'", shell=True)
        check_raw64(counts(out), "process substitution raw64")
print("ok")
