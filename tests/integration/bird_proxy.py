# SPDX-License-Identifier: BSD-3-Clause
"""A control-socket proxy in front of a real BIRD, for the stop tests.

spillwayd is pointed (--bird-socket) at the proxy's socket; every connection
it opens is relayed line by line to the BIRD behind it, so every reply the
daemon reads is BIRD's own. The proxy can hold BIRD's welcome line (0001)
until it is released: the daemon then waits in the exchange with the
command not yet sent, which is where a stop that abandons the exchange
leaves BIRD announcing. It records what happened on each connection, with
times on the monotonic clock:

  accept      the daemon connected
  welcome     the welcome was passed to the daemon
  command     a command line from the daemon (text), forwarded to BIRD
  reply       BIRD's final reply line for it (code, text), passed to the daemon
  reply_lost  the final reply could not be passed on (the daemon was gone)
  eof         the daemon closed its side

Imported, a test drives it (BirdProxy.hold, .release) and reads conns. Run as
a program it serves until SIGTERM, holds the welcome of connections accepted
while HOLD_FILE exists (until the file is removed) and appends each event to
EVENTS as a JSON line {"conn", "event", "t" (CLOCK_MONOTONIC, s), "detail"}:

  usage: bird_proxy.py LISTEN UPSTREAM EVENTS HOLD_FILE
"""

import json
import os
import select
import signal
import socket
import sys
import threading
import time


class Conn:
    def __init__(self):
        self.events = []  # (name, monotonic time, detail)

    def add(self, name, detail=None):
        self.events.append((name, time.monotonic(), detail))

    def first(self, name):
        for n, t, d in self.events:
            if n == name:
                return t, d
        return None

    def names(self):
        return [n for n, _, _ in self.events]


class BirdProxy:
    def __init__(self, path, upstream, events=None, hold_file=None):
        self.upstream = upstream
        self.conns = []
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.hold = False  # hold the welcome of new connections
        self.release = threading.Event()
        self.events = open(events, "a") if events else None
        self.hold_file = hold_file
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(path)
        self.lsock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.release.set()
        self.lsock.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            conn = Conn()
            hold = self.hold or (self.hold_file is not None and os.path.exists(self.hold_file))
            with self.cond:
                self.conns.append(conn)
            self._note(conn, "accept", "held" if hold else None)
            threading.Thread(target=self._relay, args=(c, conn, hold), daemon=True).start()

    def wait_event(self, name, count=1, limit=30.0):
        """Until count connections have event name (bounded): those connections."""
        end = time.monotonic() + limit
        with self.cond:
            while True:
                got = [c for c in self.conns if name in c.names()]
                if len(got) >= count:
                    return got
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(min(left, 0.05))

    def _note(self, conn, name, detail=None):
        with self.cond:
            conn.add(name, detail)
            if self.events is not None:
                self.events.write(json.dumps({"conn": self.conns.index(conn), "event": name,
                                              "t": conn.events[-1][1], "detail": detail}) + "\n")
                self.events.flush()
            self.cond.notify_all()

    @staticmethod
    def _line(sock, buf):
        """The next line (bytes, without the newline) from sock; None at EOF."""
        while b"\n" not in buf[0]:
            data = sock.recv(4096)
            if not data:
                return None
            buf[0] += data
        line, buf[0] = buf[0].split(b"\n", 1)
        return line

    def _released(self):
        return self.release.is_set() or (self.hold_file is not None and
                                         not os.path.exists(self.hold_file))

    def _held(self, c):
        """Wait for the release; False if the daemon closed meanwhile."""
        while not self._released():
            r, _, _ = select.select([c], [], [], 0.01)
            if r and not c.recv(1, socket.MSG_PEEK):
                return False
        return True

    def _relay(self, c, conn, hold):
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cbuf, ubuf = [b""], [b""]
        try:
            up.connect(self.upstream)
            welcome = self._line(up, ubuf)
            if welcome is None or (hold and not self._held(c)):
                self._note(conn, "eof")
                return
            c.sendall(welcome + b"\n")
            self._note(conn, "welcome", welcome.decode())
            while True:
                cmd = self._line(c, cbuf)
                if cmd is None:
                    self._note(conn, "eof")
                    return
                self._note(conn, "command", cmd.decode())
                up.sendall(cmd + b"\n")
                while True:
                    line = self._line(up, ubuf)
                    if line is None:
                        return
                    final = len(line) >= 5 and line[:4].isdigit() and line[4:5] == b" "
                    try:
                        c.sendall(line + b"\n")
                    except OSError:
                        if final:
                            self._note(conn, "reply_lost", line.decode())
                        return
                    if final:
                        self._note(conn, "reply", (int(line[:4]), line[5:].decode()))
                        break
        except OSError:
            self._note(conn, "eof")
        finally:
            c.close()
            up.close()


def bird_routes(sock_path, proto, timeout=5.0):
    """The prefixes BIRD has from static protocol proto (show route protocol)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    buf = [b""]
    BirdProxy._line(s, buf)  # welcome
    s.sendall(("show route protocol %s\n" % proto).encode())
    routes = []
    while True:
        line = BirdProxy._line(s, buf)
        if line is None:
            break
        text = line.decode()
        if text.startswith(" ") or text.startswith("1007-"):
            words = text[5:].split() if text.startswith("1007-") else text.split()
            if words and "/" in words[0]:
                routes.append(words[0])
        if len(text) >= 5 and text[:4].isdigit() and text[4] == " ":
            break
    s.close()
    return routes


def main():
    listen, upstream, events, hold_file = sys.argv[1:5]
    BirdProxy(listen, upstream, events, hold_file)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    main()
