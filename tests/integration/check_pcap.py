#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Independent checker for the spillwayd pcap integration test.

Reads what gen_pcap.py wrote (in.pcap, config.json, manifest.json), the frames
spillwayd sent (out.pcap) and its final stats JSON, and checks every output
frame and every counter against the contract. Uses scapy's pcap reader and the
standard library only; nothing from the project's C code.

Usage: /usr/bin/python3 check_pcap.py DIR [--out OUT.pcap] [--stats STATS.json]
       [--exception EXC.pcap] [--fwd-out FWD.pcap --out-mac MAC] [-v]

The receiving port's MAC is the manifest's lb_mac: frames to any other MAC
must not be balanced (not_our_mac; group MACs go to the exception port when
there is one). Output VLAN tags must be the input's on ICMP replies, and on
encapsulated frames what encap.vlan says (none, the input's, or one 802.1Q tag).
Exit status 0 when everything holds, 1 with one line per violation otherwise.
"""

import argparse
import json
import os
import re
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lbpcap  # noqa: E402
import maglev_ref  # noqa: E402
from lbpcap import ip_norm, ip_version  # noqa: E402

DROP_REASONS = ["eth_trunc", "ip4_trunc", "ip4_malformed", "ip6_trunc", "ip6_malformed", "l4_trunc",
                "icmp_trunc", "icmp_malformed", "no_vip", "no_backend", "too_big", "no_headroom",
                "tx_full", "martian_src", "icmp_limited", "frag_failed", "not_our_mac"]
TOTAL_KEYS = ["rx_packets", "rx_bytes", "forwarded", "forwarded_bytes", "icmp_sent", "exception",
              "flow_hits", "flow_misses", "flow_evictions", "flow_rechosen", "fragments", "icmp_errors",
              "frag_tracked", "frag_followed", "frag_unmatched", "frag_evictions",
              "flow_unpinned", "flow_rate_limited", "fragmented_out", "fragments_out",
              "pmtu_learned", "pmtu_ignored", "hot_sprayed"]

# Spread tolerance. Maglev with M = 65537 slots gives each backend a table share
# within ~0.1% of w/W for these few backends, so what varies is sampling: with n
# hash keys (flows, or sources for src_ip VIPs) a backend of share p gets
# Binomial(n, p) of them, sd sqrt(n p (1-p)). A fixed relative bound such as 15%
# is ~2 sd for p = 1/8 and n = 1200 and would fail a perfect hash for some
# seeds; instead each backend's count must be within Z_MAX sd of n p (two-sided
# false-alarm rate ~7e-6 per backend) and the chi-square goodness of fit over
# the VIP must have p-value >= CHI2_MIN_P. Ignoring weights (VIP 0: 1:1:2:4 over
# 1200 flows) is ~13 sd off for the weight-4 backend, a missing or extra backend
# far more: both are caught. The relative bound each VIP gets is printed.
Z_MAX = 4.5
CHI2_MIN_P = 1e-4
SPREAD_MIN_UNITS = 100

# The per_packet spray case: each of its bounds fails a correct data path with
# at most this probability.
SPRAY_ALPHA = 1e-6


def binom_lower(n, p, alpha):
    """The largest k with P(Binomial(n, p) < k) <= alpha."""
    from math import comb
    cdf, k = 0.0, 0
    while k <= n:
        cdf += comb(n, k) * p ** k * (1 - p) ** (n - k)  # P(X <= k)
        if cdf > alpha:
            return k
        k += 1
    return n


def spread_lower(n, r, alpha):
    """Replicas that n independent uniform draws over r reach, at least, but
    with probability <= alpha (union bound: fewer than m means all n draws
    fell into some m - 1 of them, P <= C(r, m - 1) ((m - 1) / r)^n)."""
    from math import comb
    m = r
    while m > 1 and comb(r, m - 1) * ((m - 1) / r) ** n > alpha:
        m -= 1
    return m


# Frames between an MTU error and the packets it is judged to apply to: two
# bursts of 32 (a burst's oversize threshold is taken as it starts).
PMTU_SETTLE = 64

MARKER = re.compile(rb"SPW\d{8}\|")
VLAN_TPIDS = (0x8100, 0x88A8)


def wire_tags(frame):
    """The VLAN tags of a frame as on the wire: [(TPID, TCI)], outermost first."""
    tags, off = [], 12
    while len(frame) >= off + 4 and int.from_bytes(frame[off:off + 2], "big") in VLAN_TPIDS:
        tags.append((int.from_bytes(frame[off:off + 2], "big"), int.from_bytes(frame[off + 2:off + 4], "big")))
        off += 4
    return tags


def mac_str(b):
    return ":".join("%02x" % x for x in b)

IPV6_MIN_MTU = 1280  # RFC 8200 §5


def outer_fragment(frame):
    """(key, offset, more, payload, errors) if frame is an outer IPv4 fragment (MF or
    offset set) or an outer IPv6 packet with a fragment header (RFC 8200 §4.5), else None.
    key: (version, src, dst, protocol after the fragment header, identification)."""
    import struct
    l2 = lbpcap.strip_l2(frame)
    if not l2:
        return None
    _, et, l2len = l2
    p = frame[l2len:]
    errs = []
    if et == lbpcap.ETH_P_IP and len(p) >= 20 and p[0] == 0x45:
        fo = struct.unpack_from("!H", p, 6)[0]
        if not fo & 0x3FFF:
            return None
        tl = struct.unpack_from("!H", p, 2)[0]
        if tl != len(p):
            errs.append("outer IPv4 fragment total length %d != frame payload %d" % (tl, len(p)))
        if lbpcap.inet_cksum(p[:20]) != 0:
            errs.append("outer IPv4 fragment header checksum wrong")
        if fo & 0x4000:
            errs.append("outer IPv4 fragment with DF set")
        key = (4, p[12:16], p[16:20], p[9], struct.unpack_from("!H", p, 4)[0])
        return key, (fo & 0x1FFF) * 8, bool(fo & 0x2000), p[20:tl], errs, p[:20], len(p), l2len
    if et == lbpcap.ETH_P_IPV6 and len(p) >= 48 and p[0] >> 4 == 6 and p[6] == 44:
        pl = struct.unpack_from("!H", p, 4)[0]
        if 40 + pl != len(p):
            errs.append("outer IPv6 fragment payload length %d != frame payload %d" % (pl, len(p) - 40))
        fh = p[40:48]
        if fh[1] != 0 or struct.unpack_from("!H", fh, 2)[0] & 6:
            errs.append("outer IPv6 fragment header reserved bits set")
        off = struct.unpack_from("!H", fh, 2)[0]
        key = (6, p[8:24], p[24:40], fh[0], struct.unpack_from("!I", fh, 4)[0])
        return key, (off >> 3) * 8, bool(off & 1), p[48:40 + pl], errs, p[:40], len(p), l2len
    return None


def reassemble(frags, mtu):
    """RFC 791 §3.2 / RFC 8200 §4.5 reassembly of one datagram's outer fragments,
    [(out index, frame, parsed)], checking each fragment is at most mtu bytes, the
    offsets tile the payload from 0 with no gap or overlap, all but the last carry MF
    and a multiple of 8 bytes, and the headers agree. (frame of the whole outer packet
    as it was before fragmentation, errors)."""
    import struct
    errs = []
    frags = sorted(frags, key=lambda f: f[2][1])
    next_off = 0
    body = b""
    first = frags[0]
    v = first[2][0][0]
    l2len = first[2][7]
    for k, (j, fr, (key, off, more, pl, e, hdr, l3, _)) in enumerate(frags):
        errs += ["out#%d: %s" % (j, x) for x in e]
        if l3 > mtu:
            errs.append("out#%d: outer fragment of %d bytes over encap.mtu %d" % (j, l3, mtu))
        if off != next_off:
            errs.append("out#%d: fragment offset %d, expected %d (gap or overlap)" % (j, off, next_off))
        last = k == len(frags) - 1
        if more == last:
            errs.append("out#%d: MF/M %s on %s fragment" % (j, int(more), "the last" if last else "a non-last"))
        if not last and len(pl) % 8:
            errs.append("out#%d: non-last fragment of %d bytes (not a multiple of 8)" % (j, len(pl)))
        if fr[:l2len] != first[1][:l2len]:
            errs.append("out#%d: Ethernet header (and VLAN tags) differ from the first fragment's" % j)
        same = (hdr[1], hdr[8], hdr[9]) == (first[2][5][1], first[2][5][8], first[2][5][9]) if v == 4 else \
            hdr[:4] == first[2][5][:4] and hdr[7] == first[2][5][7]
        if not same:
            errs.append("out#%d: outer header fields differ from the first fragment's" % j)
        body += pl
        next_off = off + len(pl)
    h = bytearray(first[2][5])
    if v == 4:
        struct.pack_into("!HHH", h, 2, 20 + len(body), struct.unpack_from("!H", h, 4)[0], 0)
        h[10:12] = b"\0\0"
        struct.pack_into("!H", h, 10, lbpcap.inet_cksum(bytes(h)))
    else:
        struct.pack_into("!H", h, 4, len(body))
        h[6] = first[2][0][3]
    return first[1][:l2len] + bytes(h) + body, errs


def out_span(path):
    """Seconds from the first to the last frame written to path (0 if fewer than two)."""
    from scapy.utils import RawPcapReader
    if os.path.getsize(path) == 0:
        return 0.0
    ts = [m.sec + m.usec / 1e6 for _, m in RawPcapReader(path)]
    return max(ts) - min(ts) if len(ts) > 1 else 0.0


class Checker:
    def __init__(self, d, out, stats, verbose, exception=None, fwd_out=None, out_mac=None):
        self.dir = d
        self.verbose = verbose
        self.fails = []
        self.cfg = json.load(open(os.path.join(d, "config.json")))
        self.man = json.load(open(os.path.join(d, "manifest.json")))["packets"]
        self.inputs = lbpcap.read_pcap(os.path.join(d, "in.pcap"))
        if not os.path.exists(out):
            raise SystemExit("check_pcap: FAIL: %s does not exist" % out)
        self.outputs = lbpcap.read_pcap(out)
        # With --out-port, encapsulated frames leave by the other port (fwd_out)
        # and only ICMP replies by the receiving one (out).
        self.n_rx_port_out = len(self.outputs)
        self.fwd_out = fwd_out
        if fwd_out:
            self.outputs += lbpcap.read_pcap(fwd_out)
        self.stats = json.load(open(stats)) if stats else None
        self.exc_path = exception
        self.exc = lbpcap.read_pcap(exception) if exception else None
        enc = self.cfg["encap"]
        self.mtu = enc.get("mtu", 1500)
        self.gue_port = enc.get("gue_port", lbpcap.DEFAULT_GUE_PORT)
        self.too_big = enc.get("too_big", "icmp")
        # The receiving port's MAC (the generator's, which the runner gives
        # spillwayd as --port-mac) and the forwarding port's.
        self.port_mac = json.load(open(os.path.join(d, "manifest.json")))["lb_mac"].lower()
        self.out_mac = (out_mac or self.port_mac).lower()
        self.vlan = enc.get("vlan", "strip")
        # The per-core ICMP token bucket (docs/operations.md defaults): one worker here.
        icmp = self.cfg.get("icmp", {})
        self.icmp_rate = icmp.get("rate_per_sec", 1000)
        self.icmp_burst = icmp.get("burst", 50)
        self.out_span = out_span(out)
        self.nh_mac = enc["next_hop_mac"].lower()
        self.src4 = ip_norm(enc["source_v4"])
        self.src6 = ip_norm(enc["source_v6"])
        self.vips = self.cfg["vips"]
        self.usable = [{ip_norm(b["address"]) for b in lbpcap.usable_backends(v)} for v in self.vips]

    def fail(self, msg):
        self.fails.append(msg)

    # ------------------------------------------------------------------ inputs
    def index_inputs(self):
        if len(self.inputs) != len(self.man):
            raise SystemExit("manifest has %d entries but in.pcap %d frames" % (len(self.man), len(self.inputs)))
        self.in_ip = {}
        self.by_ip = {}
        self.by_marker = {}
        for i, fr in enumerate(self.inputs):
            ip = lbpcap.ip_packet_of(fr)
            self.in_ip[i] = ip
            if ip is not None:
                self.by_ip[ip] = i
                m = MARKER.search(ip)
                if m:
                    self.by_marker[m.group(0)] = i

    def diagnose(self, data):
        """Why bytes that should be an input IP packet match none."""
        m = MARKER.search(data)
        if not m or m.group(0) not in self.by_marker:
            return "no input has these bytes (%d bytes, starts %s)" % (len(data), data[:24].hex())
        i = self.by_marker[m.group(0)]
        ref = self.in_ip[i]
        k = next((k for k in range(min(len(ref), len(data))) if ref[k] != data[k]), min(len(ref), len(data)))
        return "looks like input #%d (%s) but differs: length %d vs %d, first difference at byte %d" % (
            i, self.man[i]["kind"], len(data), len(ref), k)

    # ------------------------------------------------------------------ path MTU
    def model_pmtu(self):
        """Which inputs are MTU errors about our own outer packets, and what
        they teach: RFC 1191 §4 (type 3 code 4, Next-Hop MTU) and RFC 8201 §4
        (Packet Too Big), to encap.source_v4/v6, quoting an outer packet from
        that source (IPIP, IPv6-in-IP, or UDP to encap.gue_port) to a backend.
        Such an error lowers the backend's path MTU if its value is at least
        the floor (576 for IPv4 as RFC 791 guarantees, 1280 for IPv6, RFC 8200
        §5; docs/operations.md) and below what the backend has; otherwise it is
        ignored. Errors not about our packets teach nothing and are not counted.
        self.pmtu_events: [(input index, backend, MTU)] in input order."""
        from scapy.layers.inet import ICMP, IP
        from scapy.layers.inet6 import IPv6, ICMPv6PacketTooBig
        from scapy.layers.l2 import Ether
        backends = {ip_norm(b["address"]) for v in self.vips for b in v["backends"]}
        learned = {}
        self.pmtu_events = []
        self.pmtu_learned = self.pmtu_ignored = 0
        for i, fr in enumerate(self.inputs):
            if self.man[i]["kind"] != "pmtu-icmp":
                continue
            p = Ether(fr)
            while p.type in VLAN_TPIDS:
                p = p.payload
            ip = p.payload
            if isinstance(ip, IP) and isinstance(ip.payload, ICMP):
                ic, src, floor = ip.payload, self.src4, 576
                if ip_norm(ip.dst) != src or (ic.type, ic.code) != (3, 4) or ip.frag or ip.flags.MF:
                    continue
                mtu, q = ic.nexthopmtu, bytes(ic.payload)
                if len(q) < 20 or q[0] >> 4 != 4:
                    continue
                hl = (q[0] & 15) * 4
                qsrc, qdst, proto = ip_norm(q[12:16]), ip_norm(q[16:20]), q[9]
            elif isinstance(ip, IPv6) and isinstance(ip.payload, ICMPv6PacketTooBig):
                ic, src, floor = ip.payload, self.src6, 1280
                if ip_norm(ip.dst) != src or ic.code != 0:
                    continue
                mtu, q = ic.mtu, bytes(ic.payload)
                if len(q) < 40 or q[0] >> 4 != 6:
                    continue
                hl, qsrc, qdst, proto = 40, ip_norm(q[8:24]), ip_norm(q[24:40]), q[6]
            else:
                continue
            if qsrc != src:
                continue
            if proto == 17:
                if len(q) < hl + 4 or int.from_bytes(q[hl + 2:hl + 4], "big") != self.gue_port:
                    continue
            elif proto not in (4, 41):
                continue
            if qdst not in backends or mtu < floor or mtu >= min(self.mtu, learned.get(qdst, self.mtu)):
                self.pmtu_ignored += 1
                continue
            learned[qdst] = mtu
            self.pmtu_learned += 1
            self.pmtu_events.append((i, qdst, mtu))

    def path_mtu(self, i, backend, what):
        """The MTU toward backend for input i: encap.mtu, or lower once an MTU
        error about it has been processed. An error within PMTU_SETTLE frames
        before i may or may not apply yet (the gate is per burst): a generator
        must keep its packets out of that window."""
        m = self.mtu
        for k, b, mtu in self.pmtu_events:
            if b != backend or k >= i:
                continue
            if k > i - PMTU_SETTLE:
                self.fail("%s: an MTU error about %s only %d frames earlier (generator: keep %d apart)" % (
                    what, backend, i - k, PMTU_SETTLE))
            m = min(m, mtu)
        return m

    # ------------------------------------------------------------------ outputs
    def scan_outputs(self):
        self.fwd = defaultdict(list)      # input index -> [(out index, Decoded)]
        self.replies = defaultdict(list)  # input index -> [(out index, Decoded)]
        self.port_macs = Counter()
        # Outer fragments (RFC 2003 §5.1, RFC 2473 §7.1): grouped by datagram,
        # reassembled here and then judged as one encapsulated frame.
        groups = defaultdict(list)
        frames = []
        for j, fr in enumerate(self.outputs):
            f = outer_fragment(fr)
            if f is None:
                frames.append((j, fr, None))
            else:
                if not groups[f[0]]:
                    frames.append((j, None, f[0]))
                groups[f[0]].append((j, fr, f))
        self.n_frag_frames = sum(len(g) for g in groups.values())
        self.n_reassembled = 0
        for j, fr, key in frames:
            parts = None
            if key is not None:
                parts = groups[key]
                fr, errs = reassemble(parts, self.mtu)
                for e in errs:
                    self.fail(e)
                if len(parts) < 2:
                    self.fail("out#%d: a datagram of one outer fragment" % j)
                self.n_reassembled += 1
            d = lbpcap.decode_output(fr, self.gue_port)
            d.frag_parts = [(p[0], len(p[1]), p[2][6]) for p in parts] if parts else None
            for e in d.errors:
                self.fail("out#%d: %s" % (j, e))
            if d.eth_src:
                self.port_macs[d.eth_src] += 1
            on_rx_port = j < self.n_rx_port_out
            if d.kind == "encap" and self.fwd_out and on_rx_port:
                self.fail("out#%d: encapsulated frame left by the receiving port, not --out-port" % j)
            if d.kind in ("icmp4", "icmp6") and not on_rx_port:
                self.fail("out#%d: ICMP reply left by --out-port, not the receiving port" % j)
            if d.kind == "encap":
                i = self.by_ip.get(bytes(d.inner))
                if i is None:
                    self.fail("out#%d: inner packet to %s: %s" % (j, d.outer_dst, self.diagnose(bytes(d.inner))))
                    continue
                self.fwd[i].append((j, d))
            elif d.kind in ("icmp4", "icmp6"):
                q = bytes(d.quoted or b"")
                m = MARKER.search(q)
                i = self.by_marker.get(m.group(0)) if m else None
                if i is None:
                    self.fail("out#%d: %s reply to %s quotes no known input (%s)" % (
                        j, d.kind, d.outer_dst, q[:40].hex()))
                    continue
                self.replies[i].append((j, d))
            elif not d.errors:
                self.fail("out#%d: unexpected output frame" % j)

    # ------------------------------------------------------------------ per input
    def group_backend(self, group):
        bs = self.group_backends.get(group)
        return next(iter(bs)) if bs and len(bs) == 1 else None

    def resolve(self, i, e):
        """The verdict input i must get: forward / icmp / drop, and drop reason."""
        fr = self.inputs[i]
        if len(fr) >= 14 and mac_str(fr[0:6]) != self.port_mac:
            # Not to the receiving port's MAC: never balanced, whatever it carries.
            return "drop", "not_our_mac", []
        v = e["verdict"]
        if v != "mtu":
            return v, e.get("reason"), e.get("alt", [])
        vip = self.vips[e["vip"]]
        ohs = {lbpcap.encap_overhead(vip, b) for b in self.usable[e["vip"]]}
        if len(ohs) > 1:
            b = self.group_backend(e["group"])
            if b is None:
                self.fail("in#%d (oversize %d bytes to %s): cannot tell its flow's backend (flow not forwarded)"
                          % (i, e["size"], lbpcap.vip_label(vip)))
                return None, None, []
            ohs = {lbpcap.encap_overhead(vip, b)}
        oh = ohs.pop()
        e["overhead"] = oh
        mtu = self.mtu
        if self.pmtu_events:
            b = self.group_backend(e["group"])
            if b is None:
                self.fail("in#%d (oversize %d bytes to %s): cannot tell its flow's backend (flow not forwarded)"
                          % (i, e["size"], lbpcap.vip_label(vip)))
                return None, None, []
            mtu = self.path_mtu(i, b, "in#%d" % i)
        e["path_mtu"] = mtu
        if e["size"] + oh <= mtu:
            return "forward", None, []
        v6 = ip_version(vip["address"]) == 6
        # RFC 2003 §5.1: IPv4 without DF is sent as outer fragments; RFC 2473
        # §7.1(b): so is IPv6 of at most 1280 bytes. Under either policy.
        if (not v6 and not e["df"]) or (v6 and e["size"] <= IPV6_MIN_MTU):
            return "frag", None, []
        if self.too_big == "drop":
            return "drop", "too_big", []
        return "icmp", None, []

    def check_packets(self):
        # groups first (oversize verdicts for mixed-family VIPs need them)
        self.group_backends = defaultdict(set)
        for i, e in enumerate(self.man):
            if e["verdict"] in ("forward", "mtu") and "group" in e:
                for j, d in self.fwd.get(i, []):
                    self.group_backends[e["group"]].add(d.outer_dst)
        self.expect_drops = Counter()
        self.ambiguous = []  # (input index, [acceptable reasons])
        self.verdicts = {}
        flow_sport = defaultdict(set)
        bad_sport = []
        owed = []  # packets an ICMP too-big is due for, in input (= processing) order
        for i, e in enumerate(self.man):
            verdict, reason, alt = self.resolve(i, e)
            if verdict is None:
                continue
            self.verdicts[i] = (verdict, reason)
            outs, reps = self.fwd.get(i, []), self.replies.get(i, [])
            what = "in#%d (%s%s)" % (i, e["kind"], ", " + lbpcap.vip_label(self.vips[e["vip"]])
                                     if e.get("vip") is not None else "")
            if verdict in ("forward", "frag"):
                if len(outs) != 1:
                    self.fail("%s: expected forwarded once, seen %d times%s" % (
                        what, len(outs), "" if not reps else " (and answered with ICMP)"))
                if reps:
                    self.fail("%s: expected forwarded, got an ICMP too-big reply" % what)
                for j, d in outs:
                    if verdict == "frag" and not d.frag_parts:
                        self.fail("%s -> out#%d: %d bytes over encap.mtu %d in one frame, expected "
                                  "outer fragments" % (what, j, len(d.ip), self.mtu))
                    pm = e.get("path_mtu", self.mtu)
                    for jf, _, l3 in d.frag_parts or []:
                        if l3 > pm:
                            self.fail("%s -> out#%d: outer fragment of %d bytes over the path MTU %d" % (
                                what, jf, l3, pm))
                    if not d.frag_parts and len(d.ip) > pm:
                        self.fail("%s -> out#%d: %d bytes sent over the path MTU %d toward %s" % (
                            what, j, len(d.ip), pm, d.outer_dst))
                    if verdict == "forward" and d.frag_parts:
                        self.fail("%s -> out#%d: sent as %d outer fragments, but it fits encap.mtu" % (
                            what, j, len(d.frag_parts)))
                    self.check_encap(i, e, j, d, what)
                    self.check_maglev(i, e, j, d, what)
                    if d.gue:
                        flow_sport[e.get("flow") or e["group"]].add((d.udp_sport, j))
                        if not 1024 <= d.udp_sport <= 65535:
                            bad_sport.append((j, d.udp_sport))
            elif verdict == "icmp":
                if outs:
                    self.fail("%s: expected an ICMP too-big reply, but it was forwarded (out#%d)" % (what, outs[0][0]))
                if len(reps) > 1:
                    self.fail("%s: expected at most one ICMP too-big reply, got %d" % (what, len(reps)))
                for j, d in reps:
                    self.check_reply(i, e, j, d, what)
                owed.append((i, what, len(reps)))
            else:
                if outs or reps:
                    self.fail("%s: expected drop (%s), but out#%d was sent for it" % (
                        what, reason, (outs or reps)[0][0]))
                if alt:
                    self.ambiguous.append((i, [reason] + list(alt)))
                else:
                    self.expect_drops[reason] += 1
        self.check_icmp_bucket(owed)
        if self.exc is not None:
            self.check_exception()
        for k, s in flow_sport.items():
            ports = {p for p, _ in s}
            if len(ports) > 1:
                self.fail("GUE source port differs within flow %s: %s" % (k, sorted(s)[:6]))
        if bad_sport:
            self.fail("GUE source port outside 1024..65535 on %d frames, e.g. out#%d sport %d" % (
                len(bad_sport), bad_sport[0][0], bad_sport[0][1]))
        for g, bs in self.group_backends.items():
            if len(bs) > 1:
                self.fail("flow/key %s reached %d backends: %s" % (g, len(bs), sorted(bs)))

    def check_icmp_bucket(self, owed):
        """RFC 4443 §2.4(f): a token bucket of icmp_burst tokens, refilled at
        icmp_rate a second. The first burst packets owed a reply get one; of the
        rest, at most rate * (time the run took) + 1 do (refills), the others are
        dropped as icmp_limited. The time is bounded by out.pcap's span."""
        extra_max = int(self.icmp_rate * self.out_span) + 1
        extra = 0
        self.limited = 0
        for k, (i, what, n) in enumerate(owed):
            if k < self.icmp_burst and n != 1:
                self.fail("%s: reply %d of the burst of %d not sent" % (what, k + 1, self.icmp_burst))
            elif k >= self.icmp_burst and n:
                extra += 1
            elif k >= self.icmp_burst:
                self.verdicts[i] = ("drop", "icmp_limited")
                self.expect_drops["icmp_limited"] += 1
                self.limited += 1
        if extra > extra_max:
            self.fail("ICMP bucket: %d replies past the burst of %d, at most %d at %d/s over %.3f s" % (
                extra, self.icmp_burst, extra_max, self.icmp_rate, self.out_span))
        if len(owed) > self.icmp_burst:
            print("check_pcap: %d too-big packets, bucket %d + %d/s: %d answered, %d icmp_limited" % (
                len(owed), self.icmp_burst, self.icmp_rate, len(owed) - self.limited, self.limited))

    def check_exception(self):
        """With an exception port, traffic for no VIP leaves there unchanged
        (byte-identical frame), and nothing else does."""
        by_frame = {}
        for i, fr in enumerate(self.inputs):
            by_frame.setdefault(fr, i)
        got = Counter()
        for j, fr in enumerate(self.exc):
            i = by_frame.get(fr)
            if i is None:
                m = MARKER.search(fr)
                hint = (" (looks like input #%d, modified)" % self.by_marker[m.group(0)]
                        if m and m.group(0) in self.by_marker else "")
                self.fail("exc#%d: frame on the exception port is no input frame%s" % (j, hint))
                continue
            got[i] += 1
        amb = {i: rs for i, rs in self.ambiguous}
        for i, n in sorted(got.items()):
            v = self.verdicts.get(i)
            if n > 1:
                self.fail("in#%d: sent %d times to the exception port" % (i, n))
            if v == ("drop", "no_vip"):
                self.expect_drops["no_vip"] -= 1
            elif v == ("drop", "not_our_mac") and self.inputs[i][0] & 1:
                self.expect_drops["not_our_mac"] -= 1  # group MAC: the host's
            elif i in amb and "no_vip" in amb[i]:
                self.ambiguous = [(k, rs) for k, rs in self.ambiguous if k != i]
            else:
                self.fail("in#%d (%s, verdict %s): must not go to the exception port" % (
                    i, self.man[i]["kind"], v))
        for i, v in self.verdicts.items():
            if v == ("drop", "not_our_mac") and self.inputs[i][0] & 1 and i not in got:
                self.fail("in#%d (%s): frame to group MAC %s not sent to the exception port" % (
                    i, self.man[i]["kind"], mac_str(self.inputs[i][0:6])))
            if v == ("drop", "no_vip") and i not in got:
                self.fail("in#%d (%s): traffic for no VIP not sent to the exception port" % (i, self.man[i]["kind"]))
        self.n_exc = len(self.exc)

    def check_encap(self, i, e, j, d, what):
        fr = self.inputs[i]
        inner = bytes(d.inner)
        vi = e["vip"]
        vip = self.vips[vi]
        at = "%s -> out#%d" % (what, j)
        if d.eth_dst != self.nh_mac:
            self.fail("%s: Ethernet dst %s != next_hop_mac %s" % (at, d.eth_dst, self.nh_mac))
        if d.eth_src != self.out_mac:
            self.fail("%s: Ethernet src %s != the sending port's MAC %s" % (at, d.eth_src, self.out_mac))
        if self.vlan == "strip":
            want_tags = []
        elif self.vlan == "keep":
            want_tags = wire_tags(fr)
        else:
            want_tags = [(0x8100, int(self.vlan))]
        got_tags = wire_tags(self.outputs[j])
        if got_tags != want_tags:
            self.fail("%s: VLAN tags %s, encap.vlan %s wants %s" % (at, got_tags, self.vlan, want_tags))
        if d.outer_dst not in self.usable[vi]:
            self.fail("%s: outer dst %s is not a usable backend of the VIP (%s)" % (
                at, d.outer_dst, sorted(self.usable[vi])))
        want_src = self.src4 if d.outer_version == 4 else self.src6
        if d.outer_src != want_src:
            self.fail("%s: outer src %s != %s" % (at, d.outer_src, want_src))
        want_encap = vip.get("encap", "ipip")
        if d.gue != (want_encap == "gue"):
            self.fail("%s: encapsulated as %s, VIP says %s" % (at, "gue" if d.gue else "ipip", want_encap))
        iv = inner[0] >> 4
        if not d.gue and d.outer_proto != (4 if iv == 4 else 41):
            self.fail("%s: outer protocol %d for an IPv%d inner packet" % (at, d.outer_proto, iv))
        if d.ttl != 64:
            self.fail("%s: outer TTL/hop limit %d != 64" % (at, d.ttl))
        if d.tos != lbpcap.ip_tos(inner):
            self.fail("%s: outer DSCP/ECN 0x%02x != inner 0x%02x" % (at, d.tos, lbpcap.ip_tos(inner)))
        if d.outer_version == 4 and not d.frag_parts:
            # unfragmented: DF set (fragments were checked for DF clear in reassemble())
            if not d.df:
                self.fail("%s: outer IPv4 DF not set" % at)
            if d.frag:
                self.fail("%s: outer IPv4 has MF/offset set" % at)
        if len(fr) and e.get("vip") is None:
            self.fail("%s: forwarded without a VIP" % at)

    def check_maglev(self, i, e, j, d, what):
        """An entry with "mg" (fragments and their flows' packets) must reach the
        backend an independent Maglev (maglev_ref.py) gives its key."""
        if "mg" not in e:
            return
        mg = self.cfg["maglev"]
        vip = self.vips[e["vip"]]
        if not hasattr(self, "mg_tables"):
            self.mg_tables = {}
            self.mg_key = maglev_ref.lbhash.key_from_seed(mg["seed"])
        t = self.mg_tables.get(e["vip"])
        if t is None:
            t = self.mg_tables[e["vip"]] = maglev_ref.vip_table(mg["seed"], mg["table_size"], vip["backends"])
        src, dst, sport, dport, proto, mode = e["mg"]
        want = maglev_ref.backend_for(t, self.mg_key, src, dst, sport, dport, proto, mode)
        if want is None or ip_norm(want) != d.outer_dst:
            self.fail("%s -> out#%d: reached %s, Maglev of %s says %s (VIP %s)" % (
                what, j, d.outer_dst, e["mg"], want, lbpcap.vip_label(vip)))

    def check_reply(self, i, e, j, d, what):
        fr = self.inputs[i]
        orig = self.in_ip[i]
        at = "%s -> out#%d" % (what, j)
        client_mac = ":".join("%02x" % b for b in fr[6:12])
        client = ip_norm(orig[12:16]) if orig[0] >> 4 == 4 else ip_norm(orig[8:24])
        want_mtu = e.get("path_mtu", self.mtu) - e["overhead"]  # RFC 4459 §3.2
        if orig[0] >> 4 == 6:
            want_mtu = max(want_mtu, IPV6_MIN_MTU)  # RFC 2473 §7.1(a), RFC 8200 §5
        if d.eth_dst != client_mac:
            self.fail("%s: ICMP reply Ethernet dst %s != the packet's source MAC %s" % (at, d.eth_dst, client_mac))
        if d.eth_src != self.port_mac:
            self.fail("%s: ICMP reply Ethernet src %s != the receiving port's MAC %s" % (at, d.eth_src, self.port_mac))
        if wire_tags(self.outputs[j]) != wire_tags(fr):
            self.fail("%s: ICMP reply VLAN tags %s != the packet's %s (back into its VLANs)" % (
                at, wire_tags(self.outputs[j]), wire_tags(fr)))
        if d.outer_dst != client:
            self.fail("%s: ICMP reply to %s, not the client %s" % (at, d.outer_dst, client))
        if d.ttl is not None and d.ttl == 0:
            self.fail("%s: ICMP reply TTL 0" % at)
        if orig[0] >> 4 == 4:
            if d.kind != "icmp4" or d.outer_src != self.src4:
                self.fail("%s: expected ICMPv4 from %s, got %s from %s" % (at, self.src4, d.kind, d.outer_src))
            if (d.icmp_type, d.icmp_code) != (3, 4):
                self.fail("%s: ICMP type/code %s/%s != 3/4" % (at, d.icmp_type, d.icmp_code))
            if getattr(d, "icmp_unused", 0) != 0:
                self.fail("%s: ICMP unused field %d != 0" % (at, d.icmp_unused))
            limit = 576 - 28
        else:
            if d.kind != "icmp6" or d.outer_src != self.src6:
                self.fail("%s: expected ICMPv6 from %s, got %s from %s" % (at, self.src6, d.kind, d.outer_src))
            if (d.icmp_type, d.icmp_code) != (2, 0):
                self.fail("%s: ICMPv6 type/code %s/%s != 2/0" % (at, d.icmp_type, d.icmp_code))
            limit = 1280 - 48
        if d.icmp_mtu != want_mtu:
            self.fail("%s: MTU field %s != %d (mtu %d - overhead %d%s)" % (
                at, d.icmp_mtu, want_mtu, e.get("path_mtu", self.mtu), e["overhead"],
                ", at least 1280 for IPv6" if orig[0] >> 4 == 6 else ""))
        q = bytes(d.quoted)
        want = orig[:limit]
        if q != want:
            k = next((k for k in range(min(len(q), len(want))) if q[k] != want[k]), min(len(q), len(want)))
            self.fail("%s: quoted %d bytes, expected the first %d bytes of the packet; first difference at %d" % (
                at, len(q), len(want), k))

    # ------------------------------------------------------------------ spread
    def check_spread(self):
        self.spread_report = []
        for vi, vip in enumerate(self.vips):
            unit_backend = {}
            for i, e in enumerate(self.man):
                if e.get("vip") == vi and e.get("unit") and self.fwd.get(i):
                    unit_backend[e["unit"]] = self.fwd[i][0][1].outer_dst
            shares = lbpcap.expected_shares(vip)
            if not shares or not unit_backend:
                continue
            counts = Counter(unit_backend.values())
            n, chi2, dof, p, zs = lbpcap.spread_stats(counts, shares)
            rows = []
            for b in sorted(shares, key=lambda a: (ip_version(a), a)):
                rows.append((b, shares[b], counts.get(b, 0), zs.get(b, 0.0)))
            self.spread_report.append((vi, n, chi2, dof, p, rows))
            if n < SPREAD_MIN_UNITS:
                continue
            if p < CHI2_MIN_P:
                self.fail("spread %s: chi-square %.1f (dof %d) p=%.2g < %g over %d keys: %s" % (
                    lbpcap.vip_label(vip), chi2, dof, p, CHI2_MIN_P, n,
                    ", ".join("%s %d/%.0f" % (b, c, s * n) for b, s, c, _ in rows)))
            for b, s, c, z in rows:
                if abs(z) > Z_MAX:
                    self.fail("spread %s: backend %s got %d of %d keys, expected %.1f (z=%.1f)" % (
                        lbpcap.vip_label(vip), b, c, n, s * n, z))

    # ------------------------------------------------------------------ stats
    def check_stats(self):
        st = self.stats
        if st is None:
            return
        tot = st.get("totals")
        if not isinstance(tot, dict):
            self.fail("stats: no totals object")
            return
        for k in TOTAL_KEYS:
            if not isinstance(tot.get(k), int):
                self.fail("stats: totals.%s missing or not an integer" % k)
        # Final stats are written after the ports are closed: every mbuf must be
        # back in the pool (per-lcore caches count as available).
        mp = st.get("mempool")
        if not isinstance(mp, dict) or mp.get("in_use") != 0 or mp.get("available") != mp.get("size"):
            self.fail("stats: mempool %s, expected in_use 0 (mbufs leaked)" % (mp,))
        drops = tot.get("drops", {})
        for k in DROP_REASONS:
            if not isinstance(drops.get(k), int):
                self.fail("stats: totals.drops.%s missing or not an integer" % k)
        g = lambda k: tot.get(k) if isinstance(tot.get(k), int) else 0  # noqa: E731
        dsum = sum(v for v in drops.values() if isinstance(v, int))
        # a packet sent as k outer fragments is k forwarded frames
        extra = g("fragments_out") - g("fragmented_out")
        cons = g("forwarded") - extra + g("icmp_sent") + g("exception") + dsum
        if g("rx_packets") != cons:
            self.fail("stats: rx_packets %d != forwarded %d - (fragments_out - fragmented_out) %d + icmp_sent %d"
                      " + exception %d + drops %d = %d" % (
                          g("rx_packets"), g("forwarded"), extra, g("icmp_sent"), g("exception"), dsum, cons))
        n_frag_exp = sum(1 for v in self.verdicts.values() if v[0] == "frag")
        if (g("fragmented_out"), g("fragments_out")) != (self.n_reassembled, self.n_frag_frames):
            self.fail("stats: fragmented_out %d, fragments_out %d; out.pcap has %d datagrams in %d outer fragments"
                      % (g("fragmented_out"), g("fragments_out"), self.n_reassembled, self.n_frag_frames))
        if self.n_reassembled != n_frag_exp:
            self.fail("out.pcap: %d packets sent as outer fragments, %d expected (IPv4 without DF, IPv6 <= %d, "
                      "over encap.mtu)" % (self.n_reassembled, n_frag_exp, IPV6_MIN_MTU))
        if g("rx_packets") != len(self.inputs):
            self.fail("stats: rx_packets %d != %d frames in in.pcap" % (g("rx_packets"), len(self.inputs)))
        in_bytes = sum(len(f) for f in self.inputs)
        if g("rx_bytes") != in_bytes:
            self.fail("stats: rx_bytes %d != %d bytes in in.pcap" % (g("rx_bytes"), in_bytes))
        n_fwd = sum(len(v) for v in self.fwd.values())
        n_rep = sum(len(v) for v in self.replies.values())
        if g("forwarded") + g("icmp_sent") != len(self.outputs):
            self.fail("stats: forwarded %d + icmp_sent %d != %d frames in out.pcap" % (
                g("forwarded"), g("icmp_sent"), len(self.outputs)))
        n_fwd_frames = n_fwd - self.n_reassembled + self.n_frag_frames
        n_unmatched = len(self.outputs) - n_fwd_frames - n_rep
        if not n_unmatched and g("forwarded") != n_fwd_frames:
            self.fail("stats: forwarded %d != %d encapsulated frames in out.pcap" % (g("forwarded"), n_fwd_frames))
        if not n_unmatched and g("icmp_sent") != n_rep:
            self.fail("stats: icmp_sent %d != %d ICMP replies in out.pcap" % (g("icmp_sent"), n_rep))
        if self.exc is None and g("exception"):
            self.fail("stats: exception %d with no exception port" % g("exception"))
        if self.exc is not None and g("exception") != len(self.exc):
            self.fail("stats: exception %d != %d frames on the exception port" % (g("exception"), len(self.exc)))

        # drops: unambiguous reasons exactly; ambiguous packets may land in any of
        # their acceptable reasons, so each reason lies in [exact, exact + those].
        want_total = sum(self.expect_drops.values()) + len(self.ambiguous)
        if dsum != want_total:
            self.fail("stats: %d drops in total, expected %d (%s)" % (
                dsum, want_total, ", ".join("%s %d" % kv for kv in sorted(self.expect_drops.items()))))
        for r in DROP_REASONS:
            lo = self.expect_drops.get(r, 0)
            hi = lo + sum(1 for _, rs in self.ambiguous if r in rs)
            got = drops.get(r, 0) if isinstance(drops.get(r), int) else 0
            if not lo <= got <= hi:
                exp = str(lo) if lo == hi else "%d..%d" % (lo, hi)
                self.fail("stats: drops.%s = %d, expected %s" % (r, got, exp))

        # fragments / ICMP errors steered
        frag_fwd = sum(1 for i, e in enumerate(self.man) if e["kind"] == "fragment" and self.fwd.get(i))
        frag_all = sum(1 for e in self.man if e["kind"].startswith("fragment"))
        if not frag_fwd <= g("fragments") <= frag_all:
            self.fail("stats: fragments %d, expected %d..%d" % (g("fragments"), frag_fwd, frag_all))
        # first and later fragments by their datagram's ports, early ones by addresses
        early = sum(1 for e in self.man if e["kind"] == "fragment" and e.get("early"))
        later = sum(1 for e in self.man if e["kind"] == "fragment" and not e.get("early"))
        if g("frag_unmatched") != early or g("frag_tracked") + g("frag_followed") != later:
            self.fail("stats: frag_unmatched %d, frag_tracked + frag_followed %d; expected %d, %d" % (
                g("frag_unmatched"), g("frag_tracked") + g("frag_followed"), early, later))
        ie_fwd = sum(1 for i, e in enumerate(self.man) if e["kind"] == "icmp-error" and self.fwd.get(i))
        ie_all = ie_fwd + sum(1 for e in self.man if e["kind"] == "icmp-bad")
        if not ie_fwd <= g("icmp_errors") <= ie_all:
            self.fail("stats: icmp_errors %d, expected %d..%d" % (g("icmp_errors"), ie_fwd, ie_all))

        # flow table: distinct flow-table keys (5-tuples; fragments keyed without ports)
        keys_at = defaultdict(set)     # (vip, backend) -> flow-table keys
        for i, e in enumerate(self.man):
            for _, d in self.fwd.get(i, []):
                if e["kind"] == "fragment":
                    k = e.get("flow") or e["group"]
                elif e["kind"] == "icmp-error" or "flow" not in e:
                    continue  # an error, or a packet of no flow forwarded (failed above)
                else:
                    k = e["flow"]
                keys_at[(e["vip"], d.outer_dst)].add(k)
        n_keys = sum(len(s) for s in keys_at.values())
        n_keys_nofrag = sum(1 for s in keys_at.values() for k in s if not k.startswith("frag|"))
        nb = sum(1 for v in self.verdicts.values() if v == ("drop", "no_backend"))
        tb = sum(1 for v in self.verdicts.values() if v == ("drop", "too_big"))
        # An evicted flow that comes back misses again (and is counted new again).
        ev = g("flow_evictions")
        self.evictions = ev
        # A packet of a flow left without an entry (its bucket full of
        # established flows, or over the new-flow rate) misses every time.
        unpinned = g("flow_unpinned") + g("flow_rate_limited")
        if not n_keys_nofrag <= g("flow_misses") <= n_keys + nb + ev + unpinned:
            self.fail("stats: flow_misses %d, expected %d new flows (%d without fragment keys; "
                      "+ up to %d no_backend lookups + %d evictions + %d packets without an entry)" % (
                          g("flow_misses"), n_keys, n_keys_nofrag, nb, ev, unpinned))
        lookups = g("flow_hits") + g("flow_misses")
        lo = n_fwd - (frag_fwd if frag_fwd else 0)
        # icmp_limited packets looked their flows up as well
        hi = n_fwd + n_rep + tb + nb + getattr(self, "limited", 0)
        if not lo <= lookups <= hi:
            self.fail("stats: flow_hits + flow_misses = %d, expected %d..%d" % (lookups, lo, hi))
        if g("flow_rechosen"):
            self.fail("stats: flow_rechosen %d, expected 0 (no membership change)" % g("flow_rechosen"))

        if (g("pmtu_learned"), g("pmtu_ignored")) != (self.pmtu_learned, self.pmtu_ignored):
            self.fail("stats: pmtu_learned %d, pmtu_ignored %d; the MTU errors about our outer packets "
                      "teach %d, %d are ignored" % (g("pmtu_learned"), g("pmtu_ignored"),
                                                   self.pmtu_learned, self.pmtu_ignored))
        self.check_stats_objects(keys_at, ev)
        cores = st.get("cores")
        if not isinstance(cores, list) or not cores:
            self.fail("stats: no cores list")
        else:
            for k in TOTAL_KEYS:
                s = sum(c.get(k, 0) for c in cores if isinstance(c.get(k, 0), int))
                if s != g(k):
                    self.fail("stats: sum over cores of %s = %d != totals %d" % (k, s, g(k)))
            for r in DROP_REASONS:
                s = sum(c.get("drops", {}).get(r, 0) for c in cores)
                if s != drops.get(r, 0):
                    self.fail("stats: sum over cores of drops.%s = %d != totals %d" % (r, s, drops.get(r, 0)))

    def check_stats_objects(self, keys_at, evictions):
        st = self.stats
        svips = st.get("vips")
        if not isinstance(svips, list):
            self.fail("stats: no vips list")
            return
        pk = defaultdict(int)
        by = {"outer frame": defaultdict(int), "outer IP": defaultdict(int), "inner IP": defaultdict(int),
              "input frame": defaultdict(int)}
        for i, e in enumerate(self.man):
            for j, d in self.fwd.get(i, []):
                key = (e["vip"], d.outer_dst)
                pk[key] += 1
                if d.frag_parts:  # what the fragments' frames and IP packets add up to
                    by["outer frame"][key] += sum(n for _, n, _ in d.frag_parts)
                    by["outer IP"][key] += sum(n for _, _, n in d.frag_parts)
                else:
                    by["outer frame"][key] += len(self.outputs[j])
                    by["outer IP"][key] += len(d.ip)
                by["inner IP"][key] += len(d.inner)
                by["input frame"][key] += len(self.inputs[i])
        # Byte counters: the contract does not say which bytes count, so
        # forwarded_bytes must equal one of the definitions, and the per-backend
        # bytes one definition (the same for every backend).
        byte_defs = set(by)
        tot_fwd_bytes = {k: sum(v.values()) for k, v in by.items()}
        fb = st["totals"].get("forwarded_bytes")
        self.fwd_byte_def = [k for k, v in tot_fwd_bytes.items() if v == fb]
        if not self.fwd_byte_def:
            self.fail("stats: forwarded_bytes %s matches no definition: %s" % (fb, tot_fwd_bytes))
        seen = set()
        for sv in svips:
            try:
                vi = next(k for k, v in enumerate(self.vips)
                          if ip_norm(v["address"]) == ip_norm(sv["address"]) and v["port"] == sv["port"]
                          and v["protocol"] == sv["protocol"])
            except (StopIteration, KeyError, ValueError):
                self.fail("stats: vips entry %s matches no configured VIP" % json.dumps(sv)[:120])
                continue
            seen.add(vi)
            label = lbpcap.vip_label(self.vips[vi])
            vp = sum(n for (v, _), n in pk.items() if v == vi)
            if not isinstance(sv.get("packets"), int) or sv["packets"] < vp:
                self.fail("stats %s: packets %s < %d forwarded" % (label, sv.get("packets"), vp))
            bsum = Counter()
            for sb in sv.get("backends", []):
                try:
                    b = ip_norm(sb["address"])
                except (KeyError, ValueError):
                    self.fail("stats %s: backend entry without a valid address: %s" % (label, sb))
                    continue
                key = (vi, b)
                if sb.get("packets") != pk.get(key, 0):
                    self.fail("stats %s backend %s: packets %s, out.pcap has %d" % (
                        label, b, sb.get("packets"), pk.get(key, 0)))
                # fragments may or may not go through the flow table
                nf = len(keys_at.get(key, ()))
                nf_nofrag = len([k for k in keys_at.get(key, ()) if not k.startswith("frag|")])
                ok = (sb.get("new_flows") in (nf, nf_nofrag) if not evictions else
                      isinstance(sb.get("new_flows"), int) and nf_nofrag <= sb["new_flows"] <= nf + evictions)
                if not ok:
                    self.fail("stats %s backend %s: new_flows %s, expected %d distinct flows seen there%s%s" % (
                        label, b, sb.get("new_flows"), nf,
                        "" if nf == nf_nofrag else " (%d without fragment keys)" % nf_nofrag,
                        " (+ up to %d evicted and re-created)" % evictions if evictions else ""))
                byte_defs &= {k for k in by if by[k].get(key, 0) == sb.get("bytes")}
                for f in ("packets", "bytes", "new_flows"):
                    bsum[f] += sb.get(f, 0) if isinstance(sb.get(f), int) else 0
                cb = next((x for x in self.vips[vi]["backends"] if ip_norm(x["address"]) == b), None)
                if cb is None:
                    self.fail("stats %s: backend %s not in the config" % (label, b))
                elif sb.get("weight") != cb.get("weight", 1) or sb.get("state") != cb.get("state", "active"):
                    self.fail("stats %s backend %s: weight/state %s/%s, config %s/%s" % (
                        label, b, sb.get("weight"), sb.get("state"), cb.get("weight", 1),
                        cb.get("state", "active")))
            if len(sv.get("backends", [])) != len(self.vips[vi]["backends"]):
                self.fail("stats %s: %d backends listed, config has %d" % (
                    label, len(sv.get("backends", [])), len(self.vips[vi]["backends"])))
            if sv.get("new_flows") != bsum["new_flows"]:
                self.fail("stats %s: new_flows %s != sum over backends %d" % (label, sv.get("new_flows"),
                                                                            bsum["new_flows"]))
        if not byte_defs:
            self.fail("stats: per-backend bytes match no single definition (outer/inner/input bytes)")
        self.byte_def = sorted(byte_defs)
        if self.stats and self.fwd_byte_def:
            self.byte_def = ["per-backend bytes: " + "/".join(self.byte_def),
                             "forwarded_bytes: " + "/".join(self.fwd_byte_def)]
        for vi in range(len(self.vips)):
            if vi not in seen:
                self.fail("stats: VIP %s missing from vips" % lbpcap.vip_label(self.vips[vi]))

    # ------------------------------------------------------------------ report
    # ------------------------------------------------------------ TCP flow state
    def check_flowstate(self):
        """A live replay (gen_pcap.py --flowstate): every packet reaches the
        backend the test's Maglev model gives it, old or new table by the flow
        state the RFC-level rules imply (manifest "want"); fillers are dropped
        as not_our_mac; the flow counters as the manifest's "expect" says."""
        man = json.load(open(os.path.join(self.dir, "manifest.json")))
        exp = man["expect"]
        vi = next(e["vip"] for e in self.man if e["kind"] == "flowstate")
        self.usable[vi].add(ip_norm(man["new_backend"]["address"]))
        self.verdicts = {}
        self.spread_report = []
        n_fwd = n_fill = 0
        for i, e in enumerate(self.man):
            outs = self.fwd.get(i, [])
            what = "in#%d (%s %s %s:%d)" % (i, e["kind"], e.get("role", ""), *(e.get("tuple") or ["-", 0]))
            if e["kind"] == "filler":
                n_fill += 1
                if outs or self.replies.get(i):
                    self.fail("%s: expected drop (not_our_mac), but it was sent" % what)
                continue
            n_fwd += 1
            if len(outs) != 1 or self.replies.get(i):
                self.fail("%s: expected forwarded once, seen %d times" % (what, len(outs)))
            for j, d in outs:
                self.check_encap(i, e, j, d, what)
                if d.outer_dst != ip_norm(e["want"]):
                    self.fail("%s -> out#%d: reached %s, expected %s" % (what, j, d.outer_dst, e["want"]))
        st = self.stats
        if st is None:
            return
        tot = st["totals"]
        g = lambda k: tot.get(k, 0)  # noqa: E731
        want = {"rx_packets": len(self.inputs), "forwarded": n_fwd, "icmp_sent": 0}
        for k, v in want.items():
            if g(k) != v:
                self.fail("stats: %s %d, expected %d" % (k, g(k), v))
        if tot.get("drops", {}).get("not_our_mac") != n_fill or sum(tot.get("drops", {}).values()) != n_fill:
            self.fail("stats: drops %s, expected not_our_mac %d only" % (
                {k: v for k, v in tot.get("drops", {}).items() if v}, n_fill))
        mp = st.get("mempool", {})
        if mp.get("in_use") != 0:
            self.fail("stats: mempool %s, expected in_use 0" % (mp,))
        for k in ("flow_rate_limited", "flow_unpinned", "flow_evictions"):
            if k in exp and g(k) != exp[k]:
                self.fail("stats: %s %d, expected %d" % (k, g(k), exp[k]))
        if "min_evictions_unpinned" in exp and g("flow_evictions") + g("flow_unpinned") < exp["min_evictions_unpinned"]:
            self.fail("stats: flow_evictions %d + flow_unpinned %d, expected at least %d" % (
                g("flow_evictions"), g("flow_unpinned"), exp["min_evictions_unpinned"]))
        if "phase1_flow_rate_limited" in exp:
            p1 = json.load(open(os.path.join(self.dir, "phase1.json")))["totals"]
            if p1.get("flow_rate_limited") != exp["phase1_flow_rate_limited"]:
                self.fail("stats before the change: flow_rate_limited %s, expected %d" % (
                    p1.get("flow_rate_limited"), exp["phase1_flow_rate_limited"]))
            lo, hi = exp["flow_rate_limited_min"], exp["flow_rate_limited_max"]
            # after the change the 32 come back as new flows again: limited
            # unless the bucket refilled meanwhile (1/s: at most one a second
            # of the capture's span, plus one)
            lo = max(lo, hi - 1 - int(self.out_span * self.cfg["flows"]["new_flow_rate"]))
            if not lo <= g("flow_rate_limited") <= hi:
                self.fail("stats: flow_rate_limited %d, expected %d..%d" % (g("flow_rate_limited"), lo, hi))
        if g("flow_rechosen"):
            self.fail("stats: flow_rechosen %d, expected 0 (a backend was added)" % g("flow_rechosen"))
        print("check_pcap: flowstate %s: %d packets to their model backend, %d fillers; "
              "evictions %d unpinned %d rate_limited %d hits %d misses %d" % (
                  man["flowstate"], n_fwd, n_fill, g("flow_evictions"), g("flow_unpinned"),
                  g("flow_rate_limited"), g("flow_hits"), g("flow_misses")))

    # ------------------------------------------------------------ per_packet spray
    def check_spray(self):
        """A live replay (gen_pcap.py --spray) of a per_packet UDP VIP's hot
        5-tuple, IPv4 and IPv6. Before hot_pin and after hot_unpin (and the
        override's demotion) every packet reaches its Maglev home (the test's
        Maglev, maglev_ref.py), the 5-tuple's included. While pinned with r = 4
        over the VIP's 4 backends of weight 1 the model is: every packet, and
        every datagram as a whole, draws one of the 4 replicas uniformly and
        independently; so each replica gets at least the binomial lower bound of
        the unfragmented datagrams, the unfragmented ones after many packets and
        fragments still reach several replicas (nothing pinned the 5-tuple), every
        fragment of one datagram (matched by its own bytes: IP ID and offset)
        reaches one backend, the datagrams together at least the computed number
        of replicas. Each bound is set so that a correct data path fails it with
        probability <= SPRAY_ALPHA."""
        man = json.load(open(os.path.join(self.dir, "manifest.json")))
        sp = man["spray"]
        self.verdicts = {}
        self.spread_report = []
        r = sp["replicas"]
        n_fwd = n_fill = n_sprayed = n_frag = 0
        unfrag = defaultdict(Counter)       # fam -> backend -> unfragmented datagrams (B)
        late = defaultdict(Counter)         # fam -> backend, the last unfragmented ones
        dgs = defaultdict(lambda: defaultdict(list))  # fam -> datagram -> [(fragment, backend)]
        homes = defaultdict(Counter)        # role -> backends of the 5-tuple before / after
        ipid = {}
        for i, e in enumerate(self.man):
            outs = self.fwd.get(i, [])
            what = "in#%d (%s %s %s:%d)" % (i, e["kind"], e.get("role", ""), *(e.get("tuple") or ["-", 0]))
            if e["kind"] == "filler":
                n_fill += 1
                if outs or self.replies.get(i):
                    self.fail("%s: expected drop (not_our_mac), but it was sent" % what)
                continue
            n_fwd += 1
            if len(outs) != 1 or self.replies.get(i):
                self.fail("%s: expected forwarded once, seen %d times" % (what, len(outs)))
            for j, d in outs:
                self.check_encap(i, e, j, d, what)
                if "want" in e and d.outer_dst != ip_norm(e["want"]):
                    self.fail("%s -> out#%d: reached %s, expected its Maglev home %s" % (
                        what, j, d.outer_dst, e["want"]))
            b = outs[0][1].outer_dst if len(outs) == 1 else None
            role, fam = e["role"], e["fam"]
            if role in ("before", "after"):
                homes[(fam, role)][b] += 1
            elif role in ("early", "late"):
                n_sprayed += 1
                unfrag[fam][b] += 1
                if role == "late":
                    late[fam][b] += 1
            elif role == "frag":
                n_sprayed += 1
                n_frag += 1
                dgs[fam][e["datagram"]].append((e["frag"], b))
                ipid[e["datagram"]] = e["ipid"]
        lines = []
        for fam in sorted(set(unfrag) | set(dgs)):
            vi = sp["vips"][fam]
            bes = sorted(self.usable[vi])
            if len(bes) != r:
                self.fail("spray: VIP %s has %d usable backends, the case needs %d" % (
                    lbpcap.vip_label(self.vips[vi]), len(bes), r))
            n = sum(unfrag[fam].values())
            lo = binom_lower(n, 1 / r, SPRAY_ALPHA / r)
            for be in bes:
                if unfrag[fam][be] < lo:
                    self.fail("spray IPv%d: replica %s got %d of %d unfragmented datagrams, "
                              "at least %d expected (Binomial(%d, 1/%d))" % (
                                  4 if fam == 0 else 6, be, unfrag[fam][be], n, lo, n, r))
            nl = sum(late[fam].values())
            ml = spread_lower(nl, r, SPRAY_ALPHA)
            if len([be for be in late[fam] if be]) < ml:
                self.fail("spray IPv%d: the last %d unfragmented datagrams reached %d replicas, "
                          "at least %d expected (pinned?)" % (4 if fam == 0 else 6, nl, len(late[fam]), ml))
            dg_at = Counter()
            for dg, parts in sorted(dgs[fam].items()):
                ks = sorted(k for k, _ in parts)
                if ks != [0, 1, 2]:
                    self.fail("spray: datagram %s: fragments %s in the input" % (dg, ks))
                at = {b for _, b in parts}
                if len(at) != 1 or None in at:
                    self.fail("spray IPv%d: datagram %s (IP ID %s) split: fragments at %s" % (
                        4 if fam == 0 else 6, dg, ipid[dg],
                        ", ".join("#%d %s" % (k, b) for k, b in sorted(parts))))
                else:
                    dg_at[next(iter(at))] += 1
            nd = len(dgs[fam])
            md = spread_lower(nd, r, SPRAY_ALPHA)
            if len(dg_at) < md:
                self.fail("spray IPv%d: %d fragmented datagrams reached %d replicas, at least %d expected" % (
                    4 if fam == 0 else 6, nd, len(dg_at), md))
            for role in ("before", "after"):
                h = homes[(fam, role)]
                if len(h) != 1:
                    self.fail("spray IPv%d: the 5-tuple %s the pin at %s, expected one backend (its home)" % (
                        4 if fam == 0 else 6, role, dict(h)))
            lines.append("  IPv%d: unfragmented %d over %s (each >= %d), last %d at %d replicas (>= %d), "
                         "%d datagrams in 3 fragments at %s (>= %d replicas), home %s" % (
                             4 if fam == 0 else 6, n, [unfrag[fam][be] for be in bes], lo, nl,
                             len(late[fam]), ml, nd, [dg_at[be] for be in bes], md,
                             "/".join(sorted(homes[(fam, "before")]))))
        st = self.stats
        if st is not None:
            tot = st["totals"]
            g = lambda k: tot.get(k, 0)  # noqa: E731
            n_dg = sum(len(x) for x in dgs.values())
            # fillers the feeder repeated while it waited for the demotion
            ex = os.path.join(self.dir, "extra.json")
            n_extra = json.load(open(ex))["fillers"] if os.path.exists(ex) else 0
            n_fill += n_extra
            want = {"rx_packets": len(self.inputs) + n_extra, "forwarded": n_fwd, "icmp_sent": 0,
                    "hot_sprayed": n_sprayed, "fragments": n_frag, "frag_tracked": n_dg,
                    "frag_followed": 2 * n_dg, "frag_unmatched": 0, "fragmented_out": 0}
            for k, v in want.items():
                if g(k) != v:
                    self.fail("stats: %s %d, expected %d" % (k, g(k), v))
            drops = {k: v for k, v in tot.get("drops", {}).items() if v}
            if drops != ({"not_our_mac": n_fill} if n_fill else {}):
                self.fail("stats: drops %s, expected not_our_mac %d only" % (drops, n_fill))
            if st.get("mempool", {}).get("in_use") != 0:
                self.fail("stats: mempool %s, expected in_use 0" % (st.get("mempool"),))
        print("check_pcap: spray: %d packets forwarded (%d sprayed), %d fillers" % (n_fwd, n_sprayed, n_fill))
        for ln in lines:
            print(ln)

    def report(self):
        kinds = Counter(e["kind"] for e in self.man)
        vc = Counter(v for v, _ in self.verdicts.values())
        print("check_pcap: %d input frames (%s)" % (len(self.inputs), ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
        print("check_pcap: expected %d forward, %d ICMP too-big, %d drops; out.pcap has %d frames%s" % (
            vc["forward"], vc["icmp"], vc["drop"], len(self.outputs),
            "" if self.exc is None else ", exception port %d" % len(self.exc)))
        for vi, n, chi2, dof, p, rows in self.spread_report:
            vip = self.vips[vi]
            rel = max((Z_MAX * ((s * (1 - s) / n) ** 0.5) / s) for _, s, _, _ in rows) if n else 0
            print("  %-26s %-12s %5d keys  chi2 %6.2f dof %d p=%.3f  (bound |z|<=%.1f, i.e. up to %.0f%% rel)" % (
                lbpcap.vip_label(vip), vip.get("key", "5tuple"), n, chi2, dof, p, Z_MAX, 100 * rel))
            for b, s, c, z in rows:
                print("      %-12s expected %5.1f%%  got %5.1f%% (%4d)  z=%+.1f" % (
                    b, 100 * s, 100 * c / n if n else 0, c, z))
        if self.stats:
            t = self.stats.get("totals", {})
            print("check_pcap: stats rx %s fwd %s icmp %s hits %s misses %s evictions %s frags %s icmp_err %s "
                  "drops %s" % (
                      t.get("rx_packets"), t.get("forwarded"), t.get("icmp_sent"), t.get("flow_hits"),
                      t.get("flow_misses"), t.get("flow_evictions"), t.get("fragments"), t.get("icmp_errors"),
                {k: v for k, v in t.get("drops", {}).items() if v}))
            if getattr(self, "byte_def", None):
                print("check_pcap: byte counters count %s" % "; ".join(self.byte_def))
        if self.fails:
            print("check_pcap: FAIL: %d violations" % len(self.fails))
            shown = self.fails if self.verbose else self.fails[:60]
            for f in shown:
                print("  " + f)
            if len(shown) < len(self.fails):
                print("  ... %d more (-v shows all)" % (len(self.fails) - len(shown)))
            return 1
        print("check_pcap: PASS")
        return 0

    def run(self):
        self.index_inputs()
        if "flowstate" in json.load(open(os.path.join(self.dir, "manifest.json"))):
            self.scan_outputs()
            self.check_flowstate()
            return self.report()
        if "spray" in json.load(open(os.path.join(self.dir, "manifest.json"))):
            self.scan_outputs()
            self.check_spray()
            return self.report()
        self.model_pmtu()
        self.scan_outputs()
        self.check_packets()
        self.check_spread()
        self.check_stats()
        return self.report()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--out", help="default DIR/out.pcap")
    ap.add_argument("--stats", help="default DIR/stats.json; 'none' skips the stats checks")
    ap.add_argument("--exception", help="pcap written by the exception port (daemon run with --exception-port)")
    ap.add_argument("--fwd-out", help="pcap of the --out-port port: the encapsulated frames")
    ap.add_argument("--out-mac", help="the --out-port port's MAC (default: the receiving port's)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    out = a.out or os.path.join(a.dir, "out.pcap")
    stats = a.stats or os.path.join(a.dir, "stats.json")
    if stats == "none":
        stats = None
    sys.exit(Checker(a.dir, out, stats, a.verbose, a.exception, a.fwd_out, a.out_mac).run())


if __name__ == "__main__":
    main()
