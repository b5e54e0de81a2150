# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Topology building blocks for the namespace end-to-end tests (sourced, bash).
#
#   client ns ──veth── router ns ──veth── LB ns (spillwayd on its veth)
#                         │
#                       bridge ──veth── backend ns (VIPs on lo, IPIP + FOU/GUE decap)
#
# Every function takes the names it works on as arguments (pick names with a
# unique suffix, e.g. $$), creates what it is asked for and records every
# namespace it makes in E2E_NAMESPACES, so that one e2e_cleanup (from an EXIT
# trap) removes everything, also after a failure half-way. Deleting a
# namespace deletes its veths, bridges and tunnels and ends its sockets; the
# processes a test starts inside are the test's to stop (by PID) first.
# Functions exit non-zero on the first failing command (callers run set -e).

E2E_NAMESPACES=()

# e2e_require_root_netns: exit 77 (meson skip) unless root with network
# namespaces and veth.
e2e_require_root_netns() {
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
	local probe="e2e-probe-$$"
	if ! ip netns add "$probe" 2>/dev/null; then
		echo "SKIP: the kernel refuses network namespaces"; exit 77
	fi
	if ! ip -n "$probe" link add e2e-p0 type veth peer name e2e-p1 2>/dev/null; then
		ip netns del "$probe"
		echo "SKIP: no veth in this kernel"; exit 77
	fi
	ip netns del "$probe"
}

# e2e_require_af_xdp PYTHON: exit 77 unless the kernel has AF_XDP sockets.
e2e_require_af_xdp() {
	"$1" -c 'import socket; socket.socket(44, socket.SOCK_RAW).close()' 2>/dev/null ||
		{ echo "SKIP: the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)"; exit 77; }
}

# e2e_ns_add NS: a fresh namespace (a stale one of that name is removed), lo
# up, IPv6 off, rp_filter off for all and for devices created later.
e2e_ns_add() {
	local ns=$1
	ip netns del "$ns" 2>/dev/null || true
	ip netns add "$ns"
	E2E_NAMESPACES+=("$ns")
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -q -w net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.default.rp_filter=0
	# No router solicitations or DAD chatter (absent when IPv6 is compiled out).
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
}

# e2e_offloads_off NS DEV: no TX checksum offload, TSO, GSO, GRO. A frame
# copied into AF_XDP (or sent by a PMD) carries whatever checksum was in the
# buffer, and CHECKSUM_PARTIAL leaves only the pseudo-header sum there.
e2e_offloads_off() {
	ip netns exec "$1" ethtool -K "$2" tx off tso off gso off gro off >/dev/null 2>&1 ||
		ip netns exec "$1" ethtool -K "$2" tx off tso off gso off >/dev/null
}

# e2e_veth NS_A DEV_A NS_B DEV_B MTU: a veth pair between two namespaces,
# both ends up with that MTU and checksum/segmentation offloads off.
e2e_veth() {
	local nsa=$1 deva=$2 nsb=$3 devb=$4 mtu=$5
	ip link add "$deva" mtu "$mtu" netns "$nsa" type veth peer name "$devb" mtu "$mtu" netns "$nsb"
	e2e_offloads_off "$nsa" "$deva"
	e2e_offloads_off "$nsb" "$devb"
	ip netns exec "$nsa" sysctl -q -w "net.ipv4.conf.$deva.rp_filter=0"
	ip netns exec "$nsb" sysctl -q -w "net.ipv4.conf.$devb.rp_filter=0"
	ip -n "$nsa" link set "$deva" up
	ip -n "$nsb" link set "$devb" up
}

