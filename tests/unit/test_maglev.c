/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the weighted Maglev builder: slot counts against the exact
 * largest-remainder shares, byte-identical tables whatever the input order,
 * bounded disruption when membership changes, and argument validation.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/build/maglev_build.h"
#include "dataplane/hash.h"
#include "dataplane/snapshot.h"
#include "../support/isa.h"
#include "../support/rng.h"

#define NAME_LEN 32
#define M_SMALL 251u
#define M_DEFAULT 65537u

/* Backends named like configured addresses, ids 0 .. n-1, weight 1. */
struct pool {
	struct lb_maglev_backend *b;
	char (*names)[NAME_LEN];
	uint32_t n;
};

static void
pool_init(struct pool *p, uint32_t n)
{
	p->n = n;
	p->b = calloc(n ? n : 1, sizeof(*p->b));
	p->names = calloc(n ? n : 1, sizeof(*p->names));
	assert_non_null(p->b);
	assert_non_null(p->names);
	for (uint32_t i = 0; i < n; i++) {
		int len = snprintf(p->names[i], NAME_LEN, "192.0.%u.%u:443", i >> 8, i & 255);

		p->b[i].identity = p->names[i];
		p->b[i].identity_len = (size_t)len;
		p->b[i].weight = 1;
		p->b[i].id = (uint16_t)i;
	}
}

static void
pool_fini(struct pool *p)
{
	free(p->b);
	free(p->names);
}

static void
shuffle(struct lb_maglev_backend *b, uint32_t n, uint64_t *rng)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)(rng_next(rng) % i);
		struct lb_maglev_backend t = b[i - 1];

		b[i - 1] = b[j];
		b[j] = t;
	}
}

static void
test_key(struct lb_hash_key *key, const char *seed)
{
	lb_hash_key_from_seed(key, seed, strlen(seed));
}

static uint16_t *
build(const struct lb_maglev_backend *b, uint32_t n, uint32_t m, const char *seed)
{
	struct lb_hash_key key;
	uint16_t *table = malloc(sizeof(*table) * m);

	assert_non_null(table);
	test_key(&key, seed);
	assert_int_equal(lb_maglev_build(&key, b, n, m, table), 0);
	return table;
}

/* counts[id] for every id; every slot must hold an id below n. */
static uint32_t *
count_slots(const uint16_t *table, uint32_t m, uint32_t n)
{
	uint32_t *counts = calloc(n ? n : 1, sizeof(*counts));

	assert_non_null(counts);
	for (uint32_t s = 0; s < m; s++) {
		assert_true(table[s] < n);
		counts[table[s]]++;
	}
	return counts;
}

struct size_case {
	const char *name; /* so a failure names its row */
	uint32_t n;
	uint32_t m;
};

static const struct size_case equal_cases[] = {
        {"test_maglev_equal_weights_balanced N=1 M=65537", 1, M_DEFAULT},
        {"test_maglev_equal_weights_balanced N=2 M=65537", 2, M_DEFAULT},
        {"test_maglev_equal_weights_balanced N=3 M=65537", 3, M_DEFAULT},
        {"test_maglev_equal_weights_balanced N=7 M=65537", 7, M_DEFAULT},
        {"test_maglev_equal_weights_balanced N=10 M=65537", 10, M_DEFAULT},
        {"test_maglev_equal_weights_balanced N=100 M=65537", 100, M_DEFAULT},
        {"test_maglev_equal_weights_balanced N=1000 M=65537", 1000, M_DEFAULT},
        {"test_maglev_equal_weights_balanced N=1 M=251", 1, M_SMALL},
        {"test_maglev_equal_weights_balanced N=2 M=251", 2, M_SMALL},
        {"test_maglev_equal_weights_balanced N=3 M=251", 3, M_SMALL},
        {"test_maglev_equal_weights_balanced N=7 M=251", 7, M_SMALL},
        {"test_maglev_equal_weights_balanced N=10 M=251", 10, M_SMALL},
};

static void
test_maglev_equal_weights_balanced(void **state)
{
	const struct size_case *c = *state;
	struct pool p;
	uint16_t *table;
	uint32_t *counts;

	pool_init(&p, c->n);
	table = build(p.b, c->n, c->m, "equal");
	counts = count_slots(table, c->m, c->n);
	for (uint32_t i = 0; i < c->n; i++) {
		assert_in_range(counts[i], c->m / c->n, (c->m + c->n - 1) / c->n);
	}
	free(counts);
	free(table);
	pool_fini(&p);
}

