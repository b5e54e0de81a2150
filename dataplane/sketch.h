/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core hot-key sketch: a Count-Min sketch of (VIP, flow key) plus a small
 * table of candidate heavy keys (the sketch alone cannot name keys), double
 * buffered by window: the worker writes window W's buffer while control reads
 * the closed buffer of window W-1. Written by one worker only; control reads
 * a buffer only after the worker has closed it.
 *
 * Implementation: sketch.c (the worker's side, per packet), sketch_setup.c
 * (creation, freeing and control's readers); docs/hot-keys.md has the
 * figures behind the sizes.
 *
 * Layout (visible so that lb_sketch_add() inlines into the pipeline): per
 * buffer, a Count-Min sketch of LB_SKETCH_DEPTH rows of LB_SKETCH_WIDTH 32-bit
 * counters with conservative update, the VIPs' exact totals, and a 8-way
 * set-associative table of candidates; a key enters it when its estimate
 * reaches 2^-LB_SKETCH_GATE_SHIFT of its VIP's running total, evicting the
 * smallest of its set. Read deadline: the buffer closed as window W is cleared
 * and rewritten when the worker starts window W+2, so control must have read
 * W by the time it opens W+2; lb_sketch_read() detects a late read (false).
 */
#ifndef LB_SKETCH_H
#define LB_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/hash.h"
#include "dataplane/snapshot.h"

/* A heavy-key candidate of one window on one core. */
struct lb_sketch_cand {
	uint64_t key_hash;      /* the VIP's key hash (what Maglev hashes) */
	struct lb_flow_key key; /* the key itself, per the VIP's key mode */
	uint16_t vip_id;
	uint32_t count; /* estimated count in this window (after sampling scale-up) */
};

/*
 * Sizes. Count-Min: an estimate exceeds the true count by at most e/W of the
 * core's window total with probability >= 1 - e^-D per key (Cormode and
 * Muthukrishnan); W = 8192, D = 4: error <= 3.3e-4 * T, i.e. 332 packets at
 * T = 10^6, 15 times below phi*T/2 = 5000 at phi = 0.01; failure 1.8% per key
 * per row-set by that bound, far less in practice (docs/hot-keys.md).
 */
#define LB_SKETCH_DEPTH 4
#define LB_SKETCH_WIDTH_LOG2 13
#define LB_SKETCH_WIDTH (1u << LB_SKETCH_WIDTH_LOG2)
/* Candidates: 64 sets of 8 ways (a set is two cache lines of tags). */
#define LB_SKETCH_WAYS 8
#define LB_SKETCH_SETS_LOG2 6
#define LB_SKETCH_CANDS (LB_SKETCH_WAYS << LB_SKETCH_SETS_LOG2)
/*
 * A key is a candidate once its estimate is >= 2^-9 (0.195%) of its VIP's
 * running total: below phi/2 for any phi >= 0.39%, so a key between phi/2 and
 * phi (hysteresis band) is still reported.
 */
#define LB_SKETCH_GATE_SHIFT 9
/*
 * A key's candidate entry is looked at each time its estimate crosses a
 * multiple of 8 (sampled units): a heavy key enters the table at most 8
 * sampled packets after it reaches the gate, so a key is reported once it has
 * 8 sampled packets above the gate (2 phi T >= 8 * 2^sample_shift + gate:
 * T >= 400 packets unsampled, 6400 at 1 in 16). Counts are re-read from the
 * sketch when the window is read, so the entry's own count is only used to
 * choose whom to evict.
 */
#define LB_SKETCH_CAND_STEP_LOG2 3
#define LB_SKETCH_MAX_SHIFT 16    /* largest sample_shift accepted */
#define LB_SKETCH_OPEN UINT64_MAX /* lb_sketch_buf.closed while being written */

/* Golden-ratio multiplier that folds the VIP into the key hash. */
#define LB_SKETCH_VIP_MIX 0x9E3779B97F4A7C15ULL

/* A candidate's tag; count 0 = empty way. */
struct lb_sketch_tag {
	uint64_t key_hash;
	uint16_t vip_id;
	uint16_t pad;
	uint32_t count; /* Count-Min estimate at the key's last visit, sampled units */
};

/* One window's worth of state. */
struct lb_sketch_buf {
	/*
	 * The window this buffer was closed as, stored with release by the
	 * worker once it has stopped writing; LB_SKETCH_OPEN (stored before
	 * the buffer is cleared, then a release fence) while it is written.
	 */
	uint64_t closed __attribute__((aligned(64)));
	uint32_t shift;   /* the sample shift this window was written with */
	uint32_t bytes;   /* 1: weights are the packets' IP bytes; 0: 1 per packet */
	uint64_t packets; /* VIP packets this window (whatever the weight) */
	uint32_t cm[LB_SKETCH_DEPTH][LB_SKETCH_WIDTH] __attribute__((aligned(64)));
	uint64_t vip_total[LB_MAX_VIPS]; /* every packet's weight, not sampled */
	struct lb_sketch_tag tag[LB_SKETCH_CANDS] __attribute__((aligned(64)));
	struct lb_flow_key key[LB_SKETCH_CANDS]; /* key of tag[i], valid while its count != 0 */
};

struct lb_sketch {
	/* Worker-private, one cache line: what lb_sketch_add() touches besides the buffer. */
	struct lb_sketch_buf *cur; /* the buffer being written */
	uint64_t cur_window;       /* the window it will be closed as */
	uint64_t rng;              /* xorshift64 state for the sampling gaps */
	uint32_t countdown;        /* packets until the next sampled one (1 = this one) */
	uint32_t sample_shift;
	uint64_t evictions;    /* candidates evicted by a larger one (diagnostic) */
	uint32_t weight_bytes; /* 1: count IP bytes (the pipeline's weight), 0: packets */
	/* Written by control (lb_sketch_set_policy), adopted by the worker when it
	 * opens its next window: LB_SKETCH_WANT | bytes << 8 | shift; 0 = none. */
	uint32_t want __attribute__((aligned(64)));
	struct lb_sketch_buf buf[2];
} __attribute__((aligned(64)));

struct lb_sketch; /* per core; layout above only for the inline fast path: use the functions */

/**
 * Create a per-core sketch. sample_shift: feed 1 packet in 2^sample_shift
 * (0 = every packet); counts are scaled back up.
 *
 * @return the sketch, or NULL with errno set.
 */
struct lb_sketch *lb_sketch_create(unsigned int sample_shift);

void lb_sketch_free(struct lb_sketch *sk);

/**
 * The sampled path of lb_sketch_add(): record est (sampled units) as the
 * candidate count of (vip_id, key_hash), inserting it, or evicting the
 * smallest candidate of its set if est is larger. Worker only.
 */
void lb_sketch_cand_update(struct lb_sketch *sk, uint16_t vip_id, uint64_t key_hash,
                           const struct lb_flow_key *key, uint32_t est);

/* The D row indexes of (vip_id, key_hash) packed in one 64-bit word, 16 bits a row. */
static inline uint64_t
lb_sketch_cols(uint16_t vip_id, uint64_t key_hash)
{
	/* key_hash is keyed SipHash: its bits are independent, so each row
	 * takes its own 13-bit field; the VIP is folded in first so the same
	 * source address on two VIPs is two keys. */
	return key_hash ^ ((uint64_t)vip_id * LB_SKETCH_VIP_MIX);
}

/* Gap to the next sampled packet: uniform on [1, 2^(s+1) - 1], mean 2^s. */
static inline uint32_t
lb_sketch_gap(struct lb_sketch *sk)
{
	uint64_t x = sk->rng;

	if (sk->sample_shift == 0)
		return 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	sk->rng = x;
	return 1 + (uint32_t)(((x >> 32) * ((2ull << sk->sample_shift) - 1)) >> 32);
}

/*
 * The sampled part of lb_sketch_add(): the Count-Min update of one packet
 * (conservative update) and, when due, its candidate entry. total is the VIP's
 * running total including this packet.
 */
static inline void
lb_sketch_cm_add(struct lb_sketch *sk, struct lb_sketch_buf *b, uint16_t vip_id, uint64_t key_hash,
                 const struct lb_flow_key *key, uint32_t weight, uint64_t total)
{
	const uint32_t mask = LB_SKETCH_WIDTH - 1;
	uint64_t h = lb_sketch_cols(vip_id, key_hash);
	uint32_t *c[LB_SKETCH_DEPTH];
	uint64_t est;
	uint32_t m;

	for (int r = 0; r < LB_SKETCH_DEPTH; r++)
		c[r] = &b->cm[r][(h >> (16 * r)) & mask];
	m = *c[0];
	for (int r = 1; r < LB_SKETCH_DEPTH; r++)
		m = *c[r] < m ? *c[r] : m;
	/* Conservative update: raise only the counters below min + weight, to
	 * it. Still never below the true count; saturates instead of wrapping. */
	est = (uint64_t)m + weight;
	if (est > UINT32_MAX)
		est = UINT32_MAX;
	for (int r = 0; r < LB_SKETCH_DEPTH; r++)
		*c[r] = *c[r] < (uint32_t)est ? (uint32_t)est : *c[r];
	/* The candidate table is visited when the estimate crosses a multiple of
	 * LB_SKETCH_CAND_STEP (not on every packet of a heavy key), if the key
	 * has reached the gate share of its VIP. */
	if ((est >> LB_SKETCH_CAND_STEP_LOG2) != (m >> LB_SKETCH_CAND_STEP_LOG2) &&
	    (est << sk->sample_shift) >= (total >> LB_SKETCH_GATE_SHIFT))
		lb_sketch_cand_update(sk, vip_id, key_hash, key, (uint32_t)est);
}

/**
 * Worker: whether the next lb_sketch_add() samples its packet. When it does
 * not, lb_sketch_add() reads neither key_hash nor key (it only counts the VIP's
 * total), so a caller whose key hash costs a SipHash may pass 0 and NULL.
 */
static inline bool
lb_sketch_next_sampled(const struct lb_sketch *sk)
{
	return sk->countdown == 1;
}

/**
 * Worker, per packet of a VIP: count weight (1 per packet, or bytes) for
 * (vip_id, key_hash); key is copied only if the key becomes a candidate.
 * Also counts the VIP's total for the window (the denominator of shares).
 */
static inline void
lb_sketch_add(struct lb_sketch *sk, uint16_t vip_id, uint64_t key_hash,
              const struct lb_flow_key *key, uint32_t weight)
{
	struct lb_sketch_buf *b = sk->cur;
	uint64_t total = b->vip_total[vip_id] += weight;

	if (--sk->countdown != 0)
		return;
	sk->countdown = lb_sketch_gap(sk);
	lb_sketch_cm_add(sk, b, vip_id, key_hash, key, weight, total);
}

#define LB_SKETCH_WANT (1u << 16) /* lb_sketch.want holds a request */

/**
 * Control: ask the worker to sample 1 packet in 2^shift and to weigh packets
 * by their IP bytes (bytes) or as 1, from the next window it opens on (the
 * current window keeps what it was started with, so one window never mixes
 * two rates or units). @return 0, or -EINVAL for shift > LB_SKETCH_MAX_SHIFT.
 */
int lb_sketch_set_policy(struct lb_sketch *sk, unsigned int shift, bool bytes);

/*
 * Automatic sampling: the largest shift s <= LB_SKETCH_AUTO_MAX_SHIFT that
 * still samples LB_SKETCH_AUTO_SAMPLES packets of a key at threshold / 2 in a
 * window of `packets` (threshold / 2 * packets / 2^s >= 64): a key at the
 * bottom of the hysteresis band is then counted with a relative standard
 * deviation of at most 1/8 (docs/hot-keys.md, "Sampling", has the table).
 */
#define LB_SKETCH_AUTO_SAMPLES 64
#define LB_SKETCH_AUTO_MAX_SHIFT 8

/** The automatic shift for a core with `packets` VIP packets per window (0 for 0 packets). */
unsigned int lb_sketch_auto_shift(uint64_t packets, double threshold);

/**
 * Control, after window w: the policy for this core's next window. sample is
 * a shift, or negative for automatic (from this core's packets in w; a core
 * whose w cannot be read keeps its rate). @return the shift asked for.
 */
unsigned int lb_sketch_adapt(struct lb_sketch *sk, uint64_t w, int sample, bool bytes,
                             double threshold);

/** Control: VIP packets of this core's closed window w (0 if w is not closed or was reopened). */
uint64_t lb_sketch_window_packets(const struct lb_sketch *sk, uint64_t w);

/**
 * Worker, once per burst: n more VIP packets in the window (what automatic
 * sampling sizes the rate on; lb_sketch_add() does not count them, so that a
 * burst costs one add).
 */
static inline void
lb_sketch_count_packets(struct lb_sketch *sk, uint32_t n)
{
	sk->cur->packets += n;
}

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
