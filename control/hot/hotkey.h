/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key controller: once per window, from the merged sketch candidates, the
 * VIPs' totals and the backends' loads, decide which keys need spreading and
 * over which replicas (consistent hashing with bounded loads), with
 * hysteresis so a key near the threshold does not flap. Pure logic: no DPDK
 * calls, no I/O, so it is tested by simulation. docs/hot-keys.md has the
 * math.
 */
#ifndef LB_HOTKEY_H
#define LB_HOTKEY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "dataplane/hash.h"
#include "dataplane/snapshot.h"

#define LB_HOT_MAX_OVERRIDES 1024
#define LB_HOT_MAX_EVENTS 256   /* ring of recent promotions/demotions/re-plans */
#define LB_HOT_MAX_REPLICAS 256 /* a key spreads over at most this many backends */
_Static_assert(LB_HOT_MAX_REPLICAS <= LB_OVERRIDE_REPLICAS_MAX,
               "the snapshot lays out every replica the controller plans");

/* Ranges and defaults: control/model/params.h; 0 in a field takes its default. */
struct lb_hot_params {
	double threshold; /* operator's floor on a promoted share; 0: "auto" (the bound alone) */
	double threshold_low;    /* demote when share < this ... (0: φ/2, or "auto") */
	uint32_t demote_windows; /* ... for this many consecutive windows */
	double epsilon;          /* c = 1 + ε: the load cap factor */
	double ewma_alpha;       /* weight of the newest window in backend loads */
	double margin;           /* plans stay this fraction below the cap (< 0: none) */
};

/* One merged candidate of a closed window (sum over cores). */
struct lb_hot_candidate {
	uint16_t vip_id;
	uint64_t key_hash;
	struct lb_flow_key key;
	uint64_t count;
};

/* One override as control keeps it. */
struct lb_hot_override {
	uint16_t vip_id;
	uint64_t key_hash;
	struct lb_flow_key key;
	double share;          /* latest measured share of its VIP */
	uint64_t since_window; /* window of promotion */
	uint32_t low_windows;  /* consecutive windows below threshold_low */
	bool pinned;           /* set by an operator: never demoted automatically */
	uint16_t n_replicas;
	uint16_t replicas[LB_HOT_MAX_REPLICAS]; /* backend ids, home first */
};

struct lb_hotkey;

/** @return a controller, or NULL with errno set (EINVAL for bad params). */
struct lb_hotkey *lb_hotkey_create(const struct lb_hot_params *p);

void lb_hotkey_free(struct lb_hotkey *h);

/** Change the parameters (takes effect at the next window); -EINVAL if invalid. */
int lb_hotkey_set_params(struct lb_hotkey *h, const struct lb_hot_params *p);

void lb_hotkey_get_params(const struct lb_hotkey *h, struct lb_hot_params *p);

/**
 * Run one closed window.
 *
 * @param s         the published snapshot (VIPs, Maglev tables, backend states)
 * @param load      per backend id: this window's load (packets, bytes or new
 *                  flows, summed over cores); n = s->n_backends entries
 * @param vip_total per VIP id: this window's total (same unit as the candidates)
 * @param c, n_c    merged candidates of the window
 * @param window    the window's number (for events and "since")
 * @return true if the set of overrides or any replica list changed (control
 *   then publishes a new snapshot).
 */
bool lb_hotkey_window(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load,
                      const uint64_t *vip_total, const struct lb_hot_candidate *c, uint32_t n_c,
                      uint64_t window);

/**
 * A window whose data could not be read (a core had not closed it, or had
 * already reopened it, or a worker was stalled): its shares are unknown, not
 * zero, so nothing is promoted, demoted or re-planned on it and the count of
 * consecutive low windows is neither advanced nor reset. Counted in
 * windows_missed.
 */
void lb_hotkey_window_missed(struct lb_hotkey *h, uint64_t window);

/**
 * Re-plan against s, a snapshot about to be published for a change of
 * configuration, before any window sees it: an override whose VIP is gone or
 * has no usable backend left is dropped, and one with a replica that is not
 * usable in s (removed, down, draining, weight 0, not in the VIP's table) gets
 * its replacement at once, from the loads known so far. Loads and shares are
 * not touched. @return true if an override changed (the caller then lays the
 * overrides into the snapshot again).
 */
bool lb_hotkey_revalidate(struct lb_hotkey *h, const struct lb_snapshot *s);

/**
 * Whether backend id is a membership of override o's VIP in s (an id inside
 * s's registry, in use, of that VIP): what a reader of an override's replicas
 * checks before it reads s->backends[id].
 */
bool lb_hotkey_replica_in(const struct lb_snapshot *s, const struct lb_hot_override *o,
                          uint16_t id);

/** The current overrides (valid until the next call that changes them). */
uint32_t lb_hotkey_overrides(const struct lb_hotkey *h, const struct lb_hot_override **out);

