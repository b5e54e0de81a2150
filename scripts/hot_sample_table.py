#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The detection-probability table of docs/hot-keys.md ("Sampling"): a key of
# share p in a core's window of n packets, each packet sampled with
# probability 2^-s; X ~ Binomial(p n, 2^-s) sampled packets, estimate X 2^s.
# "named": X >= 8 (the candidate table's step); "promoted": X 2^s >= phi n.
# Automatic s: the largest s <= 8 with (phi/2) n / 2^s >= 64
# (lb_sketch_auto_shift). Usage: scripts/hot_sample_table.py [phi]
import math
import sys


def pmf_tail(k, q, x0):
    """P(X >= x0) for X ~ Binomial(k, q)."""
    if x0 <= 0:
        return 1.0
    if q >= 1.0:
        return 1.0 if k >= x0 else 0.0
    lq, l1q = math.log(q), math.log1p(-q)
    tot = 0.0
    for x in range(int(x0), k + 1):
        lp = math.lgamma(k + 1) - math.lgamma(x + 1) - math.lgamma(k - x + 1) + x * lq + (k - x) * l1q
        if lp < -60 and x > k * q:
            break
        tot += math.exp(lp)
    return min(tot, 1.0)


def auto_shift(n, phi):
    s = 0
    while s < 8 and phi / 2 * n / (2 << s) >= 64:
        s += 1
    return s


def main():
    phi = float(sys.argv[1]) if len(sys.argv) > 1 else 0.01
    print("| packets/core/window | s | P(named) at 0.75φ | P(promoted) at φ/2 | at 0.75φ | at 1.5φ | at 2φ |")
    print("|---|---|---|---|---|---|---|")
    for n in (2_000, 20_000, 100_000, 1_000_000, 10_000_000):
        for s, tag in ((4, " (fixed 1/16)"), (auto_shift(n, phi), " (auto)")):
            q = 2.0 ** -s
            row = [f"{n:,}", f"{s}{tag}"]
            k = round(0.75 * phi * n)
            row.append(f"{pmf_tail(k, q, 8):.4f}")
            for f in (0.5, 0.75, 1.5, 2.0):
                k = round(f * phi * n)
                row.append(f"{pmf_tail(k, q, math.ceil(phi * n / 2 ** s)):.4f}")
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
