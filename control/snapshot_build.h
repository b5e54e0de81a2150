/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Turns a validated configuration into an immutable lb_snapshot: VIP index,
 * fragment index, backend registry and one Maglev table per VIP, all in one
 * allocation that is freed as a whole once no worker can still see it.
 */
#ifndef LB_SNAPSHOT_BUILD_H
#define LB_SNAPSHOT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "../dataplane/snapshot.h"
#include "config.h"

/**
 * Build a snapshot. Only active backends of non-zero weight enter a table;
 * draining and down backends stay in the registry (so pinned flows can be
 * judged) but get no new flows.
 *
 * @return the snapshot, or NULL with a reason in err (out of memory).
 */
struct lb_snapshot *lb_snapshot_build(const struct lb_config *cfg, uint64_t generation, char *err,
				      size_t errlen);

void lb_snapshot_free(struct lb_snapshot *s);

#endif /* LB_SNAPSHOT_BUILD_H */
