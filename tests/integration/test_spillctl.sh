#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# spillctl against a fake control server (fake_ctl_server.py, which follows
# docs/control-protocol.md and logs every request it reads): for each command,
# check the JSON-RPC request sent (method and params), the human output, that
# --json output parses, and the exit status of server errors (1), usage
# errors (2, and nothing sent) and connection or reply failures (3).
#
# usage: test_spillctl.sh SPILLCTL
# env:   SPW_CTL_KEEP=1   keep the work directory (printed at the end)
set -uo pipefail

CTL=${1:?usage: test_spillctl.sh SPILLCTL}
CTL=$(readlink -f "$CTL")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/spillctl-test.XXXXXX)
SOCK=$WORK/ctl.sock
LOG=$WORK/requests.log
PID=
FAILED=0
CHECKS=0

cleanup() {
	local rc=$?
	stop_server
	if [[ -n ${SPW_CTL_KEEP:-} ]]; then
		echo "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ -x $CTL ]] || { echo "not executable: $CTL" >&2; exit 1; }
[[ -x $PY ]] || { echo "SKIP: $PY needed"; exit 77; }
unset SPILLWAY_SOCKET

start_server() {
	rm -f "$WORK/ready"
	"$PY" "$HERE/fake_ctl_server.py" --socket "$SOCK" --log "$LOG" --ready "$WORK/ready" "$@" \
		>>"$WORK/server.out" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		[[ -s $WORK/ready ]] && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "fake server did not start:" >&2
	cat "$WORK/server.out" >&2
	exit 1
}

stop_server() {
	if [[ -n $PID ]] && kill -0 "$PID" 2>/dev/null; then
		kill "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
	fi
	PID=
	rm -f "$SOCK"
}

fail() {
	FAILED=$((FAILED + 1))
	echo "FAIL: $LAST: $*" >&2
	echo "  --- stdout:" >&2
	sed 's/^/  | /' "$WORK/out" | head -40 >&2
	echo "  --- stderr:" >&2
	sed 's/^/  | /' "$WORK/err" | head -20 >&2
}

# ctl ARGS...: runs spillctl on the fake server's socket; RC, $WORK/out, $WORK/err.
ctl() {
	LAST="spillctl $*"
	NREQ=$(wc -l <"$LOG" 2>/dev/null || echo 0)
	"$CTL" --socket "$SOCK" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
	RC=$?
}

# ctl_raw ARGS...: same without --socket (environment and socket tests).
ctl_raw() {
	LAST="spillctl $*"
	NREQ=$(wc -l <"$LOG" 2>/dev/null || echo 0)
	"$CTL" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
	RC=$?
}

expect_rc() {
	CHECKS=$((CHECKS + 1))
	[[ $RC == "$1" ]] || fail "exit status $RC, expected $1"
}

expect_out() {
	CHECKS=$((CHECKS + 1))
	grep -qF -- "$1" "$WORK/out" || fail "stdout lacks '$1'"
}

expect_out_re() {
	CHECKS=$((CHECKS + 1))
	grep -qE -- "$1" "$WORK/out" || fail "stdout does not match /$1/"
}

expect_not_out() {
	CHECKS=$((CHECKS + 1))
	! grep -qF -- "$1" "$WORK/out" || fail "stdout has '$1'"
}

expect_err() {
	CHECKS=$((CHECKS + 1))
	grep -qF -- "$1" "$WORK/err" || fail "stderr lacks '$1'"
}

# expect_json [PY-EXPR]: stdout is one JSON value; PY-EXPR (on v) is true.
expect_json() {
	CHECKS=$((CHECKS + 1))
	"$PY" -c '
import json, sys
v = json.load(open(sys.argv[1]))
if len(sys.argv) > 2 and not eval(sys.argv[2]):
    sys.exit("condition false: " + sys.argv[2])
' "$WORK/out" "${1:-True}" 2>"$WORK/pyerr" || fail "JSON check: $(tail -1 "$WORK/pyerr")"
}

# expect_req METHOD [PARAMS-JSON]: the one request this command sent. Without
# PARAMS-JSON, "params" must be absent.
expect_req() {
	CHECKS=$((CHECKS + 1))
	"$PY" -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
if len(lines) != 1:
    sys.exit("%d requests sent, expected 1" % len(lines))
r = json.loads(lines[0])
if not isinstance(r, dict) or r.get("jsonrpc") != "2.0" or not isinstance(r.get("id"), int):
    sys.exit("not a JSON-RPC 2.0 request with an integer id: " + lines[0])
if r["method"] != sys.argv[3]:
    sys.exit("method %r, expected %r" % (r["method"], sys.argv[3]))
want = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
if r.get("params") != want:
    sys.exit("params %s, expected %s" % (json.dumps(r.get("params"), sort_keys=True),
                                         json.dumps(want, sort_keys=True)))
' "$LOG" "$NREQ" "$@" 2>"$WORK/pyerr" || fail "request: $(tail -1 "$WORK/pyerr")"
}

# expect_no_req: nothing was sent (usage errors are caught locally).
expect_no_req() {
	CHECKS=$((CHECKS + 1))
	[[ $(wc -l <"$LOG") == "$NREQ" ]] || fail "a request was sent"
}

usage_case() {
	ctl "$@"
	expect_rc 2
	expect_no_req
	CHECKS=$((CHECKS + 1))
	[[ -s $WORK/err ]] || fail "no message on stderr"
}

V10='{"address":"192.0.2.10","port":80,"protocol":"tcp"}'
touch "$LOG"

# --- Without a server -----------------------------------------------------

ctl version
expect_rc 3
expect_err "spillctl: $SOCK: cannot connect: No such file or directory"

# A socket file nobody listens on (what a crashed daemon leaves).
"$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCK"
ctl vip list
expect_rc 3
expect_err "$SOCK: cannot connect: Connection refused"
rm -f "$SOCK"

ctl_raw --socket "$WORK/$(printf 'x%.0s' $(seq 120))" version
expect_rc 3
expect_err "socket path longer than"

# --- Help and usage errors (no server needed; nothing may be sent) ----------

ctl_raw --help
expect_rc 0
expect_out "Usage: spillctl [OPTIONS] COMMAND [ARGS]"
expect_out "Exit status:"
for c in "version" "vip list" "vip show" "vip add" "vip remove" "backend add" \
	"backend remove" "backend set" "backend drain" "backend down" "backend up" \
	"stats" "table" "config get" "config save" "call" "batch" "top" "hot list" \
	"hot events" "hot set" "hot pin" "hot unpin" "help"; do
	# shellcheck disable=SC2086
	ctl_raw $c --help
	expect_rc 0
	expect_out "Usage: spillctl [OPTIONS] $c"
	expect_out "Example"
	# shellcheck disable=SC2086
	ctl_raw help $c
	expect_rc 0
	expect_out "Usage: spillctl [OPTIONS] $c"
done
ctl_raw vip --help
expect_rc 0
expect_out "vip add VIP [OPTIONS]"
expect_not_out "backend add"
ctl_raw hot --help
expect_rc 0
expect_out "hot pin VIP SRC [OPTIONS]"
expect_not_out "vip add"
ctl_raw hot pin --help
expect_out "5tuple         SRC --sport P --dport P"
ctl_raw --version
expect_rc 0
# The project version meson was configured with (meson.build, passed by meson).
expect_out "spillctl ${SPILLWAY_VERSION:?meson passes the project version}"

start_server

usage_case
usage_case frobnicate
usage_case vip
usage_case vip frob 192.0.2.10:80
usage_case --bogus version
usage_case version extra
usage_case vip show
usage_case vip show 192.0.2.300:80
usage_case vip show 192.0.2.10:99999
usage_case vip show 192.0.2.10:80/sctp
usage_case vip show 192.0.2.10:http
usage_case vip show 2001:db8::10:80
usage_case vip show '[2001:db8::10:80'
usage_case vip add 192.0.2.10:80 --key crc32
usage_case vip add 192.0.2.10:80 --encap vxlan
usage_case vip add 192.0.2.10:80 --backend 10.1.0.1:70000
usage_case vip add 192.0.2.10:80 --backend 10.1.0.x
usage_case vip add 192.0.2.10:80 --backend 2001:db8::1:3
usage_case vip add 192.0.2.10:80 --backend
usage_case vip add 192.0.2.10:80 --colour red
usage_case backend add 192.0.2.10:80 10.1.0.999
usage_case backend add 192.0.2.10:80 10.1.0.3 --weight x
usage_case backend add 192.0.2.10:80 10.1.0.3 --weight -1
usage_case backend add 192.0.2.10:80 10.1.0.3 --weight 65536
usage_case backend add 192.0.2.10:80 10.1.0.3 --state sleeping
usage_case backend add 192.0.2.10:80 10.1.0.3 --weight 1 --weight 2
usage_case backend add 192.0.2.10:80
usage_case backend set 192.0.2.10:80 10.1.0.1
usage_case backend drain 192.0.2.10:80 10.1.0.1 --weight 2
usage_case stats --vip nonsense
usage_case table 192.0.2.10:80 --raw=yes
usage_case --timeout abc version
usage_case --timeout -1 version
usage_case call
usage_case call vip_list '[1]'
usage_case call vip_list '{"a":'
usage_case batch "$WORK/does-not-exist.json"
usage_case top --count 0
usage_case top --interval 0
usage_case hot
usage_case hot frob
usage_case hot list extra
usage_case hot set
usage_case hot set --threshold 0
usage_case hot set --threshold 1.5
usage_case hot set --threshold abc
usage_case hot set --threshold-low 0
usage_case hot set --epsilon 0.0001
usage_case hot set --epsilon 101
usage_case hot set --demote-windows 0
usage_case hot set --demote-windows 1001
usage_case hot set --demote-windows 2.5
usage_case hot set --window-ms 5
usage_case hot set --window-ms 60001
usage_case hot set --threshold 0.1 --threshold 0.2
usage_case hot set --sample 9
usage_case hot set --sample -1
usage_case hot set --sample 2.5
usage_case hot set --sample Auto
usage_case hot set --threshold-low auto0
usage_case hot set --margin 0.6
usage_case hot set --ewma-alpha 0
usage_case hot pin 192.0.2.10:80
usage_case hot pin 192.0.2.10:80 gateway
usage_case hot pin 192.0.2.10:80 198.51.100.7:40000
usage_case hot pin 192.0.2.300:80 198.51.100.7
usage_case hot pin 192.0.2.10:80 198.51.100.7 --sport 65536
usage_case hot pin 192.0.2.10:80 198.51.100.7 --dport x
usage_case hot pin 192.0.2.10:80 198.51.100.7 --replicas 257
usage_case hot pin 192.0.2.10:80 198.51.100.7 --replicas -1
usage_case hot pin 192.0.2.10:80 198.51.100.7 extra
usage_case hot unpin 192.0.2.10:80 198.51.100.7 --replicas 2
ctl vip show 192.0.2.300:80
expect_err "invalid VIP '192.0.2.300:80'"
expect_err "Try 'spillctl vip show --help'."

# --- Every command: request sent, output --------------------------------------

ctl version
expect_rc 0
expect_req version
expect_out "spillwayd 0.1.0 (control protocol 1)"
ctl --json version
expect_rc 0
expect_json 'v == {"version": "0.1.0", "protocol": 1}'

ctl vip list
expect_rc 0
expect_req vip_list
expect_out "no VIPs"

ctl vip add 192.0.2.10:80/tcp --backend 10.1.0.1 --backend 10.1.0.2:2 --key src_ip --encap gue
expect_rc 0
expect_req vip_add '{"address":"192.0.2.10","port":80,"protocol":"tcp","key":"src_ip",
	"encap":"gue","backends":[{"address":"10.1.0.1"},{"address":"10.1.0.2","weight":2}]}'
