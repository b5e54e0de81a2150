/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The balancer's config file for spillgen: parsed as JSON here, validated by
 * lb_config_from_json() (spillwayd's loader), then mapped to spillgen's VIPs
 * and expected backend shares. Start-up only.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "control/model/config.h"
#include "lbconfig.h"

/* The config's VIPs and backends into o; -1 with err when spillgen's tables are too small. */
static int
apply(struct sg_opts *o, const struct lb_config *cfg, char *err, size_t errlen)
{
	bool keep_vips = o->nvips > 0;

	if (!keep_vips)
		o->nvips = 0;
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];
		struct sg_vip tmp, *x = &tmp;

		memset(x, 0, sizeof(*x));
		x->addr = v->addr;
		x->af = v->af;
		x->port = v->port;
		x->proto = v->proto == IPPROTO_TCP ? SG_PROTO_TCP : SG_PROTO_UDP;
		x->gue = v->encap == LB_ENCAP_GUE;
		x->configured = true;
		for (int j = 0; j < SG_MAX_BACKENDS; j++)
			x->weight[j] = -1;
		for (uint32_t k = 0; k < v->n_backends; k++) {
			const struct lb_cfg_backend *b = &v->backends[k];
			uint16_t idx;

			for (idx = 0; idx < o->nbackends; idx++)
				if (o->backend_af[idx] == b->af &&
				    memcmp(&o->backend[idx], &b->addr, sizeof(b->addr)) == 0)
					break;
			if (idx == o->nbackends) {
				if (o->nbackends >= SG_MAX_BACKENDS) {
					snprintf(err, errlen, "more than %d backends",
					         SG_MAX_BACKENDS);
					return -1;
				}
				o->backend[idx] = b->addr;
				o->backend_af[idx] = b->af;
				o->nbackends++;
			}
			/* Draining and down backends get no new flows: expected share 0. */
			x->weight[idx] = b->state == LB_BACKEND_ACTIVE ? (double)b->weight : 0;
		}
		if (keep_vips) {
			/* --vip given: attach the config's weights to the matching VIP. */
			for (uint16_t j = 0; j < o->nvips; j++) {
				struct sg_vip *y = &o->vips[j];
				struct lb_cfg_vip yv = {.af = y->af, .port = y->port};

				yv.addr = y->addr;
				yv.proto = y->proto; /* SG_PROTO_* are the IP protocol numbers */
				if (lb_cfg_vip_same(&yv, v)) {
					memcpy(y->weight, x->weight, sizeof(x->weight));
					y->configured = true;
					y->gue = x->gue;
				}
			}
		} else {
			o->vips[o->nvips++] = *x;
		}
	}
	if (o->gue_port == 0)
		o->gue_port = ntohs(cfg->encap.gue_port);
	return 0;
}

int
sg_lbconfig_load(struct sg_opts *o, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je), *vips;
	struct lb_config *cfg = NULL;
	int rc = -1;

	if (root == NULL) {
		snprintf(err, errlen, "%d:%d: invalid JSON: %s", je.line, je.column, je.text);
		return -1;
	}
	/* spillgen needs VIPs to send to, and has room for SG_MAX_VIPS. */
	vips = json_object_get(root, "vips");
	if (!json_is_array(vips) || json_array_size(vips) > SG_MAX_VIPS) {
		snprintf(err, errlen, "vips: not an array of at most %d VIPs", SG_MAX_VIPS);
		goto out;
	}
	cfg = lb_config_from_json(root, err, errlen);
	if (cfg != NULL)
		rc = apply(o, cfg, err, errlen);
out:
	lb_config_free(cfg);
	json_decref(root);
	return rc;
}
