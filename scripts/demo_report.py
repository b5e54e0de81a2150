#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The demo's judge: prints what spillwayd did with the demo's traffic and
checks every figure the README promises from it; exit 1 on any miss.

Part 1 (veth or pcap replay of scripts/demo_traffic.py's traffic):

  demo_report.py --config CFG --sent IN.json OUT.pcap STATS.json

Decapsulates every frame of OUT.pcap, assigns it to its VIP by the inner
packet's destination, counts flows (inner 5-tuples), keys (what the VIP's key
mode hashes) and packets per backend, prints per VIP and per backend the key
share against the weight's share w/W with its acceptance interval, and checks:

  - received: spillwayd's rx_packets equals the frames sent (IN.json);
  - forwarded = sent - expected drops, and the drop counters are exactly the
    expected ones: the frames demo_traffic.py sent to no VIP as no_vip
    (IN.json's expected_drops); nothing else (every other frame is to a VIP
    with usable backends, to the port's own MAC, within the MTU);
  - every output frame is an encapsulated packet of a VIP of the config, as
    many as forwarded;
  - per VIP: as many flows and packets came out as were sent to it;
  - per backend: the daemon's packet counter equals the packets in OUT.pcap;
  - every flow and every key reached exactly one backend;
  - shares: with n keys at a VIP and p = w/W for a backend (0 for a draining
    one: every flow here is new), its key count lies in the central interval
    of Binomial(n, p) that leaves out at most ALPHA / (2m) on each side, m the
    number of backends judged (Bonferroni: the run fails by chance with
    probability at most ALPHA = 0.001 when the daemon hashes as it should).
    Keys, not flows: a source-address VIP places keys, and the flows of one
    key go together.

Part 2 (spillgen over memif, pktgen/run-memif.sh):

  demo_report.py --memif --config CFG RESULTS.json STATS.json

from spillgen's --json results and spillwayd's final counters, checks:

  - spillwayd received every packet spillgen sent, and forwarded = received
    - its drops, each drop a tx_full (its TX queue toward spillgen full: the
    load the 2-core machine could not carry, memif backpressure) and no
    other reason;
  - spillgen decoded every packet spillwayd forwarded, and lost exactly the
    packets spillwayd dropped;
  - no flow was seen at more than one backend;
  - backend shares of the VIPs without a hot key: new flows per backend
    (spillwayd's counters) within the same binomial intervals;
  - the hot phase: the hot key was promoted (its packets reached more than
    one backend), the phase's first full interval was over the cap and a
    full interval of the phase came under it (under_cap_delay_ms is not
    null). How soon is printed, not judged, and so is the last interval: a
    long-lived Zipf flow is one connection and stays where it is.

Either way the last line is the verdict: "demo part N: PASS (K checks)" or
"demo part N: FAIL (M of K checks missed: ...)".
"""

import argparse
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))

ALPHA = 0.001


class Judge:
    def __init__(self, part):
        self.part = part
        self.results = []

    def check(self, ok, what):
        self.results.append((bool(ok), what))
        print("  %s %s" % ("ok  " if ok else "MISS", what))
        return ok

    def verdict(self):
        missed = [w for ok, w in self.results if not ok]
        n = len(self.results)
        if missed:
            print("demo part %d: FAIL (%d of %d checks missed: %s)" % (
                self.part, len(missed), n, "; ".join(missed)))
            return 1
        print("demo part %d: PASS (%d checks)" % (self.part, n))
        return 0


def binom_log_pmf(k, n, p):
    if p <= 0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1:
        return 0.0 if k == n else -math.inf
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log1p(-p))


def binom_interval(n, p, tail):
    """The smallest lo and largest hi with P(X < lo) <= tail and P(X > hi) <= tail,
    X ~ Binomial(n, p), from the exact distribution."""
    pmf = [math.exp(binom_log_pmf(k, n, p)) for k in range(n + 1)]
    lo, acc = 0, 0.0
    while lo < n and acc + pmf[lo] <= tail:
        acc += pmf[lo]
        lo += 1
    hi, acc = n, 0.0
    while hi > 0 and acc + pmf[hi] <= tail:
        acc += pmf[hi]
        hi -= 1
    return lo, hi


def share_checks(judge, label, counts, shares, n, m, unit="keys"):
    """counts: {backend: units}; shares: {backend: p}; judged over n units
    (keys, or new flows)."""
    tail = ALPHA / (2 * m)
    if n == 0:
        judge.check(False, "%s: no %s arrived, no share to judge" % (label, unit))
        return
    for b, p in shares.items():
        k = counts.get(b, 0)
        if p == 0:
            judge.check(k == 0, "%s backend %s (no share: draining or weight 0) got %d new %s, want 0"
                        % (label, b, k, unit))
            continue
        lo, hi = binom_interval(n, p, tail)
        judge.check(lo <= k <= hi, "%s backend %s: %d of %d %s (%.1f%%), weight share %.1f%%, "
                    "binomial interval %d..%d" % (label, b, k, n, unit, 100.0 * k / n, 100 * p, lo, hi))


def judged_backends(cfg, skip=()):
    return sum(len(v["backends"]) for i, v in enumerate(cfg["vips"]) if i not in skip)


def all_shares(lbpcap, vip):
    """{backend: p}: w/W over the usable backends, 0 for the others."""
    sh = lbpcap.expected_shares(vip)
    return {lbpcap.ip_norm(b["address"]): sh.get(lbpcap.ip_norm(b["address"]), 0.0) for b in vip["backends"]}


def key_of(vip, f):
    """The key of inner flow f = (src, dst, proto, sport, dport) per the VIP's key mode."""
    mode = vip.get("key", "5tuple")
    if mode == "src_ip":
        return (f[0],)
    if mode == "src_ip_dport":
        return (f[0], f[4])
    return f


def part1(a):
    import lbpcap
    cfg = json.load(open(a.config))
    sent = json.load(open(a.sent))
    stats = json.load(open(a.stats))
    gue_port = cfg["encap"].get("gue_port", lbpcap.DEFAULT_GUE_PORT)
    j = Judge(1)

    flows = defaultdict(set)     # (vip index, backend) -> inner 5-tuples
    keys = defaultdict(set)      # (vip index, backend) -> keys
    packets = defaultdict(int)
    vip_packets = defaultdict(int)
    other = defaultdict(int)
    encap = 0
    for fr in lbpcap.read_pcap(a.out_pcap):
        d = lbpcap.decode_output(fr, gue_port)
        if d.kind != "encap":
            other[d.kind] += 1
            continue
        f = lbpcap.flow_of(bytes(d.inner))
        vi = lbpcap.find_vip(cfg, f[1], f[2], f[4], fragment=f[4] is None) if f else None
        if vi is None:
            other["unknown"] += 1
            continue
        encap += 1
        flows[(vi, d.outer_dst)].add(f)
        keys[(vi, d.outer_dst)].add(key_of(cfg["vips"][vi], f))
        packets[(vi, d.outer_dst)] += 1
        vip_packets[vi] += 1

    sbk = {}
    for sv in stats.get("vips", []):
        for sb in sv.get("backends", []):
            sbk[(lbpcap.ip_norm(sv["address"]), sv["port"], sv["protocol"],
                 lbpcap.ip_norm(sb["address"]))] = sb.get("packets")

    t = stats.get("totals", {})
    drops = {k: v for k, v in t.get("drops", {}).items() if v}
    expected = {k: v for k, v in sent.get("expected_drops", {}).items() if v}
    print("sent %d frames to %s (expected drops: %s); spillwayd: rx %s  forwarded %s  drops %s" % (
        sent["frames"], sent["dst_mac"], ", ".join("%s %d" % kv for kv in expected.items()) or "none",
        t.get("rx_packets"), t.get("forwarded"), ", ".join("%s %d" % kv for kv in drops.items()) or "none"))

    tables = []
    m = judged_backends(cfg)
    for vi, vip in enumerate(cfg["vips"]):
        shares = all_shares(lbpcap, vip)
        addrs = [lbpcap.ip_norm(b["address"]) for b in vip["backends"]]
        nflows = sum(len(flows[(vi, b)]) for b in addrs)
        nkeys = sum(len(keys[(vi, b)]) for b in addrs)
        tail = ALPHA / (2 * m)
        lines = ["\nVIP %s  key %s  encap %s  %d flows, %d keys" % (
            lbpcap.vip_label(vip), vip.get("key", "5tuple"), vip.get("encap", "ipip"), nflows, nkeys),
            "  %-10s %-10s %6s %-8s %6s %6s %7s %7s %7s %11s" % (
                "backend", "address", "weight", "state", "flows", "keys", "packets", "share", "weight",
                "interval")]
        for b in vip["backends"]:
            addr = lbpcap.ip_norm(b["address"])
            p = shares[addr]
            lo, hi = binom_interval(nkeys, p, tail) if p > 0 else (0, 0)
            nk = len(keys[(vi, addr)])
            lines.append("  %-10s %-10s %6d %-8s %6d %6d %7d %6.1f%% %6.1f%% %5d..%-5d" % (
                b.get("name", "") or "-", addr, b.get("weight", 1), b.get("state", "active"),
                len(flows[(vi, addr)]), nk, packets[(vi, addr)], 100.0 * nk / nkeys if nkeys else 0.0,
                100.0 * p, lo, hi))
        tables.append("\n".join(lines))
    print("\n".join(tables))
    print("\nchecks:")

    j.check(t.get("rx_packets") == sent["frames"],
            "spillwayd received every frame sent: rx %s, sent %d" % (t.get("rx_packets"), sent["frames"]))
    want = sent["frames"] - sum(expected.values())
    j.check(t.get("forwarded") == want and drops == expected,
            "forwarded = sent - expected drops: forwarded %s, sent %d, want %d; drops %s, expected %s" % (
                t.get("forwarded"), sent["frames"], want, drops or "none", expected or "none"))
    j.check(encap == t.get("forwarded") and not other,
            "every output frame is an encapsulated packet of a VIP: %d encapsulated, forwarded %s, "
            "other %s" % (encap, t.get("forwarded"), dict(other) or "none"))
    for vi, vip in enumerate(cfg["vips"]):
        addrs = [lbpcap.ip_norm(b["address"]) for b in vip["backends"]]
        fl = set().union(*(flows[(vi, b)] for b in addrs))
        sv = sent["vips"][vi]
        j.check(len(fl) == sv["flows"] and vip_packets[vi] == sv["packets"],
                "VIP %s: %d of %d flows, %d of %d packets came out" % (
                    lbpcap.vip_label(vip), len(fl), sv["flows"], vip_packets[vi], sv["packets"]))
        nf = sum(len(flows[(vi, b)]) for b in addrs)
        kl = [k for b in addrs for k in keys[(vi, b)]]
        j.check(nf == len(fl) and len(kl) == len(set(kl)),
                "VIP %s: every flow and key at one backend (%d flow placements for %d flows, "
                "%d key placements for %d keys)" % (lbpcap.vip_label(vip), nf, len(fl), len(kl), len(set(kl))))
        bad = []
        for b in addrs:
            sp = sbk.get((lbpcap.ip_norm(vip["address"]), vip["port"], vip["protocol"], b))
            if sp != packets[(vi, b)]:
                bad.append("%s: counter %s, pcap %d" % (b, sp, packets[(vi, b)]))
        j.check(not bad, "VIP %s: the daemon's per-backend packet counters equal the capture%s" % (
            lbpcap.vip_label(vip), (": " + "; ".join(bad)) if bad else ""))
        counts = {b: len(keys[(vi, b)]) for b in addrs}
        share_checks(j, "VIP %s" % lbpcap.vip_label(vip), counts, all_shares(lbpcap, vip),
                     sum(counts.values()), m)
    return j.verdict()


def part2(a):
    import lbpcap
    cfg = json.load(open(a.config))
    res = json.load(open(a.results))
    stats = json.load(open(a.stats))
    j = Judge(2)
    t = stats["totals"]
    drops = {k: v for k, v in t.get("drops", {}).items() if v}
    sent = res["tx"]["packets"]
    print("\nchecks:")
    j.check(t["rx_packets"] == sent, "spillwayd received every packet spillgen sent: rx %d, sent %d" % (
        t["rx_packets"], sent))
    j.check(t["forwarded"] == t["rx_packets"] - t["dropped"] and set(drops) <= {"tx_full"},
            "forwarded = received - drops, every drop a tx_full: forwarded %d, rx %d, drops %s" % (
                t["forwarded"], t["rx_packets"], drops or "none"))
    j.check(res["rx"]["decoded"] == t["forwarded"] and res["packets"]["lost"] == t["dropped"],
            "spillgen decoded every forwarded packet and lost exactly the dropped ones: decoded %d, "
            "forwarded %d, lost %d, dropped %d" % (res["rx"]["decoded"], t["forwarded"],
                                                     res["packets"]["lost"], t["dropped"]))
    j.check(res["flows"]["multi_backend"] == 0, "no flow seen at more than one backend: %d of %d" % (
        res["flows"]["multi_backend"], res["flows"]["seen"]))

    hot_vips = set()
    for h in res.get("hot_keys", []):
        hot_vips.add(h.get("vip", 0))
    scen_hot = {p.get("hot", {}).get("vip", 0) for p in a.scenario_phases if p.get("hot")}
    hot_vips |= scen_hot
    m = judged_backends(cfg, hot_vips)
    for vi, vip in enumerate(cfg["vips"]):
        if vi in hot_vips:
            continue
        sv = next((s for s in stats["vips"] if lbpcap.ip_norm(s["address"]) == lbpcap.ip_norm(vip["address"])
                   and s["port"] == vip["port"] and s["protocol"] == vip["protocol"]), None)
        if not j.check(sv is not None, "VIP %s in spillwayd's counters" % lbpcap.vip_label(vip)):
            continue
        counts = {lbpcap.ip_norm(b["address"]): b.get("new_flows", 0) for b in sv["backends"]}
        share_checks(j, "VIP %s" % lbpcap.vip_label(vip), counts, all_shares(lbpcap, vip),
                     sum(counts.values()), m, unit="new flows")

    for h in res.get("hot_keys", []):
        cap = h["cap"]
        j.check(h["promoted"] and h["backends"] > 1,
                "hot phase %s: the hot key was promoted (its packets at %d backends, first move after "
                "%s ms)" % (h["phase"], h["backends"], h["promotion_delay_ms"]))
        j.check(h["peak_to_avg_first"] is not None and h["peak_to_avg_first"] > cap,
                "hot phase %s: its first interval was over the cap: peak/avg %s > %.2f" % (
                    h["phase"], h["peak_to_avg_first"], cap))
        j.check(h["under_cap_delay_ms"] is not None,
                "hot phase %s: an interval of the phase came under the cap %.2f (after %s ms; worst %s, "
                "last %s, not judged)" % (h["phase"], cap, h["under_cap_delay_ms"], h["peak_to_avg_max"],
                                          h["peak_to_avg_last"]))
    if not res.get("hot_keys"):
        j.check(False, "spillgen reported no hot phase")
    return j.verdict()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="spillwayd's configuration")
    ap.add_argument("--sent", help="part 1: what demo_traffic.py sent (IN.json)")
    ap.add_argument("--memif", action="store_true", help="part 2: judge spillgen's results")
    ap.add_argument("--scenario", help="part 2: spillgen's scenario (the hot phases' VIPs)")
    ap.add_argument("first", help="part 1: OUT.pcap; part 2: spillgen's RESULTS.json")
    ap.add_argument("stats", help="spillwayd's final counters (--stats-file)")
    a = ap.parse_args()
    if a.memif:
        a.results = a.first
        a.scenario_phases = json.load(open(a.scenario)).get("phases", []) if a.scenario else []
        return part2(a)
    if not a.sent:
        ap.error("part 1 needs --sent IN.json")
    a.out_pcap = a.first
    return part1(a)


if __name__ == "__main__":
    sys.exit(main())
