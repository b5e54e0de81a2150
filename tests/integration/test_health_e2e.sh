#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Health checks end to end on the AF_XDP topology of test_xdp_e2e.sh
# (e2e_lib.sh): client, router, spillwayd on net_af_xdp, backends b1..b4 that
# decapsulate with XDP (e2e_decap.bpf.c) and run real services: e2e_server.py
# (TCP 80, UDP 5300 on the VIP) and python3 -m http.server (8080; nginx is not
# in scripts/setup.sh's packages). Four VIPs over the same four backends, one
# per kind of check: tcp via encap, tcp direct, http direct, udp via encap.
# health_e2e_check.py drives the services and judges in probe counts.
#
# usage: test_health_e2e.sh SPILLWAYD
# Exit 77 (skip) without root, network namespaces or AF_XDP, and while
# spillwayd does not know the `health` configuration field.
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_health_e2e.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
# shellcheck source-path=SCRIPTDIR source=e2e_lib.sh
. "$HERE/e2e_lib.sh"
# shellcheck source=../../scripts/lib.sh
. "$HERE/../../scripts/lib.sh"

e2e_require_root_netns
e2e_require_af_xdp "$PY"
command -v ethtool >/dev/null || { echo "FAIL: ethtool is needed (scripts/setup.sh installs it)"; exit 1; }

S=$$
WORK=$(mktemp -d "/tmp/spw-he2e.XXXXXX")
PREFIX="spw-he2e-$S"
NS_R=spw-he-r-$S
NS_C=spw-he-c-$S
NS_L=spw-he-lb-$S
BACKENDS=(b1 b2 b3 b4)
SPW_PID=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	e2e_stop_pid "$SPW_PID" TERM
	e2e_cleanup
	rm -rf "/var/run/dpdk/$PREFIX"
	if [ "$rc" -ne 0 ] && [ -f "$WORK/spillwayd.log" ]; then
		echo "---- spillwayd.log (last 30 lines)"
		tail -30 "$WORK/spillwayd.log"
	fi
	if [ -n "${E2E_KEEP_WORK:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

MTU=1600
GUE_PORT=6080
LB_IP=10.10.2.2
VIP_A=10.100.0.1 # TCP 80, IPIP, tcp via encap
VIP_H=10.100.0.2 # TCP 80, GUE, http direct (8080)
VIP_U=10.100.0.3 # UDP 5300, GUE, udp via encap
VIP_D=10.100.0.4 # TCP 80, IPIP, tcp direct
INTERVAL=200
TIMEOUT=150
RISE=2
FALL=3
declare -A BE_IP
for i in 1 2 3 4; do BE_IP[b$i]=10.10.3.$((10 + i)); done

e2e_build_decap "$WORK/e2e_decap.bpf.o" "$GUE_PORT"
e2e_router_add "$NS_R"
e2e_client_add "$NS_C" c0 10.10.1.2/24 "$NS_R" r-c0 10.10.1.1/24
e2e_lb_add "$NS_L" lb0 "$LB_IP/24" "$NS_R" r-lb0 10.10.2.1/24 "$MTU"
e2e_router_bridge "$NS_R" br0 10.10.3.1/24 "$MTU"
for b in "${BACKENDS[@]}"; do
	e2e_backend_add "spw-he-$b-$S" eth0 "${BE_IP[$b]}/24" "$NS_R" br0 "r-$b" 10.10.3.1 \
		"$MTU" "$GUE_PORT" "$WORK/e2e_decap.bpf.o" "$VIP_A" "$VIP_H" "$VIP_U" "$VIP_D"
done
e2e_router_route "$NS_R" 10.100.0.0/24 "$LB_IP"
ROUTER_MAC=$(e2e_mac "$NS_R" r-lb0)

backends_json() {
	local out="" b
	for b in "${BACKENDS[@]}"; do out+="${out:+, }{\"address\": \"${BE_IP[$b]}\"}"; done
	echo "[$out]"
}
health() { # TYPE VIA [FIELDS]
	echo "{\"type\": \"$1\", \"via\": \"$2\", \"interval_ms\": $INTERVAL, \"timeout_ms\": $TIMEOUT, \"rise\": $RISE, \"fall\": $FALL${3:+, $3}}"
}
cat >"$WORK/spw.json" <<JSON
{"encap": {"source_v4": "$LB_IP", "next_hop_mac": "$ROUTER_MAC", "mtu": $MTU, "gue_port": $GUE_PORT},
 "maglev": {"table_size": 65537, "seed": "health-e2e"},
 "vips": [
  {"address": "$VIP_A", "port": 80, "protocol": "tcp", "encap": "ipip",
   "health": $(health tcp encap '"fail_open": 0.4'), "backends": $(backends_json)},
  {"address": "$VIP_H", "port": 80, "protocol": "tcp", "encap": "gue",
   "health": $(health http direct '"port": 8080, "path": "/", "expect": 200'), "backends": $(backends_json)},
  {"address": "$VIP_U", "port": 5300, "protocol": "udp", "encap": "gue",
   "health": $(health udp encap '"request": "70696e67", "response": ""'), "backends": $(backends_json)},
  {"address": "$VIP_D", "port": 80, "protocol": "tcp", "encap": "ipip",
   "health": $(health tcp direct), "backends": $(backends_json)}]}
JSON

printf 'leak:rte_eth_rx_queue_setup\n' >"$WORK/lsan.supp"
SAN_ENV=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
	"LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$WORK/lsan.supp")
