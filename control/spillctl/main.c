/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillctl: the command-line client of spillwayd's control socket. Each
 * command becomes one JSON-RPC 2.0 request (or one batch) on a Unix stream
 * socket, one JSON value per line (docs/control-protocol.md); the reply is
 * printed as aligned tables, or as the raw result with --json. Here: the
 * global options before the command, the lookup over the cmd_*.c files'
 * command tables, the help built from their rows, and "version".
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "args.h"
#include "conn.h"
#include "render.h"
#include "spillctl.h"

#ifndef SPILLWAY_VERSION
#error "SPILLWAY_VERSION comes from the build: -DSPILLWAY_VERSION=\"X.Y.Z\""
#endif

#define DEFAULT_SOCKET "/run/spillway/spillwayd.sock"
#define SOCKET_ENV "SPILLWAY_SOCKET"

/* Seconds per request (connect + send + reply) unless --timeout says otherwise. */
#define DEFAULT_TIMEOUT_S 10.0

/* For the "help" command; they walk the command tables, which hold its row. */
static void print_help(const char *group);
static bool is_group(const char *word);
static const struct spillctl_command *find_command(int argc, const char *const *argv, int *words);

static int
cmd_version(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	json_t *res;
	int rc = spillctl_call_print(cli, "version", NULL, &spillctl_shape_version, &res);

	(void)a;
	if (res != NULL) {
		printf("spillctl  %s\nspillwayd %s (control protocol %lld)\n", SPILLWAY_VERSION,
		       spillctl_jtext(res, "version", "?"),
		       (long long)spillctl_jint(res, "protocol"));
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_command version_cmd = {
        .name = "version",
        .synopsis = "",
        .summary = "show the versions of spillctl and spillwayd",
        .help = "Asks the server for its version and control protocol number (method\n"
                "\"version\") and prints them with spillctl's own.\n"
                "\n"
                "Examples:\n"
                "  spillctl version\n"
                "  spillctl --json version\n",
        .run = cmd_version,
};

static void
print_command_help(const struct spillctl_command *cmd)
{
	printf("Usage: spillctl [OPTIONS] %s%s%s\n\n%c%s.\n\n%s", cmd->name,
	       *cmd->synopsis ? " " : "", cmd->synopsis, toupper((unsigned char)cmd->summary[0]),
	       cmd->summary + 1, cmd->help);
	if (strstr(cmd->synopsis, "VIP") != NULL)
		fputs("\nVIP is ADDRESS[:PORT][/PROTO], an IPv6 ADDRESS in brackets (see\n"
		      "'spillctl --help').\n",
		      stdout);
	if (strstr(cmd->synopsis, "VIP ADDR") != NULL)
		fputs("ADDR is the backend's IPv4 or IPv6 address.\n", stdout);
	fputs("\nGlobal options (--socket, --json, --timeout) may also follow the command.\n",
	      stdout);
}

static int
cmd_help(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	const struct spillctl_command *c;
	int words;

	(void)cli;
	if (a->npos == 0) {
		print_help(NULL);
		return SPILLCTL_EXIT_OK;
	}
	c = find_command((int)a->npos, a->pos, &words);
	if (c != NULL && words == (int)a->npos) {
		print_command_help(c);
		return SPILLCTL_EXIT_OK;
	}
	if (a->npos == 1 && is_group(a->pos[0])) {
		print_help(a->pos[0]);
		return SPILLCTL_EXIT_OK;
	}
	return spillctl_usage_error(NULL, "help: unknown command '%s%s%s'", a->pos[0],
	                            a->npos > 1 ? " " : "", a->npos > 1 ? a->pos[1] : "");
}

static const struct spillctl_command help_cmd = {
        .name = "help",
        .synopsis = "[COMMAND]",
        .summary = "describe spillctl or one command",
        .help = "Same as 'spillctl --help' or 'spillctl COMMAND --help'.\n"
                "\n"
                "Example:\n"
                "  spillctl help backend drain\n",
        .max_pos = 2,
        .run = cmd_help,
};

static const struct spillctl_command *const cmds_version[] = {&version_cmd, NULL};
static const struct spillctl_command *const cmds_help[] = {&help_cmd, NULL};

/* Every command table, in the order 'spillctl --help' lists the commands. */
static const struct spillctl_command *const *const g_tables[] = {
        cmds_version,        spillctl_cmds_vip,    spillctl_cmds_backend,
        spillctl_cmds_stats, spillctl_cmds_config, spillctl_cmds_batch,
        spillctl_cmds_top,   spillctl_cmds_hot,    cmds_help,
};

/* The command at @i in that order, or NULL past the last. */
static const struct spillctl_command *
command_at(size_t i)
{
	for (size_t t = 0; t < sizeof(g_tables) / sizeof(g_tables[0]); t++) {
		for (const struct spillctl_command *const *c = g_tables[t]; *c != NULL; c++) {
			if (i-- == 0)
				return *c;
		}
	}
	return NULL;
}

static void
print_usage(FILE *f)
{
	fputs("Usage: spillctl [OPTIONS] COMMAND [ARGS]\n", f);
}

static void
print_help(const char *group)
{
	const struct spillctl_command *c;

	print_usage(stdout);
	if (group == NULL)
		fputs("\n"
		      "Control a running spillwayd over its control socket (JSON-RPC 2.0, one\n"
		      "JSON value per line; docs/control-protocol.md). A change is applied\n"
		      "atomically and carries traffic when the command returns.\n"
		      "\n"
		      "Options (also accepted after COMMAND):\n"
		      "  -s, --socket PATH   the control socket (default: $SPILLWAY_SOCKET,\n"
		      "                      else " DEFAULT_SOCKET ")\n"
		      "  -j, --json          print the server's result as JSON, for scripts\n"
		      "  -t, --timeout SEC   give up on a request after SEC seconds (default 10;\n"
		      "                      fractions allowed; 0 waits forever)\n"
		      "  -h, --help          this text; 'spillctl COMMAND --help' for one command\n"
		      "  -V, --version       print spillctl's version ('spillctl version' asks "
		      "the\n"
		      "                      server too)\n",
		      stdout);
	fputs("\nCommands:\n", stdout);
	for (size_t i = 0; (c = command_at(i)) != NULL; i++) {
		char head[96];

		if (group != NULL &&
		    (strncmp(c->name, group, strlen(group)) != 0 || c->name[strlen(group)] != ' '))
			continue;
		const char *opt = strstr(c->synopsis, "[-");
		int plen = opt != NULL ? (int)(opt - c->synopsis) : (int)strlen(c->synopsis);

		/* Positionals as they are, options summarised. */
		snprintf(head, sizeof(head), "%s%s%.*s%s", c->name, plen ? " " : "", plen,
		         c->synopsis, opt != NULL ? (plen ? "[OPTIONS]" : " [OPTIONS]") : "");
		printf("  %-31s %s\n", head, c->summary);
	}
	if (group != NULL) {
		printf("\n'spillctl %s COMMAND --help' describes one.\n", group);
		return;
	}
	fputs("\n"
	      "VIP notation:\n"
	      "  ADDRESS[:PORT][/PROTO], for example 192.0.2.10:80/tcp,\n"
	      "  [2001:db8::10]:443/udp or 192.0.2.20/udp. PROTO is tcp (the default) or\n"
	      "  udp; no PORT, or port 0, means every port of that protocol. An IPv6\n"
	      "  ADDRESS is always written in brackets ([2001:db8::10]/udp), since\n"
	      "  2001:db8::10:80 could be an address or an address and a port. A\n"
	      "  backend ADDR argument is a plain IPv4 or IPv6 address.\n"
	      "\n"
	      "Exit status:\n"
	      "  0  success\n"
	      "  1  the server returned an error, printed as 'spillctl: MESSAGE (code N)'\n"
	      "     (with --json the error object is also printed on standard output)\n"
	      "  2  usage error: unknown command or option, malformed VIP, address,\n"
	      "     weight or JSON argument\n"
	      "  3  cannot connect, I/O error, timeout, or a malformed reply (not a\n"
	      "     JSON-RPC 2.0 response to the request, or a result of the wrong shape)\n"
	      "\n"
	      "Environment:\n"
	      "  SPILLWAY_SOCKET   the control socket when --socket is not given\n"
	      "\n"
	      "Examples:\n"
	      "  spillctl vip add 192.0.2.10:80/tcp --backend 10.1.0.1 --backend 10.1.0.2:2\n"
	      "  spillctl backend drain 192.0.2.10:80/tcp 10.1.0.2\n"
	      "  spillctl -s /tmp/spw.sock stats\n"
	      "  spillctl --json stats | jq .totals.dropped\n"
	      "  spillctl top --interval 2\n",
	      stdout);
}

/* Number of leading words of @argv that spell @name, or 0. */
static int
name_matches(const char *name, int argc, const char *const *argv)
{
	int words = 0;
	const char *p = name;

	while (*p != '\0') {
		const char *sp = strchr(p, ' ');
		size_t n = sp != NULL ? (size_t)(sp - p) : strlen(p);

		if (words >= argc || strlen(argv[words]) != n || strncmp(argv[words], p, n) != 0)
			return 0;
		words++;
		p = sp != NULL ? sp + 1 : p + n;
	}
	return words;
}

static bool
is_group(const char *word)
{
	return strcmp(word, "vip") == 0 || strcmp(word, "backend") == 0 ||
	       strcmp(word, "config") == 0 || strcmp(word, "hot") == 0;
}

static const struct spillctl_command *
find_command(int argc, const char *const *argv, int *words)
{
	const struct spillctl_command *c;

	for (size_t i = 0; (c = command_at(i)) != NULL; i++) {
		int n = name_matches(c->name, argc, argv);

		if (n > 0) {
			*words = n;
			return c;
		}
	}
	return NULL;
}

static int
run(struct spillctl_cli *cli, int argc, char **argv)
{
	const struct spillctl_command *cmd;
	struct spillctl_args a;
	int words = 0;
	int i;
	int rc;

	/* Global options before the command. */
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		const char *inline_val;
		enum spillctl_gopt id = spillctl_global_opt(argv[i], &inline_val);

		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (id == SPILLCTL_GOPT_NONE)
			return spillctl_usage_error(NULL, "unknown option '%s'", argv[i]);
		if (id == SPILLCTL_GOPT_HELP && inline_val == NULL) {
			print_help(NULL);
			return SPILLCTL_EXIT_OK;
		}
		if (id == SPILLCTL_GOPT_VERSION && inline_val == NULL) {
			printf("spillctl %s\n", SPILLWAY_VERSION);
			return SPILLCTL_EXIT_OK;
		}
		rc = spillctl_global_apply(cli, NULL, id, inline_val, argc, argv, &i);
		if (rc >= 0)
			return rc;
	}
	if (i >= argc) {
		print_usage(stderr);
		fputs("Try 'spillctl --help'.\n", stderr);
		return SPILLCTL_EXIT_USAGE;
	}
	cmd = find_command(argc - i, (const char *const *)(argv + i), &words);
	if (cmd == NULL) {
		if (is_group(argv[i])) {
			if (i + 1 < argc && (strcmp(argv[i + 1], "--help") == 0 ||
			                     strcmp(argv[i + 1], "-h") == 0)) {
				print_help(argv[i]);
				return SPILLCTL_EXIT_OK;
			}
			if (i + 1 >= argc)
				return spillctl_usage_error(
				        NULL,
				        "'%s' needs a subcommand (see 'spillctl %s "
				        "--help')",
				        argv[i], argv[i]);
			return spillctl_usage_error(NULL, "unknown command '%s %s'", argv[i],
			                            argv[i + 1]);
		}
		return spillctl_usage_error(NULL, "unknown command '%s'", argv[i]);
	}
	rc = spillctl_args_parse(cli, cmd, argc - i - words, argv + i + words, &a);
	if (rc == SPILLCTL_ARGS_HELP) {
		print_command_help(cmd);
		rc = SPILLCTL_EXIT_OK;
	} else if (rc == SPILLCTL_ARGS_GO) {
		rc = cmd->run(cli, &a);
	}
	spillctl_args_free(&a);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *env = getenv(SOCKET_ENV);
	struct spillctl_cli cli = {
	        .socket_path = env != NULL && *env != '\0' ? env : DEFAULT_SOCKET,
	        .timeout_s = DEFAULT_TIMEOUT_S,
	        .conn = {.fd = -1},
	        .next_id = 1,
	};
	int rc = run(&cli, argc, argv);

	spillctl_conn_close(&cli.conn);
	free(cli.conn.buf);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "spillctl: standard output: %s\n", strerror(errno));
		if (rc == SPILLCTL_EXIT_OK)
			rc = SPILLCTL_EXIT_IO;
	}
	return rc;
}
