/* SPDX-License-Identifier: BSD-3-Clause */
/* Flow table creation and whole-table walks; the per-packet calls are inline. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flow_table.h"

struct lb_flow_table *
lb_flow_table_create(uint32_t capacity)
{
	struct lb_flow_table *ft;
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
	ft->buckets = aligned_alloc(64, (size_t)n * sizeof(struct lb_flow_bucket));
	if (ft->buckets == NULL) {
		free(ft);
		errno = ENOMEM;
		return NULL;
	}
	memset(ft->buckets, 0, (size_t)n * sizeof(struct lb_flow_bucket));
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