# e2e_mac NS DEV: the device's MAC address.
e2e_mac() {
	ip -n "$1" -o link show dev "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

# e2e_router_add NS: a router namespace (IPv4 forwarding on, rp_filter off).
e2e_router_add() {
	e2e_ns_add "$1"
	ip netns exec "$1" sysctl -q -w net.ipv4.ip_forward=1
}

# e2e_router_bridge ROUTER_NS BR CIDR MTU: a bridge in the router namespace
# holding the router's address on a shared segment (the backends' LAN).
e2e_router_bridge() {
	local ns=$1 br=$2 cidr=$3 mtu=$4
	ip -n "$ns" link add "$br" type bridge
	ip -n "$ns" link set "$br" mtu "$mtu"
	ip -n "$ns" addr add "$cidr" dev "$br"
	ip netns exec "$ns" sysctl -q -w "net.ipv4.conf.$br.rp_filter=0"
	ip -n "$ns" link set "$br" up
}

# e2e_router_route ROUTER_NS PREFIX VIA: e.g. the VIP prefix via a balancer
# (called once per balancer with the same prefix, it becomes ECMP: use
# e2e_router_ecmp for that).
e2e_router_route() {
	ip -n "$1" route replace "$2" via "$3"
}

# e2e_router_ecmp ROUTER_NS PREFIX VIA...: one multipath route over several
# next hops, hashed on the 5-tuple (fib_multipath_hash_policy 1).
e2e_router_ecmp() {
	local ns=$1 prefix=$2 nh=()
	shift 2
	for via in "$@"; do nh+=(nexthop via "$via"); done
	ip netns exec "$ns" sysctl -q -w net.ipv4.fib_multipath_hash_policy=1
	ip -n "$ns" route replace "$prefix" "${nh[@]}"
}

# e2e_host_add NS DEV CIDR ROUTER_NS RDEV RCIDR MTU: a namespace with one veth
# to the router (router side RDEV with RCIDR, its own point-to-point subnet)
# and its default route via the router. For clients and balancers.
e2e_host_add() {
	local ns=$1 dev=$2 cidr=$3 rns=$4 rdev=$5 rcidr=$6 mtu=$7
	e2e_ns_add "$ns"
	e2e_veth "$ns" "$dev" "$rns" "$rdev" "$mtu"
	ip -n "$ns" addr add "$cidr" dev "$dev"
	ip -n "$rns" addr add "$rcidr" dev "$rdev"
	ip -n "$ns" route add default via "${rcidr%/*}"
}

# e2e_client_add NS DEV CIDR ROUTER_NS RDEV RCIDR: a client (MTU 1500).
e2e_client_add() {
	e2e_host_add "$1" "$2" "$3" "$4" "$5" "$6" 1500
}

# e2e_lb_add NS DEV CIDR ROUTER_NS RDEV RCIDR MTU: a balancer namespace. The
# MTU must leave room for the encapsulation (IPIP 20, GUE 28 bytes) above the
# clients' 1500, and encap.mtu must equal it.
e2e_lb_add() {
	e2e_host_add "$@"
}

# e2e_kernel_decap_ok: true if this kernel can make IPIP and FOU/GUE devices
# (CONFIG_NET_IPIP, CONFIG_NET_FOU, built in or as modules that load).
e2e_kernel_decap_ok() {
	local probe="e2e-probe-$$" ok=0
	ip netns add "$probe" 2>/dev/null || return 1
	ip -n "$probe" link add name ipip0 type ipip external 2>/dev/null &&
		ip netns exec "$probe" ip fou add port 6080 gue 2>/dev/null && ok=1
	ip netns del "$probe"
	[ "$ok" = 1 ]
}

# e2e_build_decap OUT GUE_PORT: compile e2e_decap.bpf.c (the XDP stand-in for
# the kernel's IPIP and FOU/GUE receive paths) into OUT.
e2e_build_decap() {
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	clang -O2 -g -Wall -Werror -target bpf -I"/usr/include/$(cc -print-multiarch)" \
		-DGUE_PORT="$2" -c "$here/e2e_decap.bpf.c" -o "$1"
}

# e2e_backend_add NS DEV CIDR ROUTER_NS BR RDEV GW MTU GUE_PORT DECAP VIP...:
# a backend on the router's bridge BR (router side of its veth: RDEV, the
# router's address there: GW), each VIP (an address, no prefix) on lo, so
# the backend answers from it straight to the client (DSR); rp_filter off
# (the decapsulated packet's source, the client, is not routed via the
# tunnel). DECAP is how it decapsulates:
#   kernel  the Linux way: ipip0 (type ipip external: any local, any remote)
#           for IPIP, and a FOU socket in GUE mode on UDP GUE_PORT, whose
#           variant-1 payload (the inner IP header right after UDP) the
#           kernel hands to ipip0 as IPIP;
#   FILE    an XDP object built by e2e_build_decap, attached to DEV, for
#           kernels without IPIP/FOU (checks and strips the same headers).
e2e_backend_add() {
	local ns=$1 dev=$2 cidr=$3 rns=$4 br=$5 rdev=$6 gw=$7 mtu=$8 gue=$9 decap=${10}
	shift 10
	e2e_ns_add "$ns"
	e2e_veth "$ns" "$dev" "$rns" "$rdev" "$mtu"
	ip -n "$rns" link set "$rdev" master "$br"
	ip -n "$ns" addr add "$cidr" dev "$dev"
	ip -n "$ns" route add default via "$gw"
	if [ "$decap" = kernel ]; then
		ip -n "$ns" link add name ipip0 type ipip external
		ip netns exec "$ns" sysctl -q -w net.ipv4.conf.ipip0.rp_filter=0
		ip -n "$ns" link set ipip0 up
		ip netns exec "$ns" ip fou add port "$gue" gue
	else
		ip -n "$ns" link set "$dev" xdpdrv obj "$decap" sec xdp
	fi
	for vip in "$@"; do
		ip -n "$ns" addr add "$vip/32" dev lo
	done
	ip netns exec "$ns" sysctl -q -w net.ipv4.conf.lo.rp_filter=0
}

# e2e_decap_counters NS DEV: the XDP decapsulator's counters on DEV as JSON
# {"ipip", "gue", "bad_csum", "bad_len", "bad_inner", "bad_frag"}.
e2e_decap_counters() {
	local prog map
	prog=$(ip -n "$1" -j link show dev "$2" | /usr/bin/python3 -c \
		'import json,sys; print(json.load(sys.stdin)[0]["xdp"]["prog"]["id"])')
	map=$(bpftool -j prog show id "$prog" | /usr/bin/python3 -c \
		'import json,sys; print(json.load(sys.stdin)["map_ids"][0])')
	bpftool -j map dump id "$map" | /usr/bin/python3 -c '
import json, sys
names = ["ipip", "gue", "bad_csum", "bad_len", "bad_inner", "bad_frag"]
out = {}
for e in json.load(sys.stdin):
    k, v = e.get("key"), e.get("value")
    if isinstance(k, list):
        k = int.from_bytes(bytes(int(x, 16) for x in k), "little")
    if isinstance(v, list):
        v = int.from_bytes(bytes(int(x, 16) for x in v), "little")
    out[names[k]] = v
print(json.dumps(out))'
}

# e2e_wait_file PATH PID [TENTHS]: wait until PATH exists while PID lives.
e2e_wait_file() {
	local path=$1 pid=$2 n=${3:-300}
	for _ in $(seq "$n"); do
		[ -e "$path" ] && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	[ -e "$path" ]
}

# e2e_spw_launch NS PIDFILE LOG SECONDS COMMAND...: COMMAND (spillwayd) in
# namespace NS, in the background, its output appended to LOG, bounded by
# timeout --foreground SECONDS, and its own PID (not timeout's) in PIDFILE,
# waited for (10 s at most). Signal that PID: without --foreground, timeout
# passes a SIGTERM it receives to its child and again to its process group,
# and spillwayd reads two (docs/scale-out.md).
e2e_spw_launch() {
	local ns=$1 pidf=$2 log=$3 secs=$4 tpid
	shift 4
	rm -f "$pidf"
	ip netns exec "$ns" timeout --foreground "$secs" \
		bash -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidf" "$@" \
		>>"$log" 2>&1 &
	tpid=$!
	e2e_wait_file "$pidf" "$tpid" 100
}

# e2e_stop_pid PID [SIGNAL]: stop one process the test started, then reap it.
e2e_stop_pid() {
	local pid=$1 sig=${2:-TERM}
	[ -n "$pid" ] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill "-$sig" "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null || true
}

# e2e_traps FUNC: run FUNC on exit; INT and TERM exit 130 and 143 (so FUNC
# runs once, from the EXIT trap, with that status in $?).
e2e_traps() {
	# shellcheck disable=SC2064
	trap "$1" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# e2e_tail_log TITLE LINES FILE: print the last LINES lines of FILE under a
# "---- TITLE (last LINES lines)" heading, if FILE exists.
e2e_tail_log() {
	[ -f "$3" ] || return 0
	echo "---- $1 (last $2 lines)"
	tail "-$2" "$3"
}

# e2e_teardown WORK KEEP [DPDK_DIR...]: once the test's processes are
# stopped: e2e_cleanup, remove the DPDK runtime folders named, then remove
# WORK, or keep it and say so when KEEP is not empty.
e2e_teardown() {
	local work=$1 keep=$2
	shift 2
	e2e_cleanup
	[ "$#" -eq 0 ] || rm -rf "$@"
	if [ -n "$keep" ]; then echo "kept $work"; else rm -rf "$work"; fi
}

# e2e_cleanup: delete every namespace recorded, newest first (their devices go
# with them). Safe to call more than once.
e2e_cleanup() {
	local i
	for ((i = ${#E2E_NAMESPACES[@]} - 1; i >= 0; i--)); do
		ip netns del "${E2E_NAMESPACES[$i]}" 2>/dev/null || true
	done
	E2E_NAMESPACES=()
}

# ---- two spillway instances behind a BGP router (test_ecmp_e2e.sh,
# test_ecmp_hot.sh)

# BGP timers of every speaker of the ECMP topology: a session comes up, and
# a withdrawn path goes, within seconds.
E2E_BGP_TIMERS="connect delay time 1; connect retry time 2; error wait time 1, 4; hold time 6; keepalive time 2;"

# e2e_bird_router_conf FILE R_IP1 LB_IP1 R_IP2 LB_IP2: the router's BIRD (AS
# 65000): a BGP session with each LB (AS 65001), importing their routes, and
# the kernel protocol merging the equal BGP routes into one multipath route.
e2e_bird_router_conf() {
	cat >"$1" <<CONF
router id $2;
protocol device { scan time 1; }
protocol kernel { ipv4 { import none; export all; }; merge paths on; }
protocol bgp lb1 { local $2 as 65000; neighbor $3 as 65001;
	ipv4 { import all; export none; }; $E2E_BGP_TIMERS }
protocol bgp lb2 { local $4 as 65000; neighbor $5 as 65001;
	ipv4 { import all; export none; }; $E2E_BGP_TIMERS }
CONF
}

# e2e_bird_lb_conf WORK NAME LB_IP R_IP: WORK/NAME.bird.conf, the LB's BIRD,
# exporting the routes of spillwayd's include file (WORK/NAME.vips.conf, made
# here empty: spillwayd rewrites it) to the router.
e2e_bird_lb_conf() {
	printf 'protocol static spillway4 { ipv4; }\nprotocol static spillway6 { ipv6; }\n' \
		>"$1/$2.vips.conf"
	cat >"$1/$2.bird.conf" <<CONF
router id $3;
include "$1/$2.vips.conf";
protocol device { scan time 1; }
filter spillway_vips { if proto = "spillway4" then accept; reject; }
protocol bgp upstream { local $3 as 65001; neighbor $4 as 65000;
	ipv4 { import none; export filter spillway_vips; }; $E2E_BGP_TIMERS }
CONF
}

# e2e_start_bird WORK NAME NS: BIRD on WORK/NAME.bird.conf in namespace NS,
# in the foreground (its PID in WORK/NAME.bird.pid is ours), its control
# socket WORK/NAME.bird.ctl waited for. Exits the test if it fails.
e2e_start_bird() {
	bird -p -c "$1/$2.bird.conf" || { echo "FAIL: BIRD rejects $2.bird.conf"; exit 1; }
	ip netns exec "$3" bird -f -c "$1/$2.bird.conf" -s "$1/$2.bird.ctl" \
		>"$1/$2.bird.log" 2>&1 &
	echo $! >"$1/$2.bird.pid"
	e2e_wait_file "$1/$2.bird.ctl" "$!" || { echo "FAIL: BIRD $2 did not start"; exit 1; }
}

# e2e_start_servers WORK PY SERVER NS_FORMAT NAME...: e2e_server.py (SERVER)
# on TCP port 80 in the namespace printf NS_FORMAT NAME gives, for each NAME,
# all started, then each waited for (WORK/NAME.ready). Their PIDs are
# appended to PIDS.
e2e_start_servers() {
	local work=$1 py=$2 server=$3 fmt=$4 b ns
	local -A pid
	shift 4
	for b in "$@"; do
		# shellcheck disable=SC2059
		ns=$(printf "$fmt" "$b")
		ip netns exec "$ns" "$py" "$server" "$b" "$work/$b.ready" \
			--tcp 0.0.0.0:80 >"$work/$b.out" 2>&1 &
		PIDS+=($!)
		pid[$b]=$!
	done
	for b in "$@"; do
		e2e_wait_file "$work/$b.ready" "${pid[$b]}" || { echo "FAIL: server $b did not start"; exit 1; }
	done
}

# e2e_lb_eal_mem INDEX: spw_eal_mem's memory options (scripts/lib.sh) for LB
# INDEX (0, 1). Both start at once, so LB 1 takes hugepages only if there are
# enough for both.
e2e_lb_eal_mem() {
	local free
	free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
	if [ "$1" -eq 1 ] && [ "$free" -lt 512 ]; then echo "--no-huge -m 512"; else spw_eal_mem; fi
}
