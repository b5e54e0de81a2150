/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: creates the publisher (publish.c), the hot-key windows
 * (hot_window.c) and the control socket with its RPC adapters
 * (control_rpc.c), then runs them on an event loop (loop.c) of callbacks for
 * the signalfd (SIGHUP reloads, SIGTERM/SIGINT drain or stop), the periodic
 * timerfd, the control socket's epoll set and the metrics endpoint.
 *
 * Stop signals with a drain hook (BIRD): the first withdraws and stops after
 * the drain wait; a second, while a hook's exchange is under way, stops as
 * soon as that exchange ends (BIRD's answer or the exchange's own deadline),
 * so a withdrawal once started reaches BIRD; a third stops at once.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dataplane/worker.h"
#include "control/base/clock.h"
#include "control/control.h"
#include "control/runtime/control_rpc.h"
#include "control/runtime/health_run.h"
#include "control/runtime/hot_window.h"
#include "control/base/loop.h"
#include "control/io/metrics.h"
#include "control/io/metrics_http.h"
#include "control/base/persist.h"
#include "control/runtime/publish.h"
#include "control/rpc/rpc.h"
#include "control/io/server.h"
#include "control/io/stats.h"
#include "control/io/telemetry.h"

#define TICK_MS 10
#define STOP_HOOK_WAIT_MS 10000 /* the stop waits this long at most for busy hooks */

struct lb_control {
	struct lb_control_params p;
	struct lb_publisher pub;
	struct lb_hot_window hw; /* hw.hot is NULL when hot keys are off */
	struct lb_control_rpc rpc;
	struct lb_loop *loop;
	int sigfd, timerfd;
	int rc; /* why the loop stopped: 0, or -errno of the control socket */
	struct lb_server *server;
	struct lb_metrics_http *metrics; /* NULL: no --metrics */
	uint64_t last_rx;
	uint64_t idle_ms;
	/* On a stop signal with a drain hook, the loop ends at stop_ms (0: no
	 * stop pending), once no hook is busy. */
	uint64_t stop_ms;
	unsigned int stop_signals; /* SIGTERM/SIGINT read so far */
	/* Test mode only: SPILLWAY_TEST_STALL_FILE (NULL: off). */
	const char *stall_file;
};

int
lb_control_apply(struct lb_control *c, struct lb_config *cfg, char *err, size_t errlen)
{
	return lb_publish_apply(&c->pub, cfg, true, err, errlen);
}

/* The stats method's document, for the control thread's RPC glue. */
static json_t *
stats_doc(const void *arg)
{
	return lb_control_stats(arg);
}

/* The metrics endpoint's body: the stats and hot_list documents as Prometheus text. */
static int
render_metrics(void *arg, const uint64_t *codes, char **text, size_t *len)
{
	struct lb_control *c = arg;
	json_t *stats = lb_control_stats(c);
	json_t *hot = c->rpc.ops.hot_list != NULL ? c->rpc.ops.hot_list(c->rpc.ops.arg) : NULL;
	struct lb_metrics_input in = {
	        .stats = stats, .hot = hot, .version = SPILLWAY_VERSION, .http = codes};
	int rc = stats != NULL ? lb_metrics_render(&in, LB_METRICS_HTTP_MAX_REPLY, text, len)
	                       : -ENOMEM;

	json_decref(stats);
	json_decref(hot);
	return rc;
}

