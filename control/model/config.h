/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The configuration model: one JSON document (the same shapes the control
 * socket takes), validated field by field into plain structs. Every rejection
 * names the field's path ("vips[2].backends[0].address") and the reason.
 */
#ifndef LB_CONFIG_H
#define LB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "dataplane/snapshot.h"
#include "control/health/health_probe.h"
#include "control/model/params.h"

#define LB_NAME_MAX 64
#define LB_SEED_MAX 256
#define LB_FLOW_DEFAULT_CAPACITY (1u << 20) /* entries per worker core */
#define LB_FLOW_DEFAULT_TCP_IDLE_MS 300000u
#define LB_FLOW_DEFAULT_UDP_IDLE_MS 30000u
#define LB_FLOW_DEFAULT_SYN_IDLE_MS 5000u      /* an entry not yet confirmed */
#define LB_FLOW_DEFAULT_CLOSING_IDLE_MS 10000u /* after a FIN or RST */
#define LB_FLOW_DEFAULT_NEW_FLOW_BURST 10000u

struct lb_cfg_backend {
	char name[LB_NAME_MAX]; /* optional stable identity; "" = use the address */
	union lb_ip addr;
	uint8_t af;
	uint8_t state; /* enum lb_backend_state */
	uint16_t id;   /* registry slot (lb_snapshot.backends index) */
	uint16_t gen;  /* generation of that slot */
	uint32_t weight;
	/* The backend's own health object (NULL: the VIP's applies), owned, and
	 * a digest of its content (0: none) so copies compare without it. */
	struct lb_health_conf *health;
	uint64_t health_digest;
	/* Runtime, never written out: the state health checks give the backend
	 * in the snapshot (0: none, else LB_BACKEND_DOWN or _DRAINING); laid in
	 * by the health runner before every build. */
	uint8_t health_out;
};

struct lb_cfg_vip {
	union lb_ip addr;
	uint8_t af;
	uint8_t proto;    /* IPPROTO_TCP / IPPROTO_UDP */
	uint16_t port;    /* host byte order; 0 = any port */
	uint8_t key_mode; /* enum lb_key_mode */
	uint8_t encap;    /* enum lb_encap_type */
	uint8_t hot_mode; /* enum lb_hot_mode */
	uint16_t id;      /* stable VIP id (counter index) */
	uint32_t n_backends;
	struct lb_cfg_backend *backends;
	struct lb_health_conf *health; /* default for its backends; NULL: none */
	uint64_t health_digest;
};

struct lb_config {
	struct lb_encap_conf encap;
	char seed[LB_SEED_MAX];
	uint32_t table_size;
	struct {
		uint32_t capacity; /* entries per worker */
		uint32_t tcp_idle_ms;
		uint32_t udp_idle_ms;
		uint32_t syn_idle_ms;     /* lifetime of an entry not yet confirmed */
		uint32_t closing_idle_ms; /* lifetime after a FIN or RST */
		uint32_t new_flow_rate;   /* new entries per second per core; 0 = unlimited */
		uint32_t new_flow_burst;  /* the rate guard's bucket size */
	} flows;
	struct {
		uint32_t rate_per_sec; /* generated ICMP errors per second per core */
		uint32_t burst;        /* token bucket depth per core */
	} icmp;
	/* The hot object: params.h has each field's range, default and unit. */
	struct {
		bool enabled;
		uint32_t window_ms;
		double threshold; /* LB_HOT_THRESHOLD_AUTO (0) or a share in (0, 1] */
		double epsilon;
		uint8_t weight; /* LB_HOT_WEIGHT_PACKETS or _BYTES: sketch and loads alike */
		int8_t sample;  /* sampling shift 0..LB_HOT_SAMPLE_MAX, or LB_HOT_SAMPLE_AUTO */
		/* Demote below this: a share, or LB_HOT_THRESHOLD_LOW_AUTO (0) under an
		 * "auto" threshold (under a numeric one the loader makes it threshold / 2). */
		double threshold_low;
		uint32_t demote_windows; /* ... for this many windows */
		double ewma_alpha;       /* weight of the newest window */
		double margin;           /* plans stay this fraction under the cap (0: none) */
	} hot;
	uint32_t n_vips;
	struct lb_cfg_vip *vips;
};

/**
 * Validate a parsed JSON document into a new config. Ids are assigned in
 * document order (VIP i gets id i; backends numbered consecutively, gen 1).
 *
 * @return the config, or NULL with a one-line "path: reason" message in err.
 */
