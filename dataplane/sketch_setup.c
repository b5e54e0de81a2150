/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-core sketch outside the worker's hot path: creation and freeing
 * (start-up and shutdown), and control's readers of a closed window, which
 * follow the seqlock protocol of sketch.c (same window number before and
 * after the copies, or the read is void). Never called per packet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/sketch.h"

/* Fixed seed: the sampling gaps only have to be irregular, not secret (a
 * client cannot see a core's packet count to aim at it). */
#define RNG_SEED 0x2545F4914F6CDD1DULL

struct lb_sketch *
lb_sketch_create(unsigned int sample_shift)
{
	struct lb_sketch *sk;

	if (sample_shift > LB_SKETCH_MAX_SHIFT) {
		errno = EINVAL;
		return NULL;
	}
	sk = aligned_alloc(64, sizeof(*sk));
	if (sk == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* Touches every page now, so the worker never faults on a counter. */
	memset(sk, 0, sizeof(*sk));
	sk->buf[0].closed = LB_SKETCH_OPEN;
	sk->buf[1].closed = LB_SKETCH_OPEN;
	sk->cur = &sk->buf[0];
	sk->cur_window = 0;
	sk->sample_shift = sample_shift;
	sk->buf[0].shift = sk->buf[1].shift = sample_shift;
	sk->rng = RNG_SEED;
	sk->countdown = lb_sketch_gap(sk);
	return sk;
}

void
lb_sketch_free(struct lb_sketch *sk)
{
	free(sk);
}

size_t
lb_sketch_memory(void)
{
	return sizeof(struct lb_sketch);
}

/* The buffer closed as window w, or NULL; acquire pairs with the worker's release. */
static const struct lb_sketch_buf *
closed_buf(const struct lb_sketch *sk, uint64_t w)
{
	if (w == LB_SKETCH_OPEN)
		return NULL;
	for (int i = 0; i < 2; i++)
		if (__atomic_load_n(&sk->buf[i].closed, __ATOMIC_ACQUIRE) == w)
			return &sk->buf[i];
	return NULL;
}

/* The Count-Min estimate of (vip_id, key_hash) in b, sampled units. */
static uint32_t
cm_min(const struct lb_sketch_buf *b, uint16_t vip_id, uint64_t key_hash)
{
	uint64_t h = lb_sketch_cols(vip_id, key_hash);
	uint32_t m = UINT32_MAX;

	for (int r = 0; r < LB_SKETCH_DEPTH; r++) {
		uint32_t c = b->cm[r][(h >> (16 * r)) & (LB_SKETCH_WIDTH - 1)];

		m = c < m ? c : m;
	}
	return m;
}

/* Whether b is still closed as w after the caller's copies (false: reopened meanwhile). */
static bool
still_closed(const struct lb_sketch_buf *b, uint64_t w)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&b->closed, __ATOMIC_RELAXED) == w;
}

static uint32_t
scale(uint64_t count, uint32_t shift)
{
	count <<= shift;
	return count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
}

/* Heaviest first; ties by (vip, key hash) so the order is deterministic. */
static int
tag_cmp(const void *pa, const void *pb)
{
	const struct lb_sketch_tag *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (a->vip_id != b->vip_id)
		return a->vip_id < b->vip_id ? -1 : 1;
	return (a->key_hash > b->key_hash) - (a->key_hash < b->key_hash);
}

bool
lb_sketch_read(const struct lb_sketch *sk, uint64_t w, struct lb_sketch_cand *cands, uint32_t max,
               uint32_t *n_cands, uint64_t *vip_totals)
{
	const struct lb_sketch_buf *b = closed_buf(sk, w);
	struct lb_sketch_tag tags[LB_SKETCH_CANDS];
	uint32_t n = 0;

	*n_cands = 0;
	if (b == NULL)
		return false;
	/* Copy the tags, remembering each one's way in pad (the key's index),
	 * with the count the sketch gives at the end of the window: at least
	 * the true count, at most the Count-Min bound above it. */
	for (uint32_t i = 0; i < LB_SKETCH_CANDS; i++) {
		if (b->tag[i].count == 0)
			continue;
		tags[n] = b->tag[i];
		tags[n].pad = (uint16_t)i;
		tags[n].count = cm_min(b, tags[n].vip_id, tags[n].key_hash);
		n++;
	}
	if (vip_totals != NULL)
		memcpy(vip_totals, b->vip_total, sizeof(b->vip_total));
	qsort(tags, n, sizeof(tags[0]), tag_cmp);
	if (n > max)
		n = max;
	for (uint32_t i = 0; i < n; i++) {
		cands[i].key_hash = tags[i].key_hash;
		cands[i].key = b->key[tags[i].pad];
		cands[i].vip_id = tags[i].vip_id;
		cands[i].count = scale(tags[i].count, b->shift);
	}
	if (!still_closed(b, w))
		return false;
	*n_cands = n;
	return true;
}

uint64_t
lb_sketch_estimate(const struct lb_sketch *sk, uint64_t w, uint16_t vip_id, uint64_t key_hash)
{
	const struct lb_sketch_buf *b = closed_buf(sk, w);
	uint32_t m, shift;

	if (b == NULL)
		return 0;
	m = cm_min(b, vip_id, key_hash);
	shift = b->shift;
	if (!still_closed(b, w))
		return 0;
	return (uint64_t)m << shift;
}

int
lb_sketch_set_policy(struct lb_sketch *sk, unsigned int shift, bool bytes)
{
	if (shift > LB_SKETCH_MAX_SHIFT)
		return -EINVAL;
	__atomic_store_n(&sk->want, LB_SKETCH_WANT | (bytes ? 1u << 8 : 0) | shift,
	                 __ATOMIC_RELAXED);
	return 0;
}

uint64_t
lb_sketch_window_packets(const struct lb_sketch *sk, uint64_t w)
{
	const struct lb_sketch_buf *b = closed_buf(sk, w);
	uint64_t n;

	if (b == NULL)
		return 0;
	n = b->packets;
	if (!still_closed(b, w))
		return 0;
	return n;
}

unsigned int
lb_sketch_auto_shift(uint64_t packets, double threshold)
{
	double low = threshold / 2 * (double)packets; /* packets of a key at threshold / 2 */
	unsigned int s = 0;

	while (s < LB_SKETCH_AUTO_MAX_SHIFT && low / (double)(2u << s) >= LB_SKETCH_AUTO_SAMPLES)
		s++;
	return s;
}

unsigned int
lb_sketch_adapt(struct lb_sketch *sk, uint64_t w, int sample, bool bytes, double threshold)
{
	uint32_t want = __atomic_load_n(&sk->want, __ATOMIC_RELAXED);
	unsigned int shift = want & 0xff;

	if (sample >= 0) {
		shift = (unsigned int)sample;
	} else {
		const struct lb_sketch_buf *b = closed_buf(sk, w);
		uint64_t n;

		if (b == NULL)
			return shift; /* not readable: the rate stays */
		n = b->packets;
		if (!still_closed(b, w))
			return shift;
		shift = lb_sketch_auto_shift(n, threshold);
	}
	lb_sketch_set_policy(sk, shift, bytes);
	return shift;
}
