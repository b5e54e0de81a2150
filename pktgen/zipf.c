/* SPDX-License-Identifier: BSD-3-Clause */
/* Alias-table construction (Vose, "A linear algorithm for generating random
 * numbers with a given distribution", 1991). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "zipf.h"

#define TWO32 4294967296.0

int
sg_alias_build(struct sg_alias *a, const double *w, uint32_t n)
{
	double sum = 0, *p = NULL;
	uint32_t *small = NULL, *large = NULL, ns = 0, nl = 0;
	int rc = -ENOMEM;

	a->n = 0;
	a->t = NULL;
	if (n == 0)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		if (!(w[i] >= 0) || !isfinite(w[i]))
			return -EINVAL;
		sum += w[i];
	}
	if (!(sum > 0))
		return -EINVAL;
	a->t = calloc(n, sizeof(*a->t));
	p = malloc(n * sizeof(*p));
	small = malloc(n * sizeof(*small));
	large = malloc(n * sizeof(*large));
	if (a->t == NULL || p == NULL || small == NULL || large == NULL)
		goto out;
	/* Scaled so the average bucket holds exactly 1. */
	for (uint32_t i = 0; i < n; i++) {
		p[i] = w[i] * n / sum;
		if (p[i] < 1.0)
			small[ns++] = i;
		else
			large[nl++] = i;
	}
	while (ns > 0 && nl > 0) {
		uint32_t s = small[--ns], l = large[nl - 1];
		double q = p[s] * TWO32;

		if (q >= TWO32 - 1) {
			a->t[s].prob = UINT32_MAX;
			a->t[s].alias = s;
		} else {
			a->t[s].prob = (uint32_t)llround(q);
			a->t[s].alias = l;
		}
		/* The large bucket gives away what the small one lacks. */
		p[l] = (p[l] + p[s]) - 1.0;
		if (p[l] < 1.0) {
			nl--;
			small[ns++] = l;
		}
	}
	/* Left-overs are 1 up to rounding: they keep themselves. */
	while (nl > 0) {
		uint32_t l = large[--nl];
		a->t[l].prob = UINT32_MAX;
		a->t[l].alias = l;
	}
	while (ns > 0) {
		uint32_t s = small[--ns];
		a->t[s].prob = UINT32_MAX;
		a->t[s].alias = s;
	}
	a->n = n;
	rc = 0;
out:
	free(p);
	free(small);
	free(large);
	if (rc != 0) {
		free(a->t);
		a->t = NULL;
	}
	return rc;
}

int
sg_zipf_build(struct sg_alias *a, uint32_t n, double s)
{
	double *w;
	int rc;

	if (n == 0 || !(s >= 0) || !isfinite(s))
		return -EINVAL;
	w = malloc(n * sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		w[i] = pow((double)i + 1.0, -s);
	rc = sg_alias_build(a, w, n);
	free(w);
	return rc;
}

void
sg_alias_free(struct sg_alias *a)
{
	free(a->t);
	a->t = NULL;
	a->n = 0;
}

double
sg_alias_prob(const struct sg_alias *a, uint32_t i)
{
	/* Bucket i keeps itself with prob/2^32 (UINT32_MAX stands for 1), and every
	 * bucket j aliased to i gives it the rest of its mass. */
	double keep = a->t[i].prob == UINT32_MAX ? 1.0 : a->t[i].prob / TWO32;
	double p = keep;

	for (uint32_t j = 0; j < a->n; j++)
		if (a->t[j].alias == i && j != i && a->t[j].prob != UINT32_MAX)
			p += 1.0 - a->t[j].prob / TWO32;
	return p / a->n;
}
