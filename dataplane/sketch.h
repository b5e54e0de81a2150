/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core hot-key sketch: a Count-Min sketch of (VIP, flow key) plus a small
 * table of candidate heavy keys (the sketch alone cannot name keys), double
 * buffered by window: the worker writes window W's buffer while control reads
 * the closed buffer of window W-1. Written by one worker only; control reads
 * a buffer only after the worker has closed it.
 *
 * Interface fixed by the lead; the implementation and its sizes are the
 * sketch module's (see docs/hot-keys.md for the figures behind them).
 */
#ifndef LB_SKETCH_H
#define LB_SKETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "hash.h"
#include "snapshot.h"

/* A heavy-key candidate of one window on one core. */
struct lb_sketch_cand {
	uint64_t key_hash;       /* the VIP's key hash (what Maglev hashes) */
	struct lb_flow_key key;  /* the key itself, per the VIP's key mode */
	uint16_t vip_id;
	uint32_t count;          /* estimated count in this window (after sampling scale-up) */
};

struct lb_sketch; /* per core; layout private to sketch.c / sketch.h inlines */

/**
 * Create a per-core sketch. sample_shift: feed 1 packet in 2^sample_shift
 * (0 = every packet); counts are scaled back up.
 *
 * @return the sketch, or NULL with errno set.
 */
struct lb_sketch *lb_sketch_create(unsigned int sample_shift);

void lb_sketch_free(struct lb_sketch *sk);

/**
 * Worker, per packet of a VIP: count weight (1 per packet, or bytes) for
 * (vip_id, key_hash); key is copied only if the key becomes a candidate.
 * Also counts the VIP's total for the window (the denominator of shares).
 */
void lb_sketch_add(struct lb_sketch *sk, uint16_t vip_id, uint64_t key_hash,
		   const struct lb_flow_key *key, uint32_t weight);

/**
 * Worker, once per loop pass: if control has opened a window later than the
 * one being written, close the current buffer (publish it with a release
 * store) and start writing the other one, cleared.
 */
void lb_sketch_poll(struct lb_sketch *sk, uint64_t open_window);

/**
 * Control: the closed window w, if this core has closed it, else false.
 * Fills the candidates (up to max, highest counts first) and the per-VIP
 * totals of that window; valid until the core closes window w + 1.
 */
bool lb_sketch_read(const struct lb_sketch *sk, uint64_t w, struct lb_sketch_cand *cands,
		    uint32_t max, uint32_t *n_cands, uint64_t *vip_totals /* [LB_MAX_VIPS] */);

/** Control: Count-Min estimate of (vip, key) in this core's closed window w (0 if not closed). */
uint64_t lb_sketch_estimate(const struct lb_sketch *sk, uint64_t w, uint16_t vip_id,
			    uint64_t key_hash);

/** Bytes of memory one core's sketch takes (both buffers). */
size_t lb_sketch_memory(void);

#endif /* LB_SKETCH_H */
