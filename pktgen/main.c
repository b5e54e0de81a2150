/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillgen: EAL and port set-up, the TX and RX loops, the main lcore's
 * progress line and run control, then the reports.
 *
 * Lcores: with one worker it sends and receives; with two, the first sends
 * and the second receives. Each loop touches only its own state (struct tx /
 * the analyser); the main lcore reads their counters without stopping them
 * (aligned 64-bit loads) and tells them to stop through one flag. On a memif
 * port the workers and the EAL interrupt thread take turns (the memif gate).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>

#include "analysis.h"
#include "clock.h"
#include "gen.h"
#include "dataplane/memif_gate.h"
#include "options.h"
#include "pace.h"
#include "report.h"

#define BURST 32
#define RX_DESC 1024
#define TX_DESC 1024
#define POOL_SIZE 16383
#define POOL_CACHE 256
#define PROGRESS_MS 1000

static volatile bool g_stop;   /* main -> workers: stop now */
static volatile bool g_signal; /* SIGINT/SIGTERM seen */

/*
 * memif: the EAL interrupt thread and the workers take turns on the port
 * (memif_gate.c has the story). spillgen's workers report a quiescent state
 * (lcore id as thread id) just before they read n_ports, so every burst begun
 * before the gate took them off the port has returned when it goes on.
 */
static struct {
	struct lb_memif_gate *g;  /* NULL: the port is not memif */
	uint16_t n_ports;         /* gate -> workers: 1 the port may be used, 0 not */
	struct rte_rcu_qsbr *qsv; /* one thread per lcore id */
} g_memif = {.n_ports = 1};

/* Whether this worker may use the port now; call before every burst. */
static inline bool
port_ok(void)
{
	if (g_memif.g == NULL)
		return true;
	rte_rcu_qsbr_quiescent(g_memif.qsv, rte_lcore_id());
	return __atomic_load_n(&g_memif.n_ports, __ATOMIC_ACQUIRE) != 0;
}

/* Before the workers start: on a memif port, the gate (0, or -1 after a message). */
static int
gate_start(uint16_t port)
{
	size_t sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);

	if (!lb_memif_gate_is_memif(port))
		return 0;
	g_memif.qsv = rte_zmalloc("sg_gate_qsbr", sz, RTE_CACHE_LINE_SIZE);
	if (g_memif.qsv != NULL && rte_rcu_qsbr_init(g_memif.qsv, RTE_MAX_LCORE) == 0 &&
	    lb_memif_gate_create(port, "spillgen", &g_memif.g) == 0 && g_memif.g != NULL) {
		lb_memif_gate_start(g_memif.g, &g_memif.n_ports, g_memif.qsv);
		return 0;
	}
	fprintf(stderr, "spillgen: cannot set up the memif interrupt source\n");
	return -1;
}

/* Stop and close the port (a memif one in the interrupt thread, which is idle after). */
static void
port_close(uint16_t port)
{
	if (g_memif.g != NULL) {
		lb_memif_gate_stop(g_memif.g);
		if (lb_memif_gate_close_port(g_memif.g, port) == 0) {
			lb_memif_gate_settle(g_memif.g);
			return;
		}
	}
	(void)rte_eth_dev_stop(port);
	(void)rte_eth_dev_close(port);
}

/* TX lcore state; the main lcore reads the counters. */
struct tx {
	struct sg_gen gen;
	struct sg_opts *o;
	uint16_t port;
	struct rte_mempool *pool;
	uint64_t t0, hz;
	volatile uint64_t pkts, bytes;
	uint64_t unsent, alloc_fail;
	volatile uint16_t phase;
	volatile bool done;
	struct sg_phase_result ph[SG_MAX_PHASES];
	uint32_t *series; /* per analysis interval */
	const struct sg_analysis *an;
	struct rte_mbuf *pend[BURST];
	uint16_t npend;
} __rte_cache_aligned;

struct rx {
	struct sg_analysis an;
	uint16_t port;
} __rte_cache_aligned;

