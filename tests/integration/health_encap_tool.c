/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Drives the "via encap" health probe code outside spillwayd for the tests:
 * "dump" prints one frame of lb_hc_pkt_build() in hex (health_encap_pkt_check.py
 * compares it with scapy), "probe" runs probes through the transport as the
 * health runner does (start, wait on fd with the timeout, poll, stop) and
 * prints each result as a JSON line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "control/base/clock.h"
#include "control/health/health_encap.h"
#include "control/health/health_encap_pkt.h"
#include "control/base/loop.h"

#define MAX_PROBES 64

static int
parse_ip(const char *s, union lb_ip *a, uint8_t *af)
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
	fprintf(stderr, "bad address %s\n", s);
	exit(2);
}

static uint16_t
parse_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = strlen(s) / 2;

	if (strlen(s) % 2 || n > cap) {
		fprintf(stderr, "bad hex %s\n", s);
		exit(2);
	}
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1) {
			fprintf(stderr, "bad hex %s\n", s);
			exit(2);
		}
		out[i] = (uint8_t)v;
	}
	return (uint16_t)n;
}

static void
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int m[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
		fprintf(stderr, "bad MAC %s\n", s);
		exit(2);
	}
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
}

struct opts {
	struct lb_encap_conf encap;
	uint8_t src_mac[6];
	const char *kind, *type;
	uint8_t encap_type;
	union lb_ip src, vip, backend;
	uint8_t src_af, vip_af, be_af;
	bool has_src;
	unsigned long sport, dport, seq, mss, timeout_ms, count;
	unsigned long long flow_hash;
	uint8_t payload[LB_HEALTH_BYTES_MAX], expect[LB_HEALTH_BYTES_MAX];
	uint16_t payload_len, expect_len;
};

static void
set_outer(struct opts *o, const char *s)
{
	union lb_ip a;
	uint8_t af;

	parse_ip(s, &a, &af);
	if (af == LB_AF_INET) {
		o->encap.src4 = a;
		o->encap.has_src4 = true;
	} else {
		o->encap.src6 = a;
		o->encap.has_src6 = true;
	}
}

static int
dump(const struct opts *o)
{
	struct lb_hc_pkt p = {
	        .encap = &o->encap,
	        .encap_type = o->encap_type,
	        .af = o->vip_af,
	        .be_af = o->be_af,
	        .be_addr = o->backend,
	        .src = o->src,
	        .vip = o->vip,
	        .sport = (uint16_t)o->sport,
	        .dport = (uint16_t)o->dport,
	        .seq = (uint32_t)o->seq,
	        .mss = (uint16_t)o->mss,
	        .flow_hash = o->flow_hash,
	        .payload = o->payload,
	        .payload_len = o->payload_len,
	};
	uint8_t buf[LB_HC_PKT_MAX_LEN];
	int n;

	p.kind = strcmp(o->kind, "syn") == 0   ? LB_HC_PKT_SYN
	         : strcmp(o->kind, "rst") == 0 ? LB_HC_PKT_RST
	                                       : LB_HC_PKT_UDP;
	n = lb_hc_pkt_build(&p, o->src_mac, buf, sizeof(buf));
	if (n < 0) {
		fprintf(stderr, "lb_hc_pkt_build: %s\n", strerror(-n));
		return 1;
	}
	for (int i = 0; i < n; i++)
		printf("%02x", buf[i]);
	printf("\n");
	return 0;
}

