/* SPDX-License-Identifier: BSD-3-Clause */
/* Flow table creation and whole-table walks; the per-packet calls are inline. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dataplane/flow_table.h"

#define HUGE_2M ((size_t)2 << 20) /* x86-64 transparent huge page size */

struct lb_flow_table *
lb_flow_table_create(uint32_t capacity)
{
	struct lb_flow_table *ft;
	size_t size, align;
	uint32_t n = 1;

	if (capacity == 0 || capacity > (1u << 30)) {
		errno = EINVAL;
		return NULL;
	}
	while ((uint64_t)n * LB_FLOW_WAYS < capacity)
		n <<= 1;
	ft = calloc(1, sizeof(*ft));
	if (ft == NULL)
		return NULL;
	size = (size_t)n * sizeof(struct lb_flow_bucket);
	/*
	 * A big table is a random walk over many pages: with 4 KiB pages nearly
	 * every lookup of a large table also misses the TLB. Align it to 2 MiB and
	 * ask for transparent huge pages (a hint; without THP it stays 4 KiB), then
	 * touch it all now, so no page fault happens on the data path.
	 */
	align = size >= HUGE_2M ? HUGE_2M : 64;
	ft->buckets = aligned_alloc(align, (size + align - 1) / align * align);
	if (ft->buckets == NULL) {
		free(ft);
		errno = ENOMEM;
		return NULL;
	}
	if (align == HUGE_2M)
		(void)madvise(ft->buckets, size, MADV_HUGEPAGE);
	memset(ft->buckets, 0, size);
	ft->n_buckets = n;
	ft->mask = n - 1;
	return ft;
}

void
lb_flow_table_free(struct lb_flow_table *ft)
{
	if (ft == NULL)
		return;
	free(ft->buckets);
	free(ft);
}

void
lb_flow_table_sweep(struct lb_flow_table *ft, uint32_t now)
{
	uint32_t moved = now - ft->clock, n;

	ft->clock = now;
	if (moved >= LB_FLOW_CLOCK_JUMP) {
		/* Every entry was written at or before the previous call with a
		 * lifetime below the jump: all have expired. */
		memset(ft->buckets, 0, (size_t)ft->n_buckets * sizeof(struct lb_flow_bucket));
		return;
	}
	n = moved < LB_FLOW_SWEEP_MAX ? moved : LB_FLOW_SWEEP_MAX;
	if (n > ft->n_buckets)
		n = ft->n_buckets;
	for (uint32_t i = 0; i < n; i++) {
		struct lb_flow_bucket *b = &ft->buckets[ft->sweep];

		for (int j = 0; j < LB_FLOW_WAYS; j++)
			if (b->e[j].sig != 0 && lb_flow_expired(&b->e[j], now))
				b->e[j].sig = 0;
		ft->sweep = (ft->sweep + 1) & ft->mask;
	}
}

uint32_t
lb_flow_table_count(const struct lb_flow_table *ft, uint32_t now)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ft->n_buckets; i++)
		for (int j = 0; j < LB_FLOW_WAYS; j++) {
			const struct lb_flow_entry *e = &ft->buckets[i].e[j];

			if (e->sig != 0 && !lb_flow_expired(e, now))
				n++;
		}
	return n;
}
