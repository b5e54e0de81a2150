#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Generate one case of the hot-key acceptance test (test_hot_zipf.sh).

  hot_zipf_gen.py OUTDIR --alpha A [--packets P] [--sources S] [--rate PPS]
                  [--flow-frac F] [--seed N]

The traffic: S source addresses (100.64.0.0/10, a NAT pool) ranked 1..S,
rank k carrying the share p_k = k^-A / H (H = sum of j^-A over 1..S) of the
connections, hence of the packets (every connection draws its length
independently of its source). Each connection is a short TCP exchange to
one VIP: SYN, 1-4 data packets (PSH+ACK, 32 bytes), FIN+ACK; it lasts
DUR_MIN..DUR_MAX seconds of the trace's clock and starts uniformly over the
trace, so thousands are open at once and interleaved. A source's ports
cycle through the ephemeral range in the order of its connections' starts,
so a busy source reuses a port only long after that port's previous
connection closed (the generator checks the gap and records the smallest).
The trace's clock runs at --rate packets per second; the pcap timestamps are
that clock (pcap time = trace time + 1700000000 s) and the feeder
(hot_zipf_feed.py) replays the frames at those times, since net_pcap reads as
fast as it can.

Each frame identifies itself without any table: the inner TCP sequence
number is conn * 64 + i (conn the connection's number, i the packet's index
in it) and the IPv4 ID is conn mod 65536.

Writes into OUTDIR:
  in.pcap        the frames, Ethernet to the receiving net_pcap port's MAC
  config.json    one src_ip-keyed TCP VIP, hot_mode "spread", 100 backends of
                 weight 1, hot {enabled, window_ms 50, epsilon 0.25}; with
                 --flow-frac, flows.capacity = ceil(F * the largest number of
                 connections open at once) (at least 64, the field's minimum)
  manifest.json  the parameters, the share bound (c - 1)/(N - 1) computed from
                 that config, H, counts, the reuse gap, the open-connection peak
  srcs.bin       array('I') of S: the address (as an integer) of each rank
  conns.bin      four arrays, one entry per connection: rank ('I'), source
                 port ('H'), packets ('B'), index in in.pcap of its SYN ('I')

Deterministic: the same arguments give byte-identical files. Every 1000th
frame is also built by scapy and must be byte-identical.
"""

import argparse
import array
import bisect
import ipaddress
import itertools
import json
import math
import os
import random
import socket
import struct
import sys

VIP = "192.0.2.10"
VIP_PORT = 80
N_BACKENDS = 100
BACKEND_FMT = "10.1.0.%d"          # 10.1.0.1 .. 10.1.0.100
SRC_NET = int(ipaddress.ip_address("100.64.0.0"))
SRC_SPAN = 1 << 22                 # 100.64.0.0/10
PORT_LO, PORT_HI = 32768, 61000    # Linux's default ephemeral range
PORT_MAC = "02:70:63:61:70:00"     # net_pcap port 0
SRC_MAC = "02:00:00:00:00:02"
WINDOW_MS = 50
EPSILON = 0.25
DATA_MIN, DATA_MAX = 1, 4          # data packets per connection
PAYLOAD = 32
DUR_MIN, DUR_MAX = 0.01, 0.25      # connection lifetime, trace seconds
REUSE_MIN_S = 0.5                  # smallest allowed close-to-reuse gap
PCAP_T0 = 1700000000
SCAPY_EVERY = 1000


def csum_le(b):
    """RFC 1071 checksum of b (even length) summed as little-endian words:
    the one's-complement sum is byte-order independent, so packing the
    result little-endian gives the network-order checksum bytes."""
    s = sum(memoryview(b).cast("H"))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return struct.pack("<H", ~s & 0xFFFF)


def tcp_ip(src_b, dst_b, sport, dport, seq, ack, flags, ipid, payload):
    """IPv4 (IHL 5, DF, TTL 64) + TCP (data offset 5, window 65535) bytes."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0) + payload
    pseudo = src_b + dst_b + struct.pack("!xBH", 6, len(tcp))
    tcp = tcp[:16] + csum_le(pseudo + tcp) + tcp[18:]
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), ipid, 0x4000, 64, 6, 0,
                      src_b, dst_b)
    return hdr[:10] + csum_le(hdr) + hdr[12:] + tcp


