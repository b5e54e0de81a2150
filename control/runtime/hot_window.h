/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key windows on the control thread: opens each measurement window for
 * the workers' sketches, merges the cores' candidates once a window closed,
 * runs the hot-key controller on them and the backends' loads, and publishes
 * a new snapshot when the overrides changed. Internal to control/.
 */
#ifndef LB_HOT_WINDOW_H
#define LB_HOT_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/sketch.h"
#include "control/model/config.h"
#include "control/hot/hotkey.h"
#include "control/runtime/publish.h"

struct lb_hot_window {
	struct lb_publisher *pub;          /* builds and publishes the overrides */
	struct lb_sketch *const *sketches; /* one per core */
	volatile uint64_t *open;           /* the open window number the workers poll */
	struct lb_hotkey *hot;             /* the controller; NULL when hot keys are off */
	/* lb_hot_window_init succeeded: the workers run sketches and the
	 * buffers below exist, so hot keys can be turned on at run time. */
	bool has_sketches;
	/* The open window, the closed window still to read (0: none), when the
	 * next window opens, and how long a window lasts. */
	uint64_t window;
	uint64_t pending;
	uint64_t next_ms;
	uint32_t window_ms;
	/* The sketches' sampling shift, or LB_HOT_SAMPLE_AUTO (hot.sample, or
	 * what hot_set last set). */
	int8_t sample;
	uint64_t missed; /* core-windows lost: not readable before the next window opened */
	/* Test mode (SPILLWAY_TEST_HOT_MISS_FILE): while this file exists every
	 * window is missed. NULL: off. */
	const char *miss_file;
	bool skip; /* the window closed next is not read (it ran while off) */
	/* Each backend's cumulative packets at the last window, its packets over
	 * the window, each VIP's packets over the window; the candidates read
	 * and merged. */
	uint64_t *prev;
	uint64_t *load;
	uint64_t *vip_total;
	struct lb_sketch_cand *cands;
	struct lb_hot_candidate *merged;
	/* The largest sampling shift the cores were given for the window being
	 * read (set when the previous window was read). */
	unsigned int shift;
};

/* A backend's cumulative load on core i in hot.weight's unit (packets or bytes). */
static inline uint64_t
lb_hot_window_backend_load(const struct lb_hot_window *hw, unsigned int i, uint32_t id)
{
	const struct lb_obj_counters *b = &hw->pub->cores[i]->backend[id];

	return hw->pub->cfg->hot.weight == LB_HOT_WEIGHT_BYTES
	               ? __atomic_load_n(&b->bytes, __ATOMIC_RELAXED)
	               : __atomic_load_n(&b->packets, __ATOMIC_RELAXED);
}

/* The smallest share the controller must resolve (what automatic sampling is
 * sized for): the operator's threshold, or with threshold auto the smallest
 * promotion bound over the live snapshot's VIPs (LB_HOT_SAMPLE_AUTO_SHARE
 * with none). */
static inline double
lb_hot_window_threshold(const struct lb_hot_window *hw)
{
	const struct lb_snapshot *s = *hw->pub->snap;
	struct lb_hot_params hp;
	double t = LB_HOT_SAMPLE_AUTO_SHARE;

	lb_hotkey_get_params(hw->hot, &hp);
	if (hp.threshold > 0)
		return hp.threshold;
	for (uint32_t i = 0; s != NULL && i < s->n_vips; i++) {
		double b = lb_hotkey_vip_bound(s, &s->vips[i], hp.epsilon);

		if (b < t)
			t = b;
	}
	return t;
}

/**
 * Hot keys on, with cfg's parameters, into a zeroed hw: the controller and
 * its buffers; pub lays the controller's overrides into every build from now
 * on.
 *
 * @return 0, or -ENOMEM with a reason in err (then nothing is kept and pub is
 *   unchanged).
 */
int lb_hot_window_init(struct lb_hot_window *hw, struct lb_publisher *pub,
                       struct lb_sketch *const *sketches, volatile uint64_t *open,
                       const struct lb_config *cfg, char *err, size_t errlen);

/**
 * Periodic work (the control timer): read the window closed at the previous
 * opening (retried on every tick until the next window opens; a window not
 * read from every core by then is missed, and the controller decides nothing
 * on it), run the controller and publish if it changed the overrides; then
 * open the next window when it is due.
 */
void lb_hot_window_tick(struct lb_hot_window *hw);

/**
 * Hot keys off at run time: the controller and its overrides are dropped,
 * no window is opened or read; pub builds without overrides from now on.
 * The buffers stay for lb_hot_window_enable.
 */
void lb_hot_window_disable(struct lb_hot_window *hw);

/**
 * Hot keys on again after lb_hot_window_disable, with cfg's parameters: a new
 * controller, loads counted from now, the window open meanwhile not read.
 *
 * @return 0 (also if already on), -ENOTSUP if hw was never initialised (the
 *   workers have no sketches), -ENOMEM; a reason in err.
 */
int lb_hot_window_enable(struct lb_hot_window *hw, const struct lb_config *cfg, char *err,
                         size_t errlen);

/**
 * cfg's hot parameters (threshold, threshold_low, demote_windows, epsilon,
 * ewma_alpha, margin, window_ms, sample) for the running controller (nothing
 * when off).
 *
 * @return 0, or lb_hotkey_set_params's -EINVAL.
 */
int lb_hot_window_configure(struct lb_hot_window *hw, const struct lb_config *cfg);

/** Free the controller and the buffers (hw zeroed or initialised). */
void lb_hot_window_fini(struct lb_hot_window *hw);

#endif /* LB_HOT_WINDOW_H */
