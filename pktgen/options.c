/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Command line and scenario file parsing (start-up only); the balancer config
 * is lbconfig.c's. Over 800 lines because it holds spillgen's two ways in, the
 * getopt options (sg_opts_parse) and the scenario file's keys
 * (sg_scenario_load), with their usage text: both fill one struct sg_opts
 * through the same value parsers (addresses, CIDRs, sizes, VIPs) and defaults,
 * so splitting them would only move those shared parsers into a header.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lbconfig.h"
#include "options.h"

#define DEFAULT_VIP "192.0.2.10:80/udp"

void
sg_opts_usage(FILE *f)
{
	fprintf(f,
	        "Usage: spillgen [EAL-ARGS] -- [OPTIONS]\n"
	        "       spillgen [EAL-ARGS] -- --scenario FILE [OPTIONS]\n"
	        "\n"
	        "spillgen drives a load balancer with K flows of Zipf popularity, reads back\n"
	        "what the balancer sends on (IPIP or GUE/FOU toward backends) and reports per\n"
	        "backend load, balance, loss, duplicates, latency and hot-key promotion.\n"
	        "\n"
	        "EAL-ARGS are DPDK's. spillgen sends and receives on one port (--port, default\n"
	        "0): one RX and one TX queue. With one worker lcore it sends and receives on it;\n"
	        "with two, the first sends and the second receives. The main lcore prints\n"
	        "progress. The usual wiring is memif to a one-armed spillwayd in another\n"
	        "process; spillgen is the memif server (it creates the socket), spillwayd the\n"
	        "client:\n"
	        "    spillgen --lcores '0@1,1@0' --no-huge -m 512 --file-prefix sg \\\n"
	        "        --vdev=net_memif0,role=server,socket=/tmp/x/memif.sock -- -c lb.json\n"
	        "    spillwayd -l 0-1 --no-huge -m 512 --file-prefix lb \\\n"
	        "        --vdev=net_memif0,role=client,socket=/tmp/x/memif.sock -- -c lb.json\n"
	        "pktgen/run-memif.sh does both. net_pcap (tx_pcap=) writes a capture of the\n"
	        "generated traffic; with --analyse-only, rx_pcap= analyses a capture.\n"
	        "\n"
	        "Traffic:\n"
	        "  -c, --lb-config FILE   spillwayd's config: VIPs to send to, backends and their\n"
	        "                         weights (expected shares), encap.gue_port\n"
	        "  -v, --vip A:P/PROTO    a VIP (repeatable; replaces the config's VIPs), e.g.\n"
	        "                         192.0.2.10:80/tcp, [2001:db8::10]:53/udp\n"
	        "                         (default: the config's VIPs, else " DEFAULT_VIP ")\n"
	        "  -f, --flows K          flows (connections), spread round-robin over the VIPs\n"
	        "                         (default 1000)\n"
	        "  -z, --zipf S           Zipf exponent of flow popularity; 0 = uniform\n"
	        "                         (default 1.0)\n"
	        "  -S, --size N|imix      frame size in bytes with FCS, 64-1518 (default 64), or\n"
	        "                         imix: 64/570/1518 in 7:4:1. Frames grow to the\n"
	        "                         smallest size that carries the 18-byte stamp\n"
	        "                         (IPv4/UDP 64, IPv6/UDP 84, IPv4/TCP 76,\n"
	        "                         IPv6/TCP 96)\n"
	        "      --src CIDR         IPv4 source range (default 198.18.0.0/15)\n"
	        "      --src6 CIDR        IPv6 source range (default 2001:db8:5347::/64)\n"
	        "      --sports LO-HI     source port range (default 1024-65535)\n"
	        "  -r, --rate PPS         target packets per second, 0 = as fast as possible\n"
	        "                         (default 100000; k/M suffixes allowed)\n"
	        "      --max-lag MS       when the TX loop falls behind the target rate (a\n"
	        "                         descheduled core), send at most MS ms of owed\n"
	        "                         packets at once and write off the rest (default 10;\n"
	        "                         larger values keep the average rate at the price of\n"
	        "                         bursts)\n"
	        "  -d, --duration SEC     length of the run when there is no scenario (default 5)\n"
	        "  -n, --count N          stop sending after N packets\n"
	        "  -s, --scenario FILE    phases, hot keys and rate steps (JSON, see\n"
	        "                         docs/spillgen.md); options given on the command line\n"
	        "                         override the file's\n"
	        "      --seed N           random seed (default 1): same seed, same traffic\n"
	        "      --dst-mac MAC      Ethernet destination (default 02:00:00:00:00:01)\n"
	        "\n"
	        "Analysis:\n"
	        "  -i, --interval MS      time-series interval (default 100)\n"
	        "      --cap C            peak-to-average cap for the hot-key figures\n"
	        "                         (default 1.25, spillway's 1 + epsilon)\n"
	        "      --drain MS         keep receiving this long after sending stops\n"
	        "                         (default 500); with --analyse-only, stop after this\n"
	        "                         long without a packet\n"
	        "      --gue-port N       UDP port that marks GUE (default: config's, else 6080)\n"
	        "      --analyse-only     send nothing; analyse what the port receives (sent\n"
	        "                         counts per flow are taken as highest sequence + 1)\n"
	        "      --tx-only          send only, never read the port (generation benchmarks,\n"
	        "                         captures with net_pcap tx_pcap=)\n"
	        "      --no-latency       do not compute latency (TSC stamps of another host)\n"
	        "  -p, --port N           DPDK port (default 0)\n"
	        "      --link-wait SEC    wait this long for the link (memif peer) (default 10)\n"
	        "      --done-file PATH   once the results are written, create PATH and keep the\n"
	        "                         port open until the link goes down (the peer stopped)\n"
	        "                         or --linger SEC (default 10) pass: lets a script stop\n"
	        "                         a memif client before its server goes away\n"
	        "\n"
	        "Output:\n"
	        "  -j, --json FILE        results as JSON (- for stdout)\n"
	        "      --csv FILE         time series: one row per interval and backend\n"
	        "      --svg FILE         plot of per-backend load over time\n"
	        "      --progress         live progress line even when stderr is not a terminal\n"
	        "      --no-progress      no progress line\n"
	        "  -q, --quiet            no final table\n"
	        "  -h, --help             this text\n"
	        "\n"
	        "Exit status: 0 run completed; 1 runtime failure (EAL, port, link, memory);\n"
	        "2 bad usage, scenario or config. SIGINT/SIGTERM stop the run early; the\n"
	        "results so far are still reported.\n");
}

