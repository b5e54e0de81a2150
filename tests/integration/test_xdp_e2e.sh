#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# End to end through direct server return, over AF_XDP (docs/xdp.md).
#
#   client ──veth── router ──veth(1600)── LB: spillwayd, net_af_xdp on lb0,
#                     │                   XDP steering: VIPs to spillwayd,
#                   bridge                the rest (ARP, ping, its own TCP
#                   ╱ │ ╲                 service) to the kernel
#        backends b1..b5 (veth 1600): VIPs on lo, ipip0 (external) + FOU/GUE
#
# The router sends the VIP prefix to the LB; spillwayd encapsulates (IPIP or
# GUE) and sends back out of lb0 (one-armed) to the router's MAC, the router
# forwards to the backend, the backend decapsulates and answers the client
# directly. Real TCP (short and long-lived connections, membership changes
# through the control socket) and UDP; checks in e2e_client.py.
#
# usage: test_xdp_e2e.sh SPILLWAYD
# E2E_PMD=af_packet runs the same topology on net_af_packet (no XDP);
# E2E_DECAP=kernel|xdp picks the backends' decapsulation (default: the kernel's
# when it has IPIP and FOU); E2E_KEEP_WORK=1 keeps the work directory (logs).
# Exit 77 (skip) only without root, network namespaces or AF_XDP.
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_xdp_e2e.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
PMD=${E2E_PMD:-af_xdp}
# shellcheck source-path=SCRIPTDIR source=e2e_lib.sh
. "$HERE/e2e_lib.sh"
# shellcheck source=../../scripts/lib.sh
. "$HERE/../../scripts/lib.sh"

e2e_require_root_netns
[ "$PMD" = af_xdp ] && e2e_require_af_xdp "$PY"
command -v ethtool >/dev/null || { echo "FAIL: ethtool is needed (scripts/setup.sh installs it)"; exit 1; }
[ -x "$SPW" ] || { echo "FAIL: $SPW is not executable"; exit 1; }

S=$$
WORK=$(mktemp -d "/tmp/spw-xe2e.XXXXXX")
PREFIX="spw-xe2e-$S"
NS_R=spw-xe-r-$S
NS_C=spw-xe-c-$S
NS_L=spw-xe-lb-$S
BACKENDS=(b1 b2 b3 b4 b5)
SPW_PID=
PIDS=()
T0=$(date +%s)

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	e2e_stop_pid "$SPW_PID" TERM
	for p in "${PIDS[@]}"; do e2e_stop_pid "$p" TERM; done
	[ "$rc" -eq 0 ] || e2e_tail_log spillwayd.log 30 "$WORK/spillwayd.log"
	e2e_teardown "$WORK" "${E2E_KEEP_WORK:-}" "/var/run/dpdk/$PREFIX"
	exit "$rc"
}
e2e_traps cleanup

MTU=1600                # LB<->router and router<->backends: room for IPIP/GUE
GUE_PORT=6080
LB_IP=10.10.2.2
ROUTER_LB_IP=10.10.2.1
VIP_A=10.100.0.1        # TCP 80, IPIP, weights 1,1,2
VIP_B=10.100.0.2        # TCP 80, GUE,  weights 1,1,2
VIP_U=10.100.0.3        # UDP 5300, GUE
HOST_PORT=7000          # the LB namespace's own TCP service
declare -A BE_IP
for i in 1 2 3 4 5; do BE_IP[b$i]=10.10.3.$((10 + i)); done

# ---- backend decapsulation: the kernel's IPIP + FOU/GUE when it has them,
# else the XDP stand-in (E2E_DECAP=kernel|xdp forces one).
DECAP_MODE=${E2E_DECAP:-auto}
if [ "$DECAP_MODE" = auto ]; then
	if e2e_kernel_decap_ok; then DECAP_MODE=kernel; else DECAP_MODE=xdp; fi
elif [ "$DECAP_MODE" = kernel ] && ! e2e_kernel_decap_ok; then
	echo "SKIP: this kernel has no IPIP/FOU (CONFIG_NET_IPIP, CONFIG_NET_FOU): kernel decapsulation not exercised"
	exit 77
fi
if [ "$DECAP_MODE" = xdp ]; then
	echo "backends decapsulate with XDP (tests/integration/e2e_decap.bpf.c):" \
		"this kernel has no IPIP/FOU (CONFIG_NET_IPIP, CONFIG_NET_FOU)"
	e2e_build_decap "$WORK/e2e_decap.bpf.o" "$GUE_PORT"
	DECAP="$WORK/e2e_decap.bpf.o"
else
	echo "backends decapsulate with the kernel: ipip0 (external) and ip fou add port $GUE_PORT gue"
	DECAP=kernel
fi

