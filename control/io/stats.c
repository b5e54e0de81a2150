/* SPDX-License-Identifier: BSD-3-Clause */
/* Stats document construction. Counters are read with plain 64-bit loads. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "control/io/stats.h"

static const char *const state_names[] = {"active", "draining", "down"};

/* The scalar counters of one core, or the sum over several, as an object. */
static json_t *
core_json(const struct lb_core_counters *c)
{
	json_t *drops = json_object();
	uint64_t dropped = 0;

	for (unsigned int r = 1; r < LB_DROP__COUNT; r++) {
		json_object_set_new(drops, lb_drop_reason_name(r),
		                    json_integer((json_int_t)c->drops[r]));
		dropped += c->drops[r];
	}
	json_t *o = json_pack(
	        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
	        "rx_packets", (json_int_t)c->rx_packets, "rx_bytes", (json_int_t)c->rx_bytes,
	        "forwarded", (json_int_t)c->forwarded, "forwarded_bytes",
	        (json_int_t)c->forwarded_bytes, "icmp_sent", (json_int_t)c->icmp_sent, "exception",
	        (json_int_t)c->exception, "flow_hits", (json_int_t)c->flow_hits, "flow_misses",
	        (json_int_t)c->flow_misses, "flow_evictions", (json_int_t)c->flow_evictions,
	        "flow_rechosen", (json_int_t)c->flow_rechosen, "fragments",
	        (json_int_t)c->fragments, "icmp_errors", (json_int_t)c->icmp_errors, "dropped",
	        (json_int_t)dropped, "drops", drops);
	json_object_set_new(o, "hot_spread", json_integer((json_int_t)c->hot_spread));
	json_object_set_new(o, "hot_sprayed", json_integer((json_int_t)c->hot_sprayed));
	json_object_set_new(o, "frag_tracked", json_integer((json_int_t)c->frag_tracked));
	json_object_set_new(o, "frag_followed", json_integer((json_int_t)c->frag_followed));
	json_object_set_new(o, "frag_unmatched", json_integer((json_int_t)c->frag_unmatched));
	json_object_set_new(o, "frag_evictions", json_integer((json_int_t)c->frag_evictions));
	json_object_set_new(o, "fragmented_out", json_integer((json_int_t)c->fragmented_out));
	json_object_set_new(o, "pmtu_learned", json_integer((json_int_t)c->pmtu_learned));
	json_object_set_new(o, "pmtu_ignored", json_integer((json_int_t)c->pmtu_ignored));
	json_object_set_new(o, "fragments_out", json_integer((json_int_t)c->fragments_out));
	json_object_set_new(o, "flow_unpinned", json_integer((json_int_t)c->flow_unpinned));
	json_object_set_new(o, "flow_rate_limited", json_integer((json_int_t)c->flow_rate_limited));
	return o;
}

static void
sum_scalars(struct lb_core_counters *t, const struct lb_core_counters *c)
{
	t->rx_packets += c->rx_packets;
	t->rx_bytes += c->rx_bytes;
	t->forwarded += c->forwarded;
	t->forwarded_bytes += c->forwarded_bytes;
	t->icmp_sent += c->icmp_sent;
	t->exception += c->exception;
	t->flow_hits += c->flow_hits;
	t->flow_misses += c->flow_misses;
	t->flow_evictions += c->flow_evictions;
	t->flow_rechosen += c->flow_rechosen;
	t->flow_unpinned += c->flow_unpinned;
	t->flow_rate_limited += c->flow_rate_limited;
	t->fragments += c->fragments;
	t->icmp_errors += c->icmp_errors;
	t->hot_spread += c->hot_spread;
	t->hot_sprayed += c->hot_sprayed;
	t->frag_tracked += c->frag_tracked;
	t->frag_followed += c->frag_followed;
	t->frag_unmatched += c->frag_unmatched;
	t->frag_evictions += c->frag_evictions;
	t->fragmented_out += c->fragmented_out;
	t->pmtu_learned += c->pmtu_learned;
	t->pmtu_ignored += c->pmtu_ignored;
	t->fragments_out += c->fragments_out;
	for (unsigned int r = 0; r < LB_DROP__COUNT; r++)
		t->drops[r] += c->drops[r];
}

