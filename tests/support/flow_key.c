/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "flow_key.h"

void
flow_key_make(struct lb_flow_key *k, uint32_t i)
{
	memset(k, 0, sizeof(*k));
	k->src.b[0] = 10;
	k->src.b[1] = (uint8_t)(i >> 16);
	k->src.b[2] = (uint8_t)(i >> 8);
	k->src.b[3] = (uint8_t)i;
	k->sport = (uint16_t)(1024 + i % 50000);
	k->dst.b[0] = 192;
	k->dst.b[2] = 2;
	k->dst.b[3] = 10;
	k->dport = 80;
	k->proto = 6;
	k->af = LB_AF_INET;
}
