/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>

#include "median.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double
median(double *r, uint32_t n)
{
	qsort(r, n, sizeof(r[0]), cmp_double);
	return r[n / 2];
}
