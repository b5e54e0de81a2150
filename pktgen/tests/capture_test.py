#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""spillgen against captures, through net_pcap.

1. Builder: spillgen writes a capture (tx_pcap=) of IPv4/IPv6, TCP/UDP, IMIX
   traffic; scapy, an independent decoder, must accept every frame: IPv4
   header and TCP/UDP checksums correct, lengths consistent, the stamp in
   place, each TCP flow opening with a SYN and its sequence numbers following.
2. Analyser: a capture made here by hand (what a balancer would send: IPIP
   4in4, GUE over IPv6, a VLAN tag, noise), with known losses, duplicates,
   reordering and a flow that moves, is read by spillgen --analyse-only
   (rx_pcap=); its JSON must carry exactly the figures computed here.

usage: capture_test.py SPILLGEN
"""
import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import (IP, TCP, UDP, Dot1Q, Ether, IPv6, Raw, rdpcap,  # noqa: E402
                       wrpcap)

SPILLGEN = os.path.abspath(sys.argv[1])
EAL = ["--lcores", "0@0,1@1", "--no-huge", "-m", "512", "--no-pci",
       "--log-level", "lib.*:warning"]
MAGIC = 0x5347
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(work, prefix, vdev, args):
    cmd = [SPILLGEN] + EAL + ["--file-prefix", prefix, "--vdev", vdev, "--"] + args
    try:
        p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=120)
    finally:
        # The EAL runtime folder of this run's own prefix.
        shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit("spillgen failed: %s" % " ".join(cmd))
    return p


def stamp(payload):
    magic, flow, seq = struct.unpack("!HII", payload[:10])
    tsc = struct.unpack("<Q", payload[10:18])[0]
    return magic, flow, seq, tsc


def test_builder(work):
    out = os.path.join(work, "gen.pcap")
    run(work, "sg-cap-gen-%d" % os.getpid(), "net_pcap0,tx_pcap=" + out,
        ["--tx-only", "-n", "3000", "-r", "0", "-f", "40", "-S", "imix",
         "-v", "192.0.2.10:80/tcp", "-v", "[2001:db8::10]:53/udp",
         "-v", "192.0.2.11:53/udp", "-v", "[2001:db8::11]:443/tcp", "-q"])
    pkts = rdpcap(out)
    check(len(pkts) == 3000, "builder: 3000 frames written (got %d)" % len(pkts))
    tcp_next = {}
    sizes = set()
    for i, p in enumerate(pkts):
        raw = bytes(p)
        sizes.add(len(raw))
        ip = p[IP] if IP in p else p[IPv6]
        l4 = p[TCP] if TCP in p else p[UDP]
        if IP in p:
            want = IP(raw[14:])
            del want.chksum
            check(ip.chksum == IP(bytes(want)).chksum, "frame %d: IPv4 header checksum" % i)
            check(ip.len == len(raw) - 14, "frame %d: IPv4 total length" % i)
        else:
            check(ip.plen == len(raw) - 54, "frame %d: IPv6 payload length" % i)
        # scapy recomputes the L4 checksum with the pseudo-header.
        rebuilt = ip.__class__(bytes(ip))
        l4r = rebuilt[TCP] if TCP in rebuilt else rebuilt[UDP]
        orig = l4r.chksum
        del l4r.chksum
        again = ip.__class__(bytes(rebuilt))
        l4a = again[TCP] if TCP in again else again[UDP]
        check(orig == l4a.chksum, "frame %d: %s checksum" % (i, l4.name))
        magic, flow, seq, _ = stamp(bytes(l4.payload))
        check(magic == MAGIC, "frame %d: stamp magic" % i)
        if TCP in p:
            key = flow
            if seq == 0:
                check(l4.flags == "S", "frame %d: a TCP flow opens with SYN" % i)
                tcp_next[key] = l4.seq + 1 + len(bytes(l4.payload))
            else:
                check(l4.flags == "PA", "frame %d: data segments are PSH|ACK" % i)
                if key in tcp_next:
                    check(l4.seq == tcp_next[key] % 2**32, "frame %d: TCP sequence follows" % i)
                tcp_next[key] = l4.seq + len(bytes(l4.payload))
    # IMIX 64/570/1518 with FCS; IPv6/TCP minimum 92 without FCS.
    check({60, 566, 1514} & sizes == {60, 566, 1514}, "builder: IMIX sizes present %s" % sorted(sizes))
    print("builder: %d frames accepted by scapy, sizes %s" % (len(pkts), sorted(sizes)))


def payload(flow, seq, tsc=0):
    return struct.pack("!HII", MAGIC, flow, seq) + struct.pack("<Q", tsc) + b"\0" * 6


def ipip(backend, inner, vlan=None):
    eth = Ether(src="02:00:00:00:00:09", dst="02:00:00:00:00:01")
    if vlan is not None:
        eth = eth / Dot1Q(vlan=vlan)
    return eth / IP(src="10.0.0.1", dst=backend, proto=4, flags="DF") / inner


def gue6(backend, inner, port=6080):
    return (Ether(src="02:00:00:00:00:09", dst="02:00:00:00:00:01") /
            IPv6(src="fd00::1", dst=backend) / UDP(sport=49152, dport=port) / inner)


def test_analyser(work):
    v4 = lambda f, s: IP(src="198.18.0.%d" % (f + 1), dst="192.0.2.10") / \
        UDP(sport=1024, dport=53) / Raw(payload(f, s))
    v6 = lambda f, s: IPv6(src="2001:db8:5347::%x" % (f + 1), dst="2001:db8::10") / \
        TCP(sport=1024, dport=80, flags="PA") / Raw(payload(f, s))
    frames = []
    # Flows 0-5 to 10.1.0.1 / 10.1.0.2 (IPIP), 10 packets each, in order.
    for s in range(10):
        for f in range(6):
            be = "10.1.0.1" if f % 2 == 0 else "10.1.0.2"
            frames.append(ipip(be, v4(f, s), vlan=7 if f == 5 else None))
    # Flow 6: seq 0..9 with 3 and 4 lost, 7 duplicated, 9 before 8.
    for s in [0, 1, 2, 5, 6, 7, 7, 9, 8]:
        frames.append(ipip("10.1.0.3", v4(6, s)))
    # Flow 7 moves from 10.1.0.1 to 10.1.0.3 halfway.
    for s in range(8):
        frames.append(ipip("10.1.0.1" if s < 4 else "10.1.0.3", v4(7, s)))
    # Flows 8, 9 over GUE/IPv6 to fd00:1::1, 5 packets each.
    for s in range(5):
        for f in (8, 9):
            frames.append(gue6("fd00:1::1", v6(f, s)))
    # Noise: ARP-like frame, GUE on another port, broken magic.
    frames.append(Ether(dst="ff:ff:ff:ff:ff:ff", type=0x0806) / Raw(b"\0" * 28))
    frames.append(gue6("fd00:1::1", v6(8, 99), port=6081))
    bad = v4(0, 0)
    bad[Raw].load = b"XX" + bytes(bad[Raw].load)[2:]
    frames.append(ipip("10.1.0.1", bad))
    cap = os.path.join(work, "lb-out.pcap")
    wrpcap(cap, frames)
    res = os.path.join(work, "an.json")
    p = run(work, "sg-cap-an-%d" % os.getpid(), "net_pcap0,rx_pcap=" + cap,
            ["--analyse-only", "-f", "16", "--drain", "300", "--json", res])
    print(p.stdout)
    r = json.load(open(res))

    # Expected figures, computed independently.
    per_be = {"10.1.0.1": 30 + 4, "10.1.0.2": 30, "10.1.0.3": 9 + 4, "fd00:1::1": 10}
    got_be = {b["address"]: b["packets"] for b in r["backends"]}
    check(got_be == per_be, "analyser: per-backend packets %s, want %s" % (got_be, per_be))
    check(r["rx"]["packets"] == len(frames), "analyser: rx packets")
    check(r["rx"]["decoded"] == sum(per_be.values()), "analyser: decoded")
    check(r["rx"]["not_encap"] == 2, "analyser: 2 frames not encapsulated (ARP, other UDP port)")
    check(r["rx"]["no_stamp"] == 1, "analyser: 1 frame without our stamp")
    pk = r["packets"]
    check(pk["lost"] == 2, "analyser: 2 lost (flow 6 seq 3, 4), got %s" % pk["lost"])
    check(pk["duplicates"] == 1, "analyser: 1 duplicate")
    check(pk["reordered"] == 1, "analyser: 1 reordered")
    check(r["flows"]["seen"] == 10, "analyser: 10 flows seen")
    check(r["flows"]["multi_backend"] == 1, "analyser: 1 flow at two backends")
    check(r["flows"]["with_loss"] == 1, "analyser: 1 flow with loss")
    # One pseudo-VIP (no --lb-config), equal expected shares over the backends
    # seen: relative loads are count / mean.
    counts = list(per_be.values())
    mean = sum(counts) / len(counts)
    peak = max(counts) / mean
    jain = sum(counts) ** 2 / (len(counts) * sum(c * c for c in counts))
    check(abs(r["balance"]["peak_to_avg"] - peak) < 1e-5 * peak,
          "analyser: peak/avg %s, want %.6f" % (r["balance"]["peak_to_avg"], peak))
    check(abs(r["balance"]["jain"] - jain) < 1e-5 * peak,
          "analyser: jain %s, want %.6f" % (r["balance"]["jain"], jain))
    print("analyser: figures match (peak/avg %.4f, jain %.4f, lost 2, dup 1, reordered 1)"
          % (peak, jain))


with tempfile.TemporaryDirectory(prefix="spillgen-cap.") as work:
    test_builder(work)
    test_analyser(work)
if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
