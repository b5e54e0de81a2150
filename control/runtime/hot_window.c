/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key windows: every window_ms the control thread opens a new window;
 * workers switch their sketch to it on their next poll. On the tick after, the
 * closed window is read from every core, the candidates are merged (the same
 * key seen on several cores counts once, counts summed), and the controller
 * decides the overrides, which reach the workers in a new snapshot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/base/clock.h"
#include "control/runtime/hot_window.h"

#define HOT_CANDS_PER_CORE 256 /* candidates read from each core per window */

void
lb_hot_window_fini(struct lb_hot_window *hw)
{
	lb_hotkey_free(hw->hot);
	free(hw->prev);
	free(hw->load);
	free(hw->vip_total);
	free(hw->cands);
	free(hw->merged);
}

/* The controller's parameters as a configuration gives them. */
static void
params_of(const struct lb_config *cfg, struct lb_hot_params *hp)
{
	*hp = (struct lb_hot_params){
	        .threshold = cfg->hot.threshold,
	        .threshold_low = cfg->hot.threshold_low,
	        .demote_windows = cfg->hot.demote_windows,
	        .epsilon = cfg->hot.epsilon,
	        .ewma_alpha = cfg->hot.ewma_alpha,
	        .margin = cfg->hot.margin > 0 ? cfg->hot.margin : -1, /* 0: none */
	};
}

int
lb_hot_window_init(struct lb_hot_window *hw, struct lb_publisher *pub,
                   struct lb_sketch *const *sketches, volatile uint64_t *open,
                   const struct lb_config *cfg, char *err, size_t errlen)
{
	struct lb_hot_params hp;

	params_of(cfg, &hp);
	hw->pub = pub;
	hw->sketches = sketches;
	hw->open = open;
	hw->hot = lb_hotkey_create(&hp);
	hw->prev = calloc(LB_MAX_BACKENDS, sizeof(*hw->prev));
	hw->load = calloc(LB_MAX_BACKENDS, sizeof(*hw->load));
	hw->vip_total = calloc(LB_MAX_VIPS, sizeof(*hw->vip_total));
	hw->cands = calloc((size_t)pub->n_cores * HOT_CANDS_PER_CORE, sizeof(*hw->cands));
	hw->merged = calloc((size_t)pub->n_cores * HOT_CANDS_PER_CORE, sizeof(*hw->merged));
	if (hw->hot == NULL || hw->prev == NULL || hw->load == NULL || hw->vip_total == NULL ||
	    hw->cands == NULL || hw->merged == NULL) {
		snprintf(err, errlen, "hot keys: cannot create the controller: %s",
		         strerror(errno ? errno : ENOMEM));
		lb_hot_window_fini(hw);
		memset(hw, 0, sizeof(*hw));
		return -ENOMEM;
	}
	hw->has_sketches = true;
	hw->window_ms = cfg->hot.window_ms;
	hw->sample = cfg->hot.sample;
	pub->hot = hw->hot;
	hw->miss_file = getenv("SPILLWAY_TEST_HOT_MISS_FILE");
	if (hw->miss_file != NULL && hw->miss_file[0] == '\0')
		hw->miss_file = NULL;
	if (hw->miss_file != NULL)
		fprintf(stderr,
		        "spillwayd: TEST MODE: SPILLWAY_TEST_HOT_MISS_FILE=%s misses hot-key "
		        "windows\n",
		        hw->miss_file);
	return 0;
}

void
lb_hot_window_disable(struct lb_hot_window *hw)
{
	if (hw->hot == NULL)
		return;
	lb_hotkey_free(hw->hot);
	hw->hot = NULL;
	hw->pub->hot = NULL;
	hw->pending = 0;
}

int
lb_hot_window_enable(struct lb_hot_window *hw, const struct lb_config *cfg, char *err,
                     size_t errlen)
{
	struct lb_hot_params hp;

	if (hw->hot != NULL)
		return 0;
	if (!hw->has_sketches) {
		snprintf(err, errlen, "hot keys: the workers have no sketches");
		return -ENOTSUP;
	}
	params_of(cfg, &hp);
	hw->hot = lb_hotkey_create(&hp);
	if (hw->hot == NULL) {
		snprintf(err, errlen, "hot keys: cannot create the controller: out of memory");
		return -ENOMEM;
	}
	/* Loads count from now: the window open while off is not read. */
	for (uint32_t id = 0; id < LB_MAX_BACKENDS; id++) {
		uint64_t cur = 0;

		for (unsigned int i = 0; i < hw->pub->n_cores; i++)
			cur += lb_hot_window_backend_load(hw, i, id);
		hw->prev[id] = cur;
	}
	hw->pending = 0;
	hw->next_ms = 0;
	hw->skip = true;
	hw->window_ms = cfg->hot.window_ms;
	hw->sample = cfg->hot.sample;
	hw->pub->hot = hw->hot;
	return 0;
}

int
lb_hot_window_configure(struct lb_hot_window *hw, const struct lb_config *cfg)
{
	struct lb_hot_params hp;
	int rc;

	if (hw->hot == NULL)
		return 0;
	params_of(cfg, &hp);
	rc = lb_hotkey_set_params(hw->hot, &hp);
	if (rc == 0) {
		hw->window_ms = cfg->hot.window_ms;
		hw->sample = cfg->hot.sample;
	}
	return rc;
}

static int
cmp_cand(const void *a, const void *b)
{
	const struct lb_sketch_cand *x = a, *y = b;

	if (x->vip_id != y->vip_id)
		return x->vip_id < y->vip_id ? -1 : 1;
	return x->key_hash < y->key_hash ? -1 : x->key_hash > y->key_hash;
}