struct lb_control *
lb_control_create(const struct lb_control_params *p, struct lb_config *cfg, char *err,
                  size_t errlen)
{
	struct lb_control *c = calloc(1, sizeof(*c));
	int rc;

	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		lb_config_free(cfg);
		return NULL;
	}
	c->p = *p;
	c->sigfd = c->timerfd = -1;
	c->stall_file = getenv("SPILLWAY_TEST_STALL_FILE");
	if (c->stall_file != NULL && c->stall_file[0] == '\0')
		c->stall_file = NULL;
	if (c->stall_file != NULL)
		fprintf(stderr,
		        "spillwayd: TEST MODE: SPILLWAY_TEST_STALL_FILE=%s stalls workers\n",
		        c->stall_file);
	lb_publish_init(&c->pub, &(struct lb_publish_params){
	                                 .qsv = p->qsv,
	                                 .snap = p->snap,
	                                 .cores = p->cores,
	                                 .lcores = p->lcores,
	                                 .n_cores = p->n_cores,
	                                 .hooks = p->hooks,
	                                 .n_hooks = p->n_hooks,
	                                 .state_path = p->state_path,
	                         });
	if (c->p.sketches != NULL && c->p.window != NULL && cfg->hot.enabled &&
	    lb_hot_window_init(&c->hw, &c->pub, c->p.sketches, c->p.window, cfg, err, errlen) !=
	            0) {
		lb_config_free(cfg);
		free(c);
		return NULL;
	}
	c->pub.health = lb_health_run_create(&c->pub);
	c->pub.lay_health = lb_health_run_lay;
	if (c->pub.health == NULL) {
		snprintf(err, errlen, "out of memory (health checks)");
		lb_hot_window_fini(&c->hw);
		lb_config_free(cfg);
		free(c);
		return NULL;
	}
	lb_control_rpc_init(&c->rpc, stats_doc, c, &c->pub, c->hw.hot != NULL ? &c->hw : NULL,
	                    &c->stop_ms);
	if (c->p.state_path != NULL) {
		int n = lb_persist_cleanup(c->p.state_path);

		if (n > 0)
			fprintf(stderr,
			        "spillwayd: removed %d temporary file(s) of %s left by a "
			        "crash\n",
			        n, c->p.state_path);
	}
	if (lb_publish_apply(&c->pub, cfg, false, err, errlen) != 0) {
		lb_hot_window_fini(&c->hw);
		lb_health_run_destroy(c->pub.health);
		free(c);
		return NULL;
	}
	/* From now on the state file always exists: a restart finds it. */
	if (c->p.state_path != NULL && access(c->p.state_path, F_OK) != 0 && errno == ENOENT &&
	    lb_publish_persist(&c->pub, c->pub.cfg, err, errlen) != 0)
		goto fail;
	if (c->p.control_path != NULL) {
		struct lb_server_params sp = {
		        .path = c->p.control_path,
		        .mode = c->p.control_mode,
		        .idle_ms = c->p.control_idle_ms,
		        .group = c->p.control_group,
		        .on_request = lb_control_rpc_request,
		        .error_reply = lb_rpc_error_reply,
		        .arg = &c->rpc,
		        /* One state file write per turn for all its changes. */
		        .reply_token = lb_control_rpc_token,
		        .commit = lb_control_rpc_commit,
		        .finish = lb_control_rpc_finish,
		};

		c->rpc.group_commit = true;

		c->server = lb_server_create(&sp, err, errlen);
		if (c->server == NULL)
			goto fail;
	}
	/* DPDK telemetry (control/io/telemetry.h): refreshed on the tick. Without
	 * it the daemon still runs; the commands are then missing. */
	rc = lb_telemetry_attach(c->p.cores, c->p.lcores, c->p.n_cores);
	if (rc != 0)
		fprintf(stderr, "spillwayd: DPDK telemetry commands not registered: %s\n",
		        strerror(-rc));
	else
		lb_telemetry_refresh(c->pub.cfg, c->pub.generation, c->hw.hot, c->hw.window);
	if (c->p.metrics_addr != NULL) {
		c->metrics =
		        lb_metrics_http_create(c->p.metrics_addr, render_metrics, c, err, errlen);
		if (c->metrics == NULL)
			goto fail;
	}
	return c;
fail:
	lb_control_destroy(c);
	return NULL;
}

