#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Judge one case of test_hot_zipf.sh from the packets spillwayd sent.

  hot_zipf_check.py DIR [--delay-windows D] [--name NAME]

DIR holds what hot_zipf_gen.py wrote (in.pcap, config.json, manifest.json,
srcs.bin, conns.bin), what hot_zipf_feed.py recorded (feed.json: frames
written, rx_packets and the controller window per poll; daemon.json) and
spillwayd's out.pcap. Every oracle is computed here from the generator's
record, the test's config and the output frames; nothing is taken from the
daemon's code, constants or account of itself (daemon.json is only quoted in
the report).

Every output frame is decoded (Ethernet, outer IPv4 protocol 4; the outer
destination is the backend; the inner packet names its connection and index
through its TCP sequence number, conn * 64 + i) and its inner packet must be
byte for byte the input frame it names; every 50th is decoded again by
lbpcap.decode_output and must agree. Then:

1. Conservation: every input frame leaves exactly once (the VIP has 100
   usable backends: nothing may be dropped).
2. No connection moved: a connection (one SYN..FIN exchange; a reused port
   is a new connection) seen at two backends counts as moved. Must be 0.
3. Load over the last third of the output frames: X_b frames at backend b,
   avg = n / N. Per backend X_b / avg <= L_b + tol_b, where
     L_b = max(c, F_b), F_b = N * (sum of the true shares p_s of the sources
       with p_s <= (c - 1)/(N - 1) whose Maglev home is b): the load of the
       keys that no controller obeying the single-key bound spreads, at
       their homes (maglev_ref.py, from the seed and the backends); above c
       only where such keys pile up on one backend;
     tol_b = z * sqrt(L_b * avg * v) / avg with z = Phi^-1(1 - 1e-3 / N).
   Derivation of tol_b: given which backend each source (or, for a spread
   source, each connection) is assigned, the randomness left is which
   connections fall into the last third; connections start independently
   and uniformly, so the number of a backend's connections there is
   (close to, and at most as variable as) Poisson, each bringing m_u of its
   packets; X_b is then compound Poisson with Var(X_b) = E[X_b] * v,
   v = sum(m_u^2) / sum(m_u) over the connections in the last third
   (counted here). Under "E[X_b] <= L_b * avg" the normal bound at z
   exceeds a backend's ratio with probability <= 1e-3 / N, so the whole
   test raises a false alarm with probability <= 1e-3 (union bound).
   Reported: the peak X_b / avg, max F_b, the largest limit in force.
