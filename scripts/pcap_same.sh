#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Behaviour check for a change that must not change behaviour: builds spillwayd
# at REV (default: the previous commit of HEAD's first parent chain, HEAD~1)
# in a scratch worktree, runs the pcap integration test
# (tests/integration/run_pcap_test.sh) with that binary and with build/spillwayd,
# both keeping their outputs, and compares every capture frame for frame
# (tests/integration/pcap_frames_equal.py; timestamps ignored). Run as root
# after ./scripts/setup.sh. usage: scripts/pcap_same.sh [REV]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REV=${1:-HEAD~1}
[[ -x build/spillwayd ]] || { echo "pcap_same.sh: build/spillwayd missing (run scripts/setup.sh)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/spw-pcap-same.XXXXXX)
cleanup() {
	git -C "$ROOT" worktree remove --force "$WORK/src" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
git worktree add -q --detach "$WORK/src" "$REV"
meson setup "$WORK/build" "$WORK/src" -Dbenchmarks=disabled -Dtests=disabled >/dev/null
ninja -C "$WORK/build" spillwayd >/dev/null
run() { # BINARY -> prints the kept work directory
	SPW_PCAP_KEEP=1 tests/integration/run_pcap_test.sh "$1" >"$WORK/$2.log" 2>&1 ||
		{ echo "pcap test failed with $1:" >&2; tail -n 20 "$WORK/$2.log" >&2; exit 1; }
	sed -n 's/^work directory kept: //p' "$WORK/$2.log"
}
A=$(run "$WORK/build/spillwayd" old)
B=$(run build/spillwayd new)
bad=0
n=0
while IFS= read -r -d '' f; do
	rel=${f#"$A"/}
	n=$((n + 1))
	if [[ ! -f $B/$rel ]]; then
		echo "$rel: missing in the new run"
		bad=1
	elif ! out=$(tests/integration/pcap_frames_equal.py "$f" "$B/$rel"); then
		echo "$rel: $out"
		bad=1
	else
		echo "$rel: $out"
	fi
done < <(find "$A" -name '*.pcap' -print0 | sort -z)
rm -rf "$A" "$B"
echo "$n captures compared between $REV and the working tree's build: $([ $bad = 0 ] && echo identical || echo DIFFERENT)"
exit $bad
