# SPDX-License-Identifier: BSD-3-Clause
"""Client side of test_xdp_e2e.sh: real TCP and UDP through spillwayd (DSR).

Runs in the client namespace; talks to spillwayd's control socket (a path in
the file system, reachable from any network namespace). CONF is a JSON file:
  {"ctl": SOCKET, "mode": "af_xdp"|"af_packet",
   "host": {"address": LB_IP, "port": PORT, "name": NAME},
   "backends": {NAME: ADDRESS, ...}, "spare": NAME (added in the events),
   "vips": [{"address", "port", "protocol", "encap", "backends": {NAME: weight}}],
   "short": N, "long": N, "after_event": N, "udp_flows": N, "udp_per_flow": N,
   "summary": PATH}
Phases: (a) short connections per TCP VIP, spread against the Maglev table's
own slot shares; (b) long-lived connections across add / remove / drain;
(c) the LB's own address (ping, TCP) between phases; (d) UDP over GUE;
(e) spillwayd's counters. Exit 0 when every check passes, 1 otherwise.
"""

import asyncio
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402

TIMEOUT = 15.0        # per TCP step; generous, the machine is shared
DELTA = 1e-9          # chance that one spread check fails by chance alone
CONCURRENCY = 24


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# ---------------------------------------------------------------- statistics
def binom_interval(n, p, delta):
    """[lo, hi] with P(X < lo) <= delta/2 and P(X > hi) <= delta/2 for
    X ~ Binomial(n, p): exact tails, no approximation."""
    if p <= 0.0:
        return 0, 0
    if p >= 1.0:
        return n, n
    lp, lq = math.log(p), math.log1p(-p)
    pmf = [math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                    + k * lp + (n - k) * lq) for k in range(n + 1)]
    lo, acc = 0, 0.0
    while lo < n and acc + pmf[lo] <= delta / 2:
        acc += pmf[lo]
        lo += 1
    hi, acc = n, 0.0
    while hi > 0 and acc + pmf[hi] <= delta / 2:
        acc += pmf[hi]
        hi -= 1
    return lo, hi


# ---------------------------------------------------------------- TCP
class Conn:
    """One TCP connection to a VIP; .backend is the name in the greeting."""

    def __init__(self, vip):
        self.vip = vip
        self.backend = None
        self.reader = self.writer = None

    async def open(self):
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.vip["address"], self.vip["port"]), TIMEOUT)
        line = await asyncio.wait_for(self.reader.readline(), TIMEOUT)
        check(line.startswith(b"HELLO "), "%s: bad greeting %r" % (vkey(self.vip), line))
        self.backend = line[6:].strip().decode()
        return self

    async def echo(self, text):
        self.writer.write(text.encode() + b"\n")
        await self.writer.drain()
        line = await asyncio.wait_for(self.reader.readline(), TIMEOUT)
        check(line, "%s: connection to %s closed (EOF) on %r" % (vkey(self.vip), self.backend, text))
        name, _, rest = line.decode().rstrip("\n").partition(" ")
        check(rest == text, "%s: echo %r for %r" % (vkey(self.vip), line, text))
        return name

    async def close(self):
        self.writer.close()
        await self.writer.wait_closed()

    async def close_gracefully(self):
        """Half-close, then the server's FIN (EOF), not a reset."""
        self.writer.write_eof()
        try:
            rest = await asyncio.wait_for(self.reader.read(), TIMEOUT)
        except (OSError, asyncio.TimeoutError) as e:
            raise Fail("%s: closing the connection to %s: %s"
                       % (vkey(self.vip), self.backend, e or type(e).__name__))
        check(rest == b"", "%s: data after EOF from %s: %r" % (vkey(self.vip), self.backend, rest))
        await self.close()


def vkey(v):
    return "%s:%d/%s" % (v["address"], v["port"], v["protocol"])


async def short_conn(vip, tag):
    c = await Conn(vip).open()
    name = await c.echo(tag)
    check(name == c.backend, "%s: greeting from %s, echo from %s" % (vkey(vip), c.backend, name))
    await c.close()
    return c.backend


