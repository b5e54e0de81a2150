/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the packet path: one input is one Ethernet frame.
 *
 * 1. The parser on the raw bytes: lb_parse() on the input and on a heap copy
 *    of exactly len bytes (ASan catches any read past the frame), and
 *    lb_parse_frame() with the frame split in two (first segment length from
 *    the first input byte) on a heap copy of only the first segment. Checks:
 *    the same answer for the same bytes, a split parse that succeeds agrees
 *    with the whole-frame parse, and the result is sane (known reason, lengths
 *    inside the frame, zero padding in the key).
 * 2. The pipeline against fixed snapshots (built once from embedded JSON
 *    configurations through lb_config_from_json + lb_snapshot_build): a burst
 *    of four copies of the frame (miss then hits in the flow table; the 4-way
 *    hash), the frame alone from an empty flow table (the scalar hash; the
 *    first packet of both must come out byte for byte the same), then the
 *    frame as a chain split at the same point, against another snapshot and
 *    sometimes with little headroom. After each burst: every mbuf comes
 *    out exactly once, the counters conserve packets (rx = forwarded +
 *    icmp_sent + exception + drops), a forwarded packet is well-formed outer
 *    headers around exactly the inner IP packet of the input, an ICMP too-big
 *    is well-formed with valid checksums, carries the frame's VLAN tags and
 *    quotes the input, an exception
 *    packet is untouched, and once freed the mempool is full again.
 *
 * EAL runs once per process, without hugepages or PCI. The flow table is
 * cleared for every input so that an input always does the same thing.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "control/model/config.h"
#include "dataplane/encap.h"
#include "dataplane/flow_table.h"
#include "fuzz.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline.h"
#include "control/build/snapshot_build.h"

#define POOL_SIZE 255
#define MAX_FRAME 9216 /* jumbo; longer inputs are cut */
#define FLOW_CAPACITY 256
#define NOW 1000u
#define IDLE 100000u
#define N_SNAP 3
#define LINEAR_MAX (MAX_FRAME + 128)

/*
 * VIPs shared by the configurations: v4 and v6, TCP and UDP, IPIP and GUE,
 * port 0, every key mode, backends of the other family, draining, down and
 * zero-weight members, VIPs with no usable backend.
 */
#define VIPS_DUAL                                                                                  \
	"{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["       \
	"{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\", \"state\": \"draining\"},"       \
	"{\"address\": \"10.1.0.3\", \"weight\": 0}, {\"address\": \"10.1.0.4\", \"state\": "      \
	"\"down\"}, {\"address\": \"fd01::9\", \"weight\": 2, \"name\": \"v6-member\"}]},"         \
	"{\"address\": \"192.0.2.10\", \"port\": 0, \"protocol\": \"udp\", \"encap\": \"gue\", "   \
	"\"key\": \"src_ip\", \"backends\": [{\"address\": \"10.2.0.1\"}, {\"address\": "          \
	"\"10.2.0.2\"}, {\"address\": \"fd02::1\"}]},"                                             \
	"{\"address\": \"192.0.2.10\", \"port\": 443, \"protocol\": \"tcp\", \"encap\": \"gue\", " \
	"\"key\": \"src_ip_dport\", \"backends\": [{\"address\": \"10.3.0.1\", \"weight\": 3}, "   \
	"{\"address\": \"fd03::1\"}]},"                                                            \
	"{\"address\": \"192.0.2.30\", \"port\": 80, \"protocol\": \"tcp\"},"                      \
	"{\"address\": \"192.0.2.40\", \"port\": 53, \"protocol\": \"udp\", \"backends\": ["       \
	"{\"address\": \"10.6.0.1\", \"state\": \"down\"}]},"                                      \
	"{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\", \"encap\": "        \
	"\"gue\", \"backends\": [{\"address\": \"fd01::1\"}, {\"address\": \"fd01::2\"}, "         \
	"{\"address\": \"10.4.0.1\"}]},"                                                           \
	"{\"address\": \"2001:db8::10\", \"port\": 0, \"protocol\": \"udp\", \"key\": "            \
	"\"src_ip\", \"backends\": [{\"address\": \"fd05::1\"}, {\"address\": \"10.5.0.1\"}]},"    \
	"{\"address\": \"2001:db8::20\", \"port\": 80, \"protocol\": \"tcp\"},"                    \
	"{\"address\": \"2001:db8::10\", \"port\": 80, \"protocol\": \"tcp\", \"key\": "           \
	"\"src_ip_dport\", \"backends\": [{\"address\": \"fd06::1\"}]}"

