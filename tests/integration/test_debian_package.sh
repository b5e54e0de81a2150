#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The Debian package, checked by Debian's own tools: the tracked tree (git
# ls-files) is copied to a scratch directory and built with
# `dpkg-buildpackage -b -uc -us` (DEB_BUILD_OPTIONS="nocheck parallel=2");
# lintian must report no error, every warning it keeps must be named in
# docs/operations.md, and the only override is the BPF object's; the .deb's
# files (dpkg -x into a scratch root) must equal the list below, its conffiles
# the two /etc files; the unit passes `systemd-analyze verify` with the scratch
# root's binaries and man pages, silently; the man pages carry every line of
# the installed programs' --help. Then the installed programs run: spillwayd
# with the shipped configuration and /etc/default/spillway's arguments under
# the unit's capability bounding set, answering the installed spillctl, then
# the unit's stop sequence (spillctl drain, SIGTERM); the pcap integration case
# (run_pcap_test.sh) with the installed spillwayd and spillgen's capture test
# with the installed spillgen.
#
# usage: test_debian_package.sh SOURCE_ROOT
# env:   SPW_DEB_KEEP=1   keep the work directory (printed at the end)
set -euo pipefail

SRC=$(readlink -f "${1:?usage: test_debian_package.sh SOURCE_ROOT}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
# shellcheck source=daemon_lib.sh
. "$HERE/daemon_lib.sh"

for tool in dpkg-buildpackage dpkg-checkbuilddeps dh lintian systemd-analyze git setpriv capsh man lexgrog file; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (scripts/setup.sh installs it)"; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (EAL for the installed binaries)"; exit 77; }
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: $SRC is not a git checkout"; exit 77; }
if ! missing=$(cd "$SRC" && dpkg-checkbuilddeps -B 2>&1); then
	echo "SKIP: build dependencies missing: ${missing#*: }"
	exit 77
fi

spw_test_begin deb SPW_DEB_KEEP
T0=$SECONDS
step() { echo "== [$((SECONDS - T0)) s] $*"; }

