/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control thread event loop. Snapshots are built and published by publish.c.
 * The control socket's requests arrive here as lines and are answered by
 * rpc.c through struct lb_rpc_ops.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "clock.h"
#include "hot_window.h"
#include "hotkey.h"
#include "persist.h"
#include "publish.h"
#include "rpc.h"
#include "server.h"
#include "stats.h"

#define TICK_MS 10

struct lb_control {
	struct lb_control_params p;
	struct lb_publisher pub;
	struct lb_hot_window hw; /* hw.hot is NULL when hot keys are off */
	int epfd, sigfd, timerfd;
	struct lb_server *server;
	struct lb_rpc_ops ops;
	uint64_t last_rx;
	uint64_t idle_ms;
	/* On a stop signal with a drain hook, the loop ends at stop_ms (0: no
	 * stop pending). */
	uint64_t stop_ms;
};

int
lb_control_apply(struct lb_control *c, struct lb_config *cfg, char *err, size_t errlen)
{
	return lb_publish_apply(&c->pub, cfg, true, err, errlen);
}

/* ---- what the RPC handlers reach (struct lb_rpc_ops) ---- */

static const struct lb_config *
ops_config(void *arg)
{
	const struct lb_control *c = arg;

	return c->pub.cfg;
}

static int
ops_apply(void *arg, struct lb_config *next, char *err, size_t errlen)
{
	return lb_control_apply(arg, next, err, errlen);
}

static json_t *
ops_stats(void *arg)
{
	return lb_control_stats(arg);
}

static const struct lb_snapshot *
ops_snapshot(void *arg)
{
	const struct lb_control *c = arg;

	return *c->p.snap;
}

static int
ops_save(void *arg, char *err, size_t errlen)
{
	const struct lb_control *c = arg;

	int rc;

	if (c->p.state_path == NULL) {
		snprintf(err, errlen,
		         "no state file configured (start spillwayd with --state FILE)");
		return -ENOENT;
	}
	rc = lb_publish_persist(&c->pub, c->pub.cfg, err, errlen);
	/* rpc.h's convention: on success err carries the path for the reply. */
	if (rc == 0)
		snprintf(err, errlen, "%s", c->p.state_path);
	return rc;
}

static json_t *
ops_drain(void *arg, bool on)
{
	struct lb_control *c = arg;

	if (!on && c->stop_ms != 0) {
		/* Stopping after a signal: announcing again would attract traffic
		 * the instance is about to drop. */
		fprintf(stderr, "spillwayd: undrain ignored: stopping\n");
	} else {
		lb_publish_drain(&c->pub, on);
		fprintf(stderr, "spillwayd: %s\n",
		        on ? "drained: routes withdrawn, still forwarding"
		           : "undrained: routes announced");
	}
	return json_pack("{s:b, s:b, s:o}", "drained", c->pub.drained, "stopping", c->stop_ms != 0,
	                 "hooks", lb_publish_hooks_json(&c->pub));
}

static char *
on_request(void *arg, const char *line, size_t len)
{
	const struct lb_control *c = arg;

	return lb_rpc_handle(&c->ops, line, len);
}

static const struct lb_vip *
snap_vip(const struct lb_snapshot *s, uint16_t vip_id)
{
	for (uint32_t i = 0; i < s->n_vips; i++)
		if (s->vips[i].id == vip_id)
			return &s->vips[i];
	return NULL;
}

static json_t *
vip_ref_json(const struct lb_vip *v)
{
	char buf[64];

	return json_pack("{s:s, s:i, s:s}", "address", lb_ip_to_str(v->af, &v->addr, buf, 64),
	                 "port", (json_int_t)ntohs(v->port), "protocol",
	                 v->proto == IPPROTO_TCP ? "tcp" : "udp");
}

