#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A man page (roff) from a program's --help text: the "Usage:" lines become
SYNOPSIS, the first paragraph DESCRIPTION, every later "Heading:" line a
section; the text is kept as written (no fill), so it reads as --help does.

usage: man_from_help.py --name NAME --section N --summary TEXT
                        --source TEXT --output FILE [--see-also PAGE...] -- PROGRAM [ARGS...]
"""
import argparse
import datetime
import os
import re
import subprocess
import sys


def esc(line):
    """roff-escape one line of literal text."""
    line = line.replace("\\", "\\e").replace("-", "\\-")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def block(lines):
    """A literal block: no fill, no adjustment; blank lines kept."""
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return []
    out = [".nf"]
    out += [esc(l.rstrip()) if l.strip() else ".sp" for l in lines]
    out.append(".fi")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--section", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--see-also", nargs="*", default=[])
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        ap.error("no program to run (after --)")
    a = ap.parse_args(argv[:argv.index("--")])
    prog = argv[argv.index("--") + 1:]
    res = subprocess.run(prog, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=60, env=dict(os.environ, LC_ALL="C"))
    if res.returncode != 0 or not res.stdout.strip():
        sys.exit("man_from_help.py: %s exited %d: %s" % (" ".join(prog), res.returncode,
                                                          res.stderr.strip()))
    text = res.stdout.expandtabs().splitlines()

    usage, i = [], 0
    while i < len(text) and (text[i].startswith("Usage:") or (usage and text[i].startswith(" "))):
        usage.append(re.sub(r"^(Usage:)?\s*", "", text[i]))
        i += 1
    sections = [("DESCRIPTION", [])]
    for line in text[i:]:
        m = re.match(r"^([A-Z][A-Za-z ,()-]*):\s*$", line)
        if m:
            sections.append((m.group(1).upper(), []))
        else:
            sections[-1][1].append(line)

    # SOURCE_DATE_EPOCH (set by dpkg-buildpackage) makes the page reproducible.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    date = datetime.datetime.utcfromtimestamp(int(epoch)).strftime("%Y-%m-%d") if epoch else ""
    out = ['.TH "%s" "%s" "%s" "%s" "%s"' % (a.name.upper(), a.section, date, a.source,
                                              "spillway")]
    out += [".SH NAME", "%s \\- %s" % (esc(a.name), esc(a.summary))]
    if usage:
        out += [".SH SYNOPSIS"] + block(usage)
    for title, lines in sections:
        body = block(lines)
        if body:
            out += [".SH " + esc(title)] + body
    if a.see_also:
        out += [".SH SEE ALSO", ", ".join("\\fB%s\\fR(%s)" % tuple(p.rsplit(".", 1))
                                          for p in a.see_also)]
    with open(a.output, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
