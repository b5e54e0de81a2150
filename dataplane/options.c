/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillwayd's options: the usage text, getopt over the arguments after "--",
 * and the checks that need nothing but the command line. Start-up only.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <rte_config.h>

#include "control/io/metrics_http.h"
#include "dataplane/options.h"

/* Long-only options. */
enum {
	OPT_CONTROL = 256,
	OPT_CONTROL_MODE,
	OPT_CONTROL_GROUP,
	OPT_CONTROL_IDLE,
	OPT_STATE,
	OPT_XDP_PROG,
	OPT_BIRD_INCLUDE,
	OPT_BIRD_SOCKET,
	OPT_BIRD_WITHDRAW,
	OPT_DRAIN_WAIT,
	OPT_METRICS,
	OPT_DST_MAC_CHECK,
	OPT_PORT_MAC,
};

#define DRAIN_WAIT_DEFAULT_MS 5000

/* After a usage error: the synopsis in one line and where the rest is. */
static void
usage_short(void)
{
	fprintf(stderr, "Usage: spillwayd [EAL-ARGS] -- --config FILE [OPTIONS]\n"
	                "Try 'spillwayd --help' for more information.\n");
}

static void
print_version(void)
{
	printf("spillwayd " SPILLWAY_VERSION "\n");
}

