#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The entry points a reader copies from README.md run as written both as root
# (a fresh Debian 12 machine has no sudo) and as a user with sudo:
#   - README.md's first command block is exactly two commands,
#     ./scripts/demo.sh and ./scripts/test.sh, and no command line of README.md
#     starts with sudo;
#   - each script that needs root (demo, test, setup, bench, mutate), started
#     as uid 65534 with a sudo on PATH, re-executes itself through it: the
#     (stand-in) sudo sees "-- env [VARS] /abs/path/scripts/X.sh ARGS", the
#     script's environment knobs passed on;
#   - started as uid 65534 with no sudo on PATH, it exits 1 with exactly one
#     line on stderr saying it needs root, and nothing on stdout.
# The stand-in sudo only records its arguments: nothing runs as root here.
# usage: test_root_entry.sh SOURCE_ROOT
set -euo pipefail
SRC=$(readlink -f "${1:?usage: test_root_entry.sh SOURCE_ROOT}")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (setpriv to another uid)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv not found"; exit 77; }
WORK=$(mktemp -d /tmp/spw-root-entry.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# README.md: the first indented block is the two commands.
awk '/^    [^ ]/ { print; found = 1; next } found { exit }' "$SRC/README.md" >"$WORK/first"
mapfile -t first < <(sed -E 's/^ +//; s/ +#.*$//' "$WORK/first")
if [ "${#first[@]}" -ne 2 ] || [ "${first[0]}" != ./scripts/demo.sh ] ||
	[ "${first[1]}" != ./scripts/test.sh ]; then
	fail "README.md's first block is not ./scripts/demo.sh and ./scripts/test.sh: $(tr '\n' '|' <"$WORK/first")"
fi
if grep -nE '^    +sudo( |edit)' "$SRC/README.md" >"$WORK/sudo-lines"; then
	fail "README.md command lines start with sudo: $(tr '\n' '|' <"$WORK/sudo-lines")"
fi

# A PATH with every command of /usr/bin and /bin but sudo, and one with a
# stand-in sudo that records its arguments (one per line) in $WORK/sudo.log.
mkdir -p "$WORK/nosudo" "$WORK/withsudo"
# (Later directories first, so a name in an earlier one wins, as on PATH.)
for d in /sbin /usr/sbin /bin /usr/bin /usr/local/bin; do
	[ -d "$d" ] && ln -sf "$d"/* "$WORK/nosudo/" 2>/dev/null || true
done
rm -f "$WORK/nosudo/sudo" "$WORK/nosudo/sudoedit"
cat >"$WORK/withsudo/sudo" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$WORK/sudo.log"
EOF
chmod 755 "$WORK/withsudo/sudo"
touch "$WORK/sudo.log"
chmod 666 "$WORK/sudo.log"

as_nobody() {
	local path=$1
	shift
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -i HOME=/ PATH="$path" "$@"
}

for s in demo test setup bench mutate; do
	script=$SRC/scripts/$s.sh
	[ -x "$script" ] || { fail "scripts/$s.sh missing or not executable"; continue; }

	: >"$WORK/sudo.log"
	rc=0
	(cd "$SRC" && as_nobody "$WORK/withsudo:$WORK/nosudo" FLOWS=7 KEEP=1 \
		timeout 20 "./scripts/$s.sh" --help) >"$WORK/out" 2>"$WORK/err" || rc=$?
	mapfile -t args <"$WORK/sudo.log"
	want_self=$SRC/scripts/$s.sh
	if [ "${#args[@]}" -lt 3 ] || [ "${args[0]}" != -- ] || [ "${args[1]}" != env ]; then
		fail "$s.sh with sudo: not re-executed through sudo (rc $rc; sudo saw: ${args[*]:-nothing}; stderr: $(head -n 2 "$WORK/err" | tr '\n' '|'))"
	else
		n=${#args[@]}
		[ "${args[n - 2]}" = "$want_self" ] && [ "${args[n - 1]}" = --help ] ||
			fail "$s.sh with sudo: sudo saw ${args[*]}, want ... $want_self --help"
		if [ "$s" = demo ]; then
			printf '%s\n' "${args[@]}" | grep -qx 'FLOWS=7' && printf '%s\n' "${args[@]}" | grep -qx 'KEEP=1' ||
				fail "demo.sh with sudo: FLOWS and KEEP not passed on: ${args[*]}"
		fi
		echo "ok: $s.sh as uid 65534 re-executes through sudo"
	fi

	rc=0
	(cd "$SRC" && as_nobody "$WORK/nosudo" timeout 20 "./scripts/$s.sh") \
		>"$WORK/out" 2>"$WORK/err" || rc=$?
	lines=$(wc -l <"$WORK/err")
	if [ "$rc" -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -q "needs root" "$WORK/err" || [ -s "$WORK/out" ]; then
		fail "$s.sh without sudo: rc $rc (want 1), $lines stderr lines (want one saying it needs root): $(head -n 3 "$WORK/err" | tr '\n' '|')"
	else
		echo "ok: $s.sh as uid 65534 without sudo: $(cat "$WORK/err")"
	fi
done

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "root entry points: all checks passed"
