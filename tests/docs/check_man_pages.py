#!/usr/bin/env python3
"""The manual pages (docs/man) agree with the program and render cleanly.
Usage: check_man_pages.py SONDE MANDIR (MANDIR holds the configured pages, NAME.1).

- `sonde --help` lists the commands: each has a page sonde-COMMAND.1 and an entry in the COMMANDS
  section of sonde.1, and no page or entry names a command that does not exist.
- For sonde.1 and every command's page, the options that `--help` shows are exactly the options
  that the page's OPTIONS section documents (the tags of its .TP entries): none missing, none
  that does not exist. Each positional argument of `--help` appears in the SYNOPSIS.
- Every page has the sections NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS, EXAMPLES and
  SEE ALSO; its NAME line starts with its own name, and every sonde page it refers to exists.
- Every page renders with `groff -man -Tutf8 -ww` without a single warning (with `mandoc -Tlint`
  when groff is missing; the test is skipped when neither is installed and all else passed).
"""
import os
import re
import shutil
import subprocess
import sys

sonde, mandir = sys.argv[1], sys.argv[2]
errors = []
REQUIRED = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"]
OPTION_RE = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9_-]*)")


def help_text(*args):
    r = subprocess.run([sonde, *args, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        errors.append("sonde %s --help exits %d" % (" ".join(args), r.returncode))
    return r.stdout


def help_sections(text):
    """{section title: [lines]} of a help text: a title is a line 'Name:' at column 0."""
    sections, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z][A-Za-z ]*):\s*$", line)
        if m:
            current = sections.setdefault(m.group(1).lower(), [])
        elif line and not line[0].isspace():
            current = None
        elif current is not None:
            current.append(line)
    return sections


def help_options(text):
    opts = set()
    for line in help_sections(text).get("options", []):
        m = re.match(r"^\s+(--?[A-Za-z0-9][\w-]*(?:,\s?--?[A-Za-z0-9][\w-]*)*)(\s|$)", line)
        if m:
            opts.update(o.strip() for o in m.group(1).split(","))
    return opts


def help_positionals(text):
    return [m.group(1) for line in help_sections(text).get("positionals", [])
            for m in [re.match(r"^\s+([A-Z][A-Z0-9_]*)\b", line)] if m]


def plain(roff_line):
    """The text of one roff line, without its macro, quotes and font escapes."""
    s = re.sub(r"^\.[A-Z]{1,2}\b\s?", "", roff_line)
    s = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", s)
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "").replace("\\%", "")
    return s.replace('"', "")


def page_sections(path):
    sections, current = {}, None
    for line in open(path).read().splitlines():
        m = re.match(r'^\.SH\s+"?([^"]*)"?\s*$', line)
        if m:
            current = sections.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return sections


def tags(lines):
    """The tag lines of the .TP entries of a section, as text."""
    return [plain(lines[i + 1]) for i, line in enumerate(lines[:-1]) if line.startswith(".TP")]


def check_page(name, text_of_help, commands=None):
    path = os.path.join(mandir, name + ".1")
    if not os.path.isfile(path):
        errors.append("%s.1: missing" % name)
        return
    sections = page_sections(path)
    for s in REQUIRED:
        if s not in sections:
            errors.append("%s.1: no %s section" % (name, s))
    if "NAME" in sections:
        first = plain(next((l for l in sections["NAME"] if not l.startswith(".")), ""))
        if not first.startswith(name + " - "):
            errors.append("%s.1: the NAME line does not start with '%s - ': %r" % (name, name, first))
    documented = set()
    for tag in tags(sections.get("OPTIONS", [])):
        documented.update(OPTION_RE.findall(tag))
    shown = help_options(text_of_help)
    if not shown:
        errors.append("%s: no option found in --help" % name)
    for o in sorted(shown - documented):
        errors.append("%s.1: option %s of --help is not documented in OPTIONS" % (name, o))
    for o in sorted(documented - shown):
        errors.append("%s.1: OPTIONS documents %s, which --help does not show" % (name, o))
    synopsis = " ".join(plain(l) for l in sections.get("SYNOPSIS", []))
    for p in help_positionals(text_of_help):
        if not re.search(r"\b%s\b" % p, synopsis):
            errors.append("%s.1: the positional argument %s is not in SYNOPSIS" % (name, p))
    text = " ".join(plain(l) for l in open(path).read().splitlines())
    for ref in sorted(set(re.findall(r"\b(sonde(?:-[a-z]+)?)\s*\(1\)", text))):
        if not os.path.isfile(os.path.join(mandir, ref + ".1")):
            errors.append("%s.1: refers to %s(1), which has no page" % (name, ref))
    if commands is not None:
        listed = set()
        for tag in tags(sections.get("COMMANDS", [])):
            words = tag.split()
            if words:
                listed.add(words[0])
        for c in sorted(set(commands) - listed):
            errors.append("%s.1: the command %s is not in COMMANDS" % (name, c))
        for c in sorted(listed - set(commands)):
            errors.append("%s.1: COMMANDS lists %s, which sonde --help does not" % (name, c))
    return path


main_help = help_text()
commands = [m.group(1) for line in help_sections(main_help).get("commands", [])
            for m in [re.match(r"^ {2}([a-z][\w-]*)(\s|$)", line)] if m]
if not commands:
    errors.append("sonde --help lists no command")
pages = [check_page("sonde", main_help, commands)]
for c in commands:
    pages.append(check_page("sonde-" + c, help_text(c)))
for f in sorted(os.listdir(mandir)):
    m = re.match(r"^sonde-([\w-]+)\.1$", f)
    if m and m.group(1) not in commands:
        errors.append("%s: a page of a command that sonde --help does not list" % f)

renderer = None
if shutil.which("groff"):
    renderer = ["groff", "-man", "-Tutf8", "-ww", "-z"]
elif shutil.which("mandoc"):
    renderer = ["mandoc", "-Tlint", "-Wwarning"]
rendered = 0
if renderer:
    for path in [p for p in pages if p]:
        r = subprocess.run(renderer + [path], capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL="C.UTF-8"))
        rendered += 1
        if r.returncode != 0 or r.stderr.strip() or (renderer[0] == "mandoc" and r.stdout.strip()):
            errors.append("%s: %s reports:\n%s%s" % (os.path.basename(path), renderer[0], r.stdout,
                                                     r.stderr))

for e in errors:
    print("FAIL: " + e)
print("%d commands, %d pages checked against --help, %d rendered%s"
      % (len(commands), len([p for p in pages if p]), rendered,
         " with " + renderer[0] if renderer else ""))
if errors:
    sys.exit(1)
if not renderer:
    print("neither groff nor mandoc is installed: the pages were not rendered (scripts/deps.sh)")
    sys.exit(77)
