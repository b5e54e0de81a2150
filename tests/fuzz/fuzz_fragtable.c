/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the per-core fragment table: one input is a program of
 * clock moves, first fragments (record a datagram's ports) and later
 * fragments (find them) over 24 datagrams in a 16-entry table (4 buckets of
 * 4 ways), driven as the worker and the pipeline drive it (the clock told
 * once per step, lb_frag_table_advance).
 *
 * The harness keeps its own model in 64-bit time (the table's 32-bit ticks
 * wrap: the clock starts just below 2^32 and long moves reach 2^29 ticks, so
 * a run crosses the wrap many times): per datagram its latest ports and when
 * they were recorded. After every step each datagram is looked up: one the
 * model holds younger than the timeout is found with its latest ports, and
 * none is found that is older, whatever the wrap, or was evicted. A record
 * may evict (return 1) only when its bucket holds four live entries of other
 * datagrams, and only the oldest of them; otherwise no live entry is lost.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/frag_table.h"
#include "fuzz.h"
#include "dataplane/hash.h"

#define N_DGRAMS 24
#define CAPACITY 16
#define TIMEOUT 1000u

struct model_dgram {
	bool present; /* recorded and not evicted */
	uint16_t sport, dport;
	uint64_t born; /* model time of the latest record */
};

static struct lb_frag_table *g_t;
static struct lb_hash_key g_hk;
static struct lb_frag_key g_k[N_DGRAMS];
static struct model_dgram g_m[N_DGRAMS];
static uint64_t g_now;

static bool
live(const struct model_dgram *d)
{
	return d->present && g_now - d->born < TIMEOUT;
}

/* e is datagram j's latest record (not an older copy left in another way). */
static bool
holds(const struct lb_frag_entry *e, unsigned int j)
{
	return e->used && memcmp(&e->key, &g_k[j], sizeof(g_k[j])) == 0 && g_m[j].present &&
	       e->born == (uint32_t)g_m[j].born;
}

/* Where datagram i was just recorded (born now), or -1. */
static int
slot_of(const struct lb_frag_entry *e, unsigned int i)
{
	for (int s = 0; s < CAPACITY; s++)
		if (e[s].used && memcmp(&e[s].key, &g_k[i], sizeof(g_k[i])) == 0 &&
		    e[s].born == (uint32_t)g_now)
			return s;
	return -1;
}

static void
check_all(void)
{
	for (unsigned int i = 0; i < N_DGRAMS; i++) {
		uint16_t sp = 0, dp = 0;
		int rc = lb_frag_find(g_t, &g_hk, &g_k[i], (uint32_t)g_now, &sp, &dp);

		if (live(&g_m[i])) {
			FUZZ_CHECK(rc == 0, "datagram %u: recorded %llu ticks ago but not found", i,
			           (unsigned long long)(g_now - g_m[i].born));
			FUZZ_CHECK(sp == g_m[i].sport && dp == g_m[i].dport,
			           "datagram %u: ports %u/%u, recorded %u/%u", i, sp, dp,
			           g_m[i].sport, g_m[i].dport);
		} else {
			FUZZ_CHECK(rc == -ENOENT, "datagram %u: found, but %s", i,
			           g_m[i].present ? "its record has aged out"
			                          : "never recorded or evicted");
		}
	}
}

static void
record(unsigned int i, uint16_t ports)
{
	struct lb_frag_entry before[CAPACITY];
	const uint16_t sp = (uint16_t)(ports * 31u + 1), dp = (uint16_t)(ports ^ 0x5a5a);
	int rc, s, bk;

	memcpy(before, g_t->e, sizeof(before));
	rc = lb_frag_record(g_t, &g_hk, &g_k[i], sp, dp, (uint32_t)g_now);
	s = slot_of(g_t->e, i);
	FUZZ_CHECK(s >= 0, "datagram %u: recorded but not in the table", i);
	bk = s / LB_FRAG_WAYS;
	/* The way it took held (before) this datagram, nothing live, or a victim. */
	int prev = -1;

	for (unsigned int j = 0; j < N_DGRAMS; j++)
		if (holds(&before[s], j))
			prev = (int)j;
	if (rc == 1) {
		FUZZ_CHECK(prev >= 0 && prev != (int)i && live(&g_m[prev]),
		           "datagram %u: eviction reported, but the way held no other live entry",
		           i);
		for (int w = bk * LB_FRAG_WAYS; w < (bk + 1) * LB_FRAG_WAYS; w++) {
			int occ = -1;

			for (unsigned int j = 0; j < N_DGRAMS; j++)
				if (holds(&before[w], j))
					occ = (int)j;
			FUZZ_CHECK(occ >= 0 && occ != (int)i && live(&g_m[occ]),
			           "datagram %u evicted %d although way %d was free, expired or "
			           "its own",
			           i, prev, w);
			FUZZ_CHECK(g_m[occ].born >= g_m[prev].born,
			           "datagram %u evicted %d, but %d is older", i, prev, occ);
		}
		g_m[prev].present = false;
	} else {
		FUZZ_CHECK(rc == 0, "record returned %d", rc);
		FUZZ_CHECK(prev < 0 || prev == (int)i || !live(&g_m[prev]),
		           "datagram %u replaced live datagram %d without saying so", i, prev);
		if (prev >= 0 && prev != (int)i)
			g_m[prev].present = false;
	}
	/* Another way may still hold an aged-out record of it, never a live one. */
	for (int w = 0; w < CAPACITY; w++)
		FUZZ_CHECK(w == s || !g_t->e[w].used ||
		                   memcmp(&g_t->e[w].key, &g_k[i], sizeof(g_k[i])) != 0 ||
		                   (uint32_t)g_now - g_t->e[w].born >= TIMEOUT,
		           "datagram %u: live in two ways (%d and %d)", i, s, w);
	g_m[i].present = true;
	g_m[i].sport = sp;
	g_m[i].dport = dp;
	g_m[i].born = g_now;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (g_t == NULL) {
		g_t = lb_frag_table_create(CAPACITY, TIMEOUT);
		FUZZ_CHECK(g_t != NULL, "cannot create the table");
		FUZZ_CHECK(g_t->mask == CAPACITY / LB_FRAG_WAYS - 1, "mask %u", g_t->mask);
		lb_hash_key_from_seed(&g_hk, "fuzz-frag", 9);
		for (unsigned int i = 0; i < N_DGRAMS; i++) {
			memset(&g_k[i], 0, sizeof(g_k[i]));
			g_k[i].af = i % 3 ? LB_AF_INET : LB_AF_INET6;
			g_k[i].proto = i % 2 ? 17 : 6;
			g_k[i].src.w[0] = 0x0a000001u + i % 5;
			g_k[i].dst.w[0] = 0xc0000201u;
			g_k[i].id = i * 977u;
		}
	}
	memset(g_t->e, 0, CAPACITY * sizeof(*g_t->e));
	memset(g_m, 0, sizeof(g_m));
	g_now = (1ull << 32) - 4096 + (size ? data[0] : 0) * 16ull;
	g_t->clock = (uint32_t)g_now;
	g_t->sweep = 0;
	for (size_t k = 1; k + 1 < size && k < 4096; k += 2) {
		const uint8_t op = data[k], arg = data[k + 1];

		switch (op >> 6) {
		case 0: /* a small step: 0-63 ticks */
			g_now += op & 63;
			break;
		case 1: /* a long one: up to 2^29 ticks, or a few hundred */
			g_now += (op & 1) ? (uint64_t)arg << 21 : (uint64_t)(op & 63) * 31 + arg;
			break;
		case 2: /* a first fragment: record */
			record(arg % N_DGRAMS, (uint16_t)(op & 63));
			break;
		default: /* a later fragment: find (the checks below look every one up) */
			break;
		}
		lb_frag_table_advance(g_t, (uint32_t)g_now);
		check_all();
	}
	return 0;
}
