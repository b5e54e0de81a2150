#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Live side of the memif integration tests (test_flood.sh, test_hotkeys.sh).

  live_stats.py CTL OUT.json STOP_FILE [--period S] [--end S] [--actions FILE]
                [--hot] [--deadline S]

Runs beside pktgen/run-memif.sh. Finds the spillwayd serving the control
socket CTL (read-only /proc scan) and polls its `stats` every --period
seconds (default 0.05) until STOP_FILE exists, the daemon goes away after
traffic began, or --deadline seconds (default 300) pass. Before traffic
begins, a lost connection is not an error: run-memif.sh may have restarted
both sides after a failed link bring-up, so the new daemon is found again.

Recorded per poll: the monotonic times the request was sent and the reply
read (t_req, t_rep), rx_packets, the flow-table counters, the hot-key window
open when the reply was built (stats.hot.window, if any) and VmRSS. From
these the checkers align spillgen's own clock (its run starts with its first
packet) and the controller's windows with one another:

  - traffic start t0 (spillgen's time 0): see t0_bounds(), from these
    counts against spillgen's own per-interval series (out["t0"] is only
    the first poll that saw rx > 0, [time the last poll saw rx 0, its
    reply]: a worker stall can hide traffic already sent);
  - window w opened after the last poll that saw a window < w was sent and
    before the first that saw >= w was answered (control builds the reply on
    the thread that opens windows, so the value is exact at that moment).
With --hot, each poll also reads hot_list for missed_core_windows (windows
the controller could not read from a core in time: that core's worker had
not closed them, i.e. it was descheduled) and windows_missed (windows the
controller decided nothing on), so a checker can tell which windows the
controller had no data for.

--actions FILE: a JSON list of {"at": SECONDS, "method": M, "params": {...}}
calls made over the socket at SECONDS after the traffic start (its upper
bound); each is recorded with its own t_req/t_rep and the reply or error.
An action may instead be {"at", "touch": PATH} or {"at", "remove": PATH}
(the file created or removed; t_req/t_rep bracket that). "hot_replica":
{"src": ADDR, "index": I} sets params.address to replica I (Python
indexing) of the override hot_list shows for the key whose src is ADDR,
read just before the call (recorded as "replicas"; an error if none).

--end S: once S seconds have passed since the traffic start and rx_packets
has not moved for 3 polls (traffic over, the daemon still running), one
"quiet" snapshot is taken: the whole stats document and, with --hot,
hot_list and hot_events. It is the daemon's account of the run before it is
stopped; a later quiet period replaces it.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spwrpc  # noqa: E402


def find_pid(ctl):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if open("/proc/%s/comm" % d).read().strip() != "spillwayd":
                continue
            if ctl.encode() in open("/proc/%s/cmdline" % d, "rb").read():
                return int(d)
        except OSError:
            pass
    return None


