#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Health checks against a real spillwayd (net_null port, --no-huge) whose
# backends are loopback addresses with listeners health_check.py runs: a stop
# takes a backend out after fall failures, a restart brings it back after rise
# successes, an operator down wins, half failing at once fails open.
# usage: test_health.sh SPILLWAYD
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_health.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
# shellcheck source=daemon_lib.sh
. "$HERE/daemon_lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (DPDK without hugepages)"; exit 77; }
spw_test_begin health SPW_KEEP
$PY "$HERE/health_check.py" "$SPW" "$WORK" "$PREFIX" || {
	tail -30 "$WORK/spillwayd.log"
	fail "health_check.py"
}