/* Only an IPv4 outer source: every backend is IPv4 (6in4 for the v6 VIPs). */
#define VIPS_V4_ONLY                                                                               \
	"{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", \"encap\": \"gue\", "  \
	"\"backends\": [{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"}]},"               \
	"{\"address\": \"192.0.2.10\", \"port\": 0, \"protocol\": \"udp\", \"backends\": ["        \
	"{\"address\": \"10.2.0.1\"}]},"                                                           \
	"{\"address\": \"192.0.2.10\", \"port\": 443, \"protocol\": \"tcp\", \"backends\": []},"   \
	"{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\", \"backends\": ["    \
	"{\"address\": \"10.4.0.1\"}, {\"address\": \"10.4.0.2\"}]},"                              \
	"{\"address\": \"2001:db8::10\", \"port\": 0, \"protocol\": \"udp\", \"encap\": \"gue\", " \
	"\"backends\": [{\"address\": \"10.5.0.1\"}]}"

static const char *const g_config_json[N_SNAP] = {
        /* Low MTU, ICMP for too big. */
        "{\"encap\": {\"source_v4\": \"10.0.0.1\", \"source_v6\": \"fd00::1\", \"next_hop_mac\": "
        "\"02:00:00:00:00:01\", \"mtu\": 1280}, \"maglev\": {\"table_size\": 1031, \"seed\": "
        "\"fuzz-a\"}, \"vips\": [" VIPS_DUAL "]}",
        /* Ethernet MTU, too big dropped, another GUE port, the default table. */
        "{\"encap\": {\"source_v4\": \"10.0.0.1\", \"source_v6\": \"fd00::1\", \"next_hop_mac\": "
        "\"02:00:00:00:00:02\", \"mtu\": 1500, \"gue_port\": 5555, \"too_big\": \"drop\"}, "
        "\"maglev\": {\"seed\": \"fuzz-b\"}, \"vips\": [" VIPS_DUAL "]}",
        /* No IPv6 source: an IPv6 packet too big cannot be answered. */
        "{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": \"02:00:00:00:00:03\", "
        "\"mtu\": 1280}, \"maglev\": {\"table_size\": 13, \"seed\": \"fuzz-c\"}, \"vips\": "
        "[" VIPS_V4_ONLY "]}",
};

static const uint8_t g_port_mac[6] = {0x02, 0x1b, 0, 0, 0, 0x01};

static struct rte_mempool *g_pool;
static struct lb_snapshot *g_snap[N_SNAP];
static struct lb_worker *g_w;
static uint8_t g_linear[LINEAR_MAX];

/* What became of the first packet of a burst: for comparing two runs. */
/* FATE_FRAG: sent as outer fragments (its own mbuf freed; compared by fate only). */
enum fate { FATE_FWD, FATE_BACK, FATE_EXC, FATE_DROP, FATE_FRAG };
struct outcome {
	enum fate fate;
	uint32_t len;
	uint8_t bytes[LINEAR_MAX];
};
static struct outcome g_first[2];

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Ones'-complement sum of a byte range, folded (0xFFFF for a valid checksum). */
static uint32_t
sum16(const uint8_t *p, uint32_t n, uint32_t sum)
{
	for (uint32_t i = 0; i + 1 < n; i += 2)
		sum += rd16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

/* Sum of the IPv6 pseudo-header for an upper-layer packet of len bytes. */
static uint32_t
ip6_pseudo(const uint8_t *ip6, uint32_t len, uint8_t nh)
{
	uint32_t sum = sum16(ip6 + 8, 32, 0);

	return sum + (len >> 16) + (len & 0xFFFF) + nh;
}

/*
 * EAL leaves its runtime directory (/var/run/dpdk/fuzz-<pid>: config, fbarray
 * files, mp socket, about 2 MB) behind; every run has its own, so remove it.
 */
static void
eal_fini(void)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	if (strstr(dir, "/fuzz-") == NULL)
		return;
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX + 256];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static void
init_once(void)
{
	static bool done;
	char prefix[64], err[256];
	char *argv[] = {"fuzz_packet",
	                "--no-huge",
	                "-m",
	                "128",
	                "--no-pci",
	                "--no-telemetry",
	                "--file-prefix",
	                prefix,
	                "-l",
	                "0",
	                "--log-level",
	                "0",
	                NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	cpu_set_t cpus;
	bool have_cpus;

	if (done)
		return;
	done = true;
	snprintf(prefix, sizeof(prefix), "fuzz-%d", (int)getpid());
	/* EAL pins this thread to lcore 0; give it back its CPUs afterwards. */
	have_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "fuzz_packet: rte_eal_init: %s\n", rte_strerror(rte_errno));
		abort();
	}
	atexit(eal_fini);
	if (have_cpus)
		sched_setaffinity(0, sizeof(cpus), &cpus);
	/* No per-lcore cache: the free count is exact after every input. */
	g_pool = rte_pktmbuf_pool_create("fuzz_packet", POOL_SIZE, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	                                 SOCKET_ID_ANY);
	if (g_pool == NULL) {
		fprintf(stderr, "fuzz_packet: mbuf pool: %s\n", rte_strerror(rte_errno));
		abort();
	}
	for (int i = 0; i < N_SNAP; i++) {
		json_error_t je;
		json_t *root = json_loads(g_config_json[i], 0, &je);
		struct lb_config *cfg;

		if (root == NULL) {
			fprintf(stderr, "fuzz_packet: config %d: %s\n", i, je.text);
			abort();
		}
		cfg = lb_config_from_json(root, err, sizeof(err));
		json_decref(root);
		if (cfg == NULL) {
			fprintf(stderr, "fuzz_packet: config %d: %s\n", i, err);
			abort();
		}
		g_snap[i] = lb_snapshot_build(cfg, (uint64_t)i + 1, err, sizeof(err));
		lb_config_free(cfg);
		if (g_snap[i] == NULL) {
			fprintf(stderr, "fuzz_packet: snapshot %d: %s\n", i, err);
			abort();
		}
	}
	/* Never freed: they live as long as the process, like a worker's. */
	g_w = aligned_alloc(64, sizeof(*g_w));
	FUZZ_CHECK(g_w != NULL, "out of memory");
	memset(g_w, 0, sizeof(*g_w));
	g_w->ft = lb_flow_table_create(FLOW_CAPACITY);
	g_w->cnt = aligned_alloc(64, sizeof(*g_w->cnt));
	FUZZ_CHECK(g_w->ft != NULL && g_w->cnt != NULL, "out of memory");
	memset(g_w->cnt, 0, sizeof(*g_w->cnt));
	g_w->now = NOW;
	g_w->tcp_idle = IDLE;
	g_w->udp_idle = IDLE;
	memcpy(g_w->src_mac, g_port_mac, 6);
	memcpy(g_w->rx_mac, g_port_mac, 6); /* one-armed: replies leave with the same MAC */
}

