/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillgen's options: the command line, the scenario file (JSON phases) and
 * the balancer's own config file (VIPs, backends, weights, GUE port; read by
 * lbconfig.c), merged into one struct sg_opts before any packet is built.
 */
#ifndef SG_OPTIONS_H
#define SG_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"

enum sg_hot_kind {
	SG_HOT_5TUPLE = 1, /* one connection carries share p */
	SG_HOT_SRC_IP,     /* one source address, many connections, together share p */
};

struct sg_hot {
	enum sg_hot_kind kind; /* 0: no hot key in this phase */
	double share;          /* p: fraction of the phase's packets */
	uint16_t vip;
	uint32_t conns;    /* concurrent connections (1 for 5tuple) */
	uint32_t per_conn; /* packets per connection before it is replaced (0: never) */
	uint32_t pool;     /* distinct connections (flow ids) the key may use */
	union lb_ip src;
	uint16_t sport;  /* first source port */
	uint32_t fid_lo; /* first flow id (filled when flows are laid out) */
};

struct sg_phase {
	char name[32];
	double start, end; /* seconds from the run's start */
	uint64_t pps;      /* 0: as fast as possible */
	struct sg_hot hot;
};

#define SG_SIZE_IMIX 0 /* size value meaning "simple IMIX 7:4:1 of 64/570/1518" */

struct sg_opts {
	uint32_t flows;
	double zipf;
	uint16_t size; /* frame size with FCS; SG_SIZE_IMIX for IMIX */
	uint16_t nvips;
	struct sg_vip vips[SG_MAX_VIPS];
	uint16_t nbackends; /* from the balancer's config, in order */
	union lb_ip backend[SG_MAX_BACKENDS];
	uint8_t backend_af[SG_MAX_BACKENDS];
	union lb_ip src4, src6; /* source ranges */
	uint32_t src4_n, src6_n;
	uint16_t sport_lo, sport_hi;
	uint16_t gue_port;
	uint32_t interval_ms;
	double cap;
	uint32_t drain_ms;
	uint16_t port;
	const char *json, *csv, *svg;
	int progress; /* -1: when stderr is a terminal */
	bool quiet;
	uint64_t seed;
	uint64_t count; /* stop after this many packets (0: no limit) */
	bool analyse_only;
	bool tx_only;
	bool no_latency;
	uint8_t dst_mac[6];
	double link_wait;
	const char *done_file; /* touched when the run is over; then wait for the peer to leave */
	double linger;
	double max_lag_ms; /* schedule debt kept before it is written off */
	uint16_t nphases;
	struct sg_phase phases[SG_MAX_PHASES];
	const char *scenario;
	const char *lb_config;
};

/** Defaults, then the scenario file, then explicit options. @return 0, 1 (--help shown) or -1. */
int sg_opts_parse(struct sg_opts *o, int argc, char **argv);

void sg_opts_usage(FILE *f);

/** Parse "ADDR:PORT/PROTO" or "[ADDR6]:PORT/PROTO" into v. @return 0 or -1. */
int sg_parse_vip(const char *s, struct sg_vip *v);

/** Parse a scenario JSON text into o (o's other fields are kept). err gets the reason. */
int sg_scenario_load(struct sg_opts *o, const char *path, char *err, size_t errlen);

#endif /* SG_OPTIONS_H */
