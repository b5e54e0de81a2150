# SPDX-License-Identifier: BSD-3-Clause
"""Minimal JSON-RPC 2.0 client for spillwayd's control socket (tests only;
written from docs/control-protocol.md, standard library only)."""

import itertools
import json
import socket


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__("%s (code %d)" % (message, code))
        self.code = code
        self.message = message


class Client:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.ids = itertools.count(1)

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("control socket closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def raw(self, obj):
        self.sock.sendall(json.dumps(obj).encode() + b"\n")
        return self._line()

    def call(self, method, **params):
        rid = next(self.ids)
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params:
            req["params"] = params
        rep = self.raw(req)
        if rep.get("id") != rid:
            raise AssertionError("reply id %r for request %r" % (rep.get("id"), rid))
        if "error" in rep:
            raise RpcError(rep["error"]["code"], rep["error"]["message"])
        return rep["result"]

    def batch(self, calls):
        """calls: [(method, params)]; returns the list of replies (raw)."""
        reqs = [{"jsonrpc": "2.0", "id": next(self.ids), "method": m, "params": p}
                for m, p in calls]
        return self.raw(reqs)


def vip_ref(address, port, protocol):
    return {"address": address, "port": port, "protocol": protocol}
