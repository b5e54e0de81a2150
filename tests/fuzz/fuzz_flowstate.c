/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the TCP-aware flow state: one input is a program of
 * clock moves and packets (flow, TCP flags) run against a 16-entry flow
 * table (4 buckets of 4 ways, so buckets fill and evict), the way the
 * pipeline drives it: advance the clock, look the flow up, refresh a live
 * entry (lb_flow_refresh) or admit a new one (lb_flow_insert_state, new or
 * closing, never evicting an established entry).
 *
 * The harness keeps its own model, written from the documented rules
 * (flow_state.h, flow_table.h): per flow its backend, state and expiry in
 * 64-bit time (the table's 32-bit ticks wrap: the clock starts just below
 * 2^32 and moves by up to 2^29 at a time). After every step, every flow the
 * model holds live is found with its backend and state, and no flow is found
 * the model holds expired or gone, whatever the wrap; a refresh gives the
 * state and lifetime the rules give; an admission fails (FULL) only when its
 * bucket holds four live established flows, and evicts only a live entry
 * not established, the one expiring first, and only when no way is empty
 * or expired.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/flow_state.h"
#include "dataplane/flow_table.h"
#include "fuzz.h"

#define N_FLOWS 24
#define FULL 5000u
#define SYN_IDLE 300u
#define CLOSING_IDLE 1000u

struct model_flow {
	bool present;     /* holds a way in the table (until evicted) */
	uint8_t state;    /* enum lb_flow_state */
	uint16_t backend; /* what it is pinned to */
	uint64_t expires; /* absolute, in model time */
};

static struct lb_flow_table *g_ft;
static struct model_flow g_m[N_FLOWS];
static uint64_t g_t;

/* Flow i's fingerprint: bucket i % 4, never 0. */
static uint64_t
sig_of(unsigned int i)
{
	return ((uint64_t)(i + 1) << 40) | ((uint64_t)(i * 7919u) << 8) | (i % 4);
}

static bool
live(const struct model_flow *f)
{
	return f->present && g_t < f->expires;
}

/* The rules of flow_state.h, restated: the state after one more packet. */
static uint8_t
next_state(uint8_t st, uint8_t tcpf)
{
	if (tcpf & (LB_TCP_FIN | LB_TCP_RST))
		return LB_FLOW_CLOSING;
	if ((tcpf & (LB_TCP_SYN | LB_TCP_ACK)) == LB_TCP_SYN)
		return st == LB_FLOW_ESTABLISHED ? LB_FLOW_ESTABLISHED : LB_FLOW_NEW;
	return st == LB_FLOW_NEW ? LB_FLOW_ESTABLISHED : st;
}

static uint32_t
lifetime(uint8_t st)
{
	return st == LB_FLOW_ESTABLISHED ? FULL : st == LB_FLOW_NEW ? SYN_IDLE : CLOSING_IDLE;
}

/* Every flow against the table. */
static void
check_all(void)
{
	uint32_t now = (uint32_t)g_t;

	for (unsigned int i = 0; i < N_FLOWS; i++) {
		const struct model_flow *f = &g_m[i];
		struct lb_flow_entry *e = lb_flow_lookup(g_ft, sig_of(i), now);

		if (live(f)) {
			FUZZ_CHECK(e != NULL, "flow %u: live (expires in %llu ticks) but not found",
			           i, (unsigned long long)(f->expires - g_t));
			FUZZ_CHECK(e->backend == f->backend, "flow %u: backend %u, pinned to %u", i,
			           (unsigned int)e->backend, f->backend);
			FUZZ_CHECK(e->state == f->state, "flow %u: state %u, the rules give %u", i,
			           (unsigned int)e->state, f->state);
		} else {
			FUZZ_CHECK(e == NULL, "flow %u: found but %s", i,
			           f->present ? "expired" : "never admitted or evicted");
		}
	}
}