/* --- parser ---------------------------------------------------------------- */

static void
check_info(int rc, const struct lb_pkt_info *info, uint32_t frame_len)
{
	static const uint8_t zero[12];
	const struct lb_flow_key *k = &info->key;

	if (rc < 0) {
		FUZZ_CHECK(rc == LB_PARSE_NOT_LB, "lb_parse returned %d", rc);
		return;
	}
	if (rc > 0) {
		/* An ICMP error whose quote names no flow is NOT_LB, never a drop. */
		FUZZ_CHECK(rc <= LB_DROP_L4_TRUNC, "lb_parse returned reason %d", rc);
		return;
	}
	FUZZ_CHECK(k->af == LB_AF_INET || k->af == LB_AF_INET6, "af %u", k->af);
	FUZZ_CHECK(k->proto == IPPROTO_TCP || k->proto == IPPROTO_UDP, "proto %u", k->proto);
	FUZZ_CHECK(info->l2_len == 14 || info->l2_len == 18 || info->l2_len == 22, "l2_len %u",
	           info->l2_len);
	FUZZ_CHECK((uint32_t)info->l2_len + info->l3_len <= frame_len,
	           "l2_len %u + l3_len %u past a %u-byte frame", info->l2_len, info->l3_len,
	           frame_len);
	FUZZ_CHECK(info->l3_len >= (k->af == LB_AF_INET ? 20 : 40), "l3_len %u", info->l3_len);
	FUZZ_CHECK(k->pad[0] == 0 && k->pad[1] == 0 && info->pad == 0, "padding not zero");
	FUZZ_CHECK((info->flags &
	            ~(LB_PKT_FRAGMENT | LB_PKT_ICMP_ERROR | LB_PKT_DF | LB_PKT_FRAG_LATER)) == 0,
	           "flags %#x", info->flags);
	/* A later fragment is a fragment, of the packet itself (not of a quote). */
	if (info->flags & LB_PKT_FRAG_LATER)
		FUZZ_CHECK((info->flags & LB_PKT_FRAGMENT) && !(info->flags & LB_PKT_ICMP_ERROR),
		           "flags %#x", info->flags);
	if (k->af == LB_AF_INET)
		FUZZ_CHECK(memcmp(k->src.b + 4, zero, 12) == 0 &&
		                   memcmp(k->dst.b + 4, zero, 12) == 0,
		           "IPv4 key with bytes beyond the address");
	if (info->flags & LB_PKT_FRAGMENT)
		FUZZ_CHECK(k->sport == 0 && k->dport == 0, "fragment keyed with ports");
	if (k->af == LB_AF_INET6)
		FUZZ_CHECK(!(info->flags & LB_PKT_DF), "DF on IPv6");
}

