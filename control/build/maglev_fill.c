/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Maglev fill engine (maglev_fill.h): hands out a table's slots to the
 * backends in proportion to their quotas, each turn taking the first unclaimed
 * slot along the backend's permutation.
 *
 * Backend i with quota q takes its k-th turn in round floor(k * Q / q) for
 * k = 0 .. q-1 (Q the largest quota), so turns are spread evenly over the Q
 * rounds and everyone starts in round 0, as in the paper. Backends due in a
 * round wait in that round's FIFO list, in sorted order at the start; after a
 * turn a backend computes its next round Bresenham-style (no division) and
 * appends itself there. Total work is M turns plus the permutation probes. The
 * last few slots are found by a scan that gives the same answer as the walk.
 *
 * Speed: the walk tests several candidate slots per step without a branch per
 * slot: four in C, eight (AVX2 gather) or sixteen (AVX-512) where the CPU has
 * them, chosen at run time; none of this changes the table, which
 * tests/unit/test_maglev.c compares with a plain reference builder at every
 * width. The run_fill loops and the probes they inline share this file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "control/build/maglev_fill.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PROBE 1
#endif

/* End of a calendar bucket list; backend indices are < 65535. */
#define NIL 0xFFFFu

/*
 * Where the fill switches from walking permutations to nearest_free: with F
 * slots free a walk costs about M / F probes and a scan F steps, so they cross
 * near F = sqrt(M). Measured (2026-11-29): build time flat within noise from
 * sqrt(M / 4) to sqrt(4 M), for the scalar and the AVX-512 scan alike; the
 * wide probes make the late walk cheap and each tail turn pays a modular
 * inverse, so a longer tail buys nothing.
 */
static uint32_t
tail_slots(uint32_t m)
{
	uint64_t t = 1;

	while (t * t < m)
		t++;
	return t < m ? (uint32_t)t : m;
}

static inline uint64_t
step(uint64_t c, uint64_t s, uint64_t m)
{
	c += s;
	return c >= m ? c - m : c;
}

static inline uint64_t
is_free(const uint64_t *claimed, uint64_t c)
{
	return ~claimed[c >> 6] >> (c & 63) & 1;
}

/*
 * First unclaimed slot after c (itself claimed) in the permutation with stride
 * multiples st: test four candidates per step, so the loads overlap and one
 * branch covers them, and pick the first free one without a branch. Quotas sum
 * to M, so an unclaimed slot is always ahead.
 */
static inline uint64_t
probe(const uint64_t *claimed, uint64_t c, const uint32_t *st, uint64_t m)
{
	const uint64_t s1 = st[0], s2 = st[1], s3 = st[2], s4 = st[3];

	for (;;) {
		uint64_t c1 = step(c, s1, m), c2 = step(c, s2, m);
		uint64_t c3 = step(c, s3, m), c4 = step(c, s4, m);
		uint64_t f1 = is_free(claimed, c1), f2 = is_free(claimed, c2);
		uint64_t f3 = is_free(claimed, c3), f4 = is_free(claimed, c4);

		if (f1 | f2 | f3 | f4) {
			uint64_t r = c4;

			r = f3 ? c3 : r;
			r = f2 ? c2 : r;
			r = f1 ? c1 : r;
			return r;
		}
		c = c4;
	}
}

#ifdef HAVE_AVX2_PROBE
/*
 * probe with AVX2: eight candidates c + s .. c + 8s per step, the bitmap read
 * as 32-bit words by one gather. Needs c + 8s < 2^32, so M <= 2^31.
 */
