/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillctl's command line: the global options (before or after the command),
 * a command's own options and positionals, the value parsers (numbers,
 * seconds, addresses, VIP notation) and usage errors. A function returning
 * bool prints the usage error itself when it returns false.
 */
#ifndef SPILLCTL_ARGS_H
#define SPILLCTL_ARGS_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "spillctl.h"

/* spillctl_args_parse() and spillctl_global_apply() results besides an exit status. */
#define SPILLCTL_ARGS_GO (-1)   /* parsed: go on (run the command) */
#define SPILLCTL_ARGS_HELP (-2) /* --help after the command: print its help */

/*
 * "spillctl: MESSAGE" and where to find help (@cmd's, or spillctl's for
 * NULL) on stderr. Returns SPILLCTL_EXIT_USAGE.
 */
int __attribute__((format(printf, 2, 3)))
spillctl_usage_error(const struct spillctl_command *cmd, const char *fmt, ...);

struct spillctl_vip_ref {
	char address[INET6_ADDRSTRLEN];
	unsigned long port;
	char protocol[4];
};

/* Decimal without sign or spaces, at most @max. */
bool spillctl_parse_ulong(const char *s, unsigned long max, unsigned long *out);

/* Seconds as a decimal number (fractions allowed) within [min, max]. */
bool spillctl_parse_seconds(const char *s, double min, double max, double *out);

/* IPv4 or IPv6 address text (IPv6 optionally in brackets), canonicalised. */
bool spillctl_parse_address(const char *s, char *out, size_t outlen);

/*
 * VIP notation: ADDRESS[:PORT][/PROTO], an IPv6 ADDRESS always in brackets.
 * No port means 0 (any port); no protocol means tcp. On failure @why says why
 * (nothing printed).
 */
bool spillctl_parse_vip(const char *text, struct spillctl_vip_ref *v, const char **why);

/* {"address", "port", "protocol"}: a new object. */
json_t *spillctl_vip_ref_json(const struct spillctl_vip_ref *v);

/* --backend ADDR[:WEIGHT], IPv6 in brackets; *weight is -1 if absent (nothing printed). */
bool spillctl_parse_backend_spec(const char *text, char *addr, size_t addrlen, long *weight);

enum spillctl_gopt {
	SPILLCTL_GOPT_NONE,
	SPILLCTL_GOPT_SOCKET,
	SPILLCTL_GOPT_JSON,
	SPILLCTL_GOPT_TIMEOUT,
	SPILLCTL_GOPT_HELP,
	SPILLCTL_GOPT_VERSION,
};

/* Recognises a global option at @arg; *inline_val points after '=' if present. */
enum spillctl_gopt spillctl_global_opt(const char *arg, const char **inline_val);

/*
 * Applies global option @id (value from @inline_val or the next argument);
 * @cmd (NULL before the command) is named in usage errors. Returns
 * SPILLCTL_ARGS_GO if handled (with *i advanced), else an exit status to
 * stop with.
 */
int spillctl_global_apply(struct spillctl_cli *cli, const struct spillctl_command *cmd,
                          enum spillctl_gopt id, const char *inline_val, int argc, char **argv,
                          int *i);

/*
 * Parses the arguments after the command words: the command's own options,
 * the global ones, positionals. Returns SPILLCTL_ARGS_GO to run the command,
 * SPILLCTL_ARGS_HELP for --help, or an exit status (bad usage:
 * SPILLCTL_EXIT_USAGE). Free *a with spillctl_args_free() in every case.
 */
int spillctl_args_parse(struct spillctl_cli *cli, const struct spillctl_command *cmd, int argc,
                        char **argv, struct spillctl_args *a);

void spillctl_args_free(struct spillctl_args *a);

/* Values of command option @name: count in *n, NULL if never given. */
const char **spillctl_arg_values(const struct spillctl_args *a, const char *name, size_t *n);

/* The last value of option @name, or NULL. */
const char *spillctl_arg_get(const struct spillctl_args *a, const char *name);

/* Whether option @name was given. */
bool spillctl_arg_flag(const struct spillctl_args *a, const char *name);

/* Positional @i as a VIP reference. */
bool spillctl_arg_vip(const struct spillctl_args *a, unsigned int i, struct spillctl_vip_ref *v);

/* Positional @i as a backend address, canonicalised into @out. */
bool spillctl_arg_address(const struct spillctl_args *a, unsigned int i, char *out, size_t len);

/* Whether value @val of option --@opt is one of @allowed (ended by NULL). */
bool spillctl_check_enum(const struct spillctl_args *a, const char *opt, const char *val,
                         const char *const *allowed);

/* --NAME X, a number in (lo, hi] (lo_open) or [lo, hi], added to @o as @key. */
bool spillctl_opt_real(const struct spillctl_args *a, const char *name, const char *key, double lo,
                       bool lo_open, double hi, json_t *o);

/* --NAME N, an integer in [lo, hi], added to @o as @key. */
bool spillctl_opt_uint(const struct spillctl_args *a, const char *name, const char *key,
                       unsigned long lo, unsigned long hi, json_t *o);

#endif /* SPILLCTL_ARGS_H */
