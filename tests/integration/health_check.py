#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Health checks end to end against a real spillwayd (net_null port): the
backends are loopback addresses (127.0.0.x) with listeners this script runs.
Every transition is judged in probe counts the daemon reports against what
the script did (listener stopped / started), never in seconds; the Maglev
table (maglev_table) is the independent view of who gets new flows.

usage: health_check.py SPILLWAYD WORKDIR PREFIX"""

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402

RISE, FALL, INTERVAL = 2, 3, 150
POLL = 0.02
MAX_POLLS = 1500  # bound on every wait (30 s)


class Tcp:
    def __init__(self, addr, port):
        self.addr, self.port, self.sock = addr, port, None

    def start(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.addr, self.port))
        s.listen(64)
        self.sock = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s):
        while True:
            try:
                c, _ = s.accept()
                c.close()
            except OSError:
                return

    def stop(self):
        self.sock.close()
        self.sock = None


class Http:
    """An HTTP server whose status the test sets (200 healthy, 503 not)."""

    def __init__(self, addr, port):
        status = self
        self.status = 200

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(status.status if self.path == "/healthz" else 404)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer((addr, port), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


class Udp:
    """Answers b"PONG"+payload to b"PING"; silent while stopped."""

    def __init__(self, addr, port):
        self.on = True
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((addr, port))
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            data, peer = self.sock.recvfrom(2048)
            if self.on and data.startswith(b"PING"):
                self.sock.sendto(b"PONG" + data[4:], peer)


def fails(r):
    return r["probes_failed"] + r["timeouts"]


def main():
    spw, work, prefix = sys.argv[1:4]
    ctl = os.path.join(work, "ctl.sock")
    tcp_a = {"127.0.0.%d" % i: Tcp("127.0.0.%d" % i, 18080) for i in range(11, 15)}
    tcp_b = {"127.0.0.%d" % i: Tcp("127.0.0.%d" % i, 18081) for i in range(21, 25)}
    for t in list(tcp_a.values()) + list(tcp_b.values()):
        t.start()
    web = Http("127.0.0.31", 18082)
    udp = Udp("127.0.0.41", 18053)
    hc = {"type": "tcp", "interval_ms": INTERVAL, "timeout_ms": 100, "rise": RISE,
          "fall": FALL}
    cfg = {
        "encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
        "maglev": {"table_size": 1021, "seed": "health"},
        "vips": [
            {"address": "192.0.2.1", "port": 18080, "protocol": "tcp",
             "health": dict(hc, fail_open=0.5),
             "backends": [{"address": a} for a in tcp_a]},
            {"address": "192.0.2.2", "port": 18081, "protocol": "tcp",
             "health": dict(hc, fail_open=0.25, on_down="keep_flows"),
             "backends": [{"address": a} for a in tcp_b]},
            {"address": "192.0.2.3", "port": 18082, "protocol": "tcp",
             "health": dict(hc, type="http", path="/healthz", expect=200),
             "backends": [{"address": "127.0.0.31"}]},
            {"address": "192.0.2.4", "port": 18053, "protocol": "udp",
             "health": dict(hc, type="udp", request="50494e4701",
                            response="504f4e4701"),
             "backends": [{"address": "127.0.0.41"}]},
        ]}
    with open(os.path.join(work, "lb.json"), "w") as f:
        json.dump(cfg, f)
    log = open(os.path.join(work, "spillwayd.log"), "w")
    proc = subprocess.Popen(
        ["timeout", "-k", "5", "240", spw, "--no-huge", "-m", "512", "--no-pci",
         "--file-prefix", prefix, "-l", "0-1", "--vdev=net_null0", "--",
         "--config", os.path.join(work, "lb.json"), "--control", ctl,
         "--state", os.path.join(work, "state.json")], stdout=log, stderr=log)
    try:
        for _ in range(MAX_POLLS):
            if proc.poll() is not None:
                raise SystemExit("FAIL: spillwayd exited early")
            try:
                c = spwrpc.Client(ctl)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("FAIL: no control socket")
        run(c, tcp_a, tcp_b, web, udp)
        c.close()
    finally:
        proc.terminate()
        proc.wait()
    print("health_check: OK")


def rec(c, addr):
    for r in c.call("health_list")["backends"]:
        if r["address"] == addr:
            return r
    raise AssertionError("no health record for %s" % addr)


def slots(c, vip, port, proto, addr):
    t = c.call("maglev_table", vip={"address": vip, "port": port, "protocol": proto})
    return {b["address"]: b["slots"] for b in t["backends"]}[addr]


def wait(c, addr, pred, what):
    samples = []
    for _ in range(MAX_POLLS):
        r = rec(c, addr)
        samples.append(r)
        if pred(r):
            return r, samples
        time.sleep(POLL)
    raise AssertionError("%s: %s never happened; last %r" % (addr, what, samples[-1]))


def check_fall(samples, base_fail):
    # Hysteresis: up while fewer than FALL failures since the stop, down from FALL on.
    for r in samples:
        n = fails(r) - base_fail
        if r["health"] == "up":
            assert n < FALL, "still up after %d failures: %r" % (n, r)
        else:
            assert r["health"] == "down" and n >= FALL, "down after %d failures: %r" % (n, r)


def check_rise(samples, base_ok):
    for r in samples:
        n = r["probes_ok"] - base_ok
        if r["health"] == "down":
            assert n < RISE, "still down after %d successes: %r" % (n, r)
        else:
            assert r["health"] == "up" and n >= RISE, "up after %d successes: %r" % (n, r)


def run(c, tcp_a, tcp_b, web, udp):
    # Every checked backend comes up after RISE probes.
    for a in list(tcp_a) + list(tcp_b) + ["127.0.0.31", "127.0.0.41"]:
        r, _ = wait(c, a, lambda r: r["health"] == "up", "up")
        assert r["probes_ok"] >= RISE and r["state"] == "active", r
    # 1. A stopped listener: down after exactly FALL failures, out of the table.
    victim = "127.0.0.12"
    base = rec(c, victim)
    tcp_a[victim].stop()
    r, samples = wait(c, victim, lambda r: r["health"] == "down", "down")
    check_fall(samples, fails(base))
    assert r["state"] == "active" and r["last_result"] == "fail", r
    # The verdict reaches the snapshot on the control thread's next tick.
    r, _ = wait(c, victim, lambda r: r["effective"] == "down", "out of the table")
    assert r["health"] == "down", r
    assert slots(c, "192.0.2.1", 18080, "tcp", victim) == 0
    assert all(slots(c, "192.0.2.1", 18080, "tcp", a) > 0 for a in tcp_a if a != victim)
    # restarted: up after exactly RISE successes, back in the table.
    base = rec(c, victim)
    tcp_a[victim].start()
    r, samples = wait(c, victim, lambda r: r["health"] == "up", "up again")
    check_rise(samples, base["probes_ok"])
    assert r["transitions"] == base["transitions"] + 1, (base, r)
    wait(c, victim, lambda r: r["effective"] == "active", "back in the table")
    assert slots(c, "192.0.2.1", 18080, "tcp", victim) > 0
    # 2. An operator's down is not undone by passing probes.
    c.call("backend_set", vip={"address": "192.0.2.1", "port": 18080, "protocol": "tcp"},
           address="127.0.0.13", state="down")
    base = rec(c, "127.0.0.13")
    r, _ = wait(c, "127.0.0.13", lambda r: r["probes_ok"] >= base["probes_ok"] + RISE + 2,
                "passing probes")
    assert r["health"] == "up" and r["state"] == "down" and r["effective"] == "down", r
    assert slots(c, "192.0.2.1", 18080, "tcp", "127.0.0.13") == 0
    c.call("backend_set", vip={"address": "192.0.2.1", "port": 18080, "protocol": "tcp"},
           address="127.0.0.13", state="active")
    assert slots(c, "192.0.2.1", 18080, "tcp", "127.0.0.13") > 0
    # 3. Half of VIP 2's backends fail at once, fail_open 0.25: all stay in.
    half = ["127.0.0.21", "127.0.0.22"]
    for a in half:
        tcp_b[a].stop()
    for a in half:
        r, _ = wait(c, a, lambda r: r["health"] == "down" and r["kept"], "kept in")
        assert r["effective"] == "active" and r["fail_open"] == 1, r
        assert slots(c, "192.0.2.2", 18081, "tcp", a) > 0
    ev = [e["event"] for e in c.call("health_list")["events"] if e["vip_id"] == 1]
    assert "fail_open" in ev, ev
    # One comes back: 1 of 4 failing is within 0.25, that one leaves (keep_flows: draining).
    tcp_b["127.0.0.21"].start()
    wait(c, "127.0.0.21", lambda r: r["health"] == "up", "up")
    r, _ = wait(c, "127.0.0.22", lambda r: r["effective"] == "draining", "draining")
    assert not r["kept"], r
    assert slots(c, "192.0.2.2", 18081, "tcp", "127.0.0.22") == 0
    ev = [e["event"] for e in c.call("health_list")["events"] if e["vip_id"] == 1]
    assert "fail_open_end" in ev, ev
    # 4. http: a 503 is a failure, 200 again is a success.
    base = rec(c, "127.0.0.31")
    web.status = 503
    r, samples = wait(c, "127.0.0.31", lambda r: r["health"] == "down", "http down")
    check_fall(samples, fails(base))
    base = rec(c, "127.0.0.31")
    web.status = 200
    r, samples = wait(c, "127.0.0.31", lambda r: r["health"] == "up", "http up")
    check_rise(samples, base["probes_ok"])
    # 5. udp: a silent responder times out.
    base = rec(c, "127.0.0.41")
    udp.on = False
    r, samples = wait(c, "127.0.0.41", lambda r: r["health"] == "down", "udp down")
    check_fall(samples, fails(base))
    assert r["timeouts"] - base["timeouts"] >= FALL, r
    # The health state is not written to the state file; health objects are.
    st = c.call("config_get")
    assert st["vips"][0]["health"]["fall"] == FALL
    assert "effective" not in json.dumps(st)
    stats = c.call("stats")["health"]
    assert stats["probes_ok"] > 0 and stats["transitions"] > 0, stats


if __name__ == "__main__":
    main()
