/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A deterministic primality test for 32-bit numbers (prime.c).
 */
#ifndef LB_PRIME_H
#define LB_PRIME_H

#include <stdint.h>

/** Whether n is prime (deterministic for every uint32_t; for validating table sizes). */
int lb_is_prime(uint32_t n);

#endif /* LB_PRIME_H */
