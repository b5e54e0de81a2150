#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference Maglev tables and flow placement: the integration tests' oracle.

Computes, from a VIP's membership and the seed alone, the table spillwayd must
publish (byte for byte, as maglev_table raw shows it) and the backend each new
flow must get, so a test can check the daemon against something other than
the daemon. Written from the Maglev paper (Eisenbud et al., NSDI 2016, section
3.4, "Maglev hashing": offset/skip permutations, each backend in turn takes
its next preferred free slot) and spillway's documented contract
(docs/architecture.md "Maglev choice", control/build/maglev_build.h):

- members: the VIP's backends with state "active" and weight > 0 (draining,
  down and weight-0 backends are listed but hold no slot);
- identity: the configured "name", else the address text (inet_ntop form:
  "10.1.0.1", "fd00::1"); members are ordered by identity bytes (a proper
  prefix first); two backends of a VIP never share one;
- permutation: with (k0, k1) the key from the seed (lbhash.key_from_seed),
  offset = SipHash-1-3 under (k0 ^ "maglev-o", k1 ^ "ffset-h1") of the
  identity, mod M; skip = SipHash-1-3 under (k0 ^ "maglev-s", k1 ^ "kip---h2")
  mod (M - 1), plus 1 (the tweaks are the ASCII strings read as big-endian
  64-bit words); M is prime, so offset + j * skip visits every slot;
- quotas: member i with weight w_i of total W gets floor(M w_i / W) slots, and
  the M - sum of those left over go one each to the largest remainders
  (M w_i mod W), equal remainders to the earlier identity;
- fill order: with Q the largest quota, member i takes its k-th turn (k = 0
  .. q_i - 1) in round floor(k Q / q_i); round 0 is every member with a quota,
  in identity order; in later rounds members go in the order they took their
  previous turn. A turn walks the member's permutation from where its last
  turn stopped to the first free slot and takes it;
- no member: every slot empty (None here, null in maglev_table);
- a flow: SipHash-1-3 of its key per the VIP's key mode (lbhash.flow_key),
  low 32 bits, mod M, is the slot whose backend a new flow gets.

Used as a module; as a script it prints the slot counts of each VIP of a
configuration file: maglev_ref.py CONFIG.json
"""

import functools
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lbhash  # noqa: E402


def _word(s):
    return int.from_bytes(s.encode(), "big")


OFFSET_TWEAK = (_word("maglev-o"), _word("ffset-h1"))
SKIP_TWEAK = (_word("maglev-s"), _word("kip---h2"))


def canonical_address(addr):
    """The address text the daemon keys identities and replies on."""
    fam = lbhash.family(addr)
    return socket.inet_ntop(fam, socket.inet_pton(fam, addr))


def identity(backend):
    """The identity bytes of a backend given as its configuration object."""
    if backend.get("name"):
        return backend["name"].encode()
    return canonical_address(backend["address"]).encode()


def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def permutation(key, ident, m):
    """(offset, skip) of the identity bytes ident in a table of M slots."""
    off = lbhash.siphash13(key[0] ^ OFFSET_TWEAK[0], key[1] ^ OFFSET_TWEAK[1], ident) % m
    skip = lbhash.siphash13(key[0] ^ SKIP_TWEAK[0], key[1] ^ SKIP_TWEAK[1], ident) % (m - 1) + 1
    return off, skip


def quotas(weights, m):
    """Largest-remainder slot counts for weights (all > 0), summing to m."""
    total = sum(weights)
    q = [m * w // total for w in weights]
    rem = [m * w % total for w in weights]
    left = m - sum(q)
    for i in sorted(range(len(weights)), key=lambda i: (-rem[i], i))[:left]:
        q[i] += 1
    return q


def build(key, m, members):
    """The table for members [(identity bytes, weight)]: a list of M entries,
    each the index in members of the slot's backend, or None."""
    if m < 3 or not is_prime(m):
        raise ValueError("table size %d is not a prime >= 3" % m)
    idents = [ident for ident, _ in members]
    if len(set(idents)) != len(idents):
        raise ValueError("two backends share an identity")
    order = sorted((ident, i) for i, (ident, w) in enumerate(members) if w > 0)
    table = [None] * m
    if not order:
        return table
    who = [i for _, i in order]
    perm = [permutation(key, ident, m) for ident, _ in order]
    quota = quotas([members[i][1] for i in who], m)
    qmax = max(quota)
    nxt = [off for off, _ in perm]  # where each member's next walk starts
    done = [0] * len(who)
    rounds = [[] for _ in range(qmax)]
    rounds[0] = [j for j in range(len(who)) if quota[j]]
    for r in range(qmax):
        for j in rounds[r]:  # later rounds only grow: every next round is > r
            c, skip = nxt[j], perm[j][1]
            while table[c] is not None:
                c += skip
                if c >= m:
                    c -= m
            table[c] = who[j]
            c += skip
            nxt[j] = c - m if c >= m else c
            done[j] += 1
            if done[j] < quota[j]:
                rounds[done[j] * qmax // quota[j]].append(j)
    return table


def members_of(backends):
    """[(identity, weight)] for configuration-style backend objects: weight 0
    for those that hold no slot (not active, or weight 0)."""
    return [(identity(b), b.get("weight", 1) if b.get("state", "active") == "active" else 0)
            for b in backends]


@functools.lru_cache(maxsize=256)
def _vip_table(seed, table_size, members, addrs):
    idx = build(lbhash.key_from_seed(seed), table_size, list(members))
    return tuple(None if i is None else addrs[i] for i in idx)


def vip_table(seed, table_size, backends):
    """The table a VIP with these backends (configuration objects: address,
    weight?, name?, state?) has under the seed: the backend address of every
    slot, None where empty; what maglev_table raw must answer."""
    return list(_vip_table(seed, table_size, tuple(members_of(backends)),
                           tuple(canonical_address(b["address"]) for b in backends)))


def slot_counts(table):
    counts = {}
    for a in table:
        if a is not None:
            counts[a] = counts.get(a, 0) + 1
    return counts


def backend_for(table, key, src, dst, sport, dport, proto, mode="5tuple"):
    """The backend address a new flow gets from table (a vip_table), or None."""
    return table[lbhash.slot(lbhash.flow_hash(key, src, dst, sport, dport, proto, mode),
                             len(table))]


def diff(got, want):
    """'' if the tables agree, else a one-line description of how they differ."""
    if len(got) != len(want):
        return "%d slots, the reference has %d" % (len(got), len(want))
    bad = [s for s in range(len(want)) if got[s] != want[s]]
    if not bad:
        return ""
    s = bad[0]
    return "%d of %d slots differ from the reference (first: slot %d holds %s, reference %s)" % (
        len(bad), len(want), s, got[s], want[s])


def main():
    import json
    cfg = json.load(open(sys.argv[1]))
    mg = cfg.get("maglev", {})
    seed, m = mg.get("seed", "spillway"), mg.get("table_size", 65537)
    for v in cfg.get("vips", []):
        t = vip_table(seed, m, v.get("backends", []))
        print("%s:%s/%s M=%d %s" % (v["address"], v.get("port", 0), v.get("protocol", "tcp"),
                                     m, sorted(slot_counts(t).items())))


if __name__ == "__main__":
    main()
