/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "via encap" probe transport. tcp: SYN encapsulated to the backend, the
 * SYN-ACK (up) or RST (refused) read on a raw TCP socket bound to the inner
 * source and connected to the VIP, whose filter keeps only the probe's port;
 * an encapsulated RST then clears the backend's half-open connection. udp: the
 * request encapsulated, the answer read on a UDP socket bound to the inner
 * source and connected to VIP:port. The runner enforces the timeout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "dataplane/encap.h"
#include "control/health/health_encap.h"
#include "control/health/health_encap_pkt.h"
#include "control/base/loop.h"

#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10
#define READS_PER_POLL 16

struct lb_health_encap {
	struct lb_health_encap_conf conf;
	int send4, send6; /* raw IPPROTO_RAW sockets (header included), -1 if absent */
	struct lb_probe_transport t;
	struct lb_health_encap_stats st;
};

/* One probe's state (lb_probe.priv). */
struct encap_probe {
	int reserve_fd; /* tcp: the bound socket that holds lport; -1 for udp */
	uint32_t isn;
	struct lb_encap_conf encap; /* the configuration the probe started with */
	struct lb_hc_pkt pkt;       /* the probe's packet: the RST reuses it */
};

static int
family(uint8_t af)
{
	return af == LB_AF_INET ? AF_INET : AF_INET6;
}

static socklen_t
sa_make(struct sockaddr_storage *ss, uint8_t af, const union lb_ip *a, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (af == LB_AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, a->b, 4);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	memcpy(&s6->sin6_addr, a->b, 16);
	return sizeof(*s6);
}

static uint16_t
sa_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
	                                      : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

static int
check_conf(const struct lb_health_encap_conf *c)
{
	return c->encap.has_src4 || c->encap.has_src6 ? 0 : -EINVAL;
}

static const union lb_ip *
inner_src(const struct lb_health_encap *h, uint8_t af)
{
	if (af == LB_AF_INET)
		return h->conf.has_src4         ? &h->conf.src4
		       : h->conf.encap.has_src4 ? &h->conf.encap.src4
		                                : NULL;
	return h->conf.has_src6         ? &h->conf.src6
	       : h->conf.encap.has_src6 ? &h->conf.encap.src6
	                                : NULL;
}

static enum lb_probe_status
fail(struct lb_probe *p, const char *what, int err)
{
	if (err)
		snprintf(p->why, sizeof(p->why), "%s: %s", what, strerror(err));
	else
		snprintf(p->why, sizeof(p->why), "%s", what);
	return LB_PROBE_FAIL;
}

static uint32_t
random32(void)
{
	static uint32_t fallback = 0x9E3779B9u;
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	fallback = fallback * 1664525u + 1013904223u;
	return fallback;
}

/* Encapsulate and send the probe's current packet; 0 or -errno. */
static int
send_pkt(struct lb_health_encap *h, const struct lb_hc_pkt *pkt)
{
	static const uint8_t no_mac[6];
	uint8_t frame[LB_HC_PKT_MAX_LEN];
	struct sockaddr_storage ss;
	socklen_t sl;
	int len, fd = pkt->be_af == LB_AF_INET ? h->send4 : h->send6;

	if (fd < 0)
		return -EAFNOSUPPORT;
	len = lb_hc_pkt_build(pkt, no_mac, frame, sizeof(frame));
	if (len < 0)
		return len;
	/* The kernel routes it and writes the Ethernet header: from the outer IP header on. */
	sl = sa_make(&ss, pkt->be_af, &pkt->be_addr, 0);
	if (sendto(fd, frame + LB_ETH_HLEN, (size_t)len - LB_ETH_HLEN, MSG_DONTWAIT,
	           (struct sockaddr *)&ss, sl) < 0) {
		h->st.send_errors++;
		return -errno;
	}
	return 0;
}

/* Close fd, keeping errno: -errno. */
static int
close_err(int fd)
{
	int e = errno;

	close(fd);
	return -e;
}

