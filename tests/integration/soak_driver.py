#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""One soak segment's control-plane driver (test_soak.sh runs one per segment).

  soak_driver.py CONFIG STATE CTL SECONDS END MODEL.json SEED [CTL_MODE]

Finds the spillwayd serving CTL (read-only /proc scan), checks the restart
from --state kept every acknowledged change (MODEL.json, carried across
segments), checks file modes (socket CTL_MODE, default 0660; state 0600), then
for SECONDS runs, one at a time: random membership changes and batches through
the socket (each acknowledged change is applied to the model), hostile clients
(garbage, an oversize line, a half request then hang-up), SIGHUP reloads of
CONFIG (the model becomes CONFIG's content). At the end, END is "kill"
(kill -9 the daemon, then the state file must equal the model) or "keep".
Prints one summary line: changes=N batches=N hostile=N sighups=N.
"""

import json
import os
import random
import signal
import socket
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402

CONFIG, STATE, CTL, SECS, END, MODEL, SEED = sys.argv[1:8]
CTL_MODE = int(sys.argv[8], 8) if len(sys.argv) > 8 else 0o660
VIP = {"address": "192.0.2.10", "port": 80, "protocol": "tcp"}


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def norm(cfg):
    out = {}
    for v in cfg["vips"]:
        out["%s:%s/%s" % (v["address"], v["port"], v["protocol"])] = sorted(
            [b["address"], b.get("weight", 1), b.get("state", "active")]
            for b in v.get("backends", []))
    return out


def find_pid():
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if open("/proc/%s/comm" % d).read().strip() == "spillwayd" and \
                    CTL.encode() in open("/proc/%s/cmdline" % d, "rb").read():
                return int(d)
        except OSError:
            pass
    return None


def connect():
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        try:
            return spwrpc.Client(CTL, timeout=10)
        except OSError:
            time.sleep(0.1)
    fail("no control socket at %s" % CTL)


def hostile(rng):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(CTL)
    kind = rng.choice(["garbage", "oversize", "half"])
    try:
        if kind == "garbage":
            s.sendall(bytes(rng.getrandbits(8) for _ in range(4096)).replace(b"\n", b"x") + b"\n")
            s.recv(65536)
        elif kind == "oversize":
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"' + b"A" * (4 << 20))
            s.recv(65536)
        else:
            s.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
    except OSError:
        pass        # the daemon may close on us: that is its right
    s.close()
    return kind


def main():
    rng = random.Random(int(SEED))
    pid = None
    t0 = time.monotonic()
    while pid is None and time.monotonic() - t0 < 30:
        pid = find_pid()
        time.sleep(0.05)
    if pid is None:
        fail("spillwayd serving %s not found" % CTL)
    c = connect()
    model = json.load(open(MODEL)) if os.path.exists(MODEL) else None
    cur = norm(c.call("config_get"))
    if model is not None and cur != model:
        fail("restart from --state lost acknowledged changes:\n got %s\n want %s" % (cur, model))
    model = cur
    m = stat.S_IMODE(os.stat(CTL).st_mode)
    if m != CTL_MODE:
        fail("control socket mode %o, want %o" % (m, CTL_MODE))
    key = "192.0.2.10:80/tcp"
    n = {"changes": 0, "batches": 0, "hostile": 0, "sighups": 0, "refused": 0}
    serial = rng.randrange(1 << 20)
    end = time.monotonic() + float(SECS)
    while time.monotonic() < end:
        time.sleep(rng.uniform(0.02, 0.15))
        op = rng.random()
        bes = [b[0] for b in model[key]]
        serial += 1
        if op < 0.08:
            hostile(rng)
            n["hostile"] += 1
            continue
        if op < 0.12:
            os.kill(pid, signal.SIGHUP)
            want = norm(json.load(open(CONFIG)))
            t1 = time.monotonic()
            while norm(c.call("config_get")) != want:
                if time.monotonic() - t1 > 10:
                    fail("SIGHUP reload not applied within 10 s")
                time.sleep(0.05)
            model = want
            n["sighups"] += 1
            continue
        calls = []
        for _ in range(rng.choice([1, 1, 1, 3])):
            r = rng.random()
            if r < 0.35 or len(bes) < 3:
                calls.append(("backend_add", {"vip": VIP, "address": "10.3.%d.%d" % (
                    serial % 200, 1 + rng.randrange(250)), "weight": rng.randint(1, 4)}))
            elif r < 0.55:
                calls.append(("backend_remove", {"vip": VIP, "address": rng.choice(bes)}))
            else:
                calls.append(("backend_set", {"vip": VIP, "address": rng.choice(bes),
                                              "weight": rng.randint(0, 4),
                                              "state": rng.choice(["active", "active", "draining"])}))
        if len(calls) == 1:
            try:
                c.call(calls[0][0], **calls[0][1])
                n["changes"] += 1
            except spwrpc.RpcError:
                n["refused"] += 1       # e.g. a duplicate address: nothing changes
        else:
            reps = c.batch(calls)
            n["batches"] += 1
            n["changes"] += sum(1 for r in reps if "result" in r)
        # The model: what the daemon acknowledged (read back, compared below
        # to the state file after the kill).
        model = norm(c.call("config_get"))
        st = norm(json.load(open(STATE)))
        if st != model:
            fail("state file differs from the acknowledged configuration:\n %s\n %s" % (st, model))
    m = stat.S_IMODE(os.stat(STATE).st_mode)
    if m != 0o600:
        fail("state file mode %o, want 600" % m)
    # Still healthy after the hostile clients?
    c2 = connect()
    c2.call("version")
    c2.close()
    json.dump(model, open(MODEL, "w"))
    if END == "kill":
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if find_pid() is None:
                break
            time.sleep(0.05)
        try:
            st = json.load(open(STATE))
        except (OSError, ValueError) as e:
            fail("state file unreadable after kill -9: %s" % e)
        if norm(st) != model:
            fail("state file after kill -9 is not the acknowledged configuration")
    c.close()
    print("driver: changes=%(changes)d batches=%(batches)d hostile=%(hostile)d "
          "sighups=%(sighups)d refused=%(refused)d" % n, flush=True)


if __name__ == "__main__":
    main()
