# SPDX-License-Identifier: BSD-3-Clause
"""Shared helpers for spillway's pcap tooling (integration test and demo).

Independent of the daemon's code: everything here is written from the
documented contract (DESIGN.md and the spillwayd command-line/config contract),
with scapy and the standard library only. Use /usr/bin/python3 (scapy).

Contents: config helpers (VIP lookup, usable backends, expected shares), flow
packet builders, and decode_output(), which takes one frame the balancer sent
and says what it is (encapsulated packet or ICMP too-big reply) plus every
header fact the checkers need.
"""

import ipaddress
import math
import socket
import struct

from scapy.layers.inet import IP, TCP, UDP  # noqa: F401  (re-exported for callers)
from scapy.layers.inet6 import IPv6  # noqa: F401

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
ETH_P_QINQ_OLD = 0x9100
VLAN_TYPES = (ETH_P_8021Q, ETH_P_8021AD, ETH_P_QINQ_OLD)

PROTO_NUM = {"tcp": 6, "udp": 17}
DEFAULT_GUE_PORT = 6080


# --------------------------------------------------------------------------- config

def ip_norm(a):
    """Canonical text form of an IPv4/IPv6 address."""
    return str(ipaddress.ip_address(a))


def ip_version(a):
    return ipaddress.ip_address(a).version


def usable_backends(vip):
    """Backends that may receive new flows: active and weight > 0."""
    return [b for b in vip["backends"]
            if b.get("state", "active") == "active" and b.get("weight", 1) > 0]


def expected_shares(vip):
    """{backend address: w / W} over the usable backends."""
    ub = usable_backends(vip)
    total = sum(b.get("weight", 1) for b in ub)
    return {ip_norm(b["address"]): b.get("weight", 1) / total for b in ub} if total else {}


def vip_label(vip):
    a = vip["address"]
    if ip_version(a) == 6:
        a = "[%s]" % a
    return "%s:%d/%s" % (a, vip["port"], vip["protocol"])


def find_vip(cfg, dst, proto, dport, fragment=False):
    """Index of the VIP a packet to (dst, proto, dport) belongs to, or None.

    Exact (address, port, protocol) first, else the address's port-0 VIP. For
    fragments (no ports): the port-0 VIP, else the same-address same-protocol
    VIP with the lowest port.
    """
    dst = ip_norm(dst)
    cands = [(i, v) for i, v in enumerate(cfg["vips"])
             if ip_norm(v["address"]) == dst and PROTO_NUM[v["protocol"]] == proto]
    if not cands:
        return None
    if fragment:
        for i, v in cands:
            if v["port"] == 0:
                return i
        return min(cands, key=lambda iv: iv[1]["port"])[0]
    for i, v in cands:
        if v["port"] == dport:
            return i
    for i, v in cands:
        if v["port"] == 0:
            return i
    return None


def encap_overhead(vip, backend_addr):
    oh = 20 if ip_version(backend_addr) == 4 else 40
    if vip.get("encap", "ipip") == "gue":
        oh += 8
    return oh


# --------------------------------------------------------------------------- checksums

def inet_cksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def l4_cksum_ok(version, src, dst, proto, seg):
    """True if the TCP/UDP/ICMPv6 checksum embedded in seg verifies."""
    if version == 4:
        ph = src + dst + struct.pack("!BBH", 0, proto, len(seg))
    else:
        ph = src + dst + struct.pack("!IxxxB", len(seg), proto)
    return inet_cksum(ph + seg) == 0


# --------------------------------------------------------------------------- frames

def strip_l2(frame):
    """(list of VLAN TCIs, ethertype, offset of L3) for an Ethernet frame, or None."""
    if len(frame) < 14:
        return None
    et = struct.unpack_from("!H", frame, 12)[0]
    off = 14
    tags = []
    while et in VLAN_TYPES:
        if len(frame) < off + 4:
            return None
        tags.append(struct.unpack_from("!H", frame, off)[0])
        et = struct.unpack_from("!H", frame, off + 2)[0]
        off += 4
    return tags, et, off


def ip_packet_of(frame):
    """The IP packet carried by an input frame, exactly its own length (no
    Ethernet padding), or None if the frame is not a well-formed IP frame."""
    l2 = strip_l2(frame)
    if not l2:
        return None
    _, et, off = l2
    p = frame[off:]
    if et == ETH_P_IP and len(p) >= 20 and p[0] >> 4 == 4:
        tl = struct.unpack_from("!H", p, 2)[0]
        if (p[0] & 15) * 4 <= tl <= len(p):
            return p[:tl]
    if et == ETH_P_IPV6 and len(p) >= 40 and p[0] >> 4 == 6:
        tl = 40 + struct.unpack_from("!H", p, 4)[0]
        if tl <= len(p):
            return p[:tl]
    return None


