/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The configuration model outside parsing: addresses to and from text, a
 * backend's identity (what its Maglev permutation is derived from), a VIP's
 * identity and its lookup, counts, deep copies and frees of struct lb_config.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"

int
lb_ip_from_str(const char *s, uint8_t *af, union lb_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (inet_pton(AF_INET, s, ip->b) == 1) {
		*af = LB_AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, ip->b) == 1) {
		*af = LB_AF_INET6;
		return 0;
	}
	return -EINVAL;
}

const char *
lb_ip_to_str(uint8_t af, const union lb_ip *ip, char *buf, size_t len)
{
	if (inet_ntop(af == LB_AF_INET ? AF_INET : AF_INET6, ip->b, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

const char *
lb_cfg_backend_identity(const struct lb_cfg_backend *b, char *buf, size_t len)
{
	if (b->name[0] != '\0')
		snprintf(buf, len, "%s", b->name);
	else
		lb_ip_to_str(b->af, &b->addr, buf, len);
	return buf;
}

bool
lb_cfg_vip_same(const struct lb_cfg_vip *a, const struct lb_cfg_vip *b)
{
	return a->af == b->af && a->proto == b->proto && a->port == b->port &&
	       memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0;
}

int
lb_config_find_vip(const struct lb_config *cfg, const struct lb_cfg_vip *ref)
{
	for (uint32_t i = 0; cfg != NULL && i < cfg->n_vips; i++)
		if (lb_cfg_vip_same(&cfg->vips[i], ref))
			return (int)i;
	return -1;
}

uint32_t
lb_config_backend_count(const struct lb_config *cfg)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < cfg->n_vips; i++)
		n += cfg->vips[i].n_backends;
	return n;
}

struct lb_config *
lb_config_clone(const struct lb_config *cfg)
{
	struct lb_config *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	*c = *cfg;
	c->n_vips = 0;
	c->vips = NULL;
	if (cfg->n_vips == 0)
		return c;
	c->vips = calloc(cfg->n_vips, sizeof(*c->vips));
	if (c->vips == NULL)
		goto error;
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];
		struct lb_cfg_vip *nv = &c->vips[i];

		*nv = *v;
		nv->backends = NULL;
		nv->n_backends = 0;
		nv->health = lb_config_health_dup(v->health);
		c->n_vips++; /* from here lb_config_free owns nv */
		if (v->health != NULL && nv->health == NULL)
			goto error;
		if (v->n_backends == 0)
			continue;
		nv->backends = malloc(v->n_backends * sizeof(*nv->backends));
		if (nv->backends == NULL)
			goto error;
		for (uint32_t j = 0; j < v->n_backends; j++) {
			nv->backends[j] = v->backends[j];
			nv->backends[j].health = lb_config_health_dup(v->backends[j].health);
			nv->n_backends++;
			if (v->backends[j].health != NULL && nv->backends[j].health == NULL)
				goto error;
		}
	}
	return c;
error:
	lb_config_free(c);
	errno = ENOMEM;
	return NULL;
}

void
lb_config_free(struct lb_config *cfg)
{
	if (cfg == NULL)
		return;
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		lb_cfg_vip_clear(&cfg->vips[i]);
	free(cfg->vips);
	free(cfg);
}
