#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Least privilege of the control socket and the state file, with real users:
# spillwayd (root, net_null) with --control-group GID (an otherwise unused gid)
# and --state; spillctl then runs as uid 65534 (setpriv, no user account
# needed) with and without that supplementary group. Checked:
#   - socket root:GID mode 0660, state file root:root mode 0600;
#   - a member of GID (not root) can read (vip list, stats) and change
#     (backend add) through spillctl; the change reaches the state file;
#   - the same uid without the group cannot connect (spillctl exit 3,
#     "Permission denied") nor read the state file;
#   - with --control-mode 0600 the group member is refused too;
#   - SIGTERM: exit 0, final stats with the mbuf pool full (mempool in_use 0);
#   - spillwayd itself as uid 65534 with no capability (empty effective and
#     bounding sets, --no-huge, EAL's runtime folder under XDG_RUNTIME_DIR)
#     forwards on net_null, answers on its socket and stops cleanly.
# usage: test_privilege.sh SPILLWAYD SPILLCTL
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_privilege.sh SPILLWAYD SPILLCTL}")
CTL_BIN=$(readlink -f "${2:?usage: test_privilege.sh SPILLWAYD SPILLCTL}")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (setpriv to another uid)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv not found"; exit 77; }
GID=${SPW_PRIV_GID:-47613}
NOBODY=65534
WORK=$(mktemp -d /tmp/spw-priv.XXXXXX)
PREFIX=spw-priv-$$
PID=
FAILED=0
cleanup() {
	rc=$?
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill "$PID"; wait "$PID" 2>/dev/null || true; fi
	rm -rf "/var/run/dpdk/$PREFIX"-* "$WORK"
	exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; FAILED=1; }

# The directory as an operator would set up /run/spillway: root:GID 0750.
chgrp "$GID" "$WORK"
chmod 0750 "$WORK"
cat >"$WORK/lb.json" <<'JSON'
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"}]}]}
JSON
SOCK=$WORK/ctl.sock

# start TAG [spillwayd options]
start() {
	local tag=$1
	shift
	rm -f "$SOCK"
	timeout -k 5 120 "$SPW" --no-huge -m 256 --no-pci --file-prefix "$PREFIX-$tag" -l 0-1 \
		--vdev=net_null0 -- --config "$WORK/lb.json" --control "$SOCK" \
		--stats-file "$WORK/$tag-stats.json" "$@" >"$WORK/$tag.log" 2>&1 &
	PID=$!
	for _ in $(seq 300); do
		[ -S "$SOCK" ] && "$CTL_BIN" -s "$SOCK" version >/dev/null 2>&1 && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "FAIL: spillwayd ($tag) did not come up:"; cat "$WORK/$tag.log"; exit 1
}

# stop TAG: SIGTERM, exit 0, final stats with every mbuf back in the pool
stop() {
	kill -TERM "$PID"
	set +e
	wait "$PID"
	local rc=$?
	set -e
	PID=
	[ "$rc" -eq 0 ] || fail "$1: spillwayd exited $rc"
	/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
m, t = s["mempool"], s["totals"]
assert m["in_use"] == 0 and m["available"] == m["size"], "mbufs leaked: %s" % m
assert t["rx_packets"] == t["forwarded"] + t["icmp_sent"] + t["exception"] + t["dropped"], t
print("  %s: final stats: rx %d, mempool size %d in_use %d" % (sys.argv[2], t["rx_packets"], m["size"], m["in_use"]))
' "$WORK/$1-stats.json" "$1" || fail "$1: final stats"
}

as_member() { setpriv --reuid "$NOBODY" --regid "$NOBODY" --groups "$GID" -- "$@"; }
as_other() { setpriv --reuid "$NOBODY" --regid "$NOBODY" --clear-groups -- "$@"; }

echo "== group $GID may operate, others may not"
start grp --state "$WORK/state.json" --control-group "$GID"
read -r mode owner group < <(stat -c '%a %u %g' "$SOCK")
[ "$mode" = 660 ] && [ "$owner" = 0 ] && [ "$group" = "$GID" ] ||
	fail "socket mode/owner $mode $owner:$group, want 660 0:$GID"
as_member "$CTL_BIN" -s "$SOCK" vip list >"$WORK/list.txt" 2>&1 || fail "member: vip list: $(cat "$WORK/list.txt")"
as_member "$CTL_BIN" -s "$SOCK" --json stats >/dev/null 2>&1 || fail "member: stats"
as_member "$CTL_BIN" -s "$SOCK" backend add 192.0.2.10:80/tcp 10.1.0.9 >/dev/null 2>&1 ||
	fail "member: backend add"
