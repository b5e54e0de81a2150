/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillctl's command-line parsing: global options, a command's options
 * (long form, "--name value" or "--name=value", some repeatable) and
 * positionals checked against its row; the value parsers behind them; and
 * the usage errors, which always name the help to read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "args.h"

int __attribute__((format(printf, 2, 3)))
spillctl_usage_error(const struct spillctl_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("spillctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd != NULL)
		fprintf(stderr, "\nTry 'spillctl %s --help'.\n", cmd->name);
	else
		fputs("\nTry 'spillctl --help'.\n", stderr);
	return SPILLCTL_EXIT_USAGE;
}

bool
spillctl_parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

bool
spillctl_parse_seconds(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool
spillctl_parse_address(const char *s, char *out, size_t outlen)
{
	unsigned char bin[sizeof(struct in6_addr)];
	char tmp[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(s);

	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		if (n - 2 >= sizeof(tmp))
			return false;
		memcpy(tmp, s + 1, n - 2);
		tmp[n - 2] = '\0';
		return inet_pton(AF_INET6, tmp, bin) == 1 &&
		       inet_ntop(AF_INET6, bin, out, (socklen_t)outlen) != NULL;
	}
	if (inet_pton(AF_INET, s, bin) == 1)
		return inet_ntop(AF_INET, bin, out, (socklen_t)outlen) != NULL;
	if (inet_pton(AF_INET6, s, bin) == 1)
		return inet_ntop(AF_INET6, bin, out, (socklen_t)outlen) != NULL;
	return false;
}

bool
spillctl_parse_vip(const char *text, struct spillctl_vip_ref *v, const char **why)
{
	char buf[96];
	char *slash;
	char *addr = buf;
	char *port = NULL;

	if (strlen(text) >= sizeof(buf)) {
		*why = "too long";
		return false;
	}
	strcpy(buf, text);
	strcpy(v->protocol, "tcp");
	slash = strrchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		if (strcasecmp(slash + 1, "tcp") == 0) {
			strcpy(v->protocol, "tcp");
		} else if (strcasecmp(slash + 1, "udp") == 0) {
			strcpy(v->protocol, "udp");
		} else {
			*why = "the protocol must be tcp or udp";
			return false;
		}
	}
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (close == NULL) {
			*why = "missing ']' after the IPv6 address";
			return false;
		}
		*close = '\0';
		addr = buf + 1;
		if (close[1] == ':') {
			port = close + 2;
		} else if (close[1] != '\0') {
			*why = "expected ':PORT' after ']'";
			return false;
		}
	} else {
		char *colon = strchr(buf, ':');

		/* "2001:db8::1:80" could be either: brackets make it explicit. */
		if (colon != NULL && strchr(colon + 1, ':') != NULL) {
			*why = "an IPv6 address is written in brackets: [2001:db8::10]:80/tcp, "
			       "or [2001:db8::10]/udp for every port";
			return false;
		}
		if (colon != NULL) {
			*colon = '\0';
			port = colon + 1;
		}
	}
	v->port = 0;
	if (port != NULL && !spillctl_parse_ulong(port, 65535, &v->port)) {
		*why = "the port must be a number from 0 to 65535";
		return false;
	}
	if (!spillctl_parse_address(addr, v->address, sizeof(v->address))) {
		*why = "not an IPv4 or IPv6 address";
		return false;
	}
	return true;
}

json_t *
spillctl_vip_ref_json(const struct spillctl_vip_ref *v)
{
	return json_pack("{s:s, s:i, s:s}", "address", v->address, "port", (int)v->port, "protocol",
	                 v->protocol);
}

bool
spillctl_parse_backend_spec(const char *text, char *addr, size_t addrlen, long *weight)
{
	char buf[96];
	char *w = NULL;
	unsigned long wv;

	if (strlen(text) >= sizeof(buf))
		return false;
	strcpy(buf, text);
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (close == NULL)
			return false;
		if (close[1] == ':') {
			close[1] = '\0';
			w = close + 2;
		} else if (close[1] != '\0') {
			return false;
		}
	} else {
		char *colon = strchr(buf, ':');

		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			return false; /* IPv6 without brackets: is the last group a weight? */
		if (colon != NULL) {
			*colon = '\0';
			w = colon + 1;
		}
	}
	*weight = -1;
	if (w != NULL) {
		if (!spillctl_parse_ulong(w, 65535, &wv))
			return false;
		*weight = (long)wv;
	}
	return spillctl_parse_address(buf, addr, addrlen);
}