static json_t *
obj_json(const struct lb_core_counters *const *cores, unsigned int n, int is_vip, uint16_t id)
{
	struct lb_obj_counters s = {0, 0, 0};

	for (unsigned int i = 0; i < n; i++) {
		const struct lb_obj_counters *o =
		        is_vip ? &cores[i]->vip[id] : &cores[i]->backend[id];

		s.packets += o->packets;
		s.bytes += o->bytes;
		s.new_flows += o->new_flows;
	}
	return json_pack("{s:I, s:I, s:I}", "packets", (json_int_t)s.packets, "bytes",
	                 (json_int_t)s.bytes, "new_flows", (json_int_t)s.new_flows);
}

json_t *
lb_stats_json(const struct lb_config *cfg, const struct lb_core_counters *const *cores,
              const unsigned int *lcores, unsigned int n_cores)
{
	/* Scalars only are summed into tot; per-object counters are summed per
	 * object below. Heap, not stack: the struct carries the big arrays. */
	struct lb_core_counters *tot = calloc(1, sizeof(*tot));
	json_t *root, *vips, *cj;
	char buf[64];

	if (tot == NULL)
		return NULL;
	root = json_object();
	cj = json_array();
	for (unsigned int i = 0; i < n_cores; i++) {
		json_t *o = core_json(cores[i]);

		json_object_set_new(o, "lcore", json_integer(lcores[i]));
		json_array_append_new(cj, o);
		sum_scalars(tot, cores[i]);
	}
	json_object_set_new(root, "totals", core_json(tot));
	free(tot);

	vips = json_array();
	for (uint32_t i = 0; cfg != NULL && i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];
		json_t *vo = obj_json(cores, n_cores, 1, v->id), *bes = json_array();

		json_object_set_new(vo, "address",
		                    json_string(lb_ip_to_str(v->af, &v->addr, buf, sizeof(buf))));
		json_object_set_new(vo, "port", json_integer(v->port));
		json_object_set_new(vo, "protocol",
		                    json_string(v->proto == IPPROTO_TCP ? "tcp" : "udp"));
		for (uint32_t j = 0; j < v->n_backends; j++) {
			const struct lb_cfg_backend *b = &v->backends[j];
			json_t *bo = obj_json(cores, n_cores, 0, b->id);

			json_object_set_new(
			        bo, "address",
			        json_string(lb_ip_to_str(b->af, &b->addr, buf, sizeof(buf))));
			json_object_set_new(bo, "name", json_string(b->name));
			json_object_set_new(bo, "weight", json_integer(b->weight));
			json_object_set_new(bo, "state", json_string(state_names[b->state]));
			json_array_append_new(bes, bo);
		}
		json_object_set_new(vo, "backends", bes);
		json_array_append_new(vips, vo);
	}
	json_object_set_new(root, "vips", vips);
	json_object_set_new(root, "cores", cj);
	return root;
}

void
lb_stats_add_path_mtu(json_t *root, const struct lb_config *cfg, const struct lb_snapshot *s,
                      const struct lb_pmtu_table *t, uint32_t now)
{
	json_t *vips = json_object_get(root, "vips");

	for (uint32_t i = 0; cfg != NULL && i < cfg->n_vips && i < json_array_size(vips); i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];
		json_t *bes = json_object_get(json_array_get(vips, i), "backends");

		for (uint32_t j = 0; j < v->n_backends && j < json_array_size(bes); j++) {
			uint16_t id = v->backends[j].id;
			uint16_t m = lb_pmtu_mtu(t, s, id, s->encap.mtu, now);

			if (m < s->encap.mtu)
				json_object_set_new(json_array_get(bes, j), "path_mtu",
				                    json_integer(m));
		}
	}
}
