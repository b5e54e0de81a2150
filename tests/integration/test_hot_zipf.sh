#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Hot keys through the real data path, judged per packet: spillwayd over
# net_pcap (pcap in through a FIFO, pcap out), one src_ip-keyed TCP VIP with
# hot_mode "spread" over 100 backends of weight 1, hot {enabled, window_ms 50,
# epsilon 0.25} and nothing else. Sources drawn Zipf(alpha) over 100,000
# addresses, each opening short TCP connections (SYN, 1-4 data packets, FIN)
# interleaved by the thousand, ports reused long after their close
# (hot_zipf_gen.py). hot_zipf_feed.py replays the pcap at its timestamps
# (400,000 packets per second of trace: 20,000 per window) and records the
# controller's window against the frames received; hot_zipf_check.py judges
# every output frame against the generator's record: nothing lost or
# duplicated, no connection at two backends, each backend's load over the
# last third within max(c, the load of the keys below the bound at their
# Maglev homes) plus a tolerance from the counts (compound Poisson), and
# every source resolvably above
# the bound (c - 1)/(N - 1) spread over two backends or more after D windows
# (see hot_zipf_check.py for the derivations). With HOT_ZIPF_IDEAL=1 the
# same cases go through hot_zipf_ideal.py, a balancer written in the test that
# meets every rule, instead of spillwayd: the checker's self-test.
#
# Cases (HOT_ZIPF_CASES, default all four): zipf-0.8, zipf-1.0, zipf-1.2 with
# the default flow table; zipf-1.0-ft10 with flows.capacity at 10% of the
# largest number of connections open at once. "zipf-A" and "zipf-A-ftP" name
# any other alpha A and percentage P.
#
# usage: test_hot_zipf.sh SPILLWAYD
# env:   HOT_ZIPF_CASES="zipf-1.0 ..."  the cases to run, in order
#        HOT_ZIPF_SCALE=F     packets per case = F * 2,000,000 (default 1; below
#                             about 0.4 the last third of a case starts before
#                             the promotion delay ends and it is not judged)
#        HOT_ZIPF_RATE=PPS    trace packets per second (default 400000)
#        HOT_ZIPF_DELAY=D     promotion delay in windows (default 20)
#        HOT_ZIPF_SEED=N      generator seed (default 1)
#        HOT_ZIPF_KEEP=1      keep the work directory (printed at the end)
#        HOT_ZIPF_IDEAL=1     the checker's self-test: hot_zipf_ideal.py (an ideal
#                             balancer written in the test) instead of spillwayd;
#                             every case must pass
# Exit 0 every case passed, 1 a case failed, 77 skip (no scapy, not root, or
# a case not judged).
# Each case's daemon and feeder are bounded (timeout) and stopped by PID; a
# case's pcaps are removed once it is judged, the DPDK runtime files and the
# work directory at exit (the directory is kept, and printed, when a case
# failed or HOT_ZIPF_KEEP is set).
set -euo pipefail

