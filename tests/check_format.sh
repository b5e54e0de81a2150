#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every C source and header that git tracks (or that is new and not ignored)
# passes the repository's .clang-format. Prints the files that do not, with
# clang-format's first complaints, and the command that fixes them.
# usage: check_format.sh [SOURCE_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
command -v clang-format >/dev/null || { echo "check_format.sh: clang-format not found" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' |
		while read -r f; do [[ -f $f ]] && echo "$f"; done)
else
	mapfile -t files < <(find . -name '*.[ch]' -not -path './build*' | sort)
fi
# One clang-format process for the whole tree; only when it finds something is
# each file run alone, to name the ones that differ.
if clang-format --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
	echo "${#files[@]} C files checked against .clang-format, 0 not formatted"
	exit 0
fi
bad=()
for f in "${files[@]}"; do
	if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		bad+=("$f")
		clang-format --dry-run --Werror "$f" 2>&1 | head -n 6 | sed 's/^/    /' >&2 || true
	fi
done
echo "${#files[@]} C files checked against .clang-format, ${#bad[@]} not formatted"
if [[ ${#bad[@]} -gt 0 ]]; then
	echo "fix with: clang-format -i ${bad[*]}" >&2
	exit 1
fi
