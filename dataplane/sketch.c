/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker's out-of-line half of the per-core sketch: the candidate table's
 * insert/evict (the sampled path of lb_sketch_add()) and the window switch a
 * worker makes once per loop pass. The buffer protocol is a seqlock with the
 * window number as the sequence: a buffer's closed word holds the window it
 * was closed as, or LB_SKETCH_OPEN while the worker writes it; a reader that
 * finds the same window before and after its copies read a consistent buffer
 * (sketch_setup.c has the readers). Per packet: no locks, allocation or
 * system calls (tests/lint_hot_path.sh).
 */
#include <string.h>

#include "dataplane/sketch.h"

/* Set of a candidate: multiply-shift of the VIP-folded hash (its low bits are the rows'). */
static inline uint32_t
set_of(uint16_t vip_id, uint64_t key_hash)
{
	return (uint32_t)((lb_sketch_cols(vip_id, key_hash) * 0xff51afd7ed558ccdULL) >>
	                  (64 - LB_SKETCH_SETS_LOG2));
}

void
lb_sketch_cand_update(struct lb_sketch *sk, uint16_t vip_id, uint64_t key_hash,
                      const struct lb_flow_key *key, uint32_t est)
{
	struct lb_sketch_buf *b = sk->cur;
	uint32_t base = set_of(vip_id, key_hash) * LB_SKETCH_WAYS;
	struct lb_sketch_tag *t = &b->tag[base];
	uint32_t victim = 0, vmin = UINT32_MAX;

	for (uint32_t i = 0; i < LB_SKETCH_WAYS; i++) {
		if (t[i].key_hash == key_hash && t[i].vip_id == vip_id && t[i].count != 0) {
			/* Estimates only grow within a window (conservative update). */
			t[i].count = est;
			return;
		}
		if (t[i].count < vmin) {
			vmin = t[i].count;
			victim = i;
		}
	}
	/* Empty ways have count 0, so this only refuses when the set is full of
	 * keys at least as large: the largest keys of each set stay. */
	if (est <= vmin)
		return;
	if (vmin != 0)
		sk->evictions++;
	t[victim].key_hash = key_hash;
	t[victim].vip_id = vip_id;
	t[victim].count = est;
	b->key[base + victim] = *key;
}

void
lb_sketch_poll(struct lb_sketch *sk, uint64_t open_window)
{
	struct lb_sketch_buf *b = sk->cur;
	struct lb_sketch_buf *nb = b == &sk->buf[0] ? &sk->buf[1] : &sk->buf[0];

	if (open_window <= sk->cur_window)
		return;
	/* Publish: every counter store of this window happens-before a reader's
	 * acquire load that sees the window number. */
	__atomic_store_n(&b->closed, sk->cur_window, __ATOMIC_RELEASE);
	/*
	 * Reopen the other buffer, which control was given one window to read.
	 * The marker goes first and the release fence orders it before the
	 * clearing stores: a reader whose copies saw any cleared or new value
	 * then sees the marker (or a later window) on its re-check after its
	 * acquire fence (the seqlock argument, as rte_seqlock uses it).
	 */
	__atomic_store_n(&nb->closed, LB_SKETCH_OPEN, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memset(nb->cm, 0, sizeof(nb->cm));
	memset(nb->vip_total, 0, sizeof(nb->vip_total));
	memset(nb->tag, 0, sizeof(nb->tag));
	/* A policy control asked for starts with this window, whole. */
	{
		uint32_t want = __atomic_load_n(&sk->want, __ATOMIC_RELAXED);

		if (want & LB_SKETCH_WANT) {
			sk->sample_shift = want & 0xff;
			sk->weight_bytes = (want >> 8) & 1;
			if (sk->countdown > (2u << sk->sample_shift) - 1)
				sk->countdown = lb_sketch_gap(sk);
		}
	}
	nb->shift = sk->sample_shift;
	nb->bytes = sk->weight_bytes;
	nb->packets = 0;
	sk->cur = nb;
	sk->cur_window = open_window;
}