/* A socket bound to the inner source (port 0: the kernel picks), its port in *port. */
static int
bound_socket(int fam, int type, int proto, const union lb_ip *src, uint8_t af, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sa_make(&ss, af, src, 0);
	int fd = socket(fam, type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		return close_err(fd);
	if (port != NULL) {
		sl = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
			return close_err(fd);
		*port = sa_port(&ss);
	}
	return fd;
}

/*
 * The raw TCP socket's filter: TCP destination port lport with SYN or RST
 * set (the IPv4 raw socket sees the IP header first, the IPv6 one does not).
 */
static int
attach_filter(int fd, uint8_t af, uint16_t lport)
{
	struct sock_filter code[] = {
	        af == LB_AF_INET ? (struct sock_filter)BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0)
	                         : (struct sock_filter)BPF_STMT(BPF_LDX | BPF_IMM, 0),
	        BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),
	        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, lport, 0, 3),
	        BPF_STMT(BPF_LD | BPF_B | BPF_IND, 13),
	        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, TCP_SYN | TCP_RST, 0, 1),
	        BPF_STMT(BPF_RET | BPF_K, 0xFFFF),
	        BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

static enum lb_probe_status
start_tcp(struct lb_probe *p, struct encap_probe *ep)
{
	int fam = family(p->vip_af), fd, rc;
	struct sockaddr_storage ss;
	socklen_t sl;

	fd = bound_socket(fam, SOCK_STREAM, 0, &ep->pkt.src, p->vip_af, &ep->pkt.sport);
	if (fd < 0)
		return fail(p, "reserve port", -fd);
	ep->reserve_fd = fd;
	fd = socket(fam, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return fail(p, "raw tcp socket", errno);
	p->fd = fd;
	rc = attach_filter(fd, p->vip_af, ep->pkt.sport);
	if (rc < 0)
		return fail(p, "filter", -rc);
	sl = sa_make(&ss, p->vip_af, &ep->pkt.src, 0);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		return fail(p, "bind", errno);
	sl = sa_make(&ss, p->vip_af, &ep->pkt.vip, 0);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
		return fail(p, "connect", errno);
	ep->isn = random32();
	ep->pkt.kind = LB_HC_PKT_SYN;
	ep->pkt.seq = ep->isn;
	return LB_PROBE_PENDING;
}

static enum lb_probe_status
start_udp(struct lb_probe *p, struct encap_probe *ep)
{
	const struct lb_health_conf *c = p->conf;
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd;

	if (c->request_len > LB_HC_PKT_MAX_PAYLOAD || c->request_len > sizeof(c->request))
		return fail(p, "request too long", 0);
	fd = bound_socket(family(p->vip_af), SOCK_DGRAM, 0, &ep->pkt.src, p->vip_af, NULL);
	if (fd < 0)
		return fail(p, "udp socket", -fd);
	p->fd = fd;
	/* Connected: only VIP:port's answers (and ICMP errors) reach it. */
	sl = sa_make(&ss, p->vip_af, &ep->pkt.vip, ep->pkt.dport);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
		return fail(p, "connect", errno);
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return fail(p, "getsockname", errno);
	ep->pkt.sport = sa_port(&ss);
	ep->pkt.kind = LB_HC_PKT_UDP;
	ep->pkt.payload = c->request;
	ep->pkt.payload_len = c->request_len;
	return LB_PROBE_PENDING;
}

static enum lb_probe_status
encap_start(void *arg, struct lb_probe *p)
{
	struct lb_health_encap *h = arg;
	const union lb_ip *src = inner_src(h, p->vip_af);
	struct encap_probe *ep;
	enum lb_probe_status s;
	uint16_t mtu;
	int rc;

	p->fd = -1;
	p->events = 0;
	p->priv = NULL;
	if (p->conf->type == LB_HEALTH_TYPE_HTTP) {
		h->st.unsupported++;
		return fail(p, "http is not offered via encap", 0);
	}
	if (p->conf->type != LB_HEALTH_TYPE_TCP && p->conf->type != LB_HEALTH_TYPE_UDP)
		return fail(p, "probe type not offered via encap", 0);
	if (src == NULL || (p->af == LB_AF_INET ? h->send4 : h->send6) < 0)
		return fail(p, "no source address or socket for this family", 0);
	ep = calloc(1, sizeof(*ep));
	if (ep == NULL)
		return fail(p, "out of memory", 0);
	p->priv = ep;
	ep->reserve_fd = -1;
	ep->encap = h->conf.encap;
	ep->pkt.encap = &ep->encap;
	ep->pkt.encap_type = p->vip_encap;
	ep->pkt.af = p->vip_af;
	ep->pkt.be_af = p->af;
	ep->pkt.be_addr = p->addr;
	ep->pkt.src = *src;
	ep->pkt.vip = p->vip_addr;
	ep->pkt.dport = p->port;
	mtu = h->conf.encap.mtu ? h->conf.encap.mtu : 1500;
	ep->pkt.mss = (uint16_t)(mtu - lb_encap_overhead(p->af, p->vip_encap) -
	                         (p->vip_af == LB_AF_INET ? LB_IP4_HLEN : LB_IP6_HLEN) - 20);
	s = p->conf->type == LB_HEALTH_TYPE_TCP ? start_tcp(p, ep) : start_udp(p, ep);
	if (s != LB_PROBE_PENDING)
		return s;
	ep->pkt.flow_hash = lb_hc_pkt_flow_hash(&h->conf.hkey, &ep->pkt);
	rc = send_pkt(h, &ep->pkt);
	if (rc < 0)
		return fail(p, "send", -rc);
	h->st.started++;
	p->events = LB_LOOP_READABLE;
	return LB_PROBE_PENDING;
}

static uint32_t
get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* One packet read from the raw TCP socket: the probe's verdict, or PENDING. */
static enum lb_probe_status
tcp_packet(struct lb_health_encap *h, struct lb_probe *p, struct encap_probe *ep, const uint8_t *b,
           size_t n, const struct sockaddr_storage *from)
{
	const uint8_t *th = b;
	uint16_t sport, dport;
	uint8_t flags;

	if (p->vip_af == LB_AF_INET) {
		size_t ihl = n ? (size_t)(b[0] & 0xF) * 4 : 0;

		if (n < 20 || ihl < 20 || n < ihl + 20 || b[9] != 6 ||
		    memcmp(b + 12, ep->pkt.vip.b, 4) != 0 || memcmp(b + 16, ep->pkt.src.b, 4) != 0)
			goto ignore;
		th = b + ihl;
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)from;

		if (n < 20 || from->ss_family != AF_INET6 ||
		    memcmp(&s6->sin6_addr, ep->pkt.vip.b, 16) != 0)
			goto ignore;
	}
	sport = (uint16_t)(th[0] << 8 | th[1]);
	dport = (uint16_t)(th[2] << 8 | th[3]);
	flags = th[13];
	if (sport != ep->pkt.dport || dport != ep->pkt.sport || !(flags & TCP_ACK) ||
	    get32(th + 8) != ep->isn + 1)
		goto ignore;
	if (flags & TCP_RST) {
		h->st.refused++;
		return fail(p, "refused (RST)", 0);
	}
	if ((flags & TCP_SYN) == 0)
		goto ignore;
	/* Up. Close the backend's half-open connection the way a client would. */
	ep->pkt.kind = LB_HC_PKT_RST;
	ep->pkt.seq = ep->isn + 1;
	(void)send_pkt(h, &ep->pkt);
	h->st.ok++;
	return LB_PROBE_OK;
ignore:
	h->st.ignored++;
	return LB_PROBE_PENDING;
}

