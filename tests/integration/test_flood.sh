#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SYN flood through the real data path, with membership changes while it runs:
# spillgen -> spillwayd over memif (pktgen/run-memif.sh), the test's own
# config (one TCP VIP keyed by 5-tuple, backends weighted 1:1:2:1, a flow
# table of FLOOD_CAPACITY entries, default 65536: 1 MiB) and scenario:
#   - the flood: SYN packets each of a new 5-tuple (one source address per
#     0.25 s phase, a new source port for every packet, never one reused), so
#     no flood flow is ever seen twice and every flood packet is a flow-table
#     miss; 100 % of the packets for 0.5 s, then 60 % up to 7.5 s;
#   - FLOOD_ESTABLISHED (default 32) long-lived connections from 0.5 s on, 40 %
#     of the packets: each sends often enough that the flood never evicts it
#     (the expected number of its entries evicted is about 0.002, see
#     flood_check.py);
#   - at 2, 3.75 and 5.5 s after the traffic starts, live_stats.py changes
#     the membership over the control socket: a backend added (weight 1),
#     the weight-2 backend set to weight 0, another backend added (weight 2).
# live_stats.py also polls stats and VmRSS every 50 ms and reads the counters
# once the traffic is over, before the daemon is stopped. flood_check.py then
# asserts, each against a model the test keeps or spillgen's decoded packets:
#   - every flow was seen at one backend only (spillgen, per flow): the
#     established connections kept their backend across all three changes;
#     all of them got through; the added backends got flood traffic;
#   - flow-table hits: every packet of an established connection but its
#     first is a hit, every flood packet a miss; between the changes the hits
#     grow by the established share of the packets (binomial bound); lookups
#     = rx; no flow re-chosen;
#   - the table overflowed (evictions, > 4 x capacity distinct 5-tuples);
#     RSS grew by <= FLOOD_RSS_MARGIN_KIB (16 MiB);
#   - flood 5-tuples spread by weight (peak/avg <= 1.10, flood-only part);
#   - counters conserve packets against spillgen (rx = sent = forwarded +
#     icmp + exception + every drop reason, forwarded = received, lost =
#     dropped) and the final stats show the mbuf pool full (in_use 0).
# usage: test_flood.sh BUILD_DIR
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: test_flood.sh BUILD_DIR}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/integration
. "$HERE/daemon_lib.sh"
[ -x "$BUILD/pktgen/spillgen" ] || { echo "SKIP: spillgen not built"; exit 77; }
EST=${FLOOD_ESTABLISHED:-32}
CAPACITY=${FLOOD_CAPACITY:-65536}
WORK=$(mktemp -d /tmp/spw-flood.XXXXXX)
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
# Phases of 0.25 s, each with its own flood source: at most 250 k or
# 0.6 x 400 k pps for 0.25 s = 62,500 packets, within the 64,512 source
# ports of a phase, so no flood 5-tuple repeats.
/usr/bin/python3 - "$WORK/flood.json" "$EST" <<'PY'
import json, sys
phases = []
for k in range(30):
    only = k < 2
    phases.append({"name": "flood-%d" % k, "start": k * 0.25, "end": (k + 1) * 0.25,
                   "rate": 250000 if only else 400000,
                   "hot": {"key": "src_ip", "share": 1.0 if only else 0.6, "vip": 0,
                           "connections": 1, "packets_per_connection": 1,
                           "src": "203.0.113.%d" % (k + 1), "sport": 1024, "pool": 64512}})
json.dump({"description": "SYN flood of new 5-tuples; long-lived connections from 0.5 s",
           "flows": int(sys.argv[2]), "zipf": 0, "size": 64, "interval_ms": 250, "seed": 7,
           "phases": phases}, open(sys.argv[1], "w"), indent=1)
PY
VIP='{"address": "192.0.2.10", "port": 80, "protocol": "tcp"}'
cat >"$WORK/actions.json" <<JSON
[{"at": 2.0, "method": "backend_add", "params": {"vip": $VIP, "address": "10.1.0.5", "weight": 1}},
 {"at": 3.75, "method": "backend_set", "params": {"vip": $VIP, "address": "10.1.0.3", "weight": 0}},
 {"at": 5.5, "method": "backend_add", "params": {"vip": $VIP, "address": "10.1.0.6", "weight": 2}}]
JSON

# In an ASan build, freed memory waits in ASan's quarantine (256 MiB by
# default) before it is reused: the stats replies polled every 50 ms and the
# snapshots of the membership changes would then show as RSS growth that no
# allocation of the data path caused. A small quarantine keeps the RSS bound
# meaningful there; other builds ignore the variable.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
spw_memif_run "$WORK/flood.json" '^(EAL|TELEMETRY|$|hot key in)' 25 \
	--period 0.05 --end 7.5 --actions "$WORK/actions.json" --deadline 280
/usr/bin/python3 "$HERE/flood_check.py" "$WORK/lb.json" "$WORK/flood.json" "$WORK/live.json" \
	"$WORK/results.json" "$WORK/series.csv" "$WORK/spillwayd-stats.json"
