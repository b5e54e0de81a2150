#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every benchmark in one command (not part of the tests or CI):
#
#   ./scripts/bench.sh [--out PREFIX] [--runs N] [--memif-seconds S] [--quick]
#                           [--only pipeline,sketch,maglev,publish,memif]
#
# Builds build-bench/ (meson, buildtype debugoptimized, as docs/benchmarks.md
# measures), then runs scripts/bench.py: the in-process pipeline (3 runs), the
# sketch, Maglev rebuilds, publication latency under traffic, and the memif
# ratio spillgen -> spillwayd -> spillgen against dpdk-testpmd io-forward on the
# same wiring (3 alternated pairs of 5 s). Writes
# bench-results/DATE-HOST.{json,md,log} (or PREFIX.*): every figure, its target
# and met/missed, the machine; the .md is Markdown tables for
# docs/benchmarks.md. Takes about 3 minutes. Run it on a quiet machine: the
# figures are wall-clock. On a fresh machine, as root, it first installs what
# is missing (scripts/setup.sh). Not root: it re-executes itself through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
spw_as_root "$(pwd)/scripts/bench.sh" "" "DPDK processes, memif sockets" "$@"
if ! command -v dpdk-testpmd >/dev/null || ! command -v meson >/dev/null ||
	! pkg-config --exists libdpdk jansson 2>/dev/null; then
	./scripts/setup.sh >/dev/null
fi
if [ ! -f build-bench/build.ninja ]; then
	meson setup build-bench -Dbuildtype=debugoptimized -Dbenchmarks=enabled >&2
fi
ninja -C build-bench >&2
exec /usr/bin/python3 scripts/bench.py --build build-bench --cmdline "scripts/bench.sh $*" "$@"
