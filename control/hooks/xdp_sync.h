/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Keeps the XDP steering program's VIP map equal to the published snapshot, on
 * every af_xdp port (each port's program has its own maps): a VIP is added
 * before a snapshot that has it goes live, and removed only once every worker
 * runs a snapshot without it, so a packet for a live VIP is never passed to the
 * kernel because of the order of the two updates. A publication hook
 * (struct lb_publish_hook) run by the control thread; its stats are the
 * program's counters summed over ports, plus map errors. After a failed map
 * operation the tick (about once a second) reconciles the maps with the live
 * snapshot until a pass succeeds (stats: reconcile_pending, tick_reconciles).
 * The tick also warns when VIP traffic reached the kernel because no AF_XDP
 * socket was bound on the queue that received it (pass_no_xsk).
 */
#ifndef LB_XDP_SYNC_H
#define LB_XDP_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "control/runtime/publish.h"

struct lb_xdp_sync;

/**
 * An EAL argument with the steering program added for an af_xdp vdev: for
 * "net_af_xdp...,iface=X" or "--vdev=net_af_xdp..." without xdp_prog=, a new
 * string with ",xdp_prog=obj" appended (the caller frees it). NULL when arg is
 * not an af_xdp vdev, already names a program, or on allocation failure
 * (errno ENOMEM).
 */
char *lb_xdp_vdev_arg(const char *arg, const char *obj);

struct lb_xdp_sync *lb_xdp_sync_create(void);

/**
 * Track the steering program attached to ifindex (DPDK port port).
 * @return 0, or -errno with a reason in err: -ENOENT no XDP program on the
 *   interface, -EPROTO one that is not spillway's (xdp_prog= pointed elsewhere).
 */
int lb_xdp_sync_add_port(struct lb_xdp_sync *x, uint16_t port, int ifindex, char *err,
                         size_t errlen);

unsigned int lb_xdp_sync_n_ports(const struct lb_xdp_sync *x);

/** Fill h with the hook (name "xdp"); x must outlive the control object. */
void lb_xdp_sync_hook(struct lb_xdp_sync *x, struct lb_publish_hook *h);

/** Close the map fds (the maps go with the program when DPDK detaches it). */
void lb_xdp_sync_destroy(struct lb_xdp_sync *x);

#endif /* LB_XDP_SYNC_H */
