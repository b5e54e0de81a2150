#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Link state logging over memif: spillwayd starts as the memif client before
# any server exists, then dpdk-testpmd becomes the server, then leaves.
# Asserted, each from what the test itself did or what testpmd reports:
#   - spillwayd logs "port 0 link down" while there is no server (it keeps
#     starting the port), then "port 0 link up ..." once testpmd serves the
#     socket, then "port 0 link down" after testpmd quits, in that order;
#   - its start-up line names the TX offloads testpmd lists for its own memif
#     port (the same PMD), the MTU 1500 (encap.mtu 1500, the 1500 floor) and
#     the software IPv4 checksum (memif offers no checksum offload);
#   - the stats at SIGTERM count the link changes the test caused (two, or one
#     if the link was already up when it was first read).
# Every wait is bounded; nothing is timed.
# usage: test_link_watch.sh SPILLWAYD
set -euo pipefail
SPW=${1:?usage: test_link_watch.sh SPILLWAYD}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
. "$HERE/daemon_lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (DPDK)"; exit 77; }
TESTPMD=$(command -v dpdk-testpmd || true)
[ -n "$TESTPMD" ] || { echo "SKIP: dpdk-testpmd not installed"; exit 77; }
spw_test_begin link KEEP_WORK
SOCK=$WORK/memif.sock

cat >"$WORK/lb.json" <<'JSON'
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01", "mtu": 1500},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}]}]}
JSON

# wait_log FILE PATTERN N: until FILE has N lines matching PATTERN (30 s at most).
wait_log() {
	local i
	for i in $(seq 1 300); do
		[ "$(grep -cE "$2" "$1" 2>/dev/null || true)" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

"$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-lb" -l 0-1 --log-level 'lib.*:warning' \
	--vdev="net_memif0,role=client,socket=$SOCK,socket-abstract=no" \
	-- --config "$WORK/lb.json" --stats-file "$WORK/stats.json" 2>"$WORK/lb.err" &
LB=$!
PIDS+=("$LB")
wait_log "$WORK/lb.err" '^spillwayd: port 0 link down' 1 || { cat "$WORK/lb.err"; fail "no link down logged without a server"; }
kill -0 "$LB" || fail "spillwayd gave up without a server"

# testpmd reads its commands from a FIFO the test keeps open, and listens on
# a socket of its own: the memif server creates its listener when the device
# is probed, before its port is started, and turns away a client that comes
# in between (its device is still disabled), after which a memif client stays
# down until it is started again. So the socket is moved to where spillwayd
# looks only once testpmd has started its port ("Port 0: MAC", stdout line
# buffered).
mkfifo "$WORK/tp.in"
exec 3<>"$WORK/tp.in"
stdbuf -oL "$TESTPMD" --no-huge -m 256 --no-pci --file-prefix "$PREFIX-tp" -l 0-1 \
	--log-level 'lib.*:warning' \
	--vdev="net_memif0,role=server,socket=$WORK/server.sock,socket-abstract=no" \
	-- -i --total-num-mbufs=2048 <"$WORK/tp.in" >"$WORK/tp.out" 2>&1 &
TP=$!
PIDS+=("$TP")
wait_log "$WORK/tp.out" '^Port 0: [0-9A-F:]{17}$' 1 || { cat "$WORK/tp.out"; fail "testpmd did not start its port"; }
mv "$WORK/server.sock" "$SOCK"
echo "show port 0 tx_offload capabilities" >&3
wait_log "$WORK/lb.err" '^spillwayd: port 0 link up [0-9]+ [MG]bps full-duplex$' 1 || { cat "$WORK/lb.err"; fail "no link up logged once the server was there"; }
echo "quit" >&3
for _ in $(seq 1 300); do kill -0 "$TP" 2>/dev/null || break; sleep 0.1; done
kill -0 "$TP" 2>/dev/null && fail "testpmd did not quit"
# A "link down" after the "link up" (30 s at most).
down_after_up() {
	awk '/^spillwayd: port 0 link up /{u=1} u && /^spillwayd: port 0 link down$/{n++}
		END{exit !(n >= 1)}' "$WORK/lb.err"
}
for _ in $(seq 1 300); do down_after_up && break; sleep 0.1; done
down_after_up || { cat "$WORK/lb.err"; fail "no link down logged after the server left"; }
kill -TERM "$LB"
set +e
wait "$LB"
RC=$?
set -e
[ "$RC" -eq 0 ] || { cat "$WORK/lb.err"; fail "spillwayd exited $RC"; }

$PY - "$WORK/lb.err" "$WORK/tp.out" "$WORK/stats.json" <<'PY'
import json, re, sys
log = open(sys.argv[1]).read().splitlines()
links = [l for l in log if re.match(r"spillwayd: port 0 link (up|down)", l)]
kinds = ["up" if " link up " in l else "down" for l in links]
# Down while starting (the retry line, then the watch's first reading), up,
# down: repeated readings of one state are not logged again.
collapsed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
assert collapsed == ["down", "up", "down"], links
assert kinds.count("up") == 1, links

tp = open(sys.argv[2]).read()
sect = tp.split("Tx Offloading Capabilities of port 0")[1]
offered = set(sect.split("Per Port  :")[1].split("\n")[0].split())
offered |= set(sect.split("Per Queue :")[1].split("\n")[0].split())
start = [l for l in log if l.startswith("spillwayd: port 0 (net_memif): ")]
assert len(start) == 1, log
m = re.search(r"MTU (\d+), RX offloads (\S+), TX offloads (\S+), outer IPv4 checksum by "
              r"(software|the NIC)", start[0])
assert m, start[0]
assert m.group(1) == "1500", start[0]
# The rule: multi-segment and IPv4 checksum whenever offered, nothing else.
want = offered & {"MULTI_SEGS", "IPV4_CKSUM"}
got = set() if m.group(3) == "none" else set(m.group(3).split(","))
assert got == want, (got, offered)
assert m.group(4) == ("the NIC" if "IPV4_CKSUM" in offered else "software"), start[0]
assert m.group(2) == "none", start[0]  # 1500 + 22 bytes fit one mbuf

# Changes count from the watch's first reading (the line after the retry
# line): down there (the memif handshake not done yet) makes two, up one.
first = kinds[1]
n = 2 if first == "down" else 1
link = json.load(open(sys.argv[3]))["hooks"]["link"]
assert link["link_changes"] == n, link
assert link["ports"] == [{"port": 0, "up": False, "speed_mbps": 0, "changes": n}], link
print("link watch: down, up, down logged; offloads %s; %d changes counted" % (sorted(got), n))
PY
echo "PASS"