json_t *
lb_control_stats(const struct lb_control *c)
{
	json_t *root = lb_stats_json(c->pub.cfg, c->p.cores, c->p.lcores, c->p.n_cores);
	bool *stalled = calloc(c->p.n_cores > 0 ? c->p.n_cores : 1, sizeof(*stalled));
	json_t *cores;

	if (root == NULL || stalled == NULL) {
		json_decref(root);
		free(stalled);
		return NULL;
	}
	cores = json_object_get(root, "cores");
	if (c->p.pmtu != NULL && c->p.snap != NULL && *c->p.snap != NULL)
		lb_stats_add_path_mtu(root, c->pub.cfg, *c->p.snap, c->p.pmtu,
		                      (uint32_t)(rte_rdtsc() >> c->p.pmtu->tick_shift));
	lb_publish_stalled(&c->pub, stalled);
	json_object_set_new(root, "stalled_cores", lb_publish_stalled_json(&c->pub));
	json_object_set_new(root, "generation", json_integer((json_int_t)c->pub.generation));
	json_object_set_new(root, "publish", lb_publish_json(&c->pub));
	if (c->p.pool != NULL) {
		unsigned int size = c->p.pool->size;
		/* Counts the per-lcore caches as available: exact once workers stop. */
		unsigned int avail = rte_mempool_avail_count(c->p.pool);
		json_t *m = json_object();

		json_object_set_new(m, "size", json_integer(size));
		json_object_set_new(m, "available", json_integer(avail));
		json_object_set_new(m, "in_use", json_integer(size > avail ? size - avail : 0));
		json_object_set_new(root, "mempool", m);
	}
	if (c->p.n_hooks > 0)
		json_object_set_new(root, "hooks", lb_publish_hooks_json(&c->pub));
	if (c->pub.health != NULL)
		json_object_set_new(root, "health", lb_health_run_stats(c->pub.health));
	if (c->rpc.ops.drain != NULL)
		json_object_set_new(root, "drained", json_boolean(c->pub.drained));
	if (c->hw.hot != NULL) {
		json_t *h = lb_hotkey_counters_json(c->hw.hot);

		json_object_set_new(h, "window", json_integer((json_int_t)c->hw.window));
		json_object_set_new(root, "hot", h);
	}
	for (unsigned int i = 0; i < c->p.n_cores; i++) {
		/* Acquire pairs with the worker's release store of its generation. */
		uint64_t g = __atomic_load_n(&c->p.cores[i]->snapshot_gen, __ATOMIC_ACQUIRE);

		json_object_set_new(json_array_get(cores, i), "snapshot_gen",
		                    json_integer((json_int_t)g));
		json_object_set_new(json_array_get(cores, i), "stalled", json_boolean(stalled[i]));
	}
	free(stalled);
	return root;
}

static uint64_t
total_rx(const struct lb_control *c)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < c->p.n_cores; i++)
		n += __atomic_load_n(&c->p.cores[i]->rx_packets, __ATOMIC_RELAXED);
	return n;
}

/*
 * The first setting next changes that only a restart applies, as
 * "field: running -> new (reason)" in buf; false if there is none. The
 * workers sized their flow tables and took their idle timeouts at start-up,
 * and have hot-key sketches only if hot keys were on then.
 */
static bool
restart_only(const struct lb_control *c, const struct lb_config *next, char *buf, size_t len)
{
	const struct lb_config *run = c->pub.cfg;
	static const char why[] = "the workers took it at start-up";

	if (next->flows.capacity != run->flows.capacity)
		snprintf(buf, len, "flows.capacity: %u -> %u (%s)", run->flows.capacity,
		         next->flows.capacity, why);
	else if (next->flows.tcp_idle_ms != run->flows.tcp_idle_ms)
		snprintf(buf, len, "flows.tcp_idle_ms: %u -> %u (%s)", run->flows.tcp_idle_ms,
		         next->flows.tcp_idle_ms, why);
	else if (next->flows.udp_idle_ms != run->flows.udp_idle_ms)
		snprintf(buf, len, "flows.udp_idle_ms: %u -> %u (%s)", run->flows.udp_idle_ms,
		         next->flows.udp_idle_ms, why);
	else if (next->icmp.rate_per_sec != run->icmp.rate_per_sec)
		snprintf(buf, len, "icmp.rate_per_sec: %u -> %u (%s)", run->icmp.rate_per_sec,
		         next->icmp.rate_per_sec, why);
	else if (next->icmp.burst != run->icmp.burst)
		snprintf(buf, len, "icmp.burst: %u -> %u (%s)", run->icmp.burst, next->icmp.burst,
		         why);
	else if (next->hot.weight != run->hot.weight)
		snprintf(buf, len, "hot.weight: %s -> %s (%s)",
		         run->hot.weight == LB_HOT_WEIGHT_BYTES ? "bytes" : "packets",
		         next->hot.weight == LB_HOT_WEIGHT_BYTES ? "bytes" : "packets", why);
	else if (next->hot.enabled && c->hw.hot == NULL && !c->hw.has_sketches)
		snprintf(buf, len,
		         "hot.enabled: false -> true (the workers were started without hot-key "
		         "sketches)");
	else
		return false;
	return true;
}

