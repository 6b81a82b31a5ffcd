#!/usr/bin/env python3
"""Writing traces on a full disk, simulated by a file-size limit: each program runs in a child
with RLIMIT_FSIZE set and SIGXFSZ ignored, so that a write past the limit fails with EFBIG as on
a full disk instead of killing the process.

1. `sonde convert` past the limit: exit 1, a message naming the output and the reason, and
   nothing left on disk (no output, no temporary file); an existing output (--force) is kept
   as it was. Without the limit the same conversion succeeds.
2. sonde_trace_buffer_consumer recording a live session past the limit (trace_consumer_full_disk):
   the program does not crash, sonde_trace_writer_close answers ERROR_IO, the writer's message
   names the file, and the file is a truncated trace that the reader recovers by scanning
   (`sonde convert` warns, and refuses it with --strict).

Usage: check_full_disk.py SONDE_EXE CONSUMER_EXE"""
import os
import resource
import signal
import subprocess
import sys
import tempfile

sonde, consumer = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def limited(limit):
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def run(cmd, limit=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          preexec_fn=limited(limit) if limit is not None else None)


with tempfile.TemporaryDirectory() as tmp:
    # 200,000 raw64 addresses that compress poorly: a trace of about 3 MB.
    raw = os.path.join(tmp, "in.raw64")
    x = 0x9E3779B97F4A7C15
    words = bytearray()
    for _ in range(200000):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        words += x.to_bytes(8, "little")
    with open(raw, "wb") as f:
        f.write(words)
    out_dir = os.path.join(tmp, "out")
    os.mkdir(out_dir)
    out = os.path.join(out_dir, "t.sonde")

    # 1. sonde convert. The limit is far below the input's size: the failure comes while chunks
    # are written, and again with a limit below the header (the writer fails at once).
    for limit in (256 * 1024, 32):
        r = run([sonde, "convert", raw, "-o", out, "--chunk-records", "4096"], limit)
        check(r.returncode == 1, "convert past a %d-byte limit exits 1 (got %d)" % (limit, r.returncode))
        check(out in r.stderr and "was not written" in r.stderr,
              "the message names the output and says it was not written: %r" % r.stderr)
        check(os.listdir(out_dir) == [], "nothing is left in the output directory: %s" % os.listdir(out_dir))
    r = run([sonde, "convert", raw, "-o", out, "--chunk-records", "4096"], 256 * 1024)
    check("File too large" in r.stderr, "the reason is the write error: %r" % r.stderr)

    # An existing output is left as it was.
    with open(out, "wb") as f:
        f.write(b"precious")
    r = run([sonde, "convert", raw, "-o", out, "--force"], 256 * 1024)
    check(r.returncode == 1, "convert --force past the limit exits 1")
    check(open(out, "rb").read() == b"precious", "the existing output is unchanged")
    check(sorted(os.listdir(out_dir)) == ["t.sonde"], "no temporary file is left: %s" % os.listdir(out_dir))

    r = run([sonde, "convert", raw, "-o", out, "--force"])
    check(r.returncode == 0 and "200000 records" in r.stdout, "without the limit it converts: %s" % r.stderr)

    # 2. The buffer consumer. 2 x 100,000 records at 1024 per chunk write about 5 MB.
    live = os.path.join(tmp, "live.sonde")
    limit = 64 * 1024
    r = run([consumer, live, "100000"], limit)
    check(r.returncode == 0, "the consumer program ends normally under the limit (exit %d): %s"
          % (r.returncode, r.stderr))
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    check(lines.get("close") == "SONDE_STATUS_ERROR_IO",
          "sonde_trace_writer_close answers ERROR_IO: %r" % r.stdout)
    msg = lines.get("error", "")
    check(msg.startswith(live) and "File too large" in msg,
          "the writer's message names the file and the reason: %r" % msg)
    size = os.path.getsize(live) if os.path.exists(live) else -1
    check(0 < size <= limit, "the file holds what fit under the limit (%d bytes)" % size)
    copy = os.path.join(tmp, "recovered.sonde")
    r = run([sonde, "convert", live, "-o", copy, "--strict"])
    check(r.returncode == 1 and "warning:" in r.stderr and not os.path.exists(copy),
          "convert --strict refuses the truncated trace: %r" % r.stderr)
    r = run([sonde, "convert", live, "-o", copy])
    check(r.returncode == 0 and "warning:" in r.stderr and "recovered" in r.stderr,
          "convert recovers the complete chunks and warns: %r" % r.stderr)

    r = run([consumer, live, "100000"])
    check(r.returncode == 0 and "close SONDE_STATUS_SUCCESS" in r.stdout,
          "without the limit the consumer closes cleanly: %r %r" % (r.stdout, r.stderr))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