__attribute__((target("avx2"))) static uint64_t
probe8(const uint64_t *claimed, uint64_t c, const uint32_t *st, uint64_t m)
{
	const int *words = (const int *)claimed; /* little-endian: bit c of word c >> 5 */
	const __m256i vs = _mm256_loadu_si256((const __m256i *)st);
	const __m256i vm = _mm256_set1_epi32((int)m);
	const __m256i v31 = _mm256_set1_epi32(31);
	const uint64_t s8 = st[7];

	for (;;) {
		__m256i p = _mm256_add_epi32(_mm256_set1_epi32((int)c), vs);
		__m256i w, t;
		unsigned int free_mask;

		p = _mm256_min_epu32(p, _mm256_sub_epi32(p, vm));
		w = _mm256_i32gather_epi32(words, _mm256_srli_epi32(p, 5), 4);
		t = _mm256_slli_epi32(_mm256_srlv_epi32(w, _mm256_and_si256(p, v31)), 31);
		free_mask = ~(unsigned int)_mm256_movemask_ps(_mm256_castsi256_ps(t)) & 0xffu;
		if (free_mask) {
			uint32_t lanes[8];

			_mm256_storeu_si256((__m256i *)lanes, p);
			return lanes[__builtin_ctz(free_mask)];
		}
		c = step(c, s8, m);
	}
}
/* probe with AVX-512: sixteen candidates per step. Same conditions as probe8. */
__attribute__((target("avx512f"))) static uint64_t
probe16(const uint64_t *claimed, uint64_t c, const uint32_t *st, uint64_t m)
{
	const int *words = (const int *)claimed;
	const __m512i vs = _mm512_loadu_si512((const void *)st);
	const __m512i vm = _mm512_set1_epi32((int)m);
	const __m512i v31 = _mm512_set1_epi32(31);
	const __m512i one = _mm512_set1_epi32(1);
	const uint64_t s16 = st[15];

	for (;;) {
		__m512i p = _mm512_add_epi32(_mm512_set1_epi32((int)c), vs);
		__m512i w;
		__mmask16 free_mask;

		p = _mm512_min_epu32(p, _mm512_sub_epi32(p, vm));
		w = _mm512_i32gather_epi32(_mm512_srli_epi32(p, 5), words, 4);
		w = _mm512_srlv_epi32(w, _mm512_and_si512(p, v31));
		free_mask = _mm512_testn_epi32_mask(w, one);
		if (free_mask) {
			uint32_t lanes[16];

			_mm512_storeu_si512((void *)lanes, p);
			return lanes[__builtin_ctz(free_mask)];
		}
		c = step(c, s16, m);
	}
}
#endif

/* Inverse of a mod m (m prime, 0 < a < m) by the extended Euclidean algorithm. */
static uint32_t
inverse_mod(uint32_t a, uint32_t m)
{
	int64_t t = 0, nt = 1;
	uint32_t r = m, nr = a;

	while (nr) {
		uint32_t q = r / nr;
		int64_t tt = t - (int64_t)q * nt;
		uint32_t rr = r - q * nr;

		t = nt;
		nt = tt;
		r = nr;
		nr = rr;
	}
	return (uint32_t)(t < 0 ? t + m : t);
}

/*
 * The tail of the fill, where walking a permutation to the next unclaimed slot
 * costs about M / F probes with F slots left. Instead, find among the free
 * slots the one nearest along backend i's permutation from c: slot c + d * skip
 * lies at distance d = x * skip^-1 mod M, x = slot - c mod M. Ranking by
 * x * rank mod 2^64, rank = floor(skip^-1 * 2^64 / M), orders the same way
 * without a reduction: x * rank = d * 2^64 / M - e with 0 <= e < x < M, the
 * values for distinct d lie 2^64 / M > M apart, and d = 0 only for x = 0. So
 * the minimum is exactly the slot the walk would reach first, for O(F) work.
 * Returns the index in free_slots.
 */
static uint32_t
nearest_free(const uint32_t *free_slots, uint32_t nfree, uint64_t c, uint64_t rank, uint64_t m)
{
	uint64_t best = UINT64_MAX;
	uint32_t at = 0;

	for (uint32_t k = 0; k < nfree; k++) {
		uint64_t s = free_slots[k];
		uint64_t x = s - c;
		uint64_t key;

		if (s < c)
			x += m;
		key = x * rank;
		if (key < best) {
			best = key;
			at = k;
		}
	}
	return at;
}

#ifdef HAVE_AVX2_PROBE
/*
 * nearest_free with AVX-512 (F and DQ), eight slots per step. For M <= 2^31
 * the ranks of distinct distances lie more than 2^32 apart (2^64 / M - M >=
 * 2^32), so clearing the low 32 bits keeps their order and leaves room for the
 * index: one unsigned minimum per step gives both.
 */