def ip_tos(ip):
    """DSCP+ECN byte of a raw IPv4/IPv6 packet."""
    if ip[0] >> 4 == 4:
        return ip[1]
    return ((ip[0] & 15) << 4) | (ip[1] >> 4)


class Decoded:
    """What one output frame is. kind: 'encap' | 'icmp4' | 'icmp6' | 'other'.
    errors: list of contract violations found in the headers themselves."""

    def __init__(self):
        self.kind = "other"
        self.errors = []
        self.eth_dst = self.eth_src = None
        self.vlan = []
        self.outer_version = None
        self.outer_src = self.outer_dst = None
        self.outer_proto = None
        self.ttl = None
        self.tos = None
        self.gue = False
        self.udp_sport = self.udp_dport = None
        self.udp_cksum = None
        self.inner = None          # encap: the inner IP packet bytes
        self.icmp_type = self.icmp_code = None
        self.icmp_mtu = None
        self.quoted = None         # icmp: the quoted bytes
        self.ip = None             # the outer IP packet bytes


def decode_output(frame, gue_port=DEFAULT_GUE_PORT):
    d = Decoded()
    l2 = strip_l2(frame)
    if not l2:
        d.errors.append("frame shorter than an Ethernet header")
        return d
    d.vlan, et, off = l2
    d.eth_dst = ":".join("%02x" % b for b in frame[0:6])
    d.eth_src = ":".join("%02x" % b for b in frame[6:12])
    p = frame[off:]
    if et == ETH_P_IP:
        if len(p) < 20 or p[0] >> 4 != 4:
            d.errors.append("ethertype IPv4 but no IPv4 header")
            return d
        ihl = (p[0] & 15) * 4
        tl = struct.unpack_from("!H", p, 2)[0]
        if ihl != 20:
            d.errors.append("outer IPv4 IHL %d, expected 5 (no options)" % (ihl // 4))
        if tl != len(p):
            d.errors.append("outer IPv4 total length %d != frame payload %d" % (tl, len(p)))
            if tl > len(p) or tl < ihl:
                return d
        p = p[:tl]
        d.ip = p
        if inet_cksum(p[:ihl]) != 0:
            d.errors.append("outer IPv4 header checksum wrong (0x%04x)" %
                            struct.unpack_from("!H", p, 10)[0])
        d.outer_version = 4
        d.tos = p[1]
        d.ttl = p[8]
        d.outer_proto = p[9]
        d.df = bool(p[6] & 0x40)
        d.frag = struct.unpack_from("!H", p, 6)[0] & 0x3FFF
        d.outer_src = ip_norm(p[12:16])
        d.outer_dst = ip_norm(p[16:20])
        srcb, dstb = p[12:16], p[16:20]
        l4 = p[ihl:]
    elif et == ETH_P_IPV6:
        if len(p) < 40 or p[0] >> 4 != 6:
            d.errors.append("ethertype IPv6 but no IPv6 header")
            return d
        pl = struct.unpack_from("!H", p, 4)[0]
        if 40 + pl != len(p):
            d.errors.append("outer IPv6 payload length %d != frame payload %d" % (pl, len(p) - 40))
            if 40 + pl > len(p):
                return d
        p = p[:40 + pl]
        d.ip = p
        d.outer_version = 6
        d.tos = ip_tos(p)
        d.ttl = p[7]
        d.outer_proto = p[6]
        d.df = True
        d.frag = 0
        d.outer_src = ip_norm(p[8:24])
        d.outer_dst = ip_norm(p[24:40])
        srcb, dstb = p[8:24], p[24:40]
        l4 = p[40:]
    else:
        d.errors.append("output ethertype 0x%04x is not IP" % et)
        return d

    proto = d.outer_proto
    if proto in (4, 41):
        d.kind = "encap"
        d.inner = l4
    elif proto == 17:
        if len(l4) < 8:
            d.errors.append("outer UDP header cut")
            return d
        d.udp_sport, d.udp_dport, ulen, d.udp_cksum = struct.unpack_from("!HHHH", l4)
        if d.udp_dport != gue_port:
            d.errors.append("GUE UDP dport %d != gue_port %d" % (d.udp_dport, gue_port))
        if ulen != len(l4):
            d.errors.append("UDP length %d != %d" % (ulen, len(l4)))
        if d.udp_cksum == 0:
            if d.outer_version == 6:
                d.errors.append("UDP checksum 0 over IPv6")
        elif not l4_cksum_ok(d.outer_version, srcb, dstb, 17, l4):
            d.errors.append("GUE UDP checksum 0x%04x wrong" % d.udp_cksum)
        d.kind = "encap"
        d.gue = True
        d.inner = l4[8:]
    elif proto == 1 and d.outer_version == 4:
        d.kind = "icmp4"
        if len(l4) < 8:
            d.errors.append("ICMP header cut")
            return d
        if inet_cksum(l4) != 0:
            d.errors.append("ICMP checksum wrong")
        d.icmp_type, d.icmp_code = l4[0], l4[1]
        d.icmp_unused = struct.unpack_from("!H", l4, 4)[0]
        d.icmp_mtu = struct.unpack_from("!H", l4, 6)[0]
        d.quoted = l4[8:]
    elif proto == 58 and d.outer_version == 6:
        d.kind = "icmp6"
        if len(l4) < 8:
            d.errors.append("ICMPv6 header cut")
            return d
        if not l4_cksum_ok(6, srcb, dstb, 58, l4):
            d.errors.append("ICMPv6 checksum wrong")
        d.icmp_type, d.icmp_code = l4[0], l4[1]
        d.icmp_mtu = struct.unpack_from("!I", l4, 4)[0]
        d.quoted = l4[8:]
    else:
        d.errors.append("outer protocol %d is neither IPIP/IPv6, UDP (GUE) nor ICMP" % proto)
    return d


# --------------------------------------------------------------------------- statistics

def chi2_sf(x, k):
    """P(X >= x) for X ~ chi-square with k degrees of freedom (regularized upper
    incomplete gamma Q(k/2, x/2); series / continued fraction, Numerical Recipes)."""
    if k <= 0:
        return 1.0
    a, x = k / 2.0, x / 2.0
    if x <= 0:
        return 1.0
    lg = math.lgamma(a)
    if x < a + 1:
        s = term = 1.0 / a
        n = a
        for _ in range(1000):
            n += 1
            term *= x / n
            s += term
            if abs(term) < abs(s) * 1e-15:
                break
        return max(0.0, 1.0 - s * math.exp(-x + a * math.log(x) - lg))
    b = x + 1 - a
    c = 1 / 1e-300
    d = 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - lg) * h


def spread_stats(counts, shares):
    """counts: {backend: n}, shares: {backend: p}. Returns (n, chi2, dof, p_value,
    {backend: z}) for the goodness of fit of counts to the expected shares."""
    n = sum(counts.get(b, 0) for b in shares)
    chi2 = 0.0
    zs = {}
    for b, p in shares.items():
        e = n * p
        o = counts.get(b, 0)
        if e > 0:
            chi2 += (o - e) ** 2 / e
            sd = math.sqrt(n * p * (1 - p)) if p < 1 else 1.0
            zs[b] = (o - e) / sd if sd > 0 else 0.0
    dof = max(len(shares) - 1, 0)
    return n, chi2, dof, chi2_sf(chi2, dof), zs


# --------------------------------------------------------------------------- building

def mac_bytes(mac):
    return bytes.fromhex(mac.replace(":", ""))


def eth_frame(ip, src_mac, dst_mac, tags=(), ethertype=None):
    """Ethernet frame (with VLAN tags: list of (tpid, vid)) around raw L3 bytes;
    ethertype from the IP version unless given."""
    if ethertype is None:
        ethertype = ETH_P_IPV6 if ip and ip[0] >> 4 == 6 else ETH_P_IP
    hdr = mac_bytes(dst_mac) + mac_bytes(src_mac)
    for tpid, vid in tags:
        hdr += struct.pack("!HH", tpid, vid)
    return hdr + struct.pack("!H", ethertype) + ip


def _csum(b):
    """RFC 1071 Internet checksum of b (zero-padded to an even length)."""
    if len(b) & 1:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


_TCP_FLAG_BITS = {c: 1 << i for i, c in enumerate("FSRPAUEC")}
# Every SCAPY_CHECK_EVERY-th packet built by struct is also built by scapy and
# must be byte-identical (the same bytes as before, and scapy stays the judge).
SCAPY_CHECK_EVERY = 32
_built = [0]


def _l4_struct(src, dst, proto, sport, dport, payload, tos, ttl, df, tcp_flags, seq, ack, ipid,
               flowlabel):
    """l4_packet without extension headers or options, by struct: the header
    fields scapy writes for the same arguments (TCP: data offset 5, window
    65535, urgent 0; UDP: a computed checksum of 0 sent as 0xFFFF; IPv4: IHL 5,
    fragment offset 0), RFC 1071 checksums over the RFC 793 / RFC 768 / RFC
    8200 pseudo-headers. None where scapy has to build it."""
    if not isinstance(payload, (bytes, bytearray)) or not isinstance(tcp_flags, str) or \
            any(c not in _TCP_FLAG_BITS for c in tcp_flags) or proto not in (6, 17):
        return None
    payload = bytes(payload)
    v6 = ":" in dst
    try:
        sa = socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, src)
        da = socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, dst)
    except OSError:
        return None
    if proto == 6:
        flags = sum(_TCP_FLAG_BITS[c] for c in set(tcp_flags))
        l4 = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    if v6:
        pseudo = sa + da + struct.pack("!IxxxB", len(l4), proto)
    else:
        pseudo = sa + da + struct.pack("!xBH", proto, len(l4))
    ck = _csum(pseudo + l4)
    if proto == 17 and ck == 0:
        ck = 0xFFFF
    l4 = l4[:16] + struct.pack("!H", ck) + l4[18:] if proto == 6 else \
        l4[:6] + struct.pack("!H", ck) + l4[8:]
    if v6:
        return struct.pack("!IHBB", (6 << 28) | (tos << 20) | flowlabel, len(l4), proto, ttl) + \
            sa + da + l4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(l4), ipid, 0x4000 if df else 0, ttl,
                      proto, 0, sa, da)
    return hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:] + l4


