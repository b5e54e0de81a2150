#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<name>/).

    /usr/bin/python3 tests/fuzz/make_corpus.py [--out DIR]

Deterministic: the same files every run (fixed random seed), so a re-run only
shows up in git when this script changed. Needs scapy (Debian: python3-scapy)
for the packets. Other files in the corpus directories (inputs found by
fuzzing and merged in, named by SHA-1) are kept.

packet: Ethernet frames aimed at the VIPs of fuzz_packet.c's configurations
  (192.0.2.10 :80/:443 TCP and port-0 UDP, 192.0.2.30, 192.0.2.40,
  2001:db8::10 :443/:80 TCP and port-0 UDP, 2001:db8::20) and at nothing:
  every header combination the parser knows (VLAN, QinQ, IPv4 options, IPv6
  extension headers, fragments, ICMP and ICMPv6 errors), malformed and
  truncated variants, and frames too big for the tunnel or for one mbuf. The
  first byte (destination MAC) picks where fuzz_packet splits the frame into
  two segments, so it is varied.
config: valid configurations and one of each kind of rejection.
rpc: every method, valid and invalid params, batches, notifications, and
  malformed envelopes.
"""
import argparse
import json
import os
import random
import sys

RNG = random.Random(7)


def write(d, name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- packets ---------------------------------------------------------------

def packets():
    from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR, fragment
    from scapy.layers.inet6 import (
        ICMPv6DestUnreach, ICMPv6EchoRequest, ICMPv6PacketTooBig, ICMPv6ParamProblem,
        ICMPv6TimeExceeded, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
        IPv6ExtHdrRouting, PadN)
    from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
    from scapy.packet import Raw

    out = {}
    client4, client6 = "198.51.100.7", "2001:db8:c::7"
    vip4, vip6 = "192.0.2.10", "2001:db8::10"

    def eth(split=None):
        # The first byte of the destination MAC picks fuzz_packet's split point.
        b0 = RNG.randrange(256) if split is None else split
        return Ether(dst="%02x:00:5e:00:01:01" % b0, src="02:cc:00:00:00:07")

    def add(name, pkt):
        out[name] = bytes(pkt)

    def pay(n):
        return Raw(bytes(RNG.randrange(256) for _ in range(n)))

    # Plain traffic to every VIP and to none.
    add("v4_tcp_vip80", eth() / IP(src=client4, dst=vip4) / TCP(sport=40000, dport=80, flags="S"))
    add("v4_tcp_vip80_df", eth() / IP(src=client4, dst=vip4, flags="DF", tos=0xb8) /
        TCP(sport=40001, dport=80, flags="PA") / pay(100))
    add("v4_tcp_vip443_gue", eth() / IP(src=client4, dst=vip4) / TCP(sport=40002, dport=443))
    add("v4_udp_port0_vip", eth() / IP(src=client4, dst=vip4) / UDP(sport=5353, dport=53) /
        pay(40))
    add("v4_udp_port0_vip_hi", eth() / IP(src=client4, dst=vip4) / UDP(sport=1, dport=65535))
    add("v4_tcp_no_port", eth() / IP(src=client4, dst=vip4) / TCP(sport=40003, dport=8080))
    add("v4_tcp_no_backend", eth() / IP(src=client4, dst="192.0.2.30") / TCP(dport=80))
    add("v4_udp_all_down", eth() / IP(src=client4, dst="192.0.2.40") / UDP(dport=53))
    add("v4_tcp_not_vip", eth() / IP(src=client4, dst="203.0.113.1") / TCP(dport=80))
    add("v4_gre", eth() / IP(src=client4, dst=vip4, proto=47) / pay(24))
    add("v4_padded", eth() / IP(src=client4, dst=vip4) / UDP(sport=7, dport=53) /
        Raw(b"\0" * 18))  # 60 bytes with Ethernet padding beyond the IP length
    add("v6_tcp_vip443_gue", eth() / IPv6(src=client6, dst=vip6, tc=0x2e) /
        TCP(sport=50000, dport=443, flags="S"))
    add("v6_tcp_vip80_ipip", eth() / IPv6(src=client6, dst=vip6) / TCP(sport=50001, dport=80))
    add("v6_udp_port0_vip", eth() / IPv6(src=client6, dst=vip6, fl=0x12345) /
        UDP(sport=5000, dport=4789) / pay(64))
    add("v6_tcp_no_backend", eth() / IPv6(src=client6, dst="2001:db8::20") / TCP(dport=80))
    add("v6_tcp_not_vip", eth() / IPv6(src=client6, dst="2001:db8::99") / TCP(dport=80))
    add("v6_no_next", eth() / IPv6(src=client6, dst=vip6, nh=59))
    add("arp", eth() / ARP(psrc=client4, pdst=vip4))
    add("lldp", eth() / Raw(bytes.fromhex("88cc") + b"\x02\x07\x04" + b"\0" * 40))

    # VLAN tags.
    add("vlan_v4_tcp", eth() / Dot1Q(vlan=10) / IP(src=client4, dst=vip4) / TCP(dport=80))
    add("vlan_v6_udp", eth() / Dot1Q(vlan=4094) / IPv6(src=client6, dst=vip6) / UDP(dport=53))
    add("qinq_v4_udp", eth() / Dot1AD(vlan=100) / Dot1Q(vlan=20) / IP(src=client4, dst=vip4) /
        UDP(dport=53))
    add("qinq_8100_8100_v6", eth() / Dot1Q(vlan=1) / Dot1Q(vlan=2) /
        IPv6(src=client6, dst=vip6) / TCP(dport=443))
    add("qinq_88a8_inner", eth() / Dot1Q(vlan=1) / Dot1AD(vlan=2) / IP(src=client4, dst=vip4) /
        TCP(dport=80))
    add("vlan_three_tags", eth() / Dot1AD(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) /
        IP(src=client4, dst=vip4) / TCP(dport=80))
    add("vlan_trunc", bytes(eth() / Dot1Q(vlan=10) / IP(src=client4, dst=vip4))[:16])
    add("vlan_arp", eth() / Dot1Q(vlan=10) / ARP())

    # IPv4 options and bad headers.
    add("v4_opt_rr", eth() / IP(src=client4, dst=vip4, options=[IPOption_RR(routers=["1.1.1.1"] * 3)]) /
        TCP(dport=80))
    add("v4_opt_max", eth() / IP(src=client4, dst=vip4, options=[IPOption_NOP()] * 40) /
        UDP(dport=53))
    good = bytes(eth() / IP(src=client4, dst=vip4) / TCP(dport=80) / pay(20))

    def patch(b, off, val):
        b = bytearray(b)
        b[off:off + len(val)] = val
        return bytes(b)

    add("v4_bad_version", patch(good, 14, b"\x65"))
    add("v4_ihl_4", patch(good, 14, b"\x44"))
    add("v4_ihl_15_short", patch(good, 14, b"\x4f"))
    add("v4_totlen_big", patch(good, 16, b"\x05\xdc"))
    add("v4_totlen_small", patch(good, 16, b"\x00\x10"))
    add("v4_tcp_doff_4", patch(good, 14 + 20 + 12, b"\x40"))
    add("v4_tcp_doff_15", patch(good, 14 + 20 + 12, b"\xf0"))

    # IPv4 fragments: first, middle, last; of UDP and of ICMP.
    big = UDP(sport=6000, dport=53) / pay(300)
    frags = fragment(IP(src=client4, dst=vip4, id=77) / big, fragsize=128)
    add("v4_frag_first", eth() / frags[0])
    add("v4_frag_middle", eth() / frags[1])
    add("v4_frag_last", eth() / frags[-1])
    add("v4_frag_tcp_no_port_vip", eth() / IP(src=client4, dst=vip4, flags="MF", proto=6) /
        pay(40))
    add("v4_frag_to_port_vip", eth() / IP(src=client4, dst="192.0.2.30", frag=10, proto=6) /
        pay(40))
    add("v4_frag_icmp", eth() / IP(src=client4, dst=vip4, flags="MF") / ICMP() / pay(40))

    # IPv6 extension headers, in every position, and broken chains.
    t6 = TCP(sport=50002, dport=443)
    add("v6_hbh", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrHopByHop() / t6)
    add("v6_rh_dst", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrRouting() /
        IPv6ExtHdrDestOpt() / t6)
    add("v6_hbh_rh_dst_udp", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrHopByHop() /
        IPv6ExtHdrRouting() / IPv6ExtHdrDestOpt() / UDP(dport=53))
    add("v6_frag_first", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrFragment(m=1, id=5) /
        UDP(dport=53) / pay(64))
    add("v6_frag_nonfirst", eth() / IPv6(src=client6, dst=vip6) /
        IPv6ExtHdrFragment(offset=9, nh=17, id=5) / pay(64))
    add("v6_frag_atomic", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrFragment(id=6) / t6)
    add("v6_dst_frag_first", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrDestOpt() /
        IPv6ExtHdrFragment(m=1) / t6)
    add("v6_two_frag", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrFragment(m=1) /
        IPv6ExtHdrFragment(m=1) / t6)
    chain = IPv6(src=client6, dst=vip6)
    for _ in range(8):
        chain = chain / IPv6ExtHdrDestOpt()
    add("v6_ext_8", eth() / chain / t6)
    add("v6_ext_9", eth() / chain / IPv6ExtHdrDestOpt() / t6)
    add("v6_hbh_long", eth() / IPv6(src=client6, dst=vip6) /
        IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\0" * 28)]) / t6)
    add("v6_ext_trunc", bytes(eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrRouting() / t6)[:58])
    add("v6_frag_icmp6", eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrFragment(m=1) /
        ICMPv6EchoRequest())
    g6 = bytes(eth() / IPv6(src=client6, dst=vip6) / t6)
    add("v6_bad_version", patch(g6, 14, b"\x40"))
    add("v6_plen_big", patch(g6, 18, b"\x04\x00"))
    add("v6_plen_small", patch(g6, 18, b"\x00\x04"))

    # ICMP errors quoting what a backend sent from the VIP to the client.
    q4 = IP(src=vip4, dst=client4, flags="DF") / TCP(sport=80, dport=40000)
    add("icmp4_frag_needed", eth() / IP(src="203.0.113.9", dst=vip4) /
        ICMP(type=3, code=4, nexthopmtu=1400) / bytes(q4)[:28])
    add("icmp4_unreach_udp", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=3, code=3) /
        IP(src=vip4, dst=client4) / UDP(sport=53, dport=5353))
    add("icmp4_time_exceeded", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=11) /
        bytes(IP(src=vip4, dst=client4) / TCP(sport=443, dport=40002))[:28])
    add("icmp4_param_prob_opts", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=12) /
        bytes(IP(src=vip4, dst=client4, options=[IPOption_NOP()] * 8) / TCP(sport=80))[:36])
    add("icmp4_quoted_frag", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=3, code=4) /
        bytes(IP(src=vip4, dst=client4, frag=20) / TCP(sport=80))[:28])
    add("icmp4_quoted_icmp", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=3) /
        bytes(IP(src=vip4, dst=client4) / ICMP())[:28])
    add("icmp4_quoted_trunc", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=3) /
        bytes(q4)[:22])
    add("icmp4_quoted_v6", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=3) /
        bytes(IPv6())[:28])
    add("icmp4_echo", eth() / IP(src=client4, dst=vip4) / ICMP(type=8) / pay(56))
    add("icmp4_no_vip", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=3, code=4) /
        bytes(IP(src="192.0.2.99", dst=client4) / TCP(sport=80))[:28])
    q6 = IPv6(src=vip6, dst=client6) / TCP(sport=443, dport=50000)
    add("icmp6_too_big", eth() / IPv6(src="2001:db8:ffff::1", dst=vip6) /
        ICMPv6PacketTooBig(mtu=1280) / bytes(q6)[:60])
    add("icmp6_unreach", eth() / IPv6(src="2001:db8:ffff::1", dst=vip6) / ICMPv6DestUnreach() /
        bytes(IPv6(src=vip6, dst=client6) / UDP(sport=53, dport=5000)))
    add("icmp6_time_exceeded_ext", eth() / IPv6(src="2001:db8:ffff::1", dst=vip6) /
        ICMPv6TimeExceeded() / bytes(IPv6(src=vip6, dst=client6) / IPv6ExtHdrHopByHop() /
                                     IPv6ExtHdrDestOpt() / TCP(sport=443)))
    add("icmp6_param_prob_frag", eth() / IPv6(src="2001:db8:ffff::1", dst=vip6) /
        ICMPv6ParamProblem() / bytes(IPv6(src=vip6, dst=client6) /
                                     IPv6ExtHdrFragment(offset=4, nh=6) / pay(16)))
    add("icmp6_quoted_first_frag", eth() / IPv6(src="2001:db8:ffff::1", dst=vip6) /
        ICMPv6PacketTooBig() / bytes(IPv6(src=vip6, dst=client6) /
                                     IPv6ExtHdrFragment(m=1) / UDP(sport=53)))
    add("icmp6_quoted_trunc", eth() / IPv6(src="2001:db8:ffff::1", dst=vip6) /
        ICMPv6PacketTooBig() / bytes(q6)[:42])
    add("icmp6_echo", eth() / IPv6(src=client6, dst=vip6) / ICMPv6EchoRequest() / pay(32))
    add("icmp6_quoted_v4", eth() / IPv6(src="2001:db8:ffff::1", dst=vip6) /
        ICMPv6DestUnreach() / bytes(q4))

    # Too big for the tunnel (MTU 1280 or 1500 in the snapshots), and for one mbuf.
    add("v4_big_df", eth() / IP(src=client4, dst=vip4, flags="DF") / TCP(dport=80) / pay(1300))
    add("v4_big_nodf", eth() / IP(src=client4, dst=vip4) / UDP(dport=53) / pay(1300))
    add("v4_big_df_vlan", eth() / Dot1Q(vlan=5) / IP(src=client4, dst=vip4, flags="DF") /
        TCP(dport=443) / pay(1460))
    add("v6_big", eth() / IPv6(src=client6, dst=vip6) / TCP(dport=443) / pay(1400))
    add("v6_big_udp_6in4", eth() / IPv6(src=client6, dst=vip6) / UDP(dport=53) / pay(1250))
    add("v4_jumbo_chain", eth(200) / IP(src=client4, dst=vip4, flags="DF") / UDP(dport=53) /
        pay(3000))
    add("v6_jumbo_chain", eth(250) / IPv6(src=client6, dst=vip6) / UDP(dport=53) / pay(2500))
    add("v4_2k_tcp", eth(255) / IP(src=client4, dst=vip4) / TCP(dport=80) / pay(2100))
    add("icmp4_big_error", eth() / IP(src="203.0.113.9", dst=vip4, flags="DF") /
        ICMP(type=3, code=4) / bytes(q4 / pay(1400)))

    # Truncated at every header boundary of a few frames.
    for name, pkt in [("v4_tcp", eth() / IP(src=client4, dst=vip4) / TCP(dport=80)),
                      ("v6_udp", eth() / IPv6(src=client6, dst=vip6) / UDP(dport=53)),
                      ("qinq_v4_udp", eth() / Dot1AD() / Dot1Q() / IP(src=client4, dst=vip4) /
                       UDP(dport=53)),
                      ("icmp4", eth() / IP(src="203.0.113.9", dst=vip4) / ICMP(type=3, code=4) /
                       bytes(q4)[:28])]:
        b = bytes(pkt)
        for cut in sorted({0, 1, 13, 14, 17, 18, 20, 33, 34, 41, 53, 54, 60, len(b) - 1}):
            if cut < len(b):
                out["trunc_%s_%d" % (name, cut)] = b[:cut]

    # The same VIP flow split at interesting segment boundaries (first byte = split).
    base = bytes(eth() / IP(src=client4, dst=vip4) / TCP(sport=41000, dport=80) / pay(40))
    for b0 in (0, 60, 90, 128, 255):
        out["split_v4_tcp_%d" % b0] = bytes([b0]) + base[1:]
    base6 = bytes(eth() / IPv6(src=client6, dst=vip6) / IPv6ExtHdrDestOpt() / TCP(dport=443) /
                  pay(40))
    for b0 in (50, 100, 150):
        out["split_v6_ext_%d" % b0] = bytes([b0]) + base6[1:]
    return out


# --- configurations ----------------------------------------------------------

def configs():
    encap = {"source_v4": "10.0.0.1", "source_v6": "fd00::1", "next_hop_mac": "02:00:00:00:00:01"}
    full = {
        "encap": dict(encap, mtu=1500, gue_port=6080, too_big="icmp"),
        "maglev": {"table_size": 251, "seed": "fuzz"},
        "flows": {"capacity": 4096, "tcp_idle_ms": 300000, "udp_idle_ms": 30000},
        "hot": {"enabled": True, "window_ms": 100, "threshold": 0.01, "epsilon": 0.25},
        "vips": [
            {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "key": "5tuple",
             "encap": "ipip", "backends": [
                 {"address": "10.1.0.1", "weight": 1},
                 {"address": "10.1.0.2", "weight": 3, "name": "web-2"},
                 {"address": "10.1.0.3", "state": "draining"},
                 {"address": "fd01::3", "state": "down"},
                 {"address": "10.1.0.4", "weight": 0}]},
            {"address": "192.0.2.10", "port": 0, "protocol": "udp", "key": "src_ip",
             "encap": "gue", "backends": [{"address": "10.2.0.1"}]},
            {"address": "2001:db8::10", "port": 443, "protocol": "tcp", "key": "src_ip_dport",
             "encap": "gue", "backends": [{"address": "fd01::1"}, {"address": "10.4.0.1"}]},
            {"address": "2001:db8::10", "port": 80, "protocol": "tcp"},
            {"address": "192.0.2.30", "port": 53, "protocol": "udp", "backends": []},
        ],
    }
    out = {}

    def add(name, doc):
        out[name] = doc if isinstance(doc, str) else json.dumps(doc, separators=(",", ":"))

    add("valid_full", full)
    add("valid_min", {"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"}})
    add("valid_v6_only", {"encap": {"source_v6": "fd00::1", "next_hop_mac": "aa:bb:cc:dd:ee:ff",
                                    "mtu": 9000, "too_big": "drop", "gue_port": 65535},
                          "maglev": {"table_size": 3, "seed": "x" * 255},
                          "vips": [{"address": "::1", "port": 65535, "protocol": "udp",
                                    "backends": [{"address": "::2", "name": "n" * 63}]}]})
    add("valid_hot_off", dict(full, hot={"enabled": False, "threshold": 1e-6, "epsilon": 100}))
    add("valid_same_addr_ports", {"encap": encap, "vips": [
        {"address": "192.0.2.1", "port": p, "protocol": pr} for p in (0, 80, 443)
        for pr in ("tcp", "udp")]})
    add("valid_pretty", json.dumps(full, indent=2))
    add("valid_name_is_addr", {"encap": encap, "vips": [
        {"address": "192.0.2.1", "port": 1, "protocol": "tcp",
         "backends": [{"address": "10.0.0.2", "name": "10.0.0.3"}, {"address": "10.0.0.4"}]}]})

    def bad(name, **changes):
        doc = json.loads(json.dumps(full))
        for path, val in changes.items():
            keys = path.split("__")
            o = doc
            for k in keys[:-1]:
                o = o[int(k)] if isinstance(o, list) else o[k]
            last = keys[-1]
            if isinstance(o, list):
                o[int(last)] = val
            elif val is DELETE:
                del o[last]
            else:
                o[last] = val
        add("bad_" + name, doc)

    DELETE = object()
    bad("unknown_top", extra=1)
    bad("unknown_vip_field", vips__0__weight=1)
    bad("no_encap", encap=DELETE)
    bad("encap_not_obj", encap=[1])
    bad("mac", encap__next_hop_mac="02:00:00:00:00")
    bad("mac_sign", encap__next_hop_mac="+2:00:00:00:00:01")
    bad("mtu_low", encap__mtu=1279)
    bad("mtu_str", encap__mtu="1500")
    bad("gue_port_0", encap__gue_port=0)
    bad("too_big_enum", encap__too_big="frag")
    bad("src4_is_v6", encap__source_v4="fd00::1")
    bad("table_not_prime", maglev__table_size=65536)
    bad("table_huge", maglev__table_size=1048583)
    bad("seed_empty", maglev__seed="")
    bad("capacity_low", flows__capacity=63)
    bad("idle_neg", flows__tcp_idle_ms=-1)
    bad("hot_threshold", hot__threshold=2.5)
    bad("hot_enabled_int", hot__enabled=1)
    bad("vips_obj", vips={})
    bad("vip_not_obj", vips__0=5)
    bad("vip_no_protocol", vips__0__protocol=DELETE)
    bad("vip_port_big", vips__0__port=65536)
    bad("vip_proto", vips__0__protocol="sctp")
    bad("vip_key", vips__0__key="dst_ip")
    bad("vip_addr", vips__0__address="192.0.2.256")
    bad("backend_addr", vips__0__backends__0__address="10.1.0.1/32")
    bad("backend_weight", vips__0__backends__0__weight=65536)
    bad("backend_state", vips__0__backends__0__state="up")
    bad("backend_name_long", vips__0__backends__0__name="n" * 64)
    bad("backend_dup_addr", vips__0__backends__1__address="10.1.0.1")
    bad("backend_dup_name", vips__0__backends__1__name="10.1.0.1")
    bad("backends_obj", vips__1__backends={"address": "10.2.0.1"})
    bad("dup_vip", vips__1={"address": "192.0.2.10", "port": 80, "protocol": "tcp"})
    add("bad_v6_backend_no_src6", {"encap": {"source_v4": "10.0.0.1", "next_hop_mac":
                                             "02:00:00:00:00:01"},
                                   "vips": [{"address": "192.0.2.1", "port": 1, "protocol": "tcp",
                                             "backends": [{"address": "fd00::9"}]}]})
    add("bad_dup_key", '{"encap": {"source_v4": "10.0.0.1", "source_v4": "10.0.0.2", '
        '"next_hop_mac": "02:00:00:00:00:01"}}')
    add("bad_not_object", "[1, 2, 3]")
    add("bad_json", '{"encap": {"source_v4": "10.0.0.1",')
    add("bad_utf8_nul", '{"encap": {"source_v4": "10.0.0.1\\u0000x", "next_hop_mac": '
        '"02:00:00:00:00:01"}}')
    add("bad_many_vips", {"encap": encap, "vips": [
        {"address": "192.0.2.1", "port": p, "protocol": "tcp"} for p in range(1025)]})
    return out


# --- control requests --------------------------------------------------------

def requests():
    vip = {"address": "192.0.2.10", "port": 80, "protocol": "tcp"}
    vip6 = {"address": "2001:db8::10", "port": 443, "protocol": "tcp"}
    out = {}
    n = [0]

    def req(method, params=None, id_=None, notify=False):
        n[0] += 1
        r = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            r["params"] = params
        if not notify:
            r["id"] = n[0] if id_ is None else id_
        return r

    def add(name, doc):
        out[name] = doc if isinstance(doc, str) else json.dumps(doc, separators=(",", ":"))

    add("version", req("version"))
    add("version_str_id", req("version", id_="abc"))
    add("version_null_id", req("version", id_=None) | {"id": None})
    add("vip_list", req("vip_list", {}))
    add("vip_get", req("vip_get", vip))
    add("vip_get_v6", req("vip_get", vip6))
    add("vip_get_missing", req("vip_get", {"address": "192.0.2.99", "port": 80, "protocol": "tcp"}))
    add("vip_add", req("vip_add", {"address": "192.0.2.50", "port": 8080, "protocol": "tcp",
                                   "key": "src_ip", "encap": "gue",
                                   "backends": [{"address": "10.9.0.1", "weight": 5},
                                                {"address": "fd09::1", "name": "v6"}]}))
    add("vip_add_exists", req("vip_add", vip))
    add("vip_add_bad", req("vip_add", {"address": "192.0.2.50", "port": "x", "protocol": "tcp"}))
    add("vip_remove", req("vip_remove", vip))
    add("vip_remove_missing", req("vip_remove", {"address": "192.0.2.77", "port": 1,
                                                 "protocol": "udp"}))
    add("backend_add", req("backend_add", {"vip": vip, "address": "10.1.0.9", "weight": 2,
                                           "name": "new", "state": "active"}))
    add("backend_add_v6_to_v4", req("backend_add", {"vip": vip, "address": "fd00::99"}))
    add("backend_add_exists", req("backend_add", {"vip": vip, "address": "10.1.0.1"}))
    add("backend_remove", req("backend_remove", {"vip": vip, "address": "10.1.0.2"}))
    add("backend_set_drain", req("backend_set", {"vip": vip, "address": "10.1.0.1",
                                                 "state": "draining"}))
    add("backend_set_weight", req("backend_set", {"vip": vip6, "address": "fd01::1",
                                                  "weight": 0}))
    add("backend_set_none", req("backend_set", {"vip": vip, "address": "10.1.0.1"}))
    add("backend_set_bad_type", req("backend_set", {"vip": vip, "address": "10.1.0.1",
                                                    "weight": "x"}))
    add("stats", req("stats"))
    add("maglev_table", req("maglev_table", {"vip": vip}))
    add("maglev_table_raw", req("maglev_table", {"vip": vip6, "raw": True}))
    add("maglev_table_raw_bad", req("maglev_table", {"vip": vip, "raw": 1}))
    add("config_get", req("config_get"))
    add("config_save", req("config_save"))
    add("unknown_method", req("shutdown"))
    add("unknown_param", req("version", {"verbose": True}))
    add("notification", req("backend_set", {"vip": vip, "address": "10.1.0.3", "state": "down"},
                            notify=True))
    add("batch_txn", [req("vip_add", {"address": "192.0.2.60", "port": 0, "protocol": "udp"}),
                      req("backend_add", {"vip": {"address": "192.0.2.60", "port": 0,
                                                  "protocol": "udp"}, "address": "10.6.0.1"}),
                      req("backend_set", {"vip": vip, "address": "10.1.0.1", "weight": 9}),
                      req("config_get")])
    add("batch_abort", [req("backend_remove", {"vip": vip, "address": "10.1.0.1"}),
                        req("backend_remove", {"vip": vip, "address": "10.1.0.1"})])
    add("batch_read_only", [req("version"), req("vip_list"), req("stats", notify=True)])
    add("batch_all_notify", [req("version", notify=True), req("vip_list", notify=True)])
    add("batch_bad_envelope", [req("version"), {"jsonrpc": "2.0"}, 5])
    add("batch_remove_readd", [req("vip_remove", vip6),
                               req("vip_add", dict(vip6, backends=[{"address": "fd01::7"}]))])
    add("batch_empty", [])
    add("parse_error", '{"jsonrpc": "2.0", "method": ')
    add("jsonrpc_1", {"jsonrpc": "1.0", "method": "version", "id": 1})
    add("method_number", {"jsonrpc": "2.0", "method": 5, "id": 1})
    add("params_array", {"jsonrpc": "2.0", "method": "version", "params": [], "id": 1})
    add("id_object", {"jsonrpc": "2.0", "method": "version", "id": {}})
    add("extra_member", {"jsonrpc": "2.0", "method": "version", "id": 1, "x": 0})
    add("not_object", '"version"')
    add("dup_key", '{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "version"}')
    add("utf8_method", '{"jsonrpc": "2.0", "id": 1, "method": "v\\u00e9rsion\\u0000"}')
    add("batch_big", [req("vip_add", {"address": "198.18.0.%d" % i, "port": 80,
                                      "protocol": "tcp"}) for i in range(1, 60)])
    return out


# Seeds that trip a known, not yet fixed bug: written to pending/<name>/ (not
# replayed by the tests) instead of corpus/<name>/. Move a name back out of
# here once its bug is fixed.
PENDING = set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "corpus"))
    args = ap.parse_args()
    for name, gen in (("packet", packets), ("config", configs), ("rpc", requests)):
        # Files this script did not write (inputs a fuzzer found and that were
        # merged in, named by their SHA-1) are left alone.
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        files = gen()
        for fname, data in sorted(files.items()):
            if (name, fname) in PENDING:
                pd = os.path.join(os.path.dirname(args.out), "pending", name)
                os.makedirs(pd, exist_ok=True)
                write(pd, "seed-" + fname, data)
                continue
            write(d, fname, data)
        print("%s: %d seeds written, %d files in all" % (d, len(files), len(os.listdir(d))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
