#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# docs/architecture.md's source layout names every file of dataplane/,
# control/, bpf/ and pktgen/ (C sources, headers, meson.build, scripts), and
# names no file that does not exist. A line "dir/name.{h,c}" stands for both.
# usage: check_docs_tree.sh SOURCE_ROOT
set -euo pipefail
root=${1:?usage: check_docs_tree.sh SOURCE_ROOT}
doc=$root/docs/architecture.md
/usr/bin/python3 - "$root" "$doc" <<'PY'
import os, re, sys
root, doc = sys.argv[1], sys.argv[2]
text = open(doc).read()
sec = text.split("## Source layout", 1)[1].split("\n## ", 1)[0]
listed, dirs = set(), set()
for line in sec.splitlines():
    m = re.match(r"^    (\S+)", line)
    if not m:
        continue
    name = m.group(1)
    if name.endswith("/"):
        dirs.add(name)
        continue
    b = re.match(r"^(.*)\.\{([^}]*)\}$", name)
    if b:
        for ext in b.group(2).split(","):
            listed.add(b.group(1) + "." + ext)
    else:
        listed.add(name)
actual = set()
for top in ("dataplane", "control", "bpf", "pktgen"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith((".c", ".h", ".sh")) or f == "meson.build":
                actual.add(os.path.relpath(os.path.join(d, f), root))
covered = lambda p: p in listed or any(p.startswith(d) for d in dirs)
missing = sorted(p for p in actual if not covered(p))
stale = sorted(p for p in listed if not os.path.exists(os.path.join(root, p)))
stale += sorted(d for d in dirs if not os.path.isdir(os.path.join(root, d)))
for p in missing:
    print("not in docs/architecture.md's source layout: " + p)
for p in stale:
    print("listed in docs/architecture.md but missing: " + p)
print("%d files, %d listed lines checked" % (len(actual), len(listed) + len(dirs)))
sys.exit(1 if missing or stale else 0)
PY
