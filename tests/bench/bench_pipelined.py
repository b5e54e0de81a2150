#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Mutations per second for clients that pipeline their changes.

Starts spillwayd (one worker fed by net_null, a control socket and a state
file, V VIPs of B backends, table size M), then K clients each send N
`backend_set` weight changes in one write (each to the next VIP of its own
share) and read their N replies; mutations/s = K x N / (first send -> last
reply). Every reply must be a success. Repeated R times per daemon, the
daemons in turn, so their figures come from the same machine load.

usage: bench_pipelined.py [--clients K] [--changes N] [--vips V] [--backends B]
                          [--table M] [--rounds R] SPILLWAYD...
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def vip_of(i):
    return {"address": "192.0.%d.%d" % (2 + i // 250, 1 + i % 250), "port": 80,
            "protocol": "tcp"}


def backend_of(i, j):
    return "10.%d.%d.%d" % (i // 64, (i % 64) * 4 + j // 250, 1 + j % 250)


def run(spw, v, b, m, k, n, rnd):
    work = tempfile.mkdtemp(prefix="spw-bench-pipe.")
    cfg, sock = os.path.join(work, "spw.json"), os.path.join(work, "ctl.sock")
    json.dump({"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
               "maglev": {"table_size": m, "seed": "bench"},
               "vips": [dict(vip_of(i), backends=[{"address": backend_of(i, j)}
                                                  for j in range(b)]) for i in range(v)]},
              open(cfg, "w"))
    prefix = "spw-bench-pipe-%d" % os.getpid()
    p = subprocess.Popen([spw, "--no-huge", "-m", "512", "--no-pci", "-l", "0-1",
                          "--file-prefix", prefix, "--log-level", "lib.*:warning",
                          "--vdev=net_null0", "--", "--config", cfg, "--control", sock,
                          "--state", os.path.join(work, "state.json")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while True:
            if p.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("spillwayd did not start")
            try:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.connect(sock)
                probe.sendall(b'{"jsonrpc":"2.0","id":0,"method":"stats"}\n')
                if probe.recv(1 << 16):
                    probe.close()
                    break
            except OSError:
                time.sleep(0.05)
        socks, data = [], []
        for c in range(k):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(600)
            s.connect(sock)
            socks.append(s)
            data.append(b"".join(
                json.dumps({"jsonrpc": "2.0", "id": q, "method": "backend_set",
                            "params": {"vip": vip_of((c * n + q) % v),
                                       "address": backend_of((c * n + q) % v, 0),
                                       "weight": 2 + (q + rnd) % 5}}).encode() + b"\n"
                for q in range(n)))
        t0 = time.perf_counter()
        for s, d in zip(socks, data):
            s.sendall(d)
        for s in socks:
            buf, got = b"", 0
            while got < n:
                chunk = s.recv(1 << 16)
                if not chunk:
                    raise SystemExit("connection closed")
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if "result" not in json.loads(line):
                        raise SystemExit("change refused: %s" % line[:200])
                    got += 1
        return k * n / (time.perf_counter() - t0)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)


def main():
    opts = {"--clients": 4, "--changes": 50, "--vips": 64, "--backends": 10,
            "--table": 251, "--rounds": 3}
    args = sys.argv[1:]
    while args and args[0] in opts:
        opts[args[0]] = int(args[1])
        args = args[2:]
    if not args:
        raise SystemExit(__doc__)
    with open("/proc/loadavg") as f:
        print("load average before: %s" % " ".join(f.read().split()[:3]))
    res = {spw: [] for spw in args}
    for r in range(opts["--rounds"]):
        for spw in args:
            res[spw].append(run(spw, opts["--vips"], opts["--backends"], opts["--table"],
                                opts["--clients"], opts["--changes"], r))
    for spw in args:
        print("%-40s %d clients x %d changes, %d VIPs x %d backends, M %d: mutations/s "
              "median %.1f (runs: %s)" % (spw[-40:], opts["--clients"], opts["--changes"],
                                          opts["--vips"], opts["--backends"], opts["--table"],
                                          statistics.median(res[spw]),
                                          ", ".join("%.1f" % x for x in res[spw])))
    with open("/proc/loadavg") as f:
        print("load average after: %s" % " ".join(f.read().split()[:3]))


if __name__ == "__main__":
    main()