SPW=$(readlink -f "${1:?usage: test_hot_zipf.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
[[ -x $SPW ]] || { echo "not executable: $SPW" >&2; exit 1; }
$PY -c 'import scapy' 2>/dev/null || { echo "SKIP: $PY with scapy needed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: root needed (DPDK EAL)"; exit 77; }
. "$HERE/daemon_lib.sh"
spw_test_begin hotzipf HOT_ZIPF_KEEP

CASES=${HOT_ZIPF_CASES:-zipf-0.8 zipf-1.0 zipf-1.2 zipf-1.0-ft10}
SCALE=${HOT_ZIPF_SCALE:-1}
RATE=${HOT_ZIPF_RATE:-400000}
DELAY=${HOT_ZIPF_DELAY:-20}
SEED=${HOT_ZIPF_SEED:-1}
PACKETS=$($PY -c 'import sys; print(int(float(sys.argv[1]) * 2000000))' "$SCALE")
FAILED=0
UNJUDGED=0
SUMMARY=()

# run_case NAME ALPHA FLOW_PERCENT
run_case() {
	local name=$1 alpha=$2 ft=$3 d=$WORK/$1 t0=$SECONDS rc frac=0
	[[ -n $ft ]] && frac=$($PY -c 'import sys; print(float(sys.argv[1]) / 100)' "$ft")
	echo "== $name: alpha $alpha, $PACKETS packets${ft:+, flows.capacity $ft% of the open peak}"
	$PY "$HERE/hot_zipf_gen.py" "$d" --alpha "$alpha" --packets "$PACKETS" --rate "$RATE" \
		--flow-frac "$frac" --seed "$SEED"
	if [[ -n ${HOT_ZIPF_IDEAL:-} ]]; then
		$PY "$HERE/hot_zipf_ideal.py" "$d"
	else
		replay "$d" || { SUMMARY+=("$name: not run to the end"); FAILED=1; return; }
	fi
	rc=0
	$PY "$HERE/hot_zipf_check.py" "$d" --delay-windows "$DELAY" --name "$name" || rc=$?
	case $rc in
	0) SUMMARY+=("$name: PASS ($((SECONDS - t0)) s)") ;;
	77)
		UNJUDGED=1
		SUMMARY+=("$name: not judged ($((SECONDS - t0)) s)")
		;;
	*)
		FAILED=1
		SUMMARY+=("$name: FAIL ($((SECONDS - t0)) s)")
		;;
	esac
	echo "$name: $((SECONDS - t0)) s (generate, replay, check)"
	# the case's frames are large: keep only what explains the verdict
	[[ -n ${HOT_ZIPF_KEEP:-} ]] || rm -f "$d/in.pcap" "$d/out.pcap" "$d/in.fifo"
}

# replay DIR: DIR/in.pcap through spillwayd (FIFO in, DIR/out.pcap out), fed by
# hot_zipf_feed.py; 1 (the reason printed) if either did not end cleanly.
replay() {
	local d=$1 pid rc feed=0 mac
	mkfifo "$d/in.fifo"
	mac=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["port_mac"])' "$d/manifest.json")
	timeout -k 5 600 "$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-$(basename "$d")" -l 0-1 \
		--vdev="net_pcap0,rx_pcap=$d/in.fifo,tx_pcap=$d/out.pcap" \
		-- --config "$d/config.json" --stats-file "$d/stats.json" --port-mac "0=$mac" \
		--control "$d/ctl.sock" >"$d/spillwayd.stdout" 2>"$d/spillwayd.stderr" &
	pid=$!
	PIDS+=("$pid")
	timeout -k 5 300 $PY "$HERE/hot_zipf_feed.py" "$d" "$d/in.fifo" "$d/ctl.sock" || feed=$?
	kill -TERM "$pid" 2>/dev/null || true
	set +e
	wait "$pid"
	rc=$?
	set -e
	if [[ $feed -ne 0 || $rc -ne 0 ]]; then
		echo "FAIL: $(basename "$d"): feeder exit $feed, spillwayd exit $rc (expected 0, 0); stderr tail:"
		tail -n 20 "$d/spillwayd.stderr"
		[[ -n ${HOT_ZIPF_KEEP:-} ]] || rm -f "$d/in.pcap" "$d/out.pcap" "$d/in.fifo"
		return 1
	fi
}

for c in $CASES; do
	if [[ $c =~ ^zipf-([0-9.]+)(-ft([0-9.]+))?$ ]]; then
		run_case "$c" "${BASH_REMATCH[1]}" "${BASH_REMATCH[3]}"
	else
		fail "unknown case $c (zipf-ALPHA or zipf-ALPHA-ftPERCENT)"
	fi
done
echo "== hot_zipf summary"
printf '  %s\n' "${SUMMARY[@]}"
[[ $FAILED -eq 0 ]] || fail "hot_zipf: a case failed"
if [[ $UNJUDGED -ne 0 ]]; then
	echo "SKIP: hot_zipf: a case could not be judged (too little traffic for the delay)"
	exit 77
fi
echo "hot_zipf: PASS"
