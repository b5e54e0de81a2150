#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The mutation check: does the suite fail when the code is wrong?

Reads a list of mutations (tests/mutation/mutations.txt: file, the exact text
to find, its replacement, the meson tests expected to catch it), then, in a
scratch copy of the tree built once, applies each mutation alone, rebuilds,
runs the tests it names (or the whole suite with --full) and restores the
file. A mutation is

  caught     a named test failed (or the mutated tree no longer builds, which
             is reported apart: the compiler caught it, not a test);
  survived   every test passed: a fault the suite lets through;
  invalid    its text is not in the file exactly once: the list is stale.

Exit status 0 only if every mutation was caught by a test. Not part of CI (a
full run takes long); docs/testing.md says when to run it.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse(path):
    """Blocks of 'key: value' lines separated by blank lines; find/replace may
    continue on following lines indented by a tab (a literal newline)."""
    muts, cur, last = [], {}, None
    for lineno, raw in enumerate(open(path), 1):
        line = raw.rstrip("\n")
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                muts.append(cur)
            cur, last = {}, None
            continue
        if line.startswith("\t") and last in ("find", "replace"):
            cur[last] += "\n" + line[1:]
            continue
        m = re.match(r"^(id|file|find|replace|tests|why):\s?(.*)$", line)
        if not m:
            sys.exit("%s:%d: expected 'key: value', got %r" % (path, lineno, line))
        cur[m.group(1)] = m.group(2)
        cur.setdefault("line", lineno)
        last = m.group(1)
    if cur:
        muts.append(cur)
    for m in muts:
        for k in ("id", "file", "find", "replace", "tests"):
            if k not in m:
                sys.exit("%s:%d: mutation without '%s'" % (path, m["line"], k))
        m["tests"] = m["tests"].split()
    ids = [m["id"] for m in muts]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        sys.exit("%s: duplicate ids: %s" % (path, ", ".join(sorted(dup))))
    return muts