/*
 * Largest remainder, checked exactly: every count is floor(M w / W) or one
 * more, counts sum to M, and no backend rounded down has a larger remainder
 * than one rounded up.
 */
static void
check_quotas(const struct lb_maglev_backend *b, uint32_t n, uint32_t m, const uint16_t *table)
{
	uint32_t *counts = count_slots(table, m, n);
	uint64_t total = 0;
	uint64_t min_up = UINT64_MAX, max_down = 0;

	for (uint32_t i = 0; i < n; i++)
		total += b[i].weight;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t share = (uint64_t)m * b[i].weight;
		uint64_t q = share / total, rem = share % total;
		uint32_t cnt = counts[b[i].id];

		assert_in_range(cnt, q, q + 1);
		/* Within one slot of the exact share M w / W. */
		assert_true((unsigned __int128)cnt * total < (unsigned __int128)share + total);
		assert_true((unsigned __int128)cnt * total + total > share);
		if (cnt == q + 1 && rem < min_up)
			min_up = rem;
		if (cnt == q && rem > max_down)
			max_down = rem;
		if (b[i].weight == 0)
			assert_int_equal(cnt, 0);
	}
	if (min_up != UINT64_MAX)
		assert_true(max_down <= min_up);
	free(counts);
}

static void
test_maglev_weighted_quotas(void **state)
{
	uint64_t rng = 42;

	(void)state;
	for (int set = 0; set < 12; set++) {
		uint32_t n = set < 4 ? 3 + (uint32_t)(rng_next(&rng) % 20)
		                     : 1 + (uint32_t)(rng_next(&rng) % 1000);
		uint32_t m = set % 3 == 0 ? M_SMALL : M_DEFAULT;
		struct pool p;
		uint16_t *table;

		pool_init(&p, n);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t r = rng_next(&rng);

			switch (set % 4) {
			case 0: /* small weights */
				p.b[i].weight = 1 + (uint32_t)(r % 10);
				break;
			case 1: /* full uint32 range: M * w needs 64 bits */
				p.b[i].weight = 1 + (uint32_t)(r % UINT32_MAX);
				break;
			case 2: /* one heavy backend, the rest light */
				p.b[i].weight = i == 0 ? 1000000 : 1 + (uint32_t)(r % 3);
				break;
			default: /* some excluded */
				p.b[i].weight = (uint32_t)(r % 5) * 100;
				break;
			}
		}
		p.b[0].weight = p.b[0].weight ? p.b[0].weight : 1;
		table = build(p.b, n, m, "weighted");
		check_quotas(p.b, n, m, table);
		free(table);
		pool_fini(&p);
	}
}

static void
test_maglev_order_independent(void **state)
{
	static const uint32_t sizes[] = {2, 10, 100, 1000};
	uint64_t rng = 7;

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = sizes[s];
		struct pool p;
		uint16_t *ref;

		pool_init(&p, n);
		for (uint32_t i = 0; i < n; i++)
			p.b[i].weight = 1 + (uint32_t)(rng_next(&rng) % 50);
		ref = build(p.b, n, M_DEFAULT, "order");
		for (int k = 0; k < (n >= 1000 ? 3 : 8); k++) {
			uint16_t *t;

			shuffle(p.b, n, &rng);
			t = build(p.b, n, M_DEFAULT, "order");
			assert_memory_equal(ref, t, sizeof(*t) * M_DEFAULT);
			free(t);
		}
		free(ref);
		pool_fini(&p);
	}
}

/* Two builds from the same input agree byte for byte, and match a pinned digest. */
static void
test_maglev_repeatable(void **state)
{
	static const char *const names[] = {"alpha", "bravo", "charlie", "delta", "echo"};
	struct lb_maglev_backend b[5];
	uint16_t *t1, *t2;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a offset basis */

	(void)state;
	for (uint16_t i = 0; i < 5; i++) {
		b[i].identity = names[i];
		b[i].identity_len = strlen(names[i]);
		b[i].weight = 1u + i;
		b[i].id = i;
	}
	t1 = build(b, 5, M_SMALL, "spillway");
	t2 = build(b, 5, M_SMALL, "spillway");
	assert_memory_equal(t1, t2, sizeof(*t1) * M_SMALL);
	for (uint32_t s = 0; s < M_SMALL; s++) {
		h = (h ^ (t1[s] & 0xff)) * 0x100000001b3ULL;
		h = (h ^ (t1[s] >> 8)) * 0x100000001b3ULL;
	}
	/*
	 * Instances must agree on every machine and release: if this digest
	 * changes, tables change for every deployment, so do it on purpose.
	 */
	assert_int_equal(h, 0x62043b56e7ab3dcfULL);
	free(t1);
	free(t2);
}

