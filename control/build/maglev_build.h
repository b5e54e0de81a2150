/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Maglev table builder (Eisenbud et al., NSDI 2016, section 3.4), weighted.
 *
 * Runs in the control thread, never on a worker. A backend's permutation comes
 * only from its stable identity and the seed, and backends are sorted by
 * identity before the fill, so the same membership and seed give the same table
 * byte for byte whatever order the backends were added in.
 */
#ifndef LB_MAGLEV_BUILD_H
#define LB_MAGLEV_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "control/base/prime.h"
#include "control/build/maglev_fill.h"
#include "dataplane/hash.h"

struct lb_maglev_backend {
	const void *identity; /* stable identity bytes: configured name or address text */
	size_t identity_len;
	uint32_t weight; /* 0 = not in the table */
	uint16_t id;     /* value written into the table's slots */
};

/**
 * Fill table[0 .. table_size) with backend ids.
 *
 * Each backend with weight w gets M*w/W slots rounded by the largest-remainder
 * method (so every count is within one slot of its exact share); with no
 * backend of non-zero weight every slot is LB_BACKEND_NONE.
 *
 * @param key  hash key derived from the configured seed
 * @param backends  in any order; not modified
 * @param table_size  M, a prime
 * @return 0; -EINVAL if table_size is not a prime >= 3 or n > 65535 or two
 *   backends share an identity; -ENOMEM.
 */
int lb_maglev_build(const struct lb_hash_key *key, const struct lb_maglev_backend *backends,
                    uint32_t n, uint32_t table_size, uint16_t *table);

#endif /* LB_MAGLEV_BUILD_H */
