#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Soak: spillgen traffic into spillwayd over memif (pktgen/run-memif.sh) while
# soak_driver.py churns membership and batches through the control socket,
# sends hostile clients and SIGHUP reloads, in segments of SOAK_SEGMENT
# seconds (default 30) for SOAK_SECONDS in all (default 90). Every segment but
# the last ends with kill -9 of spillwayd; the next segment restarts it from
# --state (both sides are restarted per segment: run-memif.sh stops spillgen
# when its spillwayd dies). The driver keeps its own model of the
# configuration: a change enters it only when the daemon acknowledges it (a
# batch as a whole: all its calls or, if one fails, none), a SIGHUP makes it
# the config file's content; it also predicts which calls the daemon must
# refuse. Checked against that model, never against the daemon's own reading
# of itself: config_get and the state file (valid, mode 0600) after every
# operation, after each restart from --state, after each kill -9 (the state
# file) and at the end; every VIP's Maglev table (maglev_table raw, paged),
# slot for slot against maglev_ref.py's table for the model, after each
# (re)start and at the end of each segment; the socket mode is 0660 by default and --control-mode
# (0600 in the last segment) is honoured; no crash but the intended kills (exit statuses, no
# sanitizer/segfault lines in the logs); the last, clean segment's counters
# conserve packets, and its final stats (written after the ports are closed)
# show the mbuf pool full again (mempool in_use 0: no leaked mbufs).
# usage: test_soak.sh BUILD_DIR
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: test_soak.sh BUILD_DIR}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/integration
[ -x "$BUILD/pktgen/spillgen" ] || { echo "SKIP: spillgen not built"; exit 77; }
TOTAL=${SOAK_SECONDS:-90}
SEG=${SOAK_SEGMENT:-30}
NSEG=$(( (TOTAL + SEG - 1) / SEG ))
[ "$NSEG" -ge 2 ] || NSEG=2
WORK=$(mktemp -d /tmp/spw-soak.XXXXXX)
DRIVER=
KEPT=()
cleanup() {
	rc=$?
	if [ -n "$DRIVER" ] && kill -0 "$DRIVER" 2>/dev/null; then kill "$DRIVER"; wait "$DRIVER" 2>/dev/null || true; fi
	for d in "${KEPT[@]}"; do rm -rf "$d"; done
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT

cat >"$WORK/lb.json" <<'JSON'
{
  "encap":  {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01", "mtu": 1500},
  "maglev": {"table_size": 65537, "seed": "soak-test"},
  "flows":  {"capacity": 65536},
  "vips": [
    {"address": "192.0.2.10", "port": 80, "protocol": "tcp", "key": "5tuple", "encap": "ipip",
     "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"},
                  {"address": "10.1.0.3"}, {"address": "10.1.0.4"}]}
  ]
}
JSON
STATE=$WORK/state.json
CTL=$WORK/ctl.sock
FAIL=0
KILLS=0
t_start=$(date +%s)
for i in $(seq 1 "$NSEG"); do
	if [ "$i" -lt "$NSEG" ]; then END=kill; MODE=; else END=keep; MODE=0600; fi
	LB_ARGS="--state $STATE --control $CTL${MODE:+ --control-mode $MODE}"
	/usr/bin/python3 "$HERE/soak_driver.py" "$WORK/lb.json" "$STATE" "$CTL" "$((SEG - 4))" \
		"$END" "$WORK/model.json" "$i" ${MODE:+$MODE} >"$WORK/driver-$i.txt" 2>&1 &
	DRIVER=$!
	set +e
	LB_ARGS=$LB_ARGS timeout $((SEG + 120)) bash -c 'echo $$ >"$0"; exec "$@"' "$WORK/memif.pid" "$ROOT/pktgen/run-memif.sh" -b "$BUILD" -c "$WORK/lb.json" -k -- \
		-d "$SEG" -r 50k -f 10000 -z 1 --json "$WORK/results-$i.json" --no-progress -q \
		>"$WORK/memif-$i.txt" 2>&1
	RC=$?
	MP=$(cat "$WORK/memif.pid" 2>/dev/null || true)
	[ -n "$MP" ] && rm -rf "/var/run/dpdk/spillgen-$MP" "/var/run/dpdk/spillwayd-$MP"
	# The driver ends before spillgen (or kills the daemon, which ends the
	# run); one still running now waits for a daemon that will not come.
	for _ in $(seq 200); do kill -0 "$DRIVER" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$DRIVER" 2>/dev/null; then
		kill "$DRIVER"
		echo "FAIL: still running 20 s after run-memif.sh ended (exit $RC): stopped" >>"$WORK/driver-$i.txt"
	fi
	wait "$DRIVER"
	DRC=$?
	DRIVER=
	set -e
	D=$(sed -n 's/^work directory kept: //p' "$WORK/memif-$i.txt")
	[ -n "$D" ] && KEPT+=("$D")
	RETRIES=$(grep -c 'restarting both sides' "$WORK/memif-$i.txt" || true)
	echo "segment $i ($END): run-memif.sh exit $RC, memif link retries $RETRIES; $(tail -n 1 "$WORK/driver-$i.txt")"
	if [ "$DRC" -ne 0 ]; then echo "FAIL: driver: $(cat "$WORK/driver-$i.txt")"; FAIL=1; break; fi
	if [ "$END" = kill ]; then
		KILLS=$((KILLS + 1))
		grep -q 'spillwayd exited 137' "$WORK/memif-$i.txt" ||
			{ echo "FAIL: spillwayd did not end by the intended SIGKILL"; cat "$WORK/memif-$i.txt"; FAIL=1; break; }
	elif [ "$RC" -ne 0 ]; then
		echo "FAIL: clean segment exited $RC"; cat "$WORK/memif-$i.txt"; FAIL=1; break
	fi
	if grep -E -i 'AddressSanitizer|runtime error|Segmentation|core dumped|LeakSanitizer' \
		"$WORK/memif-$i.txt" ${D:+"$D/spillwayd.log"}; then
		echo "FAIL: crash or sanitizer report in segment $i"; FAIL=1; break
	fi
