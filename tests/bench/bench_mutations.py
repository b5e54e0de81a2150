#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Mutations per second and peak memory against VIPs, table size and backends.

For each case (V VIPs, table size M, B backends per VIP) starts spillwayd with
one worker fed by net_null and a control socket and a state file (so every
mutation is built, written with fsync, published and waited for, as in
production), measures the start-up (spawn -> first `stats` reply), then sends
C `backend_set` weight changes one after another, each to the next VIP in turn,
and reports mutations/s (C / total request->reply time), the median and maximum
request->reply time, and the daemon's peak RSS (VmHWM of /proc/PID/status)
after start-up and after the mutations.

usage: bench_mutations.py [--json FILE] [--changes C] [--cases V:M:B,...] [--no-state]
                          SPILLWAYD...
(--no-state: no state file, so the figures leave out its JSON encoding and fsync)
Several daemons (e.g. a baseline build and this one) are run case by case in
turn, so their figures come from the same run and the same machine load.
Default cases: V in {1, 64, 1024} x M in {65537, 262139} x B in {10, 100},
less those over the table budget (V x M <= 2^28) or the backend budget
(V x B <= 16384).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import spwrpc  # noqa: E402

MAX_SLOTS = 1 << 28
MAX_BACKENDS = 16384


def vip_of(i):
    return {"address": "192.0.%d.%d" % (2 + i // 250, 1 + i % 250), "port": 80,
            "protocol": "tcp"}


def backend_of(i, j):
    return "10.%d.%d.%d" % (i // 64, (i % 64) * 4 + j // 250, 1 + j % 250)


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def run_case(spw, v, m, b, changes, state=True):
    work = tempfile.mkdtemp(prefix="spw-bench-mut.")
    cfg = os.path.join(work, "spw.json")
    json.dump({"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
               "maglev": {"table_size": m, "seed": "bench"},
               "vips": [dict(vip_of(i), backends=[{"address": backend_of(i, j)}
                                                  for j in range(b)])
                        for i in range(v)]}, open(cfg, "w"))
    sock = os.path.join(work, "ctl.sock")
    prefix = "spw-bench-mut-%d" % os.getpid()
    t0 = time.perf_counter()
    p = subprocess.Popen([spw, "--no-huge", "-m", "512", "--no-pci", "-l", "0-1",
                          "--file-prefix", prefix, "--log-level", "lib.*:warning",
                          "--vdev=net_null0", "--", "--config", cfg, "--control", sock]
                         + (["--state", os.path.join(work, "state.json")] if state else []),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = None
        deadline = time.monotonic() + 600  # 1024 full tables on a loaded machine
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise SystemExit("spillwayd exited with %d" % p.returncode)
            try:
                c = spwrpc.Client(sock, timeout=120.0)
                c.call("stats")
                break
            except OSError:
                c = None
                time.sleep(0.02)
        if c is None:
            raise SystemExit("spillwayd did not open its socket")
        startup = time.perf_counter() - t0
        hwm_start = status_kib(p.pid, "VmHWM")
        lat = []
        for k in range(changes):
            i = k % v
            t1 = time.perf_counter()
            c.call("backend_set", vip=vip_of(i), address=backend_of(i, 0),
                   weight=2 + (k // v) % 5)
            lat.append(time.perf_counter() - t1)
        res = {"vips": v, "table_size": m, "backends": b, "changes": changes, "state": state,
               "startup_s": startup, "mutations_per_s": changes / sum(lat),
               "median_ms": statistics.median(lat) * 1e3, "max_ms": max(lat) * 1e3,
               "build_us_last": c.call("stats")["publish"]["build_us"],
               "hwm_start_mib": hwm_start / 1024.0,
               "hwm_mib": status_kib(p.pid, "VmHWM") / 1024.0,
               "rss_end_mib": status_kib(p.pid, "VmRSS") / 1024.0}
        c.close()
        return res
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)


def default_cases():
    return [(v, m, b) for v in (1, 64, 1024) for m in (65537, 262139) for b in (10, 100)
            if v * m <= MAX_SLOTS and v * b <= MAX_BACKENDS]


def main():
    args = sys.argv[1:]
    json_out, changes, cases, state = None, None, default_cases(), True
    while args and args[0].startswith("--"):
        if args[0] == "--no-state":
            state = False
            args = args[1:]
            continue
        if args[0] == "--json":
            json_out = args[1]
        elif args[0] == "--changes":
            changes = int(args[1])
        elif args[0] == "--cases":
            cases = [tuple(int(x) for x in c.split(":")) for c in args[1].split(",")]
        else:
            raise SystemExit(__doc__)
        args = args[2:]
    if not args:
        raise SystemExit(__doc__)
    with open("/proc/loadavg") as f:
        print("load average before: %s" % " ".join(f.read().split()[:3]))
    results = []
    print("%-28s %5s %7s %4s %9s %10s %9s %9s %9s %9s %9s" % (
        "daemon", "V", "M", "B", "start s", "mut/s", "med ms", "max ms", "build ms",
        "HWM0 MiB", "HWM MiB"))
    for v, m, b in cases:
        # Enough changes to visit every VIP at least once at small V, bounded at large V.
        n = changes if changes is not None else max(20, min(200, 4 * v))
        for spw in args:
            r = run_case(spw, v, m, b, n, state)
            r["daemon"] = spw
            results.append(r)
            print("%-28s %5d %7d %4d %9.2f %10.1f %9.2f %9.2f %9.2f %9.0f %9.0f" % (
                spw[-28:], v, m, b, r["startup_s"], r["mutations_per_s"], r["median_ms"],
                r["max_ms"], r["build_us_last"] / 1e3, r["hwm_start_mib"], r["hwm_mib"]),
                flush=True)
    with open("/proc/loadavg") as f:
        print("load average after: %s" % " ".join(f.read().split()[:3]))
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"bench": "bench_mutations", "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
