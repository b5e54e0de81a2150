/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * VLAN tag insertion into a frame whose Ethernet header is already written:
 * the tags go between the MAC addresses and the ethertype, in the first
 * segment's headroom. Per-packet, only for tagged replies and encap.vlan.
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dataplane/l2.h"

int
lb_vlan_push(struct rte_mbuf *m, const struct lb_vlan_tags *t)
{
	uint8_t *p;

	if (t->len == 0)
		return 0;
	p = (uint8_t *)rte_pktmbuf_prepend(m, t->len);
	if (p == NULL)
		return -ENOSPC;
	memmove(p, p + t->len, 12); /* the MAC addresses move to the new front */
	memcpy(p + 12, t->b, t->len);
	return 0;
}