/* Each backend's load (packets or bytes, hot.weight) since the last call, from
 * the cores' counters. */
static void
take_loads(struct lb_hot_window *hw, const struct lb_snapshot *s)
{
	for (uint32_t id = 0; id < s->n_backends && id < LB_MAX_BACKENDS; id++) {
		uint64_t cur = 0;

		for (unsigned int i = 0; i < hw->pub->n_cores; i++)
			cur += lb_hot_window_backend_load(hw, i, id);
		hw->load[id] = cur - hw->prev[id];
		hw->prev[id] = cur;
	}
}

/* Read window w from every core into cands and vip_total; @return the number
 * of cores whose read failed (0: the window is complete, *n candidates). */
static unsigned int
hot_read(struct lb_hot_window *hw, uint64_t w, uint32_t *n)
{
	unsigned int failed = 0, next_shift;

	*n = 0;
	memset(hw->vip_total, 0, LB_MAX_VIPS * sizeof(*hw->vip_total));
	/* Test mode: while the file exists, every read fails. */
	if (hw->miss_file != NULL && access(hw->miss_file, F_OK) == 0)
		return hw->pub->n_cores ? hw->pub->n_cores : 1;
	/* The window read now was counted at the shift set at the last read: a
	 * packet count scaled up by 2^shift varies by about 2^shift per packet.
	 * (Byte counts keep the controller's default.) */
	if (hw->pub->cfg->hot.weight != LB_HOT_WEIGHT_BYTES)
		lb_hotkey_set_key_var(hw->hot, (double)(1u << hw->shift));
	next_shift = 0;
	for (unsigned int i = 0; i < hw->pub->n_cores; i++) {
		uint64_t totals[LB_MAX_VIPS];
		uint32_t k = 0;
		unsigned int sh;

		/* The core's next window: its sample rate (hw->sample) and unit. */
		sh = lb_sketch_adapt(hw->sketches[i], w, hw->sample,
		                     hw->pub->cfg->hot.weight == LB_HOT_WEIGHT_BYTES,
		                     lb_hot_window_threshold(hw));
		if (sh > next_shift)
			next_shift = sh;
		if (!lb_sketch_read(hw->sketches[i], w, hw->cands + *n, HOT_CANDS_PER_CORE, &k,
		                    totals)) {
			failed++;
			continue;
		}
		*n += k;
		for (unsigned int v = 0; v < LB_MAX_VIPS; v++)
			hw->vip_total[v] += totals[v];
	}
	hw->shift = next_shift;
	return failed;
}

/*
 * Window w: read it from every core; if that fails and final is false, leave
 * it for the next tick (a core may not have closed it yet). A window complete
 * on every core is merged, the backends' loads over it taken from the
 * counters, the controller run, and a new snapshot published if the overrides
 * changed. A window still incomplete at its deadline (final) is missed: its
 * data is unknown, so the controller decides nothing on it; its loads are
 * discarded. @return true when w is done with (processed or missed).
 */
static bool
hot_process(struct lb_hot_window *hw, uint64_t w, bool final)
{
	const struct lb_snapshot *s = *hw->pub->snap;
	uint32_t n = 0, m = 0;
	unsigned int failed;
	char err[256];

	/* Overrides could not be published while a core is stalled. */
	failed = lb_publish_stalled(hw->pub, NULL) > 0 ? hw->pub->n_cores : hot_read(hw, w, &n);
	if (failed > 0) {
		if (!final)
			return false;
		hw->missed += failed;
		take_loads(hw, s);
		lb_hotkey_window_missed(hw->hot, w);
		return true;
	}
	/* Same (VIP, key) on several cores: one candidate, counts summed. */
	qsort(hw->cands, n, sizeof(*hw->cands), cmp_cand);
	for (uint32_t i = 0; i < n; i++) {
		if (m > 0 && hw->merged[m - 1].vip_id == hw->cands[i].vip_id &&
		    hw->merged[m - 1].key_hash == hw->cands[i].key_hash) {
			hw->merged[m - 1].count += hw->cands[i].count;
			continue;
		}
		hw->merged[m].vip_id = hw->cands[i].vip_id;
		hw->merged[m].key_hash = hw->cands[i].key_hash;
		hw->merged[m].key = hw->cands[i].key;
		hw->merged[m].count = hw->cands[i].count;
		m++;
	}
	take_loads(hw, s);
	if (lb_hotkey_window(hw->hot, s, hw->load, hw->vip_total, hw->merged, m, w)) {
		struct lb_snapshot *ns = lb_publish_build(hw->pub, hw->pub->cfg, err, sizeof(err));

		if (ns == NULL)
			fprintf(stderr, "spillwayd: hot keys: %s; overrides not published\n", err);
		else if (lb_publish_snapshot(hw->pub, ns) != 0)
			fprintf(stderr, "spillwayd: hot keys: overrides not published (a worker is "
			                "stalled); the next publication carries them\n");
	}
	return true;
}

void
lb_hot_window_tick(struct lb_hot_window *hw)
{
	uint64_t now = lb_now_ms();

	/* The closed window is read on the ticks that follow, until the next
	 * window opens: after that a core may reuse its buffer. */
	if (hw->pending != 0 && hot_process(hw, hw->pending, now >= hw->next_ms))
		hw->pending = 0;
	if (now < hw->next_ms)
		return;
	hw->next_ms = now + hw->window_ms;
	hw->window++;
	/* Release: pairs with the workers' acquire load in lb_sketch_poll. */
	__atomic_store_n(hw->open, hw->window, __ATOMIC_RELEASE);
	if (hw->window > 1 && !hw->skip)
		hw->pending = hw->window - 1;
	hw->skip = false;
}
