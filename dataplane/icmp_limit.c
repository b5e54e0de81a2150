/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Generated-ICMP rules: the token bucket's set-up and the test of whether a
 * packet may be answered with an ICMP error at all. Called only for packets
 * that would get one (too big for the tunnel), so kept out of line.
 */
#include <errno.h>

#include "dataplane/icmp_limit.h"

int
lb_icmp_limit_init(struct lb_icmp_limit *l, uint32_t rate_per_s, uint32_t burst,
                   uint64_t ticks_per_s, uint32_t now)
{
	if (rate_per_s == 0 || burst == 0 || ticks_per_s == 0 || rate_per_s > LB_ICMP_MAX_RATE ||
	    burst > LB_ICMP_MAX_BURST || ticks_per_s > UINT32_MAX)
		return -EINVAL;
	l->cost = ticks_per_s;
	l->cap = (uint64_t)burst * ticks_per_s;
	l->credit = l->cap;
	l->rate = rate_per_s;
	l->last = now;
	return 0;
}

/* IPv4 224/4 and 240/4 (multicast, reserved, limited broadcast); IPv6 ff00::/8. */
static bool
multicast_dst(const struct lb_pkt_info *info)
{
	if (info->key.af == LB_AF_INET)
		return info->key.dst.b[0] >= 224;
	return info->key.dst.b[0] == 0xFF;
}

bool
lb_icmp_may_answer(const uint8_t *eth_dst, const struct lb_pkt_info *info)
{
	if (info->flags & (LB_PKT_ICMP_ERROR | LB_PKT_FRAG_LATER))
		return false;
	if (eth_dst[0] & 0x01) /* group bit: multicast or broadcast frame */
		return false;
	return !multicast_dst(info) && !lb_icmp_martian_src(&info->key);
}