struct worker_arg {
	struct tx *tx; /* NULL: does not send */
	struct rx *rx; /* NULL: does not receive */
};

static void
on_signal(int sig)
{
	(void)sig;
	g_signal = true;
}

static inline void
rx_poll(struct rx *r)
{
	struct rte_mbuf *m[BURST];
	struct sg_decoded d;

	if (!port_ok())
		return;
	uint16_t n = rte_eth_rx_burst(r->port, 0, m, BURST);

	if (n == 0)
		return;
	uint64_t now = rte_rdtsc();
	uint32_t iv = sg_an_interval(&r->an, now);
	for (uint16_t i = 0; i < n; i++) {
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(m[i + 1], void *));
		enum sg_dec res = sg_pkt_decode(rte_pktmbuf_mtod(m[i], const uint8_t *),
		                                m[i]->data_len, r->an.gue_port, &d);
		sg_an_record(&r->an, res, &d, m[i]->pkt_len, now, iv);
	}
	rte_pktmbuf_free_bulk(m, n);
}

/* Send what is pending; true when nothing is left. After port_ok(). */
static inline bool
tx_flush(struct tx *t)
{
	if (t->npend == 0)
		return true;
	uint16_t k = rte_eth_tx_burst(t->port, 0, t->pend, t->npend);
	if (k > 0) {
		memmove(t->pend, t->pend + k, (t->npend - k) * sizeof(t->pend[0]));
		t->npend = (uint16_t)(t->npend - k);
	}
	return t->npend == 0;
}

static void
tx_phase(struct tx *t, struct rx *r, uint16_t p, uint64_t *count_left)
{
	const struct sg_phase *ph = &t->o->phases[p];
	uint64_t start = t->t0 + (uint64_t)(ph->start * (double)t->hz);
	uint64_t end = t->t0 + (uint64_t)(ph->end * (double)t->hz);
	uint64_t now, max_lag = (uint64_t)((double)ph->pps * t->o->max_lag_ms / 1000);
	struct sg_phase_result *res = &t->ph[p];
	struct sg_pace pace;
	struct rte_mbuf *m[BURST];

	while ((now = rte_rdtsc()) < start && !g_stop)
		if (r != NULL)
			rx_poll(r);
	if (g_stop)
		return;
	t->phase = p;
	sg_gen_phase(&t->gen, ph);
	sg_pace_init(&pace, start, t->hz, ph->pps, max_lag < BURST ? BURST : max_lag);
	/* The schedule counts from the nominal start, so does the achieved rate. */
	res->t_start = ph->start;
	while (now < end && !g_stop && *count_left > 0) {
		if (port_ok() && tx_flush(t)) {
			uint32_t n = sg_pace_owed(&pace, now, BURST);
			if (n > *count_left)
				n = (uint32_t)*count_left;
			if (n > 0 && rte_pktmbuf_alloc_bulk(t->pool, m, n) != 0) {
				t->alloc_fail++;
				n = 0;
			}
			if (n > 0) {
				uint64_t bytes = 0;
				for (uint32_t i = 0; i < n; i++) {
					uint32_t fid = sg_gen_pick(&t->gen);
					uint8_t *buf = rte_pktmbuf_mtod(m[i], uint8_t *);
					uint16_t len = sg_gen_write(&t->gen, fid, buf, now);
					m[i]->data_len = len;
					m[i]->pkt_len = len;
					bytes += len;
				}
				uint16_t k = rte_eth_tx_burst(t->port, 0, m, (uint16_t)n);
				if (k < n) {
					memcpy(t->pend, m + k, (n - k) * sizeof(m[0]));
					t->npend = (uint16_t)(n - k);
				}
				sg_pace_sent(&pace, n);
				*count_left -= n;
				t->pkts += n;
				t->bytes += bytes;
				res->sent += n;
				t->series[sg_an_interval(t->an, now)] += n;
			}
		}
		if (r != NULL)
			rx_poll(r);
		now = rte_rdtsc();
	}
	res->skipped = pace.skipped;
	res->t_end = (double)((now < end ? now : end) - t->t0) / (double)t->hz;
}

