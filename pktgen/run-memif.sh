#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run spillgen against a one-armed spillwayd over memif, each in its own DPDK
# process. spillgen is the memif server (it creates the socket in a private
# temporary directory), spillwayd the client; spillwayd sends its output back
# on the same memif port, where spillgen analyses it.
#
#   pktgen/run-memif.sh [-b BUILD_DIR] [-c LB_CONFIG] [-D DUT] [-k] [-w DIR] [-- SPILLGEN-OPTIONS...]
#
#   -b DIR     build directory holding spillwayd and pktgen/spillgen (default: build)
#   -D DUT     the device under test on the other end of the memif port:
#              spillwayd (default), or testpmd: dpdk-testpmd (TESTPMD overrides
#              the path) in io-forward mode, one forwarding core, one RX and one
#              TX queue of 1024 descriptors, bursts of 32, 3456 mbufs with a cache
#              of 256 (spillwayd's pool for one port), port looped to itself:
#              the same wiring, cores and queues as spillwayd, and a do-nothing
#              forwarder (packets go back unchanged, not encapsulated). It is
#              the reference of the memif ratio (scripts/bench.sh). testpmd is
#              stopped once spillgen's results are written (STOP_ORDER is
#              spillwayd-first for it): its memif PMD has no interrupt-thread
#              gate, so it leaves first and spillgen sees the link go down.
#   -c FILE    spillwayd config (default: pktgen/scenarios/lb.json); spillgen reads
#              it too (--lb-config) for the VIPs and the backends' weights
#   -k         keep the work directory (logs, stats, results)
#   -w DIR     the work directory (created if missing, kept): W below;
#              spillwayd's final counters are W/spillwayd-stats.json
#   SPILLGEN-OPTIONS default to: --scenario pktgen/scenarios/hotkey.json
#              --json W/results.json --csv W/series.csv --svg W/load.svg
#
# Lcores (2 cores here): spillwayd -l 0-1 (control on CPU 0, worker on CPU 1);
# spillgen --lcores '0@1,1@0' (main lcore on CPU 1, mostly asleep; the TX/RX
# worker on CPU 0 next to spillwayd's idle control thread), so the two busy
# loops do not share a CPU. SG_LCORES / LB_LCORES override. Memory: -m 256 each
# on hugepages if 512 are free, else --no-huge -m 512; EAL_MEM overrides.
# LB_MAC (default 02:00:00:00:00:fe): spillwayd's memif MAC (mac=) and
# spillgen's --dst-mac, since spillwayd balances only frames to its port's MAC.
# Stop order: spillgen runs its scenario, writes its results and exits (closing
# the memif server); then spillwayd is stopped (SIGTERM: it writes its
# counters). STOP_ORDER=spillwayd-first stops spillwayd as soon as spillgen's
# results are written instead, and spillgen exits when it sees the link go
# down. Either side may leave first (both handle a memif peer leaving: see
# the memif gate in pktgen/main.c and dataplane/main.c). The exit status is
# spillgen's, else spillwayd's if that is not 0.
# Link bring-up is retried: if spillgen reports the memif link still down
# after LINK_WAIT seconds (default 15), both sides are stopped by PID and
# started again on a new socket, at most LINK_TRIES attempts in all (default
# 3); each retry is reported on stderr with the DUT's memif handshake lines.
# Nothing has been sent when a link fails, so a retry repeats no traffic; the
# DUT of the next attempt is a new process (spillwayd with --state reloads
# that file), so a client of its control socket must find it and reconnect.
# spillgen's stderr is kept in W/spillgen-N.err (and shown as it comes).
# Both processes are stopped by PID; the socket directory is removed at exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib.sh"

BUILD=$ROOT/build
LBCONF=$ROOT/pktgen/scenarios/lb.json
KEEP=0
DUT=spillwayd
WORK=
while getopts "b:c:D:kw:h" opt; do
	case $opt in
	b) BUILD=$(cd "$OPTARG" && pwd) ;;
	c) LBCONF=$(realpath "$OPTARG") ;;
	D) DUT=$OPTARG ;;
	k) KEEP=1 ;;
	w) mkdir -p "$OPTARG" && WORK=$(cd "$OPTARG" && pwd) && KEEP=1 ;;
	h) sed -n '3,52p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift

[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/spillgen.XXXXXX)
SOCK=$WORK/memif.sock
SG_PID=
LB_PID=
TAIL_PID=
LINK_TRIES=${LINK_TRIES:-3}
LINK_WAIT=${LINK_WAIT:-15}

