/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of the drop reasons, as they appear in stats JSON. */
#include <stddef.h>

#include "dataplane/counters.h"

static const char *const drop_names[LB_DROP__COUNT] = {
        [LB_DROP_ETH_TRUNC] = "eth_trunc",
        [LB_DROP_IP4_TRUNC] = "ip4_trunc",
        [LB_DROP_IP4_MALFORMED] = "ip4_malformed",
        [LB_DROP_IP6_TRUNC] = "ip6_trunc",
        [LB_DROP_IP6_MALFORMED] = "ip6_malformed",
        [LB_DROP_L4_TRUNC] = "l4_trunc",
        [LB_DROP_ICMP_TRUNC] = "icmp_trunc",
        [LB_DROP_ICMP_MALFORMED] = "icmp_malformed",
        [LB_DROP_NO_VIP] = "no_vip",
        [LB_DROP_NO_BACKEND] = "no_backend",
        [LB_DROP_TOO_BIG] = "too_big",
        [LB_DROP_NO_HEADROOM] = "no_headroom",
        [LB_DROP_TX_FULL] = "tx_full",
        [LB_DROP_MARTIAN_SRC] = "martian_src",
        [LB_DROP_ICMP_LIMITED] = "icmp_limited",
        [LB_DROP_FRAG_FAILED] = "frag_failed",
        [LB_DROP_NOT_OUR_MAC] = "not_our_mac",
};

const char *
lb_drop_reason_name(unsigned int reason)
{
	if (reason == 0 || reason >= LB_DROP__COUNT)
		return NULL;
	return drop_names[reason];
}
