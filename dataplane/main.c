/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillwayd: the load balancer daemon. Parses its own options and the
 * configuration (the state file if there is one, else --config) before EAL
 * starts, and checks that the control socket path is free, so a bad file or a
 * second instance fails fast, with one message, before touching any port. Then
 * sets up ports, launches one worker per worker lcore and runs the control
 * thread on the main lcore until SIGTERM/SIGINT.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_debug.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "control/hooks/bird.h"
#include "control/model/config.h"
#include "control/control.h"
#include "control/health/health_encap.h"
#include "control/io/server.h"
#ifdef LB_HAVE_XDP
#include "control/hooks/xdp_sync.h"
#include "bpf/xsk_steer_loader.h"
#endif
#include "dataplane/link_watch.h"
#include "dataplane/memif_gate.h"
#include "dataplane/options.h"
#include "dataplane/port.h"
#include "dataplane/worker.h"
#include "dataplane/workers.h"

#define EXIT_USAGE 2

/*
 * Before EAL: the control socket's group exists and its path is free (a
 * second instance must not take the first one's ports). 0, or the exit status
 * after a message.
 */
static int
check_control(const struct lb_options *o)
{
	char err[512];
	int rc;

	if (o->control_group != NULL) {
		gid_t gid;

		if (lb_server_resolve_group(o->control_group, &gid, err, sizeof(err)) != 0) {
			fprintf(stderr, "spillwayd: --control-group: %s\n", err);
			return EXIT_USAGE;
		}
	}
	if (o->control != NULL) {
		rc = lb_server_check_path(o->control, err, sizeof(err));
		if (rc != 0) {
			fprintf(stderr, "spillwayd: %s\n", err);
			return rc == -ENAMETOOLONG || rc == -EINVAL ? EXIT_USAGE : 1;
		}
	}
	return 0;
}

/*
 * --bird-withdraw: the include file emptied and BIRD reloaded, for a stop
 * the daemon did not finish itself (the exit status, 0 or 1). A daemon still
 * answering on --control keeps its own announcements: refused.
 */
static int
bird_withdraw_only(const struct lb_options *o)
{
	char err[512];
	int rc;

	if (o->bird_include == NULL) {
		fprintf(stderr, "spillwayd: --bird-withdraw: no --bird-include, nothing to "
		                "withdraw\n");
		return 0;
	}
	if (o->control != NULL &&
	    lb_server_check_path(o->control, err, sizeof(err)) == -EADDRINUSE) {
		fprintf(stderr,
		        "spillwayd: --bird-withdraw: %s; a running spillwayd withdraws with "
		        "spillctl drain\n",
		        err);
		return 1;
	}
	rc = lb_bird_withdraw(o->bird_include, o->bird_socket, 0, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "spillwayd: --bird-withdraw: %s\n", err);
		return 1;
	}
	fprintf(stderr, "spillwayd: --bird-withdraw: %s emptied, BIRD (%s) reloaded it\n",
	        o->bird_include, o->bird_socket);
	return 0;
}

/* Load a configuration document; NULL after one "spillwayd: FILE: ..." line. */
static struct lb_config *
load_config(const char *path)
{
	char err[512];
	struct lb_config *cfg = lb_config_load_file(path, err, sizeof(err));

	if (cfg == NULL) {
		bool named = strncmp(err, path, strlen(path)) == 0;

		fprintf(stderr, "spillwayd: %s%s%s\n", named ? "" : path, named ? "" : ": ", err);
	}
	return cfg;
}

/*
 * The starting configuration: the state file if it exists (what the last run
 * left), else --config. NULL after a message: exit 2.
 */
/* Whether any health object of cfg probes through the tunnel. */
static bool
uses_encap_probes(const struct lb_config *cfg)
{
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];

		if (v->health != NULL && v->health->type != LB_HEALTH_TYPE_NONE &&
		    v->health->via == LB_HEALTH_VIA_ENCAP)
			return true;
		for (uint32_t j = 0; j < v->n_backends; j++) {
			const struct lb_health_conf *h = v->backends[j].health;

			if (h != NULL && h->type != LB_HEALTH_TYPE_NONE &&
			    h->via == LB_HEALTH_VIA_ENCAP)
				return true;
		}
	}
	return false;
}

/*
 * The via-encap prober's raw sockets, opened while spillwayd still has
 * CAP_NET_RAW, with the start-up configuration's outer sources and seed, and
 * registered for the health runner. Without them a configuration that probes
 * via encap does not start (1); otherwise such probes added later fail with
 * "no transport for this via".
 */
