# SPDX-License-Identifier: BSD-3-Clause
# Helpers sourced by the demo and test scripts.

# EAL memory arguments: hugepages when at least 256 free 2 MiB pages exist,
# else --no-huge (see ENVIRONMENT.md: not together with --in-memory).
spw_eal_mem() {
	local free
	free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
	if [ "$free" -ge 256 ] && mountpoint -q /dev/hugepages 2>/dev/null; then
		# --huge-unlink: EAL keeps its hugepage files after exit otherwise, and
		# with a new --file-prefix per run every run would leak 512 MiB.
		echo "-m 512 --huge-unlink"
	else
		echo "--no-huge -m 512"
	fi
}