static int
parse_cidr(const char *s, union lb_ip *base, uint32_t *n, uint8_t af)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	long len;
	int bits = af == LB_AF_INET ? 32 : 128;

	if (slash == NULL || (size_t)(slash - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = 0;
	memset(base, 0, sizeof(*base));
	if (inet_pton(af == LB_AF_INET ? AF_INET : AF_INET6, buf, base->b) != 1)
		return -1;
	len = strtol(slash + 1, NULL, 10);
	if (len < 0 || len > bits)
		return -1;
	/* At most 2^31 addresses are ever used; the low 32 bits vary. */
	*n = bits - len >= 31 ? 1u << 31 : 1u << (bits - len);
	return 0;
}

int
sg_parse_vip(const char *s, struct sg_vip *v)
{
	char addr[64];
	const char *p, *colon;
	char *end;
	long port;

	memset(v, 0, sizeof(*v));
	if (s[0] == '[') {
		p = strchr(s, ']');
		if (p == NULL || p[1] != ':' || (size_t)(p - s - 1) >= sizeof(addr))
			return -1;
		memcpy(addr, s + 1, (size_t)(p - s - 1));
		addr[p - s - 1] = 0;
		colon = p + 1;
		v->af = LB_AF_INET6;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || (size_t)(colon - s) >= sizeof(addr))
			return -1;
		memcpy(addr, s, (size_t)(colon - s));
		addr[colon - s] = 0;
		v->af = LB_AF_INET;
	}
	if (inet_pton(v->af == LB_AF_INET ? AF_INET : AF_INET6, addr, v->addr.b) != 1)
		return -1;
	port = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || port < 0 || port > 65535 || *end != '/')
		return -1;
	v->port = (uint16_t)port;
	if (strcmp(end + 1, "tcp") == 0)
		v->proto = SG_PROTO_TCP;
	else if (strcmp(end + 1, "udp") == 0)
		v->proto = SG_PROTO_UDP;
	else
		return -1;
	for (int b = 0; b < SG_MAX_BACKENDS; b++)
		v->weight[b] = -1;
	return 0;
}

