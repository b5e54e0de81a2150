#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hot keys through the real data path: spillgen drives spillwayd over memif
# (pktgen/run-memif.sh). The test's own config: one source-address-keyed TCP
# VIP over 8 backends of weight 1, hot keys on with window_ms 100 and
# epsilon 0.25 (cap c = 1.25). The test's own scenario, at 100 kpps: 2 s of
# background only (20,000 flows, uniform, each far below the threshold), then
# 3.5 s in which one source address (a NAT gateway: 64 concurrent connections
# of 3 packets each, never a port reused) carries half of the packets, then
# 1.5 s of background again. While the key is hot, every window is missed for
# 1 s (SPILLWAY_TEST_HOT_MISS_FILE), then one of its replicas is set down over
# the control socket (live_stats.py --actions). spillgen
# decodes every packet spillwayd sends back, per 10 ms interval and backend;
# live_stats.py polls the daemon's stats every 10 ms for the controller's
# window clock and, once the traffic is over, reads its counters, hot_list and
# hot_events before it is stopped. hotkeys_check.py then asserts, counting in
# controller windows (never in wall-clock time):
#   - the hot key is spread (its packets reach a second backend) within 3
#     windows of the window the hot phase starts in;
#   - from that window + 3 to the phase's end (but the change), in every window, the hot VIP's
#     peak/avg of decoded packets per backend is <= c + tol, tol derived from
#     the packet counts of that window (see hotkeys_check.py); and so are all
#     those windows together;
#   - the key reached r = ceil(N p / (c (1 - m) - 1 + p)) backends (r computed
#     from spillgen's measured share p and the planner's margin m: from
#     hot.margin up to what the planner's noise formula gives for the noise of
#     spillgen's own per-backend counts before the key arrives; r = N when no
#     r meets it), no flow at more than one backend; not called infeasible if
#     the plan over every backend holds the cap by that noise;
#   - spillwayd's counters (control socket, before stop) conserve packets
#     against spillgen: rx = what spillgen sent = forwarded + icmp +
#     exception + every drop reason; forwarded = what spillgen received,
#     per backend too; spillgen's loss = the daemon's drops;
#   - they show the promotion: exactly one (the hot key), within 2 windows of
#     the window the phase starts in, with the model's r in its events and
#     override; hot_spread within the model's bounds; mempool full at exit;
#   - no demotion while the key is hot, windows_missed grown by >= k - 1 for
#     the k window openings the miss file covered; one demotion within
#     D + 1 windows of the window the key stops in;
#   - no new flow of the key (spillgen's send stamp of its first packet)
#     reaches the replica set down after the reply; the cap holds again over
#     the backends left from 2 windows after the change; every flow that
#     moved left the downed backend, once, after the change.
# Then a second, shorter run of the same VIP with hot_mode "report" (a client
# opening many connections that must all share one backend): 1 s of
# background, then 2 s in which the same source carries half of the packets;
# the sketches' sample shift set to 2 over the socket (hot_set) before it;
# hot_list read over the socket while the key is hot. hotkeys_report_check.py
# asserts the key is listed as reported (kind "report") with no override, no
# promotion, and every packet of its connections on the one backend the
# test's Maglev model (maglev_ref.py) gives for the source key; and, against
# the first run's results, that spread mode split the key over several
# backends.
# usage: test_hotkeys.sh BUILD_DIR
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: test_hotkeys.sh BUILD_DIR}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/integration
. "$HERE/daemon_lib.sh"
[ -x "$BUILD/pktgen/spillgen" ] || { echo "SKIP: spillgen not built"; exit 77; }
WORK=$(mktemp -d /tmp/spw-hot.XXXXXX)
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
	if [ -n "${KEEP_WORK:-}" ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$WORK/lb.json" <<'JSON'
{
  "encap":  {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01", "mtu": 1500},
  "maglev": {"table_size": 65537, "seed": "hotkeys-test"},
  "hot":    {"enabled": true, "window_ms": 100, "threshold": 0.01, "epsilon": 0.25},
  "vips": [
    {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "key": "src_ip", "hot_mode": "spread",
     "encap": "ipip", "backends": [{"address": "10.1.0.1", "weight": 1}, {"address": "10.1.0.2", "weight": 1},
                  {"address": "10.1.0.3", "weight": 1}, {"address": "10.1.0.4", "weight": 1},
                  {"address": "10.1.0.5", "weight": 1}, {"address": "10.1.0.6", "weight": 1},
                  {"address": "10.1.0.7", "weight": 1}, {"address": "10.1.0.8", "weight": 1}]}
  ]
}
JSON
# The hot key's connections: 175k packets at most in the phase (half of 100
# kpps for 3.5 s) in connections of 3 packets, within the pool of 64,512
# source ports, so no connection is ever reused (a reused one would go back
# to where the flow table pinned it before the promotion).
cat >"$WORK/scenario.json" <<'JSON'
{"description": "uniform background, one source address with half of the packets, background again",
 "flows": 20000, "zipf": 0, "size": 64, "interval_ms": 10, "seed": 3, "cap": 1.25,
 "phases": [
   {"name": "steady", "start": 0, "end": 2, "rate": 100000},
   {"name": "hot", "start": 2, "end": 5.5, "rate": 100000,
    "hot": {"key": "src_ip", "share": 0.5, "vip": 0, "connections": 64,
            "packets_per_connection": 3, "src": "203.0.113.77", "sport": 1024,
            "pool": 64512}},
   {"name": "after", "start": 5.5, "end": 7, "rate": 100000}]}
JSON
# While the key is hot: every window missed for 1 s (the test hook), then one
# of its replicas set down over the control socket (live_stats.py picks the
# last replica hot_list shows just before the call).
cat >"$WORK/actions.json" <<JSON
[{"at": 3.0, "touch": "$WORK/miss"},
 {"at": 4.0, "remove": "$WORK/miss"},
 {"at": 4.5, "method": "backend_set", "hot_replica": {"src": "203.0.113.77", "index": -1},
  "params": {"vip": {"address": "192.0.2.10", "port": 80, "protocol": "tcp"}, "state": "down"}}]
JSON
export SPILLWAY_TEST_HOT_MISS_FILE=$WORK/miss

spw_memif_run "$WORK/scenario.json" '^(EAL|TELEMETRY|$)' 30 \
	--period 0.01 --end 7.0 --hot --deadline 280 --actions "$WORK/actions.json"
/usr/bin/python3 "$HERE/hotkeys_check.py" "$WORK/lb.json" "$WORK/scenario.json" \
	"$WORK/live.json" "$WORK/results.json" "$WORK/series.csv" "$WORK/spillwayd-stats.json"

# --- report mode: the key hot, every connection on its one backend ----------
mkdir "$WORK/spread"
mv "$WORK/lb.json" "$WORK/scenario.json" "$WORK/live.json" "$WORK/results.json" \
	"$WORK/series.csv" "$WORK/spillwayd-stats.json" "$WORK/spread/"
[ -n "$MEMIF_WORK" ] && rm -rf "$MEMIF_WORK"
MEMIF_WORK=
rm -f "$WORK/stop" "$WORK/miss"
unset SPILLWAY_TEST_HOT_MISS_FILE
sed 's/"hot_mode": "spread"/"hot_mode": "report"/' "$WORK/spread/lb.json" >"$WORK/lb.json"
grep -q '"hot_mode": "report"' "$WORK/lb.json" || { echo "FAIL: report config not written"; exit 1; }
cat >"$WORK/scenario.json" <<'JSON'
{"description": "uniform background, then one source address with half of the packets (report mode)",
 "flows": 20000, "zipf": 0, "size": 64, "interval_ms": 10, "seed": 4, "cap": 1.25,
 "phases": [
   {"name": "steady", "start": 0, "end": 1, "rate": 100000},
   {"name": "hot", "start": 1, "end": 3, "rate": 100000,
    "hot": {"key": "src_ip", "share": 0.5, "vip": 0, "connections": 64,
            "packets_per_connection": 3, "src": "203.0.113.77", "sport": 1024,
            "pool": 64512}}]}
JSON
cat >"$WORK/actions.json" <<'JSON'
[{"at": 0.5, "method": "hot_set", "params": {"sample": 2}},
 {"at": 1.8, "method": "hot_list", "params": {}},
 {"at": 2.3, "method": "hot_list", "params": {}},
 {"at": 2.8, "method": "hot_list", "params": {}}]
JSON
spw_memif_run "$WORK/scenario.json" '^(EAL|TELEMETRY|$)' 10 \
	--period 0.01 --end 3.0 --hot --deadline 200 --actions "$WORK/actions.json"
/usr/bin/python3 "$HERE/hotkeys_report_check.py" "$WORK/lb.json" "$WORK/scenario.json" \
	"$WORK/live.json" "$WORK/results.json" "$WORK/spread/results.json"
