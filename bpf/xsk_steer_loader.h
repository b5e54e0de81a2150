/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * User-space side of the XDP steering program: load it through its bpftool skeleton (open, set
 * rodata, load), edit the VIP map, read the counters, and find the object file that DPDK's af_xdp
 * PMD takes as xdp_prog=PATH. Attaching to an interface is left to the PMD.
 */
#ifndef LB_XSK_STEER_LOADER_H
#define LB_XSK_STEER_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/xsk_steer.h"

struct lb_xsk_steer;

struct lb_xsk_steer_opts {
	/* Return XDP_REDIRECT for VIPs without calling bpf_redirect_map() (tests only). */
	bool test_mode;
};

/* The maps of a loaded steering program, as fds the caller closes (lb_xsk_maps_close). */
struct lb_xsk_maps {
	int vips_fd;
	int stats_fd;
	uint32_t prog_id;
};

/**
 * Open, configure and load the program into the kernel (not attached).
 * @return the handle, or NULL with errno set (EPERM without CAP_BPF, ENOMEM...).
 */
struct lb_xsk_steer *lb_xsk_steer_open(const struct lb_xsk_steer_opts *opts);

/** Unload. NULL is accepted. */
void lb_xsk_steer_close(struct lb_xsk_steer *s);

/** @return the program's fd, for bpf_prog_test_run_opts() or an attach. */
int lb_xsk_steer_prog_fd(const struct lb_xsk_steer *s);

/** @return the VIP map's fd, valid until lb_xsk_steer_close(). */
int lb_xsk_steer_vip_map_fd(const struct lb_xsk_steer *s);

/** @return the counter map's fd, valid until lb_xsk_steer_close(). */
int lb_xsk_steer_stats_map_fd(const struct lb_xsk_steer *s);

/**
 * The maps of a loaded steering program, found by id from the program's fd: its name must be
 * xsk_steer and it must hold maps named LB_XSK_MAP_VIPS and LB_XSK_MAP_STATS.
 * @return 0, or -EPROTO (not spillway's steering program), or another -errno.
 */
int lb_xsk_maps_from_prog(int prog_fd, struct lb_xsk_maps *out);

/**
 * The maps of the steering program attached to an interface (by DPDK's af_xdp PMD, given
 * xdp_prog=PATH). Needs CAP_SYS_ADMIN: the kernel allows BPF_PROG_GET_FD_BY_ID and
 * BPF_MAP_GET_FD_BY_ID to CAP_SYS_ADMIN only.
 * @return 0, or -ENOENT (no XDP program attached, or attached in several modes), -EPROTO (the
 *         attached program is not spillway's steering program), another -errno.
 */
int lb_xsk_maps_from_ifindex(int ifindex, struct lb_xsk_maps *out);

/** Close what lb_xsk_maps_from_* opened (fds < 0 are skipped) and set them to -1. */
void lb_xsk_maps_close(struct lb_xsk_maps *m);

/**
 * Fill a VIP map key. family is AF_INET or AF_INET6, addr points at 4 or 16 bytes in network order,
 * port_be is in network order (0: every port).
 * @return 0, or -EINVAL for an unknown family or protocol other than TCP/UDP.
 */
int lb_xsk_vip_key_make(struct lb_xsk_vip_key *key, int family, const void *addr, uint8_t proto,
                        uint16_t port_be);

/** Add or replace a VIP. @return 0, or -errno from the kernel (-E2BIG when the map is full). */
int lb_xsk_vip_add(int map_fd, const struct lb_xsk_vip_key *key, uint32_t vip_id);

/** Add or replace an entry with its flags (LB_XSK_VIP_FRAG_ONLY). @return as lb_xsk_vip_add. */
int lb_xsk_vip_put(int map_fd, const struct lb_xsk_vip_key *key,
                   const struct lb_xsk_vip_value *val);

/** Remove a VIP. @return 0, or -ENOENT if it was not there, or another -errno. */
int lb_xsk_vip_remove(int map_fd, const struct lb_xsk_vip_key *key);

/**
 * Sum the per-CPU counters into out[LB_XSK_CNT_MAX].
 * @return 0, or -errno.
 */
int lb_xsk_counters_read(int stats_fd, uint64_t out[LB_XSK_CNT_MAX]);

/**
 * Path of xsk_steer.bpf.o to pass as the af_xdp PMD's xdp_prog=PATH: $SPILLWAY_XSK_OBJ if set,
 * else the build tree's copy if it exists, else the installed one. Never NULL.
 */
const char *lb_xsk_obj_path(void);

#endif /* LB_XSK_STEER_LOADER_H */
