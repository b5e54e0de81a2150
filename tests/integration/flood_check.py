#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judge of test_flood.sh (see there for the scenario).

  flood_check.py LB.json SCENARIO.json LIVE.json RESULTS.json SERIES.csv FINAL-STATS.json

The model, kept here from the test's own config and scenario:
  - flood packets (each phase's hot key: one new 5-tuple per packet, never
    reused) are each a new flow: a flow-table miss, seen at one backend;
  - the base flows are the established connections (E of them, share s_est of
    the packets once they start): each one's first packet is a miss, every
    later one a hit, unless the flood evicted its entry in between. An insert
    into a full 4-way bucket evicts the entry that expires first (touched
    longest ago, to the table's tick of about 1 ms; among equals the first
    way). So an established entry goes if 4 flood inserts hit its bucket
    before its next packet: per gap (q_i / (q_i + q_e))^4 with q_i =
    (1 - s_est) / buckets, q_e = s_est / E, 1.6e-10 for E = 32, s_est = 0.4
    and 16384 buckets; or if 4 land in its bucket within the one tick of its
    last packet (all four then expire alike), which takes a backlog: after a
    worker stall of B packets about (0.6 B / 16384)^4 / 48 per connection,
    1.3e-6 for B = 2048, some 0.004 for 32 connections over a hundred
    stalls. A re-created entry is a legitimate move only if the changes
    moved its Maglev slot; the test does not excuse it (rare, see above);
  - the membership changes neither remove a backend nor set one down, so no
    flow is re-chosen and none may move: the flow table keeps every
    established connection where it was, whatever Maglev now says.
spillgen's decoded packets say where every flow went; the daemon's counters
are checked against the model.

