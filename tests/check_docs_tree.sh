#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# docs/architecture.md's source layout names every file of dataplane/,
# control/, bpf/ and pktgen/ (C sources, headers, meson.build, scripts), and
# names no file that does not exist. A line "dir/name.{h,c}" stands for both.
# Then the claims of its text that the sources can answer (see "claims"
# below): numbers against the constants they quote, the tick's work list
# against on_tick, every `lb_*`/`LB_*` name against the sources.
# usage: check_docs_tree.sh SOURCE_ROOT
set -euo pipefail
root=${1:?usage: check_docs_tree.sh SOURCE_ROOT}
doc=$root/docs/architecture.md
rc=0
/usr/bin/python3 - "$root" "$doc" <<'PY' || rc=1
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
/usr/bin/python3 - "$root" "$doc" <<'PY' || rc=1
import os, re, sys
root, doc = sys.argv[1], sys.argv[2]
text = re.sub(r"\s+", " ", open(doc).read())
bad = []

def src(path):
    return open(os.path.join(root, path)).read()

def define(path, name):
    m = re.search(r"^#define %s\s+\(?(\d+)u?(?:ull)?\)?" % name, src(path), re.M)
    if not m:
        bad.append("%s: no #define %s" % (path, name))
        return None
    return int(m.group(1))

def claim(what, pattern, want):
    """The number the text says (pattern's group 1) equals want."""
    m = re.search(pattern, text)
    if not m:
        bad.append("%s: the text no longer says it (pattern %r)" % (what, pattern))
    elif want is not None and int(m.group(1)) != want:
        bad.append("%s: the text says %s, the code %s" % (what, m.group(1), want))

# Numbers quoted with the constant that holds them.
stall = define("control/runtime/publish.h", "LB_PUBLISH_STALL_MS")
m = re.search(r"a worker silent for (\d+) (ms|s) \(`LB_PUBLISH_STALL_MS`\)", text)
if not m:
    bad.append("stall time: the text no longer quotes LB_PUBLISH_STALL_MS")
elif stall is not None and int(m.group(1)) * (1000 if m.group(2) == "s" else 1) != stall:
    bad.append("stall time: the text says %s %s, LB_PUBLISH_STALL_MS is %d ms"
               % (m.group(1), m.group(2), stall))
claim("backend id bits", r"backend \*id\* \((\d+) bits: `LB_FLOW_BACKEND_BITS`",
      define("dataplane/flow_table.h", "LB_FLOW_BACKEND_BITS"))
claim("backend limit", r"`LB_MAX_BACKENDS` = (\d+)",
      define("dataplane/snapshot.h", "LB_MAX_BACKENDS"))
claim("retire list", r"The retire list holds at most (\d+) snapshots",
      define("control/runtime/publish.h", "LB_PUBLISH_RETIRE_MAX"))
claim("control tick", r"and a (\d+) ms timerfd", define("control/control.c", "TICK_MS"))
wait = define("control/runtime/publish.c", "PUB_WAIT_MAX_NS")
claim("publication wait", r"bounded to (\d+) ms", wait // 1000000 if wait else None)
claim("metrics connections", r"at most (\d+) connections \(`LB_METRICS_HTTP_MAX_CONNS`",
      define("control/io/metrics_http.h", "LB_METRICS_HTTP_MAX_CONNS"))
req = define("control/io/metrics_http.h", "LB_METRICS_HTTP_MAX_REQUEST")
claim("metrics request size", r"of at most (\d+) KiB \(`LB_METRICS_HTTP_MAX_REQUEST`",
      req // 1024 if req else None)
words = {"One": 1, "Two": 2, "Three": 3, "Four": 4, "Five": 5}
m = re.search(r"(\w+) hooks exist", text)
n_hooks = define("dataplane/main.c", "N_HOOKS")
if not m or words.get(m.group(1)) != n_hooks:
    bad.append("hooks: the text says %r hooks exist, dataplane/main.c's N_HOOKS is %s"
               % (m.group(1) if m else None, n_hooks))

# The tick's work list: the names in "Each tick (`on_tick`), in order: ..." are
# on_tick's calls (and verdicts), in its order, and none of its calls is left out.
m = re.search(r"Each tick \(`on_tick`\), in order: (.*?)\. It owns", text)
body = re.search(r"\non_tick\(struct lb_control \*c\)\n\{\n(.*?)\n\}\n",
                 src("control/control.c"), re.S)
if not m or not body:
    bad.append("tick: the text's work list or control.c's on_tick is not found")
else:
    said = re.findall(r"`((?:lb_|TICK_)\w+)`", m.group(1))
    code = [c for c in re.findall(r"\b((?:lb_\w+_tick|lb_\w+_refresh|TICK_[A-Z_]+)\b)",
                                  body.group(1)) if c not in ("TICK_GO_ON", "TICK_MS")]
    code = [c for i, c in enumerate(code) if c not in code[:i]]
    if said != code:
        bad.append("tick: the text lists %s, on_tick does %s" % (said, code))

# Every `lb_*`, `LB_*` and `TICK_*` name the text quotes exists in the sources.
names = set(re.findall(r"`((?:lb_|LB_|TICK_)[A-Za-z0-9_]+)`", text))
corpus = ""
for top in ("dataplane", "control", "bpf", "pktgen"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith((".c", ".h")):
                corpus += open(os.path.join(d, f), errors="replace").read()
for n in sorted(names):
    if not re.search(r"\b%s\b" % re.escape(n), corpus):
        bad.append("`%s`: quoted in docs/architecture.md, found in no source" % n)

for b in bad:
    print("docs/architecture.md claim: " + b)
print("%d quoted names, the numbers and the tick's work list checked" % len(names))
sys.exit(1 if bad else 0)
PY
exit $rc
