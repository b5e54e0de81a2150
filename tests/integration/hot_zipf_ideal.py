#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""An ideal balancer for hot_zipf_check.py's self-test (test_hot_zipf.sh with
HOT_ZIPF_IDEAL=1): what spillwayd should send for a case, written without it.

  hot_zipf_ideal.py DIR

Reads what hot_zipf_gen.py wrote in DIR and writes DIR/out.pcap and
DIR/feed.json as the daemon and the feeder would, for a balancer that:
  - counts windows of WINDOW_FRAMES input frames (rate * window_ms), frame i
    in window 1 + i // WINDOW_FRAMES, and records a poll every quarter window;
  - sends every connection to one backend, chosen at its SYN (an unbounded
    flow table), and every frame in input order;
  - knows the true shares: from window PROMOTE_WINDOW on, a new connection of
    a source with share p > (c - 1)/(N - 1) goes to one of its r replicas
    (picked per connection, uniformly); any other to the source's Maglev home
    (maglev_ref.py);
  - lays the replicas on projected loads: each backend starts with the
    shares of the sources below the bound that it is home to; sources in
    decreasing share take, each, the r least loaded backends for the
    smallest r that keeps those under c (r = N when none does), p / r each.
So the checker's load limit, spread rule and conservation must all hold on
this output; a failure here is the checker's (or the generator's) fault.
The outer headers are IPv4 protocol 4 from encap.source_v4 to the backend,
TTL 64, DF copied from the inner packet, to encap.next_hop_mac.
"""

import array
import json
import mmap
import os
import random
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbhash  # noqa: E402
import maglev_ref  # noqa: E402

PROMOTE_WINDOW = 3


def csum(b):
    s = sum(memoryview(b).cast("H"))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return struct.pack("<H", ~s & 0xFFFF)


def main():
    d = sys.argv[1]
    man = json.load(open(os.path.join(d, "manifest.json")))
    cfg = json.load(open(os.path.join(d, "config.json")))
    vip = cfg["vips"][0]
    backends = [b["address"] for b in vip["backends"]]
    N = len(backends)
    c = 1 + cfg["hot"]["epsilon"]
    bound = (c - 1) / (N - 1)
    S, alpha, H = man["sources"], man["alpha"], man["H"]
    share = [(k ** -alpha) / H for k in range(1, S + 1)]
    srcs = array.array("I")
    C = man["connections"]
    rank, sport, npk = array.array("I"), array.array("H"), array.array("B")
    with open(os.path.join(d, "srcs.bin"), "rb") as f:
        srcs.fromfile(f, S)
    with open(os.path.join(d, "conns.bin"), "rb") as f:
        rank.fromfile(f, C)
        sport.fromfile(f, C)
        npk.fromfile(f, C)
    seed = cfg.get("maglev", {}).get("seed", "spillway")
    table = maglev_ref.vip_table(seed, cfg.get("maglev", {}).get("table_size", 65537),
                                 vip["backends"])
    key = lbhash.key_from_seed(seed)
    bidx = {maglev_ref.canonical_address(b): i for i, b in enumerate(backends)}
    home = [bidx[maglev_ref.backend_for(table, key, socket.inet_ntoa(struct.pack("!I", srcs[r])),
                                        vip["address"], 0, vip["port"], 6, vip["key"])]
            for r in range(S)]

    load = [0.0] * N
    for r in range(S):
        if share[r] <= bound:
            load[home[r]] += share[r] * N
    replicas = {}
    for r in range(S):
        p = share[r]
        if p <= bound:
            break
        order = sorted(range(N), key=lambda b: (load[b], b))
        for n in range(2, N + 1):
            if load[order[n - 1]] + N * p / n <= c:
                break
        replicas[r] = order[:n]
        for b in order[:n]:
            load[b] += N * p / n

    wf = int(round(man["rate_pps"] * man["window_ms"] / 1000))
    rnd = random.Random(1)
    conn_be = array.array("h", [-1]) * C
    f = open(os.path.join(d, "in.pcap"), "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    out = open(os.path.join(d, "out.pcap"), "wb")
    out.write(m[0:24])
    src_b = socket.inet_aton(cfg["encap"]["source_v4"])
    dst_b = [socket.inet_aton(b) for b in backends]
    eth = bytes.fromhex(cfg["encap"]["next_hop_mac"].replace(":", "")) + \
        bytes.fromhex(man["port_mac"].replace(":", "")) + b"\x08\x00"
    o, size, i, buf, polls = 24, len(m), 0, [], []
    while o + 16 <= size:
        sec, usec, incl = struct.unpack_from("<III", m, o)
        inner = m[o + 30:o + 16 + incl]
        o += 16 + incl
        if i % max(1, wf // 4) == 0:
            polls.append([i, i, 1 + i // wf, 0.0])
        seq = struct.unpack_from("!I", inner, 24)[0]
        conn = seq >> 6
        be = conn_be[conn]
        if be < 0:
            r = rank[conn]
            if r in replicas and 1 + i // wf >= PROMOTE_WINDOW:
                be = rnd.choice(replicas[r])
            else:
                be = home[r]
            conn_be[conn] = be
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(inner), 0, inner[6] << 8 & 0x4000,
                          64, 4, 0, src_b, dst_b[be])
        fr = eth + hdr[:10] + csum(hdr) + hdr[12:] + inner
        buf.append(struct.pack("<IIII", sec, usec, len(fr), len(fr)) + fr)
        i += 1
        if len(buf) >= 65536:
            out.write(b"".join(buf))
            buf = []
    out.write(b"".join(buf))
    out.close()
    polls.append([i, i, 1 + i // wf, 0.0])
    with open(os.path.join(d, "feed.json"), "w") as fj:
        json.dump({"polls": polls, "frames": i, "feed_s": None, "ideal": True}, fj)
    print("hot_zipf_ideal: %d frames, %d sources spread from window %d, projected peak %.3f"
          % (i, len(replicas), PROMOTE_WINDOW, max(load)))


if __name__ == "__main__":
    main()
