/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded pseudo-random generators for tests and benchmarks: fixed seeds, so
 * every run sees the same cases and streams.
 */
#ifndef SPW_TEST_RNG_H
#define SPW_TEST_RNG_H

#include <stdint.h>

/* splitmix64: the next value of the sequence seeded by *s. */
uint64_t rng_next(uint64_t *s);

/* xorshift64*: the next value of the sequence seeded by *x (nonzero). */
uint64_t rng_xorshift(uint64_t *x);

/* Square root by Newton's iteration (tests that link no libm); 0 for x <= 0. */
double rng_sqrt(double x);

/* A standard normal variate from the sequence *s: the sum of 12 uniforms
 * less 6 (Irwin-Hall). */
double rng_normal(uint64_t *s);

/* Binomial(n, q) from the sequence *s: its normal approximation with the
 * exact mean and variance, clamped to [0, n] (for n q (1 - q) of tens and
 * more, where the approximation holds). */
uint64_t rng_binomial(uint64_t *s, uint64_t n, double q);

#endif /* SPW_TEST_RNG_H */
