#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# No route outlives its balancer: the stop signals against a real BIRD.
# spillwayd on net_null announces one VIP through a BIRD 2 started here (its
# own configuration and control socket in the work directory; only static
# protocols, so it touches no interface and no kernel table), reached
# through bird_proxy.py, which relays every line to BIRD and can hold BIRD's
# welcome: the daemon's exchange then waits with "configure" not yet sent.
# Each case starts a fresh daemon with --drain-wait 60000 (a stop before
# that is the signals' doing), the welcome held:
#
#   two     SIGTERM, and as soon as the daemon's connection to BIRD shows it
#           was read, SIGTERM again (what timeout(1) relaying one SIGTERM as
#           two does); the welcome released 1 s later. The daemon must send
#           "configure", read BIRD's answer and only then exit (exit 0): the
#           include file holds no route and BIRD has none from spillway4.
#   three   the same, then a third SIGTERM once the daemon logged the second:
#           it stops at once; the welcome, released 0.5 s later, finds no
#           daemon to send "configure".
#   bound   the welcome never released: two SIGTERMs end the exchange at its
#           deadline (2 s from the first; a timeout counted), then the daemon.
#   crash   the packaged unit's commands (debian/spillway.spillwayd.service,
#           its $VARIABLES expanded as systemd does, /usr/sbin/spillwayd
#           being SPILLWAYD): ExecStart's daemon killed with SIGKILL, so BIRD
#           keeps the route; then ExecStopPost must withdraw it (exit 0, the
#           include file empty, "configure" answered, BIRD without the route).
#           Run while the daemon still answers on its control socket, the
#           same command refuses (exit 1) and leaves the route.
#
# The order of events is read from the proxy's records and the daemon's
# final counters (--stats-file), not from timing, except for the bounds.
#
# usage: test_bird_stop.sh SPILLWAYD SOURCE_ROOT
# env:   SPW_BIRD_STOP_KEEP=1   keep the work directory
set -euo pipefail

SPW=${1:?usage: test_bird_stop.sh SPILLWAYD SOURCE_ROOT}
SPW=$(readlink -f "$SPW")
UNIT=$(readlink -f "${2:?usage: test_bird_stop.sh SPILLWAYD SOURCE_ROOT}")/debian/spillway.spillwayd.service
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/daemon_lib.sh"

[[ -x $SPW ]] || { echo "FAIL: not executable: $SPW"; exit 1; }
[[ -x $PY ]] || { echo "SKIP: $PY needed"; exit 77; }
command -v bird >/dev/null ||
	{ echo "SKIP: BIRD 2 is needed (apt-get install bird2; scripts/setup.sh)"; exit 77; }
spw_test_begin bird-stop SPW_BIRD_STOP_KEEP

cat >"$WORK/config.json" <<'EOF'
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
 "maglev": {"table_size": 251},
 "flows": {"capacity": 4096},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}]}]}
EOF
printf 'protocol static spillway4 { ipv4; }\nprotocol static spillway6 { ipv6; }\n' \
	>"$WORK/vips.conf"
cat >"$WORK/bird.conf" <<EOF
router id 10.0.0.1;
include "$WORK/vips.conf";
EOF
bird -p -c "$WORK/bird.conf" || fail "BIRD rejects its configuration"
bird -f -c "$WORK/bird.conf" -s "$WORK/bird.ctl" >"$WORK/bird.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
	[[ -S $WORK/bird.ctl ]] && break
	kill -0 "${PIDS[0]}" 2>/dev/null || fail "BIRD exited (see $WORK/bird.log)"
	sleep 0.1
done
[[ -S $WORK/bird.ctl ]] || fail "BIRD's control socket did not appear"

PYTHONPATH=$HERE "$PY" - "$SPW" "$WORK" "$PREFIX" "$UNIT" <<'EOF'
import json, os, re, shlex, signal, subprocess, sys, threading, time

import spwrpc
from bird_proxy import BirdProxy, bird_routes

spw, work, prefix, unit = sys.argv[1:5]
ctl, inc, bird = work + "/ctl.sock", work + "/vips.conf", work + "/bird.ctl"
VIP = "192.0.2.10/32"
T0 = time.monotonic()
proxy = BirdProxy(work + "/proxy.ctl", bird)
daemon = None


def log(msg):
    print("  [%5.2fs] %s" % (time.monotonic() - T0, msg), flush=True)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    if daemon is not None and daemon.poll() is None:
        daemon.kill()
        daemon.wait()
    sys.exit(1)


def file_routes():
    with open(inc) as f:
        return [line.split()[1] for line in f if line.startswith("\troute ")]


def eal_args(name):
    return ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", prefix + "-" + name,
            "-l", "0-1", "--vdev=net_null0"]


def spw_args(name):
    return ["--config", work + "/config.json", "--bird-include", inc,
            "--bird-socket", work + "/proxy.ctl", "--drain-wait", "60000",
            "--stats-file", "%s/%s.stats.json" % (work, name)]


