#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Scale-out consistency (docs/scale-out.md): two spillwayd instances (net_null,
# no traffic needed, each its own --file-prefix and control socket) start
# from the same configuration file and must both publish the Maglev tables
# maglev_ref.py computes for it; then each is brought to the same membership
# through its own socket by a different history (orders, removes, weight and
# state changes, batches), and both tables must again equal the reference for
# that membership, slot for slot, backend ids mapped to addresses
# (maglev_table raw). consistency_check.py does the work.
#
# usage: test_consistency.sh SPILLWAYD [SEED]
# env:   SPW_CONS_KEEP=1   keep the work directory (printed at the end)
set -euo pipefail

SPW=${1:?usage: test_consistency.sh SPILLWAYD [SEED]}
SPW=$(readlink -f "$SPW")
SEED=${2:-1}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/daemon_lib.sh"
spw_test_begin cons SPW_CONS_KEEP

[[ -x $SPW ]] || fail "not executable: $SPW"
[[ -x $PY ]] || { echo "SKIP: $PY needed"; exit 77; }

cat >"$WORK/config.json" <<'EOF'
{"encap": {"source_v4": "10.0.0.1", "source_v6": "fd00::1",
           "next_hop_mac": "02:00:00:00:00:01"},
 "maglev": {"table_size": 65537, "seed": "scale-out-consistency"},
 "flows": {"capacity": 4096},
 "vips": [{"address": "10.100.0.1", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.3.1", "weight": 2}, {"address": "10.1.3.2"},
                        {"address": "10.1.3.3", "state": "draining"},
                        {"address": "10.1.3.4", "weight": 3}]},
          {"address": "10.100.0.2", "port": 53, "protocol": "udp", "key": "src_ip",
           "backends": [{"address": "10.1.4.1"}, {"address": "10.1.4.2", "weight": 0},
                        {"address": "10.1.4.3"}]}]}
EOF

# start TAG: an instance on net_null with its own prefix and socket; sets PID.
start() {
	local tag=$1
	"$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-$tag" -l 0-1 \
		--vdev=net_null0 -- --config "$WORK/config.json" --control "$WORK/$tag.sock" \
		>"$WORK/$tag.stdout" 2>"$WORK/$tag.stderr" &
	PID=$!
	PIDS+=("$PID")
}

start a
PID_A=$PID
start b
PID_B=$PID
wait_socket "$WORK/a.sock" "$PID_A" || { cat "$WORK/a.stderr"; fail "instance a did not start"; }
wait_socket "$WORK/b.sock" "$PID_B" || { cat "$WORK/b.stderr"; fail "instance b did not start"; }

PYTHONPATH=$HERE $PY "$HERE/consistency_check.py" "$WORK/config.json" "$WORK/a.sock" \
	"$WORK/b.sock" "$SEED" || fail "an instance's tables differ from the reference"

for p in "$PID_A" "$PID_B"; do
	kill -TERM "$p"
	set +e
	wait "$p"
	rc=$?
	set -e
	[[ $rc -eq 0 ]] || fail "spillwayd $p exited with $rc"
done
PIDS=()
echo "PASS: both instances publish the reference Maglev tables (seed $SEED)"
