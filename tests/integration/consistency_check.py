#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Two spillwayd instances, one membership, different histories: same tables.

Checks each instance's Maglev tables (method maglev_table, raw: the backend
address of every slot, and the slot count of every backend) VIP by VIP
against the reference, maglev_ref.py's table for the membership this test
configured: first as both started from the same configuration file (CONFIG,
the one test_consistency.sh wrote), then after each was given the same final
membership, drawn here, through its own control socket by a different
sequence of changes (different orders, extra backends added and removed
again, weights and states changed back and forth, some changes batched on one
side and not on the other). Both equal to the reference is both equal to each
other. config_get only confirms that the histories reached the membership;
neither it nor the daemons' tables are ever the expectation.

usage: consistency_check.py CONFIG SOCK_A SOCK_B SEED
Prints one line per comparison; exits 1 on the first difference.
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import maglev_ref  # noqa: E402
import spwrpc  # noqa: E402

VIPS = [
    spwrpc.vip_ref("10.100.0.1", 80, "tcp"),
    spwrpc.vip_ref("10.100.0.2", 53, "udp"),
    spwrpc.vip_ref("fd00::100", 443, "tcp"),  # added through the sockets
]
NEW_VIP = {"address": "fd00::100", "port": 443, "protocol": "tcp", "key": "src_ip"}


def pool(vip):
    if ":" in vip["address"]:
        return ["fd01::%x" % i for i in range(1, 25)]
    return ["10.1.%d.%d" % (vip["port"] % 7, i) for i in range(1, 41)]


def final_membership(rng):
    """{vip key: {address: (weight, state)}} the two histories must end in."""
    out = {}
    for v in VIPS:
        addrs = rng.sample(pool(v), k=len(pool(v)) * 2 // 3)
        m = {}
        for a in addrs:
            state = rng.choices(["active", "draining", "down"], [8, 1, 1])[0]
            m[a] = (rng.randint(0 if state == "active" else 1, 5), state)
        out[key(v)] = m
    return out


def key(v):
    return (v["address"], v["port"], v["protocol"])


def from_config(cfg):
    """{vip key: {address: (weight, state)}} of a configuration document."""
    return {(v["address"], v["port"], v["protocol"]): {
        maglev_ref.canonical_address(b["address"]): (b.get("weight", 1), b.get("state", "active"))
        for b in v.get("backends", [])} for v in cfg["vips"]}


def current(c):
    """The instance's membership as config_get reports it (to confirm that a
    history reached its target, never as an expectation)."""
    m = {}
    for v in c.call("config_get")["vips"]:
        m[(v["address"], v["port"], v["protocol"])] = {
            b["address"]: (b.get("weight", 1), b.get("state", "active"))
            for b in v.get("backends", [])}
    return m


def history(rng, c, have, target):
    """Bring instance c from membership have (this test's record of what it
    configured there) to target by a random path; returns how many calls it took."""
    calls = 0
    have = {k: dict(v) for k, v in have.items()}
    if key(VIPS[2]) not in have:
        c.call("vip_add", **NEW_VIP)
        calls += 1
        have[key(VIPS[2])] = {}
    ops = []
    for v in VIPS:
        want = target[key(v)]
        cur = have[key(v)]
        extras = rng.sample([a for a in pool(v) if a not in want and a not in cur],
                            k=min(3, len([a for a in pool(v) if a not in want and a not in cur])))
        for a in cur:
            if a not in want:
                ops.append([("backend_remove", {"vip": v, "address": a})])
        for a, (w, st) in want.items():
            seq = []
            if a not in cur:
                # Added with a weight and state that are then changed (or not).
                seq.append(("backend_add", {"vip": v, "address": a,
                                            "weight": rng.randint(1, 5)}))
            if rng.random() < 0.5:
                seq.append(("backend_set", {"vip": v, "address": a,
                                            "state": rng.choice(["draining", "down"])}))
            seq.append(("backend_set", {"vip": v, "address": a, "weight": w, "state": st}))
            ops.append(seq)
        for a in extras:
            ops.append([("backend_add", {"vip": v, "address": a, "weight": 2}),
                        ("backend_remove", {"vip": v, "address": a})])
    # Interleave the sequences at random, each keeping its own order.
    queue = [list(s) for s in ops]
    flat = []
    while queue:
        i = rng.randrange(len(queue))
        flat.append(queue[i].pop(0))
        if not queue[i]:
            queue.pop(i)
    i = 0
    while i < len(flat):
        n = rng.choice([1, 1, 1, 4, 16])  # some calls go as one batch
        chunk = flat[i:i + n]
        if len(chunk) == 1:
            c.call(chunk[0][0], **chunk[0][1])
        else:
            for rep in c.batch(chunk):
                if "error" in rep:
                    raise AssertionError("batch call failed: %r" % rep["error"])
        calls += 1
        i += n
    return calls


def reference(mg, members):
    """maglev_ref.py's table and slot counts for {address: (weight, state)}."""
    backends = [{"address": a, "weight": w, "state": st} for a, (w, st) in members.items()]
    table = maglev_ref.vip_table(mg["seed"], mg["table_size"], backends)
    counts = maglev_ref.slot_counts(table)
    return table, sorted((a, counts.get(a, 0)) for a in members)


def check(instances, mg, model, what):
    """Every instance's table of every VIP of model against the reference."""
    ok = True
    for v in VIPS:
        if key(v) not in model:
            continue  # not added yet (the start-up configuration lacks it)
        table, counts = reference(mg, model[key(v)])
        for name, c in instances:
            t = c.call("maglev_table", vip=v, raw=True)
            d = maglev_ref.diff(t["table"], table) if t["table_size"] == mg["table_size"] else (
                "table size %d, configured %d" % (t["table_size"], mg["table_size"]))
            got = sorted((b["address"], b["slots"]) for b in t["backends"])
            if not d and got != counts:
                d = "backends and slots %s, the reference has %s" % (got, counts)
            print("%s %s %s:%d/%s: M=%d, %d backends in the table: %s" % (
                what, name, v["address"], v["port"], v["protocol"], mg["table_size"],
                sum(1 for _, n in counts if n), "FAIL: " + d if d else "identical to maglev_ref.py"))
            ok = ok and not d
    return ok


def main():
    cfg = json.load(open(sys.argv[1]))
    sock_a, sock_b, seed = sys.argv[2], sys.argv[3], int(sys.argv[4])
    mg = {"seed": "spillway", "table_size": 65537}
    mg.update(cfg.get("maglev", {}))
    a, b = spwrpc.Client(sock_a, timeout=60), spwrpc.Client(sock_b, timeout=60)
    instances = [("A", a), ("B", b)]
    model = from_config(cfg)
    if not check(instances, mg, model, "start-up"):
        return 1
    have_a = have_b = model
    for rnd in range(3):
        rng = random.Random(seed * 100 + rnd)
        target = final_membership(rng)
        na = history(random.Random(seed * 1000 + 2 * rnd), a, have_a, target)
        nb = history(random.Random(seed * 1000 + 2 * rnd + 1), b, have_b, target)
        ma, mb = current(a), current(b)
        if ma != target or mb != target:
            print("FAIL: round %d: the histories did not reach the target membership" % rnd)
            return 1
        have_a = have_b = target
        print("round %d: %d calls on A, %d on B, same membership" % (rnd, na, nb))
        if not check(instances, mg, target, "round %d" % rnd):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