def run(cmd, cwd, log, timeout=None):
    with open(log, "a") as f:
        f.write("$ %s\n" % " ".join(cmd))
        f.flush()
        try:
            return subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            f.write("timed out after %s s\n" % timeout)
            return 124


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", default=os.path.join(ROOT, "tests/mutation/mutations.txt"))
    ap.add_argument("--only", nargs="*", default=[], help="ids to run (default: all)")
    ap.add_argument("--full", action="store_true",
                    help="run the whole meson suite for each mutation, not only its tests")
    ap.add_argument("--work", help="scratch directory (default: a new one, removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--check", action="store_true",
                    help="only check that every mutation's text is found exactly once")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per test run")
    a = ap.parse_args()

    muts = parse(a.list)
    if a.only:
        muts = [m for m in muts if m["id"] in a.only]
        if not muts:
            sys.exit("no mutation with those ids")
    stale = []
    for m in muts:
        text = open(os.path.join(ROOT, m["file"])).read()
        n = text.count(m["find"])
        if n != 1:
            stale.append("%s: %s: the text is found %d times (must be once)" % (m["id"], m["file"], n))
    for s in stale:
        print("invalid   " + s)
    if a.check:
        print("%d mutations, %d invalid" % (len(muts), len(stale)))
        return 1 if stale else 0
    if stale:
        return 1

    work = a.work or tempfile.mkdtemp(prefix="spw-mutate.")
    # mkdtemp makes it 0700; the privilege test runs the built spillwayd as
    # an unprivileged user, who must be able to reach it.
    os.chmod(work, 0o755)
    src, build, log = os.path.join(work, "src"), os.path.join(work, "build"), os.path.join(work, "log")
    print("scratch copy: %s (log: %s)" % (work, log))
    if os.path.isdir(src):
        print("reusing the copy in %s as it was made (%s): remove it to test the current tree"
              % (src, time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(src)))),
              flush=True)
    else:
        files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        for f in files:
            if os.path.isfile(os.path.join(ROOT, f)):
                os.makedirs(os.path.dirname(os.path.join(src, f)), exist_ok=True)
                shutil.copy2(os.path.join(ROOT, f), os.path.join(src, f))
    if not os.path.isfile(os.path.join(build, "build.ninja")):
        if run(["meson", "setup", build, src, "-Dbenchmarks=disabled"], work, log) != 0:
            sys.exit("meson setup failed: see %s" % log)
    if run(["ninja", "-C", build], work, log) != 0:
        sys.exit("the unmutated tree does not build: see %s" % log)
    listing = subprocess.run(["meson", "test", "-C", build, "--list"], capture_output=True,
                             text=True).stdout.splitlines()
    known = {l.split(" / ")[-1].strip() for l in listing if " / " in l}
    for m in muts:
        missing = [t for t in m["tests"] if t not in known]
        if missing:
            sys.exit("%s: unknown tests %s" % (m["id"], " ".join(missing)))

    # Baseline: the unmutated tree must pass the tests the mutations name, or
    # a failure would be credited to every mutation.
    named = [] if a.full else sorted({t for m in muts for t in m["tests"]})
    with open(log, "a") as f:
        f.write("\n==== baseline (unmutated)\n")
    if run(["meson", "test", "-C", build, "--no-rebuild", "--num-processes", "2",
            "--print-errorlogs"] + named, work, log, a.timeout) != 0:
        out = open(log).read().rsplit("==== baseline ", 1)[-1]
        bad = re.findall(r"\d+/\d+ \S+ / (\S+)\s+(?:FAIL|TIMEOUT|ERROR)", out)
        sys.exit("the unmutated tree fails %s: see %s" % (" ".join(sorted(set(bad))) or "its tests", log))
    print("baseline: the unmutated tree passes %s" % ("the whole suite" if a.full else
                                                      "%d named tests" % len(named)), flush=True)

    results = []
    for i, m in enumerate(muts, 1):
        path = os.path.join(src, m["file"])
        orig = open(path).read()
        t0 = time.time()
        try:
            open(path, "w").write(orig.replace(m["find"], m["replace"], 1))
            with open(log, "a") as f:
                f.write("\n==== %s (%s)\n" % (m["id"], m["file"]))
            if run(["ninja", "-C", build], work, log) != 0:
                verdict, by = "compile", "the compiler"
            else:
                tests = [] if a.full else m["tests"]
                rc = run(["meson", "test", "-C", build, "--no-rebuild", "--num-processes", "2",
                          "--print-errorlogs"] + tests, work, log, a.timeout)
                if rc == 0:
                    verdict, by = "survived", ""
                else:
                    out = open(log).read().rsplit("==== %s " % m["id"], 1)[-1]
                    failed = re.findall(r"\d+/\d+ \S+ / (\S+)\s+(?:FAIL|ERROR)", out)
                    slow = re.findall(r"\d+/\d+ \S+ / (\S+)\s+TIMEOUT", out)
                    # A test that only ran out of time says nothing about the
                    # mutation on a loaded machine: not counted as caught.
                    verdict = "caught" if failed or not slow else "timeout"
                    by = ", ".join(sorted(set(failed or slow))) or "rc %d" % rc
        finally:
            open(path, "w").write(orig)
        dt = time.time() - t0
        results.append((m, verdict, by))
        print("[%2d/%d] %-9s %-34s %-28s %5.0f s  %s" % (i, len(muts), verdict, m["id"], m["file"],
                                                      dt, by), flush=True)
    # The tree as it was, so --work can be reused.
    run(["ninja", "-C", build], work, log)

    caught = sum(1 for _, v, _ in results if v == "caught")
    comp = sum(1 for _, v, _ in results if v == "compile")
    surv = [m["id"] for m, v, _ in results if v == "survived"]
    slow = [m["id"] for m, v, _ in results if v == "timeout"]
    print("%d mutations: %d caught by tests, %d by the compiler, %d survived%s, %d only timed out%s"
          % (len(results), caught, comp, len(surv), (": " + " ".join(surv)) if surv else "",
             len(slow), (": " + " ".join(slow)) if slow else ""))
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