__attribute__((target("avx512f,avx512dq"))) static uint32_t
nearest_free16(const uint32_t *free_slots, uint32_t nfree, uint64_t c, uint64_t rank, uint64_t m)
{
	const __m512i vc = _mm512_set1_epi64((long long)c);
	const __m512i vm = _mm512_set1_epi64((long long)m);
	const __m512i vr = _mm512_set1_epi64((long long)rank);
	const __m512i hi = _mm512_set1_epi64((long long)0xffffffff00000000ULL);
	const __m512i eight = _mm512_set1_epi64(8);
	__m512i idx = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
	__m512i best = _mm512_set1_epi64(-1);
	uint64_t b;
	uint32_t k = 0;

	for (; k + 8 <= nfree; k += 8) {
		__m512i s =
		        _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)&free_slots[k]));
		__m512i x = _mm512_sub_epi64(s, vc);
		__m512i key;

		x = _mm512_mask_add_epi64(x, _mm512_cmplt_epu64_mask(s, vc), x, vm);
		key = _mm512_or_si512(_mm512_and_si512(_mm512_mullo_epi64(x, vr), hi), idx);
		best = _mm512_min_epu64(best, key);
		idx = _mm512_add_epi64(idx, eight);
	}
	b = _mm512_reduce_min_epu64(best);
	for (; k < nfree; k++) {
		uint64_t s = free_slots[k];
		uint64_t x = s < c ? s + m - c : s - c;
		uint64_t key = (x * rank & 0xffffffff00000000ULL) | k;

		b = key < b ? key : b;
	}
	return (uint32_t)b;
}
#endif

/* Every unclaimed slot, ascending. */
static uint32_t
collect_free(const uint64_t *claimed, uint64_t m, uint32_t *free_slots)
{
	uint32_t n = 0;

	for (uint64_t w = 0; w < (m + 63) / 64; w++) {
		uint64_t bits = ~claimed[w];

		while (bits) {
			uint64_t s = w * 64 + (uint64_t)__builtin_ctzll(bits);

			if (s >= m)
				break;
			free_slots[n++] = (uint32_t)s;
			bits &= bits - 1;
		}
	}
	return n;
}

/* First unclaimed slot after c (itself claimed), with the widest probe available. */
static inline __attribute__((always_inline)) uint64_t
probe_any(const uint64_t *claimed, uint64_t c, const uint32_t *st, uint64_t m, unsigned int width)
{
#ifdef HAVE_AVX2_PROBE
	if (width == 16)
		return probe16(claimed, c, st, m);
	if (width == 8)
		return probe8(claimed, c, st, m);
#else
	(void)width;
#endif
	return probe(claimed, c, st, m);
}

/*
 * Walk phase: backend i takes the first unclaimed slot at or after cur[i].
 * Arguments rather than struct fields, so the loop keeps them in registers
 * (the stores to cur[] and claimed[] could otherwise alias the fields).
 */
static inline __attribute__((always_inline)) uint64_t
claim_walk(uint64_t *claimed, uint32_t *cur, const uint32_t *mult, uint64_t m, unsigned int width,
           uint32_t i, bool mid)
{
	const uint32_t *st = &mult[LB_MAGLEV_MULTS * (size_t)i];
	uint64_t c = cur[i]; /* 64-bit so c + skip cannot wrap for M near 2^32 */
	uint64_t w = claimed[c >> 6];

	if (mid) {
		/*
		 * Mid-fill, c is free about half the time: a branch on it would be
		 * mispredicted about as often. Test c and the next three together
		 * and pick the first free one without a branch; only if all four
		 * are taken (rare here) go on probing from the fourth.
		 */
		const uint64_t c1 = step(c, st[0], m), c2 = step(c, st[1], m),
		               c3 = step(c, st[2], m);
		const uint64_t f0 = is_free(claimed, c), f1 = is_free(claimed, c1);
		const uint64_t f2 = is_free(claimed, c2), f3 = is_free(claimed, c3);

		if (f0 | f1 | f2 | f3) {
			uint64_t r = c3;

			r = f2 ? c2 : r;
			r = f1 ? c1 : r;
			c = f0 ? c : r;
		} else {
			c = probe_any(claimed, c3, st, m, width);
		}
		w = claimed[c >> 6];
	} else if (w >> (c & 63) & 1) {
		c = probe_any(claimed, c, st, m, width);
		w = claimed[c >> 6];
	}
	claimed[c >> 6] = w | 1ULL << (c & 63);
	cur[i] = (uint32_t)step(c, st[0], m);
	return c;
}

/* Tail phase: the same answer, from the list of free slots. */
static uint64_t
claim_tail(struct lb_maglev_fill *f, uint32_t i)
{
	const uint64_t m = f->m;
	uint64_t c = f->cur[i];
	uint32_t k;

	if (!f->rank[i]) {
		uint64_t inv = inverse_mod(f->mult[LB_MAGLEV_MULTS * (size_t)i], f->m);

		/*
		 * floor(inv * 2^64 / M) = inv * q + floor(inv * (r + 1) / M) with
		 * 2^64 - 1 = q * M + r; inv * (r + 1) <= (M - 1) * M fits 64 bits.
		 */
		f->rank[i] = inv * f->q64 + inv * (f->r64 + 1) / m;
	}
#ifdef HAVE_AVX2_PROBE
	if (f->vtail)
		k = nearest_free16(f->free_slots, f->nfree, c, f->rank[i], m);
	else
#endif
		k = nearest_free(f->free_slots, f->nfree, c, f->rank[i], m);
	c = f->free_slots[k];
	f->free_slots[k] = f->free_slots[--f->nfree];
	f->claimed[c >> 6] |= 1ULL << (c & 63);
	f->cur[i] = (uint32_t)step(c, f->mult[LB_MAGLEV_MULTS * (size_t)i], m);
	return c;
}