/*
 * SIGHUP: reload --config. A file that changes a restart-only setting is
 * refused as a whole; hot.enabled turns the controller off or on, the other
 * hot.* settings reach the running controller; the rest is published.
 */
static void
reload(struct lb_control *c)
{
	char err[512];
	struct lb_config *cfg;
	bool was_on = c->hw.hot != NULL, on;
	int rc;

	if (c->p.config_path == NULL) {
		fprintf(stderr, "spillwayd: SIGHUP: no --config to reload; ignored\n");
		return;
	}
	cfg = lb_config_load_file(c->p.config_path, err, sizeof(err));
	if (cfg == NULL) {
		fprintf(stderr, "spillwayd: SIGHUP: %s; keeping the running configuration\n", err);
		return;
	}
	if (restart_only(c, cfg, err, sizeof(err))) {
		fprintf(stderr,
		        "spillwayd: SIGHUP: %s needs a restart; reload refused, keeping the "
		        "running "
		        "configuration\n",
		        err);
		lb_config_free(cfg);
		return;
	}
	on = cfg->hot.enabled;
	if (!was_on && on && lb_hot_window_enable(&c->hw, cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "spillwayd: SIGHUP: %s; keeping the running configuration\n", err);
		lb_config_free(cfg);
		return;
	}
	if (was_on && !on)
		c->pub.hot = NULL; /* built without overrides */
	rc = lb_control_apply(c, cfg, err, sizeof(err));
	if (rc != 0) {
		if (was_on && !on)
			c->pub.hot = c->hw.hot;
		else if (!was_on && on)
			lb_hot_window_disable(&c->hw);
		fprintf(stderr, "spillwayd: SIGHUP: %s; keeping the running configuration\n", err);
		return;
	}
	if (was_on && !on)
		lb_hot_window_disable(&c->hw);
	else if (was_on && lb_hot_window_configure(&c->hw, c->pub.cfg) != 0)
		fprintf(stderr, "spillwayd: SIGHUP: hot keys: parameters refused by the "
		                "controller; it keeps its own\n");
	if (was_on != on)
		lb_control_rpc_init(&c->rpc, stats_doc, c, &c->pub, on ? &c->hw : NULL,
		                    &c->stop_ms);
	fprintf(stderr, "spillwayd: SIGHUP: configuration reloaded (generation %llu)%s%s\n",
	        (unsigned long long)c->pub.generation, c->p.state_path != NULL ? " and saved" : "",
	        was_on == on ? ""
	        : on         ? "; hot keys on"
	                     : "; hot keys off");
}

/*
 * Test mode: while the stall file exists, the worker whose index it holds
 * (0 if it holds none) reports no quiescent state; without it, none is held.
 */
static void
test_stall_tick(const struct lb_control *c)
{
	FILE *f = fopen(c->stall_file, "r");
	unsigned int w = 0;

	if (f != NULL && fscanf(f, "%u", &w) != 1)
		w = 0;
	for (unsigned int i = 0; i < c->p.n_cores && i < RTE_MAX_LCORE; i++)
		lb_worker_test_stall[i] = f != NULL && i == w;
	if (f != NULL)
		fclose(f);
}

