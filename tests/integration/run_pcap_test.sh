#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# pcap integration test: replay generated traffic through spillwayd with the
# net_pcap PMD (no NIC, no hugepages) and check every output frame and counter
# with an independent scapy checker; then check that invalid configurations are
# rejected with exit status 2 and a "path: reason" message.
#
# usage: run_pcap_test.sh SPILLWAYD
# env:   SPW_PCAP_KEEP=1   keep the work directory (printed at the end)
#        SPW_PCAP_SEED=N   generator seed (default 1)
#        SPW_PCAP_ONLY=NAME run only that replay (and sections 2 and 3)
set -euo pipefail

SPW=${1:?usage: run_pcap_test.sh SPILLWAYD}
SPW=$(readlink -f "$SPW")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
SEED=${SPW_PCAP_SEED:-1}
WORK=$(mktemp -d /tmp/spw-pcap.XXXXXX)
PREFIX=spw-pcap-$$
PID=
FAILED=0
declare -A JOBS=() # replay job PID -> its name

cleanup() {
	local rc=$? j
	for j in "${!JOBS[@]}"; do # replays still running (each stops its daemon)
		kill "$j" 2>/dev/null || true
		wait "$j" 2>/dev/null || true
	done
	if [[ -n $PID ]] && kill -0 "$PID" 2>/dev/null; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	rm -rf "/var/run/dpdk/$PREFIX"-* 2>/dev/null || true
	if [[ -n ${SPW_PCAP_KEEP:-} ]]; then
		echo "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -x $SPW ]] || { echo "not executable: $SPW" >&2; exit 1; }
[[ -x $PY ]] && $PY -c 'import scapy' 2>/dev/null || { echo "SKIP: $PY with scapy needed"; exit 77; }

# run_daemon TAG CONFIG IN.pcap OUT.pcap STATS [extra daemon args...]
# Runs spillwayd in the background (so the trap can stop it), bounded by
# timeout; sets RC to its exit status, stderr in $WORK/TAG.stderr. With
# RECEIVED_SOCK set (the daemon's --control among the arguments), the daemon
# is stopped by SIGTERM once its stats count every frame of IN.pcap received
# (polled, at most 60 s; not received: RC 124 unless it failed by itself).
run_daemon() {
	local tag=$1 cfg=$2 in=$3 out=$4 stats=$5 got=0
	shift 5
	set +e
	timeout -k 5 120 "$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-$tag" -l 0-1 \
		--vdev="net_pcap0,rx_pcap=$in,tx_pcap=$out" "${EXTRA_EAL[@]}" \
		-- --config "$cfg" --stats-file "$stats" "$@" \
		>"$WORK/$tag.stdout" 2>"$WORK/$tag.stderr" &
	PID=$!
	if [[ -n ${RECEIVED_SOCK:-} ]]; then
		$PY - "$HERE" "$in" "$RECEIVED_SOCK" "$PID" <<'EOF'
import os, sys, time
sys.path.insert(0, sys.argv[1])
import lbpcap, spwrpc

n, sock, pid = len(lbpcap.read_pcap(sys.argv[2])), sys.argv[3], int(sys.argv[4])
end, rx = time.monotonic() + 60, None
while time.monotonic() < end:
    try:  # ended early (gone, or a zombie): the caller reports its status
        if open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z":
            sys.exit(3)
    except FileNotFoundError:
        sys.exit(3)
    try:
        c = spwrpc.Client(sock)
        rx = c.call("stats")["totals"]["rx_packets"]
        c.close()
    except (OSError, ConnectionError, spwrpc.RpcError):
        pass
    if rx == n:
        sys.exit(0)
    time.sleep(0.02)
sys.exit("spillwayd received %s of %d frames in 60 s" % (rx, n))
EOF
		got=$?
		kill -TERM "$PID" 2>/dev/null
	fi
	wait "$PID"
	RC=$?
	[[ $got -eq 0 || $RC -ne 0 ]] || RC=124
	PID=
	set -e
}

# --- 1: full replay, too-big answered with ICMP -------------------------------
EXTRA_EAL=()

# replay NAME [gen_pcap.py args...]; with EXC=1 a second net_pcap port takes
# traffic for no VIP (--exception-port 1); with OUTP=1 a second net_pcap port
# takes the encapsulated frames (--out-port 1, its own MAC) and the receiving
# port only the ICMP replies. Port 0's MAC is the generator's (manifest lb_mac):
# net_pcap cannot change its MAC, so spillwayd is told it with --port-mac.
# env_replay VAR=VALUE NAME ARGS...: replay with VAR set (EXC, OUTP) for it alone.
env_replay() {
	local -x "$1"
	shift
	replay "$@"
}

replay() {
	local name=$1
	shift
	local d=$WORK/$name
	# main stops by itself (--idle-exit: 1.5 s without a received frame);
	# the others are stopped by SIGTERM once every frame has been received.
	local daemon_args=(--idle-exit 1500) check_args=() RECEIVED_SOCK=
	if [[ $name != main ]]; then
		RECEIVED_SOCK=$d/ctl.sock
		daemon_args=(--control "$RECEIVED_SOCK")
	fi
	[[ -n ${SPW_PCAP_ONLY:-} && $name != "$SPW_PCAP_ONLY" ]] && return
	echo "== pcap replay: $name"
	$PY "$HERE/gen_pcap.py" "$d" --seed "$SEED" "$@"
	local mac
	mac=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["lb_mac"])' "$d/manifest.json")
	daemon_args+=(--port-mac "0=$mac")
	EXTRA_EAL=()
	if [[ -n ${OUTP:-} ]]; then
		$PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import lbpcap; lbpcap.write_pcap(sys.argv[2], [])' \
			"$HERE" "$d/empty.pcap"
		EXTRA_EAL=(--vdev="net_pcap1,rx_pcap=$d/empty.pcap,tx_pcap=$d/fwd.pcap")
		daemon_args+=(--out-port 1 --port-mac 1=02:00:00:00:00:fd)
		check_args=(--fwd-out "$d/fwd.pcap" --out-mac 02:00:00:00:00:fd)
	fi
	if [[ -n ${EXC:-} ]]; then
		$PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import lbpcap; lbpcap.write_pcap(sys.argv[2], [])' \
			"$HERE" "$d/empty.pcap"
		EXTRA_EAL=(--vdev="net_pcap1,rx_pcap=$d/empty.pcap,tx_pcap=$d/exception.pcap")
		daemon_args+=(--exception-port 1)
		check_args=(--exception "$d/exception.pcap")
	fi
	local t0=$SECONDS
	run_daemon "$name" "$d/config.json" "$d/in.pcap" "$d/out.pcap" "$d/stats.json" "${daemon_args[@]}"
	EXTRA_EAL=()
	echo "spillwayd exited with $RC after $((SECONDS - t0)) s"
	if [[ $RC -ne 0 ]]; then
		echo "FAIL: spillwayd exit status $RC (expected 0); stderr tail:"
		tail -n 20 "$WORK/$name.stderr"
		FAILED=1
		return
	fi
	if [[ ! -s $d/stats.json ]]; then
		echo "FAIL: no stats file written"
		FAILED=1
		return
	fi
	if ! $PY "$HERE/check_pcap.py" "$d" "${check_args[@]}"; then
		FAILED=1
	fi
}