static void
packet(unsigned int i, uint8_t tcpf, uint16_t backend)
{
	uint32_t now = (uint32_t)g_t;
	uint64_t sig = sig_of(i);
	struct model_flow *f = &g_m[i];
	struct lb_flow_entry *e = lb_flow_lookup(g_ft, sig, now);
	struct lb_flow_bucket before;
	const unsigned int bk = i % 4;
	int rc, way = -1;

	if (e != NULL) {
		lb_flow_refresh(e, now, tcpf, FULL, SYN_IDLE, CLOSING_IDLE);
		f->state = next_state(f->state, tcpf);
		f->expires = g_t + lifetime(f->state);
		FUZZ_CHECK(e->expires == now + lifetime(f->state), "flow %u: expires %u, want %u",
		           i, e->expires, now + lifetime(f->state));
		return;
	}
	const uint8_t st = (tcpf & (LB_TCP_FIN | LB_TCP_RST)) ? LB_FLOW_CLOSING : LB_FLOW_NEW;

	before = *lb_flow_bucket_of(g_ft, sig);
	rc = lb_flow_insert_state(g_ft, sig, now, lifetime(st), backend, 0, st, false);

	/* Which way changed: the victim. */
	const struct lb_flow_bucket *after = lb_flow_bucket_of(g_ft, sig);
	for (int w = 0; w < LB_FLOW_WAYS; w++)
		if (after->e[w].sig == sig &&
		    (before.e[w].sig != sig ||
		     memcmp(&before.e[w], &after->e[w], sizeof(before.e[w]))))
			way = w;

	unsigned int n_est = 0;
	for (unsigned int j = bk; j < N_FLOWS; j += 4)
		n_est += live(&g_m[j]) && g_m[j].state == LB_FLOW_ESTABLISHED;

	if (rc == LB_FLOW_INS_FULL) {
		FUZZ_CHECK(n_est == LB_FLOW_WAYS,
		           "flow %u: FULL with %u live established in bucket %u", i, n_est, bk);
		FUZZ_CHECK(memcmp(&before, after, sizeof(before)) == 0,
		           "FULL but the bucket changed");
		return; /* not pinned: the model keeps it absent */
	}
	FUZZ_CHECK(rc == LB_FLOW_INS_OK || rc == LB_FLOW_INS_EVICTED, "insert returned %d", rc);
	FUZZ_CHECK(way >= 0, "flow %u: admitted but no way holds it", i);
	if (rc == LB_FLOW_INS_EVICTED) {
		/* The victim: a live flow of this bucket, not established, closing
		 * before new (a closing entry guards a finished connection, a new
		 * one an opening connection), expiring first within its kind. */
		int victim = -1;

		for (unsigned int j = bk; j < N_FLOWS; j += 4)
			if (g_m[j].present && before.e[way].sig == sig_of(j))
				victim = (int)j;
		FUZZ_CHECK(victim >= 0, "evicted a way the model does not know");
		FUZZ_CHECK(live(&g_m[victim]), "flow %d: evicted, but the model has it expired",
		           victim);
		FUZZ_CHECK(g_m[victim].state != LB_FLOW_ESTABLISHED,
		           "flow %d: an established flow evicted by a new one", victim);
		for (int w = 0; w < LB_FLOW_WAYS; w++) {
			int occ = -1;

			for (unsigned int j = bk; j < N_FLOWS; j += 4)
				if (before.e[w].sig == sig_of(j))
					occ = (int)j;
			FUZZ_CHECK(occ >= 0, "evicted flow %d while way %d was empty", victim, w);
			FUZZ_CHECK(live(&g_m[occ]),
			           "evicted flow %d while way %d (flow %d) was expired", victim, w,
			           occ);
			if (g_m[occ].state == LB_FLOW_CLOSING && g_m[victim].state == LB_FLOW_NEW)
				FUZZ_CHECK(0, "evicted new flow %d while flow %d was closing",
				           victim, occ);
			if (g_m[occ].state == g_m[victim].state)
				FUZZ_CHECK(g_m[occ].expires >= g_m[victim].expires,
				           "evicted flow %d, but flow %d expires sooner", victim,
				           occ);
		}
		g_m[victim].present = false;
	} else {
		/* Into an empty or expired way: no live flow lost. */
		for (unsigned int j = bk; j < N_FLOWS; j += 4)
			if (j != i && live(&g_m[j]))
				FUZZ_CHECK(before.e[way].sig != sig_of(j),
				           "flow %u overwrote live flow %u without saying so", i,
				           j);
	}
	/* An expired way reused drops the flow that held it. */
	for (unsigned int j = bk; j < N_FLOWS; j += 4)
		if (j != i && g_m[j].present && before.e[way].sig == sig_of(j))
			g_m[j].present = false;
	f->present = true;
	f->state = st;
	f->backend = backend & ((1u << LB_FLOW_BACKEND_BITS) - 1);
	f->expires = g_t + lifetime(st);
}

static const uint8_t flag_sets[8] = {
        LB_TCP_SYN,
        LB_TCP_ACK,
        LB_TCP_SYN | LB_TCP_ACK,
        LB_TCP_FIN | LB_TCP_ACK,
        LB_TCP_RST,
        LB_TCP_ACK | 0x08 /* PSH */,
        0,
        LB_TCP_SYN | LB_TCP_FIN,
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (g_ft == NULL) {
		g_ft = lb_flow_table_create(16);
		FUZZ_CHECK(g_ft != NULL, "cannot create the table");
		FUZZ_CHECK(lb_flow_table_capacity(g_ft) == 16, "capacity %u",
		           lb_flow_table_capacity(g_ft));
	}
	memset(g_ft->buckets, 0, (size_t)g_ft->n_buckets * sizeof(*g_ft->buckets));
	memset(g_m, 0, sizeof(g_m));
	/* Just below the wrap of the 32-bit tick, moved by the first byte. */
	g_t = (1ull << 32) - 4096 + (size ? data[0] : 0) * 16ull;
	g_ft->clock = (uint32_t)g_t;
	g_ft->sweep = 0;
	for (size_t k = 1; k + 1 < size && k < 4096; k += 2) {
		const uint8_t op = data[k], arg = data[k + 1];

		switch (op >> 6) {
		case 0: /* a small step: 0-63 ticks */
			g_t += op & 63;
			break;
		case 1: /* a long one: up to 2^29 ticks, or past an entry's lifetime */
			g_t += (op & 1) ? (uint64_t)arg << 21 : (uint64_t)(op & 63) * 97 + arg;
			break;
		default: /* a packet: flow, flags, backend */
			packet(arg % N_FLOWS, flag_sets[op & 7], (uint16_t)((op >> 3) & 7));
			break;
		}
		lb_flow_table_advance(g_ft, (uint32_t)g_t);
		check_all();
	}
	return 0;
}
