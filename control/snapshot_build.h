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

/* A hot-key override to place in a snapshot (control/hotkey.c decides them). */
struct lb_snapshot_override {
	uint16_t vip_id;
	uint64_t key_hash;
	uint16_t n_replicas;
	const uint16_t *replicas; /* backend ids of that VIP */
};

/**
 * lb_snapshot_build, plus: Maglev tables whose inputs are unchanged since prev
 * (same seed, size, and active backends with the same identities, weights and
 * ids) are copied from prev instead of rebuilt; and the given overrides are
 * laid out in the snapshot's override table (replicas that are not backends of
 * the override's VIP in cfg are left out, and an override left with none is
 * dropped).
 */
struct lb_snapshot *lb_snapshot_build_ext(const struct lb_config *cfg, uint64_t generation,
                                          const struct lb_snapshot *prev,
                                          const struct lb_snapshot_override *ov, uint32_t n_ov,
                                          char *err, size_t errlen);

void lb_snapshot_free(struct lb_snapshot *s);

#endif /* LB_SNAPSHOT_BUILD_H */
