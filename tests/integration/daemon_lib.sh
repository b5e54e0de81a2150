# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the integration tests that run spillwayd themselves:
#   spw_test_begin TAG KEEPVAR   WORK (a new directory), PREFIX (DPDK --file-prefix
#                                stem, spw-TAG-PID), PIDS (append the PIDs you start),
#                                and an EXIT trap that stops those PIDs, removes
#                                /var/run/dpdk/PREFIX-*, and removes WORK unless the
#                                test failed or $KEEPVAR is set (then prints it).
#   fail MESSAGE...              print "FAIL: MESSAGE" and exit 1.
#   wait_socket PATH PID         until the control socket PATH accepts connections
#                                (1 if PID died or after 30 s); needs $PY.

spw_test_begin() {
	WORK=$(mktemp -d "/tmp/spw-$1.XXXXXX")
	PREFIX=spw-$1-$$
	PIDS=()
	SPW_TEST_KEEPVAR=$2
	trap spw_test_cleanup EXIT
	trap 'exit 130' INT TERM
}

spw_test_cleanup() {
	local rc=$? p
	for p in "${PIDS[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		fi
	done
	rm -rf "/var/run/dpdk/$PREFIX"-* 2>/dev/null || true
	if [[ -n ${!SPW_TEST_KEEPVAR:-} || $rc -ne 0 ]]; then
		echo "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

wait_socket() {
	local i
	for i in $(seq 1 300); do
		kill -0 "$2" 2>/dev/null || return 1
		$PY -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
			"$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
