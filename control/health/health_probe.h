/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Health probe transports: how one probe of one backend is carried out. A
 * transport is a vtable (start, poll, stop) driven by the health runner on the
 * control thread's event loop; it never blocks. "direct" transports (tcp,
 * http, udp to the backend's own address) are built in; the "encap" transport
 * registers itself with lb_health_probe_register().
 */
#ifndef LB_HEALTH_PROBE_H
#define LB_HEALTH_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/snapshot.h"

enum lb_health_type {
	LB_HEALTH_TYPE_NONE = 0, /* not checked: the health state stays unknown */
	LB_HEALTH_TYPE_TCP,      /* a connect to port */
	LB_HEALTH_TYPE_HTTP,     /* GET path, the status must equal expect */
	LB_HEALTH_TYPE_UDP,      /* send request, the reply must begin with response */
};

enum lb_health_via {
	LB_HEALTH_VIA_DIRECT = 0, /* to the backend's own address */
	LB_HEALTH_VIA_ENCAP,      /* encapsulated as a client's packet to the VIP */
	LB_HEALTH_VIA_N,
};

enum lb_health_on_down {
	LB_HEALTH_MOVE_FLOWS = 0, /* like an operator's down: flows are re-chosen */
	LB_HEALTH_KEEP_FLOWS,     /* like draining: established flows stay */
};

#define LB_HEALTH_PATH_MAX 128  /* http path, NUL included */
#define LB_HEALTH_BYTES_MAX 512 /* udp request / expected reply prefix */

/* Defaults of the fields a health object leaves out (docs/health-checks.md). */
#define LB_HEALTH_DEFAULT_INTERVAL_MS 2000u
#define LB_HEALTH_DEFAULT_TIMEOUT_MS 1000u /* capped at the interval */
#define LB_HEALTH_DEFAULT_RISE 2u
#define LB_HEALTH_DEFAULT_FALL 3u
#define LB_HEALTH_DEFAULT_EXPECT 200u
#define LB_HEALTH_DEFAULT_FAIL_OPEN 0.5
#define LB_HEALTH_MIN_INTERVAL_MS 100u
#define LB_HEALTH_MAX_INTERVAL_MS 3600000u
#define LB_HEALTH_MAX_RISE_FALL 100u

/* One health object of the configuration (a VIP's default or a backend's override). */
struct lb_health_conf {
	uint8_t type;    /* enum lb_health_type */
	uint8_t via;     /* enum lb_health_via */
	uint8_t on_down; /* enum lb_health_on_down */
	uint16_t port;   /* 0: the VIP's port */
	uint16_t expect; /* http status */
	uint32_t interval_ms;
	uint32_t timeout_ms;
	uint32_t rise;
	uint32_t fall;
	double fail_open; /* a VIP's only: fraction of its backends health may take out */
	char path[LB_HEALTH_PATH_MAX];
	uint16_t request_len, response_len;
	uint8_t request[LB_HEALTH_BYTES_MAX];
	uint8_t response[LB_HEALTH_BYTES_MAX];
};

/* How a probe stands after start or poll. */
enum lb_probe_status {
	LB_PROBE_PENDING = 0, /* wait for fd (events) or the timeout */
	LB_PROBE_OK,
	LB_PROBE_FAIL, /* the reason is in probe->why */
};

#define LB_PROBE_WHY_MAX 64

/*
 * One probe under way. The runner fills the target part and calls start;
 * the transport sets fd and events (LB_LOOP_READABLE / LB_LOOP_WRITABLE of
 * loop.h) for the runner to wait on, and keeps its own state in priv or in
 * the buffer. The runner enforces timeout_ms and calls stop in every case.
 */
struct lb_probe {
	/* Target, set by the runner. */
	const struct lb_health_conf *conf;
	uint8_t af;       /* of the backend */
	union lb_ip addr; /* the backend's address */
	uint16_t port;    /* resolved: conf->port, else the VIP's port */
	uint8_t vip_af;   /* the VIP the backend serves (for encap) */
	union lb_ip vip_addr;
	uint16_t vip_port;
	uint8_t vip_proto; /* IPPROTO_TCP / IPPROTO_UDP */
	uint8_t vip_encap; /* enum lb_encap_type */
	uint16_t backend_id;
	/* Transport state. */
	int fd;          /* -1: none to wait on */
	uint32_t events; /* what to wait for on fd */
	void *priv;
	size_t off; /* bytes sent or received so far */
	char buf[1024];
	char why[LB_PROBE_WHY_MAX];
};

struct lb_probe_transport {
	const char *name;
	void *arg; /* the transport's own context */
	/* Begin: LB_PROBE_PENDING with fd/events set, or a final status. */
	enum lb_probe_status (*start)(void *arg, struct lb_probe *p);
	/* fd is ready for events (an error counts as every event). */
	enum lb_probe_status (*poll)(void *arg, struct lb_probe *p, uint32_t events);
	/* Release what start took (close fd...); called once, after the final
	 * status or on timeout. fd is left -1. */
	void (*stop)(void *arg, struct lb_probe *p);
};

/**
 * Make t carry the probes of via (a NULL t removes it). The direct transport
 * is always registered; "encap" is available once a transport registers it.
 *
 * @return 0, or -EINVAL for an unknown via.
 */
int lb_health_probe_register(enum lb_health_via via, const struct lb_probe_transport *t);

/** The transport of via, or NULL if none is registered. */
const struct lb_probe_transport *lb_health_probe_transport(enum lb_health_via via);

/** The built-in direct transport (tcp, http, udp over ordinary sockets). */
extern const struct lb_probe_transport lb_health_probe_direct;

#endif /* LB_HEALTH_PROBE_H */
