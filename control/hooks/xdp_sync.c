/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The XDP VIP map follows the published snapshot (see xdp_sync.h). Each
 * snapshot gives a sorted set of wanted entries; updates are diffs against the
 * set the maps hold. After any failed map operation the control tick (about
 * once a second) reconciles the whole map against the live snapshot (delete
 * what is not wanted, put everything), until one pass succeeds; a publication
 * in between reconciles fully too. One error cannot leave the map wrong long.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <bpf/bpf.h>

#include "control/hooks/xdp_sync.h"
#include "bpf/xsk_steer_loader.h"

#define XDP_SYNC_PORTS_MAX 64
#define TICKS_PER_CHECK 100 /* the control timer ticks every ~10 ms: ~1 s */
#define WARN_INTERVAL_S 10

struct xdp_port {
	uint16_t port;
	int ifindex;
	struct lb_xsk_maps maps;
	uint64_t no_xsk_seen; /* pass_no_xsk at the last check */
};

/* One map entry spillwayd wants: a VIP, or an address's fragments-only entry. */
struct entry {
	struct lb_xsk_vip_key k;
	struct lb_xsk_vip_value v;
};

struct entry_set {
	struct entry *e; /* sorted by key (memcmp) */
	uint32_t n;
};

struct lb_xdp_sync {
	struct xdp_port ports[XDP_SYNC_PORTS_MAX];
	unsigned int n_ports;
	struct entry_set live; /* what the maps hold after the last after() */
	struct entry_set want; /* the snapshot being published (before -> after) */
	bool dirty;            /* a map operation failed: reconcile fully next time */
	bool full;             /* this publication rewrites and purges the whole map */
	uint64_t map_errors;
	uint64_t adds, removes, reconciles;
	uint64_t tick_reconciles; /* of reconciles: those the tick made */
	unsigned int ticks;
	time_t last_warn;
};

static const char *const counter_names[LB_XSK_CNT_MAX] = {
        [LB_XSK_CNT_REDIRECT] = "redirect",
        [LB_XSK_CNT_PASS_NO_XSK] = "pass_no_xsk",
        [LB_XSK_CNT_PASS_NOT_IP] = "pass_not_ip",
        [LB_XSK_CNT_PASS_NOT_L4] = "pass_not_l4",
        [LB_XSK_CNT_PASS_NOT_VIP] = "pass_not_vip",
        [LB_XSK_CNT_PASS_FRAGMENT] = "pass_fragment",
        [LB_XSK_CNT_PASS_MALFORMED] = "pass_malformed",
};

