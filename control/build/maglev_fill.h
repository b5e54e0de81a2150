/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Maglev fill engine, internal to control/ (lb_maglev_build is its user).
 * Given each backend's permutation (offset, skip), its slot quota and its id,
 * it hands out the table's slots turn by turn in proportion to the quotas, each
 * turn taking the first unclaimed slot along the backend's permutation.
 */
#ifndef LB_MAGLEV_FILL_H
#define LB_MAGLEV_FILL_H

#include <stdbool.h>
#include <stdint.h>

/* mult[] holds 1 .. LB_MAGLEV_MULTS skips per backend (the C probe uses 4, AVX2 8, AVX-512 16). */
#define LB_MAGLEV_MULTS 16

/*
 * Fill state. The caller sets a backend's permutation and id with
 * lb_maglev_fill_set_backend and writes quota[0 .. na) directly (the quotas sum
 * to m); every other field belongs to the fill.
 *
 * Per-backend state the walk touches on every turn is kept apart from the
 * calendar bookkeeping: cur[i] and the stride multiples mult[16i .. 16i+15]
 * (one cache line), so a turn reads little besides the bitmap.
 */
struct lb_maglev_fill {
	uint32_t na;
	uint32_t m;
	uint32_t qmax;
	uint32_t *cur;  /* next permutation slot to try */
	uint32_t *mult; /* per backend: 1 .. LB_MAGLEV_MULTS skips, mod M */
	uint32_t *quota;
	uint32_t *left;     /* turns still to take */
	uint32_t *step_div; /* Q / quota */
	uint32_t *step_rem; /* Q % quota */
	uint32_t *err;      /* k * Q mod quota for the next turn k */
	uint16_t *ids;
	uint16_t *link;    /* next backend in the same calendar bucket */
	uint16_t *head;    /* per round, first backend due */
	uint16_t *tail;    /* per round, last backend due */
	uint64_t *claimed; /* bitmap of taken slots */
	/* Tail phase: the last tail_slots slots are found by nearest_free. */
	uint32_t tail_slots;
	unsigned int width;   /* candidates per probe step: 4, 8 (probe8) or 16 (probe16) */
	uint32_t nfree;       /* entries in free_slots */
	uint32_t *free_slots; /* unclaimed slots, unordered */
	uint64_t *rank;       /* per backend: floor(skip^-1 * 2^64 / M), 0 until needed */
	uint64_t q64, r64;    /* 2^64 - 1 = q64 * M + r64 */
	bool vtail;           /* nearest_free16 */
};

/**
 * Set up a fill of a table of m slots (m prime, 3 <= m < 2^32) among na
 * backends (1 <= na <= 65535): zero f, allocate its arrays and choose the
 * widest probe this CPU runs within lb_maglev_probe_width_cap.
 *
 * @return 0; -ENOMEM, with f released.
 */
int lb_maglev_fill_init(struct lb_maglev_fill *f, uint32_t na, uint32_t m);

/**
 * Give backend i (< na) its permutation, offset + k * skip mod m for
 * k = 0, 1, ..., and the id its slots get.
 *
 * @param offset  < m
 * @param skip  1 <= skip < m, so the permutation visits every slot
 */
void lb_maglev_fill_set_backend(struct lb_maglev_fill *f, uint32_t i, uint32_t offset,
                                uint32_t skip, uint16_t id);

/**
 * Fill table[0 .. m) once every backend is set and quota[] sums to m: backend
 * i gets exactly quota[i] slots. The table depends only on the permutations,
 * quotas and ids, not on the probe width. Once per lb_maglev_fill_init: the
 * run consumes the fill's state.
 *
 * @return 0; -ENOMEM, with the table untouched.
 */
int lb_maglev_fill_run(struct lb_maglev_fill *f, uint16_t *table);

/** Free f's arrays and zero f; safe on a zeroed or already released fill. */
void lb_maglev_fill_release(struct lb_maglev_fill *f);

/**
 * For tests and benchmarks: cap the number of candidate slots the fill tests
 * per probe step (4: portable C; 8: AVX2; 16: AVX-512F; each used only if the
 * CPU has it and M <= 2^31). 0 removes the cap (the default). The table does
 * not depend on it. Not thread-safe; returns the previous cap.
 */
unsigned int lb_maglev_probe_width_cap(unsigned int width);

#endif /* LB_MAGLEV_FILL_H */