/* The key as the VIP's key mode sees it. */
static json_t *
key_json(const struct lb_vip *v, const struct lb_flow_key *k)
{
	char buf[64];
	json_t *o = json_object();

	json_object_set_new(o, "src", json_string(lb_ip_to_str(k->af, &k->src, buf, 64)));
	if (v->key_mode != LB_KEY_SRC_IP)
		json_object_set_new(o, "dport", json_integer(ntohs(k->dport)));
	if (v->key_mode == LB_KEY_5TUPLE) {
		json_object_set_new(o, "sport", json_integer(ntohs(k->sport)));
		json_object_set_new(o, "dst", json_string(lb_ip_to_str(k->af, &k->dst, buf, 64)));
		json_object_set_new(o, "protocol",
		                    json_string(k->proto == IPPROTO_TCP ? "tcp" : "udp"));
	}
	return o;
}

static json_t *
hot_params_json(const struct lb_control *c)
{
	struct lb_hot_params hp;

	lb_hotkey_get_params(c->hw.hot, &hp);
	return json_pack("{s:f, s:f, s:f, s:i, s:i}", "threshold", hp.threshold, "threshold_low",
	                 hp.threshold_low, "epsilon", hp.epsilon, "demote_windows",
	                 (json_int_t)hp.demote_windows, "window_ms", (json_int_t)c->hw.window_ms);
}

static json_t *
ops_hot_list(void *arg)
{
	const struct lb_control *c = arg;
	const struct lb_snapshot *s = *c->p.snap;
	const struct lb_hot_override *o;
	uint32_t n = lb_hotkey_overrides(c->hw.hot, &o);
	json_t *root = json_object(), *arr = json_array();
	json_t *counters = lb_hotkey_counters_json(c->hw.hot);
	char buf[64];

	json_object_set_new(counters, "missed_core_windows",
	                    json_integer((json_int_t)c->hw.missed));
	json_object_set_new(root, "params", hot_params_json(c));
	json_object_set_new(root, "window", json_integer((json_int_t)c->hw.window));
	json_object_set_new(root, "counters", counters);
	for (uint32_t i = 0; i < n; i++) {
		const struct lb_vip *v = snap_vip(s, o[i].vip_id);
		json_t *reps = json_array(), *e;

		if (v == NULL)
			continue;
		for (uint16_t r = 0; r < o[i].n_replicas; r++) {
			const struct lb_backend *b = &s->backends[o[i].replicas[r]];

			json_array_append_new(reps,
			                      json_string(lb_ip_to_str(b->af, &b->addr, buf, 64)));
		}
		snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)o[i].key_hash);
		e = json_pack("{s:o, s:o, s:s, s:f, s:o, s:I, s:b}", "vip", vip_ref_json(v), "key",
		              key_json(v, &o[i].key), "key_hash", buf, "share", o[i].share,
		              "replicas", reps, "since_window", (json_int_t)o[i].since_window,
		              "pinned", o[i].pinned);
		json_array_append_new(arr, e);
	}
	json_object_set_new(root, "overrides", arr);
	return root;
}

static json_t *
ops_hot_events(void *arg)
{
	const struct lb_control *c = arg;
	const struct lb_snapshot *s = *c->p.snap;
	json_t *ev = lb_hotkey_events_json(c->hw.hot), *e;
	size_t i;

	/* Name VIPs as clients do, by address, port and protocol. */
	json_array_foreach (ev, i, e) {
		const struct lb_vip *v =
		        snap_vip(s, (uint16_t)json_integer_value(json_object_get(e, "vip_id")));

		if (v != NULL)
			json_object_set_new(e, "vip", vip_ref_json(v));
	}
	return ev;
}

static int
ops_hot_set(void *arg, const json_t *params, char *err, size_t errlen)
{
	struct lb_control *c = arg;
	struct lb_hot_params hp;
	json_t *v;
	int rc;

	lb_hotkey_get_params(c->hw.hot, &hp);
	if ((v = json_object_get(params, "threshold")) != NULL) {
		double old = hp.threshold;

		hp.threshold = json_number_value(v);
		/* Keep the demotion threshold's ratio unless it is set too. */
		if (json_object_get(params, "threshold_low") == NULL)
			hp.threshold_low = hp.threshold_low * hp.threshold / old;
	}
	if ((v = json_object_get(params, "threshold_low")) != NULL)
		hp.threshold_low = json_number_value(v);
	if ((v = json_object_get(params, "epsilon")) != NULL)
		hp.epsilon = json_number_value(v);
	if ((v = json_object_get(params, "demote_windows")) != NULL)
		hp.demote_windows = (uint32_t)json_integer_value(v);
	rc = lb_hotkey_set_params(c->hw.hot, &hp);
	if (rc != 0) {
		snprintf(err, errlen,
		         "invalid hot-key parameters (threshold_low must not exceed "
		         "threshold)");
		return rc;
	}
	if ((v = json_object_get(params, "window_ms")) != NULL)
		c->hw.window_ms = (uint32_t)json_integer_value(v);
	return 0;
}