static int
parse_addr(const char *s, union lb_ip *a, uint8_t *af)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->b) == 1) {
		*af = LB_AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->b) == 1) {
		*af = LB_AF_INET6;
		return 0;
	}
	return -1;
}

static int
parse_u64(const char *s, uint64_t *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (end == s || errno != 0 || d < 0)
		return -1;
	if (*end == 'k' || *end == 'K')
		d *= 1e3, end++;
	else if (*end == 'M' || *end == 'm')
		d *= 1e6, end++;
	if (*end != 0 || d > 1e15)
		return -1;
	*out = (uint64_t)llround(d);
	return 0;
}

static int
parse_size(const char *s, uint16_t *size)
{
	uint64_t v;

	if (strcmp(s, "imix") == 0) {
		*size = SG_SIZE_IMIX;
		return 0;
	}
	if (parse_u64(s, &v) != 0 || v < 64 || v > 1518)
		return -1;
	*size = (uint16_t)v;
	return 0;
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int m[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (m[i] > 255)
			return -1;
		mac[i] = (uint8_t)m[i];
	}
	return 0;
}

static void
defaults(struct sg_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->flows = 1000;
	o->zipf = 1.0;
	o->size = 64;
	(void)parse_cidr("198.18.0.0/15", &o->src4, &o->src4_n, LB_AF_INET);
	(void)parse_cidr("2001:db8:5347::/64", &o->src6, &o->src6_n, LB_AF_INET6);
	o->sport_lo = 1024;
	o->sport_hi = 65535;
	o->gue_port = 0;
	o->interval_ms = 100;
	o->cap = 1.25;
	o->drain_ms = 500;
	o->progress = -1;
	o->seed = 1;
	o->link_wait = 10;
	o->max_lag_ms = 10;
	o->linger = 10;
	(void)parse_mac("02:00:00:00:00:01", o->dst_mac);
}

static int
default_hot_addr(struct sg_hot *h, uint8_t af, uint16_t phase)
{
	/* Outside the default source ranges, one per phase. */
	char buf[64];

	if (af == LB_AF_INET)
		snprintf(buf, sizeof(buf), "203.0.113.%u", (unsigned int)(1 + phase % 250));
	else
		snprintf(buf, sizeof(buf), "2001:db8:ffff::%x", (unsigned int)(1 + phase));
	uint8_t got;
	return parse_addr(buf, &h->src, &got);
}

#define ERR(...)                                                                                   \
	do {                                                                                       \
		snprintf(err, errlen, __VA_ARGS__);                                                \
		goto fail;                                                                         \
	} while (0)

static int
check_keys(json_t *obj, const char *const *allowed, const char *where, char *err, size_t errlen)
{
	const char *k;
	json_t *v;

	json_object_foreach (obj, k, v) {
		int ok = 0;
		for (int i = 0; allowed[i] != NULL; i++)
			ok |= strcmp(k, allowed[i]) == 0;
		if (!ok) {
			snprintf(err, errlen, "%s.%s: unknown field", where, k);
			return -1;
		}
	}
	return 0;
}

