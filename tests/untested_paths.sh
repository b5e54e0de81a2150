#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What this machine did not exercise: every meson test that was skipped (exit
# 77) with its "SKIP:" reason, and every code path whose hardware or kernel
# support is missing here, so a path that cannot run is reported as untested,
# never as passed. Ends with one line naming them all. Never fails.
# usage: untested_paths.sh BUILD_DIR...
set -uo pipefail
untested=()

for b in "$@"; do
	log=$b/meson-logs/testlog.json
	[[ -f $log ]] || continue
	while IFS=$'\t' read -r name reason; do
		echo "skipped in $b: $name: $reason"
		seen=0
		for u in "${untested[@]}"; do [[ $u == "$name ($reason)" ]] && seen=1; done
		[[ $seen = 1 ]] || untested+=("$name ($reason)")
	done < <(/usr/bin/python3 - "$log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t.get("result") != "SKIP":
        continue
    out = t.get("stdout") or ""
    why = [l[5:].strip() for l in out.splitlines() if l.startswith("SKIP:")]
    print("%s\t%s" % (t["name"].split(" / ")[-1], why[-1] if why else "no reason given"))
PY
	)
done

cpu() { grep -qw "$1" /proc/cpuinfo; }
cpu avx2 || untested+=("AVX2 paths: four-lane hash, eight-wide Maglev probe (no avx2)")
cpu avx512f || untested+=("AVX-512 paths: eight-lane hash in the pipeline, sixteen-wide Maglev probe (no avx512f)")
cpu avx512f && ! cpu avx512dq && untested+=("AVX-512 Maglev tail scan (no avx512dq)")
# valgrind 3.19 offers no AVX-512 on any machine: ipp_guard counts the
# pipeline's AVX2 path only (docs/benchmarks.md, "Instructions per packet").
untested+=("instructions per packet of the AVX-512 pipeline path (valgrind has no AVX-512; ipp_guard counts the AVX2 path)")

# Kernel IPIP and FOU/GUE decapsulation is the meson test xdp_e2e_kernel_decap,
# reported above when it was skipped.
if [[ $(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || echo 0) -eq 0 ]]; then
	untested+=("DPDK with hugepages (none reserved: EAL ran with --no-huge)")
fi
untested+=("physical NICs (only virtual devices here: net_pcap, net_memif, net_af_xdp on veth)")
# net_null, net_pcap and net_memif offer no TX checksum offload, no RX scatter
# and no LSC interrupt (dpdk-testpmd "show port 0 tx_offload capabilities"):
# the unit tests port_caps and pipeline_mtu check the choice and the mbuf
# request, nothing here has a NIC fill the checksum or raise the interrupt.
untested+=("outer IPv4 checksum by the NIC, RX scatter, LSC link interrupts (no virtual device here offers them)")

printf 'not exercised on this machine (%d):' "${#untested[@]}"
for u in "${untested[@]}"; do printf ' [%s]' "$u"; done
printf '\n'
