#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Driver of test_ecmp_e2e.sh, run in the client namespace.

Long-lived TCP connections to a VIP that a router spreads (kernel ECMP, L4
hash) over two spillwayd instances announcing it through BIRD. Events: LB1
is drained and stopped (SIGTERM: withdraw, --drain-wait, stop), then started
again, then killed (SIGKILL: nothing withdraws, the router keeps its path)
and withdrawn by the packaged unit's ExecStopPost command (the LB's "post"
script: spillwayd --bird-withdraw). Last, LB2 gets two SIGTERMs while its
BIRD proxy holds the withdrawal (bird_proxy.py, its events in the LB's
"proxy_events" file, held while "hold_file" exists): the router must lose
LB2's path, "configure" answered before LB2 exits. Each long-lived connection must keep answering from the backend it
first reached (the instances' Maglev tables are identical, so the instance
ECMP moves a flow to picks the same backend); new connections opened all the
time must keep succeeding. Measures the time from the drain request to the
route's withdrawal in the router's kernel table; after every change, the
router's BGP speaker must name the same paths in its own view: BIRD
(`birdc show route`) or FRR (zebra's `show ip route json`: selected,
installed, each next hop in the FIB; and bgpd's `show bgp summary json`:
both sessions Established, each with the VIP received or, once that LB is
drained, withdrawn).

CONF (JSON): {"vip", "port", "router_ns", "router" ("bird" or "frr"),
  "router_bird" (BIRD's control socket), "router_vty" (FRR's vty folder),
  "n_long", "lbs": [{"name", "ip", "ctl", "pid_file", "start", "post", "proxy_events",
  "hold_file"}], "drain_wait_ms",
  "summary"}
Exit 0 when every check passes.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402

TIMEOUT = 10.0  # per TCP step: the machine is shared with DPDK busy-pollers


def log(msg):
    print("[%7.2f] %s" % (time.monotonic() - T0, msg), flush=True)


T0 = time.monotonic()


def paths(conf):
    """The router's kernel next hops for the VIP (empty: no route)."""
    out = subprocess.run(["ip", "-n", conf["router_ns"], "-j", "route", "show",
                          conf["vip"] + "/32"], capture_output=True, text=True).stdout
    routes = json.loads(out or "[]")
    if not routes:
        return []
    r = routes[0]
    if "nexthops" in r:
        return sorted(n["gateway"] for n in r["nexthops"])
    return [r["gateway"]] if "gateway" in r else []


def wait_paths(conf, n, limit):
    t = time.monotonic()
    while time.monotonic() - t < limit:
        p = paths(conf)
        if len(p) == n:
            return time.monotonic() - t, p
        time.sleep(0.005)
    raise AssertionError("router: %d path(s) for %s after %.0f s, want %d: %s" % (
        len(paths(conf)), conf["vip"], limit, n, paths(conf)))


def vtysh(conf, cmd):
    out = subprocess.run(["vtysh", "--vty_socket", conf["router_vty"], "-c", cmd],
                         capture_output=True, text=True, timeout=TIMEOUT).stdout
    try:
        return json.loads(out or "{}")
    except ValueError:
        return {"unparsed": out}


def router_view(conf):
    """(next hops the router's BGP speaker holds for the VIP, its own text)."""
    vip = conf["vip"] + "/32"
    if conf["router"] == "frr":
        # zebra: the route BGP gave it, selected and installed, next hops in the FIB.
        d = vtysh(conf, "show ip route %s json" % vip)
        hops = []
        for r in d.get(vip, []):
            if r.get("protocol") == "bgp" and r.get("selected") and r.get("installed"):
                hops += [n["ip"] for n in r.get("nexthops", [])
                         if n.get("fib") and n.get("active")]
        return sorted(hops), json.dumps(d)
    out = subprocess.run(["birdc", "-s", conf["router_bird"], "show", "route", vip, "all"],
                         capture_output=True, text=True, timeout=TIMEOUT).stdout.strip()
    # One "via GATEWAY on DEV" per BGP route; merge paths exports all of them.
    return sorted(re.findall(r"^\s+via (\S+) on ", out, re.M)), out


