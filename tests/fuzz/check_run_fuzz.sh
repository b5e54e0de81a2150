#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# run_fuzz.sh's verdict on a crash: check_run_fuzz.sh RUN_FUZZ SELFTEST
# Runs the deliberately crashing harness (fuzz_selftest.c) over a corpus that
# holds its crashing input. libFuzzer must find the crash and run_fuzz.sh must
# exit with a failure status: 0 would hide it, and 77 is what meson reports as
# a skip.
set -eu

run_fuzz=$1 selftest=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spw-fuzz-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/corpus"
printf 'crash' >"$tmp/corpus/crash"
printf 'fine' >"$tmp/corpus/fine"

status=0
SPW_FUZZ_SECONDS=10 "$run_fuzz" "$selftest" "$tmp/corpus" "$tmp/none" "$tmp/artifacts" \
	>"$tmp/log" 2>&1 || status=$?
case $status in
0)
	echo "check_run_fuzz: a crashing harness passed"
	exit 1
	;;
77)
	echo "check_run_fuzz: a crash came back as exit status 77, which meson reports as skipped"
	exit 1
	;;
esac
if ! ls "$tmp/artifacts"/crash-* >/dev/null 2>&1; then
	echo "check_run_fuzz: status $status but no reproducer kept"
	tail -n 20 "$tmp/log"
	exit 1
fi
echo "check_run_fuzz: crash reported as failure (status $status), reproducer kept"
