#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Control socket integration test: spillwayd on net_null (endless packets, no
# NIC, no hugepages) with --control, attacked by hostile clients (garbage, a
# 10 MiB request, half a line then silence, 256 and then 1030 simultaneous
# connections, a client that sends and never reads) while a well-behaved
# client keeps getting answers and the workers keep receiving. Then the socket
# file rules across processes (mode whatever the umask, live socket refused
# before EAL starts, stale socket after a crash replaced, non-socket kept,
# file removed on SIGTERM with exit 0) and --state start-up.
#
# usage: test_control_socket.sh SPILLWAYD
# env:   SPW_CTL_KEEP=1   keep the work directory (printed at the end)
set -euo pipefail

SPW=${1:?usage: test_control_socket.sh SPILLWAYD}
SPW=$(readlink -f "$SPW")
PY=/usr/bin/python3
. "$(cd "$(dirname "$0")" && pwd)/daemon_lib.sh"
spw_test_begin ctl SPW_CTL_KEEP
SOCK=$WORK/ctl.sock

[[ -x $SPW ]] || fail "not executable: $SPW"
[[ -x $PY ]] || { echo "SKIP: $PY needed"; exit 77; }

cat >"$WORK/config.json" <<'EOF'
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
 "maglev": {"table_size": 251},
 "flows": {"capacity": 4096},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"}]}]}
EOF

# start TAG [daemon options...]: spillwayd in the background with umask 000
# (the socket's mode must not depend on it); sets PID, spillwayd's own (no
# wrapper: the crash case SIGKILLs it; the trap stops what is left).
start() {
	local tag=$1
	shift
	(
		umask 000
		exec "$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-$tag" \
			-l 0-1 --vdev=net_null0 -- "$@"
	) >"$WORK/$tag.stdout" 2>"$WORK/$tag.stderr" &
	PID=$!
	PIDS+=("$PID")
}

# stop PID: SIGTERM, wait, set RC.
# A daemon that has not ended 240 s after SIGTERM is reported with what each
# of its threads is blocked in (/proc: name, state, wait channel, syscall),
# then killed; the test fails. (An ASan build's exit runs LeakSanitizer over
# the daemon's heap and 512 MiB of DPDK memory: tens of seconds on a loaded
# machine.)
# running PID: the process exists and is not a zombie (one that exited and
# is reaped meanwhile reads as gone, not as running).
running() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $st && $st != Z ]]
}