static int worker_loop(struct tx *t, struct rx *r);

static int
worker(void *arg)
{
	struct worker_arg *w = arg;
	unsigned int id = rte_lcore_id();
	int rc;

	if (g_memif.g != NULL) {
		rte_rcu_qsbr_thread_register(g_memif.qsv, id);
		rte_rcu_qsbr_thread_online(g_memif.qsv, id);
	}
	rc = worker_loop(w->tx, w->rx);
	if (g_memif.g != NULL) {
		rte_rcu_qsbr_thread_offline(g_memif.qsv, id);
		rte_rcu_qsbr_thread_unregister(g_memif.qsv, id);
	}
	return rc;
}

static int
worker_loop(struct tx *t, struct rx *r)
{
	if (t == NULL) {
		while (!g_stop)
			rx_poll(r);
		return 0;
	}
	uint64_t count_left = t->o->count ? t->o->count : UINT64_MAX;
	for (uint16_t p = 0; p < t->o->nphases && !g_stop && count_left > 0; p++)
		tx_phase(t, r, p, &count_left);
	/* Packets the port would not take: give them a moment, then undo their
	 * sequence numbers (they are each flow's latest), so they are not "lost". */
	uint64_t deadline = rte_rdtsc() + t->hz / 10;
	while (!(port_ok() && tx_flush(t)) && rte_rdtsc() < deadline)
		if (r != NULL)
			rx_poll(r);
	for (uint16_t i = 0; i < t->npend; i++) {
		struct sg_decoded d;
		const uint8_t *f = rte_pktmbuf_mtod(t->pend[i], const uint8_t *);
		/* Our own frame is not encapsulated: read the stamp by building a
		 * decode view with a fake IPIP wrapper would be overkill; the flow
		 * id sits right after the L4 header. */
		uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
		uint32_t l3 = et == 0x0800 ? 20 : 40;
		uint8_t proto = et == 0x0800 ? f[14 + 9] : f[14 + 6];
		const uint8_t *pl = f + 14 + l3 + (proto == SG_PROTO_TCP ? 20 : 8);
		d.st.flow = (uint32_t)pl[2] << 24 | (uint32_t)pl[3] << 16 | (uint32_t)pl[4] << 8 |
		            pl[5];
		if (d.st.flow < t->gen.nflows)
			t->gen.seq[d.st.flow]--;
		t->unsent++;
		t->pkts--;
		t->ph[t->phase].sent--;
	}
	if (t->npend)
		rte_pktmbuf_free_bulk(t->pend, t->npend);
	t->npend = 0;
	t->done = true;
	if (r != NULL)
		while (!g_stop)
			rx_poll(r);
	return 0;
}

static int
port_setup(uint16_t port, struct rte_mempool *pool, double link_wait)
{
	struct rte_eth_conf conf;
	struct rte_eth_link link;
	uint16_t nb_rxd = RX_DESC, nb_txd = TX_DESC;
	int rc;

	memset(&conf, 0, sizeof(conf));
	if ((rc = rte_eth_dev_configure(port, 1, 1, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd)) != 0 ||
	    (rc = rte_eth_rx_queue_setup(port, 0, nb_rxd, (unsigned int)rte_socket_id(), NULL,
	                                 pool)) != 0 ||
	    (rc = rte_eth_tx_queue_setup(port, 0, nb_txd, (unsigned int)rte_socket_id(), NULL)) !=
	            0 ||
	    (rc = rte_eth_dev_start(port)) != 0) {
		fprintf(stderr, "spillgen: port %u: set-up failed: %s\n", port, strerror(-rc));
		return -1;
	}
	(void)rte_eth_promiscuous_enable(port);
	/* memif: the link comes up when the peer connects. */
	for (double waited = 0;; waited += 0.1) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			return 0;
		if (waited >= link_wait || g_signal) {
			fprintf(stderr,
			        "spillgen: port %u: link still down after %.1f s (is the memif "
			        "peer running?)\n",
			        port, waited);
			return -1;
		}
		usleep(100000);
	}
}

