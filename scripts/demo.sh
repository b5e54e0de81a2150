#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The demo: install and build (scripts/setup.sh), then
#  1. run spillwayd on a veth pair between two network namespaces this script
#     creates, send it generated traffic addressed to its port's MAC
#     (thousands of flows over four VIPs, IPv4 and IPv6, TCP and UDP, IPIP and
#     GUE, and a few frames to no VIP), capture what comes back, print
#     per-VIP, per-backend tables and judge them (scripts/demo_report.py:
#     every frame received, the frames to no VIP dropped as no_vip and every
#     other one forwarded, every flow and key at one backend, key shares
#     within binomial intervals around the weights, counters equal to the
#     capture);
#  2. drive spillwayd with spillgen over memif (pktgen/run-memif.sh): a steady
#     Zipf phase, a hot key with 30% of the traffic, a rate step; print
#     spillgen's per-backend table and the path of its load-over-time plot;
#     judge it (demo_report.py --memif: nothing lost but what spillwayd
#     counted as dropped, no flow at two backends, the weights' shares, the
#     hot key promoted and the hot phase brought under the cap);
#  3. a shared NIC: spillwayd on AF_XDP with its XDP steering program, real
#     TCP and UDP through IPIP/GUE to backends that answer the clients
#     directly (DSR), backends added, removed and drained under long-lived
#     connections, the balancer's own address reachable throughout
#     (tests/integration/test_xdp_e2e.sh: a client, a router, five backends;
#     it judges itself).
# The last line is the verdict, "demo: PASS ..." or "demo: FAIL ..."; the exit
# status is 0 only if every part that ran passed (a part the machine cannot
# run, e.g. part 3 without AF_XDP, is reported as skipped).
# Everything it creates (namespaces, veths, processes) is removed at exit; the
# plot and spillgen's results stay in a directory the script names.
# Needs root: as another user it re-executes itself through sudo when sudo is
# installed (the variables below passed on), else says so in one line (exit 1).
#
#   scripts/demo.sh [--quick] [--build DIR]
#
#   --quick      part 1 only, FLOWS 200 by default (a few seconds): parts 2
#                and 3 need memif and AF_XDP runs of a minute and more, so
#                quick mode leaves them out and its verdict says so. The
#                test suite runs this (meson test demo_quick).
#   --build DIR  use the build in DIR (spillwayd, pktgen/spillgen): no
#                installation, no build (scripts/setup.sh is not run)
#   FLOWS=N      flows per VIP in part 1 (default 2000, 200 with --quick)
#   KEEP=1       keep the work directory (pcaps, config, stats)
#   DEMO_DST_MAC=MAC  destination MAC of part 1's frames (default: the MAC of
#                spillwayd's veth, as a router would address them). Any other
#                MAC makes a broken run that must fail (meson test
#                demo_broken_mac).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/lib.sh
spw_as_root "$ROOT/scripts/demo.sh" "FLOWS KEEP DEMO_DST_MAC" "packages, network namespaces, DPDK" "$@"

QUICK=0
BUILD=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--build)
		[ $# -ge 2 ] || { echo "demo.sh: --build needs a directory" >&2; exit 2; }
		BUILD=$(cd "$2" && pwd)
		shift
		;;
	-h | --help) sed -n '3,46p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if [ -z "$BUILD" ]; then
	./scripts/setup.sh
	BUILD=$ROOT/build
fi
[ -x "$BUILD/spillwayd" ] || { echo "demo.sh: no spillwayd in $BUILD" >&2; exit 1; }
if [ "$QUICK" = 1 ]; then
	FLOWS=${FLOWS:-200}
else
	FLOWS=${FLOWS:-2000}
fi

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
	rm -rf "/var/run/dpdk/spw-demo-$$"
	if [ "${KEEP:-0}" = 1 ]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=()
failed=()
skipped=()

echo "== part 1: namespaces $NS_CL (client/router side) <-veth-> $NS_LB (spillwayd)"
ip netns add "$NS_LB"
ip netns add "$NS_CL"
ip link add lb0 netns "$NS_LB" type veth peer name cl0 netns "$NS_CL"
for ns in "$NS_LB" "$NS_CL"; do
	# No IPv6 autoconfiguration chatter on the demo link.
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
done
ip -n "$NS_LB" link set lb0 up
ip -n "$NS_CL" link set cl0 up
# net_af_packet gives spillwayd's port the veth's own MAC: the frames go there.
LB_MAC=$(ip netns exec "$NS_LB" cat /sys/class/net/lb0/address)
DST_MAC=${DEMO_DST_MAC:-$LB_MAC}
[ "$DST_MAC" = "$LB_MAC" ] || echo "(DEMO_DST_MAC: frames to $DST_MAC, not to spillwayd's port $LB_MAC: this run must fail)"

