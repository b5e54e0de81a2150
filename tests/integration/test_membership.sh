#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Membership changes through the control socket while traffic flows, checked
# per packet (membership_check.py). spillwayd runs in a namespace on one end of
# a veth pair (net_af_packet); the checker sends and receives on the other end
# in a second namespace. Everything is removed at exit, also on failure.
# usage: test_membership.sh SPILLWAYD
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_membership.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
$PY -c 'import scapy' 2>/dev/null || { echo "SKIP: $PY with scapy needed"; exit 77; }

WORK=$(mktemp -d /tmp/spw-member.XXXXXX)
NS_LB=spw-m-lb-$$
NS_CL=spw-m-cl-$$
PID=
cleanup() {
	local rc=$?
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	ip netns del "$NS_LB" 2>/dev/null || true
	ip netns del "$NS_CL" 2>/dev/null || true
	rm -rf "/var/run/dpdk/spw-m-$$" 2>/dev/null || true
	[ "$rc" -ne 0 ] && [ -f "$WORK/spillwayd.log" ] && tail -20 "$WORK/spillwayd.log"
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$WORK/spw.json" <<JSON
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
 "maglev": {"table_size": 65537, "seed": "membership-test"},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"},
                        {"address": "10.1.0.3"}, {"address": "10.1.0.4"},
                        {"address": "10.1.0.5"}, {"address": "10.1.0.6"}]}]}
JSON

ip netns add "$NS_LB"
ip netns add "$NS_CL"
ip link add lb0 netns "$NS_LB" type veth peer name cl0 netns "$NS_CL"
for ns in "$NS_LB" "$NS_CL"; do
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
done
# The MAC membership_check.py sends to: spillwayd balances only frames to its port's MAC.
ip -n "$NS_LB" link set lb0 address 02:00:00:00:0b:01
ip -n "$NS_LB" link set lb0 up
ip -n "$NS_CL" link set cl0 up
# No ARP or other chatter from the client side's kernel on this link.
ip -n "$NS_CL" link set cl0 arp off

ip netns exec "$NS_LB" timeout 120 "$SPW" --no-huge -m 512 --no-pci --file-prefix "spw-m-$$" \
	-l 0-1 --log-level 'lib.*:warning' --vdev=net_af_packet0,iface=lb0 \
	-- --config "$WORK/spw.json" --control "$WORK/ctl.sock" --state "$WORK/state.json" \
	>"$WORK/spillwayd.log" 2>&1 &
PID=$!
for _ in $(seq 100); do
	[ -S "$WORK/ctl.sock" ] && break
	kill -0 "$PID" 2>/dev/null || { echo "spillwayd exited early"; exit 1; }
	sleep 0.1
done
[ -S "$WORK/ctl.sock" ] || { echo "no control socket"; exit 1; }

ip netns exec "$NS_CL" timeout 120 $PY "$HERE/membership_check.py" cl0 "$WORK/ctl.sock" "$WORK/spw.json"

# spillctl against the real daemon (its own test uses a protocol fake).
CTL=$(dirname "$SPW")/spillctl
if [ -x "$CTL" ]; then
	"$CTL" --socket "$WORK/ctl.sock" vip list | grep -q "192.0.2.10:80/tcp"
	"$CTL" --socket "$WORK/ctl.sock" backend drain 192.0.2.10:80/tcp 10.1.0.6
	"$CTL" --socket "$WORK/ctl.sock" --json vip show 192.0.2.10:80/tcp |
		$PY -c 'import json,sys; v=json.load(sys.stdin); b=[x for x in v["backends"] if x["address"]=="10.1.0.6"]; assert b and b[0]["state"]=="draining", v'
	if "$CTL" --socket "$WORK/ctl.sock" backend remove 192.0.2.10:80/tcp 10.9.9.9 2>"$WORK/ctl.err"; then
		echo "spillctl: removing a missing backend succeeded"; exit 1
	fi
	grep -q "code -32001" "$WORK/ctl.err"
	"$CTL" --socket "$WORK/ctl.sock" --json stats | $PY -c 'import json,sys; s=json.load(sys.stdin); assert s["totals"]["rx_packets"] > 0'
	grep -q '"10.1.0.6"' "$WORK/state.json"
	echo "spillctl against spillwayd: OK"
fi

kill -TERM "$PID"
wait "$PID"
PID=
[ ! -e "$WORK/ctl.sock" ] || { echo "control socket left behind"; exit 1; }
echo "test_membership: PASS"