expect_out "192.0.2.10:80/tcp"
expect_out_re '^ +10\.1\.0\.2 +2 +active$'

ctl vip add '[2001:DB8:0::10]:443/UDP' --backend '[2001:db8:1::1]:3' --backend '[2001:db8:1::2]'
expect_rc 0
expect_req vip_add '{"address":"2001:db8::10","port":443,"protocol":"udp",
	"backends":[{"address":"2001:db8:1::1","weight":3},{"address":"2001:db8:1::2"}]}'
expect_out "[2001:db8::10]:443/udp"

ctl --json vip add 192.0.2.20/udp
expect_rc 0
expect_req vip_add '{"address":"192.0.2.20","port":0,"protocol":"udp"}'
expect_json 'v["port"] == 0 and v["backends"] == []'

ctl vip add 192.0.2.30:8080
expect_rc 0
expect_req vip_add '{"address":"192.0.2.30","port":8080,"protocol":"tcp"}'

ctl vip add '[2001:db8::20]'
expect_rc 0
expect_req vip_add '{"address":"2001:db8::20","port":0,"protocol":"tcp"}'

ctl vip remove '[2001:db8::20]/tcp'
expect_rc 0
expect_req vip_remove '{"address":"2001:db8::20","port":0,"protocol":"tcp"}'
expect_out "removed VIP [2001:db8::20]:0/tcp"

ctl backend add 192.0.2.10:80/tcp 10.1.0.3 --weight 4 --name web-3 --state draining
expect_rc 0
expect_req backend_add '{"vip":'"$V10"',"address":"10.1.0.3","weight":4,"name":"web-3",
	"state":"draining"}'
expect_out "added backend 10.1.0.3 (web-3) of 192.0.2.10:80/tcp: weight 4, state draining"

ctl backend add 192.0.2.10:80 '[2001:db8:2::9]'
expect_rc 0
expect_req backend_add '{"vip":'"$V10"',"address":"2001:db8:2::9"}'

