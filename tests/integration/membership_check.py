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
- every new flow's backend is the one maglev_ref.py predicts (the Maglev
  table of the membership this test configured and changed, the flow's key
  per the VIP's key mode, SipHash-1-3 and table[h mod M], all computed here):
  phase 1 from the configuration file, phase 3 from the model after the
  changes, phase 4 on a VIP added at run time with src_ip keys and named,
  weighted backends; the daemon's own tables (maglev_table raw) are only
  compared with that reference, never used as the expectation;
- the counters conserve packets.

usage: membership_check.py IFACE SOCKET CONFIG
"""

import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbhash  # noqa: E402
import lbpcap  # noqa: E402
import maglev_ref  # noqa: E402
import spwrpc  # noqa: E402

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
CLIENT_MAC = "02:00:00:00:0c:01"
LB_MAC = "02:00:00:00:0b:01"  # lb0's MAC (test_membership.sh sets it)


# Rounds of retransmission of lost packets per phase (see exchange()).
RETRIES = 3


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


class Model:
    """This test's own record of a VIP's backends: what it configured, changed
    by every call the daemon accepted. The reference tables come from it."""

    def __init__(self, backends):
        self.b = {}
        for b in backends:
            self.apply("backend_add", b)

    def apply(self, method, p):
        a = maglev_ref.canonical_address(p["address"])
        if method == "backend_add":
            if a in self.b:
                raise AssertionError("model: %s added twice" % a)
            self.b[a] = {"address": a, "weight": p.get("weight", 1),
                         "state": p.get("state", "active")}
            if p.get("name"):
                self.b[a]["name"] = p["name"]
        elif method == "backend_remove":
            del self.b[a]
        elif method == "backend_set":
            self.b[a].update({k: p[k] for k in ("weight", "state") if k in p})
        else:
            raise AssertionError("model: no method %s" % method)

    def table(self, seed, m):
        return maglev_ref.vip_table(seed, m, list(self.b.values()))


def main():
    iface, sock_path, cfg_path = sys.argv[1:4]
    import json
    cfg = json.load(open(cfg_path))
    vip = cfg["vips"][0]
    vref = spwrpc.vip_ref(vip["address"], vip["port"], vip["protocol"])
    rng = random.Random(7)
    seed = cfg["maglev"]["seed"]
    M = cfg["maglev"]["table_size"]
    key = lbhash.key_from_seed(seed)
    model = Model(vip["backends"])
    wire = Wire(iface)
    rpc = spwrpc.Client(sock_path)
    seq = [0]

    def frame(flow, vaddr):
        src, sport = flow
        seq[0] += 1
        payload = b"spw-seq:%08d" % seq[0]
        ip = lbpcap.l4_packet(src, vaddr, 6, sport, vip["port"], payload)
        return seq[0], lbpcap.eth_frame(ip, CLIENT_MAC, LB_MAC)

    def exchange(name, flows, per_flow, vaddr=vip["address"], during=None, expect_back=True):
        """Send per_flow rounds of packets of flows (while during() runs, if
        given); return {flow: [backend of each packet, in sending order]}."""
        sent = {}
        frames = []
        for _ in range(per_flow):
            for fl in flows:
                s, fr = frame(fl, vaddr)
                sent[s] = (fl, fr[14:])
                frames.append(fr)
        got = []
        rx = threading.Thread(target=lambda: got.extend(
            wire.receive(len(frames) if expect_back else 1 << 30,
                         timeout=30 if expect_back else 1.5)))
        rx.start()
        tx = threading.Thread(target=wire.send, args=(frames,))
        tx.start()
        if during is not None:
            during()
        tx.join()
        rx.join()
        if not expect_back:
            if got:
                fail("%s: %d frames came back, expected none" % (name, len(got)))
            print("%s: %d packets sent, none came back" % (name, len(frames)))
            return {}
        seen = {}

        def account(frames_back):
            for fr in frames_back:
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

        account(got)
        # Loss under a loaded machine (the veth or the af_packet ring drops
        # when a side is not scheduled) is attributed, not failed on: the
        # missing packets are sent again, the same bytes, up to RETRIES
        # rounds, and counted. Whatever the daemon sends back must still be
        # right; a packet still missing after that fails the test.
        retransmitted = 0
        for _ in range(RETRIES):
            missing = [s for s in sent if s not in seen]
            if not missing:
                break
            retransmitted += len(missing)
            again = [lbpcap.eth_frame(sent[s][1], CLIENT_MAC, LB_MAC) for s in missing]
            back = []
            rx = threading.Thread(target=lambda: back.extend(wire.receive(len(again), timeout=10)))
            rx.start()
            wire.send(again)
            rx.join()
            account(back)
        missing = [s for s in sent if s not in seen]
        if missing:
            fail("%s: %d of %d packets never came back, %d retransmissions included (first: %d)" %
                 (name, len(missing), len(sent), retransmitted, missing[0]))
        if retransmitted:
            print("%s: %d packets lost on the way and sent again (loaded machine)" %
                  (name, retransmitted))
        path = {}
        for s in sorted(seen):
            path.setdefault(sent[s][0], []).append(seen[s])
        print("%s: %d packets of %d flows, each back exactly once" % (name, len(sent), len(flows)))
        return path

    def one_backend(name, path):
        placed = {}
        for fl, bs in path.items():
            if len(set(bs)) != 1:
                fail("%s: flow %s seen at %s" % (name, fl, sorted(set(bs))))
            placed[fl] = bs[0]
        return placed

    def call(method, **p):
        """One change, through the socket and into the model."""
        rpc.call(method, **p)
        model.apply(method, p)

    def call_batch(calls):
        """A batch that must succeed as a whole (one transaction)."""
        reps = rpc.batch(calls)
        for r in reps:
            if "error" in r:
                fail("batch call failed: %s" % r["error"])
        for method, p in calls:
            model.apply(method, p)

    def same_table(what, ref, want):
        """The daemon's published table against the reference (a comparison:
        the expectation is want, computed here)."""
        got = rpc.call("maglev_table", vip=ref, raw=True)
        if got["table_size"] != M:
            fail("%s: table size %d, configured %d" % (what, got["table_size"], M))
        d = maglev_ref.diff(got["table"], want)
        if d:
            fail("%s: the published Maglev table is not the reference: %s" % (what, d))
        print("%s: published table identical to maglev_ref.py's (%s)" % (
            what, ", ".join("%s=%d" % kv for kv in sorted(maglev_ref.slot_counts(want).items()))))

    def predicted(what, placed, table, vaddr, port, mode):
        """Every flow in placed ({(src, sport): backend}, all of them new
        flows when they were placed) at its reference backend."""
        for (src, sport), b in sorted(placed.items()):
            want = maglev_ref.backend_for(table, key, src, vaddr, sport, port, "tcp", mode)
            if b != want:
                fail("%s: new flow %s:%d -> %s:%d at %s, maglev_ref.py says %s" % (
                    what, src, sport, vaddr, port, b, want))
        print("%s: all %d new flows at the backend maglev_ref.py predicts (key %s)" % (
            what, len(placed), mode))

    def wait_all_workers():
        for _ in range(200):
            st = rpc.call("stats")
            if all(c.get("snapshot_gen") == st["generation"] for c in st["cores"]):
                return st
            time.sleep(0.01)
        fail("workers did not reach generation %s" % st["generation"])

    n_old, n_new = 600, 600
    old = [("198.51.100.%d" % (1 + i % 250), 10000 + i) for i in range(n_old)]
    new = [("203.0.113.%d" % (1 + i % 250), 20000 + i) for i in range(n_new)]

    before = one_backend("phase 1", exchange("phase 1", old, 2))
    by_backend = {}
    for fl, b in before.items():
        by_backend.setdefault(b, []).append(fl)
    print("phase 1 spread: " + ", ".join("%s=%d" % (b, len(f)) for b, f in sorted(by_backend.items())))
    t1 = model.table(seed, M)
    same_table("phase 1", vref, t1)
    predicted("phase 1", before, t1, vip["address"], vip["port"], vip.get("key", "5tuple"))

    def changes():
        """The membership changes, made while phase 2's packets are in flight:
        one call at a time, one batch (one transaction), a batch that must
        change nothing, and churn on a backend that carries no old flow."""
        time.sleep(0.05)
        call("backend_set", vip=vref, address="10.1.0.2", state="draining")
        call("backend_remove", vip=vref, address="10.1.0.3")
        call_batch([("backend_set", {"vip": vref, "address": "10.1.0.4", "state": "down"}),
                    ("backend_set", {"vip": vref, "address": "10.1.0.5", "weight": 0}),
                    ("backend_add", {"vip": vref, "address": "10.1.0.7", "weight": 2})])
        # Refused as a whole: the model does not change.
        reps = rpc.batch([("backend_set", {"vip": vref, "address": "10.1.0.1", "state": "down"}),
                          ("backend_set", {"vip": vref, "address": "10.9.9.9", "weight": 1})])
        codes = sorted(r["error"]["code"] for r in reps if "error" in r)
        if codes != [-32010, -32001]:
            fail("bad batch: expected errors -32010 and -32001, got %s" % reps)
        for i in range(10):
            call("backend_add", vip=vref, address="10.1.0.8", weight=1, state="down")
            call("backend_remove", vip=vref, address="10.1.0.8")
        wait_all_workers()

    new_ok = {"10.1.0.1", "10.1.0.6", "10.1.0.7"}  # active, weight > 0
    stays = {"10.1.0.1", "10.1.0.2", "10.1.0.5", "10.1.0.6"}  # flows keep these
    # Backends that took new flows at some moment during the changes.
    ever_new = {"10.1.0.1", "10.1.0.4", "10.1.0.5", "10.1.0.6", "10.1.0.7"}
    during = exchange("phase 2 (changes in flight)", old, 4, during=changes)
    moved = kept = 0
    for fl, bs in during.items():
        b0 = before[fl]
        if b0 in stays:
            if set(bs) != {b0}:
                fail("flow %s left %s (%s) although its backend stayed usable" % (fl, b0, bs))
            kept += 1
            continue
        # It leaves b0 at the snapshot that took b0 away and never comes back;
        # each later switch is again forced (its next backend went down too),
        # and every backend it visits was taking new flows at the time.
        switches = [i for i in range(1, len(bs)) if bs[i] != bs[i - 1]]
        if b0 in bs[switches[0]:] if switches else False:
            fail("flow %s returned to its removed/down backend: %s" % (fl, bs))
        if not set(bs[1:]) <= {b0} | ever_new:
            fail("flow %s on %s (removed/down) went %s" % (fl, b0, bs))
        if len(switches) > 2:
            fail("flow %s switched %d times: %s" % (fl, len(switches), bs))
        moved += 1 if switches else 0
    print("phase 2: %d flows on surviving backends never moved; %d flows left removed/down "
          "backends and never came back" % (kept, moved))

    after = one_backend("phase 3", exchange("phase 3", old + new, 2))
    for fl in old:
        b0, b1 = before[fl], after[fl]
        if b0 in stays and b1 != b0:
            fail("flow %s moved from %s to %s, but its backend is still usable" % (fl, b0, b1))
        # A flow that moved while 10.1.0.5 still took new flows stays pinned
        # there after its weight went to 0: that is weight 0's contract.
        if b0 not in stays and (b1 == b0 or b1 not in new_ok | {"10.1.0.5"}):
            fail("flow %s on %s (removed/down) is at %s" % (fl, b0, b1))
        last = during[fl][-1]
        if b0 not in stays and last in stays | new_ok and last != b1:
            fail("flow %s moved again: %s then %s" % (fl, last, b1))
    for fl in new:
        if after[fl] not in new_ok:
            fail("new flow %s went to %s, which takes no new flows" % (fl, after[fl]))

    # New flows follow the reference table of the membership the changes left:
    # 10.1.0.1 and 10.1.0.6 (weight 1) and 10.1.0.7 (weight 2).
    t3 = model.table(seed, M)
    if set(maglev_ref.slot_counts(t3)) != new_ok:
        fail("model: %s in the table, expected %s" % (sorted(maglev_ref.slot_counts(t3)),
                                                      sorted(new_ok)))
    same_table("phase 3", vref, t3)
    predicted("phase 3", {fl: after[fl] for fl in new}, t3, vip["address"], vip["port"],
              vip.get("key", "5tuple"))

    # A VIP added at run time serves at once, each new flow where the reference
    # says: keyed by source address, backends with names (the identity) and
    # weights. With weights 1, 2, 1, 1 (W = 5, M mod 5 = 2) the two slots
    # left over go to the weight-2 one and, of three equal remainders, to the
    # first identity (10.3.0.3). Removed, its traffic is dropped and counted.
    v2 = dict(address="192.0.2.11", port=80, protocol="tcp")
    v2_backends = [{"address": "10.3.0.1", "name": "web-b"},
                   {"address": "10.3.0.2", "name": "web-a", "weight": 2},
                   {"address": "10.3.0.3"}, {"address": "10.3.0.4"}]
    rpc.call("vip_add", backends=v2_backends, key="src_ip", **v2)
    wait_all_workers()
    p4 = one_backend("phase 4 (new VIP)", exchange("phase 4 (new VIP)", new[:200], 2,
                                                   vaddr=v2["address"]))
    t4 = Model(v2_backends).table(seed, M)
    same_table("phase 4", spwrpc.vip_ref(**v2), t4)
    predicted("phase 4", p4, t4, v2["address"], v2["port"], "src_ip")
    no_vip0 = rpc.call("stats")["totals"]["drops"]["no_vip"]
    rpc.call("vip_remove", **v2)
    wait_all_workers()
    exchange("phase 5 (VIP removed)", new[:100], 1, vaddr=v2["address"], expect_back=False)
    for _ in range(100):
        no_vip = rpc.call("stats")["totals"]["drops"]["no_vip"]
        if no_vip - no_vip0 >= 100:
            break
        time.sleep(0.02)
    if no_vip - no_vip0 != 100:
        fail("removed VIP: no_vip grew by %d, sent 100" % (no_vip - no_vip0))
    print("phase 5: all 100 packets to the removed VIP counted as no_vip")

    t = rpc.call("stats")["totals"]
    total = t["forwarded"] + t["icmp_sent"] + t["exception"] + sum(t["drops"].values())
    if t["rx_packets"] != total:
        fail("counters do not conserve: rx %d != %d" % (t["rx_packets"], total))
    want = 2 * n_old + 4 * n_old + 2 * (n_old + n_new) + 2 * 200
    if t["forwarded"] != want:
        fail("forwarded %d, sent %d to live VIPs" % (t["forwarded"], want))
    print("counters: rx %d = forwarded %d + drops %d (no_vip %d)" %
          (t["rx_packets"], t["forwarded"], sum(t["drops"].values()), t["drops"]["no_vip"]))
    print("PASS")


if __name__ == "__main__":
    main()