# ---- topology
e2e_router_add "$NS_R"
e2e_client_add "$NS_C" c0 10.10.1.2/24 "$NS_R" r-c0 10.10.1.1/24
e2e_lb_add "$NS_L" lb0 "$LB_IP/24" "$NS_R" r-lb0 "$ROUTER_LB_IP/24" "$MTU"
e2e_router_bridge "$NS_R" br0 10.10.3.1/24 "$MTU"
for b in "${BACKENDS[@]}"; do
	e2e_backend_add "spw-xe-$b-$S" eth0 "${BE_IP[$b]}/24" "$NS_R" br0 "r-$b" 10.10.3.1 \
		"$MTU" "$GUE_PORT" "$DECAP" "$VIP_A" "$VIP_B" "$VIP_U"
done
e2e_router_route "$NS_R" 10.100.0.0/24 "$LB_IP"
ROUTER_MAC=$(e2e_mac "$NS_R" r-lb0)
[ -n "$ROUTER_MAC" ] || { echo "FAIL: no MAC on r-lb0"; exit 1; }

# ---- servers: every backend serves TCP 80 and UDP 5300 on every VIP (a
# connection that reaches the wrong backend is seen by the name it gets).
start_in() { # NS NAME ARGS...: start a python server in NS, wait for it
	local ns=$1 name=$2
	shift 2
	ip netns exec "$ns" "$PY" "$HERE/e2e_server.py" "$name" "$WORK/$name.ready" "$@" \
		>"$WORK/$name.out" 2>&1 &
	PIDS+=($!)
	e2e_wait_file "$WORK/$name.ready" "$!" || { echo "FAIL: server $name did not start"; cat "$WORK/$name.out"; exit 1; }
}
for b in "${BACKENDS[@]}"; do
	start_in "spw-xe-$b-$S" "$b" --tcp 0.0.0.0:80 --udp "$VIP_U:5300"
done
start_in "$NS_L" lb-host --tcp "$LB_IP:$HOST_PORT"

# ---- spillwayd
cat >"$WORK/spw.json" <<JSON
{"encap": {"source_v4": "$LB_IP", "next_hop_mac": "$ROUTER_MAC", "mtu": $MTU,
           "gue_port": $GUE_PORT},
 "maglev": {"table_size": 65537, "seed": "xdp-e2e"},
 "vips": [
  {"address": "$VIP_A", "port": 80, "protocol": "tcp", "encap": "ipip",
   "backends": [{"address": "${BE_IP[b1]}", "weight": 1}, {"address": "${BE_IP[b2]}", "weight": 1},
                {"address": "${BE_IP[b3]}", "weight": 2}]},
  {"address": "$VIP_B", "port": 80, "protocol": "tcp", "encap": "gue",
   "backends": [{"address": "${BE_IP[b2]}", "weight": 1}, {"address": "${BE_IP[b3]}", "weight": 1},
                {"address": "${BE_IP[b4]}", "weight": 2}]},
  {"address": "$VIP_U", "port": 5300, "protocol": "udp", "encap": "gue",
   "backends": [{"address": "${BE_IP[b1]}"}, {"address": "${BE_IP[b2]}"},
                {"address": "${BE_IP[b3]}"}, {"address": "${BE_IP[b4]}"}]}]}
JSON

if [ "$PMD" = af_xdp ]; then
	VDEV="net_af_xdp0,iface=lb0,start_queue=0,queue_count=1"
else
	VDEV="net_af_packet0,iface=lb0"
fi
# Under LeakSanitizer: DPDK 22.11's af_xdp PMD never frees, at
# rte_eth_dev_close(), the umem it made with libxdp's xsk_umem__create() nor
# the bpf_object it opened for xdp_prog= (21 allocations, ~15 KiB, all under
# rte_eth_rx_queue_setup(); seen with --xdp-prog none too, minus the object).
# The slow unwinder is needed to see that frame through libbpf, which has no
# frame pointers. spillwayd's own allocations are still checked.
printf 'leak:rte_eth_rx_queue_setup\n' >"$WORK/lsan.supp"
SAN_ENV=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
	"LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$WORK/lsan.supp")
# spillwayd adds xdp_prog=<its steering object> to the af_xdp vdev and finds
# the program's maps through lb0 (no bpffs pins).
# shellcheck disable=SC2046
ip netns exec "$NS_L" "${SAN_ENV[@]}" \
	timeout 300 "$SPW" $(spw_eal_mem) --no-pci --file-prefix "$PREFIX" -l 0-1 \
	--log-level 'lib.*:warning' --vdev="$VDEV" \
	-- --config "$WORK/spw.json" --control "$WORK/ctl.sock" --stats-file "$WORK/stats.json" \
	>"$WORK/spillwayd.log" 2>&1 &
SPW_PID=$!
e2e_wait_file "$WORK/ctl.sock" "$SPW_PID" 600 ||
	{ echo "FAIL: spillwayd did not open its control socket"; exit 1; }

