/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter reports: sums the workers' per-core counters (read while they run)
 * into the stats JSON document the daemon prints at exit and the control
 * socket returns.
 */
#ifndef LB_STATS_H
#define LB_STATS_H

#include <jansson.h>

#include "dataplane/counters.h"
#include "dataplane/pmtu.h"
#include "control/model/config.h"

/**
 * Build the stats document: "totals", "vips" (with their "backends") and
 * "cores". cores[i] belongs to lcore lcores[i].
 *
 * @return a new JSON object (caller owns it), NULL on allocation failure.
 */
json_t *lb_stats_json(const struct lb_config *cfg, const struct lb_core_counters *const *cores,
                      const unsigned int *lcores, unsigned int n_cores);

/**
 * Add "path_mtu" to each backend of root's "vips" (as lb_stats_json() laid
 * them out from cfg) whose learned path MTU in t is live at tick now and below
 * s's encap.mtu. s is the snapshot the workers run.
 */
void lb_stats_add_path_mtu(json_t *root, const struct lb_config *cfg, const struct lb_snapshot *s,
                           const struct lb_pmtu_table *t, uint32_t now);

#endif /* LB_STATS_H */