def wait_view(conf, want, limit=10):
    """The router daemon's view must come to name the kernel's next hops."""
    t = time.monotonic()
    while True:
        hops, text = router_view(conf)
        if hops == want:
            log("router %s's own view: %s via %s" % (conf["router"], conf["vip"], hops))
            return text
        if time.monotonic() - t > limit:
            raise AssertionError("router %s's view of %s after %.0f s: %s, kernel: %s\n%s" % (
                conf["router"], conf["vip"], limit, hops, want, text))
        time.sleep(0.05)


def frr_sessions(conf, want, limit=10):
    """bgpd: each LB's session Established with want[name] prefixes received
    (a drain withdraws the prefix; the session stays up). Failure text or None."""
    lbs = {lb["ip"]: lb["name"] for lb in conf["lbs"]}
    t = time.monotonic()
    while True:
        d = vtysh(conf, "show bgp summary json").get("ipv4Unicast", {})
        peers = {lbs.get(ip, ip): [p.get("state"), p.get("pfxRcd")]
                 for ip, p in d.get("peers", {}).items()}
        if peers == {n: ["Established", k] for n, k in want.items()}:
            log("bgpd sessions (state, prefixes received): %s" % peers)
            return None
        if time.monotonic() - t > limit:
            return "bgpd sessions %s, want Established with %s prefixes" % (peers, want)
        time.sleep(0.05)


def rx(lb):
    try:
        c = spwrpc.Client(lb["ctl"], timeout=5)
        n = c.call("stats")["totals"]["rx_packets"]
        c.close()
        return n
    except (OSError, spwrpc.RpcError, ConnectionError):
        return None


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


class Conn:
    def __init__(self, conf, i):
        self.i = i
        self.s = socket.create_connection((conf["vip"], conf["port"]), timeout=TIMEOUT)
        self.s.settimeout(TIMEOUT)
        self.f = self.s.makefile("rwb")
        hello = self.f.readline().decode().split()
        if len(hello) != 2 or hello[0] != "HELLO":
            raise AssertionError("connection %d: greeting %r" % (i, hello))
        self.backend = hello[1]
        self.alive = True
        self.n = 0

    def ask(self):
        """One exchange; must come back from the same backend."""
        if not self.alive:
            return False
        self.n += 1
        try:
            self.f.write(b"ping %d\n" % self.n)
            self.f.flush()
            got = self.f.readline().decode().strip()
        except OSError as e:
            got = "error: %s" % e
        want = "%s ping %d" % (self.backend, self.n)
        if got != want:
            log("connection %d (%s): got %r, want %r" % (self.i, self.backend, got, want))
            self.alive = False
        return self.alive


def check_all(conns, what):
    ok = sum(1 for c in conns if c.ask())
    log("%s: %d of %d long-lived connections answer from their backend" % (what, ok, len(conns)))
    return ok


class NewConns(threading.Thread):
    """Short connections opened back to back: counted ok/failed per phase."""

    def __init__(self, conf):
        super().__init__(daemon=True)
        self.conf = conf
        self.phase = "start"
        self.counts = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            ph = self.phase
            c = self.counts.setdefault(ph, {"ok": 0, "failed": 0})
            try:
                s = socket.create_connection((self.conf["vip"], self.conf["port"]),
                                             timeout=TIMEOUT)
                s.settimeout(TIMEOUT)
                f = s.makefile("rwb")
                name = f.readline().decode().split()[1]
                f.write(b"x\n")
                f.flush()
                ok = f.readline().decode().strip() == name + " x"
                s.close()
            except (OSError, IndexError):
                ok = False
            c["ok" if ok else "failed"] += 1
            time.sleep(0.05)

    def wait_ok(self, phase, n=1, limit=TIMEOUT * 3):
        """Until n new connections succeeded during phase (bounded; the
        verdict on each phase comes at the end)."""
        t = time.monotonic()
        while self.counts.get(phase, {}).get("ok", 0) < n and time.monotonic() - t < limit:
            time.sleep(0.01)


def proxy_events(lb):
    try:
        with open(lb["proxy_events"]) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []


