/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Turns a validated configuration into an immutable lb_snapshot: VIP index,
 * fragment index, backend registry in one allocation, and one Maglev table per
 * VIP in reference-counted blocks that consecutive snapshots share while the
 * table's inputs stay the same; freed once no worker can still see them.
 */
#ifndef LB_SNAPSHOT_BUILD_H
#define LB_SNAPSHOT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "dataplane/snapshot.h"
#include "control/model/config.h"

/**
 * Build a snapshot. Only active backends of non-zero weight enter a table;
 * draining and down backends stay in the registry (so pinned flows can be
 * judged) but get no new flows.
 *
 * @return the snapshot, or NULL with a reason in err (out of memory).
 */
struct lb_snapshot *lb_snapshot_build(const struct lb_config *cfg, uint64_t generation, char *err,
                                      size_t errlen);

/* A hot-key override to place in a snapshot (control/hot/hotkey.c decides them). */
struct lb_snapshot_override {
	uint16_t vip_id;
	uint64_t key_hash;
	uint16_t n_replicas;
	const uint16_t *replicas; /* backend ids of that VIP */
};

#define LB_SNAPSHOT_BUILD_THREADS_MAX 8 /* threads lb_snapshot_build_par uses at most */

/**
 * lb_snapshot_build, plus: a VIP (same id) whose Maglev inputs are unchanged
 * since prev (same seed, size, and active backends with the same identities,
 * weights and ids) points at prev's table block, which gains a reference,
 * instead of a new one; and the given overrides are laid out in the snapshot's
 * override table (replicas that are not active backends of non-zero weight of
 * the override's VIP in cfg are left out, and an override left with none is
 * dropped; each kept replica is repeated in the list in proportion to its
 * weight, up to LB_OVERRIDE_SPREAD_MAX entries, so that it gets w_i / W of the
 * key's new flows; replicas past LB_OVERRIDE_REPLICAS_MAX are left out). prev may be freed
 * before or after the result, in any order.
 */
struct lb_snapshot *lb_snapshot_build_ext(const struct lb_config *cfg, uint64_t generation,
                                          const struct lb_snapshot *prev,
                                          const struct lb_snapshot_override *ov, uint32_t n_ov,
                                          char *err, size_t errlen);

/**
 * lb_snapshot_build_ext, with the tables that need building filled by up to
 * threads threads (capped at LB_SNAPSHOT_BUILD_THREADS_MAX and at one per 4
 * tables; the calling thread is one of them, the others may run on any CPU of
 * the process). The result is the same for any thread count.
 */
struct lb_snapshot *lb_snapshot_build_par(const struct lb_config *cfg, uint64_t generation,
                                          const struct lb_snapshot *prev,
                                          const struct lb_snapshot_override *ov, uint32_t n_ov,
                                          unsigned int threads, char *err, size_t errlen);

/** Drop s's references to its table blocks (freeing those left unreferenced), then s. NULL: no-op.
 */
void lb_snapshot_free(struct lb_snapshot *s);

/**
 * Table blocks alive in this process (over every snapshot not yet freed) and
 * their bytes, headers included; either pointer may be NULL.
 */
void lb_snapshot_tables_live(uint64_t *blocks, uint64_t *bytes);

#endif /* LB_SNAPSHOT_BUILD_H */