char *
lb_xdp_vdev_arg(const char *arg, const char *obj)
{
	const char *dev = arg;
	size_t n;
	char *out;

	if (strncmp(dev, "--vdev=", 7) == 0)
		dev += 7;
	if (strncmp(dev, "net_af_xdp", 10) != 0 || strstr(dev, "xdp_prog=") != NULL)
		return NULL;
	n = strlen(arg) + strlen(",xdp_prog=") + strlen(obj) + 1;
	out = malloc(n);
	if (out == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	snprintf(out, n, "%s,xdp_prog=%s", arg, obj);
	return out;
}

struct lb_xdp_sync *
lb_xdp_sync_create(void)
{
	return calloc(1, sizeof(struct lb_xdp_sync));
}

int
lb_xdp_sync_add_port(struct lb_xdp_sync *x, uint16_t port, int ifindex, char *err, size_t errlen)
{
	struct xdp_port *p;
	int rc;

	if (x->n_ports == XDP_SYNC_PORTS_MAX) {
		snprintf(err, errlen, "port %u: more than %d af_xdp ports", port,
		         XDP_SYNC_PORTS_MAX);
		return -E2BIG;
	}
	p = &x->ports[x->n_ports];
	rc = lb_xsk_maps_from_ifindex(ifindex, &p->maps);
	if (rc == -ENOENT)
		snprintf(err, errlen,
		         "port %u (ifindex %d): no XDP program attached; the af_xdp PMD "
		         "must load spillway's (xdp_prog=%s)",
		         port, ifindex, lb_xsk_obj_path());
	else if (rc == -EPROTO)
		snprintf(err, errlen,
		         "port %u (ifindex %d): the attached XDP program is not spillway's "
		         "steering program (xsk_steer with maps %s, %s)",
		         port, ifindex, LB_XSK_MAP_VIPS, LB_XSK_MAP_STATS);
	else if (rc != 0)
		snprintf(err, errlen, "port %u (ifindex %d): cannot reach the XDP maps: %s", port,
		         ifindex, strerror(-rc));
	if (rc != 0)
		return rc;
	p->port = port;
	p->ifindex = ifindex;
	x->n_ports++;
	x->dirty = true; /* the first publication reconciles */
	return 0;
}

unsigned int
lb_xdp_sync_n_ports(const struct lb_xdp_sync *x)
{
	return x->n_ports;
}

static int
cmp_entry(const void *a, const void *b)
{
	return memcmp(&((const struct entry *)a)->k, &((const struct entry *)b)->k,
	              sizeof(struct lb_xsk_vip_key));
}

static const struct entry *
set_find(const struct entry_set *set, const struct lb_xsk_vip_key *k)
{
	struct entry probe = {.k = *k};

	if (set->n == 0)
		return NULL;
	return bsearch(&probe, set->e, set->n, sizeof(probe), cmp_entry);
}

static int
vip_key(const struct lb_vip *v, uint16_t port, struct lb_xsk_vip_key *k)
{
	return lb_xsk_vip_key_make(k, v->af == LB_AF_INET ? AF_INET : AF_INET6, v->addr.b, v->proto,
	                           port);
}

/*
 * The entries snapshot s asks for: one per VIP, plus, for every (address,
 * protocol) with port-specific VIPs and no port-agnostic one, a port-0 entry
 * flagged fragments-only that carries the VIP the data path gives those
 * fragments to (lb_vip_lookup_frag).
 */
static int
desired(const struct lb_snapshot *s, struct entry_set *out)
{
	struct entry *e = calloc((size_t)s->n_vips * 2 + 1, sizeof(*e));
	uint32_t n = 0;

	if (e == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->n_vips; i++) {
		const struct lb_vip *v = &s->vips[i];
		const struct lb_vip *f;

		if (vip_key(v, v->port, &e[n].k) != 0)
			continue;
		e[n].v.vip_id = v->id;
		n++;
		if (v->port == 0 ||
		    lb_vip_index_find(s, s->vip_index, v->af, &v->addr, v->proto, 0) != NULL)
			continue;
		f = lb_vip_lookup_frag(s, v->af, &v->addr, v->proto);
		if (f != v) /* one entry per address: from the VIP that takes the fragments */
			continue;
		vip_key(v, 0, &e[n].k);
		e[n].v.vip_id = v->id;
		e[n].v.flags = LB_XSK_VIP_FRAG_ONLY;
		n++;
	}
	qsort(e, n, sizeof(*e), cmp_entry);
	out->e = e;
	out->n = n;
	return 0;
}

static void
set_free(struct entry_set *set)
{
	free(set->e);
	set->e = NULL;
	set->n = 0;
}

static void
note_err(struct lb_xdp_sync *x, int rc, const char *what, const struct xdp_port *p, char *err,
         size_t errlen, int *first)
{
	x->map_errors++;
	x->dirty = true;
	if (*first == 0) {
		*first = rc;
		snprintf(err, errlen,
		         "port %u: VIP map %s: %s (the control tick reconciles the map, about "
		         "once a second)",
		         p->port, what, strerror(-rc));
	}
}

static void
put(struct lb_xdp_sync *x, struct xdp_port *p, const struct entry *e, char *err, size_t errlen,
    int *first)
{
	int rc = lb_xsk_vip_put(p->maps.vips_fd, &e->k, &e->v);

	if (rc == 0)
		x->adds++;
	else
		note_err(x, rc, "add", p, err, errlen, first);
}

static void
del(struct lb_xdp_sync *x, struct xdp_port *p, const struct lb_xsk_vip_key *k, char *err,
    size_t errlen, int *first)
{
	int rc = lb_xsk_vip_remove(p->maps.vips_fd, k);

	if (rc == 0)
		x->removes++;
	else if (rc != -ENOENT)
		note_err(x, rc, "remove", p, err, errlen, first);
}

/* Narrowing: an entry that steered every port now steers fragments only. */
static bool
narrows(const struct entry *old, const struct entry *e)
{
	return old != NULL && !(old->v.flags & LB_XSK_VIP_FRAG_ONLY) &&
	       (e->v.flags & LB_XSK_VIP_FRAG_ONLY);
}

/* Delete every key of p's map that is not in want. */
static void
purge(struct lb_xdp_sync *x, struct xdp_port *p, char *err, size_t errlen, int *first)
{
	static struct lb_xsk_vip_key keys[LB_XSK_VIP_MAX];
	struct lb_xsk_vip_key cur, nxt;
	unsigned int n = 0;
	void *prev = NULL;

	while (n < LB_XSK_VIP_MAX && bpf_map_get_next_key(p->maps.vips_fd, prev, &nxt) == 0) {
		keys[n++] = nxt;
		cur = nxt;
		prev = &cur;
	}
	for (unsigned int i = 0; i < n; i++)
		if (set_find(&x->want, &keys[i]) == NULL)
			del(x, p, &keys[i], err, errlen, first);
}

/*
 * Before the switch: everything that steers more traffic to spillway (new
 * entries, fragments-only entries becoming whole VIPs, changed ids).
 */
static int
hook_before(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev, char *err,
            size_t errlen)
{
	struct lb_xdp_sync *x = arg;
	int first = 0, rc;

	set_free(&x->want);
	rc = desired(next, &x->want);
	if (rc != 0) {
		x->dirty = true;
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	x->full = x->dirty || prev == NULL;
	x->dirty = false;
	for (unsigned int i = 0; i < x->n_ports; i++)
		for (uint32_t j = 0; j < x->want.n; j++) {
			const struct entry *e = &x->want.e[j];
			const struct entry *old = set_find(&x->live, &e->k);

			if (narrows(old, e))
				continue; /* after the switch */
			if (x->full || old == NULL || memcmp(&old->v, &e->v, sizeof(e->v)) != 0)
				put(x, &x->ports[i], e, err, errlen, &first);
		}
	return first;
}

/* After the switch: removals and narrowings; a full pass purges stale keys. */
static int
hook_after(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev, char *err,
           size_t errlen)
{
	struct lb_xdp_sync *x = arg;
	int first = 0;

	(void)next;
	(void)prev;
	for (unsigned int i = 0; i < x->n_ports; i++) {
		struct xdp_port *p = &x->ports[i];

		for (uint32_t j = 0; j < x->want.n; j++) {
			const struct entry *e = &x->want.e[j];

			if (narrows(set_find(&x->live, &e->k), e))
				put(x, p, e, err, errlen, &first);
		}
		if (x->full) {
			purge(x, p, err, errlen, &first);
			continue;
		}
		for (uint32_t j = 0; j < x->live.n; j++)
			if (set_find(&x->want, &x->live.e[j].k) == NULL)
				del(x, p, &x->live.e[j].k, err, errlen, &first);
	}
	if (x->full)
		x->reconciles++;
	/* The maps now hold want (or a failure set dirty: the next one reconciles). */
	set_free(&x->live);
	x->live = x->want;
	x->want = (struct entry_set){0};
	return first;
}

static void
sum_counters(const struct lb_xdp_sync *x, uint64_t tot[LB_XSK_CNT_MAX], uint64_t *no_xsk_port)
{
	memset(tot, 0, LB_XSK_CNT_MAX * sizeof(tot[0]));
	for (unsigned int i = 0; i < x->n_ports; i++) {
		uint64_t c[LB_XSK_CNT_MAX];

		if (lb_xsk_counters_read(x->ports[i].maps.stats_fd, c) != 0)
			continue;
		for (int k = 0; k < LB_XSK_CNT_MAX; k++)
			tot[k] += c[k];
		if (no_xsk_port != NULL)
			no_xsk_port[i] = c[LB_XSK_CNT_PASS_NO_XSK];
	}
}

/*
 * After a failed map operation: make every port's map hold exactly what live
 * (the snapshot every worker runs) asks for. Deletions first, so a map filled
 * with stale keys has room again; the order is free, nothing is in flight.
 */
static void
tick_reconcile(struct lb_xdp_sync *x, const struct lb_snapshot *live)
{
	char err[256] = "";
	int first = 0;

	set_free(&x->want);
	if (desired(live, &x->want) != 0)
		return; /* still dirty: the next check tries again */
	x->dirty = false;
	for (unsigned int i = 0; i < x->n_ports; i++) {
		purge(x, &x->ports[i], err, sizeof(err), &first);
		for (uint32_t j = 0; j < x->want.n; j++)
			put(x, &x->ports[i], &x->want.e[j], err, sizeof(err), &first);
	}
	x->reconciles++;
	x->tick_reconciles++;
	set_free(&x->live);
	x->live = x->want;
	x->want = (struct entry_set){0};
	if (first != 0)
		fprintf(stderr, "spillwayd: xdp: %s\n", err);
	else
		fprintf(stderr,
		        "spillwayd: xdp: VIP map reconciled with the live configuration "
		        "(%u entries per port)\n",
		        x->live.n);
}

static void
hook_tick(void *arg, const struct lb_snapshot *live)
{
	struct lb_xdp_sync *x = arg;
	uint64_t tot[LB_XSK_CNT_MAX], no_xsk[XDP_SYNC_PORTS_MAX];
	time_t now;

	if (++x->ticks % TICKS_PER_CHECK != 0)
		return;
	if (x->dirty && live != NULL)
		tick_reconcile(x, live);
	sum_counters(x, tot, no_xsk);
	now = time(NULL);
	for (unsigned int i = 0; i < x->n_ports; i++) {
		struct xdp_port *p = &x->ports[i];

		if (no_xsk[i] > p->no_xsk_seen && now - x->last_warn >= WARN_INTERVAL_S) {
			fprintf(stderr,
			        "spillwayd: port %u: %llu VIP packets went to the kernel: no "
			        "AF_XDP socket on the queue that received them (give the af_xdp "
			        "vdev every RX queue of the interface: queue_count)\n",
			        p->port, (unsigned long long)(no_xsk[i] - p->no_xsk_seen));
			x->last_warn = now;
		}
		p->no_xsk_seen = no_xsk[i];
	}
}

static json_t *
hook_stats(void *arg)
{
	struct lb_xdp_sync *x = arg;
	uint64_t tot[LB_XSK_CNT_MAX];
	json_t *o = json_object();

	sum_counters(x, tot, NULL);
	json_object_set_new(o, "ports", json_integer(x->n_ports));
	json_object_set_new(o, "entries", json_integer(x->live.n));
	for (int k = 0; k < LB_XSK_CNT_MAX; k++)
		json_object_set_new(o, counter_names[k], json_integer((json_int_t)tot[k]));
	json_object_set_new(o, "map_adds", json_integer((json_int_t)x->adds));
	json_object_set_new(o, "map_removes", json_integer((json_int_t)x->removes));
	json_object_set_new(o, "map_errors", json_integer((json_int_t)x->map_errors));
	json_object_set_new(o, "reconciles", json_integer((json_int_t)x->reconciles));
	json_object_set_new(o, "tick_reconciles", json_integer((json_int_t)x->tick_reconciles));
	json_object_set_new(o, "reconcile_pending", json_boolean(x->dirty));
	return o;
}

void
lb_xdp_sync_hook(struct lb_xdp_sync *x, struct lb_publish_hook *h)
{
	*h = (struct lb_publish_hook){
	        .name = "xdp",
	        .arg = x,
	        .before = hook_before,
	        .after = hook_after,
	        .tick = hook_tick,
	        .stats = hook_stats,
	};
}

void
lb_xdp_sync_destroy(struct lb_xdp_sync *x)
{
	if (x == NULL)
		return;
	for (unsigned int i = 0; i < x->n_ports; i++)
		lb_xsk_maps_close(&x->ports[i].maps);
	set_free(&x->live);
	set_free(&x->want);
	free(x);
}
