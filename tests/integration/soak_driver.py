#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""One soak segment's control-plane driver (test_soak.sh runs one per segment).

  soak_driver.py CONFIG STATE CTL SECONDS END MODEL.json SEED [CTL_MODE]

The driver keeps its own model of the configuration (the VIP's backends as
address -> weight, state), never read back from the daemon:
  - segment 1 starts from CONFIG (the daemon's --config; no state file yet),
    later segments from MODEL.json, written by the previous segment;
  - a change goes into the model only when the daemon acknowledges it: a
    single call with a result, a batch whose every reply is a result (then
    all its calls, in order; a batch is one transaction);
  - a refused call or batch changes nothing in the model;
  - a SIGHUP reload makes the model CONFIG's content.
Before sending, the driver also predicts from the model whether the daemon
must accept (backend_add of an address already there: -32002; remove or set
of one not there: -32001; a batch fails as a whole, the other calls -32010)
and what an accepted backend_add/backend_set returns; a disagreement fails.

Finds the spillwayd serving CTL (read-only /proc scan) and waits until it
forwards traffic (stats rx_packets > 0): pktgen/run-memif.sh may restart both
sides after a failed memif link bring-up, so a daemon that goes away before
that is found again. Then: config_get and the state file (valid JSON, mode
0600) must equal the model (the restart from --state kept every acknowledged
change), and every VIP's Maglev table (maglev_table raw, paged with
from/count, slot for slot) must be the one maglev_ref.py computes from the
model and CONFIG's maglev seed and table_size; the socket mode must be
CTL_MODE (default 0660). For SECONDS, one
at a time: membership changes and batches, hostile clients (garbage, an
oversize line, a half request then hang-up), SIGHUP reloads; after every one
config_get and the state file must equal the model. At the end the model is
written to MODEL.json, the tables are checked against the model again (the
ones the daemon built by changes, not at start-up), and END is "kill" (kill -9 the daemon: the state file
must still equal the model) or "keep". Prints one summary line:
changes=N batches=N hostile=N sighups=N refused=N.
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
import maglev_ref  # noqa: E402
import spwrpc  # noqa: E402

CONFIG, STATE, CTL, SECS, END, MODEL, SEED = sys.argv[1:8]
CTL_MODE = int(sys.argv[8], 8) if len(sys.argv) > 8 else 0o660
VIP = {"address": "192.0.2.10", "port": 80, "protocol": "tcp"}
KEY = "192.0.2.10:80/tcp"
WAIT_TRAFFIC_S = 120    # link bring-up with run-memif.sh's retries, under load
TABLE_PAGE = 65536      # slots per maglev_table request: 65537 slots take two
TABLE_SAMPLE = 16       # VIPs whose tables are checked, at most (this soak has one)


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def norm(cfg):
    """A configuration document (file, state file or config_get) as
    {VIP: {address: [weight, state]}}."""
    return {"%s:%s/%s" % (v["address"], v["port"], v["protocol"]):
            {b["address"]: [b.get("weight", 1), b.get("state", "active")]
             for b in v.get("backends", [])}
            for v in cfg["vips"]}


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


def wait_for_traffic():
    """The daemon that serves traffic: (pid, client)."""
    t0 = time.monotonic()
    pid = c = None
    while time.monotonic() - t0 < WAIT_TRAFFIC_S:
        p = find_pid()
        if p is not None and (p != pid or c is None):
            if c is not None:
                c.close()
            c = None
            try:
                c = spwrpc.Client(CTL, timeout=10)
                pid = p
            except OSError:
                c = None
        if c is not None:
            try:
                if c.call("stats")["totals"]["rx_packets"] > 0 and find_pid() == pid:
                    return pid, c
            except (OSError, ConnectionError, ValueError):
                c.close()
                c = None
        time.sleep(0.1)
    fail("no spillwayd serving %s forwarded traffic within %d s" % (CTL, WAIT_TRAFFIC_S))


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


def predict(model, method, p):
    """Apply one call to a copy of the VIP's backends as the protocol says:
    (new backends, None, expected result) or (unchanged, error code, None)."""
    bes = dict(model)
    a = p["address"]
    if method == "backend_add":
        if a in bes:
            return model, -32002, None
        bes[a] = [p.get("weight", 1), p.get("state", "active")]
        return bes, None, {"address": a, "weight": bes[a][0], "state": bes[a][1]}
    if a not in bes:
        return model, -32001, None
    if method == "backend_remove":
        del bes[a]
        return bes, None, {}
    w, s = bes[a]
    bes[a] = [p.get("weight", w), p.get("state", s)]
    return bes, None, {"address": a, "weight": bes[a][0], "state": bes[a][1]}


def stored(res):
    """The parts of a returned backend the model knows."""
    if not res:
        return res
    return {"address": res.get("address"), "weight": res.get("weight", 1),
            "state": res.get("state", "active")}


def check(c, model, what):
    got = norm(c.call("config_get"))
    if got != model:
        fail("after %s, config_get differs from the model:\n got   %s\n model %s"
             % (what, got, model))
    try:
        st = norm(json.load(open(STATE)))
    except (OSError, ValueError) as e:
        fail("after %s, state file unreadable: %s" % (what, e))
    if st != model:
        fail("after %s, the state file differs from the model:\n file  %s\n model %s"
             % (what, st, model))