# --- 1: build from a copy of the tracked files --------------------------------
step "copy (git ls-files) and dpkg-buildpackage -b -uc -us"
mkdir "$WORK/src"
git -C "$SRC" ls-files -z | (cd "$SRC" && tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
if ! (cd "$WORK/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -b -uc -us) \
	>"$WORK/build.log" 2>&1; then
	tail -40 "$WORK/build.log"
	fail "dpkg-buildpackage failed (log: $WORK/build.log)"
fi
VER=$(cd "$WORK/src" && dpkg-parsechangelog -S Version)
MESON_VER=$(sed -n "s/^[[:space:]]*version: '\([^']*\)',\$/\1/p" "$SRC/meson.build" | head -1)
[[ $VER == "$MESON_VER" ]] || fail "debian/changelog version $VER != meson project version $MESON_VER"
DEB=$WORK/spillway_${VER}_amd64.deb
CHANGES=$WORK/spillway_${VER}_amd64.changes
[[ -f $DEB && -f $CHANGES ]] || fail "expected $DEB and $CHANGES"
echo "  ok: built spillway $VER ($(stat -c %s "$DEB") bytes)"

# --- 2: lintian ---------------------------------------------------------------
step "lintian"
lintian --fail-on none --show-overrides -I "$CHANGES" >"$WORK/lintian.log" 2>&1 || true
sed 's/^/  /' "$WORK/lintian.log"
grep -q '^E: ' "$WORK/lintian.log" && fail "lintian reports errors"
grep -Eq '^[EWIP]: spillway' "$WORK/lintian.log" || grep -q '^O: ' "$WORK/lintian.log" ||
	fail "lintian printed nothing about the package (did it run?)"
while read -r tag; do
	grep -q -- "$tag" "$SRC/docs/operations.md" ||
		fail "lintian warning $tag is not listed in docs/operations.md"
done < <(sed -n 's/^W: [^ ]* \([a-z0-9-]*\).*/\1/p' "$WORK/lintian.log" | sort -u)
overrides=$(sed -n 's/^O: [^ ]* \([a-z0-9-]*\).*/\1/p' "$WORK/lintian.log" | sort -u | tr '\n' ' ')
[[ $overrides == "binary-from-other-architecture " ]] ||
	fail "lintian overrides in use: '$overrides' (expected only binary-from-other-architecture)"
echo "  ok: no lintian error; overridden: $overrides"

# --- 3: contents --------------------------------------------------------------
step "contents (dpkg -x)"
R=$WORK/root
dpkg -x "$DEB" "$R"
EXPECTED=(
	etc/default/spillway
	etc/spillway/spillway.json
	lib/systemd/system/spillwayd.service
	usr/bin/spillctl
	usr/bin/spillgen
	usr/lib/x86_64-linux-gnu/spillway/xsk_steer.bpf.o
	usr/sbin/spillwayd
	usr/share/doc/spillway/changelog.gz
	usr/share/doc/spillway/copyright
	usr/share/lintian/overrides/spillway
	usr/share/man/man8/spillctl.8.gz
	usr/share/man/man8/spillgen.8.gz
	usr/share/man/man8/spillwayd.8.gz
)
diff <(printf '%s\n' "${EXPECTED[@]}" | sort) <(cd "$R" && find . -type f -o -type l | sed 's|^\./||' | sort) ||
	fail "files in the .deb differ from the expected list (< expected, > packaged)"
for f in usr/sbin/spillwayd usr/bin/spillctl usr/bin/spillgen; do
	[[ -x $R/$f ]] || fail "$f is not executable"
done
file -b "$R/usr/lib/x86_64-linux-gnu/spillway/xsk_steer.bpf.o" | grep -q 'eBPF' ||
	fail "xsk_steer.bpf.o is not a BPF object: $(file -b "$R/usr/lib/x86_64-linux-gnu/spillway/xsk_steer.bpf.o")"
# spillwayd falls back to this path when neither --xdp-prog, $SPILLWAY_XSK_OBJ nor a
# build tree's object is there.
grep -aq '/usr/lib/x86_64-linux-gnu/spillway/xsk_steer.bpf.o' "$R/usr/sbin/spillwayd" ||
	fail "spillwayd does not look for the XDP object where the package installs it"
mkdir "$WORK/ctl"
dpkg-deb -e "$DEB" "$WORK/ctl"
diff <(printf '%s\n' /etc/default/spillway /etc/spillway/spillway.json) <(sort "$WORK/ctl/conffiles") ||
	fail "conffiles differ"
grep -q 'addgroup --quiet --system spillway' "$WORK/ctl/postinst" || fail "postinst does not create the group"
sh -n "$WORK/ctl/postinst" || fail "postinst is not valid sh"
deps=$(dpkg-deb -f "$DEB" Depends)
for d in adduser libjansson4 libbpf1 librte-eal23 librte-ethdev23; do
	[[ $deps == *"$d"* ]] || fail "Depends lacks $d: $deps"
done
echo "  ok: ${#EXPECTED[@]} files, conffiles, postinst, Depends: $deps"

# --- 4: the unit --------------------------------------------------------------
step "systemd-analyze verify spillwayd.service"
UNIT=$R/lib/systemd/system/spillwayd.service
for line in 'EnvironmentFile=-/etc/default/spillway' 'RuntimeDirectory=spillway' \
	'StateDirectory=spillway' 'Group=spillway' 'Restart=on-failure' \
	'ExecReload=/bin/kill -HUP $MAINPID' 'KillSignal=SIGTERM'; do
	grep -qxF "$line" "$UNIT" || fail "unit lacks '$line'"
done
grep -Eq '^ExecStart=/usr/sbin/spillwayd \$SPILLWAYD_EAL_ARGS -- .*\$SPILLWAYD_ARGS$' "$UNIT" ||
	fail "ExecStart does not take /etc/default/spillway's variables"
grep -Eq '^ExecStop=-/usr/bin/spillctl .* drain$' "$UNIT" || fail "ExecStop is not spillctl drain"
grep -Eq '^ExecStopPost=-/usr/sbin/spillwayd \$SPILLWAYD_EAL_ARGS -- .*\$SPILLWAYD_ARGS --bird-withdraw$' "$UNIT" ||
	fail "ExecStopPost is not spillwayd --bird-withdraw on /etc/default/spillway's variables"
# The same unit with the scratch root's binaries (verify checks that they exist and
# run man on Documentation=); verify exits 0 on a line it ignores, so any output fails.
mkdir "$WORK/unit"
sed -e "s#/usr/sbin/spillwayd#$R/usr/sbin/spillwayd#g; s#/usr/bin/spillctl#$R/usr/bin/spillctl#g" \
	"$UNIT" >"$WORK/unit/spillwayd.service"
if ! out=$(MANPATH=$R/usr/share/man systemd-analyze verify "$WORK/unit/spillwayd.service" 2>&1) ||
	[[ -n $out ]]; then
	fail "systemd-analyze verify: $out"
fi
echo "  ok: verify silent"

# --- 5: man pages -------------------------------------------------------------
step "man pages against the installed programs' --help"
for p in usr/sbin/spillwayd usr/bin/spillctl usr/bin/spillgen; do
	name=${p##*/}
	page=$R/usr/share/man/man8/$name.8.gz
	warn=$(man --warnings -l "$page" 2>&1 >/dev/null) || true
	[[ -z $warn ]] || fail "$name.8: man warnings: $warn"
	lexgrog "$page" | grep -q "\"$name - " || fail "$name.8: no whatis entry: $(lexgrog "$page")"
	MANWIDTH=250 man -l "$page" 2>/dev/null | col -b >"$WORK/$name.man"
	"$R/$p" --help >"$WORK/$name.help"
	$PY - "$WORK/$name.help" "$WORK/$name.man" <<'PY' || fail "$name.8 does not carry its --help"
import sys
man = {" ".join(l.split()) for l in open(sys.argv[2])}
lines = [" ".join(l.split()) for l in open(sys.argv[1]) if l.strip()]
lines = [l.split(":", 1)[1].strip() if l.startswith("Usage:") else l for l in lines]
miss = [l for l in lines if l not in man and l.rstrip(":").upper() not in man]
for l in miss[:5]:
    print("  missing from the man page:", l)
sys.exit(1 if miss else 0)
PY
done
echo "  ok: 3 pages, no man warnings, whatis entries, every --help line"

# --- 6: the installed daemon with the shipped configuration -------------------
step "installed spillwayd + spillctl: shipped config, /etc/default arguments, unit's capabilities, stop sequence"
(
	set -a
	# shellcheck disable=SC1091
	. "$R/etc/default/spillway"
	set +a
	printf '%s\n' "$SPILLWAYD_EAL_ARGS" >"$WORK/eal_args"
	printf '%s\n' "$SPILLWAYD_ARGS" >"$WORK/args"
	printf '%s\n' "$SPILLWAY_CONTROL" >"$WORK/control"
)
[[ $(cat "$WORK/control") == /run/spillway/spillwayd.sock ]] || fail "SPILLWAY_CONTROL is not spillctl's default"
# The defaults' daemon arguments with their paths moved into the scratch root and
# WORK (the group spillway does not exist here: gid 0 instead); EAL on net_null.
read -r -a ARGS < <(sed -e "s#/etc/spillway/#$R/etc/spillway/#g; s#/var/lib/spillway/#$WORK/state/#g" \
	-e 's#--control-group spillway#--control-group 0#' "$WORK/args")
[[ " ${ARGS[*]} " == *" --config $R/etc/spillway/spillway.json "* ]] || fail "defaults do not use the shipped config"
mkdir -m 0700 "$WORK/state"
mkdir -m 0750 "$WORK/run"
SOCK=$WORK/run/spillwayd.sock
CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
setpriv --bounding-set "-all,$CAPS" -- "$R/usr/sbin/spillwayd" --no-huge -m 256 --no-pci \
	--file-prefix "$PREFIX-d" -l 0-1 --vdev=net_null0 \
	-- --control "$SOCK" "${ARGS[@]}" >"$WORK/daemon.out" 2>"$WORK/daemon.err" &
DPID=$!
PIDS+=("$DPID")
wait_socket "$SOCK" "$DPID" || { cat "$WORK/daemon.err"; fail "spillwayd did not serve $SOCK"; }
# The running daemon's bounding set, decoded by capsh, is the unit's.
bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' "/proc/$DPID/status")
have=$(capsh --decode="0x$bnd" | sed 's/^0x[0-9a-f]*=//' | tr ',' '\n' | sort | tr '\n' ' ')
want=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr 'A-Z ' 'a-z\n' | sort | tr '\n' ' ')
[[ $have == "$want" ]] || fail "daemon's bounding set '$have' is not the unit's '$want'"
"$R/usr/bin/spillctl" --socket "$SOCK" --json vip list >"$WORK/vips.json" ||
	fail "installed spillctl vip list failed"
$PY - "$R/etc/spillway/spillway.json" "$WORK/vips.json" <<'PY' || fail "VIPs served differ from the shipped config"
import json, sys
cfg = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))
got = got.get("vips", got) if isinstance(got, dict) else got
want = {(v["address"], v["port"], v["protocol"]): sorted(b["address"] for b in v["backends"])
        for v in cfg["vips"]}
