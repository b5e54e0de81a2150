#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# spillwayd's command line outside a run, as other daemons behave:
#   - --version (with or without "--") prints "spillwayd VERSION", exit 0;
#   - bare spillwayd, EAL arguments without "--", an unknown option after
#     "--", a missing option argument and a stray argument: exit 2, at most
#     three lines on stderr (the cause, one usage line, a pointer to --help),
#     nothing on stdout;
#   - --help: exit 0, every line of it at most 80 columns, and the AF_XDP
#     example's --vdev value whole on one line (a copy of it must work).
# Options are parsed before EAL starts: no root, no DPDK device needed.
# usage: test_options.sh SPILLWAYD
set -euo pipefail
SPW=$(readlink -f "${1:?usage: test_options.sh SPILLWAYD}")
WORK=$(mktemp -d /tmp/spw-options.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# run NAME ARGS...: runs spillwayd, sets RC, output in $WORK/NAME.{out,err}.
run() {
	local name=$1
	shift
	RC=0
	timeout -k 2 10 "$SPW" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null || RC=$?
}

for v in --version -V "-- --version"; do
	# shellcheck disable=SC2086
	run version $v
	[[ $RC -eq 0 ]] || fail "spillwayd $v: exit $RC, want 0 ($(head -n 1 "$WORK/version.err"))"
	grep -qE '^spillwayd [0-9]+\.[0-9]+' "$WORK/version.out" ||
		fail "spillwayd $v: stdout is not 'spillwayd VERSION': $(head -n 1 "$WORK/version.out")"
done

# usage_error LABEL PATTERN ARGS...: exit 2, a short stderr naming PATTERN,
# a usage line and --help.
usage_error() {
	local label=$1 pattern=$2 before=$fails
	shift 2
	run err "$@"
	local lines
	lines=$(wc -l <"$WORK/err.err")
	[[ $RC -eq 2 ]] || fail "$label: exit $RC, want 2"
	[[ ! -s $WORK/err.out ]] || fail "$label: wrote to stdout"
	((lines >= 1 && lines <= 3)) || {
		fail "$label: $lines lines on stderr, want 1 to 3:"
		head -n 5 "$WORK/err.err" >&2
	}
	grep -q -- "$pattern" "$WORK/err.err" || fail "$label: stderr does not name '$pattern'"
	grep -q '^Usage: spillwayd ' "$WORK/err.err" || fail "$label: no usage line"
	grep -q -- "spillwayd --help" "$WORK/err.err" || fail "$label: no pointer to --help"
	[[ $fails -gt $before ]] || echo "ok: $label: exit 2, $lines lines"
}
usage_error "bare spillwayd" "--config"
usage_error "EAL arguments without --" '"--"' -l 0-1 --no-pci
usage_error "unknown option after --" "--bogus" -- --bogus
usage_error "unknown short option" "-- 'q'\|-q\|'q'" -- -q
usage_error "missing argument" "--config" -- --config
usage_error "stray argument" "extra" -- --config x.json extra
usage_error "no --config" "--config" -- --stats-file s.json

run help --help
[[ $RC -eq 0 ]] || fail "--help: exit $RC"
long=$(awk 'length($0) > 80 { n++ } END { print n + 0 }' "$WORK/help.out")
[[ $long -eq 0 ]] || fail "--help: $long lines over 80 columns"
grep -q -- '--vdev=net_af_xdp0,iface=[^ ]*,start_queue=0,queue_count=1\( \|$\)' "$WORK/help.out" ||
	fail "--help: the AF_XDP example's --vdev value is not on one line: $(grep -A1 'net_af_xdp0' "$WORK/help.out" | tr '\n' '|')"

[[ $fails -eq 0 ]] || { echo "$fails failure(s)" >&2; exit 1; }
echo "options: all checks passed"