def fetch_table(c, vip):
    """The VIP's published table, slot by slot, read in pages of TABLE_PAGE
    slots. Pages may come from different generations (the hot-key controller
    publishes snapshots of its own under traffic), but no configuration change
    is sent while reading, so every one of them must hold the model's table:
    the pages put together are compared with it as one table."""
    table, size = [], None
    while size is None or len(table) < size:
        page = c.call("maglev_table", vip=vip, raw=True, **{"from": len(table)},
                      count=TABLE_PAGE)
        if size is None:
            size = page["table_size"]
        if page.get("from") != len(table) or page["table_size"] != size:
            fail("maglev_table page from %d: reply from %s, size %s (the first page: size %d)"
                 % (len(table), page.get("from"), page["table_size"], size))
        if not page["table"] or len(page["table"]) > min(TABLE_PAGE, size - len(table)):
            fail("maglev_table page from %d of %d: %d slots"
                 % (len(table), size, len(page["table"])))
        table += page["table"]
    return table


def check_tables(c, model, rng, what):
    """Every VIP's published table (or TABLE_SAMPLE of them) against the one
    maglev_ref.py computes from the model; returns how many were checked."""
    mg = json.load(open(CONFIG)).get("maglev", {})
    seed, size = mg.get("seed", "spillway"), mg.get("table_size", 65537)
    keys = sorted(model)
    if len(keys) > TABLE_SAMPLE:
        keys = sorted(rng.sample(keys, TABLE_SAMPLE))
    for key in keys:
        addr_port, proto = key.rsplit("/", 1)
        addr, port = addr_port.rsplit(":", 1)
        want = maglev_ref.vip_table(seed, size, [
            {"address": a, "weight": w, "state": st} for a, (w, st) in sorted(model[key].items())])
        got = fetch_table(c, spwrpc.vip_ref(addr, int(port), proto))
        d = maglev_ref.diff(got, want)
        if d:
            fail("after %s, VIP %s: the published table is not maglev_ref.py's for the "
                 "model %s: %s" % (what, key, model[key], d))
    return len(keys)


def main():
    rng = random.Random(int(SEED))
    pid, c = wait_for_traffic()
    model = json.load(open(MODEL)) if os.path.exists(MODEL) else norm(json.load(open(CONFIG)))
    check(c, model, "the (re)start")
    n_tables = check_tables(c, model, rng, "the (re)start")
    m = stat.S_IMODE(os.stat(CTL).st_mode)
    if m != CTL_MODE:
        fail("control socket mode %o, want %o" % (m, CTL_MODE))
    n = {"changes": 0, "batches": 0, "hostile": 0, "sighups": 0, "refused": 0}
    serial = rng.randrange(1 << 20)
    end = time.monotonic() + float(SECS)
    while time.monotonic() < end:
        time.sleep(rng.uniform(0.02, 0.15))
        op = rng.random()
        bes = sorted(model[KEY])
        serial += 1
        if op < 0.08:
            hostile(rng)
            n["hostile"] += 1
            check(c, model, "a hostile client")
            continue
        if op < 0.12:
            os.kill(pid, signal.SIGHUP)
            model = norm(json.load(open(CONFIG)))
            t1 = time.monotonic()
            while norm(c.call("config_get")) != model:
                if time.monotonic() - t1 > 10:
                    fail("SIGHUP reload not applied within 10 s")
                time.sleep(0.05)
            check(c, model, "a SIGHUP reload")
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
        # The model's verdict, call by call on the state the earlier ones leave.
        work, want, fail_at = model[KEY], [], None
        for i, (meth, p) in enumerate(calls):
            work, code, res = predict(work, meth, p)
            want.append((code, res))
            if code is not None:
                fail_at = i
                break
        desc = "; ".join("%s %s" % (m_, p_["address"]) for m_, p_ in calls)
        if len(calls) == 1:
            try:
                res = c.call(calls[0][0], **calls[0][1])
                code = None
            except spwrpc.RpcError as e:
                res, code = None, e.code
            if code != want[0][0] or (code is None and stored(res) != want[0][1]):
                fail("%s: daemon %s, the model expects %s"
                     % (desc, "error %d" % code if code else "result %s" % res,
                        "error %d" % want[0][0] if want[0][0] else "result %s" % want[0][1]))
            if code is None:
                model = {**model, KEY: work}
                n["changes"] += 1
            else:
                n["refused"] += 1       # nothing changed: the model stays
        else:
            reps = c.batch(calls)
            n["batches"] += 1
            if not isinstance(reps, list) or len(reps) != len(calls):
                fail("batch %s: reply %s" % (desc, reps))
            acked = all("result" in x for x in reps)
            if fail_at is None:
                if not acked:
                    fail("batch %s refused (%s); the model accepts it" % (desc, reps))
                for x, (_, res) in zip(reps, want):
                    if stored(x["result"]) != res:
                        fail("batch %s: result %s, the model expects %s" % (desc, x["result"], res))
                model = {**model, KEY: work}
                n["changes"] += len(calls)
            else:
                codes = [x.get("error", {}).get("code") for x in reps]
                exp = [want[fail_at][0] if i == fail_at else -32010 for i in range(len(calls))]
                if acked or codes != exp:
                    fail("batch %s: replies %s; the model expects errors %s (call %d fails)"
                         % (desc, codes if not acked else "all results", exp, fail_at + 1))
                n["refused"] += 1       # a transaction: nothing changed
        check(c, model, desc)
    m = stat.S_IMODE(os.stat(STATE).st_mode)
    if m != 0o600:
        fail("state file mode %o, want 600" % m)
    # Still healthy after the hostile clients?
    c2 = connect()
    c2.call("version")
    c2.close()
    check(c, model, "the segment")
    n_tables += check_tables(c, model, rng, "the segment")
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
            fail("state file after kill -9 is not the model:\n file  %s\n model %s"
                 % (norm(st), model))
    c.close()
    print("driver: changes=%(changes)d batches=%(batches)d hostile=%(hostile)d "
          "sighups=%(sighups)d refused=%(refused)d tables=%(tables)d"
          % dict(n, tables=n_tables), flush=True)


if __name__ == "__main__":
    main()