static void
progress(FILE *f, const struct sg_opts *o, const struct tx *t, const struct sg_analysis *an,
         double el, uint64_t *last_tx, uint64_t *last_rx, uint64_t *last_be, double dt)
{
	double load[SG_MAX_BACKENDS], vp[SG_MAX_VIPS], exp_[SG_MAX_BACKENDS];
	uint64_t tx = t ? t->pkts : 0, rx = an->decoded;
	uint16_t nb = an->nbackends;

	for (uint16_t b = 0; b < nb; b++) {
		uint64_t v = an->be_pkts[b];
		load[b] = (double)(v - last_be[b]);
		last_be[b] = v;
	}
	for (uint16_t v = 0; v < an->nvips; v++)
		vp[v] = 0;
	/* Expected shares from the run so far (racy reads: a progress line). */
	for (uint16_t v = 0; v < an->nvips; v++)
		vp[v] = (double)an->vip_pkts[v];
	sg_an_expected(an, vp, exp_);
	double pk = sg_fig_peak_avg(load, exp_, nb);
	fprintf(f,
	        "\r[%6.1fs] %-10s tx %9.1f kpps  rx %9.1f kpps  seq gaps %llu  backends %u  "
	        "peak/avg %5.2f ",
	        el, t ? o->phases[t->phase].name : "analyse", (double)(tx - *last_tx) / dt / 1e3,
	        (double)(rx - *last_rx) / dt / 1e3, (unsigned long long)an->gaps, nb, pk);
	fflush(f);
	*last_tx = tx;
	*last_rx = rx;
}

static uint64_t
read_tsc(void)
{
	return rte_rdtsc();
}

/* The TSC's rate against CLOCK_MONOTONIC (clock.h), which the balancer's
 * controller and the checkers keep time on; EAL's estimate if it cannot be
 * measured or is more than 5% from it. */
static uint64_t
tick_hz(void)
{
	uint64_t eal = rte_get_tsc_hz(), hz = sg_clock_tick_hz(read_tsc, 200);

	if (hz == 0 || hz < eal - eal / 20 || hz > eal + eal / 20)
		return eal;
	if (hz < eal - eal / 10000 || hz > eal + eal / 10000)
		fprintf(stderr,
		        "spillgen: TSC at %llu Hz against CLOCK_MONOTONIC; EAL estimates %llu Hz "
		        "(%+.3f%%): timing on the measured rate\n",
		        (unsigned long long)hz, (unsigned long long)eal,
		        ((double)eal / (double)hz - 1) * 100);
	return hz;
}

