/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "via encap" probe transport (struct lb_probe_transport of
 * health_probe.h): a probe leaves through the host kernel's raw IP socket
 * already encapsulated as a client's packet to the VIP (health_encap_pkt.h),
 * and the backend's direct-server-return answer, from the VIP to this host's
 * address, comes back through the kernel (docs/health-checks.md, "via encap").
 */
#ifndef LB_HEALTH_ENCAP_H
#define LB_HEALTH_ENCAP_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/hash.h"
#include "control/health/health_probe.h"
#include "dataplane/snapshot.h"

struct lb_health_encap_conf {
	struct lb_encap_conf encap; /* the data path's: outer sources, gue_port, mtu */
	/* The inner source: an address this host's kernel owns and that routes
	 * back to it (not a VIP). Unset: encap's source_v4 / source_v6. */
	union lb_ip src4, src6;
	bool has_src4, has_src6;
	struct lb_hash_key hkey; /* the snapshot's: GUE source ports as the data path's */
};

struct lb_health_encap_stats {
	uint64_t started;     /* probes whose SYN or request was sent */
	uint64_t send_errors; /* frames the kernel refused */
	uint64_t ok;          /* SYN-ACKs and answers accepted */
	uint64_t refused;     /* RSTs, ICMP port unreachable */
	uint64_t mismatches;  /* UDP answers not starting with the expected bytes */
	uint64_t ignored;     /* packets read that were not this probe's answer */
	uint64_t unsupported; /* http probes refused */
};

struct lb_health_encap;

/**
 * Open the transport: one raw IP send socket per family that has an outer
 * source address (needs CAP_NET_RAW). A family whose socket the kernel
 * refuses (e.g. IPv6 disabled) is left out and its probes fail.
 * @return 0; -EINVAL (no outer source address at all); -ENOMEM; -errno of
 *         socket() when no family could be opened.
 */
int lb_health_encap_open(struct lb_health_encap **out, const struct lb_health_encap_conf *conf);

/**
 * Replace the addresses, GUE port and hash key (a reload); probes in flight
 * keep what they started with. Families are not reopened.
 * @return 0, or -EINVAL as lb_health_encap_open().
 */
int lb_health_encap_set_conf(struct lb_health_encap *h, const struct lb_health_encap_conf *conf);

/**
 * The transport to hand to lb_health_probe_register(LB_HEALTH_VIA_ENCAP, ...);
 * valid until lb_health_encap_close(). Its start() fails an http probe
 * ("http is not offered via encap"): the configuration should refuse it.
 */
const struct lb_probe_transport *lb_health_encap_transport(struct lb_health_encap *h);

void lb_health_encap_stats_get(const struct lb_health_encap *h, struct lb_health_encap_stats *out);

/** Close the send sockets; every probe must have been stopped. NULL is fine. */
void lb_health_encap_close(struct lb_health_encap *h);

#endif /* LB_HEALTH_ENCAP_H */
