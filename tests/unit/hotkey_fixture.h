/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the hot-key controller's unit tests share: configurations of VIPs with
 * numbered backends and their snapshots, as control builds them, and a
 * simulated VIP whose per-backend load each window follows from the
 * controller's own overrides (tests/unit/test_hotkey.c, test_hot_plan.c).
 */
#ifndef SPW_TEST_HOTKEY_FIXTURE_H
#define SPW_TEST_HOTKEY_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "control/model/config.h"
#include "control/hot/hotkey.h"

#define N_SIM 100u                     /* backends of the simulated VIP */
#define HOT_HASH 0x5eed0fba11c0ffeeULL /* the simulated hot key */

/* n_vips VIPs (192.0.2.10+i:80/tcp) with n[i] backends each, ids in order;
 * Maglev tables of 65537 slots. Fails the test if the configuration is rejected. */
struct lb_config *cfg_make(uint32_t n_vips, const uint32_t *n);

/* The snapshot of cfg; fails the test on error. */
struct lb_snapshot *snap_make(const struct lb_config *cfg, uint64_t generation);

/* Backend id is active with a weight > 0 in s. */
bool active(const struct lb_snapshot *s, uint16_t id);

/* The lowest rung of the ladder docs/hot-keys.md gives (1, 2, 3, 4, 6, 8, 12,
 * ... 256) at or above x (x within 1e-9 of a rung counts as it): the tests'
 * own copy, not the controller's. */
uint32_t ref_rung(double x);

/* The controller's override of (vip, key_hash), or NULL. */
const struct lb_hot_override *find_ov(const struct lb_hotkey *h, uint16_t vip, uint64_t key_hash);

/*
 * One VIP (id 0) with N backends. Per window: the hot key sends hot of T
 * units; the other traffic (T - hot) is either spread exactly evenly over the
 * usable backends (many tiny keys, perfectly balanced: the idealised numbers
 * of docs/hot-keys.md come out exact) or over a million keys (K_OTHER) each
 * sent to its Maglev home with lb_maglev_pick ("realistic": Maglev's and the
 * keys' imbalance included).
 * The hot key goes to its Maglev home, or, while it has an override, evenly
 * over its active replicas (what the 5-tuple hash does in expectation).
 */
struct sim {
	struct lb_config *cfg;
	struct lb_snapshot *s;
	struct lb_hotkey *h;
	uint64_t generation;
	uint64_t window;
	bool realistic;
	bool hot_reported; /* the sketch names the hot key this window */
	uint64_t T, hot;
	double w[LB_MAX_BACKENDS];       /* share of the other traffic per backend id */
	uint64_t extra[LB_MAX_BACKENDS]; /* added load per backend (load-shift test) */
	uint64_t load[LB_MAX_BACKENDS];
	uint64_t vip_total[LB_MAX_VIPS];
	double other_dev; /* max |other_b / mean - 1| over usable backends */
};

/* A simulation of one VIP with n backends and a controller with params p
 * (NULL: defaults); realistic selects the Maglev-hashed other traffic. */
struct sim *sim_new(bool realistic, uint32_t n, const struct lb_hot_params *p);

/* Free m with its controller, snapshot and configuration. */
void sim_free(struct sim *m);

/* Rebuild the snapshot from m->cfg (after a change to it) under the next
 * generation, and recompute how the other traffic spreads. */
void sim_publish(struct sim *m);

/* One window: loads from the assignment, then the controller. *ratio is the
 * peak/average the window saw (before the controller acted). */
bool sim_step(struct sim *m, double *ratio);

#endif /* SPW_TEST_HOTKEY_FIXTURE_H */
