#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The integration tests' Maglev oracle (maglev_ref.py, lbhash.py) against the
# daemon's builder and flow pick (maglev_dump, built from control/ and
# dataplane/) on random memberships and flows: maglev_ref_check.py does the work.
# usage: test_maglev_ref.sh MAGLEV_DUMP [CASES] [RNG_SEED]
# env:   SPW_MAGLEV_REF_CASES (default 120), SPW_MAGLEV_REF_SEED (default 2026)
set -euo pipefail
DUMP=$(readlink -f "${1:?usage: test_maglev_ref.sh MAGLEV_DUMP [CASES] [RNG_SEED]}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
[[ -x $PY ]] || { echo "SKIP: $PY needed"; exit 77; }
[[ -x $DUMP ]] || { echo "FAIL: not executable: $DUMP"; exit 1; }
CASES=${2:-${SPW_MAGLEV_REF_CASES:-120}}
SEED=${3:-${SPW_MAGLEV_REF_SEED:-2026}}
# Nothing to clean up but the checker itself: stop it if we are interrupted.
CHILD=
cleanup() {
	local rc=$?
	if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
		kill "$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
$PY "$HERE/maglev_ref_check.py" "$DUMP" "$CASES" "$SEED" &
CHILD=$!
wait "$CHILD"
CHILD=
echo "test_maglev_ref: PASS"
