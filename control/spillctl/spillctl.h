/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillctl's shared types: the client state every command gets (socket path,
 * output mode, the connection kept open between calls), a command's row
 * (name, help text, options, handler) and its parsed arguments, the exit
 * statuses, and the per-file command tables that main.c gathers.
 */
#ifndef SPILLCTL_H
#define SPILLCTL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Exit statuses, documented in --help. */
#define SPILLCTL_EXIT_OK 0
#define SPILLCTL_EXIT_SERVER 1
#define SPILLCTL_EXIT_USAGE 2
#define SPILLCTL_EXIT_IO 3

#define SPILLCTL_MAX_OPTS 8
#define SPILLCTL_MAX_POS 4

struct spillctl_conn {
	int fd;
	bool used;   /* at least one exchange completed: a reconnect is safe */
	char *buf;   /* received bytes not yet consumed */
	size_t len;  /* bytes in buf */
	size_t cap;  /* allocated size of buf */
	size_t scan; /* bytes of buf already searched for '\n' */
};

struct spillctl_cli {
	const char *socket_path;
	bool json;
	double timeout_s; /* 0: wait forever */
	struct spillctl_conn conn;
	json_int_t next_id;
};

struct spillctl_opt {
	const char *name; /* long name without dashes */
	bool has_arg;
	bool repeat; /* may be given several times; every value kept */
};

struct spillctl_command;

struct spillctl_args {
	const struct spillctl_command *cmd;
	const char *pos[SPILLCTL_MAX_POS];
	unsigned int npos;
	const char **vals[SPILLCTL_MAX_OPTS];
	size_t nvals[SPILLCTL_MAX_OPTS];
};

struct spillctl_command {
	const char *name;                /* one or two words: "vip add" */
	const char *synopsis;            /* what follows the name */
	const char *summary;             /* one line for the command list */
	const char *help;                /* description, options, examples */
	const struct spillctl_opt *opts; /* ended by a NULL name; NULL for none */
	unsigned int min_pos;
	unsigned int max_pos;
	/* Returns an exit status. */
	int (*run)(struct spillctl_cli *cli, const struct spillctl_args *a);
};

/*
 * The commands of each cmd_*.c file, in the order 'spillctl --help' lists
 * them, ended by NULL. main.c adds "version" before and "help" after them.
 */
extern const struct spillctl_command *const spillctl_cmds_vip[];
extern const struct spillctl_command *const spillctl_cmds_backend[];
extern const struct spillctl_command *const spillctl_cmds_stats[];
extern const struct spillctl_command *const spillctl_cmds_config[];
extern const struct spillctl_command *const spillctl_cmds_batch[];
extern const struct spillctl_command *const spillctl_cmds_top[];
extern const struct spillctl_command *const spillctl_cmds_hot[];

#endif /* SPILLCTL_H */
