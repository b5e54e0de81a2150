#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# One bounded libFuzzer run, as a meson test:
#   run_fuzz.sh FUZZER CORPUS REGRESSIONS ARTIFACTS [libFuzzer options...]
# Fuzzes for ${SPW_FUZZ_SECONDS:-30} seconds over a copy of CORPUS and
# REGRESSIONS in a temporary directory (the source tree is never written).
# On a crash, the reproducer is kept in ARTIFACTS (in the build directory) and
# printed in hex; the exit status is libFuzzer's.
set -eu

fuzzer=$1 corpus=$2 regressions=$3 artifacts=$4
shift 4
seconds=${SPW_FUZZ_SECONDS:-30}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spw-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/corpus" "$tmp/crash"
cp "$corpus"/* "$tmp/corpus/"
if [ -d "$regressions" ]; then
	for f in "$regressions"/*; do
		[ -f "$f" ] && cp "$f" "$tmp/corpus/regression-$(basename "$f")"
	done
fi
n_in=$(ls "$tmp/corpus" | wc -l)
echo "run_fuzz: $(basename "$fuzzer") for ${seconds}s over $n_in inputs"

# libFuzzer writes logs to its working directory: keep that in $tmp too.
cd "$tmp"
status=0
# libFuzzer's own status for a crash is 77, which meson reads as "skipped":
# every bug libFuzzer reports (crash, leak, out of memory) and every timeout
# exits 1 instead.
"$fuzzer" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-artifact_prefix="$tmp/crash/" "$@" "$tmp/corpus" || status=$?

if [ "$status" -ne 0 ]; then
	mkdir -p "$artifacts"
	for f in "$tmp"/crash/*; do
		[ -f "$f" ] || continue
		cp "$f" "$artifacts/"
		echo "run_fuzz: reproducer kept as $artifacts/$(basename "$f") ($(wc -c <"$f") bytes):"
		od -An -tx1 -v "$f" | head -n 40
	done
	echo "run_fuzz: FAILED (status $status); replay with: $fuzzer $artifacts/<file>"
else
	echo "run_fuzz: corpus grew from $n_in to $(ls "$tmp/corpus" | wc -l) inputs, no crash"
fi
exit "$status"
