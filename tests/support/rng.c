/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/hash.h"
#include "rng.h"

uint64_t
rng_next(uint64_t *s)
{
	return lb_splitmix64(s);
}

uint64_t
rng_xorshift(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

double
rng_sqrt(double x)
{
	double y = x > 1 ? x : 1;

	if (!(x > 0))
		return 0;
	for (int i = 0; i < 100; i++) {
		double n = 0.5 * (y + x / y);

		if (!(n < y))
			break;
		y = n;
	}
	return y;
}

double
rng_normal(uint64_t *s)
{
	double sum = 0;

	for (int i = 0; i < 12; i++)
		sum += (double)(rng_next(s) >> 11) / 9007199254740992.0;
	return sum - 6;
}

uint64_t
rng_binomial(uint64_t *s, uint64_t n, double q)
{
	double m = (double)n * q, x;

	if (q <= 0 || n == 0)
		return 0;
	if (q >= 1)
		return n;
	x = m + rng_sqrt(m * (1 - q)) * rng_normal(s) + 0.5;
	if (x < 0)
		return 0;
	return x > (double)n ? n : (uint64_t)x;
}
