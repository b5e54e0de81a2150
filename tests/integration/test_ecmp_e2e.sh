#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Scale-out end to end (docs/scale-out.md):
#
#   client ──veth── router (BIRD or FRR: BGP from both LBs, kernel ECMP,
#                     │  │   fib_multipath_hash_policy=1)
#                     │  └─veth(1600)── LB2: spillwayd (AF_XDP) + BIRD
#                     └────veth(1600)── LB1: spillwayd (AF_XDP) + BIRD
#                   bridge ── backends b1..b3 (VIP on lo, IPIP decap)
#
# Each spillwayd announces the VIP through its own BIRD (--bird-include,
# --bird-socket); the router installs one multipath route over both. The
# router is BIRD (kernel protocol, merge paths) or FRR (zebra + bgpd,
# maximum-paths), started here in the router namespace with their own
# configuration, PID files and sockets under the work directory. Then
# e2e_ecmp.py holds long-lived TCP connections and opens new ones while LB1
# is drained and stopped (SIGTERM, --drain-wait) and later started again,
# then killed (SIGKILL) and withdrawn by what the packaged unit's
# ExecStopPost runs (spillwayd --bird-withdraw, LB.post.sh); last, LB2 gets
# two SIGTERMs (as timeout relays one) while bird_proxy.py holds its
# withdrawal at BIRD's welcome, and must still withdraw before it exits;
# it measures drain request -> route withdrawn; after every change the
# router daemon's own view (birdc, or vtysh's JSON) must name the same paths
# as the router's kernel table. Topology from e2e_lib.sh.
#
# usage: test_ecmp_e2e.sh SPILLWAYD
# env: E2E_ROUTER=bird (default) or frr: the router's BGP speaker.
#      E2E_KEEP_WORK=1 keeps the work directory (logs, configurations).
# Exit 77 (skip) without root, namespaces, AF_XDP or BIRD 2, and for
# E2E_ROUTER=frr without FRR's zebra, bgpd, vtysh and its user frr.
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_ecmp_e2e.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
# shellcheck source-path=SCRIPTDIR source=e2e_lib.sh
. "$HERE/e2e_lib.sh"
# shellcheck source=../../scripts/lib.sh
. "$HERE/../../scripts/lib.sh"

e2e_require_root_netns
e2e_require_af_xdp "$PY"
command -v bird >/dev/null && command -v birdc >/dev/null ||
	{ echo "SKIP: BIRD 2 is needed (apt-get install bird2; scripts/setup.sh)"; exit 77; }
ROUTER=${E2E_ROUTER:-bird}
FRR_BIN=/usr/lib/frr
case "$ROUTER" in
bird) ;;
frr)
	for f in "$FRR_BIN/zebra" "$FRR_BIN/bgpd" "$(command -v vtysh || echo vtysh)"; do
		[ -x "$f" ] || { echo "SKIP: FRR is needed ($f missing: apt-get install frr; scripts/setup.sh)"; exit 77; }
	done
	# The daemons drop root for the package's user (vty sockets: group frrvty).
	id frr >/dev/null 2>&1 ||
		{ echo "SKIP: FRR's user frr is missing (the frr package creates it)"; exit 77; }
	;;
*) echo "FAIL: E2E_ROUTER=$ROUTER: bird or frr"; exit 1 ;;
esac
command -v ethtool >/dev/null || { echo "FAIL: ethtool is needed"; exit 1; }
[ -x "$SPW" ] || { echo "FAIL: $SPW is not executable"; exit 1; }

S=$$
WORK=$(mktemp -d "/tmp/spw-ecmp.XXXXXX")
PREFIX="spw-ecmp-$S"
NS_R=spw-ec-r-$S
NS_C=spw-ec-c-$S
NS_L=(spw-ec-lb1-$S spw-ec-lb2-$S)
BACKENDS=(b1 b2 b3)
PIDS=()
MTU=1600
GUE_PORT=6080
VIP=10.100.0.1
LB_IP=(10.10.2.2 10.10.4.2)
R_IP=(10.10.2.1 10.10.4.1)
DRAIN_WAIT_MS=${E2E_DRAIN_WAIT_MS:-3000}
declare -A BE_IP
for i in 1 2 3; do BE_IP[b$i]=10.10.3.$((10 + i)); done

