#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Instructions per packet of every bench_pipeline case against a budget file.

Runs bench_pipeline under valgrind --tool=callgrind, which counts the
instructions that each case's timed lb_pipeline_burst calls execute (and
nothing else: bench_pipeline.c switches instrumentation on for a case's
pipeline rounds and collection on around each timed call, then dumps the
count under the label "NAME/FLOWS"). Instructions per packet = that count /
the packets of the case's rounds (rounds x packets per round, from the
benchmark's --json output). The count does not depend on the machine's load
or clock: the same binary on the same input executes the same instructions.

Each case is compared with its budget in BUDGET (tests/bench/ipp_budget.json):

  budget x (1 + margin) < measured   FAIL: the path got dearer
  measured < budget x (1 - margin)   FAIL: the path got cheaper; lower the
                                     budget so that the saving is kept
  a case without a budget, or a budgeted case not measured: FAIL

The budgets hold for one build configuration (compiler, version, -O level)
and one code path (the widest flow hash valgrind's CPU offers: AVX2 here,
valgrind 3.19 has no AVX-512), all recorded in BUDGET: a build that differs
is not comparable and the guard exits 77 (SKIP) saying why. It also exits 77
where valgrind is not installed (scripts/setup.sh installs it).

usage: ipp_guard.py [--compiler ID-VERSION] [--optimization LEVEL] [--update]
                    [--keep DIR] BENCH_PIPELINE BUDGET_JSON

