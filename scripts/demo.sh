#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The demo: install and build (scripts/setup.sh), then
#  1. run spillwayd on a veth pair between two network namespaces this script
#     creates, send it generated traffic (thousands of flows over four VIPs,
#     IPv4 and IPv6, TCP and UDP, IPIP and GUE), capture what comes back, and
#     print per-VIP, per-backend tables;
#  2. drive spillwayd with spillgen over memif (pktgen/run-memif.sh): a steady
#     Zipf phase, a hot key with 30% of the traffic, a rate step; print
#     spillgen's per-backend table and the path of its load-over-time plot;
#  3. a shared NIC: spillwayd on AF_XDP with its XDP steering program, real
#     TCP and UDP through IPIP/GUE to backends that answer the clients
#     directly (DSR), backends added, removed and drained under long-lived
#     connections, the balancer's own address reachable throughout
#     (tests/integration/test_xdp_e2e.sh: a client, a router, five backends).
# Everything it creates (namespaces, veths, processes) is removed at exit; the
# plot and spillgen's results stay in a directory the script names.
#
# Needs root: as another user it re-executes itself through sudo when sudo is
# installed (FLOWS and KEEP passed on), else says so in one line (exit 1).
#
#   FLOWS=N   flows per VIP (default 2000)
#   KEEP=1    keep the work directory (pcaps, config, stats)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
spw_as_root "$ROOT/scripts/demo.sh" "FLOWS KEEP" "packages, network namespaces, DPDK" "$@"
./scripts/setup.sh

PY=/usr/bin/python3
NS_LB=spw-demo-lb-$$
NS_CL=spw-demo-cl-$$
WORK=$(mktemp -d /tmp/spillway-demo.XXXXXX)
LB_PID=
CAP_PID=

cleanup() {
	local rc=$?
	[ -n "$LB_PID" ] && kill "$LB_PID" 2>/dev/null && wait "$LB_PID" 2>/dev/null
	[ -n "$CAP_PID" ] && kill "$CAP_PID" 2>/dev/null && wait "$CAP_PID" 2>/dev/null
	ip netns del "$NS_LB" 2>/dev/null || true
	ip netns del "$NS_CL" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== generating traffic"
$PY scripts/demo_traffic.py "$WORK" --flows "${FLOWS:-2000}"

echo "== namespaces $NS_CL (client/router side) <-veth-> $NS_LB (spillwayd)"
ip netns add "$NS_LB"
ip netns add "$NS_CL"
ip link add lb0 netns "$NS_LB" type veth peer name cl0 netns "$NS_CL"
for ns in "$NS_LB" "$NS_CL"; do
	# No IPv6 autoconfiguration chatter on the demo link.
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
done
ip -n "$NS_LB" link set lb0 up
ip -n "$NS_CL" link set cl0 up

# What spillwayd sends back toward the router side, as the router would see it.
ip netns exec "$NS_CL" tcpdump -q -i cl0 -Q in -U -w "$WORK/out.pcap" 2>"$WORK/tcpdump.log" &
CAP_PID=$!

echo "== starting spillwayd (net_af_packet on lb0, one worker)"
# shellcheck disable=SC2046
ip netns exec "$NS_LB" timeout 300 "$ROOT/build/spillwayd" $(spw_eal_mem) --no-pci \
	--file-prefix "spw-demo-$$" -l 0-1 --log-level 'lib.*:warning' \
	--vdev=net_af_packet0,iface=lb0 \
	-- --config "$WORK/demo.json" --stats-file "$WORK/stats.json" >"$WORK/spillwayd.log" 2>&1 &
LB_PID=$!
for _ in $(seq 100); do
	grep -qs forwarding "$WORK/spillwayd.log" && break
	kill -0 "$LB_PID" 2>/dev/null || { cat "$WORK/spillwayd.log"; exit 1; }
	sleep 0.1
done

echo "== sending $(ls -l "$WORK/in.pcap" | awk '{print $5}') bytes of traffic from $NS_CL"
ip netns exec "$NS_CL" $PY -c '
import logging, sys
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import conf, rdpcap, sendp
conf.verb = 0
sendp(rdpcap(sys.argv[1]), iface="cl0")
' "$WORK/in.pcap"
sleep 1

kill -TERM "$LB_PID"
wait "$LB_PID" || { cat "$WORK/spillwayd.log"; exit 1; }
LB_PID=
kill "$CAP_PID"
wait "$CAP_PID" 2>/dev/null || true
CAP_PID=

echo
$PY scripts/demo_report.py --config "$WORK/demo.json" "$WORK/out.pcap" "$WORK/stats.json"

echo
echo "== part 2: spillgen <-> spillwayd over memif (steady Zipf, then a 30% hot key, then a rate step)"
pktgen/run-memif.sh -b build -k

echo
echo "== part 3: a NIC shared with the kernel: AF_XDP + XDP steering, real TCP/UDP through DSR backends"
rc=0
tests/integration/test_xdp_e2e.sh build/spillwayd || rc=$?
if [ "$rc" = 77 ]; then
	echo "(part 3 skipped: this kernel lacks AF_XDP or network namespaces)"
elif [ "$rc" != 0 ]; then
	exit "$rc"
fi
