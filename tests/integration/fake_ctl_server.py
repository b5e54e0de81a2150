#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fake spillwayd control server for testing spillctl without DPDK.

Answers JSON-RPC 2.0 on a Unix stream socket, one JSON value per line, as
docs/control-protocol.md describes (methods, error codes, batches applied as
one transaction), keeping the configuration in memory. Every request value it
reads is appended, as one compact JSON line, to the --log file so a test can
check what the client sent. Counters in "stats" grow on every call so rate
computations (spillctl top) see non-zero deltas.

hot_* methods answer only with --hot-keys (else -32603 "hot keys are
disabled"); hot_list then reports an automatic override for the first VIP
plus the keys pinned with hot_pin, and hot_events the pins and unpins.

Test-only methods: fake_sleep {"seconds": S} answers after S seconds;
fake_big {"bytes": N} answers with an N-character string; fake_badid answers
with a wrong id; fake_garbage answers a line that is not JSON.

Hostile replies: fake_reply {"method": M, "reply": R} makes the next request
for method M (a single request, on any connection) get R, any JSON value, as
its whole reply instead of the real answer; in R, a top-level "id" of "$ID"
becomes the request's id. The server's state does not change for that
request. With that a test sends what a broken or hostile server could:
no or a wrong "jsonrpc", a wrong id, both or neither of result and error, a
result of the wrong shape, strings with tabs, newlines and terminal escapes.

maglev_table takes raw's from/count. With --table-size N its tables are
maglev_ref.py's (seed "fake") of N slots; with --reply-budget B a reply line
over B bytes becomes -32004 "reply too large" as spillwayd's does; with
--table-churn the membership it builds from changes on every raw page after
the first (a table changing while a client pages through it).

Backend names are checked as docs/control-protocol.md says: 1 to 63 bytes of
A-Z a-z 0-9 . _ : -.

usage: fake_ctl_server.py --socket PATH --log FILE [--ready FILE]
                          [--hot-keys] [--no-state-file] [--table-size N]
                          [--reply-budget BYTES] [--table-churn]
"""

import argparse
import copy
import ipaddress
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import maglev_ref  # noqa: E402

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
NOT_FOUND = -32001
EXISTS = -32002
TOO_LARGE = -32004
ABORTED = -32010

DROP_REASONS = ["eth_trunc", "ip4_trunc", "ip4_malformed", "ip6_trunc", "ip6_malformed",
                "l4_trunc", "icmp_trunc", "icmp_malformed", "no_vip", "no_backend",
                "too_big", "no_headroom", "tx_full", "martian_src", "icmp_limited",
                "frag_failed", "not_our_mac"]


NOTHING = object()  # no forged reply pending
NAME_BYTES = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")


class RpcError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def check_fields(obj, where, allowed, required=()):
    if not isinstance(obj, dict):
        raise RpcError(INVALID_PARAMS, f"{where or 'params'}: expected an object")
    for k in obj:
        if k not in allowed:
            raise RpcError(INVALID_PARAMS, f"{where}{'.' if where else ''}{k}: unknown field",
                           {"field": k})
    for k in required:
        if k not in obj:
            raise RpcError(INVALID_PARAMS, f"{where}{'.' if where else ''}{k}: required",
                           {"field": k})


def check_addr(v, where):
    if not isinstance(v, str):
        raise RpcError(INVALID_PARAMS, f"{where}: expected a string")
    try:
        return str(ipaddress.ip_address(v))
    except ValueError:
        raise RpcError(INVALID_PARAMS, f"{where}: not an IPv4 or IPv6 address: \"{v}\"")


def check_int(v, where, lo, hi):
    if not isinstance(v, int) or isinstance(v, bool):
        raise RpcError(INVALID_PARAMS, f"{where}: expected an integer, got a {type(v).__name__}")
    if v < lo or v > hi:
        raise RpcError(INVALID_PARAMS, f"{where}: {v} is out of range {lo}..{hi}")
    return v


def check_enum(v, where, values):
    if v not in values:
        raise RpcError(INVALID_PARAMS, f"{where}: expected one of {', '.join(values)}")
    return v


class State:
    def __init__(self, args):
        self.args = args
        self.vips = []
        self.generation = 1
        self.calls = 0
        self.churn = 0  # maglev_table pages served under --table-churn
        self.counters = {}
        self.hot_params = {"threshold": 0.01, "threshold_low": 0.005, "epsilon": 0.25,
                           "demote_windows": 5, "window_ms": 100}
        self.window = 1233
        self.overrides = []
        self.events = [{"window": 1200, "event": "promote",
                        "vip": {"address": "192.0.2.10", "port": 80, "protocol": "tcp"},
                        "key": {"src": "198.51.100.7"}, "share": 0.12, "replicas": 3}]

    # -- lookups ---------------------------------------------------------

    def vip_ref(self, ref, where):
        check_fields(ref, where, ("address", "port", "protocol"), ("address", "port", "protocol"))
        addr = check_addr(ref["address"], (where + "." if where else "") + "address")
        port = check_int(ref["port"], (where + "." if where else "") + "port", 0, 65535)
        proto = check_enum(ref["protocol"], (where + "." if where else "") + "protocol",
                           ("tcp", "udp"))
        return addr, port, proto

    def find_vip(self, key):
        for v in self.vips:
            if (v["address"], v["port"], v["protocol"]) == key:
                return v
        raise RpcError(NOT_FOUND, "VIP not found: %s:%d/%s" % key)

    @staticmethod
    def find_backend(v, addr):
        for b in v["backends"]:
            if b["address"] == addr:
                return b
        raise RpcError(NOT_FOUND, f"backend not found: {addr}")

    @staticmethod
    def backend(obj, where):
        check_fields(obj, where, ("address", "weight", "name", "state"), ("address",))
        pre = where + "." if where else ""
        b = {"address": check_addr(obj["address"], pre + "address"),
             "weight": check_int(obj.get("weight", 1), pre + "weight", 0, 65535)}
        if "name" in obj:
            name = obj["name"]
            if not isinstance(name, str):
                raise RpcError(INVALID_PARAMS, pre + "name: expected a string")
            raw = name.encode("utf-8")
            if not 1 <= len(raw) <= 63:
                raise RpcError(INVALID_PARAMS,
                               pre + "name: must be 1 to 63 bytes (got %d)" % len(raw),
                               {"field": pre + "name"})
            for i, ch in enumerate(raw):
                if chr(ch) not in NAME_BYTES:
                    raise RpcError(INVALID_PARAMS,
                                   pre + "name: byte %d (0x%02x) is not allowed: a name is "
                                   "made of A-Z a-z 0-9 . _ : -" % (i + 1, ch),
                                   {"field": pre + "name"})
            b["name"] = name
        b["state"] = check_enum(obj.get("state", "active"), pre + "state",
                                ("active", "draining", "down"))
        return b

    # -- methods ---------------------------------------------------------

    def m_version(self, p):
        check_fields(p, "", ())
        return {"version": "0.1.0", "protocol": 1}

    def m_vip_list(self, p):
        check_fields(p, "", ())
        return copy.deepcopy(self.vips)

    def m_vip_get(self, p):
        return copy.deepcopy(self.find_vip(self.vip_ref(p, "")))

    def m_vip_add(self, p):
        check_fields(p, "", ("address", "port", "protocol", "key", "encap", "backends"),
                     ("address", "port", "protocol"))
        key = self.vip_ref({k: p[k] for k in ("address", "port", "protocol")}, "")
        for v in self.vips:
            if (v["address"], v["port"], v["protocol"]) == key:
                raise RpcError(EXISTS, "VIP already exists: %s:%d/%s" % key)
        v = {"address": key[0], "port": key[1], "protocol": key[2],
             "key": check_enum(p.get("key", "5tuple"), "key", ("5tuple", "src_ip", "src_ip_dport")),
             "encap": check_enum(p.get("encap", "ipip"), "encap", ("ipip", "gue")),
             "backends": []}
        bes = p.get("backends", [])
        if not isinstance(bes, list):
            raise RpcError(INVALID_PARAMS, "backends: expected an array")
        for i, b in enumerate(bes):
            nb = self.backend(b, f"backends[{i}]")
            if any(x["address"] == nb["address"] for x in v["backends"]):
                raise RpcError(INVALID_PARAMS, f"backends[{i}].address: duplicate backend")
            v["backends"].append(nb)
        self.vips.append(v)
        return copy.deepcopy(v)

    def m_vip_remove(self, p):
        v = self.find_vip(self.vip_ref(p, ""))
        self.vips.remove(v)
        return {}

    def m_backend_add(self, p):
        check_fields(p, "", ("vip", "address", "weight", "name", "state"), ("vip", "address"))
        v = self.find_vip(self.vip_ref(p["vip"], "vip"))
        nb = self.backend({k: p[k] for k in p if k != "vip"}, "")
        for x in v["backends"]:
            if x["address"] == nb["address"]:
                raise RpcError(EXISTS, f"backend already exists: {nb['address']}")
        v["backends"].append(nb)
        return copy.deepcopy(nb)

    def m_backend_remove(self, p):
        check_fields(p, "", ("vip", "address"), ("vip", "address"))
        v = self.find_vip(self.vip_ref(p["vip"], "vip"))
        b = self.find_backend(v, check_addr(p["address"], "address"))
        v["backends"].remove(b)
        return {}

    def m_backend_set(self, p):
        check_fields(p, "", ("vip", "address", "weight", "state"), ("vip", "address"))
        if "weight" not in p and "state" not in p:
            raise RpcError(INVALID_PARAMS, "weight or state is required")
        v = self.find_vip(self.vip_ref(p["vip"], "vip"))
        b = self.find_backend(v, check_addr(p["address"], "address"))
        if "weight" in p:
            w = check_int(p["weight"], "weight", 0, 65535)
        if "state" in p:
            s = check_enum(p["state"], "state", ("active", "draining", "down"))
        if "weight" in p:
            b["weight"] = w
        if "state" in p:
            b["state"] = s
        return copy.deepcopy(b)

    def counter(self, key, step):
        self.counters[key] = self.counters.get(key, 0) + step
        return self.counters[key]

    def m_stats(self, p):
        check_fields(p, "", ())
        vips = []
        tot_pk = tot_by = 0
        for v in self.vips:
            vk = "%s:%d/%s" % (v["address"], v["port"], v["protocol"])
            bes = []
            vp = vb = vn = 0
            for i, b in enumerate(v["backends"]):
                step = 0 if b["state"] == "down" else 100 * (i + 1)
                pk = self.counter(vk + b["address"] + "p", step)
                by = self.counter(vk + b["address"] + "b", step * 100)
                nf = self.counter(vk + b["address"] + "n", step // 10)
                bes.append({"address": b["address"], "name": b.get("name", ""),
                            "weight": b["weight"], "state": b["state"],
                            "packets": pk, "bytes": by, "new_flows": nf})
                if b["address"] == "10.1.0.3":  # a learned path MTU (stats "path_mtu")
                    bes[-1]["path_mtu"] = 1400
                vp += pk
                vb += by
                vn += nf
            vips.append({"address": v["address"], "port": v["port"], "protocol": v["protocol"],
                         "packets": vp, "bytes": vb, "new_flows": vn, "backends": bes})
            tot_pk += vp
            tot_by += vb
        drops = {r: 0 for r in DROP_REASONS}
        drops["no_vip"] = self.counter("no_vip", 7)
        drops["no_backend"] = self.counter("no_backend", 3)
        dropped = sum(drops.values())
        icmp = self.counter("icmp", 1)
        totals = {"rx_packets": tot_pk + dropped + icmp, "rx_bytes": tot_by + dropped * 60,
                  "forwarded": tot_pk, "forwarded_bytes": tot_by + tot_pk * 34,
                  "icmp_sent": icmp, "exception": 0, "flow_hits": tot_pk // 2,
                  "flow_misses": tot_pk - tot_pk // 2, "flow_evictions": 0,
                  "flow_rechosen": 0, "fragments": 0, "icmp_errors": 0,
                  "dropped": dropped, "drops": drops}
        cores = []
        for n, share in ((1, 0.5), (2, 0.5)):
            c = {"lcore": n}
            for k, val in totals.items():
                if k == "drops":
                    c[k] = {r: int(x * share) for r, x in val.items()}
                else:
                    c[k] = int(val * share)
            cores.append(c)
        doc = {"totals": totals, "vips": vips, "cores": cores, "generation": self.generation}
        if self.args.hot_keys:
            doc["hot_keys"] = []
            if self.vips:
                v = self.vips[0]
                doc["hot_keys"].append({"vip": {"address": v["address"], "port": v["port"],
                                                "protocol": v["protocol"]},
                                        "key": "198.51.100.7", "share": 0.12})
        return doc

    def m_maglev_table(self, p):
        check_fields(p, "", ("vip", "raw", "from", "count"), ("vip",))
        v = self.find_vip(self.vip_ref(p["vip"], "vip"))
        raw = p.get("raw", False)
        if not isinstance(raw, bool):
            raise RpcError(INVALID_PARAMS, "raw: expected a boolean")
        for k in ("from", "count"):
            if k in p and not raw:
                raise RpcError(INVALID_PARAMS, "%s: only with raw" % k)
            if k in p and (not isinstance(p[k], int) or isinstance(p[k], bool)):
                raise RpcError(INVALID_PARAMS, "%s: expected an integer" % k)
        size = self.args.table_size or 13
        frm, count = p.get("from", 0), p.get("count", size)
        if not 0 <= frm < size:
            raise RpcError(INVALID_PARAMS, "from: %d is not a slot (0 to %d)" % (frm, size - 1))
        if count < 1:
            raise RpcError(INVALID_PARAMS, "count: must be at least 1")
        backends = v["backends"]
        if self.args.table_churn and raw and frm > 0:
            # The membership changes between pages: the first backend's
            # weight goes up by one on every page after the first.
            self.churn += 1
            if backends:
                backends = copy.deepcopy(backends)
                backends[0]["weight"] += self.churn
        if self.args.table_size:
            table = maglev_ref.vip_table("fake", size, backends)
        else:
            usable = [b for b in backends if b["state"] == "active" and b["weight"] > 0]
            table = []
            wsum = sum(b["weight"] for b in usable)
            if wsum:
                for b in usable:
                    table += [b["address"]] * (size * b["weight"] // wsum)
                while len(table) < size:
                    table.append(usable[0]["address"])
            table = table if table else [None] * size
        res = {"table_size": size, "generation": self.generation,
               "backends": [{"address": b["address"], "name": b.get("name", b["address"]),
                             "slots": table.count(b["address"])} for b in backends]}
        if raw:
            res["from"] = frm
            res["table"] = table[frm:frm + count]
        return res

    def m_config_get(self, p):
        check_fields(p, "", ())
        return {"encap": {"source_v4": "10.0.0.1", "next_hop_mac": "02:00:00:00:00:01"},
                "maglev": {"table_size": 13, "seed": "fake"}, "vips": copy.deepcopy(self.vips)}

    def m_config_save(self, p):
        check_fields(p, "", ())
        if self.args.no_state_file:
            raise RpcError(INTERNAL_ERROR, "no state file configured")
        return {"path": "/var/lib/spillway/state.json"}

    # -- hot keys (--hot-keys; otherwise disabled, as with hot.enabled false) --

    def hot_enabled(self):
        if not self.args.hot_keys:
            raise RpcError(INTERNAL_ERROR, "hot keys are disabled (hot.enabled is false)")

    @staticmethod
    def vip_obj(v):
        return {"address": v["address"], "port": v["port"], "protocol": v["protocol"]}

    def hot_key(self, v, key):
        """key of a hot_pin/hot_unpin per the VIP's key mode, with its defaults."""
        if not isinstance(key, dict):
            raise RpcError(INVALID_PARAMS, "key: expected an object")
        check_fields(key, "key", ("src", "dst", "sport", "dport", "protocol"))
        mode = v["key"]
        used = {"src_ip": ("src",), "src_ip_dport": ("src", "dport")}.get(
            mode, ("src", "dst", "sport", "dport", "protocol"))
        for k in key:
            if k not in used:
                raise RpcError(INVALID_PARAMS, f"key.{k}: not used by the VIP's key mode {mode}")
        if "src" not in key:
            raise RpcError(INVALID_PARAMS, "key.src: missing (required)")
        out = {"src": check_addr(key["src"], "key.src")}
        if ipaddress.ip_address(out["src"]).version != ipaddress.ip_address(v["address"]).version:
            raise RpcError(INVALID_PARAMS, "key.src: not of the VIP's address family")
        if "dport" in used:
            if "dport" not in key and v["port"] == 0:
                raise RpcError(INVALID_PARAMS, f"key.dport: missing (required by key mode {mode} "
                               "on a VIP of every port)")
            dport = check_int(key.get("dport", v["port"]), "key.dport", 0, 65535)
            if v["port"] not in (0, dport):
                raise RpcError(INVALID_PARAMS, f"key.dport: {dport} is not the port of the VIP")
        if mode == "5tuple":
            if "sport" not in key:
                raise RpcError(INVALID_PARAMS, "key.sport: missing (required by key mode 5tuple)")
            out["dst"] = v["address"]
            out["sport"] = check_int(key["sport"], "key.sport", 0, 65535)
        if "dport" in used:
            out["dport"] = dport
        if mode == "5tuple":
            out["protocol"] = v["protocol"]
            if "dst" in key and check_addr(key["dst"], "key.dst") != v["address"]:
                raise RpcError(INVALID_PARAMS, "key.dst: not the address of the VIP")
            if "protocol" in key and key["protocol"] != v["protocol"]:
                raise RpcError(INVALID_PARAMS, "key.protocol: not the protocol of the VIP")
        return out

    def hot_overrides(self):
        """The automatic override (the first VIP's busiest client) plus the pinned ones."""
        out = []
        if self.vips and not any(o["auto"] for o in self.overrides):
            v = self.vips[0]
            k = {"src": "198.51.100.7"}
            if v["key"] == "5tuple":
                k["sport"] = 40000
            if v["key"] == "src_ip_dport" and v["port"] == 0:
                k["dport"] = 80
            key = self.hot_key(v, k)
            self.overrides.append({"vip": self.vip_obj(v), "key": key, "share": 0.12,
                                   "replicas": [b["address"] for b in v["backends"]][:3],
                                   "since_window": 1200, "pinned": False, "auto": True})
        for o in self.overrides:
            out.append({k: copy.deepcopy(x) for k, x in o.items() if k != "auto"})
            out[-1]["key_hash"] = "0x%016x" % (hash(json.dumps(o["key"], sort_keys=True))
                                               & 0xffffffffffffffff)
        return out

    def m_hot_list(self, p):
        self.hot_enabled()
        check_fields(p, "", ())
        ov = self.hot_overrides()
        self.window += 1
        return {"params": dict(self.hot_params), "window": self.window,
                "counters": {"promotions": 1, "demotions": 0, "replans": 0, "active": len(ov),
                             "pinned": sum(1 for o in ov if o["pinned"])},
                "overrides": ov}

    def m_hot_events(self, p):
        self.hot_enabled()
        check_fields(p, "", ())
        return copy.deepcopy(self.events)

    def m_hot_set(self, p):
        self.hot_enabled()
        check_fields(p, "", ("window_ms", "threshold", "epsilon", "sample", "margin",
                             "ewma_alpha", "demote_windows", "threshold_low"))
        if not p:
            raise RpcError(INVALID_PARAMS, "window_ms, threshold, epsilon, sample, margin, "
                           "ewma_alpha, demote_windows, threshold_low: missing (at least one "
                           "is required)")
        if "sample" in p and p["sample"] != "auto":
            check_int(p["sample"], "sample", 0, 8)
        for k, lo, hi, open_lo in (("threshold", 0, 1, True), ("threshold_low", 0, 1, True),
                                   ("epsilon", 0.001, 100, False), ("margin", 0, 0.5, False),
                                   ("ewma_alpha", 0.01, 1, False)):
            if k in p:
                x = p[k]
                if k.startswith("threshold") and x == "auto":
                    continue
                if not isinstance(x, (int, float)) or isinstance(x, bool):
                    raise RpcError(INVALID_PARAMS, f"{k}: expected a number")
                if x < lo or x > hi or (open_lo and x == lo):
                    raise RpcError(INVALID_PARAMS, f"{k}: {x:g} out of range")
        if "demote_windows" in p:
            check_int(p["demote_windows"], "demote_windows", 1, 1000)
        if "window_ms" in p:
            check_int(p["window_ms"], "window_ms", 10, 60000)
        low = p.get("threshold_low", self.hot_params["threshold_low"])
        th = p.get("threshold", self.hot_params["threshold"])
        if low != "auto" and th != "auto" and low > th:
            raise RpcError(INVALID_PARAMS, f"threshold_low: {low:g} is above threshold {th:g}")
        self.hot_params.update(p)
        return dict(self.hot_params)

    def hot_pin_common(self, p, pin):
        self.hot_enabled()
        check_fields(p, "", ("vip", "key", "replicas") if pin else ("vip", "key"),
                     ("vip", "key"))
        r = check_int(p.get("replicas", 0), "replicas", 0, 256)
        v = self.find_vip(self.vip_ref(p["vip"], "vip"))
        key = self.hot_key(v, p["key"])
        vo = self.vip_obj(v)
        self.hot_overrides()
        for o in self.overrides:
            if o["vip"] == vo and o["key"] == key:
                break
        else:
            o = None
        if not pin:
            if o is None or not o["pinned"]:
                raise RpcError(NOT_FOUND, "no override of this key in VIP %s:%d/%s"
                               % (v["address"], v["port"], v["protocol"]))
            o["pinned"] = False
        else:
            bes = [b["address"] for b in v["backends"]]
            if not bes:
                raise RpcError(INVALID_PARAMS, "key: the VIP has no backend")
            if o is None:
                o = {"vip": vo, "key": key, "share": 0.0, "since_window": self.window,
                     "auto": False}
                self.overrides.append(o)
            o["pinned"] = True
            o["replicas"] = bes[:r or 2]
        self.events.append({"window": self.window, "event": "pin" if pin else "unpin",
                            "vip": vo, "key": key, "share": o["share"],
                            "replicas": len(o["replicas"])})
        return {}

    def m_hot_pin(self, p):
        return self.hot_pin_common(p, True)

    def m_hot_unpin(self, p):
        return self.hot_pin_common(p, False)

    def m_fake_big(self, p):
        return {"blob": "x" * int(p.get("bytes", 0))}


MUTATING = {"vip_add", "vip_remove", "backend_add", "backend_remove", "backend_set"}
# Runtime changes a transaction could not roll back: only as requests of their own.
NO_BATCH = {"hot_set", "hot_pin", "hot_unpin"}


class Server:
    def __init__(self, args):
        self.args = args
        self.state = State(args)
        self.lock = threading.Lock()
        self.log = open(args.log, "a", encoding="utf-8")
        self.hostile = {}  # method -> the reply its next request gets (fake_reply)

    def log_request(self, value):
        with self.lock:
            self.log.write(json.dumps(value, sort_keys=True) + "\n")
            self.log.flush()

    def call(self, req):
        """One request object → (id, result or RpcError); id is None for notifications."""
        if (not isinstance(req, dict) or req.get("jsonrpc") != "2.0"
                or not isinstance(req.get("method"), str)
                or ("params" in req and not isinstance(req["params"], dict))
                or ("id" in req and not (req["id"] is None
                                         or isinstance(req["id"], (str, int, float))))):
            return None, RpcError(INVALID_REQUEST, "invalid request")
        fn = getattr(self.state, "m_" + req["method"], None)
        if fn is None:
            return req.get("id"), RpcError(METHOD_NOT_FOUND, "method not found")
        try:
            res = fn(req.get("params", {}))
        except RpcError as e:
            return req.get("id"), e
        if req["method"] in MUTATING:
            self.state.generation += 1
        return req.get("id"), res

    @staticmethod
    def reply(rid, res):
        if isinstance(res, RpcError):
            err = {"code": res.code, "message": res.message}
            if res.data is not None:
                err["data"] = res.data
            return {"jsonrpc": "2.0", "id": rid, "error": err}
        return {"jsonrpc": "2.0", "id": rid, "result": res}

    def handle_line(self, line):
        """Returns the reply text (without newline) or None."""
        try:
            value = json.loads(line)
        except ValueError:
            self.log_request({"unparsable": line.decode("utf-8", "replace")})
            return json.dumps(self.reply(None, RpcError(PARSE_ERROR, "parse error")))
        self.log_request(value)
        if isinstance(value, dict):
            m = value.get("method")
            if m == "fake_sleep":
                time.sleep(float(value.get("params", {}).get("seconds", 1)))
            if m == "fake_badid":
                return json.dumps({"jsonrpc": "2.0", "id": 987654, "result": {}})
            if m == "fake_garbage":
                return "this is not json"
            if m == "fake_reply":
                p = value.get("params", {})
                with self.lock:
                    self.hostile[p["method"]] = p["reply"]
                return json.dumps({"jsonrpc": "2.0", "id": value.get("id"), "result": {}})
            with self.lock:
                forged = self.hostile.pop(m, NOTHING) if isinstance(m, str) else NOTHING
            if forged is not NOTHING:
                if isinstance(forged, dict) and forged.get("id") == "$ID":
                    forged = dict(forged, id=value.get("id"))
                return json.dumps(forged)
        with self.lock:
            if isinstance(value, dict):
                rid, res = self.call(value)
                if "id" not in value and not isinstance(res, RpcError):
                    return None
                out = json.dumps(self.reply(rid, res))
                if self.args.reply_budget and len(out) + 1 > self.args.reply_budget:
                    out = json.dumps(self.reply(rid, RpcError(
                        TOO_LARGE, "reply too large: %d bytes, limit %d bytes"
                        % (len(out) + 1, self.args.reply_budget))))
                return out
            if not isinstance(value, list) or not value:
                return json.dumps(self.reply(None, RpcError(INVALID_REQUEST, "invalid request")))
            if len(value) > 1024:
                return json.dumps(self.reply(None, RpcError(INVALID_REQUEST,
                                                            "batch of more than 1024 calls")))
            if any(isinstance(r, dict) and r.get("method") in NO_BATCH for r in value):
                replies = []
                for r in value:
                    rid = r.get("id") if isinstance(r, dict) else None
                    if isinstance(r, dict) and r.get("method") in NO_BATCH:
                        err = RpcError(INVALID_REQUEST, "invalid request: %s cannot be part of "
                                       "a batch (it changes runtime state, which a transaction "
                                       "cannot roll back)" % r["method"])
                    else:
                        err = RpcError(ABORTED, "transaction aborted")
                    if isinstance(r, dict) and "id" in r:
                        replies.append(self.reply(rid, err))
                return json.dumps(replies) if replies else None
            saved = copy.deepcopy(self.state.vips)
            gen = self.state.generation
            results = [self.call(r) for r in value]
            failed = any(isinstance(r, RpcError) for _, r in results)
            replies = []
            if failed:
                self.state.vips = saved
                self.state.generation = gen
                for rid, res in results:
                    if not isinstance(res, RpcError):
                        res = RpcError(ABORTED, "transaction aborted")
                    replies.append(self.reply(rid, res))
            else:
                if self.state.generation != gen:
                    self.state.generation = gen + 1
                for (rid, res), req in zip(results, value):
                    if isinstance(req, dict) and "id" in req:
                        replies.append(self.reply(rid, res))
            replies.reverse()  # order is not guaranteed by JSON-RPC; make clients cope
            return json.dumps(replies) if replies else None

    def serve_client(self, conn):
        buf = b""
        with conn:
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    out = self.handle_line(line)
                    if out is not None:
                        try:
                            conn.sendall(out.encode() + b"\n")
                        except OSError:
                            return

    def run(self):
        if os.path.exists(self.args.socket):
            os.unlink(self.args.socket)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(self.args.socket)
        srv.listen(64)
        if self.args.ready:
            with open(self.args.ready, "w", encoding="utf-8") as f:
                f.write(str(os.getpid()) + "\n")
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=self.serve_client, args=(conn,), daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", help="file written (with the pid) once listening")
    ap.add_argument("--hot-keys", action="store_true",
                    help='answer the hot_* methods (else "disabled") and add a "hot_keys" '
                         'array to stats')
    ap.add_argument("--no-state-file", action="store_true",
                    help="config_save fails with -32603")
    ap.add_argument("--table-size", type=int, default=0,
                    help="maglev_table answers tables of this many slots, maglev_ref.py's "
                         "under the seed \"fake\" (default: a 13-slot table in blocks)")
    ap.add_argument("--reply-budget", type=int, default=0,
                    help="a reply line (newline included) over this many bytes becomes "
                         "-32004 \"reply too large\", as spillwayd's reply limit")
    ap.add_argument("--table-churn", action="store_true",
                    help="the VIP's membership changes between maglev_table pages (every "
                         "raw request with from > 0)")
    args = ap.parse_args()
    try:
        Server(args).run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
