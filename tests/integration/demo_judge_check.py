#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The demo's part-2 judge (scripts/demo_report.py --memif) on hand-made
spillgen results and spillwayd counters, without memif or root: a run that
keeps every promise passes; each broken promise alone fails it with exit 1
and a MISS line naming it. Also the exact binomial interval it uses, against
sums of math.comb terms computed here.

usage: demo_judge_check.py SOURCE_ROOT
"""

import copy
import json
import math
import os
import subprocess
import sys
import tempfile
from fractions import Fraction

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
REPORT = os.path.join(SRC, "scripts", "demo_report.py")
LB = os.path.join(SRC, "pktgen", "scenarios", "lb.json")
SCEN = os.path.join(SRC, "pktgen", "scenarios", "hotkey.json")

try:
    import scapy  # noqa: F401  (demo_report.py decodes with lbpcap, which needs it)
except ImportError:
    print("SKIP: scapy (python3-scapy) is not installed for /usr/bin/python3")
    sys.exit(77)

fails = []


def good():
    """A run as pktgen/scenarios/hotkey.json against lb.json should give."""
    res = {
        "tx": {"packets": 200000, "bytes": 0, "unsent": 0, "alloc_failures": 0, "phases": []},
        "rx": {"packets": 199500, "decoded": 199500},
        "flows": {"sent": 20000, "seen": 19990, "single_backend": 19990, "multi_backend": 0, "moves": 0},
        "packets": {"sent": 200000, "lost": 500},
        "hot_keys": [{"phase": "hot", "key": "src_ip", "share": 0.3, "packets": 30000, "backends": 4,
                      "promoted": True, "promotion_delay_ms": 400.0, "cap": 1.25,
                      "under_cap_delay_ms": 900.0, "peak_to_avg_first": 2.1, "peak_to_avg_max": 2.3,
                      "peak_to_avg_last": 1.4}],
    }
    stats = {
        "totals": {"rx_packets": 200000, "forwarded": 199500, "dropped": 500,
                   "drops": {"tx_full": 500, "no_vip": 0}},
        "vips": [
            {"address": "192.0.2.10", "port": 80, "protocol": "tcp",
             "backends": [{"address": "10.1.0.%d" % i, "new_flows": 2500} for i in range(1, 5)]},
            {"address": "2001:db8::10", "port": 53, "protocol": "udp",
             "backends": [{"address": "fd00:1::1", "new_flows": 3310},
                          {"address": "fd00:1::2", "new_flows": 6690}]},
        ],
    }
    return res, stats


def run(res, stats):
    with tempfile.TemporaryDirectory() as d:
        rp, sp = os.path.join(d, "results.json"), os.path.join(d, "stats.json")
        json.dump(res, open(rp, "w"))
        json.dump(stats, open(sp, "w"))
        p = subprocess.run(["/usr/bin/python3", REPORT, "--memif", "--config", LB, "--scenario", SCEN, rp, sp],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr


def case(name, mutate, want_rc, want_text):
    res, stats = good()
    mutate(res, stats)
    rc, out = run(res, stats)
    last = out.strip().split("\n")[-1] if out.strip() else ""
    ok = rc == want_rc and want_text in out
    if want_rc == 1:
        ok = ok and last.startswith("demo part 2: FAIL")
    else:
        ok = ok and last.startswith("demo part 2: PASS")
    print("%s %s: exit %d, %s" % ("ok  " if ok else "FAIL", name, rc, last[:120]))
    if not ok:
        print(out)
        fails.append(name)


def setv(path, value):
    def f(res, stats):
        obj = {"res": res, "stats": stats}
        keys = path.split(".")
        for k in keys[:-1]:
            obj = obj[int(k)] if isinstance(obj, list) else obj[k]
        if isinstance(obj, list):
            obj[int(keys[-1])] = value
        else:
            obj[keys[-1]] = value
    return f


case("a run that keeps every promise", lambda r, s: None, 0, "demo part 2: PASS")
case("spillwayd received less than spillgen sent", setv("stats.totals.rx_packets", 199000), 1,
     "MISS spillwayd received every packet")
case("a drop that is not tx_full", setv("stats.totals.drops", {"tx_full": 400, "no_vip": 100}), 1,
     "MISS forwarded = received - drops")
case("spillgen lost more than spillwayd dropped", setv("res.packets.lost", 600), 1,
     "MISS spillgen decoded every forwarded packet")
case("a flow at two backends", setv("res.flows.multi_backend", 1), 1, "MISS no flow seen at more than one")
case("weights not followed (1:1 for 1:2)",
     setv("stats.vips.1.backends", [{"address": "fd00:1::1", "new_flows": 5000},
                                    {"address": "fd00:1::2", "new_flows": 5000}]), 1,
     "MISS VIP [2001:db8::10]:53/udp backend fd00:1::1")
case("the hot key not promoted", setv("res.hot_keys.0.promoted", False), 1, "MISS hot phase hot: the hot key")
case("the hot key at one backend", setv("res.hot_keys.0.backends", 1), 1, "MISS hot phase hot: the hot key")
case("never under the cap", setv("res.hot_keys.0.under_cap_delay_ms", None), 1,
     "MISS hot phase hot: an interval of the phase came under")
case("no interval over the cap", setv("res.hot_keys.0.peak_to_avg_first", 1.1), 1,
     "MISS hot phase hot: its first interval was over the cap")
case("no hot phase reported", setv("res.hot_keys", []), 1, "MISS spillgen reported no hot phase")
case("the last interval over the cap is not judged", setv("res.hot_keys.0.peak_to_avg_last", 2.0), 0,
     "demo part 2: PASS")

# The exact binomial interval against sums of math.comb terms.
sys.path.insert(0, os.path.join(SRC, "scripts"))
import demo_report  # noqa: E402


def cdf(k, n, p):
    """P(X <= k), X ~ Binomial(n, p), in exact rational arithmetic (math.comb)."""
    q = Fraction(p).limit_denominator(10 ** 6)
    return float(sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(0, k + 1))) if k >= 0 else 0.0


for n, p, tail in [(200, 0.125, 0.001 / 24), (2000, 0.5, 0.001 / 24), (50, 0.5, 0.001 / 4), (500, 1 / 3, 1e-4)]:
    lo, hi = demo_report.binom_interval(n, p, tail)
    below, above = cdf(lo - 1, n, p), 1 - cdf(hi, n, p)
    # lo is the smallest value whose lower tail exceeds the budget, hi likewise.
    ok = (below <= tail * (1 + 1e-9) and cdf(lo, n, p) > tail and above <= tail * (1 + 1e-9)
          and 1 - cdf(hi - 1, n, p) > tail)
    print("%s binomial interval n=%d p=%.3f tail=%.2g: %d..%d (P below %.3g, above %.3g)" % (
        "ok  " if ok else "FAIL", n, p, tail, lo, hi, below, above))
    if not ok:
        fails.append("binomial interval n=%d p=%g" % (n, p))

if fails:
    print("%d failure(s): %s" % (len(fails), "; ".join(fails)))
    sys.exit(1)
print("demo judge: all cases as expected")