static void
test_maglev_seed_changes_table(void **state)
{
	struct pool p;
	uint16_t *t1, *t2;
	uint32_t differ = 0;

	(void)state;
	pool_init(&p, 10);
	t1 = build(p.b, 10, M_DEFAULT, "seed-one");
	t2 = build(p.b, 10, M_DEFAULT, "seed-two");
	for (uint32_t s = 0; s < M_DEFAULT; s++)
		differ += t1[s] != t2[s];
	/* Unrelated permutations: about 9/10 of the slots differ. */
	assert_true(differ > M_DEFAULT / 2);
	free(t1);
	free(t2);
	pool_fini(&p);
}

/*
 * Disruption bound. Removing one of N backends must move its own M/N slots;
 * the Maglev fill also moves some survivors' slots, because every backend
 * after the removal point in a round can take a different slot and the
 * cascade propagates. The paper's consistent-hashing evaluation (Figs. 8-9)
 * shows this extra churn is small and shrinks as M/N grows. Measured here
 * (M = 65537, 10 choices of the removed backend; bench_maglev prints it):
 * survivors' slots changed, mean/max, N=10: 0.24/0.28%, N=100: 0.57/0.59%,
 * N=1000: 0.58/0.63%; adding one: 0.21%, 0.59%, 0.61%. For N >= 100 that is
 * 0.6-6x the removed share, so total churn stays within a few times the 1/N
 * minimum. We assert 1.5% (2.4x the worst measured), which still fails
 * loudly for a fill that leaks order dependence (hash mod N would change
 * about (N-1)/N of the slots).
 */
#define DISRUPTION_MAX 0.015

static const struct size_case disruption_cases[] = {
        {"test_maglev_disruption_remove_one N=10 M=65537", 10, M_DEFAULT},
        {"test_maglev_disruption_remove_one N=100 M=65537", 100, M_DEFAULT},
        {"test_maglev_disruption_remove_one N=1000 M=65537", 1000, M_DEFAULT},
};

static void
test_maglev_disruption_remove_one(void **state)
{
	const struct size_case *c = *state;
	struct pool p;
	struct lb_maglev_backend *less;
	uint16_t *before, *after;

	pool_init(&p, c->n);
	less = malloc(sizeof(*less) * c->n);
	assert_non_null(less);
	before = build(p.b, c->n, c->m, "disrupt");
	for (uint32_t t = 0; t < 3; t++) {
		uint32_t gone = t * (c->n - 1) / 2; /* first, middle, last in id order */
		uint32_t own = 0, changed = 0;

		memcpy(less, p.b, sizeof(*less) * gone);
		memcpy(less + gone, p.b + gone + 1, sizeof(*less) * (c->n - gone - 1));
		after = build(less, c->n - 1, c->m, "disrupt");
		for (uint32_t s = 0; s < c->m; s++) {
			assert_int_not_equal(after[s], gone);
			if (before[s] == gone)
				own++;
			else if (after[s] != before[s])
				changed++;
		}
		assert_true((double)changed <= DISRUPTION_MAX * (c->m - own));
		free(after);
	}
	free(before);
	free(less);
	pool_fini(&p);
}

/* Adding a backend: it takes its share and survivors mostly keep theirs. */
static void
test_maglev_disruption_add_one(void **state)
{
	static const uint32_t sizes[] = {10, 100, 1000};

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t n = sizes[k];
		struct pool p;
		uint16_t *before, *after;
		uint32_t taken = 0, changed = 0;

		pool_init(&p, n + 1);
		before = build(p.b, n, M_DEFAULT, "grow");
		after = build(p.b, n + 1, M_DEFAULT, "grow");
		for (uint32_t s = 0; s < M_DEFAULT; s++) {
			if (after[s] == n)
				taken++;
			else if (after[s] != before[s])
				changed++;
		}
		assert_in_range(taken, M_DEFAULT / (n + 1), M_DEFAULT / (n + 1) + 1);
		assert_true((double)changed <= DISRUPTION_MAX * (M_DEFAULT - taken));
		free(before);
		free(after);
		pool_fini(&p);
	}
}