static int
probe(const struct opts *o)
{
	struct lb_health_encap_conf conf = {.encap = o->encap};
	struct lb_health_conf hc = {0};
	static struct lb_probe pr[MAX_PROBES];
	const struct lb_probe_transport *t;
	struct lb_health_encap *h;
	uint64_t deadline;
	unsigned int left = 0;
	int efd, rc;

	if (o->has_src) {
		if (o->src_af == LB_AF_INET) {
			conf.src4 = o->src;
			conf.has_src4 = true;
		} else {
			conf.src6 = o->src;
			conf.has_src6 = true;
		}
	}
	rc = lb_health_encap_open(&h, &conf);
	if (rc < 0) {
		fprintf(stderr, "lb_health_encap_open: %s\n", strerror(-rc));
		return 1;
	}
	t = lb_health_encap_transport(h);
	hc.type = strcmp(o->type, "tcp") == 0   ? LB_HEALTH_TYPE_TCP
	          : strcmp(o->type, "udp") == 0 ? LB_HEALTH_TYPE_UDP
	                                        : LB_HEALTH_TYPE_HTTP;
	hc.via = LB_HEALTH_VIA_ENCAP;
	hc.port = (uint16_t)o->dport;
	hc.timeout_ms = (uint32_t)o->timeout_ms;
	memcpy(hc.request, o->payload, o->payload_len);
	hc.request_len = o->payload_len;
	memcpy(hc.response, o->expect, o->expect_len);
	hc.response_len = o->expect_len;
	efd = epoll_create1(EPOLL_CLOEXEC);
	if (efd < 0)
		return 1;
	for (unsigned long i = 0; i < o->count; i++) {
		struct lb_probe *p = &pr[i];
		enum lb_probe_status s;

		p->conf = &hc;
		p->af = o->be_af;
		p->addr = o->backend;
		p->port = (uint16_t)o->dport;
		p->vip_af = o->vip_af;
		p->vip_addr = o->vip;
		p->vip_port = (uint16_t)o->dport;
		p->vip_proto = hc.type == LB_HEALTH_TYPE_UDP ? IPPROTO_UDP : IPPROTO_TCP;
		p->vip_encap = o->encap_type;
		s = t->start(t->arg, p);
		if (s == LB_PROBE_PENDING && p->fd >= 0) {
			struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};

			if (epoll_ctl(efd, EPOLL_CTL_ADD, p->fd, &ev) == 0) {
				left++;
				continue;
			}
			s = LB_PROBE_FAIL;
			snprintf(p->why, sizeof(p->why), "epoll_ctl: %s", strerror(errno));
		}
		printf("{\"probe\": %lu, \"result\": \"%s\", \"why\": \"%s\"}\n", i,
		       s == LB_PROBE_OK ? "ok" : "fail", s == LB_PROBE_OK ? "" : p->why);
		t->stop(t->arg, p);
		p->conf = NULL;
	}
	deadline = lb_now_ms() + o->timeout_ms;
	while (left > 0) {
		struct epoll_event evs[MAX_PROBES];
		uint64_t now = lb_now_ms();
		int n = now >= deadline ? 0
		                        : epoll_wait(efd, evs, MAX_PROBES, (int)(deadline - now));

		if (n <= 0)
			break;
		for (int k = 0; k < n; k++) {
			struct lb_probe *p = &pr[evs[k].data.u64];
			enum lb_probe_status s;

			if (p->conf == NULL)
				continue;
			s = t->poll(t->arg, p, LB_LOOP_READABLE);
			if (s == LB_PROBE_PENDING)
				continue;
			printf("{\"probe\": %lu, \"result\": \"%s\", \"why\": \"%s\"}\n",
			       (unsigned long)evs[k].data.u64, s == LB_PROBE_OK ? "ok" : "fail",
			       s == LB_PROBE_OK ? "" : p->why);
			epoll_ctl(efd, EPOLL_CTL_DEL, p->fd, NULL);
			t->stop(t->arg, p);
			p->conf = NULL;
			left--;
		}
	}
	for (unsigned long i = 0; i < o->count; i++) {
		if (pr[i].conf == NULL)
			continue;
		printf("{\"probe\": %lu, \"result\": \"timeout\", \"why\": \"no answer in %lu "
		       "ms\"}\n",
		       i, o->timeout_ms);
		t->stop(t->arg, &pr[i]);
	}
	struct lb_health_encap_stats st;

	lb_health_encap_stats_get(h, &st);
	printf("{\"stats\": {\"started\": %llu, \"ok\": %llu, \"refused\": %llu, \"mismatches\": "
	       "%llu, \"send_errors\": %llu, \"ignored\": %llu, \"unsupported\": %llu}}\n",
	       (unsigned long long)st.started, (unsigned long long)st.ok,
	       (unsigned long long)st.refused, (unsigned long long)st.mismatches,
	       (unsigned long long)st.send_errors, (unsigned long long)st.ignored,
	       (unsigned long long)st.unsupported);
	lb_health_encap_close(h);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
	        "usage: health_encap_tool dump|probe --outer-src A [--outer-src A6] --vip A "
	        "--backend A --encap ipip|gue [--src A] [--gue-port N] [--port N]\n"
	        "  dump:  --kind syn|rst|udp --sport N --seq N --mss N --flow-hash N "
	        "[--payload HEX] [--nh-mac M] [--src-mac M]\n"
	        "  probe: --type tcp|udp|http [--request HEX] [--expect HEX] --timeout-ms N "
	        "[--count N]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	        {"outer-src", 1, 0, 'O'},  {"src", 1, 0, 's'},
	        {"vip", 1, 0, 'v'},        {"backend", 1, 0, 'b'},
	        {"encap", 1, 0, 'e'},      {"gue-port", 1, 0, 'g'},
	        {"port", 1, 0, 'p'},       {"kind", 1, 0, 'k'},
	        {"sport", 1, 0, 'S'},      {"seq", 1, 0, 'q'},
	        {"mss", 1, 0, 'm'},        {"flow-hash", 1, 0, 'f'},
	        {"payload", 1, 0, 'P'},    {"request", 1, 0, 'P'},
	        {"expect", 1, 0, 'x'},     {"nh-mac", 1, 0, 'n'},
	        {"src-mac", 1, 0, 'M'},    {"type", 1, 0, 't'},
	        {"timeout-ms", 1, 0, 'T'}, {"count", 1, 0, 'c'},
	        {"mtu", 1, 0, 'u'},        {0, 0, 0, 0},
	};
	struct opts o = {.kind = "syn", .type = "tcp", .timeout_ms = 1000, .count = 1};
	const char *mode;
	int c;

	if (argc < 2)
		usage();
	mode = argv[1];
	o.encap.gue_port = htons(6080);
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'O':
			set_outer(&o, optarg);
			break;
		case 's':
			parse_ip(optarg, &o.src, &o.src_af);
			o.has_src = true;
			break;
		case 'v':
			parse_ip(optarg, &o.vip, &o.vip_af);
			break;
		case 'b':
			parse_ip(optarg, &o.backend, &o.be_af);
			break;
		case 'e':
			o.encap_type = strcmp(optarg, "gue") == 0 ? LB_ENCAP_GUE : LB_ENCAP_IPIP;
			break;
		case 'g':
			o.encap.gue_port = htons((uint16_t)strtoul(optarg, NULL, 0));
			break;
		case 'p':
			o.dport = strtoul(optarg, NULL, 0);
			break;
		case 'k':
			o.kind = optarg;
			break;
		case 'S':
			o.sport = strtoul(optarg, NULL, 0);
			break;
		case 'q':
			o.seq = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			o.mss = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			o.flow_hash = strtoull(optarg, NULL, 0);
			break;
		case 'P':
			o.payload_len = parse_hex(optarg, o.payload, sizeof(o.payload));
			break;
		case 'x':
			o.expect_len = parse_hex(optarg, o.expect, sizeof(o.expect));
			break;
		case 'n':
			parse_mac(optarg, o.encap.next_hop_mac);
			break;
		case 'M':
			parse_mac(optarg, o.src_mac);
			break;
		case 't':
			o.type = optarg;
			break;
		case 'T':
			o.timeout_ms = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o.count = strtoul(optarg, NULL, 0);
			break;
		case 'u':
			o.encap.mtu = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (o.count == 0 || o.count > MAX_PROBES)
		usage();
	if (!o.has_src) {
		o.src = o.vip_af == LB_AF_INET ? o.encap.src4 : o.encap.src6;
		o.src_af = o.vip_af;
	}
	if (strcmp(mode, "dump") == 0)
		return dump(&o);
	if (strcmp(mode, "probe") == 0)
		return probe(&o);
	usage();
}
