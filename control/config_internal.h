/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the files of the config module share beyond config.h: how the
 * document spells enum values. config.c reads them, config_json.c writes
 * them.
 */
#ifndef LB_CONFIG_INTERNAL_H
#define LB_CONFIG_INTERNAL_H

/* Indexed by the enum value, each ended by NULL. */
extern const char *const lb_config_key_names[];        /* enum lb_key_mode */
extern const char *const lb_config_encap_names[];      /* enum lb_encap_type */
extern const char *const lb_config_state_names[];      /* enum lb_backend_state */
extern const char *const lb_config_too_big_names[];    /* lb_encap_conf.too_big */
extern const char *const lb_config_hot_mode_names[];   /* enum lb_hot_mode */
extern const char *const lb_config_hot_weight_names[]; /* lb_config.hot.weight */

#endif /* LB_CONFIG_INTERNAL_H */