def unit_command(key, env):
    """The unit's KEY= command line as systemd runs it: its prefix characters
    dropped, $VAR split into words and ${VAR} kept as one, the installed
    /usr/sbin/spillwayd replaced by the one under test."""
    lines = [l.split("=", 1)[1] for l in open(unit).read().splitlines()
             if l.startswith(key + "=")]
    if len(lines) != 1:
        fail("%s: %d %s= line(s), one expected" % (unit, len(lines), key))
    argv = []
    for word in shlex.split(lines[0]):
        m = re.fullmatch(r"\$(\w+)", word)
        if m:
            argv += env[m.group(1)].split()
            continue
        argv.append(re.sub(r"\$\{(\w+)\}", lambda x: env[x.group(1)], word))
    argv[0] = argv[0].lstrip("-@:+!")
    if argv[0] != "/usr/sbin/spillwayd":
        fail("%s: %s= runs %s, not /usr/sbin/spillwayd" % (unit, key, argv[0]))
    argv[0] = spw
    return argv


def start(name, argv=None):
    """A fresh daemon announcing the VIP, waited for until BIRD has it."""
    global daemon
    proxy.hold = False
    proxy.release.clear()
    if os.path.exists(ctl):
        os.unlink(ctl)
    err = open("%s/%s.stderr" % (work, name), "w")
    if argv is None:
        argv = [spw] + eal_args(name) + ["--", "--control", ctl] + spw_args(name)
    daemon = subprocess.Popen(argv, stdout=err, stderr=err)
    end = time.monotonic() + 60
    while True:
        if daemon.poll() is not None:
            fail("%s: spillwayd exited %s (see %s/%s.stderr)" % (name, daemon.returncode,
                                                                 work, name))
        if time.monotonic() > end:
            fail("%s: the VIP was not announced within 60 s" % name)
        try:
            st = spwrpc.Client(ctl, timeout=10).call("stats")["hooks"]["bird"]
        except OSError:
            st = None
        if st and st["announced"] == 1 and not st["in_flight"] and \
                VIP in bird_routes(bird, "spillway4"):
            break
        time.sleep(0.05)
    proxy.hold = True
    log("%s: spillwayd announces %s (include file %s, BIRD %s)"
        % (name, VIP, file_routes(), bird_routes(bird, "spillway4")))
    return st


def log_has(name, text):
    with open("%s/%s.stderr" % (work, name)) as f:
        return text in f.read()


def signals(name, n):
    """SIGTERM; once the daemon's connection to BIRD shows it was read, the
    next ones: each after the daemon logged the one before (n = 3). The
    connection it opened for the withdrawal, the time of the first signal."""
    before = len(proxy.conns)
    t1 = time.monotonic()
    daemon.send_signal(signal.SIGTERM)
    got = proxy.wait_event("accept", before + 1, limit=15)
    if got is None:
        fail("%s: no connection to BIRD within 15 s of SIGTERM" % name)
    conn = proxy.conns[before]
    daemon.send_signal(signal.SIGTERM)
    log("%s: SIGTERM, connection to BIRD %.2f ms later, SIGTERM again %.2f ms later"
        % (name, (conn.first("accept")[0] - t1) * 1e3, (time.monotonic() - t1) * 1e3))
    if n == 3:
        end = time.monotonic() + 10
        while daemon.poll() is None and not log_has(name, "finishing the withdrawal"):
            if time.monotonic() > end:
                fail("%s: the second SIGTERM was not logged within 10 s" % name)
            time.sleep(0.005)
        daemon.send_signal(signal.SIGTERM)
        log("%s: third SIGTERM" % name)
    return conn, t1


def wait_exit(name, limit):
    try:
        rc = daemon.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        fail("%s: spillwayd still runs %.0f s after the signals" % (name, limit))
    t = time.monotonic()
    with open("%s/%s.stats.json" % (work, name)) as f:
        st = json.load(f)["hooks"]["bird"]
    log("%s: exit %d; final hooks.bird: announced %s, pending %s, reloads %s, timeouts %s, "
        "last_withdraw_ms %s" % (name, rc, st["announced"], st["pending"], st["reloads"],
                                 st["timeouts"], st["last_withdraw_ms"]))
    if rc != 0:
        fail("%s: spillwayd exited %d" % (name, rc))
    return t, st


