#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Publication latency under traffic.

Starts spillwayd with one worker fed by net_null (an endless stream of frames
at the worker's full speed: traffic, if not useful traffic) and a control
socket, configures one VIP with N backends, then changes one backend's weight
C times. For each change it reports the client's request -> reply time (the
reply is sent after the new snapshot is built, persisted if configured, and
every worker runs it) and the daemon's own figures (stats.publish: pointer
store -> every worker on the new snapshot; build time of the snapshot).

usage: bench_publish.py [--json FILE] SPILLWAYD [N=100] [CHANGES=300] [TABLE_SIZE=65537]
(--json: the figures, machine-readable, also to FILE)
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


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def run(spw, n, changes, m, json_out=None):
    work = tempfile.mkdtemp(prefix="spw-bench-pub.")
    cfg = os.path.join(work, "spw.json")
    vip = {"address": "192.0.2.10", "port": 80, "protocol": "tcp"}
    json.dump({"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
               "maglev": {"table_size": m, "seed": "bench"},
               "vips": [dict(vip, backends=[{"address": "10.%d.%d.%d" % (1 + i // 65025,
                                                                         i // 255 % 255,
                                                                         1 + i % 255)}
                                            for i in range(n)])]}, open(cfg, "w"))
    sock = os.path.join(work, "ctl.sock")
    p = subprocess.Popen([spw, "--no-huge", "-m", "512", "--no-pci", "-l", "0-1",
                          "--file-prefix", "spw-bench-pub-%d" % os.getpid(),
                          "--log-level", "lib.*:warning", "--vdev=net_null0",
                          "--", "--config", cfg, "--control", sock],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                c = spwrpc.Client(sock)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("spillwayd did not open its socket")
        lat = []
        first = "10.1.0.1"
        for i in range(changes):
            t0 = time.perf_counter()
            c.call("backend_set", vip=vip, address=first, weight=1 + i % 7)
            lat.append((time.perf_counter() - t0) * 1e6)
        st = c.call("stats")
        pub = st["publish"]
        rx = st["totals"]["rx_packets"]
        print("publish N=%d M=%d changes=%d under traffic (%.1f M frames received): "
              "request->reply median %.0f us p99 %.0f us; store->all workers median %.1f us "
              "p99 %.1f us max %.1f us (%d timeouts); snapshot build %.0f us"
              % (n, m, changes, rx / 1e6, statistics.median(lat), pct(lat, 99),
                 pub["p50_us"], pub["p99_us"], pub["max_us"], pub["timeouts"], pub["build_us"]))
        if json_out:
            with open(json_out, "w") as f:
                json.dump({"bench": "bench_publish", "results": [{
                    "name": "publish", "n": n, "m": m, "changes": changes,
                    "frames_received": rx,
                    "request_reply_median_us": statistics.median(lat),
                    "request_reply_p99_us": pct(lat, 99),
                    "store_all_workers_median_us": pub["p50_us"],
                    "store_all_workers_p99_us": pub["p99_us"],
                    "store_all_workers_max_us": pub["max_us"],
                    "timeouts": pub["timeouts"], "build_us": pub["build_us"]}]}, f, indent=1)
        c.close()
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree("/var/run/dpdk/spw-bench-pub-%d" % os.getpid(), ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    json_out = None
    if len(args) >= 2 and args[0] == "--json":
        json_out = args[1]
        args = args[2:]
    spw = args[0]
    n = int(args[1]) if len(args) > 1 else 100
    changes = int(args[2]) if len(args) > 2 else 300
    m = int(args[3]) if len(args) > 3 else 65537
    run(spw, n, changes, m, json_out)
