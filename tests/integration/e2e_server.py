# SPDX-License-Identifier: BSD-3-Clause
"""Backend (or host) service for the end-to-end tests.

TCP: greets each connection with "HELLO <name>\\n", then answers every line L
with "<name> L\\n" (so a long-lived connection can be asked again which
backend it reached). UDP: answers each datagram D with b"<name> " + D, from
the address it is bound to (bind it to the VIP: a wildcard UDP socket would
answer from the backend's own address). Writes READY_FILE once listening and
runs until SIGTERM; prints its counters to stdout at exit.

usage: e2e_server.py NAME READY_FILE [--tcp ADDR:PORT]... [--udp ADDR:PORT]...
"""

import argparse
import asyncio
import json
import signal
import sys


def hostport(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


class Udp(asyncio.DatagramProtocol):
    def __init__(self, name, stats):
        self.prefix = name.encode() + b" "
        self.stats = stats

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.stats["udp"] += 1
        self.transport.sendto(self.prefix + data, addr)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("ready")
    ap.add_argument("--tcp", action="append", default=[], type=hostport)
    ap.add_argument("--udp", action="append", default=[], type=hostport)
    a = ap.parse_args()
    name = a.name.encode()
    stats = {"name": a.name, "tcp_conns": 0, "tcp_lines": 0, "tcp_errors": 0, "udp": 0}

    async def serve(reader, writer):
        stats["tcp_conns"] += 1
        try:
            writer.write(b"HELLO " + name + b"\n")
            await writer.drain()
            while True:
                line = await reader.readline()
                if not line:
                    break
                stats["tcp_lines"] += 1
                writer.write(name + b" " + line)
                await writer.drain()
        except (ConnectionError, OSError):
            stats["tcp_errors"] += 1
        finally:
            writer.close()

    loop = asyncio.get_running_loop()
    servers = []
    for host, port in a.tcp:
        servers.append(await asyncio.start_server(serve, host, port, reuse_address=True,
                                                  backlog=1024))
    for host, port in a.udp:
        await loop.create_datagram_endpoint(lambda: Udp(a.name, stats), local_addr=(host, port))
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    with open(a.ready, "w") as f:
        f.write("ready\n")
    await stop.wait()
    for s in servers:
        s.close()
    print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
