# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the integration tests that run spillwayd themselves:
#   spw_test_begin TAG KEEPVAR   WORK (a new directory), PREFIX (DPDK --file-prefix
#                                stem, spw-TAG-PID), PIDS (append the PIDs you start),
#                                and an EXIT trap that stops those PIDs, removes
#                                /var/run/dpdk/PREFIX-*, and removes WORK unless the
#                                test failed or $KEEPVAR is set (then prints it).
#   fail MESSAGE...              print "FAIL: MESSAGE" and exit 1.
#   wait_socket PATH PID         until the control socket PATH accepts connections
#                                (1 if PID died or after 30 s); needs $PY.
#   spw_memif_run SCENARIO HIDE LINES LIVE_STATS_ARG...
#                                spillgen -> spillwayd over memif with live_stats.py
#                                beside it (see the function); needs $ROOT, $BUILD,
#                                $HERE, $WORK and $WORK/lb.json.

spw_test_begin() {
	WORK=$(mktemp -d "/tmp/spw-$1.XXXXXX")
	PREFIX=spw-$1-$$
	PIDS=()
	SPW_TEST_KEEPVAR=$2
	trap spw_test_cleanup EXIT
	trap 'exit 130' INT TERM
}

spw_test_cleanup() {
	local rc=$? p
	for p in "${PIDS[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		fi
	done
	rm -rf "/var/run/dpdk/$PREFIX" "/var/run/dpdk/$PREFIX"-* 2>/dev/null || true
	if [[ -n ${!SPW_TEST_KEEPVAR:-} || $rc -ne 0 ]]; then
		echo "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

wait_socket() {
	local i
	for i in $(seq 1 300); do
		kill -0 "$2" 2>/dev/null || return 1
		$PY -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
			"$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# spw_memif_run SCENARIO HIDE LINES LIVE_STATS_ARG...
# Starts live_stats.py in the background on the control socket $WORK/ctl.sock
# (samples to $WORK/live.json, stops once $WORK/stop exists; the given
# arguments added) and runs pktgen/run-memif.sh -k, bounded by 300 s, with
# spillwayd on $WORK/lb.json and spillgen playing SCENARIO, spillgen's results
# in $WORK/results.json and $WORK/series.csv, both sides' output in
# $WORK/out.txt, run-memif.sh's PID in $WORK/memif.pid. Then removes both
# sides' /var/run/dpdk directories, stops live_stats.py ($WORK/stop) and waits
# for it, prints the last LINES lines of the output that do not match the
# extended regex HIDE, and copies spillwayd's files (spillwayd-stats.json
# among them) and spillgen's stderr from run-memif.sh's work directory into
# $WORK. Fails the test (exit 1) if run-memif.sh did not exit 0 or left no
# $WORK/spillwayd-stats.json.
# Leaves for the caller's cleanup: SAMPLER, live_stats.py's PID while it runs
# (empty again once it has been stopped and waited for); MEMIF_WORK,
# run-memif.sh's kept work directory (empty if it printed none), which the
# caller removes. Set both empty before the EXIT trap that reads them.
spw_memif_run() {
	local scenario=$1 hide=$2 lines=$3 ctl=$WORK/ctl.sock rc mp
	shift 3
	/usr/bin/python3 "$HERE/live_stats.py" "$ctl" "$WORK/live.json" "$WORK/stop" "$@" &
	SAMPLER=$!
	set +e
	LB_ARGS="--control $ctl" timeout 300 bash -c 'echo $$ >"$0"; exec "$@"' "$WORK/memif.pid" \
		"$ROOT/pktgen/run-memif.sh" -b "$BUILD" -c "$WORK/lb.json" -k -- \
		--scenario "$scenario" --json "$WORK/results.json" --csv "$WORK/series.csv" \
		--no-progress >"$WORK/out.txt" 2>&1
	rc=$?
	mp=$(cat "$WORK/memif.pid" 2>/dev/null || true)
	[ -n "$mp" ] && rm -rf "/var/run/dpdk/spillgen-$mp" "/var/run/dpdk/spillwayd-$mp"
	set -e
	touch "$WORK/stop"
	wait "$SAMPLER" || true
	SAMPLER=
	grep -v -E "$hide" "$WORK/out.txt" | tail -n "$lines"
	MEMIF_WORK=$(sed -n 's/^work directory kept: //p' "$WORK/out.txt")
	[ -n "$MEMIF_WORK" ] && cp "$MEMIF_WORK"/spillwayd* "$MEMIF_WORK"/spillgen-*.err "$WORK"/ 2>/dev/null
	[ "$rc" -eq 0 ] || { echo "FAIL: run-memif.sh exited $rc"; exit 1; }
	[ -s "$WORK/spillwayd-stats.json" ] || { echo "FAIL: no spillwayd counters"; exit 1; }
}
