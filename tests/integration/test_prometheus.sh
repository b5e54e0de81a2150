#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# spillwayd's --metrics endpoint scraped by a real Prometheus (Debian's
# prometheus package) under a generated load: spillgen -> spillwayd over memif
# (pktgen/run-memif.sh), spillwayd with --metrics 127.0.0.1:<free port>, and
# a Prometheus of the test's own (loopback only, its own configuration and
# --storage.tsdb.path in the work directory, scrape_interval 1 s), started
# and stopped by PID. The load: the test's scenario, idle for its first 6 s
# (Prometheus scrapes the counters at 0; when its first scrape already counts
# packets, the run is repeated with a lead-in of 12, then 20 s), then 20,000 pps of UDP over 1,000
# flows for 10 s, then 4 s more in which spillgen only receives (Prometheus
# scrapes the final counts). Asserted (prom_check.py has the bounds):
#   - during the run: one scrape passes `promtool check metrics` with no
#     error; POST -> 405, an unknown path -> 404, garbage -> 400, 16 KiB of
#     header -> 431, HEAD -> 200 without a body, the daemon serving a GET
#     after each and counting each refusal;
#   - afterwards, through Prometheus's query API: increase() of the rx and
#     forwarded packet counters over the run equals what spillgen reports it
#     sent and received (exact: see prom_check.py), and rate() over 4 s
#     windows inside the steady phase lies within the bounds spillgen's own
#     per-100 ms TX series gives for a stretch of that length;
#   - Prometheus saw the target up (up == 1) while the daemon ran.
# usage: test_prometheus.sh BUILD_DIR
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: test_prometheus.sh BUILD_DIR}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/integration
PY=/usr/bin/python3
[ -x "$BUILD/pktgen/spillgen" ] || { echo "SKIP: spillgen not built"; exit 77; }
PROM=${PROMETHEUS:-/usr/bin/prometheus}
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
[ -x "$PROM" ] && [ -x "$PROMTOOL" ] || {
	echo "SKIP: $PROM or $PROMTOOL missing (Debian package prometheus, scripts/setup.sh)"
	exit 77
}
. "$HERE/daemon_lib.sh"
spw_test_begin prom KEEP_WORK

free_port() {
	$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# One run with a lead-in of $1 seconds before the load, in its own directory
# with its own Prometheus. Returns 3 when Prometheus's first scrape already
# counted packets (the daemon started late on a loaded machine, so the lead-in
# was too short for the exact increase() check); fails the test on any other
# fault.
attempt() {
	local lead=$1 status
	A=$WORK/lead$lead
	mkdir -p "$A"
	MPORT=$(free_port)
	PPORT=$(free_port)
	[ "$MPORT" != "$PPORT" ] || PPORT=$(free_port)

	cat >"$A/lb.json" <<-'JSON'
	{
	  "encap":  {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01", "mtu": 1500},
	  "maglev": {"table_size": 65537, "seed": "prometheus-test"},
	  "vips": [
	    {"address": "192.0.2.10", "port": 53, "protocol": "udp", "key": "5tuple", "encap": "ipip",
	     "backends": [{"address": "10.1.0.1", "weight": 1},
	                  {"address": "10.1.0.2", "weight": 1},
	                  {"address": "10.1.0.3", "weight": 1}]}
	  ]
	}
	JSON
	sed -e "s/LEAD_END/$((lead + 10)).0/" -e "s/LEAD/$lead.0/g" >"$A/scenario.json" <<-'JSON'
	{"description": "idle LEAD s, 20 kpps for 10 s, receive 4 s more",
	 "flows": 1000, "zipf": 0, "size": 64, "interval_ms": 100, "seed": 11, "drain_ms": 4000,
	 "phases": [{"name": "steady", "start": LEAD, "end": LEAD_END, "rate": 20000}]}
	JSON
	cat >"$A/prometheus.yml" <<-YML
	global:
	  scrape_interval: 1s
	  scrape_timeout: 900ms
	  evaluation_interval: 1s
	scrape_configs:
	  - job_name: spillway
	    static_configs:
	      - targets: ["127.0.0.1:$MPORT"]
	YML
	"$PROMTOOL" check config "$A/prometheus.yml" >/dev/null || fail "promtool rejects the test's config"

	"$PROM" --config.file="$A/prometheus.yml" --storage.tsdb.path="$A/tsdb" \
		--web.listen-address="127.0.0.1:$PPORT" --log.level=warn \
		>"$A/prometheus.log" 2>&1 &
	PROM_PID=$!
	PIDS+=($PROM_PID)
	for _ in $(seq 300); do
		$PY -c 'import urllib.request,sys; urllib.request.urlopen("http://127.0.0.1:%s/-/ready" % sys.argv[1], timeout=1)' \
			"$PPORT" 2>/dev/null && break
		kill -0 "$PROM_PID" 2>/dev/null || { cat "$A/prometheus.log"; fail "prometheus exited"; }
		sleep 0.1
	done

	$PY "$HERE/prom_check.py" http "$MPORT" "$A" 60 >"$A/http.out" 2>&1 &
	CHECKER=$!
	PIDS+=($CHECKER)
	set +e
	LB_ARGS="--metrics 127.0.0.1:$MPORT" timeout 200 "$ROOT/pktgen/run-memif.sh" -b "$BUILD" \
		-c "$A/lb.json" -- --scenario "$A/scenario.json" --json "$A/results.json" \
		--csv "$A/series.csv" --no-progress >"$A/run.out" 2>&1
	RC=$?
	set -e
	grep -v -E '^(EAL|TELEMETRY|$)' "$A/run.out" | tail -n 8
	[ "$RC" -eq 0 ] || fail "run-memif.sh exited $RC"
	wait "$CHECKER" || { cat "$A/http.out"; fail "metrics endpoint checks"; }
	cat "$A/http.out"
	[ -e "$A/http.ok" ] || fail "metrics endpoint checks did not finish"

	# promtool reads the exposition text on stdin; lint problems and parse errors fail.
	"$PROMTOOL" check metrics <"$A/scrape.txt" >"$A/promtool.out" 2>&1 ||
		{ cat "$A/promtool.out"; fail "promtool check metrics"; }
	echo "promtool check metrics: $(grep -c -v '^#' "$A/scrape.txt") samples, no problem"

	status=0
	$PY "$HERE/prom_check.py" query "$PPORT" "$A/results.json" "$A/series.csv" 4 || status=$?
	if [ "$status" -ne 0 ]; then
		kill "$PROM_PID" 2>/dev/null || true
		wait "$PROM_PID" 2>/dev/null || true
		return "$status"
	fi
	UP=$($PY "$HERE/prom_check.py" up "$PPORT")
	[ "$UP" = 1 ] || fail "Prometheus never saw the target up (max up = $UP)"
	kill "$PROM_PID" 2>/dev/null || true
	wait "$PROM_PID" 2>/dev/null || true
}

# At most three runs, the lead-in longer each time; only the too-short lead-in
# is retried.
for lead in 6 12 20; do
	rc=0
	attempt "$lead" || rc=$?
	[ "$rc" -eq 0 ] && { echo "PASS: prometheus (lead-in $lead s)"; exit 0; }
	[ "$rc" -eq 3 ] || fail "prometheus checks (status $rc)"
	echo "RETRY: Prometheus's first scrape came after the load began; lead-in $lead s was too short"
done
fail "Prometheus's first scrape came after the load began in 3 runs"
