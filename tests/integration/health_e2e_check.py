#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Health checks end to end (test_health_e2e.sh builds the topology and runs
spillwayd; this drives the backends' services and judges).

Every expectation is in probe counts read from the backend's health record
(vip_get: backend "health" and its counters), never in seconds; waits are
bounded only to end a broken run. Scenarios, in order:
  1. every backend of every checked VIP comes up;
  2. b1's service stops: on the tcp-via-encap VIP it goes down after exactly
     `fall` failed probes (still up at fall - 1), no new connection reaches
     it; service back: up after exactly `rise` passing probes;
  3. the same for the http (direct) VIP with b1's HTTP server;
  4. b3's decapsulation removed, listeners up: down via encap, still up via
     direct after 2 x fall more passing probes; decapsulation back: up;
  5. an operator's down on b2 stays down through rise + 2 passing probes and
     gets no new connection;
  6. half the backends (2 of 4, fail_open 0.4) fail at once: fail-open keeps
     them in the table, reported "kept" and counted.

usage: health_e2e_check.py CONFIG.json
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402

C = json.load(open(sys.argv[1]))
PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
RISE, FALL = C["rise"], C["fall"]
rpc = spwrpc.Client(C["ctl"])
procs = {}


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------- services
def start(b, kind):
    ns, work = C["backends"][b]["ns"], C["work"]
    ready = "%s/%s-%s.ready" % (work, b, kind)
    if os.path.exists(ready):
        os.unlink(ready)
    if kind == "app":
        cmd = [PY, os.path.join(HERE, "e2e_server.py"), b, ready,
               "--tcp", "0.0.0.0:80", "--udp", "%s:5300" % C["vip_u"]]
        port = None
    else:
        cmd = [PY, "-m", "http.server", "--bind", "0.0.0.0", "8080"]
        port = 8080
    p = subprocess.Popen(["ip", "netns", "exec", ns] + cmd, cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs[(b, kind)] = p
    for _ in range(300):
        if port is None and os.path.exists(ready):
            return
        if port is not None and subprocess.run(
                ["ip", "netns", "exec", ns, PY, "-c",
                 "import socket; socket.create_connection(('127.0.0.1', %d), 1)" % port],
                stderr=subprocess.DEVNULL).returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError("service %s of %s did not start" % (kind, b))


def stop(b, kind):
    p = procs.pop((b, kind))
    p.send_signal(signal.SIGTERM)
    p.wait(10)


def decap(b, on):
    ns = C["backends"][b]["ns"]
    if on:
        subprocess.check_call(["ip", "-n", ns, "link", "set", "dev", "eth0", "xdpdrv", "obj",
                               C["decap_obj"], "sec", "xdp"])
    else:
        subprocess.check_call(["ip", "-n", ns, "link", "set", "dev", "eth0", "xdpdrv", "off"])


# ---------------------------------------------------------------- health records
def record(vip, b):
    """b's entry of health_list on vip (docs/control-protocol.md): health
    (up/down/unknown), state (the operator's), kept, fail_open, plus ok and
    failed (probes_failed + timeouts: a timeout counts as a failure)."""
    ref, addr = vip["ref"], C["backends"][b]["address"]
    for e in rpc.call("health_list")["backends"]:
        if (e["vip"], e["port"], e["protocol"], e["address"]) == \
                (ref["address"], ref["port"], ref["protocol"], addr):
            d = dict(e)
            d["ok"] = e["probes_ok"]
            d["failed"] = e["probes_failed"] + e["timeouts"]
            return d
    raise AssertionError("%s not in health_list for %s" % (addr, vip["name"]))


def wait(what, cond, bound_s=60):
    """Poll cond() (returns a value or None) every 20 ms; the bound only ends a broken run."""
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        r = cond()
        if r is not None:
            return r
        time.sleep(0.02)
    raise AssertionError("gave up waiting for: " + what)


def transition(vip, b, to, counter, action):
    """Read b's counter, run action(), watch b on vip until health == to;
    return (the counter before the action, the largest value seen while not
    yet `to`, the value when first seen `to`)."""
    r0 = record(vip, b)
    base, before = r0[counter], r0[counter]
    action()

    def cond():
        nonlocal before
        r = record(vip, b)
        if r["health"] == to:
            return r[counter]
        before = max(before, r[counter])
        return None
    at = wait("%s %s on %s" % (b, to, vip["name"]), cond)
    return base, before, at


def assert_leaves_after(vip, b, to, counter, n, action):
    base, before, at = transition(vip, b, to, counter, action)
    # Exactly n: still not `to` after n - 1 results, `to` once n are counted
    # (one more may land between two reads of the record).
    assert before - base <= n - 1, "%s %s: not yet %s after %d %s probes (want %d)" % (
        vip["name"], b, to, before - base, counter, n)
    assert n <= at - base <= n + 1, "%s %s: %s after %d %s probes (want %d)" % (
        vip["name"], b, to, at - base, counter, n)
    log("ok: %s on %s: %s after %d %s probes (rise %d, fall %d)" %
        (b, vip["name"], to, at - base, counter, RISE, FALL))


def connect_names(vip, n=100):
    out = subprocess.check_output(
        ["ip", "netns", "exec", C["client_ns"], PY, "-c", r'''
import json, socket, sys
names, errors = {}, 0
for _ in range(int(sys.argv[3])):
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
        name = s.recv(64).decode().split()[1]
        names[name] = names.get(name, 0) + 1
        s.close()
    except OSError:
        errors += 1
print(json.dumps({"names": names, "errors": errors}))''', vip["ref"]["address"],
         str(vip["ref"]["port"]), str(n)], text=True)
    return json.loads(out)


def no_new_connection_to(vip, b):
    r = connect_names(vip)
    assert r["errors"] == 0 and b not in r["names"], "%s: %s" % (vip["name"], r)
    log("ok: 100 new connections to %s, none to %s: %s" % (vip["name"], b, r["names"]))


# ---------------------------------------------------------------- scenarios
def main():
    A, D, H, U = (C["vips"][k] for k in ("encap_tcp", "direct_tcp", "direct_http", "encap_udp"))
    bs = sorted(C["backends"])
    for b in bs:
        start(b, "app")
        start(b, "http")
    for v in (A, D, H, U):
        for b in bs:
            wait("%s up on %s" % (b, v["name"]),
                 lambda: True if record(v, b)["health"] == "up" else None)
    log("ok: every backend up on every VIP")

    assert_leaves_after(A, "b1", "down", "failed", FALL, lambda: stop("b1", "app"))
    no_new_connection_to(A, "b1")
    assert_leaves_after(A, "b1", "up", "ok", RISE, lambda: start("b1", "app"))

    assert_leaves_after(H, "b1", "down", "failed", FALL, lambda: stop("b1", "http"))
    assert_leaves_after(H, "b1", "up", "ok", RISE, lambda: start("b1", "http"))

    d0 = record(D, "b3")
    assert_leaves_after(A, "b3", "down", "failed", FALL, lambda: decap("b3", False))
    wait("b3: 2 x fall probes via direct", lambda: True if record(D, "b3")["ok"] - d0["ok"] >= 2 * FALL else None)
    d1 = record(D, "b3")
    assert d1["health"] == "up" and d1["failed"] == d0["failed"], (d0, d1)
    log("ok: b3 without decapsulation: down via encap, up via direct after %d more passing probes"
        % (d1["ok"] - d0["ok"]))
    assert_leaves_after(A, "b3", "up", "ok", RISE, lambda: decap("b3", True))

    rpc.call("backend_set", vip=A["ref"], address=C["backends"]["b2"]["address"], state="down")
    r0 = record(A, "b2")
    wait("b2: rise + 2 passing probes", lambda: True if record(A, "b2")["ok"] - r0["ok"] >= RISE + 2 else None)
    r1 = record(A, "b2")
    assert r1["state"] == "down" and r1["health"] == "up", r1
    no_new_connection_to(A, "b2")
    log("ok: operator down on b2 kept through %d passing probes" % (r1["ok"] - r0["ok"]))
    rpc.call("backend_set", vip=A["ref"], address=C["backends"]["b2"]["address"], state="active")

    failing = ["b1", "b2"]
    base = {b: record(A, b)["failed"] for b in failing}
    for b in failing:
        stop(b, "app")
    for b in failing:
        wait("%s: fall + 1 failed probes" % b,
             lambda: True if record(A, b)["failed"] - base[b] >= FALL + 1 else None)
    t = rpc.call("maglev_table", vip=A["ref"])
    slots = {be["address"]: be["slots"] for be in t["backends"]}
    for b in failing:
        addr = C["backends"][b]["address"]
        assert slots.get(addr, 0) > 0, "fail-open: %s has no slots: %s" % (b, slots)
    recs = [record(A, b) for b in failing]
    assert all(r["kept"] and r["health"] == "down" for r in recs), recs
    fo = sum(r["fail_open"] for r in recs)
    assert fo > 0, "fail-open not counted: %s" % recs
    log("ok: 2 of 4 backends failing at once: down, kept in the table (fail-open, counted %d)" % fo)
    for b in failing:
        start(b, "app")
    for p in list(procs.values()):
        p.send_signal(signal.SIGTERM)
        p.wait(10)
    log("health_e2e_check: PASS")
    return 0


try:
    sys.exit(main())
finally:
    for p in procs.values():
        if p.poll() is None:
            p.kill()
