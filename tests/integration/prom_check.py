#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks of spillwayd's --metrics endpoint for test_prometheus.sh.

  prom_check.py http METRICS_PORT OUT_DIR DEADLINE_S
      While the load runs: wait until /metrics answers 200, save one scrape
      (OUT_DIR/scrape.txt, for promtool), then send requests the endpoint must
      refuse, each on its own connection, and check each status:
        POST /metrics -> 405 (with Allow), GET /nope -> 404,
        "garbage" -> 400, 16 KiB of header -> 431 (limit 8 KiB),
        HEAD /metrics -> 200 without a body;
      after each one a GET /metrics must still get 200 (the daemon keeps
      serving). Then the daemon's own count of each refusal must be at least
      what was sent (spillway_metrics_requests_total{code}). OUT_DIR/http.ok
      is written on success.

  prom_check.py query PROM_PORT RESULTS_JSON SERIES_CSV WINDOW_S
      After the load: reads, through Prometheus's HTTP API (/api/v1/query),
      what Prometheus scraped, and compares it with what spillgen reports
      (RESULTS_JSON, and its per-interval TX series SERIES_CSV), the
      independent oracle:
        - increase(spillway_rx_packets_total[R]) over the whole run equals
          spillgen's tx.packets, and increase of
          spillway_forwarded_packets_total equals spillgen's rx.packets,
          exactly: the range starts at the first sample, which is 0 (the
          scenario is idle for its first seconds while Prometheus scrapes, and
          this is asserted: exit status 3 otherwise, and the caller runs
          again with a longer lead-in), so Prometheus's extrapolation toward the range's
          start stops at the counter's zero, and the query is evaluated at the
          last sample's timestamp, so there is nothing to extrapolate on the
          right: increase() = last sample - first sample.
        - rate(spillway_rx_packets_total[W]) at each sample whose window lies
          inside the steady phase lies within what spillgen's own TX series
          allows for a stretch of that length (the bound is derived at the
          check, below: how late a scrape may read the counter after its
          timestamp, and where the stretch may fall on spillgen's clock).

  prom_check.py up PROM_PORT
      Prints the highest `up` of the job over the last 5 minutes.
"""
import csv
import json
import math
import socket
import sys
import time
import urllib.parse
import urllib.request


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def raw(port, data, timeout=10.0):
    """Send data on a new connection; return the whole reply (until close)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                return out
            out += b
    finally:
        s.close()


def status(reply):
    try:
        return int(reply.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def get(port):
    return raw(port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")


def http_mode(port, out_dir, deadline):
    t_end = time.monotonic() + deadline
    r = None
    while time.monotonic() < t_end:
        try:
            r = get(port)
            if status(r) == 200 and b"spillway_rx_packets_total{" in r:
                break
        except OSError:
            pass
        time.sleep(0.2)
    else:
        fail("metrics endpoint on port %d never answered 200" % port)
    body = r.split(b"\r\n\r\n", 1)[1]
    open(out_dir + "/scrape.txt", "wb").write(body)
    cases = [
        ("POST", b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
        ("404", b"GET /nope HTTP/1.1\r\n\r\n", 404),
        ("garbage", b"garbage\r\n\r\n", 400),
        ("oversized", b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 16384 + b"\r\n\r\n", 431),
    ]
    for name, req, want in cases:
        rep = raw(port, req)
        if status(rep) != want:
            fail("%s request: status %s, want %d (%r)" % (name, status(rep), want, rep[:80]))
        if want == 405 and b"\r\nAllow: GET, HEAD\r\n" not in rep:
            fail("405 without Allow: GET, HEAD")
        if status(get(port)) != 200:
            fail("after the %s request, GET /metrics no longer gets 200" % name)
        print("metrics endpoint: %s -> %d, then GET -> 200" % (name, want))
    rep = raw(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
    if status(rep) != 200 or not rep.endswith(b"\r\n\r\n"):
        fail("HEAD /metrics: %r" % rep[:200])
    text = get(port).split(b"\r\n\r\n", 1)[1].decode()
    for code in (400, 404, 405, 431):
        key = 'spillway_metrics_requests_total{code="%d"} ' % code
        line = [x for x in text.splitlines() if x.startswith(key)]
        if not line or int(line[0].split()[-1]) < 1:
            fail("the daemon did not count the %d reply: %s" % (code, line))
    open(out_dir + "/http.ok", "w").write("ok\n")


def query(port, expr, at):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (
        port, urllib.parse.urlencode({"query": expr, "time": "%.3f" % at}))
    with urllib.request.urlopen(url, timeout=10) as f:
        doc = json.load(f)
    if doc.get("status") != "success":
        fail("query %s: %s" % (expr, doc))
    return doc["data"]


def scalar(port, expr, at):
    res = query(port, expr, at)["result"]
    if len(res) != 1:
        fail("query %s at %.3f: %d series, want 1: %s" % (expr, at, len(res), res))
    return float(res[0]["value"][1])


def tx_series(path):
    """spillgen's CSV: (interval length s, packets sent per interval of the paced phase)."""
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows[float(r["t_s"])] = (r["phase"], float(r["tx_pps"]))
    ts = sorted(rows)
    iv = ts[1] - ts[0]
    counts = [rows[t][1] * iv for t in ts if rows[t][0] == "steady"]
    if len(counts) < 10:
        fail("spillgen's series has %d intervals of the steady phase" % len(counts))
    return iv, counts


def query_mode(port, results_path, series_path, window):
    res = json.load(open(results_path))
    sent, received = res["tx"]["packets"], res["rx"]["packets"]
    now = time.time()
    series = query(port, "spillway_rx_packets_total[10m]", now)["result"]
    if len(series) != 1:
        fail("spillway_rx_packets_total: %d series in Prometheus, want 1 (one worker)" % len(series))
    samples = [(float(t), float(v)) for t, v in series[0]["values"]]
    print("Prometheus holds %d samples of spillway_rx_packets_total, %.1f s apart on average"
          % (len(samples), (samples[-1][0] - samples[0][0]) / max(1, len(samples) - 1)))
    t_first, v_first = samples[0]
    t_last, v_last = samples[-1]
    if v_first != 0:
        # Not a fault of the daemon: the caller runs again with a longer lead-in.
        print("first scrape already counts %d packets: the idle lead-in was too short"
              % v_first, file=sys.stderr)
        sys.exit(3)
    if v_last != sent:
        print("note: last sample %d, spillgen sent %d" % (v_last, sent))
    rng = "%dms" % (round((t_last - t_first) * 1000) + 1)
    for metric, want, what in (("spillway_rx_packets_total", sent, "spillgen sent"),
                               ("spillway_forwarded_packets_total", received,
                                "spillgen received")):
        got = scalar(port, "sum(increase(%s[%s]))" % (metric, rng), t_last)
        print("increase(%s[%s]) = %.3f; %s %d" % (metric, rng, got, what, want))
        if abs(got - want) > 1e-9 * max(1, want):
            fail("increase(%s) = %.3f, but %s %d" % (metric, got, what, want))
    # The steady phase: from the last sample still at 0 to the first at the final count.
    t0 = max(t for t, v in samples if v == 0)
    t1 = min(t for t, v in samples if v == v_last)
    iv, counts = tx_series(series_path)
    d_max = scalar(port, 'max_over_time(scrape_duration_seconds{job="spillway"}[%s])' % rng, t_last)
    checked = 0
    for t, _ in samples:
        if t - window < t0 + 1.5 or t > t1 - 1.5:
            continue
        got = scalar(port, "sum(rate(spillway_rx_packets_total[%ds]))" % window, t)
        inside = [s for s in samples if t - window <= s[0] <= t]
        span = inside[-1][0] - inside[0][0]
        # Prometheus's rate here is (v_b - v_a) / span (a constant extrapolation
        # factor cancels out), the packets spillgen sent between the two reads
        # over span. Each read happens 0 to d_max (the scrape's duration as
        # Prometheus measured it) after its sample's timestamp, so the reads
        # are span - d_max to span + d_max apart, and where that stretch falls
        # on spillgen's clock is not known. Bound: it holds at least m_lo and
        # at most m_hi of spillgen's whole TX intervals (iv s each) anywhere
        # inside its steady phase: the smallest sum of m_lo consecutive
        # intervals over span, the largest sum of m_hi over span.
        m_lo = max(1, math.floor((span - d_max) / iv) - 1)
        m_hi = math.ceil((span + d_max) / iv) + 1
        lo = min(sum(counts[i:i + m_lo]) for i in range(len(counts) - m_lo + 1)) / span
        hi = max(sum(counts[i:i + m_hi]) for i in range(len(counts) - m_hi + 1)) / span
        print("rate(spillway_rx_packets_total[%ds]) at +%.1f s = %.1f pps; spillgen's TX "
              "series bounds it to [%.1f, %.1f] (span %.3f s, scrape <= %.3f s)"
              % (window, t - t0, got, lo, hi, span, d_max))
        if not lo <= got <= hi:
            fail("rate %.1f pps outside [%.1f, %.1f] from spillgen's TX series" % (got, lo, hi))
        checked += 1
    if checked < 2:
        fail("only %d rate windows inside the steady phase (t0 %.1f, t1 %.1f)" % (checked, t0, t1))
    print("prometheus: %d rate windows and both increases match spillgen" % checked)


def up_mode(port):
    """Print the highest `up` Prometheus recorded for the job in the last 5 minutes."""
    d = query(port, 'max_over_time(up{job="spillway"}[5m])', time.time())["result"]
    print(d[0]["value"][1] if d else "none")


def main():
    if sys.argv[1] == "up":
        up_mode(int(sys.argv[2]))
    elif sys.argv[1] == "http":
        http_mode(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    elif sys.argv[1] == "query":
        query_mode(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        fail("usage: prom_check.py http|query|up ...")


if __name__ == "__main__":
    main()
