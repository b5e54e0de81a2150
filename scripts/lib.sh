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

# spw_as_root SCRIPT "VAR..." WHY ARGS...: returns at once as root. Otherwise
# re-executes SCRIPT (an absolute path) with ARGS through sudo when sudo is
# installed, passing on those of the environment variables VAR... that are
# set (sudo resets the environment); without sudo it says in one line that
# SCRIPT needs root, and WHY, and exits 1.
spw_as_root() {
	local self=$1 vars=$2 why=$3 v
	local keep=()
	shift 3
	[ "$(id -u)" -eq 0 ] && return 0
	if command -v sudo >/dev/null 2>&1; then
		for v in $vars; do
			[ -n "${!v+x}" ] && keep+=("$v=${!v}")
		done
		exec sudo -- env "${keep[@]}" "$self" "$@"
	fi
	echo "$(basename "$self"): needs root ($why) and sudo is not installed: run it as root" >&2
	exit 1
}