/* The split point of a two-segment frame: 1..len, chosen by the first byte. */
static uint32_t
split_of(const uint8_t *data, uint32_t len)
{
	if (len < 2)
		return len;
	return 1 + (uint32_t)data[0] * (len - 1) / 255;
}

static int
run_parser(const uint8_t *data, uint32_t len, uint32_t split, struct lb_pkt_info *info)
{
	struct lb_pkt_info i2, i3;
	uint8_t *copy, *seg;
	int rc, rc2, rc3;

	rc = lb_parse(data, len, info);
	check_info(rc, info, len);

	copy = malloc(len ? len : 1);
	FUZZ_CHECK(copy != NULL, "out of memory");
	memcpy(copy, data, len);
	rc2 = lb_parse(copy, len, &i2);
	FUZZ_CHECK(rc2 == rc && (rc != LB_PARSE_OK || memcmp(info, &i2, sizeof(i2)) == 0),
	           "same bytes, different answer (%d, %d)", rc, rc2);
	free(copy);

	/* Only the first segment is readable: a heap block of exactly split bytes. */
	seg = malloc(split ? split : 1);
	FUZZ_CHECK(seg != NULL, "out of memory");
	memcpy(seg, data, split);
	rc3 = lb_parse_frame(seg, split, len, &i3);
	check_info(rc3, &i3, len);
	FUZZ_CHECK(rc3 != LB_PARSE_OK || (rc == LB_PARSE_OK && memcmp(info, &i3, sizeof(i3)) == 0),
	           "split at %u parses OK but the whole frame gives %d", split, rc);
	/* A first segment said to be longer than the frame: read neither past. */
	if (split < len) {
		rc3 = lb_parse_frame(seg, len, split, &i3);
		check_info(rc3, &i3, split);
	}
	free(seg);
	return rc;
}

/* --- pipeline -------------------------------------------------------------- */

/*
 * The frame as an mbuf chain: a first segment of first bytes (at most what
 * fits after headroom), the rest in full segments.
 */
static struct rte_mbuf *
build_chain(const uint8_t *data, uint32_t len, uint32_t first, uint16_t headroom)
{
	struct rte_mbuf *head = rte_pktmbuf_alloc(g_pool);
	uint32_t off = 0;

	FUZZ_CHECK(head != NULL, "mempool empty");
	head->data_off = headroom;
	for (struct rte_mbuf *m = head; off < len || m == head;) {
		uint32_t n = len - off;
		uint8_t *p;

		if (m == head && n > first)
			n = first;
		if (n > rte_pktmbuf_tailroom(m))
			n = rte_pktmbuf_tailroom(m);
		p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)n);
		FUZZ_CHECK(p != NULL || n == 0, "append %u", n);
		if (n)
			memcpy(p, data + off, n);
		if (m != head)
			FUZZ_CHECK(rte_pktmbuf_chain(head, m) == 0, "chain");
		off += n;
		if (off >= len)
			break;
		m = rte_pktmbuf_alloc(g_pool);
		FUZZ_CHECK(m != NULL, "mempool empty");
	}
	return head;
}

