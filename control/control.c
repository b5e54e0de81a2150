/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control thread event loop and snapshot publication.
 *
 * Publication: build the new snapshot completely, store its pointer with
 * release semantics, take an RCU token, and park the old snapshot on a retire
 * list. The periodic timer polls rte_rcu_qsbr_check() without blocking and frees
 * a retired snapshot once every worker has reported a quiescent state since.
 *
 * A change is built completely (ids, snapshot), then written to the state file,
 * then published: a failure at any step leaves both the running configuration
 * and the file as they were. The control socket's requests arrive here as lines
 * and are answered by rpc.c through struct lb_rpc_ops.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

#include "control.h"
#include "persist.h"
#include "rpc.h"
#include "server.h"
#include "snapshot_build.h"
#include "stats.h"

#define TICK_MS 10
#define RETIRE_MAX 64
#define PUB_SAMPLES 1024
#define PUB_WAIT_MAX_NS 50000000ull /* give up waiting for a stuck worker after 50 ms */

struct retired {
	struct lb_snapshot *snap;
	uint64_t token;
};

struct lb_control {
	struct lb_control_params p;
	struct lb_config *cfg;
	/* Identity of memberships across changes: a VIP or backend that stays keeps
	 * its id; an id that is freed and reused gets a new generation, so flows
	 * pinned to its previous owner are never taken for the new one's. */
	uint16_t backend_gen[LB_MAX_BACKENDS];
	uint64_t generation;
	bool live; /* workers are running: publication waits for them to switch */
	/* Publication latency (store of the pointer -> every worker on it), ns,
	 * the last PUB_SAMPLES changes; and the last snapshot build time. */
	uint64_t pub_ns[PUB_SAMPLES];
	uint64_t pub_count;
	uint64_t pub_timeouts;
	uint64_t build_ns;
	struct retired retire[RETIRE_MAX];
	unsigned int n_retire;
	int epfd, sigfd, timerfd;
	struct lb_server *server;
	struct lb_rpc_ops ops;
	uint64_t last_rx;
	uint64_t idle_ms;
};

static void
reclaim(struct lb_control *c, bool wait)
{
	unsigned int j = 0;

	for (unsigned int i = 0; i < c->n_retire; i++) {
		struct retired *r = &c->retire[i];

		if (rte_rcu_qsbr_check(c->p.qsv, r->token, wait) == 1)
			lb_snapshot_free(r->snap);
		else
			c->retire[j++] = *r;
	}
	c->n_retire = j;
}

static const struct lb_cfg_vip *
find_vip(const struct lb_config *cfg, const struct lb_cfg_vip *v)
{
	for (uint32_t i = 0; cfg != NULL && i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *o = &cfg->vips[i];

		if (o->af == v->af && o->proto == v->proto && o->port == v->port &&
		    memcmp(&o->addr, &v->addr, sizeof(o->addr)) == 0)
			return o;
	}
	return NULL;
}

/* Order of backends by (family, address, name): the identity that matching uses. */
static int
cmp_backend(const struct lb_cfg_backend *a, const struct lb_cfg_backend *b)
{
	int d = memcmp(&a->addr, &b->addr, sizeof(a->addr));

	if (d == 0)
		d = (int)a->af - (int)b->af;
	if (d == 0)
		d = strcmp(a->name, b->name);
	return d;
}

static int
cmp_backend_ptr(const void *a, const void *b)
{
	return cmp_backend(*(const struct lb_cfg_backend *const *)a,
			   *(const struct lb_cfg_backend *const *)b);
}

/* The backend of sorted (n entries, by cmp_backend) with b's identity, or NULL. */
static const struct lb_cfg_backend *
find_backend(const struct lb_cfg_backend *const *sorted, uint32_t n,
	     const struct lb_cfg_backend *b)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int d = cmp_backend(sorted[mid], b);

		if (d == 0)
			return sorted[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The first free slot at or after *cursor (wrapping), marked used; -1 if none. */
static int
alloc_id(bool *used, unsigned int n, unsigned int *cursor)
{
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = (*cursor + k) % n;

		if (!used[i]) {
			used[i] = true;
			*cursor = i + 1;
			return (int)i;
		}
	}
	return -1;
}

/*
 * Give next's VIPs and backends the ids they have in the running config
 * (matched by VIP address/port/protocol and backend identity + address); new
 * ones get free ids, with a fresh generation for backends.
 */
