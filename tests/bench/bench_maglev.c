/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark for lb_maglev_build: build time (median of repeated runs) at the
 * sizes control uses, and the disruption caused by removing one backend, which
 * is the figure the Maglev paper trades against table size (section 5.3).
 * Times are the median of RUNS builds and their minimum (the machine is
 * shared: compare builders by interleaving their runs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control/build/maglev_build.h"
#include "dataplane/hash.h"
#include "dataplane/snapshot.h"
#include "../support/median.h"
#include "bench_json.h"

#define RUNS 21
#define NAME_LEN 32

struct pool {
	struct lb_maglev_backend *b;
	char (*names)[NAME_LEN];
	uint32_t n;
};

static int
pool_init(struct pool *p, uint32_t n)
{
	p->n = n;
	p->b = calloc(n, sizeof(*p->b));
	p->names = calloc(n, sizeof(*p->names));
	if (!p->b || !p->names)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int len = snprintf(p->names[i], NAME_LEN, "10.%u.%u.%u:8080", (i >> 16) & 255,
		                   (i >> 8) & 255, i & 255);

		p->b[i].identity = p->names[i];
		p->b[i].identity_len = (size_t)len;
		p->b[i].weight = 1;
		p->b[i].id = (uint16_t)i;
	}
	return 0;
}

static void
pool_fini(struct pool *p)
{
	free(p->b);
	free(p->names);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
bench_build(const struct lb_hash_key *key, uint32_t n, uint32_t m)
{
	struct pool p = {0};
	uint16_t *table = malloc(sizeof(*table) * m);
	double t[RUNS];
	int ret = -ENOMEM;

	if (!table || pool_init(&p, n) < 0)
		goto out;
	/* One untimed warm-up run. */
	ret = lb_maglev_build(key, p.b, n, m, table);
	for (int r = 0; r < RUNS && ret == 0; r++) {
		double t0 = now_ms();

		ret = lb_maglev_build(key, p.b, n, m, table);
		t[r] = now_ms() - t0;
	}
	if (ret == 0) {
		double med = median(t, RUNS);

		printf("maglev_build N=%u M=%u: %.3f ms (median of %d, min %.3f, max %.3f)\n", n, m,
		       med, RUNS, t[0], t[RUNS - 1]);
		bj_add(json_pack("{s:s, s:i, s:i, s:f, s:f, s:f, s:i}", "name", "maglev_build", "n",
		                 (json_int_t)n, "m", (json_int_t)m, "ms", med, "min_ms", t[0],
		                 "max_ms", t[RUNS - 1], "runs", RUNS));
	}
out:
	pool_fini(&p);
	free(table);
	return ret;
}

/*
 * Remove one backend at a time (several choices) and count, among the slots
 * that did not belong to it, how many changed owner. The minimum is zero; the
 * paper's Figs. 8-9 measure the same thing.
 */
static int
bench_disruption(const struct lb_hash_key *key, uint32_t n, uint32_t m)
{
	enum { TRIALS = 10 };
	struct pool p = {0};
	struct lb_maglev_backend *less = malloc(sizeof(*less) * n);
	uint16_t *before = malloc(sizeof(*before) * m);
	uint16_t *after = malloc(sizeof(*after) * m);
	double sum = 0, worst = 0, worst_ratio = 0, add_frac = 0;
	int ret = -ENOMEM;

	if (!less || !before || !after || pool_init(&p, n) < 0)
		goto out;
	ret = lb_maglev_build(key, p.b, n, m, before);
	for (uint32_t t = 0; t < TRIALS && ret == 0; t++) {
		uint32_t gone = (uint32_t)((uint64_t)t * n / TRIALS);
		uint32_t own = 0, changed = 0;

		memcpy(less, p.b, sizeof(*less) * gone);
		memcpy(less + gone, p.b + gone + 1, sizeof(*less) * (n - gone - 1));
		ret = lb_maglev_build(key, less, n - 1, m, after);
		for (uint32_t s = 0; s < m; s++) {
			if (before[s] == gone)
				own++;
			else if (after[s] != before[s])
				changed++;
		}
		double frac = (double)changed / (m - own);

		sum += frac;
		if (frac > worst)
			worst = frac;
		if ((double)changed / own > worst_ratio)
			worst_ratio = (double)changed / own;
	}
	/* And the other direction: add backend n to the first n - 1. */
	if (ret == 0)
		ret = lb_maglev_build(key, p.b, n - 1, m, after);
	if (ret == 0) {
		uint32_t own = 0, changed = 0;

		for (uint32_t s = 0; s < m; s++) {
			if (before[s] == n - 1)
				own++;
			else if (after[s] != before[s])
				changed++;
		}
		add_frac = (double)changed / (m - own);
	}
	if (ret == 0)
		printf("maglev_disruption N=%u M=%u remove 1: survivors' slots changed mean %.4f%% "
		       "max %.4f%% (min possible 0; max extra = %.2fx the removed share, %d "
		       "trials); add 1: %.4f%%\n",
		       n, m, 100 * sum / TRIALS, 100 * worst, worst_ratio, TRIALS, 100 * add_frac);
	if (ret == 0)
		bj_add(json_pack("{s:s, s:i, s:i, s:f, s:f, s:f, s:i}", "name", "maglev_disruption",
		                 "n", (json_int_t)n, "m", (json_int_t)m, "remove_mean_pct",
		                 100 * sum / TRIALS, "remove_max_pct", 100 * worst, "add_pct",
		                 100 * add_frac, "trials", TRIALS));
out:
	pool_fini(&p);
	free(less);
	free(before);
	free(after);
	return ret;
}

int
main(int argc, char **argv)
{
	struct lb_hash_key key;
	int ret = 0;

	argc = bj_args(argc, argv);
	/* --probe-width 4|8|16: cap the fill's probe (4 = portable C path). */
	if (argc == 3 && strcmp(argv[1], "--probe-width") == 0) {
		lb_maglev_probe_width_cap((unsigned int)strtoul(argv[2], NULL, 10));
		argc = 1;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: bench_maglev [--json FILE] [--probe-width 4|8|16]\n");
		return 2;
	}

	lb_hash_key_from_seed(&key, "spillway-bench", strlen("spillway-bench"));
	/* Every N at both table sizes of docs/benchmarks.md (N = 5000 needs M >> N). */
	static const uint32_t sizes[] = {65537, 655373};
	static const uint32_t ns[] = {10, 100, 1000, 5000};

	for (unsigned int i = 0; i < 2; i++)
		for (unsigned int j = 0; j < 4; j++)
			ret |= bench_build(&key, ns[j], sizes[i]);
	ret |= bench_disruption(&key, 10, 65537);
	ret |= bench_disruption(&key, 100, 65537);
	ret |= bench_disruption(&key, 1000, 65537);
	if (ret) {
		fprintf(stderr, "bench_maglev: build failed (%d)\n", ret);
		return 1;
	}
	return bj_write("bench_maglev", 0) == 0 ? 0 : 1;
}
