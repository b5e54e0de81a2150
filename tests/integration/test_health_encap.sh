#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The "via encap" health probe transport on its own (control/health/health_encap.c,
# driven by health_encap_tool as the health runner drives it), against real
# backends in network namespaces, without spillwayd:
#
#   LB ns (the prober: raw IP sockets, address 10.10.2.2) ──veth── router
#                                                                    │ bridge
#                                              backends b1, b2 (VIPs on lo, decap)
#
# Probes go out encapsulated (IPIP or GUE) from the LB's address to the
# backend, inner destination VIP:port; the backend decapsulates and answers
# from the VIP straight to the LB (DSR), whose kernel hands the answer to the
# transport. Checked: tcp (SYN-ACK) and udp (the answer of b1's own server)
# via IPIP and GUE; a closed port is "refused"; with b1's decapsulation
# removed and its listener up, via encap fails while a direct connect to b1
# succeeds and b2 still passes; decapsulation back, b1 passes again; http via
# encap is refused. With the XDP decapsulator, b1's decapsulation counters
# must equal the frames the probes sent (SYN and RST per passing tcp probe,
# SYN per refused one, one datagram per udp probe): the count is kept here.
#
# usage: test_health_encap.sh HEALTH_ENCAP_TOOL
# E2E_DECAP=kernel|xdp as in test_xdp_e2e.sh. Exit 77 without root/netns.
set -euo pipefail
TOOL=$(readlink -f "${1:?usage: test_health_encap.sh HEALTH_ENCAP_TOOL}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
# shellcheck source-path=SCRIPTDIR source=e2e_lib.sh
. "$HERE/e2e_lib.sh"

e2e_require_root_netns
command -v ethtool >/dev/null || { echo "FAIL: ethtool is needed (scripts/setup.sh installs it)"; exit 1; }

S=$$
WORK=$(mktemp -d "/tmp/spw-hce.XXXXXX")
NS_R=spw-hce-r-$S
NS_L=spw-hce-lb-$S
PIDS=()
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for p in "${PIDS[@]}"; do e2e_stop_pid "$p" TERM; done
	e2e_cleanup
	if [ -n "${E2E_KEEP_WORK:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

MTU=1600
GUE_PORT=6080
LB_IP=10.10.2.2
VIP_A=10.100.0.1 # TCP 80 via IPIP
VIP_B=10.100.0.2 # TCP 80 via GUE
VIP_U=10.100.0.3 # UDP 5300 via GUE
declare -A BE_IP=([b1]=10.10.3.11 [b2]=10.10.3.12)

DECAP_MODE=${E2E_DECAP:-auto}
if [ "$DECAP_MODE" = auto ]; then
	if e2e_kernel_decap_ok; then DECAP_MODE=kernel; else DECAP_MODE=xdp; fi
elif [ "$DECAP_MODE" = kernel ] && ! e2e_kernel_decap_ok; then
	echo "SKIP: this kernel has no IPIP/FOU (CONFIG_NET_IPIP, CONFIG_NET_FOU)"
	exit 77
fi
if [ "$DECAP_MODE" = xdp ]; then
	e2e_build_decap "$WORK/e2e_decap.bpf.o" "$GUE_PORT"
	DECAP="$WORK/e2e_decap.bpf.o"
else
	DECAP=kernel
fi
echo "backends decapsulate with: $DECAP_MODE"

e2e_router_add "$NS_R"
e2e_lb_add "$NS_L" lb0 "$LB_IP/24" "$NS_R" r-lb0 10.10.2.1/24 "$MTU"
e2e_router_bridge "$NS_R" br0 10.10.3.1/24 "$MTU"
for b in b1 b2; do
	e2e_backend_add "spw-hce-$b-$S" eth0 "${BE_IP[$b]}/24" "$NS_R" br0 "r-$b" 10.10.3.1 \
		"$MTU" "$GUE_PORT" "$DECAP" "$VIP_A" "$VIP_B" "$VIP_U"
done
# As in the real topology, the VIP prefix is routed to the LB (the kernel's
# RST for the SYN-ACK it does not know goes there and is dropped).
e2e_router_route "$NS_R" 10.100.0.0/24 "$LB_IP"

for b in b1 b2; do
	ip netns exec "spw-hce-$b-$S" "$PY" "$HERE/e2e_server.py" "$b" "$WORK/$b.ready" \
		--tcp 0.0.0.0:80 --udp "$VIP_U:5300" >"$WORK/$b.out" 2>&1 &
	PIDS+=($!)
	e2e_wait_file "$WORK/$b.ready" "$!" || { echo "FAIL: server $b did not start"; cat "$WORK/$b.out"; exit 1; }
done

# The frames b1 must have decapsulated (XDP decapsulator): kept by the test.
declare -A SENT=([ipip]=0 [gue]=0)
decap_count() { # NS: "ipip gue" of the XDP decapsulator; nothing malformed
	e2e_decap_counters "$1" eth0 | "$PY" -c '
import json, sys
c = json.load(sys.stdin)
bad = {k: v for k, v in c.items() if k.startswith("bad") and v}
print("malformed %s" % bad if bad else "%d %d" % (c["ipip"], c["gue"]))'
}

# probe B VIP PORT ENCAP TYPE EXPECT_RESULT [ARGS...]: COUNT probes at once
# from the LB, each must end EXPECT_RESULT (ok, fail, timeout); with WHY set,
# the failure text must contain it.
probe() {
	local b=$1 vip=$2 port=$3 encap=$4 type=$5 want=$6 out got
	shift 6
	out=$(ip netns exec "$NS_L" "$TOOL" probe --outer-src "$LB_IP" --vip "$vip" --port "$port" \
		--backend "${BE_IP[$b]}" --encap "$encap" --gue-port "$GUE_PORT" --mtu "$MTU" \
		--type "$type" --timeout-ms "${TIMEOUT_MS:-1000}" --count "${COUNT:-1}" "$@")
	echo "$out" >>"$WORK/probes.log"
	got=$(echo "$out" | "$PY" -c '
import json, sys
want, why, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = [json.loads(l) for l in sys.stdin if l.startswith("{\"probe\"")]
bad = [r for r in res if r["result"] != want or (why and why not in r["why"])]
print("ok" if len(res) == count and not bad else "results %s" % res)' "$want" "${WHY:-}" "${COUNT:-1}")
	if [ "$got" != ok ]; then
		echo "FAIL: $type via encap ($encap) to $b, $vip:$port: want $want${WHY:+ ($WHY)}, got $got"
		exit 1
	fi
	echo "ok: ${COUNT:-1} x $type via $encap to $b $vip:$port -> $want${WHY:+ ($WHY)}"
}
direct_tcp() { # B PORT: a plain connect from the LB to the backend's own address
	ip netns exec "$NS_L" "$PY" -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
assert s.recv(64).startswith(b"HELLO " + sys.argv[3].encode()), "not the expected server"
s.close()' "${BE_IP[$1]}" "$2" "$1"
}
check_decap() { # the XDP decapsulator of b1 saw exactly what the probes sent
	[ "$DECAP_MODE" = xdp ] || return 0
	local got
	got=$(decap_count "spw-hce-b1-$S")
	[ "$got" = "${SENT[ipip]} ${SENT[gue]}" ] ||
		{ echo "FAIL: b1 decapsulated (ipip gue) $got, the probes sent ${SENT[ipip]} ${SENT[gue]}"; exit 1; }
	echo "ok: b1 decapsulated exactly the probes' frames: ipip ${SENT[ipip]}, gue ${SENT[gue]}"
}
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }

# ---- decapsulation working: tcp and udp pass, through both encapsulations
COUNT=4 probe b1 "$VIP_A" 80 ipip tcp ok
SENT[ipip]=$((SENT[ipip] + 8))
COUNT=4 probe b1 "$VIP_B" 80 gue tcp ok
SENT[gue]=$((SENT[gue] + 8))
probe b2 "$VIP_A" 80 ipip tcp ok
# The answer is b1's server's own ("b1 " + the request): it went to b1.
probe b1 "$VIP_U" 5300 gue udp ok --request "$(hex ping)" --expect "$(hex 'b1 ping')"
SENT[gue]=$((SENT[gue] + 1))
WHY="unexpected answer" probe b1 "$VIP_U" 5300 gue udp fail --request "$(hex ping)" --expect "$(hex 'b2 ')"
SENT[gue]=$((SENT[gue] + 1))
# No listener on 81: the backend's RST comes back from the VIP.
WHY="refused" probe b1 "$VIP_A" 81 ipip tcp fail
SENT[ipip]=$((SENT[ipip] + 1))
WHY="http is not offered via encap" probe b1 "$VIP_A" 80 ipip http fail
check_decap

# ---- b1's decapsulation removed, its listener still up
if [ "$DECAP_MODE" = xdp ]; then
	ip -n "spw-hce-b1-$S" link set dev eth0 xdpdrv off
else
	ip -n "spw-hce-b1-$S" link del ipip0
	ip netns exec "spw-hce-b1-$S" ip fou del port "$GUE_PORT"
fi
TIMEOUT_MS=500 COUNT=2 probe b1 "$VIP_A" 80 ipip tcp timeout
TIMEOUT_MS=500 probe b1 "$VIP_B" 80 gue tcp timeout
TIMEOUT_MS=500 probe b1 "$VIP_U" 5300 gue udp timeout --request "$(hex ping)" --expect "$(hex 'b1 ')"
direct_tcp b1 80 || { echo "FAIL: direct connect to b1:80 failed with its listener up"; exit 1; }
echo "ok: a direct connect to b1:80 still succeeds (direct cannot see the broken decapsulation)"
probe b2 "$VIP_A" 80 ipip tcp ok
probe b2 "$VIP_B" 80 gue tcp ok

# ---- decapsulation back
if [ "$DECAP_MODE" = xdp ]; then
	ip -n "spw-hce-b1-$S" link set dev eth0 xdpdrv obj "$DECAP" sec xdp
	SENT=([ipip]=0 [gue]=0) # a fresh program: fresh counters
else
	ip -n "spw-hce-b1-$S" link add name ipip0 type ipip external
	ip netns exec "spw-hce-b1-$S" sysctl -q -w net.ipv4.conf.ipip0.rp_filter=0
	ip -n "spw-hce-b1-$S" link set ipip0 up
	ip netns exec "spw-hce-b1-$S" ip fou add port "$GUE_PORT" gue
fi
probe b1 "$VIP_A" 80 ipip tcp ok
SENT[ipip]=$((SENT[ipip] + 2))
probe b1 "$VIP_U" 5300 gue udp ok --request "$(hex ping)" --expect "$(hex 'b1 ping')"
SENT[gue]=$((SENT[gue] + 1))
check_decap
echo "test_health_encap (decap $DECAP_MODE): PASS"
