/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the hot-key controller's files share: the controller object with its
 * per-override and per-backend state, the events it records, and the limits
 * and tolerances the window step and the planner both use. Internal to the
 * hotkey module (hotkey.c, hot_plan.c, hot_loads.c, hot_events.c); hotkey.h
 * is its API.
 */
#ifndef LB_HOTKEY_INTERNAL_H
#define LB_HOTKEY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "control/hot/hotkey.h"

/* Backend ids are uint16_t with 0xFFFF reserved, so per-id arrays are this long. */
#define LB_HOT_N_IDS 65535u

/* Override index: open addressing, 4x the override limit so load <= 1/4. */
#define LB_HOT_INDEX_SIZE 4096u

/* Host index of one call: open addressing over backend addresses, load <= 1/2. */
#define LB_HOT_HOST_SLOTS 131072u

/* Relative slack on the cap so float rounding (1.24999999) is not a violation. */
#define LB_HOT_CAP_SLACK 1e-9

_Static_assert(LB_HOT_MAX_OVERRIDES * 4 <= LB_HOT_INDEX_SIZE,
               "override index load must stay <= 1/4");
_Static_assert((LB_HOT_INDEX_SIZE & (LB_HOT_INDEX_SIZE - 1)) == 0,
               "override index size must be a power of 2");

/* What happened to an override; the names are in hot_events.c. */
enum lb_hot_event_type {
	LB_HOT_EV_PROMOTE = 0,
	LB_HOT_EV_DEMOTE,
	LB_HOT_EV_REPLAN,
	LB_HOT_EV_PIN,
	LB_HOT_EV_UNPIN,
	LB_HOT_EV_DROP,       /* VIP removed or left without usable backends */
	LB_HOT_EV_INFEASIBLE, /* no plan holds the cap: peak is the best reachable */
};

/* Consecutive windows a replica (or its host) must be over the cap before
 * the override is re-planned for load: one noisy window never re-plans. */
#define LB_HOT_PERSIST_WINDOWS 3

/* Standard deviations of a backend's real load fluctuation (its measured
 * variance beyond the sampling floor) kept below the cap when planning, on
 * top of the relative margin. */
#define LB_HOT_NOISE_Z 2.0

/* A measured variance up to this many times a load's sampling floor (the
 * Poisson variance of one window's count) counts as sampling noise, which
 * differs per instance and is denoised; only the excess is real fluctuation,
 * common to every instance, and planned for. A window's deviation just under
 * the step bound (LB_HOT_STEP_Z sd) adds up to alpha * LB_HOT_STEP_Z^2 floors
 * to var (8 at the default alpha 0.5): one such window (a key arriving over
 * two windows) and the EWMA's estimation swings do not show as excess. */
#define LB_HOT_FLOOR_K 8.0

/* A backend's measured load within this many standard deviations of its
 * noise from its fair load counts as fair when planning, so instances that
 * see independent samples of the same traffic plan alike. */
#define LB_HOT_DENOISE_Z 3.0

/* The variance of a key's estimated load per unit of it when the window
 * driver has not said which sampling is in force (lb_hotkey_set_key_var): a
 * sketch counting 1 packet in 16 and scaling up gives a count of n packets a
 * variance of about 16 n. */
#define LB_HOT_KEY_VAR 16.0

/* A promoted key goes home only when its share's upper bound is below this
 * fraction of its VIP's promotion bound (c - 1) w_h / (W - w_h): at 0.8 of
 * the bound its home carries 1 + 0.8 (c - 1) times its fair load, a fifth of
 * the cap's headroom below c, so neither the return nor the noise of the
 * next windows takes the home over the cap. */
#define LB_HOT_DEMOTE_BAND 0.8

/* Standard deviations of a key's share's sampling noise below its measured
 * value that the plan at promotion takes. */
#define LB_HOT_SHARE_Z 2.0

/* A window's load this many standard deviations (its count's sampling noise
 * plus the measured noise) from the smoothed load is a step in the traffic
 * mix (a key arriving or leaving), not noise: the load restarts from it. */
#define LB_HOT_STEP_Z 4.0

