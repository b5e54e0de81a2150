/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK telemetry commands over the workers' counters and the control
 * thread's copies of the configuration and hot keys. The locking rule is in
 * telemetry.h: callbacks (telemetry thread) hold g_tele.lock while they read;
 * the control thread swaps copies in under it; counters are relaxed loads.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "control/io/telemetry.h"

static const char *const state_names[] = {"active", "draining", "down"};

/* The scalar per-core counters, in the stats document's names and order. */
static const struct {
	const char *name;
	size_t off;
} fields[LB_TELE_N_FIELDS] = {
#define F(x)                                                                                       \
	{                                                                                          \
#x, offsetof(struct lb_core_counters, x)                                           \
	}
        F(rx_packets),     F(rx_bytes),      F(forwarded),         F(forwarded_bytes),
        F(icmp_sent),      F(exception),     F(flow_hits),         F(flow_misses),
        F(flow_evictions), F(flow_rechosen), F(fragments),         F(icmp_errors),
        F(hot_spread),     F(frag_tracked),  F(frag_followed),     F(frag_unmatched),
        F(frag_evictions), F(flow_unpinned), F(flow_rate_limited), F(fragmented_out),
        F(fragments_out),  F(pmtu_learned),  F(pmtu_ignored),      F(hot_sprayed),
#undef F
};

/* Everything the callbacks read, under lock. */
static struct {
	pthread_mutex_t lock;
	bool registered;
	const struct lb_core_counters *const *cores; /* NULL: detached */
	const unsigned int *lcores;
	unsigned int n_cores;
	struct lb_tele_dir dir;
	struct lb_tele_hot hot;
	/* Control thread only: what the copies were made from. */
	bool have_dir, have_hot;
	uint64_t dir_gen, hot_window;
} g_tele = {.lock = PTHREAD_MUTEX_INITIALIZER};

