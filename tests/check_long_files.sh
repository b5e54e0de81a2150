#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# No C file over 800 lines without a reason at its top: every .c file of the
# tree (the file system's list) longer than that says "Over 800 lines" in the
# comment before its first #include. "allow FILE" below names a long file known
# to lack the reason; the check fails when such a file no longer needs it, so
# the list only shrinks.
# usage: check_long_files.sh SOURCE_ROOT
set -euo pipefail
root=${1:?usage: check_long_files.sh SOURCE_ROOT}
/usr/bin/python3 - "$root" <<'PY'
import os, sys
root = sys.argv[1]
LIMIT = 800
# Long files without the reason, known and kept (relative to the root).
allow = set()
bad, seen = [], set()
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
    for f in files:
        if not f.endswith(".c"):
            continue
        p = os.path.join(d, f)
        rel = os.path.relpath(p, root)
        text = open(p, errors="replace").read()
        if text.count("\n") <= LIMIT:
            continue
        head = text.split("#include", 1)[0]
        if "Over 800 lines" in head:
            if rel in allow:
                bad.append("%s: says why now; remove it from the allow list" % rel)
            continue
        if rel in allow:
            seen.add(rel)
            continue
        bad.append("%s: %d lines and no \"Over 800 lines\" reason before its first #include"
                   % (rel, text.count("\n")))
for rel in sorted(allow - seen):
    if not any(b.startswith(rel + ":") for b in bad):
        bad.append("%s: allowed but no longer over %d lines without a reason" % (rel, LIMIT))
for b in bad:
    print("check_long_files: " + b)
print("C files over %d lines checked, %d allowed" % (LIMIT, len(seen)))
sys.exit(1 if bad else 0)
PY
