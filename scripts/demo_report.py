#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Per-VIP, per-backend report of what spillwayd sent.

Usage: /usr/bin/python3 scripts/demo_report.py --config CFG OUT.pcap [STATS.json]

Decapsulates every frame of OUT.pcap, assigns it to its VIP by the inner
packet's destination, counts flows (inner 5-tuples) and packets per backend,
and prints each backend's flow share next to its expected share w/W. With the
daemon's stats JSON it also prints its totals and drops and flags any backend
whose packet counter differs from what the pcap shows.
"""

import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import lbpcap  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("out_pcap")
    ap.add_argument("stats", nargs="?")
    a = ap.parse_args()
    cfg = json.load(open(a.config))
    gue_port = cfg["encap"].get("gue_port", lbpcap.DEFAULT_GUE_PORT)
    stats = json.load(open(a.stats)) if a.stats else None

    flows = defaultdict(set)     # (vip index, backend) -> inner 5-tuples
    packets = defaultdict(int)
    other = defaultdict(int)
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
        flows[(vi, d.outer_dst)].add(f)
        packets[(vi, d.outer_dst)] += 1

    sbk = {}
    if stats:
        for sv in stats.get("vips", []):
            for sb in sv.get("backends", []):
                sbk[(lbpcap.ip_norm(sv["address"]), sv["port"], sv["protocol"],
                     lbpcap.ip_norm(sb["address"]))] = sb.get("packets")

    mismatches = 0
    for vi, vip in enumerate(cfg["vips"]):
        shares = lbpcap.expected_shares(vip)
        nflows = sum(len(flows[(vi, lbpcap.ip_norm(b["address"]))]) for b in vip["backends"])
        print("\nVIP %s  key %s  encap %s  %d flows" % (
            lbpcap.vip_label(vip), vip.get("key", "5tuple"), vip.get("encap", "ipip"), nflows))
        print("  %-12s %-20s %6s %-8s %7s %8s %8s %8s" % (
            "backend", "address", "weight", "state", "flows", "packets", "share", "expected"))
        for b in vip["backends"]:
            addr = lbpcap.ip_norm(b["address"])
            k = (vi, addr)
            nf = len(flows[k])
            line = "  %-12s %-20s %6d %-8s %7d %8d %7.1f%% %7.1f%%" % (
                b.get("name", "") or "-", addr, b.get("weight", 1), b.get("state", "active"), nf,
                packets[k], 100.0 * nf / nflows if nflows else 0.0, 100.0 * shares.get(addr, 0.0))
            sp = sbk.get((lbpcap.ip_norm(vip["address"]), vip["port"], vip["protocol"], addr))
            if stats and sp != packets[k]:
                line += "   stats say %s packets!" % sp
                mismatches += 1
            print(line)
    if other:
        print("\nother output frames: %s" % dict(other))
    if stats:
        t = stats.get("totals", {})
        print("\ntotals: rx %s  forwarded %s  icmp_sent %s  exception %s  flow hits/misses %s/%s" % (
            t.get("rx_packets"), t.get("forwarded"), t.get("icmp_sent"), t.get("exception"),
            t.get("flow_hits"), t.get("flow_misses")))
        drops = {k: v for k, v in t.get("drops", {}).items() if v}
        print("drops:  %s" % (", ".join("%s %d" % kv for kv in drops.items()) or "none"))
        if mismatches:
            print("%d backend packet counters differ from the pcap" % mismatches)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