static void
usage(FILE *f)
{
	fprintf(f,
	        "Usage: spillwayd [EAL-ARGS] -- --config FILE [OPTIONS]\n"
	        "       spillwayd [EAL-ARGS] -- --state FILE [--config FILE] [OPTIONS]\n"
	        "\n"
	        "spillway L4 load balancer data plane. Packets to a VIP are given a backend by\n"
	        "a per-core flow table, else by Maglev consistent hashing, and sent to it\n"
	        "encapsulated (IPIP or GUE/FOU); the backend answers the client directly.\n"
	        "\n"
	        "EAL-ARGS are DPDK's (for example -l 0-2 --vdev=net_pcap0,rx_pcap=in.pcap,\n"
	        "tx_pcap=out.pcap --no-huge -m 512). Every DPDK port becomes an input; the\n"
	        "main lcore runs the control thread, every other lcore is a worker with one\n"
	        "RX and one TX queue on each port (RSS spreads flows when there are several).\n"
	        "\n"
	        "Options:\n"
	        "  -c, --config FILE        configuration (JSON; see docs/operations.md).\n"
	        "                           Required unless the --state file exists.\n"
	        "      --state FILE         persisted configuration. If FILE exists it is\n"
	        "                           loaded instead of --config; every change (control\n"
	        "                           socket, SIGHUP) is written to it (atomically)\n"
	        "                           before it takes effect; if it does not exist it\n"
	        "                           is created from --config at start-up. Restarting\n"
	        "                           with the same --state comes back to the same\n"
	        "                           VIPs and backends.\n"
	        "      --control PATH       serve the JSON-RPC control socket at PATH\n"
	        "                           (docs/control-protocol.md; spillctl talks to it).\n"
	        "                           A stale socket file is replaced; start-up fails if\n"
	        "                           another process listens on it or PATH is not a\n"
	        "                           socket. Default: no control socket.\n"
	        "      --control-mode OCTAL permission bits of the socket file, whatever the\n"
	        "                           umask (default 0660: owner and group may connect)\n"
	        "      --control-group G    group of the socket file (name or numeric gid)\n"
	        "      --control-idle MS    close a control connection after MS ms without a\n"
	        "                           complete request (default 60000; 100-3600000)\n"
	        "      --metrics ADDR:PORT  serve Prometheus metrics over HTTP at\n"
	        "                           http://ADDR:PORT/metrics (text format 0.0.4;\n"
	        "                           every stats counter per core, VIP, backend and\n"
	        "                           drop reason, hot keys, publication latency;\n"
	        "                           docs/operations.md, \"Metrics reference\").\n"
	        "                           ADDR is numeric: 127.0.0.1:9100, [::1]:9100,\n"
	        "                           0.0.0.0:9100 for every interface. Read-only:\n"
	        "                           only GET and HEAD of /metrics are answered,\n"
	        "                           anything else gets 400, 404, 405 or 431. Served\n"
	        "                           from the control thread without blocking it: at\n"
	        "                           most 16 connections, 8 KiB of request, one\n"
	        "                           request per connection, 5 s idle. Start-up fails\n"
	        "                           (exit 1) if the port cannot be bound. Anyone who\n"
	        "                           can reach the port can read the counters: bind\n"
	        "                           it to loopback or a management network.\n"
	        "  -s, --stats-file FILE    write the final counters (JSON) here instead of\n"
	        "                           stdout\n"
	        "  -o, --out-port N         send encapsulated packets out of port N\n"
	        "                           (default: one-armed, out of the receiving port)\n"
	        "  -x, --exception-port N   send traffic for no VIP (ARP, the host's own\n"
	        "                           traffic) unchanged out of port N, which is not read\n"
	        "                           (default: drop it, counted as no_vip)\n"
	        "      --dst-mac-check on|off  on (default): only frames to the receiving\n"
	        "                           port's MAC are balanced; broadcast and multicast\n"
	        "                           frames go to the exception port, or are dropped\n"
	        "                           without one, frames to other hosts' MACs are\n"
	        "                           dropped (drops counted as not_our_mac). off:\n"
	        "                           frames to any MAC are balanced\n"
	        "      --port-mac N=MAC     port N's MAC address (repeatable, at most 8): set\n"
	        "                           on the port at start-up; a PMD that cannot change\n"
	        "                           it (net_pcap) keeps its own and spillwayd uses MAC\n"
	        "                           for the check and as its source; start-up fails if\n"
	        "                           the PMD refuses it otherwise\n"
	        "  -i, --idle-exit MS       stop by itself after MS ms without a received packet\n"
	        "                           (for pcap replays and demos; default: never)\n"
	        "      --xdp-prog PATH|none XDP program for af_xdp ports (a NIC shared with the\n"
	        "                           kernel; docs/xdp.md). Default: spillway's steering\n"
	        "                           program (xsk_steer.bpf.o from the build tree or the\n"
	        "                           install, or $SPILLWAY_XSK_OBJ), added to every\n"
	        "                           net_af_xdp vdev as xdp_prog= unless one is given. It\n"
	        "                           sends VIP traffic to spillway and passes the rest\n"
	        "                           (ARP, ND, SSH, BGP) to the kernel; spillwayd keeps\n"
	        "                           its VIP map equal to the configuration (stats\n"
	        "                           \"hooks\": {\"xdp\"}). \"none\": the PMD's own "
	        "program,\n"
	        "                           every frame of the queue goes to spillway.\n"
	        "      --bird-include PATH  announce the VIPs through BIRD 2 (docs/scale-out.md):\n"
	        "                           keep PATH, a file BIRD's configuration includes,\n"
	        "                           equal to the routes to announce (protocols static\n"
	        "                           spillway4 and spillway6: a /32 or /128 blackhole\n"
	        "                           route per VIP address with a usable backend), and\n"
	        "                           ask BIRD to reload (\"configure\") on every change.\n"
	        "                           Withdrawals happen before a change takes effect,\n"
	        "                           announcements once every worker has it. Written\n"
	        "                           atomically, mode 0644. Needs --bird-socket.\n"
	        "      --bird-socket PATH   BIRD's control socket (bird -s; Debian:\n"
	        "                           /run/bird/bird.ctl). Each exchange is bounded by\n"
	        "                           2 s; a failure is logged, counted (stats \"hooks\":\n"
	        "                           {\"bird\"}) and retried. Needs --bird-include.\n"
	        "      --drain-wait MS      with BIRD: on SIGTERM/SIGINT, withdraw every route,\n"
	        "                           keep forwarding MS ms so the routers move traffic\n"
	        "                           away, then stop (default 5000; 0: stop right after\n"
	        "                           the withdrawal; a second signal stops once the\n"
	        "                           exchange with BIRD under way ends, a third at\n"
	        "                           once).\n"
	        "                           The control socket's drain/undrain do the same\n"
	        "                           without stopping (spillctl drain).\n"
	        "      --bird-withdraw      do not run: write the --bird-include file with no\n"
	        "                           route, have BIRD (--bird-socket) reload it, wait\n"
	        "                           for its answer (2 s at most) and exit (0: BIRD\n"
	        "                           took it, or no --bird-include: nothing to do; 1:\n"
	        "                           it failed). No EAL, no port; every other option\n"
	        "                           is checked and ignored, so it takes the daemon's\n"
	        "                           own command line. Refused (1) while a spillwayd\n"
	        "                           answers on --control. For the stop after a crash\n"
	        "                           (the packaged unit's ExecStopPost).\n"
	        "  -h, --help               this text\n"
	        "  -V, --version            print the version\n"
	        "\n"
	        "Hot keys: with \"hot\": {\"enabled\": true} (the default) every worker\n"
	        "samples its packets into a sketch; the control thread spreads the new\n"
	        "flows of any key that would take its backend past (1 + hot.epsilon) x\n"
	        "its fair load over just enough backends to keep each under it. Keys of\n"
	        "5tuple VIPs spread by default, keys of src_ip and src_ip_dport VIPs are\n"
	        "only reported unless the VIP sets \"hot_mode\": \"spread\"\n"
	        "(docs/hot-keys.md; spillctl hot list).\n"
	        "\n"
	        "AF_XDP example (one queue, the interface keeps its address):\n"
	        "  spillwayd -l 0-1 --no-pci \\\n"
	        "      --vdev=net_af_xdp0,iface=eth1,start_queue=0,queue_count=1 \\\n"
	        "      -- --config lb.json --control /run/spillway.sock\n"
	        "\n"
	        "Signals: SIGTERM/SIGINT stop cleanly (with BIRD: withdraw, --drain-wait; then\n"
	        "workers stop, TX drains, ports close, final counters are written, the\n"
	        "control socket file is removed); SIGHUP reloads --config as one change and\n"
	        "saves it to --state (an invalid file is reported and the running\n"
	        "configuration kept; without --config, ignored).\n"
	        "\n"
	        "Exit status: 0 clean stop; 1 runtime failure (EAL, ports, memory, the state\n"
	        "file cannot be written, the control socket path is taken); 2 bad usage or\n"
	        "bad configuration or state file (one message: \"FILE: path: reason\").\n");
}

