/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zipf(1.0) and uniform draws over n keys for tests and benchmarks, by inverse
 * CDF on xorshift64* (rng.h): key rank i has weight 1/(i+1).
 */
#ifndef SPW_TEST_ZIPF_H
#define SPW_TEST_ZIPF_H

#include <stdint.h>

/* The normalised CDF of Zipf(1.0) over n ranks (malloc'd; NULL if out of memory). */
double *zipf_cdf_make(uint32_t n);

/* A rank in [0, n) drawn from cdf (of zipf_cdf_make(n)) with the generator *x. */
uint32_t zipf_draw(const double *cdf, uint32_t n, uint64_t *x);

/*
 * n draws of keys in [0, n_keys) from a fixed seed (malloc'd; NULL if out of
 * memory): uniform, or Zipf(1.0) with the popular ranks spread over the key
 * numbers.
 */
uint32_t *draws_make(uint32_t n, uint32_t n_keys, int zipf);

#endif /* SPW_TEST_ZIPF_H */
