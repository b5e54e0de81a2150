#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration scripts that run an announcing spillwayd (--bird-include)
under GNU timeout must use timeout --foreground (or e2e_lib.sh's
e2e_spw_launch, which does, and records spillwayd's own PID).

Without --foreground, timeout passes a SIGTERM it receives to its child and
then to its whole process group: the daemon reads two signals where the test
sent one, and the second changes what the stop does (docs/scale-out.md,
"Draining and removing an instance"). A test then signals timeout and gets
a stop it did not ask for. Each command (continuation lines joined) that
names --bird-include and runs "$SPW" or timeout is checked (not
spillwayd --bird-withdraw, which runs no daemon), and
e2e_spw_launch must keep its --foreground.

usage: check_timeout_relay.py SOURCE_ROOT
"""

import glob
import os
import re
import sys

FOREGROUND = re.compile(r"(^|\s)timeout\s+(-\S+\s+)*--foreground\b")


def commands(text):
    """Logical lines: backslash continuations joined (also the escaped \\\\
    of a script written from a here-document)."""
    return re.sub(r"\\\\?\n", " ", text).splitlines()


def launcher_ok(root):
    """e2e_spw_launch's own timeout runs with --foreground."""
    text = open(os.path.join(root, "tests", "integration", "e2e_lib.sh")).read()
    body = text.split("e2e_spw_launch() {", 1)
    return len(body) == 2 and any(FOREGROUND.search(c)
                                  for c in commands(body[1].split("\n}", 1)[0]))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad, n = [], 0
    for path in sorted(glob.glob(os.path.join(root, "tests", "integration", "*.sh"))):
        for cmd in commands(open(path).read()):
            if "--bird-include" not in cmd or "--bird-withdraw" in cmd:
                continue  # --bird-withdraw runs no daemon: nothing to signal
            if not re.search(r"(^|\s)timeout\s", cmd) and '"$SPW"' not in cmd:
                continue
            n += 1
            if not FOREGROUND.search(cmd) and not re.search(r"(^|\s)e2e_spw_launch\s", cmd):
                bad.append("%s: timeout without --foreground: %s"
                           % (os.path.relpath(path, root), " ".join(cmd.split())[:160]))
    if not launcher_ok(root):
        bad.append("tests/integration/e2e_lib.sh: e2e_spw_launch does not run timeout "
                   "--foreground")
    for b in bad:
        print(b)
    print("%d command(s) running spillwayd with --bird-include checked, %d not through "
          "timeout --foreground" % (n, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
