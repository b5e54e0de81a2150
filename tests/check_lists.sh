#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The build refuses a tree in which a file it lists is missing: configures a
# scratch copy of the sources once as it is (must succeed), then once per
# probe with one listed file removed (must fail, naming the file). Guards
# against a test or a source that silently drops out of the build.
# usage: check_lists.sh SOURCE_ROOT
set -euo pipefail
root=${1:?usage: check_lists.sh SOURCE_ROOT}
work=$(mktemp -d /tmp/spw-lists.XXXXXX)
trap 'rm -rf "$work"' EXIT

# One probe per kind of list: a unit test, an integration script, a data-path
# source, a control source, a spillgen source, a spillctl source.
probes=(
	tests/unit/test_hash.c
	tests/integration/test_restart.sh
	dataplane/parse.c
	control/base/persist.c
	pktgen/gen.c
	control/spillctl/conn.c
)
copy() {
	rm -rf "$work/src" "$work/b"
	mkdir -p "$work/src"
	(cd "$root" && tar --exclude='./build*' --exclude='./.git' -cf - .) | tar -C "$work/src" -xf -
}
setup() {
	meson setup "$work/b" "$work/src" -Dbenchmarks=disabled >"$work/log" 2>&1
}

copy
if ! setup; then
	echo "FAIL: the unmodified tree does not configure:" >&2
	tail -n 20 "$work/log" >&2
	exit 1
fi
bad=0
for p in "${probes[@]}"; do
	copy
	[[ -f $work/src/$p ]] || { echo "FAIL: probe $p is not in the tree" >&2; bad=1; continue; }
	rm "$work/src/$p"
	if setup; then
		echo "FAIL: the build configured without $p" >&2
		bad=1
	elif ! grep -q "$(basename "$p")" "$work/log"; then
		echo "FAIL: without $p the build failed but did not name the file:" >&2
		tail -n 5 "$work/log" >&2
		bad=1
	else
		echo "ok: missing $p fails the build"
	fi
done
exit $bad