# job NAME FUNC ARGS...: FUNC ARGS (a replay) in the background, its output in
# $WORK/NAME.log, FAILED its exit status; at most two at a time (jobs_wait).
# Each replay has its own work directory, DPDK file prefix, pcap files and
# (live) FIFO and control socket, so two run side by side: on two cores one
# replay's daemon waits out its --idle-exit while the other's generator or
# checker runs. A job stopped by a signal stops its daemon (PID) first.
job() {
	local name=$1
	shift
	[[ -n ${SPW_PCAP_ONLY:-} && $name != "$SPW_PCAP_ONLY" ]] && return
	while ((${#JOBS[@]} >= 2)); do jobs_wait_one; done
	(
		trap '[[ -n $PID ]] && kill "$PID" 2>/dev/null; exit 143' TERM INT
		FAILED=0
		"$@"
		exit "$FAILED"
	) >"$WORK/$name.log" 2>&1 &
	JOBS[$!]=$name
}

# jobs_wait_one: wait for one job to end, print its output, fold in its status.
jobs_wait_one() {
	local done rc=0
	wait -n -p done "${!JOBS[@]}" || rc=$?
	cat "$WORK/${JOBS[$done]}.log"
	unset "JOBS[$done]"
	[[ $rc -eq 0 ]] || FAILED=1
}

jobs_wait() {
	while ((${#JOBS[@]} > 0)); do jobs_wait_one; done
}

job main replay main
# small scale, too-big packets dropped, and a flow table small enough to evict
job toobig-drop replay toobig-drop --scale 0.1 --too-big drop --seed $((SEED + 1)) --flow-capacity 64 --no-jumbo
job exception-port env_replay EXC=1 exception-port --scale 0.1 --seed $((SEED + 2)) --no-jumbo
# the rules of generated ICMP: a bucket of 8 at 1/s against a run of 40
# oversized packets, oversized ICMP errors never answered, martian sources dropped
job icmp-rules replay icmp-rules --scale 0.1 --seed $((SEED + 3)) --no-jumbo --icmp-rules
# encap.mtu 1300: IPv6 tunnel MTUs under 1280 (RFC 2473 §7.1: outer fragments up
# to 1280 bytes, PTB 1280 above), IPv4 without DF as outer fragments (RFC 2003 §5.1)
job mtu1300 replay mtu1300 --scale 0.1 --seed $((SEED + 4)) --mtu 1300
# forwarding's VLAN policy: the input's tags kept, or one fixed 802.1Q tag
job vlan-keep replay vlan-keep --scale 0.1 --seed $((SEED + 5)) --no-jumbo --vlan keep
job vlan-id replay vlan-id --scale 0.1 --seed $((SEED + 6)) --no-jumbo --vlan 4000
# two ports: encapsulated frames out of port 1 with its MAC, ICMP replies out
# of the receiving port with the receiving port's MAC
job out-port env_replay OUTP=1 out-port --scale 0.1 --seed $((SEED + 7)) --no-jumbo
# tunnel path MTU discovery: MTU errors quoting our outer packets lower the MTU
# toward their backend (RFC 2473 §7.1, RFC 4459), forged ones change nothing
job pmtu replay pmtu --scale 0.1 --seed $((SEED + 8)) --no-jumbo --pmtu

# live_replay NAME GEN_ARGS...: gen_pcap.py GEN_ARGS (--flowstate CASE, --spray)
# fed through a FIFO by pcap_feed.py, with changes over the control socket
# between its segments (net_pcap does not honour pcap timestamps: order is what
# the test controls); spillwayd is stopped by SIGTERM once it has received everything.
live_replay() {
	local name=$1
	shift
	local d=$WORK/$name
	[[ -n ${SPW_PCAP_ONLY:-} && $name != "$SPW_PCAP_ONLY" ]] && return
	echo "== pcap replay: $name (live: $*)"
	$PY "$HERE/gen_pcap.py" "$d" --seed "$SEED" "$@"
	mkfifo "$d/in.fifo"
	local mac
	mac=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["lb_mac"])' "$d/manifest.json")
	timeout -k 5 120 "$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-$name" -l 0-1 \
		--vdev="net_pcap0,rx_pcap=$d/in.fifo,tx_pcap=$d/out.pcap" \
		-- --config "$d/config.json" --stats-file "$d/stats.json" --port-mac "0=$mac" \
		--control "$d/ctl.sock" >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" &
	PID=$!
	local feed=0
	timeout -k 5 90 $PY "$HERE/pcap_feed.py" "$d" "$d/in.fifo" "$d/ctl.sock" || feed=$?
	kill -TERM "$PID" 2>/dev/null || true
	set +e
	wait "$PID"
	RC=$?
	set -e
	PID=
	if [[ $feed -ne 0 || $RC -ne 0 ]]; then
		echo "FAIL: feeder exit $feed, spillwayd exit $RC (expected 0, 0); stderr tail:"
		tail -n 20 "$WORK/$name.stderr"
		FAILED=1
		return
	fi
	$PY "$HERE/check_pcap.py" "$d" || FAILED=1
}

# TCP-aware flow state: a SYN flood into a 64-entry table keeps established
# flows pinned across a backend_add that moves their Maglev slot; FIN, RST and
# unconfirmed entries end early (a new SYN after the pause is chosen anew); the
# new-flow rate guard sends flows over its burst by Maglev without an entry
job flood live_replay flood --flowstate flood
job life live_replay life --flowstate life
job rate live_replay rate --flowstate rate
# hot_mode per_packet: a UDP 5-tuple (IPv4, IPv6) at its Maglev home, then
# hot_pin r = 4: its datagrams sprayed over the 4 backends, every fragment of
# one datagram (3 fragments, some first, third, second) at one backend, nothing
# pinned; after hot_unpin and the demotion at its home again
job spray live_replay spray --spray
jobs_wait

# --- 2: invalid configurations -------------------------------------------------
echo "== invalid configurations"
B=$WORK/bad
$PY "$HERE/gen_pcap.py" "$B" --bad-configs
nbad=0
while IFS=$'\t' read -r name path; do
	run_daemon "bad-$name" "$B/$name.json" "$B/empty.pcap" "$B/$name.out.pcap" "$B/$name.stats" \
		--idle-exit 500
	msg=$(grep -F -- "$path" "$WORK/bad-$name.stderr" | head -n 1 || true)
	if [[ $RC -ne 2 ]]; then
		echo "FAIL: $name: exit status $RC, expected 2; stderr: $(tail -n 3 "$WORK/bad-$name.stderr" | tr '\n' ' ')"
		FAILED=1
	elif [[ -z $msg ]]; then
		echo "FAIL: $name: exit 2 but stderr does not name '$path': $(tail -n 3 "$WORK/bad-$name.stderr" | tr '\n' ' ')"
		FAILED=1
	else
		printf '  ok %-20s %s\n' "$name" "$msg"
	fi
	nbad=$((nbad + 1))
done <"$B/expect.tsv"
echo "$nbad invalid configurations tried"

# --- 3: SIGTERM / SIGINT stop the daemon cleanly, with final stats ------------
for sig in TERM INT; do
	echo "== SIG$sig"
	d=$WORK/sig$sig
	mkdir -p "$d"
	timeout -k 5 60 "$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-sig$sig" -l 0-1 \
		--vdev="net_pcap0,rx_pcap=$B/empty.pcap,tx_pcap=$d/out.pcap" \
		-- --config "$WORK/${SPW_PCAP_ONLY:-main}/config.json" --stats-file "$d/stats.json" \
		>"$d/stdout" 2>"$d/stderr" &
	PID=$!
	# give EAL time to come up (the log line is a hint, not part of the contract)
	for _ in $(seq 1 50); do
		grep -q forwarding "$d/stderr" 2>/dev/null && break
		sleep 0.2
	done
	sleep 0.5
	kill -"$sig" "$PID"
	set +e
	wait "$PID"
	RC=$?
	set -e
	PID=
	if [[ $RC -ne 0 ]]; then
		echo "FAIL: SIG$sig: exit status $RC, expected 0; stderr: $(tail -n 3 "$d/stderr" | tr '\n' ' ')"
		FAILED=1
	elif ! $PY -c 'import json, sys; s = json.load(open(sys.argv[1])); t = s["totals"]; sys.exit(t["rx_packets"] != 0 or s["mempool"]["in_use"] != 0)' \
		"$d/stats.json" 2>/dev/null; then
		echo "FAIL: SIG$sig: no valid final stats (or mbufs in use) in $d/stats.json"
		FAILED=1
	else
		echo "  ok: exit 0, final stats written"
	fi
done

if [[ $FAILED -ne 0 ]]; then
	echo "pcap integration test: FAIL"
	exit 1
fi
echo "pcap integration test: PASS"
