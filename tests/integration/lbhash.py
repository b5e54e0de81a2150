# SPDX-License-Identifier: BSD-3-Clause
"""SipHash-1-3 and spillway's flow keys, in Python, for the tests' oracles.

Written from the SipHash paper (Aumasson and Bernstein; SipHash-c-d with c = 1
compression and d = 3 finalisation rounds) and from spillway's documented
contract (docs/architecture.md "Maglev choice", docs/control-protocol.md "Key"),
not from the daemon's C code, so a test can compute what the daemon should do
without asking it:

- the 128-bit key from the seed string: two SipHash-1-3 passes over the seed's
  bytes under fixed public domain keys ("spillway" / "key-lo", "key-hi");
- the 40-byte flow key: source address (16 bytes, IPv4 in the first 4), then
  the destination the same way, source and destination port (network order),
  protocol, family tag (4 or 6), two zero bytes; the fields a VIP's key mode
  ignores are zero (src_ip: source and family; src_ip_dport: also the
  destination port);
- a flow's slot: the low 32 bits of SipHash-1-3 of that key, modulo M.
"""

import socket
import struct

M64 = (1 << 64) - 1
AF_TAG = {socket.AF_INET: 4, socket.AF_INET6: 6}
PROTO = {"tcp": 6, "udp": 17}
KEY_MODES = ("5tuple", "src_ip", "src_ip_dport")


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash13(k0, k1, data):
    """SipHash-1-3 of the bytes data under the key (k0, k1); a 64-bit int."""
    v0, v1, v2, v3 = (k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
                      k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573)

    def rnd():
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)  # noqa: E702
        v2 = (v2 + v3) & M64; v3 = _rotl(v3, 16); v3 ^= v2  # noqa: E702
        v0 = (v0 + v3) & M64; v3 = _rotl(v3, 21); v3 ^= v0  # noqa: E702
        v2 = (v2 + v1) & M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)  # noqa: E702

    n = len(data)
    for i in range(0, n - n % 8, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v3 ^= m
        rnd()
        v0 ^= m
    tail = data[n - n % 8:] + bytes(8 - n % 8)
    b = ((n & 0xFF) << 56) | (struct.unpack("<Q", tail)[0] & ((1 << 56) - 1))
    v3 ^= b
    rnd()
    v0 ^= b
    v2 ^= 0xFF
    rnd()
    rnd()
    rnd()
    return v0 ^ v1 ^ v2 ^ v3


def key_from_seed(seed):
    """The (k0, k1) hash key for a seed (str, as in maglev.seed, or bytes)."""
    s = seed.encode() if isinstance(seed, str) else bytes(seed)
    return (siphash13(0x7370696c6c776179, 0x6b65792d6c6f0000, s),
            siphash13(0x7370696c6c776179, 0x6b65792d68690000, s))


def family(addr):
    """socket.AF_INET or AF_INET6 for address text."""
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def addr_bytes(addr):
    """An address as its 16 key bytes (IPv4 in the first 4, zero-padded)."""
    b = socket.inet_pton(family(addr), addr)
    return b + bytes(16 - len(b))


def flow_key(src, dst, sport, dport, proto, mode="5tuple"):
    """The 40-byte key the data path hashes for a packet of a VIP with key
    mode `mode`: src/dst address text, ports as integers, proto a number or
    "tcp"/"udp"."""
    if mode not in KEY_MODES:
        raise ValueError("unknown key mode %r" % (mode,))
    proto = PROTO.get(proto, proto)
    af = AF_TAG[family(src)]
    if mode == "5tuple":
        if family(dst) != family(src):
            raise ValueError("src %s and dst %s of different families" % (src, dst))
        return (addr_bytes(src) + addr_bytes(dst) + struct.pack("!HH", sport, dport) +
                bytes([proto, af, 0, 0]))
    return (addr_bytes(src) + bytes(16) +
            struct.pack("!HH", 0, dport if mode == "src_ip_dport" else 0) +
            bytes([0, af, 0, 0]))


def flow_hash(key, src, dst, sport, dport, proto, mode="5tuple"):
    """SipHash-1-3 (key from key_from_seed) of the flow's key per the mode."""
    return siphash13(key[0], key[1], flow_key(src, dst, sport, dport, proto, mode))


def slot(h, table_size):
    """The Maglev slot of a key hash: its low 32 bits modulo M."""
    return (h & 0xFFFFFFFF) % table_size