done
[ "$FAIL" -eq 0 ] || exit 1
D=${KEPT[-1]}
/usr/bin/python3 - "$D/spillwayd-stats.json" "$STATE" "$WORK/model.json" "$WORK"/driver-*.txt <<'PY'
import json, re, sys
t = json.load(open(sys.argv[1]))["totals"]
st, model = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
# The driver's model: every acknowledged change, applied by the driver itself.
got = {"%s:%s/%s" % (v["address"], v["port"], v["protocol"]):
       {b["address"]: [b.get("weight", 1), b.get("state", "active")] for b in v.get("backends", [])}
       for v in st["vips"]}
assert got == model, "final state file != the driver's model:\n %s\n %s" % (got, model)
assert t["rx_packets"] == t["forwarded"] + t["icmp_sent"] + t["exception"] + t["dropped"], t
assert t["dropped"] == sum(t["drops"].values()), t
# Written after the ports are closed: every mbuf back in the pool.
mp = json.load(open(sys.argv[1])).get("mempool")
assert mp is not None and mp["in_use"] == 0 and mp["available"] == mp["size"], \
    "mbufs leaked: mempool %s" % mp
tot = {}
for f in sys.argv[4:]:
    for k, v in re.findall(r"(\w+)=(\d+)", open(f).read()):
        tot[k] = tot.get(k, 0) + int(v)
print("final clean segment: rx %d = forwarded %d + icmp %d + exception %d + dropped %d %s"
      % (t["rx_packets"], t["forwarded"], t["icmp_sent"], t["exception"], t["dropped"],
         {k: v for k, v in t["drops"].items() if v}))
print("mempool after the clean stop: size %d, available %d, in_use %d"
      % (mp["size"], mp["available"], mp["in_use"]))
print("driver totals: %s" % tot)
PY
echo "PASS: $NSEG segments, $(( $(date +%s) - t_start )) s, $KILLS kill -9 + restarts from --state; nothing acknowledged lost"
