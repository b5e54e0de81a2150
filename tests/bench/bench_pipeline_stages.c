/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "stage" lines of bench_pipeline: each step of the pipeline's hit path
 * (parse, VIP lookup, the hash scalar, x4 and x8, flow lookup, Maglev pick,
 * encapsulation written whole and from the per-burst template, the counters
 * per packet and per burst) timed alone over the same fresh bursts, one rdtsc
 * pair per stage per burst of 32, for a per-stage cycle budget.
 */
#include <stdint.h>

#include <rte_atomic.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dataplane/counters.h"
#include "dataplane/encap.h"
#include "dataplane/flow_table.h"
#include "dataplane/hash.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

#include "bench_pipeline.h"

const char *const g_stage_name[ST__N] = {
        "parse",       "vip_lookup",  "hash",       "hash_x4",          "hash_x8",  "flow_lookup",
        "maglev_pick", "encap_write", "encap_tmpl", "counters_per_pkt", "counters",
};

/* A burst's hashes as the pipeline computes them without AVX-512: x4 with AVX2, else scalar. */
static void
hash_x4_burst(const struct lb_snapshot *s, const struct lb_pkt_info *info, uint64_t *h)
{
#ifdef LB_HASH_HAVE_X4
	if (__builtin_cpu_supports("avx2")) {
		for (int i = 0; i < LB_BURST; i += 4) {
			const struct lb_flow_key *k[4] = {&info[i].key, &info[i + 1].key,
			                                  &info[i + 2].key, &info[i + 3].key};

			lb_hash_flow_x4(&s->hkey, k, &h[i]);
		}
		return;
	}
#endif
	for (int i = 0; i < LB_BURST; i++)
		h[i] = lb_hash_flow(&s->hkey, &info[i].key);
}

void
stages_measure(struct bench *b, const uint32_t *draw, uint32_t n_pkts, double r[ST__N][ROUNDS])
{
	const struct lb_snapshot *s = b->s;
	struct lb_worker *w = b->w;

	for (uint32_t round = 0; round < g_rounds; round++) {
		uint64_t cyc[ST__N] = {0};

		for (uint32_t done = 0; done < n_pkts; done += LB_BURST) {
			struct lb_pkt_info info[LB_BURST];
			const struct lb_vip *vip[LB_BURST];
			uint64_t h[LB_BURST], acc = 0;
			struct lb_flow_entry *e[LB_BURST];
			uint8_t hdr[LB_BURST][64];
			uint64_t t0, t1;

			burst_next(b);
			for (uint32_t i = 0; i < LB_BURST; i++)
				mbuf_set(b->m[i], draw[done + i]);
			rte_mb();
			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++)
				acc += (uint64_t)lb_parse_frame(
				        rte_pktmbuf_mtod(b->m[i], const uint8_t *),
				        rte_pktmbuf_data_len(b->m[i]), rte_pktmbuf_pkt_len(b->m[i]),
				        &info[i]);
			t1 = rte_rdtsc();
			cyc[ST_PARSE] += t1 - t0;
			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++)
				vip[i] = lb_vip_lookup(s, info[i].key.af, &info[i].key.dst,
				                       info[i].key.proto, info[i].key.dport);
			t1 = rte_rdtsc();
			cyc[ST_VIP] += t1 - t0;
			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++)
				h[i] = lb_hash_flow(&s->hkey, &info[i].key);
			t1 = rte_rdtsc();
			cyc[ST_HASH] += t1 - t0;
			t0 = rte_rdtsc();
			/* What the pipeline runs where the CPU has AVX2 (else: same as hash). */
			hash_x4_burst(s, info, h);
			t1 = rte_rdtsc();
			cyc[ST_HASH4] += t1 - t0;
			t0 = rte_rdtsc();
#ifdef LB_HASH_HAVE_X8
			/* What the pipeline runs where the CPU has AVX-512F (else: as hash_x4). */
			if (__builtin_cpu_supports("avx512f")) {
				for (int i = 0; i < LB_BURST; i += 8)
					lb_hash_flow_x8s(&s->hkey, &info[i].key, sizeof(info[0]),
					                 &h[i]);
			} else
