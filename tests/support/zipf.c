/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>

#include "rng.h"
#include "zipf.h"

double *
zipf_cdf_make(uint32_t n)
{
	double *cdf = malloc((size_t)n * sizeof(*cdf)), sum = 0;

	if (cdf == NULL)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		cdf[i] = (sum += 1.0 / (double)(i + 1));
	for (uint32_t i = 0; i < n; i++)
		cdf[i] /= sum;
	return cdf;
}

/* The rank of uniform u in [0, 1) under cdf. */
static uint32_t
zipf_rank(const double *cdf, uint32_t n, double u)
{
	uint32_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t
zipf_draw(const double *cdf, uint32_t n, uint64_t *x)
{
	return zipf_rank(cdf, n, (double)(rng_xorshift(x) >> 11) / 9007199254740992.0);
}

uint32_t *
draws_make(uint32_t n, uint32_t n_keys, int zipf)
{
	uint32_t *d = malloc((size_t)n * sizeof(*d));
	double *cdf = NULL;
	uint64_t x = 0x9E3779B97F4A7C15ULL;

	if (d == NULL)
		return NULL;
	if (zipf && (cdf = zipf_cdf_make(n_keys)) == NULL) {
		free(d);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!zipf) {
			d[i] = (uint32_t)((rng_xorshift(&x) >> 32) * n_keys >> 32);
		} else {
			uint32_t lo = zipf_draw(cdf, n_keys, &x);

			/* Spread the popular ranks over the key numbers. */
			d[i] = (uint32_t)(((uint64_t)lo * 2654435761u) % n_keys);
		}
	}
	free(cdf);
	return d;
}
