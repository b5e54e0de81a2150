#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The per-packet sources may not allocate, print, lock or exit. Word-bounded so
# rte_pktmbuf_free and friends pass. Usage: lint_hot_path.sh FILE...
set -u
bad=0
for f in "$@"; do
	if grep -nE '\<(malloc|calloc|realloc|free|printf|fprintf|puts|exit|abort|rte_exit|rte_panic|rte_malloc|rte_zmalloc|pthread_mutex_lock|pthread_spin_lock|rte_spinlock_lock|syslog|RTE_LOG)\>[[:space:]]*\(' "$f" \
		| grep -vE '^\s*[0-9]+:\s*(/?\*|//)'; then
		echo "^^ forbidden call in hot-path file $f" >&2
		bad=1
	fi
done
exit $bad
