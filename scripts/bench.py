#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every spillway benchmark in one run, against the performance targets in docs/benchmarks.md.

Runs, from an already built benchmark build directory (scripts/bench.sh builds
it): bench_pipeline (RUNS times; each run is itself the median of 7 rounds),
bench_sketch, bench_maglev, bench_publish.py, and the memif ratio
(pktgen/run-memif.sh with dpdk-testpmd io-forward, then with spillwayd, the
same traffic, alternated RUNS times). Each C benchmark writes its figures with
--json; nothing is scraped from text. Writes OUT.json (every figure, the raw
outputs, the machine) and OUT.md (Markdown tables to paste into
docs/benchmarks.md), and OUT.log (everything the benchmarks printed).

usage: bench.py [--build DIR] [--out PREFIX] [--runs N] [--memif-seconds S]
                [--quick] [--only NAME,...]
  --build DIR        benchmark build (default: build-bench)
  --out PREFIX       output path without extension
                     (default: bench-results/DATE-HOST)
  --runs N           bench_pipeline runs and memif run pairs (default 3)
  --memif-seconds S  sending time of each memif run (default 5)
  --quick            short everything (development; figures are not valid):
                     SPILLWAY_BENCH_QUICK=1, 1 run, 2 s memif runs, 30 changes
  --only LIST        some of: pipeline, sketch, maglev, publish, memif
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ["pipeline", "sketch", "maglev", "publish", "memif"]
LOG = None


def log(msg):
    print(msg, flush=True)
    if LOG:
        LOG.write(msg + "\n")
        LOG.flush()


def run(cmd, env=None, timeout=1800):
    """Run cmd, log its output; returns (rc, stdout+stderr, pid)."""
    log("$ " + " ".join(cmd))
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=e, cwd=ROOT,
                         text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        out += "\n(timed out)"
    LOG.write(out)
    LOG.flush()
    return p.returncode, out, p.pid


def cmd_out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


