#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite: install and build (scripts/setup.sh), check that every
# C file passes .clang-format, then every meson test (cmocka unit tests, the
# lint suite: headers alone, format, listed files, hot path; the integration
# tests) in the normal build, then again (all but the lint suite) in an
# ASan+UBSan build, then the libFuzzer harnesses for a bounded time in a clang
# build. Exits non-zero on the first failing stage. Benchmarks are not run
# here: see docs/benchmarks.md. Needs root: as another user it re-executes
# itself through sudo when sudo is installed, else says so (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
spw_as_root "$(pwd)/scripts/test.sh" "SOAK_SECONDS SOAK_SEGMENT SPW_FUZZ_SECONDS" \
	"packages, network namespaces, DPDK" "$@"
SAN=1 ./scripts/setup.sh

echo "== format (.clang-format over every C file)"
./tests/check_format.sh

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# DPDK's own libraries are not instrumented and keep allocations until exit;
# leak checking stays on for everything else.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1

echo "== tests (build/)"
meson test -C build --print-errorlogs --num-processes 2
echo "== tests under ASan + UBSan (build-asan/)"
# Not the lint suite: it reads the sources (and compiles headers with its own
# flags), so its verdict is the same in every build; build/ ran it above
# (docs/testing.md). The package suite is defined only without sanitizers.
# The soak runs its three segments (two kill -9 restarts from --state, the
# clean one with the leak and counter checks) of 20 s here, 30 s in build/.
SOAK_SECONDS=${SOAK_SECONDS:-60} SOAK_SEGMENT=${SOAK_SEGMENT:-20} \
	meson test -C build-asan --print-errorlogs --num-processes 2 --no-suite lint
echo "== fuzzers (clang + libFuzzer, ${SPW_FUZZ_SECONDS:-30} s each; see docs/fuzzing.md)"
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Db_sanitize=none -Dbenchmarks=disabled >/dev/null
fi
# Only what the fuzz suite runs: the harnesses and run_fuzz.sh's self-test
# (the rest of this clang build is not tested here). Two harnesses at a time.
ninja -C build-fuzz build.ninja >/dev/null # regenerated if a meson.build changed
mapfile -t fuzz_targets < <(meson introspect build-fuzz --targets | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    if t["type"] == "executable" and t["name"].startswith("fuzz_") and not t["name"].endswith("_replay"):
        print(os.path.relpath(t["filename"][0], "build-fuzz"))')
ninja -C build-fuzz "${fuzz_targets[@]}" >/dev/null
SPW_FUZZ_SECONDS=${SPW_FUZZ_SECONDS:-30} meson test -C build-fuzz --suite fuzz --no-rebuild \
	--print-errorlogs --num-processes 2
echo "== what this machine did not exercise"
./tests/untested_paths.sh build build-asan build-fuzz
echo "== all tests passed"
