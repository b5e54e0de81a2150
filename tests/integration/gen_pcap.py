#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Generate the pcap integration test input for spillwayd.

Writes into OUTDIR:
  in.pcap        the frames to replay (net_pcap rx_pcap)
  config.json    the daemon configuration
  manifest.json  for every input frame (by index): what it is and what the
                 balancer must do with it (forward / icmp / drop + reason)

Deterministic: the same --seed gives byte-identical files. Every IP packet in
in.pcap is unique (payloads carry a sequence number), so the checker can match
an output packet to its input by the inner bytes alone.

Usage: /usr/bin/python3 gen_pcap.py OUTDIR [--seed N] [--scale F] [--too-big icmp|drop]
                                   [--flow-capacity N] [--no-jumbo] [--mtu N] [--pmtu]
       /usr/bin/python3 gen_pcap.py OUTDIR --flowstate CASE | --spray [--seed N]
       /usr/bin/python3 gen_pcap.py OUTDIR --bad-configs
"""

import argparse
import ipaddress
import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_Router_Alert  # noqa: E402
from scapy.layers.inet import IPOption_RR, IPOption_EOL, fragment  # noqa: E402
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,  # noqa: E402
                                IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, ICMPv6DestUnreach,
                                ICMPv6EchoRequest, ICMPv6PacketTooBig, ICMPv6ParamProblem,
                                ICMPv6TimeExceeded, ICMPv6ND_NS, fragment6)
from scapy.layers.l2 import ARP, Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

import lbpcap  # noqa: E402
import maglev_ref  # noqa: E402
from lbpcap import ip_norm  # noqa: E402

LB_MAC = "02:00:00:00:00:fe"
MTU = 1500
ROUTER4 = "203.0.113.1"
ROUTER6 = "2001:db8:ffff::1"


def make_config(too_big, flow_capacity=262144, mtu=MTU):
    def be(addr, w=1, state=None, name=None):
        b = {"address": addr, "weight": w}
        if state:
            b["state"] = state
        if name:
            b["name"] = name
        return b

    vips = [
        # 0: IPv4 TCP ipip, weighted
        {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
         "backends": [be("10.1.0.1", 1), be("10.1.0.2", 1), be("10.1.0.3", 2), be("10.1.0.4", 4)]},
        # 1: same address, another port, GUE (and the target of "lowest port" for fragments: no)
        {"address": "192.0.2.10", "port": 443, "protocol": "tcp", "key": "5tuple", "encap": "gue",
         "backends": [be("10.1.1.1", 1, name="web443-a"), be("10.1.1.2", 1, name="web443-b")]},
        # 2: IPv4 UDP port-agnostic GUE, with a draining and a down backend
        {"address": "192.0.2.20", "port": 0, "protocol": "udp", "key": "5tuple", "encap": "gue",
         "backends": [be("10.2.0.1"), be("10.2.0.2"), be("10.2.0.3"), be("10.2.0.4", 2),
                      be("10.2.0.5", 1, "draining"), be("10.2.0.6", 1, "down")]},
        # 3: IPv6 TCP ipip (6in6), one weight-0 backend
        {"address": "2001:db8::10", "port": 443, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
         "backends": [be("fd01::1"), be("fd01::2"), be("fd01::3"), be("fd01::4"), be("fd01::5", 0)]},
        # 4: IPv6 UDP GUE with IPv4 and IPv6 backends
        {"address": "2001:db8::20", "port": 53, "protocol": "udp", "key": "5tuple", "encap": "gue",
         "backends": [be("10.3.0.1"), be("10.3.0.2"), be("fd03::1"), be("fd03::2")]},
        # 5: src_ip key mode
        {"address": "192.0.2.30", "port": 8080, "protocol": "tcp", "key": "src_ip", "encap": "ipip",
         "backends": [be("10.4.0.%d" % i) for i in range(1, 6)] + [be("fd04::1")]},  # + 4in6
        # 6: src_ip_dport key mode on a port-agnostic VIP
        {"address": "192.0.2.50", "port": 0, "protocol": "tcp", "key": "src_ip_dport", "encap": "gue",
         "backends": [be("10.5.0.1"), be("10.5.0.2"), be("10.5.0.3")]},
        # 7: no usable backend
        {"address": "192.0.2.40", "port": 80, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
         "backends": [be("10.6.0.1", 0), be("10.6.0.2", 1, "down"), be("10.6.0.3", 1, "draining")]},
        # 8: a specific port next to the port-0 VIP 6: exact match wins, fragments go to 6
        {"address": "192.0.2.50", "port": 443, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
         "backends": [be("10.7.0.1"), be("10.7.0.2")]},
        # 9: IPv6 VIP, ipip to IPv4 (6in4) and IPv6 (6in6) backends
        {"address": "2001:db8::30", "port": 80, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
         "backends": [be("10.8.0.1"), be("10.8.0.2"), be("fd08::1")]},
        # 10, 11: two UDP services of one address with disjoint pools (fragments of
        # a datagram to :5353 must reach 11's pool, not the lowest port's)
        {"address": "192.0.2.60", "port": 53, "protocol": "udp", "key": "5tuple", "encap": "gue",
         "backends": [be("10.9.0.1"), be("10.9.0.2"), be("10.9.0.3")]},
        {"address": "192.0.2.60", "port": 5353, "protocol": "udp", "key": "5tuple", "encap": "gue",
         "backends": [be("10.9.1.1"), be("10.9.1.2")]},
    ]
    return {
        "encap": {"source_v4": "10.0.0.1", "source_v6": "fd00::1",
                  "next_hop_mac": "02:00:00:00:00:01", "mtu": mtu, "gue_port": 6080,
                  "too_big": too_big},
        "maglev": {"table_size": 65537, "seed": "spillway-pcap-test"},
        "flows": {"capacity": flow_capacity, "tcp_idle_ms": 300000, "udp_idle_ms": 30000},
        "vips": vips,
    }


class Gen:
    def __init__(self, seed, scale, too_big, flow_capacity, jumbo=True, icmp_rules=False, mtu=MTU,
                 vlan=None, pmtu=False):
        self.jumbo = jumbo
        self.pmtu_on = pmtu
        self.mtu = mtu
        self.rules = icmp_rules
        self.r = random.Random(seed)
        self.scale = scale
        self.too_big = too_big
        self.cfg = make_config(too_big, flow_capacity, mtu)
        if vlan is not None:
            self.cfg["encap"]["vlan"] = int(vlan) if vlan.isdigit() else vlan
        if icmp_rules:
            # a bucket the 40-packet run overflows long before it refills
            self.cfg["icmp"] = {"rate_per_sec": 1, "burst": 8}
        self.seq = 0
        self.events = []      # (time, order, frame bytes, manifest entry)
        self.order = 0
        self.used_tuples = set()
        self.client_mac = {}
        self.flows = []       # dicts describing flows (for ICMP errors / oversize)
        self.fid = 0

    # ---------------------------------------------------------------- helpers
    def payload(self, n):
        self.seq += 1
        head = b"SPW%08d|" % self.seq
        return head + self.r.randbytes(max(0, n - len(head)))

    def mac_of(self, client):
        m = self.client_mac.get(client)
        if m is None:
            m = "02:%02x:%02x:%02x:%02x:%02x" % tuple(self.r.randrange(256) for _ in range(5))
            self.client_mac[client] = m
        return m

    def rand_tags(self):
        x = self.r.random()
        if x < 0.08:
            return [(0x8100, self.r.randrange(1, 4095))]
        if x < 0.11:
            return [(0x88A8, self.r.randrange(1, 4095)), (0x8100, self.r.randrange(1, 4095))]
        if x < 0.12:
            return [(0x8100, self.r.randrange(1, 4095)), (0x8100, self.r.randrange(1, 4095))]
        return []

    def frame(self, ip, ethertype, src_mac, tags=None, pad=None, dst_mac=LB_MAC):
        """Ethernet frame around raw L3 bytes. pad None = random realistic padding."""
        hdr = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", ""))
        for tpid, vid in tags or []:
            hdr += struct.pack("!HH", tpid, vid)
        hdr += struct.pack("!H", ethertype)
        f = hdr + ip
        if pad is None:
            if len(f) < 60 and self.r.random() < 0.7:
                f += b"\0" * (60 - len(f))
            elif self.r.random() < 0.02:
                f += self.r.randbytes(self.r.randrange(1, 9))
        elif pad:
            f += pad
        return f

    def emit(self, t, frame, entry):
        self.order += 1
        self.events.append((t, self.order, frame, entry))

    def rand_client(self, v6):
        if v6:
            return str(ipaddress.IPv6Address(0x20010DB8C0000000 << 64 | self.r.getrandbits(40)))
        return str(ipaddress.IPv4Address((198 << 24) | (18 << 16) | self.r.getrandbits(17)))

    def new_tuple(self, client, cport, vip, vport, proto):
        t = (client, cport, vip, vport, proto)
        if t in self.used_tuples:
            return False
        self.used_tuples.add(t)
        return True

    # ---------------------------------------------------------------- L3 builders
    def ip_l4(self, src, dst, proto, sport, dport, tos, df, payload, ttl=None, ext=None,
              opts=None, tcp_flags="PA", ipid=None):
        return lbpcap.l4_packet(
            src, dst, proto, sport, dport, payload, tos=tos, ttl=ttl or self.r.randrange(30, 129), df=df,
            tcp_flags=tcp_flags, seq=self.r.getrandbits(32),
            ack=self.r.getrandbits(32) if "A" in tcp_flags else 0,
            ipid=ipid if ipid is not None else self.r.getrandbits(16),
            flowlabel=self.r.getrandbits(20), ext=ext, opts=opts)

    def rand_opts(self):
        c = self.r.randrange(3)
        if c == 0:
            return [IPOption_Router_Alert()]
        if c == 1:
            return [IPOption_NOP(), IPOption_NOP(), IPOption_NOP(), IPOption_EOL()]
        return [IPOption_RR(routers=["192.0.2.254", "0.0.0.0"])]

    def rand_ext(self):
        c = self.r.randrange(4)
        if c == 0:
            return [IPv6ExtHdrHopByHop()]
        if c == 1:
            return [IPv6ExtHdrDestOpt()]
        if c == 2:
            return [IPv6ExtHdrRouting(addresses=[], segleft=0)]
        return [IPv6ExtHdrHopByHop(), IPv6ExtHdrRouting(addresses=[], segleft=0), IPv6ExtHdrDestOpt()]

    # ---------------------------------------------------------------- traffic
    def vip_flows(self, vi, nflows, sources=None, dports=None):
        """nflows flows to VIP vi. sources: fixed list of client addresses to draw
        from (key modes by source); dports: destination ports for port-0 VIPs."""
        vip = self.cfg["vips"][vi]
        v6 = ":" in vip["address"]
        proto = lbpcap.PROTO_NUM[vip["protocol"]]
        key_mode = vip["key"]
        usable = bool(lbpcap.usable_backends(vip))
        made = 0
        while made < nflows:
            client = self.r.choice(sources) if sources else self.rand_client(v6)
            cport = self.r.randrange(1024, 65536)
            vport = vip["port"] or (self.r.choice(dports) if dports else self.r.randrange(1, 65536))
            if not self.new_tuple(client, cport, vip["address"], vport, proto):
                continue
            made += 1
            self.fid += 1
            fid = "f%d" % self.fid
            if key_mode == "src_ip":
                group = "v%d|src|%s" % (vi, client)
            elif key_mode == "src_ip_dport":
                group = "v%d|srcdport|%s|%d" % (vi, client, vport)
            else:
                group = "v%d|%s" % (vi, fid)
            tos = self.r.choice([0, 0, 0, 0x10, 0xB8, 0x01, 0x02, 0x03, 0x2A])
            df = proto == 6 or self.r.random() < 0.5
            use_ext = self.r.random() < 0.08
            npk = self.r.randrange(1, 6)
            t = self.r.random()
            flow = {"fid": fid, "vi": vi, "client": client, "cport": cport, "vport": vport,
                    "proto": proto, "v6": v6, "group": group, "t0": t, "tos": tos}
            self.flows.append(flow)
            mac = self.mac_of(client)
            for k in range(npk):
                size = self.r.choice([0, 0, 10, 40, 100, 200, 500, 1000])
                ext = self.rand_ext() if (v6 and use_ext and self.r.random() < 0.7) else None
                opts = self.rand_opts() if (not v6 and self.r.random() < 0.04) else None
                flags = ("S" if k == 0 else self.r.choice(["A", "PA", "PA", "FA"]))
                ip = self.ip_l4(client, vip["address"], proto, cport, vport, tos, df,
                                self.payload(size), ext=ext, opts=opts, tcp_flags=flags)
                e = {"kind": "flow", "vip": vi, "group": group, "flow": fid}
                if usable:
                    e.update(verdict="forward", unit=group)
                else:
                    e.update(verdict="drop", reason="no_backend")
                et = lbpcap.ETH_P_IPV6 if v6 else lbpcap.ETH_P_IP
                self.emit(t, self.frame(ip, et, mac, self.rand_tags()), e)
                t += self.r.random() * 0.02
            flow["tend"] = t

    def fragments(self):
        """IPv4 and IPv6 datagrams split into 3+ fragments, each after an unfragmented
        packet of the same flow. A fragment that comes after its datagram's first
        fragment belongs to the datagram's flow (the VIP of its ports, the flow's
        backend); one that comes before the first is steered by addresses only
        (docs/operations.md "Fragments"): the address's port-0 VIP, else its
        lowest-port VIP of the protocol, Maglev on the key with ports 0. "mg" is
        what an independent Maglev (maglev_ref.py) must choose for it."""
        cfg = self.cfg
        # (dst, proto, dport, count, v6)
        specs = [("192.0.2.20", 17, 5353, 10, False), ("192.0.2.10", 6, 80, 5, False),
                 ("192.0.2.10", 6, 443, 3, False),   # the :443 VIP, not :80
                 ("2001:db8::20", 17, 53, 8, True), ("2001:db8::10", 6, 443, 4, True),
                 ("192.0.2.50", 6, 443, 3, False),   # the :443 VIP 8, not the port-0 VIP 6
                 ("192.0.2.50", 6, 8443, 3, False),  # VIP 6, src_ip_dport with the real dport
                 ("2001:db8::30", 6, 80, 3, True),
                 ("192.0.2.60", 17, 5353, 8, False), ("192.0.2.60", 17, 53, 4, False)]
        dg = 0
        for dst, proto, dport, count, v6 in specs:
            clients = [self.rand_client(v6) for _ in range(max(1, count // 2))]
            vi = lbpcap.find_vip(cfg, dst, proto, dport)
            vi3 = lbpcap.find_vip(cfg, dst, proto, dport, fragment=True)
            mode, mode3 = cfg["vips"][vi]["key"], cfg["vips"][vi3]["key"]
            for n in range(int(count * max(1.0, self.scale))):
                dg += 1
                client = self.r.choice(clients)
                fid = "fr%d" % dg
                if mode == "src_ip":
                    group = "v%d|src|%s" % (vi, client)
                elif mode == "src_ip_dport":
                    group = "v%d|srcdport|%s|%d" % (vi, client, dport)
                else:
                    group = "v%d|%s" % (vi, fid)
                pl = self.payload(self.r.randrange(1000, 1400))
                while True:
                    cport = self.r.randrange(1024, 65536)
                    if self.new_tuple(client, cport, dst, dport, proto):
                        break
                tos = self.r.choice([0, 0xB8, 0x02])
                if v6:
                    ext = [IPv6ExtHdrHopByHop()] if n % 3 == 0 else []
                    p = IPv6(src=client, dst=dst, tc=tos, hlim=60)
                    for h in ext:
                        p = p / h
                    l4 = TCP(sport=cport, dport=dport, flags="PA") if proto == 6 else \
                        UDP(sport=cport, dport=dport)
                    p = p / IPv6ExtHdrFragment(id=self.r.getrandbits(32)) / l4 / Raw(pl)
                    frags = [bytes(f) for f in fragment6(p, 496)]
                else:
                    l4 = TCP(sport=cport, dport=dport, flags="PA") if proto == 6 else \
                        UDP(sport=cport, dport=dport)
                    p = IP(src=client, dst=dst, tos=tos, ttl=60, id=self.r.getrandbits(16)) / l4 / Raw(pl)
                    frags = [bytes(f) for f in fragment(p, fragsize=400)]
                assert len(frags) >= 3
                order = list(range(len(frags)))
                if n % 4 == 1:
                    order.reverse()
                elif n % 4 == 2:
                    self.r.shuffle(order)
                t = self.r.random()
                mac = self.mac_of(client)
                tags = self.rand_tags()
                # the flow's unfragmented packet first
                ip = self.ip_l4(client, dst, proto, cport, dport, tos, True, self.payload(40))
                self.emit(t, self.frame(ip, lbpcap.ETH_P_IPV6 if v6 else lbpcap.ETH_P_IP, mac, tags),
                          {"kind": "flow", "vip": vi, "group": group, "flow": fid, "verdict": "forward",
                           "mg": [client, dst, cport, dport, proto, mode]})
                t += 0.001
                seen_first = False
                for k in order:
                    seen_first = seen_first or k == 0
                    if seen_first:
                        e = {"kind": "fragment", "vip": vi, "group": group, "flow": fid,
                             "mg": [client, dst, cport, dport, proto, mode]}
                    else:
                        e = {"kind": "fragment", "vip": vi3, "group": "frag|%s|%s|%d" % (client, dst, proto),
                             "early": True, "mg": [client, dst, 0, 0, proto, mode3]}
                    e.update(datagram=dg, verdict="forward")
                    self.emit(t, self.frame(frags[k], lbpcap.ETH_P_IPV6 if v6 else lbpcap.ETH_P_IP, mac, tags), e)
                    t += 0.0001
        # fragments of a datagram to a VIP address with no VIP for that protocol
        p = IP(src="198.18.200.1", dst="192.0.2.10", id=77) / UDP(sport=1000, dport=80) / Raw(self.payload(1000))
        for fr in fragment(p, fragsize=400):
            self.emit(self.r.random(), self.frame(bytes(fr), lbpcap.ETH_P_IP, self.mac_of("198.18.200.1")),
                      {"kind": "fragment-novip", "verdict": "drop", "reason": "no_vip"})

    def big_fragments(self):
        """Datagrams cut into fragments of 1480 bytes of payload (1500-byte IPv4
        packets, DF clear), first fragment first, each after an unfragmented packet
        of its flow: fragments over encap.mtu once encapsulated must be sent as
        outer fragments (RFC 2003 §5.1), the later ones as well as the first."""
        cfg = self.cfg
        for n, (dst, proto, dport) in enumerate([("192.0.2.10", 6, 80), ("192.0.2.20", 17, 7000),
                                                 ("192.0.2.10", 6, 80), ("192.0.2.20", 17, 7001)]):
            client = self.rand_client(False)
            vi = lbpcap.find_vip(cfg, dst, proto, dport)
            fid = "bigfr%d" % n
            group = "v%d|%s" % (vi, fid)
            while True:
                cport = self.r.randrange(1024, 65536)
                if self.new_tuple(client, cport, dst, dport, proto):
                    break
            mac = self.mac_of(client)
            t = self.r.random()
            mode = cfg["vips"][vi]["key"]
            ip = self.ip_l4(client, dst, proto, cport, dport, 0, True, self.payload(40))
            self.emit(t, self.frame(ip, lbpcap.ETH_P_IP, mac),
                      {"kind": "flow", "vip": vi, "group": group, "flow": fid, "verdict": "forward",
                       "mg": [client, dst, cport, dport, proto, mode]})
            l4 = TCP(sport=cport, dport=dport, flags="PA") if proto == 6 else UDP(sport=cport, dport=dport)
            p = IP(src=client, dst=dst, ttl=60, id=self.r.getrandbits(16)) / l4 / Raw(self.payload(3300))
            for k, fr in enumerate(fragment(p, fragsize=1480)):
                b = bytes(fr)
                t += 0.0001
                self.emit(t, self.frame(b, lbpcap.ETH_P_IP, mac),
                          {"kind": "fragment", "vip": vi, "group": group, "flow": fid, "size": len(b),
                           "df": False, "verdict": "mtu", "mg": [client, dst, cport, dport, proto, mode]})

    def quote(self, flow, cut=None, l4len=None, hdrs=False):
        """The packet a backend sent VIP -> client in this flow, as a router quotes it."""
        vip = self.cfg["vips"][flow["vi"]]
        src, dst = vip["address"], flow["client"]
        if flow["proto"] == 6:
            l4 = TCP(sport=flow["vport"], dport=flow["cport"], flags="SA", seq=self.r.getrandbits(32),
                     ack=self.r.getrandbits(32))
        else:
            l4 = UDP(sport=flow["vport"], dport=flow["cport"])
        pl = Raw(self.payload(self.r.randrange(0, 64)))
        # hdrs: the quoted packet carries IPv6 extension headers / IPv4 options
        if flow["v6"]:
            ip = IPv6(src=src, dst=dst, hlim=64, tc=flow["tos"])
            if hdrs:
                ip = ip / IPv6ExtHdrDestOpt()
            q = bytes(ip / l4 / pl)
            hl = 48 if hdrs else 40
        else:
            q = bytes(IP(src=src, dst=dst, ttl=64, id=self.r.getrandbits(16), flags="DF",
                         options=[IPOption_Router_Alert()] if hdrs else []) / l4 / pl)
            hl = 24 if hdrs else 20
        if l4len is not None:
            q = q[:hl + l4len]
        if cut is not None:
            q = q[:cut]
        return q

    def icmp_frame(self, flow, quoted, t=None, v4type=(3, 4), v6type=2, tags=None):
        vip = self.cfg["vips"][flow["vi"]]
        router_mac = "02:aa:bb:cc:dd:01"
        if flow["v6"]:
            cls = {1: ICMPv6DestUnreach(code=4), 2: ICMPv6PacketTooBig(mtu=1280),
                   3: ICMPv6TimeExceeded(code=0), 4: ICMPv6ParamProblem(code=0, ptr=6)}[v6type]
            ip = bytes(IPv6(src=ROUTER6, dst=vip["address"], hlim=64) / cls / Raw(quoted))
            return self.frame(ip, lbpcap.ETH_P_IPV6, router_mac, tags)
        ty, code = v4type
        ic = ICMP(type=ty, code=code)
        if (ty, code) == (3, 4):
            ic = ICMP(type=3, code=4, nexthopmtu=1400)
        if ty == 12:
            ic = ICMP(type=12, code=0, ptr=8)
        ip = bytes(IP(src=ROUTER4, dst=vip["address"], ttl=64) / ic / Raw(quoted))
        return self.frame(ip, lbpcap.ETH_P_IP, router_mac, tags)

    def icmp_errors(self):
        fl = [f for f in self.flows if lbpcap.usable_backends(self.cfg["vips"][f["vi"]])]
        v4 = [f for f in fl if not f["v6"]]
        v6 = [f for f in fl if f["v6"]]
        n4 = int(60 * self.scale) or 4
        n6 = int(30 * self.scale) or 4
        for i, f in enumerate(self.r.sample(v4, min(n4, len(v4)))):
            if f["proto"] == 6:
                ty = [(3, 4), (3, 4), (11, 0), (12, 0), (3, 1)][i % 5]
            else:
                ty = [(3, 3), (11, 0), (3, 4)][i % 3]
            # routers quote the IP header + 8 bytes (RFC 792) or more (RFC 1812)
            q = self.quote(f, l4len=8, hdrs=i % 4 == 1) if i % 3 == 0 else self.quote(f, hdrs=i % 4 == 1)
            t = f["t0"] + 0.001 + self.r.random() * 0.02
            e = {"kind": "icmp-error", "vip": f["vi"], "group": f["group"], "flow": f["fid"],
                 "verdict": "forward", "icmp_error": True}
            self.emit(t, self.icmp_frame(f, q, v4type=ty, tags=self.rand_tags()), e)
        for i, f in enumerate(self.r.sample(v6, min(n6, len(v6)))):
            ty = [2, 2, 1, 3, 4][i % 5]
            q = self.quote(f, l4len=8, hdrs=i % 4 == 1) if i % 3 == 0 else self.quote(f, hdrs=i % 4 == 1)
            t = f["t0"] + 0.001 + self.r.random() * 0.02
            e = {"kind": "icmp-error", "vip": f["vi"], "group": f["group"], "flow": f["fid"],
                 "verdict": "forward", "icmp_error": True}
            self.emit(t, self.icmp_frame(f, q, v6type=ty, tags=self.rand_tags()), e)

        # ICMP errors that must not be forwarded
        f4 = next(f for f in v4 if f["vi"] == 0)
        f6 = v6[0]
        bad = []
        # quoted flow from the VIP address but a port no VIP has
        g = dict(f4, vport=9, vi=f4["vi"])
        bad.append((self.icmp_frame(g, self.quote(g)), "no_vip", []))
        # ICMP errors whose quote names no TCP/UDP flow are not the balancer's
        # (the rule of bpf/xsk_steer.bpf.c): to the exception port, or no_vip.
        # Quoted IPv4 header cut (12 bytes) / quoted L4 cut to 2 bytes
        bad.append((self.icmp_frame(f4, self.quote(f4, cut=12)), "no_vip", []))
        bad.append((self.icmp_frame(f4, self.quote(f4, l4len=2)), "no_vip", []))
        bad.append((self.icmp_frame(f6, self.quote(f6, cut=20), v6type=2), "no_vip", []))
        bad.append((self.icmp_frame(f6, self.quote(f6, l4len=2), v6type=1), "no_vip", []))
        # quoting an ICMP echo (not TCP/UDP)
        vip4 = self.cfg["vips"][f4["vi"]]["address"]
        q = bytes(IP(src=vip4, dst=f4["client"]) / ICMP(type=0) / Raw(self.payload(8)))
        bad.append((self.icmp_frame(f4, q), "no_vip", []))
        # ICMP header itself cut (type/code/checksum only)
        ip = bytes(IP(src=ROUTER4, dst=vip4, ttl=64, id=4242, proto=1) / Raw(b"\x03\x04\xfc\xfb"))
        bad.append((self.frame(ip, lbpcap.ETH_P_IP, "02:aa:bb:cc:dd:01"), "no_vip", []))
        for fr, reason, alt in bad:
            self.emit(self.r.random(), fr, {"kind": "icmp-bad", "verdict": "drop", "reason": reason, "alt": alt})

    def oversize(self):
        """Packets over the MTU once encapsulated, inside established flows."""
        # (vip index, inner total length, DF)
        specs = [(0, 1480, True), (0, 1481, True), (0, 1500, True), (0, 1481, False),
                 (0, 1500, False), (1, 1472, True), (1, 1473, True), (2, 1473, True),
                 (2, 1473, False), (2, 1472, False), (3, 1460, True), (3, 1461, True),
                 (3, 1500, True), (4, 1452, True), (4, 1460, True), (4, 1460, True),
                 (4, 1500, True), (5, 1490, True), (6, 1481, True), (9, 1460, True), (9, 1480, True)]
        if self.jumbo:
            # frames larger than one 2 KiB mbuf (net_pcap chains segments)
            specs += [(0, 2100, True), (0, 2100, False), (2, 3000, True), (3, 2100, True), (3, 4000, True)]
        if self.mtu < 1280 + 48:
            # RFC 2473 §7.1 with a tunnel MTU below 1280 (VIP 3: 6in6, VIP 4: GUE over
            # IPv4 or IPv6, VIP 9: 6in4 or 6in6): up to 1280 bytes outer fragments, above a PTB
            specs += [(3, self.mtu - 40, True), (3, self.mtu - 39, True), (3, 1280, True), (3, 1281, True),
                      (4, 1280, True), (4, 1300, True), (9, 1270, True), (9, 1280, True), (9, 1281, True)]
        # Every third untagged, the others in an 802.1Q VLAN or a QinQ stack:
        # the ICMP reply must go back with the same tags.
        vlans = [[], [(0x8100, 100)], [(0x88A8, 7), (0x8100, 4094)]]
        for k, (vi, size, df) in enumerate(specs):
            cands = [f for f in self.flows if f["vi"] == vi]
            f = self.r.choice(cands)
            vip = self.cfg["vips"][vi]
            hl = 40 if f["v6"] else 20
            l4 = 20 if f["proto"] == 6 else 8
            ip = self.ip_l4(f["client"], vip["address"], f["proto"], f["cport"], f["vport"], f["tos"],
                            df, self.payload(size - hl - l4), tcp_flags="PA")
            assert len(ip) == size, (len(ip), size)
            e = {"kind": "oversize", "vip": vi, "group": f["group"], "flow": f["fid"], "size": size,
                 "df": df, "verdict": "mtu"}
            et = lbpcap.ETH_P_IPV6 if f["v6"] else lbpcap.ETH_P_IP
            self.emit(f["t0"] + 0.0005, self.frame(ip, et, self.mac_of(f["client"]), vlans[k % 3]), e)

    def icmp_rules(self):
        """The rules of generated ICMP (RFC 4443 §2.4, RFC 1812 §4.3.2.7-8, §5.3.7).

        40 oversized DF packets in a row, in established IPv4 flows: with the
        bucket of the config (icmp.burst, icmp.rate_per_sec) only the first
        burst are answered, check_pcap.py works the rest out. Oversized ICMP
        errors about VIP flows: never answered (too_big). Packets to a VIP from
        martian sources: dropped (martian_src), oversized ones included."""
        r = self.r
        f4s = [f for f in self.flows if not f["v6"] and f["vi"] == 0]
        t = max(f["tend"] for f in self.flows) + 0.01
        for k in range(40):
            f = r.choice(f4s)
            vip = self.cfg["vips"][0]
            l4 = 20 if f["proto"] == 6 else 8
            ip = self.ip_l4(f["client"], vip["address"], f["proto"], f["cport"], f["vport"], f["tos"],
                            True, self.payload(1481 - 20 - l4), tcp_flags="PA")
            e = {"kind": "oversize", "vip": 0, "group": f["group"], "flow": f["fid"], "size": 1481,
                 "df": True, "verdict": "mtu"}
            self.emit(t + k * 1e-6, self.frame(ip, lbpcap.ETH_P_IP, self.mac_of(f["client"]), []), e)
        fl = [f for f in self.flows if lbpcap.usable_backends(self.cfg["vips"][f["vi"]])]
        # an ICMPv6 error (and an IPv4 one with DF) about a VIP flow, too big to tunnel
        f6 = next(f for f in fl if f["v6"])
        f4 = next(f for f in fl if not f["v6"])
        for f, ty in ((f6, 1), (f6, 2), (f4, (3, 4))):
            q = self.quote(f) + self.payload(1500)
            if f["v6"]:
                fr = self.icmp_frame(f, q[:1500 - 48], v6type=ty)
            else:
                ip = bytes(IP(src=ROUTER4, dst=self.cfg["vips"][f["vi"]]["address"], ttl=64, flags="DF") /
                           ICMP(type=3, code=4, nexthopmtu=1400) / Raw(q[:1500 - 28]))
                fr = self.frame(ip, lbpcap.ETH_P_IP, "02:aa:bb:cc:dd:01")
            self.emit(f["tend"] + 0.001, fr, {"kind": "icmp-bad", "verdict": "drop", "reason": "too_big"})
        # martian sources to a VIP
        vip0 = self.cfg["vips"][0]
        vip6 = next(v for v in self.cfg["vips"] if ":" in v["address"] and lbpcap.usable_backends(v))
        mac = "02:77:77:77:77:77"
        for src in ("0.0.0.0", "0.1.2.3", "127.0.0.1", "224.0.0.1", "240.0.0.9", "255.255.255.255"):
            for size in (60, 1481):
                ip = self.ip_l4(src, vip0["address"], 6, r.randrange(1024, 65536), vip0["port"] or 80, 0, True,
                                self.payload(size - 40))
                m = "m%d" % len(self.events)
                self.emit(r.random(), self.frame(ip, lbpcap.ETH_P_IP, mac),
                          {"kind": "martian", "vip": 0, "group": m, "flow": m, "verdict": "drop",
                           "reason": "martian_src"})
        for src in ("::", "::1", "ff02::1"):
            proto = lbpcap.PROTO_NUM[vip6["protocol"]]
            ip = self.ip_l4(src, vip6["address"], proto, r.randrange(1024, 65536), vip6["port"] or 80, 0, True,
                            self.payload(40))
            m = "m%d" % len(self.events)
            self.emit(r.random(), self.frame(ip, lbpcap.ETH_P_IPV6, mac),
                      {"kind": "martian", "vip": self.cfg["vips"].index(vip6), "group": m, "flow": m,
                       "verdict": "drop", "reason": "martian_src"})

    def pmtu_flow(self, vi, want):
        """A new flow to VIP vi that an independent Maglev (maglev_ref.py) sends
        to backend want, opened with a SYN and one ACK (both forwarded)."""
        mg = self.cfg["maglev"]
        vip = self.cfg["vips"][vi]
        if not hasattr(self, "pm_tables"):
            self.pm_tables, self.pm_key = {}, maglev_ref.lbhash.key_from_seed(mg["seed"])
        t = self.pm_tables.get(vi)
        if t is None:
            t = self.pm_tables[vi] = maglev_ref.vip_table(mg["seed"], mg["table_size"], vip["backends"])
        v6 = ":" in vip["address"]
        proto = lbpcap.PROTO_NUM[vip["protocol"]]
        while True:
            client = self.rand_client(v6)
            cport = self.r.randrange(1024, 65536)
            vport = vip["port"] or 7000
            got = maglev_ref.backend_for(t, self.pm_key, client, vip["address"], cport, vport, proto,
                                         vip["key"])
            if ip_norm(got) == ip_norm(want) and self.new_tuple(client, cport, vip["address"], vport, proto):
                break
        self.fid += 1
        f = {"fid": "pm%d" % self.fid, "vi": vi, "client": client, "cport": cport, "vport": vport,
             "proto": proto, "v6": v6, "group": "v%d|pm%d" % (vi, self.fid), "tos": 0, "backend": want,
             "mg": [client, vip["address"], cport, vport, proto, vip["key"]]}
        return f

    def pmtu_packet(self, f, t, size, df=True, flags="PA", verdict="mtu"):
        vip = self.cfg["vips"][f["vi"]]
        hl = 40 if f["v6"] else 20
        l4 = 20 if f["proto"] == 6 else 8
        ip = self.ip_l4(f["client"], vip["address"], f["proto"], f["cport"], f["vport"], 0, df,
                        self.payload(size - hl - l4), tcp_flags=flags)
        assert len(ip) == size, (len(ip), size)
        e = {"kind": "pmtu-flow", "vip": f["vi"], "group": f["group"], "flow": f["fid"], "size": size,
             "df": df, "verdict": verdict, "mg": f["mg"]}
        et = lbpcap.ETH_P_IPV6 if f["v6"] else lbpcap.ETH_P_IP
        self.emit(t, self.frame(ip, et, self.mac_of(f["client"]), []), e)

    def pmtu_error(self, t, v6, backend, mtu, src=None, proto=None, dport=None, to=None):
        """An ICMP fragmentation needed (RFC 1191) / Packet Too Big (RFC 8201)
        from a router on the way to backend, quoting an outer packet of ours
        (or, with src / proto / dport / to, a forged or foreign one)."""
        enc = self.cfg["encap"]
        inner = self.payload(120)
        if v6:
            outer = IPv6(src=src or enc["source_v6"], dst=backend, hlim=63, nh=proto or 41)
            if proto == 17:
                outer = outer / UDP(sport=45000, dport=dport or enc["gue_port"])
            q = bytes(outer / Raw(inner))
            ip = bytes(IPv6(src=ROUTER6, dst=to or enc["source_v6"], hlim=64) / ICMPv6PacketTooBig(mtu=mtu) /
                       Raw(q))
            fr = self.frame(ip, lbpcap.ETH_P_IPV6, "02:aa:bb:cc:dd:01", [])
        else:
            outer = IP(src=src or enc["source_v4"], dst=backend, ttl=63, flags="DF", proto=proto or 4)
            if proto == 17:
                outer = outer / UDP(sport=45000, dport=dport or enc["gue_port"])
            q = bytes(outer / Raw(inner))[:48]  # the header and more than 8 bytes (RFC 1812 §4.3.2.3)
            ip = bytes(IP(src=ROUTER4, dst=to or enc["source_v4"], ttl=64) /
                       ICMP(type=3, code=4, nexthopmtu=mtu) / Raw(q))
            fr = self.frame(ip, lbpcap.ETH_P_IP, "02:aa:bb:cc:dd:01", [])
        self.emit(t, fr, {"kind": "pmtu-icmp", "verdict": "drop", "reason": "no_vip"})

    def pmtu(self):
        """Tunnel path MTU discovery (RFC 2473 §7.1, RFC 4459 §3.2): MTU errors
        about our own outer packets toward a backend, and forged or foreign
        ones, then, more than two bursts later, oversized packets of flows to
        each of those backends. check_pcap.py models which errors count and
        what MTU each backend then has; the generator only sets the scene."""
        r = self.r
        t = max(e[0] for e in self.events) + 0.05
        plan = [  # (name, VIP, backend)
            ("b1", 0, "10.1.0.1"), ("b1b", 0, "10.1.0.1"), ("b2", 0, "10.1.0.2"), ("b3", 0, "10.1.0.3"),
            ("b4", 0, "10.1.0.4"), ("g1", 2, "10.2.0.1"), ("g2", 2, "10.2.0.2"),
            ("v1", 3, "fd01::1"), ("v2", 3, "fd01::2"), ("v3", 3, "fd01::3")]
        fl = {}
        for name, vi, b in plan:
            f = fl[name] = self.pmtu_flow(vi, b)
            first = "S" if f["proto"] == 6 else "PA"
            self.pmtu_packet(f, t, 60 if not f["v6"] else 80, flags=first, verdict="forward")
            t += 1e-4
            self.pmtu_packet(f, t, 100, flags="A", verdict="forward")
            t += 1e-4
        t += 0.01
        self.pmtu_error(t, False, "10.1.0.1", 1400)                       # learned
        self.pmtu_error(t + 1e-5, False, "10.1.0.1", 1450)                # not lower
        self.pmtu_error(t + 2e-5, False, "10.1.0.3", 1300, src="10.0.0.2")  # not our source
        self.pmtu_error(t + 3e-5, False, "10.1.0.3", 1300, proto=6)       # not a tunnel packet
        self.pmtu_error(t + 4e-5, False, "10.1.9.9", 1300)                # no such backend
        self.pmtu_error(t + 5e-5, False, "10.1.0.4", 500)                 # under 576
        self.pmtu_error(t + 6e-5, False, "10.2.0.1", 1400, proto=17)      # GUE, learned
        self.pmtu_error(t + 7e-5, False, "10.2.0.2", 1300, proto=17, dport=6081)  # not the GUE port
        self.pmtu_error(t + 8e-5, False, "10.1.0.2", 1300, to="10.0.0.9")  # not to our source
        self.pmtu_error(t + 9e-5, True, "fd01::1", 1400)                   # learned
        self.pmtu_error(t + 10e-5, True, "fd01::2", 1280)                  # learned, the IPv6 minimum
        self.pmtu_error(t + 11e-5, True, "fd01::3", 1200)                  # under 1280
        self.pmtu_error(t + 12e-5, True, "fd01::3", 1300, src="fd00::2")   # not our source
        t += 0.01
        # Fillers: more than two bursts of unrelated packets between the errors
        # and the packets they apply to (a burst's threshold is set as it starts).
        for k in range(80):
            ip = bytes(IP(src=self.rand_client(False), dst="192.0.2.10") / ICMP(type=8, id=k) /
                       Raw(self.payload(16)))
            self.emit(t + k * 1e-6, self.frame(ip, lbpcap.ETH_P_IP, "02:11:22:33:44:56"),
                      {"kind": "novip", "verdict": "drop", "reason": "no_vip"})
        t += 0.01
        sizes = {"b1": [(1380, True), (1381, True), (1381, False), (1500, True)], "b1b": [(1381, True)],
                 "b2": [(1381, True), (1480, True), (1481, True)], "b3": [(1381, True)], "b4": [(1381, True)],
                 "g1": [(1372, True), (1373, True)], "g2": [(1373, True)],
                 "v1": [(1360, True), (1361, True)], "v2": [(1240, True), (1241, True), (1281, True)],
                 "v3": [(1361, True)]}
        order = [(n, s, df) for n in sizes for s, df in sizes[n]]
        r.shuffle(order)
        for n, s, df in order:
            self.pmtu_packet(fl[n], t, s, df=df)
            t += 1e-5

    def novip(self):
        r = self.r
        out = []
        mac = "02:11:22:33:44:55"
        for i in range(5):
            out.append(bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=mac) /
                             ARP(op=1, psrc="198.18.0.%d" % (i + 1), pdst="192.0.2.10")))
        for i in range(5):
            ip = bytes(IP(src=self.rand_client(False), dst="192.0.2.10") / ICMP(type=8, id=i) /
                       Raw(self.payload(32)))
            out.append(self.frame(ip, lbpcap.ETH_P_IP, mac))
        for i in range(3):
            ip = bytes(IPv6(src=self.rand_client(True), dst="2001:db8::10") / ICMPv6EchoRequest(id=i) /
                       Raw(self.payload(16)))
            out.append(self.frame(ip, lbpcap.ETH_P_IPV6, mac))
        for i in range(2):
            ip = bytes(IPv6(src=self.rand_client(True), dst="ff02::1:ff00:10", hlim=255) /
                       ICMPv6ND_NS(tgt="2001:db8::10"))
            out.append(self.frame(ip, lbpcap.ETH_P_IPV6, mac))
        for i in range(3):
            ip = bytes(IP(src=self.rand_client(False), dst="192.0.2.10", proto=47) /
                       Raw(b"\x00\x00\x08\x00" + self.payload(40)))
            out.append(self.frame(ip, lbpcap.ETH_P_IP, mac))
        for dst, proto, dport, n in [("192.0.2.99", 6, 80, 10), ("192.0.2.10", 17, 80, 5),
                                     ("192.0.2.10", 6, 81, 5), ("2001:db8::10", 6, 80, 5),
                                     ("2001:db8::20", 17, 54, 3), ("2001:db8::99", 6, 443, 3),
                                     ("192.0.2.20", 6, 53, 3)]:
            for i in range(n):
                v6 = ":" in dst
                ip = self.ip_l4(self.rand_client(v6), dst, proto, r.randrange(1024, 65536), dport, 0, True,
                                self.payload(20))
                out.append(self.frame(ip, lbpcap.ETH_P_IPV6 if v6 else lbpcap.ETH_P_IP, mac, self.rand_tags()))
        for i in range(2):
            out.append(self.frame(self.payload(50), 0x88CC, mac))
        for i in range(2):
            ip = bytes(IPv6(src=self.rand_client(True), dst="2001:db8::10", nh=59) / Raw(self.payload(8)))
            out.append(self.frame(ip, lbpcap.ETH_P_IPV6, mac))
        for i in range(2):
            ip = bytes(IP(src=self.rand_client(False), dst="192.0.2.10", proto=132) / Raw(self.payload(28)))
            out.append(self.frame(ip, lbpcap.ETH_P_IP, mac))
        for fr in out:
            self.emit(r.random(), fr, {"kind": "novip", "verdict": "drop", "reason": "no_vip"})

    def macs(self):
        """Packets of new flows to VIPs, sent to another host's MAC, to broadcast
        and to IPv4 and IPv6 multicast MACs: not ours, never balanced
        (not_our_mac; group MACs go to the exception port when there is one).
        check_pcap.py judges them by their destination MAC itself."""
        r = self.r
        dsts = ["02:00:00:00:00:99", "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "33:33:00:00:00:01"]
        for k in range(12):
            vi = k % 2  # VIP 0 (IPv4 TCP) and VIP 1
            vip = self.cfg["vips"][vi]
            v6 = ":" in vip["address"]
            client = self.rand_client(v6)
            proto = lbpcap.PROTO_NUM[vip["protocol"]]
            ip = self.ip_l4(client, vip["address"], proto, r.randrange(1024, 65536), vip["port"] or 80, 0, True,
                            self.payload(30), tcp_flags="S")
            self.emit(r.random(), self.frame(ip, lbpcap.ETH_P_IPV6 if v6 else lbpcap.ETH_P_IP,
                                             self.mac_of(client), self.rand_tags(), dst_mac=dsts[k % 4]),
                      {"kind": "mac", "vip": vi, "verdict": "drop", "reason": "not_our_mac"})

    def malformed(self):
        r = self.r
        mac = "02:66:66:66:66:66"
        f4 = next(f for f in self.flows if not f["v6"] and f["proto"] == 6 and f["vi"] == 0)
        f6 = next(f for f in self.flows if f["v6"] and f["proto"] == 6)
        u4 = next(f for f in self.flows if not f["v6"] and f["proto"] == 17)
        u6 = next(f for f in self.flows if f["v6"] and f["proto"] == 17)

        def good(f, n=40, **kw):
            vip = self.cfg["vips"][f["vi"]]
            return self.ip_l4(f["client"], vip["address"], f["proto"], f["cport"], f["vport"], 0, True,
                              self.payload(n), **kw)

        def set4(ip, **fld):
            b = bytearray(ip)
            if "vihl" in fld:
                b[0] = fld["vihl"]
            if "tl" in fld:
                b[2:4] = struct.pack("!H", fld["tl"])
            b[10:12] = b"\0\0"
            b[10:12] = struct.pack("!H", lbpcap.inet_cksum(bytes(b[:(b[0] & 15) * 4 if (b[0] & 15) >= 5 else 20])))
            return bytes(b)

        items = []  # (frame, reason, alt)
        E4, E6 = lbpcap.ETH_P_IP, lbpcap.ETH_P_IPV6
        # Ethernet / VLAN cut
        items.append((bytes.fromhex("020000000000fe"), "eth_trunc", []))
        items.append((bytes.fromhex("0200000000fe02666666666608"), "eth_trunc", []))  # 13 bytes
        items.append((self.frame(b"", 0x8100, mac, pad=b"\x00\x05"), "eth_trunc", []))
        items.append((self.frame(b"", 0x88A8, mac, pad=b"\x00\x05\x81\x00\x00"), "eth_trunc", []))
        # IPv4 truncated
        g = good(f4)
        items.append((self.frame(g[:12], E4, mac, pad=b""), "ip4_trunc", []))
        items.append((self.frame(g[:19], E4, mac, [(0x8100, 7)], pad=b""), "ip4_trunc", []))
        gopt = good(f4, opts=[IPOption_RR(routers=["1.2.3.4", "5.6.7.8", "0.0.0.0"])])
        items.append((self.frame(gopt[:22], E4, mac, pad=b""), "ip4_trunc", []))  # options cut
        items.append((self.frame(set4(g, tl=len(g) + 100), E4, mac, pad=b""), "ip4_trunc", []))
        # IPv4 malformed
        items.append((self.frame(set4(g, vihl=0x55), E4, mac, pad=b""), "ip4_malformed", []))
        items.append((self.frame(set4(g, vihl=0x65), E4, mac, pad=b""), "ip4_malformed", ["ip6_malformed"]))
        items.append((self.frame(set4(g, vihl=0x43), E4, mac, pad=b""), "ip4_malformed", []))
        items.append((self.frame(set4(g, vihl=0x40), E4, mac, pad=b""), "ip4_malformed", []))
        items.append((self.frame(set4(g, tl=16), E4, mac, pad=b""), "ip4_malformed", []))
        items.append((self.frame(set4(gopt, tl=22), E4, mac, pad=b""), "ip4_malformed", []))
        # L4 cut (IPv4): total length covers only part of the TCP/UDP header
        items.append((self.frame(set4(g[:30], tl=30), E4, mac, pad=b""), "l4_trunc", []))
        items.append((self.frame(set4(g[:20], tl=20), E4, mac, pad=b"\0" * 26), "l4_trunc", []))
        gu = good(u4)
        items.append((self.frame(set4(gu[:24], tl=24), E4, mac, pad=b""), "l4_trunc", []))
        # TCP data offset < 5, and > what is there
        b = bytearray(g)
        b[32] = (4 << 4) | (b[32] & 15)
        items.append((self.frame(bytes(b), E4, mac, pad=b""), "l4_trunc", ["ip4_malformed"]))
        b = bytearray(set4(g[:40], tl=40))
        b[32] = (15 << 4) | (b[32] & 15)
        items.append((self.frame(bytes(b), E4, mac, pad=b""), "l4_trunc", []))
        # IPv6
        h = good(f6)
        items.append((self.frame(h[:30], E6, mac, pad=b""), "ip6_trunc", []))
        items.append((self.frame(h[:39], E6, mac, [(0x8100, 9)], pad=b""), "ip6_trunc", []))
        b = bytearray(h)
        b[4:6] = struct.pack("!H", len(h) - 40 + 50)
        items.append((self.frame(bytes(b), E6, mac, pad=b""), "ip6_trunc", []))
        b = bytearray(h)
        b[0] = 0x40 | (b[0] & 15)
        items.append((self.frame(bytes(b), E6, mac, pad=b""), "ip6_malformed", ["ip4_malformed"]))
        b = bytearray(h)
        b[0] = 0x00
        items.append((self.frame(bytes(b), E6, mac, pad=b""), "ip6_malformed", []))
        # extension header cut: HBH with length 3 (32 bytes) but only 8 bytes present
        he = bytes(IPv6(src=f6["client"], dst="2001:db8::10", nh=0, plen=8)) + b"\x06\x03" + b"\x01\x04\0\0\0\0"
        items.append((self.frame(he, E6, mac, pad=b""), "ip6_trunc", []))
        # extension header present but payload stops after the fixed header
        he = bytes(IPv6(src=f6["client"], dst="2001:db8::10", nh=60, plen=0))
        items.append((self.frame(he, E6, mac, pad=b""), "ip6_trunc", []))
        # L4 cut (IPv6)
        b = bytearray(h[:50])
        b[4:6] = struct.pack("!H", 10)
        items.append((self.frame(bytes(b), E6, mac, pad=b""), "l4_trunc", []))
        hu = good(u6)
        b = bytearray(hu[:44])
        b[4:6] = struct.pack("!H", 4)
        items.append((self.frame(bytes(b), E6, mac, pad=b""), "l4_trunc", []))
        b = bytearray(h)
        b[40 + 12] = (3 << 4)
        items.append((self.frame(bytes(b), E6, mac, pad=b""), "l4_trunc", ["ip6_malformed"]))
        # garbage: IP ethertypes with an impossible version nibble, random ethertype
        for i in range(4):
            gb = bytes([0x90 | r.randrange(16)]) + r.randbytes(r.randrange(19, 80))
            items.append((self.frame(gb, E4, mac, pad=b""), "ip4_malformed", []))
            gb = bytes([0xF0 | r.randrange(16)]) + r.randbytes(r.randrange(39, 80))
            items.append((self.frame(gb, E6, mac, pad=b""), "ip6_malformed", []))
            et = r.choice([0x1234, 0x88B5, 0x4321, 0xABCD])
            items.append((self.frame(r.randbytes(60), et, mac, pad=b""), "no_vip", []))
        for fr, reason, alt in items:
            self.emit(r.random(), fr, {"kind": "malformed", "verdict": "drop", "reason": reason, "alt": alt})

    # ---------------------------------------------------------------- main
    def run(self, outdir):
        s = self.scale
        self.vip_flows(0, int(1200 * s))
        self.vip_flows(1, int(200 * s))
        self.vip_flows(2, int(800 * s))
        self.vip_flows(3, int(700 * s))
        self.vip_flows(4, int(700 * s))
        src5 = [self.rand_client(False) for _ in range(max(20, int(160 * s)))]
        self.vip_flows(5, int(640 * s), sources=src5)
        src6 = [self.rand_client(False) for _ in range(max(20, int(100 * s)))]
        self.vip_flows(6, int(600 * s), sources=src6, dports=[22, 80, 8443])
        self.vip_flows(7, max(10, int(50 * s)))
        self.vip_flows(8, int(200 * s))
        self.vip_flows(9, int(300 * s))
        self.fragments()
        self.big_fragments()
        self.icmp_errors()
        self.oversize()
        self.novip()
        self.macs()
        self.malformed()
        if self.rules:
            self.icmp_rules()
        if self.pmtu_on:
            self.pmtu()

        self.events.sort(key=lambda e: (e[0], e[1]))
        os.makedirs(outdir, exist_ok=True)
        manifest = []
        seen = {}
        frames = []
        for i, (_, _, fr, e) in enumerate(self.events):
            e = dict(e, i=i)
            ip = lbpcap.ip_packet_of(fr)
            if ip is not None:
                if ip in seen:
                    raise SystemExit("generator bug: packets %d and %d have identical IP bytes" % (seen[ip], i))
                seen[ip] = i
            manifest.append(e)
            frames.append(fr)
        lbpcap.write_pcap(os.path.join(outdir, "in.pcap"), frames)
        with open(os.path.join(outdir, "config.json"), "w") as f:
            json.dump(self.cfg, f, indent=1)
        with open(os.path.join(outdir, "manifest.json"), "w") as f:
            json.dump({"seed_scale": self.scale, "lb_mac": LB_MAC, "packets": manifest}, f, separators=(",", ":"))
        kinds = {}
        for e in manifest:
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        print("gen_pcap: %d frames, %d flows -> %s (%s)" % (
            len(manifest), len(self.flows), outdir,
            ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))



# ------------------------------------------------------------ TCP flow state
# Live replays (--flowstate CASE): in.pcap is fed to spillwayd through a FIFO by
# pcap_feed.py in segments, with a membership change over the control socket
# between them, so the order of packets and the change is known. net_pcap does
# not honour pcap timestamps; a pause is a lower bound on elapsed time made by
# feeding bursts of filler frames (to another host's MAC: dropped not_our_mac)
# one every FILL_GAP seconds, which also keeps the worker polling (no stall,
# the new snapshot picked up before the next segment).
FS_VIP = 0                    # 192.0.2.10:80 TCP, 5-tuple, IPIP
FS_NEW = {"address": "10.1.0.5", "weight": 4}
FS_BURST = 32                 # rte_eth_rx_burst's size: segments end on a burst
FILL_GAP = 0.02


def flowstate(outdir, case, seed):
    r = random.Random(seed)
    cfg = make_config("icmp")
    fl = cfg["flows"]
    if case == "flood":
        fl["capacity"] = 64
    elif case == "life":
        fl.update(syn_idle_ms=100, closing_idle_ms=100)
    elif case == "rate":
        fl.update(new_flow_rate=1, new_flow_burst=8)
    vip = cfg["vips"][FS_VIP]
    mg = cfg["maglev"]
    key = maglev_ref.lbhash.key_from_seed(mg["seed"])
    old_t = maglev_ref.vip_table(mg["seed"], mg["table_size"], vip["backends"])
    new_t = maglev_ref.vip_table(mg["seed"], mg["table_size"], vip["backends"] + [FS_NEW])
    used = set()
    seq = [0]

    def choice(t, c, p):
        return ip_norm(maglev_ref.backend_for(t, key, c, vip["address"], p, vip["port"], 6))

    def tuple_(moved):
        """A new client 5-tuple; moved: one whose Maglev backend the change moves."""
        while True:
            c = str(ipaddress.IPv4Address((198 << 24) | (51 << 16) | r.getrandbits(16)))
            p = r.randrange(1024, 65536)
            if (c, p) in used:
                continue
            o, n = choice(old_t, c, p), choice(new_t, c, p)
            if moved is None or (o != n) == moved:
                used.add((c, p))
                return {"c": c, "p": p, "old": o, "new": n}

    def pkt(f, flags, role, want):
        seq[0] += 1
        ip = lbpcap.l4_packet(f["c"], vip["address"], 6, f["p"], vip["port"],
                              b"SPW%08d|" % seq[0], tcp_flags=flags)
        return (lbpcap.eth_frame(ip, "02:00:00:00:01:01", LB_MAC),
                {"kind": "flowstate", "role": role, "flags": flags, "vip": FS_VIP, "want": want,
                 "verdict": "forward", "tuple": [f["c"], f["p"]]})

    def fillers(n):
        out = []
        for _ in range(n):
            seq[0] += 1
            ip = lbpcap.l4_packet("198.18.0.1", vip["address"], 17, 9, 9, b"SPW%08d|" % seq[0])
            out.append((lbpcap.eth_frame(ip, "02:00:00:00:01:02", "02:00:00:00:00:aa"),
                        {"kind": "filler", "verdict": "drop", "reason": "not_our_mac"}))
        return out

    a, b, expect = [], [], {}
    if case == "flood":
        # established flows (SYN, then a segment of the handshake's ACK) in a
        # 64-entry table, then 400 SYNs of new 5-tuples; after the change the
        # established flows stay on their old backend, new flows take the new one
        est = [tuple_(True) for _ in range(12)]
        a += [pkt(f, "S", "est-syn", f["old"]) for f in est]
        a += [pkt(f, "A", "est-ack", f["old"]) for f in est]
        for _ in range(400):
            f = tuple_(None)
            a.append(pkt(f, "S", "flood", f["old"]))
        b += [pkt(f, "PA", "est-after", f["old"]) for f in est]
        b += [pkt(f, "S", "new-after", f["new"]) for f in (tuple_(True) for _ in range(8))]
        # 412 entries made into at most 64 ways, the 12 established never
        # replaced: at least 400 - 52 floods replaced another new entry or
        # (their bucket all established) were sent without one
        expect = {"flow_rate_limited": 0, "min_evictions_unpinned": 400 - (64 - 12)}
    elif case == "life":
        # after the pause (> syn_idle_ms, closing_idle_ms), a new SYN of a flow
        # that was closed by FIN or RST, or never confirmed, is chosen anew;
        # an established flow keeps its backend (tcp_idle_ms is 300 s)
        roles = {"est": ["S", "A"], "fin": ["S", "A", "FA"], "rst": ["S", "A", "R"],
                 "rstack": ["S", "A", "RA"], "syn": ["S"], "syn2": ["S", "S"]}
        fs = {k: [tuple_(True) for _ in range(6)] for k in roles}
        for k, flags in roles.items():
            for fl_ in flags:
                a += [pkt(f, fl_, k, f["old"]) for f in fs[k]]
        for k in roles:
            fl_ = "PA" if k == "est" else "S"
            b += [pkt(f, fl_, k + "-after", f["old"] if k == "est" else f["new"]) for f in fs[k]]
        expect = {"flow_rate_limited": 0, "flow_unpinned": 0, "flow_evictions": 0}
    elif case == "rate":
        # 40 new flows at once, a guard of burst 8 at 1/s: the first 8 get an
        # entry, the other 32 are sent by Maglev without one (flow_rate_limited);
        # after the change the 8 stay, the 32 follow the new table
        ff = [tuple_(True) for _ in range(40)]
        a += [pkt(f, "S", "rate-syn", f["old"]) for f in ff]
        b += [pkt(f, "A", "pinned" if k < 8 else "unpinned", f["old"] if k < 8 else f["new"])
              for k, f in enumerate(ff)]
        expect = {"phase1_flow_rate_limited": 32, "flow_rate_limited_min": 32, "flow_rate_limited_max": 64,
                  "flow_unpinned": 0}
    # every segment ends on a burst: rte_eth_rx_burst on a FIFO returns a full one
    a += fillers(-len(a) % FS_BURST)
    b += fillers(-len(b) % FS_BURST)
    pause = 30 if case == "life" else 10
    wait = fillers(pause * FS_BURST)
    frames = a + wait + b
    os.makedirs(outdir, exist_ok=True)
    man = []
    for i, (_, e) in enumerate(frames):
        man.append(dict(e, i=i))
    lbpcap.write_pcap(os.path.join(outdir, "in.pcap"), [fr for fr, _ in frames])
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    plan = {"segments": [
        {"end": len(a), "then": "change"},
        {"end": len(a) + len(wait), "burst": FS_BURST, "gap": FILL_GAP},
        {"end": len(frames)}],
        "change": {"method": "backend_add", "params": {
            "vip": {"address": vip["address"], "port": vip["port"], "protocol": vip["protocol"]},
            "address": FS_NEW["address"], "weight": FS_NEW["weight"]}}}
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump({"lb_mac": LB_MAC, "flowstate": case, "expect": expect, "plan": plan,
                   "new_backend": FS_NEW, "packets": man}, f, separators=(",", ":"))
    print("gen_pcap: flowstate %s: %d frames (%d, then %d fillers, then %d)" % (
        case, len(frames), len(a), len(wait), len(b)))


# ------------------------------------------------------------ per_packet spray
# A live replay (--spray): a UDP 5-tuple of a per_packet VIP (IPv4 and IPv6,
# 4 backends each, key 5tuple) before, while and after an operator's hot_pin
# with r = 4. Segment A and C: a few packets of the 5-tuple among single
# packets of other 5-tuples (its share stays under hot.threshold 0.6 in any
# window, so the controller never promotes it itself); between them, after
# hot_pin, segment B: the 5-tuple only, unfragmented datagrams and datagrams
# in 3 fragments with distinct IP IDs, some in the order first, third, second.
# After hot_unpin the feeder waits (fillers) until hot_list shows no override
# of these VIPs (an idle VIP demotes after hot.demote_windows 1), then C.
SP_VIPS = [
    {"address": "192.0.2.70", "port": 5000, "protocol": "udp", "key": "5tuple", "encap": "ipip",
     "hot_mode": "per_packet",
     "backends": [{"address": "10.10.0.%d" % i, "weight": 1} for i in range(1, 5)]},
    {"address": "2001:db8::70", "port": 5000, "protocol": "udp", "key": "5tuple", "encap": "ipip",
     "hot_mode": "per_packet",
     "backends": [{"address": "fd10::%d" % i, "weight": 1} for i in range(1, 5)]},
]
SP_KEYS = [("198.51.100.77", 40077), ("2001:db8:77::7", 40077)]
# (unfragmented before the fragments, fragmented datagrams, unfragmented after)
SP_COUNTS = [(32, 64, 32), (32, 32, 32)]


def spray(outdir, seed):
    r = random.Random(seed)
    cfg = make_config("icmp")
    cfg["hot"] = {"threshold": 0.6, "demote_windows": 1}
    base = len(cfg["vips"])
    cfg["vips"] += [dict(v) for v in SP_VIPS]
    mg = cfg["maglev"]
    key = maglev_ref.lbhash.key_from_seed(mg["seed"])
    tables = [maglev_ref.vip_table(mg["seed"], mg["table_size"], v["backends"]) for v in SP_VIPS]
    seq = [0]
    ids = [r.sample(range(1, 1 << 16), 200), r.sample(range(1, 1 << 32), 200)]

    def home(fam, c, p):
        v = SP_VIPS[fam]
        return ip_norm(maglev_ref.backend_for(tables[fam], key, c, v["address"], p, v["port"], 17))

    def eth(ip, v6):
        return lbpcap.eth_frame(ip, "02:00:00:00:01:01", LB_MAC,
                                ethertype=lbpcap.ETH_P_IPV6 if v6 else lbpcap.ETH_P_IP)

    def pkt(fam, c, p, role, want=None):
        seq[0] += 1
        v = SP_VIPS[fam]
        ip = lbpcap.l4_packet(c, v["address"], 17, p, v["port"], b"SPW%08d|" % seq[0] + b"u" * 60)
        e = {"kind": "spray", "role": role, "fam": fam, "vip": base + fam, "verdict": "forward",
             "tuple": [c, p]}
        if want:
            e["want"] = want
        return eth(ip, fam == 1), e

    def datagram(fam, n, order):
        """Datagram n of the 5-tuple in 3 fragments, fed in order (indices)."""
        seq[0] += 1
        v = SP_VIPS[fam]
        c, p = SP_KEYS[fam]
        pl = b"SPW%08d|" % seq[0] + bytes(r.getrandbits(8) for _ in range(870))
        if fam == 0:
            d = IP(src=c, dst=v["address"], id=ids[0][n]) / UDP(sport=p, dport=v["port"]) / Raw(pl)
            frags = [bytes(f) for f in fragment(d, fragsize=320)]
        else:
            d = IPv6(src=c, dst=v["address"]) / IPv6ExtHdrFragment(id=ids[1][n]) / \
                UDP(sport=p, dport=v["port"]) / Raw(pl)
            frags = [bytes(f) for f in fragment6(d, 376)]
        assert len(frags) == 3, len(frags)
        return [(eth(frags[k], fam == 1),
                 {"kind": "spray", "role": "frag", "fam": fam, "vip": base + fam, "verdict": "forward",
                  "datagram": "%d.%d" % (fam, n), "ipid": ids[fam][n], "frag": k, "tuple": [c, p]})
                for k in order]

    def mixed(role, n_bg, n_key):
        """n_key packets of each family's 5-tuple, spaced among n_bg single
        packets of fresh 5-tuples (Maglev home each)."""
        out = []
        for fam in (0, 1):
            c, p = SP_KEYS[fam]
            every = n_bg // n_key
            for k in range(n_bg):
                while True:
                    bc = str(ipaddress.ip_address(c) + 1 + r.getrandbits(12))
                    bp = r.randrange(1024, 65536)
                    if (bc, bp) != (c, p):
                        break
                out.append(pkt(fam, bc, bp, "bg-" + role, home(fam, bc, bp)))
                if k % every == every - 1 and sum(1 for _, e in out if e["role"] == role and
                                                  e["fam"] == fam) < n_key:
                    out.append(pkt(fam, c, p, role, home(fam, c, p)))
        return out

    a = mixed("before", 29, 3)
    b = []
    for fam in (0, 1):
        b += [pkt(fam, *SP_KEYS[fam], "early") for _ in range(SP_COUNTS[fam][0])]
    orders = [[0, 1, 2], [0, 2, 1]]
    nf = [SP_COUNTS[0][1], SP_COUNTS[1][1]]
    for n in range(max(nf)):
        for fam in (0, 1):
            if n < nf[fam]:
                b += datagram(fam, n, orders[n % 4 == 1])
    for fam in (0, 1):
        b += [pkt(fam, *SP_KEYS[fam], "late") for _ in range(SP_COUNTS[fam][2])]
    c_ = mixed("after", 29, 3)

    def fillers(n):
        out = []
        for _ in range(n):
            seq[0] += 1
            ip = lbpcap.l4_packet("198.18.0.1", "192.0.2.70", 17, 9, 9, b"SPW%08d|" % seq[0])
            out.append((lbpcap.eth_frame(ip, "02:00:00:00:01:02", "02:00:00:00:00:aa"),
                        {"kind": "filler", "verdict": "drop", "reason": "not_our_mac"}))
        return out

    a += fillers(-len(a) % FS_BURST)
    b += fillers(-len(b) % FS_BURST)
    c_ += fillers(-len(c_) % FS_BURST)
    # after each change: bursts of fillers, so the worker is at the new
    # snapshot before the next segment
    p1, p2, p3 = fillers(4 * FS_BURST), fillers(4 * FS_BURST), fillers(4 * FS_BURST)
    frames = a + p1 + b + p2 + p3 + c_
    refs = [{"address": v["address"], "port": v["port"], "protocol": "udp"} for v in SP_VIPS]
    keys = [{"src": c, "sport": p} for c, p in SP_KEYS]
    ends = [len(a)]
    for seg in (p1, b, p2, p3, c_):
        ends.append(ends[-1] + len(seg))
    plan = {"segments": [
        {"end": ends[0], "then": [{"method": "hot_pin", "params": {"vip": refs[f], "key": keys[f],
                                                                   "replicas": 4}} for f in (0, 1)]},
        {"end": ends[1], "burst": FS_BURST, "gap": FILL_GAP},
        {"end": ends[2], "then": [{"method": "hot_unpin", "params": {"vip": refs[f], "key": keys[f]}}
                                  for f in (0, 1)]},
        {"end": ends[3], "burst": FS_BURST, "gap": FILL_GAP, "until_no_override": refs},
        {"end": ends[4], "burst": FS_BURST, "gap": FILL_GAP},
        {"end": ends[5]}]}
    os.makedirs(outdir, exist_ok=True)
    man = [dict(e, i=i) for i, (_, e) in enumerate(frames)]
    lbpcap.write_pcap(os.path.join(outdir, "in.pcap"), [fr for fr, _ in frames])
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump({"lb_mac": LB_MAC, "spray": {"vips": [base, base + 1], "keys": SP_KEYS,
                                               "counts": SP_COUNTS, "replicas": 4},
                   "plan": plan, "packets": man}, f, separators=(",", ":"))
    print("gen_pcap: spray: %d frames (A %d, B %d, C %d, fillers between)" % (
        len(frames), len(a), len(b), len(c_)))


def write_bad_configs(outdir):
    """Invalid variants of the test config, each with the field path the daemon's
    one-line "path: reason" message must name. Writes OUTDIR/NAME.json and
    OUTDIR/expect.tsv (NAME <tab> path substring), plus an empty empty.pcap."""
    import copy
    base = make_config("icmp")
    cases = []

    def case(name, fn, path):
        c = copy.deepcopy(base)
        fn(c)
        cases.append((name, c, path))

    def setp(obj, keys, val):
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = val

    case("unknown_field", lambda c: setp(c, ["vips", 1, "backends", 0, "colour"], "blue"),
         "vips[1].backends[0]")
    case("unknown_top", lambda c: setp(c, ["bogus"], 1), "bogus")
    case("unknown_encap_field", lambda c: setp(c, ["encap", "mtu_v6"], 1280), "encap")
    case("wrong_type_mtu", lambda c: setp(c, ["encap", "mtu"], "1500"), "encap.mtu")
    case("wrong_type_port", lambda c: setp(c, ["vips", 2, "port"], "0"), "vips[2].port")
    case("wrong_type_vips", lambda c: setp(c, ["vips"], {}), "vips")
    case("bad_address", lambda c: setp(c, ["vips", 0, "backends", 1, "address"], "10.1.0.x"),
         "vips[0].backends[1].address")
    case("bad_vip_address", lambda c: setp(c, ["vips", 3, "address"], "2001:db8::zz"), "vips[3].address")
    case("bad_source_v4", lambda c: setp(c, ["encap", "source_v4"], "fd00::1"), "encap.source_v4")
    case("bad_mac", lambda c: setp(c, ["encap", "next_hop_mac"], "02:00:00:00:00"), "encap.next_hop_mac")
    case("bad_key_mode", lambda c: setp(c, ["vips", 5, "key"], "dst_ip"), "vips[5].key")
    case("bad_state", lambda c: setp(c, ["vips", 2, "backends", 0, "state"], "asleep"),
         "vips[2].backends[0].state")
    case("negative_weight", lambda c: setp(c, ["vips", 0, "backends", 2, "weight"], -1),
         "vips[0].backends[2].weight")
    case("port_range", lambda c: setp(c, ["vips", 0, "port"], 70000), "vips[0].port")
    case("dup_vip", lambda c: c["vips"].append(copy.deepcopy(c["vips"][0])), "vips[%d]" % len(base["vips"]))
    case("dup_backend", lambda c: c["vips"][0]["backends"].append({"address": "10.1.0.1", "weight": 3}),
         "vips[0].backends[4]")
    # flows.* and icmp.* (ranges from docs/operations.md's configuration table).
    case("syn_idle_zero", lambda c: c.setdefault("flows", {}).update(syn_idle_ms=0),
         "flows.syn_idle_ms")
    case("new_flow_burst_string", lambda c: c.setdefault("flows", {}).update(new_flow_burst="10"),
         "flows.new_flow_burst")
    case("flows_unknown", lambda c: c.setdefault("flows", {}).update(rate=5), "flows.rate")
    case("icmp_rate_zero", lambda c: c.setdefault("icmp", {}).update(rate_per_sec=0),
         "icmp.rate_per_sec")
    case("icmp_burst_range", lambda c: c.setdefault("icmp", {}).update(burst=1000001),
         "icmp.burst")
    case("table_not_prime", lambda c: setp(c, ["maglev", "table_size"], 65536), "maglev.table_size")
    case("table_too_big", lambda c: setp(c, ["maglev", "table_size"], 2000003), "maglev.table_size")
    case("vlan_id_range", lambda c: setp(c, ["encap", "vlan"], 4095), "encap.vlan")
    case("vlan_policy", lambda c: setp(c, ["encap", "vlan"], "trunk"), "encap.vlan")
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "expect.tsv"), "w") as tsv:
        for name, c, path in cases:
            with open(os.path.join(outdir, name + ".json"), "w") as f:
                json.dump(c, f, indent=1)
            tsv.write("%s\t%s\n" % (name, path))
        with open(os.path.join(outdir, "not_json.json"), "w") as f:
            f.write('{"encap": {"mtu": 1500,}\n')
        tsv.write("not_json\tnot_json.json\n")
    lbpcap.write_pcap(os.path.join(outdir, "empty.pcap"), [])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplier on the number of flows")
    ap.add_argument("--too-big", choices=["icmp", "drop"], default="icmp")
    ap.add_argument("--flow-capacity", type=int, default=262144,
                    help="flows.capacity; the table is 4-way set-associative, so keep it well above "
                         "the number of flows unless evictions are wanted")
    ap.add_argument("--no-jumbo", action="store_true",
                    help="no oversize frames above 2 KiB (multi-segment mbufs)")
    ap.add_argument("--icmp-rules", action="store_true",
                    help="a small ICMP bucket, a run of oversized packets, oversized ICMP errors, "
                         "martian sources")
    ap.add_argument("--mtu", type=int, default=MTU, help="encap.mtu (below 1328: the IPv6 tunnel "
                    "MTU is under 1280, RFC 2473 §7.1 cases are added)")
    ap.add_argument("--vlan", help="encap.vlan: strip, keep or a VLAN id (default: not set, strip)")
    ap.add_argument("--pmtu", action="store_true",
                    help="MTU errors about our outer packets to backends (and forged ones), then "
                         "oversized packets of flows to those backends")
    ap.add_argument("--flowstate", choices=["flood", "life", "rate"],
                    help="a live replay of the TCP-aware flow state (fed by pcap_feed.py)")
    ap.add_argument("--spray", action="store_true",
                    help="a live replay of a per_packet UDP VIP's hot 5-tuple around hot_pin / "
                         "hot_unpin, fragments included (fed by pcap_feed.py)")
    ap.add_argument("--bad-configs", action="store_true",
                    help="write invalid configs + expect.tsv into OUTDIR instead")
    a = ap.parse_args()
    if a.bad_configs:
        write_bad_configs(a.outdir)
    elif a.flowstate:
        flowstate(a.outdir, a.flowstate, a.seed)
    elif a.spray:
        spray(a.outdir, a.seed)
    else:
        Gen(a.seed, a.scale, a.too_big, a.flow_capacity, not a.no_jumbo, a.icmp_rules, a.mtu,
            a.vlan, a.pmtu).run(a.outdir)


if __name__ == "__main__":
    main()