enum spillctl_gopt
spillctl_global_opt(const char *arg, const char **inline_val)
{
	static const struct {
		const char *lng;
		const char *shrt;
		enum spillctl_gopt id;
	} g[] = {
	        {"--socket", "-s", SPILLCTL_GOPT_SOCKET},   {"--json", "-j", SPILLCTL_GOPT_JSON},
	        {"--timeout", "-t", SPILLCTL_GOPT_TIMEOUT}, {"--help", "-h", SPILLCTL_GOPT_HELP},
	        {"--version", "-V", SPILLCTL_GOPT_VERSION},
	};

	*inline_val = NULL;
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		size_t n = strlen(g[i].lng);

		if (strcmp(arg, g[i].shrt) == 0 || strcmp(arg, g[i].lng) == 0)
			return g[i].id;
		if (strncmp(arg, g[i].lng, n) == 0 && arg[n] == '=') {
			*inline_val = arg + n + 1;
			return g[i].id;
		}
	}
	return SPILLCTL_GOPT_NONE;
}

int
spillctl_global_apply(struct spillctl_cli *cli, const struct spillctl_command *cmd,
                      enum spillctl_gopt id, const char *inline_val, int argc, char **argv, int *i)
{
	const char *val = inline_val;
	const char *opt = argv[*i];

	if (id == SPILLCTL_GOPT_JSON || id == SPILLCTL_GOPT_HELP || id == SPILLCTL_GOPT_VERSION) {
		if (val != NULL)
			return spillctl_usage_error(cmd, "option '%.*s' takes no value",
			                            (int)(strchr(opt, '=') - opt), opt);
		if (id == SPILLCTL_GOPT_JSON)
			cli->json = true;
		return SPILLCTL_ARGS_GO;
	}
	if (val == NULL) {
		if (*i + 1 >= argc)
			return spillctl_usage_error(cmd, "option '%s' needs a value", opt);
		val = argv[++*i];
	}
	if (id == SPILLCTL_GOPT_SOCKET) {
		if (*val == '\0')
			return spillctl_usage_error(cmd, "--socket: empty path");
		cli->socket_path = val;
	} else if (!spillctl_parse_seconds(val, 0, 86400, &cli->timeout_s)) {
		return spillctl_usage_error(
		        cmd,
		        "--timeout: '%s' is not a number of seconds from 0 to 86400 "
		        "(0 waits forever)",
		        val);
	}
	return SPILLCTL_ARGS_GO;
}

int
spillctl_args_parse(struct spillctl_cli *cli, const struct spillctl_command *cmd, int argc,
                    char **argv, struct spillctl_args *a)
{
	bool only_pos = false;

	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *inline_val;
		enum spillctl_gopt gid;
		unsigned int k;
		int rc;

		if (only_pos || arg[0] != '-' || arg[1] == '\0') {
			if (a->npos == cmd->max_pos || a->npos == SPILLCTL_MAX_POS)
				return spillctl_usage_error(cmd, "%s: unexpected argument '%s'",
				                            cmd->name, arg);
			a->pos[a->npos++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_pos = true;
			continue;
		}
		gid = spillctl_global_opt(arg, &inline_val);
		if (gid == SPILLCTL_GOPT_HELP || gid == SPILLCTL_GOPT_VERSION) {
			if (gid == SPILLCTL_GOPT_VERSION)
				return spillctl_usage_error(cmd,
				                            "--version goes before the command");
			return SPILLCTL_ARGS_HELP;
		}
		if (gid != SPILLCTL_GOPT_NONE) {
			rc = spillctl_global_apply(cli, cmd, gid, inline_val, argc, argv, &i);
			if (rc >= 0)
				return rc;
			continue;
		}
		for (k = 0; cmd->opts != NULL && cmd->opts[k].name != NULL; k++) {
			size_t n = strlen(cmd->opts[k].name);

			if (strncmp(arg, "--", 2) == 0 &&
			    strncmp(arg + 2, cmd->opts[k].name, n) == 0 &&
			    (arg[2 + n] == '\0' || arg[2 + n] == '='))
				break;
		}
		if (cmd->opts == NULL || cmd->opts[k].name == NULL)
			return spillctl_usage_error(cmd, "%s: unknown option '%s'", cmd->name, arg);
		{
			const struct spillctl_opt *o = &cmd->opts[k];
			const char *eq = strchr(arg, '=');
			const char *val = "";
			const char **nv;

			if (o->has_arg) {
				if (eq != NULL)
					val = eq + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					return spillctl_usage_error(
					        cmd, "option '--%s' needs a value", o->name);
			} else if (eq != NULL) {
				return spillctl_usage_error(cmd, "option '--%s' takes no value",
				                            o->name);
			}
			if (!o->repeat && a->nvals[k] != 0)
				return spillctl_usage_error(cmd, "option '--%s' given twice",
				                            o->name);
			nv = realloc(a->vals[k], (a->nvals[k] + 1) * sizeof(*nv));
			if (nv == NULL)
				return spillctl_usage_error(cmd, "out of memory");
			nv[a->nvals[k]++] = val;
			a->vals[k] = nv;
		}
	}
	if (a->npos < cmd->min_pos)
		return spillctl_usage_error(cmd, "usage: spillctl %s %s", cmd->name, cmd->synopsis);
	return SPILLCTL_ARGS_GO;
}