static int
num(json_t *o, const char *key, double *out, double lo, double hi, const char *where, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < lo || json_number_value(v) > hi) {
		snprintf(err, errlen, "%s.%s: not a number in [%g, %g]", where, key, lo, hi);
		return -1;
	}
	*out = json_number_value(v);
	return 0;
}

static int
load_hot(json_t *j, struct sg_hot *h, uint16_t phase, const char *where, char *err, size_t errlen)
{
	static const char *const keys[] = {
	        "share", "key",   "vip",  "connections", "packets_per_connection",
	        "src",   "sport", "pool", NULL};
	double d;
	json_t *v;

	if (!json_is_object(j))
		ERR("%s: not an object", where);
	if (check_keys(j, keys, where, err, errlen))
		return -1;
	memset(h, 0, sizeof(*h));
	h->kind = SG_HOT_5TUPLE;
	v = json_object_get(j, "key");
	if (v != NULL) {
		if (json_is_string(v) && strcmp(json_string_value(v), "5tuple") == 0)
			h->kind = SG_HOT_5TUPLE;
		else if (json_is_string(v) && strcmp(json_string_value(v), "src_ip") == 0)
			h->kind = SG_HOT_SRC_IP;
		else
			ERR("%s.key: \"5tuple\" or \"src_ip\"", where);
	}
	d = -1;
	if (num(j, "share", &d, 0, 1, where, err, errlen))
		return -1;
	if (d < 0)
		ERR("%s.share: required (0..1)", where);
	h->share = d;
	d = 0;
	if (num(j, "vip", &d, 0, SG_MAX_VIPS - 1, where, err, errlen))
		return -1;
	h->vip = (uint16_t)d;
	d = h->kind == SG_HOT_5TUPLE ? 1 : 64;
	if (num(j, "connections", &d, 1, 65536, where, err, errlen))
		return -1;
	h->conns = (uint32_t)d;
	d = 0;
	if (num(j, "packets_per_connection", &d, 0, 1e9, where, err, errlen))
		return -1;
	h->per_conn = (uint32_t)d;
	d = h->per_conn ? 16384 : h->conns;
	if (num(j, "pool", &d, 1, 1 << 20, where, err, errlen))
		return -1;
	h->pool = (uint32_t)d < h->conns ? h->conns : (uint32_t)d;
	d = h->kind == SG_HOT_5TUPLE ? 40000 : 1024;
	if (num(j, "sport", &d, 1, 65535, where, err, errlen))
		return -1;
	h->sport = (uint16_t)d;
	if (h->pool > 65536u - h->sport)
		h->pool = 65536u - h->sport;
	v = json_object_get(j, "src");
	uint8_t af = 0;
	if (v != NULL) {
		if (!json_is_string(v) || parse_addr(json_string_value(v), &h->src, &af) != 0)
			ERR("%s.src: not an address", where);
	} else {
		memset(&h->src, 0, sizeof(h->src));
		/* The family follows the VIP; fixed up once VIPs are known. */
		(void)phase;
	}
	return 0;
fail:
	return -1;
}

