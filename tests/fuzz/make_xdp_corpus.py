#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the seed corpus of fuzz_xdp (tests/fuzz/corpus/xdp/).

    /usr/bin/python3 tests/fuzz/make_xdp_corpus.py [--out DIR]

The frames of tests/unit/test_xsk_steer.c's table (same addresses, ports, VLAN
tags, extension headers and fragments, aimed at the VIPs fuzz_xdp.c puts in the
map), plus what the harness cross-checks against dataplane/parse.c: ICMP and
ICMPv6 errors quoting a VIP flow, IPv6 AH, 7/8/9 extension headers, IPv4
options, truncated frames. Deterministic; needs scapy (python3-scapy). Other
files in the directory (merged fuzzer finds) are left alone.
"""
import argparse
import os
import sys

from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.ipsec import AH
from scapy.layers.inet6 import (ICMPv6DestUnreach, ICMPv6EchoRequest, ICMPv6ND_NS,
                                ICMPv6PacketTooBig, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, PadN)
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Raw

CLIENT4, CLIENT6 = "198.51.100.7", "2001:db8::7"
VIP4, ANY4, HOST4 = "203.0.113.10", "203.0.113.20", "192.0.2.1"   # test_xsk_steer.c
VIP6, ANY6, HOST6 = "2001:db8:1::10", "2001:db8:1::20", "2001:db8:ff00::1"
PVIP4, PVIP6 = "192.0.2.10", "2001:db8::10"                       # fuzz_packet.c


def eth(vlans=0):
    e = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
    if vlans == 1:
        return e / Dot1Q(vlan=100)
    if vlans == 2:
        return e / Dot1AD(vlan=100) / Dot1Q(vlan=101)
    return e


def l4(proto, dport):
    if proto == "tcp":
        return TCP(sport=40000, dport=dport, flags="S")
    if proto == "udp":
        return UDP(sport=40000, dport=dport)
    raise ValueError(proto)


def dstopts(n):
    h = None
    for _ in range(n):
        x = IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0" * 4)])
        h = x if h is None else h / x
    return h


def frames():
    out = {}

    def add(name, pkt):
        out[name] = bytes(pkt)

    # test_xsk_steer.c's table
    for v in (0, 1, 2):
        add("v4_tcp_vip_vlan%d" % v, eth(v) / IP(src=CLIENT4, dst=VIP4) / l4("tcp", 443))
        add("v6_udp_vip_vlan%d" % v, eth(v) / IPv6(src=CLIENT6, dst=VIP6) / l4("udp", 53))
    add("v4_udp_vip", eth() / IP(src=CLIENT4, dst=VIP4) / l4("udp", 53))
    add("v6_tcp_vip", eth() / IPv6(src=CLIENT6, dst=VIP6) / l4("tcp", 443))
    add("v4_anyport_vip", eth() / IP(src=CLIENT4, dst=ANY4) / l4("tcp", 8080))
    add("v6_anyport_vip", eth() / IPv6(src=CLIENT6, dst=ANY6) / l4("udp", 9))
    for n in (1, 3, 7, 8, 9):
        add("v6_tcp_vip_%d_dstopts" % n, eth() / IPv6(src=CLIENT6, dst=VIP6) / dstopts(n) /
            l4("tcp", 443))
    add("v6_hbh_rh_vip", eth() / IPv6(src=CLIENT6, dst=VIP6) / IPv6ExtHdrHopByHop() /
        IPv6ExtHdrRouting() / l4("udp", 53))
    add("v6_ah_vip", eth() / IPv6(src=CLIENT6, dst=VIP6) / AH(nh=6, payloadlen=4, spi=1,
                                                               icv=b"\0" * 12) / l4("tcp", 443))
    add("v4_anyport_frag_first", eth() / IP(src=CLIENT4, dst=ANY4, flags="MF") / l4("tcp", 80))
    add("v4_anyport_frag_later", eth() / IP(src=CLIENT4, dst=ANY4, proto=6, frag=185) /
        Raw(b"\0" * 8))
    add("v6_anyport_frag_later", eth() / IPv6(src=CLIENT6, dst=ANY6) / dstopts(1) /
        IPv6ExtHdrFragment(nh=17, offset=185) / Raw(b"\0" * 8))
    add("v6_anyport_frag_first", eth() / IPv6(src=CLIENT6, dst=ANY6) /
        IPv6ExtHdrFragment(nh=17, m=1) / l4("udp", 80))
    add("v6_atomic_frag_vip", eth() / IPv6(src=CLIENT6, dst=VIP6) /
        IPv6ExtHdrFragment(nh=6) / l4("tcp", 443))
    add("v4_port_vip_frag", eth() / IP(src=CLIENT4, dst=VIP4, flags="MF") / l4("tcp", 443))
    add("v4_nonvip_frag", eth() / IP(src=CLIENT4, dst=HOST4, proto=17, frag=185) /
        Raw(b"\0" * 8))
    add("v6_nonvip_frag", eth() / IPv6(src=CLIENT6, dst=HOST6) /
        IPv6ExtHdrFragment(nh=17, m=1) / l4("udp", 53))
    add("v4_vip_other_port", eth() / IP(src=CLIENT4, dst=VIP4) / l4("tcp", 22))
    add("v4_vip_other_proto", eth() / IP(src=CLIENT4, dst=VIP4) / l4("udp", 443))
    add("v4_anyport_other_proto", eth() / IP(src=CLIENT4, dst=ANY4) / l4("udp", 80))
    add("v4_host_ssh", eth() / IP(src=CLIENT4, dst=HOST4) / l4("tcp", 22))
    add("v6_host_ssh_vlan", eth(1) / IPv6(src=CLIENT6, dst=HOST6) / l4("tcp", 22))
    add("v4_icmp_echo_vip", eth() / IP(src=CLIENT4, dst=VIP4) / ICMP(type=8))
    add("v6_nd_vip", eth() / IPv6(src=CLIENT6, dst=VIP6) / ICMPv6ND_NS(tgt=VIP6))
    add("v6_echo_vip", eth() / IPv6(src=CLIENT6, dst=VIP6) / ICMPv6EchoRequest())
    add("arp", eth() / ARP(psrc=CLIENT4, pdst=VIP4))
    add("arp_vlan", eth(1) / ARP(psrc=CLIENT4, pdst=VIP4))
    # fuzz_packet.c's VIPs too
    add("v4_tcp_pvip80", eth() / IP(src=CLIENT4, dst=PVIP4) / l4("tcp", 80))
    add("v4_udp_pvip_any", eth() / IP(src=CLIENT4, dst=PVIP4) / l4("udp", 5353))
    add("v6_tcp_pvip80", eth() / IPv6(src=CLIENT6, dst=PVIP6) / l4("tcp", 80))
    add("v4_options_vip", eth() / IP(src=CLIENT4, dst=VIP4,
                                     options=[IPOption_NOP(), IPOption_RR()]) / l4("tcp", 443))
    # ICMP errors quoting a VIP flow (the backend's reply, from the VIP)
    add("v4_icmp_fragneeded_vip", eth() / IP(src="10.9.9.9", dst=VIP4) /
        ICMP(type=3, code=4, nexthopmtu=1400) /
        IP(src=VIP4, dst=CLIENT4) / TCP(sport=443, dport=40000))
    add("v6_icmp_toobig_vip", eth() / IPv6(src="2001:db8:9::9", dst=VIP6) /
        ICMPv6PacketTooBig(mtu=1280) / IPv6(src=VIP6, dst=CLIENT6) / UDP(sport=53, dport=40000))
    add("v6_icmp_unreach_vip", eth() / IPv6(src="2001:db8:9::9", dst=VIP6) /
        ICMPv6DestUnreach() / IPv6(src=VIP6, dst=CLIENT6) / TCP(sport=443, dport=40000))
    # truncated: every cut of one v4 and one v6 VIP frame
    v4 = bytes(eth() / IP(src=CLIENT4, dst=VIP4) / l4("tcp", 443))
    v6 = bytes(eth(1) / IPv6(src=CLIENT6, dst=VIP6) / dstopts(1) / l4("udp", 53))
    for cut in (14, 20, 33, 34, 40, 53):
        out["v4_tcp_vip_cut%d" % cut] = v4[:cut]
    for cut in (18, 40, 57, 58, 66, 70, 73):
        out["v6_udp_vip_cut%d" % cut] = v6[:cut]
    bad = bytearray(v4)
    bad[14] = 0x44
    out["v4_ihl4"] = bytes(bad)
    bad[14] = 0x4F
    out["v4_ihl15"] = bytes(bad)
    bad[14] = 0x65
    out["v4_version6"] = bytes(bad)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "corpus", "xdp"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    f = frames()
    for name, data in sorted(f.items()):
        with open(os.path.join(args.out, name), "wb") as fh:
            fh.write(data)
    print("%s: %d seeds written, %d files in all" % (args.out, len(f), len(os.listdir(args.out))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
