#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Group commit of the state file: pipelined changes share fsyncs, kill -9 after
# the replies loses none, a failed write refuses the whole group
# (group_commit_check.py). usage: test_group_commit.sh SPILLWAYD
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_group_commit.sh SPILLWAYD}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (tmpfs mount, ptrace)"; exit 77; }
command -v strace >/dev/null || { echo "SKIP: strace not installed"; exit 77; }
WORK=$(mktemp -d /tmp/spw-gc.XXXXXX)
trap 'rc=$?; umount "$WORK/mnt" 2>/dev/null || true; rm -rf "$WORK"; exit $rc' EXIT
timeout 240 /usr/bin/python3 "$HERE/group_commit_check.py" "$SPW" "$WORK"
