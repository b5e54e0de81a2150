#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Pipelined changes share one state file write, and a reply still means durable.

1. Two clients each send PIPELINE backend_add requests in one write. strace
   (-f -y, attached to every thread of spillwayd) counts the fsync calls on
   the state file's temporary files: fewer than one per change (the changes
   of a loop turn are written once). Right after the last reply, kill -9; the
   state file must hold exactly the test's model (the initial configuration
   plus every acknowledged change).
2. The state file on a full tmpfs: a pipeline of changes gets -32603 for every
   one, config_get and the state file keep the model; once space is freed, the
   next pipeline is acknowledged and written.

usage: group_commit_check.py SPILLWAYD WORKDIR
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402

SPW, WORK = sys.argv[1], sys.argv[2]
PIPELINE = 40
VIP = {"address": "192.0.2.10", "port": 80, "protocol": "tcp"}
procs = []


def fail(msg):
    print("FAIL: " + msg)
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    sys.exit(1)


def start(tag, state, sock):
    cfg = os.path.join(WORK, "spw.json")
    json.dump({"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
               "maglev": {"table_size": 251, "seed": "gc"},
               "vips": [dict(VIP, backends=[{"address": "10.1.0.1"}])]}, open(cfg, "w"))
    log = open(os.path.join(WORK, "spillwayd-%s.log" % tag), "w")
    p = subprocess.Popen([SPW, "--no-huge", "-m", "256", "--no-pci", "-l", "0-1",
                          "--file-prefix", "spw-gc-%d-%s" % (os.getpid(), tag),
                          "--log-level", "lib.*:warning", "--vdev=net_null0",
                          "--", "--config", cfg, "--state", state, "--control", sock],
                         stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    for _ in range(400):
        if p.poll() is not None:
            fail("spillwayd (%s) exited with %s" % (tag, p.returncode))
        try:
            return p, spwrpc.Client(sock)
        except OSError:
            time.sleep(0.05)
    fail("spillwayd (%s) never opened its socket" % tag)


def norm(cfg):
    """VIP -> sorted backend addresses, from a configuration document."""
    return {(v["address"], v["port"], v["protocol"]): sorted(b["address"] for b in v["backends"])
            for v in cfg["vips"]}


def pipeline(sock_path, first_id, addrs):
    """One connection, every backend_add in one write; returns the sockets to read."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(sock_path)
    data = b"".join(json.dumps({"jsonrpc": "2.0", "id": first_id + i, "method": "backend_add",
                                "params": {"vip": VIP, "address": a}}).encode() + b"\n"
                    for i, a in enumerate(addrs))
    s.sendall(data)
    return s


def replies(s, n):
    buf, out = b"", []
    while len(out) < n:
        chunk = s.recv(1 << 16)
        if not chunk:
            fail("connection closed after %d of %d replies" % (len(out), n))
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            out.append(json.loads(line))
    return out


def strace_attach(pid):
    """strace -f on every thread of pid; returns (process, output path) once attached."""
    out = os.path.join(WORK, "fsync.trace")
    st = subprocess.Popen(["strace", "-f", "-y", "-qq", "-e", "trace=fsync", "-o", out,
                           "-p", str(pid)], stderr=subprocess.PIPE)
    # strace stops each thread to attach: wait until a probe call shows up traced.
    tasks = len(os.listdir("/proc/%d/task" % pid))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
                if any(line.startswith("TracerPid:") and int(line.split()[1]) == st.pid
                       for line in f):
                    attached = sum(1 for t in os.listdir("/proc/%d/task" % pid)
                                   if tracer_of(pid, t) == st.pid)
                    if attached >= tasks:
                        return st, out
        except OSError:
            pass
        time.sleep(0.05)
    fail("strace did not attach")


def tracer_of(pid, tid):
    try:
        with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def phase_pipelined():
    state, sock = os.path.join(WORK, "state.json"), os.path.join(WORK, "ctl.sock")
    p, c = start("pipe", state, sock)
    model = norm(c.call("config_get"))  # the configuration the test wrote, as loaded
    if model != {("192.0.2.10", 80, "tcp"): ["10.1.0.1"]}:
        fail("unexpected start configuration %s" % model)
    st, trace = strace_attach(p.pid)
    addrs = [["10.2.%d.%d" % (k, i + 1) for i in range(PIPELINE)] for k in range(2)]
    socks = [pipeline(sock, 1000 * (k + 1), addrs[k]) for k in range(2)]
    acked = 0
    for k, s in enumerate(socks):
        for i, r in enumerate(replies(s, PIPELINE)):
            if r.get("id") != 1000 * (k + 1) + i or "result" not in r:
                fail("client %d reply %d: %s" % (k, i, r))
            model[("192.0.2.10", 80, "tcp")].append(addrs[k][i])
            acked += 1
    os.kill(p.pid, signal.SIGKILL)  # right after the last reply
    p.wait()
    st.wait(timeout=30)
    model = {k: sorted(v) for k, v in model.items()}
    lines = open(trace).read().splitlines()
    file_syncs = [x for x in lines if "fsync(" in x and ".spw-tmp." in x]
    print("pipelined: %d changes acknowledged, %d fsync calls on the state file's "
          "temporary files, %d fsync calls in all" % (acked, len(file_syncs),
                                                      sum("fsync(" in x for x in lines)))
    if not file_syncs:
        fail("no fsync of the state file seen (strace did not trace the control thread?)")
    if len(file_syncs) * 4 > acked:
        fail("%d state file fsyncs for %d pipelined changes: not written once per turn"
             % (len(file_syncs), acked))
    got = norm(json.load(open(state)))
    if got != model:
        fail("after kill -9 the state file holds %s, the acknowledged model is %s" % (got, model))
    for s in socks:
        s.close()


def phase_full_disk():
    mnt = os.path.join(WORK, "mnt")
    os.mkdir(mnt)
    if subprocess.call(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt]) != 0:
        print("SKIP part 2: cannot mount a tmpfs")
        return
    try:
        state, sock = os.path.join(mnt, "state.json"), os.path.join(WORK, "ctl2.sock")
        p, c = start("full", state, sock)
        model = norm(c.call("config_get"))
        filler = os.path.join(mnt, "filler")
        subprocess.call(["dd", "if=/dev/zero", "of=" + filler, "bs=4k"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        addrs = ["10.3.0.%d" % (i + 1) for i in range(8)]
        s = pipeline(sock, 1, addrs)
        for i, r in enumerate(replies(s, len(addrs))):
            if r.get("id") != 1 + i or r.get("error", {}).get("code") != -32603:
                fail("full disk: reply %d is not -32603: %s" % (i, r))
        if norm(c.call("config_get")) != model:
            fail("full disk: refused changes are in force: %s" % c.call("config_get"))
        if norm(json.load(open(state))) != model:
            fail("full disk: the state file changed")
        os.unlink(filler)
        s2 = pipeline(sock, 100, addrs)
        for i, r in enumerate(replies(s2, len(addrs))):
            if "result" not in r:
                fail("space freed: reply %d: %s" % (i, r))
        model[("192.0.2.10", 80, "tcp")] = sorted(model[("192.0.2.10", 80, "tcp")] + addrs)
        if norm(c.call("config_get")) != model or norm(json.load(open(state))) != model:
            fail("space freed: daemon or state file differ from the model")
        print("full disk: %d changes refused with -32603, nothing applied; then %d "
              "acknowledged and written" % (len(addrs), len(addrs)))
        s.close()
        s2.close()
        c.close()
        p.terminate()
        p.wait()
    finally:
        subprocess.call(["umount", mnt])


try:
    phase_pipelined()
    phase_full_disk()
    for name in sorted(os.listdir(WORK)):
        if name.startswith("spillwayd-") and name.endswith(".log"):
            text = open(os.path.join(WORK, name), errors="replace").read()
            for bad in ("AddressSanitizer", "LeakSanitizer", "runtime error"):
                if bad in text:
                    fail("%s: %s: %s" % (name, bad, text[text.index(bad) - 200:][:2000]))
    print("PASS")
finally:
    # The DPDK runtime folders of the daemons this run started (their file prefixes).
    import glob
    import shutil
    for d in glob.glob("/var/run/dpdk/spw-gc-%d-*" % os.getpid()):
        shutil.rmtree(d, ignore_errors=True)