have = {(v["address"], v["port"], v["protocol"]): sorted(b["address"] for b in v["backends"])
        for v in got}
print("  served:", have)
sys.exit(0 if want == have else 1)
PY
[[ -f $WORK/state/state.json ]] || fail "no state file in the StateDirectory stand-in"
[[ $(stat -c %a "$SOCK") == 660 ]] || fail "socket mode $(stat -c %a "$SOCK"), expected 660"
# The unit's stop: ExecStop (spillctl drain; without BIRD the daemon refuses it,
# which the unit's '-' ignores), then SIGTERM.
set +e
"$R/usr/bin/spillctl" --socket "$SOCK" --timeout 10 drain >"$WORK/drain.out" 2>&1
drc=$?
set -e
[[ $drc -eq 1 ]] && grep -q "no route announcer" "$WORK/drain.out" ||
	fail "spillctl drain: exit $drc: $(cat "$WORK/drain.out")"
kill -TERM "$DPID"
set +e
wait "$DPID"
rc=$?
set -e
[[ $rc -eq 0 ]] || { cat "$WORK/daemon.err"; fail "spillwayd exit $rc after SIGTERM"; }
[[ ! -e $SOCK ]] || fail "socket left behind after the stop"
grep -q '"rx_packets"' "$WORK/daemon.out" || fail "no final counters on stdout (the journal)"
# ExecStopPost (--bird-withdraw) on the same arguments: without BIRD, nothing to do.
"$R/usr/sbin/spillwayd" --no-huge -m 256 --no-pci --file-prefix "$PREFIX-d" -l 0-1 \
	--vdev=net_null0 -- --control "$SOCK" "${ARGS[@]}" --bird-withdraw >"$WORK/post.out" 2>&1 ||
	fail "ExecStopPost's spillwayd --bird-withdraw: exit $?: $(cat "$WORK/post.out")"
