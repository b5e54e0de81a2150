#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Demo traffic for spillwayd: many well-formed TCP/UDP flows to the VIPs of a
config, written as a pcap to replay through the net_pcap PMD.

Usage: /usr/bin/python3 scripts/demo_traffic.py OUTDIR [--config FILE]
           [--flows N] [--packets P] [--seed S] [--dst-mac MAC] [--no-vip K]

Without --config it writes a demo config to OUTDIR/demo.json and uses it.
Writes OUTDIR/in.pcap: N flows per VIP (random clients and ports), 1..P
packets each, interleaved, plus K frames (default N / 10) to no VIP (TCP
to 192.0.2.99:80 and to port 81 of the first TCP VIP's address), which
spillwayd must drop and count as no_vip; every frame addressed to MAC (the
receiving port's: spillwayd balances only frames to its port's MAC; the
default is net_pcap port 0's, 02:70:63:61:70:00). And OUTDIR/in.json, what
was sent: {"frames", "dst_mac", "expected_drops": {"no_vip": K},
"vips": [{"flows", "packets", "keys"}]} (keys: the distinct flow keys of the
VIP's key mode). Then e.g.:

  spillwayd --no-huge -m 512 --no-pci -l 0-1 \\
      --vdev=net_pcap0,rx_pcap=OUTDIR/in.pcap,tx_pcap=OUTDIR/out.pcap \\
      -- --config OUTDIR/demo.json --stats-file OUTDIR/stats.json --idle-exit 1000
  scripts/demo_report.py --config OUTDIR/demo.json --sent OUTDIR/in.json \\
      OUTDIR/out.pcap OUTDIR/stats.json
"""

import argparse
import ipaddress
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import lbpcap  # noqa: E402

DEMO_CONFIG = {
    "encap": {"source_v4": "10.0.0.1", "source_v6": "fd00::1", "next_hop_mac": "02:00:00:00:00:01",
              "mtu": 1500, "gue_port": 6080},
    "maglev": {"table_size": 65537, "seed": "spillway-demo"},
    "vips": [
        {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
         "backends": [{"address": "10.1.0.1", "weight": 1, "name": "web-1"},
                      {"address": "10.1.0.2", "weight": 1, "name": "web-2"},
                      {"address": "10.1.0.3", "weight": 2, "name": "web-3"},
                      {"address": "10.1.0.4", "weight": 4, "name": "web-4"}]},
        {"address": "192.0.2.20", "port": 0, "protocol": "udp", "key": "5tuple", "encap": "gue",
         "backends": [{"address": "10.2.0.1", "weight": 1, "name": "dns-1"},
                      {"address": "10.2.0.2", "weight": 1, "name": "dns-2"},
                      {"address": "10.2.0.3", "weight": 1, "name": "dns-3", "state": "draining"}]},
        {"address": "2001:db8::10", "port": 443, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
         "backends": [{"address": "fd01::1", "weight": 1, "name": "api-1"},
                      {"address": "fd01::2", "weight": 1, "name": "api-2"},
                      {"address": "fd01::3", "weight": 1, "name": "api-3"}]},
        {"address": "192.0.2.30", "port": 8080, "protocol": "tcp", "key": "src_ip", "encap": "gue",
         "backends": [{"address": "10.4.0.1", "weight": 1, "name": "sticky-1"},
                      {"address": "10.4.0.2", "weight": 1, "name": "sticky-2"}]},
    ],
}


# net_pcap's port 0 MAC (02:70:63:61:70:0n for port n).
PCAP_PORT0_MAC = "02:70:63:61:70:00"


def key_of(vip, client, sport, dport):
    """The flow key the VIP's key mode hashes (what the Maglev choice sees)."""
    mode = vip.get("key", "5tuple")
    if mode == "src_ip":
        return (client,)
    if mode == "src_ip_dport":
        return (client, dport)
    return (client, sport, dport)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--config")
    ap.add_argument("--flows", type=int, default=2000, help="flows per VIP (default 2000)")
    ap.add_argument("--packets", type=int, default=4, help="at most this many packets per flow")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dst-mac", default=PCAP_PORT0_MAC,
                    help="destination MAC of every frame (default %s)" % PCAP_PORT0_MAC)
    ap.add_argument("--no-vip", type=int, help="frames to no VIP (default: flows / 10)")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    if a.config:
        cfg = json.load(open(a.config))
    else:
        a.config = os.path.join(a.outdir, "demo.json")
        with open(a.config, "w") as f:
            json.dump(DEMO_CONFIG, f, indent=1)
        cfg = DEMO_CONFIG
    r = random.Random(a.seed)
    events = []
    seen = set()
    sent = {"frames": 0, "dst_mac": a.dst_mac, "vips": []}
    for vi, vip in enumerate(cfg["vips"]):
        vsent = {"flows": 0, "packets": 0}
        keys = set()
        v6 = lbpcap.ip_version(vip["address"]) == 6
        proto = lbpcap.PROTO_NUM[vip["protocol"]]
        # a few hundred clients, so key modes by source address see many flows per key
        clients = [str(ipaddress.IPv6Address((0x20010DB8C000 << 80) | r.getrandbits(48))) if v6 else
                   str(ipaddress.IPv4Address((198 << 24) | (18 << 16) | r.getrandbits(17)))
                   for _ in range(max(1, a.flows // 4))]
        n = 0
        while n < a.flows:
            c, sport = r.choice(clients), r.randrange(1024, 65536)
            dport = vip["port"] or r.randrange(1, 65536)
            if (c, sport, vi, dport) in seen:
                continue
            seen.add((c, sport, vi, dport))
            keys.add(key_of(vip, c, sport, dport))
            n += 1
            vsent["flows"] += 1
            mac = "02:%02x:%02x:%02x:%02x:%02x" % tuple(r.getrandbits(8) for _ in range(5))
            t = r.random()
            for k in range(r.randrange(1, a.packets + 1)):
                ip = lbpcap.l4_packet(c, vip["address"], proto, sport, dport, r.randbytes(r.choice([0, 64, 512])),
                                      tcp_flags="S" if k == 0 else "PA", seq=r.getrandbits(32),
                                      ipid=r.getrandbits(16))
                events.append((t, len(events), lbpcap.eth_frame(ip, mac, a.dst_mac)))
                vsent["packets"] += 1
                t += r.random() * 0.01
        vsent["keys"] = len(keys)
        sent["vips"].append(vsent)
    # Frames to no VIP: an address that is none, and a VIP address's other port.
    tcp_vip = next((v["address"] for v in cfg["vips"] if v["protocol"] == "tcp" and v["port"] not in (0, 81)),
                   None)
    dests = [d for d in [("192.0.2.99", 80), (tcp_vip, 81)]
             if d[0] and lbpcap.ip_version(d[0]) == 4 and lbpcap.find_vip(cfg, d[0], 6, d[1]) is None]
    n_no_vip = (a.flows // 10 if a.no_vip is None else a.no_vip) if dests else 0
    for k in range(n_no_vip):
        dst, dport = dests[k % len(dests)]
        src = str(ipaddress.IPv4Address((198 << 24) | (18 << 16) | r.getrandbits(17)))
        ip = lbpcap.l4_packet(src, dst, 6, r.randrange(1024, 65536), dport, b"", tcp_flags="S",
                              seq=r.getrandbits(32), ipid=r.getrandbits(16))
        mac = "02:%02x:%02x:%02x:%02x:%02x" % tuple(r.getrandbits(8) for _ in range(5))
        events.append((r.random(), len(events), lbpcap.eth_frame(ip, mac, a.dst_mac)))
    sent["expected_drops"] = {"no_vip": n_no_vip} if n_no_vip else {}
    events.sort()
    sent["frames"] = len(events)
    with open(os.path.join(a.outdir, "in.json"), "w") as f:
        json.dump(sent, f, indent=1)
    lbpcap.write_pcap(os.path.join(a.outdir, "in.pcap"), [e[2] for e in events])
    print("demo_traffic: %d packets, %d flows over %d VIPs and %d frames to no VIP -> %s (config %s)" % (
        len(events), len(seen), len(cfg["vips"]), n_no_vip, os.path.join(a.outdir, "in.pcap"), a.config))


if __name__ == "__main__":
    main()