Exit 0 pass, 1 fail, 77 skip (the run could not test what it is for: the
flood too small for the table, or a change outside the established flows'
time).
"""

import csv
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_stats  # noqa: E402

EST_SLACK = 8          # re-created established entries tolerated in the hits
                       # model (expected < 0.001; a moved one fails anyway)


def main(cfg_path, scen_path, live_path, res_path, csv_path, final_path):
    cfg = json.load(open(cfg_path))
    scen = json.load(open(scen_path))
    live = json.load(open(live_path))
    r = json.load(open(res_path))
    final = json.load(open(final_path))
    ok = True
    skips = []

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL: " + msg)

    capacity = cfg["flows"]["capacity"]
    E = scen["flows"]
    phases = scen["phases"]
    est_start = min(p["start"] for p in phases if p["hot"]["share"] < 1)
    s_est = 1 - [p for p in phases if p["hot"]["share"] < 1][0]["hot"]["share"]
    end = phases[-1]["end"]
    flood = {h["phase"]: h for h in r["hot_keys"]}
    flood_dec = sum(h["packets"] for h in r["hot_keys"])
    rows = [x for x in live["rows"] if live["rows"] and x["pid"] == live["rows"][-1]["pid"]]
    t0 = live_stats.t0_bounds(rows, csv_path)
    if t0 is None:
        print("SKIP: spillgen's clock could not be placed against the stats polls")
        return 77
    t0_lo, t0_hi = t0

    # --- the flood itself -----------------------------------------------------
    st = final["totals"]
    print("flood: %d packets in, %d flood packets decoded (each a new 5-tuple), "
          "%d distinct 5-tuples sent, %d evictions, table %d entries"
          % (st["rx_packets"], flood_dec, r["flows"]["sent"], st["flow_evictions"], capacity))
    for p in phases:
        h = flood.get(p["name"])
        if h and h["packets"] > p["hot"]["pool"]:
            bad("phase %s sent %d flood packets from a pool of %d: 5-tuples repeated"
                % (p["name"], h["packets"], p["hot"]["pool"]))
    if st["flow_evictions"] <= 0:
        bad("no evictions: the flood did not fill the %d-entry table" % capacity)
    if r["flows"]["sent"] <= 4 * capacity:
        skips.append("only %d distinct 5-tuples sent for a %d-entry table (spillgen reached "
                     "%.0f pps of %d): not a flood of 4 x the table"
                     % (r["flows"]["sent"], capacity,
                        r["tx"]["packets"] / max(1e-9, r["elapsed_s"]), phases[-1]["rate"]))
    # RSS: the table and pools are preallocated.
    rss = [x["rss_kib"] for x in rows if x["rx"] > 0 and x["rss_kib"]]
    margin = int(os.environ.get("FLOOD_RSS_MARGIN_KIB", "16384"))
    if rss:
        print("spillwayd VmRSS: %d KiB at the flood's start, %d KiB max (growth %d KiB; "
              "bound %d)" % (rss[0], max(rss), max(rss) - rss[0], margin))
        if max(rss) - rss[0] > margin:
            bad("RSS grew by %d KiB during the flood" % (max(rss) - rss[0]))
    else:
        bad("no RSS samples")
    busy = [x for x in rows if x["rx"] > 0]
    dn = busy[-1]["new_flows"] - busy[0]["new_flows"] if busy else 0
    dt = busy[-1]["t_rep"] - busy[0]["t_rep"] if busy else 0
    print("new flows served: %.0f /s mean over %.2f s" % (dn / dt if dt else 0, dt))

    # --- membership changes, placed on spillgen's clock ------------------------
    acts = live["actions"]
    if live["actions_not_done"] or len(acts) != 3:
        bad("membership changes not all made: %s" % live["actions_not_done"])
    for a in acts:
        # spillgen's time of the change: after the request, before the reply.
        lo_, hi_ = a["t_req"] - t0_hi, a["t_rep"] - t0_lo
        print("change at %.2f..%.2f s: %s %s -> %s"
              % (lo_, hi_, a["method"], a["params"].get("address"),
                 a.get("result", a.get("error"))))
        if "error" in a:
            bad("%s refused: %s" % (a["method"], a["error"]))
        if lo_ < est_start + 0.5 or hi_ > end - 0.5:
            skips.append("change %s at %.2f..%.2f s, outside %.1f..%.1f s where the "
                         "established connections run (the sampler was late)"
                         % (a["method"], lo_, hi_, est_start + 0.5, end - 0.5))

    # --- every flow on one backend, judged from the decoded packets ------------
    fl = r["flows"]
    est_seen = fl["seen"] - flood_dec
    print("flows: %d seen (%d established, %d flood), at more than one backend %d "
          "(moves %d)" % (fl["seen"], est_seen, flood_dec, fl["multi_backend"], fl["moves"]))
    if fl["multi_backend"] != 0 or fl["moves"] != 0:
        bad("%d flows seen at more than one backend (%d moves): an established connection "
            "left its backend (flood flows are single packets)" % (fl["multi_backend"], fl["moves"]))
    if est_seen != E:
        bad("%d of the %d established connections were seen" % (est_seen, E))
    sg_be = {b["address"]: b["packets"] for b in r["backends"]}
    for a in acts:
        if a["method"] == "backend_add" and sg_be.get(a["params"]["address"], 0) == 0:
            bad("added backend %s got no packets" % a["params"]["address"])

    # --- flow-table hits, against the model -----------------------------------
    est_dec = r["rx"]["decoded"] - flood_dec
    est_sent_max = r["tx"]["packets"] - flood_dec
    lo_h, hi_h = est_dec - E - EST_SLACK, est_sent_max - E
    print("flow hits %d; model: established packets after each one's first, %d..%d "
          "(decoded %d, sent at most %d, %d connections)"
          % (st["flow_hits"], lo_h, hi_h, est_dec, est_sent_max, E))
    if not lo_h <= st["flow_hits"] <= hi_h:
        bad("flow hits %d outside the model's %d..%d" % (st["flow_hits"], lo_h, hi_h))
    if st["flow_misses"] < flood_dec + E:
        bad("flow misses %d < flood packets %d + established connections %d"
            % (st["flow_misses"], flood_dec, E))
    if st["flow_hits"] + st["flow_misses"] + st["flow_rechosen"] != st["rx_packets"]:
        bad("lookups %d != packets %d" % (st["flow_hits"] + st["flow_misses"] +
                                          st["flow_rechosen"], st["rx_packets"]))
    if st["flow_rechosen"] != 0:
        bad("%d flows re-chosen: no backend was removed or set down" % st["flow_rechosen"])
    # Across each change: the hits grow by the established share of the
    # packets (binomial, 5 sd below), less a re-created entry or few.
    marks = [a["t_rep"] for a in acts] + [t0_lo + end]
    for i in range(len(marks) - 1):
        seg = [x for x in rows if marks[i] <= x["t_req"] and x["t_rep"] <= marks[i + 1]]
        if len(seg) < 2:
            bad("no stats samples between change %d and the next mark" % (i + 1))
            continue
        drx = seg[-1]["rx"] - seg[0]["rx"]
        dh = seg[-1]["hits"] - seg[0]["hits"]
        need = s_est * drx - 5 * math.sqrt(drx * s_est * (1 - s_est)) - EST_SLACK
        print("after change %d: %d packets, %d hits (model: >= %.0f)" % (i + 1, drx, dh, need))
        if drx <= 0 or dh < need:
            bad("after change %d the hits grew by %d for %d packets; the model needs >= %.0f"
                % (i + 1, dh, drx, need))

    # --- spread of the flood by weight (flood-only intervals) ------------------
    ivs = scen["interval_ms"] / 1000.0
    w = {b["address"]: b["weight"] for b in cfg["vips"][0]["backends"]}
    load = {a: 0 for a in w}
    for row in csv.DictReader(open(csv_path)):
        t = float(row["t_s"])
        if t + ivs <= est_start + 1e-9 and row["backend"] in load:
            load[row["backend"]] += int(round(float(row["pps"]) * ivs))
    tot = sum(load.values())
    if tot == 0:
        bad("no decoded packets in the flood-only part")
    else:
        rel = {a: (load[a] / tot) / (w[a] / sum(w.values())) for a in w}
        pk = max(rel.values())
        print("spread of the flood (flood-only %.2f s, %d packets): peak/avg %.3f; %s"
              % (est_start, tot, pk, ", ".join("%s %.3f" % (a, rel[a]) for a in w)))
        if pk > 1.10:
            bad("flood peak/avg %.3f over 1.10" % pk)

    # --- the daemon's account before stop, against spillgen ---------------------
    q = live.get("quiet")
    if q is None:
        bad("no stats were read over the control socket after the traffic ended")
    else:
        t = q["stats"]["totals"]
        drops = sum(t["drops"].values())
        print("spillwayd (control socket, before stop): rx %d, forwarded %d, dropped %d %s; "
              "spillgen sent %d, received %d, lost %d"
              % (t["rx_packets"], t["forwarded"], t["dropped"],
                 {x: v for x, v in t["drops"].items() if v}, r["tx"]["packets"],
                 r["rx"]["packets"], r["packets"]["lost"]))
        if t["rx_packets"] != r["tx"]["packets"]:
            bad("spillwayd received %d packets, spillgen sent %d"
                % (t["rx_packets"], r["tx"]["packets"]))
        if t["rx_packets"] != t["forwarded"] + t["icmp_sent"] + t["exception"] + drops \
                or drops != t["dropped"]:
            bad("counters do not conserve packets: %s" % t)
        if t["forwarded"] + t["icmp_sent"] != r["rx"]["packets"]:
            bad("spillwayd sent back %d, spillgen received %d"
                % (t["forwarded"] + t["icmp_sent"], r["rx"]["packets"]))
        if r["packets"]["lost"] != t["dropped"]:
            bad("spillgen lost %d packets, spillwayd counted %d drops"
                % (r["packets"]["lost"], t["dropped"]))
        if st["rx_packets"] != t["rx_packets"]:
            bad("packets after the traffic ended: %d then %d" % (t["rx_packets"], st["rx_packets"]))
    mp = final.get("mempool") or {}
    print("mempool after stop: size %s, available %s, in_use %s"
          % (mp.get("size"), mp.get("available"), mp.get("in_use")))
    if mp.get("in_use") != 0 or mp.get("available") != mp.get("size"):
        bad("mbufs leaked: mempool %s" % mp)
    if not ok:
        print("FAILED")
        return 1
    if skips:
        for s in skips:
            print("SKIP: " + s)
        return 77
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
