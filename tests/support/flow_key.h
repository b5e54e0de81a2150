/* SPDX-License-Identifier: BSD-3-Clause */
/* Numbered IPv4 TCP flow keys for tests and benchmarks. */
#ifndef SPW_TEST_FLOW_KEY_H
#define SPW_TEST_FLOW_KEY_H

#include <stdint.h>

#include "dataplane/hash.h"

/* Flow key number i: 10.0.0.0/8 + i : 1024 + i % 50000 -> 192.0.2.10:80, TCP. */
void flow_key_make(struct lb_flow_key *k, uint32_t i);

#endif /* SPW_TEST_FLOW_KEY_H */