def rss_kib(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def t0_bounds(rows, series_csv):
    """Bounds [lo, hi] on spillgen's time 0 in monotonic time, from every
    poll: the daemon cannot have received more packets than spillgen had
    built by then, nor spillgen have decoded more than the daemon had
    forwarded. With cumulative counts at spillgen's interval edges e_j
    (SERIES.csv: tx per interval by send time, decoded per backend by
    receive time), for a poll answered between t_req and t_rep:
      t0 <= t_rep - e_j, e_j the last edge where built < rx,
      t0 >= t_req - e_k, e_k the first edge where decoded > forwarded.
    Both hold whatever the scheduling; they are tight when the daemon keeps
    up (rx close to what was sent). None when no poll gives a bound."""
    import csv
    tx, dec, ivs = {}, {}, None
    for r in csv.DictReader(open(series_csv)):
        i = round(float(r["t_s"]) * 1e6)
        tx[i] = float(r["tx_pps"])
        dec[i] = dec.get(i, 0.0) + float(r["pps"])
    edges = sorted(tx)
    if len(edges) < 2:
        return None
    ivs = (edges[1] - edges[0]) / 1e6
    cum_tx, cum_dec, a, b = [0], [0], 0, 0
    for i in edges:
        a += round(tx[i] * ivs)
        b += round(dec[i] * ivs)
        cum_tx.append(a)
        cum_dec.append(b)
    # cum[j] is the count before edge j (edge j at j * ivs).
    lo = hi = None
    import bisect
    for r in rows:
        if r["rx"] > 0:
            j = bisect.bisect_left(cum_tx, r["rx"]) - 1      # last j: cum_tx[j] < rx
            h = r["t_rep"] - max(0, j) * ivs
            hi = h if hi is None else min(hi, h)
        k = bisect.bisect_right(cum_dec, r.get("fwd", 0))  # first k: cum_dec[k] > fwd
        if k < len(cum_dec):
            x = r["t_req"] - k * ivs
            lo = x if lo is None else max(lo, x)
    if lo is None or hi is None or lo > hi:
        return None
    return [lo, hi]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ctl")
    ap.add_argument("out")
    ap.add_argument("stop")
    ap.add_argument("--period", type=float, default=0.05)
    ap.add_argument("--end", type=float, default=None)
    ap.add_argument("--actions", default=None)
    ap.add_argument("--hot", action="store_true")
    ap.add_argument("--deadline", type=float, default=300)
    a = ap.parse_args()
    actions = json.load(open(a.actions)) if a.actions else []
    actions.sort(key=lambda x: x["at"])
    done_actions = []
    t_begin = time.monotonic()
    pid = c = None
    pids = []
    rows = []
    t0 = None          # [lo, hi]
    last_zero_req = None
    quiet = None
    stop_reason = "stop file"

    def call(method, **params):
        return c.call(method, **params)

    while not os.path.exists(a.stop):
        now = time.monotonic()
        if now - t_begin > a.deadline:
            stop_reason = "deadline"
            break
        if c is None:
            pid = find_pid(a.ctl)
            if pid is not None and os.path.exists(a.ctl):
                try:
                    c = spwrpc.Client(a.ctl, timeout=5)
                    if pid not in pids:
                        pids.append(pid)
                except OSError:
                    c = None
            if c is None:
                time.sleep(a.period)
                continue
        try:
            t_req = time.monotonic()
            s = c.call("stats")
            hl = c.call("hot_list") if a.hot else None
            t_rep = time.monotonic()
        except (OSError, ConnectionError, ValueError, spwrpc.RpcError):
            c.close()
            c = None
            if t0 is None:
                last_zero_req = None   # a new daemon (link retry): start over
                continue
            stop_reason = "daemon gone"
            break
        t = s["totals"]
        row = {"t_req": t_req, "t_rep": t_rep, "rx": t["rx_packets"], "fwd": t["forwarded"],
               "hits": t["flow_hits"], "misses": t["flow_misses"],
               "rechosen": t["flow_rechosen"], "evictions": t["flow_evictions"],
               "new_flows": sum(v["new_flows"] for v in s["vips"]),
               "window": (s.get("hot") or {}).get("window"),
               "rss_kib": rss_kib(pid), "pid": pid,
               "missed": hl["counters"].get("missed_core_windows") if hl else None,
               "windows_missed": hl["counters"].get("windows_missed") if hl else None}
        rows.append(row)
        if t0 is None:
            if row["rx"] == 0:
                last_zero_req = t_req
            elif last_zero_req is not None:
                t0 = [last_zero_req, t_rep]
            else:
                # Traffic already flowing at the first poll of this daemon:
                # no lower bound on its start. Recorded as such.
                t0 = [None, t_rep]
        if t0 is not None:
            while actions and time.monotonic() >= t0[1] + actions[0]["at"]:
                x = actions.pop(0)
                rec = dict(x)
                rec["t_req"] = time.monotonic()
                try:
                    if "touch" in x:
                        open(x["touch"], "w").close()
                        rec["result"] = {}
                    elif "remove" in x:
                        os.unlink(x["remove"])
                        rec["result"] = {}
                    else:
                        params = dict(x.get("params", {}))
                        if "hot_replica" in x:
                            hr = x["hot_replica"]
                            ov = [o for o in call("hot_list")["overrides"]
                                  if o["key"].get("src") == hr["src"]]
                            if not ov:
                                raise ValueError("no override of %s" % hr["src"])
                            rec["replicas"] = ov[0]["replicas"]
                            params["address"] = ov[0]["replicas"][hr["index"]]
                            rec["params"] = params
                            rec["t_req"] = time.monotonic()
                        rec["result"] = call(x["method"], **params)
                except spwrpc.RpcError as e:
                    rec["error"] = {"code": e.code, "message": e.message}
                except (OSError, ConnectionError, ValueError, KeyError, IndexError) as e:
                    rec["error"] = {"code": None, "message": repr(e)}
                rec["t_rep"] = time.monotonic()
                done_actions.append(rec)
            if a.end is not None and time.monotonic() - t0[1] >= a.end and \
                    len(rows) >= 3 and rows[-1]["rx"] == rows[-2]["rx"] == rows[-3]["rx"] and \
                    (quiet is None or quiet["stats"]["totals"]["rx_packets"] != row["rx"]):
                try:
                    q = {"t_req": time.monotonic(), "stats": c.call("stats")}
                    if a.hot:
                        q["hot_list"] = c.call("hot_list")
                        q["hot_events"] = c.call("hot_events")
                    q["t_rep"] = time.monotonic()
                    quiet = q
                except (OSError, ConnectionError, ValueError, spwrpc.RpcError):
                    pass
        time.sleep(a.period)
    if c is not None:
        c.close()
    out = {"pids": pids, "t0": t0, "rows": rows, "actions": done_actions,
           "actions_not_done": actions, "quiet": quiet, "stop_reason": stop_reason,
           "period": a.period}
    json.dump(out, open(a.out, "w"))


if __name__ == "__main__":
    main()