/* Shrinking r is allowed only to a level that would still hold the cap if the
 * share grew by this factor (the dead band that keeps r from oscillating);
 * a plan that could not hold the cap is redone for load only once the key's
 * load has moved by this factor. */
#define LB_HOT_SHRINK_MARGIN 1.25

/* The slow share is smoothed with the EWMA's alpha divided by this. r shrinks
 * only if its upper bound (LB_HOT_SHARE_Z standard deviations of that
 * average's sampling noise above it) fits fewer replicas, and climbs when that
 * bound, or the smoothed share, needs more: a key whose count is a few
 * samples per window (its share varying by tens of percent window to window)
 * must not step down and back up on noise, or instances behind ECMP, each
 * with its own noise, would be on different rungs much of the time. */
#define LB_HOT_SLOW_DIV 8.0

/* One entry of the ring of recent events. */
struct lb_hot_event {
	uint64_t window;
	uint64_t key_hash;
	struct lb_flow_key key; /* as the override names it (zero: not known) */
	double share;
	uint16_t vip_id;
	uint16_t replicas;
	uint8_t type; /* enum lb_hot_event_type */
	double peak;  /* infeasible: best peak/average per unit of weight */
};

/* What the controller does with a VIP's hot keys (hot_report.c decides). */
enum lb_hot_kind {
	LB_HOT_KIND_SPREAD = 0, /* override: new flows over replicas */
	LB_HOT_KIND_REPORT,     /* hot_mode "report": listed, never overridden */
	LB_HOT_KIND_ELEPHANT,   /* a 5-tuple key of a TCP VIP: one connection */
	LB_HOT_KIND_OFF,        /* hot_mode "off": not looked at */
};

#define LB_HOT_MAX_REPORTS 256 /* listed keys that are not overridden */

/* A hot key listed but not overridden (hot_report.c). */
struct lb_hot_report {
	uint64_t key_hash;
	struct lb_flow_key key;
	double share;          /* latest measured share of its VIP */
	uint64_t since_window; /* window it was listed in */
	uint64_t seen;         /* candidate count this window */
	uint32_t low_windows;  /* consecutive windows below the delisting share */
	double list_at;        /* the share it was listed at (threshold or the VIP's bound) */
	uint16_t vip_id;
	uint8_t kind; /* enum lb_hot_kind: REPORT or ELEPHANT */
	bool fresh;   /* listed this window: its share is already set */
};

/* Controller-private state of one override (same position as in ov[]). */
struct lb_hot_ov_state {
	double share_ewma;     /* smoothed share: drives r */
	double share_slow;     /* share smoothed LB_HOT_SLOW_DIV times slower: shrinks r */
	double seen_slow;      /* the candidate count smoothed alike (its sampling noise) */
	double key_load;       /* EWMA of the key's traffic in load units (see hot_loads.c) */
	uint64_t seen;         /* candidate count this window */
	uint16_t pin_r;        /* replicas an operator asked for; 0 = computed */
	bool fresh;            /* promoted this window: already planned */
	bool capped;           /* the last plan could not hold the cap */
	uint32_t over_windows; /* consecutive windows with a replica over the cap */
	double capped_load;    /* key load the latest plan was made for */
	double peak;           /* projected peak/average of the last plan */
};

/* What a plan reached: feasible under the cap (with the margin) or not, and
 * the projected peak/average per unit of weight over its replicas. */
struct lb_hot_plan_result {
	bool feasible;
	double peak;
};

/* A VIP's usable backends this call: from one scan of its Maglev table. */
struct lb_hot_vip_info {
	uint64_t stamp;  /* valid when == lb_hotkey.stamp */
	uint32_t n;      /* usable backends (N) */
	double sum_w;    /* their weights */
	double sum_ewma; /* their EWMA loads */
	double sum_raw;  /* their loads this window (0 outside a window) */
	double cap;      /* c * sum_ewma / n */
	double unit;     /* sum_ewma / sum_w: the average load per unit of weight */
};

/* A candidate replica of the planner's fallback, ranked by projected load. */
/* A usable backend in water-filling: its headroom per unit of weight, its weight. */
struct lb_hot_fill {
	double ratio;
	double w;
};

struct lb_hot_rank {
	int64_t q;  /* quantised projected load */
	uint32_t j; /* position in the preference list */
};

