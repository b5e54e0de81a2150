#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The mutation check (docs/testing.md): applies each mutation of
# tests/mutation/mutations.txt alone in a scratch copy of the tree, runs the
# tests it names and prints caught / survived; exits 0 only if every mutation
# is caught. Run it before resolving work that changes dataplane/ or
# control/; it needs root (the integration tests do): as another user it
# re-executes itself through sudo, or says it needs root. Options: see scripts/mutate.py -h
# (--only ID..., --full, --check, --work DIR, --keep).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
spw_as_root "$(pwd)/scripts/mutate.sh" "" "the integration tests it runs" "$@"
exec /usr/bin/python3 scripts/mutate.py "$@"
