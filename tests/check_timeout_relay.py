#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration scripts that run an announcing spillwayd (--bird-include)
under GNU timeout must use timeout --foreground.

Without --foreground, timeout passes a SIGTERM it receives to its child and
then to its whole process group: the daemon reads two signals where the test
sent one, and the second changes what the stop does (docs/scale-out.md,
"Draining and removing an instance"). A test then signals timeout and gets
a stop it did not ask for. Each command (continuation lines joined) that
names --bird-include and runs timeout is checked.

usage: check_timeout_relay.py SOURCE_ROOT
"""

import glob
import os
import re
import sys


def commands(text):
    """Logical lines: backslash continuations joined (also the escaped \\\\
    of a script written from a here-document)."""
    joined = re.sub(r"\\\\?\n", " ", text)
    return joined.splitlines()


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad, n = [], 0
    for path in sorted(glob.glob(os.path.join(root, "tests", "integration", "*.sh"))):
        for cmd in commands(open(path).read()):
            if "--bird-include" not in cmd or not re.search(r"(^|\s)timeout\s", cmd):
                continue
            n += 1
            if not re.search(r"(^|\s)timeout\s+(-\S+\s+)*--foreground\b", cmd):
                bad.append("%s: timeout without --foreground: %s"
                           % (os.path.relpath(path, root), " ".join(cmd.split())[:160]))
    for b in bad:
        print(b)
    print("%d timeout command(s) with --bird-include checked, %d without --foreground"
          % (n, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