# shellcheck disable=SC2046
ip netns exec "$NS_L" "${SAN_ENV[@]}" \
	timeout 400 "$SPW" $(spw_eal_mem) --no-pci --file-prefix "$PREFIX" -l 0-1 \
	--log-level 'lib.*:warning' --vdev="net_af_xdp0,iface=lb0,start_queue=0,queue_count=1" \
	-- --config "$WORK/spw.json" --control "$WORK/ctl.sock" --stats-file "$WORK/stats.json" \
	>"$WORK/spillwayd.log" 2>&1 &
SPW_PID=$!
if ! e2e_wait_file "$WORK/ctl.sock" "$SPW_PID" 600; then
	if grep -q "health" "$WORK/spillwayd.log" && ! kill -0 "$SPW_PID" 2>/dev/null; then
		echo "SKIP: this spillwayd refuses the \`health\` configuration field (health checks not built in):"
		grep -m1 health "$WORK/spillwayd.log"
		SPW_PID=
		exit 77
	fi
	echo "FAIL: spillwayd did not open its control socket"
	exit 1
fi

cat >"$WORK/check.json" <<JSON
{"ctl": "$WORK/ctl.sock", "work": "$WORK", "client_ns": "$NS_C", "rise": $RISE, "fall": $FALL,
 "decap_obj": "$WORK/e2e_decap.bpf.o", "vip_u": "$VIP_U",
 "backends": {$(for b in "${BACKENDS[@]}"; do printf '"%s": {"address": "%s", "ns": "spw-he-%s-%s"}, ' "$b" "${BE_IP[$b]}" "$b" "$S"; done | sed 's/, $//')},
 "vips": {
  "encap_tcp": {"name": "tcp via encap", "ref": {"address": "$VIP_A", "port": 80, "protocol": "tcp"}},
  "direct_http": {"name": "http direct", "ref": {"address": "$VIP_H", "port": 80, "protocol": "tcp"}},
  "encap_udp": {"name": "udp via encap", "ref": {"address": "$VIP_U", "port": 5300, "protocol": "udp"}},
  "direct_tcp": {"name": "tcp direct", "ref": {"address": "$VIP_D", "port": 80, "protocol": "tcp"}}}}
JSON
timeout 300 "$PY" "$HERE/health_e2e_check.py" "$WORK/check.json" &
wait $!

kill -TERM "$SPW_PID"
rc=0
wait "$SPW_PID" || rc=$?
SPW_PID=
[ "$rc" -eq 0 ] || { echo "FAIL: spillwayd exited with status $rc"; exit 1; }
if grep -q "runtime error:" "$WORK/spillwayd.log"; then
	echo "FAIL: UndefinedBehaviorSanitizer in spillwayd:"; grep -A3 "runtime error:" "$WORK/spillwayd.log"; exit 1
fi
echo "test_health_e2e: PASS"
