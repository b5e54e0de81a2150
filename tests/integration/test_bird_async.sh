#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A BIRD that never answers must not stall the control thread. spillwayd on
# net_null with --bird-include/--bird-socket pointed at a Unix socket this
# test owns: it accepts every connection and never says a word. Checked, each
# by order, not by time: a client is answered (version, vip_add, drain, stats)
# while a connection the daemon opened to BIRD *before* the request is still
# open on the daemon's side (a control thread blocked in that exchange could
# not have replied); the include file holds the change when vip_add or drain
# replies; stats show the announcement pending with timeouts counted; SIGTERM
# with --drain-wait 0 ends the daemon (bounded) with exit 0.
#
# usage: test_bird_async.sh SPILLWAYD
# env:   SPW_BIRD_KEEP=1   keep the work directory
set -euo pipefail

SPW=${1:?usage: test_bird_async.sh SPILLWAYD}
SPW=$(readlink -f "$SPW")
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/daemon_lib.sh"
spw_test_begin bird SPW_BIRD_KEEP

[[ -x $SPW ]] || fail "not executable: $SPW"
[[ -x $PY ]] || { echo "SKIP: $PY needed"; exit 77; }

cat >"$WORK/config.json" <<'EOF'
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
 "maglev": {"table_size": 251},
 "flows": {"capacity": 4096},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}]}]}
EOF

PYTHONPATH=$HERE "$PY" - "$SPW" "$WORK" "$PREFIX" <<'EOF'
import json, os, signal, socket, subprocess, sys, threading, time

import spwrpc

spw, work, prefix = sys.argv[1:4]
ctl, bird, inc = work + "/ctl.sock", work + "/bird.ctl", work + "/bird-vips.conf"
T0 = time.monotonic()


def log(msg):
    print("  [%5.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


# ---- the silent BIRD: accepts, keeps every connection, never writes ----
lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
lsock.bind(bird)
lsock.listen(64)
conns, lock = [], threading.Lock()


def acceptor():
    while True:
        try:
            c, _ = lsock.accept()
        except OSError:
            return
        with lock:
            conns.append(c)


threading.Thread(target=acceptor, daemon=True).start()


def still_open(c):
    """Whether the daemon still holds connection c (no EOF queued on it)."""
    while True:
        try:
            data = c.recv(4096, socket.MSG_DONTWAIT | socket.MSG_PEEK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        c.recv(len(data))  # whatever it sent: read it, look again


def open_conn(limit=15.0):
    """A connection to BIRD the daemon holds open now (bounded wait)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        with lock:
            cands = list(reversed(conns))
        for c in cands:
            if still_open(c):
                return c
        time.sleep(0.01)
    fail("the daemon opened no connection to BIRD within %.0f s" % limit)


def during_exchange(what, fn, rounds=10):
    """fn() answered while an exchange opened before it was still open."""
    for _ in range(rounds):
        x = open_conn()
        res = fn()
        if still_open(x):
            log("%s answered while a BIRD exchange was open" % what)
            return res
    fail("%s: never answered while a BIRD exchange was open (%d rounds): the "
         "control thread waits for BIRD" % (what, rounds))


def routes():
    with open(inc) as f:
        return sum(1 for line in f if line.startswith("\troute "))


daemon = subprocess.Popen(
    [spw, "--no-huge", "-m", "512", "--no-pci", "--file-prefix", prefix, "-l", "0-1",
     "--vdev=net_null0", "--", "--config", work + "/config.json", "--control", ctl,
     "--bird-include", inc, "--bird-socket", bird, "--drain-wait", "0"],
    stdout=open(work + "/spw.stdout", "w"), stderr=open(work + "/spw.stderr", "w"))
try:
    end = time.monotonic() + 30
    while True:
        if daemon.poll() is not None:
            fail("spillwayd exited %s (see %s/spw.stderr)" % (daemon.returncode, work))
        try:
            a = spwrpc.Client(ctl, timeout=15)
            break
        except OSError:
            if time.monotonic() > end:
                fail("control socket did not come up")
            time.sleep(0.05)
    b = spwrpc.Client(ctl, timeout=15)
    log("daemon up; include file: %d route(s)" % routes())

    during_exchange("version (client B)", lambda: b.call("version"))
    vip = {"address": "192.0.2.20", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.2"}]}
    n = [0]

    def add():
        n[0] += 1
        v = dict(vip, port=80 + n[0])
        r = a.call("vip_add", **v)
        if routes() < 2:
            fail("vip_add replied before the include file held its address")
        return r

    during_exchange("vip_add (client A)", add)
    during_exchange("stats (client B)", lambda: b.call("stats"))
    st = b.call("stats")["hooks"]["bird"]
    log("hooks.bird: %s" % json.dumps(st))
    if st["pending"] is not True or st["reloads"] != 0 or st["attempts"] < 1:
        fail("stats.hooks.bird should show the announcement pending: %r" % st)

    # The deadline ends each exchange: timeouts counted (bounded wait).
    end = time.monotonic() + 30
    while b.call("stats")["hooks"]["bird"]["timeouts"] < 1:
        if time.monotonic() > end:
            fail("no timeout counted after 30 s")
        time.sleep(0.05)
    st = b.call("stats")["hooks"]["bird"]
    if st["last_result"] != "timeout" or "no reply from BIRD" not in (st["last_error"] or ""):
        fail("last_result/last_error after a timeout: %r" % st)

    def drain():
        r = a.call("drain")
        if routes() != 0:
            fail("drain replied before the include file was emptied")
        return r

    r = during_exchange("drain (client A)", drain)
    if r["drained"] is not True or r["hooks"]["bird"]["pending"] is not True:
        fail("drain reply: %r" % r)
    during_exchange("version (client B) after drain", lambda: b.call("version"))

    daemon.send_signal(signal.SIGTERM)
    try:
        rc = daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        fail("spillwayd did not stop within 30 s of SIGTERM")
    if rc != 0:
        fail("spillwayd exited %d after SIGTERM" % rc)
    log("stopped on SIGTERM, exit 0")
finally:
    if daemon.poll() is None:
        daemon.kill()
        daemon.wait()
print("PASS")
EOF
