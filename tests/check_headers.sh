#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every header in the tree compiles on its own, twice in a row (so its include
# guard works), with the project's warnings as errors. The list is the file
# system's, not a hand-kept one: a new header is checked the day it lands.
# usage: check_headers.sh SOURCE_ROOT CC [CC_ARGS...]
set -euo pipefail
root=${1:?usage: check_headers.sh SOURCE_ROOT CC [CC_ARGS...]}
shift
[[ $# -ge 1 ]] || { echo "usage: check_headers.sh SOURCE_ROOT CC [CC_ARGS...]" >&2; exit 2; }
cc=("$@")

# DPDK's headers trip -Wundef under clang unless they are system headers.
pkgs=(libdpdk jansson)
pkg-config --exists libbpf && pkgs+=(libbpf)
read -ra deps <<<"$(pkg-config --cflags "${pkgs[@]}" | sed 's/-I/-isystem /g')"
# The build's include path: the repository root (every project include is
# written from it), plus the two module folders for pktgen/ and bpf/ headers.
flags=(-std=gnu11 -D_GNU_SOURCE -I"$root" -I"$root/dataplane" -I"$root/control" -Wall -Wextra -Werror
	-Wmissing-prototypes -Wstrict-prototypes -Wshadow -Wformat-security -Wundef -Wvla)
# gcc-only, as in meson.build's get_supported_arguments.
if "${cc[@]}" -Werror -Wno-format-truncation -x c -c /dev/null -o /dev/null 2>/dev/null; then
	flags+=(-Wno-format-truncation)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
bad=0
while IFS= read -r -d '' h; do
	n=$((n + 1))
	printf '#include "%s"\n#include "%s"\n' "$h" "$h" >"$work/alone.c"
	if ! "${cc[@]}" "${flags[@]}" "${deps[@]}" -c "$work/alone.c" -o "$work/alone.o" \
		2>"$work/err"; then
		echo "FAIL: $h does not compile on its own:" >&2
		sed 's/^/    /' "$work/err" >&2
		bad=$((bad + 1))
	fi
done < <(find "$root/dataplane" "$root/control" "$root/bpf" "$root/pktgen" "$root/tests" \
	-name '*.h' -not -path '*/build*' -print0 | sort -z)
echo "$n headers checked, $bad failed"
[[ $n -gt 0 && $bad -eq 0 ]]
