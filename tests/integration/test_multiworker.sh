#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Several workers end to end (docs/testing.md "Several workers"):
#
#   generator ns: g0 ──veth(1500)── lb0: spillwayd, net_af_packet qpairs=2,
#   (multiworker_check.py)               two worker lcores, one-armed
#
# The af_packet PMD joins its two queue sockets in a PACKET_FANOUT_HASH
# group, so the kernel's flow hash spreads flows over the two workers as a
# NIC's RSS would; the lcores share this machine's CPUs with the control
# thread. multiworker_check.py sends TCP and UDP flows, changes membership
# through the control socket between phases, and judges every frame that
# comes back; this script checks spillwayd's exit and its log.
#
# usage: test_multiworker.sh SPILLWAYD
# MW_WORKERS sets the number of workers (default 2); MW_KEEP_WORK=1 keeps the
# work directory. Exit 77 (skip) only without root or network namespaces.
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_multiworker.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
# shellcheck source-path=SCRIPTDIR source=e2e_lib.sh
. "$HERE/e2e_lib.sh"
# shellcheck source=../../scripts/lib.sh
. "$HERE/../../scripts/lib.sh"

e2e_require_root_netns
command -v ethtool >/dev/null || { echo "FAIL: ethtool is needed (scripts/setup.sh installs it)"; exit 1; }

S=$$
N_W=${MW_WORKERS:-2}
WORK=$(mktemp -d "/tmp/spw-mw.XXXXXX")
PREFIX="spw-mw-$S"
NS_G=spw-mw-g-$S
NS_L=spw-mw-lb-$S
SPW_PID=
CHK_PID=

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	e2e_stop_pid "$CHK_PID" TERM
	e2e_stop_pid "$SPW_PID" TERM
	[ "$rc" -eq 0 ] || e2e_tail_log spillwayd.log 30 "$WORK/spillwayd.log"
	e2e_teardown "$WORK" "${MW_KEEP_WORK:-}" "/var/run/dpdk/$PREFIX"
	exit "$rc"
}
e2e_traps cleanup

e2e_ns_add "$NS_G"
e2e_ns_add "$NS_L"
e2e_veth "$NS_G" g0 "$NS_L" lb0 1500
G_MAC=$(e2e_mac "$NS_G" g0)
L_MAC=$(e2e_mac "$NS_L" lb0)

cat >"$WORK/spw.json" <<JSON
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "$G_MAC", "mtu": 1500},
 "maglev": {"table_size": 65537, "seed": "multiworker"},
 "flows": {"tcp_idle_ms": 600000, "udp_idle_ms": 600000},
 "vips": [
  {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "encap": "ipip",
   "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"},
                {"address": "10.1.0.3", "weight": 2}, {"address": "10.1.0.4"}]},
  {"address": "192.0.2.20", "port": 53, "protocol": "udp", "encap": "ipip",
   "backends": [{"address": "10.2.0.1"}, {"address": "10.2.0.2"}, {"address": "10.2.0.3"}]}]}
JSON

# Lcores: the control thread on CPU 0, the workers round-robin over the CPUs
# this process may use (so they share CPUs on a 2-CPU machine).
mapfile -t CPUS < <("$PY" -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
LCORES="0@${CPUS[0]}"
for w in $(seq 1 "$N_W"); do
	LCORES+=",$w@${CPUS[$((w % ${#CPUS[@]}))]}"
done
# shellcheck disable=SC2046
ip netns exec "$NS_L" timeout 300 "$SPW" $(spw_eal_mem) --no-pci --file-prefix "$PREFIX" \
	--lcores "$LCORES" --log-level 'lib.*:warning' \
	--vdev="net_af_packet0,iface=lb0,qpairs=$N_W" \
	-- --config "$WORK/spw.json" --control "$WORK/ctl.sock" --stats-file "$WORK/stats.json" \
	>"$WORK/spillwayd.log" 2>&1 &
SPW_PID=$!
e2e_wait_file "$WORK/ctl.sock" "$SPW_PID" 600 ||
	{ echo "FAIL: spillwayd did not open its control socket"; exit 1; }
grep -q "$N_W worker(s)" "$WORK/spillwayd.log" ||
	{ echo "FAIL: spillwayd did not start $N_W workers:"; cat "$WORK/spillwayd.log"; exit 1; }

# In the background and waited for: a signal to this script runs the cleanup.
ip netns exec "$NS_G" timeout 240 "$PY" "$HERE/multiworker_check.py" "$WORK/ctl.sock" \
	"$WORK/spw.json" g0 "$L_MAC" "$N_W" &
CHK_PID=$!
wait "$CHK_PID"
CHK_PID=

kill -TERM "$SPW_PID"
rc=0
wait "$SPW_PID" || rc=$?
SPW_PID=
[ "$rc" -eq 0 ] || { echo "FAIL: spillwayd exited with status $rc"; exit 1; }
if grep -q "runtime error:" "$WORK/spillwayd.log"; then
	echo "FAIL: undefined behaviour reported:"
	grep -A5 "runtime error:" "$WORK/spillwayd.log"
	exit 1
fi