struct lb_config *lb_config_from_json(const json_t *root, char *err, size_t errlen);

/** Read and validate a file; NULL with "FILE: ..." or "path: reason" in err. */
struct lb_config *lb_config_load_file(const char *path, char *err, size_t errlen);

/**
 * The document form of a config (what the file and the socket take): complete,
 * or NULL if an allocation failed (never a document with a part missing).
 */
json_t *lb_config_to_json(const struct lb_config *cfg);

void lb_config_free(struct lb_config *cfg);

/** Backend memberships over all VIPs (what LB_MAX_BACKENDS limits). */
uint32_t lb_config_backend_count(const struct lb_config *cfg);

/** Text form of an address ("192.0.2.1", "fd00::1"); buf at least 46 bytes. */
const char *lb_ip_to_str(uint8_t af, const union lb_ip *ip, char *buf, size_t len);

/** Parse an IPv4 or IPv6 address; returns 0 and sets *af, or -EINVAL. */
int lb_ip_from_str(const char *s, uint8_t *af, union lb_ip *ip);

/** The identity a backend's Maglev permutation derives from: name, else address. */
const char *lb_cfg_backend_identity(const struct lb_cfg_backend *b, char *buf, size_t len);

/**
 * Whether a and b are the same VIP: the same family, address (all 16 bytes),
 * port and protocol, the identity that no two VIPs of a configuration share.
 * Every other field (key mode, encap, backends, id) is left out.
 */
bool lb_cfg_vip_same(const struct lb_cfg_vip *a, const struct lb_cfg_vip *b);

/** The index in cfg->vips of the VIP that is ref (lb_cfg_vip_same), or -1; cfg may be NULL. */
int lb_config_find_vip(const struct lb_config *cfg, const struct lb_cfg_vip *ref);

/*
 * Pieces of the loader for the control socket, which takes the same VIP and
 * backend objects and must judge them by the same rules and messages.
 */

/**
 * Validate one VIP object (the shape of an element of "vips") against cfg:
 * the encap sources it needs, and the LB_MAX_BACKENDS budget that cfg's own
 * backends already use. Does not check that the VIP is new. Messages name
 * fields under path ("" for none: "port: expected an integer, got a string").
 * Its backends get ids after cfg's count; out->id is cfg->n_vips.
 *
 * @return 0 (out->backends is then the caller's), -EINVAL for an invalid
 *   field, -ENOSPC for too many backends, -ENOMEM; err says which field.
 */
int lb_config_vip_from_json(const struct lb_config *cfg, const json_t *o, const char *path,
                            struct lb_cfg_vip *out, char *err, size_t errlen);

/**
 * Validate one backend object ("address", "weight", "name", "state") against
 * cfg's encap sources; defaults as in the file (weight 1, active).
 *
 * @return 0, or -EINVAL with "path.field: reason" in err.
 */
int lb_config_backend_from_json(const struct lb_config *cfg, const json_t *o, const char *path,
                                struct lb_cfg_backend *out, char *err, size_t errlen);

/** The document form of one VIP (with its backends), as in lb_config_to_json; NULL likewise. */
json_t *lb_config_vip_to_json(const struct lb_cfg_vip *v);

/** The document form of one backend; "name" only if set; NULL likewise. */
json_t *lb_config_backend_to_json(const struct lb_cfg_backend *b);

/**
 * The health object that applies to backend b of VIP v: b's own, else v's,
 * else NULL (not checked).
 */
const struct lb_health_conf *lb_cfg_backend_health(const struct lb_cfg_vip *v,
                                                   const struct lb_cfg_backend *b);

/**
 * The state b takes in the snapshot: the operator's state unless health
 * checks take an active backend out (health_out).
 */
uint8_t lb_cfg_backend_effective_state(const struct lb_cfg_backend *b);

/** Free what b owns (its health object); b itself is the caller's. */
void lb_cfg_backend_clear(struct lb_cfg_backend *b);

/** Free what v owns (backends, health objects) and empty it; v itself is the caller's. */
void lb_cfg_vip_clear(struct lb_cfg_vip *v);

/**
 * Read a health object at path ("vips[0].health"; a VIP's when vip, which
 * alone may hold fail_open) with the defaults of health_probe.h filled in.
 * A "via" without a registered transport is refused ("...via: encap: not
 * available").
 *
 * @return 0, or -EINVAL with "path.field: reason" in err.
 */