/**
 * Pin an override by hand with r replicas (0: computed from the share) or
 * unpin (the key is then subject to automatic demotion). -ENOENT for an
 * unknown VIP, -ENOSPC when the table is full, -EPERM for a VIP whose keys
 * are never overridden (hot_mode report or off, a 5-tuple TCP VIP).
 */
int lb_hotkey_pin(struct lb_hotkey *h, const struct lb_snapshot *s, uint16_t vip_id,
                  uint64_t key_hash, const struct lb_flow_key *key, uint16_t r, uint64_t window);
int lb_hotkey_unpin(struct lb_hotkey *h, uint16_t vip_id, uint64_t key_hash);

/* A hot key listed without an override: a "report" VIP's key or an elephant. */
struct lb_hot_listed {
	uint16_t vip_id;
	uint64_t key_hash;
	struct lb_flow_key key;
	double share;
	uint64_t since_window;
	bool elephant; /* a 5-tuple key of a TCP VIP: one connection */
};

/** The listed keys, up to max into out; @return how many there are (may exceed max). */
uint32_t lb_hotkey_listed(const struct lb_hotkey *h, struct lb_hot_listed *out, uint32_t max);

/** Listed key i (< lb_hotkey_listed()'s count) into *out. */
void lb_hotkey_listed_at(const struct lb_hotkey *h, uint32_t i, struct lb_hot_listed *out);

/** Recent events as a JSON array: {"window", "event", "vip_id", "key_hash", "share", "replicas"}.
 */
json_t *lb_hotkey_events_json(const struct lb_hotkey *h);

/**
 * The key of event i of lb_hotkey_events_json()'s array (oldest first), as
 * its override named it (all zero when it was not known), or NULL past the
 * end.
 */
const struct lb_flow_key *lb_hotkey_event_key(const struct lb_hotkey *h, uint32_t i);

/**
 * Counters: {"promotions", "demotions", "replans", "dropped", "table_full",
 * "infeasible", "active", "pinned", "windows_missed", "reported", "elephants",
 * "listed", "delisted", "report_full", "unresolved" (candidate windows whose
 * share was above the promotion bound but whose lower bound, under the
 * sampling in force, was not)}. Events of type "infeasible" also carry
 * "peak": the best peak/average per unit of weight a plan could reach.
 */
json_t *lb_hotkey_counters_json(const struct lb_hotkey *h);

/**
 * The key's preference order, along which its replicas are chosen: up to max
 * distinct backends of the VIP's Maglev table (slot key_hash mod M, then the
 * following slots, distinct backends in order of first appearance; so its
 * Maglev home comes first). Exposed for tests. @return the number found
 * (<= max, <= the VIP's active backends).
 */
uint16_t lb_hotkey_preference(const struct lb_snapshot *s, const struct lb_vip *v,
                              uint64_t key_hash, uint16_t *out, uint16_t max);

/**
 * The key's rendezvous order, along which its replica list is laid: every
 * membership of v in s (any state) by descending hash of (key, backend
 * address); the same on every instance with the same membership, and the
 * others keep their order when one comes or goes. Up to max into out (0 if
 * out of memory). @return the count.
 */
uint16_t lb_hotkey_order(const struct lb_snapshot *s, const struct lb_vip *v, uint64_t key_hash,
                         uint16_t *out, uint16_t max);

/** The smallest rung of the replica-count ladder 1, 2, 3, 4, 6, 8, 12, 16, 24,
 * 32, 48, ... 256 that is >= r (LB_HOT_MAX_REPLICAS above it). */
uint32_t lb_hotkey_rung(uint32_t r);

/** r = ceil(N p / (c - 1 + p)), at most min(N, LB_HOT_MAX_REPLICAS), at least 1. */
uint32_t lb_hotkey_replicas(uint32_t n_backends, double share, double c);

/**
 * The variance of a key's count per unit counted, from the sampling the
 * sketches used for the window about to be stepped (2^shift when 1 packet in
 * 2^shift is counted and scaled up); at least 1. Until it is set, a 1-in-16
 * sampling is assumed.
 */
void lb_hotkey_set_key_var(struct lb_hotkey *h, double var);

/**
 * The smallest share that breaks the cap c = 1 + epsilon on some backend of
 * v: (c - 1) w / (W - w) for the VIP's lightest usable weight w of its usable
 * W; HUGE_VAL with fewer than two usable backends. What automatic sampling is
 * sized for when threshold is auto.
 */
double lb_hotkey_vip_bound(const struct lb_snapshot *s, const struct lb_vip *v, double epsilon);

/* The controller's running counts, as lb_hotkey_counters_json() names them. */
struct lb_hot_counts {
	uint64_t promotions, demotions, replans, dropped, table_full;
	uint32_t active; /* overrides in force */
	uint32_t pinned; /* of which pinned by the operator */
};

/** The counts of h, read without building JSON (the telemetry copy). */
void lb_hotkey_counts(const struct lb_hotkey *h, struct lb_hot_counts *out);

#endif /* LB_HOTKEY_H */
