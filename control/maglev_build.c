/* SPDX-License-Identifier: BSD-3-Clause */
/* Stub: being written. */
#include <errno.h>
#include "maglev_build.h"
#include "../dataplane/snapshot.h"

int
lb_is_prime(uint32_t n)
{
	if (n < 2)
		return 0;
	for (uint32_t d = 2; (uint64_t)d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

int
lb_maglev_build(const struct lb_hash_key *key, const struct lb_maglev_backend *backends,
		uint32_t n, uint32_t table_size, uint16_t *table)
{
	(void)key;
	if (!lb_is_prime(table_size))
		return -EINVAL;
	for (uint32_t i = 0; i < table_size; i++)
		table[i] = n ? backends[i % n].id : LB_BACKEND_NONE;
	return 0;
}