# ---- clients
names_json() { # NAME=WEIGHT ... -> {"NAME": WEIGHT, ...}
	local out="" kv
	for kv in "$@"; do out+="${out:+, }\"${kv%=*}\": ${kv#*=}"; done
	echo "{$out}"
}
cat >"$WORK/client.json" <<JSON
{"ctl": "$WORK/ctl.sock", "mode": "$PMD", "summary": "$WORK/summary.json",
 "host": {"address": "$LB_IP", "port": $HOST_PORT, "name": "lb-host"},
 "backends": {$(for b in "${BACKENDS[@]}"; do printf '"%s": "%s", ' "$b" "${BE_IP[$b]}"; done | sed 's/, $//')},
 "spare": "b5",
 "vips": [
  {"address": "$VIP_A", "port": 80, "protocol": "tcp", "encap": "ipip",
   "backends": $(names_json b1=1 b2=1 b3=2)},
  {"address": "$VIP_B", "port": 80, "protocol": "tcp", "encap": "gue",
   "backends": $(names_json b2=1 b3=1 b4=2)},
  {"address": "$VIP_U", "port": 5300, "protocol": "udp", "encap": "gue",
   "backends": $(names_json b1=1 b2=1 b3=1 b4=1)}],
 "short": ${E2E_SHORT:-1000}, "long": ${E2E_LONG:-48}, "after_event": ${E2E_AFTER:-100},
 "udp_flows": ${E2E_UDP_FLOWS:-200}, "udp_per_flow": 3}
JSON
# In the background and waited for, so that a signal to this script runs the
# cleanup at once (bash defers traps while a foreground child runs).
ip netns exec "$NS_C" timeout 240 "$PY" "$HERE/e2e_client.py" "$WORK/client.json" &
PIDS+=($!)
wait $!

# ---- stop spillwayd and check its exit counters
kill -TERM "$SPW_PID"
rc=0
wait "$SPW_PID" || rc=$?
SPW_PID=
[ "$rc" -eq 0 ] || { echo "FAIL: spillwayd exited with status $rc"; exit 1; }
if grep -q "runtime error:" "$WORK/spillwayd.log"; then
	echo "FAIL: UndefinedBehaviorSanitizer in spillwayd:"; grep -A3 "runtime error:" "$WORK/spillwayd.log"; exit 1
fi
"$PY" - "$WORK/stats.json" "$PMD" >"$WORK/forwarded" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
t = s["totals"]
assert t["rx_packets"] == t["forwarded"] + t["icmp_sent"] + t["exception"] + t["dropped"], t
drops = {k: n for k, n in t["drops"].items() if n}
if sys.argv[2] != "af_xdp":
    drops.pop("no_vip", None)
assert not drops, "spillwayd dropped: %s" % drops
print(t["forwarded"])
print("spillwayd exit counters: rx %d forwarded %d dropped %d" %
      (t["rx_packets"], t["forwarded"], t["dropped"]), file=sys.stderr)
EOF
# ---- the backends: what they decapsulated (nothing malformed; with the XDP
# decapsulator, exactly what spillwayd forwarded), and no TCP errors seen by
# their servers
DECAPPED=0
for b in "${BACKENDS[@]}"; do
	if [ "$DECAP_MODE" = xdp ]; then
		c=$(e2e_decap_counters "spw-xe-$b-$S" eth0)
	else
		c=$(ip -n "spw-xe-$b-$S" -s -j link show ipip0 | "$PY" -c \
			'import json,sys; s=json.load(sys.stdin)[0]["stats64"]["rx"]; print(json.dumps({"ipip_rx": s["packets"], "rx_errors": s["errors"]}))')
	fi
	echo "backend $b decapsulated: $c"
	DECAPPED=$(echo "$c" | "$PY" -c '
import json, sys
c = json.load(sys.stdin)
bad = {k: v for k, v in c.items() if (k.startswith("bad") or k == "rx_errors") and v}
assert not bad, "malformed encapsulation: %s" % bad
print(int(sys.argv[1]) + c.get("ipip", 0) + c.get("gue", 0))' "$DECAPPED")
done
if [ "$DECAP_MODE" = xdp ] && [ "$DECAPPED" -ne "$(cat "$WORK/forwarded")" ]; then
	echo "FAIL: spillwayd forwarded $(cat "$WORK/forwarded") packets, the backends decapsulated $DECAPPED"
	exit 1
fi
for i in "${!PIDS[@]}"; do
	e2e_stop_pid "${PIDS[$i]}" TERM
done
PIDS=()
for b in "${BACKENDS[@]}" lb-host; do
	"$PY" -c '
import json, sys
s = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert s["tcp_errors"] == 0, "server %s: %s" % (sys.argv[2], s)
print("server %(name)s: %(tcp_conns)d connections, %(tcp_lines)d lines, %(udp)d datagrams" % s)
' "$WORK/$b.out" "$b"
done
echo "test_xdp_e2e ($PMD, decap $DECAP_MODE): PASS in $(( $(date +%s) - T0 )) s"