static int
health_encap_setup(const struct lb_config *cfg, struct lb_health_encap **out)
{
	struct lb_health_encap_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	conf.encap = cfg->encap;
	lb_hash_key_from_seed(&conf.hkey, cfg->seed, strlen(cfg->seed));
	rc = lb_health_encap_open(out, &conf);
	if (rc == 0)
		return lb_health_probe_register(LB_HEALTH_VIA_ENCAP,
		                                lb_health_encap_transport(*out));
	*out = NULL;
	if (!uses_encap_probes(cfg))
		return 0;
	fprintf(stderr, "spillwayd: health checks via encap: cannot open raw sockets: %s\n",
	        strerror(-rc));
	return 1;
}

static struct lb_config *
initial_config(const struct lb_options *o)
{
	struct stat st;

	if (o->state != NULL && (stat(o->state, &st) == 0 || errno != ENOENT)) {
		if (o->config != NULL)
			fprintf(stderr,
			        "spillwayd: starting from the state file %s (%s is read on "
			        "SIGHUP only)\n",
			        o->state, o->config);
		return load_config(o->state);
	}
	if (o->config == NULL) {
		fprintf(stderr, "spillwayd: %s: no state file yet, and no --config to start from\n",
		        o->state);
		return NULL;
	}
	return load_config(o->config);
}

static int
write_stats(json_t *stats, const char *path)
{
	int rc;

	if (stats == NULL)
		return -ENOMEM;
	if (path == NULL) {
		rc = json_dumpf(stats, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		fflush(stdout);
	} else {
		rc = json_dump_file(stats, path, JSON_INDENT(2));
	}
	json_decref(stats);
	return rc;
}

/*
 * The publication hooks spillwayd runs, in order: the link watcher, the XDP
 * map sync (af_xdp ports), the BIRD announcer (--bird-include). One slot per
 * kind; hook_slot() refuses a fourth (a programming error, caught at start).
 */
#define N_HOOKS 3

struct hook_list {
	struct lb_publish_hook hook[N_HOOKS];
	unsigned int n;
};

/* The next free slot of hl. */
static struct lb_publish_hook *
hook_slot(struct hook_list *hl)
{
	RTE_VERIFY(hl->n < N_HOOKS);
	return &hl->hook[hl->n++];
}

/*
 * XDP steering for af_xdp ports (docs/xdp.md): before EAL, xdp_prog= is added
 * to every net_af_xdp vdev (unless --xdp-prog none); after each port starts,
 * an af_xdp one has its program's VIP map kept by the "xdp" publish hook.
 * Without LB_HAVE_XDP, EAL gets the arguments as they are and the rest does
 * nothing.
 */
#ifdef LB_HAVE_XDP
struct xdp_steer {
	char **argv;  /* what EAL gets */
	char **owned; /* the arguments rewritten for it */
	int argc;
	bool on;
	const char *obj;
	struct lb_xdp_sync *sync;
};

/* An af_xdp PMD port, and the kernel interface under it. */
static bool
port_is_af_xdp(uint16_t port, int *ifindex)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == NULL ||
	    strcmp(info.driver_name, "net_af_xdp") != 0)
		return false;
	*ifindex = (int)info.if_index;
	return true;
}

/* EAL's arguments in x->argv: 0, or the exit status after a message. */
static int
xdp_prepare(struct xdp_steer *x, const struct lb_options *o, int argc, char **argv)
{
	bool have_af_xdp = false;

	x->argc = argc;
	x->argv = calloc((size_t)argc + 1, sizeof(*x->argv));
	x->owned = calloc((size_t)argc + 1, sizeof(*x->owned));
	x->on = o->xdp_prog == NULL || strcmp(o->xdp_prog, "none") != 0;
	x->obj = o->xdp_prog != NULL && x->on ? o->xdp_prog : lb_xsk_obj_path();
	if (x->argv == NULL || x->owned == NULL) {
		fprintf(stderr, "spillwayd: out of memory\n");
		return 1;
	}
	for (int i = 0; i < argc; i++) {
		x->argv[i] = argv[i];
		if (strstr(argv[i], "net_af_xdp") != NULL)
			have_af_xdp = true;
		if (!x->on || i == 0)
			continue;
		x->owned[i] = lb_xdp_vdev_arg(argv[i], x->obj);
		if (x->owned[i] != NULL)
			x->argv[i] = x->owned[i];
	}
	if (have_af_xdp && x->on && access(x->obj, R_OK) != 0) {
		fprintf(stderr,
		        "spillwayd: XDP program %s: %s (build it with -Dbpf=enabled, set "
		        "SPILLWAY_XSK_OBJ, or give --xdp-prog)\n",
		        x->obj, strerror(errno));
		return EXIT_USAGE;
	}
	return 0;
}

