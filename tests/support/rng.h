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

#endif /* SPW_TEST_RNG_H */
