/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillway's counters in DPDK telemetry: /spillway/stats, /spillway/vips,
 * /spillway/vip,SELECTOR, /spillway/cores and /spillway/hot, read with
 * dpdk-telemetry.py beside /ethdev/stats. The callbacks run in DPDK's
 * telemetry thread; what they read is described at struct lb_tele_summary.
 */
#ifndef LB_TELEMETRY_H
#define LB_TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/counters.h"
#include "control/model/config.h"
#include "control/hot/hotkey.h"

#define LB_TELE_VIP_TEXT 64 /* "[ipv6]:port/proto" and its NUL */
#define LB_TELE_KEY_TEXT 96 /* a hot key: "src", "src>dport", "src:sport>dst:dport/proto" */
/* Entries of one telemetry array (RTE_TEL_MAX_ARRAY_ENTRIES) and dict
 * (RTE_TEL_MAX_DICT_ENTRIES, one kept for "omitted"). */
#define LB_TELE_MAX_LIST 512
#define LB_TELE_MAX_DICT 255

struct lb_tele_backend {
	uint16_t id;
	uint8_t state; /* enum lb_backend_state */
	uint32_t weight;
	char address[48];
	char name[LB_NAME_MAX];
};

struct lb_tele_vip {
	uint16_t id;
	uint8_t af;
	uint8_t proto;
	uint16_t port;
	union lb_ip addr;
	char text[LB_TELE_VIP_TEXT];
	uint32_t first_backend; /* its backends: backends[first_backend ..] */
	uint32_t n_backends;
};

/* The configuration as the telemetry thread sees it: a copy. */
struct lb_tele_dir {
	uint64_t generation;
	uint32_t n_vips;
	uint32_t n_backends;
	struct lb_tele_vip *vips;
	struct lb_tele_backend *backends;
};

struct lb_tele_hot_key {
	uint16_t vip_id;
	uint16_t n_replicas;
	bool pinned;
	uint64_t share_ppm; /* share of its VIP's traffic, parts per million */
	char key[LB_TELE_KEY_TEXT];
};

/* The hot-key controller as the telemetry thread sees it: a copy. */
struct lb_tele_hot {
	bool enabled;
	uint64_t window;
	uint64_t promotions, demotions, replans, dropped, table_full, active, pinned;
	uint32_t n_keys;
	struct lb_tele_hot_key *keys;
};

/*
 * Threads. The telemetry thread must never touch what only the control
 * thread may (struct lb_config, the publisher, the hot-key controller): the
 * control thread copies what the commands need (a struct lb_tele_dir when the
 * published generation changes, a struct lb_tele_hot when a hot-key window
 * closes) on its 10 ms tick and swaps the copy in under a mutex that every
 * callback holds while it reads. The workers' counters are read as the stats
 * method reads them, with relaxed 64-bit atomic loads and no lock: each
 * counter has one writer, its worker. The counters' memory must outlive
 * lb_telemetry_detach, which takes the same mutex, so no callback reads them
 * afterwards. DPDK 22.11 cannot unregister a command: after the detach the
 * commands answer null.
 */

/**
 * Register the commands (once per process) and serve the counters of cores
 * (cores[i] belongs to lcore lcores[i]; the arrays are the caller's and must
 * stay valid until lb_telemetry_detach).
 *
 * @return 0, or the -errno of rte_telemetry_register_cmd (-EINVAL, -ENOMEM,
 *   -ENOENT when telemetry's command table is full).
 */
int lb_telemetry_attach(const struct lb_core_counters *const *cores, const unsigned int *lcores,
                        unsigned int n_cores);

/** Stop reading the counters and free the copies; the commands answer null. */
void lb_telemetry_detach(void);

/**
 * Control thread, every tick: copy the configuration if generation changed
 * since the last call, and the hot-key controller (NULL: off) if window
 * changed. Cheap when nothing changed. A copy that cannot be allocated is
 * retried on the next call.
 */
void lb_telemetry_refresh(const struct lb_config *cfg, uint64_t generation,
                          const struct lb_hotkey *hot, uint64_t window);

/* The pure pieces, exposed for the unit test. */

/**
 * A VIP as the commands name it: "192.0.2.10:80/tcp", "[fd00::1]:443/udp"
 * (port 0: a port-agnostic VIP).
 *
 * @return 0, or -ENOSPC if len is too small (buf then holds "").
 */
int lb_telemetry_vip_text(uint8_t af, const union lb_ip *addr, uint16_t port, uint8_t proto,
                          char *buf, size_t len);

/**
 * Copy cfg's VIPs and backends into d (zeroed or freed before).
 *
 * @return 0 or -ENOMEM (then d is empty).
 */
int lb_telemetry_dir_build(struct lb_tele_dir *d, const struct lb_config *cfg, uint64_t generation);

void lb_telemetry_dir_free(struct lb_tele_dir *d);

/**
 * Copy the controller's counters and overrides into t (zeroed or freed
 * before; at most LB_TELE_MAX_LIST keys), each key written as its VIP's key
 * mode (in cfg) sees it; h NULL: hot keys off.
 *
 * @return 0 or -ENOMEM (then t is empty).
 */
int lb_telemetry_hot_build(struct lb_tele_hot *t, const struct lb_hotkey *h,
                           const struct lb_config *cfg, uint64_t window);

void lb_telemetry_hot_free(struct lb_tele_hot *t);

/**
 * The VIP that sel names in d: its id in decimal ("3"), or address, port and
 * protocol as lb_telemetry_vip_text writes them (an IPv6 address may also be
 * written without brackets; the port is then after its last colon).
 *
 * @return its index in d->vips, -EINVAL if sel is malformed, -ENOENT if no
 *   VIP matches.
 */
int lb_telemetry_vip_find(const struct lb_tele_dir *d, const char *sel);

/**
 * The per-core scalar counters the commands report, in order: their names
 * (the stats document's names) for i < LB_TELE_N_FIELDS, NULL beyond.
 */
const char *lb_telemetry_field_name(unsigned int i);

/** The value of field i in c, read with a relaxed atomic load. */
uint64_t lb_telemetry_field_load(const struct lb_core_counters *c, unsigned int i);

#define LB_TELE_N_FIELDS 24

#endif /* LB_TELEMETRY_H */
