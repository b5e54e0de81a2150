/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The immutable configuration snapshot that control builds and workers read.
 *
 * Control allocates a snapshot, fills it completely, and publishes it with one
 * store-release of a pointer; workers load that pointer once per burst and never
 * write through it. Everything a worker needs per packet is here: the VIP index,
 * the per-VIP Maglev tables, the backend registry, encapsulation parameters.
 */
#ifndef LB_SNAPSHOT_H
#define LB_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/hash.h"
#include "dataplane/override.h"

/* Limits shared by the config model and the per-core counter arrays. */
#define LB_MAX_VIPS 1024
#define LB_MAX_BACKENDS 16384   /* backend memberships over all VIPs */
#define LB_BACKEND_NONE 0xFFFFu /* Maglev slot / lookup result: no usable backend */
#define LB_MAGLEV_DEFAULT_SIZE 65537u
#define LB_MAGLEV_MAX_SIZE 1048573u /* largest prime below 2^20 */
/* All VIPs' Maglev tables together: VIPs x table_size slots of 2 bytes, at most
 * 2^28 slots (512 MiB for one set of tables). Snapshots alive at once share the
 * tables whose inputs did not change, so each adds only the tables it changed
 * (docs/reliability.md, "Memory of the Maglev tables"). */
#define LB_MAGLEV_MAX_SLOTS (1ull << 28)
#define LB_GUE_DEFAULT_PORT 6080

enum lb_key_mode {
	LB_KEY_5TUPLE = 0,
	LB_KEY_SRC_IP,
	LB_KEY_SRC_IP_DPORT,
};

/*
 * What the hot-key controller may do with a VIP's hot keys: spread their new
 * flows over replicas, only report them, not look for them at all (the
 * workers skip the VIP's packets in the sketch), or spray a UDP key's packets
 * (refused by the configuration until the data path does it).
 */
enum lb_hot_mode {
	LB_HOT_SPREAD = 0,
	LB_HOT_REPORT,
	LB_HOT_OFF,
	LB_HOT_PER_PACKET,
};

enum lb_encap_type {
	LB_ENCAP_IPIP = 0,
	LB_ENCAP_GUE,
};

enum lb_backend_state {
	LB_BACKEND_ACTIVE = 0,
	LB_BACKEND_DRAINING, /* keeps its flows, gets no new ones */
	LB_BACKEND_DOWN,     /* gets nothing; its flows are re-chosen */
};

/* What to do with a packet that is too big once encapsulated. */
enum lb_too_big_policy {
	LB_TOO_BIG_ICMP = 0, /* ICMP frag-needed / packet-too-big back to the client */
	LB_TOO_BIG_DROP,
};

/* Which VLAN tags an encapsulated frame carries (encap.vlan). */
enum lb_vlan_policy {
	LB_VLAN_STRIP = 0, /* none */
	LB_VLAN_KEEP,      /* the received frame's tags, as they were */
	LB_VLAN_FIXED,     /* one 802.1Q tag, VLAN id lb_encap_conf.vlan_id */
};

/*
 * One backend membership (a backend address in one VIP). Its id, the index in
 * lb_snapshot.backends, is stable for as long as the membership exists; when it
 * is removed the slot's gen changes, so flow-table entries pinned to the old
 * membership are recognised as stale.
 */
struct lb_backend {
	union lb_ip addr;
	uint8_t af;
	uint8_t state; /* enum lb_backend_state */
	uint16_t gen;  /* bumped each time the id is reused; 0 = slot unused */
	uint16_t vip_id;
	uint16_t pad;
	uint32_t weight;
};

struct lb_vip {
	union lb_ip addr;
	uint8_t af;
	uint8_t proto;         /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t port;         /* network byte order; 0 = any port */
	uint8_t key_mode;      /* enum lb_key_mode */
	uint8_t encap;         /* enum lb_encap_type */
	uint16_t id;           /* stable, indexes per-core VIP counters */
	uint32_t n_active;     /* backends present in the table */
	uint8_t hot_mode;      /* enum lb_hot_mode */
	uint8_t spray;         /* per_packet, and this snapshot overrides a key of it */
	const uint16_t *table; /* table_size backend ids, LB_BACKEND_NONE if empty;
	                        * may be shared with other snapshots (read-only) */
	uint64_t table_digest; /* of everything the table was built from (control only) */
};

/* Open-addressing VIP index: linear probing, power-of-two size, load <= 1/2. */
struct lb_vip_slot {
	union lb_ip addr;
	uint8_t af;
	uint8_t proto;
	uint16_t port;
	uint16_t vip; /* index into lb_snapshot.vips + 1; 0 = empty slot */
	uint16_t pad;
};

struct lb_encap_conf {
	union lb_ip src4; /* outer IPv4 source */
	union lb_ip src6; /* outer IPv6 source */
	bool has_src4;
	bool has_src6;
	uint8_t next_hop_mac[6];
	uint16_t mtu;      /* L3 MTU of the egress link */
	uint16_t gue_port; /* network byte order */
	uint8_t too_big;   /* enum lb_too_big_policy */
	uint8_t vlan;      /* enum lb_vlan_policy */
	uint16_t vlan_id;  /* 1-4094 for LB_VLAN_FIXED, else 0 */
};

