#!/usr/bin/env python3
"""The progress line of `sonde analyze` and `sonde convert` (argv[1] is the sonde executable):
on a terminal (a pseudo-terminal here, with SONDE_PROGRESS_DELAY_MS=0 so that it appears at
once) it shows the percentage of the inputs' bytes and ends at 100% with a newline; with an
input of unknown size (a pipe) it shows records and their rate instead; when stderr is not a
terminal nothing is printed."""
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile

SONDE = sys.argv[1]
ENV = dict(os.environ, SONDE_PROGRESS_DELAY_MS="0")


def on_terminal(args, stdin=None):
    """Runs sonde with stderr on a pseudo-terminal; returns (status, the terminal's text)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([SONDE, *args], stdin=stdin, stdout=subprocess.DEVNULL, stderr=slave, env=ENV)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the child closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(), out.decode()


def lines_of(text, command):
    # Each update starts with "\r"; the terminal turns "\n" into "\r\n".
    shown = [s.rstrip() for s in re.split(r"\r\n?|\n", text) if s.strip()]
    for s in shown:
        assert s.startswith(command + ": "), repr(text)
    return shown


with tempfile.TemporaryDirectory() as tmp:
    raw = os.path.join(tmp, "t.raw64")
    with open(raw, "wb") as f:
        f.write(b"".join(struct.pack("<Q", 64 * (i % 5000)) for i in range(500000)))
    size_mb = os.path.getsize(raw) / 1e6

    for command, args in (("sonde analyze", ["analyze", raw, "--tool", "reuse_distance"]),
                          ("sonde convert", ["convert", raw, "-o", os.path.join(tmp, "t.sonde")])):
        status, text = on_terminal(args)
        assert status == 0, (status, text)
        assert text.endswith("\n"), repr(text)
        shown = lines_of(text, command)
        percents = [int(m.group(1)) for s in shown for m in [re.search(r": (\d+)% of ([\d.]+) MB", s)] if m]
        assert len(percents) == len(shown) >= 2, shown  # the first at once, the last at the end
        assert percents == sorted(percents) and percents[-1] == 100, shown
        assert all(("%.1f MB" % size_mb) in s for s in shown), (size_mb, shown)
        assert shown[-1].startswith(command + ": 100% of ") and "0.5 M records" in shown[-1], shown
        assert "left" not in shown[-1], shown

    # A drmemtrace directory (zip thread files): the same line, ending at 100% of its files.
    tracedir = os.path.join(os.environ["SONDE_SHARED_DATA"], "drmemtrace", "core_serial",
                            "drmemtrace.threadsig.x64.tracedir")
    status, text = on_terminal(["analyze", tracedir])
    assert status == 0, (status, text)
    shown = lines_of(text, "sonde analyze")
    assert shown[-1].startswith("sonde analyze: 100% of ") and " kB, " in shown[-1], shown

    # An input of unknown size (a pipe): records and their rate.
    cat = subprocess.Popen(["cat", raw], stdout=subprocess.PIPE)
    status, text = on_terminal(["analyze", "-", "--format", "raw64"], stdin=cat.stdout)
    cat.stdout.close()
    assert cat.wait() == 0
    assert status == 0, (status, text)
    shown = lines_of(text, "sonde analyze")
    assert shown and all(re.search(r"M records, [\d.]+ s, [\d.]+ M records/s$", s) for s in shown), shown
    assert "%" not in text and "0.5 M records" in shown[-1], shown

    # Not a terminal: nothing.
    p = subprocess.run([SONDE, "analyze", raw], capture_output=True, text=True, env=ENV)
    assert p.returncode == 0 and p.stderr == "", p.stderr
print("ok")
