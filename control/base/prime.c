/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A deterministic primality test for 32-bit numbers: the Maglev table size
 * must be prime, and both the configuration checks and the table builder ask.
 */
#include <stddef.h>
#include <stdint.h>

#include "control/base/prime.h"

/* Witness arithmetic for lb_is_prime: operands < 2^32, so products fit 64 bits. */
static uint32_t
powmod(uint32_t base, uint32_t exp, uint32_t mod)
{
	uint64_t r = 1;
	uint64_t b = base % mod;

	while (exp) {
		if (exp & 1)
			r = r * b % mod;
		b = b * b % mod;
		exp >>= 1;
	}
	return (uint32_t)r;
}

/* One strong-probable-prime round of Miller-Rabin for odd n > witness. */
static int
sprp(uint32_t n, uint32_t a)
{
	uint32_t d = n - 1;
	unsigned int s = 0;
	uint64_t x;

	while (!(d & 1)) {
		d >>= 1;
		s++;
	}
	x = powmod(a, d, n);
	if (x == 1 || x == n - 1)
		return 1;
	while (--s) {
		x = x * x % n;
		if (x == n - 1)
			return 1;
	}
	return 0;
}

int
lb_is_prime(uint32_t n)
{
	static const uint8_t small[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47};

	if (n < 2)
		return 0;
	for (size_t i = 0; i < sizeof(small); i++) {
		if (n == small[i])
			return 1;
		if (n % small[i] == 0)
			return 0;
	}
	if (n < 53 * 53)
		return 1;
	/* Bases 2, 7, 61 decide every n < 4759123141 (Jaeschke 1993), so all uint32. */
	return sprp(n, 2) && sprp(n, 7) && sprp(n, 61);
}