static int
parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *out > max || s[0] == '-')
		return -EINVAL;
	return 0;
}

/* --port-mac N=xx:xx:xx:xx:xx:xx, added to o->port_macs. */
static int
parse_port_mac(const char *arg, struct lb_options *o)
{
	unsigned int port, m[6];
	char tail;

	if (o->n_port_macs == LB_OPTIONS_MAX_PORT_MACS) {
		fprintf(stderr, "spillwayd: --port-mac: at most %d\n", LB_OPTIONS_MAX_PORT_MACS);
		return -EINVAL;
	}
	if (sscanf(arg, "%u=%2x:%2x:%2x:%2x:%2x:%2x%c", &port, &m[0], &m[1], &m[2], &m[3], &m[4],
	           &m[5], &tail) != 7 ||
	    port >= RTE_MAX_ETHPORTS || arg[0] < '0' || arg[0] > '9' ||
	    strlen(strchr(arg, '=') + 1) != 17) {
		fprintf(stderr, "spillwayd: --port-mac: not PORT=xx:xx:xx:xx:xx:xx: %s\n", arg);
		return -EINVAL;
	}
	o->port_macs[o->n_port_macs].port = (uint16_t)port;
	for (int i = 0; i < 6; i++)
		o->port_macs[o->n_port_macs].mac[i] = (uint8_t)m[i];
	o->n_port_macs++;
	return 0;
}