/* A port just started: 0, or -1 after a message. */
static int
xdp_port(struct xdp_steer *x, uint16_t port)
{
	char err[512];
	int ifindex = 0;

	if (!x->on || !port_is_af_xdp(port, &ifindex))
		return 0;
	if (x->sync == NULL)
		x->sync = lb_xdp_sync_create();
	if (x->sync == NULL ||
	    lb_xdp_sync_add_port(x->sync, port, ifindex, err, sizeof(err)) != 0) {
		fprintf(stderr, "spillwayd: XDP steering: %s\n",
		        x->sync == NULL ? "out of memory" : err);
		return -1;
	}
	return 0;
}

/* Every port started: the hook, if any port is af_xdp. */
static void
xdp_hook(struct xdp_steer *x, struct hook_list *hl)
{
	if (x->sync != NULL)
		lb_xdp_sync_hook(x->sync, hook_slot(hl));
}

static void
xdp_free(struct xdp_steer *x)
{
	lb_xdp_sync_destroy(x->sync);
	if (x->owned != NULL)
		for (int i = 0; i < x->argc; i++)
			free(x->owned[i]);
	free(x->owned);
	free(x->argv);
}
#else
struct xdp_steer {
	char **argv;
};

static int
xdp_prepare(struct xdp_steer *x, const struct lb_options *o, int argc, char **argv)
{
	(void)o;
	(void)argc;
	x->argv = argv;
	return 0;
}

static int
xdp_port(struct xdp_steer *x, uint16_t port)
{
	(void)x;
	(void)port;
	return 0;
}

static void
xdp_hook(struct xdp_steer *x, struct hook_list *hl)
{
	(void)x;
	(void)hl;
}

static void
xdp_free(struct xdp_steer *x)
{
	(void)x;
}
#endif

/*
 * The port's MAC as spillwayd uses it (destination check, source of what it
 * sends): the one --port-mac gives, set on the port, or kept by spillwayd
 * alone when the PMD cannot change its own (net_pcap); else the PMD's.
 * Logged, kept in io.
 */
static int
set_port_mac(const struct lb_options *o, uint16_t port, struct lb_io_conf *io)
{
	struct rte_ether_addr mac;
	char buf[RTE_ETHER_ADDR_FMT_SIZE];
	int rc;

	for (unsigned int i = 0; i < o->n_port_macs; i++) {
		if (o->port_macs[i].port != port)
			continue;
		memcpy(mac.addr_bytes, o->port_macs[i].mac, 6);
		rc = rte_eth_dev_default_mac_addr_set(port, &mac);
		if (rc == -ENOTSUP) {
			/* Promiscuous mode receives its frames all the same. */
			rte_ether_format_addr(buf, sizeof(buf), &mac);
			fprintf(stderr,
			        "spillwayd: port %u: the PMD cannot change its MAC; spillwayd "
			        "uses %s as the port's MAC\n",
			        port, buf);
			goto found;
		}
		if (rc != 0) {
			fprintf(stderr, "spillwayd: --port-mac: port %u refuses its MAC: %s\n",
			        port, strerror(-rc));
			return -1;
		}
	}
	if (rte_eth_macaddr_get(port, &mac) != 0)
		memset(&mac, 0, sizeof(mac));
found:
	memcpy(io->port_mac[port], mac.addr_bytes, 6);
	rte_ether_format_addr(buf, sizeof(buf), &mac);
	fprintf(stderr, "spillwayd: port %u: MAC %s\n", port, buf);
	return 0;
}

/*
 * Every DPDK port with one queue pair per worker, from one mbuf pool, its MTU
 * from encap_mtu; the ports the workers read in io, each port's link in lw.
 * tx_ip_cksum: every port forwarded packets leave by (--out-port, else each
 * receiving port) fills outer IPv4 checksums. 0, or the exit status after a
 * message.
 */