static enum lb_probe_status
poll_tcp(struct lb_health_encap *h, struct lb_probe *p, struct encap_probe *ep)
{
	uint8_t b[128];

	for (int i = 0; i < READS_PER_POLL; i++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n =
		        recvfrom(p->fd, b, sizeof(b), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		enum lb_probe_status s;

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return LB_PROBE_PENDING;
			return fail(p, "recv", errno);
		}
		s = tcp_packet(h, p, ep, b, (size_t)n, &from);
		if (s != LB_PROBE_PENDING)
			return s;
	}
	return LB_PROBE_PENDING;
}

static enum lb_probe_status
poll_udp(struct lb_health_encap *h, struct lb_probe *p)
{
	const struct lb_health_conf *c = p->conf;
	uint8_t b[LB_HEALTH_BYTES_MAX];
	ssize_t n = recv(p->fd, b, sizeof(b), MSG_DONTWAIT);

	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return LB_PROBE_PENDING;
		if (errno == ECONNREFUSED) {
			h->st.refused++;
			return fail(p, "refused (ICMP port unreachable)", 0);
		}
		return fail(p, "recv", errno);
	}
	if ((size_t)n < c->response_len || memcmp(b, c->response, c->response_len) != 0) {
		h->st.mismatches++;
		return fail(p, "unexpected answer", 0);
	}
	h->st.ok++;
	return LB_PROBE_OK;
}

