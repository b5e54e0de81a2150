#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""pcap_frames_equal.py A.pcap B.pcap: exit 0 if the two captures hold the same
frames, byte for byte and in the same order, under the same global header.
Record timestamps are ignored: net_pcap stamps each frame with the time it was
written, so two runs of one binary never agree on them."""

import struct
import sys


def frames(path):
    data = open(path, "rb").read()
    if len(data) < 24:
        sys.exit("%s: not a pcap file" % path)
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, out = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "IIII", data[off:off + 16])[2]
        off += 16
        out.append(data[off:off + incl])
        off += incl
    return data[:24], out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pcap_frames_equal.py A.pcap B.pcap")
    ha, fa = frames(sys.argv[1])
    hb, fb = frames(sys.argv[2])
    if ha != hb:
        print("different global headers")
        return 1
    if len(fa) != len(fb):
        print("%d frames against %d" % (len(fa), len(fb)))
        return 1
    for i, (x, y) in enumerate(zip(fa, fb)):
        if x != y:
            print("frame %d differs" % (i + 1))
            return 1
    print("same %d frames" % len(fa))
    return 0


if __name__ == "__main__":
    sys.exit(main())