/* Whether a hook's exchange (a withdrawal, say) is still under way. */
static bool
hooks_busy(const struct lb_control *c)
{
	for (unsigned int i = 0; i < c->p.n_hooks; i++)
		if (c->p.hooks[i].busy != NULL && c->p.hooks[i].busy(c->p.hooks[i].arg))
			return true;
	return false;
}

/* Attach every hook to the loop (or detach them: NULL). */
static int
hooks_attach(struct lb_control *c, struct lb_loop *loop)
{
	for (unsigned int i = 0; i < c->p.n_hooks; i++) {
		int rc = c->p.hooks[i].attach != NULL
		                 ? c->p.hooks[i].attach(c->p.hooks[i].arg, loop)
		                 : 0;

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* What a tick decided about the loop. */
enum tick_verdict {
	TICK_GO_ON,     /* keep running */
	TICK_IDLE_STOP, /* no packet for idle_exit_ms: stop */
	/* The stop a signal asked for is due (the drain wait over, or the hook
	 * exchange a second signal waits for ended or was given up): stop. */
	TICK_DRAIN_OVER,
};

static enum tick_verdict
on_tick(struct lb_control *c)
{
	uint64_t expirations, rx;

	if (read(c->timerfd, &expirations, sizeof(expirations)) < 0)
		return TICK_GO_ON;
	if (c->stall_file != NULL)
		test_stall_tick(c);
	lb_publish_tick(&c->pub);
	if (c->hw.hot != NULL)
		lb_hot_window_tick(&c->hw);
	lb_health_run_tick(c->pub.health, lb_now_ms());
	for (unsigned int i = 0; i < c->p.n_hooks; i++)
		if (c->p.hooks[i].tick != NULL)
			c->p.hooks[i].tick(c->p.hooks[i].arg, *c->p.snap);
	if (c->server != NULL)
		lb_server_tick(c->server);
	lb_telemetry_refresh(c->pub.cfg, c->pub.generation, c->hw.hot, c->hw.window);
	if (c->metrics != NULL)
		lb_metrics_http_tick(c->metrics);
	if (c->stop_ms != 0 && lb_now_ms() >= c->stop_ms &&
	    (!hooks_busy(c) || lb_now_ms() >= c->stop_ms + STOP_HOOK_WAIT_MS))
		return TICK_DRAIN_OVER;
	if (c->p.idle_exit_ms == 0)
		return TICK_GO_ON;
	rx = total_rx(c);
	if (rx != c->last_rx) {
		c->last_rx = rx;
		c->idle_ms = 0;
		return TICK_GO_ON;
	}
	c->idle_ms += TICK_MS * expirations;
	return c->idle_ms >= c->p.idle_exit_ms ? TICK_IDLE_STOP : TICK_GO_ON;
}

/*
 * A stop signal with an announcer: withdraw first, keep forwarding for
 * drain_wait_ms (from the drain, if it happened earlier) so routers move the
 * traffic away, then stop from the tick.
 */
static void
stop_draining(struct lb_control *c, int sig)
{
	uint64_t now, until;

	if (!c->pub.drained)
		lb_publish_drain(&c->pub, true);
	now = lb_now_ms();
	until = c->pub.drained_ms + c->p.drain_wait_ms;
	c->stop_ms = until > now ? until : now;
	if (c->stop_ms == 0)
		c->stop_ms = 1;
	fprintf(stderr,
	        "spillwayd: %s: routes withdrawn, forwarding for %llu ms more, then stopping "
	        "(send it again to stop once BIRD has answered, a third time to stop now)\n",
	        strsignal(sig), (unsigned long long)(c->stop_ms - now));
}

/*
 * A second stop signal while a hook's exchange is under way: stop from the
 * tick as soon as no hook is busy (each exchange ends by its answer or its
 * own deadline; STOP_HOOK_WAIT_MS caps the whole), not after the drain wait.
 */
static void
stop_after_exchange(struct lb_control *c, int sig)
{
	c->stop_ms = lb_now_ms();
	fprintf(stderr,
	        "spillwayd: %s again: finishing the withdrawal under way with BIRD, then "
	        "stopping (send it again to stop now)\n",
	        strsignal(sig));
}

/* The timerfd: periodic work, and the stops it decides (drain wait over, idle). */
static void
on_timer(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct lb_control *c = arg;
	enum tick_verdict t = on_tick(c);

	(void)fd;
	(void)events;
	if (t == TICK_DRAIN_OVER) {
		fprintf(stderr, "spillwayd: %s, stopping\n",
		        hooks_busy(c)          ? "gave up waiting for the exchange with BIRD"
		        : c->stop_signals >= 2 ? "exchange with BIRD over"
		                               : "drain wait over");
		lb_loop_stop(loop);
	} else if (t == TICK_IDLE_STOP) {
		fprintf(stderr, "spillwayd: idle for %u ms, stopping\n", c->p.idle_exit_ms);
		lb_loop_stop(loop);
	}
}

/* The control socket's epoll set (nested): readable when a client needs us. */
static void
on_server(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct lb_control *c = arg;

	(void)fd;
	(void)events;
	c->rc = lb_server_process(c->server);
	if (c->rc != 0)
		lb_loop_stop(loop);
}

/* The signalfd: SIGHUP reloads; SIGTERM/SIGINT drain first (with an announcer),
 * finish the exchange under way (the second), or stop. */
static void
on_signal(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct lb_control *c = arg;
	struct signalfd_siginfo si;

	(void)events;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload(c);
			continue;
		}
		c->stop_signals++;
		if (c->rpc.ops.drain != NULL && c->stop_signals == 1) {
			stop_draining(c, (int)si.ssi_signo);
			continue;
		}
		if (c->rpc.ops.drain != NULL && c->stop_signals == 2 && hooks_busy(c)) {
			stop_after_exchange(c, (int)si.ssi_signo);
			continue;
		}
		fprintf(stderr, "spillwayd: %s, stopping\n", strsignal((int)si.ssi_signo));
		lb_loop_stop(loop);
		return;
	}
}

