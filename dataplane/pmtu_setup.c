/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Path MTU table creation and freeing, done once at start-up (the data path in
 * pmtu.c allocates nothing). One table serves every worker.
 */
#include <stdlib.h>

#include "dataplane/pmtu.h"

struct lb_pmtu_table *
lb_pmtu_create(uint32_t age_ticks)
{
	struct lb_pmtu_table *t = calloc(1, sizeof(*t));

	if (t != NULL)
		t->age = age_ticks != 0 ? age_ticks : 1;
	return t;
}

void
lb_pmtu_free(struct lb_pmtu_table *t)
{
	free(t);
}
