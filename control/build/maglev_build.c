/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Weighted Maglev table builder (Eisenbud et al., NSDI 2016, section 3.4).
 *
 * Control-plane only. Backends are sorted by identity, each gets the paper's
 * offset/skip permutation from two keyed hashes of its identity, slot quotas are
 * fixed up front by the largest-remainder method, and the fill (maglev_fill.c)
 * hands out turns in proportion to those quotas (a bucket calendar, so skewed
 * weights cost no more than equal ones). Every step depends only on the sorted
 * membership and key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control/base/prime.h"
#include "control/build/maglev_build.h"
#include "control/build/maglev_fill.h"
#include "dataplane/snapshot.h"

/*
 * Tweaks that turn the configured key into the two permutation keys. They are
 * part of what every instance must agree on: changing one changes every table.
 */
#define OFFSET_TWEAK_K0 0x6d61676c65762d6fULL /* "maglev-o" */
#define OFFSET_TWEAK_K1 0x66667365742d6831ULL /* "ffset-h1" */
#define SKIP_TWEAK_K0 0x6d61676c65762d73ULL   /* "maglev-s" */
#define SKIP_TWEAK_K1 0x6b69702d2d2d6832ULL   /* "kip---h2" */

/* Largest-remainder bookkeeping for one backend. */
struct rem_entry {
	uint64_t rem; /* (M * w) mod W: the fractional part of the share, times W */
	uint32_t idx; /* position in the sorted active list */
};

/* Identity order: bytes first, then a proper prefix before the longer string. */
static int
cmp_identity(const void *pa, const void *pb)
{
	const struct lb_maglev_backend *a = *(const struct lb_maglev_backend *const *)pa;
	const struct lb_maglev_backend *b = *(const struct lb_maglev_backend *const *)pb;
	size_t len = a->identity_len < b->identity_len ? a->identity_len : b->identity_len;

	if (len) {
		int c = memcmp(a->identity, b->identity, len);

		if (c)
			return c;
	}
	return (a->identity_len > b->identity_len) - (a->identity_len < b->identity_len);
}

/*
 * Sort by identity without qsort's indirect calls: the first eight bytes,
 * big-endian and zero-padded, order two identities the same way cmp_identity
 * does whenever they differ (a zero pad byte below a real byte is the shorter
 * identity being a proper prefix up to there); equal prefixes fall back to
 * cmp_identity. Bottom-up merge sort through a scratch array.
 */
struct ident_key {
	uint64_t prefix;
	const struct lb_maglev_backend *b;
};

static uint64_t
ident_prefix(const struct lb_maglev_backend *b)
{
	const unsigned char *p = b->identity;
	size_t len = b->identity_len < 8 ? b->identity_len : 8;
	uint64_t v = 0;

	for (size_t k = 0; k < 8; k++)
		v = v << 8 | (k < len ? p[k] : 0);
	return v;
}

static inline int
ident_less_eq(const struct ident_key *a, const struct ident_key *b)
{
	if (a->prefix != b->prefix)
		return a->prefix < b->prefix;
	return cmp_identity(&a->b, &b->b) <= 0;
}

/* Sorts a[0 .. n) using tmp[0 .. n); returns whichever array holds the result. */
static struct ident_key *
sort_identities(struct ident_key *a, struct ident_key *tmp, uint32_t n)
{
	for (uint32_t width = 1; width < n; width *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * width) {
			uint32_t mid = lo + width < n ? lo + width : n;
			uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			uint32_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = ident_less_eq(&a[i], &a[j]) ? a[i++] : a[j++];
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
		}
		struct ident_key *t = a;

		a = tmp;
		tmp = t;
	}
	return a;
}