4. Spread: a source is spread if its connections whose SYN spillwayd
   certainly received D windows or more after the window in which the
   traffic began (the controller's windows, placed from feed.json; D the
   promotion delay, default 20 windows = 1 s at window_ms 50) reached two
   backends or more. Required of every source whose true share p exceeds
   the bound b = (c - 1)/(N - 1) resolvably within those D windows:
   (p - b) n_D >= 3 sqrt(p n_D v_all), n_D the frames certainly received in
   those D windows, v_all = sum(k^2) / sum(k) over all connections' lengths
   k (a source's packet count is compound Poisson like X_b above). Sources
   above b but closer to it than that cannot be told from b by any
   estimator in that volume at 3 standard deviations; they are reported
   (above / spread) and bound only by check 3. Also reported: the window,
   counted from the traffic's first, of the first connection of each
   source that reached another backend than its Maglev home.

Exit 0 pass, 1 fail, 77 when the run cannot be judged (the last third of
the output does not lie D windows after the start). Prints one
"HOT_ZIPF name key=value ..." line; writes DIR/result.json.
"""

import argparse
import array
import bisect
import json
import math
import mmap
import os
import socket
import struct
import sys
from statistics import NormalDist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbhash  # noqa: E402
import lbpcap  # noqa: E402
import maglev_ref  # noqa: E402

FAMILY_ALPHA = 1e-3     # false-alarm budget of the load check over all backends
RESOLVE_Z = 3.0         # a share is told from the bound at this many sd
DELAY_WINDOWS = 20      # the promotion delay D, in controller windows
DECODE_EVERY = 50       # every n-th output frame also through lbpcap.decode_output


def pcap_records(path):
    """(mmap, array of record data offsets, array of lengths) of a pcap."""
    f = open(path, "rb")
    if os.path.getsize(path) < 24:
        return None, array.array("Q"), array.array("I")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    magic = struct.unpack_from("<I", m, 0)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        sys.exit("hot_zipf_check: %s: not a little-endian pcap (magic 0x%08x)" % (path, magic))
    offs, lens = array.array("Q"), array.array("I")
    o, size = 24, len(m)
    unpack = struct.unpack_from
    while o + 16 <= size:
        incl = unpack("<I", m, o + 8)[0]
        offs.append(o + 16)
        lens.append(incl)
        o += 16 + incl
    return m, offs, lens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--delay-windows", type=int, default=DELAY_WINDOWS)
    ap.add_argument("--name", default="")
    a = ap.parse_args()
    d = a.dir
    name = a.name or os.path.basename(os.path.normpath(d))
    man = json.load(open(os.path.join(d, "manifest.json")))
    cfg = json.load(open(os.path.join(d, "config.json")))
    feed = json.load(open(os.path.join(d, "feed.json")))
    daemon = {}
    if os.path.exists(os.path.join(d, "daemon.json")):
        daemon = json.load(open(os.path.join(d, "daemon.json")))
    fails = []

    # --- the test's own model -------------------------------------------------
    vip = cfg["vips"][0]
    backends = [lbpcap.ip_norm(b["address"]) for b in vip["backends"]]
    N = len(backends)
    be_index = {socket.inet_aton(b): i for i, b in enumerate(backends)}
    c = 1 + cfg["hot"]["epsilon"]
    bound = (c - 1) / (N - 1)
    S, alpha, H = man["sources"], man["alpha"], man["H"]
    share = [(k ** -alpha) / H for k in range(1, S + 1)]
    srcs = array.array("I")
    with open(os.path.join(d, "srcs.bin"), "rb") as f:
        srcs.fromfile(f, S)
    C = man["connections"]
    rank, sport, npk, syn_pos = array.array("I"), array.array("H"), array.array("B"), \
        array.array("I")
    with open(os.path.join(d, "conns.bin"), "rb") as f:
        rank.fromfile(f, C)
        sport.fromfile(f, C)
        npk.fromfile(f, C)
        syn_pos.fromfile(f, C)
    seed = cfg.get("maglev", {}).get("seed", "spillway")
    table = maglev_ref.vip_table(seed, cfg.get("maglev", {}).get("table_size", 65537),
                                 vip["backends"])
    key = lbhash.key_from_seed(seed)
    home = [be_index[socket.inet_aton(maglev_ref.backend_for(
        table, key, socket.inet_ntoa(struct.pack("!I", srcs[r])), vip["address"], 0,
        vip["port"], 6, vip["key"]))] for r in range(S)]

    # --- input frames: position of every (conn, i) ----------------------------
    im, ioffs, ilens = pcap_records(os.path.join(d, "in.pcap"))
    n_in = len(ioffs)
    pos_of = array.array("I", bytes(4 * C * 8))  # conn * 8 + i -> input position
    for p in range(n_in):
        seq = struct.unpack_from("!I", im, ioffs[p] + 38)[0]
        pos_of[(seq >> 6) * 8 + (seq & 63)] = p

    # --- output frames ----------------------------------------------------------
    om, ooffs, olens = pcap_records(os.path.join(d, "out.pcap"))
    n_out = len(ooffs)
    seen = bytearray(n_in)
    conn_be = array.array("h", [-1]) * C
    moved = {}                       # conn -> set of backends
    moved_at = {}                    # conn -> index of its first packet elsewhere
    out_be = array.array("B", bytes(n_out))
    out_conn = array.array("I", bytes(4 * n_out))
    bad = []
    unpack = struct.unpack_from
    for q in range(n_out):
        o, ln = ooffs[q], olens[q]
        fr = om[o:o + ln]
        if ln < 74 or fr[12:14] != b"\x08\x00" or fr[14] != 0x45 or fr[23] != 4 or \
                fr[34] != 0x45:
            bad.append("output frame %d: not Ethernet / IPv4 (IHL 5) / IPIP / IPv4" % q)
            continue
        be = be_index.get(fr[30:34])
        seq = unpack("!I", fr, 58)[0]
        conn, i = seq >> 6, seq & 63
        if be is None or conn >= C or i >= npk[conn]:
            bad.append("output frame %d: outer destination %s, inner seq %#x: no such backend "
                       "or connection" % (q, socket.inet_ntoa(fr[30:34]), seq))
            continue
        p = pos_of[conn * 8 + i]
        ip0 = ioffs[p] + 14
        if fr[34:] != im[ip0:ioffs[p] + ilens[p]]:
            bad.append("output frame %d: inner packet differs from input frame %d" % (q, p))
            continue
        if seen[p]:
            bad.append("output frame %d: input frame %d sent twice" % (q, p))
            continue
        seen[p] = 1
        if q % DECODE_EVERY == 0:
            dd = lbpcap.decode_output(fr)
            if dd.kind != "encap" or dd.errors or dd.outer_dst != backends[be] or \
                    dd.inner != fr[34:]:
                bad.append("output frame %d: decode_output: %s %s %s" % (q, dd.kind, dd.outer_dst,
                                                                          dd.errors))
                continue
        out_be[q] = be
        out_conn[q] = conn
        prev = conn_be[conn]
        if prev < 0:
            conn_be[conn] = be
        elif prev != be:
            if conn not in moved:
                moved_at[conn] = i
            moved.setdefault(conn, {prev}).add(be)
    missing = n_in - sum(seen)
    if bad:
        fails.append("%d output frames malformed or unexpected; first: %s" % (len(bad), bad[0]))
    if missing:
        first = seen.index(0)
        fails.append("%d of %d input frames never left (first: input frame %d)"
                     % (missing, n_in, first))
    # how the moved connections moved (for the report): the index in the
    # connection of the first packet at another backend, and whether the
    # connection began at its source's Maglev home
    moved_how = {"first_elsewhere_at_packet": {}, "began_at_home": 0, "port_reused": 0}
    if moved:
        first_use = {}
        for cn in range(C):
            k = (rank[cn], sport[cn])
            if k not in first_use or syn_pos[cn] < syn_pos[first_use[k]]:
                first_use[k] = cn
        moved_how["port_reused"] = sum(first_use[(rank[cn], sport[cn])] != cn for cn in moved)
    for cn, i in moved_at.items():
        k = str(i)
        moved_how["first_elsewhere_at_packet"][k] = moved_how["first_elsewhere_at_packet"].get(k, 0) + 1
        moved_how["began_at_home"] += conn_be[cn] == home[rank[cn]]
    if moved:
        cm = min(moved)
        fails.append("%d connections moved between backends (first: connection %d from %s:%d, "
                     "backends %s; %d began at their Maglev home, %d on a reused port; first "
                     "packet elsewhere, by index in the connection: %s)" % (
                         len(moved), cm, socket.inet_ntoa(struct.pack("!I", srcs[rank[cm]])),
                         sport[cm], sorted(backends[b] for b in moved[cm]),
                         moved_how["began_at_home"], moved_how["port_reused"],
                         dict(sorted(moved_how["first_elsewhere_at_packet"].items()))))

    # --- windows: each input frame between two controller windows -------------
    polls = [p for p in feed["polls"] if p[2] is not None]
    if len(polls) < 2:
        print("SKIP: no hot.window in the daemon's stats: windows cannot be placed")
        sys.exit(77)
    rxs = [p[1] for p in polls]
    wins = [p[2] for p in polls]

    def win_lo(i):   # frame i was received in this window or a later one
        return wins[bisect.bisect_right(rxs, i) - 1]

    def win_hi(i):   # ... in this window or an earlier one
        k = bisect.bisect_right(rxs, i)
        return wins[k] if k < len(wins) else wins[-1]

    w_start = win_hi(0)
    w_judge = w_start + a.delay_windows
    n_d = max([rx for rx, w in zip(rxs, wins) if w < w_judge] or [0])

    # --- 3: load over the last third ------------------------------------------
    q0 = (2 * n_out) // 3
    x = [0] * N
    m_conn = {}
    for q in range(q0, n_out):
        x[out_be[q]] += 1
        cn = out_conn[q]
        m_conn[cn] = m_conn.get(cn, 0) + 1
    n3 = n_out - q0
    avg = n3 / N if N else 0
    v3 = sum(m * m for m in m_conn.values()) / max(1, sum(m_conn.values()))
    z = NormalDist().inv_cdf(1 - FAMILY_ALPHA / N)
    floor = [0.0] * N
    for r in range(S):
        if share[r] <= bound:
            floor[home[r]] += share[r] * N
    ratio = [xb / avg for xb in x] if avg else [0.0] * N
    limit = [max(c, floor[b]) + z * math.sqrt(max(c, floor[b]) * avg * v3) / avg
             for b in range(N)] if avg else [0.0] * N
    peak = max(ratio)
    over = [b for b in range(N) if ratio[b] > limit[b]]
    # the last third must lie after the promotion delay
    judge_from_pos = None
    if q0 < n_out:
        cn = out_conn[q0]
        judge_from_pos = pos_of[cn * 8]  # its connection's SYN, earlier than the frame
    if judge_from_pos is None or win_lo(judge_from_pos) < w_judge:
        print("SKIP: the last third of the output starts before window %d (start %d + D %d): "
              "too little traffic to judge" % (w_judge, w_start, a.delay_windows))
        sys.exit(77)
    if over:
        b = max(over, key=lambda b: ratio[b] - limit[b])
        fails.append("%d backends over their limit in the last third; worst %s at %.3f x avg "
                     "(limit %.3f = max(c %.2f, floor %.3f) + tol)"
                     % (len(over), backends[b], ratio[b], limit[b], c, floor[b]))

    # --- 4: spread -------------------------------------------------------------
    ks = sum(npk)
    v_all = sum(k * k for k in npk) / ks
    above = [r for r in range(S) if share[r] > bound]
    required = [r for r in above
                if (share[r] - bound) * n_d >= RESOLVE_Z * math.sqrt(share[r] * n_d * v_all)]
    judged_be = {r: set() for r in above}
    first_off = {}
    for cn in sorted(range(C), key=syn_pos.__getitem__):
        r = rank[cn]
        if r not in judged_be:
            continue
        b = conn_be[cn]
        if b < 0:
            continue
        sp = syn_pos[cn]
        if win_lo(sp) >= w_judge:
            judged_be[r].add(b)
        if b != home[r] and r not in first_off:
            first_off[r] = win_hi(sp) - w_start
    spread = [r for r in above if len(judged_be[r]) >= 2]
    req_spread = [r for r in required if len(judged_be[r]) >= 2]
    not_spread = [r for r in required if len(judged_be[r]) < 2]
    if not_spread:
        fails.append("%d of %d sources resolvably above the bound not spread after window %d "
                     "(ranks %s; shares %s)"
                     % (len(not_spread), len(required), w_judge,
                        [r + 1 for r in not_spread[:10]],
                        ["%.4f" % share[r] for r in not_spread[:10]]))
    delays = sorted(first_off[r] for r in spread if r in first_off)

    st = daemon.get("stats", {})
    tot = st.get("totals", {})
    hot = st.get("hot", {})
    res = {
        "name": name, "alpha": alpha, "packets_in": n_in, "packets_out": n_out,
        "connections": C, "bound": bound, "cap": c, "backends": N,
        "flow_capacity": man.get("flow_capacity"), "peak_live": man.get("peak_live"),
        "windows": [w_start, wins[-1]], "delay_windows": a.delay_windows, "n_delay": n_d,
        "peak_avg": peak, "floor_max": max(floor), "limit_max": max(limit),
        "tol_c": z * math.sqrt(c * avg * v3) / avg if avg else None, "v_last_third": v3,
        "backends_over": len(over),
        "above_bound": len(above), "above_bound_spread": len(spread),
        "required": len(required), "required_spread": len(req_spread),
        "moved": len(moved), "moved_how": moved_how, "missing": missing, "malformed": len(bad),
        "first_spread_window": {"median": delays[len(delays) // 2] if delays else None,
                                "max": delays[-1] if delays else None},
        "daemon": {k: tot.get(k) for k in ("flow_evictions", "flow_unpinned", "hot_spread",
                                             "flow_misses")},
        "daemon_hot": {k: hot.get(k) for k in ("promotions", "demotions", "active", "infeasible",
                                                 "windows_missed")},
        "fails": fails,
    }
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("HOT_ZIPF %s alpha=%.1f flow_cap=%s packets=%d conns=%d windows=%d..%d "
          "peak_avg=%.3f limit=%.3f (c %.2f + tol %.3f; floor max %.3f) above_bound=%d spread=%d "
          "required=%d required_spread=%d moved=%d missing=%d first_spread_window=%s/%s "
          "[daemon: promotions %s, flow_evictions %s, flow_unpinned %s]"
          % (name, alpha, man.get("flow_capacity") or "default", n_in, C, w_start, wins[-1],
             peak, max(limit), c, res["tol_c"] or 0, max(floor), len(above), len(spread),
             len(required), len(req_spread), len(moved), missing,
             res["first_spread_window"]["median"], res["first_spread_window"]["max"],
             hot.get("promotions"), tot.get("flow_evictions"), tot.get("flow_unpinned")))
    for f in fails:
        print("FAIL: %s: %s" % (name, f))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
