#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SYN flood through the real data path: spillgen -> spillwayd over memif
# (pktgen/run-memif.sh). spillgen sends uniform random 5-tuples to one TCP VIP
# (2^22 flows by default: each first packet is a SYN) at its maximum rate for
# FLOOD_SECONDS (default 4), while a set of long-lived "established" connections
# (a src_ip hot key of FLOOD_ESTABLISHED connections, never replaced, 10 % of the
# packets) keeps sending through the flood. spillwayd runs with a 65536-entry
# flow table and a control socket; flood_check.py samples its stats and VmRSS
# every 250 ms. Checked (see docs/reliability.md):
#   - new flows served per second (stats new_flows over time) reported;
#   - RSS does not grow by more than FLOOD_RSS_MARGIN_KIB (16 MiB) during the
#     flood (the flow table is preallocated: capacity x 16 B);
#   - evictions happen (the flood overfills the table) and are counted;
#   - no flow is seen at more than one backend (established ones included);
#   - the random 5-tuples spread by weight (peak/avg <= 1.10): without the
#     Maglev seed a flood cannot be aimed at one backend;
#   - the counters conserve packets, and the final stats (written after the
#     ports are closed) show the mbuf pool full again (mempool in_use 0).
# usage: test_flood.sh BUILD_DIR
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: test_flood.sh BUILD_DIR}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/integration
[ -x "$BUILD/pktgen/spillgen" ] || { echo "SKIP: spillgen not built"; exit 77; }
SECONDS_=${FLOOD_SECONDS:-4}
FLOWS=${FLOOD_FLOWS:-4194304}
RATE=${FLOOD_RATE:-0}
EST=${FLOOD_ESTABLISHED:-1024}
CAPACITY=65536
WORK=$(mktemp -d /tmp/spw-flood.XXXXXX)
MEMIF_WORK=
SAMPLER=
cleanup() {
	rc=$?
	if [ -n "$SAMPLER" ] && kill -0 "$SAMPLER" 2>/dev/null; then
		touch "$WORK/stop"; wait "$SAMPLER" 2>/dev/null || true
	fi
	[ -n "$MEMIF_WORK" ] && rm -rf "$MEMIF_WORK"
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT

cat >"$WORK/lb.json" <<JSON
{
  "encap":  {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01", "mtu": 1500},
  "maglev": {"table_size": 65537, "seed": "flood-test"},
  "flows":  {"capacity": $CAPACITY},
  "vips": [
    {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
     "backends": [{"address": "10.1.0.1", "weight": 1},
                  {"address": "10.1.0.2", "weight": 1},
                  {"address": "10.1.0.3", "weight": 2},
                  {"address": "10.1.0.4", "weight": 1}]}
  ]
}
JSON
cat >"$WORK/flood.json" <<JSON
{"description": "SYN flood of uniform random 5-tuples; $EST long-lived connections keep sending",
 "flows": $FLOWS, "zipf": 0, "size": 64, "interval_ms": 250, "seed": 7,
 "phases": [{"name": "flood", "start": 0, "end": $SECONDS_, "rate": $RATE,
   "hot": {"key": "src_ip", "share": 0.1, "vip": 0, "connections": $EST,
           "packets_per_connection": 0, "src": "203.0.113.7", "sport": 2000}}]}
JSON

CTL=$WORK/ctl.sock
/usr/bin/python3 "$HERE/flood_check.py" sample "$CTL" "$WORK/samples.json" "$WORK/stop" &
SAMPLER=$!
set +e
LB_ARGS="--control $CTL" timeout 300 bash -c 'echo $$ >"$0"; exec "$@"' "$WORK/memif.pid" "$ROOT/pktgen/run-memif.sh" -b "$BUILD" -c "$WORK/lb.json" -k -- \
	--scenario "$WORK/flood.json" --json "$WORK/results.json" --no-progress \
	>"$WORK/out.txt" 2>&1
RC=$?
MP=$(cat "$WORK/memif.pid" 2>/dev/null || true)
[ -n "$MP" ] && rm -rf "/var/run/dpdk/spillgen-$MP" "/var/run/dpdk/spillwayd-$MP"
set -e
touch "$WORK/stop"
wait "$SAMPLER" || true
SAMPLER=
grep -v -E '^(EAL|TELEMETRY|$)' "$WORK/out.txt" | tail -n 25
MEMIF_WORK=$(sed -n 's/^work directory kept: //p' "$WORK/out.txt")
[ "$RC" -eq 0 ] || { echo "FAIL: run-memif.sh exited $RC"; exit 1; }
[ -s "$MEMIF_WORK/spillwayd-stats.json" ] || { echo "FAIL: no spillwayd counters"; exit 1; }
/usr/bin/python3 "$HERE/flood_check.py" check "$WORK/samples.json" "$WORK/results.json" \
	"$MEMIF_WORK/spillwayd-stats.json" "$CAPACITY"
