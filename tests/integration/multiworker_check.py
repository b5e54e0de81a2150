#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Several workers end to end: per-core flow tables, counter merging and RCU
with several readers, judged packet by packet.

Runs in the generator's namespace, on the veth whose peer spillwayd reads
with net_af_packet and two queue pairs (one per worker; the kernel's
PACKET_FANOUT_HASH picks each flow's queue, as a NIC's RSS would). Sends
TCP and UDP flows in closed-loop batches (the next batch only once every
output of the last one came back, so no socket ring overflows and rolls a
flow over to the other queue) and checks every frame that comes back:

- it is the encapsulation of exactly one packet the test sent (inner packet
  byte for byte, each sent packet once), IPIP from encap.source_v4, Ethernet
  from the balancer's MAC to encap.next_hop_mac, outer TTL 64 and a valid
  header checksum (lbpcap.decode_output);
- its backend is maglev_ref.py's for a new flow, and for a packet of a flow
  already seen the backend that flow had (the test's own model of pinning);
- after a backend is set draining through the control socket, flows it
  held keep it on whichever worker holds them, and new flows follow the
  reference table without it; after a backend is added, the same;
- stats: the cores' forwarded counters add up to what the test counted,
  each per-VIP counter to the test's count for the VIP, and both workers
  forwarded part of the traffic (the flows were spread).

usage: multiworker_check.py CTL_SOCK CONFIG IFACE LB_MAC WORKERS
"""

import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbhash  # noqa: E402
import lbpcap  # noqa: E402
import maglev_ref  # noqa: E402
import spwrpc  # noqa: E402

CTL, CONFIG, IFACE, LB_MAC, WORKERS = (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
                                       int(sys.argv[5]))
PACKET_OUTGOING = 4
ETH_P_ALL = 0x0003
GEN_MAC = "02:00:00:00:00:09"
BATCH = 48


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Capture(threading.Thread):
    """Every frame arriving on IFACE (not the ones this host sends)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind((IFACE, 0))
        self.sock.settimeout(0.2)
        self.frames = []
        self.lock = threading.Lock()
        self.stop = False

    def run(self):
        while not self.stop:
            try:
                data, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] == PACKET_OUTGOING:
                continue
            with self.lock:
                self.frames.append(data)

    def take(self):
        with self.lock:
            out, self.frames = self.frames, []
        return out


