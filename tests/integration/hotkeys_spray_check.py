#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judge of test_hotkeys_spray.sh (hot_mode per_packet, see there).

  hotkeys_spray_check.py LB.json SCENARIO.json LIVE.json RESULTS.json SERIES.csv FINAL-STATS.json

Oracles, none of them the daemon's account of itself:
  - the cap c = 1 + epsilon, the backends and their weights from LB.json, the
    phases and the key's share from SCENARIO.json;
  - per-backend loads are spillgen's decoded packets (SERIES.csv per 10 ms
    interval and backend; RESULTS.json per phase for the hot 5-tuple);
  - the controller's windows are its logical clock read live (LIVE.json),
    placed against spillgen's clock as in hotkeys_check.py: only intervals
    that certainly lie inside one window count for it;
  - r = ceil(N p / (c (1 - m) - 1 + p)) with the planner's margin m
    (docs/hot-keys.md), from p as spillgen measured it, a range for one
    window's noise (hotkeys_check.replicas);
  - the key's Maglev home from the test's own Maglev model (maglev_ref.py);
  - packets conserved against what spillgen sent and received.
Exit 0 pass, 1 fail, 77 skip (the windows could not be placed).
"""

import csv
import json
import math
import os
import socket
import sys
from statistics import NormalDist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_stats  # noqa: E402
import maglev_ref  # noqa: E402
from hotkeys_check import replicas, EWMA_ALPHA, FAMILY_ALPHA, MARGIN, NOISE_Z  # noqa: E402

PROMOTE_WINDOWS = 3   # the key reaches a second backend, and the cap holds,
                      # this many windows after the window its phase starts in
PROMOTE_EVENT = 2     # the promotion event within this many windows of it
DEMOTE_WINDOWS = 5    # the controller's default demote_windows (D)
MIN_WINDOWS = 8       # fewer judged windows: the run cannot be judged
MIN_COVER = 0.25      # a window is judged on the part of it certainly its own
MIN_COUNT = 100       # a window whose busiest backend got fewer is not judged
REPLICA_FLOOR = 0.5   # each replica gets at least this part of its even share
                      # of the key's packets after the promotion


def main(cfg_path, scen_path, live_path, res_path, csv_path, final_path):
    cfg = json.load(open(cfg_path))
    scen = json.load(open(scen_path))
    live = json.load(open(live_path))
    res = json.load(open(res_path))
    final = json.load(open(final_path))
    ok = True
    skips = []

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL: " + msg)

    c = 1 + cfg["hot"]["epsilon"]
    win_s = cfg["hot"]["window_ms"] / 1000.0
    margin = cfg["hot"].get("margin", MARGIN)
    vip = cfg["vips"][0]
    if vip.get("hot_mode") != "per_packet" or vip.get("protocol") != "udp":
        bad("the configuration's VIP is not a per_packet UDP VIP")
    wt = {b["address"]: b.get("weight", 1) for b in vip["backends"]}
    bes = sorted(wt)
    n_be = len(bes)
    phases = {p["name"]: p for p in scen["phases"]}
    hot_ph, cool_ph, pin_ph = phases["hot"], phases["cool"], phases["pinned"]
    hk = hot_ph["hot"]
    tau_s, tau_e, tau_pin = hot_ph["start"], hot_ph["end"], pin_ph["start"]
    ivs = scen["interval_ms"] / 1000.0
    hkr = {h["phase"]: h for h in res["hot_keys"]}
    table = maglev_ref.vip_table(cfg["maglev"]["seed"], cfg["maglev"]["table_size"],
                                 vip["backends"])
    home = maglev_ref.backend_for(table, maglev_ref.lbhash.key_from_seed(cfg["maglev"]["seed"]),
                                  hk["src"], vip["address"], hk["sport"], vip["port"],
                                  socket.IPPROTO_UDP, "5tuple")
    print("model: the 5-tuple %s:%d -> %s:%d/udp is homed on %s"
          % (hk["src"], hk["sport"], vip["address"], vip["port"], home))

    q = live.get("quiet")
    if q is None:
        bad("no stats were read over the control socket after the traffic ended")
        print("FAILED")
        return 1
    hl = q["hot_list"]
    ev = q["hot_events"]
    promos_all = [e for e in ev if e["event"] == "promote"]
    D = hl["params"].get("demote_windows", DEMOTE_WINDOWS)
    lists = [a for a in live.get("actions", []) if a.get("method") == "hot_list"]
    for a in live.get("actions", []):
        if "error" in a:
            bad("action %s failed: %s" % (a.get("method"), a["error"]))
    for a in live.get("actions_not_done", []):
        bad("action at %.1f s was never made" % a["at"])
    ovs = [o for a in lists for o in a.get("result", {}).get("overrides", [])
           if o["key"].get("src") == hk["src"] and o["key"].get("sport") == hk["sport"]]
    # Events name keys by hash: the 5-tuple's is that of its override in
    # hot_list (which names the key).
    kh = ovs[0]["key_hash"] if ovs else None
    mine = [e for e in ev if e["key_hash"] == kh]
    promos = [e for e in mine if e["event"] == "promote"]
    demos = [e for e in mine if e["event"] == "demote"]
    sized = [e for e in mine if e["event"] in ("promote", "replan")]
    print("events of the key: %s" % ", ".join("%s@%d r=%d" % (e["event"], e["window"],
                                                           e["replicas"]) for e in mine))

    # --- the windows against spillgen's clock -------------------------------
    rows = [r for r in live["rows"] if r["pid"] == live["rows"][-1]["pid"]]
    t0 = live_stats.t0_bounds(rows, csv_path)
    lo, hi = {}, {}
    for a, b in zip(rows, rows[1:]):
        if a["window"] is None or b["window"] is None:
            continue
        for w in range(a["window"] + 1, b["window"] + 1):
            lo[w], hi[w] = a["t_req"], b["t_rep"]
    wins = sorted(lo)
    if t0 is None or not wins:
        print("SKIP: spillgen's clock or the windows could not be placed")
        return 1 if not ok else 77
    t0_lo, t0_hi = t0

    def w_def(x):   # the window certainly open (at least) at monotonic x
        c_ = [w for w in wins if hi[w] <= x]
        return max(c_) if c_ else None

    def w_pos(x):   # the latest window possibly open at x
        c_ = [w for w in wins if lo[w] <= x]
        return max(c_) if c_ else None

    missed_at = []
    for a, b in zip(rows, rows[1:]):
        if a["missed"] is not None and b["missed"] is not None and b["missed"] > a["missed"]:
            missed_at.append((a["window"] - 1, b["window"] - 1, b["missed"] - a["missed"]))

    def misses_between(w0, w1):
        return sum(n for x, y, n in missed_at if y >= w0 and x <= w1)

    def grow(w0, w1):   # windows the controller could not read, to a fixed point
        e = 0
        while True:
            e2 = misses_between(w0, w1 + e)
            if e2 <= e:
                return e
            e = e2

    whs_lo, whs_hi = w_def(t0_lo + tau_s), w_pos(t0_hi + tau_s)
    whe_lo, whe = w_def(t0_lo + tau_e), w_pos(t0_hi + tau_e)
    wpin = w_def(t0_lo + tau_pin)
    if None in (whs_lo, whs_hi, whe_lo, whe, wpin):
        print("SKIP: the phases could not be placed among the windows")
        return 1 if not ok else 77
    extra = grow(whs_lo, whs_hi + PROMOTE_WINDOWS - 1)
    print("alignment: traffic start bracketed within %.1f ms; hot phase from window %d..%d "
          "to %d..%d; pinned phase from window %d; %d windows missed near the start"
          % ((t0_hi - t0_lo) * 1e3, whs_lo, whs_hi, whe_lo, whe, wpin, extra))

    # --- promotion ------------------------------------------------------------
    if len(promos_all) != 1 or len(promos) != 1:
        bad("%d promotions (%d of the 5-tuple); the model has one"
            % (len(promos_all), len(promos)))
    if promos and not whs_lo <= promos[0]["window"] <= whs_hi + PROMOTE_EVENT + extra:
        bad("promoted in window %d; the hot phase began in %d..%d (bound %d + %d missed)"
            % (promos[0]["window"], whs_lo, whs_hi, PROMOTE_EVENT, extra))
    h = hkr["hot"]
    if not h["promoted"]:
        bad("the 5-tuple never reached a second backend")
    else:
        tau_p = tau_s + h["promotion_delay_ms"] / 1000.0
        d_lo = w_def(t0_lo + tau_p)
        print("spread: the 5-tuple's first packet at a second backend in window %s (%.1f ms "
              "into the phase); bound %d + %d windows after %d"
              % (d_lo, h["promotion_delay_ms"], PROMOTE_WINDOWS, extra, whs_hi))
        if d_lo is None or d_lo - whs_hi > PROMOTE_WINDOWS + extra:
            bad("the 5-tuple was spread in window %s, hot phase began in %d"
                % (d_lo, whs_hi))

    # --- the cap, per window, from spillgen's decoded packets -----------------
    bins = {}
    for r in csv.DictReader(open(csv_path)):
        i = int(round(float(r["t_s"]) / ivs))
        bins.setdefault(i, {})[r["backend"]] = int(round(float(r["pps"]) * ivs))
    first_w = whs_hi + PROMOTE_WINDOWS + extra
    checked = []
    for w in wins:
        if w < first_w or w + 1 not in lo:
            continue
        a_, b_ = hi[w], lo[w + 1]
        if b_ > t0_lo + tau_e:
            break
        i0 = math.ceil((a_ - t0_lo) / ivs - 1e-9)
        i1 = math.floor((b_ - t0_hi) / ivs + 1e-9)
        if (i1 - i0) * ivs < MIN_COVER * win_s:
            continue
        load = {be: sum(bins.get(i, {}).get(be, 0) for i in range(i0, i1)) for be in bes}
        if max(load.values()) < MIN_COUNT:
            continue
        checked.append((w, load))
    if len(checked) < MIN_WINDOWS:
        skips.append("only %d windows of the hot phase could be judged (%d needed)"
                     % (len(checked), MIN_WINDOWS))
    # Tolerance: every packet, sprayed or of a background flow, lands on a
    # backend independently of the others (a sprayed packet draws its replica,
    # a background packet draws its flow), so a backend's count has variance
    # at most its mean; the planner saw EWMA loads (alpha 0.5: a third of one
    # window's variance more). Peak over mean per unit of weight, first order:
    #   sd(R)/R <= sqrt((1 + 1/3) / L_max + 1 / T),
    # z one-sided at FAMILY_ALPHA over every (window, backend) pair.
    infl = 1 + EWMA_ALPHA / (2 - EWMA_ALPHA)
    W = sum(wt.values())
    z = NormalDist().inv_cdf(1 - FAMILY_ALPHA / (max(1, len(checked)) * n_be))
    rs = []
    for w, load in checked:
        T = sum(load.values())
        per_w = {be: load[be] / wt[be] for be in load}
        lmax_be = max(per_w, key=per_w.get)
        R = per_w[lmax_be] / (T / W)
        tol = z * c * math.sqrt(infl / max(1, load[lmax_be]) + 1 / T)
        rs.append((R, tol, w, T))
        if R > c + tol:
            bad("window %d: peak/avg %.3f > %.2f + %.3f (%d packets)" % (w, R, c, tol, T))
    if rs:
        rr = sorted(x[0] for x in rs)
        worst = max(rs, key=lambda x: x[0] - x[1])
        print("cap c = %.2f: %d windows judged from window %d; peak/avg median %.3f, max %.3f; "
              "worst against its tolerance: window %d, %.3f vs %.2f + %.3f (%d packets)"
              % (c, len(rs), first_w, rr[len(rr) // 2], rr[-1], worst[2], worst[0], c,
                 worst[1], worst[3]))

    # --- the replicas ---------------------------------------------------------
    p = h["measured_share"]
    n_phase = h["packets"] / p if p else 0
    sd = math.sqrt(p * (1 - p) / n_phase) if n_phase else 1
    t_w = hot_ph["rate"] * win_s
    sd_w = math.sqrt(p * (1 - p) / t_w)
    avg_w = t_w / n_be
    base_sd = math.sqrt(max(1 - p, 0) * avg_w) / avg_w
    r_lo = replicas(n_be, p - 4 * sd, c, margin)
    r_hi = replicas(n_be, p + NOISE_Z * sd_w, c, margin, NOISE_Z * base_sd)
    pb = {b["address"]: b["packets"] for b in h["per_backend"]}
    print("the 5-tuple: share %.4f (spillgen), model r = ceil(%d p / (c (1 - %.2f) - 1 + p)) "
          "= %s; its packets by backend in the hot phase: %s"
          % (p, n_be, margin, r_lo if r_lo == r_hi else "%d..%d" % (r_lo, r_hi), pb))
    # The plan the key ended its hot phase with (a promotion in the window
    # the phase began in saw only part of it, and may be re-planned next).
    hot_sized = [e for e in sized if e["window"] < whe_lo]
    if hot_sized and not r_lo <= hot_sized[-1]["replicas"] <= r_hi:
        bad("the key ended its hot phase with %d replicas (%s in window %d); the model needs "
            "%d..%d" % (hot_sized[-1]["replicas"], hot_sized[-1]["event"],
                        hot_sized[-1]["window"], r_lo, r_hi))
    if not ovs:
        bad("hot_list never showed the 5-tuple's override while it was hot")
    after = h["packets"] * (1 - h["promotion_delay_ms"] / 1000.0 / (tau_e - tau_s)) \
        if h["promoted"] else 0
    for o in ovs:
        if not r_lo <= len(o["replicas"]) <= r_hi:
            bad("hot_list: the override has %d replicas; the model needs %d..%d"
                % (len(o["replicas"]), r_lo, r_hi))
        # The list is laid along the key's rendezvous order (docs/hot-keys.md),
        # not from its Maglev home: distinct backends of the VIP.
        if len(set(o["replicas"])) != len(o["replicas"]) or \
                not set(o["replicas"]) <= set(b["address"] for b in vip["backends"]):
            bad("hot_list: the override's replicas %s are not distinct backends of the VIP"
                % o["replicas"])
        for be in o["replicas"]:
            floor_ = REPLICA_FLOOR * after / len(o["replicas"])
            if pb.get(be, 0) < floor_:
                bad("replica %s got %d of the 5-tuple's packets; its even share after the "
                    "promotion is about %.0f (floor %.0f)"
                    % (be, pb.get(be, 0), after / len(o["replicas"]), floor_))
    if len(pb) < r_lo:
        bad("the 5-tuple reached %d backends; the cap needs %d" % (len(pb), r_lo))

    # --- demotion, then pinned again -----------------------------------------
    late = [e["window"] for e in demos if e["window"] >= whe_lo]
    early = [e["window"] for e in demos if e["window"] < whe_lo]
    mis = grow(whe_lo, whe + D + 1)
    print("demotion: the key fell in window %d..%d; demoted in %s; bound %d..%d (+ %d missed)"
          % (whe_lo, whe, late, whe_lo + D - 1, whe + D + 1 + mis, mis))
    if early:
        bad("demoted in window(s) %s while hot" % early)
    if len(late) != 1:
        bad("demoted %d times after the key fell; the model has once" % len(late))
    elif not whe_lo + D - 1 <= late[0] <= whe + D + 1 + mis:
        bad("demoted in window %d; bound %d..%d" % (late[0], whe_lo + D - 1, whe + D + 1 + mis))
    pin = {b["address"]: b["packets"] for b in hkr["pinned"]["per_backend"]}
    print("pinned phase (from window %d): the 5-tuple's packets by backend %s"
          % (wpin, pin))
    if len(late) == 1 and late[0] + 2 > wpin:
        skips.append("demoted in window %d, too late to judge the pinned phase (window %d)"
                     % (late[0], wpin))
    elif len(late) == 1:
        if list(pin) != [home]:
            bad("after the demotion the 5-tuple reached %s; the model pins it to %s only"
                % (sorted(pin), home))
    if res["flows"]["multi_backend"] > 2:
        bad("%d flows at more than one backend; only the sprayed 5-tuple's two phases may be"
            % res["flows"]["multi_backend"])

    # --- every packet accounted for ---------------------------------------------
    t = q["stats"]["totals"]
    drops = sum(t["drops"].values())
    tx, rx = res["tx"]["packets"], res["rx"]["packets"]
    print("spillwayd: rx %d, forwarded %d, icmp %d, exception %d, dropped %d %s, hot_sprayed "
          "%d; spillgen sent %d, received %d, lost %d"
          % (t["rx_packets"], t["forwarded"], t["icmp_sent"], t["exception"], t["dropped"],
             {x: v for x, v in t["drops"].items() if v}, t["hot_sprayed"], tx, rx,
             res["packets"]["lost"]))
    if t["rx_packets"] != tx:
        bad("spillwayd received %d packets, spillgen sent %d" % (t["rx_packets"], tx))
    if t["rx_packets"] != t["forwarded"] + t["icmp_sent"] + t["exception"] + drops \
            or t["dropped"] != drops:
        bad("counters do not conserve packets")
    if t["forwarded"] + t["icmp_sent"] != rx:
        bad("spillwayd sent back %d packets, spillgen received %d"
            % (t["forwarded"] + t["icmp_sent"], rx))
    if res["packets"]["lost"] != t["dropped"]:
        bad("spillgen lost %d packets, spillwayd counted %d drops"
            % (res["packets"]["lost"], t["dropped"]))
    if res["rx"]["decoded"] != rx or res["rx"]["unknown_flow"] or res["rx"]["tuple_mismatch"]:
        bad("spillgen could not decode every packet: %s" % res["rx"])
    sg_be = {b["address"]: b["packets"] for b in res["backends"]}
    diff = 0
    for b in q["stats"]["vips"][0]["backends"]:
        d = b["packets"] - sg_be.get(b["address"], 0)
        diff += d
        if d < 0:
            bad("backend %s: spillwayd counted %d, spillgen decoded %d"
                % (b["address"], b["packets"], sg_be.get(b["address"], 0)))
    if diff != t["dropped"]:
        bad("per backend, spillwayd counted %d more than spillgen decoded; it dropped %d"
            % (diff, t["dropped"]))
    # Sprayed packets: at most the key's packets of the phases it could be hot
    # in, at least those that reached a backend other than its home (only a
    # draw sends them there).
    key_pkts = hkr["hot"]["packets"] + hkr["cool"]["packets"]
    off_home = sum(v for be, v in pb.items() if be != home) + \
        sum(b["packets"] for b in hkr["cool"]["per_backend"] if b["address"] != home)
    if not off_home <= t["hot_sprayed"] <= key_pkts + t["dropped"]:
        bad("hot_sprayed %d: the model has %d..%d" % (t["hot_sprayed"], off_home,
                                                      key_pkts + t["dropped"]))
    ft = final["totals"]
    mp = final.get("mempool") or {}
    if ft["rx_packets"] != t["rx_packets"]:
        bad("packets arrived after the traffic ended")
    if mp.get("in_use") != 0 or mp.get("available") != mp.get("size"):
        bad("mbufs leaked: mempool %s" % mp)
    if not ok:
        print("FAILED")
        return 1
    for x in skips:
        print("SKIP: " + x)
    if skips:
        return 77
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