grep -q "nothing to withdraw" "$WORK/post.out" || fail "--bird-withdraw: $(cat "$WORK/post.out")"
echo "  ok: served the shipped VIPs, drain refused without BIRD, SIGTERM exit 0, socket removed, ExecStopPost exit 0"

# --- 7: the pcap cases with the installed binaries ----------------------------
step "pcap integration case (run_pcap_test.sh) with the installed spillwayd, capture test with the installed spillgen"
bash "$HERE/run_pcap_test.sh" "$R/usr/sbin/spillwayd" >"$WORK/pcap.log" 2>&1 &
P1=$!
PIDS+=("$P1")
$PY "$SRC/pktgen/tests/capture_test.py" "$R/usr/bin/spillgen" >"$WORK/capture.log" 2>&1 &
P2=$!
PIDS+=("$P2")
set +e
wait "$P1"
rc1=$?
wait "$P2"
rc2=$?
set -e
tail -3 "$WORK/pcap.log" | sed 's/^/  pcap: /'
tail -2 "$WORK/capture.log" | sed 's/^/  capture: /'
[[ $rc1 -eq 0 ]] || { cat "$WORK/pcap.log"; fail "run_pcap_test.sh with the installed spillwayd: exit $rc1"; }
[[ $rc2 -eq 0 ]] || { cat "$WORK/capture.log"; fail "capture_test.py with the installed spillgen: exit $rc2"; }

step "debian package test: PASS"