int
lb_control_run(struct lb_control *c)
{
	struct itimerspec its = {{0, TICK_MS * 1000000L}, {0, TICK_MS * 1000000L}};
	sigset_t set;
	int rc;

	c->pub.live = true; /* main launched the workers before calling us */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	c->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->loop = lb_loop_create();
	if (c->sigfd < 0 || c->timerfd < 0 || c->loop == NULL ||
	    timerfd_settime(c->timerfd, 0, &its, NULL) != 0)
		return -errno;
	rc = lb_loop_add(c->loop, c->sigfd, LB_LOOP_READABLE, on_signal, c);
	if (rc == 0)
		rc = lb_loop_add(c->loop, c->timerfd, LB_LOOP_READABLE, on_timer, c);
	if (rc == 0 && c->server != NULL)
		rc = lb_loop_add(c->loop, lb_server_fd(c->server), LB_LOOP_READABLE, on_server, c);
	if (rc == 0 && c->metrics != NULL)
		rc = lb_metrics_http_attach(c->metrics, c->loop);
	if (rc == 0)
		rc = hooks_attach(c, c->loop);
	if (rc != 0)
		return rc;
	lb_health_run_attach(c->pub.health, c->loop);
	rc = lb_loop_run(c->loop);
	if (rc == 0)
		rc = c->rc;
	*c->p.stop = true;
	return rc;
}

void
lb_control_destroy(struct lb_control *c)
{
	if (c == NULL)
		return;
	/* Before the counters and the configuration go: no callback reads them
	 * once this returns. */
	lb_telemetry_detach();
	lb_server_destroy(c->server);
	lb_metrics_http_destroy(c->metrics);
	lb_health_run_destroy(c->pub.health); /* its probes' descriptors leave the loop */
	c->pub.health = NULL;
	lb_publish_fini(&c->pub);
	lb_hot_window_fini(&c->hw);
	if (c->loop != NULL)
		hooks_attach(c, NULL);
	lb_loop_destroy(c->loop);
	if (c->sigfd >= 0)
		close(c->sigfd);
	if (c->timerfd >= 0)
		close(c->timerfd);
	free(c);
}
