#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hot_mode per_packet through the real data path: spillgen drives spillwayd
# over memif (pktgen/run-memif.sh) with pktgen/scenarios/hotkey_spray.json.
# The test's own config: one UDP VIP keyed by the 5-tuple, hot_mode
# per_packet, over 4 backends of weight 1; hot keys on with window_ms 100 and
# epsilon 0.25 (cap c = 1.25). The scenario at 100 kpps: 1 s of background
# (20,000 UDP flows, uniform), 2 s in which one UDP 5-tuple carries 0.3 of
# the packets, then 2 s in which the same 5-tuple carries 0.002 (below
# threshold_low): it is demoted, and in the last second it must be pinned to
# one backend again. live_stats.py polls the daemon every 10 ms for the
# controller's window clock, reads hot_list three times while the key is hot
# (its replicas) and, once the traffic is over, the counters, hot_list and
# hot_events. hotkeys_spray_check.py judges in controller windows, with
# spillgen's decoded packets per backend as the load (see there): promoted
# within a bounded number of windows; every judged window's peak/avg <= c +
# a tolerance from that window's counts; the 5-tuple at every replica of the
# model's r; every packet accounted for; demoted within D + 1 windows of its
# share falling, then at one backend only, its Maglev home (maglev_ref.py).
# usage: test_hotkeys_spray.sh BUILD_DIR
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: test_hotkeys_spray.sh BUILD_DIR}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/integration
. "$HERE/daemon_lib.sh"
[ -x "$BUILD/pktgen/spillgen" ] || { echo "SKIP: spillgen not built"; exit 77; }
WORK=$(mktemp -d /tmp/spw-spray.XXXXXX)
MEMIF_WORK=
SAMPLER=
cleanup() {
	rc=$?
	if [ -n "$SAMPLER" ] && kill -0 "$SAMPLER" 2>/dev/null; then
		touch "$WORK/stop"
		for _ in $(seq 50); do kill -0 "$SAMPLER" 2>/dev/null || break; sleep 0.1; done
		kill "$SAMPLER" 2>/dev/null || true
		wait "$SAMPLER" 2>/dev/null || true
	fi
	[ -n "$MEMIF_WORK" ] && rm -rf "$MEMIF_WORK"
	if [ -n "${KEEP_WORK:-}" ] || [ "$rc" -ne 0 ]; then
		echo "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$WORK/lb.json" <<'JSON'
{
  "encap":  {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01", "mtu": 1500},
  "maglev": {"table_size": 65537, "seed": "spray-test"},
  "hot":    {"enabled": true, "window_ms": 100, "threshold": 0.01, "epsilon": 0.25},
  "vips": [
    {"address": "192.0.2.53", "port": 53, "protocol": "udp", "key": "5tuple",
     "hot_mode": "per_packet", "encap": "ipip",
     "backends": [{"address": "10.1.0.1", "weight": 1}, {"address": "10.1.0.2", "weight": 1},
                  {"address": "10.1.0.3", "weight": 1}, {"address": "10.1.0.4", "weight": 1}]}
  ]
}
JSON
cp "$ROOT/pktgen/scenarios/hotkey_spray.json" "$WORK/scenario.json"
cat >"$WORK/actions.json" <<'JSON'
[{"at": 2.0, "method": "hot_list", "params": {}},
 {"at": 2.5, "method": "hot_list", "params": {}},
 {"at": 2.9, "method": "hot_list", "params": {}}]
JSON
spw_memif_run "$WORK/scenario.json" '^(EAL|TELEMETRY|$)' 20 \
	--period 0.01 --end 5.0 --hot --deadline 120 --actions "$WORK/actions.json"
/usr/bin/python3 "$HERE/hotkeys_spray_check.py" "$WORK/lb.json" "$WORK/scenario.json" \
	"$WORK/live.json" "$WORK/results.json" "$WORK/series.csv" "$WORK/spillwayd-stats.json"