def two_sigterms(conf, lb, summary, frr):
    """lb's withdrawal under two SIGTERMs (event 4): the failures."""
    failures = []
    pid = int(open(lb["pid_file"]).read())
    n0 = len([e for e in proxy_events(lb) if e["event"] == "accept"])
    open(lb["hold_file"], "w").close()
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    conn = None
    while conn is None and time.monotonic() - t0 < 15:
        acc = [e for e in proxy_events(lb) if e["event"] == "accept"]
        if len(acc) > n0:
            conn = acc[n0]["conn"]
        else:
            time.sleep(0.0002)
    os.kill(pid, signal.SIGTERM)
    t2 = time.monotonic()
    if conn is None:
        os.unlink(lb["hold_file"])
        return ["%s: no connection to its BIRD within 15 s of SIGTERM" % lb["name"]]
    log("%s: SIGTERM, its connection to BIRD seen %.2f ms later, SIGTERM again %.2f ms later;"
        " BIRD's welcome held 1 s" % (lb["name"], (acc[n0]["t"] - t0) * 1000, (t2 - t0) * 1000))
    time.sleep(1.0)
    os.unlink(lb["hold_file"])
    try:
        dt, p = wait_paths(conf, 0, 15)
        gone_ms = (time.monotonic() - t0) * 1000
        log("%s's path gone from the router's kernel %.0f ms after the first SIGTERM" % (
            lb["name"], gone_ms))
        summary["router_after_two_sigterms"] = wait_view(conf, p)
        if frr:
            err = frr_sessions(conf, {"lb1": 0, "lb2": 0})
            if err:
                failures.append("%s after two SIGTERMs: %s" % (lb["name"], err))
    except AssertionError as e:
        gone_ms = None
        summary["router_after_two_sigterms"] = router_view(conf)[1]
        failures.append("%s stopped by two SIGTERMs: %s" % (lb["name"], e))
    while pid_alive(pid) and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    if pid_alive(pid):
        failures.append("%s still runs 30 s after two SIGTERMs" % lb["name"])
    ev = [e["event"] for e in proxy_events(lb) if e["conn"] == conn]
    cmds = [e["detail"] for e in proxy_events(lb) if e["conn"] == conn and e["event"] == "command"]
    log("%s's withdrawal connection: %s (commands %s)" % (lb["name"], ev, cmds))
    if cmds != ["configure"] or "reply" not in ev:
        failures.append("%s exited without its withdrawal reaching BIRD: connection %s" % (
            lb["name"], ev))
    summary["events"].append({"event": "%s two SIGTERMs, withdrawal held 1 s" % lb["name"],
                              "path_gone_ms": round(gone_ms) if gone_ms is not None else None,
                              "connection": ev})
    return failures


