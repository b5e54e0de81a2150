/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The XDP VIP map follows the published snapshot (see xdp_sync.h). Updates are
 * diffs against the previous snapshot; after any failed map operation the next
 * publication reconciles the whole map instead (add everything, delete what is
 * not in the snapshot), so one transient error cannot leave the map wrong for
 * long.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <bpf/bpf.h>

#include "xdp_sync.h"
#include "xsk_steer_loader.h"

#define XDP_SYNC_PORTS_MAX 64
#define TICKS_PER_CHECK 100      /* the control timer ticks every ~10 ms: ~1 s */
#define WARN_INTERVAL_S 10

struct xdp_port {
	uint16_t port;
	int ifindex;
	struct lb_xsk_maps maps;
	uint64_t no_xsk_seen; /* pass_no_xsk at the last check */
};

struct lb_xdp_sync {
	struct xdp_port ports[XDP_SYNC_PORTS_MAX];
	unsigned int n_ports;
	bool dirty;            /* a map operation failed: reconcile fully next time */
	bool purge;            /* this publication's after() deletes every stale key */
	uint64_t map_errors;
	uint64_t adds, removes, reconciles;
	uint32_t n_vips;       /* VIPs of the last snapshot synced */
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
vip_key(const struct lb_vip *v, struct lb_xsk_vip_key *k)
{
	return lb_xsk_vip_key_make(k, v->af == LB_AF_INET ? AF_INET : AF_INET6, v->addr.b,
				   v->proto, v->port);
}

/* The snapshot's VIP with exactly this map key, or NULL. */
static const struct lb_vip *
snap_find(const struct lb_snapshot *s, const struct lb_xsk_vip_key *k)
{
	union lb_ip a;
	uint8_t af = k->family == LB_XSK_AF_INET ? LB_AF_INET : LB_AF_INET6;

	memset(&a, 0, sizeof(a));
	memcpy(a.b, k->addr, af == LB_AF_INET ? 4 : 16);
	return lb_vip_index_find(s, s->vip_index, af, &a, k->proto, k->port);
}

static bool
snap_has(const struct lb_snapshot *s, const struct lb_vip *v)
{
	return s != NULL && lb_vip_index_find(s, s->vip_index, v->af, &v->addr, v->proto, v->port) !=
				    NULL;
}

static void
note_err(struct lb_xdp_sync *x, int rc, const char *what, const struct xdp_port *p, char *err,
	 size_t errlen, int *first)
{
	x->map_errors++;
	x->dirty = true;
	if (*first == 0) {
		*first = rc;
		snprintf(err, errlen, "port %u: VIP map %s: %s", p->port, what, strerror(-rc));
	}
}

/* Delete every key of p's map that next does not have. */
static void
purge(struct lb_xdp_sync *x, struct xdp_port *p, const struct lb_snapshot *next, char *err,
      size_t errlen, int *first)
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
	for (unsigned int i = 0; i < n; i++) {
		int rc;

		if (snap_find(next, &keys[i]) != NULL)
			continue;
		rc = lb_xsk_vip_remove(p->maps.vips_fd, &keys[i]);
		if (rc == 0)
			x->removes++;
		else if (rc != -ENOENT)
			note_err(x, rc, "remove", p, err, errlen, first);
	}
}

static int
hook_before(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev, char *err,
	    size_t errlen)
{
	struct lb_xdp_sync *x = arg;
	bool full = x->dirty || prev == NULL;
	int first = 0;

	x->dirty = false;
	for (unsigned int i = 0; i < x->n_ports; i++) {
		struct xdp_port *p = &x->ports[i];

		for (uint32_t j = 0; j < next->n_vips; j++) {
			const struct lb_vip *v = &next->vips[j];
			struct lb_xsk_vip_key k;
			int rc;

			if (!full && snap_has(prev, v))
				continue;
			rc = vip_key(v, &k);
			if (rc == 0)
				rc = lb_xsk_vip_add(p->maps.vips_fd, &k, v->id);
			if (rc == 0)
				x->adds++;
			else
				note_err(x, rc, "add", p, err, errlen, &first);
		}
	}
	x->purge = full; /* keys left from before a failure or a crash */
	x->n_vips = next->n_vips;
	return first;
}

static int
hook_after(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev, char *err,
	   size_t errlen)
{
	struct lb_xdp_sync *x = arg;
	bool full = x->purge || prev == NULL;
	int first = 0;

	x->purge = false;
	for (unsigned int i = 0; i < x->n_ports; i++) {
		struct xdp_port *p = &x->ports[i];

		if (full) {
			purge(x, p, next, err, errlen, &first);
			continue;
		}
		for (uint32_t j = 0; j < prev->n_vips; j++) {
			const struct lb_vip *v = &prev->vips[j];
			struct lb_xsk_vip_key k;
			int rc;

			if (snap_has(next, v))
				continue;
			rc = vip_key(v, &k);
			if (rc == 0)
				rc = lb_xsk_vip_remove(p->maps.vips_fd, &k);
			if (rc == 0)
				x->removes++;
			else if (rc != -ENOENT)
				note_err(x, rc, "remove", p, err, errlen, &first);
		}
	}
	if (full)
		x->reconciles++;
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

static void
hook_tick(void *arg, const struct lb_snapshot *live)
{
	struct lb_xdp_sync *x = arg;
	uint64_t tot[LB_XSK_CNT_MAX], no_xsk[XDP_SYNC_PORTS_MAX];
	time_t now;

	(void)live;
	if (++x->ticks % TICKS_PER_CHECK != 0)
		return;
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
	json_object_set_new(o, "vips", json_integer(x->n_vips));
	for (int k = 0; k < LB_XSK_CNT_MAX; k++)
		json_object_set_new(o, counter_names[k], json_integer((json_int_t)tot[k]));
	json_object_set_new(o, "map_adds", json_integer((json_int_t)x->adds));
	json_object_set_new(o, "map_removes", json_integer((json_int_t)x->removes));
	json_object_set_new(o, "map_errors", json_integer((json_int_t)x->map_errors));
	json_object_set_new(o, "reconciles", json_integer((json_int_t)x->reconciles));
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
	free(x);
}
