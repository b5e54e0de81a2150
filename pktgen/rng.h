/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The generator's random numbers: xoshiro256** seeded through splitmix64 (lb_splitmix64), and
 * Lemire's unbiased bounded draw. Per-lcore state, no locks; the same seed
 * gives the same traffic on every run.
 */
#ifndef SG_RNG_H
#define SG_RNG_H

#include <stdint.h>

#include "dataplane/hash.h"

struct sg_rng {
	uint64_t s[4];
};

static inline void
sg_rng_seed(struct sg_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = lb_splitmix64(&seed);
}

static inline uint64_t
sg_rng_next(struct sg_rng *r)
{
	uint64_t *s = r->s;
	uint64_t x = s[1] * 5;
	uint64_t result = ((x << 7) | (x >> 57)) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return result;
}

/*
 * Uniform in [0, n), exactly (Lemire 2019, "Fast random integer generation in
 * an interval"): a 32x32 multiply, and a redraw with probability < n / 2^32.
 * *spare receives 32 further random bits from the same draw.
 */
static inline uint32_t
sg_rng_below(struct sg_rng *r, uint32_t n, uint32_t *spare)
{
	uint64_t x = sg_rng_next(r);
	uint64_t m = (uint64_t)(uint32_t)x * n;

	if ((uint32_t)m < n) {
		uint32_t t = (uint32_t)(-n) % n;

		while ((uint32_t)m < t) {
			x = sg_rng_next(r);
			m = (uint64_t)(uint32_t)x * n;
		}
	}
	*spare = (uint32_t)(x >> 32);
	return (uint32_t)(m >> 32);
}

#endif /* SG_RNG_H */