#endif
				hash_x4_burst(s, info, h);
			t1 = rte_rdtsc();
			cyc[ST_HASH8] += t1 - t0;
			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++)
				e[i] = lb_flow_lookup(w->ft, lb_flow_sig(h[i]), w->now);
			t1 = rte_rdtsc();
			cyc[ST_FLOW] += t1 - t0;
			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++)
				acc += lb_maglev_pick(s, vip[i], h[i]);
			t1 = rte_rdtsc();
			cyc[ST_MAGLEV] += t1 - t0;
			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++) {
				uint16_t bid = e[i] != NULL ? e[i]->backend : 0;

				lb_encap_write(hdr[i], &s->encap, w->src_mac, &s->backends[bid],
				               vip[i]->encap, info[i].key.af, info[i].l3_len,
				               info[i].tos, h[i]);
			}
			t1 = rte_rdtsc();
			cyc[ST_ENCAP] += t1 - t0;
			/* What the pipeline does: a per-burst template, then per packet. */
			t0 = rte_rdtsc();
			{
				struct lb_encap4_tmpl t4;

				lb_encap4_tmpl_init(&t4, &s->encap, w->src_mac);
				for (int i = 0; i < LB_BURST; i++) {
					uint16_t bid = e[i] != NULL ? e[i]->backend : 0;

					lb_encap_write4_tmpl(hdr[i], &t4, &s->backends[bid],
					                     vip[i]->encap, info[i].key.af,
					                     info[i].l3_len, info[i].tos, h[i]);
				}
			}
			t1 = rte_rdtsc();
			cyc[ST_ENCAP_T] += t1 - t0;
			/* Counters as the pipeline kept them before: every one per packet. */
			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++) {
				uint16_t bid = e[i] != NULL ? e[i]->backend : 0;

				w->cnt->rx_packets++;
				w->cnt->rx_bytes += FRAME_LEN;
				w->cnt->flow_hits++;
				w->cnt->vip[vip[i]->id].packets++;
				w->cnt->vip[vip[i]->id].bytes += info[i].l3_len;
				w->cnt->backend[bid].packets++;
				w->cnt->backend[bid].bytes += info[i].l3_len;
			}
			t1 = rte_rdtsc();
			cyc[ST_COUNT1] += t1 - t0;
			/* As the pipeline keeps them now: rx, hits and the VIP's packets and
			 * bytes in registers for the burst (one VIP here), the backends'
			 * per packet. */
			t0 = rte_rdtsc();
			{
				struct lb_core_counters *cnt = w->cnt;
				uint64_t rx_bytes = 0, vip_bytes = 0;
				uint32_t vid = vip[0]->id, vpk = 0;

				for (int i = 0; i < LB_BURST; i++) {
					uint16_t bid = e[i] != NULL ? e[i]->backend : 0;

					rx_bytes += FRAME_LEN;
					if (vip[i]->id != vid) {
						cnt->vip[vid].packets += vpk;
						cnt->vip[vid].bytes += vip_bytes;
						vid = vip[i]->id;
						vpk = 0;
						vip_bytes = 0;
					}
					vpk++;
					vip_bytes += info[i].l3_len;
					cnt->backend[bid].packets++;
					cnt->backend[bid].bytes += info[i].l3_len;
				}
				cnt->rx_packets += LB_BURST;
				cnt->rx_bytes += rx_bytes;
				cnt->flow_hits += LB_BURST;
				cnt->vip[vid].packets += vpk;
				cnt->vip[vid].bytes += vip_bytes;
			}
			t1 = rte_rdtsc();
			cyc[ST_COUNT] += t1 - t0;
			g_sink += acc + hdr[LB_BURST - 1][20];
		}
		for (int st = 0; st < ST__N; st++)
			r[st][round] = (double)cyc[st] / (double)n_pkts;
	}
}