echo "== generating traffic: $FLOWS flows per VIP, to $DST_MAC"
$PY scripts/demo_traffic.py "$WORK" --flows "$FLOWS" --dst-mac "$DST_MAC"

# What spillwayd sends back toward the router side, as the router would see it.
ip netns exec "$NS_CL" tcpdump -q -i cl0 -Q in -U -w "$WORK/out.pcap" 2>"$WORK/tcpdump.log" &
CAP_PID=$!

echo "== starting spillwayd (net_af_packet on lb0, one worker)"
# --foreground: SIGTERM reaches spillwayd once (ENVIRONMENT.md).
# shellcheck disable=SC2046
ip netns exec "$NS_LB" timeout --foreground 300 "$BUILD/spillwayd" $(spw_eal_mem) --no-pci \
	--file-prefix "spw-demo-$$" -l 0-1 --log-level 'lib.*:warning' \
	--vdev=net_af_packet0,iface=lb0 \
	-- --config "$WORK/demo.json" --stats-file "$WORK/stats.json" >"$WORK/spillwayd.log" 2>&1 &
LB_PID=$!
for _ in $(seq 100); do
	grep -qs forwarding "$WORK/spillwayd.log" && grep -qs listening "$WORK/tcpdump.log" && break
	kill -0 "$LB_PID" 2>/dev/null || { cat "$WORK/spillwayd.log"; exit 1; }
	sleep 0.1
done

echo "== sending $(stat -c %s "$WORK/in.pcap") bytes of traffic from $NS_CL"
ip netns exec "$NS_CL" timeout 600 $PY -c '
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
sleep 0.5
kill "$CAP_PID"
wait "$CAP_PID" 2>/dev/null || true
CAP_PID=

echo
if $PY scripts/demo_report.py --config "$WORK/demo.json" --sent "$WORK/in.json" \
	"$WORK/out.pcap" "$WORK/stats.json"; then
	passed+=("part 1")
else
	failed+=("part 1")
fi

if [ "$QUICK" = 1 ]; then
	skipped+=("parts 2 and 3: not run in quick mode (memif and AF_XDP runs)")
else
	echo
	echo "== part 2: spillgen <-> spillwayd over memif (steady Zipf, then a 30% hot key, then a rate step)"
	MEMIF=$(mktemp -d /tmp/spillway-demo-memif.XXXXXX)
	rc=0
	pktgen/run-memif.sh -b "$BUILD" -w "$MEMIF" -- --scenario pktgen/scenarios/hotkey.json \
		--json "$MEMIF/results.json" --csv "$MEMIF/series.csv" --svg "$MEMIF/load.svg" || rc=$?
	if [ "$rc" = 0 ] && $PY scripts/demo_report.py --memif --config pktgen/scenarios/lb.json \
		--scenario pktgen/scenarios/hotkey.json "$MEMIF/results.json" "$MEMIF/spillwayd-stats.json"; then
		passed+=("part 2")
	else
		[ "$rc" = 0 ] || echo "demo part 2: FAIL (pktgen/run-memif.sh exited $rc)"
		failed+=("part 2")
	fi
	echo "part 2's results, series and plot: $MEMIF (load.svg)"

	echo
	echo "== part 3: a NIC shared with the kernel: AF_XDP + XDP steering, real TCP/UDP through DSR backends"
	rc=0
	tests/integration/test_xdp_e2e.sh "$BUILD/spillwayd" || rc=$?
	if [ "$rc" = 77 ]; then
		skipped+=("part 3: this kernel lacks AF_XDP or network namespaces")
	elif [ "$rc" != 0 ]; then
		echo "demo part 3: FAIL (test_xdp_e2e.sh exited $rc)"
		failed+=("part 3")
	else
		echo "demo part 3: PASS"
		passed+=("part 3")
	fi
fi

# join SEPARATOR ITEMS...: the items with SEPARATOR between them.
join() {
	local sep=$1 out=
	shift
	for x in "$@"; do out=${out:+$out$sep}$x; done
	echo "$out"
}
echo
note=
[ "${#skipped[@]}" -gt 0 ] && note="; $(join '; ' "${skipped[@]}")"
if [ "${#failed[@]}" -gt 0 ]; then
	ok=$(join ', ' "${passed[@]}")
	echo "demo: FAIL ($(join ', ' "${failed[@]}") failed; passed: ${ok:-none}$note)"
	exit 1
fi
echo "demo: PASS ($(join ', ' "${passed[@]}") passed$note)"
