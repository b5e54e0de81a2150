/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark for the hot-key replica pick alone (dataplane/override.h): ns per
 * lb_override_pick() (the jump precomputed in a pick table: two dependent
 * loads) against the range partition (hi32(hash) * n >> 32, one multiply) and
 * the jump consistent hash computed per pick, same run, same hashes, for
 * lists of 3, 32, 256 and 1024 entries. Median of 7 rounds of 2^22 picks
 * each; a machine shared with other work gives indicative ratios.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dataplane/hash.h"
#include "dataplane/override.h"

#define PICKS (1u << 22)
#define ROUNDS 7

/* The first value of splitmix64 seeded with x. */
static uint64_t
mix(uint64_t x)
{
	return lb_splitmix64(&x);
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The pick this one replaced: a range partition of the high 32 bits. */
static inline uint16_t
range_pick(const struct lb_override_table *t, const struct lb_override_slot *o, uint64_t h)
{
	return t->replicas[o->first + (uint32_t)(((h >> 32) * (uint64_t)o->n_replicas) >> 32)];
}

/* The jump computed on every pick. */
static inline uint16_t
jump_pick(const struct lb_override_table *t, const struct lb_override_slot *o, uint64_t h)
{
	return t->replicas[o->first + lb_override_jump(h, o->n_replicas)];
}

int
main(void)
{
	static const uint32_t sizes[] = {3, 32, 256, 1024};
	static uint16_t list[1024], lut[LB_OVERRIDE_LUT_SIZE];
	uint64_t *hs = malloc(PICKS * sizeof(*hs));
	volatile uint32_t sink = 0;

	if (hs == NULL)
		return 1;
	for (uint32_t i = 0; i < PICKS; i++)
		hs[i] = mix(i);
	for (uint32_t i = 0; i < 1024; i++)
		list[i] = (uint16_t)i;
	printf("| entries | range ns/pick | jump ns/pick | table ns/pick | jump / range | table / "
	       "range |\n|---|---|---|---|---|---|\n");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct lb_override_slot o = {.key_hash = 1, .n_replicas = (uint16_t)sizes[k]};
		struct lb_override_table t = {
		        .n = 1, .mask = 0, .slots = &o, .replicas = list, .lut = lut};
		double tr[ROUNDS], tj[ROUNDS], tt[ROUNDS];

		lb_override_lut_fill(lut, sizes[k]);

		for (int r = 0; r < ROUNDS; r++) {
			uint32_t acc = 0;
			double t0 = now_ns();

			for (uint32_t i = 0; i < PICKS; i++)
				acc += range_pick(&t, &o, hs[i]);
			tr[r] = (now_ns() - t0) / PICKS;
			t0 = now_ns();
			for (uint32_t i = 0; i < PICKS; i++)
				acc += jump_pick(&t, &o, hs[i]);
			tj[r] = (now_ns() - t0) / PICKS;
			t0 = now_ns();
			for (uint32_t i = 0; i < PICKS; i++)
				acc += lb_override_pick(&t, &o, hs[i]);
			tt[r] = (now_ns() - t0) / PICKS;
			sink += acc;
		}
		qsort(tr, ROUNDS, sizeof(tr[0]), dcmp);
		qsort(tj, ROUNDS, sizeof(tj[0]), dcmp);
		qsort(tt, ROUNDS, sizeof(tt[0]), dcmp);
		printf("| %u | %.2f | %.2f | %.2f | %.2f | %.2f |\n", sizes[k], tr[ROUNDS / 2],
		       tj[ROUNDS / 2], tt[ROUNDS / 2], tj[ROUNDS / 2] / tr[ROUNDS / 2],
		       tt[ROUNDS / 2] / tr[ROUNDS / 2]);
	}
	free(hs);
	return sink == 0xFFFFFFFFu; /* keeps the loops; never true in practice */
}
