/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loader for xsk_steer.bpf.o through the skeleton that bpftool generates at build time, plus the
 * VIP map and counter helpers that work on plain fds, so the daemon can use them either on its own
 * loaded copy or on the maps of the copy DPDK's af_xdp PMD loaded and attached (found through the
 * interface's XDP program id).
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

#include "bpf/xsk_steer_loader.h"
#include "xsk_steer.skel.h"

struct lb_xsk_steer {
	struct xsk_steer *skel;
};

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

void
lb_xsk_maps_close(struct lb_xsk_maps *m)
{
	if (m->vips_fd >= 0)
		close(m->vips_fd);
	if (m->stats_fd >= 0)
		close(m->stats_fd);
	m->vips_fd = m->stats_fd = -1;
}

int
lb_xsk_maps_from_prog(int prog_fd, struct lb_xsk_maps *out)
{
	struct bpf_prog_info info;
	uint32_t ids[16], len = sizeof(info);
	int err = 0;

	out->vips_fd = out->stats_fd = -1;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	if (strncmp(info.name, "xsk_steer", sizeof(info.name)) != 0 ||
	    info.nr_map_ids > sizeof(ids) / sizeof(ids[0]))
		return -EPROTO;
	out->prog_id = info.id;
	{
		uint32_t n = info.nr_map_ids;

		memset(&info, 0, sizeof(info));
		info.nr_map_ids = n;
		info.map_ids = (uint64_t)(uintptr_t)ids;
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
			return -errno;
		if (info.nr_map_ids < n)
			n = info.nr_map_ids;
		for (uint32_t i = 0; i < n && !err; i++) {
			struct bpf_map_info mi;
			uint32_t mlen = sizeof(mi);
			int fd = bpf_map_get_fd_by_id(ids[i]);

			if (fd < 0) {
				err = -errno;
				break;
			}
			memset(&mi, 0, sizeof(mi));
			if (bpf_obj_get_info_by_fd(fd, &mi, &mlen)) {
				err = -errno;
				close(fd);
				break;
			}
			if (out->vips_fd < 0 && strcmp(mi.name, LB_XSK_MAP_VIPS) == 0 &&
			    mi.key_size == sizeof(struct lb_xsk_vip_key) &&
			    mi.value_size == sizeof(struct lb_xsk_vip_value))
				out->vips_fd = fd;
			else if (out->stats_fd < 0 && strcmp(mi.name, LB_XSK_MAP_STATS) == 0 &&
			         mi.max_entries == LB_XSK_CNT_MAX)
				out->stats_fd = fd;
			else
				close(fd);
		}
	}
	if (!err && (out->vips_fd < 0 || out->stats_fd < 0))
		err = -EPROTO;
	if (err)
		lb_xsk_maps_close(out);
	return err;
}

int
lb_xsk_maps_from_ifindex(int ifindex, struct lb_xsk_maps *out)
{
	uint32_t id = 0;
	int fd, err;

	out->vips_fd = out->stats_fd = -1;
	err = bpf_xdp_query_id(ifindex, 0, &id);
	if (err)
		return err == -EINVAL ? -ENOENT : err;
	if (id == 0)
		return -ENOENT;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return -errno;
	err = lb_xsk_maps_from_prog(fd, out);
	close(fd);
	return err;
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
lb_xsk_vip_put(int map_fd, const struct lb_xsk_vip_key *key, const struct lb_xsk_vip_value *val)
{
	return bpf_map_update_elem(map_fd, key, val, BPF_ANY) ? -errno : 0;
}

int
lb_xsk_vip_add(int map_fd, const struct lb_xsk_vip_key *key, uint32_t vip_id)
{
	struct lb_xsk_vip_value val = {.vip_id = vip_id};

	return lb_xsk_vip_put(map_fd, key, &val);
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