int lb_config_health_from_json(const json_t *o, const char *path, bool vip,
                               struct lb_health_conf *h, char *err, size_t errlen);

/** The document form of a health object (every field); NULL if out of memory. */
json_t *lb_config_health_to_json(const struct lb_health_conf *h, bool vip);

/** A digest of what the document form holds; 0 for NULL, never 0 otherwise. */
uint64_t lb_config_health_digest(const struct lb_health_conf *h);

/** A malloc'd copy, or NULL (h NULL, or out of memory). */
struct lb_health_conf *lb_config_health_dup(const struct lb_health_conf *h);

/** A deep copy (ids included); NULL with errno ENOMEM. */
struct lb_config *lb_config_clone(const struct lb_config *cfg);

/** How a value's type is named in messages: "a string", "an integer", "null". */
const char *lb_config_json_type(const json_t *v);

/**
 * The first member of object obj whose name is not in allowed (a NULL-ended
 * list), or NULL if every member is allowed: how the configuration file and
 * the control socket refuse unknown fields.
 */
const char *lb_config_unknown_key(const json_t *obj, const char *const *allowed);

/**
 * The hot_mode of a VIP that does not set one, from its key mode: "report"
 * for a VIP keyed on the source address (src_ip, src_ip_dport), whose keys
 * are affinity an operator asked for (spreading a source's new connections
 * over several backends breaks sessions that span connections); "spread"
 * for a 5-tuple VIP, whose keys are connections. "spread" set explicitly
 * always spreads.
 */
uint8_t lb_config_hot_mode_default(uint8_t key_mode);

/** The spelling of a hot_mode ("spread", "report", "off", "per_packet"). */
const char *lb_config_hot_mode_name(uint8_t hot_mode);

/**
 * A VIP's hot_mode value (v, the member's JSON) for a VIP of protocol proto:
 * "spread", "report", "off" or (UDP VIPs only) "per_packet" into *out;
 * "per_packet" on any other protocol is refused (a TCP connection must stay on
 * one backend). Messages name path.hot_mode ("hot_mode" for an empty path).
 *
 * @return 0, or -EINVAL with "path.hot_mode: reason" in err.
 */
int lb_config_hot_mode_from_json(const json_t *v, uint8_t proto, const char *path, uint8_t *out,
                                 char *err, size_t errlen);

/**
 * The value v of the hot parameter p (a row of lb_hot_param_table) into *out
 * (the model's number: 0/1 for a boolean, the index of an enum's name,
 * p->auto_value for "auto"). Shared by the file and the control socket:
 * messages start with "path.name: " ("name: " for an empty path).
 *
 * @return 0, or -EINVAL with "path.name: reason" in err.
 */
int lb_config_hot_param_from_json(const struct lb_param *p, const json_t *v, const char *path,
                                  double *out, char *err, size_t errlen);

/**
 * Every member of obj (the hot object at path "hot", or hot_set's params at
 * path "") decoded into val[] by lb_config_hot_param_from_json, given[] set
 * for those present. A member that is no parameter is refused ("unknown
 * field"); with socket, so is one the socket may not set. threshold_low above
 * a numeric threshold given beside it is refused, naming threshold_low.
 *
 * @return 0, or -EINVAL with "path.name: reason" in err.
 */
int lb_config_hot_params_from_json(const json_t *obj, const char *path, bool socket,
                                   double val[LB_HOT_P_N], bool given[LB_HOT_P_N], char *err,
                                   size_t errlen);

/**
 * threshold_low against threshold (both the model's numbers): none is above
 * a numeric threshold. @return 0, or -EINVAL with "path.threshold_low: x is
 * above path.threshold y" in err.
 */
int lb_config_hot_check_low(double threshold, double low, const char *path, char *err,
                            size_t errlen);

/** The document form of p's value x: "auto", an integer, a number, a name or a boolean. */
json_t *lb_config_hot_param_json(const struct lb_param *p, double x);

/** cfg's hot parameter id, as the model's number. */
double lb_config_hot_get(const struct lb_config *cfg, enum lb_hot_param id);

/** Set cfg's hot parameter id to x (a value lb_config_hot_param_from_json gave). */
void lb_config_hot_set(struct lb_config *cfg, enum lb_hot_param id, double x);

#endif /* LB_CONFIG_H */
