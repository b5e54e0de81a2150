/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Results of a run: the final human table, JSON, the CSV time series and the
 * SVG plot of per-backend load over time (hand-written SVG, no dependencies).
 * Runs once the lcores have stopped.
 */
#ifndef SG_REPORT_H
#define SG_REPORT_H

#include <stdio.h>

#include "analysis.h"
#include "options.h"

struct sg_phase_result {
	uint64_t sent;         /* packets sent in the phase */
	uint64_t skipped;      /* owed by the schedule but written off (the TX loop fell behind) */
	double t_start, t_end; /* when sending actually started / stopped, seconds from t0 */
};

struct sg_run {
	const struct sg_opts *o;
	const struct sg_analysis *an;
	const uint32_t *sent;      /* per flow; NULL in analyse-only mode */
	const uint32_t *tx_series; /* packets sent per interval */
	uint64_t tx_pkts, tx_bytes, tx_unsent, alloc_fail;
	struct sg_phase_result ph[SG_MAX_PHASES];
	double elapsed;     /* t0 to the end of the drain, seconds */
	const char *wiring; /* driver name of the port */
	const char *lcores; /* "tx+rx on lcore 1" etc. */
};

void sg_report_table(FILE *f, const struct sg_run *r);
int sg_report_json(const char *path, const struct sg_run *r);
int sg_report_csv(const char *path, const struct sg_run *r);
int sg_report_svg(const char *path, const struct sg_run *r);

/** Format a backend address. */
void sg_addr_str(const union lb_ip *a, uint8_t af, char *buf, size_t len);

#endif /* SG_REPORT_H */
