#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Replay in.pcap into spillwayd's net_pcap FIFO at the pcap's own timestamps.

  hot_zipf_feed.py DIR FIFO CONTROL_SOCKET

net_pcap reads its rx_pcap as fast as it can and ignores timestamps; the
hot-key controller's windows are ticks of the daemon's clock. So this writes
each frame once the time since the first frame's write reaches its
timestamp's offset from the first frame's (chunks of what is due, at most
MAX_CHUNK frames; a late feeder catches up at the FIFO's pace), and polls
`stats` over the control socket about every POLL_S seconds: each poll records
how many frames had been written, rx_packets and stats.hot.window (the
controller window open when the reply was built). From these the checker
places each input frame between two windows without trusting any wall-clock
figure. After the last frame it closes the FIFO (net_pcap's receive burst
waits for a whole burst or end of file), polls until rx_packets counts every
frame (at most WAIT_S), then saves the daemon's own account (stats,
hot_list, hot_events) for the report only.

Writes DIR/feed.json: {"polls": [[written, rx, window, t], ...], "frames": n,
"feed_s": seconds from the first write to the last}, DIR/daemon.json.
Exit 0, or 1 with the reason.
"""

import array
import fcntl
import json
import mmap
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402

POLL_S = 0.01
MAX_CHUNK = 4096
WAIT_S = 60
F_SETPIPE_SZ = 1031


def main():
    d, fifo, sock = sys.argv[1:4]
    f = open(os.path.join(d, "in.pcap"), "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    offs = array.array("Q")
    ts = array.array("d")
    o = 24
    size = len(m)
    unpack = struct.unpack_from
    while o < size:
        sec, usec, incl = unpack("<III", m, o)
        offs.append(o)
        ts.append(sec + usec * 1e-6)
        o += 16 + incl
    offs.append(o)
    n = len(ts)
    if n == 0:
        sys.exit("hot_zipf_feed: FAIL: empty pcap")

    # the FIFO's read end is spillwayd's net_pcap port: wait (bounded) for it
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                sys.exit("hot_zipf_feed: FAIL: nobody opened %s for reading in %d s (%s)"
                         % (fifo, WAIT_S, e))
            time.sleep(0.05)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    out = os.fdopen(fd, "wb", buffering=0)
    try:
        fcntl.fcntl(out.fileno(), F_SETPIPE_SZ, 1 << 20)
    except OSError:
        pass
    out.write(m[0:24])
    deadline = time.monotonic() + 30
    cli = None
    while cli is None:  # the socket file may appear before it listens
        try:
            cli = spwrpc.Client(sock)
        except OSError as e:
            if time.monotonic() > deadline:
                sys.exit("hot_zipf_feed: FAIL: control socket %s: %s" % (sock, e))
            time.sleep(0.05)

    polls = []
    written = 0

    def poll():
        s = cli.call("stats")
        polls.append([written, s["totals"]["rx_packets"], s.get("hot", {}).get("window"),
                      round(time.monotonic() - t_start, 6)])
        return s

    t_start = time.monotonic()
    poll()
    base = ts[0]
    next_poll = t_start + POLL_S
    while written < n:
        now = time.monotonic()
        el = now - t_start
        j = written
        lim = min(n, written + MAX_CHUNK)
        while j < lim and ts[j] - base <= el:
            j += 1
        if j == written:
            wake = min(t_start + ts[written] - base, next_poll)
            if wake > now:
                time.sleep(wake - now)
        else:
            out.write(m[offs[written]:offs[j]])
            written = j
        if time.monotonic() >= next_poll:
            poll()
            next_poll = time.monotonic() + POLL_S
    feed_s = time.monotonic() - t_start
    # net_pcap's receive burst blocks in its read of the FIFO until it has a
    # whole burst or end of file: close now so the last partial burst arrives
    out.close()
    deadline = time.monotonic() + WAIT_S
    while True:
        s = poll()
        if s["totals"]["rx_packets"] >= n:
            break
        if time.monotonic() > deadline:
            sys.exit("hot_zipf_feed: FAIL: spillwayd received %d of %d frames in %d s"
                     % (s["totals"]["rx_packets"], n, WAIT_S))
        time.sleep(POLL_S)
    daemon = {"stats": s}
    for meth in ("hot_list", "hot_events"):
        try:
            daemon[meth] = cli.call(meth)
        except (spwrpc.RpcError, OSError, ConnectionError) as e:
            daemon[meth] = {"error": str(e)}
    cli.close()
    with open(os.path.join(d, "feed.json"), "w") as fj:
        json.dump({"polls": polls, "frames": n, "feed_s": feed_s}, fj)
    with open(os.path.join(d, "daemon.json"), "w") as fj:
        json.dump(daemon, fj)
    print("hot_zipf_feed: %d frames in %.2f s (trace %.2f s), %d polls, windows %s..%s"
          % (n, feed_s, ts[-1] - base, len(polls), polls[0][2], polls[-1][2]))


if __name__ == "__main__":
    main()
