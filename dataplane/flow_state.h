/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TCP-aware flow state on top of the flow table: an entry is new until a
 * second packet of its flow confirms it, established then, closing after a
 * FIN or RST; new and closing entries live briefly and are evicted first, and
 * a new flow never evicts an established one. Per packet, inline, no locks.
 */
#ifndef LB_FLOW_STATE_H
#define LB_FLOW_STATE_H

#include <stdint.h>

#include "dataplane/flow_guard.h"
#include "dataplane/flow_table.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

_Static_assert(LB_MAX_BACKENDS <= (1u << LB_FLOW_BACKEND_BITS), "backend ids fit an entry");

/*
 * The state and lifetime of a live entry after one more packet of its flow
 * with TCP flags tcpf (0 for UDP): FIN or RST → closing; a SYN alone keeps a
 * new entry new (a retransmitted SYN confirms nothing) and makes a closing one
 * new (the tuple reused); any other packet confirms a new entry; a closing
 * entry stays closing. full is the protocol's idle time.
 */
static inline void
lb_flow_refresh(struct lb_flow_entry *e, uint32_t now, uint8_t tcpf, uint32_t full,
                uint32_t syn_idle, uint32_t closing_idle)
{
	unsigned int st = e->state;

	if (likely(st == LB_FLOW_ESTABLISHED && !(tcpf & (LB_TCP_FIN | LB_TCP_RST)))) {
		e->expires = now + full;
		return;
	}
	if (tcpf & (LB_TCP_FIN | LB_TCP_RST))
		st = LB_FLOW_CLOSING;
	else if ((tcpf & (LB_TCP_SYN | LB_TCP_ACK)) == LB_TCP_SYN)
		st = st == LB_FLOW_ESTABLISHED ? LB_FLOW_ESTABLISHED : LB_FLOW_NEW;
	else if (st == LB_FLOW_NEW)
		st = LB_FLOW_ESTABLISHED;
	e->state = st;
	e->expires = now + (st == LB_FLOW_ESTABLISHED ? full
	                    : st == LB_FLOW_NEW       ? syn_idle
	                                              : closing_idle);
}

/*
 * A packet of a flow the table does not hold, sent to backend bid: create its
 * entry (new, or closing for a FIN or RST) if the rate guard allows, in a way
 * that is free, expired or not established. Counts flow_evictions (a new or
 * closing entry replaced), flow_unpinned (every way established: no entry)
 * and flow_rate_limited (over the guard's rate: no entry); the packet goes to
 * bid in every case.
 */
static inline void
lb_flow_admit(struct lb_worker *w, uint64_t sig, uint8_t tcpf, uint16_t bid, uint16_t gen)
{
	const bool closing = (tcpf & (LB_TCP_FIN | LB_TCP_RST)) != 0;
	int rc;

	if (unlikely(!lb_flow_guard_take(&w->guard, w->now))) {
		w->cnt->flow_rate_limited++;
		return;
	}
	rc = lb_flow_insert_state(w->ft, sig, w->now, closing ? w->closing_idle : w->syn_idle, bid,
	                          gen, closing ? LB_FLOW_CLOSING : LB_FLOW_NEW, false);
	if (rc == LB_FLOW_INS_EVICTED)
		w->cnt->flow_evictions++;
	else if (rc == LB_FLOW_INS_FULL)
		w->cnt->flow_unpinned++;
}

/* A live entry whose backend is no longer usable, pinned to bid instead. */
static inline void
lb_flow_repin(struct lb_worker *w, struct lb_flow_entry *e, uint8_t tcpf, uint32_t full,
              uint16_t bid, uint16_t gen)
{
	e->backend = bid & ((1u << LB_FLOW_BACKEND_BITS) - 1);
	e->gen = gen;
	lb_flow_refresh(e, w->now, tcpf, full, w->syn_idle, w->closing_idle);
}

#endif /* LB_FLOW_STATE_H */
