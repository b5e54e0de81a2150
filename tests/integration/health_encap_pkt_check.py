#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The "via encap" health probe frames against scapy, byte for byte.

For every outer family x inner family x encapsulation x kind (TCP SYN, TCP
RST, UDP request), health_encap_tool dump writes the frame that
lb_hc_pkt_build() makes; the expected frame is built here with scapy from
the contract (DESIGN.md "Per-packet pipeline" 5 and docs/health-checks.md
"via encap"): the outer header as the data path writes it (IPv4: DF, id 0,
TTL 64, GUE UDP checksum 0; IPv6: flow label = the flow hash's low 20 bits,
hop limit 64, UDP checksum computed; GUE source port 0xC000 | bits 40-53 of
the flow hash, destination the GUE port), and the inner packet (IPv4 DF, id
0, TTL 64; IPv6 hop limit 64, flow label 0; SYN: window 65535 and one MSS
option; RST: no ACK, window 0). Exit 1 on the first difference, with both.

usage: health_encap_pkt_check.py HEALTH_ENCAP_TOOL
"""

import subprocess
import sys

try:
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
except ImportError:
    print("SKIP: scapy is not installed (python3-scapy)")
    sys.exit(77)

TOOL = sys.argv[1]
NH = "02:00:00:00:00:01"
SMAC = "02:aa:bb:cc:dd:ee"
GUE = 6080
OUTER = {4: "10.10.2.2", 6: "fd00::2"}
BACKEND = {4: "10.10.3.11", 6: "fd00:3::11"}
SRC = {4: "10.10.2.2", 6: "fd00::2"}
VIP = {4: "10.100.0.1", 6: "fd00:100::1"}
FLOW_HASH = 0x9ABCDEF012345678
PAYLOAD = bytes.fromhex("00010203deadbeef") * 3 + b"x"  # odd length: the checksum's pad


def expected(outer, inner, encap, kind, sport, dport, seq, mss, fh):
    if inner == 4:
        ip = IP(version=4, ihl=5, tos=0, id=0, flags="DF", frag=0, ttl=64,
                src=SRC[4], dst=VIP[4])
    else:
        ip = IPv6(tc=0, fl=0, hlim=64, src=SRC[6], dst=VIP[6])
    if kind == "syn":
        l4 = TCP(sport=sport, dport=dport, seq=seq, ack=0, flags="S", window=65535,
                 urgptr=0, options=[("MSS", mss)])
    elif kind == "rst":
        l4 = TCP(sport=sport, dport=dport, seq=seq, ack=0, flags="R", window=0, urgptr=0)
    else:
        l4 = UDP(sport=sport, dport=dport) / Raw(PAYLOAD)
    pkt = ip / l4
    if encap == "gue":
        gsport = 0xC000 | ((fh >> 40) & 0x3FFF)
        if outer == 4:
            pkt = UDP(sport=gsport, dport=GUE, chksum=0) / pkt
        else:
            pkt = UDP(sport=gsport, dport=GUE) / pkt
        proto = 17
    else:
        proto = 4 if inner == 4 else 41
    if outer == 4:
        o = IP(version=4, ihl=5, tos=0, id=0, flags="DF", frag=0, ttl=64, proto=proto,
               src=OUTER[4], dst=BACKEND[4])
    else:
        o = IPv6(tc=0, fl=fh & 0xFFFFF, hlim=64, nh=proto, src=OUTER[6], dst=BACKEND[6])
    return bytes(Ether(dst=NH, src=SMAC) / o / pkt)


def built(outer, inner, encap, kind, sport, dport, seq, mss, fh):
    args = [TOOL, "dump", "--outer-src", OUTER[4], "--outer-src", OUTER[6],
            "--src", SRC[inner], "--vip", VIP[inner], "--backend", BACKEND[outer],
            "--encap", encap, "--gue-port", str(GUE), "--kind", kind,
            "--sport", str(sport), "--port", str(dport), "--seq", str(seq),
            "--mss", str(mss), "--flow-hash", str(fh), "--nh-mac", NH, "--src-mac", SMAC]
    if kind == "udp":
        args += ["--payload", PAYLOAD.hex()]
    return bytes.fromhex(subprocess.check_output(args, text=True).strip())


def main():
    n = 0
    for outer in (4, 6):
        for inner in (4, 6):
            for encap in ("ipip", "gue"):
                for kind in ("syn", "rst", "udp"):
                    for sport, dport, seq, fh in ((40000, 80, 0x12345678, FLOW_HASH),
                                                  (65535, 5300, 0xFFFFFFFF, 0),
                                                  (1, 65535, 0, (1 << 64) - 1)):
                        mss = 1400 if inner == 4 else 1380
                        want = expected(outer, inner, encap, kind, sport, dport, seq, mss, fh)
                        got = built(outer, inner, encap, kind, sport, dport, seq, mss, fh)
                        if got != want:
                            print("FAIL: outer v%d inner v%d %s %s sport %d" %
                                  (outer, inner, encap, kind, sport))
                            print("  built:    " + got.hex())
                            print("  expected: " + want.hex())
                            Ether(got).show()
                            Ether(want).show()
                            return 1
                        n += 1
    print("health_encap_pkt_check: %d frames identical to scapy's" % n)
    return 0


sys.exit(main())
