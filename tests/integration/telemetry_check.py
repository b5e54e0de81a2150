#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The DPDK telemetry test's traffic, its model and its checks.

  gen DIR            config.json, in.pcap and expect.json (what the test sent,
                     counted here: per VIP packets, inner IP bytes, flows; no-VIP
                     and truncated frames; the hot source)
  query DIR PREFIX SOCKET
                     pin two hot keys over the control socket (the keys the
                     test chose: the oracle for /spillway/hot), drive
                     dpdk-telemetry.py -f PREFIX (commands on stdin), wait
                     (bounded) until the daemon has taken every frame, then
                     check every /spillway/* command against expect.json and
                     /ethdev/stats; the answers go to DIR/answers.json
  pcap DIR           after the daemon stopped: the backends' packet counts that
                     /spillway/vip reported against the frames in out.pcap
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbpcap  # noqa: E402
import spwrpc  # noqa: E402

# DST_MAC: the port MAC test_telemetry.sh gives spillwayd (--port-mac 0=).
SRC_MAC, DST_MAC = "02:00:00:00:00:aa", "02:00:00:00:00:bb"
HOT_SRC = "2001:db8:ff::1"

CONFIG = {
    "encap": {"source_v4": "10.0.0.1", "source_v6": "fd00::1",
              "next_hop_mac": "02:00:00:00:00:01", "mtu": 1500},
    "maglev": {"table_size": 251, "seed": "telemetry-test"},
    # epsilon 100: every key fits its home, so the controller promotes
    # nothing by itself (the hot source is 0.75 of VIP 1 and would be, in a
    # window the replay reaches before the pins): the generation counts the
    # pins' publications only.
    "hot": {"epsilon": 100},
    "vips": [
        {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "key": "src_ip", "hot_mode": "spread",
         "encap": "ipip", "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"},
                                       {"address": "10.1.0.3", "weight": 2}]},
        {"address": "fd00::10", "port": 53, "protocol": "udp", "key": "src_ip", "hot_mode": "spread",
         "encap": "ipip", "backends": [{"address": "fd01::1"}, {"address": "fd01::2"}]},
    ],
}
VIP_TEXT = ["192.0.2.10:80/tcp", "[fd00::10]:53/udp"]
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)


def gen(d):
    os.makedirs(d, exist_ok=True)
    frames = []
    exp = {"vip": [{"packets": 0, "bytes": 0, "flows": 0} for _ in VIP_TEXT]}

    def send(vi, ip):
        frames.append(lbpcap.eth_frame(ip, SRC_MAC, DST_MAC))
        exp["vip"][vi]["packets"] += 1
        exp["vip"][vi]["bytes"] += len(ip)

    # VIP 0: 40 TCP connections of 5 packets, payloads of varying size.
    for f in range(40):
        exp["vip"][0]["flows"] += 1
        for k in range(5):
            send(0, lbpcap.l4_packet("198.51.100.%d" % (1 + f % 200), "192.0.2.10", 6,
                                     20000 + f, 80, b"x" * ((f * 7 + k * 13) % 300)))
    # VIP 1: 25 sources with 4 datagrams each, and one hot source with 300.
    for f in range(25):
        exp["vip"][1]["flows"] += 1
        for k in range(4):
            send(1, lbpcap.l4_packet("2001:db8:1::%x" % (f + 1), "fd00::10", 17, 5353, 53,
                                     b"q" * (20 + k)))
    exp["vip"][1]["flows"] += 1
    for k in range(300):
        send(1, lbpcap.l4_packet(HOT_SRC, "fd00::10", 17, 4444, 53, b"h" * 32))
    # Interleave so the hot source is a share of every stretch of the replay.
    frames = frames[:200] + [x for pair in zip(frames[200:300], frames[300:400]) for x in pair] \
        + frames[400:]
    # 30 frames for no VIP (dropped: no exception port), 10 IPv4 frames cut
    # inside the packet the header announces.
    for f in range(30):
        frames.append(lbpcap.eth_frame(lbpcap.l4_packet("198.51.100.7", "192.0.2.99", 6,
                                                        30000 + f, 80, b""), SRC_MAC, DST_MAC))
    for f in range(10):
        ip = lbpcap.l4_packet("198.51.100.8", "192.0.2.10", 6, 31000 + f, 80, b"y" * 100)
        frames.append(lbpcap.eth_frame(ip[:30], SRC_MAC, DST_MAC))
    exp["no_vip"], exp["ip4_trunc"] = 30, 10
    exp["rx_packets"] = len(frames)
    exp["rx_bytes"] = sum(len(f) for f in frames)
    exp["forwarded"] = sum(v["packets"] for v in exp["vip"])
    exp["flow_misses"] = sum(v["flows"] for v in exp["vip"])
    exp["flow_hits"] = exp["forwarded"] - exp["flow_misses"]
    lbpcap.write_pcap(os.path.join(d, "in.pcap"), frames)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=1)
    with open(os.path.join(d, "expect.json"), "w") as f:
        json.dump(exp, f, indent=1)


def telemetry(prefix, cmds):
    """One dpdk-telemetry.py session: the commands on stdin, one JSON reply per
    line on stdout (the client prints nothing else when stdin is no tty)."""
    p = subprocess.run(["dpdk-telemetry.py", "-f", prefix], input="".join(c + "\n" for c in cmds),
                       capture_output=True, text=True, timeout=30)
    out = {}
    replies = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if len(replies) != len(cmds):
        raise RuntimeError("dpdk-telemetry.py: %d replies to %d commands: %s %s"
                           % (len(replies), len(cmds), p.stdout[-500:], p.stderr[-500:]))
    for c, r in zip(cmds, replies):
        out[c] = list(r.values())[0]
    return out


# (VIP index, key object for hot_pin, replicas, the key as telemetry writes it).
# Both VIPs are keyed by source: a 5-tuple key of a TCP VIP is one connection
# and cannot be pinned (an elephant).
PINS = [(1, {"src": HOT_SRC}, 2, HOT_SRC),
        (0, {"src": "198.51.100.1"}, 3, "198.51.100.1")]


def query(d, prefix, sock):
    with open(os.path.join(d, "expect.json")) as f:
        exp = json.load(f)
    rpc = spwrpc.Client(sock)
    for vi, key, r, _ in PINS:
        v = CONFIG["vips"][vi]
        rpc.call("hot_pin", vip=spwrpc.vip_ref(v["address"], v["port"], v["protocol"]), key=key,
                 replicas=r)
    rpc.close()
    for _ in range(60):  # bounded: 60 tries, 0.5 s apart
        a = telemetry(prefix, ["/spillway/stats", "/spillway/hot"])
        stats, hot = a["/spillway/stats"], a["/spillway/hot"]
        if stats and stats["rx_packets"] >= exp["rx_packets"] and hot and hot["active"] >= 2:
            break
        time.sleep(0.5)
    cmds = ["/", "/help,/spillway/vip", "/spillway/stats", "/spillway/vips", "/spillway/cores",
            "/spillway/hot", "/ethdev/stats,0", "/spillway/vip,0", "/spillway/vip," + VIP_TEXT[1],
            "/spillway/vip,fd00::10:53/udp", "/spillway/vip,1", "/spillway/vip,7",
            "/spillway/vip,192.0.2.10:81/tcp", "/spillway/vip,nonsense"]
    a = telemetry(prefix, cmds)
    with open(os.path.join(d, "answers.json"), "w") as f:
        json.dump(a, f, indent=1)

    listed = a["/"]
    for c in ["/spillway/stats", "/spillway/vips", "/spillway/vip", "/spillway/cores",
              "/spillway/hot", "/ethdev/stats"]:
        check(c in listed, "'/' lists %s" % c)
    check("Parameter" in (a["/help,/spillway/vip"] or {}).get("/spillway/vip", ""),
          "/help,/spillway/vip gives its help text")

    s = a["/spillway/stats"]
    for k in ["rx_packets", "rx_bytes", "forwarded", "flow_hits", "flow_misses"]:
        check(s[k] == exp[k], "stats %s = %s, sent %s" % (k, s[k], exp[k]))
    check(s["drops"]["no_vip"] == exp["no_vip"], "drops.no_vip %s" % s["drops"]["no_vip"])
    check(s["drops"]["ip4_trunc"] == exp["ip4_trunc"],
          "drops.ip4_trunc %s" % s["drops"]["ip4_trunc"])
    check(s["dropped"] == exp["no_vip"] + exp["ip4_trunc"], "dropped %s" % s["dropped"])
    check(s["rx_packets"] == s["forwarded"] + s["icmp_sent"] + s["exception"] + s["dropped"],
          "rx = forwarded + icmp_sent + exception + dropped")
    # 1 at start-up, +1 per publication: each pin published one snapshot.
    check(s["cores"] == 1 and s["generation"] == 1 + len(PINS),
          "cores %s = 1, generation %s = 1 + %d pins" % (s["cores"], s["generation"], len(PINS)))

    e = a["/ethdev/stats,0"]
    check(e["ipackets"] == s["rx_packets"] == exp["rx_packets"],
          "ethdev ipackets %s = rx_packets" % e["ipackets"])
    check(e["ibytes"] == exp["rx_bytes"], "ethdev ibytes %s = bytes sent" % e["ibytes"])
    check(e["opackets"] == s["forwarded"], "ethdev opackets %s = forwarded" % e["opackets"])

    check(a["/spillway/vips"] == {"0": VIP_TEXT[0], "1": VIP_TEXT[1]},
          "vips %s" % a["/spillway/vips"])

    c = a["/spillway/cores"]
    check(c["lcore"] == [1], "cores lcore %s" % c["lcore"])
    check(c["snapshot_gen"] == [s["generation"]], "the worker runs generation %s" % c["snapshot_gen"])
    for k in ["rx_packets", "forwarded", "dropped", "flow_hits"]:
        check(sum(c[k]) == s[k], "cores %s sums to the total" % k)

    for i, sel in enumerate(["/spillway/vip,0", "/spillway/vip," + VIP_TEXT[1]]):
        v, x = a[sel], exp["vip"][i]
        check(v is not None and v["id"] == i and v["vip"] == VIP_TEXT[i], "%s names VIP %d" % (sel, i))
        if v is None:
            continue
        check(v["packets"] == x["packets"], "%s packets %s, sent %s" % (sel, v["packets"], x["packets"]))
        check(v["bytes"] == x["bytes"], "%s bytes %s, sent %s" % (sel, v["bytes"], x["bytes"]))
        check(v["new_flows"] == x["flows"], "%s new_flows %s, flows %s" % (sel, v["new_flows"], x["flows"]))
        check(v["backend_address"] == [b["address"] for b in CONFIG["vips"][i]["backends"]],
              "%s backend addresses" % sel)
        check(sum(v["backend_packets"]) == v["packets"], "%s backend packets sum" % sel)
        check(sum(v["backend_bytes"]) == v["bytes"], "%s backend bytes sum" % sel)
    check(a["/spillway/vip,fd00::10:53/udp"] == a["/spillway/vip," + VIP_TEXT[1]],
          "an unbracketed IPv6 selector names the same VIP")
    check(a["/spillway/vip,1"] == a["/spillway/vip," + VIP_TEXT[1]], "id and address agree")
    for sel in ["/spillway/vip,7", "/spillway/vip,192.0.2.10:81/tcp", "/spillway/vip,nonsense"]:
        check(a[sel] is None, "%s answers null" % sel)

    h = a["/spillway/hot"]
    check(h["enabled"] == 1, "hot enabled")
    check(h["active"] == len(PINS) and h["pinned"] == len(PINS),
          "hot active %s, pinned %s: the %d keys pinned" % (h["active"], h["pinned"], len(PINS)))
    got = sorted(zip(h["key_vip"], h["key"], h["key_replicas"], h["key_pinned"]))
    want = sorted((vi, text, r, 1) for vi, _, r, text in PINS)
    check(got == want, "hot keys %s, pinned %s" % (got, want))


def pcap(d):
    with open(os.path.join(d, "answers.json")) as f:
        a = json.load(f)
    per = {}
    frames = lbpcap.read_pcap(os.path.join(d, "out.pcap"))
    for fr in frames:
        dec = lbpcap.decode_output(fr)
        per[lbpcap.ip_norm(dec.outer_dst)] = per.get(lbpcap.ip_norm(dec.outer_dst), 0) + 1
    check(len(frames) == a["/spillway/stats"]["forwarded"],
          "out.pcap holds %d frames, forwarded %d" % (len(frames), a["/spillway/stats"]["forwarded"]))
    for sel in ["/spillway/vip,0", "/spillway/vip," + VIP_TEXT[1]]:
        v = a[sel]
        for addr, n in zip(v["backend_address"], v["backend_packets"]):
            got = per.get(lbpcap.ip_norm(addr), 0)
            check(got == n, "%s backend %s: %d frames in out.pcap, telemetry %d" % (sel, addr, got, n))


def main():
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "gen":
        gen(d)
    elif mode == "query":
        query(d, sys.argv[3], sys.argv[4])
    elif mode == "pcap":
        pcap(d)
    if FAILS:
        sys.exit(1)
    print("%s: ok" % mode)


if __name__ == "__main__":
    main()