cleanup() {
	local rc=$?
	if [ -n "$SG_PID" ] && kill -0 "$SG_PID" 2>/dev/null; then
		kill -TERM "$SG_PID" 2>/dev/null || true
		wait "$SG_PID" 2>/dev/null || true
	fi
	if [ -n "$LB_PID" ] && kill -0 "$LB_PID" 2>/dev/null; then
		kill -TERM "$LB_PID" 2>/dev/null || true
		wait "$LB_PID" 2>/dev/null || true
	fi
	if [ -n "$TAIL_PID" ] && kill -0 "$TAIL_PID" 2>/dev/null; then
		kill -TERM "$TAIL_PID" 2>/dev/null || true
		wait "$TAIL_PID" 2>/dev/null || true
	fi
	rm -f "$WORK"/memif*.sock
	rm -rf "/var/run/dpdk/spillgen-$$" "/var/run/dpdk/spillwayd-$$" "/var/run/dpdk/testpmd-$$"
	if [ "$KEEP" = 1 ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two DPDK processes side by side: hugepages only if there are enough for both.
free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
if [ -n "${EAL_MEM:-}" ]; then
	MEM=$EAL_MEM
elif [ "$free" -ge 512 ] && [ "$(spw_eal_mem)" != "--no-huge -m 512" ]; then
	MEM="-m 256 --huge-unlink"
else
	MEM="--no-huge -m 512"
fi
SG_LCORES=${SG_LCORES:-0@1,1@0}
LB_LCORES=${LB_LCORES:-0-1}
STOP_ORDER=${STOP_ORDER:-spillgen-first}
# spillwayd's memif MAC, and what spillgen sends to: spillwayd balances only
# frames to its port's MAC (--dst-mac-check).
LB_MAC=${LB_MAC:-02:00:00:00:00:fe}
case $DUT in
spillwayd) ;;
testpmd) STOP_ORDER=spillwayd-first ;;
*) echo "run-memif.sh: -D: spillwayd or testpmd, not $DUT" >&2; exit 2 ;;
esac
case $STOP_ORDER in
spillgen-first) DONE=() ;;
spillwayd-first) DONE=(--done-file "$WORK/done") ;;
*) echo "run-memif.sh: STOP_ORDER: spillgen-first or spillwayd-first, not $STOP_ORDER" >&2; exit 2 ;;
esac