int
sg_scenario_load(struct sg_opts *o, const char *path, char *err, size_t errlen)
{
	static const char *const top[] = {"flows",     "zipf",   "size",        "interval_ms",
	                                  "cap",       "seed",   "drain_ms",    "vips",
	                                  "lb_config", "src",    "src6",        "sports",
	                                  "gue_port",  "phases", "description", NULL};
	static const char *const pkeys[] = {"name", "start", "end", "rate", "hot", NULL};
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je), *v;
	double d;
	size_t i;
	char where[64];

	if (root == NULL)
		ERR("%d:%d: invalid JSON: %s", je.line, je.column, je.text);
	if (!json_is_object(root))
		ERR("not a JSON object");
	if (check_keys(root, top, "scenario", err, errlen))
		goto fail_quiet;
	d = o->flows;
	if (num(root, "flows", &d, 1, 1 << 26, "scenario", err, errlen))
		goto fail_quiet;
	o->flows = (uint32_t)d;
	if (num(root, "zipf", &o->zipf, 0, 10, "scenario", err, errlen))
		goto fail_quiet;
	d = o->interval_ms;
	if (num(root, "interval_ms", &d, 1, 60000, "scenario", err, errlen))
		goto fail_quiet;
	o->interval_ms = (uint32_t)d;
	if (num(root, "cap", &o->cap, 1, 1000, "scenario", err, errlen))
		goto fail_quiet;
	d = (double)o->seed;
	if (num(root, "seed", &d, 0, 1e15, "scenario", err, errlen))
		goto fail_quiet;
	o->seed = (uint64_t)d;
	d = o->drain_ms;
	if (num(root, "drain_ms", &d, 0, 600000, "scenario", err, errlen))
		goto fail_quiet;
	o->drain_ms = (uint32_t)d;
	d = o->gue_port;
	if (num(root, "gue_port", &d, 1, 65535, "scenario", err, errlen))
		goto fail_quiet;
	o->gue_port = (uint16_t)d;
	if ((v = json_object_get(root, "size")) != NULL) {
		char buf[16];
		if (json_is_integer(v))
			snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		else if (json_is_string(v))
			snprintf(buf, sizeof(buf), "%s", json_string_value(v));
		else
			buf[0] = 0;
		if (parse_size(buf, &o->size) != 0)
			ERR("scenario.size: 64-1518 or \"imix\"");
	}
	if ((v = json_object_get(root, "src")) != NULL &&
	    (!json_is_string(v) ||
	     parse_cidr(json_string_value(v), &o->src4, &o->src4_n, LB_AF_INET) != 0))
		ERR("scenario.src: not an IPv4 CIDR");
	if ((v = json_object_get(root, "src6")) != NULL &&
	    (!json_is_string(v) ||
	     parse_cidr(json_string_value(v), &o->src6, &o->src6_n, LB_AF_INET6) != 0))
		ERR("scenario.src6: not an IPv6 CIDR");
	if ((v = json_object_get(root, "lb_config")) != NULL) {
		if (!json_is_string(v))
			ERR("scenario.lb_config: not a string");
		o->lb_config = strdup(json_string_value(v));
	}
	if ((v = json_object_get(root, "vips")) != NULL) {
		json_t *e;
		if (!json_is_array(v) || json_array_size(v) > SG_MAX_VIPS)
			ERR("scenario.vips: an array of at most %d \"ADDR:PORT/PROTO\"",
			    SG_MAX_VIPS);
		o->nvips = 0;
		json_array_foreach (v, i, e) {
			if (!json_is_string(e) ||
			    sg_parse_vip(json_string_value(e), &o->vips[o->nvips]) != 0)
				ERR("scenario.vips[%zu]: not \"ADDR:PORT/PROTO\"", i);
			o->nvips++;
		}
	}
	if ((v = json_object_get(root, "phases")) != NULL) {
		json_t *p;
		if (!json_is_array(v) || json_array_size(v) == 0 ||
		    json_array_size(v) > SG_MAX_PHASES)
			ERR("scenario.phases: an array of 1 to %d phases", SG_MAX_PHASES);
		o->nphases = 0;
		json_array_foreach (v, i, p) {
			struct sg_phase *ph = &o->phases[o->nphases];
			snprintf(where, sizeof(where), "scenario.phases[%zu]", i);
			if (!json_is_object(p))
				ERR("%s: not an object", where);
			if (check_keys(p, pkeys, where, err, errlen))
				goto fail_quiet;
			memset(ph, 0, sizeof(*ph));
			json_t *n = json_object_get(p, "name");
			snprintf(ph->name, sizeof(ph->name), "%s",
			         json_is_string(n) ? json_string_value(n) : "");
			if (ph->name[0] == 0)
				snprintf(ph->name, sizeof(ph->name), "phase%zu", i);
			ph->start = -1;
			ph->end = -1;
			if (num(p, "start", &ph->start, 0, 86400, where, err, errlen) ||
			    num(p, "end", &ph->end, 0, 86400, where, err, errlen))
				goto fail_quiet;
			if (ph->start < 0 || ph->end <= ph->start)
				ERR("%s: start and end (seconds) are required, start < end", where);
			if (o->nphases > 0 && ph->start < o->phases[o->nphases - 1].end)
				ERR("%s: starts before the previous phase ends", where);
			d = 100000;
			json_t *r = json_object_get(p, "rate");
			if (r != NULL && json_is_string(r)) {
				uint64_t u;
				if (parse_u64(json_string_value(r), &u) != 0)
					ERR("%s.rate: not a rate", where);
				d = (double)u;
			} else if (num(p, "rate", &d, 0, 1e12, where, err, errlen)) {
				goto fail_quiet;
			}
			ph->pps = (uint64_t)d;
			json_t *h = json_object_get(p, "hot");
			if (h != NULL) {
				snprintf(where, sizeof(where), "scenario.phases[%zu].hot", i);
				if (load_hot(h, &ph->hot, o->nphases, where, err, errlen))
					goto fail_quiet;
			}
			o->nphases++;
		}
	}
	json_decref(root);
	return 0;