ctl vip list
expect_rc 0
expect_req vip_list
expect_out_re '^VIP +BACKENDS +KEY +ENCAP$'
expect_out_re '^192\.0\.2\.10:80/tcp +4 +src_ip +gue$'
expect_out_re '^ +10\.1\.0\.3 +web-3 +weight +4 +draining$'
expect_out_re '^\[2001:db8::10\]:443/udp +2 +5tuple +ipip$'
expect_out_re '^192\.0\.2\.20:0/udp +0 +5tuple +ipip$'
ctl vip list --json
expect_rc 0
expect_json 'len(v) == 4 and len(v[0]["backends"]) == 4'

ctl vip show 192.0.2.10:80
expect_rc 0
expect_req vip_get "$V10"
expect_out_re '^key +src_ip$'
expect_out_re '^encap +gue$'
expect_out_re '^ +10\.1\.0\.3 +web-3 +4 +draining$'
ctl --json vip show 192.0.2.10:80
expect_json 'v["address"] == "192.0.2.10" and v["key"] == "src_ip"'

ctl backend set 192.0.2.10:80/tcp 10.1.0.3 --weight 3 --state active
expect_rc 0
expect_req backend_set '{"vip":'"$V10"',"address":"10.1.0.3","weight":3,"state":"active"}'
expect_out "backend 10.1.0.3 (web-3) of 192.0.2.10:80/tcp: weight 3, state active"

ctl backend set 192.0.2.10:80/tcp 10.1.0.3 --weight=0
expect_rc 0
expect_req backend_set '{"vip":'"$V10"',"address":"10.1.0.3","weight":0}'

ctl backend drain 192.0.2.10:80/tcp 10.1.0.2
expect_rc 0
expect_req backend_set '{"vip":'"$V10"',"address":"10.1.0.2","state":"draining"}'
expect_out "state draining"

ctl backend down 192.0.2.10:80/tcp 10.1.0.2
expect_rc 0
expect_req backend_set '{"vip":'"$V10"',"address":"10.1.0.2","state":"down"}'
expect_out "state down"

ctl --json backend up 192.0.2.10:80/tcp 10.1.0.2
expect_rc 0
expect_req backend_set '{"vip":'"$V10"',"address":"10.1.0.2","state":"active"}'
expect_json 'v == {"address": "10.1.0.2", "weight": 2, "state": "active"}'

ctl backend remove 192.0.2.10:80/tcp 2001:db8:2::9
expect_rc 0
expect_req backend_remove '{"vip":'"$V10"',"address":"2001:db8:2::9"}'
expect_out "removed backend 2001:db8:2::9 from 192.0.2.10:80/tcp"

ctl stats
expect_rc 0
expect_req stats
expect_out_re '^generation [0-9]+$'
expect_out_re '^totals +rx [0-9]+ packets'
expect_out "drops     no_vip 7, no_backend 3"
expect_not_out "eth_trunc"
expect_out_re '^VIP / BACKEND +WEIGHT +STATE +PACKETS +BYTES +NEW FLOWS$'
expect_out_re '^192\.0\.2\.10:80/tcp +[0-9]+ +[0-9]+ +[0-9]+$'
expect_out_re '^  10\.1\.0\.2 +2 +active +200 +20000 +20$'
expect_out_re '^  10\.1\.0\.3 \(web-3\) +0 +active, path mtu 1400 +300 +30000 +30$'
expect_out_re '^ *LCORE +RX +FORWARDED +DROPPED'
expect_not_out "hot keys"
ctl stats --json
expect_rc 0
expect_json '"totals" in v and "drops" in v["totals"] and len(v["vips"]) == 4 and "generation" in v'
ctl stats --vip '[2001:db8::10]:443/udp'
expect_rc 0
expect_req stats
expect_out "[2001:db8::10]:443/udp"
expect_not_out "192.0.2.10:80/tcp"
expect_not_out "totals"
ctl --json stats --vip 192.0.2.10:80
expect_rc 0
expect_json 'v["address"] == "192.0.2.10" and len(v["backends"]) == 3'
ctl stats --vip 192.0.2.99:80
expect_rc 1
expect_err "no counters for VIP 192.0.2.99:80"

ctl table 192.0.2.10:80
expect_rc 0
expect_req maglev_table '{"vip":'"$V10"'}'
expect_out "192.0.2.10:80/tcp: table size 13"
expect_out_re '^BACKEND +NAME +SLOTS +SHARE$'
expect_out_re '^10\.1\.0\.1 +[0-9]+ +[0-9]+\.[0-9]{2}%$'
expect_not_out "SLOT  BACKEND"
ctl table 192.0.2.10:80 --raw
expect_rc 0
expect_req maglev_table '{"vip":'"$V10"',"raw":true,"from":0,"count":65536}'
expect_out_re '^ *SLOT +BACKEND$'
expect_out_re '^ +12 +10\.1\.0\.[0-9]$'
ctl --json table 192.0.2.10:80 --raw
expect_json 'v["table_size"] == 13 and len(v["table"]) == 13'

ctl config get
expect_rc 0
expect_req config_get
expect_json 'len(v["vips"]) == 4'
ctl config save
expect_rc 0
expect_req config_save
expect_out "configuration saved to /var/lib/spillway/state.json"
ctl --json config save
expect_json 'v == {"path": "/var/lib/spillway/state.json"}'

ctl call vip_list
expect_rc 0
expect_req vip_list
expect_json 'len(v) == 4'
ctl call backend_set '{"vip":'"$V10"',"address":"10.1.0.1","weight":5}'
expect_rc 0
expect_req backend_set '{"vip":'"$V10"',"address":"10.1.0.1","weight":5}'
expect_json 'v["weight"] == 5'
LAST="spillctl call vip_get -"
NREQ=$(wc -l <"$LOG")
echo "$V10" | "$CTL" -s "$SOCK" call vip_get - >"$WORK/out" 2>"$WORK/err"
RC=$?
expect_rc 0
expect_req vip_get "$V10"

cat >"$WORK/batch.json" <<EOF
[{"method": "backend_add", "params": {"vip": $V10, "address": "10.1.0.7"}},
 {"method": "backend_set", "params": {"vip": $V10, "address": "10.1.0.1", "state": "draining"}},
 {"method": "stats"}]
