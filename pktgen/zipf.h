/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zipf(s) flow popularity over K ranks by Walker's alias method (Vose's O(K)
 * construction): P(rank i) = (i + 1)^-s / H(K, s). Sampling is O(1): one
 * exact uniform bucket and one 32-bit threshold compare, one cache line read.
 * Probabilities are held to 2^-32 per bucket, far below what any run samples.
 */
#ifndef SG_ZIPF_H
#define SG_ZIPF_H

#include <stdint.h>

#include "rng.h"

struct sg_alias_entry {
	uint32_t prob; /* keep the bucket with probability prob / 2^32 */
	uint32_t alias;
};

struct sg_alias {
	uint32_t n;
	struct sg_alias_entry *t;
};

/**
 * Build an alias table for arbitrary non-negative weights (not all zero).
 * @return 0, -EINVAL (n == 0, a negative or non-finite weight, all zero) or -ENOMEM.
 */
int sg_alias_build(struct sg_alias *a, const double *w, uint32_t n);

/** Build the table of Zipf(s) over n ranks (s >= 0; s = 0 is uniform). */
int sg_zipf_build(struct sg_alias *a, uint32_t n, double s);

void sg_alias_free(struct sg_alias *a);

/** Exact probability the table gives index i (for tests and reports). */
double sg_alias_prob(const struct sg_alias *a, uint32_t i);

static inline uint32_t
sg_alias_sample(const struct sg_alias *a, struct sg_rng *r)
{
	uint32_t u;
	uint32_t i = sg_rng_below(r, a->n, &u);
	const struct sg_alias_entry *e = &a->t[i];

	return u < e->prob ? i : e->alias;
}

#endif /* SG_ZIPF_H */