fail:
fail_quiet:
	json_decref(root);
	return -1;
}

enum {
	OPT_SRC = 256,
	OPT_SRC6,
	OPT_SPORTS,
	OPT_SEED,
	OPT_DST_MAC,
	OPT_CAP,
	OPT_DRAIN,
	OPT_GUE,
	OPT_ANALYSE,
	OPT_NOLAT,
	OPT_TXONLY,
	OPT_MAXLAG,
	OPT_DONE,
	OPT_LINGER,
	OPT_LINK,
	OPT_CSV,
	OPT_SVG,
	OPT_PROGRESS,
	OPT_NOPROGRESS,
};

static const struct option longopts[] = {
        {"lb-config", required_argument, NULL, 'c'},
        {"vip", required_argument, NULL, 'v'},
        {"flows", required_argument, NULL, 'f'},
        {"zipf", required_argument, NULL, 'z'},
        {"size", required_argument, NULL, 'S'},
        {"src", required_argument, NULL, OPT_SRC},
        {"src6", required_argument, NULL, OPT_SRC6},
        {"sports", required_argument, NULL, OPT_SPORTS},
        {"rate", required_argument, NULL, 'r'},
        {"duration", required_argument, NULL, 'd'},
        {"count", required_argument, NULL, 'n'},
        {"scenario", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"dst-mac", required_argument, NULL, OPT_DST_MAC},
        {"interval", required_argument, NULL, 'i'},
        {"cap", required_argument, NULL, OPT_CAP},
        {"drain", required_argument, NULL, OPT_DRAIN},
        {"gue-port", required_argument, NULL, OPT_GUE},
        {"analyse-only", no_argument, NULL, OPT_ANALYSE},
        {"analyze-only", no_argument, NULL, OPT_ANALYSE},
        {"no-latency", no_argument, NULL, OPT_NOLAT},
        {"tx-only", no_argument, NULL, OPT_TXONLY},
        {"max-lag", required_argument, NULL, OPT_MAXLAG},
        {"done-file", required_argument, NULL, OPT_DONE},
        {"linger", required_argument, NULL, OPT_LINGER},
        {"port", required_argument, NULL, 'p'},
        {"link-wait", required_argument, NULL, OPT_LINK},
        {"json", required_argument, NULL, 'j'},
        {"csv", required_argument, NULL, OPT_CSV},
        {"svg", required_argument, NULL, OPT_SVG},
        {"progress", no_argument, NULL, OPT_PROGRESS},
        {"no-progress", no_argument, NULL, OPT_NOPROGRESS},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};
