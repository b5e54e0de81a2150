#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Two spillwayd instances, one membership, different histories: same tables.

Compares the instances' Maglev tables (method maglev_table, raw: the backend
address of every slot) VIP by VIP, first as both started from the same
configuration file, then after each was given the same final membership
through its own control socket by a different sequence of changes (different
orders, extra backends added and removed again, weights and states changed
back and forth, some changes batched on one side and not on the other).

usage: consistency_check.py SOCK_A SOCK_B SEED
Prints one line per comparison; exits 1 on the first difference.
"""

import random
import sys

import spwrpc

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


def current(c):
    """The instance's membership as config_get reports it."""
    m = {}
    for v in c.call("config_get")["vips"]:
        m[(v["address"], v["port"], v["protocol"])] = {
            b["address"]: (b.get("weight", 1), b.get("state", "active"))
            for b in v.get("backends", [])}
    return m


def history(rng, c, target):
    """Bring instance c to target by a random path; returns how many calls it took."""
    calls = 0
    have = current(c)
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


def tables(c, v):
    t = c.call("maglev_table", vip=v, raw=True)
    return t["table_size"], t["table"], sorted((b["address"], b["slots"]) for b in t["backends"])


def compare(a, b, what):
    ok = True
    for v in VIPS:
        try:
            ta, tb = tables(a, v), tables(b, v)
        except spwrpc.RpcError as e:
            if e.code == -32001:
                continue  # the VIP is not there (yet) on either: checked by the caller
            raise
        same = ta == tb
        diff = sum(1 for x, y in zip(ta[1], tb[1]) if x != y)
        used = len({s for s in ta[1] if s is not None})
        print("%s %s:%d/%s: M=%d, %d backends in the table: %s" % (
            what, v["address"], v["port"], v["protocol"], ta[0], used,
            "identical" if same else "%d slots differ" % diff))
        ok = ok and same
    return ok


def main():
    sock_a, sock_b, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    a, b = spwrpc.Client(sock_a, timeout=60), spwrpc.Client(sock_b, timeout=60)
    if not compare(a, b, "start-up"):
        return 1
    for rnd in range(3):
        rng = random.Random(seed * 100 + rnd)
        target = final_membership(rng)
        na = history(random.Random(seed * 1000 + 2 * rnd), a, target)
        nb = history(random.Random(seed * 1000 + 2 * rnd + 1), b, target)
        ma, mb = current(a), current(b)
        if ma != target or mb != target:
            print("FAIL: round %d: the histories did not reach the target membership" % rnd)
            return 1
        print("round %d: %d calls on A, %d on B, same membership" % (rnd, na, nb))
        if not compare(a, b, "round %d" % rnd):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
