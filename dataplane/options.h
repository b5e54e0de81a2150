/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillwayd's command line: EAL's arguments, "--", then the daemon's own
 * options, checked one by one (ranges, pairs that go together) before EAL or
 * any file is touched. The usage text (--help) lives here too.
 */
#ifndef LB_OPTIONS_H
#define LB_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define LB_OPTIONS_MAX_PORT_MACS 8

struct lb_options {
	const char *config;
	const char *state;
	const char *control;
	const char *control_group;
	const char *metrics;  /* --metrics ADDR:PORT, checked; NULL: no endpoint */
	const char *xdp_prog; /* NULL: the default object; "none": no steering */
	mode_t control_mode;
	uint32_t control_idle_ms; /* 0: the server's default (60 s) */
	const char *stats_file;
	int out_port;
	int exc_port;
	uint32_t idle_exit_ms;
	const char *bird_include; /* both or neither: route announcement through BIRD */
	const char *bird_socket;
	uint32_t drain_wait_ms;
	bool bird_withdraw;       /* --bird-withdraw: withdraw through BIRD and exit */
	bool no_dst_mac_check;    /* --dst-mac-check off: every destination MAC is accepted */
	unsigned int n_port_macs; /* --port-mac PORT=MAC, in order */
	struct {
		uint16_t port;
		uint8_t mac[6];
	} port_macs[LB_OPTIONS_MAX_PORT_MACS];
};

/**
 * Parse argv: the arguments before "--" are EAL's (*eal_argc of them, argv[0]
 * included), the ones after it go into o. Without "--", only --help/-h and
 * --version/-V are understood. --help and --version print to stdout and
 * exit(0) the process. With --bird-withdraw, --config/--state may be absent.
 *
 * @return 0, or -EINVAL after a message on stderr (bad usage: exit status 2):
 * the cause, then for a malformed command line one usage line and a pointer
 * to --help.
 */
int lb_options_parse(int argc, char **argv, struct lb_options *o, int *eal_argc);

#endif /* LB_OPTIONS_H */
