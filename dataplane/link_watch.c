/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link-state logging and counting (link_watch.h). The LSC callback runs in
 * EAL's interrupt thread, the poll in the control thread; a port is checked
 * by one of them only, and its counters are read with atomics for the stats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_ethdev.h>

#include "dataplane/link_watch.h"

struct link_port {
	uint16_t port;
	bool lsc;
	uint8_t up;       /* last logged state; atomics */
	uint32_t speed;   /* Mbps; atomics */
	uint64_t changes; /* up/down transitions since start-up; atomics */
};

struct lb_link_watch {
	unsigned int n;
	unsigned int ticks;
	struct link_port ports[RTE_MAX_ETHPORTS];
};

static void
log_link(uint16_t port, const struct rte_eth_link *l)
{
	char speed[32];

	if (l->link_status != RTE_ETH_LINK_UP) {
		fprintf(stderr, "spillwayd: port %u link down\n", port);
		return;
	}
	if (l->link_speed == RTE_ETH_SPEED_NUM_NONE || l->link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
		snprintf(speed, sizeof(speed), "unknown speed");
	else if (l->link_speed % 1000 == 0)
		snprintf(speed, sizeof(speed), "%u Gbps", l->link_speed / 1000);
	else
		snprintf(speed, sizeof(speed), "%u Mbps", l->link_speed);
	fprintf(stderr, "spillwayd: port %u link up %s %s\n", port, speed,
	        l->link_duplex == RTE_ETH_LINK_FULL_DUPLEX ? "full-duplex" : "half-duplex");
}

/* Read the link; log and count it if it differs from the last state logged. */
static void
check(struct link_port *p, bool first)
{
	struct rte_eth_link l;
	uint8_t up;

	if (rte_eth_link_get_nowait(p->port, &l) != 0)
		return;
	up = l.link_status == RTE_ETH_LINK_UP;
	if (!first && up == __atomic_load_n(&p->up, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&p->up, up, __ATOMIC_RELAXED);
	__atomic_store_n(&p->speed, up ? l.link_speed : 0, __ATOMIC_RELAXED);
	if (!first)
		__atomic_fetch_add(&p->changes, 1, __ATOMIC_RELAXED);
	log_link(p->port, &l);
}

static int
on_lsc(uint16_t port, enum rte_eth_event_type type, void *arg, void *ret_param)
{
	(void)port;
	(void)type;
	(void)ret_param;
	check(arg, false);
	return 0;
}

struct lb_link_watch *
lb_link_watch_create(void)
{
	return calloc(1, sizeof(struct lb_link_watch));
}

int
lb_link_watch_add(struct lb_link_watch *lw, uint16_t port, bool lsc)
{
	struct link_port *p;
	int rc;

	if (lw->n == RTE_MAX_ETHPORTS)
		return -ENOSPC;
	p = &lw->ports[lw->n];
	*p = (struct link_port){.port = port, .lsc = lsc};
	check(p, true);
	if (lsc) {
		rc = rte_eth_dev_callback_register(port, RTE_ETH_EVENT_INTR_LSC, on_lsc, p);
		if (rc != 0)
			return rc;
	}
	lw->n++;
	return 0;
}

static void
tick(void *arg, const struct lb_snapshot *live)
{
	struct lb_link_watch *lw = arg;

	(void)live;
	if (++lw->ticks < LB_LINK_POLL_TICKS)
		return;
	lw->ticks = 0;
	for (unsigned int i = 0; i < lw->n; i++)
		if (!lw->ports[i].lsc)
			check(&lw->ports[i], false);
}

static json_t *
stats(void *arg)
{
	struct lb_link_watch *lw = arg;
	json_t *o = json_object(), *ports = json_array();
	uint64_t total = 0;

	for (unsigned int i = 0; i < lw->n; i++) {
		struct link_port *p = &lw->ports[i];
		uint64_t ch = __atomic_load_n(&p->changes, __ATOMIC_RELAXED);

		total += ch;
		json_array_append_new(
		        ports,
		        json_pack("{s:i, s:b, s:I, s:I}", "port", (int)p->port, "up",
		                  (int)__atomic_load_n(&p->up, __ATOMIC_RELAXED), "speed_mbps",
		                  (json_int_t)__atomic_load_n(&p->speed, __ATOMIC_RELAXED),
		                  "changes", (json_int_t)ch));
	}
	json_object_set_new(o, "link_changes", json_integer((json_int_t)total));
	json_object_set_new(o, "ports", ports);
	return o;
}

struct lb_publish_hook
lb_link_watch_hook(struct lb_link_watch *lw)
{
	return (struct lb_publish_hook){.name = "link", .arg = lw, .tick = tick, .stats = stats};
}

void
lb_link_watch_destroy(struct lb_link_watch *lw)
{
	if (lw == NULL)
		return;
	for (unsigned int i = 0; i < lw->n; i++)
		if (lw->ports[i].lsc)
			(void)rte_eth_dev_callback_unregister(
			        lw->ports[i].port, RTE_ETH_EVENT_INTR_LSC, on_lsc, &lw->ports[i]);
	free(lw);
}