EOF
ctl batch "$WORK/batch.json"
expect_rc 0
CHECKS=$((CHECKS + 1))
"$PY" -c '
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert isinstance(r, list) and len(r) == 3, r
assert [c["id"] for c in r] == [1, 2, 3], r
assert [c["method"] for c in r] == ["backend_add", "backend_set", "stats"], r
assert all(c["jsonrpc"] == "2.0" for c in r)
assert r[1]["params"]["state"] == "draining" and "params" not in r[2]
' "$LOG" || fail "batch request"
expect_out "1  backend_add: ok"
expect_out "batch applied: 3 calls"
LAST="spillctl --json batch - (stdin)"
"$CTL" -s "$SOCK" --json batch - <"$WORK/batch.json" >"$WORK/out" 2>"$WORK/err"
RC=$?
expect_rc 1
expect_err "spillctl: backend already exists: 10.1.0.7 (code -32002)"
expect_json 'len(v) == 3 and v[0]["error"]["code"] == -32002 and v[1]["error"]["code"] == -32010'
ctl batch "$WORK/batch.json"
expect_rc 1
expect_out "2  backend_set: transaction aborted (code -32010)"
expect_out "batch not applied"
echo '[{"method": "stats"}, {"method": "version"}]' >"$WORK/batch2.json"
ctl --json batch "$WORK/batch2.json"
expect_rc 0
expect_json 'len(v) == 2 and "totals" in v[0] and v[1]["protocol"] == 1'
echo '[{"method": "stats", "id": 7}]' >"$WORK/batch3.json"
usage_case batch "$WORK/batch3.json"
echo '{"method": "stats"}' >"$WORK/batch4.json"
usage_case batch "$WORK/batch4.json"

ctl top --interval 0.1 --count 3
expect_rc 0
CHECKS=$((CHECKS + 1))
[[ $(grep -c '^spillctl top ' "$WORK/out") == 3 ]] || fail "expected 3 refreshes"
CHECKS=$((CHECKS + 1))
[[ $(grep -c '"method": "stats"' "$LOG") -ge 4 ]] || fail "stats not called"
expect_out_re '^rx [0-9.]+ pps  fwd [0-9.]+ pps  drop [0-9.]+ pps$'
expect_out_re '^drops/s +no_vip [0-9.]+, no_backend [0-9.]+$'
expect_out_re '^VIP / BACKEND +WEIGHT +STATE +PKT/S +MBIT/S +NEW FLOWS/S$'
expect_out_re '^192\.0\.2\.10:80/tcp +[1-9][0-9.]* +[0-9.]+ +[1-9][0-9.]*$'
expect_out_re '^  10\.1\.0\.7 +1 +active +[1-9]'
expect_not_out "hot keys"
CHECKS=$((CHECKS + 1))
! grep -q $'\033' "$WORK/out" || fail "escape sequences when stdout is not a terminal"
ctl --json top --interval 0.05 --count 2
expect_rc 0
CHECKS=$((CHECKS + 1))
"$PY" -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
for l in lines:
    o = json.loads(l)
    assert o["totals"]["rx_pps"] > 0 and o["vips"][0]["packets_per_s"] > 0, o
' "$WORK/out" || fail "top --json lines"

# Without the hot-key controller: every hot command fails with the server's
# message, and top asks hot_list once per run, then leaves the section out.
CHECKS=$((CHECKS + 1))
[[ $(grep -c '"method": "hot_list"' "$LOG") == 2 ]] || fail "top: hot_list asked more than once per run"
for c in "hot list" "hot events" "hot set --threshold 0.1" "hot pin 192.0.2.10:80 198.51.100.7" \
	"hot unpin 192.0.2.10:80 198.51.100.7"; do
	# shellcheck disable=SC2086
	ctl $c
	expect_rc 1
	expect_err "spillctl: hot keys are disabled (hot.enabled is false) (code -32603)"
done
ctl --json hot list
expect_rc 1
expect_json 'v["code"] == -32603'

# --- Server errors: exit 1, the server's message -------------------------------

ctl vip show 198.51.100.1:80
expect_rc 1
expect_req vip_get '{"address":"198.51.100.1","port":80,"protocol":"tcp"}'
expect_err "spillctl: VIP not found: 198.51.100.1:80/tcp (code -32001)"
CHECKS=$((CHECKS + 1))
[[ ! -s $WORK/out ]] || fail "stdout not empty"
ctl --json backend drain 192.0.2.10:80 10.9.9.9
expect_rc 1
expect_err "spillctl: backend not found: 10.9.9.9 (code -32001)"
expect_json 'v == {"code": -32001, "message": "backend not found: 10.9.9.9"}'
ctl vip add 192.0.2.10:80
expect_rc 1
expect_err "(code -32002)"
ctl call no_such_method
expect_rc 1
expect_err "spillctl: method not found (code -32601)"
ctl call vip_add '{"address":"192.0.2.50","port":80,"protocol":"tcp","colour":"red"}'
expect_rc 1
expect_err "colour: unknown field (code -32602)"
ctl table 198.51.100.1:80
expect_rc 1
expect_err "(code -32001)"

# --- Replies that are slow, malformed, wrong or large: exit 3 ------------------

ctl --timeout 0.3 call fake_sleep '{"seconds": 3}'
expect_rc 3
expect_err "$SOCK: timed out"
ctl call fake_badid
expect_rc 3
expect_err "malformed reply to fake_badid: id: 987654 does not answer request 1"
ctl call fake_garbage
expect_rc 3
expect_err "malformed reply: not JSON: "
ctl call fake_big '{"bytes": 5000000}'
expect_rc 0
CHECKS=$((CHECKS + 1))
[[ $(wc -c <"$WORK/out") -gt 5000000 ]] || fail "large reply cut"

# --- Hostile replies: envelope, result shapes, strings for the terminal ---------

# forge METHOD REPLY-JSON: the fake answers the next METHOD request with
# REPLY-JSON as the whole reply ("id": "$ID" becomes the request's id).
forge() {
	"$CTL" --socket "$SOCK" call fake_reply "{\"method\":\"$1\",\"reply\":$2}" >/dev/null \
		2>"$WORK/forge.err" || { echo "fake_reply $1 failed: $(cat "$WORK/forge.err")" >&2; exit 1; }
}

# malformed WHY ARGS...: spillctl ARGS exits 3 saying "malformed reply to ...: WHY",
# prints nothing on stdout.
malformed() {
	local why=$1
	shift
	ctl "$@"
	expect_rc 3
	expect_err "malformed reply to "
	expect_err ": $why"
	CHECKS=$((CHECKS + 1))
	[[ ! -s $WORK/out ]] || fail "stdout not empty"
}

# expect_no_control: no control byte (but newline), no C1 control and no
# bidi override reached stdout or stderr.
expect_no_control() {
	CHECKS=$((CHECKS + 1))
	"$PY" -c '
import re, sys
for f in sys.argv[1:]:
    t = open(f, "rb").read()
    m = re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]", t)
    if m:
        sys.exit("%s: %r at %d" % (f, m.group(), m.start()))
' "$WORK/out" "$WORK/err" 2>"$WORK/pyerr" || fail "raw control characters: $(tail -1 "$WORK/pyerr")"
}