static const uint8_t *
linearize(const struct rte_mbuf *m)
{
	uint32_t n = rte_pktmbuf_pkt_len(m);
	const uint8_t *p;

	FUZZ_CHECK(n <= LINEAR_MAX, "packet of %u bytes", n);
	p = rte_pktmbuf_read(m, 0, n, g_linear);
	FUZZ_CHECK(p != NULL, "rte_pktmbuf_read");
	return p;
}

static void
check_mbuf(const struct rte_mbuf *m)
{
	const char *why = NULL;
	uint32_t total = 0;

	FUZZ_CHECK(rte_mbuf_check(m, 1, &why) == 0, "bad mbuf: %s", why);
	for (const struct rte_mbuf *s = m; s != NULL; s = s->next)
		total += s->data_len;
	FUZZ_CHECK(total == m->pkt_len, "segments hold %u bytes, pkt_len %u", total, m->pkt_len);
}

/* Inner IP length from its own header. */
static uint32_t
ip_len(const uint8_t *ip, uint32_t avail)
{
	FUZZ_CHECK(avail >= 20, "inner packet of %u bytes", avail);
	if (ip[0] >> 4 == 4)
		return rd16(ip + 2);
	FUZZ_CHECK(ip[0] >> 4 == 6 && avail >= 40, "inner version %u", ip[0] >> 4);
	return 40u + rd16(ip + 4);
}

/* Encapsulated toward a backend: outer headers around exactly the inner packet. */
static void
check_forwarded(const struct lb_snapshot *s, const struct rte_mbuf *m, const uint8_t *frame,
                const struct lb_pkt_info *info)
{
	const uint8_t *p = linearize(m);
	uint32_t n = rte_pktmbuf_pkt_len(m), off;
	uint16_t type;
	uint8_t proto;

	FUZZ_CHECK(n >= 34, "forwarded packet of %u bytes", n);
	FUZZ_CHECK(memcmp(p, s->encap.next_hop_mac, 6) == 0 && memcmp(p + 6, g_port_mac, 6) == 0,
	           "outer MACs");
	type = rd16(p + 12);
	if (type == 0x0800) {
		FUZZ_CHECK(p[14] == 0x45 && rd16(p + 16) == n - 14, "outer IPv4 header");
		FUZZ_CHECK(fold(sum16(p + 14, 20, 0)) == 0xFFFF, "outer IPv4 checksum");
		FUZZ_CHECK(memcmp(p + 26, s->encap.src4.b, 4) == 0, "outer IPv4 source");
		proto = p[23];
		off = 34;
	} else {
		FUZZ_CHECK(type == 0x86DD && n >= 54, "outer ethertype %#x", type);
		FUZZ_CHECK(p[14] >> 4 == 6 && rd16(p + 18) == n - 54, "outer IPv6 header");
		FUZZ_CHECK(memcmp(p + 22, s->encap.src6.b, 16) == 0, "outer IPv6 source");
		proto = p[20];
		off = 54;
	}
	if (proto == IPPROTO_UDP) {
		FUZZ_CHECK(n >= off + 8 && rd16(p + off + 4) == n - off, "GUE UDP length");
		FUZZ_CHECK(memcmp(p + off + 2, &s->encap.gue_port, 2) == 0, "GUE port");
		if (type == 0x86DD)
			FUZZ_CHECK(fold(sum16(p + off, n - off, ip6_pseudo(p + 14, n - off, 17))) ==
			                   0xFFFF,
			           "GUE over IPv6: bad UDP checksum");
		off += 8;
	} else {
		FUZZ_CHECK(proto == (info->key.af == LB_AF_INET ? 4 : 41), "outer protocol %u",
		           proto);
	}
	FUZZ_CHECK(ip_len(p + off, n - off) == n - off, "inner length %u in %u bytes",
	           ip_len(p + off, n - off), n - off);
	FUZZ_CHECK(n - off == info->l3_len && memcmp(p + off, frame + info->l2_len, n - off) == 0,
	           "inner packet is not the received one");
}