if [ $# -eq 0 ]; then
	set -- --scenario "$ROOT/pktgen/scenarios/hotkey.json" \
		--json "$WORK/results.json" --csv "$WORK/series.csv" --svg "$WORK/load.svg"
	KEEP=1
fi

# One attempt: start spillgen (memif server) and the DUT (client), wait until
# spillgen is done, stop both; sets SG_RC and LB_RC.
run_once() {
	local try=$1
	SOCK=$WORK/memif-$try.sock
	SG_ERR=$WORK/spillgen-$try.err
	# spillgen first: as memif server it creates the socket and waits for the link.
	# shellcheck disable=SC2086
	timeout 900 "$BUILD/pktgen/spillgen" --lcores "$SG_LCORES" $MEM --no-pci \
		--file-prefix "spillgen-$$" --log-level 'lib.*:warning' \
		--vdev="net_memif0,role=server,socket=$SOCK,socket-abstract=no" \
		-- --lb-config "$LBCONF" --link-wait "$LINK_WAIT" --dst-mac "$LB_MAC" "${PROGRESS[@]}" "${DONE[@]}" "${SG_ARGS[@]}" \
		2>"$SG_ERR" &
	SG_PID=$!
	# Shown as it comes; kept in the file to tell a link failure from others.
	tail -s 0.1 -n +1 -f --pid="$SG_PID" "$SG_ERR" >&2 &
	TAIL_PID=$!
	for _ in $(seq 200); do
		[ -S "$SOCK" ] && break
		kill -0 "$SG_PID" 2>/dev/null || { wait "$SG_PID" || true; wait "$TAIL_PID" || true; exit 1; }
		sleep 0.05
	done
	[ -S "$SOCK" ] || { echo "run-memif.sh: spillgen did not create $SOCK" >&2; exit 1; }
	# The file exists from bind(); the PMD calls listen() just after. A client
	# connecting in between is refused and DPDK's memif client never retries, so
	# wait until the socket is listening.
	for _ in $(seq 200); do
		ss -xlH 2>/dev/null | grep -qF "$SOCK" && break
		sleep 0.05
	done

	if [ "$DUT" = testpmd ]; then
		# --stats-period keeps testpmd running without a terminal on stdin (it
		# sleeps between prints); SIGTERM stops it.
		# shellcheck disable=SC2086
		timeout 900 "${TESTPMD:-dpdk-testpmd}" -l "$LB_LCORES" $MEM --no-pci \
			--file-prefix "testpmd-$$" --log-level 'lib.*:warning' \
			--vdev="net_memif0,role=client,socket=$SOCK,socket-abstract=no" \
			-- --forward-mode=io --port-topology=loop --nb-cores=1 --rxq=1 --txq=1 \
			--rxd=1024 --txd=1024 --burst=32 --total-num-mbufs=3456 --mbcache=256 \
			--stats-period 1 ${LB_ARGS:-} \
			</dev/null >>"$WORK/testpmd.log" 2>&1 &
	else
		# shellcheck disable=SC2086
		timeout 900 "$BUILD/spillwayd" -l "$LB_LCORES" $MEM --no-pci \
			--file-prefix "spillwayd-$$" --log-level 'lib.*:warning' --log-level 'pmd.net.memif:debug' \
			--vdev="net_memif0,role=client,socket=$SOCK,socket-abstract=no,mac=$LB_MAC" \
			-- --config "$LBCONF" --stats-file "$WORK/spillwayd-stats.json" ${LB_ARGS:-} \
			>>"$WORK/spillwayd.log" 2>&1 &
	fi
	LB_PID=$!

	# Until spillgen is done (exited, or with spillwayd-first its results are
	# written). If spillwayd ends first, spillgen is stopped too (SIGTERM: it
	# writes what it has).
	LB_FIRST=0
	while kill -0 "$SG_PID" 2>/dev/null && [ ! -e "$WORK/done" ]; do
		if ! kill -0 "$LB_PID" 2>/dev/null; then
			LB_FIRST=1
			kill -TERM "$SG_PID" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	set +e
	if [ "$STOP_ORDER" = spillwayd-first ]; then
		kill -TERM "$LB_PID" 2>/dev/null
		wait "$LB_PID"
		LB_RC=$?
		LB_PID=
		wait "$SG_PID"
		SG_RC=$?
		SG_PID=
	else
		wait "$SG_PID"
		SG_RC=$?
		SG_PID=
		kill -TERM "$LB_PID" 2>/dev/null
		wait "$LB_PID"
		LB_RC=$?
		LB_PID=
	fi
	wait "$TAIL_PID" 2>/dev/null
	TAIL_PID=
	set -e
}

SG_ARGS=("$@")
# spillgen's progress line goes through a file now: keep it on a terminal.
PROGRESS=()
[ -t 2 ] && PROGRESS=(--progress)
try=0
while :; do
	try=$((try + 1))
	echo "=== attempt $try ===" >>"$WORK/$DUT.log"
	run_once "$try"
	# A link failure: spillgen gave up waiting while the DUT was still running
	# (a DUT that died is its own failure, not retried).
	if [ "$SG_RC" -eq 1 ] && [ "$LB_FIRST" = 0 ] && grep -q 'link still down' "$WORK/spillgen-$try.err"; then
		echo "run-memif.sh: memif link not up after ${LINK_WAIT} s (attempt $try of $LINK_TRIES); $DUT's memif lines:" >&2
		sed -n "/^=== attempt $try ===/,\$p" "$WORK/$DUT.log" | grep -i memif | tail -n 20 >&2 || true
		rm -rf "/var/run/dpdk/spillgen-$$" "/var/run/dpdk/spillwayd-$$" "/var/run/dpdk/testpmd-$$"
		if [ "$try" -lt "$LINK_TRIES" ]; then
			echo "run-memif.sh: restarting both sides on a new socket" >&2
			continue
		fi
		echo "run-memif.sh: memif link did not come up in $LINK_TRIES attempts" >&2
	fi
	break
done
# testpmd ends a SIGTERM by re-raising it (status 128 + 15).
[ "$DUT" = testpmd ] && [ "$LB_RC" -eq 143 ] && LB_RC=0
if [ "$LB_RC" -ne 0 ]; then
	echo "run-memif.sh: $DUT exited $LB_RC; its log:" >&2
	cat "$WORK/$DUT.log" >&2
fi
if [ "$SG_RC" -ne 0 ]; then
	echo "run-memif.sh: spillgen exited $SG_RC" >&2
	# The device under test's side of the memif handshake, for the record.
	[ "$LB_RC" -eq 0 ] && { echo "run-memif.sh: $DUT's log (memif lines and the end):" >&2
		grep -i memif "$WORK/$DUT.log" | tail -n 20 >&2; tail -n 5 "$WORK/$DUT.log" >&2; }
fi
if [ -s "$WORK/spillwayd-stats.json" ]; then
	/usr/bin/python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
d = {k: v for k, v in t["drops"].items() if v}
print("spillwayd: rx %d, forwarded %d, dropped %d %s" % (t["rx_packets"], t["forwarded"], t["dropped"], d or ""))
' "$WORK/spillwayd-stats.json"
fi
[ "$SG_RC" -ne 0 ] && exit "$SG_RC"
exit "$LB_RC"
