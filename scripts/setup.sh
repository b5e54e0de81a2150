#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs every Debian 12 package spillway needs, prepares hugepages
# when the machine allows it, and builds into build/ (and build-asan/ with
# SAN=1). Safe to run again: it installs only what is missing and rebuilds
# incrementally. Prints the EAL memory arguments to use on its last line
# (to stdout) for scripts that source the result: see scripts/lib.sh.
# Needs root: as another user it re-executes itself through sudo when sudo is
# installed, else says in one line that it needs root (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
spw_as_root "$(pwd)/scripts/setup.sh" "SAN" "it installs packages and prepares hugepages" "$@"

PKGS=(
	build-essential pkg-config meson ninja-build
	dpdk dpdk-dev libdpdk-dev libjansson-dev libcmocka-dev
	libbpf-dev libxdp-dev clang llvm clang-format bpftool libpcap-dev libclang-rt-14-dev
	iproute2 iputils-ping tcpdump ethtool python3 python3-scapy bird2 frr prometheus
	debhelper lintian dpkg-dev git file man-db libcap2-bin valgrind
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

# Hugepages: 512 x 2 MiB when the kernel gives them; otherwise EAL runs with
# --no-huge (slower memory, same behaviour). Never fatal.
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ -w "$hp" ] && [ "$(cat "$hp")" -lt 512 ]; then
	echo 512 > "$hp" 2>/dev/null || true
fi
if ! mountpoint -q /dev/hugepages 2>/dev/null; then
	mkdir -p /dev/hugepages
	mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
fi

if [ ! -f build/build.ninja ]; then
	meson setup build >&2
fi
ninja -C build >&2
if [ "${SAN:-0}" = 1 ]; then
	if [ ! -f build-asan/build.ninja ]; then
		meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
			-Dbenchmarks=disabled >&2
	fi
	ninja -C build-asan >&2
fi
