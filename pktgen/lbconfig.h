/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillgen's reading of the balancer's own configuration file (--lb-config,
 * or the scenario's "lb_config"): the file is judged by spillwayd's loader
 * (control/model/config.c), so spillgen understands exactly what the daemon does;
 * its VIPs, backends, weights and GUE port then go into struct sg_opts.
 */
#ifndef SG_LBCONFIG_H
#define SG_LBCONFIG_H

#include <stddef.h>

#include "options.h"

/**
 * Read VIPs, backends, weights and gue_port from a spillwayd config into o.
 * VIPs given before (--vip) are kept and get the weights of the config's
 * matching VIP; otherwise the config's VIPs replace o's. Backends are
 * numbered in order of first appearance; a draining or down backend's weight
 * (its expected share) is 0. o->gue_port is set only if it is 0.
 *
 * @return 0, or -1 with the reason in err (invalid JSON, what spillwayd's
 *   loader rejects, no "vips" array, more VIPs or backends than spillgen
 *   takes).
 */
int sg_lbconfig_load(struct sg_opts *o, const char *path, char *err, size_t errlen);

#endif /* SG_LBCONFIG_H */