static int
start_ports(const struct lb_options *o, uint16_t n_workers, uint16_t encap_mtu,
            struct lb_io_conf *io, struct xdp_steer *xs, struct lb_link_watch *lw,
            bool *tx_ip_cksum, struct rte_mempool **pool)
{
	uint16_t n_ports = rte_eth_dev_count_avail();
	char err[512];
	uint16_t port;

	if (n_ports == 0) {
		fprintf(stderr, "spillwayd: no DPDK port: give EAL a device or a --vdev\n");
		return 1;
	}
	if ((o->out_port >= 0 && !rte_eth_dev_is_valid_port((uint16_t)o->out_port)) ||
	    (o->exc_port >= 0 && !rte_eth_dev_is_valid_port((uint16_t)o->exc_port))) {
		fprintf(stderr, "spillwayd: --out-port/--exception-port: no such port (%u ports)\n",
		        n_ports);
		return EXIT_USAGE;
	}
	*pool = lb_port_pool_create(n_ports, n_workers);
	if (*pool == NULL) {
		fprintf(stderr, "spillwayd: cannot create the mbuf pool: %s\n",
		        rte_strerror(rte_errno));
		return 1;
	}
	*tx_ip_cksum = true;
	RTE_ETH_FOREACH_DEV (port) {
		struct lb_port_caps caps;
		bool lsc;
		int rc;

		if (lb_port_start(port, n_workers, *pool, encap_mtu, &caps, &lsc, err,
		                  sizeof(err)) != 0) {
			fprintf(stderr, "spillwayd: %s\n", err);
			return 1;
		}
		if (set_port_mac(o, port, io) != 0)
			return 1;
		rc = lb_link_watch_add(lw, port, lsc);
		if (rc != 0) {
			fprintf(stderr, "spillwayd: port %u: cannot watch its link: %s\n", port,
			        strerror(-rc));
			return 1;
		}
		if ((int)port != o->exc_port)
			io->rx_ports[io->n_rx_ports++] = port;
		if (((int)port == o->out_port || (o->out_port < 0 && (int)port != o->exc_port)) &&
		    !caps.tx_ip_cksum)
			*tx_ip_cksum = false;
		if (xdp_port(xs, port) != 0)
			return 1;
	}
	return 0;
}

/*
 * Close every port, the memif ones in the interrupt thread; then leave that
 * thread idle. The gate stays registered (and allocated) until the process ends.
 */
static void
close_ports(struct lb_memif_gate *g)
{
	uint16_t port;

	lb_memif_gate_stop(g);
	RTE_ETH_FOREACH_DEV (port)
		if (g == NULL || !lb_memif_gate_is_memif(port) ||
		    lb_memif_gate_close_port(g, port) != 0)
			lb_port_close(port);
	lb_memif_gate_settle(g);
}