struct lb_hotkey {
	struct lb_hot_params p;
	/* Variance of a key's count per unit counted (the sampling in force). */
	double key_var;
	uint32_t n_ov;
	struct lb_hot_override ov[LB_HOT_MAX_OVERRIDES];
	struct lb_hot_ov_state st[LB_HOT_MAX_OVERRIDES];
	uint16_t index[LB_HOT_INDEX_SIZE]; /* position in ov[] + 1; 0 = empty */

	struct lb_hot_event ev[LB_HOT_MAX_EVENTS];
	uint32_t ev_next; /* ring position of the next event */
	uint32_t ev_n;

	uint64_t promotions, demotions, replans, dropped, table_full, infeasible;
	/* Candidates above their promotion bound whose share's lower bound was
	 * not: the sampling in force cannot tell them from the bound. */
	uint64_t unresolved;
	uint64_t windows_missed; /* windows not read: no decision was taken on them */

	/* Hot keys listed without an override (hot_report.c). */
	uint32_t n_rep;
	struct lb_hot_report rep[LB_HOT_MAX_REPORTS];
	uint64_t listed, delisted, report_full;

	/* Per backend id (LB_HOT_N_IDS entries). */
	double *load;       /* EWMA of the per-window load */
	uint16_t *load_gen; /* membership generation the EWMA belongs to; 0 = none */
	double *var;        /* EWMA of the squared deviation of a window from the EWMA */
	double *var_floor;  /* EWMA, alongside var, of a window's sampling floor */
	/* Hosts (backend addresses over every VIP), per call: host[id] is the
	 * lowest id of the same address; the host's figures are kept at that id. */
	uint16_t *host;
	double *host_load;         /* Σ EWMA load of the host's memberships */
	double *host_fair;         /* Σ weight × its VIP's average load per unit of weight */
	double *host_var;          /* Σ var of its memberships */
	double *host_floor;        /* Σ sampling floor (lb_hot_floor) of its memberships */
	uint32_t *host_index;      /* LB_HOT_HOST_SLOTS: id + 1 of a host's first id; 0 = empty */
	uint64_t *host_stamp;      /* LB_HOT_HOST_SLOTS: == stamp: host_index valid */
	double *head;              /* scratch: headroom per preference position */
	struct lb_hot_fill *heads; /* scratch: headrooms per unit of weight, sorted */
	uint64_t *usable;          /* == stamp: in its VIP's table and active (this call) */
	uint64_t *scanned;         /* == stamp: already met in its VIP's table scan */
	uint64_t *stepped;         /* == stamp: its load restarted at a step this window */
	uint64_t *mark;            /* == mark_stamp: carries the key being planned */
	uint64_t mark_stamp;
	uint32_t n_known;     /* ids below this may hold an EWMA */
	uint64_t last_window; /* of the latest window or pin, for unpin's event */

	/* Scratch for planning (LB_HOT_N_IDS entries each). */
	uint16_t *pref;
	double *proj;
	uint8_t *taken;
	struct lb_hot_rank *ranks;

	uint64_t stamp; /* bumped on every call that reads a snapshot */
	struct lb_hot_vip_info vi[LB_MAX_VIPS];
	uint16_t vip_pos[LB_MAX_VIPS]; /* position in s->vips + 1 (valid with vip_stamp) */
	uint64_t vip_stamp[LB_MAX_VIPS];
	double vip_sum[LB_MAX_VIPS]; /* per call: registry-usable EWMA load per VIP */
	double vip_w[LB_MAX_VIPS];   /* ... and weight */
	double vip_upp[LB_MAX_VIPS]; /* load units per packet at the latest window; 0 = 1 */
	/* Per VIP: a digest of its usable memberships (id, generation, weight)
	 * at the latest window, and at this one; a change re-bases its loads. */
	uint64_t vip_sig[LB_MAX_VIPS];
	uint64_t vip_sig_now[LB_MAX_VIPS];
	/* Per VIP: == stamp: one of its loads stepped this window. */
	uint64_t vip_stepped[LB_MAX_VIPS];
};

static inline double
lb_hot_dmax(double a, double b)
{
	return a > b ? a : b;
}

#endif /* LB_HOTKEY_INTERNAL_H */