def scapy_tcp_ip(src, dst, sport, dport, seq, ack, flags, ipid, payload):
    from scapy.layers.inet import IP, TCP
    from scapy.packet import Raw
    p = IP(src=src, dst=dst, flags="DF", id=ipid, ttl=64) / \
        TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, window=65535)
    if payload:
        p = p / Raw(payload)
    return bytes(p)


FLAG_BITS = {"S": 0x02, "PA": 0x18, "FA": 0x11}


def make_config(seed, flow_capacity):
    cfg = {
        "encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
        "maglev": {"seed": "hot-zipf-%d" % seed},
        "hot": {"enabled": True, "window_ms": WINDOW_MS, "epsilon": EPSILON},
        "vips": [{
            "address": VIP, "port": VIP_PORT, "protocol": "tcp", "key": "src_ip",
            "hot_mode": "spread", "encap": "ipip",
            "backends": [{"address": BACKEND_FMT % i, "weight": 1}
                         for i in range(1, N_BACKENDS + 1)],
        }],
    }
    if flow_capacity:
        cfg["flows"] = {"capacity": flow_capacity}
    return cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--alpha", type=float, required=True)
    ap.add_argument("--packets", type=int, default=2000000)
    ap.add_argument("--sources", type=int, default=100000)
    ap.add_argument("--rate", type=float, default=400000.0, help="trace packets per second")
    ap.add_argument("--flow-frac", type=float, default=0.0,
                    help="flows.capacity as this fraction of the open-connection peak")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    rnd = random.Random("hot-zipf/%d/%r/%d/%d" % (a.seed, a.alpha, a.packets, a.sources))

    S = a.sources
    weights = [k ** -a.alpha for k in range(1, S + 1)]
    H = math.fsum(weights)
    cum = list(itertools.accumulate(weights))
    addrs = rnd.sample(range(SRC_SPAN), S)
    mean_len = 2 + (DATA_MIN + DATA_MAX) / 2
    C = int(round(a.packets / mean_len))
    if C >= 1 << 26:
        sys.exit("hot_zipf_gen: too many connections for the sequence-number encoding")
    T = a.packets / a.rate
    rank = rnd.choices(range(S), cum_weights=cum, k=C)
    npk = [2 + rnd.randint(DATA_MIN, DATA_MAX) for _ in range(C)]
    start = [0.0] * C
    end = [0.0] * C
    keys = []
    for c in range(C):
        dur = rnd.uniform(DUR_MIN, DUR_MAX)
        t0 = rnd.uniform(0.0, T - dur)
        start[c], end[c] = t0, t0 + dur
        k = npk[c]
        offs = sorted(rnd.random() for _ in range(k - 2))
        times = [t0] + [t0 + dur * u for u in offs] + [t0 + dur]
        for i, t in enumerate(times):
            keys.append((int(t * 1e9) << 29) | (c << 3) | i)
    keys.sort()

    # ports: per source, in order of connection start, cycling the range
    order = sorted(range(C), key=start.__getitem__)
    nports = PORT_HI - PORT_LO
    nxt = {}
    last_end = {}
    sport = [0] * C
    reused, min_gap = 0, None
    for c in order:
        r = rank[c]
        p = nxt.get(r)
        if p is None:
            p = rnd.randrange(nports)
        nxt[r] = (p + 1) % nports
        sport[c] = PORT_LO + p
        prev = last_end.get((r, p))
        if prev is not None:
            reused += 1
            gap = start[c] - prev
            min_gap = gap if min_gap is None else min(min_gap, gap)
        last_end[(r, p)] = end[c]
    if min_gap is not None and min_gap < REUSE_MIN_S:
        sys.exit("hot_zipf_gen: a port reused %.3f s after its close (< %.1f s): "
                 "lower --rate or raise the range" % (min_gap, REUSE_MIN_S))

    # open connections at once (SYN sent, FIN not yet)
    ev = sorted([(start[c], 1) for c in range(C)] + [(end[c], -1) for c in range(C)])
    live = peak_live = 0
    for _, d in ev:
        live += d
        peak_live = max(live, peak_live)
    flow_cap = max(64, math.ceil(a.flow_frac * peak_live)) if a.flow_frac > 0 else 0

    # frames
    eth = bytes.fromhex(PORT_MAC.replace(":", "")) + bytes.fromhex(SRC_MAC.replace(":", "")) + \
        b"\x08\x00"
    dst_b = socket.inet_aton(VIP)
    src_b = [None] * S
    syn_pos = array.array("I", bytes(4 * C))
    out = open(os.path.join(a.outdir, "in.pcap"), "wb")
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    buf = []
    for pos, key in enumerate(keys):
        i = key & 7
        c = (key >> 3) & ((1 << 26) - 1)
        t_ns = key >> 29
        r = rank[c]
        sb = src_b[r]
        if sb is None:
            sb = src_b[r] = struct.pack("!I", SRC_NET + addrs[r])
        k = npk[c]
        if i == 0:
            fl, ack, pl = "S", 0, b""
            syn_pos[c] = pos
        else:
            fl, ack = ("FA" if i == k - 1 else "PA"), 1
            pl = b"" if fl == "FA" else struct.pack("!II", c, i) * (PAYLOAD // 8)
        seq = c * 64 + i
        ipid = c & 0xFFFF
        ip = tcp_ip(sb, dst_b, sport[c], VIP_PORT, seq, ack, FLAG_BITS[fl], ipid, pl)
        if pos % SCAPY_EVERY == 0:
            ref = scapy_tcp_ip(socket.inet_ntoa(sb), VIP, sport[c], VIP_PORT, seq, ack, fl, ipid,
                               pl)
            if ref != ip:
                sys.exit("hot_zipf_gen: frame %d differs from scapy's build:\n %s\n %s"
                         % (pos, ip.hex(), ref.hex()))
        fr = eth + ip
        buf.append(struct.pack("<IIII", PCAP_T0 + t_ns // 1000000000, (t_ns % 1000000000) // 1000,
                               len(fr), len(fr)) + fr)
        if len(buf) >= 65536:
            out.write(b"".join(buf))
            buf = []
    out.write(b"".join(buf))
    out.close()

    with open(os.path.join(a.outdir, "srcs.bin"), "wb") as f:
        array.array("I", (SRC_NET + x for x in addrs)).tofile(f)
    with open(os.path.join(a.outdir, "conns.bin"), "wb") as f:
        array.array("I", rank).tofile(f)
        array.array("H", sport).tofile(f)
        array.array("B", npk).tofile(f)
        syn_pos.tofile(f)
    cfg = make_config(a.seed, flow_cap)
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    n = len(cfg["vips"][0]["backends"])
    cap = 1 + cfg["hot"]["epsilon"]
    # the share above which one key alone puts its home over the cap:
    # 1 - p + N p > c  <=>  p > (c - 1) / (N - 1)  (N equal backends)
    bound = (cap - 1) / (n - 1)
    above = bisect.bisect_left([-w / H for w in weights], -bound)  # ranks with p > bound
    man = {
        "alpha": a.alpha, "sources": S, "H": H, "seed": a.seed, "rate_pps": a.rate,
        "duration_s": T, "packets": len(keys), "connections": C,
        "window_ms": WINDOW_MS, "cap": cap, "backends": n, "bound": bound,
        "sources_above_bound": above, "peak_live": peak_live, "flow_frac": a.flow_frac,
        "flow_capacity": flow_cap or None, "port_mac": PORT_MAC,
        "ports_reused": reused, "reuse_min_gap_s": min_gap,
        "vip": VIP, "vip_port": VIP_PORT,
    }
    with open(os.path.join(a.outdir, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print("hot_zipf_gen: alpha %.2f: %d packets, %d connections over %d sources (%d above the "
          "bound %.5f), %.2f s at %d pps, %d open at most%s; %d ports reused, %.2f s after "
          "close at least" % (a.alpha, len(keys), C, S, above, bound, T, a.rate, peak_live,
                              ", flows.capacity %d" % flow_cap if flow_cap else "", reused,
                              min_gap if min_gap is not None else float("nan")))


if __name__ == "__main__":
    main()