static int
parse_options(int argc, char **argv, struct lb_options *o)
{
	static const struct option longopts[] = {
	        {"config", required_argument, NULL, 'c'},
	        {"state", required_argument, NULL, OPT_STATE},
	        {"control", required_argument, NULL, OPT_CONTROL},
	        {"control-mode", required_argument, NULL, OPT_CONTROL_MODE},
	        {"control-group", required_argument, NULL, OPT_CONTROL_GROUP},
	        {"control-idle", required_argument, NULL, OPT_CONTROL_IDLE},
	        {"stats-file", required_argument, NULL, 's'},
	        {"out-port", required_argument, NULL, 'o'},
	        {"exception-port", required_argument, NULL, 'x'},
	        {"idle-exit", required_argument, NULL, 'i'},
	        {"xdp-prog", required_argument, NULL, OPT_XDP_PROG},
	        {"bird-include", required_argument, NULL, OPT_BIRD_INCLUDE},
	        {"bird-socket", required_argument, NULL, OPT_BIRD_SOCKET},
	        {"bird-withdraw", no_argument, NULL, OPT_BIRD_WITHDRAW},
	        {"drain-wait", required_argument, NULL, OPT_DRAIN_WAIT},
	        {"metrics", required_argument, NULL, OPT_METRICS},
	        {"dst-mac-check", required_argument, NULL, OPT_DST_MAC_CHECK},
	        {"port-mac", required_argument, NULL, OPT_PORT_MAC},
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, 'V'},
	        {NULL, 0, NULL, 0},
	};
	unsigned long v;
	char *end;
	int c;

	o->out_port = -1;
	o->exc_port = -1;
	o->drain_wait_ms = DRAIN_WAIT_DEFAULT_MS;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:s:o:x:i:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case OPT_STATE:
			o->state = optarg;
			break;
		case OPT_XDP_PROG:
			o->xdp_prog = optarg;
			break;
		case OPT_BIRD_INCLUDE:
			o->bird_include = optarg;
			break;
		case OPT_BIRD_SOCKET:
			o->bird_socket = optarg;
			break;
		case OPT_BIRD_WITHDRAW:
			o->bird_withdraw = true;
			break;
		case OPT_DRAIN_WAIT:
			if (parse_uint(optarg, 3600000, &v) != 0) {
				fprintf(stderr,
				        "spillwayd: --drain-wait: not a duration in ms "
				        "(0-3600000): %s\n",
				        optarg);
				return -EINVAL;
			}
			o->drain_wait_ms = (uint32_t)v;
			break;
		case OPT_CONTROL:
			o->control = optarg;
			break;
		case OPT_DST_MAC_CHECK:
			if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
				fprintf(stderr, "spillwayd: --dst-mac-check: not on or off: %s\n",
				        optarg);
				return -EINVAL;
			}
			o->no_dst_mac_check = strcmp(optarg, "off") == 0;
			break;
		case OPT_PORT_MAC:
			if (parse_port_mac(optarg, o) != 0)
				return -EINVAL;
			break;
		case OPT_METRICS: {
			struct sockaddr_storage ss;
			socklen_t sl;

			if (lb_metrics_http_parse_addr(optarg, &ss, &sl) != 0) {
				fprintf(stderr,
				        "spillwayd: --metrics: not ADDR:PORT (numeric address, "
				        "[IPv6]:PORT, port 1-65535): %s\n",
				        optarg);
				return -EINVAL;
			}
			o->metrics = optarg;
			break;
		}
		case OPT_CONTROL_MODE:
			errno = 0;
			v = strtoul(optarg, &end, 8);
			if (errno != 0 || end == optarg || *end != '\0' || optarg[0] == '-' ||
			    v == 0 || v > 0777) {
				fprintf(stderr,
				        "spillwayd: --control-mode: not octal permission bits "
				        "(1-0777): %s\n",
				        optarg);
				return -EINVAL;
			}
			o->control_mode = (mode_t)v;
			break;
		case OPT_CONTROL_GROUP:
			o->control_group = optarg;
			break;
		case OPT_CONTROL_IDLE:
			if (parse_uint(optarg, 3600000, &v) != 0 || v < 100) {
				fprintf(stderr,
				        "spillwayd: --control-idle: not a duration in ms "
				        "(100-3600000): %s\n",
				        optarg);
				return -EINVAL;
			}
			o->control_idle_ms = (uint32_t)v;
			break;
		case 's':
			o->stats_file = optarg;
			break;
		case 'o':
		case 'x':
			if (parse_uint(optarg, RTE_MAX_ETHPORTS - 1, &v) != 0) {
				fprintf(stderr, "spillwayd: --%s: not a port number: %s\n",
				        c == 'o' ? "out-port" : "exception-port", optarg);
				return -EINVAL;
			}
			*(c == 'o' ? &o->out_port : &o->exc_port) = (int)v;
			break;
		case 'i':
			if (parse_uint(optarg, 86400000, &v) != 0 || v == 0) {
				fprintf(stderr,
				        "spillwayd: --idle-exit: not a duration in ms: %s\n",
				        optarg);
				return -EINVAL;
			}
			o->idle_exit_ms = (uint32_t)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			print_version();
			exit(0);
		default:
			/* getopt_long has named the option and what is wrong with it. */
			usage_short();
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spillwayd: unexpected argument: %s\n", argv[optind]);
		usage_short();
		return -EINVAL;
	}
	if (o->config == NULL && o->state == NULL && !o->bird_withdraw) {
		fprintf(stderr, "spillwayd: --config FILE (or an existing --state FILE) is "
		                "required\n");
		usage_short();
		return -EINVAL;
	}
	if ((o->control_group != NULL || o->control_mode != 0 || o->control_idle_ms != 0) &&
	    o->control == NULL) {
		fprintf(stderr, "spillwayd: --control-mode/--control-group/--control-idle need "
		                "--control PATH\n");
		return -EINVAL;
	}
	if ((o->bird_include == NULL) != (o->bird_socket == NULL)) {
		fprintf(stderr,
		        "spillwayd: --bird-include and --bird-socket go together: give both "
		        "to announce the VIPs through BIRD, or neither\n");
		return -EINVAL;
	}
	if (o->bird_socket != NULL &&
	    strlen(o->bird_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(stderr, "spillwayd: --bird-socket: path too long (at most %zu bytes): %s\n",
		        sizeof(((struct sockaddr_un *)0)->sun_path) - 1, o->bird_socket);
		return -EINVAL;
	}
	return 0;
}

int
lb_options_parse(int argc, char **argv, struct lb_options *o, int *eal_argc)
{
	int sep = argc, rc;
	char *saved;

	/*
	 * Our options follow "--"; --help and --version also work without it,
	 * and so does a bare "spillwayd" (it says what is missing).
	 */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	if (sep == argc) {
		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
				usage(stdout);
				exit(0);
			}
			if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
				print_version();
				exit(0);
			}
		}
		if (argc <= 1)
			fprintf(stderr, "spillwayd: --config FILE (or an existing --state FILE) is "
			                "required\n");
		else
			fprintf(stderr, "spillwayd: missing \"--\" between EAL's arguments and "
			                "spillwayd's options\n");
		usage_short();
		return -EINVAL;
	}
	saved = argv[sep];
	argv[sep] = argv[0];
	rc = parse_options(argc - sep, argv + sep, o);
	argv[sep] = saved;
	if (rc == 0)
		*eal_argc = sep;
	return rc;
}