try:
    # ---- two signals: the withdrawal already started is finished
    before = start("two")
    conn, t1 = signals("two", 2)
    timer = threading.Timer(1.0, proxy.release.set)
    timer.start()
    t_exit, st = wait_exit("two", 20)
    timer.join()
    ev = conn.names()
    log("two: the withdrawal's connection: %s" % ev)
    if "command" not in ev:
        fail("two: spillwayd exited without sending \"configure\" to BIRD (second SIGTERM "
             "abandoned the withdrawal; connection: %s)" % ev)
    if conn.first("command")[1] != "configure":
        fail("two: sent %r, not configure" % conn.first("command")[1])
    if "reply" not in ev:
        fail("two: BIRD's answer to configure never reached spillwayd: %s" % ev)
    code = conn.first("reply")[1][0]
    if code not in (3, 4, 5):
        fail("two: BIRD answered configure with %04d" % code)
    if st["reloads"] != before["reloads"] + 1 or st["pending"] or st["announced"] != 0 or \
            st["last_withdraw_ms"] is None:
        fail("two: spillwayd exited before it read BIRD's answer: final hooks.bird %r" % st)
    if file_routes():
        fail("two: the include file still holds %s" % file_routes())
    if bird_routes(bird, "spillway4"):
        fail("two: BIRD still announces %s" % bird_routes(bird, "spillway4"))
    if t_exit - t1 > 20:
        fail("two: exit %.1f s after the signals (the drain wait, not the signal)"
             % (t_exit - t1))
    log("two: configure sent after the release, answered %04d, exit %.2f s after the first "
        "SIGTERM; include file and BIRD empty" % (code, t_exit - t1))

    # ---- three signals: the third stops at once. The welcome is released
    # 0.5 s after it: a daemon still in its loop would then send configure
    # (judged by that, not by how long the exit takes: a sanitizer's exit is slow).
    before = start("three")
    conn, t1 = signals("three", 3)
    t3 = time.monotonic()
    timer = threading.Timer(0.5, proxy.release.set)
    timer.start()
    t_exit, st = wait_exit("three", 20)
    timer.join()
    ev = conn.names()
    log("three: exit %.2f s after the third SIGTERM; connection: %s" % (t_exit - t3, ev))
    if "command" in ev or st["reloads"] != before["reloads"]:
        fail("three: the exchange went on after the third signal: %s, final hooks.bird %r"
             % (ev, st))
    if not log_has("three", "SIGTERM, stopping") and not log_has("three", "Terminated, stopping"):
        fail("three: the third signal was not taken as a stop")

    # ---- the exchange's deadline bounds the wait: the daemon closes its
    # connection to BIRD at the deadline (2 s after the first signal) and exits.
    start("bound")
    conn, t1 = signals("bound", 2)
    t_exit, st = wait_exit("bound", 20)
    proxy.release.set()
    ev = conn.names()
    t_eof = conn.first("eof")
    log("bound: connection closed %s s, exit %.2f s after the first SIGTERM; connection: %s"
        % ("%.2f" % (t_eof[0] - t1) if t_eof else "never", t_exit - t1, ev))
    if "welcome" in ev:
        fail("bound: the welcome was held, yet the connection went on: %s" % ev)
    if st["timeouts"] < 1:
        fail("bound: no timeout counted: %r" % st)
    if t_eof is None or not 1.9 <= t_eof[0] - t1 <= 4:
        fail("bound: the exchange ended %s after the first SIGTERM; its deadline is 2 s"
             % ("%.2f s" % (t_eof[0] - t1) if t_eof else "never"))

    # ---- the packaged unit: kill -9, then ExecStopPost withdraws
    env = {"SPILLWAYD_EAL_ARGS": " ".join(eal_args("crash")), "SPILLWAY_CONTROL": ctl,
           "SPILLWAYD_ARGS": " ".join(spw_args("crash"))}
    start("crash", unit_command("ExecStart", env))
    proxy.hold = False
    post = unit_command("ExecStopPost", env)
    r = subprocess.run(post, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    log("crash: ExecStopPost while spillwayd runs: exit %d: %s"
        % (r.returncode, r.stdout.decode(errors="replace").strip()))
    if r.returncode != 1 or VIP not in bird_routes(bird, "spillway4") or not file_routes():
        fail("crash: ExecStopPost withdrew (or did not refuse) while spillwayd runs")
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    log("crash: spillwayd killed (SIGKILL); BIRD still has %s, the include file %s"
        % (bird_routes(bird, "spillway4"), file_routes()))
    if VIP not in bird_routes(bird, "spillway4"):
        fail("crash: BIRD lost the route without anyone withdrawing it")
    before = len(proxy.conns)
    log("crash: ExecStopPost: %s" % " ".join(post))
    try:
        r = subprocess.run(post, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    except subprocess.TimeoutExpired:
        fail("crash: ExecStopPost still runs after 30 s")
    out = r.stdout.decode(errors="replace").strip()
    log("crash: ExecStopPost exit %d: %s" % (r.returncode, out))
    if r.returncode != 0:
        fail("crash: ExecStopPost exited %d: %s" % (r.returncode, out))
    conns = proxy.conns[before:]
    if len(conns) != 1 or conns[0].first("command") is None or \
            conns[0].first("command")[1] != "configure" or conns[0].first("reply") is None:
        fail("crash: ExecStopPost did not have BIRD reload (connections: %s)"
             % [c.names() for c in conns])
    if conns[0].first("reply")[1][0] not in (3, 4, 5):
        fail("crash: BIRD answered %r" % (conns[0].first("reply")[1],))
    if file_routes():
        fail("crash: the include file still holds %s" % file_routes())
    if bird_routes(bird, "spillway4"):
        fail("crash: BIRD still announces %s after ExecStopPost" % bird_routes(bird, "spillway4"))
    log("crash: ExecStopPost withdrew the route (BIRD answered %04d)"
        % conns[0].first("reply")[1][0])
finally:
    proxy.close()
    if daemon is not None and daemon.poll() is None:
        daemon.kill()
        daemon.wait()
print("PASS")
EOF