/* A weight-0 backend never appears, and the table is as if it were absent. */
static void
test_maglev_zero_weight_excluded(void **state)
{
	struct pool p;
	uint16_t *with, *without;

	(void)state;
	pool_init(&p, 8);
	p.b[3].weight = 0;
	with = build(p.b, 8, M_DEFAULT, "zero");
	memmove(&p.b[3], &p.b[4], sizeof(p.b[0]) * 4);
	without = build(p.b, 7, M_DEFAULT, "zero");
	for (uint32_t s = 0; s < M_DEFAULT; s++)
		assert_int_not_equal(with[s], 3);
	assert_memory_equal(with, without, sizeof(*with) * M_DEFAULT);
	free(with);
	free(without);
	pool_fini(&p);
}

static void
test_maglev_all_zero_is_empty(void **state)
{
	struct pool p;
	uint16_t *table;

	(void)state;
	pool_init(&p, 4);
	for (uint32_t i = 0; i < 4; i++)
		p.b[i].weight = 0;
	table = build(p.b, 4, M_SMALL, "empty");
	for (uint32_t s = 0; s < M_SMALL; s++)
		assert_int_equal(table[s], LB_BACKEND_NONE);
	free(table);
	table = build(NULL, 0, M_SMALL, "empty");
	for (uint32_t s = 0; s < M_SMALL; s++)
		assert_int_equal(table[s], LB_BACKEND_NONE);
	free(table);
	pool_fini(&p);
}

static void
test_maglev_invalid_arguments(void **state)
{
	static const uint32_t bad_sizes[] = {0, 1, 2, 4, 65536, 65535, 255, 1048575};
	struct lb_hash_key key;
	struct pool p;
	uint16_t table[M_SMALL];
	uint16_t pattern[M_SMALL];
	uint16_t *big;

	(void)state;
	test_key(&key, "invalid");
	pool_init(&p, 4);
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		uint16_t *t = malloc(sizeof(*t) * (bad_sizes[i] ? bad_sizes[i] : 1));

		assert_non_null(t);
		assert_int_equal(lb_maglev_build(&key, p.b, 4, bad_sizes[i], t), -EINVAL);
		free(t);
	}

	/* Duplicate identity (another id, even weight 0): rejected, table untouched. */
	memset(pattern, 0xab, sizeof(pattern));
	memcpy(table, pattern, sizeof(table));
	p.b[2].identity = p.b[0].identity;
	p.b[2].identity_len = p.b[0].identity_len;
	p.b[2].weight = 0;
	assert_int_equal(lb_maglev_build(&key, p.b, 4, M_SMALL, table), -EINVAL);
	assert_memory_equal(table, pattern, sizeof(table));
	/* A proper prefix is a different identity. */
	p.b[2].identity_len = p.b[0].identity_len - 1;
	assert_int_equal(lb_maglev_build(&key, p.b, 4, M_SMALL, table), 0);
	pool_fini(&p);

	/* 65535 backends is the limit; one more is rejected before any work. */
	pool_init(&p, 65536);
	big = malloc(sizeof(*big) * 131071);

	assert_non_null(big);
	assert_int_equal(lb_maglev_build(&key, p.b, 65536, 131071, big), -EINVAL);
	assert_int_equal(lb_maglev_build(&key, p.b, 65535, 131071, big), 0);
	free(big);
	pool_fini(&p);
}

/*
 * A straightforward reference builder, written from the specification rather
 * than from the optimised code: no bitmap, no probe groups, no tail scan, no
 * equal-weight shortcut, rounds by division. Backends sorted by identity; each
 * gets offset = h1 mod M and skip = h2 mod (M - 1) + 1 from the tweaked keys;
 * quotas by largest remainder (ties to the earlier identity); backend i takes
 * its k-th turn in round floor(k Q / q_i); within a round, backends go in the
 * order of their previous turn (round 0: identity order); a turn walks the
 * backend's permutation from where it stopped to the first free slot.
 */
