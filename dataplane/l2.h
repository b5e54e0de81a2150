/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Ethernet layer around the pipeline: which frames are addressed to us
 * (the receiving port's unicast MAC, or a group address), and the VLAN tags
 * that generated replies keep and forwarded frames carry (encap.vlan).
 * Inline helpers for the per-packet path; lb_vlan_push() is out of line.
 */
#ifndef LB_L2_H
#define LB_L2_H

#include <stdint.h>
#include <string.h>

#include <rte_mbuf.h>

#include "dataplane/snapshot.h"

#define LB_VLAN_TAG_LEN 4   /* TPID + TCI */
#define LB_VLAN_MAX_TAGS 2  /* what the parser accepts */
#define LB_VLAN_TPID 0x8100 /* 802.1Q, the tag of encap.vlan = id */

/* VLAN tags as on the wire (TPID, TCI per tag, outermost first). */
struct lb_vlan_tags {
	uint8_t len; /* bytes: 0, 4 or 8 */
	uint8_t b[LB_VLAN_TAG_LEN * LB_VLAN_MAX_TAGS];
};

/* How a frame's destination MAC relates to the receiving port. */
enum lb_mac_class {
	LB_MAC_OURS = 0, /* the port's unicast MAC */
	LB_MAC_GROUP,    /* broadcast or multicast (I/G bit set) */
	LB_MAC_OTHER,    /* another host's unicast MAC */
};

/** Classify the destination MAC (the frame's first 6 bytes) against port_mac. */
static inline enum lb_mac_class
lb_mac_classify(const uint8_t *frame, const uint8_t port_mac[6])
{
	uint32_t a, b;
	uint16_t c, d;

	memcpy(&a, frame, 4);
	memcpy(&b, port_mac, 4);
	memcpy(&c, frame + 4, 2);
	memcpy(&d, port_mac + 4, 2);
	if (a == b && c == d)
		return LB_MAC_OURS;
	return (frame[0] & 1) ? LB_MAC_GROUP : LB_MAC_OTHER;
}

/**
 * The tags of a parsed frame: l2_len is 14 plus 4 per tag, and the tags are
 * bytes 12 to l2_len - 2 (after the MAC addresses, before the ethertype).
 */
static inline void
lb_vlan_tags_of(const uint8_t *frame, uint16_t l2_len, struct lb_vlan_tags *t)
{
	uint16_t n = (uint16_t)(l2_len - 14);

	t->len = n <= sizeof(t->b) ? (uint8_t)n : 0;
	memcpy(t->b, frame + 12, t->len);
}

/** The tags an encapsulated frame carries per conf->vlan, for a received frame. */
static inline void
lb_vlan_fwd_tags(const struct lb_encap_conf *conf, const uint8_t *frame, uint16_t l2_len,
                 struct lb_vlan_tags *t)
{
	if (conf->vlan == LB_VLAN_KEEP) {
		lb_vlan_tags_of(frame, l2_len, t);
	} else if (conf->vlan == LB_VLAN_FIXED) {
		t->len = LB_VLAN_TAG_LEN;
		t->b[0] = LB_VLAN_TPID >> 8;
		t->b[1] = LB_VLAN_TPID & 0xFF;
		t->b[2] = (uint8_t)(conf->vlan_id >> 8); /* PCP 0, DEI 0 */
		t->b[3] = (uint8_t)conf->vlan_id;
	} else {
		t->len = 0;
	}
}

/**
 * Insert the tags t after the MAC addresses of the Ethernet frame m starts
 * with (its ethertype then follows the last tag). Nothing to do if t is empty.
 *
 * @return 0, or -ENOSPC if the first segment has no headroom for them.
 */
int lb_vlan_push(struct rte_mbuf *m, const struct lb_vlan_tags *t);

#endif /* LB_L2_H */