stop() {
	local i t
	kill -TERM "$1"
	for i in $(seq 1 2400); do
		running "$1" || break
		sleep 0.1
	done
	if running "$1"; then
		echo "daemon $1 still running 240 s after SIGTERM; its threads:" >&2
		for t in /proc/"$1"/task/*; do
			echo "  $(cat "$t/comm") state $(awk '{print $3}' "$t/stat") wchan $(cat "$t/wchan")" \
				"syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)" >&2
		done
		kill -KILL "$1"
		wait "$1" 2>/dev/null
		fail "daemon $1 did not stop on SIGTERM"
	fi
	set +e
	wait "$1"
	RC=$?
	set -e
}

# run_fg TAG [daemon options...]: a daemon expected to exit by itself; sets RC.
run_fg() {
	local tag=$1
	shift
	set +e
	timeout -k 5 60 "$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-$tag" -l 0-1 \
		--vdev=net_null0 -- "$@" >"$WORK/$tag.stdout" 2>"$WORK/$tag.stderr"
	RC=$?
	set -e
}

# --- 1: hostile clients against a live daemon --------------------------------
echo "== hostile clients"
# --control-idle shortens the 60 s default so that the half-line client below
# is judged in 15 s; the default itself is the same code path.
IDLE_MS=15000
start main --config "$WORK/config.json" --control "$SOCK" --control-idle "$IDLE_MS"
MAIN=$PID
wait_socket "$SOCK" "$MAIN" || { cat "$WORK/main.stderr" >&2; fail "daemon did not come up"; }
[[ $(stat -c %a "$SOCK") == 660 ]] || fail "socket mode $(stat -c %a "$SOCK"), want 660 (umask was 000)"

"$PY" - "$SOCK" "$MAIN" "$IDLE_MS" <<'EOF'
import errno, json, os, resource, socket, sys, time

path, pid = sys.argv[1], int(sys.argv[2])
idle_s = int(sys.argv[3]) / 1000.0
T0 = time.monotonic()


def log(msg):
    print("  [%5.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


def connect(timeout=5.0):
    """Connect; a full backlog (EAGAIN on a Unix socket) is retried, as a real client would."""
    end = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() > end:
                raise
            time.sleep(0.01)


def readline(s, buf=b""):
    while b"\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    return line, rest


def call(s, method, rid):
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method}).encode() + b"\n")
    line, rest = readline(s)
    assert rest == b"", "unexpected extra bytes after the reply: %r" % rest[:80]
    r = json.loads(line)
    assert isinstance(r, dict) and r.get("jsonrpc") == "2.0", "not a JSON-RPC reply: %r" % line[:200]
    assert r.get("id") == rid, "reply id %r, want %r" % (r.get("id"), rid)
    return r


def is_closed(s, wait=5.0):
    """True once the server has closed s (EOF or reset), reading whatever it sent."""
    s.settimeout(wait)
    end = time.monotonic() + wait
    try:
        while time.monotonic() < end:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


good = connect()
state = {"id": 0, "rx": None, "stats": None}


def check(what):
    """The well-behaved client is answered and the workers keep receiving."""
    state["id"] += 1
    r = call(good, "version", state["id"])
    os.kill(pid, 0)
    rx = None
    # The worker shares a small machine with everything else: give it up to
    # 3 s to show progress rather than demand it between two calls.
    deadline = time.monotonic() + 3
    while True:
        state["id"] += 1
        st = call(good, "stats", state["id"])
        if "result" not in st:
            break
        rx = st["result"]["totals"]["rx_packets"]
        assert "generation" in st["result"], "stats without generation"
        if state["rx"] is None or rx > state["rx"]:
            break
        assert time.monotonic() < deadline, "rx_packets not rising: %d -> %d" % (state["rx"], rx)
        time.sleep(0.05)
    if rx is not None:
        state["rx"] = rx
        state["stats"] = st["result"]
    log("%s: version %s, rx_packets %s" % (what, "ok" if "result" in r else "answered (error: %s)"
                                               % r["error"]["message"], rx if rx is not None else "n/a (stats not implemented; daemon alive)"))


check("start")

# Half a line, then silence: closed after the idle timeout (--control-idle). Opened first
# and checked last, so the other scenarios run while it waits.
half = connect()
half.sendall(b'{"jsonrpc": "2.0", "method": "vers')
half_t = time.monotonic()

# Garbage: random bytes (with newlines: many bad lines), NULs, invalid UTF-8.
g = connect()
g.sendall(os.urandom(65536) + b"\n\x00\x00\xff\xfe{{{[[[\n" + b"\xc3\x28\n")
g.shutdown(socket.SHUT_WR)
replies = b""
g.settimeout(10)
try:
    while True:
        chunk = g.recv(65536)
        if not chunk:
            break
        replies += chunk
except (ConnectionResetError, socket.timeout):
    pass
for line in replies.splitlines():
    r = json.loads(line)
    assert r["jsonrpc"] == "2.0" and "error" in r, "garbage got a non-error reply: %r" % line[:200]
log("garbage: %d error replies" % len(replies.splitlines()))
g.close()
check("after garbage")

# 10 MiB request: error -32600 "request too large", then closed.
big = connect(timeout=10)
try:
    big.sendall(b'{"jsonrpc":"2.0","id":1,"method":"version","params":{"x":"' + b"x" * (10 << 20))
except (BrokenPipeError, ConnectionResetError):
    pass
line, _ = readline(big)
r = json.loads(line)
assert r["error"]["code"] == -32600 and "request too large" in r["error"]["message"], r
assert is_closed(big), "oversized request: connection not closed"
big.close()
log("10 MiB request: %s, closed" % r["error"]["message"])
check("after 10 MiB request")

# 256 simultaneous connections, each answered.
conns = [connect() for _ in range(256)]
for i, c in enumerate(conns):
    c.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": "version"}).encode() + b"\n")
for i, c in enumerate(conns):
    line, _ = readline(c)
    assert json.loads(line)["id"] == i
check("256 connections open")
for c in conns:
    c.close()
log("256 connections: all answered")

# Beyond the 1024-client limit: further connections are accepted and closed
# at once; the earlier ones (and the good client) are still served.
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if hard >= 1200:
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    time.sleep(0.2)  # let the server reap the 256 closed ones
    many = [connect() for _ in range(1030)]
    closed = sum(1 for c in many[1020:] if is_closed(c, wait=0.5))
    assert closed >= 7, "only %d of the last 10 connections closed (limit 1024 incl. the good client + half)" % closed
    c = many[0]
    c.sendall(b'{"jsonrpc":"2.0","id":7,"method":"version"}\n')
    assert json.loads(readline(c)[0])["id"] == 7
    check("1030 connections attempted")
    for c in many:
        c.close()
    log("client limit: %d of the last 10 connections closed at once" % closed)
else:
    log("client limit: skipped (RLIMIT_NOFILE hard limit %d)" % hard)

# A client that sends and never reads: closed once its unsent replies pass
# 4 MiB; the good client is served meanwhile.
hog = connect(timeout=0.2)
req = b'{"jsonrpc":"2.0","id":1,"method":"version"}\n' * 1000
sent, closed, last_check = 0, False, time.monotonic()
end = time.monotonic() + 60
while time.monotonic() < end and not closed:
    try:
        sent += hog.send(req)
    except socket.timeout:
        pass
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    if time.monotonic() - last_check > 0.5:
        check("hog sending (%d MiB sent)" % (sent >> 20))
        last_check = time.monotonic()
assert closed, "a client that never reads was not closed (%d bytes sent)" % sent
hog.close()
log("never-reading client closed after %d MiB of requests" % (sent >> 20))
check("after the hog")

# The half line: closed idle_s after it went silent, not much later.
left = idle_s - (time.monotonic() - half_t)
assert not is_closed(half, wait=max(0.1, left - 5)), "half-line client closed before the idle timeout"
assert is_closed(half, wait=15), "half-line client not closed after the idle timeout"
log("half-line client closed after %.1f s" % (time.monotonic() - half_t))
check("end")

# Every core is on the published snapshot.
if state["stats"] is not None:
    gen = state["stats"]["generation"]
    assert all(c["snapshot_gen"] == gen for c in state["stats"]["cores"]), state["stats"]["cores"]
EOF

# --- 1b: large replies and never-reading clients: memory stays bounded ---------
# A 262139-slot table: one raw reply (~2.9 MB) fits the 4 MiB reply budget,
# two do not. Four clients never read: two send batches of 64 raw calls, two
# pipeline single raw calls. Bound: the daemon's peak RSS (VmHWM) grows by at
# most 64 MiB over what it was before (4 clients x (4 MiB output cap + 1 MiB
# request cap) = 20 MiB, plus one request's transient JSON and allocator
# slack), and a well-behaved client gets every answer meanwhile.
echo "== large replies, clients that never read"
cat >"$WORK/big.json" <<'JSON'
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
 "maglev": {"table_size": 262139},
 "flows": {"capacity": 4096},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"}]}]}
JSON
BIGSOCK=$WORK/big.sock
# In an ASan build freed replies wait in ASan's quarantine (256 MiB by default)
# and would count as growth no live allocation explains: keep it small here so
# the bound judges what the daemon holds; other builds ignore the variable.
SAVED_ASAN_OPTIONS=${ASAN_OPTIONS-}
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
start big --config "$WORK/big.json" --control "$BIGSOCK"
export ASAN_OPTIONS="$SAVED_ASAN_OPTIONS"
BIG=$PID
wait_socket "$BIGSOCK" "$BIG" || { cat "$WORK/big.stderr" >&2; fail "daemon did not come up"; }
"$PY" - "$BIGSOCK" "$BIG" <<'PYEOF'
import json, socket, sys

path, pid = sys.argv[1], int(sys.argv[2])
VIP = {"address": "192.0.2.10", "port": 80, "protocol": "tcp"}
ROUNDS, LIMIT_KIB = 40, 64 * 1024


def status(key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    return s


class Client:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def send(self, req):
        self.s.sendall(json.dumps(req).encode() + b"\n")

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            assert chunk, "connection closed"
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def call(self, method, rid, **params):
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params:
            req["params"] = params
        self.send(req)
        r = self.line()
        assert isinstance(r, dict) and r.get("id") == rid, r
        return r


def raw_call(rid, **extra):
    return {"jsonrpc": "2.0", "id": rid, "method": "maglev_table",
            "params": dict(vip=VIP, raw=True, **extra)}


good = Client(connect())
assert "result" in good.call("version", 0)

# One raw table fits; a page by from/count is that slice of it.
t = good.call("maglev_table", 1, vip=VIP, raw=True)["result"]["table"]
assert len(t) == 262139 and set(t) == {"10.1.0.1", "10.1.0.2"}, len(t)
r = good.call("maglev_table", 2, vip=VIP, raw=True, **{"from": 262000, "count": 1000})
assert r["result"]["from"] == 262000 and r["result"]["table"] == t[262000:], r.get("error")
# Two in one batch do not: the second gets -32004 saying how, the first -32010.
good.send([raw_call(3), raw_call(4)])
r = good.line()
assert [e["error"]["code"] for e in r] == [-32010, -32004], r
assert "from and count" in r[1]["error"]["message"], r[1]
print("  raw table: whole, by range, two in a batch refused: %s" % r[1]["error"]["message"])

base_rss, base_hwm = status("VmRSS"), status("VmHWM")
batch = (json.dumps([raw_call(i) for i in range(64)]) + "\n").encode()
single = (json.dumps(raw_call(1)) + "\n").encode() * 16
hogs = []
for i in range(4):
    h = connect()
    h.setblocking(False)
    hogs.append({"s": h, "data": batch if i < 2 else single, "off": 0, "gone": False})
answers, peak = 0, base_rss
for rnd in range(ROUNDS):
    for hog in hogs:
        try:
            while not hog["gone"]:  # as much as the socket takes
                n = hog["s"].send(hog["data"][hog["off"]:])
                hog["off"] = (hog["off"] + n) % len(hog["data"])
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            hog["gone"] = True
    r = good.call("version", 100 + rnd)
    assert "result" in r, r
    answers += 1
    peak = max(peak, status("VmRSS"))
hwm = status("VmHWM")
closed = sum(1 for h in hogs if h["gone"])
print("  %d of %d answers to the good client; VmRSS %d KiB before, %d max; VmHWM %d -> %d KiB; "
      "%d of 4 hogs closed" % (answers, ROUNDS, base_rss, peak, base_hwm, hwm, closed))
assert answers == ROUNDS
grown = hwm - max(base_hwm, base_rss)
assert grown <= LIMIT_KIB, "peak RSS grew by %d KiB (bound %d KiB)" % (grown, LIMIT_KIB)
for h in hogs:
    h["s"].close()
assert "result" in good.call("version", 999)
PYEOF
stop "$BIG"
[[ $RC -eq 0 ]] || { cat "$WORK/big.stderr" >&2; fail "big: exit $RC after SIGTERM"; }

# --- 2: socket file rules across processes -------------------------------------
echo "== a second daemon on the same socket is refused before EAL"
run_fg second --config "$WORK/config.json" --control "$SOCK"
[[ $RC -eq 1 ]] || fail "second daemon: exit $RC, want 1"
grep -q "$SOCK: another spillwayd is listening" "$WORK/second.stderr" ||
	fail "second daemon: unexpected message: $(cat "$WORK/second.stderr")"
grep -q "EAL" "$WORK/second.stderr" && fail "second daemon started EAL"
kill -0 "$MAIN" || fail "first daemon died"

echo "== SIGTERM: exit 0, socket file removed"
stop "$MAIN"
[[ $RC -eq 0 ]] || { cat "$WORK/main.stderr" >&2; fail "exit status $RC after SIGTERM"; }
[[ ! -e $SOCK ]] || fail "socket file left after a clean exit"
grep -q '"generation"' "$WORK/main.stdout" || fail "no generation in the exit stats"
grep -q '"snapshot_gen"' "$WORK/main.stdout" || fail "no snapshot_gen in the exit stats"

echo "== a crash leaves a stale socket; the next start replaces it"
start crash --config "$WORK/config.json" --control "$SOCK"
wait_socket "$SOCK" "$PID" || fail "daemon did not come up"
kill -KILL "$PID"
wait "$PID" 2>/dev/null || true
[[ -S $SOCK ]] || fail "no stale socket file after SIGKILL"
rm -rf "/var/run/dpdk/$PREFIX-crash"
start restart --config "$WORK/config.json" --control "$SOCK" --control-mode 0600
wait_socket "$SOCK" "$PID" || { cat "$WORK/restart.stderr" >&2; fail "restart over a stale socket failed"; }
[[ $(stat -c %a "$SOCK") == 600 ]] || fail "--control-mode 0600: got $(stat -c %a "$SOCK")"
stop "$PID"
[[ $RC -eq 0 && ! -e $SOCK ]] || fail "restart: exit $RC or socket left"

echo "== a non-socket at the path is an error and is kept"
echo precious >"$WORK/not-a-socket"
run_fg notsock --config "$WORK/config.json" --control "$WORK/not-a-socket"
[[ $RC -eq 1 ]] || fail "non-socket path: exit $RC, want 1"
grep -q "not a socket" "$WORK/notsock.stderr" || fail "non-socket: $(cat "$WORK/notsock.stderr")"
[[ $(cat "$WORK/not-a-socket") == precious ]] || fail "the non-socket file was changed"

echo "== option errors"
run_fg badmode --config "$WORK/config.json" --control "$SOCK" --control-mode 0999
[[ $RC -eq 2 ]] || fail "--control-mode 0999: exit $RC, want 2"
run_fg badgroup --config "$WORK/config.json" --control "$SOCK" --control-group no-such-group-spw
[[ $RC -eq 2 ]] || fail "--control-group unknown: exit $RC, want 2"
run_fg badidle --config "$WORK/config.json" --control "$SOCK" --control-idle 99
[[ $RC -eq 2 ]] && grep -q -- "--control-idle" "$WORK/badidle.stderr" ||
	fail "--control-idle 99: exit $RC: $(cat "$WORK/badidle.stderr")"
run_fg idlenoctl --config "$WORK/config.json" --control-idle 1000
[[ $RC -eq 2 ]] && grep -q "need --control" "$WORK/idlenoctl.stderr" ||
	fail "--control-idle without --control: exit $RC: $(cat "$WORK/idlenoctl.stderr")"
run_fg nocfg --state "$WORK/missing.json"
[[ $RC -eq 2 ]] && grep -q "no state file yet" "$WORK/nocfg.stderr" ||
	fail "--state missing without --config: exit $RC: $(cat "$WORK/nocfg.stderr")"

# --- 3: --state ---------------------------------------------------------------------
echo "== an existing --state file is loaded instead of --config"
sed 's/192.0.2.10/192.0.2.99/' "$WORK/config.json" >"$WORK/state.json"
start state --config "$WORK/config.json" --state "$WORK/state.json" --control "$SOCK"
wait_socket "$SOCK" "$PID" || { cat "$WORK/state.stderr" >&2; fail "start with --state failed"; }
stop "$PID"
[[ $RC -eq 0 ]] || fail "--state run: exit $RC"
grep -q '192.0.2.99' "$WORK/state.stdout" && ! grep -q '192.0.2.10' "$WORK/state.stdout" ||
	fail "the state file's VIPs are not the ones running"

echo "== an invalid state file: exit 2, one message naming it"
echo '{"vips": [' >"$WORK/bad-state.json"
run_fg badstate --config "$WORK/config.json" --state "$WORK/bad-state.json"
[[ $RC -eq 2 ]] || fail "invalid state file: exit $RC, want 2"
grep -q "$WORK/bad-state.json" "$WORK/badstate.stderr" || fail "message: $(cat "$WORK/badstate.stderr")"

echo "== a missing state file is created from --config at start-up"
start newstate --config "$WORK/config.json" --state "$WORK/new-state.json" --control "$SOCK"
if wait_socket "$SOCK" "$PID"; then
	[[ -s $WORK/new-state.json ]] || fail "state file not written at start-up"
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["vips"][0]["address"] == "192.0.2.10"' \
		"$WORK/new-state.json" || fail "state file content"
	# SIGHUP reloads --config and saves it.
	sed 's/192.0.2.10/192.0.2.77/' "$WORK/config.json" >"$WORK/config2.json"
	cp "$WORK/config2.json" "$WORK/config.json"
	kill -HUP "$PID"
	for _ in $(seq 1 50); do
		grep -q 192.0.2.77 "$WORK/new-state.json" && break
		sleep 0.1
	done
	grep -q 192.0.2.77 "$WORK/new-state.json" || fail "SIGHUP did not save the state file"
	stop "$PID"
	[[ $RC -eq 0 ]] || fail "newstate: exit $RC"
else
	set +e
	wait "$PID"
	RC=$?
	set -e
	if grep -q "Function not implemented" "$WORK/newstate.stderr"; then
		echo "  (skipped: lb_persist_write not implemented yet; start-up failed cleanly, exit $RC)"
	else
		cat "$WORK/newstate.stderr" >&2
		fail "start with a new --state failed"
	fi
fi

# --- 4: a stalled worker ----------------------------------------------------------
# SPILLWAY_TEST_STALL_FILE (test-only): while the file exists, worker 0 (lcore 1
# here) forwards but reports no quiescent state. Changes must then be refused
# with -32020 naming lcore 1, never hang; read-only calls go on; memory stays
# bounded; removing the file lets changes through again; SIGTERM still stops.
echo "== a stalled worker: changes refused, reads answered, recovery, SIGTERM"
STALL=$WORK/stall
rm -f "$STALL"
sed 's/192.0.2.77/192.0.2.10/' "$WORK/config.json" >"$WORK/stall-config.json"
(
	export SPILLWAY_TEST_STALL_FILE=$STALL
	exec "$SPW" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-stall" -l 0-1 \
		--vdev=net_null0 -- --config "$WORK/stall-config.json" --control "$SOCK"
) >"$WORK/stall.stdout" 2>"$WORK/stall.stderr" &
PID=$!
PIDS+=("$PID")
wait_socket "$SOCK" "$PID" || { cat "$WORK/stall.stderr" >&2; fail "stall daemon did not come up"; }
"$PY" - "$SOCK" "$PID" "$STALL" "$(dirname "$0")" <<'EOF2'
import os, sys, time
sys.path.insert(0, sys.argv[4])
import spwrpc

path, pid, stall = sys.argv[1], int(sys.argv[2]), sys.argv[3]
vip = spwrpc.vip_ref("192.0.2.10", 80, "tcp")
STALLED = -32020  # docs/control-protocol.md


def rss_kb():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def weight(c):
    cfg = c.call("config_get")
    return [b["weight"] for b in cfg["vips"][0]["backends"] if b["address"] == "10.1.0.1"][0]


def wait_for(pred, what, bound=15.0):
    end = time.monotonic() + bound
    while not pred():
        assert time.monotonic() < end, "timed out waiting for " + what
        time.sleep(0.05)


a = spwrpc.Client(path, timeout=10.0)  # a hang is a socket timeout, not a stuck test
b = spwrpc.Client(path, timeout=10.0)
a.call("backend_set", vip=vip, address="10.1.0.1", weight=3)
assert weight(b) == 3
assert a.call("stats")["stalled_cores"] == []
open(stall, "w").write("0\n")
wait_for(lambda: b.call("stats")["stalled_cores"] == [1], "stats to name lcore 1 stalled")
st = b.call("stats")
assert [c["stalled"] for c in st["cores"]] == [True], st["cores"]
rss0 = rss_kb()
for k in range(100):
    try:
        a.call("backend_set", vip=vip, address="10.1.0.1", weight=10 + k)
        raise AssertionError("change %d accepted while lcore 1 is stalled" % k)
    except spwrpc.RpcError as e:
        assert e.code == STALLED, e
        assert "lcore 1" in e.message, e.message
    if k % 10 == 0:  # another client's reads keep being answered
        assert b.call("vip_list")[0]["address"] == "192.0.2.10"
        assert weight(b) == 3
grown = rss_kb() - rss0
print("  100 refused changes, RSS grew %d kB" % grown)
# A snapshot of this configuration is a few MB: 64 kept would be >100 MB.
assert grown < 32 * 1024, "RSS grew %d kB while changes were refused" % grown
os.unlink(stall)
wait_for(lambda: b.call("stats")["stalled_cores"] == [], "the stall to clear")
a.call("backend_set", vip=vip, address="10.1.0.1", weight=7)
assert weight(b) == 7
# Stalled again for the SIGTERM case below.
open(stall, "w").write("0\n")
wait_for(lambda: b.call("stats")["stalled_cores"] == [1], "the second stall")
a.close()
b.close()
EOF2
grep -q "worker stalled: lcore(s) \[1\]" "$WORK/stall.stderr" || fail "no log line naming the stalled lcore"
kill -TERM "$PID"
for _ in $(seq 1 200); do
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$PID" 2>/dev/null && fail "SIGTERM did not stop a daemon with a stalled worker within 20 s"
set +e
wait "$PID"
RC=$?
set -e
[[ $RC -eq 0 ]] || fail "stalled daemon: exit $RC after SIGTERM, want 0"

# --- 5: SIGHUP applies what it can and refuses restart-only settings ---------------
echo "== SIGHUP: restart-only fields refused and named, hot.enabled applied"
cat >"$WORK/hup.json" <<'EOF2'
{"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
 "maglev": {"table_size": 251},
 "flows": {"capacity": 4096},
 "vips": [{"address": "192.0.2.10", "port": 80, "protocol": "tcp",
           "backends": [{"address": "10.1.0.1"}, {"address": "10.1.0.2"}]}]}
EOF2
start hup --config "$WORK/hup.json" --state "$WORK/hup-state.json" --control "$SOCK"
wait_socket "$SOCK" "$PID" || { cat "$WORK/hup.stderr" >&2; fail "hup daemon did not come up"; }
"$PY" - "$SOCK" "$PID" "$WORK" "$(dirname "$0")" <<'EOF2'
import json, os, signal, sys, time
sys.path.insert(0, sys.argv[4])
import spwrpc

path, pid, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cfgfile, state, log = work + "/hup.json", work + "/hup-state.json", work + "/hup.stderr"
base = json.load(open(cfgfile))
c = spwrpc.Client(path, timeout=10.0)


def wait_for(pred, what, bound=15.0):
    end = time.monotonic() + bound
    while not pred():
        assert time.monotonic() < end, "timed out waiting for " + what
        time.sleep(0.05)


def hup(doc):
    with open(cfgfile + ".tmp", "w") as f:
        json.dump(doc, f)
    os.rename(cfgfile + ".tmp", cfgfile)
    n = open(log).read().count("SIGHUP")
    os.kill(pid, signal.SIGHUP)
    wait_for(lambda: open(log).read().count("SIGHUP") > n, "the SIGHUP log line")
    return open(log).read().splitlines()[-1]


# Restart-only settings, each alone and with a VIP change beside them: the
# reload is refused as a whole, the line names the field, nothing changes.
for field, change in (("flows.capacity", ("flows", "capacity", 8192)),
                      ("flows.tcp_idle_ms", ("flows", "tcp_idle_ms", 1000)),
                      ("flows.udp_idle_ms", ("flows", "udp_idle_ms", 1000))):
    before = open(state, "rb").read()
    doc = json.loads(json.dumps(base))
    doc.setdefault(change[0], {})[change[1]] = change[2]
    doc["vips"][0]["address"] = "192.0.2.11"
    line = hup(doc)
    assert field in line and "restart" in line, line
    got = c.call("config_get")
    assert got["flows"]["capacity"] == 4096, got["flows"]
    assert got[change[0]][change[1]] != change[2], got[change[0]]
    assert got["vips"][0]["address"] == "192.0.2.10", got["vips"]
    assert open(state, "rb").read() == before, "the state file changed on a refused reload"

# hot.enabled false: the controller stops; true again: it runs again.
assert "window" in c.call("hot_list")
doc = json.loads(json.dumps(base))
doc["hot"] = {"enabled": False}
line = hup(doc)
assert "reloaded" in line, line
assert c.call("config_get")["hot"]["enabled"] is False
assert json.load(open(state))["hot"]["enabled"] is False
try:
    c.call("hot_list")
    raise AssertionError("hot_list answered with hot.enabled false")
except spwrpc.RpcError as e:
    assert e.code == -32603 and "disabled" in e.message, e
assert "hot" not in c.call("stats"), "hot windows still counted"
doc["hot"] = {"enabled": True}
line = hup(doc)
assert "reloaded" in line, line
assert c.call("config_get")["hot"]["enabled"] is True
w0 = c.call("hot_list")["window"]
wait_for(lambda: c.call("hot_list")["window"] > w0, "hot windows to advance again")

# Each hot-key parameter at and beyond its documented bounds (docs/operations.md,
# docs/control-protocol.md, written here): SIGHUP and hot_set give one verdict,
# a refusal names the field. threshold "auto" (the default) is printed back.
assert c.call("config_get")["hot"]["threshold"] == "auto"
assert c.call("hot_list")["params"]["threshold"] == "auto"
for name, value, ok in (
        ("window_ms", 10, True), ("window_ms", 9, False),
        ("window_ms", 60000, True), ("window_ms", 60001, False),
        ("threshold", "auto", True), ("threshold", 1e-9, True), ("threshold", 0, False),
        ("threshold", 1, True), ("threshold", 1.000001, False),
        ("threshold_low", "auto", True), ("threshold_low", 0, False),
        ("threshold_low", 1.000001, False),
        ("epsilon", 0.001, True), ("epsilon", 0.000999, False),
        ("epsilon", 100, True), ("epsilon", 100.001, False),
        ("margin", 0, True), ("margin", 0.5, True), ("margin", 0.501, False),
        ("ewma_alpha", 0.01, True), ("ewma_alpha", 0.0099, False), ("ewma_alpha", 1.001, False),
        ("demote_windows", 1, True), ("demote_windows", 0, False),
        ("demote_windows", 1000, True), ("demote_windows", 1001, False),
        ("sample", "auto", True), ("sample", 8, True), ("sample", 9, False)):
    doc = json.loads(json.dumps(base))
    doc["hot"] = {name: value}
    line = hup(doc)
    if ok:
        assert "reloaded" in line, (name, value, line)
        assert c.call("config_get")["hot"][name] == value, (name, value)
    else:
        assert "hot.%s: " % name in line and "keeping" in line, (name, value, line)
    try:
        c.call("hot_set", **{name: value})
        assert ok, ("hot_set took", name, value)
    except spwrpc.RpcError as e:
        assert not ok, ("hot_set refused", name, value, e)
        assert e.code == -32602 and e.message.startswith(name + ": "), e
line = hup(base)
assert "reloaded" in line, line
c.close()
EOF2
stop "$PID"
[[ $RC -eq 0 ]] || fail "hup daemon: exit $RC"

echo "control socket test: PASS"
