/* SPDX-License-Identifier: BSD-3-Clause */
/* Flow layout and phase switching (start-up and phase boundaries only). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* base + k in the low 32 bits of an address (IPv4: bytes 0-3, IPv6: 12-15). */
static void
addr_add(union lb_ip *a, uint8_t af, uint32_t k)
{
	int o = af == LB_AF_INET ? 0 : 12;
	uint32_t v = (uint32_t)a->b[o] << 24 | (uint32_t)a->b[o + 1] << 16 |
	             (uint32_t)a->b[o + 2] << 8 | a->b[o + 3];

	v += k;
	a->b[o] = (uint8_t)(v >> 24);
	a->b[o + 1] = (uint8_t)(v >> 16);
	a->b[o + 2] = (uint8_t)(v >> 8);
	a->b[o + 3] = (uint8_t)v;
}

int
sg_gen_init(struct sg_gen *g, struct sg_opts *o, const uint8_t src_mac[6])
{
	uint32_t nports = (uint32_t)o->sport_hi - o->sport_lo + 1, max_conns = 1;
	uint64_t n = o->flows;
	int rc;

	memset(g, 0, sizeof(*g));
	for (uint16_t p = 0; p < o->nphases; p++) {
		struct sg_hot *h = &o->phases[p].hot;
		if (h->kind == 0)
			continue;
		h->fid_lo = (uint32_t)n;
		n += h->pool;
		if (h->conns > max_conns)
			max_conns = h->conns;
	}
	if (n > UINT32_MAX / 2)
		return -EINVAL;
	g->nbase = o->flows;
	g->nflows = (uint32_t)n;
	g->flows = calloc(n, sizeof(*g->flows));
	g->seq = calloc(n, sizeof(*g->seq));
	g->tcp_bytes = calloc(n, sizeof(*g->tcp_bytes));
	g->hot_id = calloc(max_conns, sizeof(*g->hot_id));
	g->hot_cnt = calloc(max_conns, sizeof(*g->hot_cnt));
	if (g->flows == NULL || g->seq == NULL || g->tcp_bytes == NULL || g->hot_id == NULL ||
	    g->hot_cnt == NULL) {
		sg_gen_free(g);
		return -ENOMEM;
	}
	rc = sg_zipf_build(&g->zipf, o->flows, o->zipf);
	if (rc != 0) {
		sg_gen_free(g);
		return rc;
	}
	for (uint32_t i = 0; i < o->flows; i++) {
		struct sg_flow *f = &g->flows[i];
		const struct sg_vip *v = &o->vips[i % o->nvips];
		uint32_t j = i / o->nvips;
		uint32_t nsrc = v->af == LB_AF_INET ? o->src4_n : o->src6_n;

		f->af = v->af;
		f->proto = v->proto;
		f->vip = (uint16_t)(i % o->nvips);
		f->dst = v->addr;
		f->src = v->af == LB_AF_INET ? o->src4 : o->src6;
		addr_add(&f->src, f->af, j % nsrc);
		f->sport = (uint16_t)(o->sport_lo + (j / nsrc) % nports);
		f->dport = v->port ? v->port : (uint16_t)(1024 + j % 60000);
	}
	for (uint16_t p = 0; p < o->nphases; p++) {
		const struct sg_hot *h = &o->phases[p].hot;
		const struct sg_vip *v = &o->vips[h->vip];
		if (h->kind == 0)
			continue;
		for (uint32_t k = 0; k < h->pool; k++) {
			struct sg_flow *f = &g->flows[h->fid_lo + k];
			f->af = v->af;
			f->proto = v->proto;
			f->vip = h->vip;
			f->dst = v->addr;
			f->src = h->src;
			f->sport = (uint16_t)(h->sport + k);
			f->dport = v->port ? v->port : 80;
		}
	}
	memcpy(g->macs, o->dst_mac, 6);
	memcpy(g->macs + 6, src_mac, 6);
	g->size = o->size == SG_SIZE_IMIX ? 0 : (uint16_t)(o->size - SG_FCS_LEN);
	for (int i = 0; i < SG_IMIX_SLOTS; i++)
		g->imix[i] = (uint16_t)((i < 7 ? 64 : i < 11 ? 570 : 1518) - SG_FCS_LEN);
	sg_rng_seed(&g->rng, o->seed);
	return 0;
}

void
sg_gen_free(struct sg_gen *g)
{
	sg_alias_free(&g->zipf);
	free(g->flows);
	free(g->seq);
	free(g->tcp_bytes);
	free(g->hot_id);
	free(g->hot_cnt);
	memset(g, 0, sizeof(*g));
}

void
sg_gen_phase(struct sg_gen *g, const struct sg_phase *ph)
{
	const struct sg_hot *h = &ph->hot;

	g->hot_thresh = 0;
	if (h->kind == 0 || !(h->share > 0))
		return;
	g->hot_thresh = h->share >= 1 ? UINT64_MAX : (uint64_t)ldexp(h->share, 64);
	g->hot_lo = h->fid_lo;
	g->hot_pool = h->pool;
	g->hot_conns = h->conns;
	g->hot_per_conn = h->per_conn;
	for (uint32_t s = 0; s < h->conns; s++) {
		g->hot_id[s] = s;
		g->hot_cnt[s] = 0;
	}
	g->hot_next = h->conns;
}