# The envelope (every command the same way; vip list here).
forge vip_list '{"id":"$ID","result":[]}'
malformed 'jsonrpc: missing, expected "2.0"' vip list
forge vip_list '{"jsonrpc":"1.0","id":"$ID","result":[]}'
malformed 'jsonrpc: not "2.0", expected "2.0"' vip list
forge vip_list '{"jsonrpc":2.0,"id":"$ID","result":[]}'
malformed 'jsonrpc: not "2.0"' vip list
forge vip_list '{"jsonrpc":"2.0","result":[]}'
malformed 'id: missing' vip list
forge vip_list '{"jsonrpc":"2.0","id":"1","result":[]}'
malformed 'id: "1" does not answer request 1' vip list
forge vip_list '{"jsonrpc":"2.0","id":null,"result":[]}'
malformed 'id: null does not answer request 1' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":[],"error":{"code":-32603,"message":"x"}}'
malformed 'both result and error' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID"}'
malformed 'neither result nor error' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","error":{"code":"-32603","message":"x"}}'
malformed 'error.code: expected an integer, got a string' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","error":{"code":-32603.5,"message":"x"}}'
malformed 'error.code: expected an integer, got a real number' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","error":{"code":-32603}}'
malformed 'error.message: missing' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","error":"broken"}'
malformed 'error: expected an object, got a string' vip list
forge vip_list '[{"jsonrpc":"2.0","id":"$ID","result":[]}]'
malformed 'expected a JSON-RPC 2.0 response object, got an array' vip list
# An error with id null is the server's (it could not read the request): exit 1.
forge vip_list '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}'
ctl vip list
expect_rc 1
expect_err "spillctl: parse error (code -32700)"

# Results of the wrong shape, per command: exit 3, never "no VIPs" or zeros.
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":{}}'
malformed 'result: expected an array, got an object' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":{}}'
malformed 'result: expected an array, got an object' --json vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":[{"address":"192.0.2.10","port":"80","protocol":"tcp","backends":[]}]}'
malformed 'result[0].port: expected an integer, got a string' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":[{"address":"192.0.2.10","port":80,"protocol":"tcp","backends":[{"address":"10.1.0.1","weight":"999","state":"down"}]}]}'
malformed 'result[0].backends[0].weight: expected an integer, got a string' vip list
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":[{"address":"192.0.2.10","port":80,"protocol":"tcp"}]}'
malformed 'result[0].backends: missing' vip list
forge vip_get '{"jsonrpc":"2.0","id":"$ID","result":[]}'
malformed 'result: expected an object, got an array' vip show 192.0.2.10:80
forge vip_add '{"jsonrpc":"2.0","id":"$ID","result":{"address":"192.0.2.60","port":80,"protocol":"tcp","key":5,"backends":[]}}'
malformed 'result.key: expected a string, got an integer' vip add 192.0.2.60:80
forge backend_add '{"jsonrpc":"2.0","id":"$ID","result":{"address":"10.1.0.9","weight":true,"state":"active"}}'
malformed 'result.weight: expected an integer, got a boolean' backend add 192.0.2.10:80 10.1.0.9
forge backend_set '{"jsonrpc":"2.0","id":"$ID","result":[]}'
malformed 'result: expected an object, got an array' backend drain 192.0.2.10:80 10.1.0.1
forge backend_remove '{"jsonrpc":"2.0","id":"$ID","result":null}'
malformed 'result: expected an object, got null' backend remove 192.0.2.10:80 10.1.0.1
forge version '{"jsonrpc":"2.0","id":"$ID","result":"0.1.0"}'
malformed 'result: expected an object, got a string' version
forge version '{"jsonrpc":"2.0","id":"$ID","result":{"version":"0.1.0","protocol":"1"}}'
malformed 'result.protocol: expected an integer, got a string' --json version
forge stats '{"jsonrpc":"2.0","id":"$ID","result":[]}'
malformed 'result: expected an object, got an array' stats
forge stats '{"jsonrpc":"2.0","id":"$ID","result":{"generation":1,"totals":[],"vips":[],"cores":[]}}'
malformed 'result.totals: expected an object, got an array' stats
ctl --json stats
TOT=$("$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["totals"]))' "$WORK/out")
# The same totals with a drop counter of the wrong type, or an extra one named with an ESC.
TOT_BAD=$("$PY" -c 'import json,sys; t=json.loads(sys.argv[1]); t["drops"]["no_vip"]=""; print(json.dumps(t))' "$TOT")
TOT_ESC=$("$PY" -c 'import json,sys; t=json.loads(sys.argv[1]); t["drops"]["no\x1b[1m_vip"]=5; print(json.dumps(t))' "$TOT")
forge stats '{"jsonrpc":"2.0","id":"$ID","result":{"generation":1,"totals":'"$TOT"',"vips":"none","cores":[]}}'
malformed 'result.vips: expected an array, got a string' stats
forge stats '{"jsonrpc":"2.0","id":"$ID","result":{"generation":1,"totals":'"$TOT"',"vips":[{"address":"192.0.2.10","port":80,"protocol":"tcp","packets":1,"bytes":1,"new_flows":1,"backends":[{"address":"10.1.0.1","weight":1,"state":"active","packets":"many","bytes":1,"new_flows":1}]}],"cores":[]}}'
malformed 'result.vips[0].backends[0].packets: expected an integer, got a string' stats
forge stats '{"jsonrpc":"2.0","id":"$ID","result":{"generation":1,"totals":'"$TOT_BAD"',"vips":[],"cores":[]}}'
malformed 'result.totals.drops.no_vip: expected an integer, got a string' stats
forge stats '{"jsonrpc":"2.0","id":"$ID","result":{}}'
malformed 'result.generation: missing' top --interval 0.05 --count 1
forge maglev_table '{"jsonrpc":"2.0","id":"$ID","result":{"table_size":"13","generation":1,"backends":[]}}'
malformed 'result.table_size: expected an integer, got a string' table 192.0.2.10:80
forge maglev_table '{"jsonrpc":"2.0","id":"$ID","result":{"table_size":13,"generation":1,"backends":[{"address":"10.1.0.1","slots":"13"}]}}'
malformed 'result.backends[0].slots: expected an integer, got a string' table 192.0.2.10:80
forge maglev_table '{"jsonrpc":"2.0","id":"$ID","result":{"table_size":13,"generation":1,"backends":[],"table":[1]}}'
malformed 'result.table[0]: expected a string or null, got an integer' table 192.0.2.10:80 --raw
forge config_save '{"jsonrpc":"2.0","id":"$ID","result":{"path":5}}'
malformed 'result.path: expected a string, got an integer' config save
forge config_get '{"jsonrpc":"2.0","id":"$ID","result":[]}'
malformed 'result: expected an object, got an array' config get
forge hot_list '{"jsonrpc":"2.0","id":"$ID","result":{"window":1,"params":{},"counters":{},"overrides":{}}}'
malformed 'result.overrides: expected an array, got an object' hot list
forge hot_events '{"jsonrpc":"2.0","id":"$ID","result":{}}'
malformed 'result: expected an array, got an object' hot events
forge hot_events '{"jsonrpc":"2.0","id":"$ID","result":[{"window":"1200","event":"promote"}]}'
malformed 'result[0].window: expected an integer, got a string' hot events
forge hot_set '{"jsonrpc":"2.0","id":"$ID","result":{"threshold":true}}'
malformed 'result.threshold: expected a number or a string, got a boolean' hot set --threshold 0.1
forge drain '{"jsonrpc":"2.0","id":"$ID","result":{"drained":true,"hooks":{"bird":{"announced":"0"}}}}'
malformed 'result.hooks.bird.announced: expected an integer, got a string' drain
# The raw call prints any result: only the envelope is checked.
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":"anything"}'
ctl call vip_list
expect_rc 0
expect_json 'v == "anything"'

# Names and other strings that would shift columns or drive the terminal: shown
# escaped (\t \n \\ \xNN \uNNNN), one table row each, columns where they belong.
HVIP='{"address":"192.0.2.10","port":80,"protocol":"tcp","key":"5tuple","encap":"ipip","backends":[
 {"address":"10.1.0.1","name":"x\tweight\t999\tdown","weight":1,"state":"active"},
 {"address":"10.1.0.2","name":"\u001b[2J\u001b]0;pwned\u0007","weight":2,"state":"active"},
 {"address":"10.1.0.3","name":"a\nb\\c\r","weight":3,"state":"draining"},
 {"address":"10.1.0.4","name":"\u009b31m\u202egnp.exe","weight":4,"state":"down"}]}'