--update writes the measured figures into BUDGET as the new budgets (the
margin is kept) and records this build and machine: for a change that makes
a path legitimately dearer or cheaper (docs/benchmarks.md). --keep DIR keeps
the callgrind files (callgrind_annotate DIR/callgrind.out.N shows where a
case's instructions go).
"""

import argparse
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
TRIGGER = "desc: Trigger: Client Request: "  # a callgrind dump's label line
# The benchmark's sizes under the guard: 3 rounds of 32768 packets per hit
# case and of 8192 fresh flows per new-flow case, the full million flows
# resident (as in the wall-clock benchmark) so the 1M cases keep their load.
BENCH_ENV = {"SPILLWAY_BENCH_QUICK": "1", "SPILLWAY_BENCH_FLOWS": "1000000"}


def machine():
    """The host's CPU, as lscpu names it, and its vector ISA."""
    info, flags = {}, set()
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            k, v = k.strip(), v.strip()
            if k == "flags":
                flags = set(v.split())
                break
            info.setdefault(k, v)
    except OSError:
        pass
    isa = [f for f in ("avx2", "avx512f") if f in flags]
    return "%s (%s family %s model %s), %d CPUs, host ISA: %s" % (
        info.get("model name", "?"), info.get("vendor_id", "?"), info.get("cpu family", "?"),
        info.get("model", "?"), os.cpu_count() or 0, " ".join(isa) or "no AVX2")


def load():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def isa_path(stdout):
    """The widest flow hash the benchmark found usable (its hash-check line)."""
    m = re.search(r"hash check: x4 \(AVX2\) (\w+), x8 and x8s \(AVX-512F\) (\w+)", stdout)
    if not m:
        return "scalar"
    if m.group(2) == "checked":
        return "avx512f"
    return "avx2" if m.group(1) == "checked" else "scalar"


def callgrind_counts(outdir):
    """{label: instructions} of every dump bench_pipeline asked for."""
    counts = {}
    for path in glob.glob(os.path.join(outdir, "callgrind.out.*")):
        label, total = None, None
        with open(path) as f:
            for line in f:
                if line.startswith(TRIGGER):
                    label = line[len(TRIGGER):].strip()
                elif line.startswith("summary:"):
                    total = int(line.split()[1])
                elif line.startswith("fl=") or line.startswith("ob="):
                    break  # the header is over
        if label is not None and total is not None:
            counts[label] = total
    return counts


def packets(bench_json):
    """{NAME/FLOWS: packets timed} from the benchmark's --json results."""
    out = {}
    for r in json.load(open(bench_json))["results"]:
        if "rounds" in r and "packets_per_round" in r and "stage" not in r:
            out["%s/%d" % (r["name"], r["flows"])] = r["rounds"] * r["packets_per_round"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench")
    ap.add_argument("budget")
    ap.add_argument("--compiler", default="", help="the build's compiler, ID-VERSION")
    ap.add_argument("--optimization", default="", help="the build's optimization level")
    ap.add_argument("--update", action="store_true", help="write the measured figures as budgets")
    ap.add_argument("--keep", help="keep the callgrind files in this directory")
    a = ap.parse_args()

    if a.update and not (a.compiler and a.optimization):
        ap.error("--update needs --compiler and --optimization (the budgets' build)")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("SKIP: valgrind is not installed (scripts/setup.sh installs it)")
        return SKIP
    vg_version = subprocess.run([valgrind, "--version"], capture_output=True,
                                text=True).stdout.strip()
    budget = json.load(open(a.budget))
    want = budget.get("build", {})
    build = {"compiler": a.compiler, "optimization": a.optimization}
    if not a.update:
        for k in ("compiler", "optimization"):
            if build[k] and want.get(k) and build[k] != want[k]:
                print("SKIP: the budgets are for %s %s, this build has %s: not comparable "
                      "(re-measure with --update)" % (k, want[k], build[k]))
                return SKIP

    print("ipp_guard: %s; load average %s" % (machine(), load()))
    print("ipp_guard: %s, build %s -O%s, %s" % (
        vg_version, a.compiler or "?", a.optimization or "?",
        " ".join("%s=%s" % kv for kv in sorted(BENCH_ENV.items()))))

    outdir = a.keep or tempfile.mkdtemp(prefix="spw-ipp.")
    os.makedirs(outdir, exist_ok=True)
    for old in glob.glob(os.path.join(outdir, "callgrind.out*")):
        os.remove(old)
    try:
        env = dict(os.environ, **BENCH_ENV)
        cmd = [valgrind, "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
               "--callgrind-out-file=" + os.path.join(outdir, "callgrind.out"),
               a.bench, "--json", os.path.join(outdir, "bench.json")]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stdout.write(r.stdout)
            sys.stdout.write(r.stderr[-4000:])
            print("ipp_guard: FAIL: bench_pipeline under callgrind exited %d" % r.returncode)
            return 1
        isa = isa_path(r.stdout)
        counts = callgrind_counts(outdir)
        pkts = packets(os.path.join(outdir, "bench.json"))
    finally:
        if not a.keep:
            shutil.rmtree(outdir, ignore_errors=True)

    if not counts:
        print("ipp_guard: FAIL: no per-case counts: bench_pipeline was built without "
              "<valgrind/callgrind.h> (install valgrind, then touch "
              "tests/bench/bench_pipeline.c and rebuild)")
        return 1
    if not a.update and want.get("isa_path") and isa != want["isa_path"]:
        print("SKIP: the budgets are for the %s flow hash, valgrind offers %s here: "
              "not comparable" % (want["isa_path"], isa))
        return SKIP
    print("ipp_guard: flow hash under valgrind: %s; counted: each case's timed "
          "lb_pipeline_burst calls (inclusive)" % isa)

    measured = {}
    for label, n in sorted(counts.items()):
        if label not in pkts or pkts[label] == 0:
            print("ipp_guard: FAIL: %s: no packet count in the benchmark's JSON" % label)
            return 1
        measured[label] = n / pkts[label]

    if a.update:
        margin = budget.get("margin", 0.02)
        budget["build"] = dict(build, isa_path=isa)
        budget["measured_on"] = "%s; %s; %s" % (
            datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), machine(), vg_version)
        budget["margin"] = margin
        budget["cases"] = {k: round(v, 1) for k, v in sorted(measured.items())}
        with open(a.budget, "w") as f:
            json.dump(budget, f, indent=2)
            f.write("\n")
        for k, v in sorted(measured.items()):
            print("ipp_guard: %-36s %8.1f instructions/packet (budget written)" % (k, v))
        return 0

    margin = float(budget["margin"])
    cases = budget["cases"]
    failed = []
    print("ipp_guard: %-36s %9s %9s %7s %12s %8s  (margin %.1f%%)" % (
        "case", "instr/pkt", "budget", "change", "instructions", "packets", 100 * margin))
    for label in sorted(set(cases) | set(measured)):
        if label not in measured:
            failed.append("%s: in the budget but not measured" % label)
            continue
        v = measured[label]
        if label not in cases:
            print("ipp_guard: %-36s %9.1f %9s" % (label, v, "-"))
            failed.append("%s: %.1f instructions/packet, no budget" % (label, v))
            continue
        b = float(cases[label])
        change = v / b - 1
        verdict = "ok"
        if v > b * (1 + margin):
            verdict = "FAIL: dearer"
            failed.append("%s: %.1f instructions/packet, budget %.1f (limit %.1f, +%.1f%%)"
                          % (label, v, b, b * (1 + margin), 100 * change))
        elif v < b * (1 - margin):
            verdict = "FAIL: cheaper, lower the budget"
            failed.append("%s: %.1f instructions/packet, budget %.1f (%.1f%%): cheaper than "
                          "the budget by more than the margin; lower it (--update)"
                          % (label, v, b, 100 * change))
        print("ipp_guard: %-36s %9.1f %9.1f %+6.1f%% %12d %8d  %s" % (
            label, v, b, 100 * change, counts[label], pkts[label], verdict))
    for f in failed:
        print("ipp_guard: FAIL: %s" % f)
    if failed:
        print("ipp_guard: to accept a deliberate change (docs/benchmarks.md): %s --compiler %s "
              "--optimization %s --update %s %s" % (sys.argv[0], a.compiler or "ID-VERSION",
                                                    a.optimization or "LEVEL", a.bench, a.budget))
        return 1
    print("ipp_guard: %d cases within %.1f%% of their budgets" % (len(measured), 100 * margin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
