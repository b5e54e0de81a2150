#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Feed a live pcap replay (gen_pcap.py --flowstate) to spillwayd through a FIFO.

in.pcap is written into FIFO segment by segment as manifest.json's plan says:
after a segment with "then", wait until spillwayd has received all of it
(stats over the control socket), record those stats (phase1.json, the first
change's) and make the change ("change": plan["change"]; or a list of calls);
a segment with "gap" goes one burst every `gap` seconds (a lower bound on the
time between the segments around it); one with "until_no_override" is
followed by a wait until hot_list lists no override of those VIPs, feeding
copies of its last frame (a filler) meanwhile: how many goes to extra.json.
Closing the FIFO ends spillwayd's input. Exit 0, or 1 with the reason.

usage: pcap_feed.py DIR FIFO CONTROL_SOCKET
"""

import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lbpcap  # noqa: E402
import spwrpc  # noqa: E402

WAIT_S = 30


def rx_of(cli):
    return cli.call("stats")["totals"]["rx_packets"]


def main():
    d, fifo, sock = sys.argv[1:4]
    man = json.load(open(os.path.join(d, "manifest.json")))
    plan = man["plan"]
    frames = lbpcap.read_pcap(os.path.join(d, "in.pcap"))
    out = open(fifo, "wb", buffering=0)  # blocks until spillwayd opens it
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    t = [0]

    def put(fr):
        t[0] += 1
        out.write(struct.pack("<IIII", 1700000000 + t[0] // 100000, (t[0] % 100000) * 10,
                              len(fr), len(fr)) + fr)

    deadline = time.monotonic() + WAIT_S
    cli = None
    while cli is None:  # the socket file may appear before it listens
        try:
            cli = spwrpc.Client(sock)
        except OSError as e:
            if time.monotonic() > deadline:
                sys.exit("pcap_feed: FAIL: control socket %s: %s after %d s" % (sock, e, WAIT_S))
            time.sleep(0.05)
    start = 0
    changes = []
    extra = 0
    for seg in plan["segments"]:
        burst = seg.get("burst") or (seg["end"] - start)
        for k in range(start, seg["end"], burst):
            for fr in frames[k:min(k + burst, seg["end"])]:
                put(fr)
            if seg.get("gap"):
                time.sleep(seg["gap"])
        start = seg["end"]
        if seg.get("until_no_override"):
            # e.g. after hot_unpin: until hot_list shows no override of these
            # VIPs (the controller demoted them), meanwhile more bursts of the
            # segment's last frame (a filler: the worker keeps polling, so its
            # windows are read); their number goes to extra.json
            refs = seg["until_no_override"]
            if man["packets"][start - 1]["kind"] != "filler":
                sys.exit("pcap_feed: FAIL: segment ending at %d does not end with a filler" % start)
            deadline = time.monotonic() + WAIT_S
            while any(o["vip"] in refs for o in cli.call("hot_list")["overrides"]):
                if time.monotonic() > deadline:
                    sys.exit("pcap_feed: FAIL: overrides of %s still listed after %d s" % (refs, WAIT_S))
                for _ in range(burst):
                    put(frames[start - 1])
                extra += burst
                time.sleep(seg["gap"])
            with open(os.path.join(d, "extra.json"), "w") as f:
                json.dump({"fillers": extra, "repeats": start - 1}, f)
        if seg.get("then"):
            deadline = time.monotonic() + WAIT_S
            while rx_of(cli) < start:
                if time.monotonic() > deadline:
                    sys.exit("pcap_feed: FAIL: spillwayd received %d of the first %d frames in %d s"
                             % (rx_of(cli), start, WAIT_S))
                time.sleep(0.01)
            if not changes:
                with open(os.path.join(d, "phase1.json"), "w") as f:
                    json.dump(cli.call("stats"), f)
            calls = [plan["change"]] if seg["then"] == "change" else seg["then"]
            for ch in calls:
                cli.call(ch["method"], **ch["params"])
            changes.append("%s after frame %d" % ("+".join(ch["method"] for ch in calls), start))
    deadline = time.monotonic() + WAIT_S
    while rx_of(cli) < len(frames) + extra:
        if time.monotonic() > deadline:
            sys.exit("pcap_feed: FAIL: spillwayd received %d of %d frames in %d s"
                     % (rx_of(cli), len(frames) + extra, WAIT_S))
        time.sleep(0.01)
    cli.close()
    out.close()
    print("pcap_feed: %d frames fed (%d of them repeated fillers), %s" % (
        len(frames) + extra, extra, ", ".join(changes)))


if __name__ == "__main__":
    main()