static int
assign_ids(struct lb_control *c, struct lb_config *next)
{
	bool vip_used[LB_MAX_VIPS] = {false};
	bool *be_used = calloc(LB_MAX_BACKENDS, sizeof(*be_used));
	const struct lb_cfg_backend **sorted = calloc(LB_MAX_BACKENDS, sizeof(*sorted));
	unsigned int vip_cursor = 0, be_cursor = 0;

	if (be_used == NULL || sorted == NULL) {
		free(be_used);
		free(sorted);
		return -ENOMEM;
	}
	/* Pass 1: carry over ids of what stays. */
	for (uint32_t i = 0; i < next->n_vips; i++) {
		struct lb_cfg_vip *v = &next->vips[i];
		const struct lb_cfg_vip *ov = find_vip(c->cfg, v);

		v->id = UINT16_MAX;
		if (ov != NULL) {
			v->id = ov->id;
			vip_used[v->id] = true;
		}
		uint32_t n_old = ov != NULL ? ov->n_backends : 0;

		/* Sorted once per VIP, so matching N backends costs O(N log N). */
		for (uint32_t j = 0; j < n_old; j++)
			sorted[j] = &ov->backends[j];
		qsort(sorted, n_old, sizeof(*sorted), cmp_backend_ptr);
		for (uint32_t j = 0; j < v->n_backends; j++) {
			struct lb_cfg_backend *b = &v->backends[j];
			const struct lb_cfg_backend *ob = find_backend(sorted, n_old, b);

			b->id = UINT16_MAX;
			if (ob != NULL) {
				b->id = ob->id;
				b->gen = ob->gen;
				be_used[b->id] = true;
			}
		}
	}
	/* Pass 2: new ids for what is new. */
	for (uint32_t i = 0; i < next->n_vips; i++) {
		struct lb_cfg_vip *v = &next->vips[i];

		if (v->id == UINT16_MAX)
			v->id = (uint16_t)alloc_id(vip_used, LB_MAX_VIPS, &vip_cursor);
		for (uint32_t j = 0; j < v->n_backends; j++) {
			struct lb_cfg_backend *b = &v->backends[j];
			int id;

			if (b->id != UINT16_MAX)
				continue;
			id = alloc_id(be_used, LB_MAX_BACKENDS, &be_cursor);
			if (id < 0) {
				free(be_used);
				free(sorted);
				return -ENOSPC;
			}
			b->id = (uint16_t)id;
			/* Never 0 (the unused-slot marker), never a generation an old
			 * flow entry for this id could hold. */
			if (++c->backend_gen[id] == 0)
				c->backend_gen[id] = 1;
			b->gen = c->backend_gen[id];
		}
	}
	free(be_used);
	free(sorted);
	return 0;
}

static int
persist(const struct lb_control *c, const struct lb_config *cfg, char *err, size_t errlen)
{
	json_t *doc = lb_config_to_json(cfg);
	int rc;

	if (doc == NULL) {
		snprintf(err, errlen, "%s: out of memory", c->p.state_path);
		return -ENOMEM;
	}
	err[0] = '\0';
	rc = lb_persist_write(c->p.state_path, doc, err, errlen);
	json_decref(doc);
	if (rc != 0 && err[0] == '\0')
		snprintf(err, errlen, "%s: cannot write the state file: %s", c->p.state_path,
			 strerror(-rc));
	return rc;
}

/*
 * Wait until every worker runs the snapshot just published, so a reply means
 * "in force everywhere". Workers poll without sleeping, so this takes one loop
 * pass (microseconds); the wait is bounded in case a worker is descheduled.
 */
