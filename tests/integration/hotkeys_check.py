#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judge of test_hotkeys.sh (see there for the scenario).

  hotkeys_check.py LB.json SCENARIO.json LIVE.json RESULTS.json SERIES.csv FINAL-STATS.json

Oracles, none of them the daemon's account of itself:
  - the cap c = 1 + epsilon and the VIP's backends come from LB.json (the
    test's config), the hot phase, its share and its connection length k
    from SCENARIO.json;
  - per-backend loads are spillgen's decoded packets (SERIES.csv, one row per
    spillgen interval and backend, by receive time);
  - the controller's windows are its logical clock, read live over the control
    socket (LIVE.json, live_stats.py): each window's opening is bracketed by
    two polls, and spillgen's clock is placed against them by the bracket of
    the traffic start. Only spillgen intervals that certainly lie inside one
    window (for every alignment within the brackets) count for it;
  - the replica count the cap needs is computed here,
    r = ceil(N p / (c (1 - m) - 1 + p)) with the planner's margin m, from p as
    spillgen measured it (a range: the noise of one window's measurements),
    m from hot.margin up to the planner's noise margin (docs/hot-keys.md) for
    the per-backend noise of spillgen's own counts before the key arrives;
  - packets are conserved against what spillgen sent and received;
  - the test's own actions (live_stats.py --actions, in LIVE.json): the
    file that makes every window missed (SPILLWAY_TEST_HOT_MISS_FILE), its
    creation and removal bracketed in monotonic time, and the backend_set
    that sets one of the key's replicas down, with its reply time; spillgen
    stamps every packet with its send time, and reports per backend the
    send time of the latest first packet of one of the key's connections
    there and, per backend, the flows that left it (moved_from).
The daemon's counters and events are then checked against these.

Exit 0 pass, 1 fail, 77 skip (only when the run could not be judged: the
traffic start or the windows could not be placed).
"""

import csv
import json
import math
import os
import sys
from statistics import NormalDist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_stats  # noqa: E402

EWMA_ALPHA = 0.5      # the controller's ewma_alpha (docs/hot-keys.md, knobs)
FAMILY_ALPHA = 0.01   # false-alarm budget over all per-window comparisons
PROMOTE_WINDOWS = 3   # the key is spread, and the cap holds, this many
                      # windows after the window the hot phase starts in
PROMOTE_EVENT = 2     # the promotion event within this many windows of the
                      # window the hot phase starts in (its share >= phi there
                      # or in the next one)
SETTLE_WINDOWS = 2    # the cap is judged again this many windows after the
                      # window of a replica's failure
DEMOTE_WINDOWS = 5    # the controller's default demote_windows (D)
MIN_WINDOWS = 10      # fewer checkable windows: the run cannot be judged
MIN_COVER = 0.25      # a window is judged on the part of it that certainly
                      # belongs to it, if that is at least this fraction
MARGIN = 0.05         # the planner's default hot.margin (docs/hot-keys.md)
NOISE_Z = 3.0         # standard deviations of one window's measurements the
                      # model allows the planner's r to have seen
MIN_COUNT = 100       # a window whose busiest backend got fewer is not judged
                      # (the normal approximation below needs counts)


# The planner's replica counts (control/hot/hot_plan.c, lb_hotkey_rung).
LADDER = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)


def replicas(n, p, c, m=0.0, slack=0.0):
    """The fewest r whose replicas each take p/r of the VIP's traffic on top of
    their own share (1 - p)/N and stay under the cap less the planner's margin
    m (docs/hot-keys.md, "Planning under noise"), all in units of the average
    backend load: p N / r <= c (1 - m) - (1 - p) - slack, so
    r = ceil(N p / (c (1 - m) - 1 + p - slack)), raised to the next rung of
    the planner's ladder 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ... and clamped to
    [1, N]. slack: how much less headroom the planner may have measured
    (noise of its loads)."""
    if p <= 0:
        return 1
    den = c * (1 - m) - 1 + p - slack
    if den <= 0:
        return n
    x = n * p / den
    r = math.ceil(x - 1e-9)
    for rung in LADDER:
        if rung >= r:
            r = rung
            break
    return max(1, min(n, r))


def noise_model(csv_path, bes, tau_s, ivs, win_s, c, margin, a):
    """The traffic's per-backend noise before the key arrives, from spillgen's
    received counts (SERIES.csv), in windows of window_ms cut from its
    intervals at every offset (the controller's windows are not aligned with
    them). Returns the packets per window (mean), the variance of a backend's
    count around its share of the window's packets (mean over the backends),
    and the largest relative margin the planner's formula gives in any window:
    the controller's noise is an EWMA (weight a) of the squared deviation of
    each window's load from its smoothed load scaled to the window's volume,
    not taken in a step window (a deviation over 4 sd of its count plus that
    noise: every load restarts); the margin is max(margin x cap, 2 sd of the
    EWMA, sd^2 = var a / (2 - a)), cap = c x the average load, as a fraction of
    the cap (docs/hot-keys.md, "Planning under noise"). None: too few windows."""
    per = {}
    for r in csv.DictReader(open(csv_path)):
        t = float(r["t_s"])
        if t + ivs <= tau_s and r["backend"] in bes:
            per.setdefault(int(round(t / ivs)), {})[r["backend"]] = float(r["pps"]) * ivs
    ivl = sorted(i for i in per if sum(per[i].values()) > 0)
    k = max(1, int(round(win_s / ivs)))
    if len(ivl) < 4 * k:
        return None
    first, last = ivl[0], ivl[-1]
    tot = {b: sum(per[i].get(b, 0) for i in ivl) for b in bes}
    T_all = sum(tot.values())
    share = {b: tot[b] / T_all for b in bes}
    dev2 = n_dev = pk = 0
    m_hi = 0.0
    z_step2 = 16.0      # LB_HOT_STEP_Z = 4
    for off in range(k):
        wins = []
        for s0 in range(first + off, last - k + 2, k):
            wins.append({b: sum(per.get(i, {}).get(b, 0) for i in range(s0, s0 + k))
                         for b in bes})
        load, var = None, {b: 0.0 for b in bes}
        for n, x in enumerate(wins):
            T = sum(x.values())
            if T <= 0:
                continue
            pk += T
            for b in bes:
                dev2 += (x[b] - share[b] * T) ** 2
                n_dev += 1
            if load is None:
                load = dict(x)
                continue
            vw = sum(load.values())
            d = {b: x[b] - load[b] * T / vw for b in bes}
            if any(d[b] ** 2 > z_step2 * (max(x[b], 1) + var[b]) for b in bes):
                load = dict(x)
                continue
            for b in bes:
                load[b] = a * x[b] + (1 - a) * load[b]
                var[b] = a * d[b] ** 2 + (1 - a) * var[b]
            cap = c * sum(load.values()) / len(bes)
            if n >= 3:
                for b in bes:
                    m_hi = max(m_hi, 2 * math.sqrt(var[b] * a / (2 - a)) / cap)
    n_win = n_dev // len(bes)
    return {"windows": n_win // k, "offsets": k, "packets": pk / n_win,
            "var": dev2 / n_dev, "margin_hi": max(margin, m_hi)}


def main(cfg_path, scen_path, live_path, res_path, csv_path, final_path):
    cfg = json.load(open(cfg_path))
    scen = json.load(open(scen_path))
    live = json.load(open(live_path))
    res = json.load(open(res_path))
    final = json.load(open(final_path))
    ok = True

    def bad(msg):
        nonlocal ok
        ok = False
        print("FAIL: " + msg)

    skips = []

    class Unjudged(Exception):
        pass

    def skip(msg):
        skips.append(msg)
        raise Unjudged()

    c = 1 + cfg["hot"]["epsilon"]
    vip = cfg["vips"][0]
    bes = [b["address"] for b in vip["backends"]
           if b.get("weight", 1) > 0 and b.get("state", "active") == "active"]
    n_be = len(bes)
    hot_ph = [p for p in scen["phases"] if "hot" in p][0]
    hk = hot_ph["hot"]
    k = hk["packets_per_connection"]
    tau_s, tau_e = hot_ph["start"], hot_ph["end"]
    ivs = scen["interval_ms"] / 1000.0
    win_s = cfg["hot"]["window_ms"] / 1000.0
    hkr = [h for h in res["hot_keys"] if h["phase"] == hot_ph["name"]][0]
    # The daemon's account, read over the control socket once the traffic
    # was over (checked against the model further down).
    q = live.get("quiet")
    hl = q["hot_list"] if q else {"overrides": [], "counters": {}, "params": {}}
    # The test's actions, as live_stats.py made them.
    acts = live.get("actions", [])
    a_touch = [a for a in acts if "touch" in a]
    a_rm = [a for a in acts if "remove" in a]
    a_down = [a for a in acts if a.get("method") == "backend_set"]
    down = a_down[0] if a_down else None
    for a in acts:
        if "error" in a:
            bad("action %s failed: %s" % (a.get("method") or a.get("touch") or a.get("remove"),
                                         a["error"]))
    for a in live.get("actions_not_done", []):
        bad("action at %.1f s was never made" % a["at"])
    down_be = down["params"]["address"] if down and "error" not in down else None
    ev = q["hot_events"] if q else []
    # Events name keys by hash: the hot key's is the one of its override
    # (hot_list names the key), else that of the only promotion.
    # The promotion bound in force, from the seeds' formula on the test's own
    # configuration: (c - 1) w / (W - w) for the lightest usable weight w of
    # the VIP's usable W; the backend the test set down stays down.
    if q:
        ws = [b.get("weight", 1) for b in vip["backends"]
              if b.get("weight", 1) > 0 and b.get("state", "active") == "active"
              and b["address"] != down_be]
        want = (c - 1) * min(ws) / (sum(ws) - min(ws)) if len(ws) > 1 else None
        got = [e for e in hl.get("bounds", [])
               if e["vip"]["address"] == vip["address"] and e["vip"]["port"] == vip["port"]]
        if not got:
            bad("hot_list has no promotion bound for the VIP")
        elif want is None or got[0]["bound"] is None:
            if want != got[0]["bound"]:
                bad("hot_list bound %r, the formula %r" % (got[0]["bound"], want))
        elif abs(got[0]["bound"] - want) > 1e-9 * want:
            bad("hot_list bound %.6f, the formula (c - 1) w / (W - w) %.6f"
                % (got[0]["bound"], want))
    ours = [o for o in hl["overrides"] if o["key"].get("src") == hk["src"]]
    all_promos = {e["key_hash"] for e in ev if e["event"] == "promote"}
    if ours:
        kh, how = ours[0]["key_hash"], "its override in hot_list"
    elif len(all_promos) == 1:
        kh, how = next(iter(all_promos)), "the only key promoted"
    else:
        kh, how = None, "not found"
    mine = [e for e in ev if e["key_hash"] == kh]
    # Every event of the hot key names it as the VIP's key mode sees it.
    for e in mine:
        if e.get("key", {}).get("src") != hk["src"]:
            bad("hot_events %s of window %s names key %r, not the hot source %s"
                % (e["event"], e["window"], e.get("key"), hk["src"]))
    promos = [e for e in mine if e["event"] == "promote"]
    sized = [e for e in mine if e["event"] in ("promote", "replan")]
    D = hl["params"].get("demote_windows", DEMOTE_WINDOWS)

    # Everything counted in windows needs spillgen's clock and the
    # controller's placed against each other (placed), and the cap enough
    # windows judged with certainty; what cannot be judged is not (exit 77
    # unless another check fails).
    placed = False
    whe_lo = None
    extra = 0
    try:
        # --- alignment ---------------------------------------------------------
        rows = [r for r in live["rows"] if live["rows"] and r["pid"] == live["rows"][-1]["pid"]]
        t0 = live_stats.t0_bounds(rows, csv_path)
        if t0 is None:
            skip("spillgen's clock could not be placed against the polls")
        t0_lo, t0_hi = t0
        if rows[-1]["window"] is None:
            bad("stats carry no hot-key window (hot keys disabled?)")
            raise Unjudged()
        # Window w opened in [lo[w], hi[w]].
        lo, hi = {}, {}
        for a, b in zip(rows, rows[1:]):
            if b["pid"] != a["pid"] or a["window"] is None or b["window"] is None:
                continue
            for w in range(a["window"] + 1, b["window"] + 1):
                lo[w], hi[w] = a["t_req"], b["t_rep"]
        if not lo:
            skip("no window opening was observed")
        wins = sorted(lo)

        def w_def(x):   # the window certainly open (at least) at monotonic x
            c_ = [w for w in wins if hi[w] <= x]
            return max(c_) if c_ else None

        def w_pos(x):   # the latest window possibly open at x
            c_ = [w for w in wins if lo[w] <= x]
            return max(c_) if c_ else None

        print("alignment: traffic start bracketed within %.1f ms; %d window openings seen, "
              "median bracket %.1f ms (window_ms %d)"
              % ((t0_hi - t0_lo) * 1e3, len(wins),
                 sorted(hi[w] - lo[w] for w in wins)[len(wins) // 2] * 1e3, cfg["hot"]["window_ms"]))
        whs_lo, whs_hi = w_def(t0_lo + tau_s), w_pos(t0_hi + tau_s)
        if whs_lo is None or whs_hi is None:
            skip("the hot phase's start could not be placed among the windows")
        print("hot phase starts in window %d..%d (controller's clock)" % (whs_lo, whs_hi))
        # Windows the controller had no data for: when it reads window w (while
        # w + 1 is open) a core that has not closed w yet (its worker was
        # descheduled) costs that window (missed_core_windows). Such a window
        # tells the controller nothing, so the deadlines below count only the
        # windows it could read: each miss seen while it read a window from the
        # hot phase's start on moves them one window later.
        missed_at = []      # (the windows possibly read at that time, misses)
        for a, b in zip(rows, rows[1:]):
            if b["pid"] == a["pid"] and a["missed"] is not None and b["missed"] > a["missed"]:
                missed_at.append((a["window"] - 1, b["window"] - 1, b["missed"] - a["missed"]))

        def misses_between(w0, w1):
            return sum(n for x, y, n in missed_at if y >= w0 and x <= w1)

        extra = 0
        while True:
            e = misses_between(whs_lo, whs_hi + PROMOTE_WINDOWS + extra - 1)
            if e <= extra:
                break
            extra = e
        n_missed = rows[-1]["missed"] - rows[0]["missed"] if rows[0]["missed"] is not None else 0
        print("controller: %d core-windows missed in the run, %d of them from the hot phase's "
              "start to the deadline (each moves the deadline one window on)" % (n_missed, extra))
        # While the key is hot every window the controller reads has its
        # share at about p >> phi_low, and a window it cannot read decides
        # nothing: no demotion, whatever was missed.
        whe = w_pos(t0_hi + tau_e)
        whe_lo = w_def(t0_lo + tau_e)
        for e in mine:
            if e["event"] == "demote" and whe_lo is not None and e["window"] < whe_lo:
                bad("the hot key was demoted in window %d while its share was %.2f (spillgen); "
                    "the key stopped in window %s..%s" % (e["window"], hkr["measured_share"],
                                                          whe_lo, whe))
        placed = True
        # --- spillgen's decoded packets per window ------------------------------
        bins = {}
        for r in csv.DictReader(open(csv_path)):
            i = int(round(float(r["t_s"]) / ivs))
            bins.setdefault(i, {})[r["backend"]] = int(round(float(r["pps"]) * ivs))
        first_w = whs_hi + PROMOTE_WINDOWS + extra
        checked = []
        skipped_short = skipped_empty = 0
        skipped_down = 0
        # The replica set down: windows from the one open at its request to
        # SETTLE_WINDOWS after the one open at its reply are not judged; later
        # ones are judged over the backends left.
        wd0 = w_def(down["t_req"]) if down_be else None
        wd1 = w_pos(down["t_rep"]) if down_be else None
        for w in wins:
            if w < first_w or w + 1 not in lo:
                continue
            w_bes = bes
            if down_be and wd0 is not None and wd1 is not None:
                if wd0 <= w <= wd1 + SETTLE_WINDOWS:
                    skipped_down += 1
                    continue
                if w > wd1 + SETTLE_WINDOWS:
                    w_bes = [b for b in bes if b != down_be]
            a_, b_ = hi[w], lo[w + 1]          # certainly window w in between
            if b_ > t0_lo + tau_e:             # past the hot phase's end
                break
            i0 = math.ceil((a_ - t0_lo) / ivs - 1e-9)
            i1 = math.floor((b_ - t0_hi) / ivs + 1e-9)   # bins i0..i1-1
            if (i1 - i0) * ivs < MIN_COVER * win_s:
                skipped_short += 1
                continue
            load = {be: sum(bins.get(i, {}).get(be, 0) for i in range(i0, i1)) for be in w_bes}
            if max(load.values()) < MIN_COUNT:
                # spillgen (or the daemon's worker) was descheduled: next to
                # nothing was sent in this stretch. Conservation is judged below.
                skipped_empty += 1
                continue
            checked.append((w, i1 - i0, load))
        if len(checked) < MIN_WINDOWS:
            skip("only %d windows of the hot phase could be judged (%d too short to place "
                 "with certainty, %d with under %d packets at every backend); at least %d "
                 "needed" % (len(checked), skipped_short, skipped_empty, MIN_COUNT, MIN_WINDOWS))

        # Tolerance: a backend's count in a window is a sum of packets, each on
        # that backend independently (background flows) or in connections of k
        # packets that go to one replica together (the hot key), so its variance
        # is at most k times its mean. The controller planned on EWMA loads of
        # earlier windows (alpha 0.5: variance alpha/(2-alpha) = 1/3 of one
        # window's), which adds that much again. Peak over mean, to first order:
        #   sd(R)/R <= sqrt(k (1 + 1/3) / L_max + k / T)
        # and z is one-sided at FAMILY_ALPHA over every (window, backend) pair.
        infl = 1 + EWMA_ALPHA / (2 - EWMA_ALPHA)
        m = len(checked)
        z = NormalDist().inv_cdf(1 - FAMILY_ALPHA / (m * n_be))
        worst = None
        over = []
        pools = {}          # per set of backends: packets summed over its windows
        for w, nb, load in checked:
            n_w = len(load)
            T = sum(load.values())
            lmax = max(load.values())
            R = lmax / (T / n_w)
            tol = z * c * math.sqrt(k * infl / lmax + k / T)
            if worst is None or R - tol > worst[1] - worst[2]:
                worst = (w, R, tol, T)
            if R > c + tol:
                over.append("window %d: peak/avg %.3f > %.2f + %.3f (%d packets)" % (w, R, c, tol, T))
            tot = pools.setdefault(tuple(sorted(load)), {})
            for be in load:
                tot[be] = tot.get(be, 0) + load[be]
        rs = sorted(max(l_.values()) / (sum(l_.values()) / len(l_)) for _, _, l_ in checked)
        print("cap c = 1 + epsilon = %.2f; %d windows checked from window %d (hot start + %d + %d "
              "missed); not judged: %d too short to place, %d nearly empty, %d from the "
              "replica's failure (window %s..%s) + %d; z = %.2f"
              % (c, m, first_w, PROMOTE_WINDOWS, extra, skipped_short, skipped_empty,
                 skipped_down, wd0, wd1, SETTLE_WINDOWS, z))
        if down_be and not any(len(l_) == n_be - 1 for _, _, l_ in checked):
            skips.append("no window after the replica's failure (window %s) could be judged "
                         "against the cap" % wd1)
        print("per-window peak/avg of the hot VIP (decoded packets): median %.3f, max %.3f; "
              "worst margin in window %d: %.3f vs %.2f + %.3f (%d packets)"
              % (rs[len(rs) // 2], rs[-1], worst[0], worst[1], c, worst[2], worst[3]))
        for o in over:
            bad(o)
        for key_, tot in sorted(pools.items(), key=lambda x: -len(x[0])):
            T = sum(tot.values())
            R_pool = max(tot.values()) / (T / len(tot))
            z1 = NormalDist().inv_cdf(1 - FAMILY_ALPHA / len(tot))
            tol_pool = z1 * c * math.sqrt(k * infl / max(tot.values()) + k / T)
            print("checked windows over %d backends together: peak/avg %.3f vs %.2f + %.3f "
                  "(%d packets: %s)" % (len(tot), R_pool, c, tol_pool, T,
                                        " ".join("%d" % tot[be] for be in key_)))
            if R_pool > c + tol_pool:
                bad("over the checked windows on %d backends together peak/avg %.3f > %.2f + "
                    "%.3f" % (len(tot), R_pool, c, tol_pool))
    except Unjudged:
        pass

    # --- promotion, judged from the decoded packets --------------------------
    # The planner sizes r from one window's measurements: the key's share in
    # that window (binomial over the window's packets) and each backend's load
    # without the key, against the cap less its margin M = max(hot.margin x
    # cap, 2 sd of the EWMA of its measured load noise) (docs/hot-keys.md,
    # "Planning under noise"). The noise is the traffic's own, measured here
    # from spillgen's received counts before the key arrives (noise_model()).
    # r_lo: the phase's share at -4 sd, exact loads, the margin hot.margin;
    # r_hi: the window's share at +NOISE_Z sd, every base load NOISE_Z of the
    # measured standard deviations high, and the largest margin the noise
    # estimate reached in any window before the key. When no r meets the cap
    # less that margin the planner takes every backend (r = N).
    p = hkr["measured_share"]
    n_phase = hkr["packets"] / p if p else 0
    sd = math.sqrt(p * (1 - p) / n_phase) if n_phase else 1
    margin = cfg["hot"].get("margin", MARGIN)
    nm = noise_model(csv_path, bes, tau_s, ivs, win_s, c, margin,
                     cfg["hot"].get("ewma_alpha", EWMA_ALPHA))
    t_w = nm["packets"] if nm else hot_ph["rate"] * win_s
    avg_w = t_w / n_be
    var_w = max(nm["var"], avg_w) if nm else avg_w    # never below Poisson
    sd_w = math.sqrt(p * (1 - p) / t_w)
    base_sd = math.sqrt(max(1 - p, 0) * var_w) / avg_w    # in units of the average
    m_hi = max(margin, nm["margin_hi"]) if nm else margin
    r_lo = replicas(n_be, p - 4 * sd, c, margin)
    r_hi = replicas(n_be, p + NOISE_Z * sd_w, c, m_hi, NOISE_Z * base_sd)
    if nm:
        print("noise before the key (spillgen's counts, %d windows of %d ms, %d offsets): "
              "%.0f packets per window, per-backend variance %.0f = %.2f x Poisson; the "
              "planner's margin by its formula up to %.3f of the cap (hot.margin %.2f)"
              % (nm["windows"], round(win_s * 1e3), nm["offsets"], t_w, nm["var"],
                 nm["var"] / avg_w, nm["margin_hi"], margin))
    print("hot key: share %.4f (spillgen), model r = ceil(%d p / (c (1 - m) - 1 + p)), m = "
          "%.2f..%.3f: %s; reached %d backends"
          % (p, n_be, margin, m_hi, r_lo if r_lo == r_hi else "%d..%d" % (r_lo, r_hi),
             hkr["backends"]))
    # Every backend taking p / N of the key carries the average, its base
    # load's noise on top: if that holds the cap, a plan holds it, and the
    # planner must not call the key infeasible (docs/hot-keys.md).
    peak_all = 1 + NOISE_Z * base_sd
    if hkr["packets"] > hk.get("pool", 16384) * k:
        bad("the hot key reused connections (%d packets > pool %d x %d): established "
            "ones would return to their first backend" % (hkr["packets"], hk["pool"], k))
    if not hkr["promoted"]:
        bad("the hot key's packets never reached a second backend")
    elif placed:
        tau_p = tau_s + hkr["promotion_delay_ms"] / 1000.0
        wsp_lo = w_def(t0_lo + tau_p)
        wsp_hi = w_pos(t0_hi + tau_p)
        d_lo = wsp_lo - whs_hi if wsp_lo is not None else None
        d_hi = wsp_hi - whs_lo if wsp_hi is not None else None
        print("spread: the key's first packet at a second backend in window %s..%s: "
              "%s..%s windows after the hot phase began (bound %d)"
              % (wsp_lo, wsp_hi, d_lo, d_hi, PROMOTE_WINDOWS))
        if d_lo is None or d_lo > PROMOTE_WINDOWS + extra:
            bad("the hot key was spread %s windows after the hot phase began (bound %d + %d "
                "missed)" % (d_lo, PROMOTE_WINDOWS, extra))
    # Every replica list the key had adds its backends: at least r of them.
    if hkr["backends"] < r_lo:
        bad("hot key reached %d backends; the cap needs %d replicas"
            % (hkr["backends"], r_lo))
    # Zero connections moved: a flow changes backend only when its backend
    # is set down (its flows are re-chosen), once, after the change.
    fl = res["flows"]
    mf = fl.get("moved_from", {})
    print("flows: %d seen, %d at more than one backend (%d moves), by the backend they left: "
          "%s; the replica set down: %s" % (fl["seen"], fl["multi_backend"], fl["moves"], mf,
                                            down_be))
    if fl["multi_backend"] != mf.get(down_be, 0) or fl["moves"] != fl["multi_backend"]:
        bad("%d flows moved (%d moves), %d of them off the backend set down: established "
            "flows must keep their backend" % (fl["multi_backend"], fl["moves"],
                                               mf.get(down_be, 0)))
    if placed and down_be and fl["multi_backend"]:
        moved_early = 0
        for r in csv.DictReader(open(csv_path)):
            # moved_flows per interval, by receive time: an interval that
            # certainly ended before the request carries no move.
            if t0_hi + float(r["t_s"]) + ivs < down["t_req"]:
                moved_early += int(r["moved_flows"])
        nb_csv = len(set(r["backend"] for r in csv.DictReader(open(csv_path)))) or 1
        if moved_early:
            bad("%d flow moves before the replica was set down" % (moved_early // nb_csv))

    # --- the daemon's account, before it was stopped ----------------------------
    q = live.get("quiet")
    if q is None:
        bad("no stats were read over the control socket after the traffic ended")
        print("FAILED")
        return 1
    t = q["stats"]["totals"]
    drops = sum(t["drops"].values())
    tx, rx = res["tx"]["packets"], res["rx"]["packets"]
    print("spillwayd (control socket, before stop): rx %d, forwarded %d, icmp %d, "
          "exception %d, dropped %d %s; spillgen sent %d, received %d, lost %d"
          % (t["rx_packets"], t["forwarded"], t["icmp_sent"], t["exception"], t["dropped"],
             {x: v for x, v in t["drops"].items() if v}, tx, rx, res["packets"]["lost"]))
    if t["rx_packets"] != tx:
        bad("spillwayd received %d packets, spillgen sent %d" % (t["rx_packets"], tx))
    if t["rx_packets"] != t["forwarded"] + t["icmp_sent"] + t["exception"] + drops \
            or t["dropped"] != drops:
        bad("counters do not conserve packets: rx %d != forwarded + icmp + exception + "
            "drops by reason %d" % (t["rx_packets"],
                                    t["forwarded"] + t["icmp_sent"] + t["exception"] + drops))
    if t["forwarded"] + t["icmp_sent"] != rx:
        bad("spillwayd sent back %d packets, spillgen received %d"
            % (t["forwarded"] + t["icmp_sent"], rx))
    if res["packets"]["lost"] != t["dropped"]:
        bad("spillgen lost %d packets, spillwayd counted %d drops"
            % (res["packets"]["lost"], t["dropped"]))
    # Per backend: the daemon counts a packet at its backend when it chooses
    # it, so a packet dropped after that (tx_full) is counted there and never
    # decoded; every drop of this run comes after the choice.
    sg_be = {b["address"]: b["packets"] for b in res["backends"]}
    diff = 0
    for b in q["stats"]["vips"][0]["backends"]:
        d = b["packets"] - sg_be.get(b["address"], 0)
        diff += d
        if d < 0:
            bad("backend %s: spillwayd counted %d, spillgen decoded %d"
                % (b["address"], b["packets"], sg_be.get(b["address"], 0)))
    if diff != t["dropped"]:
        bad("per backend, spillwayd counted %d packets more than spillgen decoded; "
            "it dropped %d" % (diff, t["dropped"]))
    # Promotion in the daemon's counters and events, against the model.
    cnt = hl["counters"]
    infeasible = [e for e in mine if e["event"] == "infeasible"]
    print("the plan over every backend: peak/avg up to %.3f by the model (c = %.2f); "
          "infeasible events of the key: %d" % (peak_all, c, len(infeasible)))
    if peak_all <= c and infeasible:
        bad("the hot key was called infeasible (window %d, best peak %.3f) although the plan "
            "over every backend holds the cap by the model (peak/avg <= %.3f)"
            % (infeasible[0]["window"], infeasible[0].get("peak", float("nan")), peak_all))
    print("hot-key counters: %s; events of the hot key (%s, by %s): %s"
          % (cnt, kh, how, ", ".join("%s@%d r=%d" % (e["event"], e["window"], e["replicas"])
                                     for e in mine)))
    # Background flows each carry (1 - p) / flows of the packets, far below
    # the threshold: the hot key is the only key the model promotes.
    demoted = [e for e in mine if e["event"] == "demote"]
    if not placed and demoted:
        skips.append("the hot key was demoted %d times; without the windows placed the "
                     "demotions cannot be explained" % len(demoted))
    elif cnt["promotions"] != len(promos) or len(promos) != 1:
        bad("%d promotions (%d of the hot key); the model has one"
            % (cnt["promotions"], len(promos)))
    if promos:
        wp = promos[0]["window"]
        print("promotion: event in window %d; the hot phase began in window %s..%s, where (or "
              "in the next window) its share first crosses phi; bound %d windows + %d missed"
              % (wp, whs_lo if placed else None, whs_hi if placed else None, PROMOTE_EVENT,
                 extra))
        if placed and not whs_lo <= wp <= whs_hi + PROMOTE_EVENT + extra:
            bad("promoted in window %d, the hot phase began in %d..%d" % (wp, whs_lo, whs_hi))
    # Demotion: D read windows below phi_low after the key stops (its last
    # window may still be above), so in window whe + D - 1 .. whe + D, and
    # within D + 1 windows of the stop plus the windows the controller missed.
    if placed and whe is not None and whe_lo is not None:
        dem = [e["window"] for e in mine if e["event"] == "demote"]
        late = [e for e in dem if e >= whe_lo]
        mis = misses_between(whe_lo, whe + D + 1)
        while True:
            m_ = misses_between(whe_lo, whe + D + 1 + mis)
            if m_ <= mis:
                break
            mis = m_
        print("demotion: the key stopped in window %d..%d; demoted in window(s) %s; bound "
              "%d..%d (D + 1 = %d windows, + %d missed)"
              % (whe_lo, whe, late, whe_lo + D - 1, whe + D + 1 + mis, D + 1, mis))
        if len(late) != 1:
            bad("the key was demoted %d times after it stopped; the model has once" % len(late))
        elif not whe_lo + D - 1 <= late[0] <= whe + D + 1 + mis:
            bad("demoted in window %d; the key stopped in window %d..%d, D = %d"
                % (late[0], whe_lo, whe, D))
    # The replica count: r for the N backends, and after a replica went
    # down, anything from r for N - 1 up.
    # Judged on the plans made while the key was hot: once it stops its share
    # falls and the controller may shrink the set before it demotes the key.
    r1_lo = replicas(n_be - 1, p - 4 * sd, c) if down_be else r_lo
    hot_sized = [e for e in sized if whe_lo is None or e["window"] < whe_lo]
    if hot_sized and not r1_lo <= hot_sized[-1]["replicas"] <= r_hi:
        bad("the hot key's override ended the hot phase with %d replicas; the cap needs %d..%d"
            % (hot_sized[-1]["replicas"], r1_lo, r_hi))
    for o in ours:
        if not r1_lo <= len(o["replicas"]) <= r_hi:
            bad("hot_list: the hot key's override has %d replicas; the cap needs %d..%d"
                % (len(o["replicas"]), r1_lo, r_hi))
    if down and "replicas" in down and not r_lo <= len(down["replicas"]) <= r_hi:
        bad("hot_list before the replica went down: %d replicas; the cap needs %d..%d"
            % (len(down["replicas"]), r_lo, r_hi))
    # Missed windows: the file existed from the reply of touch to the request
    # of remove; each window opening certainly inside that time makes the
    # window before it missed in full (its reads on every tick until it
    # opened failed), so at least k - 1 of k such openings.
    if placed and a_touch and a_rm:
        t_in, t_out = a_touch[0]["t_rep"], a_rm[0]["t_req"]
        kk = sum(1 for w in wins if lo[w] >= t_in and hi[w] <= t_out)
        before = [r["windows_missed"] for r in rows if r["t_rep"] < a_touch[0]["t_req"]
                  and r.get("windows_missed") is not None]
        w_end = hl["counters"].get("windows_missed")
        grew = w_end - before[-1] if before and w_end is not None else None
        hot_at = w_pos(t_out) is not None and whe_lo is not None and w_pos(t_out) < whe_lo
        print("missed windows: the file existed over %d window openings (%.0f ms); "
              "windows_missed grew by %s (bound >= %d); demote_windows D = %d"
              % (kk, (t_out - t_in) * 1e3, grew, kk - 1, D))
        if grew is None:
            bad("windows_missed was not read before and after the missed windows")
        elif grew < kk - 1:
            bad("windows_missed grew by %d over %d windows missed by the test" % (grew, kk))
        if not hot_at:
            bad("the missed windows ended after the key stopped")
        if kk - 1 <= D:
            skips.append("only %d windows missed by the test, D = %d: the missed-window check "
                         "is not conclusive" % (kk - 1, D))
    # The replica set down: no new flow of the key reaches it after the reply.
    if down_be and placed:
        pb = {b["address"]: b for b in hkr.get("per_backend", [])}
        x = pb.get(down_be)
        ts = x["last_new_flow_s"] if x else None
        print("replica %s set down: request..reply %.1f ms, in window %s..%s; the key's "
              "latest new flow there was sent at %s (monotonic, bracket %.1f ms) = %s ms "
              "before the reply (%s of the key's packets there)"
              % (down_be, (down["t_rep"] - down["t_req"]) * 1e3, wd0, wd1,
                 None if ts is None else "%.4f..%.4f" % (t0_lo + ts, t0_hi + ts),
                 (t0_hi - t0_lo) * 1e3,
                 None if ts is None else "%.1f..%.1f" % ((down["t_rep"] - t0_hi - ts) * 1e3,
                                                         (down["t_rep"] - t0_lo - ts) * 1e3),
                 x["packets"] if x else 0))
        if x is None or ts is None:
            bad("the replica set down never had a new flow of the key: the check is void")
        elif t0_lo + ts > down["t_rep"]:
            bad("a new flow of the key reached %s %.1f ms after the reply that set it down "
                "(its first packet sent then at the earliest)"
                % (down_be, (t0_lo + ts - down["t_rep"]) * 1e3))
        if t0_lo + tau_e < down["t_rep"] + 0.2:
            bad("the replica went down less than 200 ms before the key stopped")
    # New flows placed by the override: the key's connections opened after it
    # took effect (at least those of the windows judged above, about half the
    # phase or more); never more than the key's connections.
    conns = hkr["packets"] / k
    print("hot_spread %d (the hot key opened about %.0f connections)" % (t["hot_spread"], conns))
    if not 0.5 * conns - hk["connections"] <= t["hot_spread"] <= conns + hk["connections"]:
        bad("hot_spread %d: the model expects %.0f..%.0f"
            % (t["hot_spread"], 0.5 * conns - hk["connections"], conns + hk["connections"]))
    # Final stats (after the ports closed): every mbuf back.
    ft = final["totals"]
    mp = final.get("mempool") or {}
    if ft["rx_packets"] != t["rx_packets"]:
        bad("packets arrived after the traffic ended: %d then %d" % (t["rx_packets"], ft["rx_packets"]))
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