static int
ops_hot_pin(void *arg, uint16_t vip_id, const struct lb_flow_key *key, uint16_t r, bool pin,
            char *err, size_t errlen)
{
	struct lb_control *c = arg;
	const struct lb_snapshot *s = *c->p.snap;
	const struct lb_vip *v = snap_vip(s, vip_id);
	struct lb_snapshot *ns;
	uint64_t kh;
	int rc;

	if (v == NULL) {
		snprintf(err, errlen, "no such VIP");
		return -ENOENT;
	}
	kh = lb_vip_key_hash(s, v, key, lb_hash_flow(&s->hkey, key));
	rc = pin ? lb_hotkey_pin(c->hw.hot, s, vip_id, kh, key, r, c->hw.window)
	         : lb_hotkey_unpin(c->hw.hot, vip_id, kh);
	if (rc != 0) {
		snprintf(err, errlen, "%s",
		         rc == -ENOENT   ? "no override for that key"
		         : rc == -ENOSPC ? "override table full"
		                         : strerror(-rc));
		return rc;
	}
	ns = lb_publish_build(&c->pub, c->pub.cfg, err, errlen);
	if (ns == NULL)
		return -ENOMEM;
	lb_publish_snapshot(&c->pub, ns);
	return 0;
}

struct lb_control *
lb_control_create(const struct lb_control_params *p, struct lb_config *cfg, char *err,
                  size_t errlen)
{
	struct lb_control *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		lb_config_free(cfg);
		return NULL;
	}
	c->p = *p;
	c->epfd = c->sigfd = c->timerfd = -1;
	lb_publish_init(&c->pub, p);
	c->ops = (struct lb_rpc_ops){
	        .arg = c,
	        .config = ops_config,
	        .apply = ops_apply,
	        .stats = ops_stats,
	        .snapshot = ops_snapshot,
	        .save = ops_save,
	};
	for (unsigned int i = 0; i < c->p.n_hooks; i++)
		if (c->p.hooks[i].drain != NULL)
			c->ops.drain = ops_drain;
	if (c->p.sketches != NULL && c->p.window != NULL && cfg->hot.enabled &&
	    lb_hot_window_init(&c->hw, &c->pub, c->p.sketches, c->p.window, cfg, err, errlen) !=
	            0) {
		lb_config_free(cfg);
		free(c);
		return NULL;
	}
	if (c->hw.hot != NULL) {
		c->ops.hot_list = ops_hot_list;
		c->ops.hot_events = ops_hot_events;
		c->ops.hot_set = ops_hot_set;
		c->ops.hot_pin = ops_hot_pin;
	}
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
		        .group = c->p.control_group,
		        .on_request = on_request,
		        .error_reply = lb_rpc_error_reply,
		        .arg = c,
		};

		c->server = lb_server_create(&sp, err, errlen);
		if (c->server == NULL)
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
	json_t *cores;

	if (root == NULL)
		return NULL;
	cores = json_object_get(root, "cores");
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
	if (c->ops.drain != NULL)
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
	}
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