static void
wait_switch(struct lb_control *c)
{
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc(), dt;
	uint64_t limit = PUB_WAIT_MAX_NS * hz / 1000000000ull;

	for (;;) {
		unsigned int behind = 0;

		for (unsigned int i = 0; i < c->p.n_cores; i++)
			if (__atomic_load_n(&c->p.cores[i]->snapshot_gen, __ATOMIC_ACQUIRE) <
			    c->generation)
				behind++;
		dt = rte_rdtsc() - t0;
		if (behind == 0)
			break;
		if (dt > limit) {
			c->pub_timeouts++;
			return;
		}
		rte_pause();
	}
	c->pub_ns[c->pub_count++ % PUB_SAMPLES] = dt * 1000000000ull / hz;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* {"samples", "last_us", "p50_us", "p99_us", "max_us", "timeouts", "build_us"} */
static json_t *
publish_json(const struct lb_control *c)
{
	uint64_t v[PUB_SAMPLES];
	unsigned int n = c->pub_count < PUB_SAMPLES ? (unsigned int)c->pub_count : PUB_SAMPLES;
	json_t *o = json_object();

	json_object_set_new(o, "samples", json_integer((json_int_t)c->pub_count));
	json_object_set_new(o, "timeouts", json_integer((json_int_t)c->pub_timeouts));
	json_object_set_new(o, "build_us", json_real((double)c->build_ns / 1000.0));
	if (n == 0)
		return o;
	json_object_set_new(o, "last_us",
			    json_real((double)c->pub_ns[(c->pub_count - 1) % PUB_SAMPLES] / 1000.0));
	memcpy(v, c->pub_ns, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_u64);
	json_object_set_new(o, "p50_us", json_real((double)v[n / 2] / 1000.0));
	json_object_set_new(o, "p99_us", json_real((double)v[(n * 99) / 100] / 1000.0));
	json_object_set_new(o, "max_us", json_real((double)v[n - 1] / 1000.0));
	return o;
}

/* Build, persist (if asked and configured), publish. Takes ownership of cfg. */
static int
apply(struct lb_control *c, struct lb_config *cfg, bool save, char *err, size_t errlen)
{
	struct lb_snapshot *s, *old;
	int rc;

	/* assign_ids may advance backend generations even if a later step fails:
	 * harmless, a generation is only required never to repeat. */
	rc = assign_ids(c, cfg);
	if (rc != 0) {
		snprintf(err, errlen, "cannot assign ids: %s", strerror(-rc));
		lb_config_free(cfg);
		return rc;
	}
	uint64_t t0 = rte_rdtsc();

	s = lb_snapshot_build(cfg, c->generation + 1, err, errlen);
	c->build_ns = (rte_rdtsc() - t0) * 1000000000ull / rte_get_tsc_hz();
	if (s == NULL) {
		lb_config_free(cfg);
		return -ENOMEM;
	}
	if (save && c->p.state_path != NULL) {
		rc = persist(c, cfg, err, errlen);
		if (rc != 0) {
			lb_snapshot_free(s); /* never published: no reader has it */
			lb_config_free(cfg);
			return rc;
		}
	}
	reclaim(c, false);
	if (c->n_retire == RETIRE_MAX) {
		/* Workers are slow to pass a quiescent state: wait rather than leak. */
		reclaim(c, true);
	}
	old = *c->p.snap;
	/* Release: every store that filled the snapshot happens before the pointer. */
	__atomic_store_n(c->p.snap, s, __ATOMIC_RELEASE);
	c->generation++;
	if (old != NULL) {
		c->retire[c->n_retire].snap = old;
		c->retire[c->n_retire].token = rte_rcu_qsbr_start(c->p.qsv);
		c->n_retire++;
	}
	lb_config_free(c->cfg);
	c->cfg = cfg;
	if (c->live)
		wait_switch(c);
	return 0;
}

int
lb_control_apply(struct lb_control *c, struct lb_config *cfg, char *err, size_t errlen)
{
	return apply(c, cfg, true, err, errlen);
}

/* ---- what the RPC handlers reach (struct lb_rpc_ops) ---- */

static const struct lb_config *
ops_config(void *arg)
{
	const struct lb_control *c = arg;

	return c->cfg;
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
	rc = persist(c, c->cfg, err, errlen);
	/* rpc.h's convention: on success err carries the path for the reply. */
	if (rc == 0)
		snprintf(err, errlen, "%s", c->p.state_path);
	return rc;
}

static char *
on_request(void *arg, const char *line, size_t len)
{
	const struct lb_control *c = arg;

	return lb_rpc_handle(&c->ops, line, len);
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
	c->ops = (struct lb_rpc_ops){
		.arg = c,
		.config = ops_config,
		.apply = ops_apply,
		.stats = ops_stats,
		.snapshot = ops_snapshot,
		.save = ops_save,
	};
	if (c->p.state_path != NULL) {
		int n = lb_persist_cleanup(c->p.state_path);

		if (n > 0)
			fprintf(stderr, "spillwayd: removed %d temporary file(s) of %s left by a "
					"crash\n",
				n, c->p.state_path);
	}
	if (apply(c, cfg, false, err, errlen) != 0) {
		free(c);
		return NULL;
	}
	/* From now on the state file always exists: a restart finds it. */
	if (c->p.state_path != NULL && access(c->p.state_path, F_OK) != 0 && errno == ENOENT &&
	    persist(c, c->cfg, err, errlen) != 0)
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
	json_t *root = lb_stats_json(c->cfg, c->p.cores, c->p.lcores, c->p.n_cores);
	json_t *cores;

	if (root == NULL)
		return NULL;
	cores = json_object_get(root, "cores");
	json_object_set_new(root, "generation", json_integer((json_int_t)c->generation));
	json_object_set_new(root, "publish", publish_json(c));
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
			(unsigned long long)c->generation,
			c->p.state_path != NULL ? " and saved" : "");
}

static int
on_tick(struct lb_control *c)
{
	uint64_t expirations, rx;

	if (read(c->timerfd, &expirations, sizeof(expirations)) < 0)
		return 0;
	reclaim(c, false);
	if (c->server != NULL)
		lb_server_tick(c->server);
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

int
lb_control_run(struct lb_control *c)
{
	struct itimerspec its = {{0, TICK_MS * 1000000L}, {0, TICK_MS * 1000000L}};
	struct epoll_event ev;
	sigset_t set;
	int rc = 0;

	c->live = true; /* main launched the workers before calling us */
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
				if (on_tick(c)) {
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
	for (unsigned int i = 0; i < c->n_retire; i++)
		lb_snapshot_free(c->retire[i].snap);
	lb_snapshot_free(*c->p.snap);
	*c->p.snap = NULL;
	lb_config_free(c->cfg);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->sigfd >= 0)
		close(c->sigfd);
	if (c->timerfd >= 0)
		close(c->timerfd);
	free(c);
}
