/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot object's parameters, each defined once: name, type, range, default,
 * unit and where it may be set. The configuration file and SIGHUP (config.c),
 * the control socket's hot_set (rpc_hot.c), spillctl's hot set options and
 * the controller (hotkey.c) all check values against this table;
 * config_hot.c decodes them from JSON for the file and the socket alike.
 * Pure data: no JSON, no DPDK.
 */
#ifndef LB_PARAMS_H
#define LB_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

/* hot.enabled: the controller and the workers' sketches run (default true). */
#define LB_HOT_ENABLED_DEFAULT true

/* hot.window_ms, in ms: one measurement window. The lower bound is the
 * control thread's tick (control.c TICK_MS): a shorter window could not be
 * opened on time. The upper bound is a minute: beyond it a window reacts too
 * late to be a hot-key window. */
#define LB_HOT_WINDOW_MS_MIN 10
#define LB_HOT_WINDOW_MS_MAX 60000
#define LB_HOT_WINDOW_MS_DEFAULT 100

/* hot.threshold, a share of the VIP's traffic (in hot.weight's unit):
 * "auto" (stored as LB_HOT_THRESHOLD_AUTO, the default) derives the
 * promotion bound per VIP from the cap; a number in (0, 1] is an operator's
 * floor under it. */
#define LB_HOT_THRESHOLD_AUTO 0.0
#define LB_HOT_THRESHOLD_MIN 0.0 /* excluded */
#define LB_HOT_THRESHOLD_MAX 1.0

/* hot.epsilon: the cap c = 1 + ε times a backend's fair share. Below 0.001
 * the cap is within the counters' noise; above 100 it caps nothing. */
#define LB_HOT_EPSILON_MIN 0.001
#define LB_HOT_EPSILON_MAX 100.0
#define LB_HOT_EPSILON_DEFAULT 0.25

/* hot.weight: what the sketches and the loads count (restart-only). */
#define LB_HOT_WEIGHT_PACKETS 0
#define LB_HOT_WEIGHT_BYTES 1

/* hot.sample: each core samples 1 packet in 2^shift; "auto"
 * (LB_HOT_SAMPLE_AUTO, the default) picks the shift per core from its
 * measured packets per window. 2^8 is the sketch's largest sampling step. */
#define LB_HOT_SAMPLE_AUTO (-1)
#define LB_HOT_SAMPLE_MAX 8
/* The share "auto" sampling is sized for while hot.threshold is "auto" and
 * no VIP has a promotion bound (fewer than two usable backends everywhere):
 * the former default threshold. */
#define LB_HOT_SAMPLE_AUTO_SHARE 0.01

/* hot.margin, a fraction of the cap that plans stay under (0: none). Past
 * one half a plan is sized for less than c / 2 and spreads a key over twice
 * the replicas it needs. */
#define LB_HOT_MARGIN_MAX 0.5
#define LB_HOT_MARGIN_DEFAULT 0.05

/* hot.ewma_alpha: the weight of the newest window in the smoothed loads and
 * shares. Below 0.01 a step takes hundreds of windows to show. */
#define LB_HOT_EWMA_ALPHA_MIN 0.01
#define LB_HOT_EWMA_ALPHA_DEFAULT 0.5

/* hot.demote_windows, in windows: a key is demoted after this many
 * consecutive windows below hot.threshold_low. */
#define LB_HOT_DEMOTE_WINDOWS_MIN 1
#define LB_HOT_DEMOTE_WINDOWS_MAX 1000
#define LB_HOT_DEMOTE_WINDOWS_DEFAULT 5

/* hot.threshold_low, a share like hot.threshold and at most it: "auto"
 * (LB_HOT_THRESHOLD_LOW_AUTO, the default) is hot.threshold / 2 when
 * hot.threshold is a number, and the controller's own demotion rule when it
 * is "auto". */
#define LB_HOT_THRESHOLD_LOW_AUTO 0.0
#define LB_HOT_THRESHOLD_LOW_DIV 2.0 /* "auto" under a numeric threshold: threshold / 2 */

enum lb_param_type {
	LB_PARAM_BOOL, /* true or false (0 or 1) */
	LB_PARAM_INT,  /* an integer in the range */
	LB_PARAM_REAL, /* a number (integer or real) in the range */
	LB_PARAM_ENUM, /* one of names[] (the index) */
};

/* Where a parameter may be set besides the file (read at start and SIGHUP). */
enum lb_param_where {
	LB_PARAM_SOCKET,  /* also through hot_set, at run time */
	LB_PARAM_FILE,    /* the file only; SIGHUP applies it */
	LB_PARAM_RESTART, /* the file only; a change needs a restart */
};

struct lb_param {
	const char *name; /* member of the hot object and of hot_set's params */
	enum lb_param_type type;
	double min, max; /* the range of a number (INT, REAL) */
	bool min_open;   /* min itself is excluded: (min, max] */
	bool auto_ok;    /* "auto" is accepted, kept as auto_value */
	double auto_value;
	double def;                /* the default (auto_value when "auto") */
	const char *const *names;  /* ENUM: the values, NULL-ended */
	enum lb_param_where where; /* who may set it */
	const char *unit;          /* what a value counts */
};

/* The hot object's parameters, in the order the document lists them. */
enum lb_hot_param {
	LB_HOT_P_ENABLED,
	LB_HOT_P_WINDOW_MS,
	LB_HOT_P_THRESHOLD,
	LB_HOT_P_EPSILON,
	LB_HOT_P_WEIGHT,
	LB_HOT_P_SAMPLE,
	LB_HOT_P_MARGIN,
	LB_HOT_P_EWMA_ALPHA,
	LB_HOT_P_DEMOTE_WINDOWS,
	LB_HOT_P_THRESHOLD_LOW,
	LB_HOT_P_N,
};

extern const struct lb_param lb_hot_param_table[LB_HOT_P_N];

/** The row named name, or NULL. */
const struct lb_param *lb_param_find(const char *name);

/**
 * Whether x is a value of p: auto_value when auto_ok, else in the range (an
 * integer for INT, 0 or 1 for BOOL, an index of names for ENUM). NaN is not.
 */
bool lb_param_ok(const struct lb_param *p, double x);

/** p's range as messages and docs write it: "[10, 60000]", "(0, 1]"; buf returned. */
const char *lb_param_range(const struct lb_param *p, char *buf, size_t len);

#endif /* LB_PARAMS_H */