#define REF_OFFSET_K0 0x6d61676c65762d6fULL /* "maglev-o" */
#define REF_OFFSET_K1 0x66667365742d6831ULL /* "ffset-h1" */
#define REF_SKIP_K0 0x6d61676c65762d73ULL   /* "maglev-s" */
#define REF_SKIP_K1 0x6b69702d2d2d6832ULL   /* "kip---h2" */

static int
ref_cmp_identity(const void *pa, const void *pb)
{
	const struct lb_maglev_backend *a = *(const struct lb_maglev_backend *const *)pa;
	const struct lb_maglev_backend *b = *(const struct lb_maglev_backend *const *)pb;
	size_t len = a->identity_len < b->identity_len ? a->identity_len : b->identity_len;
	int c = len ? memcmp(a->identity, b->identity, len) : 0;

	if (c)
		return c;
	return (a->identity_len > b->identity_len) - (a->identity_len < b->identity_len);
}

static void
ref_build(const struct lb_hash_key *key, const struct lb_maglev_backend *backends, uint32_t n,
          uint32_t m, uint16_t *table)
{
	const struct lb_maglev_backend **act = calloc(n ? n : 1, sizeof(*act));
	uint64_t *off = calloc(n ? n : 1, sizeof(*off)), *skip = calloc(n ? n : 1, sizeof(*skip));
	uint64_t *pos = calloc(n ? n : 1, sizeof(*pos)), *rem = calloc(n ? n : 1, sizeof(*rem));
	uint32_t *quota = calloc(n ? n : 1, sizeof(*quota)),
	         *done = calloc(n ? n : 1, sizeof(*done));
	uint8_t *taken = calloc(m, 1), *bonus = calloc(n ? n : 1, 1);
	struct lb_hash_key ko = {key->k0 ^ REF_OFFSET_K0, key->k1 ^ REF_OFFSET_K1};
	struct lb_hash_key ks = {key->k0 ^ REF_SKIP_K0, key->k1 ^ REF_SKIP_K1};
	uint32_t na = 0, qmax = 0, given = 0;
	uint64_t total = 0;
	uint32_t **rounds, *rlen;

	assert_non_null(act);
	assert_non_null(off);
	assert_non_null(skip);
	assert_non_null(pos);
	assert_non_null(rem);
	assert_non_null(quota);
	assert_non_null(done);
	assert_non_null(taken);
	assert_non_null(bonus);
	for (uint32_t i = 0; i < n; i++)
		if (backends[i].weight)
			act[na++] = &backends[i];
	qsort(act, na, sizeof(*act), ref_cmp_identity);
	for (uint32_t s = 0; s < m; s++)
		table[s] = LB_BACKEND_NONE;
	for (uint32_t i = 0; i < na; i++) {
		off[i] = lb_hash_bytes(&ko, act[i]->identity, act[i]->identity_len) % m;
		skip[i] = lb_hash_bytes(&ks, act[i]->identity, act[i]->identity_len) % (m - 1) + 1;
		pos[i] = off[i];
		total += act[i]->weight;
	}
	for (uint32_t i = 0; i < na; i++) {
		quota[i] = (uint32_t)((uint64_t)m * act[i]->weight / total);
		rem[i] = (uint64_t)m * act[i]->weight % total;
		given += quota[i];
	}
	/* The m - given largest remainders get one more; ties go to the earlier identity. */
	for (uint32_t k = given; k < m; k++) {
		uint32_t best = UINT32_MAX;

		for (uint32_t i = 0; i < na; i++)
			if (!bonus[i] && (best == UINT32_MAX || rem[i] > rem[best]))
				best = i;
		bonus[best] = 1;
		quota[best]++;
	}
	for (uint32_t i = 0; i < na; i++)
		qmax = quota[i] > qmax ? quota[i] : qmax;
	rounds = calloc(qmax ? qmax : 1, sizeof(*rounds));
	rlen = calloc(qmax ? qmax : 1, sizeof(*rlen));
	assert_non_null(rounds);
	assert_non_null(rlen);
	for (uint32_t r = 0; r < qmax; r++) {
		rounds[r] = malloc(sizeof(**rounds) * (na ? na : 1));
		assert_non_null(rounds[r]);
	}
	for (uint32_t i = 0; i < na; i++)
		if (quota[i])
			rounds[0][rlen[0]++] = i;
	for (uint32_t r = 0; r < qmax; r++) {
		for (uint32_t j = 0; j < rlen[r]; j++) {
			uint32_t i = rounds[r][j];

			while (taken[pos[i]])
				pos[i] = (pos[i] + skip[i]) % m;
			taken[pos[i]] = 1;
			table[pos[i]] = act[i]->id;
			pos[i] = (pos[i] + skip[i]) % m;
			if (++done[i] < quota[i]) {
				uint32_t nr = (uint32_t)((uint64_t)done[i] * qmax / quota[i]);

				assert_true(nr > r && nr < qmax);
				rounds[nr][rlen[nr]++] = i;
			}
		}
	}
	for (uint32_t r = 0; r < qmax; r++)
		free(rounds[r]);
	free(rounds);
	free(rlen);
	free(act);
	free(off);
	free(skip);
	free(pos);
	free(rem);
	free(quota);
	free(done);
	free(taken);
	free(bonus);
}