grep -q '10.1.0.9' "$WORK/state.json" || fail "the member's change is not in the state file"
read -r mode owner group < <(stat -c '%a %u %g' "$WORK/state.json")
[ "$mode" = 600 ] && [ "$owner" = 0 ] && [ "$group" = 0 ] ||
	fail "state file mode/owner $mode $owner:$group, want 600 0:0"
set +e
as_other "$CTL_BIN" -s "$SOCK" vip list >"$WORK/other.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] && grep -qi 'permission denied' "$WORK/other.txt" ||
	fail "non-member: spillctl exit $rc, want 3 with 'Permission denied': $(cat "$WORK/other.txt")"
if as_member cat "$WORK/state.json" >/dev/null 2>&1; then fail "a group member can read the state file"; fi
echo "  ok: socket 0660 root:$GID, member reads and changes, non-member refused; state 0600 root:root"
stop grp

echo "== --control-mode 0600: the group is refused too"
start owner --control-group "$GID" --control-mode 0600
[ "$(stat -c '%a' "$SOCK")" = 600 ] || fail "socket mode $(stat -c '%a' "$SOCK"), want 600"
set +e
as_member "$CTL_BIN" -s "$SOCK" vip list >"$WORK/owner.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "member with mode 0600: spillctl exit $rc, want 3"
"$CTL_BIN" -s "$SOCK" vip list >/dev/null || fail "root (owner) refused with mode 0600"
echo "  ok: mode 0600, group member refused, owner served"
stop owner

echo "== spillwayd itself as uid $NOBODY with no capability at all (net_null, --no-huge)"
# What docs/reliability.md says a net_null/net_pcap/net_memif deployment needs:
# an ordinary user, an empty bounding set, EAL's runtime folder under
# XDG_RUNTIME_DIR. The daemon forwards, answers on its socket, stops on SIGTERM
# with exit 0 and every mbuf back.
UP=$WORK/unpriv
mkdir -p "$UP/xdg"
chown -R "$NOBODY:$NOBODY" "$UP"
chmod 0700 "$UP"
cp "$WORK/lb.json" "$UP/lb.json"
chown "$NOBODY:$NOBODY" "$UP/lb.json"
SOCK=$UP/ctl.sock
timeout -k 5 120 setpriv --reuid "$NOBODY" --regid "$NOBODY" --groups "$GID" \
	--inh-caps=-all --bounding-set=-all -- env XDG_RUNTIME_DIR="$UP/xdg" \
	"$SPW" --no-huge -m 256 --no-pci --file-prefix "$PREFIX-unpriv" -l 0-1 --vdev=net_null0 \
	-- --config "$UP/lb.json" --control "$SOCK" --stats-file "$UP/stats.json" \
	>"$WORK/unpriv.log" 2>&1 &
PID=$!
up=0
for _ in $(seq 300); do
	[ -S "$SOCK" ] && "$CTL_BIN" -s "$SOCK" version >/dev/null 2>&1 && { up=1; break; }
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.1
done
[ "$up" = 1 ] || { echo "FAIL: unprivileged spillwayd did not come up:"; cat "$WORK/unpriv.log"; exit 1; }
DPID=$(pgrep -P "$PID" -x spillwayd || true)
[ -n "$DPID" ] || DPID=$(pgrep -f "file-prefix $PREFIX-unpriv" | head -n 1)
read -r uid caps < <(awk '/^Uid:/{u=$2} /^CapEff:/{c=$2} END{print u, c}' "/proc/$DPID/status")
[ "$uid" = "$NOBODY" ] || fail "spillwayd runs as uid $uid, want $NOBODY"
[ "$caps" = 0000000000000000 ] || fail "spillwayd has capabilities $caps, want none"
read -r bnd < <(awk '/^CapBnd:/{print $2}' "/proc/$DPID/status")
[ "$bnd" = 0000000000000000 ] || fail "bounding set $bnd, want empty"
# Let it forward for a while (bounded: the null PMD never runs dry).
for _ in $(seq 50); do
	rx=$("$CTL_BIN" -s "$SOCK" --json stats 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["rx_packets"])' || echo 0)
	[ "${rx:-0}" -gt 1000000 ] && break
	sleep 0.1
done
[ "${rx:-0}" -gt 0 ] || fail "unprivileged spillwayd received nothing"
echo "  ok: uid $uid, CapEff $caps, CapBnd $bnd, $rx packets received"
ln -s "$UP/stats.json" "$WORK/unpriv-stats.json"
stop unpriv

[ "$FAILED" -eq 0 ] || exit 1
echo "PASS"