static inline uint64_t
load(const uint64_t *p)
{
	/* Relaxed: each counter has one writer; a reader only needs a value
	 * that was current at some moment (no ordering with other counters). */
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

const char *
lb_telemetry_field_name(unsigned int i)
{
	return i < LB_TELE_N_FIELDS ? fields[i].name : NULL;
}

uint64_t
lb_telemetry_field_load(const struct lb_core_counters *c, unsigned int i)
{
	return load((const uint64_t *)((const char *)c + fields[i].off));
}

int
lb_telemetry_vip_text(uint8_t af, const union lb_ip *addr, uint16_t port, uint8_t proto, char *buf,
                      size_t len)
{
	char a[48];
	int n;

	lb_ip_to_str(af, addr, a, sizeof(a));
	n = snprintf(buf, len, af == LB_AF_INET6 ? "[%s]:%u/%s" : "%s:%u/%s", a, port,
	             proto == IPPROTO_TCP ? "tcp" : "udp");
	if (n < 0 || (size_t)n >= len) {
		if (len > 0)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return 0;
}

void
lb_telemetry_dir_free(struct lb_tele_dir *d)
{
	free(d->vips);
	free(d->backends);
	memset(d, 0, sizeof(*d));
}

int
lb_telemetry_dir_build(struct lb_tele_dir *d, const struct lb_config *cfg, uint64_t generation)
{
	uint32_t nb = lb_config_backend_count(cfg), k = 0;

	memset(d, 0, sizeof(*d));
	d->generation = generation;
	d->vips = calloc(cfg->n_vips > 0 ? cfg->n_vips : 1, sizeof(*d->vips));
	d->backends = calloc(nb > 0 ? nb : 1, sizeof(*d->backends));
	if (d->vips == NULL || d->backends == NULL) {
		lb_telemetry_dir_free(d);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];
		struct lb_tele_vip *t = &d->vips[i];

		t->id = v->id;
		t->af = v->af;
		t->proto = v->proto;
		t->port = v->port;
		t->addr = v->addr;
		lb_telemetry_vip_text(v->af, &v->addr, v->port, v->proto, t->text, sizeof(t->text));
		t->first_backend = k;
		t->n_backends = v->n_backends;
		for (uint32_t j = 0; j < v->n_backends; j++, k++) {
			const struct lb_cfg_backend *b = &v->backends[j];
			struct lb_tele_backend *tb = &d->backends[k];

			tb->id = b->id;
			tb->state = b->state;
			tb->weight = b->weight;
			lb_ip_to_str(b->af, &b->addr, tb->address, sizeof(tb->address));
			snprintf(tb->name, sizeof(tb->name), "%s", b->name);
		}
	}
	d->n_vips = cfg->n_vips;
	d->n_backends = k;
	return 0;
}

void
lb_telemetry_hot_free(struct lb_tele_hot *t)
{
	free(t->keys);
	memset(t, 0, sizeof(*t));
}

/* A hot key as its VIP's key mode sees it. */
static void
key_text(const struct lb_flow_key *k, uint8_t mode, char *buf, size_t len)
{
	char s[48], d[48];

	lb_ip_to_str(k->af, &k->src, s, sizeof(s));
	if (mode == LB_KEY_SRC_IP)
		snprintf(buf, len, "%s", s);
	else if (mode == LB_KEY_SRC_IP_DPORT)
		snprintf(buf, len, "%s>%u", s, ntohs(k->dport));
	else
		snprintf(buf, len, "%s:%u>%s:%u/%s", s, ntohs(k->sport),
		         lb_ip_to_str(k->af, &k->dst, d, sizeof(d)), ntohs(k->dport),
		         k->proto == IPPROTO_TCP ? "tcp" : "udp");
}

int
lb_telemetry_hot_build(struct lb_tele_hot *t, const struct lb_hotkey *h,
                       const struct lb_config *cfg, uint64_t window)
{
	const struct lb_hot_override *o;
	struct lb_hot_counts hc;
	uint32_t n;

	memset(t, 0, sizeof(*t));
	t->window = window;
	if (h == NULL)
		return 0;
	n = lb_hotkey_overrides(h, &o);
	if (n > LB_TELE_MAX_LIST)
		n = LB_TELE_MAX_LIST;
	t->keys = calloc(n > 0 ? n : 1, sizeof(*t->keys));
	if (t->keys == NULL) {
		lb_telemetry_hot_free(t);
		return -ENOMEM;
	}
	lb_hotkey_counts(h, &hc);
	t->enabled = true;
	t->window = window;
	t->promotions = hc.promotions;
	t->demotions = hc.demotions;
	t->replans = hc.replans;
	t->dropped = hc.dropped;
	t->table_full = hc.table_full;
	t->active = hc.active;
	t->pinned = hc.pinned;
	for (uint32_t i = 0; i < n; i++) {
		struct lb_tele_hot_key *k = &t->keys[i];
		uint8_t mode = LB_KEY_5TUPLE;

		for (uint32_t j = 0; cfg != NULL && j < cfg->n_vips; j++)
			if (cfg->vips[j].id == o[i].vip_id)
				mode = cfg->vips[j].key_mode;
		k->vip_id = o[i].vip_id;
		k->n_replicas = o[i].n_replicas;
		k->pinned = o[i].pinned;
		k->share_ppm = o[i].share > 0 ? (uint64_t)(o[i].share * 1e6 + 0.5) : 0;
		key_text(&o[i].key, mode, k->key, sizeof(k->key));
	}
	t->n_keys = n;
	return 0;
}

int
lb_telemetry_vip_find(const struct lb_tele_dir *d, const char *sel)
{
	char buf[LB_TELE_VIP_TEXT], *slash, *colon, *addr, *end;
	unsigned long port, id;
	union lb_ip ip;
	uint8_t af, proto;

	if (sel == NULL || sel[0] == '\0' || strlen(sel) >= sizeof(buf))
		return -EINVAL;
	if (strspn(sel, "0123456789") == strlen(sel)) {
		id = strtoul(sel, NULL, 10);
		for (uint32_t i = 0; i < d->n_vips; i++)
			if (d->vips[i].id == id)
				return (int)i;
		return -ENOENT;
	}
	snprintf(buf, sizeof(buf), "%s", sel);
	slash = strrchr(buf, '/');
	if (slash == NULL)
		return -EINVAL;
	*slash = '\0';
	if (strcmp(slash + 1, "tcp") == 0)
		proto = IPPROTO_TCP;
	else if (strcmp(slash + 1, "udp") == 0)
		proto = IPPROTO_UDP;
	else
		return -EINVAL;
	colon = strrchr(buf, ':');
	if (colon == NULL || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	*colon = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || port > 65535)
		return -EINVAL;
	addr = buf;
	if (addr[0] == '[') {
		size_t l = strlen(addr);

		if (l < 3 || addr[l - 1] != ']')
			return -EINVAL;
		addr[l - 1] = '\0';
		addr++;
	}
	if (lb_ip_from_str(addr, &af, &ip) != 0)
		return -EINVAL;
	for (uint32_t i = 0; i < d->n_vips; i++) {
		const struct lb_tele_vip *v = &d->vips[i];

		if (v->af == af && v->proto == proto && v->port == port &&
		    memcmp(&v->addr, &ip, af == LB_AF_INET ? 4 : 16) == 0)
			return (int)i;
	}
	return -ENOENT;
}

/* The commands' bodies: run by dispatch() below, under g_tele.lock, attached. */

static int
cmd_stats(const char *params, struct rte_tel_data *d)
{
	uint64_t tot[LB_TELE_N_FIELDS] = {0}, drops[LB_DROP__COUNT] = {0}, dropped = 0;
	struct rte_tel_data *dd;
	int rc = -ENODEV;

	(void)params;
	dd = rte_tel_data_alloc();
	if (dd == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned int c = 0; c < g_tele.n_cores; c++) {
		for (unsigned int i = 0; i < LB_TELE_N_FIELDS; i++)
			tot[i] += lb_telemetry_field_load(g_tele.cores[c], i);
		for (unsigned int r = 1; r < LB_DROP__COUNT; r++)
			drops[r] += load(&g_tele.cores[c]->drops[r]);
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_start_dict(dd);
	for (unsigned int r = 1; r < LB_DROP__COUNT; r++) {
		rte_tel_data_add_dict_u64(dd, lb_drop_reason_name(r), drops[r]);
		dropped += drops[r];
	}
	rte_tel_data_add_dict_u64(d, "generation", g_tele.dir.generation);
	rte_tel_data_add_dict_u64(d, "cores", g_tele.n_cores);
	for (unsigned int i = 0; i < LB_TELE_N_FIELDS; i++)
		rte_tel_data_add_dict_u64(d, fields[i].name, tot[i]);
	rte_tel_data_add_dict_u64(d, "dropped", dropped);
	rte_tel_data_add_dict_container(d, "drops", dd, 0);
	rc = 0;
out:
	return rc;
}

static int
cmd_vips(const char *params, struct rte_tel_data *d)
{
	const struct lb_tele_dir *dir = &g_tele.dir;
	char id[16];

	(void)params;
	rte_tel_data_start_dict(d);
	for (uint32_t i = 0; i < dir->n_vips && i < LB_TELE_MAX_DICT; i++) {
		snprintf(id, sizeof(id), "%u", dir->vips[i].id);
		rte_tel_data_add_dict_string(d, id, dir->vips[i].text);
	}
	if (dir->n_vips > LB_TELE_MAX_DICT)
		rte_tel_data_add_dict_u64(d, "omitted", dir->n_vips - LB_TELE_MAX_DICT);
	return 0;
}

/* Per-backend columns of one VIP: one array per field. */
enum {
	COL_ADDRESS,
	COL_NAME,
	COL_STATE,
	COL_WEIGHT,
	COL_PACKETS,
	COL_BYTES,
	COL_NEW_FLOWS,
	N_COLS
};
static const char *const col_names[N_COLS] = {
        "backend_address", "backend_name",  "backend_state",     "backend_weight",
        "backend_packets", "backend_bytes", "backend_new_flows",
};

static void
obj_sum(const struct lb_obj_counters *(*get)(const struct lb_core_counters *, uint16_t),
        uint16_t id, struct lb_obj_counters *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned int c = 0; c < g_tele.n_cores; c++) {
		const struct lb_obj_counters *o = get(g_tele.cores[c], id);

		s->packets += load(&o->packets);
		s->bytes += load(&o->bytes);
		s->new_flows += load(&o->new_flows);
	}
}

static const struct lb_obj_counters *
vip_obj(const struct lb_core_counters *c, uint16_t id)
{
	return &c->vip[id];
}

static const struct lb_obj_counters *
backend_obj(const struct lb_core_counters *c, uint16_t id)
{
	return &c->backend[id];
}

static int
cmd_vip(const char *params, struct rte_tel_data *d)
{
	struct rte_tel_data *col[N_COLS] = {NULL};
	const struct lb_tele_vip *v;
	struct lb_obj_counters s;
	int rc = -ENODEV, i;

	i = lb_telemetry_vip_find(&g_tele.dir, params);
	if (i < 0) {
		rc = i;
		goto out;
	}
	v = &g_tele.dir.vips[i];
	for (int k = 0; k < N_COLS; k++) {
		col[k] = rte_tel_data_alloc();
		if (col[k] == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		rte_tel_data_start_array(col[k],
		                         k <= COL_STATE ? RTE_TEL_STRING_VAL : RTE_TEL_U64_VAL);
	}
	rte_tel_data_start_dict(d);
	obj_sum(vip_obj, v->id, &s);
	rte_tel_data_add_dict_u64(d, "id", v->id);
	rte_tel_data_add_dict_string(d, "vip", v->text);
	rte_tel_data_add_dict_u64(d, "port", v->port);
	rte_tel_data_add_dict_string(d, "protocol", v->proto == IPPROTO_TCP ? "tcp" : "udp");
	rte_tel_data_add_dict_u64(d, "packets", s.packets);
	rte_tel_data_add_dict_u64(d, "bytes", s.bytes);
	rte_tel_data_add_dict_u64(d, "new_flows", s.new_flows);
	rte_tel_data_add_dict_u64(d, "backends", v->n_backends);
	for (uint32_t j = 0; j < v->n_backends && j < LB_TELE_MAX_LIST; j++) {
		const struct lb_tele_backend *b = &g_tele.dir.backends[v->first_backend + j];

		obj_sum(backend_obj, b->id, &s);
		rte_tel_data_add_array_string(col[COL_ADDRESS], b->address);
		rte_tel_data_add_array_string(col[COL_NAME], b->name);
		rte_tel_data_add_array_string(col[COL_STATE], state_names[b->state]);
		rte_tel_data_add_array_u64(col[COL_WEIGHT], b->weight);
		rte_tel_data_add_array_u64(col[COL_PACKETS], s.packets);
		rte_tel_data_add_array_u64(col[COL_BYTES], s.bytes);
		rte_tel_data_add_array_u64(col[COL_NEW_FLOWS], s.new_flows);
	}
	for (int k = 0; k < N_COLS; k++) {
		rte_tel_data_add_dict_container(d, col_names[k], col[k], 0);
		col[k] = NULL; /* owned by d now */
	}
	rc = 0;
out:
	for (int k = 0; k < N_COLS; k++)
		rte_tel_data_free(col[k]);
	return rc;
}

static int
cmd_cores(const char *params, struct rte_tel_data *d)
{
	struct rte_tel_data *col[LB_TELE_N_FIELDS + 3] = {NULL};
	const unsigned int n_col = LB_TELE_N_FIELDS + 3; /* + lcore, dropped, snapshot_gen */
	int rc = -ENODEV;

	(void)params;
	for (unsigned int k = 0; k < n_col; k++) {
		col[k] = rte_tel_data_alloc();
		if (col[k] == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		rte_tel_data_start_array(col[k], RTE_TEL_U64_VAL);
	}
	for (unsigned int c = 0; c < g_tele.n_cores && c < LB_TELE_MAX_LIST; c++) {
		const struct lb_core_counters *cc = g_tele.cores[c];
		uint64_t dropped = 0;

		for (unsigned int r = 1; r < LB_DROP__COUNT; r++)
			dropped += load(&cc->drops[r]);
		rte_tel_data_add_array_u64(col[0], g_tele.lcores[c]);
		for (unsigned int i = 0; i < LB_TELE_N_FIELDS; i++)
			rte_tel_data_add_array_u64(col[1 + i], lb_telemetry_field_load(cc, i));
		rte_tel_data_add_array_u64(col[LB_TELE_N_FIELDS + 1], dropped);
		rte_tel_data_add_array_u64(col[LB_TELE_N_FIELDS + 2], load(&cc->snapshot_gen));
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_container(d, "lcore", col[0], 0);
	for (unsigned int i = 0; i < LB_TELE_N_FIELDS; i++)
		rte_tel_data_add_dict_container(d, fields[i].name, col[1 + i], 0);
	rte_tel_data_add_dict_container(d, "dropped", col[LB_TELE_N_FIELDS + 1], 0);
	rte_tel_data_add_dict_container(d, "snapshot_gen", col[LB_TELE_N_FIELDS + 2], 0);
	memset(col, 0, sizeof(col)); /* owned by d now */
	rc = 0;
out:
	for (unsigned int k = 0; k < n_col; k++)
		rte_tel_data_free(col[k]);
	return rc;
}

static int
cmd_hot(const char *params, struct rte_tel_data *d)
{
	const struct lb_tele_hot *h = &g_tele.hot;
	struct rte_tel_data *vip = NULL, *key = NULL, *share = NULL, *reps = NULL, *pin = NULL;
	int rc = -ENODEV;

	(void)params;
	vip = rte_tel_data_alloc();
	key = rte_tel_data_alloc();
	share = rte_tel_data_alloc();
	reps = rte_tel_data_alloc();
	pin = rte_tel_data_alloc();
	if (vip == NULL || key == NULL || share == NULL || reps == NULL || pin == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rte_tel_data_start_array(vip, RTE_TEL_U64_VAL);
	rte_tel_data_start_array(key, RTE_TEL_STRING_VAL);
	rte_tel_data_start_array(share, RTE_TEL_U64_VAL);
	rte_tel_data_start_array(reps, RTE_TEL_U64_VAL);
	rte_tel_data_start_array(pin, RTE_TEL_U64_VAL);
	for (uint32_t i = 0; i < h->n_keys; i++) {
		rte_tel_data_add_array_u64(vip, h->keys[i].vip_id);
		rte_tel_data_add_array_string(key, h->keys[i].key);
		rte_tel_data_add_array_u64(share, h->keys[i].share_ppm);
		rte_tel_data_add_array_u64(reps, h->keys[i].n_replicas);
		rte_tel_data_add_array_u64(pin, h->keys[i].pinned);
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "enabled", h->enabled);
	rte_tel_data_add_dict_u64(d, "window", h->window);
	rte_tel_data_add_dict_u64(d, "active", h->active);
	rte_tel_data_add_dict_u64(d, "pinned", h->pinned);
	rte_tel_data_add_dict_u64(d, "promotions", h->promotions);
	rte_tel_data_add_dict_u64(d, "demotions", h->demotions);
	rte_tel_data_add_dict_u64(d, "replans", h->replans);
	rte_tel_data_add_dict_u64(d, "dropped", h->dropped);
	rte_tel_data_add_dict_u64(d, "table_full", h->table_full);
	rte_tel_data_add_dict_container(d, "key_vip", vip, 0);
	rte_tel_data_add_dict_container(d, "key", key, 0);
	rte_tel_data_add_dict_container(d, "key_share_ppm", share, 0);
	rte_tel_data_add_dict_container(d, "key_replicas", reps, 0);
	rte_tel_data_add_dict_container(d, "key_pinned", pin, 0);
	vip = key = share = reps = pin = NULL;
	rc = 0;
out:
	rte_tel_data_free(vip);
	rte_tel_data_free(key);
	rte_tel_data_free(share);
	rte_tel_data_free(reps);
	rte_tel_data_free(pin);
	return rc;
}

static const struct {
	const char *cmd;
	int (*fn)(const char *params, struct rte_tel_data *d);
	const char *help;
} cmds[] = {
        /* Help texts stay under RTE_TEL_MAX_STRING_LEN (128) or registration fails. */
        {"/spillway/stats", cmd_stats,
         "Totals over all workers: packets, bytes, flow table; drops by reason. No parameters."},
        {"/spillway/vips", cmd_vips, "The VIPs: id -> address:port/protocol. No parameters."},
        {"/spillway/vip", cmd_vip,
         "One VIP's counters, its backends' in backend_* columns. Parameter: id or "
         "address:port/protocol"},
        {"/spillway/cores", cmd_cores,
         "Per worker core: one array per counter, in the order of lcore. No parameters."},
        {"/spillway/hot", cmd_hot,
         "Hot keys: controller counters, active overrides in key_* columns. No parameters."},
};

/*
 * The one callback registered for every command: under g_tele.lock, the
 * command's body while attached; -ENODEV once detached (DPDK 22.11 cannot
 * unregister a command).
 */
static int
dispatch(const char *cmd, const char *params, struct rte_tel_data *d)
{
	int rc = -ENODEV;

	pthread_mutex_lock(&g_tele.lock);
	for (size_t i = 0; g_tele.cores != NULL && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmds[i].cmd, cmd) == 0) {
			rc = cmds[i].fn(params, d);
			break;
		}
	pthread_mutex_unlock(&g_tele.lock);
	return rc;
}

int
lb_telemetry_attach(const struct lb_core_counters *const *cores, const unsigned int *lcores,
                    unsigned int n_cores)
{
	int rc = 0;

	pthread_mutex_lock(&g_tele.lock);
	if (!g_tele.registered) {
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && rc == 0; i++)
			rc = rte_telemetry_register_cmd(cmds[i].cmd, dispatch, cmds[i].help);
		/* A partial registration stays: DPDK cannot take commands back, and
		 * the registered ones answer null while detached. */
		g_tele.registered = rc == 0;
	}
	if (rc == 0) {
		g_tele.cores = cores;
		g_tele.lcores = lcores;
		g_tele.n_cores = n_cores;
		g_tele.have_dir = g_tele.have_hot = false;
	}
	pthread_mutex_unlock(&g_tele.lock);
	return rc;
}

void
lb_telemetry_detach(void)
{
	pthread_mutex_lock(&g_tele.lock);
	g_tele.cores = NULL;
	g_tele.lcores = NULL;
	g_tele.n_cores = 0;
	lb_telemetry_dir_free(&g_tele.dir);
	lb_telemetry_hot_free(&g_tele.hot);
	g_tele.have_dir = g_tele.have_hot = false;
	pthread_mutex_unlock(&g_tele.lock);
}

void
lb_telemetry_refresh(const struct lb_config *cfg, uint64_t generation, const struct lb_hotkey *hot,
                     uint64_t window)
{
	struct lb_tele_dir nd, od;
	struct lb_tele_hot nh, oh;
	bool dir = !g_tele.have_dir || g_tele.dir_gen != generation;
	bool hw = !g_tele.have_hot || g_tele.hot_window != window ||
	          g_tele.hot.enabled != (hot != NULL) || dir;

	/* have_dir, dir_gen, have_hot and hot_window are the control thread's
	 * own (attach, detach and this function are all called from it), so
	 * they are read here without the lock; the copies are built outside it
	 * and only the swap is under it. */
	if (g_tele.cores == NULL || cfg == NULL || (!dir && !hw))
		return;
	if (dir && lb_telemetry_dir_build(&nd, cfg, generation) != 0)
		dir = false;
	if (hw && lb_telemetry_hot_build(&nh, hot, cfg, window) != 0)
		hw = false;
	memset(&od, 0, sizeof(od));
	memset(&oh, 0, sizeof(oh));
	pthread_mutex_lock(&g_tele.lock);
	if (dir) {
		od = g_tele.dir;
		g_tele.dir = nd;
		g_tele.dir_gen = generation;
		g_tele.have_dir = true;
	}
	if (hw) {
		oh = g_tele.hot;
		g_tele.hot = nh;
		g_tele.hot_window = window;
		g_tele.have_hot = true;
	}
	pthread_mutex_unlock(&g_tele.lock);
	lb_telemetry_dir_free(&od);
	lb_telemetry_hot_free(&oh);
}