int
main(int argc, char **argv)
{
	static struct sg_opts o;
	static struct tx t;
	static struct rx r;
	static uint64_t last_be[SG_MAX_BACKENDS];
	struct worker_arg wa_tx = {0}, wa_rx = {0};
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	char lcores_desc[96];
	int n, rc;

	/* A bare --help needs no EAL (man pages are generated from it at build time). */
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		sg_opts_usage(stdout);
		return 0;
	}
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "spillgen: EAL initialisation failed: %s\n",
		        rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	argv[0] = "spillgen";
	rc = sg_opts_parse(&o, argc, argv);
	if (rc != 0) {
		rte_eal_cleanup();
		return rc > 0 ? 0 : 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	unsigned int lc_tx = rte_get_next_lcore(-1, 1, 0);
	unsigned int lc_rx = rte_get_next_lcore(lc_tx, 1, 0);
	if (lc_tx >= RTE_MAX_LCORE) {
		fprintf(stderr, "spillgen: no worker lcore: give EAL two lcores (e.g. --lcores "
		                "'0@0,1@1') or three for separate TX and RX\n");
		return 2;
	}
	if (rte_eth_dev_count_avail() <= o.port) {
		fprintf(stderr, "spillgen: no port %u: give EAL a device or a --vdev\n", o.port);
		return 2;
	}
	struct rte_mempool *pool =
	        rte_pktmbuf_pool_create("sg_mbufs", POOL_SIZE, POOL_CACHE, 0,
	                                RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (pool == NULL) {
		fprintf(stderr, "spillgen: cannot create the mbuf pool: %s\n",
		        rte_strerror(rte_errno));
		return 1;
	}
	if (port_setup(o.port, pool, o.link_wait) != 0 || gate_start(o.port) != 0)
		return 1;
	(void)rte_eth_dev_info_get(o.port, &info);
	(void)rte_eth_macaddr_get(o.port, &mac);

	uint64_t hz = tick_hz();
	uint64_t iv_ticks = hz * o.interval_ms / 1000;
	double run_s = o.analyse_only ? 3600 : o.phases[o.nphases - 1].end;
	uint32_t max_iv = (uint32_t)((run_s + o.drain_ms / 1000.0 + 2) * 1000 / o.interval_ms) + 2;
	if (o.analyse_only && max_iv > 100000)
		max_iv = 100000;

	if (!o.analyse_only && (rc = sg_gen_init(&t.gen, &o, mac.addr_bytes)) != 0) {
		fprintf(stderr, "spillgen: cannot lay out %u flows: %s\n", o.flows, strerror(-rc));
		return rc == -EINVAL ? 2 : 1;
	}
	uint32_t nflows = o.analyse_only ? o.flows : t.gen.nflows;
	rc = sg_an_init(&r.an, nflows, o.analyse_only ? NULL : t.gen.flows, o.vips, o.nvips,
	                o.gue_port, hz, iv_ticks, max_iv);
	if (rc != 0) {
		fprintf(stderr, "spillgen: cannot allocate the analyser: %s\n", strerror(-rc));
		return 1;
	}
	r.an.latency = !o.analyse_only && !o.no_latency;
	r.port = o.port;
	/* Backends named in the balancer's config come first, in its order. */
	for (uint16_t b = 0; b < o.nbackends; b++) {
		uint16_t k = sg_an_backend(&r.an, &o.backend[b], o.backend_af[b]);
		r.an.be[k].configured = true;
	}
	t.o = &o;
	t.port = o.port;
	t.pool = pool;
	t.hz = hz;
	t.an = &r.an;
	t.series = calloc(max_iv, sizeof(uint32_t));
	if (t.series == NULL)
		return 1;

	uint64_t t0 = rte_rdtsc() + hz / 20; /* workers start in step */
	t.t0 = r.an.t0 = t0;
	for (uint16_t p = 0; p < o.nphases && !o.analyse_only; p++) {
		const struct sg_phase *ph = &o.phases[p];
		if (ph->hot.kind == 0)
			continue;
		struct sg_hot_track *h = &r.an.hot[r.an.nhot++];
		h->fid_lo = ph->hot.fid_lo;
		h->fid_hi = ph->hot.fid_lo + ph->hot.pool;
		h->start_tsc = t0 + (uint64_t)(ph->start * (double)hz);
		h->end_tsc = t0 + (uint64_t)(ph->end * (double)hz);
	}

	if (o.analyse_only) {
		wa_rx.rx = &r;
		snprintf(lcores_desc, sizeof(lcores_desc), "rx on lcore %u", lc_tx);
		rte_eal_remote_launch(worker, &wa_rx, lc_tx);
	} else if (o.tx_only) {
		wa_tx.tx = &t;
		snprintf(lcores_desc, sizeof(lcores_desc), "tx only on lcore %u", lc_tx);
		rte_eal_remote_launch(worker, &wa_tx, lc_tx);
	} else if (lc_rx < RTE_MAX_LCORE) {
		wa_tx.tx = &t;
		wa_rx.rx = &r;
		snprintf(lcores_desc, sizeof(lcores_desc), "tx on lcore %u, rx on lcore %u", lc_tx,
		         lc_rx);
		rte_eal_remote_launch(worker, &wa_tx, lc_tx);
		rte_eal_remote_launch(worker, &wa_rx, lc_rx);
	} else {
		wa_tx.tx = &t;
		wa_tx.rx = &r;
		snprintf(lcores_desc, sizeof(lcores_desc), "tx+rx on lcore %u", lc_tx);
		rte_eal_remote_launch(worker, &wa_tx, lc_tx);
	}

	/* Main lcore: progress, end of the run, drain. */
	bool show = o.progress == 1 || (o.progress == -1 && isatty(STDERR_FILENO));
	uint64_t last_tx = 0, last_rx = 0, last_prog = t0, drain_from = 0, last_seen = 0;
	uint64_t drain = hz * o.drain_ms / 1000;
	while (!g_stop) {
		usleep(10000);
		uint64_t now = rte_rdtsc();
		if (show && now >= last_prog + hz * PROGRESS_MS / 1000) {
			progress(stderr, &o, o.analyse_only ? NULL : &t, &r.an,
			         (double)(now - t0) / (double)hz, &last_tx, &last_rx, last_be,
			         (double)(now - last_prog) / (double)hz);
			last_prog = now;
		}
		if (o.analyse_only) {
			/* Stop after drain without a packet. */
			if (r.an.rx != last_seen || drain_from == 0) {
				last_seen = r.an.rx;
				drain_from = now;
			} else if (now - drain_from >= drain) {
				g_stop = true;
			}
		} else if (t.done || g_signal) {
			if (drain_from == 0)
				drain_from = now;
			if (now - drain_from >= (g_signal ? drain / 4 : drain))
				g_stop = true;
		}
		if (g_signal && o.analyse_only)
			g_stop = true;
	}
	rte_eal_mp_wait_lcore();
	lb_memif_gate_stop(g_memif.g);
	if (show)
		fputc('\n', stderr);

	struct sg_run run = {
	        .o = &o,
	        .an = &r.an,
	        .sent = o.analyse_only ? NULL : t.gen.seq,
	        .tx_series = o.analyse_only ? NULL : t.series,
	        .tx_pkts = t.pkts,
	        .tx_bytes = t.bytes,
	        .tx_unsent = t.unsent,
	        .alloc_fail = t.alloc_fail,
	        .elapsed = (double)(rte_rdtsc() - t0) / (double)hz,
	        .wiring = info.driver_name ? info.driver_name : "?",
	        .lcores = lcores_desc,
	};
	memcpy(run.ph, t.ph, sizeof(run.ph));
	rc = 0;
	if (!o.quiet)
		sg_report_table(stdout, &run);
	if (o.json && sg_report_json(o.json, &run) != 0) {
		fprintf(stderr, "spillgen: cannot write %s\n", o.json);
		rc = 1;
	}
	if (o.csv && sg_report_csv(o.csv, &run) != 0) {
		fprintf(stderr, "spillgen: cannot write %s: %s\n", o.csv, strerror(errno));
		rc = 1;
	}
	if (o.svg && sg_report_svg(o.svg, &run) != 0) {
		fprintf(stderr, "spillgen: cannot write %s: %s\n", o.svg, strerror(errno));
		rc = 1;
	}
	if (o.done_file != NULL) {
		FILE *df = fopen(o.done_file, "w");
		if (df != NULL)
			fclose(df);
		for (double w = 0; w < o.linger && !g_signal; w += 0.05) {
			struct rte_eth_link link;
			memset(&link, 0, sizeof(link));
			if (rte_eth_link_get_nowait(o.port, &link) == 0 && !link.link_status)
				break;
			usleep(50000);
		}
	}
	port_close(o.port);
	sg_an_free(&r.an);
	if (!o.analyse_only)
		sg_gen_free(&t.gen);
	free(t.series);
	rte_eal_cleanup();
	return rc;
}