/* ICMP fragmentation needed / packet too big back to the client. */
static void
check_back(const struct lb_snapshot *s, const struct rte_mbuf *m, const uint8_t *frame,
           const struct lb_pkt_info *info)
{
	static uint8_t untagged[LINEAR_MAX];
	const uint8_t *p = linearize(m);
	uint32_t n = rte_pktmbuf_pkt_len(m), q;
	/* The reply goes back into the frame's VLANs: the same tags, then as untagged. */
	const uint32_t tl = info->l2_len - 14u;

	FUZZ_CHECK(n > 14 + tl && memcmp(p + 12, frame + 12, tl) == 0,
	           "ICMP reply without the frame's %u bytes of VLAN tags", tl);
	memcpy(untagged, p, 12);
	memcpy(untagged + 12, p + 12 + tl, n - 12 - tl);
	p = untagged;
	n -= tl;
	FUZZ_CHECK(memcmp(p + 6, g_port_mac, 6) == 0 && memcmp(p, frame + 6, 6) == 0, "ICMP MACs");
	if (info->key.af == LB_AF_INET) {
		FUZZ_CHECK(n > 42 && n <= 14 + 576, "ICMP of %u bytes", n);
		FUZZ_CHECK(rd16(p + 12) == 0x0800 && p[14] == 0x45 && rd16(p + 16) == n - 14 &&
		                   p[23] == 1,
		           "ICMP IPv4 header");
		FUZZ_CHECK(fold(sum16(p + 14, 20, 0)) == 0xFFFF, "ICMP IPv4 header checksum");
		FUZZ_CHECK(p[34] == 3 && p[35] == 4, "ICMP type %u code %u", p[34], p[35]);
		FUZZ_CHECK(fold(sum16(p + 34, n - 34, 0)) == 0xFFFF, "ICMP checksum");
		FUZZ_CHECK(memcmp(p + 26, s->encap.src4.b, 4) == 0, "ICMP source");
		/* To the sender of the offending packet (for a quoted flow, not key.src). */
		FUZZ_CHECK(memcmp(p + 30, frame + info->l2_len + 12, 4) == 0,
		           "ICMP to the wrong address");
		q = 42;
	} else {
		FUZZ_CHECK(n > 62 && n <= 14 + 1280, "ICMPv6 of %u bytes", n);
		FUZZ_CHECK(rd16(p + 12) == 0x86DD && p[14] >> 4 == 6 && rd16(p + 18) == n - 54 &&
		                   p[20] == 58,
		           "ICMPv6 IPv6 header");
		FUZZ_CHECK(p[54] == 2 && p[55] == 0, "ICMPv6 type %u code %u", p[54], p[55]);
		FUZZ_CHECK(fold(sum16(p + 54, n - 54, ip6_pseudo(p + 14, n - 54, 58))) == 0xFFFF,
		           "ICMPv6 checksum");
		FUZZ_CHECK(memcmp(p + 22, s->encap.src6.b, 16) == 0, "ICMPv6 source");
		FUZZ_CHECK(memcmp(p + 38, frame + info->l2_len + 8, 16) == 0,
		           "ICMPv6 to the wrong address");
		q = 62;
	}
	FUZZ_CHECK(n - q <= info->l3_len && memcmp(p + q, frame + info->l2_len, n - q) == 0,
	           "ICMP quote is not the received packet");
}

static uint64_t
drops_total(const struct lb_core_counters *c)
{
	uint64_t t = 0;

	for (int r = 0; r < LB_DROP__COUNT; r++)
		t += c->drops[r];
	return t;
}

static uint64_t
vip_packets(const struct lb_core_counters *c)
{
	uint64_t t = 0;

	for (int i = 0; i < 16; i++)
		t += c->vip[i].packets;
	return t;
}

