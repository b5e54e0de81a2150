#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""test_spillctl.sh's check of `spillctl table VIP --raw` on a large table.

  spillctl_table_check.py text|json OUT LOG NREQ PAGE VIP-JSON ADDR=WEIGHT...

OUT is spillctl's stdout, LOG the fake server's request log (requests after
line NREQ are this command's). The table the VIP must have is maglev_ref.py's
for the backends ADDR=WEIGHT under fake_ctl_server.py's seed "fake", of the
size spillctl reported. text: the shares and every slot line ("%*d  ADDR",
the slot column as wide as the largest slot number or "SLOT") must be that
table's; json: the result's "table" must be it, from 0. The requests must
be maglev_table raw pages of PAGE slots from 0 up (those of a larger count,
which the server refused as too large, before them).
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import maglev_ref  # noqa: E402

mode, out, log, nreq, page, vip = sys.argv[1:7]
nreq, page, vip = int(nreq), int(page), json.loads(vip)
backends = [{"address": a, "weight": int(w)} for a, w in (x.rsplit("=", 1) for x in sys.argv[7:])]

if mode == "json":
    res = json.load(open(out))
    size = res["table_size"]
    want = maglev_ref.vip_table("fake", size, backends)
    assert res.get("from") == 0, "from %s" % res.get("from")
    d = maglev_ref.diff(res["table"], want)
    assert not d, "--json table: " + d
else:
    lines = open(out).read().split("\n")
    m = re.match(r"^192\.0\.2\.10:80/tcp: table size (\d+), generation \d+$", lines[0])
    assert m, "first line %r" % lines[0]
    size = int(m.group(1))
    want = maglev_ref.vip_table("fake", size, backends)
    counts = maglev_ref.slot_counts(want)
    for b in backends:
        a = maglev_ref.canonical_address(b["address"])
        pat = r"^%s +%d +%.2f%%$" % (re.escape(a), counts.get(a, 0), 100.0 * counts.get(a, 0) / size)
        assert any(re.match(pat, x) for x in lines), "no share line /%s/" % pat
    w = max(4, len(str(size - 1)))
    head = lines.index("%*s  BACKEND" % (w, "SLOT"))
    slots = lines[head + 1:]
    assert slots[-1] == "", "output does not end with a newline"
    slots = slots[:-1]
    assert len(slots) == size, "%d slot lines, the table has %d slots" % (len(slots), size)
    for i, x in enumerate(slots):
        exp = "%*d  %s" % (w, i, "-" if want[i] is None else want[i])
        assert x == exp, "slot line %d: %r, expected %r" % (i, x, exp)

reqs = [json.loads(x) for x in open(log).read().splitlines()[nreq:]]
assert all(r.get("method") == "maglev_table" and r["params"].get("vip") == vip and
           r["params"].get("raw") is True for r in reqs), "not all raw maglev_table: %s" % reqs[:3]
counts_asked = [r["params"]["count"] for r in reqs]
assert all(c >= page and c % page == 0 for c in counts_asked), "counts %s" % counts_asked
froms = [r["params"]["from"] for r in reqs if r["params"]["count"] == page]
assert froms == list(range(0, size, page)), "pages from %s" % froms[:20]
print("%s: %d slots as maglev_ref.py's, %d requests" % (mode, size, len(reqs)))