static const char shortopts[] = "c:v:f:z:S:r:d:n:s:i:p:j:qh";

static int
bad(const char *opt, const char *val)
{
	fprintf(stderr, "spillgen: --%s: invalid value: %s (see --help)\n", opt, val);
	return -1;
}

int
sg_opts_parse(struct sg_opts *o, int argc, char **argv)
{
	char err[256];
	int c, idx;
	uint64_t u;
	double rate = -1, duration = 5;
	bool vip_given = false;
	const char *lbc = NULL;

	defaults(o);
	/* First pass: the scenario file, so that explicit options override it. */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
		if (c == 's')
			o->scenario = optarg;
		if (c == 'h') {
			sg_opts_usage(stdout);
			return 1;
		}
	}
	if (o->scenario != NULL && sg_scenario_load(o, o->scenario, err, sizeof(err)) != 0) {
		fprintf(stderr, "spillgen: %s: %s\n", o->scenario, err);
		return -1;
	}
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
		switch (c) {
		case 'c':
			lbc = optarg;
			break;
		case 'v':
			if (!vip_given)
				o->nvips = 0;
			vip_given = true;
			if (o->nvips >= SG_MAX_VIPS ||
			    sg_parse_vip(optarg, &o->vips[o->nvips]) != 0)
				return bad("vip", optarg);
			o->nvips++;
			break;
		case 'f':
			if (parse_u64(optarg, &u) != 0 || u == 0 || u > (1u << 26))
				return bad("flows", optarg);
			o->flows = (uint32_t)u;
			break;
		case 'z':
			o->zipf = strtod(optarg, NULL);
			if (!(o->zipf >= 0 && o->zipf <= 10))
				return bad("zipf", optarg);
			break;
		case 'S':
			if (parse_size(optarg, &o->size) != 0)
				return bad("size", optarg);
			break;
		case OPT_SRC:
			if (parse_cidr(optarg, &o->src4, &o->src4_n, LB_AF_INET) != 0)
				return bad("src", optarg);
			break;
		case OPT_SRC6:
			if (parse_cidr(optarg, &o->src6, &o->src6_n, LB_AF_INET6) != 0)
				return bad("src6", optarg);
			break;
		case OPT_SPORTS: {
			unsigned int lo, hi;
			if (sscanf(optarg, "%u-%u", &lo, &hi) != 2 || lo == 0 || lo > hi ||
			    hi > 65535)
				return bad("sports", optarg);
			o->sport_lo = (uint16_t)lo;
			o->sport_hi = (uint16_t)hi;
			break;
		}
		case 'r':
			if (parse_u64(optarg, &u) != 0)
				return bad("rate", optarg);
			rate = (double)u;
			break;
		case 'd':
			duration = strtod(optarg, NULL);
			if (!(duration > 0 && duration <= 86400))
				return bad("duration", optarg);
			if (o->scenario != NULL) {
				fprintf(stderr, "spillgen: --duration and --scenario: the "
				                "scenario's phases give the duration\n");
				return -1;
			}
			break;
		case 'n':
			if (parse_u64(optarg, &o->count) != 0)
				return bad("count", optarg);
			break;
		case 's':
			break;
		case OPT_SEED:
			if (parse_u64(optarg, &o->seed) != 0)
				return bad("seed", optarg);
			break;
		case OPT_DST_MAC:
			if (parse_mac(optarg, o->dst_mac) != 0)
				return bad("dst-mac", optarg);
			break;
		case 'i':
			if (parse_u64(optarg, &u) != 0 || u == 0 || u > 60000)
				return bad("interval", optarg);
			o->interval_ms = (uint32_t)u;
			break;
		case OPT_CAP:
			o->cap = strtod(optarg, NULL);
			if (!(o->cap >= 1))
				return bad("cap", optarg);
			break;
		case OPT_DRAIN:
			if (parse_u64(optarg, &u) != 0 || u > 600000)
				return bad("drain", optarg);
			o->drain_ms = (uint32_t)u;
			break;
		case OPT_GUE:
			if (parse_u64(optarg, &u) != 0 || u == 0 || u > 65535)
				return bad("gue-port", optarg);
			o->gue_port = (uint16_t)u;
			break;
		case OPT_ANALYSE:
			o->analyse_only = true;
			break;
		case OPT_DONE:
			o->done_file = optarg;
			break;
		case OPT_LINGER:
			o->linger = strtod(optarg, NULL);
			if (!(o->linger >= 0 && o->linger <= 3600))
				return bad("linger", optarg);
			break;
		case OPT_MAXLAG:
			o->max_lag_ms = strtod(optarg, NULL);
			if (!(o->max_lag_ms > 0 && o->max_lag_ms <= 60000))
				return bad("max-lag", optarg);
			break;
		case OPT_TXONLY:
			o->tx_only = true;
			break;
		case OPT_NOLAT:
			o->no_latency = true;
			break;
		case 'p':
			if (parse_u64(optarg, &u) != 0 || u > 1023)
				return bad("port", optarg);
			o->port = (uint16_t)u;
			break;
		case OPT_LINK:
			o->link_wait = strtod(optarg, NULL);
			if (!(o->link_wait >= 0))
				return bad("link-wait", optarg);
			break;
		case 'j':
			o->json = optarg;
			break;
		case OPT_CSV:
			o->csv = optarg;
			break;
		case OPT_SVG:
			o->svg = optarg;
			break;
		case OPT_PROGRESS:
			o->progress = 1;
			break;
		case OPT_NOPROGRESS:
			o->progress = 0;
			break;
		case 'q':
			o->quiet = true;
			break;
		default:
			fprintf(stderr, "spillgen: see --help\n");
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spillgen: unexpected argument: %s\n", argv[optind]);
		return -1;
	}
	if (lbc == NULL)
		lbc = o->lb_config;
	if (lbc != NULL && sg_lbconfig_load(o, lbc, err, sizeof(err)) != 0) {
		fprintf(stderr, "spillgen: %s: %s\n", lbc, err);
		return -1;
	}
	if (o->gue_port == 0)
		o->gue_port = 6080;
	if (o->tx_only && o->analyse_only) {
		fprintf(stderr, "spillgen: --tx-only and --analyse-only exclude each other\n");
		return -1;
	}
	if (o->nvips == 0) {
		(void)sg_parse_vip(DEFAULT_VIP, &o->vips[0]);
		o->nvips = 1;
	}
	if (o->nphases == 0) {
		o->nphases = 1;
		snprintf(o->phases[0].name, sizeof(o->phases[0].name), "run");
		o->phases[0].start = 0;
		o->phases[0].end = duration;
		o->phases[0].pps = rate >= 0 ? (uint64_t)rate : 100000;
	} else if (rate >= 0) {
		for (uint16_t i = 0; i < o->nphases; i++)
			o->phases[i].pps = (uint64_t)rate;
	}
	for (uint16_t i = 0; i < o->nphases; i++) {
		struct sg_hot *h = &o->phases[i].hot;
		if (h->kind == 0)
			continue;
		if (h->vip >= o->nvips) {
			fprintf(stderr, "spillgen: phase %s: hot.vip %u: there are %u VIPs\n",
			        o->phases[i].name, h->vip, o->nvips);
			return -1;
		}
		if (h->src.q[0] == 0 && h->src.q[1] == 0)
			(void)default_hot_addr(h, o->vips[h->vip].af, i);
	}
	return 0;
}
