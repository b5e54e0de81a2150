/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link state per port, logged at start-up and on every change ("port N link
 * up 10 Gbps full-duplex", "port N link down") and counted. A port whose PMD
 * raises link-state interrupts is checked from its LSC callback; the others
 * are polled (rte_eth_link_get_nowait) from the control thread's tick about
 * once a second. Workers never look at links.
 */
#ifndef LB_LINK_WATCH_H
#define LB_LINK_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "control/runtime/publish.h"

/* Control ticks (~10 ms each) between two polls of the non-LSC ports. */
#define LB_LINK_POLL_TICKS 100

struct lb_link_watch;

/** An empty watch, or NULL (out of memory). */
struct lb_link_watch *lb_link_watch_create(void);

/**
 * Watch a started port: log its state now, then on every change. lsc: the
 * port was configured with intr_conf.lsc (its PMD has RTE_ETH_DEV_INTR_LSC);
 * a callback is registered for it, else it is polled.
 *
 * @return 0, -ENOSPC (RTE_MAX_ETHPORTS watched), or the callback
 *   registration's -errno.
 */
int lb_link_watch_add(struct lb_link_watch *lw, uint16_t port, bool lsc);

/**
 * The control-thread hook: tick polls, stats gives {"link_changes": N,
 * "ports": [{"port", "up", "speed_mbps", "changes"}]}.
 */
struct lb_publish_hook lb_link_watch_hook(struct lb_link_watch *lw);

/** Unregister the callbacks and free (NULL is a no-op). Before the ports close. */
void lb_link_watch_destroy(struct lb_link_watch *lw);

#endif /* LB_LINK_WATCH_H */