HVIP=${HVIP//$'\n'/}
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":['"$HVIP"']}'
ctl vip list
expect_rc 0
expect_no_control
expect_out_re '^ +10\.1\.0\.1 +x\\tweight\\t999\\tdown +weight +1 +active$'
expect_out_re '^ +10\.1\.0\.2 +\\x1b\[2J\\x1b\]0;pwned\\x07 +weight +2 +active$'
expect_out_re '^ +10\.1\.0\.3 +a\\nb\\\\c\\r +weight +3 +draining$'
expect_out_re '^ +10\.1\.0\.4 +\\u009b31m\\u202egnp\.exe +weight +4 +down$'
expect_not_out "weight  999"
CHECKS=$((CHECKS + 1))
[[ $(wc -l <"$WORK/out") == 6 ]] || fail "expected 6 lines (heading, VIP, 4 backends)"
forge vip_get '{"jsonrpc":"2.0","id":"$ID","result":'"$HVIP"'}'
ctl vip show 192.0.2.10:80
expect_rc 0
expect_no_control
expect_out_re '^ +10\.1\.0\.1 +x\\tweight\\t999\\tdown +1 +active$'
# --json stays JSON: the strings round-trip, escaped by the encoder.
forge vip_list '{"jsonrpc":"2.0","id":"$ID","result":['"$HVIP"']}'
ctl --json vip list
expect_rc 0
expect_no_control
expect_json 'v[0]["backends"][1]["name"] == "\x1b[2J\x1b]0;pwned\x07" and v[0]["backends"][3]["name"] == "\u009b31m\u202egnp.exe"'
forge backend_add '{"jsonrpc":"2.0","id":"$ID","result":{"address":"10.1.0.9","name":"\u001b[31mred","weight":1,"state":"act\tive"}}'
ctl backend add 192.0.2.10:80 10.1.0.9
expect_rc 0
expect_no_control
expect_out 'added backend 10.1.0.9 (\x1b[31mred) of 192.0.2.10:80/tcp: weight 1, state act\tive'
forge stats '{"jsonrpc":"2.0","id":"$ID","result":{"generation":1,"totals":'"$TOT_ESC"',"vips":[{"address":"192.0.2.10","port":80,"protocol":"tcp","packets":1,"bytes":2,"new_flows":3,"backends":[{"address":"10.1.0.1","name":"x\tweight\t999\tdown","weight":1,"state":"active","packets":4,"bytes":5,"new_flows":6}]}],"cores":[]}}'
ctl stats
expect_rc 0
expect_no_control
expect_out_re '^  10\.1\.0\.1 \(x\\tweight\\t999\\tdown\) +1 +active +4 +5 +6$'
expect_out 'no\x1b[1m_vip 5'
forge maglev_table '{"jsonrpc":"2.0","id":"$ID","result":{"table_size":2,"generation":1,"backends":[{"address":"10.1.0.1","name":"x\tweight\t999","slots":1}],"table":["10.1.0.1","\u001b[H"]}}'
ctl table 192.0.2.10:80 --raw
expect_rc 0
expect_no_control
expect_out_re '^10\.1\.0\.1 +x\\tweight\\t999 +1 +50\.00%$'
expect_out_re '^ +1 +\\x1b\[H$'
forge vip_list '{"jsonrpc":"2.0","id":"$ID","error":{"code":-32603,"message":"bad \u001b[31mthing\nforged line"}}'
ctl vip list
expect_rc 1
expect_no_control
expect_err 'spillctl: bad \x1b[31mthing\nforged line (code -32603)'
forge config_save '{"jsonrpc":"2.0","id":"$ID","result":{"path":"/tmp/\u001b]0;x\u0007"}}'
ctl config save
expect_rc 0
expect_no_control
expect_out 'configuration saved to /tmp/\x1b]0;x\x07'

# Names the server refuses; spillctl checks the same rule before sending.
ctl call backend_add '{"vip":'"$V10"',"address":"10.1.0.40","name":"web\t1"}'
expect_rc 1
expect_err "name: byte 4 (0x09) is not allowed"
usage_case backend add 192.0.2.10:80 10.1.0.40 --name 'web 1'
usage_case backend add 192.0.2.10:80 10.1.0.40 --name "$(printf 'a%.0s' $(seq 64))"
usage_case backend add 192.0.2.10:80 10.1.0.40 --name ''
usage_case backend add 192.0.2.10:80 10.1.0.40 --name 'wéb'
ctl backend add 192.0.2.10:80 10.1.0.40 --name "$(printf 'a%.0s' $(seq 63))"
expect_rc 0
ctl backend add 192.0.2.10:80 10.1.0.41 --name 'Web_1.rack-2:a'
expect_rc 0
expect_out "added backend 10.1.0.41 (Web_1.rack-2:a) of 192.0.2.10:80/tcp"

# --- Socket selection ----------------------------------------------------------

LAST="SPILLWAY_SOCKET=... spillctl version"
NREQ=$(wc -l <"$LOG")
SPILLWAY_SOCKET=$SOCK "$CTL" version >"$WORK/out" 2>"$WORK/err"
RC=$?
expect_rc 0
expect_req version
LAST="SPILLWAY_SOCKET=bad spillctl --socket GOOD version"
SPILLWAY_SOCKET=$WORK/nothing.sock "$CTL" version --socket="$SOCK" >"$WORK/out" 2>"$WORK/err"
RC=$?
expect_rc 0
LAST="SPILLWAY_SOCKET=bad spillctl version"
SPILLWAY_SOCKET=$WORK/nothing.sock "$CTL" version >"$WORK/out" 2>"$WORK/err"
RC=$?
expect_rc 3
expect_err "$WORK/nothing.sock: cannot connect"

# --- table --raw in pages, against a server with spillwayd's reply limit ----------
# A table of the largest size the configuration allows (1048573 slots) with
# (the fake server builds it in Python: --timeout 120 for the first page)
# IPv6 backends: about 38 MiB as one reply, which the server refuses (-32004);
# spillctl pages through it. The expected slots are maglev_ref.py's.
stop_server
start_server --table-size 1048573 --reply-budget 4190208
B6=2001:db8:aaaa:bbbb:cccc:dddd:eeee
ctl vip add 192.0.2.10:80 --backend "[$B6:1]:3" --backend "[$B6:22]" --backend "[$B6:333]:2" \
	--backend "[$B6:4444]"
expect_rc 0
LAST="maglev_table raw in one reply (no from/count)"
CHECKS=$((CHECKS + 1))
"$PY" - "$SOCK" "$V10" <<'PY' 2>"$WORK/pyerr" || fail "$(tail -1 "$WORK/pyerr")"
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "maglev_table",
                      "params": {"vip": json.loads(sys.argv[2]), "raw": True}}).encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    buf += s.recv(1 << 20)
