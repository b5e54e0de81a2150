/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The state file's text, encoded incrementally: each VIP's indented JSON is
 * kept from one encoding to the next and encoded again only when the VIP
 * changed, so a change to one VIP of many costs one VIP's encoding and a copy.
 * The text is byte for byte lb_json_text_dumps(lb_config_to_json(cfg), JSON_INDENT(2)).
 */
#ifndef LB_STATE_TEXT_H
#define LB_STATE_TEXT_H

#include <stddef.h>

#include "control/model/config.h"

struct lb_state_text;

/** An empty cache; NULL when out of memory. */
struct lb_state_text *lb_state_text_new(void);

/** Free the cache (NULL is fine). */
void lb_state_text_free(struct lb_state_text *st);

/**
 * Encode cfg as lb_json_text_dumps(lb_config_to_json(cfg), JSON_INDENT(2)) followed
 * by "\n", reusing the text of every VIP equal (address, port, protocol, key, hot_mode,
 * encap, backends in order with name, address, weight, state) to one of the
 * last successful call. The cache then holds cfg's VIPs.
 *
 * @return 0 with *text (caller frees) and *len (without the NUL) set, and
 *   *encoded (may be NULL) the number of VIPs encoded anew; -ENOMEM (the
 *   cache is emptied then: the next call encodes every VIP).
 */
int lb_state_text_encode(struct lb_state_text *st, const struct lb_config *cfg, char **text,
                         size_t *len, unsigned int *encoded);

#endif /* LB_STATE_TEXT_H */