/* Larger remainder first; equal remainders keep sorted-identity order. */
static int
cmp_remainder(const void *pa, const void *pb)
{
	const struct rem_entry *a = pa;
	const struct rem_entry *b = pb;

	if (a->rem != b->rem)
		return a->rem < b->rem ? 1 : -1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

/*
 * Slot quotas summing to m: floor(m * w / W) each, then one more for the
 * (m - sum of floors) backends with the largest remainders. Returns 0, or
 * -ENOMEM.
 */
static int
assign_quotas(const uint32_t *weight, uint32_t na, uint32_t m, uint32_t *quota)
{
	struct rem_entry *rems;
	uint64_t total = 0;
	uint64_t given = 0;
	uint32_t left;

	rems = malloc(sizeof(*rems) * na);
	if (!rems)
		return -ENOMEM;
	for (uint32_t i = 0; i < na; i++)
		total += weight[i];
	for (uint32_t i = 0; i < na; i++) {
		/* m and weight are < 2^32, so the product fits 64 bits. */
		uint64_t share = (uint64_t)m * weight[i];

		quota[i] = (uint32_t)(share / total);
		rems[i].rem = share % total;
		rems[i].idx = i;
		given += quota[i];
	}
	/* Fewer than na slots are left over: each remainder is < 1 slot. */
	left = (uint32_t)(m - given);

	if (left) {
		int same = 1;

		for (uint32_t i = 1; i < na && same; i++)
			same = rems[i].rem == rems[0].rem;
		/* All remainders equal (equal weights): the order is already identity order. */
		if (!same)
			qsort(rems, na, sizeof(*rems), cmp_remainder);
		for (uint32_t i = 0; i < left; i++)
			quota[rems[i].idx]++;
	}
	free(rems);
	return 0;
}

int
lb_maglev_build(const struct lb_hash_key *key, const struct lb_maglev_backend *backends, uint32_t n,
                uint32_t table_size, uint16_t *table)
{
	const struct lb_maglev_backend **sorted = NULL;
	uint32_t *weight = NULL;
	struct lb_maglev_fill f;
	struct lb_hash_key k_off, k_skip;
	uint32_t na = 0;
	int ret = -ENOMEM;

	if (!key || !table || (n && !backends) || n > 65535 || table_size < 3 ||
	    !lb_is_prime(table_size))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (!backends[i].identity && backends[i].identity_len)
			return -EINVAL;

	memset(&f, 0, sizeof(f));
	if (n) {
		struct ident_key *keys = malloc(sizeof(*keys) * 2 * (size_t)n), *res;

		sorted = malloc(sizeof(*sorted) * n);
		if (!sorted || !keys) {
			free(keys);
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			keys[i].b = &backends[i];
			keys[i].prefix = ident_prefix(&backends[i]);
		}
		res = sort_identities(keys, keys + n, n);
		for (uint32_t i = 0; i < n; i++)
			sorted[i] = res[i].b;
		free(keys);
		for (uint32_t i = 1; i < n; i++) {
			if (cmp_identity(&sorted[i - 1], &sorted[i]) == 0) {
				ret = -EINVAL;
				goto out;
			}
		}
		for (uint32_t i = 0; i < n; i++)
			na += sorted[i]->weight != 0;
	}
	if (na == 0) {
		for (uint32_t i = 0; i < table_size; i++)
			table[i] = LB_BACKEND_NONE;
		ret = 0;
		goto out;
	}

	weight = malloc(sizeof(*weight) * na);
	if (!weight || lb_maglev_fill_init(&f, na, table_size) < 0)
		goto out;

	k_off.k0 = key->k0 ^ OFFSET_TWEAK_K0;
	k_off.k1 = key->k1 ^ OFFSET_TWEAK_K1;
	k_skip.k0 = key->k0 ^ SKIP_TWEAK_K0;
	k_skip.k1 = key->k1 ^ SKIP_TWEAK_K1;
	for (uint32_t i = 0, j = 0; i < n; i++) {
		const struct lb_maglev_backend *b = sorted[i];
		uint64_t h1, h2;

		if (!b->weight)
			continue;
		h1 = lb_hash_bytes(&k_off, b->identity, b->identity_len);
		h2 = lb_hash_bytes(&k_skip, b->identity, b->identity_len);
		/* M prime and 1 <= skip < M: the permutation visits every slot. */
		lb_maglev_fill_set_backend(&f, j, (uint32_t)(h1 % table_size),
		                           (uint32_t)(h2 % (table_size - 1) + 1), b->id);
		weight[j] = b->weight;
		j++;
	}

	if (assign_quotas(weight, na, table_size, f.quota) < 0)
		goto out;
	ret = lb_maglev_fill_run(&f, table);
out:
	free(sorted);
	free(weight);
	lb_maglev_fill_release(&f);
	return ret;
}