def l4_packet(src, dst, proto, sport, dport, payload, tos=0, ttl=64, df=True, tcp_flags="PA",
              seq=0, ack=0, ipid=0, flowlabel=0, ext=None, opts=None):
    """Raw bytes of an IPv4/IPv6 TCP or UDP packet (checksums filled in).
    ext: IPv6 extension header layers, opts: IPv4 options. Without them the
    bytes are packed by struct (scapy's layer objects cost most of the pcap
    generators' time), every SCAPY_CHECK_EVERY-th of them checked against
    scapy's build of the same packet; with them, scapy builds the packet."""
    if not ext and not opts:
        b = _l4_struct(src, dst, proto, sport, dport, payload, tos, ttl, df, tcp_flags, seq, ack,
                       ipid, flowlabel)
        if b is not None:
            _built[0] += 1
            if (_built[0] - 1) % SCAPY_CHECK_EVERY:  # the 1st, the 33rd, ... are checked
                return b
            ref = _l4_scapy(src, dst, proto, sport, dport, payload, tos, ttl, df, tcp_flags, seq,
                            ack, ipid, flowlabel, ext, opts)
            if b != ref:
                raise AssertionError("l4_packet: struct build differs from scapy's:\n %s\n %s"
                                     % (b.hex(), ref.hex()))
            return b
    return _l4_scapy(src, dst, proto, sport, dport, payload, tos, ttl, df, tcp_flags, seq, ack,
                     ipid, flowlabel, ext, opts)


