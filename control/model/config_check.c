/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loader's checks across fields: a backend name's spelling, no two
 * backends of one VIP with the same address or the same identity, found in
 * O(N log N) by sorting, and no two VIPs of one identity, found in O(N) with a
 * hash set. config.c calls them while it reads a VIP; the message format of
 * every rejection (lb_config_vfail()) is here too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/model/config_internal.h"

void
lb_config_vfail(char *err, size_t errlen, const char *path, const char *fmt, va_list ap)
{
	int n;

	/* An empty path (a top-level RPC param object) gets no prefix. */
	n = snprintf(err, errlen, "%s%s", path, *path ? ": " : "");
	if (n < 0 || (size_t)n >= errlen)
		return;
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
}

static int __attribute__((format(printf, 4, 5)))
fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lb_config_vfail(err, errlen, path, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * A backend name: 1 to LB_NAME_MAX - 1 bytes, each one of A-Z a-z 0-9 . _ : -
 * (ASCII, so bytes and characters agree). The message names the first
 * offending byte by position and value, never the name itself: it may hold
 * terminal escapes, and it goes to clients and logs.
 */
int
lb_config_check_name(char *err, size_t errlen, const char *p, const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= LB_NAME_MAX)
		return fail(err, errlen, p, "must be 1 to %d bytes (got %zu)", LB_NAME_MAX - 1, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':' || ch == '-')
			continue;
		return fail(err, errlen, p,
		            "byte %zu (0x%02x) is not allowed: a name is made of A-Z a-z 0-9 "
		            ". _ : -",
		            i + 1, ch);
	}
	return 0;
}

/* Sort keys for the duplicate check: index, and the identity text. */
struct dup_key {
	const struct lb_cfg_backend *b;
	uint32_t index;
	char identity[LB_NAME_MAX + 48];
};

static int
cmp_dup_addr(const void *x, const void *y)
{
	const struct dup_key *a = x, *b = y;
	int d = memcmp(&a->b->addr, &b->b->addr, sizeof(a->b->addr));

	if (d == 0)
		d = (int)a->b->af - (int)b->b->af;
	return d != 0 ? d : (a->index > b->index) - (a->index < b->index);
}

static int
cmp_dup_identity(const void *x, const void *y)
{
	const struct dup_key *a = x, *b = y;
	int d = strcmp(a->identity, b->identity);

	return d != 0 ? d : (a->index > b->index) - (a->index < b->index);
}

/*
 * Reject two backends of one VIP with the same address or the same identity,
 * in O(N log N): for each backend, the first earlier one it duplicates; the
 * error names the first backend (in document order) that duplicates any,
 * address before identity, as a pairwise scan would.
 */
int
lb_config_check_duplicates(char *err, size_t errlen, const char *path, const struct lb_cfg_vip *v)
{
	uint32_t n = v->n_backends, best_i = UINT32_MAX, best_j = 0;
	struct dup_key *k;
	uint32_t *addr_dup, *id_dup;
	int rc = 0;

	if (n < 2)
		return 0;
	k = calloc(n, sizeof(*k));
	addr_dup = calloc(n, sizeof(*addr_dup));
	id_dup = calloc(n, sizeof(*id_dup));
	if (k == NULL || addr_dup == NULL || id_dup == NULL) {
		rc = fail(err, errlen, path, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		k[i].b = &v->backends[i];
		k[i].index = i;
		lb_cfg_backend_identity(k[i].b, k[i].identity, sizeof(k[i].identity));
		addr_dup[i] = id_dup[i] = UINT32_MAX;
	}
	/* Sorted with ties by index, the first of each run is the earliest. */
	qsort(k, n, sizeof(*k), cmp_dup_addr);
	for (uint32_t i = 1, first = 0; i < n; i++) {
		if (memcmp(&k[i].b->addr, &k[first].b->addr, 16) != 0 ||
		    k[i].b->af != k[first].b->af)
			first = i;
		else
			addr_dup[k[i].index] = k[first].index;
	}
	qsort(k, n, sizeof(*k), cmp_dup_identity);
	for (uint32_t i = 1, first = 0; i < n; i++) {
		if (strcmp(k[i].identity, k[first].identity) != 0)
			first = i;
		else
			id_dup[k[i].index] = k[first].index;
	}
	for (uint32_t i = 0; i < n && best_i == UINT32_MAX; i++) {
		if (addr_dup[i] != UINT32_MAX || id_dup[i] != UINT32_MAX) {
			best_i = i;
			best_j = addr_dup[i] < id_dup[i] ? addr_dup[i] : id_dup[i];
		}
	}
	if (best_i != UINT32_MAX) {
		char bp[256], ident[LB_NAME_MAX + 48];

		snprintf(bp, sizeof(bp), "%s[%u]", path, best_i);
		if (addr_dup[best_i] == best_j)
			rc = fail(err, errlen, bp, "duplicate backend address (also at %s[%u])",
			          path, best_j);
		else
			rc = fail(
			        err, errlen, bp,
			        "duplicate backend identity \"%s\" (also at %s[%u])",
			        lb_cfg_backend_identity(&v->backends[best_i], ident, sizeof(ident)),
			        path, best_j);
	}
out:
	free(k);
	free(addr_dup);
	free(id_dup);
	return rc;
}

_Static_assert((LB_CONFIG_VIP_SET_SLOTS & (LB_CONFIG_VIP_SET_SLOTS - 1)) == 0,
               "the VIP set's size is a power of two");
_Static_assert(LB_MAX_VIPS < UINT16_MAX, "a VIP's index plus one fits a slot");

/* Where a VIP's identity starts its probe: splitmix64 over its fields. */
static uint32_t
vip_set_hash(const struct lb_cfg_vip *v)
{
	uint64_t x = (uint64_t)v->af | (uint64_t)v->proto << 8 | (uint64_t)v->port << 16;

	x ^= lb_splitmix64(&x) ^ v->addr.q[0];
	x ^= lb_splitmix64(&x) ^ v->addr.q[1];
	return (uint32_t)lb_splitmix64(&x);
}

int
lb_config_vip_set_add(struct lb_config_vip_set *set, const struct lb_cfg_vip *vips, uint32_t i)
{
	uint32_t k = vip_set_hash(&vips[i]) & (LB_CONFIG_VIP_SET_SLOTS - 1);

	for (; set->slot[k] != 0; k = (k + 1) & (LB_CONFIG_VIP_SET_SLOTS - 1))
		if (lb_cfg_vip_same(&vips[set->slot[k] - 1], &vips[i]))
			return set->slot[k] - 1;
	set->slot[k] = (uint16_t)(i + 1);
	return -1;
}
