#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# DPDK telemetry: spillwayd replays a generated pcap (net_pcap, one worker,
# telemetry on as EAL starts it by default) and stays up; Debian's
# dpdk-telemetry.py, driven on stdin with -f PREFIX, must list /spillway/*
# beside /ethdev/* and answer them. telemetry_check.py asserts, against what
# the test sent (its own counts of the pcap it wrote):
#   - /spillway/stats: rx packets and bytes, forwarded, flow hits and misses,
#     drops no_vip and ip4_trunc, the conservation sum;
#   - /ethdev/stats,0 agrees: ipackets = rx_packets = frames sent, ibytes =
#     bytes sent, opackets = forwarded;
#   - /spillway/vips names both VIPs; /spillway/vip by id, by address (IPv6
#     with and without brackets): packets, inner IP bytes, new flows, the
#     backends' addresses, their counts summing to the VIP's; unknown or
#     malformed selectors answer null; /spillway/cores sums to the totals;
#   - /spillway/hot: the two keys the test pinned over the control socket
#     (one source address, one 5-tuple), with their VIPs and replica counts;
# then, once SIGTERM stopped the daemon, that each backend's packet count from
# /spillway/vip equals the frames for it in out.pcap.
# usage: test_telemetry.sh SPILLWAYD
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_telemetry.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
# shellcheck source=daemon_lib.sh
. "$HERE/daemon_lib.sh"
# shellcheck source=../../scripts/lib.sh
. "$HERE/../../scripts/lib.sh"

command -v dpdk-telemetry.py >/dev/null || { echo "SKIP: dpdk-telemetry.py (package dpdk-dev) not installed"; exit 77; }
$PY -c 'import scapy' 2>/dev/null || { echo "SKIP: $PY with scapy needed"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (EAL runtime directory under /var/run/dpdk)"; exit 77; }

spw_test_begin telemetry SPW_TELEMETRY_KEEP
$PY "$HERE/telemetry_check.py" gen "$WORK"

# shellcheck disable=SC2046
timeout -k 5 120 "$SPW" $(spw_eal_mem) --no-pci --file-prefix "$PREFIX-d" -l 0-1 \
	--vdev="net_pcap0,rx_pcap=$WORK/in.pcap,tx_pcap=$WORK/out.pcap" \
	-- --config "$WORK/config.json" --stats-file "$WORK/stats.json" --control "$WORK/ctl.sock" \
	--port-mac 0=02:00:00:00:00:bb \
	>"$WORK/daemon.stdout" 2>"$WORK/daemon.stderr" &
PID=$!
PIDS+=("$PID")

SOCK=/var/run/dpdk/$PREFIX-d/dpdk_telemetry.v2
for _ in $(seq 1 300); do
	[[ -S $SOCK ]] && grep -q forwarding "$WORK/daemon.stderr" && break
	kill -0 "$PID" 2>/dev/null || { tail -n 20 "$WORK/daemon.stderr"; fail "spillwayd exited early"; }
	sleep 0.1
done
if [[ ! -S $SOCK ]]; then
	tail -n 5 "$WORK/daemon.stderr"
	echo "SKIP: EAL created no telemetry socket $SOCK"
	exit 77
fi
! grep -q "telemetry commands not registered" "$WORK/daemon.stderr" ||
	fail "$(grep telemetry "$WORK/daemon.stderr")"
wait_socket "$WORK/ctl.sock" "$PID" || fail "control socket $WORK/ctl.sock"

$PY "$HERE/telemetry_check.py" query "$WORK" "$PREFIX-d" "$WORK/ctl.sock" || fail "telemetry answers (above)"

kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
[[ $rc -eq 0 ]] || fail "spillwayd exit status $rc after SIGTERM"
$PY "$HERE/telemetry_check.py" pcap "$WORK" || fail "out.pcap against telemetry (above)"
echo "PASS: telemetry"
