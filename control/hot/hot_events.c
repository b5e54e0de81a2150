/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's reports: the ring of recent events, overwritten
 * oldest first, and the JSON replies built from it and from the counters
 * (control builds its hot-key replies and its stats on them).
 */
#include <inttypes.h>
#include <stdio.h>

#include "control/hot/hot_events.h"

static const char *const ev_names[] = {"promote", "demote", "replan",    "pin",
                                       "unpin",   "drop",   "infeasible"};

void
lb_hot_events_add(struct lb_hotkey *h, enum lb_hot_event_type type, uint64_t window,
                  const struct lb_hot_override *o)
{
	struct lb_hot_event *e = &h->ev[h->ev_next];

	e->window = window;
	e->key_hash = o->key_hash;
	e->key = o->key;
	e->share = o->share;
	e->vip_id = o->vip_id;
	e->replicas = o->n_replicas;
	e->type = (uint8_t)type;
	e->peak = 0;
	h->ev_next = (h->ev_next + 1) % LB_HOT_MAX_EVENTS;
	if (h->ev_n < LB_HOT_MAX_EVENTS)
		h->ev_n++;
}

/* --- JSON ----------------------------------------------------------------- */

json_t *
lb_hotkey_events_json(const struct lb_hotkey *h)
{
	json_t *arr = json_array();
	uint32_t first = (h->ev_next + LB_HOT_MAX_EVENTS - h->ev_n) % LB_HOT_MAX_EVENTS;

	if (arr == NULL)
		return NULL;
	for (uint32_t k = 0; k < h->ev_n; k++) {
		const struct lb_hot_event *e = &h->ev[(first + k) % LB_HOT_MAX_EVENTS];
		char hash[24];
		json_t *j;

		/* As a hex string: JSON numbers above 2^53 do not survive most parsers. */
		snprintf(hash, sizeof(hash), "0x%016" PRIx64, e->key_hash);
		j = json_pack("{s:I, s:s, s:i, s:s, s:f, s:i}", "window", (json_int_t)e->window,
		              "event", ev_names[e->type], "vip_id", (int)e->vip_id, "key_hash",
		              hash, "share", e->share, "replicas", (int)e->replicas);
		if (j != NULL && e->type == LB_HOT_EV_INFEASIBLE)
			json_object_set_new(j, "peak", json_real(e->peak));
		if (json_array_append_new(arr, j) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

const struct lb_flow_key *
lb_hotkey_event_key(const struct lb_hotkey *h, uint32_t i)
{
	uint32_t first = (h->ev_next + LB_HOT_MAX_EVENTS - h->ev_n) % LB_HOT_MAX_EVENTS;

	if (i >= h->ev_n)
		return NULL;
	return &h->ev[(first + i) % LB_HOT_MAX_EVENTS].key;
}

json_t *
lb_hotkey_counters_json(const struct lb_hotkey *h)
{
	uint32_t pinned = 0, elephants = 0;
	json_t *o;

	for (uint32_t i = 0; i < h->n_ov; i++)
		pinned += h->ov[i].pinned;
	for (uint32_t i = 0; i < h->n_rep; i++)
		elephants += h->rep[i].kind == LB_HOT_KIND_ELEPHANT;
	o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "promotions",
	              (json_int_t)h->promotions, "demotions", (json_int_t)h->demotions, "replans",
	              (json_int_t)h->replans, "dropped", (json_int_t)h->dropped, "table_full",
	              (json_int_t)h->table_full, "infeasible", (json_int_t)h->infeasible, "active",
	              (json_int_t)h->n_ov, "pinned", (json_int_t)pinned, "windows_missed",
	              (json_int_t)h->windows_missed);
	/* The keys listed without an override (report VIPs, elephants). */
	if (o != NULL &&
	    (json_object_set_new(o, "reported", json_integer(h->n_rep - elephants)) != 0 ||
	     json_object_set_new(o, "elephants", json_integer(elephants)) != 0 ||
	     json_object_set_new(o, "listed", json_integer((json_int_t)h->listed)) != 0 ||
	     json_object_set_new(o, "delisted", json_integer((json_int_t)h->delisted)) != 0 ||
	     json_object_set_new(o, "report_full", json_integer((json_int_t)h->report_full)) != 0 ||
	     json_object_set_new(o, "unresolved", json_integer((json_int_t)h->unresolved)) != 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void
lb_hotkey_counts(const struct lb_hotkey *h, struct lb_hot_counts *out)
{
	*out = (struct lb_hot_counts){
	        .promotions = h->promotions,
	        .demotions = h->demotions,
	        .replans = h->replans,
	        .dropped = h->dropped,
	        .table_full = h->table_full,
	        .active = h->n_ov,
	};
	for (uint32_t i = 0; i < h->n_ov; i++)
		out->pinned += h->ov[i].pinned;
}
