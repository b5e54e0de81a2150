/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the files of the config module share beyond config.h: how the
 * document spells enum values (config.c reads them, config_json.c writes
 * them), and the loader's message format and cross-field checks
 * (config_check.c, for config.c).
 */
#ifndef LB_CONFIG_INTERNAL_H
#define LB_CONFIG_INTERNAL_H

/* Indexed by the enum value, each ended by NULL. */
extern const char *const lb_config_key_names[];      /* enum lb_key_mode */
extern const char *const lb_config_encap_names[];    /* enum lb_encap_type */
extern const char *const lb_config_state_names[];    /* enum lb_backend_state */
extern const char *const lb_config_too_big_names[];  /* lb_encap_conf.too_big */
extern const char *const lb_config_hot_mode_names[]; /* enum lb_hot_mode */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/snapshot.h"

struct lb_cfg_vip;

/** Write "path: message" to err (no prefix for an empty path), truncated to errlen. */
void lb_config_vfail(char *err, size_t errlen, const char *path, const char *fmt, va_list ap);

/** A backend name at path: 1 to LB_NAME_MAX - 1 bytes of A-Z a-z 0-9 . _ : -.
 * @return 0, or -EINVAL with the first offending byte named in err. */
int lb_config_check_name(char *err, size_t errlen, const char *path, const char *name);

/** No two backends of v (at path) with the same address or identity; the error
 * names the first backend in document order that duplicates one.
 * @return 0, -EINVAL or -ENOMEM. */
int lb_config_check_duplicates(char *err, size_t errlen, const char *path,
                               const struct lb_cfg_vip *v);

/*
 * The VIPs of a document read so far, by identity (lb_cfg_vip_same), for the
 * loader's duplicate check: open addressing with linear probing over twice
 * LB_MAX_VIPS slots (the loader refuses more VIPs before it reads one), each
 * slot a VIP's index plus one (0: empty). Zero it before the first VIP.
 */
#define LB_CONFIG_VIP_SET_SLOTS (2u * LB_MAX_VIPS)

struct lb_config_vip_set {
	uint16_t slot[LB_CONFIG_VIP_SET_SLOTS];
};

/** Add vips[i] to set unless a VIP of its identity is in it already, in O(1)
 * expected. @return the index of that VIP, or -1 (vips[i] added). */
int lb_config_vip_set_add(struct lb_config_vip_set *set, const struct lb_cfg_vip *vips, uint32_t i);

#endif /* LB_CONFIG_INTERNAL_H */