static enum lb_probe_status
encap_poll(void *arg, struct lb_probe *p, uint32_t events)
{
	struct lb_health_encap *h = arg;
	struct encap_probe *ep = p->priv;

	(void)events;
	if (ep == NULL || p->fd < 0)
		return fail(p, "not started", 0);
	return p->conf->type == LB_HEALTH_TYPE_TCP ? poll_tcp(h, p, ep) : poll_udp(h, p);
}

static void
encap_stop(void *arg, struct lb_probe *p)
{
	struct encap_probe *ep = p->priv;

	(void)arg;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (ep != NULL) {
		if (ep->reserve_fd >= 0)
			close(ep->reserve_fd);
		free(ep);
	}
	p->priv = NULL;
}

int
lb_health_encap_open(struct lb_health_encap **out, const struct lb_health_encap_conf *conf)
{
	struct lb_health_encap *h;
	int err = 0;

	*out = NULL;
	if (check_conf(conf) < 0)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->conf = *conf;
	h->send4 = h->send6 = -1;
	/* IPPROTO_RAW: the header is included (IP_HDRINCL; for IPv6 as well), nothing is received.
	 */
	if (conf->encap.has_src4) {
		h->send4 = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_RAW);
		if (h->send4 < 0)
			err = errno;
	}
	if (conf->encap.has_src6) {
		h->send6 = socket(AF_INET6, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_RAW);
		if (h->send6 < 0)
			err = errno;
	}
	if (h->send4 < 0 && h->send6 < 0) {
		free(h);
		return -(err ? err : EINVAL);
	}
	h->t.name = "encap";
	h->t.arg = h;
	h->t.start = encap_start;
	h->t.poll = encap_poll;
	h->t.stop = encap_stop;
	*out = h;
	return 0;
}

int
lb_health_encap_set_conf(struct lb_health_encap *h, const struct lb_health_encap_conf *conf)
{
	if (check_conf(conf) < 0)
		return -EINVAL;
	h->conf = *conf;
	return 0;
}

const struct lb_probe_transport *
lb_health_encap_transport(struct lb_health_encap *h)
{
	return &h->t;
}

void
lb_health_encap_stats_get(const struct lb_health_encap *h, struct lb_health_encap_stats *out)
{
	*out = h->st;
}

void
lb_health_encap_close(struct lb_health_encap *h)
{
	if (h == NULL)
		return;
	if (h->send4 >= 0)
		close(h->send4);
	if (h->send6 >= 0)
		close(h->send6);
	free(h);
}
