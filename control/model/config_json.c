/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The document form of a configuration: struct lb_config -> JSON, the shapes
 * config.c reads (what the state file holds and the control socket answers
 * with), so a written document loads back as the same configuration.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "control/model/config.h"
#include "control/model/config_internal.h"

json_t *
lb_config_backend_to_json(const struct lb_cfg_backend *b)
{
	char buf[64];
	json_t *o = json_pack("{s:s, s:i, s:s}", "address", lb_ip_to_str(b->af, &b->addr, buf, 64),
	                      "weight", (json_int_t)b->weight, "state",
	                      lb_config_state_names[b->state]);

	if (o != NULL &&
	    ((b->name[0] != '\0' && json_object_set_new(o, "name", json_string(b->name)) != 0) ||
	     (b->health != NULL &&
	      json_object_set_new(o, "health", lb_config_health_to_json(b->health, false)) != 0))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *
lb_config_vip_to_json(const struct lb_cfg_vip *v)
{
	char buf[64];
	json_t *bes = json_array(), *o;

	if (bes == NULL)
		return NULL;
	for (uint32_t j = 0; j < v->n_backends; j++) {
		if (json_array_append_new(bes, lb_config_backend_to_json(&v->backends[j])) != 0) {
			json_decref(bes);
			return NULL;
		}
	}
	/* "o" hands bes over even when the pack fails. */
	o = json_pack("{s:s, s:i, s:s, s:s, s:s, s:o}", "address",
	              lb_ip_to_str(v->af, &v->addr, buf, 64), "port", (json_int_t)v->port,
	              "protocol", v->proto == IPPROTO_TCP ? "tcp" : "udp", "key",
	              lb_config_key_names[v->key_mode], "encap", lb_config_encap_names[v->encap],
	              "backends", bes);
	/* hot_mode only when not its key mode's default, so documents without it
	 * read the same. */
	if (o != NULL && v->hot_mode != lb_config_hot_mode_default(v->key_mode) &&
	    json_object_set_new(o, "hot_mode",
	                        json_string(lb_config_hot_mode_names[v->hot_mode])) != 0) {
		json_decref(o);
		return NULL;
	}
	if (o != NULL && v->health != NULL &&
	    json_object_set_new(o, "health", lb_config_health_to_json(v->health, true)) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* json_object_set_new that owns v in every case; false on failure (v NULL included). */
static bool
set(json_t *o, const char *key, json_t *v)
{
	return json_object_set_new(o, key, v) == 0;
}

static json_t *
encap_to_json(const struct lb_encap_conf *e)
{
	char buf[64];
	json_t *o = json_object();
	bool ok = o != NULL;

	if (ok && e->has_src4)
		ok = set(o, "source_v4", json_string(lb_ip_to_str(LB_AF_INET, &e->src4, buf, 64)));
	if (ok && e->has_src6)
		ok = set(o, "source_v6", json_string(lb_ip_to_str(LB_AF_INET6, &e->src6, buf, 64)));
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", e->next_hop_mac[0],
	         e->next_hop_mac[1], e->next_hop_mac[2], e->next_hop_mac[3], e->next_hop_mac[4],
	         e->next_hop_mac[5]);
	ok = ok && set(o, "next_hop_mac", json_string(buf)) &&
	     set(o, "mtu", json_integer(e->mtu)) &&
	     set(o, "gue_port", json_integer(ntohs(e->gue_port))) &&
	     set(o, "too_big", json_string(lb_config_too_big_names[e->too_big]));
	if (ok && e->vlan != LB_VLAN_STRIP)
		ok = set(o, "vlan",
		         e->vlan == LB_VLAN_KEEP ? json_string("keep") : json_integer(e->vlan_id));
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The hot object: every parameter of params.h's table, in its order. */
static json_t *
hot_to_json(const struct lb_config *cfg)
{
	json_t *o = json_object();

	for (int i = 0; o != NULL && i < LB_HOT_P_N; i++)
		if (!set(o, lb_hot_param_table[i].name,
		         lb_config_hot_param_json(&lb_hot_param_table[i],
		                                  lb_config_hot_get(cfg, (enum lb_hot_param)i)))) {
			json_decref(o);
			return NULL;
		}
	return o;
}

json_t *
lb_config_to_json(const struct lb_config *cfg)
{
	json_t *root = json_object(), *vips = json_array();
	bool ok = root != NULL && vips != NULL;

	for (uint32_t i = 0; ok && i < cfg->n_vips; i++)
		ok = json_array_append_new(vips, lb_config_vip_to_json(&cfg->vips[i])) == 0;
	ok = ok && set(root, "encap", encap_to_json(&cfg->encap)) &&
	     set(root, "maglev",
	         json_pack("{s:i, s:s}", "table_size", (json_int_t)cfg->table_size, "seed",
	                   cfg->seed)) &&
	     set(root, "flows",
	         json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "capacity",
	                   (json_int_t)cfg->flows.capacity, "tcp_idle_ms",
	                   (json_int_t)cfg->flows.tcp_idle_ms, "udp_idle_ms",
	                   (json_int_t)cfg->flows.udp_idle_ms, "syn_idle_ms",
	                   (json_int_t)cfg->flows.syn_idle_ms, "closing_idle_ms",
	                   (json_int_t)cfg->flows.closing_idle_ms, "new_flow_rate",
	                   (json_int_t)cfg->flows.new_flow_rate, "new_flow_burst",
	                   (json_int_t)cfg->flows.new_flow_burst)) &&
	     set(root, "icmp",
	         json_pack("{s:i, s:i}", "rate_per_sec", (json_int_t)cfg->icmp.rate_per_sec,
	                   "burst", (json_int_t)cfg->icmp.burst)) &&
	     set(root, "hot", hot_to_json(cfg)) && set(root, "vips", json_incref(vips));
	json_decref(vips);
	if (!ok) {
		json_decref(root);
		return NULL;
	}
	return root;
}