void
spillctl_args_free(struct spillctl_args *a)
{
	for (unsigned int i = 0; i < SPILLCTL_MAX_OPTS; i++)
		free(a->vals[i]);
}

const char **
spillctl_arg_values(const struct spillctl_args *a, const char *name, size_t *n)
{
	for (unsigned int i = 0; a->cmd->opts != NULL && a->cmd->opts[i].name != NULL; i++) {
		if (strcmp(a->cmd->opts[i].name, name) == 0) {
			*n = a->nvals[i];
			return a->vals[i];
		}
	}
	*n = 0;
	return NULL;
}

const char *
spillctl_arg_get(const struct spillctl_args *a, const char *name)
{
	size_t n;
	const char **v = spillctl_arg_values(a, name, &n);

	return n != 0 ? v[n - 1] : NULL;
}

bool
spillctl_arg_flag(const struct spillctl_args *a, const char *name)
{
	return spillctl_arg_get(a, name) != NULL;
}

bool
spillctl_arg_vip(const struct spillctl_args *a, unsigned int i, struct spillctl_vip_ref *v)
{
	const char *why;

	if (spillctl_parse_vip(a->pos[i], v, &why))
		return true;
	spillctl_usage_error(a->cmd, "invalid VIP '%s': %s", a->pos[i], why);
	return false;
}

bool
spillctl_arg_address(const struct spillctl_args *a, unsigned int i, char *out, size_t len)
{
	if (spillctl_parse_address(a->pos[i], out, len))
		return true;
	spillctl_usage_error(a->cmd, "invalid backend address '%s': not an IPv4 or IPv6 address",
	                     a->pos[i]);
	return false;
}

bool
spillctl_check_enum(const struct spillctl_args *a, const char *opt, const char *val,
                    const char *const *allowed)
{
	char list[128] = "";

	for (size_t i = 0; allowed[i] != NULL; i++) {
		if (strcmp(val, allowed[i]) == 0)
			return true;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
		         allowed[i]);
	}
	spillctl_usage_error(a->cmd, "--%s: '%s' is not one of %s", opt, val, list);
	return false;
}

bool
spillctl_opt_real(const struct spillctl_args *a, const char *name, const char *key, double lo,
                  bool lo_open, double hi, json_t *o)
{
	const char *s = spillctl_arg_get(a, name);
	char *end;
	double v;

	if (s == NULL)
		return true;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v) ||
	    (lo_open ? v <= lo : v < lo) || v > hi) {
		spillctl_usage_error(a->cmd, "--%s: '%s' is not a number %s %g and %g", name, s,
		                     lo_open ? "above" : "from", lo, hi);
		return false;
	}
	json_object_set_new(o, key, json_real(v));
	return true;
}

bool
spillctl_opt_uint(const struct spillctl_args *a, const char *name, const char *key,
                  unsigned long lo, unsigned long hi, json_t *o)
{
	const char *s = spillctl_arg_get(a, name);
	unsigned long v;

	if (s == NULL)
		return true;
	if (!spillctl_parse_ulong(s, hi, &v) || v < lo) {
		spillctl_usage_error(a->cmd, "--%s: '%s' is not an integer from %lu to %lu", name,
		                     s, lo, hi);
		return false;
	}
	json_object_set_new(o, key, json_integer((json_int_t)v));
	return true;
}