def _l4_scapy(src, dst, proto, sport, dport, payload, tos, ttl, df, tcp_flags, seq, ack, ipid,
              flowlabel, ext, opts):
    from scapy.packet import Raw
    l4 = (TCP(sport=sport, dport=dport, flags=tcp_flags, seq=seq, ack=ack, window=65535)
          if proto == 6 else UDP(sport=sport, dport=dport))
    if ":" in dst:
        p = IPv6(src=src, dst=dst, tc=tos, hlim=ttl, fl=flowlabel)
        for h in ext or []:
            p = p / h
        p = p / l4 / Raw(payload)
    else:
        p = IP(src=src, dst=dst, tos=tos, ttl=ttl, flags="DF" if df else 0, id=ipid,
               options=opts or []) / l4 / Raw(payload)
    return bytes(p)


def write_pcap(path, frames, t0=1700000000.0, step=1e-5):
    from scapy.utils import RawPcapWriter
    w = RawPcapWriter(path, linktype=1, sync=False)
    w.write_header(None)
    for i, fr in enumerate(frames):
        t = t0 + i * step
        w.write_packet(fr, sec=int(t), usec=int(round((t % 1) * 1e6)) % 1000000)
    w.close()


def read_pcap(path):
    from scapy.utils import RawPcapReader
    import os
    if os.path.getsize(path) == 0:
        return []
    return [bytes(p) for p, _ in RawPcapReader(path)]


def flow_of(ip):
    """(src, dst, proto, sport, dport) of a raw IP packet; ports None for
    fragments and for anything that is not TCP/UDP. None if unparsable."""
    try:
        if ip[0] >> 4 == 4:
            ihl = (ip[0] & 15) * 4
            src, dst, proto = ip_norm(ip[12:16]), ip_norm(ip[16:20]), ip[9]
            if struct.unpack_from("!H", ip, 6)[0] & 0x3FFF:
                return src, dst, proto, None, None
            off = ihl
        else:
            src, dst, proto = ip_norm(ip[8:24]), ip_norm(ip[24:40]), ip[6]
            off = 40
            while proto in (0, 43, 60, 44):
                if proto == 44:
                    return src, dst, ip[off], None, None
                proto, off = ip[off], off + (ip[off + 1] + 1) * 8
        if proto in (6, 17) and len(ip) >= off + 4:
            sport, dport = struct.unpack_from("!HH", ip, off)
            return src, dst, proto, sport, dport
        return src, dst, proto, None, None
    except (IndexError, ValueError, struct.error):
        return None
