/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The controller's list of hot keys it reports without overriding them: keys
 * of "report" VIPs and elephants (5-tuple keys of TCP VIPs). Same hysteresis
 * as overrides (listed at >= threshold, delisted after demote_windows windows
 * below threshold_low), bounded to LB_HOT_MAX_REPORTS entries; a linear
 * scan, as the list is small and read once per candidate per window.
 */
#include <netinet/in.h>
#include <string.h>

#include "control/hot/hot_report.h"

enum lb_hot_kind
lb_hot_report_kind(const struct lb_vip *v)
{
	if (v->hot_mode == LB_HOT_OFF)
		return LB_HOT_KIND_OFF;
	if (v->key_mode == LB_KEY_5TUPLE && v->proto == IPPROTO_TCP)
		return LB_HOT_KIND_ELEPHANT;
	if (v->hot_mode == LB_HOT_REPORT)
		return LB_HOT_KIND_REPORT;
	return LB_HOT_KIND_SPREAD;
}

static int
find(const struct lb_hotkey *h, uint16_t vip_id, uint64_t key_hash)
{
	for (uint32_t i = 0; i < h->n_rep; i++)
		if (h->rep[i].key_hash == key_hash && h->rep[i].vip_id == vip_id)
			return (int)i;
	return -1;
}

void
lb_hot_report_feed(struct lb_hotkey *h, const struct lb_vip *v, const struct lb_hot_candidate *c,
                   double share, double list_at, uint64_t window)
{
	struct lb_hot_report *r;
	int pos = find(h, v->id, c->key_hash);

	if (pos >= 0) {
		h->rep[pos].seen += c->count;
		return;
	}
	if (share < list_at)
		return;
	if (h->n_rep >= LB_HOT_MAX_REPORTS) {
		h->report_full++;
		return;
	}
	r = &h->rep[h->n_rep++];
	memset(r, 0, sizeof(*r));
	r->vip_id = v->id;
	r->key_hash = c->key_hash;
	r->key = c->key;
	r->share = share;
	r->list_at = list_at;
	r->since_window = window;
	r->kind = (uint8_t)lb_hot_report_kind(v);
	r->fresh = true;
	h->listed++;
}

void
lb_hot_report_end(struct lb_hotkey *h, const uint64_t *vip_total, const struct lb_snapshot *s,
                  const struct lb_vip *(*vip_of)(const struct lb_hotkey *,
                                                 const struct lb_snapshot *, uint16_t),
                  uint64_t window)
{
	uint32_t j = 0;

	(void)window;
	for (uint32_t i = 0; i < h->n_rep; i++) {
		struct lb_hot_report *r = &h->rep[i];
		const struct lb_vip *v = vip_of(h, s, r->vip_id);
		enum lb_hot_kind k = v != NULL ? lb_hot_report_kind(v) : LB_HOT_KIND_OFF;
		uint64_t total = v != NULL && vip_total != NULL ? vip_total[v->id] : 0;
		bool keep = k == LB_HOT_KIND_REPORT || k == LB_HOT_KIND_ELEPHANT;

		if (keep && !r->fresh) {
			double share = total ? (double)r->seen / (double)total : 0;

			r->share = share > 1 ? 1 : share;
			double low = h->p.threshold_low > 0 ? h->p.threshold_low
			                                    : LB_HOT_DEMOTE_BAND * r->list_at;

			r->low_windows = r->share < low ? r->low_windows + 1 : 0;
			keep = r->low_windows < h->p.demote_windows;
		}
		r->kind = (uint8_t)k;
		r->seen = 0;
		r->fresh = false;
		if (!keep) {
			h->delisted++;
			continue;
		}
		if (i != j)
			h->rep[j] = *r;
		j++;
	}
	h->n_rep = j;
}

void
lb_hotkey_listed_at(const struct lb_hotkey *h, uint32_t i, struct lb_hot_listed *out)
{
	const struct lb_hot_report *r = &h->rep[i];

	*out = (struct lb_hot_listed){
	        .vip_id = r->vip_id,
	        .key_hash = r->key_hash,
	        .key = r->key,
	        .share = r->share,
	        .since_window = r->since_window,
	        .elephant = r->kind == LB_HOT_KIND_ELEPHANT,
	};
}

uint32_t
lb_hotkey_listed(const struct lb_hotkey *h, struct lb_hot_listed *out, uint32_t max)
{
	for (uint32_t i = 0; i < h->n_rep && i < max; i++) {
		const struct lb_hot_report *r = &h->rep[i];

		out[i] = (struct lb_hot_listed){
		        .vip_id = r->vip_id,
		        .key_hash = r->key_hash,
		        .key = r->key,
		        .share = r->share,
		        .since_window = r->since_window,
		        .elephant = r->kind == LB_HOT_KIND_ELEPHANT,
		};
	}
	return h->n_rep;
}