/*
 * The mid-fill stretch of turns where claim_walk tests four candidates from c
 * at once: measured best from 10% to 60% of M (about 4% faster overall than
 * testing c alone first; starting at 20-40% or ending at 70-90% was slower).
 */
#define MID_FROM_PCT 10
#define MID_TO_PCT 60

static inline bool
is_mid(uint64_t turn, uint64_t m)
{
	return turn * 100 >= m * MID_FROM_PCT && turn * 100 < m * MID_TO_PCT;
}

/* One turn of backend i; turn counts the turns taken so far. */
static inline __attribute__((always_inline)) uint64_t
claim(struct lb_maglev_fill *f, uint32_t i, uint32_t turn)
{
	const uint32_t walk_end = f->m - f->tail_slots;

	if (turn < walk_end)
		return claim_walk(f->claimed, f->cur, f->mult, f->m, f->width, i,
		                  is_mid(turn, f->m));
	if (turn == walk_end)
		f->nfree = collect_free(f->claimed, f->m, f->free_slots);
	return claim_tail(f, i);
}

static void
bucket_append(struct lb_maglev_fill *f, uint32_t round, uint16_t i)
{
	f->link[i] = NIL;
	if (f->head[round] == NIL)
		f->head[round] = i;
	else
		f->link[f->tail[round]] = i;
	f->tail[round] = i;
}

/*
 * Equal weights (every quota Q or Q - 1): the calendar degenerates to "all
 * backends in sorted order, every round, the Q - 1 ones skipping the last",
 * so run that directly without the bucket lists. Same turns, same table.
 */
/* noinline: the hot loop gets the registers to itself. */
static __attribute__((noinline)) void
run_fill_even(struct lb_maglev_fill *f, uint16_t *table)
{
	uint64_t *const claimed = f->claimed;
	uint32_t *const cur = f->cur;
	const uint32_t *const mult = f->mult;
	const uint16_t *const ids = f->ids;
	const uint64_t m = f->m;
	const unsigned int width = f->width;
	const uint32_t na = f->na, qmax = f->qmax, walk_end = f->m - f->tail_slots;
	uint32_t turn = 0;
	const uint32_t mid_lo = (uint32_t)(m * MID_FROM_PCT / 100);
	const uint32_t mid_hi = (uint32_t)(m * MID_TO_PCT / 100);

	for (uint32_t r = 0; r < qmax; r++) {
		/* Only the last round has backends (quota Q - 1) sitting out. */
		const bool last = r + 1 == qmax;

		for (uint32_t i = 0; i < na; i++) {
			uint64_t c;

			if (last && f->quota[i] <= r)
				continue;
			if (turn < walk_end) {
				c = claim_walk(claimed, cur, mult, m, width, i,
				               turn >= mid_lo && turn < mid_hi);
			} else {
				if (turn == walk_end)
					f->nfree = collect_free(claimed, m, f->free_slots);
				c = claim_tail(f, i);
			}
			table[c] = ids[i];
			turn++;
		}
	}
}

static __attribute__((noinline)) void
run_fill(struct lb_maglev_fill *f, uint16_t *table)
{
	uint32_t turn = 0;

	for (uint32_t r = 0; r < f->qmax; r++)
		f->head[r] = NIL;
	/* Round 0: everyone with a quota, in sorted order. */
	for (uint32_t i = 0; i < f->na; i++) {
		if (f->quota[i])
			bucket_append(f, 0, (uint16_t)i);
	}
	for (uint32_t r = 0; r < f->qmax; r++) {
		uint16_t i = f->head[r];

		while (i != NIL) {
			uint16_t next = f->link[i];

			table[claim(f, i, turn)] = f->ids[i];
			turn++;
			if (--f->left[i]) {
				/* Next turn: round floor((k + 1) * Q / quota), carried. */
				uint32_t nr = r + f->step_div[i];

				f->err[i] += f->step_rem[i];
				if (f->err[i] >= f->quota[i]) {
					f->err[i] -= f->quota[i];
					nr++;
				}
				bucket_append(f, nr, i);
			}
			i = next;
		}
	}
}