# FRR's daemons keep a crash-log folder /var/tmp/frr/DAEMON.PID (removed on
# a clean exit); the ones of daemons this test started go with them, and
# /var/tmp/frr itself if this test created it.
FRR_PIDS=()
FRR_TMP=/var/tmp/frr
FRR_TMP_OURS=
frr_stop() {
	local d pid
	# bgpd before zebra: zebra then removes the routes it installed.
	for ((d = ${#FRR_PIDS[@]} - 1; d >= 0; d--)); do
		pid=${FRR_PIDS[$d]#*:}
		e2e_stop_pid "$pid" TERM
		rm -rf "${FRR_TMP:?}/${FRR_PIDS[$d]%%:*}.$pid"
	done
	FRR_PIDS=()
	[ -z "$FRR_TMP_OURS" ] || rmdir "$FRR_TMP" 2>/dev/null || true
}
# stop_spw LB: its spillwayd stopped without waiting out --drain-wait: SIGTERM
# (routes withdrawn), and once its log says so (at most 3 s), SIGTERM again
# (it stops once BIRD has answered the withdrawal); two at once would be one
# signal. The PID file holds spillwayd's own PID.
withdrawals() { local c; c=$(grep -c "routes withdrawn" "$1" 2>/dev/null) || true; echo "${c:-0}"; }
stop_spw() {
	local pidf=$WORK/$1.spw.pid log=$WORK/$1.spw.log pid n
	[ -f "$pidf" ] || return 0
	pid=$(cat "$pidf")
	n=$(withdrawals "$log")
	if kill -TERM "$pid" 2>/dev/null; then
		for _ in $(seq 30); do
			[ "$(withdrawals "$log")" -gt "$n" ] && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	e2e_stop_pid "$pid" TERM
	rm -f "$pidf"
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	# spillwayd first, each cut short after its withdrawal.
	stop_spw lb1
	stop_spw lb2
	for p in "${PIDS[@]}"; do e2e_stop_pid "$p" TERM; done
	for f in "$WORK"/*.bird.pid; do [ -f "$f" ] && e2e_stop_pid "$(cat "$f")" TERM; done
	frr_stop
	if [ "$rc" -ne 0 ]; then
		for f in "$WORK"/frr/*.log; do
			e2e_tail_log "FRR $(basename "$f")" 15 "$f"
		done
		for l in lb1 lb2; do
			e2e_tail_log "$l spillwayd" 15 "$WORK/$l.spw.log"
		done
	fi
	e2e_teardown "$WORK" "${E2E_KEEP_WORK:-}" "/var/run/dpdk/$PREFIX"-*
	exit "$rc"
}
e2e_traps cleanup

if e2e_kernel_decap_ok; then
	DECAP=kernel
else
	e2e_build_decap "$WORK/e2e_decap.bpf.o" "$GUE_PORT"
	DECAP="$WORK/e2e_decap.bpf.o"
fi

# ---- topology
e2e_router_add "$NS_R"
ip netns exec "$NS_R" sysctl -q -w net.ipv4.fib_multipath_hash_policy=1
e2e_client_add "$NS_C" c0 10.10.1.2/24 "$NS_R" r-c0 10.10.1.1/24
for i in 0 1; do
	e2e_lb_add "${NS_L[$i]}" lb0 "${LB_IP[$i]}/24" "$NS_R" "r-lb$((i + 1))" "${R_IP[$i]}/24" "$MTU"
done
e2e_router_bridge "$NS_R" br0 10.10.3.1/24 "$MTU"
for b in "${BACKENDS[@]}"; do
	e2e_backend_add "spw-ec-$b-$S" eth0 "${BE_IP[$b]}/24" "$NS_R" br0 "r-$b" 10.10.3.1 \
		"$MTU" "$GUE_PORT" "$DECAP" "$VIP"
done

# ---- the router's BGP speaker, then one BIRD per LB (all started in their
# namespace, in the foreground: the PID is ours)
# BIRD: the kernel protocol merges the equal BGP routes into one multipath route.
[ "$ROUTER" = bird ] &&
	e2e_bird_router_conf "$WORK/router.bird.conf" "${R_IP[0]}" "${LB_IP[0]}" "${R_IP[1]}" "${LB_IP[1]}"
# FRR: zebra (kernel routes, one nexthop group per multipath route) and bgpd
# with the same timers (keepalive 2, hold 6, connect retry 2), importing
# everything from both LBs and exporting nothing (eBGP needs a policy in each
# direction), up to 2 equal paths per prefix.
FRR="$WORK/frr"
frr_neighbors() { # the lines per neighbor: under 'router bgp' (no argument) or the family (af)
	local ip
	for ip in "${LB_IP[@]}"; do
		if [ "${1:-}" = af ]; then
			printf '  neighbor %s activate\n  neighbor %s route-map SPW-IMPORT in\n' "$ip" "$ip"
			printf '  neighbor %s route-map SPW-EXPORT out\n' "$ip"
		else
			printf ' neighbor %s remote-as 65001\n neighbor %s timers 2 6\n' "$ip" "$ip"
			printf ' neighbor %s timers connect 2\n' "$ip"
		fi
	done
}
if [ "$ROUTER" = frr ]; then
	# The daemons run as user frr: it reads the configuration and writes its
	# sockets and PID files here.
	chmod 0711 "$WORK"
	install -d -o frr -g frr -m 0750 "$FRR"
	printf 'hostname router\n' >"$FRR/zebra.conf"
	cat >"$FRR/bgpd.conf" <<EOF
frr defaults traditional
hostname router
route-map SPW-IMPORT permit 10
route-map SPW-EXPORT deny 10
router bgp 65000
 bgp router-id ${R_IP[0]}
$(frr_neighbors)
 address-family ipv4 unicast
  maximum-paths 2
$(frr_neighbors af)
 exit-address-family
EOF
	chown frr:frr "$FRR/zebra.conf" "$FRR/bgpd.conf"
fi
for i in 0 1; do
	e2e_bird_lb_conf "$WORK" "lb$((i + 1))" "${LB_IP[$i]}" "${R_IP[$i]}"
done
# start_frr DAEMON READY: one FRR daemon in the router namespace, on this
# test's zebra API socket and vty folder (vtysh --vty_socket "$FRR"), no vty
# TCP port; waits for the file READY.
start_frr() {
	ip netns exec "$NS_R" "$FRR_BIN/$1" -f "$FRR/$1.conf" -i "$FRR/$1.pid" \
		--vty_socket "$FRR" -z "$FRR/zserv.api" -P 0 --log "file:$FRR/$1.log" \
		>"$FRR/$1.out" 2>&1 &
	FRR_PIDS+=("$1:$!")
	e2e_wait_file "$2" "$!" || { echo "FAIL: FRR $1 did not start"; cat "$FRR/$1.out"; exit 1; }
}
if [ "$ROUTER" = frr ]; then
	[ -d "$FRR_TMP" ] || FRR_TMP_OURS=1
	# bgpd's own check of its configuration (-C: read it and exit).
	"$FRR_BIN/bgpd" -C -f "$FRR/bgpd.conf" --vty_socket "$FRR" -z "$FRR/zserv.api" \
		>"$FRR/bgpd.check" 2>&1 &
	check=$!
	wait "$check" || { echo "FAIL: bgpd rejects its configuration"; cat "$FRR/bgpd.check"; exit 1; }
	rm -rf "${FRR_TMP:?}/bgpd.$check"
	start_frr zebra "$FRR/zserv.api"
	start_frr bgpd "$FRR/bgpd.vty"
else
	e2e_start_bird "$WORK" router "$NS_R"
fi
e2e_start_bird "$WORK" lb1 "${NS_L[0]}"
e2e_start_bird "$WORK" lb2 "${NS_L[1]}"
# Each spillwayd reaches its BIRD through bird_proxy.py (LB.proxy.ctl), which
# relays every line and holds BIRD's welcome while LB.hold exists; its
# events go to LB.proxy.events.
for l in lb1 lb2; do
	"$PY" "$HERE/bird_proxy.py" "$WORK/$l.proxy.ctl" "$WORK/$l.bird.ctl" \
		"$WORK/$l.proxy.events" "$WORK/$l.hold" >"$WORK/$l.proxy.log" 2>&1 &
	PIDS+=($!)
	e2e_wait_file "$WORK/$l.proxy.ctl" "$!" || { echo "FAIL: bird_proxy.py $l did not start"; exit 1; }
done

# ---- backends' servers
e2e_start_servers "$WORK" "$PY" "$HERE/e2e_server.py" "spw-ec-%s-$S" "${BACKENDS[@]}"

# ---- spillwayd in each LB: same membership and seed, its own source and next hop
for i in 0 1; do
	l=lb$((i + 1))
	mac=$(e2e_mac "$NS_R" "r-$l")
	cat >"$WORK/$l.json" <<JSON
{"encap": {"source_v4": "${LB_IP[$i]}", "next_hop_mac": "$mac", "mtu": $MTU},
 "maglev": {"table_size": 65537, "seed": "ecmp-e2e"},
 "vips": [{"address": "$VIP", "port": 80, "protocol": "tcp", "encap": "ipip",
           "backends": [{"address": "${BE_IP[b1]}"}, {"address": "${BE_IP[b2]}"},
                        {"address": "${BE_IP[b3]}", "weight": 2}]}]}
JSON
	# The start script, also what e2e_ecmp.py runs to bring lb1 back. The
	# PID file holds spillwayd's own PID: the test's signals reach it once.
	cat >"$WORK/$l.start.sh" <<EOF
. "$HERE/e2e_lib.sh"
rm -f "$WORK/$l.ctl"
e2e_spw_launch "${NS_L[$i]}" "$WORK/$l.spw.pid" "$WORK/$l.spw.log" 600 \\
	"$SPW" $(e2e_lb_eal_mem "$i") --no-pci \\
	--file-prefix "$PREFIX-$l" -l 0-1 --log-level 'lib.*:warning' \\
	--vdev=net_af_xdp0,iface=lb0,start_queue=0,queue_count=1 \\
	-- --config "$WORK/$l.json" --control "$WORK/$l.ctl" \\
	--bird-include "$WORK/$l.vips.conf" --bird-socket "$WORK/$l.proxy.ctl" \\
	--drain-wait $DRAIN_WAIT_MS
EOF
	# What the packaged unit's ExecStopPost runs after a stop (crashes
	# included): spillwayd on the same command line with --bird-withdraw.
	cat >"$WORK/$l.post.sh" <<EOF
ip netns exec "${NS_L[$i]}" "$SPW" $(e2e_lb_eal_mem "$i") --no-pci \\
	--file-prefix "$PREFIX-$l" -l 0-1 --log-level 'lib.*:warning' \\
	--vdev=net_af_xdp0,iface=lb0,start_queue=0,queue_count=1 \\
	-- --config "$WORK/$l.json" --control "$WORK/$l.ctl" \\
	--bird-include "$WORK/$l.vips.conf" --bird-socket "$WORK/$l.proxy.ctl" \\
	--drain-wait $DRAIN_WAIT_MS --bird-withdraw
EOF
	bash "$WORK/$l.start.sh"
done
# Both started, then each waited for.
for l in lb1 lb2; do
	e2e_wait_file "$WORK/$l.ctl" "$(cat "$WORK/$l.spw.pid")" 600 ||
		{ echo "FAIL: spillwayd $l did not open its control socket"; exit 1; }
done

cat >"$WORK/ecmp.json" <<JSON
{"vip": "$VIP", "port": 80, "router_ns": "$NS_R", "router": "$ROUTER",
 "router_bird": "$WORK/router.bird.ctl", "router_vty": "$FRR",
 "n_long": ${E2E_LONG:-64}, "drain_wait_ms": $DRAIN_WAIT_MS, "summary": "$WORK/summary.json",
 "lbs": [{"name": "lb1", "ip": "${LB_IP[0]}", "ctl": "$WORK/lb1.ctl", "pid_file": "$WORK/lb1.spw.pid",
          "start": "$WORK/lb1.start.sh", "post": "$WORK/lb1.post.sh",
          "proxy_events": "$WORK/lb1.proxy.events", "hold_file": "$WORK/lb1.hold"},
         {"name": "lb2", "ip": "${LB_IP[1]}", "ctl": "$WORK/lb2.ctl", "pid_file": "$WORK/lb2.spw.pid",
          "start": "$WORK/lb2.start.sh", "post": "$WORK/lb2.post.sh",
          "proxy_events": "$WORK/lb2.proxy.events", "hold_file": "$WORK/lb2.hold"}]}
JSON
rc=0
ip netns exec "$NS_C" timeout 400 "$PY" "$HERE/e2e_ecmp.py" "$WORK/ecmp.json" &
PIDS+=($!)
wait $! || rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: e2e_ecmp.py (status $rc)"; exit 1; }
echo "PASS: ECMP over two spillway instances behind a $ROUTER router; summary:"
cat "$WORK/summary.json"