static void
reload(struct lb_control *c)
{
	char err[512];
	struct lb_config *cfg;

	if (c->p.config_path == NULL) {
		fprintf(stderr, "spillwayd: SIGHUP: no --config to reload; ignored\n");
		return;
	}
	cfg = lb_config_load_file(c->p.config_path, err, sizeof(err));
	if (cfg == NULL) {
		fprintf(stderr, "spillwayd: SIGHUP: %s; keeping the running configuration\n", err);
		return;
	}
	if (lb_control_apply(c, cfg, err, sizeof(err)) != 0)
		fprintf(stderr, "spillwayd: SIGHUP: %s; keeping the running configuration\n", err);
	else
		fprintf(stderr, "spillwayd: SIGHUP: configuration reloaded (generation %llu)%s\n",
		        (unsigned long long)c->pub.generation,
		        c->p.state_path != NULL ? " and saved" : "");
}

static int
on_tick(struct lb_control *c)
{
	uint64_t expirations, rx;

	if (read(c->timerfd, &expirations, sizeof(expirations)) < 0)
		return 0;
	lb_publish_reclaim(&c->pub, false);
	if (c->hw.hot != NULL)
		lb_hot_window_tick(&c->hw);
	for (unsigned int i = 0; i < c->p.n_hooks; i++)
		if (c->p.hooks[i].tick != NULL)
			c->p.hooks[i].tick(c->p.hooks[i].arg, *c->p.snap);
	if (c->server != NULL)
		lb_server_tick(c->server);
	if (c->stop_ms != 0 && lb_now_ms() >= c->stop_ms)
		return 2;
	if (c->p.idle_exit_ms == 0)
		return 0;
	rx = total_rx(c);
	if (rx != c->last_rx) {
		c->last_rx = rx;
		c->idle_ms = 0;
		return 0;
	}
	c->idle_ms += TICK_MS * expirations;
	return c->idle_ms >= c->p.idle_exit_ms;
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
	        "(send it again to stop now)\n",
	        strsignal(sig), (unsigned long long)(c->stop_ms - now));
}

int
lb_control_run(struct lb_control *c)
{
	struct itimerspec its = {{0, TICK_MS * 1000000L}, {0, TICK_MS * 1000000L}};
	struct epoll_event ev;
	sigset_t set;
	int rc = 0;

	c->pub.live = true; /* main launched the workers before calling us */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	c->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->sigfd < 0 || c->timerfd < 0 || c->epfd < 0 ||
	    timerfd_settime(c->timerfd, 0, &its, NULL) != 0)
		return -errno;
	ev.events = EPOLLIN;
	ev.data.fd = c->sigfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->sigfd, &ev) != 0)
		return -errno;
	ev.data.fd = c->timerfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->timerfd, &ev) != 0)
		return -errno;
	if (c->server != NULL) {
		/* Nested epoll: the server's set is readable when a client needs us. */
		ev.data.fd = lb_server_fd(c->server);
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0)
			return -errno;
	}

	for (;;) {
		struct epoll_event evs[8];
		int n = epoll_wait(c->epfd, evs, 8, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == c->timerfd) {
				int t = on_tick(c);

				if (t == 2) {
					fprintf(stderr, "spillwayd: drain wait over, stopping\n");
					goto out;
				}
				if (t) {
					fprintf(stderr, "spillwayd: idle for %u ms, stopping\n",
					        c->p.idle_exit_ms);
					goto out;
				}
			} else if (c->server != NULL && evs[i].data.fd == lb_server_fd(c->server)) {
				rc = lb_server_process(c->server);
				if (rc != 0)
					goto out;
			} else if (evs[i].data.fd == c->sigfd) {
				struct signalfd_siginfo si;

				while (read(c->sigfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGHUP) {
						reload(c);
						continue;
					}
					if (c->ops.drain != NULL && c->stop_ms == 0) {
						stop_draining(c, (int)si.ssi_signo);
						continue;
					}
					fprintf(stderr, "spillwayd: %s, stopping\n",
					        strsignal((int)si.ssi_signo));
					goto out;
				}
			}
		}
	}
out:
	*c->p.stop = true;
	return rc;
}

void
lb_control_destroy(struct lb_control *c)
{
	if (c == NULL)
		return;
	lb_server_destroy(c->server);
	lb_publish_fini(&c->pub);
	lb_hot_window_fini(&c->hw);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->sigfd >= 0)
		close(c->sigfd);
	if (c->timerfd >= 0)
		close(c->timerfd);
	free(c);
}
