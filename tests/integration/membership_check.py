#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Membership changes under traffic, checked packet by packet.

Runs in the client namespace, on the veth whose other end spillwayd reads
(net_af_packet). Phase 1 opens flows; then the membership changes through the
control socket (drain, remove, down, weight 0, add; one of them as a batch);
phase 2 sends more packets of the same flows plus new flows. Every packet
carries a unique sequence number, and every frame spillwayd sends back is
decoded independently (lbpcap.decode_output) and checked:

- each packet sent comes back exactly once, encapsulated to a backend of its VIP;
- established flows keep their backend, including on the draining and weight-0
  backends; flows of the removed and the down backend move, to a backend that
  may take new flows; new flows land only on backends that may take new flows;
- every new flow's backend equals the published Maglev table's slot for it
  (maglev_table raw dump, SipHash-1-3 computed here independently);
- the counters conserve packets.

usage: membership_check.py IFACE SOCKET CONFIG
"""

import os
import random
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbpcap  # noqa: E402
import spwrpc  # noqa: E402

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
CLIENT_MAC = "02:00:00:00:0c:01"
LB_MAC = "02:00:00:00:0b:01"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Wire:
    def __init__(self, iface):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.s.bind((iface, 0))
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
        self.s.settimeout(0.2)

    def send(self, frames):
        for f in frames:
            self.s.send(f)
            # Pace a little: the veth and the af_packet PMD ring are finite.
            time.sleep(0.00005)

    def receive(self, expect, timeout=10.0):
        got = []
        end = time.time() + timeout
        while len(got) < expect and time.time() < end:
            try:
                data, addr = self.s.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] == PACKET_OUTGOING:
                continue
            got.append(data)
        # Anything late would be a duplicate: give it a moment to show up.
        end = time.time() + 0.3
        while time.time() < end:
            try:
                data, addr = self.s.recvfrom(65535)
            except socket.timeout:
                break
            if addr[2] != PACKET_OUTGOING:
                got.append(data)
        return got


# --- SipHash-1-3, independent of the daemon's C code ------------------------
M64 = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash13(k0, k1, data):
    v0, v1, v2, v3 = (k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
                      k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573)

    def rnd():
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)  # noqa: E702
        v2 = (v2 + v3) & M64; v3 = _rotl(v3, 16); v3 ^= v2  # noqa: E702
        v0 = (v0 + v3) & M64; v3 = _rotl(v3, 21); v3 ^= v0  # noqa: E702
        v2 = (v2 + v1) & M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)  # noqa: E702

    n = len(data)
    for i in range(0, n - n % 8, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v3 ^= m
        rnd()
        v0 ^= m
    tail = data[n - n % 8:] + bytes(8 - n % 8)
    b = ((n & 0xFF) << 56) | (struct.unpack("<Q", tail)[0] & ((1 << 56) - 1))
    v3 ^= b
    rnd()
    v0 ^= b
    v2 ^= 0xFF
    rnd()
    rnd()
    rnd()
    return v0 ^ v1 ^ v2 ^ v3


def key_from_seed(seed):
    s = seed.encode()
    return (siphash13(0x7370696c6c776179, 0x6b65792d6c6f0000, s),
            siphash13(0x7370696c6c776179, 0x6b65792d68690000, s))


def flow_key_bytes(src, dst, sport, dport, proto):
    """The daemon's 40-byte flow key (docs/architecture.md: addresses, ports in
    network order, protocol, family tag 4)."""
    return (socket.inet_aton(src) + bytes(12) + socket.inet_aton(dst) + bytes(12) +
            struct.pack("!HH", sport, dport) + bytes([proto, 4, 0, 0]))


def main():
    iface, sock_path, cfg_path = sys.argv[1:4]
    import json
    cfg = json.load(open(cfg_path))
    vip = cfg["vips"][0]
    vref = spwrpc.vip_ref(vip["address"], vip["port"], vip["protocol"])
    rng = random.Random(7)
    wire = Wire(iface)
    rpc = spwrpc.Client(sock_path)
    seq = [0]

    def frame(flow):
        src, sport = flow
        seq[0] += 1
        payload = b"spw-seq:%08d" % seq[0]
        ip = lbpcap.l4_packet(src, vip["address"], 6, sport, vip["port"], payload)
        return seq[0], lbpcap.eth_frame(ip, CLIENT_MAC, LB_MAC)

    def run_phase(name, flows, per_flow):
        sent = {}
        frames = []
        for _ in range(per_flow):
            for fl in flows:
                s, fr = frame(fl)
                sent[s] = (fl, fr[14:])
                frames.append(fr)
        wire.send(frames)
        got = wire.receive(len(frames))
        seen = {}
        placed = {}
        for fr in got:
            d = lbpcap.decode_output(fr)
            if d.kind != "encap" or d.errors:
                fail("%s: unexpected frame back: kind %s errors %s" % (name, d.kind, d.errors))
            tag = d.inner[-16:]
            if not tag.startswith(b"spw-seq:"):
                fail("%s: inner packet without a sequence tag" % name)
            s = int(tag[8:])
            if s not in sent:
                fail("%s: packet %d was not sent in this phase" % (name, s))
            if s in seen:
                fail("%s: packet %d came back twice" % (name, s))
            if d.inner != sent[s][1]:
                fail("%s: packet %d inner bytes differ from what was sent" % (name, s))
            seen[s] = d.outer_dst
            fl = sent[s][0]
            if placed.setdefault(fl, d.outer_dst) != d.outer_dst:
                fail("%s: flow %s seen at %s and %s" % (name, fl, placed[fl], d.outer_dst))
        missing = [s for s in sent if s not in seen]
        if missing:
            fail("%s: %d of %d packets never came back (first: %d)" %
                 (name, len(missing), len(sent), missing[0]))
        print("%s: %d packets of %d flows, each back exactly once" % (name, len(sent), len(flows)))
        return placed

    n_old, n_new = 600, 600
    old = [("198.51.100.%d" % (1 + i % 250), 10000 + i) for i in range(n_old)]
    new = [("203.0.113.%d" % (1 + i % 250), 20000 + i) for i in range(n_new)]

    before = run_phase("phase 1", old, 2)
    by_backend = {}
    for fl, b in before.items():
        by_backend.setdefault(b, []).append(fl)
    print("phase 1 spread: " + ", ".join("%s=%d" % (b, len(f)) for b, f in sorted(by_backend.items())))

    # The changes: one call at a time, and one batch (one transaction).
    rpc.call("backend_set", vip=vref, address="10.1.0.2", state="draining")
    rpc.call("backend_remove", vip=vref, address="10.1.0.3")
    reps = rpc.batch([("backend_set", {"vip": vref, "address": "10.1.0.4", "state": "down"}),
                      ("backend_set", {"vip": vref, "address": "10.1.0.5", "weight": 0}),
                      ("backend_add", {"vip": vref, "address": "10.1.0.7", "weight": 2})])
    for r in reps:
        if "error" in r:
            fail("batch call failed: %s" % r["error"])
    # A batch with one bad call changes nothing.
    reps = rpc.batch([("backend_set", {"vip": vref, "address": "10.1.0.1", "state": "down"}),
                      ("backend_set", {"vip": vref, "address": "10.9.9.9", "weight": 1})])
    codes = sorted(r["error"]["code"] for r in reps if "error" in r)
    if codes != [-32010, -32001]:
        fail("bad batch: expected errors -32010 and -32001, got %s" % reps)
    # Wait until every worker runs the new snapshot.
    gen = None
    for _ in range(100):
        st = rpc.call("stats")
        gen = st["generation"]
        if all(c.get("snapshot_gen") == gen for c in st["cores"]):
            break
        time.sleep(0.01)
    else:
        fail("workers did not reach generation %s" % gen)

    new_ok = {"10.1.0.1", "10.1.0.6", "10.1.0.7"}  # active, weight > 0
    stays = {"10.1.0.1", "10.1.0.2", "10.1.0.5", "10.1.0.6"}  # flows keep these
    after = run_phase("phase 2", old + new, 2)
    moved = kept = 0
    for fl in old:
        b0, b1 = before[fl], after[fl]
        if b0 in stays:
            if b1 != b0:
                fail("flow %s moved from %s to %s, but its backend is still usable" % (fl, b0, b1))
            kept += 1
        else:
            if b1 == b0 or b1 not in new_ok:
                fail("flow %s on %s (removed/down) went to %s" % (fl, b0, b1))
            moved += 1
    for fl in new:
        if after[fl] not in new_ok:
            fail("new flow %s went to %s, which takes no new flows" % (fl, after[fl]))
    print("phase 2: %d established flows kept their backend, %d moved off removed/down backends"
          % (kept, moved))

    # New flows follow the published table: table[h mod M], h = low 32 bits of SipHash.
    tab = rpc.call("maglev_table", vip=vref, raw=True)
    k0, k1 = key_from_seed(cfg["maglev"]["seed"])
    M = tab["table_size"]
    for fl in new:
        h = siphash13(k0, k1, flow_key_bytes(fl[0], vip["address"], fl[1], vip["port"], 6))
        want = tab["table"][(h & 0xFFFFFFFF) % M]
        if want != after[fl]:
            fail("new flow %s at %s, the table says %s" % (fl, after[fl], want))
    print("phase 2: all %d new flows at the backend of their Maglev slot" % len(new))

    t = rpc.call("stats")["totals"]
    total = t["forwarded"] + t["icmp_sent"] + t["exception"] + sum(t["drops"].values())
    if t["rx_packets"] != total:
        fail("counters do not conserve: rx %d != %d" % (t["rx_packets"], total))
    want = 2 * n_old + 2 * (n_old + n_new)
    if t["forwarded"] != want:
        fail("forwarded %d, sent %d" % (t["forwarded"], want))
    print("counters: rx %d = forwarded %d + drops %d" %
          (t["rx_packets"], t["forwarded"], sum(t["drops"].values())))
    print("PASS")


if __name__ == "__main__":
    main()