def main():
    conf = json.load(open(sys.argv[1]))
    lb1, lb2 = conf["lbs"]
    summary = {"events": []}
    failures = []

    dt, p = wait_paths(conf, 2, 120)
    log("router: %s via %s (ECMP)" % (conf["vip"], p))
    summary["router"] = conf["router"]
    summary["router_before"] = wait_view(conf, p)
    frr = conf["router"] == "frr"
    if frr:
        err = frr_sessions(conf, {"lb1": 1, "lb2": 1})
        if err:
            failures.append("before any event: " + err)
    rx0 = [rx(lb1), rx(lb2)]
    conns = [Conn(conf, i) for i in range(conf["n_long"])]
    rx1 = [rx(lb1), rx(lb2)]
    per_lb = [b - a for a, b in zip(rx0, rx1)]
    backends = {}
    for c in conns:
        backends[c.backend] = backends.get(c.backend, 0) + 1
    log("opened %d long-lived connections: backends %s; packets seen by lb1 %d, lb2 %d" % (
        len(conns), backends, per_lb[0], per_lb[1]))
    summary.update(opened=len(conns), backends=backends, rx_opening=per_lb)
    if min(per_lb) == 0:
        failures.append("ECMP used one instance only while opening (%s)" % per_lb)
    if check_all(conns, "before any event") != len(conns):
        failures.append("long-lived connections broke before any event")

    newc = NewConns(conf)
    newc.start()
    newc.wait_ok("start")

    # ---- event 0: drain lb2 through its socket (method drain), then undrain
    newc.phase = "lb2 drained (socket)"
    c2 = spwrpc.Client(lb2["ctl"], timeout=30)
    t0 = time.monotonic()
    res = c2.call("drain")
    dt, p = wait_paths(conf, 1, 30)
    sock_withdraw_ms = (time.monotonic() - t0) * 1000
    # The reply precedes BIRD's answer (docs/control-protocol.md): once the
    # route is gone, stats carry spillwayd's own figure.
    res = c2.call("stats")
    log("drain method on lb2 -> route withdrawn in the router's kernel: %.0f ms (spillwayd's "
        "own figure, request -> BIRD reconfigured: %s ms; now via %s)" % (
            sock_withdraw_ms, res["hooks"]["bird"]["last_withdraw_ms"], p))
    wait_view(conf, p)
    if frr:
        err = frr_sessions(conf, {"lb1": 1, "lb2": 0})
        if err:
            failures.append("lb2 drained: " + err)
    if not c2.call("stats")["drained"]:
        failures.append("lb2's stats do not show drained")
    newc.wait_ok(newc.phase)
    ok_sdrain = check_all(conns, "lb2 drained, still forwarding")
    newc.phase = "lb2 undrained"
    t0 = time.monotonic()
    c2.call("undrain")
    dt, p = wait_paths(conf, 2, 30)
    log("undrain -> route back: %.0f ms (via %s)" % ((time.monotonic() - t0) * 1000, p))
    wait_view(conf, p)
    c2.close()
    newc.wait_ok(newc.phase)
    ok_sundrain = check_all(conns, "lb2 undrained")
    summary["events"].append({"event": "lb2 drain/undrain (socket)",
                              "withdraw_ms": round(sock_withdraw_ms),
                              "spillwayd_withdraw_ms": res["hooks"]["bird"]["last_withdraw_ms"],
                              "survived_drain": ok_sdrain, "survived_undrain": ok_sundrain})

    # ---- event 1: drain and stop lb1 (SIGTERM: withdraw, drain wait, stop)
    pid1 = int(open(lb1["pid_file"]).read())
    newc.phase = "drain"
    t0 = time.monotonic()
    os.kill(pid1, signal.SIGTERM)
    dt, p = wait_paths(conf, 1, 30)
    withdraw_ms = dt * 1000
    log("drain request -> route withdrawn in the router's kernel: %.0f ms (now via %s)" % (
        withdraw_ms, p))
    summary["router_after_withdraw"] = wait_view(conf, p)
    if frr:
        err = frr_sessions(conf, {"lb1": 0, "lb2": 1})
        if err:
            failures.append("lb1 withdrawn: " + err)
    ok_drain = check_all(conns, "lb1 withdrawn, still forwarding (drain wait)")
    while pid_alive(pid1) and time.monotonic() - t0 < 60:
        time.sleep(0.05)
    stopped_s = time.monotonic() - t0
    if pid_alive(pid1):
        failures.append("lb1 did not stop within 60 s of SIGTERM")
    log("lb1 stopped %.1f s after SIGTERM (drain wait %d ms)" % (stopped_s,
                                                                 conf["drain_wait_ms"]))
    newc.phase = "lb1 stopped"
    newc.wait_ok(newc.phase)
    ok_stop = check_all(conns, "lb1 stopped")
    summary["events"].append({"event": "lb1 drained (SIGTERM)", "withdraw_ms": round(withdraw_ms),
                              "survived_drain": ok_drain, "stop_s": round(stopped_s, 2),
                              "survived_stop": ok_stop})

    # ---- event 2: lb1 back
    newc.phase = "lb1 back"
    t1 = time.monotonic()
    subprocess.run(["bash", lb1["start"]], check=True)
    dt, p = wait_paths(conf, 2, 120)
    announce_s = time.monotonic() - t1
    log("lb1 started -> route re-announced: %.1f s (via %s)" % (announce_s, p))
    summary["router_after_return"] = wait_view(conf, p)
    if frr:
        err = frr_sessions(conf, {"lb1": 1, "lb2": 1})
        if err:
            failures.append("lb1 back: " + err)
    rx2 = rx(lb1)
    ok_back = check_all(conns, "lb1 back in the ECMP group")
    newc.wait_ok(newc.phase, 2)
    ok_back2 = check_all(conns, "lb1 back, again (after two new connections)")
    rx3 = rx(lb1)
    moved = (rx3 or 0) - (rx2 or 0)
    log("packets through lb1 since it came back: %d" % moved)
    summary["events"].append({"event": "lb1 back", "announce_s": round(announce_s, 2),
                              "survived": ok_back2, "rx_lb1_after_return": moved})
    if moved == 0:
        failures.append("no long-lived connection moved back to lb1")
    newc.wait_ok(newc.phase, 3)

    # ---- event 3: lb1 killed (SIGKILL), then the unit's ExecStopPost withdraws.
    # New connections ECMP sends to the dead lb1 fail until then: not counted.
    pid1 = int(open(lb1["pid_file"]).read())
    newc.phase = "lb1 killed (not counted)"
    os.kill(pid1, signal.SIGKILL)
    t0 = time.monotonic()
    while pid_alive(pid1) and time.monotonic() - t0 < 30:
        time.sleep(0.01)
    time.sleep(1.0)
    kept = paths(conf)
    log("lb1 killed (SIGKILL); 1 s later the router has %s (nothing withdrew)" % kept)
    t0 = time.monotonic()
    r = subprocess.run(["bash", lb1["post"]], capture_output=True, text=True, timeout=60)
    log("ExecStopPost (spillwayd --bird-withdraw): exit %d: %s" % (
        r.returncode, (r.stdout + r.stderr).strip()))
    if r.returncode != 0:
        failures.append("lb1's ExecStopPost command exited %d: %s" % (
            r.returncode, r.stderr.strip()))
    try:
        dt, p = wait_paths(conf, 1, 30)
        post_ms = (time.monotonic() - t0) * 1000
        log("ExecStopPost -> lb1's path gone from the router's kernel: %.0f ms (now via %s)" % (
            post_ms, p))
        summary["router_after_kill"] = wait_view(conf, p)
        if frr:
            err = frr_sessions(conf, {"lb1": 0, "lb2": 1})
            if err:
                failures.append("lb1 killed and withdrawn: " + err)
    except AssertionError as e:
        post_ms = None
        summary["router_after_kill"] = router_view(conf)[1]
        failures.append("after lb1's kill -9 and its ExecStopPost: %s" % e)
    newc.phase = "lb1 killed, withdrawn"
    newc.wait_ok(newc.phase, 2)
    ok_kill = check_all(conns, "lb1 killed and withdrawn")
    summary["events"].append({"event": "lb1 killed (SIGKILL), ExecStopPost",
                              "paths_1s_after_kill": len(kept),
                              "withdraw_ms": round(post_ms) if post_ms is not None else None,
                              "survived": ok_kill})
    newc.stop.set()
    newc.join(TIMEOUT * 2)
    summary["new_connections"] = newc.counts
    log("new connections per phase: %s" % json.dumps(newc.counts))

    # ---- event 4: lb2 (the last path) gets two SIGTERMs, as timeout(1)
    # relaying one does, the second as soon as lb2's connection to its BIRD
    # shows the first was read; the proxy holds BIRD's welcome for 1 s, so
    # "configure" is still unsent when the second arrives. lb2 must finish
    # the withdrawal before it exits: the router loses its last path.
    failures += two_sigterms(conf, lb2, summary, frr)
    for ph, c in newc.counts.items():
        if c["failed"] and not ph.endswith("(not counted)"):
            failures.append("%d new connection(s) failed during %s" % (c["failed"], ph))
        if ph != "start" and c["ok"] == 0:
            failures.append("no new connection succeeded during %s" % ph)
    for what, n in (("lb2 socket drain", ok_sdrain), ("lb2 undrain", ok_sundrain),
                    ("drain", ok_drain), ("stop", ok_stop), ("return", ok_back2),
                    ("kill -9 and ExecStopPost", ok_kill)):
        if n != len(conns):
            failures.append("%d of %d long-lived connections broke across lb1's %s" % (
                len(conns) - n, len(conns), what))
    for c in conns:
        c.s.close()
    summary["failures"] = failures
    json.dump(summary, open(conf["summary"], "w"), indent=1)
    print("---- router %s before:\n%s\n---- after the withdrawal:\n%s\n---- after lb1 came back:\n%s"
          "\n---- after lb1's kill -9 and ExecStopPost:\n%s\n---- after lb2's two SIGTERMs:\n%s"
          % (conf["router"], summary["router_before"], summary["router_after_withdraw"],
             summary["router_after_return"], summary["router_after_kill"],
             summary.get("router_after_two_sigterms")))
    for f in failures:
        log("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