r = json.loads(buf)
assert r.get("error", {}).get("code") == -32004, "whole table not refused: %s" % buf[:200]
PY
# check_raw_table MODE PAGE: spillctl's output (MODE text or json) is the
# reference table, and it was read in requests of PAGE slots from slot 0 on.
check_raw_table() {
	CHECKS=$((CHECKS + 1))
	"$PY" "$HERE/spillctl_table_check.py" "$1" "$WORK/out" "$LOG" "$NREQ" "$2" "$V10" \
		"$B6:1=3" "$B6:22=1" "$B6:333=2" "$B6:4444=1" 2>"$WORK/pyerr" ||
		fail "$(tail -1 "$WORK/pyerr")"
}
ctl --timeout 120 table 192.0.2.10:80 --raw
expect_rc 0
check_raw_table text 65536
ctl --timeout 120 --json table 192.0.2.10:80 --raw
expect_rc 0
check_raw_table json 65536
# A tighter budget: the server refuses 65536 and 32768 slots a page (-32004);
# spillctl halves the page each time and reads the table in pages of 16384.
stop_server
start_server --table-size 1048573 --reply-budget 1000000
ctl vip add 192.0.2.10:80 --backend "[$B6:1]:3" --backend "[$B6:22]" --backend "[$B6:333]:2" \
	--backend "[$B6:4444]"
ctl --timeout 120 table 192.0.2.10:80 --raw
expect_rc 0
check_raw_table text 16384
# A table that changes between pages is read again from slot 0, 3 times, then exit 1.
stop_server
start_server --table-size 131071 --table-churn
ctl vip add 192.0.2.10:80 --backend 10.1.0.1 --backend 10.1.0.2
ctl --timeout 120 table 192.0.2.10:80 --raw
expect_rc 1
expect_err "spillctl: the table of 192.0.2.10:80/tcp changed while it was read, 3 times: try again"
CHECKS=$((CHECKS + 1))
[[ ! -s $WORK/out ]] || fail "printed a table that changed while it was read"
CHECKS=$((CHECKS + 1))
[[ $(tail -n +$((NREQ + 1)) "$LOG" | grep -c '"from": 0') == 3 ]] ||
	fail "the table was not read from slot 0 three times"
# --- Hot keys and errors that depend on the server's options ---------------------

stop_server
start_server --hot-keys --no-state-file
ctl vip add 192.0.2.10:80 --backend 10.1.0.1
ctl top --interval 0.05 --count 1
expect_rc 0
expect_out "hot keys:"
expect_out_re '^  VIP +KEY +SHARE +REPLICAS$'
expect_out_re '^  192\.0\.2\.10:80/tcp +198\.51\.100\.7 sport 40000 dport 80 +12\.00% +1 \(10\.1\.0\.1\)$'
ctl --json top --interval 0.05 --count 1
expect_rc 0
expect_json 'v["hot_keys"][0]["key"]["src"] == "198.51.100.7" and v["hot_keys"][0]["share"] == 0.12'
ctl stats
expect_out "hot keys:"

ctl vip add 192.0.2.20:80/tcp --backend 10.1.0.1 --backend 10.1.0.2 --backend 10.1.0.3 \
	--backend 10.1.0.4
ctl vip add 192.0.2.40/udp --key src_ip --backend 10.1.0.5
ctl vip add 192.0.2.50/udp --key src_ip_dport --backend 10.1.0.6
ctl vip add '[2001:db8::10]:443/udp' --key src_ip --backend '[2001:db8:1::1]'

ctl hot list
expect_rc 0
expect_req hot_list
expect_out_re '^window +[0-9]+$'
expect_out "params    threshold 0.01, threshold_low 0.005, epsilon 0.25, demote_windows 5, window_ms 100"
expect_out "counters  promotions 1, demotions 0, replans 0, active 1, pinned 0"
expect_out_re '^VIP +KEY +SHARE +REPLICAS +SINCE WINDOW +PINNED$'
expect_out_re '^192\.0\.2\.10:80/tcp +198\.51\.100\.7 sport 40000 dport 80 +12\.00% +1 \(10\.1\.0\.1\) +1200 +no$'
ctl --json hot list
expect_rc 0
expect_json 'v["params"]["threshold"] == 0.01 and len(v["overrides"]) == 1 and v["overrides"][0]["key_hash"].startswith("0x")'

ctl hot events
expect_rc 0
expect_req hot_events
expect_out_re '^ *WINDOW +EVENT +VIP +KEY +SHARE +REPLICAS$'
expect_out_re '^ *1200 +promote +192\.0\.2\.10:80/tcp +198\.51\.100\.7 +12\.00% +3$'