static void
note_first(struct outcome *o, enum fate fate, const struct rte_mbuf *m)
{
	o->fate = fate;
	o->len = rte_pktmbuf_pkt_len(m);
	memcpy(o->bytes, linearize(m), o->len);
}

static void
run_burst(const struct lb_snapshot *s, bool has_exception, struct rte_mbuf **pkts, uint16_t n,
          const uint8_t *frame, uint32_t len, int parse_rc, const struct lb_pkt_info *info,
          struct outcome *first)
{
	struct lb_core_counters *c = g_w->cnt;
	uint64_t rx0 = c->rx_packets, drops0 = drops_total(c), vip0 = vip_packets(c);
	struct lb_burst_out out;
	struct rte_mbuf *all[4 * LB_BURST];
	unsigned int n_all = 0;

	g_w->has_exception = has_exception;
	lb_pipeline_burst(g_w, s, pkts, n, &out);

	/* What the worker does with what TX takes. */
	c->forwarded += (uint64_t)out.n_fwd + out.n_frag;
	c->icmp_sent += out.n_back;
	c->exception += out.n_exc;
	FUZZ_CHECK(c->rx_packets - rx0 == n, "rx counted %llu of %u",
	           (unsigned long long)(c->rx_packets - rx0), n);
	FUZZ_CHECK((unsigned int)out.n_fwd + out.n_fragmented + out.n_back + out.n_exc +
	                           out.n_drop ==
	                   n,
	           "%u packets in, %u+%u+%u+%u+%u out", n, out.n_fwd, out.n_fragmented, out.n_back,
	           out.n_exc, out.n_drop);
	FUZZ_CHECK(out.n_frag >= 2 * out.n_fragmented && out.n_frag <= LB_FRAG_OUT_MAX,
	           "%u fragments of %u packets", out.n_frag, out.n_fragmented);
	FUZZ_CHECK(drops_total(c) - drops0 == out.n_drop, "%u dropped, %llu drops counted",
	           out.n_drop, (unsigned long long)(drops_total(c) - drops0));
	FUZZ_CHECK(c->rx_packets + c->fragments_out - c->fragmented_out ==
	                   c->forwarded + c->icmp_sent + c->exception + drops_total(c),
	           "counters do not conserve packets");
	FUZZ_CHECK(vip_packets(c) - vip0 == (uint64_t)out.n_fwd + out.n_fragmented,
	           "per-VIP packets");
	if (parse_rc != LB_PARSE_OK)
		FUZZ_CHECK(out.n_fwd == 0 && out.n_back == 0 && out.n_frag == 0,
		           "unparsed frame forwarded");
	for (uint16_t i = 0; i < out.n_frag; i++) {
		check_mbuf(out.frag[i]);
		FUZZ_CHECK(rte_pktmbuf_pkt_len(out.frag[i]) <= LB_ETH_HLEN + (uint32_t)s->encap.mtu,
		           "outer fragment of %u bytes over the MTU",
		           rte_pktmbuf_pkt_len(out.frag[i]));
	}
	if (parse_rc == LB_PARSE_NOT_LB)
		FUZZ_CHECK(out.n_exc + out.n_drop == n, "non-LB frame not to exception or drop");
	if (parse_rc > 0)
		FUZZ_CHECK(out.n_drop == n && c->drops[parse_rc] > 0, "bad frame not dropped");

	for (uint16_t i = 0; i < out.n_fwd; i++) {
		check_mbuf(out.fwd[i]);
		check_forwarded(s, out.fwd[i], frame, info);
		if (first != NULL && out.fwd[i] == pkts[0])
			note_first(first, FATE_FWD, out.fwd[i]);
		all[n_all++] = out.fwd[i];
	}
	for (uint16_t i = 0; i < out.n_back; i++) {
		check_mbuf(out.back[i]);
		check_back(s, out.back[i], frame, info);
		if (first != NULL && out.back[i] == pkts[0])
			note_first(first, FATE_BACK, out.back[i]);
		all[n_all++] = out.back[i];
	}
	for (uint16_t i = 0; i < out.n_exc; i++) {
		const uint8_t *p;

		check_mbuf(out.exc[i]);
		FUZZ_CHECK(rte_pktmbuf_pkt_len(out.exc[i]) == len, "exception packet resized");
		p = linearize(out.exc[i]);
		FUZZ_CHECK(memcmp(p, frame, len) == 0, "exception packet modified");
		if (first != NULL && out.exc[i] == pkts[0])
			note_first(first, FATE_EXC, out.exc[i]);
		all[n_all++] = out.exc[i];
	}
	for (uint16_t i = 0; i < out.n_drop; i++) {
		if (first != NULL && out.drop[i] == pkts[0]) {
			first->fate = FATE_DROP;
			first->len = 0;
		}
		all[n_all++] = out.drop[i];
	}
	/* Every packet handed in comes out exactly once, or was sent as fragments. */
	unsigned int n_gone = 0;