static unsigned int width_cap; /* lb_maglev_probe_width_cap; 0: no cap */

unsigned int
lb_maglev_probe_width_cap(unsigned int width)
{
	unsigned int old = width_cap;

	width_cap = width;
	return old;
}

/* The widest probe this CPU runs, within the cap; the table does not depend on it. */
static unsigned int
probe_width(uint32_t m)
{
	unsigned int w = 4;

#ifdef HAVE_AVX2_PROBE
	/* The vector probes add in 32-bit lanes: c + 16 skips must stay below 2^32. */
	if (m <= 1u << 31) {
		if (__builtin_cpu_supports("avx512f"))
			w = 16;
		else if (__builtin_cpu_supports("avx2"))
			w = 8;
	}
#else
	(void)m;
#endif
	while (width_cap && w > width_cap && w > 4)
		w /= 2;
	return w;
}

int
lb_maglev_fill_init(struct lb_maglev_fill *f, uint32_t na, uint32_t m)
{
	memset(f, 0, sizeof(*f));
	f->na = na;
	f->m = m;
	f->cur = malloc(sizeof(*f->cur) * na);
	f->mult = malloc(sizeof(*f->mult) * LB_MAGLEV_MULTS * (size_t)na);
	f->quota = malloc(sizeof(*f->quota) * na);
	f->left = malloc(sizeof(*f->left) * na);
	f->step_div = malloc(sizeof(*f->step_div) * na);
	f->step_rem = malloc(sizeof(*f->step_rem) * na);
	f->err = calloc(na, sizeof(*f->err));
	f->ids = malloc(sizeof(*f->ids) * na);
	f->link = malloc(sizeof(*f->link) * na);
	f->claimed = calloc(((size_t)m + 63) / 64, sizeof(*f->claimed));
	f->width = probe_width(m);
#ifdef HAVE_AVX2_PROBE
	f->vtail = f->width == 16 && __builtin_cpu_supports("avx512dq");
#endif
	f->tail_slots = tail_slots(m);
	f->q64 = UINT64_MAX / m;
	f->r64 = UINT64_MAX % m;
	f->rank = calloc(na, sizeof(*f->rank));
	f->free_slots = malloc(sizeof(*f->free_slots) * (f->tail_slots ? f->tail_slots : 1));
	if (!f->cur || !f->mult || !f->quota || !f->left || !f->step_div || !f->step_rem ||
	    !f->err || !f->ids || !f->link || !f->claimed || !f->rank || !f->free_slots) {
		lb_maglev_fill_release(f);
		return -ENOMEM;
	}
	return 0;
}

void
lb_maglev_fill_set_backend(struct lb_maglev_fill *f, uint32_t i, uint32_t offset, uint32_t skip,
                           uint16_t id)
{
	uint32_t *st = &f->mult[LB_MAGLEV_MULTS * (size_t)i];

	f->cur[i] = offset;
	st[0] = skip;
	for (int k = 1; k < LB_MAGLEV_MULTS; k++)
		st[k] = (uint32_t)step(st[k - 1], st[0], f->m);
	f->ids[i] = id;
}

int
lb_maglev_fill_run(struct lb_maglev_fill *f, uint16_t *table)
{
	int even = 1;

	f->qmax = 0;
	for (uint32_t i = 0; i < f->na; i++)
		if (f->quota[i] > f->qmax)
			f->qmax = f->quota[i];
	for (uint32_t i = 0; i < f->na; i++) {
		even &= f->quota[i] + 1 >= f->qmax;
		f->left[i] = f->quota[i];
		if (f->quota[i]) {
			f->step_div[i] = f->qmax / f->quota[i];
			f->step_rem[i] = f->qmax % f->quota[i];
		}
	}
	f->head = malloc(sizeof(*f->head) * f->qmax);
	f->tail = malloc(sizeof(*f->tail) * f->qmax);
	if (!f->head || !f->tail)
		return -ENOMEM;

	if (even)
		run_fill_even(f, table);
	else
		run_fill(f, table);
	return 0;
}

void
lb_maglev_fill_release(struct lb_maglev_fill *f)
{
	free(f->cur);
	free(f->mult);
	free(f->quota);
	free(f->left);
	free(f->step_div);
	free(f->step_rem);
	free(f->err);
	free(f->ids);
	free(f->link);
	free(f->head);
	free(f->tail);
	free(f->claimed);
	free(f->rank);
	free(f->free_slots);
	memset(f, 0, sizeof(*f));
}
