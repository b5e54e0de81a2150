/* SPDX-License-Identifier: BSD-3-Clause */
/* Stub: being written. */
#include <string.h>
#include "parse.h"

int
lb_parse(const uint8_t *data, uint32_t len, struct lb_pkt_info *info)
{
	(void)data;
	(void)len;
	memset(info, 0, sizeof(*info));
	return LB_DROP_ETH_TRUNC;
}