/*
 * The builder against the reference on random inputs: N from 1 to a few
 * thousand, table sizes from tiny (N > M, most quotas 0) to 655373, weights
 * equal, small, skewed, full-range and partly zero, backends in random order.
 * Tables must agree slot for slot.
 */
static void
test_maglev_matches_reference(void **state)
{
	static const uint32_t sizes[] = {3, 5, 7, 13, 251, 1009, 4099, 65537, 655373};
	/* The probe width under test: 4 (C), 8 (AVX2) or 16 (AVX-512F). */
	const unsigned int width = *(const unsigned int *)*state;
	uint64_t rng = 2026;
	uint32_t cases = 0;

	for (int set = 0; set < 150; set++) {
		uint32_t m = sizes[rng_next(&rng) % (sizeof(sizes) / sizeof(sizes[0]))];
		uint32_t nmax = m < 100 ? 20 : 3000;
		uint32_t n = 1 + (uint32_t)(rng_next(&rng) % (rng_next(&rng) % 2 ? 30 : nmax));
		uint32_t mode = (uint32_t)(rng_next(&rng) % 6);
		struct lb_hash_key key;
		char seed[32];
		struct pool p;
		uint16_t *got, *want;

		if (m == 655373 && cases % 4)
			m = 65537; /* keep the run short: a few of the large ones */
		if (n > 65535)
			n = 65535;
		pool_init(&p, n);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t r = rng_next(&rng);

			switch (mode) {
			case 0: /* equal */
				p.b[i].weight = 1;
				break;
			case 1: /* equal but large */
				p.b[i].weight = 1000;
				break;
			case 2: /* small */
				p.b[i].weight = 1 + (uint32_t)(r % 10);
				break;
			case 3: /* full range */
				p.b[i].weight = 1 + (uint32_t)(r % UINT32_MAX);
				break;
			case 4: /* one heavy */
				p.b[i].weight = i == n / 2 ? 100000 : 1 + (uint32_t)(r % 3);
				break;
			default: /* some excluded */
				p.b[i].weight = (uint32_t)(r % 4) * 7;
				break;
			}
		}
		if (set % 5 == 4) {
			/*
			 * Binary identities: every string over {0x00, 0x01, 0xff} in
			 * length order (bijective base 3), so empty, zero bytes and
			 * proper prefixes ("\0" before "\0\0") all occur.
			 */
			static const unsigned char alpha[3] = {0x00, 0x01, 0xff};

			for (uint32_t i = 0; i < n; i++) {
				uint32_t v = i, len = 0;

				while (v) {
					v--;
					p.names[i][len++] = (char)alpha[v % 3];
					v /= 3;
				}
				p.b[i].identity_len = len;
			}
		}
		shuffle(p.b, n, &rng);
		snprintf(seed, sizeof(seed), "ref-%d", set);
		test_key(&key, seed);
		got = malloc(sizeof(*got) * m);
		want = malloc(sizeof(*want) * m);
		assert_non_null(got);
		assert_non_null(want);
		ref_build(&key, p.b, n, m, want);
		lb_maglev_probe_width_cap(width);
		assert_int_equal(lb_maglev_build(&key, p.b, n, m, got), 0);
		lb_maglev_probe_width_cap(0);
		if (memcmp(got, want, sizeof(*got) * m) != 0)
			fail_msg("set %d: N=%u M=%u weights mode %u, probe width %u: differs from "
			         "the reference",
			         set, n, m, mode, width);
		free(got);
		free(want);
		pool_fini(&p);
		cases++;
	}
}

