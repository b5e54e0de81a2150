/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fragment table creation and freeing, done once per worker at start-up (the
 * per-packet calls are in frag_table.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "dataplane/frag_table.h"

struct lb_frag_table *
lb_frag_table_create(uint32_t capacity, uint32_t timeout)
{
	struct lb_frag_table *t;
	uint32_t n = 1;

	if (capacity == 0 || capacity > (1u << 24) || timeout == 0 ||
	    timeout > LB_FRAG_MAX_TIMEOUT) {
		errno = EINVAL;
		return NULL;
	}
	while ((uint64_t)n * LB_FRAG_WAYS < capacity)
		n <<= 1;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->e = calloc((size_t)n * LB_FRAG_WAYS, sizeof(*t->e));
	if (t->e == NULL) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->mask = n - 1;
	t->timeout = timeout;
	return t;
}

void
lb_frag_table_free(struct lb_frag_table *t)
{
	if (t == NULL)
		return;
	free(t->e);
	free(t);
}
