/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The analyser: what came back from the balancer, per backend, per flow, per
 * interval. The RX lcore owns it while the run lasts (sg_an_record() per
 * packet: no allocation, no locks; every table is sized at sg_an_init());
 * figures are computed from it once the run has stopped.
 *
 * Backends are named by the outer destination address, discovered as packets
 * arrive (pre-seeded, with weights, from the balancer's config when given).
 * A packet's VIP is its flow's (generator mode) or the first configured VIP
 * matching its inner destination (analyse-only mode).
 */
#ifndef SG_ANALYSIS_H
#define SG_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "pkt.h"

#define SG_MAX_BACKENDS 256
#define SG_MAX_VIPS 64
#define SG_MAX_PHASES 32
#define SG_BE_SLOTS 1024  /* open-addressing table for outer address -> backend */
#define SG_LAT_SUB_BITS 4 /* log-linear histogram: 16 buckets per power of two (<= 6.25% error) */
#define SG_LAT_BUCKETS (64 << SG_LAT_SUB_BITS)
#define SG_NO_BACKEND 0xffff

struct sg_vip {
	union lb_ip addr;
	uint8_t af;
	uint8_t proto;
	uint16_t port;                  /* host order; 0 = any */
	bool gue;                       /* the config says GUE (informative) */
	double weight[SG_MAX_BACKENDS]; /* configured weight per backend index; < 0: not a member */
	bool configured;                /* weights above come from the config */
};

struct sg_backend {
	union lb_ip addr;
	uint8_t af;
	bool configured; /* named in the config (else discovered) */
};

/* Per-flow receive state: a 64-packet window over sequence numbers, as IPsec
 * anti-replay does, tells duplicates from reordering. */
struct sg_flow_rx {
	uint64_t win;     /* bit k: sequence number top - 1 - k was seen */
	uint32_t top;     /* highest sequence number seen + 1 (0: none) */
	uint32_t rx;      /* packets received, duplicates included */
	uint32_t dup;     /* duplicates */
	uint16_t backend; /* backend of the last packet, SG_NO_BACKEND before the first */
	uint8_t moved;    /* seen at more than one backend */
	uint8_t pad;
};

/* A hot key's life in one phase: which flows are it, and when it spread. */
struct sg_hot_track {
	uint32_t fid_lo, fid_hi;     /* flow ids [lo, hi) are the hot key's connections */
	uint64_t start_tsc, end_tsc; /* the phase */
	uint64_t packets;
	uint64_t first_rx_tsc; /* first hot packet back (0: none) */
	uint64_t spread_tsc;   /* first hot packet at a second backend (0: never) */
	uint16_t first_backend;
	uint64_t seen[SG_MAX_BACKENDS / 64];
	uint64_t be_pkts[SG_MAX_BACKENDS];    /* the key's packets per backend */
	uint64_t be_new_tsc[SG_MAX_BACKENDS]; /* latest send stamp of a first packet (seq 0)
	                                       * of the key's connections per backend; 0: none */
};

struct sg_analysis {
	/* Set up before the run. */
	uint32_t nflows;
	const struct sg_flow *flows; /* NULL: analyse-only, no 5-tuple check */
	uint16_t gue_port;
	uint64_t t0, hz, iv_ticks;
	uint32_t max_iv;
	bool latency;
	uint16_t nvips;
	struct sg_vip *vips; /* [SG_MAX_VIPS] */
	uint16_t nbackends;
	struct sg_backend be[SG_MAX_BACKENDS];
	uint16_t slot[SG_BE_SLOTS]; /* backend index + 1; 0 empty */
	uint16_t nhot;
	struct sg_hot_track hot[SG_MAX_PHASES];

	struct sg_flow_rx *fs;
	uint32_t *series_be;    /* [max_iv][SG_MAX_BACKENDS] */
	uint32_t *series_vip;   /* [max_iv][SG_MAX_VIPS] */
	uint32_t *series_moved; /* [max_iv] flows that changed backend */
	uint32_t *series_lost;  /* [max_iv] sequence gaps opened */
	uint32_t n_iv;          /* intervals written: highest index + 1 */

	/* Counters, written by the RX lcore only. */
	uint64_t rx, rx_bytes, decoded, dec[SG_DEC_N];
	uint64_t unknown_flow, mismatched, no_backend_slot;
	uint64_t dup, reordered, late, gaps, moved_flows, moves;
	uint64_t be_pkts[SG_MAX_BACKENDS];
	uint64_t moved_from[SG_MAX_BACKENDS]; /* moved flows, by the backend they first left */
	uint64_t vip_be_pkts[SG_MAX_VIPS][SG_MAX_BACKENDS];
	uint64_t vip_pkts[SG_MAX_VIPS];
	uint64_t lat[SG_LAT_BUCKETS];
	uint64_t lat_n, lat_max, lat_neg;
	double lat_sum;
};

/**
 * Allocate the per-flow and per-interval tables (calloc; call before the run).
 * vips: nvips entries copied in. @return 0 or -ENOMEM / -EINVAL.
 */
int sg_an_init(struct sg_analysis *an, uint32_t nflows, const struct sg_flow *flows,
               const struct sg_vip *vips, uint16_t nvips, uint16_t gue_port, uint64_t hz,
               uint64_t iv_ticks, uint32_t max_iv);
void sg_an_free(struct sg_analysis *an);

/** Backend index of an address, added if new. @return index, or SG_NO_BACKEND if full. */
uint16_t sg_an_backend(struct sg_analysis *an, const union lb_ip *a, uint8_t af);

/** Interval index of tick now (clamped to the last interval). */
static inline uint32_t
sg_an_interval(const struct sg_analysis *an, uint64_t now)
{
	uint64_t iv = now > an->t0 ? (now - an->t0) / an->iv_ticks : 0;

	return iv < an->max_iv ? (uint32_t)iv : an->max_iv - 1;
}

/** Histogram bucket of a latency (ticks), and the midpoint a bucket stands for. */
static inline uint32_t
sg_lat_bucket(uint64_t v)
{
	if (v < (1u << SG_LAT_SUB_BITS))
		return (uint32_t)v;
	uint32_t msb = 63 - (uint32_t)__builtin_clzll(v);
	uint32_t sub = (uint32_t)(v >> (msb - SG_LAT_SUB_BITS)) & ((1u << SG_LAT_SUB_BITS) - 1);
	return ((msb - SG_LAT_SUB_BITS + 1) << SG_LAT_SUB_BITS) + sub;
}
double sg_lat_bucket_mid(uint32_t b);

/**
 * Account one decoded packet (or a decode failure when res != SG_DEC_OK).
 * now: the RX burst's tick; iv: sg_an_interval(an, now).
 */
void sg_an_record(struct sg_analysis *an, enum sg_dec res, const struct sg_decoded *d,
                  uint32_t frame_len, uint64_t now, uint32_t iv);

/* ---- Figures (pure; used on totals and on each interval) ---- */

/**
 * Relative load of each backend: load[i] / expected[i], expected being what
 * its weights ask for out of the same packets. Peak-to-average is the largest
 * relative load (1.0 = perfect); entries with expected[i] <= 0 are skipped.
 * @return NAN when nothing is expected.
 */
double sg_fig_peak_avg(const double *load, const double *expected, uint32_t n);

/** Jain's fairness index of the relative loads: (sum x)^2 / (n sum x^2), 1/n..1. */
double sg_fig_jain(const double *load, const double *expected, uint32_t n);

/** The q-quantile (0..1) of a histogram of n buckets, in ticks (bucket midpoint). */
double sg_fig_percentile(const uint64_t *hist, uint32_t n, double q);

/**
 * Expected packets per backend for the given per-(VIP, backend) counts:
 * sum over VIPs of the VIP's packets times the backend's weight share
 * (configured weights; otherwise equal shares among the backends the VIP
 * was seen to use over the whole run).
 */
void sg_an_expected(const struct sg_analysis *an, const double *vip_pkts, double *expected);

/** Loss summary: sent[fid] per flow, or NULL to take the highest sequence + 1. */
struct sg_flow_summary {
	uint64_t flows_sent, flows_seen, flows_with_loss, flows_with_dup, flows_moved;
	uint64_t sent, unique, lost, dup, reordered, late;
	uint64_t flows_single_backend; /* flows seen that stayed on one backend */
};
void sg_an_flow_summary(const struct sg_analysis *an, const uint32_t *sent,
                        struct sg_flow_summary *s);

/** Peak-to-average and Jain over interval iv (NAN when it is empty). */
void sg_an_interval_balance(const struct sg_analysis *an, uint32_t iv, double *peak, double *jain);

#endif /* SG_ANALYSIS_H */