static int
slow_is_prime(uint32_t n)
{
	if (n < 2)
		return 0;
	for (uint32_t d = 2; (uint64_t)d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

static void
test_maglev_is_prime(void **state)
{
	static const uint32_t primes[] = {2, 3, 5, 251, 65537, 655373, 1048573, 4294967291u};
	/* Carmichael numbers and strong pseudoprimes to small bases. */
	static const uint32_t composites[] = {0,       1,        4,           65536,      655371,
	                                      1048575, 561,      1105,        41041,      2047,
	                                      1373653, 25326001, 3215031751u, 4294967295u};
	uint64_t rng = 99;

	(void)state;
	for (size_t i = 0; i < sizeof(primes) / sizeof(primes[0]); i++)
		assert_true(lb_is_prime(primes[i]));
	for (size_t i = 0; i < sizeof(composites) / sizeof(composites[0]); i++)
		assert_false(lb_is_prime(composites[i]));
	for (uint32_t n = 0; n < 200000; n++)
		assert_int_equal(lb_is_prime(n), slow_is_prime(n));
	for (int i = 0; i < 300; i++) {
		uint32_t n = (uint32_t)rng_next(&rng) | 1;

		assert_int_equal(lb_is_prime(n), slow_is_prime(n));
	}
}

/*
 * Without arguments: every case, with the reference comparison at the C probe
 * width. --isa=avx2 and --isa=avx512f: the reference comparison at the vector
 * widths (8 and 16 candidates per probe), each a meson test of its own that is
 * reported as skipped (77) on a CPU without the instructions, so a width the
 * builder would silently narrow is never counted as tested.
 */
int
main(int argc, char **argv)
{
	static const unsigned int w4 = 4, w8 = 8, w16 = 16;
	const char *isa = isa_arg(argc, argv);
	struct CMUnitTest tests[32];
	size_t nt = 0;

	for (size_t i = 0; i < sizeof(equal_cases) / sizeof(equal_cases[0]); i++)
		tests[nt++] = (struct CMUnitTest){
		        .name = equal_cases[i].name,
		        .test_func = test_maglev_equal_weights_balanced,
		        .initial_state = (void *)&equal_cases[i],
		};
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_weighted_quotas);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_order_independent);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_repeatable);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_seed_changes_table);
	for (size_t i = 0; i < sizeof(disruption_cases) / sizeof(disruption_cases[0]); i++)
		tests[nt++] = (struct CMUnitTest){
		        .name = disruption_cases[i].name,
		        .test_func = test_maglev_disruption_remove_one,
		        .initial_state = (void *)&disruption_cases[i],
		};
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_disruption_add_one);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_zero_weight_excluded);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_all_zero_is_empty);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_invalid_arguments);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test_prestate(test_maglev_matches_reference,
	                                                           (void *)&w4);
	tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_maglev_is_prime);
	if (isa && strcmp(isa, "avx2") == 0) {
		const struct CMUnitTest vec[] = {
		        cmocka_unit_test_prestate(test_maglev_matches_reference, (void *)&w8),
		};

		if (isa_skip(isa, "the Maglev fill's eight-wide probe (AVX2 gather)"))
			return SPW_TEST_SKIP;
		return cmocka_run_group_tests_name("maglev_avx2", vec, NULL, NULL);
	}
	if (isa && strcmp(isa, "avx512f") == 0) {
		const struct CMUnitTest vec[] = {
		        cmocka_unit_test_prestate(test_maglev_matches_reference, (void *)&w16),
		};

		if (isa_skip(isa, "the Maglev fill's sixteen-wide probe and tail scan (AVX-512)"))
			return SPW_TEST_SKIP;
		if (!isa_present("avx512dq"))
			printf("note: no AVX-512DQ: the AVX-512 tail scan is not exercised\n");
		return cmocka_run_group_tests_name("maglev_avx512", vec, NULL, NULL);
	}
	if (isa) {
		fprintf(stderr, "test_maglev: unknown --isa=%s\n", isa);
		return 2;
	}
	return _cmocka_run_group_tests("maglev", tests, nt, NULL, NULL);
}
