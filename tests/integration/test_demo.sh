#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's demo judges itself; this runs its quick mode
# (scripts/demo.sh --quick: part 1 only, 200 flows per VIP, on a veth pair
# between two namespaces the demo creates and removes) on the build under
# test, no installation:
#   quick   the demo must pass: exit 0, "demo part 1: PASS" and a last line
#           "demo: PASS";
#   broken  DEMO_DST_MAC=02:00:00:00:00:fe (frames to another host's MAC, the
#           demo's old mistake): the demo must fail: exit 1, part 1's verdict
#           FAIL naming the forwarded count and the not_our_mac drops, a last
#           line "demo: FAIL".
# The demo is bounded (timeout 300 here; its own steps are bounded too).
# usage: test_demo.sh quick|broken BUILD_DIR
set -euo pipefail
MODE=${1:?usage: test_demo.sh quick|broken BUILD_DIR}
BUILD=$(readlink -f "${2:?usage: test_demo.sh quick|broken BUILD_DIR}")
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces, DPDK)"; exit 77; }
/usr/bin/python3 -c 'import scapy' 2>/dev/null || { echo "SKIP: /usr/bin/python3 with scapy needed"; exit 77; }
command -v tcpdump >/dev/null || { echo "SKIP: tcpdump needed"; exit 77; }
ip netns add "spw-demo-probe-$$" 2>/dev/null || { echo "SKIP: cannot create network namespaces"; exit 77; }
ip netns del "spw-demo-probe-$$"

LOG=$(mktemp /tmp/spw-demo-test.XXXXXX)
trap 'rm -f "$LOG"' EXIT
rc=0
case $MODE in
quick) timeout -k 10 300 "$SRC/scripts/demo.sh" --quick --build "$BUILD" >"$LOG" 2>&1 || rc=$? ;;
broken)
	DEMO_DST_MAC=02:00:00:00:00:fe timeout -k 10 300 "$SRC/scripts/demo.sh" --quick --build "$BUILD" \
		>"$LOG" 2>&1 || rc=$?
	;;
*) echo "test_demo.sh: quick or broken, not $MODE" >&2; exit 2 ;;
esac
cat "$LOG"
last=$(tail -n 1 "$LOG")
echo "---"
echo "demo exit status $rc; last line: $last"
if [ "$MODE" = quick ]; then
	[ "$rc" -eq 0 ] || { echo "FAIL: the quick demo exited $rc, want 0"; exit 1; }
	grep -q '^demo part 1: PASS' "$LOG" || { echo "FAIL: no 'demo part 1: PASS' verdict"; exit 1; }
	[[ $last == "demo: PASS"* ]] || { echo "FAIL: the last line is not the verdict 'demo: PASS ...'"; exit 1; }
else
	[ "$rc" -eq 1 ] || { echo "FAIL: the broken demo exited $rc, want 1"; exit 1; }
	grep -q '^demo part 1: FAIL (.*forwarded 0, .*not_our_mac' "$LOG" ||
		{ echo "FAIL: part 1's verdict does not name the forwarded count and not_our_mac"; exit 1; }
	[[ $last == "demo: FAIL"* ]] || { echo "FAIL: the last line is not the verdict 'demo: FAIL ...'"; exit 1; }
fi
echo "ok: demo $MODE"
