/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packet of a VIP whose hot_mode is per_packet while the snapshot holds
 * an override of it: a packet of an overridden key goes to a replica drawn
 * per packet (per datagram for fragments) and never touches the flow table,
 * so nothing pins it; any other key of the VIP takes the usual path.
 */
#include "dataplane/override.h"
#include "dataplane/pipeline_internal.h"
#include "dataplane/spray.h"

bool
lb_pipeline_spray(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
                  const struct pkt_state *ps, struct lb_burst_out *out,
                  const struct lb_encap4_tmpl *t4, uint64_t salt)
{
	const struct lb_vip *v = ps->vip;
	const struct lb_override_slot *o =
	        lb_override_find(&s->overrides, v->id, key_hash(s, v, ps));
	uint16_t bid;

	if (o == NULL)
		return false;
	bid = lb_override_pick(&s->overrides, o, lb_spray_hash(ps->hash, salt));
	w->cnt->hot_sprayed++;
	forward(w, s, m, ps, bid, out, t4, NULL, w->cnt, w->mtu_gate, &out->n_fwd);
	return true;
}