	for (uint16_t i = 0; i < n; i++) {
		unsigned int seen = 0;

		for (unsigned int j = 0; j < n_all; j++)
			seen += all[j] == pkts[i];
		FUZZ_CHECK(seen <= 1, "packet %u came out %u times", i, seen);
		if (seen == 0 && i == 0 && first != NULL) {
			first->fate = FATE_FRAG;
			first->len = 0;
		}
		n_gone += seen == 0;
	}
	FUZZ_CHECK(n_gone == out.n_fragmented, "%u packets missing, %u sent as fragments", n_gone,
	           out.n_fragmented);
	for (unsigned int j = 0; j < n_all; j++)
		rte_pktmbuf_free(all[j]);
	rte_pktmbuf_free_bulk(out.frag, out.n_frag);
	FUZZ_CHECK(rte_mempool_avail_count(g_pool) == POOL_SIZE, "%u of %u mbufs back in the pool",
	           rte_mempool_avail_count(g_pool), POOL_SIZE);
}

static void
flow_table_clear(void)
{
	memset(g_w->ft->buckets, 0, (size_t)g_w->ft->n_buckets * sizeof(*g_w->ft->buckets));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t len = size > MAX_FRAME ? MAX_FRAME : (uint32_t)size;
	uint32_t split = split_of(data, len);
	struct rte_mbuf *pkts[4];
	struct lb_pkt_info info;
	unsigned int sel = len % N_SNAP;
	uint16_t headroom = RTE_PKTMBUF_HEADROOM;
	int rc;

	init_once();
	rc = run_parser(data, len, split, &info);

	/*
	 * The frame four times in one burst, as a NIC with 2 KiB buffers would
	 * deliver it: the first misses the flow table, the others hit (and the
	 * burst is long enough for the 4-way hash). Then alone in a burst (the
	 * scalar hash) from an empty table again: it must come out the same.
	 */
	flow_table_clear();
	for (int i = 0; i < 4; i++)
		pkts[i] = build_chain(data, len, len, RTE_PKTMBUF_HEADROOM);
	run_burst(g_snap[sel], sel & 1, pkts, 4, data, len, rc, &info, &g_first[0]);
	flow_table_clear();
	pkts[0] = build_chain(data, len, len, RTE_PKTMBUF_HEADROOM);
	run_burst(g_snap[sel], sel & 1, pkts, 1, data, len, rc, &info, &g_first[1]);
	FUZZ_CHECK(g_first[0].fate == g_first[1].fate && g_first[0].len == g_first[1].len &&
	                   memcmp(g_first[0].bytes, g_first[1].bytes, g_first[0].len) == 0,
	           "the same packet came out differently in a burst of 4 (fate %d, %u bytes) "
	           "and alone (fate %d, %u bytes)",
	           g_first[0].fate, g_first[0].len, g_first[1].fate, g_first[1].len);

	/* Split in two at the same point as the parser test; sometimes short of headroom. */
	if (len > 0 && (data[len - 1] & 0xC0) == 0xC0)
		headroom = data[len - 1] & 0x3F;
	pkts[0] = build_chain(data, len, split, headroom);
	{
		struct lb_pkt_info si;
		int src = lb_parse_frame(rte_pktmbuf_mtod(pkts[0], const uint8_t *),
		                         rte_pktmbuf_data_len(pkts[0]), len, &si);

		run_burst(g_snap[(sel + 1) % N_SNAP], !(sel & 1), pkts, 1, data, len, src, &si,
		          NULL);
	}
	return 0;
}
