#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kill -9 during a stream of control-socket changes, restart, check nothing
# acknowledged was lost (restart_check.py). usage: test_restart.sh SPILLWAYD
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_restart.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d /tmp/spw-restart.XXXXXX)
trap 'rc=$?; rm -rf "$WORK"; exit $rc' EXIT
timeout 300 /usr/bin/python3 "$HERE/restart_check.py" "$SPW" "$WORK" "${SPW_RESTART_ROUNDS:-6}"
