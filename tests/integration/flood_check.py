#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Helper of test_flood.sh.

  flood_check.py sample CTL_SOCK OUT.json STOP_FILE
      find the spillwayd serving CTL_SOCK (by /proc, read-only), then every
      0.25 s record its VmRSS and the socket's stats counters (flow_misses,
      new flows, evictions) until STOP_FILE exists or the daemon goes away.
  flood_check.py check SAMPLES.json SPILLGEN.json STATS.json CAPACITY
      judge the run and print the figures (see test_flood.sh).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402


def find_pid(ctl):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if open("/proc/%s/comm" % d).read().strip() != "spillwayd":
                continue
            if ctl.encode() in open("/proc/%s/cmdline" % d, "rb").read():
                return int(d)
        except OSError:
            pass
    return None


def rss_kib(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def sample(ctl, out, stop):
    t0 = time.monotonic()
    pid = c = None
    rows = []
    while not os.path.exists(stop) and time.monotonic() - t0 < 120:
        if pid is None:
            pid = find_pid(ctl)
        if c is None and pid is not None and os.path.exists(ctl):
            try:
                c = spwrpc.Client(ctl, timeout=5)
            except OSError:
                c = None
        if c is not None:
            try:
                s = c.call("stats")
            except (OSError, ConnectionError, ValueError):
                break
            t = s["totals"]
            rows.append({"t": round(time.monotonic() - t0, 3), "rss_kib": rss_kib(pid),
                         "rx": t["rx_packets"], "flow_misses": t["flow_misses"],
                         "flow_evictions": t["flow_evictions"],
                         "new_flows": sum(v["new_flows"] for v in s["vips"])})
        time.sleep(0.25)
    json.dump({"pid": pid, "samples": rows}, open(out, "w"))


def check(samples, results, stats, capacity):
    rows = json.load(open(samples))["samples"]
    r = json.load(open(results))
    st = json.load(open(stats))
    t = st["totals"]
    ok = True

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL: " + msg)

    # New flows served per second: over the samples where traffic flowed.
    busy = [x for x in rows if x["rx"] > 0]
    rates, dn, dt = [], 0, 0.0
    for a, b in zip(busy, busy[1:]):
        if b["t"] > a["t"] and b["rx"] > a["rx"]:      # intervals with traffic
            rates.append((b["new_flows"] - a["new_flows"]) / (b["t"] - a["t"]))
            dn += b["new_flows"] - a["new_flows"]
            dt += b["t"] - a["t"]
    mean = dn / dt if dt else 0
    if not rates:
        bad("fewer than two stats samples under traffic (%d)" % len(busy))
    rates.sort()
    peak = rates[len(rates) // 2] if rates else 0
    # Memory: the table is preallocated (capacity x 16 B); RSS may not grow
    # past what it was when the flood began by more than a fixed margin.
    rss = [x["rss_kib"] for x in busy if x["rss_kib"]]
    table_kib = capacity * 16 // 1024
    margin_kib = int(os.environ.get("FLOOD_RSS_MARGIN_KIB", "16384"))
    growth = (max(rss) - rss[0]) if rss else 0
    print("flood: %d packets in, %d new flows created (%d distinct 5-tuples sent), "
          "%d evictions" % (t["rx_packets"], sum(v["new_flows"] for v in st["vips"]),
                            r["flows"]["sent"], t["flow_evictions"]))
    print("new flows served: %.0f /s mean, %.0f /s median of %d intervals of ~0.25 s; "
          "%d entries re-created after eviction (new flows - distinct 5-tuples)"
          % (mean, peak, len(rates), sum(v["new_flows"] for v in st["vips"]) - r["flows"]["sent"]))
    if rss:
        print("spillwayd VmRSS: %d KiB at flood start, %d KiB max (growth %d KiB; "
              "flow table %d KiB preallocated; bound: growth <= %d KiB)"
              % (rss[0], max(rss), growth, table_kib, margin_kib))
        if growth > margin_kib:
            bad("RSS grew by %d KiB during the flood" % growth)
    else:
        bad("no RSS samples")
    if t["flow_evictions"] <= 0:
        bad("no evictions: the flood did not fill the %d-entry table" % capacity)
    if r["flows"]["sent"] <= 4 * capacity:
        bad("only %d distinct flows sent for a %d-entry table" % (r["flows"]["sent"], capacity))
    # Established (long-lived) connections: the scenario's src_ip hot key.
    hk = r["hot_keys"][0]
    print("established: %d packets of the long-lived connections; flows seen %d, "
          "at more than one backend %d (moves %d)"
          % (hk["packets"], r["flows"]["seen"], r["flows"]["multi_backend"], r["flows"]["moves"]))
    if r["flows"]["multi_backend"] != 0:
        bad("%d flows changed backend under eviction pressure" % r["flows"]["multi_backend"])
    # Spread of random 5-tuples against the weights: the keyed hash.
    b = r["balance"]
    print("spread: peak/avg %.3f over the run (worst 250 ms interval %.3f), Jain %.4f; %s"
          % (b["peak_to_avg"], b["interval_peak_to_avg_max"], b["jain"],
             ", ".join("%s %.3f" % (x["address"], x["relative_load"]) for x in r["backends"])))
    if b["peak_to_avg"] > 1.10:
        bad("peak/avg %.3f over 1.10" % b["peak_to_avg"])
    # Conservation.
    drops = sum(t["drops"].values())
    if t["rx_packets"] != t["forwarded"] + t["icmp_sent"] + t["exception"] + t["dropped"] \
            or drops != t["dropped"]:
        bad("counters do not conserve packets: %s" % t)
    # Final stats are written after the ports are closed: no mbuf may be
    # missing from the pool (per-lcore caches count as available).
    mp = st.get("mempool") or {}
    print("mempool after stop: size %s, available %s, in_use %s"
          % (mp.get("size"), mp.get("available"), mp.get("in_use")))
    if mp.get("in_use") != 0 or mp.get("available") != mp.get("size"):
        bad("mbufs leaked: mempool %s" % mp)
    if t["flow_misses"] < sum(v["new_flows"] for v in st["vips"]):
        bad("fewer misses than new flows")
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "sample":
        sample(*sys.argv[2:5])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