def machine(build):
    cpu = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    osname = None
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    buildtype = None
    try:
        opts = json.loads(cmd_out(["meson", "introspect", "--buildoptions", build]) or "[]")
        buildtype = next((o["value"] for o in opts if o["name"] == "buildtype"), None)
    except ValueError:
        pass
    cc = cmd_out(["cc", "--version"])
    hp = None
    try:
        with open("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages") as f:
            hp = int(f.read())
    except OSError:
        pass
    commit = cmd_out(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"])
    dirty = cmd_out(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    return {
        "host": socket.gethostname(),
        "cpu": cpu,
        "vcpus": os.cpu_count(),
        "kernel": platform.release(),
        "os": osname,
        "dpdk": cmd_out(["pkg-config", "--modversion", "libdpdk"]),
        "dpdk_package": cmd_out(["dpkg-query", "-W", "-f=${Version}", "dpdk"]),
        "compiler": cc.splitlines()[0] if cc else None,
        "buildtype": buildtype,
        "build_dir": os.path.relpath(build, ROOT),
        "commit": (commit or "?") + ("-dirty" if dirty else ""),
        "hugepages_free_2m": hp,
    }


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def rm_prefix(prefix):
    shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)


def c_bench(build, name, args, work, env=None, prefix=None):
    out = os.path.join(work, name + ".json")
    rc, _, pid = run([os.path.join(build, "tests", name), "--json", out] + args, env)
    if prefix:
        rm_prefix("%s-%d" % (prefix, pid))
    if rc != 0 or not os.path.exists(out):
        log("%s failed (exit %d)" % (name, rc))
        return None
    with open(out) as f:
        return json.load(f)


def median(v):
    return statistics.median(v) if v else None


# ---------------------------------------------------------------- the parts

def part_pipeline(a, build, work, env):
    runs = []
    for i in range(a.runs):
        d = c_bench(build, "bench_pipeline", [], work, env, "bench-pipeline")
        if d is None:
            return None
        runs.append(d)
    # Cases by (name, stage, flows): the median over runs of each run's median.
    cases = {}
    for d in runs:
        for r in d["results"]:
            if r["name"] == "memory":
                continue
            k = (r["name"], r.get("stage"), r["flows"])
            cases.setdefault(k, []).append(r)
    out = []
    for (name, stage, flows), rs in cases.items():
        e = {"name": name, "flows": flows,
             "ns_per_pkt": median([r["ns_per_pkt"] for r in rs]),
             "cycles_per_pkt": median([r["cycles_per_pkt"] for r in rs]),
             "runs_ns_per_pkt": [round(r["ns_per_pkt"], 2) for r in rs]}
        if stage:
            e["stage"] = stage
        else:
            e["baseline_ns_per_pkt"] = median([r["baseline_ns_per_pkt"] for r in rs])
            e["baseline_cycles_per_pkt"] = median([r["baseline_cycles_per_pkt"] for r in rs])
            e["hit_pct"] = rs[0]["hit_pct"]
            e["rounds"] = rs[0]["rounds"]
            e["packets_per_round"] = rs[0]["packets_per_round"]
        out.append(e)
    mem = next((r for r in runs[0]["results"] if r["name"] == "memory"), None)
    return {"runs": len(runs), "tsc_hz": runs[0]["tsc_hz"], "cases": out, "memory": mem,
            "raw": runs}


def part_sketch(a, build, work, env):
    d = c_bench(build, "bench_sketch", [], work, env, "bench-sketch")
    return d


def part_maglev(a, build, work, env):
    return c_bench(build, "bench_maglev", [], work, env)


def part_publish(a, build, work, env):
    res = []
    sets = [(100, 30 if a.quick else 300, 65537), (1000, 20 if a.quick else 100, 65537)]
    for n, changes, m in sets:
        out = os.path.join(work, "publish-%d-%d.json" % (n, m))
        rc, _, _ = run(["/usr/bin/python3", os.path.join(ROOT, "tests/bench/bench_publish.py"),
                        "--json", out, os.path.join(build, "spillwayd"), str(n), str(changes),
                        str(m)])
        if rc != 0 or not os.path.exists(out):
            log("bench_publish.py failed (exit %d)" % rc)
            return None
        with open(out) as f:
            res += json.load(f)["results"]
    return {"results": res}


MEMIF_FLOWS = 10000
MEMIF_ZIPF = 1.0


def memif_once(a, build, work, dut, i):
    out = os.path.join(work, "memif-%s-%d.json" % (dut, i))
    cmd = [os.path.join(ROOT, "pktgen/run-memif.sh"), "-b", build, "-c",
           os.path.join(ROOT, "pktgen/scenarios/bench.json"), "-D", dut, "--",
           "-r", "0", "-d", str(a.memif_seconds), "-f", str(MEMIF_FLOWS), "-z", str(MEMIF_ZIPF),
           "-S", "64", "-q", "--json", out]
    rc, text, _ = run(cmd)
    if rc != 0 or not os.path.exists(out):
        log("memif run (%s) failed (exit %d)" % (dut, rc))
        return None
    with open(out) as f:
        d = json.load(f)
    ph = d["tx"]["phases"]
    send_s = max(p["end_s"] for p in ph) - min(p["start_s"] for p in ph)
    rx = d["rx"]["packets"]
    r = {"dut": dut, "sent": d["tx"]["packets"], "received": rx,
         "received_bytes": d["rx"]["bytes"], "decoded": d["rx"]["decoded"],
         "send_s": send_s, "tx_pps": d["tx"]["packets"] / send_s, "rx_pps": rx / send_s,
         "lost": d["tx"]["packets"] - rx, "wiring": d.get("wiring"), "lcores": d.get("lcores")}
    m = re.search(r"spillwayd: rx (\d+), forwarded (\d+), dropped (\d+)", text)
    if m:
        r["spillwayd"] = {"rx": int(m.group(1)), "forwarded": int(m.group(2)),
                          "dropped": int(m.group(3))}
    log("memif %s run %d: sent %d, received %d in %.2f s: %.3f Mpps received"
        % (dut, i, r["sent"], rx, send_s, r["rx_pps"] / 1e6))
    return r


def part_memif(a, build, work, env):
    runs = []
    for i in range(a.runs):
        for dut in ("testpmd", "spillwayd"):
            r = memif_once(a, build, work, dut, i)
            if r is None:
                return None
            runs.append(r)
    tp = [r["rx_pps"] for r in runs if r["dut"] == "testpmd"]
    lb = [r["rx_pps"] for r in runs if r["dut"] == "spillwayd"]
    pairs = [l / t for t, l in zip(tp, lb) if t > 0]
    return {"flows": MEMIF_FLOWS, "zipf": MEMIF_ZIPF, "frame_bytes": 64,
            "send_seconds": a.memif_seconds, "runs": runs,
            "testpmd_rx_pps": median(tp), "spillwayd_rx_pps": median(lb),
            "ratio": median(lb) / median(tp) if tp and lb and median(tp) else None,
            "pair_ratios": [round(x, 4) for x in pairs]}


# ---------------------------------------------------------------- summary

def find_case(p, name, flows=None, stage=None):
    if p is None:
        return None
    cs = [c for c in p["cases"] if c["name"] == name and c.get("stage") == stage]
    if not cs:
        return None
    if flows == "min":
        return min(cs, key=lambda c: c["flows"])
    if flows == "max":
        return max(cs, key=lambda c: c["flows"])
    return cs[0]


def summary(res):
    rows = []

    def add(key, path, target, limit, value, unit, fmt, how, note=""):
        rows.append({"id": key, "path": path, "target": target, "measured": value, "unit": unit,
                     "fmt": fmt, "limit": limit, "how": how, "note": note})

    p = res.get("pipeline")
    hit1k = find_case(p, "flow_hit_uniform", "min")
    hit1m = find_case(p, "flow_hit_uniform", "max")
    new = find_case(p, "new_flow", "max")
    sk4 = find_case(p, "flow_hit_uniform+sketch_s4", "min")
    cnt = find_case(p, "stage", "min", "counters")
    srcip = find_case(p, "new_flow_src_ip")
    hot = find_case(p, "new_flow_hot")
    g = lambda c, k="ns_per_pkt": None if c is None else c[k]  # noqa: E731
    add("hit_1k", "flow-table hit, 1k flows", "≤ 20 ns/pkt", ("le", 20), g(hit1k), "ns/pkt",
        "%.1f ns", "bench_pipeline flow_hit_uniform flows=1000")
    add("hit_1m", "flow-table hit, 1M flows", "≤ 40 ns/pkt", ("le", 40), g(hit1m), "ns/pkt",
        "%.1f ns", "bench_pipeline flow_hit_uniform flows=1M")
    add("new_1m", "new flow, 1M resident", "≤ 60 ns/pkt", ("le", 60), g(new), "ns/pkt", "%.1f ns",
        "bench_pipeline new_flow")
    sc = None
    if hit1k and sk4 and cnt:
        sc = sk4["ns_per_pkt"] - hit1k["ns_per_pkt"] + cnt["ns_per_pkt"]
    add("sketch_counters", "sketch and counters on top", "≤ +3 ns/pkt", ("le", 3), sc, "ns/pkt",
        "%+.1f ns", "(flow_hit_uniform+sketch_s4 − flow_hit_uniform, 1k flows) + counters stage",
        "sketch sampling 1 in 16 (spillwayd's default); a difference of two noisy figures")
    hp = None
    if srcip and hot:
        hp = 100.0 * (hot["ns_per_pkt"] / srcip["ns_per_pkt"] - 1)
    add("hot_override", "hot-key override path", "within 10% of new flow", ("le", 10), hp, "%",
        "%+.1f%%", "bench_pipeline new_flow_hot vs new_flow_src_ip (same VIP, 1M resident)",
        "" if hot is None else "%.1f vs %.1f ns/pkt" % (hot["ns_per_pkt"], srcip["ns_per_pkt"]))
    m = res.get("memif")
    ratio = None if not m or m["ratio"] is None else 100.0 * m["ratio"]
    add("memif_ratio", "spillgen → spillwayd → spillgen over memif", "≥ 90% of testpmd io-fwd",
        ("ge", 90), ratio, "%", "%.1f%%", "pktgen/run-memif.sh -D testpmd / -D spillwayd",
        "" if not m or m["ratio"] is None else "%.2f vs %.2f Mpps received" % (
            m["spillwayd_rx_pps"] / 1e6, m["testpmd_rx_pps"] / 1e6))
    mg = res.get("maglev")

    def mag(n, mm):
        if not mg:
            return None
        return next((r["ms"] for r in mg["results"]
                     if r["name"] == "maglev_build" and r["n"] == n and r["m"] == mm), None)
    add("maglev_1000", "Maglev rebuild N = 1000, M = 65537", "≤ 0.7 ms", ("le", 0.7),
        mag(1000, 65537), "ms", "%.2f ms", "bench_maglev (median of 21 builds)")
    add("maglev_5000", "Maglev rebuild N = 5000, M = 655373", "≤ 8 ms", ("le", 8),
        mag(5000, 655373), "ms", "%.1f ms", "bench_maglev (median of 21 builds)")
    pb = res.get("publish")
    pr = None if not pb else next((r for r in pb["results"] if r["n"] == 100), None)
    add("publish_p99", "change → all workers on the new snapshot", "p99 ≤ 200 µs",
        ("le", 200), None if pr is None else pr["store_all_workers_p99_us"], "µs", "%.0f µs",
        "bench_publish.py N=100 M=65537 (store → all workers)",
        "" if pr is None else "median %.1f µs, %d changes" % (
            pr["store_all_workers_median_us"], pr["changes"]))
    mem = p["memory"] if p else None
    add("memory", "flow-table memory", "≤ 32 B/flow", ("le", 32),
        None if mem is None else mem["bytes_per_entry"], "B/flow", "%.0f B/flow",
        "bench_pipeline memory: allocation / capacity",
        "" if mem is None else "RSS growth %.1f B/entry at creation" % mem["rss_bytes_per_entry"])
    for r in rows:
        v, lim = r["measured"], r["limit"]
        if v is None:
            r["result"] = "not measured"
        elif lim[0] == "le":
            r["result"] = "met" if v <= lim[1] else "missed"
        else:
            r["result"] = "met" if v >= lim[1] else "missed"
        r["measured_text"] = None if v is None else r["fmt"] % v
        del r["fmt"], r["limit"]
    return rows


# ---------------------------------------------------------------- Markdown

def md(res, cmdline):
    mc = res["machine"]
    L = []
    w = L.append
    w("# spillway benchmarks: %s, %s" % (mc["host"], res["date"]))
    w("")
    w("Command: `%s`. Started %s, took %.0f s. Load average (1/5/15 min) at start %s, at end %s."
      % (cmdline, res["started"], res["seconds"], " ".join("%.2f" % x for x in res["load_start"]),
         " ".join("%.2f" % x for x in res["load_end"])))
    w("")
    w("Machine: %s, %s vCPUs%s; %s, kernel %s; DPDK %s (package %s); %s; build `%s` (%s); "
      "commit %s; free 2 MiB hugepages at start: %s."
      % (mc["cpu"], mc["vcpus"],
         ", TSC %.3f GHz" % (res["pipeline"]["tsc_hz"] / 1e9) if res.get("pipeline") else "",
         mc["os"], mc["kernel"], mc["dpdk"], mc["dpdk_package"], mc["compiler"],
         mc["build_dir"], mc["buildtype"], mc["commit"], mc["hugepages_free_2m"]))
    if res.get("quick"):
        w("")
        w("**--quick run: shrunk sizes, the figures are not valid measurements.**")
    # Judged at the start only: the memif pairs themselves keep two threads busy, so the
    # load average at the end includes the benchmark's own load.
    busy = res["load_start"][0]
    if mc["vcpus"] and busy > 0.5 * mc["vcpus"]:
        w("")
        w("**Load average %.1f on %d vCPUs when this run started: the figures were taken under "
          "contention from other work and are not valid against the targets.**"
          % (busy, mc["vcpus"]))
    w("")
    w("## Summary against the targets")
    w("")
    w("| path | target | measured | result | how |")
    w("|---|---|---|---|---|")
    for r in res["summary"]:
        meas = r["measured_text"] or "—"
        if r["note"]:
            meas += " (%s)" % r["note"]
        w("| %s | %s | %s | %s | %s |" % (r["path"], r["target"], meas, r["result"], r["how"]))
    p = res.get("pipeline")
    if p:
        w("")
        w("## Pipeline (in-process, `bench_pipeline`)")
        w("")
        w("One worker, one IPv4 TCP VIP, 100 backends over IPIP, M = 65537, 64-byte frames, "
          "bursts of 32. Each figure: the median over %d runs of each run's median of %d rounds; "
          "the baseline loop (a read of each frame) is measured in the same run. Cycles are TSC "
          "cycles." % (p["runs"], p["cases"][0].get("rounds", 0) or 0))
        w("")
        w("| case | flows | ns/pkt | TSC cycles/pkt | baseline ns/pkt | hits | runs (ns/pkt) |")
        w("|---|---|---|---|---|---|---|")
        for c in p["cases"]:
            if c.get("stage"):
                continue
            w("| %s | %d | %.1f | %.1f | %.1f | %.1f%% | %s |"
              % (c["name"], c["flows"], c["ns_per_pkt"], c["cycles_per_pkt"],
                 c["baseline_ns_per_pkt"], c["hit_pct"],
                 " / ".join("%.1f" % x for x in c["runs_ns_per_pkt"])))
        w("")
        w("Stages alone (1k flows, one rdtsc pair per stage per burst of 32, overhead included):")
        w("")
        w("| stage | ns/pkt | TSC cycles/pkt |")
        w("|---|---|---|")
        for c in p["cases"]:
            if c.get("stage"):
                w("| %s | %.1f | %.1f |" % (c["stage"], c["ns_per_pkt"], c["cycles_per_pkt"]))
        mem = p.get("memory")
        if mem:
            w("")
            w("Flow-table memory: %d entries of %d B, %.0f MiB allocated: %.1f B/entry; RSS "
              "+%.1f MiB at creation (%.1f B/entry); %.1f B of allocation per resident flow "
              "at %d flows (%.0f%% load)."
              % (mem["capacity"], mem["entry_bytes"], mem["alloc_bytes"] / 2**20,
                 mem["bytes_per_entry"], mem["rss_create_bytes"] / 2**20,
                 mem["rss_bytes_per_entry"], mem["bytes_per_resident_flow"],
                 mem["resident_flows"], 100.0 * mem["resident_flows"] / mem["capacity"]))
    s = res.get("sketch")
    if s:
        w("")
        w("## Sketch alone (`bench_sketch`)")
        w("")
        w("| case | ns/add | TSC cycles/add | baseline ns | top-10 named | worst top-10 error | "
          "largest light-key estimate |")
        w("|---|---|---|---|---|---|---|")
        for r in s["results"]:
            w("| %s | %.2f | %.1f | %.2f | %s | %s | %s |"
              % (r["name"], r["ns_per_add"], r["cycles_per_add"], r["baseline_ns"],
                 r.get("top10_named", "—"),
                 "%.2f%%" % r["top10_worst_error_pct"] if "top10_worst_error_pct" in r else "—",
                 "%.4f" % r["light_max_share"] if "light_max_share" in r else "—"))
    mg = res.get("maglev")
    if mg:
        w("")
        w("## Maglev rebuild (`bench_maglev`, median of 21 builds, equal weights)")
        w("")
        builds = [r for r in mg["results"] if r["name"] == "maglev_build"]
        ms = sorted({r["m"] for r in builds})
        w("| N | " + " | ".join("M = %d" % m for m in ms) + " |")
        w("|---|" + "---|" * len(ms))
        for n in sorted({r["n"] for r in builds}):
            cells = []
            for m in ms:
                r = next((x for x in builds if x["n"] == n and x["m"] == m), None)
                cells.append("—" if r is None else "%.3f ms" % r["ms"])
            w("| %d | %s |" % (n, " | ".join(cells)))
        dis = [r for r in mg["results"] if r["name"] == "maglev_disruption"]
        if dis:
            w("")
            w("Disruption (survivors' slots that change owner): " + "; ".join(
                "N = %d: remove 1 mean %.2f%% max %.2f%%, add 1 %.2f%%"
                % (r["n"], r["remove_mean_pct"], r["remove_max_pct"], r["add_pct"])
                for r in dis) + ".")
    pb = res.get("publish")
    if pb:
        w("")
        w("## Publication latency under traffic (`bench_publish.py`)")
        w("")
        w("| N | M | changes | request → reply, median / p99 | store → all workers, median "
          "/ p99 / max | snapshot build |")
        w("|---|---|---|---|---|---|")
        for r in pb["results"]:
            w("| %d | %d | %d | %.2f / %.1f ms | %.1f µs / %.1f µs / %.1f µs | %.2f ms |"
              % (r["n"], r["m"], r["changes"], r["request_reply_median_us"] / 1e3,
                 r["request_reply_p99_us"] / 1e3, r["store_all_workers_median_us"],
                 r["store_all_workers_p99_us"], r["store_all_workers_max_us"],
                 r["build_us"] / 1e3))
    m = res.get("memif")
    if m:
        w("")
        w("## memif end to end (`pktgen/run-memif.sh -D testpmd|spillwayd`)")
        w("")
        w("spillgen (memif server, one lcore sending and receiving) → device under test "
          "(memif client: control/main lcore on CPU 0, one worker or forwarding lcore on CPU 1, "
          "one RX and one TX queue of 1024 descriptors, bursts of 32) → spillgen. Traffic: "
          "%d IPv4/UDP flows, Zipf %.1f, 64-byte frames, as fast as memif backpressure allows "
          "(`-r 0`), %s s of sending per run; runs alternate testpmd, spillwayd. The figure is "
          "packets spillgen received per second of sending. testpmd io-forward sends each "
          "frame back unchanged (64 B); spillwayd forwards it IPIP-encapsulated, 20 bytes "
          "longer (84 B), so it moves 31%% more bytes per packet. Ratio: median spillwayd / "
          "median testpmd = **%.1f%%**; per pair: %s."
          % (m["flows"], m["zipf"], m["send_seconds"], 100 * (m["ratio"] or 0),
             ", ".join("%.1f%%" % (100 * x) for x in m["pair_ratios"])))
        w("")
        w("| run | device under test | sent | received | lost | received Mpps |")
        w("|---|---|---|---|---|---|")
        for i, r in enumerate(m["runs"]):
            w("| %d | %s | %d | %d | %d | %.3f |"
              % (i // 2 + 1, r["dut"], r["sent"], r["received"], r["lost"], r["rx_pps"] / 1e6))
    w("")
    return "\n".join(L)


def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--out")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--memif-seconds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--cmdline", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    env = {}
    if a.quick:
        env["SPILLWAY_BENCH_QUICK"] = "1"
        a.runs = 1
        a.memif_seconds = 2
    parts = a.only.split(",") if a.only else PARTS
    for x in parts:
        if x not in PARTS:
            ap.error("--only: %s is not one of %s" % (x, ", ".join(PARTS)))
    now = datetime.datetime.now()
    host = socket.gethostname()
    prefix = a.out or os.path.join(ROOT, "bench-results",
                                   "%s-%s" % (now.strftime("%Y-%m-%d"), host))
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    LOG = open(prefix + ".log", "w")
    work = tempfile.mkdtemp(prefix="spw-bench.")
    res = {"date": now.strftime("%Y-%m-%d"), "started": now.isoformat(timespec="seconds"),
           "quick": a.quick, "machine": machine(build), "load_start": loadavg(),
           "parts": parts}
    t0 = time.time()
    fns = {"pipeline": part_pipeline, "sketch": part_sketch, "maglev": part_maglev,
           "publish": part_publish, "memif": part_memif}
    failed = []
    try:
        for x in parts:
            log("== %s" % x)
            r = fns[x](a, build, work, env)
            if r is None:
                failed.append(x)
            res[x] = r
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["load_end"] = loadavg()
    res["seconds"] = time.time() - t0
    res["failed"] = failed
    res["summary"] = summary(res)
    cmdline = (a.cmdline or " ".join(["scripts/bench.py"] + sys.argv[1:])).strip()
    with open(prefix + ".json", "w") as f:
        json.dump(res, f, indent=1)
    with open(prefix + ".md", "w") as f:
        f.write(md(res, cmdline))
    log("")
    for r in res["summary"]:
        log("%-45s %-26s %-20s %s" % (r["path"], r["target"], r["measured_text"] or "—",
                                      r["result"]))
    log("wrote %s.json, %s.md, %s.log" % (prefix, prefix, prefix))
    if failed:
        log("failed: %s" % ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
