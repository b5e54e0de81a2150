/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loader for xsk_steer.bpf.o through the skeleton that bpftool generates at build time, plus the
 * VIP map and counter helpers that work on plain fds, so the daemon can use them either on its own
 * loaded copy or on the maps DPDK created and pinned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xsk_steer_loader.h"
#include "xsk_steer.skel.h"

struct lb_xsk_steer {
	struct xsk_steer *skel;
};

static int
set_pin(struct bpf_map *map, const char *root)
{
	char path[256];
	int n;

	if (!root)
		return bpf_map__set_pin_path(map, NULL);
	n = snprintf(path, sizeof(path), "%s/%s", root, bpf_map__name(map));
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return bpf_map__set_pin_path(map, path);
}

struct lb_xsk_steer *
lb_xsk_steer_open(const struct lb_xsk_steer_opts *opts)
{
	struct lb_xsk_steer_opts none = {0};
	struct lb_xsk_steer *s;
	int err;

	if (!opts)
		opts = &none;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->skel = xsk_steer__open();
	if (!s->skel) {
		err = -errno;
		goto fail;
	}
	s->skel->rodata->test_mode = opts->test_mode;
	err = set_pin(s->skel->maps.spillway_vips, opts->pin_root);
	if (!err)
		err = set_pin(s->skel->maps.spillway_xstat, opts->pin_root);
	if (err)
		goto fail;
	err = xsk_steer__load(s->skel);
	if (err)
		goto fail;
	return s;
fail:
	xsk_steer__destroy(s->skel);
	free(s);
	errno = err < 0 ? -err : EINVAL;
	return NULL;
}

void
lb_xsk_steer_close(struct lb_xsk_steer *s)
{
	if (!s)
		return;
	xsk_steer__destroy(s->skel);
	free(s);
}

int
lb_xsk_steer_prog_fd(const struct lb_xsk_steer *s)
{
	return bpf_program__fd(s->skel->progs.xsk_steer);
}

int
lb_xsk_steer_vip_map_fd(const struct lb_xsk_steer *s)
{
	return bpf_map__fd(s->skel->maps.spillway_vips);
}

int
lb_xsk_steer_stats_map_fd(const struct lb_xsk_steer *s)
{
	return bpf_map__fd(s->skel->maps.spillway_xstat);
}

int
lb_xsk_map_open_pinned(const char *pin_root, const char *name)
{
	char path[256];
	int n, fd;

	n = snprintf(path, sizeof(path), "%s/%s", pin_root, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int
lb_xsk_vip_key_make(struct lb_xsk_vip_key *key, int family, const void *addr, uint8_t proto,
                    uint16_t port_be)
{
	memset(key, 0, sizeof(*key));
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return -EINVAL;
	if (family == AF_INET) {
		key->family = LB_XSK_AF_INET;
		memcpy(key->addr, addr, 4);
	} else if (family == AF_INET6) {
		key->family = LB_XSK_AF_INET6;
		memcpy(key->addr, addr, 16);
	} else {
		return -EINVAL;
	}
	key->proto = proto;
	key->port = port_be;
	return 0;
}

int
lb_xsk_vip_add(int map_fd, const struct lb_xsk_vip_key *key, uint32_t vip_id)
{
	struct lb_xsk_vip_value val = {.vip_id = vip_id};

	return bpf_map_update_elem(map_fd, key, &val, BPF_ANY) ? -errno : 0;
}

int
lb_xsk_vip_remove(int map_fd, const struct lb_xsk_vip_key *key)
{
	return bpf_map_delete_elem(map_fd, key) ? -errno : 0;
}

int
lb_xsk_counters_read(int stats_fd, uint64_t out[LB_XSK_CNT_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	int err = 0;

	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t i = 0; i < LB_XSK_CNT_MAX; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(stats_fd, &i, vals)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			out[i] += vals[c];
	}
	free(vals);
	return err;
}

const char *
lb_xsk_obj_path(void)
{
	const char *env = getenv("SPILLWAY_XSK_OBJ");

	if (env && *env)
		return env;
	if (access(LB_XSK_OBJ_BUILD_PATH, R_OK) == 0)
		return LB_XSK_OBJ_BUILD_PATH;
	return LB_XSK_OBJ_INSTALL_PATH;
}