struct lb_snapshot {
	uint64_t generation;
	struct lb_hash_key hkey;
	uint32_t table_size;    /* Maglev M, prime */
	uint64_t table_fastmod; /* Lemire's constant for x % table_size */
	struct lb_encap_conf encap;
	uint32_t n_vips;
	const struct lb_vip *vips;
	uint32_t vip_index_mask;
	const struct lb_vip_slot *vip_index;
	/* Fragment index: (af, addr, proto) -> VIP for packets without ports. */
	const struct lb_vip_slot *frag_index;
	uint32_t n_backends; /* size of the backends array (ids) */
	const struct lb_backend *backends;
	struct lb_override_table overrides; /* hot keys' replicas (empty: n == 0) */
};

/* Lemire, Kaser, Kurz: "Faster remainder by direct computation" (2019). */
static inline uint64_t
lb_fastmod_init(uint32_t d)
{
	return UINT64_MAX / d + 1;
}

static inline uint32_t
lb_fastmod(uint32_t a, uint64_t m, uint32_t d)
{
	uint64_t low = m * a;

	return (uint32_t)(((__uint128_t)low * d) >> 64);
}

static inline uint32_t
lb_vip_slot_hash(uint8_t af, const union lb_ip *addr, uint8_t proto, uint16_t port)
{
	uint64_t x = addr->q[0] ^ (addr->q[1] * 0x9E3779B97F4A7C15ULL);

	x ^= ((uint64_t)af << 56) ^ ((uint64_t)proto << 48) ^ ((uint64_t)port << 32);
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 29;
	return (uint32_t)x;
}

static inline const struct lb_vip *
lb_vip_index_find(const struct lb_snapshot *s, const struct lb_vip_slot *index, uint8_t af,
                  const union lb_ip *addr, uint8_t proto, uint16_t port)
{
	uint32_t i = lb_vip_slot_hash(af, addr, proto, port) & s->vip_index_mask;

	for (;;) {
		const struct lb_vip_slot *e = &index[i];

		if (e->vip == 0)
			return NULL;
		if (e->af == af && e->proto == proto && e->port == port &&
		    e->addr.q[0] == addr->q[0] && e->addr.q[1] == addr->q[1])
			return &s->vips[e->vip - 1];
		i = (i + 1) & s->vip_index_mask;
	}
}

/**
 * The VIP a packet belongs to: the exact (address, port, protocol) VIP, else the
 * port-agnostic one for that address and protocol, else NULL.
 */
static inline const struct lb_vip *
lb_vip_lookup(const struct lb_snapshot *s, uint8_t af, const union lb_ip *addr, uint8_t proto,
              uint16_t port)
{
	const struct lb_vip *v = lb_vip_index_find(s, s->vip_index, af, addr, proto, port);

	if (v == NULL && port != 0)
		v = lb_vip_index_find(s, s->vip_index, af, addr, proto, 0);
	return v;
}

/**
 * The VIP for a fragment (no ports visible): the port-agnostic VIP of the
 * address if there is one, else the VIP with that address and protocol that has
 * the lowest port. Both first and later fragments use this, so they agree.
 */
static inline const struct lb_vip *
lb_vip_lookup_frag(const struct lb_snapshot *s, uint8_t af, const union lb_ip *addr, uint8_t proto)
{
	return lb_vip_index_find(s, s->frag_index, af, addr, proto, 0);
}

/**
 * The hash of a packet's key per the VIP's key mode: what Maglev, the sketch
 * and the override table see. flow_hash is lb_hash_flow() of the full 5-tuple
 * key, which is the answer for 5-tuple VIPs.
 */
static inline uint64_t
lb_vip_key_hash(const struct lb_snapshot *s, const struct lb_vip *v, const struct lb_flow_key *fk,
                uint64_t flow_hash)
{
	struct lb_flow_key k;

	if (v->key_mode == LB_KEY_5TUPLE)
		return flow_hash;
	memset(&k, 0, sizeof(k));
	k.src = fk->src;
	k.af = fk->af;
	if (v->key_mode == LB_KEY_SRC_IP_DPORT)
		k.dport = fk->dport;
	return lb_hash_flow(&s->hkey, &k);
}

/** Maglev choice: the backend id for a key hash, LB_BACKEND_NONE if the VIP has none. */
static inline uint16_t
lb_maglev_pick(const struct lb_snapshot *s, const struct lb_vip *v, uint64_t key_hash)
{
	return v->table[lb_fastmod((uint32_t)key_hash, s->table_fastmod, s->table_size)];
}

/* Whether a flow pinned to (id, gen) may stay on it: same membership, not down. */
static inline bool
lb_backend_usable(const struct lb_snapshot *s, const struct lb_vip *v, uint16_t id, uint16_t gen)
{
	const struct lb_backend *b;

	if (id >= s->n_backends)
		return false;
	b = &s->backends[id];
	return b->gen == gen && b->vip_id == v->id && b->state != LB_BACKEND_DOWN;
}

#endif /* LB_SNAPSHOT_H */
