#!/usr/bin/env python3
"""`sonde analyze` with a tool shared object and its options (--tool PATH=OPTIONS), and the
metadata block of its JSON results. argv: the sonde executable, the FIXTURE_GOOD tool (which
names itself "fixture_named" when it has options and echoes them in its results)."""
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

SONDE, FIXTURE = sys.argv[1], os.path.abspath(sys.argv[2])


def run(*args, code=0):
    p = subprocess.run([SONDE, *args], capture_output=True, text=True)
    if p.returncode != code:
        sys.exit(f"sonde {' '.join(args)}: exit {p.returncode}, expected {code}\n{p.stdout}\n{p.stderr}")
    return p


with tempfile.TemporaryDirectory() as tmp:
    trace = os.path.join(tmp, "t.lackey")
    with open(trace, "w") as f:
        f.write("I  00400000,4\n L 00001000,8\n S 00001040,8\n")
    out = os.path.join(tmp, "out.json")

    # The options run to the end of the value, commas and '=' included.
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    run("analyze", trace, "--tool", "basic_counts," + FIXTURE + "=k=1,j=2", "--json", out)
    after = datetime.datetime.now(datetime.timezone.utc)
    with open(out) as f:
        text = f.read()
    j = json.loads(text)
    assert j["fixture_named"] == {"records": 3, "options": "k=1,j=2"}, j
    assert j["basic_counts"]["total"] == 3, j
    assert text.startswith('{\n  "metadata": {'), text[:40]

    m = j["metadata"]
    assert list(m) == ["sonde_version", "command", "inputs", "options", "start_time"], m
    version = run("--version").stdout.split()[1]
    assert m["sonde_version"] == version, (m, version)
    assert m["command"] == "analyze" and m["inputs"] == [trace], m
    assert m["options"] == {"format": "auto",
                            "tools": [{"name": "basic_counts", "options": ""},
                                      {"name": FIXTURE, "options": "k=1,j=2"}],
                            "serial": False, "jobs": 0, "strict": False}, m["options"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m["start_time"]), m
    start = datetime.datetime.strptime(m["start_time"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)
    assert before <= start <= after, (before, start, after)

    # The built-in tools' options as the analyzer got them.
    run("analyze", trace, "--tool", "reuse_distance,cache_sim", "--cache", "D1:1K:2:64",
        "--line-size", "32", "--jobs", "2", "--serial", "--format", "lackey", "--json", out)
    with open(out) as f:
        m = json.load(f)["metadata"]
    assert m["options"] == {"format": "lackey",
                            "tools": [{"name": "reuse_distance", "options": "line_size=32,jobs=2"},
                                      {"name": "cache_sim", "options": "D1:1K:2:64"}],
                            "serial": True, "jobs": 2, "strict": False}, m["options"]

    # Two tool objects, each with its own options, in two --tool values.
    copy = os.path.join(tmp, "fixture_copy.so")
    with open(FIXTURE, "rb") as src, open(copy, "wb") as dst:
        dst.write(src.read())
    p = run("analyze", trace, "--tool", FIXTURE + "=a", "--tool", copy, "--json", out)
    with open(out) as f:
        j = json.load(f)
    assert j["fixture_named"]["options"] == "a" and j["fixture"] == {"records": 3}, j

    # Options are for tool objects only; the built-in tools take theirs from their own flags.
    p = run("analyze", trace, "--tool", "basic_counts=line_size=8", code=2)
    assert "only a tool shared object" in p.stderr and "basic_counts=line_size=8" in p.stderr, p.stderr
    p = run("analyze", trace, "--tool", FIXTURE + "=x", "--tool", FIXTURE, code=2)
    assert "twice" in p.stderr, p.stderr
    p = run("analyze", trace, "--tool", "basic_counts,," + FIXTURE + "=x", code=2)
    assert "empty item" in p.stderr, p.stderr
    p = run("analyze", trace, "--tool", os.path.join(tmp, "missing.so") + "=x", code=2)
    assert "missing.so" in p.stderr, p.stderr

    print("ok")