ctl hot set --threshold 0.05 --threshold-low=0.02
expect_rc 0
expect_req hot_set '{"threshold":0.05,"threshold_low":0.02}'
expect_out "hot-key parameters: threshold 0.05, threshold_low 0.02, epsilon 0.25, demote_windows 5, window_ms 100"
ctl --json hot set --epsilon 0.5 --demote-windows 7 --window-ms 250
expect_rc 0
expect_req hot_set '{"epsilon":0.5,"demote_windows":7,"window_ms":250}'
expect_json 'v == {"threshold": 0.05, "threshold_low": 0.02, "epsilon": 0.5, "demote_windows": 7, "window_ms": 250}'
ctl hot set --threshold-low 0.5
expect_rc 1
expect_req hot_set '{"threshold_low":0.5}'
expect_err "spillctl: threshold_low: 0.5 is above threshold 0.05 (code -32602)"
ctl hot set --sample auto
expect_rc 0
expect_req hot_set '{"sample":"auto"}'
expect_out "hot-key parameters: threshold 0.05, threshold_low 0.02, epsilon 0.5, demote_windows 7, window_ms 250, sample auto"
ctl --json hot set --window-ms 100 --sample 0
expect_rc 0
expect_req hot_set '{"window_ms":100,"sample":0}'
expect_json 'v["sample"] == 0 and v["window_ms"] == 100'
ctl hot set --sample=8
expect_rc 0
expect_req hot_set '{"sample":8}'
ctl hot set --threshold auto --margin 0.1 --ewma-alpha 0.25
expect_rc 0
expect_req hot_set '{"threshold":"auto","margin":0.1,"ewma_alpha":0.25}'
# Reals at their shortest round-trip precision, sent and printed.
ctl --json hot set --threshold 0.3 --threshold-low 0.15
expect_rc 0
expect_req hot_set '{"threshold":0.3,"threshold_low":0.15}'
expect_out_re '^  "threshold": 0\.3,$'
expect_not_out '0.2999'

# The key per the VIP's key mode: 5tuple (dport defaults to the VIP's port).
ctl hot pin 192.0.2.20:80/tcp 198.51.100.9 --sport 40001 --replicas 2
expect_rc 0
expect_req hot_pin '{"vip":{"address":"192.0.2.20","port":80,"protocol":"tcp"},
	"key":{"src":"198.51.100.9","sport":40001},"replicas":2}'
expect_out "pinned 198.51.100.9 sport 40001 of 192.0.2.20:80/tcp over 2 replicas"
ctl hot list
expect_out_re '^192\.0\.2\.20:80/tcp +198\.51\.100\.9 sport 40001 dport 80 +0\.00% +2 \(10\.1\.0\.1, 10\.1\.0\.2\) +[0-9]+ +yes$'
expect_out "active 2, pinned 1"
ctl hot pin 192.0.2.20:80/tcp 198.51.100.9 --sport 40002 --dport 80 --replicas 4
expect_rc 0
expect_req hot_pin '{"vip":{"address":"192.0.2.20","port":80,"protocol":"tcp"},
	"key":{"src":"198.51.100.9","sport":40002,"dport":80},"replicas":4}'
ctl hot list
expect_out_re '^192\.0\.2\.20:80/tcp +198\.51\.100\.9 sport 40002 dport 80 +0\.00% +4 \(10\.1\.0\.1, 10\.1\.0\.2, 10\.1\.0\.3, \.\.\.\) '
ctl hot pin 192.0.2.20:80/tcp 198.51.100.9
expect_rc 1
expect_err "key.sport: missing (required by key mode 5tuple) (code -32602)"
ctl hot pin 192.0.2.20:80/tcp 198.51.100.9 --sport 1 --dport 8080
expect_rc 1
expect_err "key.dport: 8080 is not the port of the VIP (code -32602)"
# src_ip: the source alone; a port is refused.
ctl --json hot pin 192.0.2.40/udp 203.0.113.9
expect_rc 0
expect_req hot_pin '{"vip":{"address":"192.0.2.40","port":0,"protocol":"udp"},"key":{"src":"203.0.113.9"}}'
expect_json 'v == {}'
ctl hot pin 192.0.2.40/udp 203.0.113.9 --sport 5
expect_rc 1
expect_err "key.sport: not used by the VIP's key mode src_ip (code -32602)"
# src_ip_dport on a VIP of every port: --dport needed.
ctl hot pin 192.0.2.50/udp 203.0.113.9 --dport 53
expect_rc 0
expect_req hot_pin '{"vip":{"address":"192.0.2.50","port":0,"protocol":"udp"},
	"key":{"src":"203.0.113.9","dport":53}}'
expect_out "pinned 203.0.113.9 dport 53 of 192.0.2.50:0/udp (replicas from its share)"
ctl hot pin 192.0.2.50/udp 203.0.113.9
expect_rc 1
expect_err "key.dport: missing"
# IPv6, canonicalised, brackets optional.
ctl hot pin '[2001:db8::10]:443/udp' '[2001:DB8:0::7]' --replicas 0
expect_rc 0
expect_req hot_pin '{"vip":{"address":"2001:db8::10","port":443,"protocol":"udp"},
	"key":{"src":"2001:db8::7"},"replicas":0}'
ctl hot pin 192.0.2.99:80 198.51.100.9 --sport 1
expect_rc 1
expect_err "(code -32001)"

ctl hot unpin 192.0.2.20:80/tcp 198.51.100.9 --sport 40001
expect_rc 0
expect_req hot_unpin '{"vip":{"address":"192.0.2.20","port":80,"protocol":"tcp"},
	"key":{"src":"198.51.100.9","sport":40001}}'
expect_out "unpinned 198.51.100.9 sport 40001 of 192.0.2.20:80/tcp"
ctl hot unpin 192.0.2.20:80/tcp 198.51.100.9 --sport 40001
expect_rc 1
expect_err "no override of this key in VIP 192.0.2.20:80/tcp (code -32001)"
ctl hot events
expect_rc 0
expect_out_re ' pin +192\.0\.2\.20:80/tcp +198\.51\.100\.9 sport 40001 dport 80 +0\.00% +2$'
expect_out_re ' unpin +192\.0\.2\.20:80/tcp +198\.51\.100\.9 sport 40001 dport 80 '
ctl --json hot events
expect_json '[e["event"] for e in v] == ["promote", "pin", "pin", "pin", "pin", "pin", "unpin"]'

# Runtime changes are not transactions: refused in a batch, which is not applied.
cat >"$WORK/batch-hot.json" <<EOF
[{"method": "backend_add", "params": {"vip": $V10, "address": "10.1.0.8"}},
 {"method": "hot_set", "params": {"threshold": 0.2}}]
EOF
ctl batch "$WORK/batch-hot.json"
expect_rc 1
expect_err "hot_set cannot be part of a batch"
expect_out "batch not applied"
echo '[{"method": "hot_list"}, {"method": "hot_events"}]' >"$WORK/batch-hot2.json"
ctl --json batch "$WORK/batch-hot2.json"
expect_rc 0
expect_json 'len(v) == 2 and "overrides" in v[0] and isinstance(v[1], list)'
ctl config save
expect_rc 1
expect_err "spillctl: no state file configured (code -32603)"

# The server goes away in the middle of top: exit 3.
LAST="spillctl top (server stopped)"
"$CTL" -s "$SOCK" top --interval 0.3 --count 100 >"$WORK/out" 2>"$WORK/err" &
TOP=$!
sleep 0.5
stop_server
wait "$TOP"
RC=$?
expect_rc 3
expect_err "$SOCK: cannot connect"

echo "$CHECKS checks, $FAILED failed"
[[ $FAILED == 0 ]]