int
main(int argc, char **argv)
{
	struct lb_options opt = {0};
	struct xdp_steer xs = {0};
	struct lb_config *cfg;
	struct lb_health_encap *health_encap = NULL;
	char err[512];
	int rc, eal_argc;
	sigset_t set;

	if (lb_options_parse(argc, argv, &opt, &eal_argc) != 0)
		return EXIT_USAGE;
	if (opt.bird_withdraw)
		return bird_withdraw_only(&opt);
	rc = check_control(&opt);
	if (rc != 0)
		return rc;
	cfg = initial_config(&opt);
	if (cfg == NULL)
		return EXIT_USAGE;
	if (health_encap_setup(cfg, &health_encap) != 0) {
		lb_config_free(cfg);
		return 1;
	}

	/* Workers inherit this mask: only the control thread's signalfd sees these. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	rc = xdp_prepare(&xs, &opt, eal_argc, argv);
	if (rc != 0) {
		lb_config_free(cfg);
		return rc;
	}
	if (rte_eal_init(eal_argc, xs.argv) < 0) {
		fprintf(stderr, "spillwayd: EAL initialisation failed: %s\n",
		        rte_strerror(rte_errno));
		lb_config_free(cfg);
		return 1;
	}

	unsigned int n_workers = rte_lcore_count() - 1;
	uint16_t n_ports = rte_eth_dev_count_avail();
	struct lb_io_conf io = {
	        .n_rx_ports = 0, .out_port = opt.out_port, .exc_port = opt.exc_port};
	struct lb_workers ws = {0};
	struct lb_snapshot *snap = NULL;
	struct lb_control *control = NULL;
	struct rte_mempool *pool = NULL;
	struct lb_memif_gate *mi = NULL;
	volatile bool stop = false;
	/* The hot-key window workers poll; control opens windows (release store). */
	volatile uint64_t hot_window = 0;
	int exit_code = 1;
	struct hook_list hl = {.n = 0};
	struct lb_bird *bird = NULL;
	struct lb_link_watch *lw = lb_link_watch_create();
	bool tx_ip_cksum = false;

	if (lb_memif_gate_create(-1, "spillwayd", &mi) != 0)
		fprintf(stderr, "spillwayd: cannot set up the memif interrupt source: a memif peer "
		                "leaving may crash spillwayd\n");
	if (lw == NULL) {
		fprintf(stderr, "spillwayd: out of memory\n");
		goto out;
	}
	if (n_workers == 0) {
		fprintf(stderr, "spillwayd: no worker lcore: give EAL at least two lcores "
		                "(for example -l 0-1)\n");
		goto out;
	}
	rc = start_ports(&opt, (uint16_t)n_workers, cfg->encap.mtu, &io, &xs, lw, &tx_ip_cksum,
	                 &pool);
	if (rc != 0) {
		exit_code = rc;
		goto out;
	}
	*hook_slot(&hl) = lb_link_watch_hook(lw);
	xdp_hook(&xs, &hl);
	if (opt.bird_include != NULL) {
		struct lb_bird_params bp = {.include_path = opt.bird_include,
		                            .socket_path = opt.bird_socket};

		bird = lb_bird_create(&bp);
		if (bird == NULL) {
			fprintf(stderr, "spillwayd: BIRD announcer: %s\n", strerror(errno));
			goto out;
		}
		/* After the XDP hook: a VIP is steered before it is announced. */
		*hook_slot(&hl) = lb_bird_hook(bird);
	}

	/* One-armed, the worker takes the receiving port's MAC per burst. */
	uint16_t mac_port = opt.out_port >= 0 ? (uint16_t)opt.out_port : io.rx_ports[0];
	struct lb_workers_params wp = {
	        .cfg = cfg,
	        .io = &io,
	        .src_mac = io.port_mac[mac_port],
	        .has_exception = opt.exc_port >= 0,
	        .check_dst_mac = !opt.no_dst_mac_check,
	        .tx_ip_cksum = tx_ip_cksum,
	        .snap = &snap,
	        .stop = &stop,
	        .window = &hot_window,
	};

	if (lb_workers_create(&ws, n_workers, &wp, err, sizeof(err)) != 0) {
		fprintf(stderr, "spillwayd: %s\n", err);
		goto out;
	}

	struct lb_control_params cp = {
	        .config_path = opt.config,
	        .state_path = opt.state,
	        .control_path = opt.control,
	        .metrics_addr = opt.metrics,
	        .control_mode = opt.control_mode,
	        .control_idle_ms = opt.control_idle_ms,
	        .control_group = opt.control_group,
	        .qsv = ws.qsv,
	        .snap = &snap,
	        .stop = &stop,
	        .cores = (const struct lb_core_counters *const *)ws.cores,
	        .lcores = ws.lcores,
	        .n_cores = n_workers,
	        .idle_exit_ms = opt.idle_exit_ms,
	        .sketches = ws.sketches,
	        .window = &hot_window,
	        .pool = pool,
	        .pmtu = ws.pmtu,
	        .hooks = hl.hook,
	        .n_hooks = hl.n,
	        .drain_wait_ms = opt.drain_wait_ms,
	};

	control = lb_control_create(&cp, cfg, err, sizeof(err));
	cfg = NULL; /* owned by control now */
	if (control == NULL) {
		fprintf(stderr, "spillwayd: %s\n", err);
		goto out;
	}
	fprintf(stderr, "spillwayd: %u worker(s), %u port(s), forwarding%s%s\n", n_workers, n_ports,
	        opt.control != NULL ? "; control socket " : "",
	        opt.control != NULL ? opt.control : "");
	lb_memif_gate_start(mi, &io.n_rx_ports, ws.qsv);
	lb_workers_launch(&ws);
	rc = lb_control_run(control);
	stop = true;
	rte_eal_mp_wait_lcore();
	if (rc != 0)
		fprintf(stderr, "spillwayd: control loop failed: %s\n", strerror(-rc));
	/* Close ports before the stats so a pcap TX file is complete when the
	 * stats appear (tests wait for them). */
	close_ports(mi);
	n_ports = 0;
	if (write_stats(lb_control_stats(control), opt.stats_file) != 0) {
		fprintf(stderr, "spillwayd: cannot write the stats: %s\n",
		        opt.stats_file ? opt.stats_file : "stdout");
		goto out;
	}
	exit_code = rc == 0 ? 0 : 1;
out:
	if (n_ports > 0)
		close_ports(mi);
	lb_control_destroy(control);
	lb_bird_free(bird);
	lb_link_watch_destroy(lw);
	xdp_free(&xs);
	lb_workers_free(&ws);
	lb_config_free(cfg);
	rte_mempool_free(pool);
	rte_eal_cleanup();
	lb_health_probe_register(LB_HEALTH_VIA_ENCAP, NULL);
	lb_health_encap_close(health_encap);
	return exit_code;
}