class Run:
    def __init__(self, cfg):
        self.cfg = cfg
        self.key = lbhash.key_from_seed(cfg["maglev"]["seed"])
        self.members = {}  # vip index -> backend objects (the test's model)
        for i, v in enumerate(cfg["vips"]):
            self.members[i] = [dict(b) for b in v["backends"]]
        self.pinned = {}   # (vip, 5-tuple) -> backend address
        self.sent = {}     # inner packet bytes -> (vip, flow, expected backend)
        self.n_out = {}    # vip index -> packets the test saw forwarded
        self.n_be = {}     # (vip index, backend) -> packets the test saw forwarded
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.tx.bind((IFACE, 0))
        self.cap = Capture()
        self.cap.start()
        self.serial = 0

    def table(self, vi):
        return maglev_ref.vip_table(self.cfg["maglev"]["seed"], self.cfg["maglev"]["table_size"],
                                    self.members[vi])

    def expect(self, vi, flow):
        """The backend the packet must reach: the pinned one, else the reference's."""
        if (vi, flow) in self.pinned:
            return self.pinned[(vi, flow)]
        v = self.cfg["vips"][vi]
        src, dst, sport, dport, proto = flow
        b = maglev_ref.backend_for(self.table(vi), self.key, src, dst, sport, dport, proto,
                                   v.get("key", "5tuple"))
        if b is None:
            fail("test bug: VIP %d has no usable backend" % vi)
        self.pinned[(vi, flow)] = b
        return b

    def packet(self, vi, flow, flags):
        src, dst, sport, dport, proto = flow
        self.serial += 1
        payload = struct.pack("!I", self.serial) + b"m" * 28
        return lbpcap.l4_packet(src, dst, lbpcap.PROTO_NUM[proto], sport, dport, payload,
                                tcp_flags=flags or "PA")

    def batch(self, items, what):
        """Send (vip, flow, flags) items; every output is judged."""
        for k in range(0, len(items), BATCH):
            chunk = items[k:k + BATCH]
            want = {}
            for vi, flow, flags in chunk:
                ip = self.packet(vi, flow, flags)
                want[ip] = (vi, flow, self.expect(vi, flow))
            for ip in want:
                self.tx.send(lbpcap.eth_frame(ip, GEN_MAC, LB_MAC))
            self.collect(want, "%s, batch %d" % (what, k // BATCH))

    def collect(self, want, what):
        got = 0
        deadline = time.monotonic() + 20.0
        pending = dict(want)
        while pending and time.monotonic() < deadline:
            frames = self.cap.take()
            if not frames:
                time.sleep(0.01)
                continue
            for f in frames:
                self.judge(f, pending, what)
                got += 1
        if pending:
            fail("%s: %d of %d packets never came back (after 20 s); first: %s" %
                 (what, len(pending), len(want), next(iter(pending.values()))))
        time.sleep(0.02)
        for f in self.cap.take():  # nothing else may follow
            self.judge(f, pending, what)

    def judge(self, frame, pending, what):
        d = lbpcap.decode_output(frame)
        if d.kind != "encap":
            fail("%s: output frame is %s, not an encapsulated packet: %s" %
                 (what, d.kind, frame[:64].hex()))
        if d.errors:
            fail("%s: output frame: %s" % (what, "; ".join(d.errors)))
        if d.inner not in pending:
            fail("%s: output carries a packet not sent, or sent once and forwarded twice: %s" %
                 (what, d.inner[:48].hex()))
        vi, flow, be = pending.pop(d.inner)
        e = self.cfg["encap"]
        if d.eth_src != LB_MAC or d.eth_dst != e["next_hop_mac"]:
            fail("%s: flow %s: Ethernet %s -> %s, want %s -> %s" %
                 (what, flow, d.eth_src, d.eth_dst, LB_MAC, e["next_hop_mac"]))
        if d.outer_src != e["source_v4"] or d.outer_dst != be:
            fail("%s: flow %s of VIP %d: outer %s -> %s, want %s -> %s (the reference's "
                 "backend or the flow's pinned one)" %
                 (what, flow, vi, d.outer_src, d.outer_dst, e["source_v4"], be))
        if d.ttl != 64:
            fail("%s: outer TTL %d, want 64" % (what, d.ttl))
        self.n_out[vi] = self.n_out.get(vi, 0) + 1
        self.n_be[(vi, be)] = self.n_be.get((vi, be), 0) + 1


def flows(vi, cfg, n, base):
    v = cfg["vips"][vi]
    out = []
    for i in range(n):
        j = base + i
        out.append(("198.18.%d.%d" % (j // 200, 1 + j % 200), v["address"], 20000 + j,
                    v["port"], v["protocol"]))
    return out


def tcp_items(vi, fl, opening):
    """A TCP flow's packets: SYN, ACK and data when opening, else data only."""
    items = []
    for f in fl:
        for flags in (("S", "A", "PA") if opening else ("PA",)):
            items.append((vi, f, flags))
    return items


def interleave(*lists):
    out = []
    for k in range(max(len(x) for x in lists)):
        for x in lists:
            if k < len(x):
                out.append(x[k])
    return out


def main():
    cfg = json.load(open(CONFIG))
    r = Run(cfg)
    c = spwrpc.Client(CTL)
    tcp_vi, udp_vi = 0, 1

    # 1: 160 TCP connections (SYN, ACK, data) and 96 UDP flows (two datagrams).
    t1, u1 = flows(tcp_vi, cfg, 160, 0), flows(udp_vi, cfg, 96, 1000)
    r.batch(interleave(tcp_items(tcp_vi, t1, True), [(udp_vi, f, "") for f in u1 * 2]),
            "phase 1 (new flows)")
    held = {}
    for f in t1:
        held.setdefault(r.pinned[(tcp_vi, f)], []).append(f)
    victim = max(held, key=lambda b: len(held[b]))
    print("phase 1: %d TCP and %d UDP flows through %d workers; %s holds %d connections" %
          (len(t1), len(u1), WORKERS, victim, len(held[victim])))

    # 2: the busiest TCP backend drains: its connections stay, new ones avoid it.
    v = cfg["vips"][tcp_vi]
    c.call("backend_set", vip=spwrpc.vip_ref(v["address"], v["port"], v["protocol"]),
           address=victim, state="draining")
    for b in r.members[tcp_vi]:
        if b["address"] == victim:
            b["state"] = "draining"
    t2 = flows(tcp_vi, cfg, 120, 2000)
    r.batch(interleave(tcp_items(tcp_vi, t1, False), tcp_items(tcp_vi, t2, True)),
            "phase 2 (%s draining)" % victim)
    if any(r.pinned[(tcp_vi, f)] == victim for f in t2):
        fail("phase 2: a new connection went to the draining %s" % victim)

    # 3: a backend is added to the UDP VIP: its new flows follow the new table
    # on both workers, its old flows keep their backends.
    u = cfg["vips"][udp_vi]
    c.call("backend_add", vip=spwrpc.vip_ref(u["address"], u["port"], u["protocol"]),
           address="10.2.0.9")
    r.members[udp_vi].append({"address": "10.2.0.9"})
    u3 = flows(udp_vi, cfg, 120, 3000)
    r.batch(interleave([(udp_vi, f, "") for f in u1], [(udp_vi, f, "") for f in u3]),
            "phase 3 (10.2.0.9 added)")
    if not any(r.pinned[(udp_vi, f)] == "10.2.0.9" for f in u3):
        fail("phase 3: no new UDP flow reached the added backend (test too small?)")

    # Counters: the cores' sums against the test's own counts.
    st = c.call("stats")
    cores = st.get("cores", [])
    if len(cores) != WORKERS:
        fail("stats lists %d cores, %d workers were started" % (len(cores), WORKERS))
    total = sum(r.n_out.values())
    fwd = [k.get("forwarded", 0) for k in cores]
    if sum(fwd) != total:
        fail("the cores' forwarded counters add up to %d, the test saw %d packets forwarded"
             % (sum(fwd), total))
    if min(fwd) == 0:
        fail("one worker forwarded nothing (%s): the flows were not spread" % fwd)
    for vi in (tcp_vi, udp_vi):
        vv = cfg["vips"][vi]
        sv = [x for x in st.get("vips", []) if lbpcap.ip_norm(x.get("address", "0.0.0.0")) ==
              vv["address"] and x.get("port") == vv["port"]]
        if len(sv) != 1:
            fail("stats.vips has %d entries for VIP %d" % (len(sv), vi))
        if sv[0].get("packets") != r.n_out[vi]:
            fail("stats for VIP %d: %s packets, the test sent and saw forwarded %d" %
                 (vi, sv[0].get("packets"), r.n_out[vi]))
        n_flows = len({f for (i, f) in r.pinned if i == vi})
        if sv[0].get("new_flows") != n_flows:
            fail("stats for VIP %d: %s new flows, the test started %d" %
                 (vi, sv[0].get("new_flows"), n_flows))
        for b in sv[0].get("backends", []):
            want = r.n_be.get((vi, b["address"]), 0)
            if b.get("packets") != want:
                fail("stats for backend %s of VIP %d: %s packets, the test saw %d reach it" %
                     (b["address"], vi, b.get("packets"), want))
    r.cap.stop = True
    print("PASS: %d packets through %d workers (forwarded per core %s), every output judged; "
          "draining and an added backend held on every worker" % (total, WORKERS, fwd))


if __name__ == "__main__":
    main()