async def many_short(vip, n):
    """n short connections, CONCURRENCY at a time; every one must succeed."""
    sem = asyncio.Semaphore(CONCURRENCY)
    errors = []

    async def one(i):
        async with sem:
            try:
                return await short_conn(vip, "short %d" % i)
            except (OSError, asyncio.TimeoutError, Fail) as e:
                errors.append("%s #%d: %s" % (vkey(vip), i, e or type(e).__name__))
                return None

    got = await asyncio.gather(*(one(i) for i in range(n)))
    check(not errors, "%d of %d connections failed, first: %s" % (len(errors), n,
                                                                  errors[0] if errors else ""))
    counts = {}
    for b in got:
        counts[b] = counts.get(b, 0) + 1
    return counts


# ---------------------------------------------------------------- the test
class Run:
    def __init__(self, conf):
        self.conf = conf
        self.rpc = spwrpc.Client(conf["ctl"])
        self.addr2name = {a: n for n, a in conf["backends"].items()}
        self.summary = {"mode": conf["mode"], "vips": {}, "events": [], "host_checks": 0,
                        "udp": {}}
        self.tcp_vips = [v for v in conf["vips"] if v["protocol"] == "tcp"]
        self.udp_vips = [v for v in conf["vips"] if v["protocol"] == "udp"]
        for v in conf["vips"]:
            self.summary["vips"][vkey(v)] = {"encap": v["encap"], "opened": 0, "succeeded": 0,
                                             "backends": {}}

    def ref(self, v):
        return spwrpc.vip_ref(v["address"], v["port"], v["protocol"])

    def shares(self, v):
        """Backend name -> probability of a new flow, from the live table."""
        t = self.rpc.call("maglev_table", vip=self.ref(v))
        m = t["table_size"]
        return {self.addr2name[b["address"]]: b["slots"] / m for b in t["backends"]}

    def account(self, v, counts, n):
        s = self.summary["vips"][vkey(v)]
        s["opened"] += n
        s["succeeded"] += sum(counts.values())
        for b, k in counts.items():
            s["backends"][b] = s["backends"].get(b, 0) + k

    def check_spread(self, v, counts, n, label):
        shares = self.shares(v)
        for b in counts:
            check(shares.get(b, 0) > 0,
                  "%s %s: %d new connections reached %s, which has no slots (table %s)"
                  % (vkey(v), label, counts[b], b, shares))
        lines = []
        for b, p in sorted(shares.items()):
            k = counts.get(b, 0)
            lo, hi = binom_interval(n, p, DELTA)
            lines.append("%s %d (expected %.1f, bound [%d, %d])" % (b, k, n * p, lo, hi))
            check(lo <= k <= hi, "%s %s: %s got %d of %d new connections, share %.4f allows "
                  "[%d, %d] (P < %g by chance)" % (vkey(v), label, b, k, n, p, lo, hi, DELTA))
        print("  %s %s: %s" % (vkey(v), label, "; ".join(lines)), flush=True)

    async def host_check(self, label):
        """(c) the balancer's own address: ICMP echo and a TCP exchange."""
        h = self.conf["host"]
        p = await asyncio.create_subprocess_exec(
            "ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "5", h["address"],
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await p.communicate()
        check(p.returncode == 0, "%s: ping %s failed: %s" % (label, h["address"], out.decode()))
        c = Conn({"address": h["address"], "port": h["port"], "protocol": "tcp"})
        await c.open()
        check(c.backend == h["name"], "%s: host service answered as %r" % (label, c.backend))
        check(await c.echo("host " + label) == h["name"], "%s: host echo" % label)
        await c.close()
        self.summary["host_checks"] += 1

    async def warm_up(self):
        """First packets may wait for ARP on every hop: one patient connection per VIP."""
        deadline = time.monotonic() + 60
        for v in self.tcp_vips:
            while True:
                try:
                    await short_conn(v, "warm-up")
                    break
                except (OSError, asyncio.TimeoutError) as e:
                    if time.monotonic() > deadline:
                        raise Fail("%s: no connection within 60 s: %s" % (vkey(v), e))
                    await asyncio.sleep(0.5)

    async def phase_a(self):
        n = self.conf["short"]
        print("(a) %d short connections per TCP VIP" % n, flush=True)
        for v in self.tcp_vips:
            # (c) while the connections run: the LB's own address answers too.
            counts, _ = await asyncio.gather(many_short(v, n),
                                             self.host_check("during (a) " + vkey(v)))
            self.account(v, counts, n)
            self.check_spread(v, counts, n, "short")
        await self.host_check("after (a)")

    async def check_long(self, conns, label):
        """Every long-lived connection answers, from the backend it started on."""
        async def one(c):
            try:
                name = await c.echo("long %s" % label)
            except (OSError, asyncio.TimeoutError) as e:
                raise Fail("%s: long-lived connection on %s broke after %s: %s"
                           % (vkey(c.vip), c.backend, label, e or type(e).__name__))
            check(name == c.backend, "%s: long-lived connection moved from %s to %s after %s"
                  % (vkey(c.vip), c.backend, name, label))
        await asyncio.gather(*(one(c) for c in conns))
        return len(conns)

    async def new_after(self, v, label, forbidden, must):
        """New connections after an event: all succeed, none on forbidden."""
        n = self.conf["after_event"]
        counts = await many_short(v, n)
        self.account(v, counts, n)
        bad = {b: k for b, k in counts.items() if b in forbidden}
        check(not bad, "%s after %s: new connections reached %s" % (vkey(v), label, bad))
        shares = self.shares(v)
        for b in must:
            miss = (1 - shares.get(b, 0)) ** n
            if miss < DELTA:
                check(counts.get(b, 0) > 0, "%s after %s: none of %d new connections reached %s "
                      "(share %.3f)" % (vkey(v), label, n, b, shares.get(b, 0)))
        return counts

    async def phase_b(self):
        conf = self.conf
        per_vip = conf["long"] // len(self.tcp_vips)
        print("(b) %d long-lived connections per TCP VIP, then add / remove / drain"
              % per_vip, flush=True)
        conns = []
        for v in self.tcp_vips:
            for _ in range(per_vip):
                conns.append(await Conn(v).open())
        opened = len(conns)
        await self.check_long(conns, "open")
        va, vb = self.tcp_vips[0], self.tcp_vips[1]
        spare = conf["spare"]

        def ev(name, detail, survivors, closed, counts):
            self.summary["events"].append({"event": name, "detail": detail,
                                           "long_survived": survivors, "long_closed": closed,
                                           "new_ok": counts})
            print("  event %s (%s): %d long-lived connections answered from the same backend; "
                  "new connections %s" % (name, detail, survivors, counts), flush=True)

        # 1. add a backend to VIP A.
        self.rpc.call("backend_add", vip=self.ref(va), address=conf["backends"][spare], weight=1)
        alive = await self.check_long(conns, "add")
        counts = await self.new_after(va, "add", set(), {spare})
        ev("add", "%s to %s" % (spare, vkey(va)), alive, 0, counts)
        await self.host_check("after add")

        # 2. remove other backends: one from each TCP VIP, none of them the one just
        # added. Their long-lived connections are closed first (as an operator
        # drains before removing): those would be re-chosen, hence reset.
        rm_a = sorted(va["backends"])[0]
        rm_b = sorted(b for b in vb["backends"] if b != rm_a)[-1]
        closed = 0
        keep = []
        for c in conns:
            if (c.vip is va and c.backend == rm_a) or (c.vip is vb and c.backend == rm_b):
                await c.close_gracefully()
                closed += 1
            else:
                keep.append(c)
        conns = keep
        self.rpc.call("backend_remove", vip=self.ref(va), address=conf["backends"][rm_a])
        self.rpc.call("backend_remove", vip=self.ref(vb), address=conf["backends"][rm_b])
        alive = await self.check_long(conns, "remove")
        ca = await self.new_after(va, "remove", {rm_a}, set())
        cb = await self.new_after(vb, "remove", {rm_b}, set())
        ev("remove", "%s from %s, %s from %s" % (rm_a, vkey(va), rm_b, vkey(vb)), alive, closed,
           {vkey(va): ca, vkey(vb): cb})
        await self.host_check("after remove")

        # 3. drain the backend of one long-lived connection of VIP A.
        target = next(c for c in conns if c.vip is va)
        dr = target.backend
        self.rpc.call("backend_set", vip=self.ref(va), address=conf["backends"][dr],
                      state="draining")
        on_drained = sum(1 for c in conns if c.vip is va and c.backend == dr)
        alive = await self.check_long(conns, "drain")
        counts = await self.new_after(va, "drain", {dr, rm_a}, set())
        ev("drain", "%s in %s, %d long-lived connections on it" % (dr, vkey(va), on_drained),
           alive, 0, counts)
        await self.host_check("after drain")

        # Close cleanly: each close must see the server's FIN, not a reset.
        for c in conns:
            await c.close_gracefully()
        self.summary["long"] = {"opened": opened, "closed_before_remove": closed,
                                "survived_all": len(conns)}

    async def phase_d(self):
        conf = self.conf
        loop = asyncio.get_running_loop()
        for v in self.udp_vips:
            nflows, per = conf["udp_flows"], conf["udp_per_flow"]
            print("(d) %s (%s): %d flows x %d datagrams" % (vkey(v), v["encap"], nflows, per),
                  flush=True)
            stats = {"flows": nflows, "datagrams": 0, "answered": 0, "resent": 0,
                     "backends": {}}
            sem = asyncio.Semaphore(CONCURRENCY)
            by_sport = {}

            class Proto(asyncio.DatagramProtocol):
                def __init__(self):
                    self.q = asyncio.Queue()

                def datagram_received(self, data, addr):
                    self.q.put_nowait((data, addr))

            async def flow(i):
                async with sem:
                    tr, pr = await loop.create_datagram_endpoint(
                        Proto, remote_addr=(v["address"], v["port"]))
                    sport = tr.get_extra_info("sockname")[1]
                    names = set()
                    try:
                        for j in range(per):
                            msg = b"udp %d %d" % (i, j)
                            stats["datagrams"] += 1
                            for attempt in range(4):
                                tr.sendto(msg)
                                try:
                                    data, addr = await asyncio.wait_for(pr.q.get(), 3.0)
                                    # A late answer to an earlier datagram of this flow
                                    # (one sent again): same backend, not this one's.
                                    while data.partition(b" ")[2] != msg:
                                        late = data.partition(b" ")[2]
                                        check(late.startswith(b"udp %d " % i),
                                              "%s: answer %r to %r" % (vkey(v), data, msg))
                                        names.add(data.partition(b" ")[0].decode())
                                        data, addr = await asyncio.wait_for(pr.q.get(), 3.0)
                                except asyncio.TimeoutError:
                                    stats["resent"] += 1
                                    continue
                                check(addr[0] == v["address"], "%s: answer from %s"
                                      % (vkey(v), addr))
                                names.add(data.partition(b" ")[0].decode())
                                stats["answered"] += 1
                                break
                            else:
                                raise Fail("%s: flow %d datagram %d unanswered after 4 tries"
                                           % (vkey(v), i, j))
                    finally:
                        tr.close()
                    check(len(names) == 1, "%s: one 5-tuple answered by %s" % (vkey(v), names))
                    name = names.pop()
                    # A source port used again later (a new socket) is the same 5-tuple.
                    check(by_sport.setdefault(sport, name) == name,
                          "%s: source port %d answered by %s, earlier by %s"
                          % (vkey(v), sport, name, by_sport[sport]))
                    return name

            await asyncio.gather(*(flow(i) for i in range(nflows)))
            # One sample per distinct 5-tuple (a reused source port is the same flow).
            nflows = len(by_sport)
            counts = {}
            for b in by_sport.values():
                counts[b] = counts.get(b, 0) + 1
            stats["backends"] = counts
            stats["source_ports"] = len(by_sport)
            self.check_spread(v, counts, nflows, "udp flows")
            self.account(v, counts, nflows)
            self.summary["udp"][vkey(v)] = stats
            print("  %d datagrams, %d answered, %d resent after a 3 s wait"
                  % (stats["datagrams"], stats["answered"], stats["resent"]), flush=True)
        await self.host_check("after (d)")

    def phase_e(self):
        st = self.rpc.call("stats")
        tot = st["totals"]
        self.summary["stats"] = {"totals": {k: tot[k] for k in tot if k != "drops"},
                                 "drops": {k: n for k, n in tot.get("drops", {}).items() if n},
                                 "hooks": st.get("hooks")}
        drops = self.summary["stats"]["drops"]
        if self.conf["mode"] == "af_xdp":
            xdp = (st.get("hooks") or {}).get("xdp")
            check(xdp is not None, "stats has no hooks.xdp: this spillwayd does not steer with XDP")
            flat = flatten(xdp)
            red = sum(n for k, n in flat.items() if "redirect" in k)
            passed = sum(n for k, n in flat.items() if "pass" in k and "no_xsk" not in k)
            no_xsk = sum(n for k, n in flat.items() if "no_xsk" in k)
            check(red > 0, "hooks.xdp: no redirect counted: %s" % xdp)
            check(passed > 0, "hooks.xdp: no pass counted (the host traffic): %s" % xdp)
            check(no_xsk == 0, "hooks.xdp: VIP frames passed for want of a socket: %s" % xdp)
            check(flat.get("failures", 0) == 0, "hooks.xdp: hook failures: %s" % xdp)
            # Only VIP frames reach spillwayd: nothing to drop.
            check(not drops, "spillwayd dropped packets: %s" % drops)
            check(tot["rx_packets"] == red, "spillwayd received %d packets, XDP redirected %d"
                  % (tot["rx_packets"], red))
            hc = self.summary["host_checks"]
            check(xdp.get("pass_not_l4", 0) >= 3 * hc,
                  "hooks.xdp.pass_not_l4 %s < the %d pings sent to the LB" % (xdp, 3 * hc))
            check(xdp.get("pass_not_vip", 0) >= 3 * hc,
                  "hooks.xdp.pass_not_vip: %s, but %d TCP exchanges with the LB's own service"
                  % (xdp, hc))
        else:
            unexpected = {k: n for k, n in drops.items() if k != "no_vip"}
            check(not unexpected, "spillwayd dropped packets: %s" % unexpected)
        check(tot.get("icmp_sent", 0) == 0, "spillwayd sent ICMP too-big: %s" % tot)
        for v in st["vips"]:
            k = "%s:%d/%s" % (v["address"], v["port"], v["protocol"])
            if k in self.summary["vips"]:
                self.summary["vips"][k]["spillway_new_flows"] = v["new_flows"]
                self.summary["vips"][k]["spillway_packets"] = v["packets"]

    async def run(self):
        t0 = time.monotonic()
        await self.warm_up()
        await self.host_check("start")
        await self.phase_a()
        await self.phase_b()
        await self.phase_d()
        self.phase_e()
        self.summary["client_seconds"] = round(time.monotonic() - t0, 1)


def flatten(o, prefix=""):
    out = {}
    if isinstance(o, dict):
        for k, v in o.items():
            out.update(flatten(v, prefix + k + "."))
    elif isinstance(o, (int, float)) and not isinstance(o, bool):
        out[prefix[:-1]] = o
    return out


def print_summary(s):
    print("---- summary (%s) ----" % s["mode"])
    for k, v in s["vips"].items():
        print("%-22s %-4s opened %4d succeeded %4d  per backend %s  (spillway new_flows %s)"
              % (k, v["encap"], v["opened"], v["succeeded"],
                 dict(sorted(v["backends"].items())), v.get("spillway_new_flows")))
    for e in s["events"]:
        print("event %-7s %-45s long-lived survived %d (closed before: %d)"
              % (e["event"], e["detail"], e["long_survived"], e["long_closed"]))
    for k, u in s["udp"].items():
        print("udp %s: %d flows, %d datagrams, %d answered, %d resent" %
              (k, u["flows"], u["datagrams"], u["answered"], u["resent"]))
    print("host checks (ping + TCP to the LB's own address): %d" % s["host_checks"])
    if "stats" in s:
        print("spillwayd totals: %s" % s["stats"]["totals"])
        print("spillwayd drops: %s" % (s["stats"]["drops"] or "none"))
        print("spillwayd hooks: %s" % s["stats"]["hooks"])
    print("client time: %s s" % s.get("client_seconds"))


def main():
    conf = json.load(open(sys.argv[1]))
    r = Run(conf)
    rc = 0
    try:
        asyncio.run(r.run())
    except Fail as e:
        print("FAIL: %s" % e, flush=True)
        rc = 1
    finally:
        with open(conf["summary"], "w") as f:
            json.dump(r.summary, f, indent=1)
        print_summary(r.summary)
    return rc


if __name__ == "__main__":
    sys.exit(main())
