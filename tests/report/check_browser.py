#!/usr/bin/env python3
"""Browser tests of the report's outputs, in headless Chromium driven by browser.js:
  html        `sonde report --html` on the fixture, with real `sonde analyze --json` results
              (cache_sim and reuse_distance over a small lackey trace): flame graph, hover, zoom,
              tables equal to the JSON report, escaping, analysis section, no network.
  speedscope  `sonde export --format chrome` and `--format folded` opened in speedscope's own
              viewer (npm package, in node_modules/ at the source root: scripts/deps.sh).
Screenshots are kept in OUTDIR. Exits 77 (skipped) when chromium, node or speedscope is
missing. Usage: check_browser.py SONDE html|speedscope OUTDIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402

sonde, mode, outdir = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
here = os.path.dirname(os.path.abspath(__file__))
root = os.environ.get("SONDE_SOURCE_ROOT", os.path.dirname(os.path.dirname(here)))

chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
node = shutil.which("node") or shutil.which("nodejs")
if not chromium or not node:
    print("SKIP: needs chromium and node (missing: %s)" % ", ".join(
        n for n, p in (("chromium", chromium), ("node", node)) if not p))
    sys.exit(77)
speedscope = os.path.join(root, "node_modules", "speedscope", "dist", "release", "index.html")
if mode == "speedscope" and not os.path.exists(speedscope):
    print("SKIP: speedscope is not installed in %s (scripts/deps.sh installs it)" % os.path.dirname(speedscope))
    sys.exit(77)


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print("FAIL: %s exited %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        sys.exit(1)
    return r


def browse(*args):
    env = dict(os.environ, CHROMIUM=chromium)
    r = subprocess.run([node, os.path.join(here, "browser.js")] + list(args), capture_output=True, text=True,
                       timeout=300, env=env)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode != 0:
        sys.exit(1)


os.makedirs(outdir, exist_ok=True)
with tempfile.TemporaryDirectory() as tmp:
    events = os.path.join(tmp, "calls.txt")
    fixture.write(events)
    if mode == "html":
        # A small lackey trace: a loop over two arrays, for cache_sim and reuse_distance.
        lackey = os.path.join(tmp, "loop.lackey")
        with open(lackey, "w") as f:
            for rep in range(4):
                for i in range(600):
                    f.write("I  %08X,4\n" % (0x400000 + 4 * (i % 32)))
                    f.write(" L %08X,8\n" % (0x10000000 + 64 * i))
                    if i % 3 == 0:
                        f.write(" S %08X,8\n" % (0x20000000 + 8 * i))
        analysis = os.path.join(tmp, "analysis.json")
        run(sonde, "analyze", lackey, "--format", "lackey", "--tool", "cache_sim,reuse_distance",
            "--cache", "L1:4K:4:64,LL:64K:8:64", "--json", analysis)
        report_json = os.path.join(tmp, "report.json")
        page = os.path.join(outdir, "report-browser.html")
        run(sonde, "report", events, "--json", report_json, "--html", page, "--analysis", analysis, "-q")
        browse("html", page, report_json, analysis, os.path.join(outdir, "report-browser.png"))
    else:
        # speedscope makes one profile per thread of a chrome trace, one of folded stacks.
        # For folded stacks, its sandwich view's total and self weights must be the report's.
        want, per_thread = fixture.expected()
        threads = [sorted(per_thread[t]) for t in sorted(per_thread)]
        weights = {name: [v[1], v[2]] for name, v in want.items()}
        for fmt, ext, views in (("chrome", "json", threads), ("folded", "folded", [weights])):
            out = os.path.join(tmp, "calls-%s.%s" % (fmt, ext))
            run(sonde, "export", events, "--format", fmt, "-o", out)
            browse("speedscope", speedscope, out, json.dumps(views), os.path.join(outdir, "speedscope-%s.png" % fmt))
print("browser checks passed")
