#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""maglev_ref.py (the integration tests' oracle) against the daemon's builder.

Draws random memberships (1 to a few hundred backends; weights equal, small,
full 32-bit range, one heavy, partly 0; identities IPv4 and IPv6 address text,
configured names and arbitrary bytes: empty, zero bytes, proper prefixes),
seeds and prime table sizes (3 .. 65537, with tiny ones where most quotas are
0, and one 655373), and random flows in every key mode (IPv4 and IPv6,
TCP and UDP, any ports). For each it asks maglev_dump (lb_hash_key_from_seed,
lb_maglev_build at a random probe width, lb_vip_key_hash, lb_maglev_pick) and
requires the same hash key, the same table slot for slot, the same flow hash
and backend from maglev_ref.py/lbhash.py; duplicate identities must be refused
by both. Backends have no port in spillway: a backend's identity is its name
or address text, so ports vary only in the flows.

The oracle here is the C builder, the code the oracle is meant to judge: this
checks that the two agree on the contract, so that the integration tests that
use maglev_ref.py as their expectation catch a change to either.

usage: maglev_ref_check.py MAGLEV_DUMP [CASES] [RNG_SEED]
"""

import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbhash  # noqa: E402
import maglev_ref  # noqa: E402

SIZES = [3, 5, 7, 11, 13, 31, 251, 1009, 4099, 65537]
NONE = 0xFFFF


def identities(rng, n):
    kind = rng.choice(["v4", "v6", "name", "mixed", "bytes"])
    out, seen = [], set()
    while len(out) < n:
        k = rng.choice(["v4", "v6", "name"]) if kind == "mixed" else kind
        if k == "v4":
            a = "10.%d.%d.%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(256))
            ident = maglev_ref.identity({"address": a})
        elif k == "v6":
            a = "fd%02x:%x::%x:%x" % (rng.randrange(256), rng.randrange(65536),
                                      rng.randrange(65536), rng.randrange(1, 65536))
            if rng.random() < 0.3:
                a = "2001:db8:0:%x:0:0:0:%x" % (rng.randrange(65536), rng.randrange(65536))
            ident = maglev_ref.identity({"address": a})
        elif k == "name":
            ident = maglev_ref.identity({"address": "10.0.0.1", "name": "".join(
                rng.choice("abcxyz-._0189") for _ in range(rng.randint(1, 63)))})
        else:
            # Short strings over {0x00, 0x01, 0xff}: empty, zero bytes, and
            # proper prefixes of one another all occur (1093 strings up
            # to length 6, more than the 300 backends a case has at most).
            ident = bytes(rng.choice([0, 1, 0xff]) for _ in range(rng.randint(0, 6)))
        if ident not in seen:
            seen.add(ident)
            out.append(ident)
    return out


def weights(rng, n):
    mode = rng.randrange(6)
    if mode == 0:
        return [1] * n
    if mode == 1:
        return [1000] * n
    if mode == 2:
        return [rng.randint(1, 10) for _ in range(n)]
    if mode == 3:
        return [rng.randint(1, (1 << 32) - 1) for _ in range(n)]
    if mode == 4:
        return [100000 if i == n // 2 else rng.randint(1, 3) for i in range(n)]
    return [rng.randrange(4) * 7 for _ in range(n)]


def flows(rng, k):
    out = []
    for _ in range(k):
        if rng.random() < 0.5:
            src = "198.51.%d.%d" % (rng.randrange(256), rng.randrange(256))
            dst = "192.0.2.%d" % rng.randrange(256)
        else:
            src = "2001:db8:%x::%x" % (rng.randrange(65536), rng.randrange(65536))
            dst = "fd00::%x" % rng.randrange(65536)
        out.append({"mode": rng.choice(lbhash.KEY_MODES), "src": src, "dst": dst,
                    "sport": rng.randrange(65536), "dport": rng.randrange(65536),
                    "proto": rng.choice([6, 17])})
    return out


def case(rng, i):
    m = rng.choice(SIZES)
    if i == 7:
        m = 655373  # one large table
    small = m < 100
    n = rng.randint(1, 20 if small else rng.choice([8, 40, 300]))
    idents = identities(rng, n)
    ws = weights(rng, n)
    rng.shuffle(idents)
    seed = "".join(rng.choice("abcdefghij-0123456789") for _ in range(rng.randint(1, 255)))
    return {"seed": seed, "table_size": m, "width": rng.choice([0, 4, 8, 16]),
            "backends": [{"identity": ident.hex(), "weight": w} for ident, w in zip(idents, ws)],
            "flows": flows(rng, 50)}


def check(req, rep):
    """'' if maglev_ref.py agrees with the C answer rep, else what differs."""
    members = [(bytes.fromhex(b["identity"]), b["weight"]) for b in req["backends"]]
    key = lbhash.key_from_seed(req["seed"])
    if key != (int(rep["k0"], 16), int(rep["k1"], 16)):
        return "hash key of seed %r: C %s %s, Python %016x %016x" % (
            req["seed"], rep["k0"], rep["k1"], key[0], key[1])
    try:
        want = maglev_ref.build(key, req["table_size"], members)
    except ValueError as e:
        return "" if rep["rc"] != 0 else "Python refused (%s), C built a table" % e
    if rep["rc"] != 0:
        return "C refused (rc %d), Python built a table" % rep["rc"]
    got = [None if x == NONE else x for x in rep["table"]]
    d = maglev_ref.diff(got, want)
    if d:
        return "table: " + d
    for f, r in zip(req["flows"], rep["flows"]):
        h = lbhash.flow_hash(key, f["src"], f["dst"], f["sport"], f["dport"], f["proto"],
                             f["mode"])
        b = want[lbhash.slot(h, req["table_size"])]
        if h != int(r["hash"], 16) or (NONE if b is None else b) != r["backend"]:
            return "flow %s: C hash %s backend %d, Python %016x backend %s" % (
                f, r["hash"], r["backend"], h, b)
    return ""


def main():
    dump = sys.argv[1]
    n_cases = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 2026)
    reqs = [case(rng, i) for i in range(n_cases)]
    # Fixed cases: no backend, all weight 0, a duplicate identity, N > M.
    reqs.append({"seed": "empty", "table_size": 251, "backends": [], "flows": flows(rng, 5)})
    reqs.append({"seed": "zero", "table_size": 13, "flows": flows(rng, 5), "backends": [
        {"identity": ("10.0.0.%d" % i).encode().hex(), "weight": 0} for i in range(3)]})
    reqs.append({"seed": "dup", "table_size": 13, "flows": [], "backends": [
        {"identity": b"a".hex(), "weight": 1}, {"identity": b"a".hex(), "weight": 0}]})
    reqs.append({"seed": "n>m", "table_size": 3, "flows": flows(rng, 5), "backends": [
        {"identity": ("srv-%d" % i).encode().hex(), "weight": 1} for i in range(10)]})
    t0 = time.time()
    p = subprocess.Popen([dump], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    bad = 0
    for i, req in enumerate(reqs):
        p.stdin.write(json.dumps(req) + "\n")
        p.stdin.flush()
        rep = json.loads(p.stdout.readline())
        why = check(req, rep)
        if why:
            bad += 1
            print("FAIL: case %d (N=%d M=%d width %s seed %r): %s" % (
                i, len(req["backends"]), req["table_size"], req.get("width", 0),
                req["seed"][:20], why))
    p.stdin.close()
    if p.wait() != 0:
        print("FAIL: maglev_dump exited with %d" % p.returncode)
        return 1
    n_flows = sum(len(r["flows"]) for r in reqs)
    print("%d memberships, %d flows: %d differ between maglev_ref.py and lb_maglev_build "
          "(%.1f s)" % (len(reqs), n_flows, bad, time.time() - t0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
