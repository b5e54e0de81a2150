/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillctl: the command-line client of spillwayd's control socket. Each
 * command becomes one JSON-RPC 2.0 request (or one batch) on a Unix stream
 * socket, one JSON value per line (docs/control-protocol.md); the reply is
 * printed as aligned tables, or as the raw result with --json. Commands,
 * their options and their help text live in one table so they cannot drift.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#ifndef SPILLWAY_VERSION
#define SPILLWAY_VERSION "0.1.0"
#endif

#define DEFAULT_SOCKET "/run/spillway/spillwayd.sock"
#define SOCKET_ENV "SPILLWAY_SOCKET"

/* Seconds per request (connect + send + reply) unless --timeout says otherwise. */
#define DEFAULT_TIMEOUT_S 10.0

/* Largest reply line accepted: a raw Maglev table of 1048573 slots of IPv6
 * addresses is about 45 MiB, a full configuration a few MiB. */
#define REPLY_MAX (256u << 20)

/* Receive buffer: first size, then doubled up to REPLY_MAX. */
#define RECV_CHUNK 65536

/* Exit statuses, documented in --help. */
#define EXIT_OK 0
#define EXIT_SERVER 1
#define EXIT_USAGE 2
#define EXIT_IO 3

#define MAX_OPTS 8
#define MAX_POS 4
#define TABLE_MAX_COLS 10

/* Set by SIGINT/SIGTERM during "top": stop after the current refresh. */
static volatile sig_atomic_t g_stop;

struct conn {
	int fd;
	bool used;   /* at least one exchange completed: a reconnect is safe */
	char *buf;   /* received bytes not yet consumed */
	size_t len;  /* bytes in buf */
	size_t cap;  /* allocated size of buf */
	size_t scan; /* bytes of buf already searched for '\n' */
};

struct cli {
	const char *socket_path;
	bool json;
	double timeout_s; /* 0: wait forever */
	struct conn conn;
	json_int_t next_id;
};

struct opt_spec {
	const char *name; /* long name without dashes */
	bool has_arg;
	bool repeat; /* may be given several times; every value kept */
};

struct command;

struct args {
	const struct command *cmd;
	const char *pos[MAX_POS];
	unsigned int npos;
	const char **vals[MAX_OPTS];
	size_t nvals[MAX_OPTS];
};

struct command {
	const char *name;     /* one or two words: "vip add" */
	const char *synopsis; /* what follows the name */
	const char *summary;  /* one line for the command list */
	const char *help;     /* description, options, examples */
	const struct opt_spec *opts;
	unsigned int min_pos;
	unsigned int max_pos;
	int (*run)(struct cli *cli, const struct args *a);
};

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

static int __attribute__((format(printf, 2, 3)))
usage_error(const struct command *cmd, const char *fmt, ...)
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
	return EXIT_USAGE;
}

static int __attribute__((format(printf, 2, 3)))
io_error(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	if (g_stop)
		return EXIT_IO;
	fprintf(stderr, "spillctl: %s: ", cli->socket_path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_IO;
}

/* ------------------------------------------------------------------------ */
/* Socket I/O with a deadline                                               */
/* ------------------------------------------------------------------------ */

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Absolute deadline for one request; INT64_MAX means none. */
static int64_t
deadline_after(double seconds)
{
	if (seconds <= 0)
		return INT64_MAX;
	return now_ns() + (int64_t)(seconds * 1e9);
}

/* Waits for @events on @fd. Returns 0, -ETIMEDOUT, -EINTR (stop requested) or -errno. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		int ms = -1;
		int n;

		if (deadline != INT64_MAX) {
			int64_t left = deadline - now_ns();

			if (left <= 0)
				return -ETIMEDOUT;
			ms = (int)((left + 999999) / 1000000);
		}
		n = poll(&p, 1, ms);
		if (n > 0)
			return 0;
		if (n == 0)
			continue; /* re-check the deadline */
		if (errno != EINTR)
			return -errno;
		if (g_stop)
			return -EINTR;
	}
}

static void
conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->used = false;
	c->len = 0;
	c->scan = 0;
}

static int
conn_open(struct cli *cli, int64_t deadline)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct conn *c = &cli->conn;
	int fd;
	int rc;

	if (strlen(cli->socket_path) >= sizeof(sa.sun_path))
		return io_error(cli, "cannot connect: socket path longer than %zu bytes",
		                sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, cli->socket_path, strlen(cli->socket_path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return io_error(cli, "cannot create socket: %s", strerror(errno));

	/* A Unix stream connect either completes, or fails with EAGAIN when the
	 * listen backlog is full: retry that until the deadline. */
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINPROGRESS) {
			int err = 0;
			socklen_t el = sizeof(err);

			rc = wait_fd(fd, POLLOUT, deadline);
			if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
			    err != 0)
				rc = -err;
			if (rc == 0)
				break;
			errno = -rc;
		} else if (errno == EAGAIN || errno == EINTR) {
			struct timespec ts = {.tv_nsec = 10 * 1000000};

			if (g_stop) {
				errno = EINTR;
			} else if (now_ns() >= deadline) {
				errno = ETIMEDOUT;
			} else {
				nanosleep(&ts, NULL);
				continue;
			}
		}
		rc = errno;
		close(fd);
		if (rc == ETIMEDOUT)
			return io_error(cli, "cannot connect: timed out");
		return io_error(cli, "cannot connect: %s%s", strerror(rc),
		                rc == ENOENT || rc == ECONNREFUSED
		                        ? " (is spillwayd running with --control on this path?)"
		                        : "");
	}
	c->fd = fd;
	c->used = false;
	c->len = 0;
	c->scan = 0;
	return EXIT_OK;
}

/* Sends all of @text; returns 0 or -errno. */
static int
conn_send(struct conn *c, const char *text, size_t len, int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			int rc = wait_fd(c->fd, POLLOUT, deadline);

			if (rc < 0)
				return rc;
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/*
 * Receives one '\n'-terminated line into c->buf; returns its length (without
 * the newline, which is replaced by '\0'), -ECONNRESET on EOF, -EMSGSIZE
 * above REPLY_MAX, -ETIMEDOUT or -errno. The caller drops it with conn_consume().
 */
static ssize_t
conn_recv_line(struct conn *c, int64_t deadline)
{
	for (;;) {
		char *nl =
		        c->len > c->scan ? memchr(c->buf + c->scan, '\n', c->len - c->scan) : NULL;
		ssize_t n;

		if (nl != NULL) {
			*nl = '\0';
			return nl - c->buf;
		}
		c->scan = c->len;
		if (c->len == c->cap) {
			size_t ncap = c->cap != 0 ? c->cap * 2 : RECV_CHUNK;
			char *nb;

			if (c->cap >= (size_t)REPLY_MAX + 1)
				return -EMSGSIZE;
			if (ncap > (size_t)REPLY_MAX + 1)
				ncap = (size_t)REPLY_MAX + 1;
			nb = realloc(c->buf, ncap);
			if (nb == NULL)
				return -ENOMEM;
			c->buf = nb;
			c->cap = ncap;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
			int rc = wait_fd(c->fd, POLLIN, deadline);

			if (rc < 0)
				return rc;
			continue;
		}
		return -errno;
	}
}

/* Drops the line of @n bytes (plus its newline) returned by conn_recv_line(). */
static void
conn_consume(struct conn *c, size_t n)
{
	size_t rest = c->len - (n + 1);

	memmove(c->buf, c->buf + n + 1, rest);
	c->len = rest;
	c->scan = 0;
}

static const char *
io_reason(int err)
{
	switch (err) {
	case ETIMEDOUT:
		return "timed out waiting for the server (see --timeout)";
	case ECONNRESET:
		return "connection closed by the server";
	case EMSGSIZE:
		return "reply larger than 256 MiB";
	default:
		return strerror(err);
	}
}

/*
 * Sends @req (one request or a batch) and parses the reply line into *reply.
 * A connection kept open from an earlier exchange (top) that turns out to be
 * closed by the server (idle timeout) is reopened once. Returns an exit status.
 */
static int
exchange(struct cli *cli, const json_t *req, json_t **reply)
{
	int64_t deadline = deadline_after(cli->timeout_s);
	struct conn *c = &cli->conn;
	json_error_t jerr;
	char *text;
	size_t tlen;
	ssize_t n;
	int rc;

	*reply = NULL;
	text = json_dumps(req, JSON_COMPACT);
	if (text == NULL)
		return io_error(cli, "cannot encode the request: out of memory");
	tlen = strlen(text);
	text[tlen] = '\n'; /* json_dumps' terminator becomes the line end */

	for (int attempt = 0;; attempt++) {
		bool reused = c->fd >= 0 && c->used;

		if (c->fd < 0) {
			rc = conn_open(cli, deadline);
			if (rc != EXIT_OK) {
				free(text);
				return rc;
			}
		}
		rc = conn_send(c, text, tlen + 1, deadline);
		n = rc < 0 ? rc : conn_recv_line(c, deadline);
		if (n >= 0)
			break;
		conn_close(c);
		if (reused && attempt == 0 && (n == -ECONNRESET || n == -EPIPE))
			continue;
		free(text);
		if (n == -EINTR && g_stop)
			return EXIT_IO;
		return io_error(cli, "%s", io_reason((int)-n));
	}
	free(text);

	*reply = json_loadb(c->buf, (size_t)n, 0, &jerr);
	conn_consume(c, (size_t)n);
	if (*reply == NULL) {
		conn_close(c);
		return io_error(cli, "invalid reply from the server: %s", jerr.text);
	}
	c->used = true;
	return EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* JSON helpers                                                             */
/* ------------------------------------------------------------------------ */

static const char *
jstr(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : def;
}

static json_int_t
jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (json_int_t)json_real_value(v);
	return 0;
}

static void
print_json(const json_t *v)
{
	json_dumpf(v, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
	fputc('\n', stdout);
}

/* "192.0.2.10:80/tcp" or "[2001:db8::10]:443/udp" from a VIP object. */
static void
vip_text(const json_t *v, char *buf, size_t len)
{
	const char *addr = jstr(v, "address", "?");
	bool v6 = strchr(addr, ':') != NULL;

	snprintf(buf, len, "%s%s%s:%lld/%s", v6 ? "[" : "", addr, v6 ? "]" : "",
	         (long long)jint(v, "port"), jstr(v, "protocol", "?"));
}

/* ------------------------------------------------------------------------ */
/* Aligned tables                                                           */
/* ------------------------------------------------------------------------ */

struct table {
	unsigned int ncols;
	char *head[TABLE_MAX_COLS];
	bool right[TABLE_MAX_COLS];
	size_t width[TABLE_MAX_COLS];
	char **cell; /* nrows * ncols */
	size_t nrows;
	size_t cap;
};

/* Display width: UTF-8 continuation bytes take no column. */
static size_t
text_width(const char *s)
{
	size_t w = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

/* @spec: column headings separated by '|'; a leading '>' right-aligns the column. */
static void
table_init(struct table *t, const char *spec)
{
	const char *p = spec;

	memset(t, 0, sizeof(*t));
	while (t->ncols < TABLE_MAX_COLS) {
		const char *end = strchr(p, '|');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

		if (*p == '>') {
			t->right[t->ncols] = true;
			p++;
			n--;
		}
		t->head[t->ncols] = strndup(p, n);
		t->width[t->ncols] = text_width(t->head[t->ncols]);
		t->ncols++;
		if (end == NULL)
			break;
		p = end + 1;
	}
}

/* Adds a row; @fmt produces the cells separated by '\t'. */
static void __attribute__((format(printf, 2, 3))) table_add(struct table *t, const char *fmt, ...)
{
	char *line = NULL;
	char *p;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (t->nrows == t->cap) {
		size_t ncap = t->cap != 0 ? t->cap * 2 : 16;
		char **nc = realloc(t->cell, ncap * t->ncols * sizeof(*nc));

		if (nc == NULL) {
			free(line);
			return;
		}
		t->cell = nc;
		t->cap = ncap;
	}
	p = line;
	for (unsigned int i = 0; i < t->ncols; i++) {
		char *tab = p != NULL ? strchr(p, '\t') : NULL;
		char *cell;

		if (tab != NULL)
			*tab = '\0';
		cell = strdup(p != NULL ? p : "");
		/* Server strings reach the terminal: no control characters. */
		for (char *q = cell; q != NULL && *q != '\0'; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				*q = '?';
		t->cell[t->nrows * t->ncols + i] = cell;
		if (cell != NULL && text_width(cell) > t->width[i])
			t->width[i] = text_width(cell);
		p = tab != NULL ? tab + 1 : NULL;
	}
	t->nrows++;
	free(line);
}

static void
table_line(const struct table *t, char *const *cells, unsigned int indent)
{
	unsigned int last = t->ncols;

	/* Trailing empty left-aligned cells would only print spaces. */
	while (last > 1 && !t->right[last - 1] && (cells[last - 1] == NULL || !*cells[last - 1]))
		last--;
	printf("%*s", (int)indent, "");
	for (unsigned int i = 0; i < last; i++) {
		const char *s = cells[i] != NULL ? cells[i] : "";
		size_t pad = t->width[i] - text_width(s);

		if (i > 0)
			fputs("  ", stdout);
		if (t->right[i])
			printf("%*s%s", (int)pad, "", s);
		else if (i + 1 < last)
			printf("%s%*s", s, (int)pad, "");
		else
			fputs(s, stdout);
	}
	fputc('\n', stdout);
}

static void
table_print_head(const struct table *t, unsigned int indent)
{
	table_line(t, t->head, indent);
}

/* Prints rows [from, to). */
static void
table_print_rows(const struct table *t, unsigned int indent, size_t from, size_t to)
{
	for (size_t r = from; r < to && r < t->nrows; r++)
		table_line(t, &t->cell[r * t->ncols], indent);
}

static void
table_print(const struct table *t, unsigned int indent)
{
	table_print_head(t, indent);
	table_print_rows(t, indent, 0, t->nrows);
}

static void
table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cell[i]);
	for (unsigned int i = 0; i < t->ncols; i++)
		free(t->head[i]);
	free(t->cell);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------------------ */
/* Command-line values                                                      */
/* ------------------------------------------------------------------------ */

struct vip_ref {
	char address[INET6_ADDRSTRLEN];
	unsigned long port;
	char protocol[4];
};

/* Decimal without sign or spaces, at most @max. */
static bool
parse_ulong(const char *s, unsigned long max, unsigned long *out)
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

/* Seconds as a decimal number (fractions allowed) within [min, max]. */
static bool
parse_seconds(const char *s, double min, double max, double *out)
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

/* IPv4 or IPv6 address text (IPv6 optionally in brackets), canonicalised. */
static bool
parse_address(const char *s, char *out, size_t outlen)
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

/*
 * VIP notation: ADDRESS[:PORT][/PROTO], an IPv6 ADDRESS always in brackets.
 * No port means 0 (any port); no protocol means tcp. On failure @why says why.
 */
static bool
parse_vip(const char *text, struct vip_ref *v, const char **why)
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
	if (port != NULL && !parse_ulong(port, 65535, &v->port)) {
		*why = "the port must be a number from 0 to 65535";
		return false;
	}
	if (!parse_address(addr, v->address, sizeof(v->address))) {
		*why = "not an IPv4 or IPv6 address";
		return false;
	}
	return true;
}

static json_t *
vip_ref_json(const struct vip_ref *v)
{
	return json_pack("{s:s, s:i, s:s}", "address", v->address, "port", (int)v->port, "protocol",
	                 v->protocol);
}

/* --backend ADDR[:WEIGHT], IPv6 in brackets; *weight is -1 if absent. */
static bool
parse_backend_spec(const char *text, char *addr, size_t addrlen, long *weight)
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
		if (!parse_ulong(w, 65535, &wv))
			return false;
		*weight = (long)wv;
	}
	return parse_address(buf, addr, addrlen);
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                 */
/* ------------------------------------------------------------------------ */

static json_t *
make_request(struct cli *cli, const char *method, json_t *params)
{
	json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", cli->next_id++, "method",
	                        method);

	if (params != NULL)
		json_object_set_new(req, "params", params);
	return req;
}

static void
report_server_error(const struct cli *cli, const json_t *err)
{
	fprintf(stderr, "spillctl: %s (code %lld)\n", jstr(err, "message", "unknown error"),
	        (long long)jint(err, "code"));
	if (cli->json)
		print_json(err);
}

/* Checks one reply object's shape; returns its error or result member via *member. */
static bool
reply_valid(const json_t *r, const json_t *want_id, json_t **result, json_t **error)
{
	const json_t *id = json_object_get(r, "id");

	*result = json_object_get(r, "result");
	*error = json_object_get(r, "error");
	if (!json_is_object(r) || (*result == NULL) == (*error == NULL))
		return false;
	if (*error != NULL &&
	    (!json_is_object(*error) || !json_is_integer(json_object_get(*error, "code")) ||
	     !json_is_string(json_object_get(*error, "message"))))
		return false;
	if (id == NULL)
		return false;
	/* A request the server could not read is answered with id null. */
	return json_equal(id, want_id) || (json_is_null(id) && *error != NULL);
}

/*
 * Calls @method with @params (reference stolen; NULL for none). On success
 * *result holds a new reference. A server error gives EXIT_SERVER: with
 * @error NULL it is reported, else *error holds it (a new reference) and
 * nothing is printed. Returns an exit status.
 */
static int
rpc_call_err(struct cli *cli, const char *method, json_t *params, json_t **result, json_t **error)
{
	json_t *req = make_request(cli, method, params);
	json_t *reply;
	json_t *res;
	json_t *err;
	int rc;

	*result = NULL;
	if (error != NULL)
		*error = NULL;
	rc = exchange(cli, req, &reply);
	if (rc != EXIT_OK) {
		json_decref(req);
		return rc;
	}
	if (!reply_valid(reply, json_object_get(req, "id"), &res, &err)) {
		json_decref(req);
		json_decref(reply);
		conn_close(&cli->conn);
		return io_error(cli, "invalid reply from the server (not a JSON-RPC 2.0 "
		                     "response to this request)");
	}
	json_decref(req);
	if (err != NULL) {
		if (error != NULL)
			*error = json_incref(err);
		else
			report_server_error(cli, err);
		json_decref(reply);
		return EXIT_SERVER;
	}
	*result = json_incref(res);
	json_decref(reply);
	return EXIT_OK;
}

/*
 * Calls @method with @params (reference stolen; NULL for none). On success
 * *result holds a new reference; a server error is reported and gives
 * EXIT_SERVER. Returns an exit status.
 */
static int
rpc_call(struct cli *cli, const char *method, json_t *params, json_t **result)
{
	return rpc_call_err(cli, method, params, result, NULL);
}

/* ------------------------------------------------------------------------ */
/* Argument parsing                                                         */
/* ------------------------------------------------------------------------ */

/* Values of command option @name: count in *n, NULL if never given. */
static const char **
arg_values(const struct args *a, const char *name, size_t *n)
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

/* The last value of option @name, or NULL. */
static const char *
arg_get(const struct args *a, const char *name)
{
	size_t n;
	const char **v = arg_values(a, name, &n);

	return n != 0 ? v[n - 1] : NULL;
}

static bool
arg_flag(const struct args *a, const char *name)
{
	return arg_get(a, name) != NULL;
}

static void
args_free(struct args *a)
{
	for (unsigned int i = 0; i < MAX_OPTS; i++)
		free(a->vals[i]);
}

enum global_opt {
	GOPT_NONE,
	GOPT_SOCKET,
	GOPT_JSON,
	GOPT_TIMEOUT,
	GOPT_HELP,
	GOPT_VERSION,
};

/* Recognises a global option at @arg; *inline_val points after '=' if present. */
static enum global_opt
global_opt(const char *arg, const char **inline_val)
{
	static const struct {
		const char *lng;
		const char *shrt;
		enum global_opt id;
	} g[] = {
	        {"--socket", "-s", GOPT_SOCKET},   {"--json", "-j", GOPT_JSON},
	        {"--timeout", "-t", GOPT_TIMEOUT}, {"--help", "-h", GOPT_HELP},
	        {"--version", "-V", GOPT_VERSION},
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
	return GOPT_NONE;
}

/*
 * Applies global option @id (value from @inline_val or the next argument).
 * Returns -1 if handled (with *i advanced), else an exit status to stop with.
 */
static int
apply_global(struct cli *cli, const struct command *cmd, enum global_opt id, const char *inline_val,
             int argc, char **argv, int *i)
{
	const char *val = inline_val;
	const char *opt = argv[*i];

	if (id == GOPT_JSON || id == GOPT_HELP || id == GOPT_VERSION) {
		if (val != NULL)
			return usage_error(cmd, "option '%.*s' takes no value",
			                   (int)(strchr(opt, '=') - opt), opt);
		if (id == GOPT_JSON)
			cli->json = true;
		return -1;
	}
	if (val == NULL) {
		if (*i + 1 >= argc)
			return usage_error(cmd, "option '%s' needs a value", opt);
		val = argv[++*i];
	}
	if (id == GOPT_SOCKET) {
		if (*val == '\0')
			return usage_error(cmd, "--socket: empty path");
		cli->socket_path = val;
	} else if (!parse_seconds(val, 0, 86400, &cli->timeout_s)) {
		return usage_error(cmd,
		                   "--timeout: '%s' is not a number of seconds from 0 to 86400 "
		                   "(0 waits forever)",
		                   val);
	}
	return -1;
}

static void print_command_help(const struct command *cmd);

/*
 * Parses the arguments after the command words: the command's own options,
 * the global ones, positionals. Returns -1 to go on, or an exit status
 * (help printed: EXIT_OK; bad usage: EXIT_USAGE).
 */
static int
parse_args(struct cli *cli, const struct command *cmd, int argc, char **argv, struct args *a)
{
	bool only_pos = false;

	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *inline_val;
		enum global_opt gid;
		unsigned int k;
		int rc;

		if (only_pos || arg[0] != '-' || arg[1] == '\0') {
			if (a->npos == cmd->max_pos || a->npos == MAX_POS)
				return usage_error(cmd, "%s: unexpected argument '%s'", cmd->name,
				                   arg);
			a->pos[a->npos++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_pos = true;
			continue;
		}
		gid = global_opt(arg, &inline_val);
		if (gid == GOPT_HELP || gid == GOPT_VERSION) {
			if (gid == GOPT_VERSION)
				return usage_error(cmd, "--version goes before the command");
			print_command_help(cmd);
			return EXIT_OK;
		}
		if (gid != GOPT_NONE) {
			rc = apply_global(cli, cmd, gid, inline_val, argc, argv, &i);
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
			return usage_error(cmd, "%s: unknown option '%s'", cmd->name, arg);
		{
			const struct opt_spec *o = &cmd->opts[k];
			const char *eq = strchr(arg, '=');
			const char *val = "";
			const char **nv;

			if (o->has_arg) {
				if (eq != NULL)
					val = eq + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					return usage_error(cmd, "option '--%s' needs a value",
					                   o->name);
			} else if (eq != NULL) {
				return usage_error(cmd, "option '--%s' takes no value", o->name);
			}
			if (!o->repeat && a->nvals[k] != 0)
				return usage_error(cmd, "option '--%s' given twice", o->name);
			nv = realloc(a->vals[k], (a->nvals[k] + 1) * sizeof(*nv));
			if (nv == NULL)
				return usage_error(cmd, "out of memory");
			nv[a->nvals[k]++] = val;
			a->vals[k] = nv;
		}
	}
	if (a->npos < cmd->min_pos)
		return usage_error(cmd, "usage: spillctl %s %s", cmd->name, cmd->synopsis);
	return -1;
}

/* Positional @i as a VIP reference; on failure a usage error was printed. */
static bool
arg_vip(const struct args *a, unsigned int i, struct vip_ref *v)
{
	const char *why;

	if (parse_vip(a->pos[i], v, &why))
		return true;
	usage_error(a->cmd, "invalid VIP '%s': %s", a->pos[i], why);
	return false;
}

static bool
arg_address(const struct args *a, unsigned int i, char *out, size_t len)
{
	if (parse_address(a->pos[i], out, len))
		return true;
	usage_error(a->cmd, "invalid backend address '%s': not an IPv4 or IPv6 address", a->pos[i]);
	return false;
}

static bool
check_enum(const struct args *a, const char *opt, const char *val, const char *const *allowed)
{
	char list[128] = "";

	for (size_t i = 0; allowed[i] != NULL; i++) {
		if (strcmp(val, allowed[i]) == 0)
			return true;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
		         allowed[i]);
	}
	usage_error(a->cmd, "--%s: '%s' is not one of %s", opt, val, list);
	return false;
}

static const char *const g_states[] = {"active", "draining", "down", NULL};
static const char *const g_keys[] = {"5tuple", "src_ip", "src_ip_dport", NULL};
static const char *const g_encaps[] = {"ipip", "gue", NULL};

/* Adds "weight" from option --weight to @o; false after a usage error. */
static bool
opt_weight(const struct args *a, json_t *o)
{
	const char *w = arg_get(a, "weight");
	unsigned long v;

	if (w == NULL)
		return true;
	if (!parse_ulong(w, 65535, &v)) {
		usage_error(a->cmd, "--weight: '%s' is not an integer from 0 to 65535", w);
		return false;
	}
	json_object_set_new(o, "weight", json_integer((json_int_t)v));
	return true;
}

static bool
opt_state(const struct args *a, json_t *o)
{
	const char *s = arg_get(a, "state");

	if (s == NULL)
		return true;
	if (!check_enum(a, "state", s, g_states))
		return false;
	json_object_set_new(o, "state", json_string(s));
	return true;
}

/* ------------------------------------------------------------------------ */
/* Rendering                                                                */
/* ------------------------------------------------------------------------ */

/* Backend rows (address, name, weight, state) of a VIP object; @labelled
 * rows carry the word "weight" in a column of its own (no heading printed). */
static void
add_backend_rows(struct table *t, const json_t *vip, bool labelled)
{
	const json_t *b;
	size_t i;

	json_array_foreach (json_object_get(vip, "backends"), i, b) {
		const char *addr = jstr(b, "address", "?");
		const char *name = jstr(b, "name", "");

		table_add(t, "%s\t%s\t%s%lld\t%s", addr, strcmp(name, addr) != 0 ? name : "",
		          labelled ? "weight\t" : "", (long long)jint(b, "weight"),
		          jstr(b, "state", "active"));
	}
}

static void
print_vip_detail(const json_t *vip)
{
	char vt[128];
	struct table t;

	vip_text(vip, vt, sizeof(vt));
	printf("vip       %s\nkey       %s\nencap     %s\nbackends  %zu\n", vt,
	       jstr(vip, "key", "5tuple"), jstr(vip, "encap", "ipip"),
	       json_array_size(json_object_get(vip, "backends")));
	if (json_array_size(json_object_get(vip, "backends")) == 0)
		return;
	table_init(&t, "ADDRESS|NAME|>WEIGHT|STATE");
	add_backend_rows(&t, vip, false);
	fputc('\n', stdout);
	table_print(&t, 2);
	table_free(&t);
}

static void
print_backend(const char *verb, const json_t *b, const char *vt)
{
	const char *addr = jstr(b, "address", "?");
	const char *name = jstr(b, "name", "");

	printf("%sbackend %s%s%s%s of %s: weight %lld, state %s\n", verb, addr,
	       *name && strcmp(name, addr) != 0 ? " (" : "",
	       *name && strcmp(name, addr) != 0 ? name : "",
	       *name && strcmp(name, addr) != 0 ? ")" : "", vt, (long long)jint(b, "weight"),
	       jstr(b, "state", "active"));
}

/* The "hot_keys" section, only when the stats document has one. */
static void
print_hot_keys(const json_t *stats)
{
	const json_t *hk = json_object_get(stats, "hot_keys");
	const json_t *e;
	size_t i;

	if (!json_is_array(hk))
		return;
	if (json_array_size(hk) == 0) {
		fputs("\nhot keys: (none)\n", stdout);
		return;
	}
	fputs("\nhot keys:\n", stdout);
	json_array_foreach (hk, i, e) {
		const json_t *vip = json_object_get(e, "vip");
		const json_t *key = json_object_get(e, "key");
		const json_t *share = json_object_get(e, "share");
		char vt[128] = "";
		char *other;

		if (json_is_object(vip))
			vip_text(vip, vt, sizeof(vt));
		if (json_is_object(e) && json_is_string(key)) {
			printf("  %s%s%s", vt, *vt ? "  " : "", json_string_value(key));
			if (json_is_number(share))
				printf("  %.1f%%", json_number_value(share) * 100.0);
			fputc('\n', stdout);
			continue;
		}
		other = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
		printf("  %s\n", other != NULL ? other : "?");
		free(other);
	}
}

/* The totals' counters in a fixed order, then any drop reason that is not zero. */
static void
print_totals(const json_t *tot)
{
	static const char *const flows[] = {"flow_hits",     "flow_misses", "flow_evictions",
	                                    "flow_rechosen", "fragments",   "icmp_errors"};
	json_t *drops = json_object_get(tot, "drops");
	const char *reason;
	const json_t *v;
	bool any = false;

	printf("totals    rx %lld packets %lld bytes, forwarded %lld (%lld bytes), "
	       "icmp_sent %lld, exception %lld, dropped %lld\n",
	       (long long)jint(tot, "rx_packets"), (long long)jint(tot, "rx_bytes"),
	       (long long)jint(tot, "forwarded"), (long long)jint(tot, "forwarded_bytes"),
	       (long long)jint(tot, "icmp_sent"), (long long)jint(tot, "exception"),
	       (long long)jint(tot, "dropped"));
	fputs("flows    ", stdout);
	for (size_t i = 0; i < sizeof(flows) / sizeof(flows[0]); i++)
		printf("%s %s %lld", i ? "," : "",
		       flows[i] + (strncmp(flows[i], "flow_", 5) ? 0 : 5),
		       (long long)jint(tot, flows[i]));
	fputs("\ndrops     ", stdout);
	json_object_foreach (drops, reason, v) {
		if (json_integer_value(v) == 0)
			continue;
		printf("%s%s %lld", any ? ", " : "", reason, (long long)json_integer_value(v));
		any = true;
	}
	fputs(any ? "\n" : "(none)\n", stdout);
}

static void
print_stats_vips(const json_t *vips)
{
	const json_t *v;
	const json_t *b;
	struct table t;
	size_t i;
	size_t j;

	if (json_array_size(vips) == 0) {
		fputs("no VIPs\n", stdout);
		return;
	}
	table_init(&t, "VIP / BACKEND|>WEIGHT|STATE|>PACKETS|>BYTES|>NEW FLOWS");
	json_array_foreach (vips, i, v) {
		char vt[128];

		vip_text(v, vt, sizeof(vt));
		table_add(&t, "%s\t\t\t%lld\t%lld\t%lld", vt, (long long)jint(v, "packets"),
		          (long long)jint(v, "bytes"), (long long)jint(v, "new_flows"));
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			const char *addr = jstr(b, "address", "?");
			const char *name = jstr(b, "name", "");
			bool named = *name && strcmp(name, addr) != 0;

			table_add(&t, "  %s%s%s%s\t%lld\t%s\t%lld\t%lld\t%lld", addr,
			          named ? " (" : "", named ? name : "", named ? ")" : "",
			          (long long)jint(b, "weight"), jstr(b, "state", ""),
			          (long long)jint(b, "packets"), (long long)jint(b, "bytes"),
			          (long long)jint(b, "new_flows"));
		}
	}
	table_print(&t, 0);
	table_free(&t);
}

static void
print_cores(const json_t *cores)
{
	const json_t *c;
	struct table t;
	size_t i;

	if (json_array_size(cores) == 0)
		return;
	table_init(&t, ">LCORE|>RX|>FORWARDED|>DROPPED|>FLOW HITS|>FLOW MISSES");
	json_array_foreach (cores, i, c) {
		table_add(&t, "%lld\t%lld\t%lld\t%lld\t%lld\t%lld", (long long)jint(c, "lcore"),
		          (long long)jint(c, "rx_packets"), (long long)jint(c, "forwarded"),
		          (long long)jint(c, "dropped"), (long long)jint(c, "flow_hits"),
		          (long long)jint(c, "flow_misses"));
	}
	fputc('\n', stdout);
	table_print(&t, 0);
	table_free(&t);
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                 */
/* ------------------------------------------------------------------------ */

/* Calls @method and, with --json, prints the result; returns the status and
 * the result for human rendering (NULL in JSON mode). */
static int
call_and_print(struct cli *cli, const char *method, json_t *params, json_t **human)
{
	json_t *res;
	int rc = rpc_call(cli, method, params, &res);

	*human = NULL;
	if (rc != EXIT_OK)
		return rc;
	if (cli->json) {
		print_json(res);
		json_decref(res);
	} else {
		*human = res;
	}
	return EXIT_OK;
}

static int
cmd_version(struct cli *cli, const struct args *a)
{
	json_t *res;
	int rc = call_and_print(cli, "version", NULL, &res);

	(void)a;
	if (res != NULL) {
		printf("spillctl  %s\nspillwayd %s (control protocol %lld)\n", SPILLWAY_VERSION,
		       jstr(res, "version", "?"), (long long)jint(res, "protocol"));
		json_decref(res);
	}
	return rc;
}

static int
cmd_vip_list(struct cli *cli, const struct args *a)
{
	struct table vt;
	struct table bt;
	const json_t *v;
	json_t *res;
	size_t i;
	size_t *first;
	int rc = call_and_print(cli, "vip_list", NULL, &res);

	(void)a;
	if (res == NULL)
		return rc;
	if (json_array_size(res) == 0) {
		fputs("no VIPs\n", stdout);
		json_decref(res);
		return rc;
	}
	/* Two tables whose columns are each aligned over every VIP; printed interleaved. */
	table_init(&vt, "VIP|>BACKENDS|KEY|ENCAP");
	table_init(&bt, "ADDRESS|NAME|WEIGHT|>W|STATE");
	first = calloc(json_array_size(res) + 1, sizeof(*first));
	json_array_foreach (res, i, v) {
		char text[128];

		vip_text(v, text, sizeof(text));
		table_add(&vt, "%s\t%zu\t%s\t%s", text,
		          json_array_size(json_object_get(v, "backends")), jstr(v, "key", "5tuple"),
		          jstr(v, "encap", "ipip"));
		if (first != NULL)
			first[i] = bt.nrows;
		add_backend_rows(&bt, v, true);
	}
	if (first != NULL)
		first[json_array_size(res)] = bt.nrows;
	table_print_head(&vt, 0);
	for (i = 0; i < json_array_size(res); i++) {
		table_print_rows(&vt, 0, i, i + 1);
		if (first != NULL)
			table_print_rows(&bt, 4, first[i], first[i + 1]);
	}
	free(first);
	table_free(&vt);
	table_free(&bt);
	json_decref(res);
	return rc;
}

/* Calls @method with the VIP of the first argument (into @v); EXIT_USAGE if it is invalid. */
static int
call_vip(struct cli *cli, const struct args *a, const char *method, struct vip_ref *v,
         json_t **human)
{
	*human = NULL;
	if (!arg_vip(a, 0, v))
		return EXIT_USAGE;
	return call_and_print(cli, method, vip_ref_json(v), human);
}

static int
cmd_vip_show(struct cli *cli, const struct args *a)
{
	struct vip_ref v;
	json_t *res;
	int rc = call_vip(cli, a, "vip_get", &v, &res);

	if (res != NULL) {
		print_vip_detail(res);
		json_decref(res);
	}
	return rc;
}

static int
cmd_vip_add(struct cli *cli, const struct args *a)
{
	const char *key = arg_get(a, "key");
	const char *encap = arg_get(a, "encap");
	struct vip_ref v;
	const char **bes;
	size_t nbes;
	json_t *params;
	json_t *res;
	int rc;

	if (!arg_vip(a, 0, &v))
		return EXIT_USAGE;
	if (key != NULL && !check_enum(a, "key", key, g_keys))
		return EXIT_USAGE;
	if (encap != NULL && !check_enum(a, "encap", encap, g_encaps))
		return EXIT_USAGE;
	params = vip_ref_json(&v);
	if (key != NULL)
		json_object_set_new(params, "key", json_string(key));
	if (encap != NULL)
		json_object_set_new(params, "encap", json_string(encap));
	bes = arg_values(a, "backend", &nbes);
	if (nbes != 0) {
		json_t *arr = json_array();

		for (size_t i = 0; i < nbes; i++) {
			char addr[INET6_ADDRSTRLEN];
			long w;
			json_t *b;

			if (!parse_backend_spec(bes[i], addr, sizeof(addr), &w)) {
				json_decref(arr);
				json_decref(params);
				return usage_error(
				        a->cmd,
				        "--backend: invalid '%s' (expected ADDRESS or "
				        "ADDRESS:WEIGHT with a weight from 0 to 65535; "
				        "IPv6 in brackets: [ADDRESS] or [ADDRESS]:WEIGHT)",
				        bes[i]);
			}
			b = json_pack("{s:s}", "address", addr);
			if (w >= 0)
				json_object_set_new(b, "weight", json_integer(w));
			json_array_append_new(arr, b);
		}
		json_object_set_new(params, "backends", arr);
	}
	rc = call_and_print(cli, "vip_add", params, &res);
	if (res != NULL) {
		fputs("added VIP\n", stdout);
		print_vip_detail(res);
		json_decref(res);
	}
	return rc;
}

static int
cmd_vip_remove(struct cli *cli, const struct args *a)
{
	struct vip_ref v;
	json_t *res;
	int rc = call_vip(cli, a, "vip_remove", &v, &res);

	if (res != NULL) {
		printf("removed VIP %s%s%s:%lu/%s\n", strchr(v.address, ':') ? "[" : "", v.address,
		       strchr(v.address, ':') ? "]" : "", v.port, v.protocol);
		json_decref(res);
	}
	return rc;
}

/* Parses "VIP ADDR" into {"vip": ref, "address": ADDR} and the VIP's text. */
static json_t *
backend_ref(const struct args *a, char *vt, size_t vtlen)
{
	char addr[INET6_ADDRSTRLEN];
	struct vip_ref v;
	json_t *ref;

	if (!arg_vip(a, 0, &v) || !arg_address(a, 1, addr, sizeof(addr)))
		return NULL;
	ref = vip_ref_json(&v);
	vip_text(ref, vt, vtlen);
	return json_pack("{s:o, s:s}", "vip", ref, "address", addr);
}

/* backend_ref() with --weight and --state added; NULL after a usage error. */
static json_t *
backend_ref_opts(const struct args *a, char *vt, size_t vtlen)
{
	json_t *params = backend_ref(a, vt, vtlen);

	if (params != NULL && (!opt_weight(a, params) || !opt_state(a, params))) {
		json_decref(params);
		return NULL;
	}
	return params;
}

/* @method (backend_add or backend_set) with @params (stolen); prints the backend after @verb. */
static int
backend_call(struct cli *cli, const char *method, json_t *params, const char *verb, const char *vt)
{
	json_t *res;
	int rc = call_and_print(cli, method, params, &res);

	if (res != NULL) {
		print_backend(verb, res, vt);
		json_decref(res);
	}
	return rc;
}

static int
cmd_backend_add(struct cli *cli, const struct args *a)
{
	const char *name = arg_get(a, "name");
	char vt[128];
	json_t *params = backend_ref_opts(a, vt, sizeof(vt));

	if (params == NULL)
		return EXIT_USAGE;
	if (name != NULL) {
		if (*name == '\0' || strlen(name) > 63) {
			json_decref(params);
			return usage_error(a->cmd, "--name: expected 1 to 63 characters");
		}
		json_object_set_new(params, "name", json_string(name));
	}
	return backend_call(cli, "backend_add", params, "added ", vt);
}

static int
cmd_backend_remove(struct cli *cli, const struct args *a)
{
	char vt[128];
	json_t *params = backend_ref(a, vt, sizeof(vt));
	json_t *res;
	int rc;

	if (params == NULL)
		return EXIT_USAGE;
	rc = call_and_print(cli, "backend_remove", json_incref(params), &res);
	if (res != NULL) {
		printf("removed backend %s from %s\n", jstr(params, "address", "?"), vt);
		json_decref(res);
	}
	json_decref(params);
	return rc;
}

static int
cmd_backend_set(struct cli *cli, const struct args *a)
{
	char vt[128];
	json_t *params = backend_ref_opts(a, vt, sizeof(vt));

	if (params == NULL)
		return EXIT_USAGE;
	if (!arg_flag(a, "weight") && !arg_flag(a, "state")) {
		json_decref(params);
		return usage_error(a->cmd, "backend set: give --weight, --state or both");
	}
	return backend_call(cli, "backend_set", params, "", vt);
}

static int
set_state(struct cli *cli, const struct args *a, const char *state)
{
	char vt[128];
	json_t *params = backend_ref(a, vt, sizeof(vt));

	if (params == NULL)
		return EXIT_USAGE;
	json_object_set_new(params, "state", json_string(state));
	return backend_call(cli, "backend_set", params, "", vt);
}

static int
cmd_backend_drain(struct cli *cli, const struct args *a)
{
	return set_state(cli, a, "draining");
}

static int
cmd_backend_down(struct cli *cli, const struct args *a)
{
	return set_state(cli, a, "down");
}

static int
cmd_backend_up(struct cli *cli, const struct args *a)
{
	return set_state(cli, a, "active");
}

/* The stats VIP object matching @v, or NULL. */
static json_t *
stats_find_vip(const json_t *stats, const struct vip_ref *v)
{
	json_t *e;
	size_t i;

	json_array_foreach (json_object_get(stats, "vips"), i, e) {
		char addr[INET6_ADDRSTRLEN];

		if (parse_address(jstr(e, "address", ""), addr, sizeof(addr)) &&
		    strcmp(addr, v->address) == 0 && jint(e, "port") == (json_int_t)v->port &&
		    strcmp(jstr(e, "protocol", ""), v->protocol) == 0)
			return e;
	}
	return NULL;
}

static int
cmd_stats(struct cli *cli, const struct args *a)
{
	const char *vip_arg = arg_get(a, "vip");
	struct vip_ref v;
	json_t *res;
	json_t *one = NULL;
	int rc;

	if (vip_arg != NULL) {
		const char *why;

		if (!parse_vip(vip_arg, &v, &why))
			return usage_error(a->cmd, "--vip: invalid VIP '%s': %s", vip_arg, why);
	}
	rc = rpc_call(cli, "stats", NULL, &res);
	if (rc != EXIT_OK)
		return rc;
	if (vip_arg != NULL) {
		one = stats_find_vip(res, &v);
		if (one == NULL) {
			fprintf(stderr, "spillctl: no counters for VIP %s (not configured)\n",
			        vip_arg);
			json_decref(res);
			return EXIT_SERVER;
		}
	}
	if (cli->json) {
		print_json(one != NULL ? one : res);
	} else if (one != NULL) {
		json_t *arr = json_pack("[O]", one);

		print_stats_vips(arr);
		json_decref(arr);
	} else {
		printf("generation %lld\n", (long long)jint(res, "generation"));
		print_totals(json_object_get(res, "totals"));
		fputc('\n', stdout);
		print_stats_vips(json_object_get(res, "vips"));
		print_cores(json_object_get(res, "cores"));
		print_hot_keys(res);
	}
	json_decref(res);
	return EXIT_OK;
}

static int
cmd_table(struct cli *cli, const struct args *a)
{
	struct vip_ref v;
	const json_t *b;
	const json_t *s;
	json_t *params;
	json_t *res;
	struct table t;
	json_int_t size;
	json_int_t used = 0;
	char vt[128];
	size_t i;
	int rc;

	if (!arg_vip(a, 0, &v))
		return EXIT_USAGE;
	params = json_pack("{s:o}", "vip", vip_ref_json(&v));
	if (arg_flag(a, "raw"))
		json_object_set_new(params, "raw", json_true());
	vip_text(json_object_get(params, "vip"), vt, sizeof(vt));
	rc = call_and_print(cli, "maglev_table", params, &res);
	if (res == NULL)
		return rc;
	size = jint(res, "table_size");
	printf("%s: table size %lld, generation %lld\n\n", vt, (long long)size,
	       (long long)jint(res, "generation"));
	table_init(&t, "BACKEND|NAME|>SLOTS|>SHARE");
	json_array_foreach (json_object_get(res, "backends"), i, b) {
		const char *addr = jstr(b, "address", "?");
		const char *name = jstr(b, "name", "");
		json_int_t slots = jint(b, "slots");

		used += slots;
		table_add(&t, "%s\t%s\t%lld\t%.2f%%", addr, strcmp(name, addr) ? name : "",
		          (long long)slots, size > 0 ? 100.0 * (double)slots / (double)size : 0.0);
	}
	if (size > used)
		table_add(&t, "(empty)\t\t%lld\t%.2f%%", (long long)(size - used),
		          100.0 * (double)(size - used) / (double)size);
	table_print(&t, 0);
	table_free(&t);
	if (json_is_array(json_object_get(res, "table"))) {
		table_init(&t, ">SLOT|BACKEND");
		json_array_foreach (json_object_get(res, "table"), i, s) {
			table_add(&t, "%zu\t%s", i, json_is_string(s) ? json_string_value(s) : "-");
		}
		fputc('\n', stdout);
		table_print(&t, 0);
		table_free(&t);
	}
	json_decref(res);
	return rc;
}

static int
cmd_config_get(struct cli *cli, const struct args *a)
{
	json_t *res;
	int rc = rpc_call(cli, "config_get", NULL, &res);

	(void)a;
	if (rc == EXIT_OK) {
		print_json(res);
		json_decref(res);
	}
	return rc;
}

static int
cmd_config_save(struct cli *cli, const struct args *a)
{
	json_t *res;
	int rc = call_and_print(cli, "config_save", NULL, &res);

	(void)a;
	if (res != NULL) {
		printf("configuration saved to %s\n", jstr(res, "path", "?"));
		json_decref(res);
	}
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Drain (route announcement)                                               */
/* ------------------------------------------------------------------------ */

static int
drain_common(struct cli *cli, bool on)
{
	const json_t *bird;
	json_t *res;
	int rc = call_and_print(cli, on ? "drain" : "undrain", NULL, &res);

	if (res == NULL)
		return rc;
	bird = json_object_get(json_object_get(res, "hooks"), "bird");
	printf("%s\n",
	       on ? "drained: routes withdrawn, still forwarding" : "undrained: routes announced");
	if (bird != NULL) {
		const json_t *err = json_object_get(bird, "last_error");

		printf("bird: %lld prefix(es) announced%s\n", (long long)jint(bird, "announced"),
		       json_is_true(json_object_get(bird, "pending"))
		               ? ", BIRD not in step yet (retrying)"
		               : "");
		if (json_is_true(json_object_get(bird, "pending")) && json_is_string(err))
			printf("bird: last error: %s\n", json_string_value(err));
	}
	json_decref(res);
	return rc;
}

static int
cmd_drain(struct cli *cli, const struct args *a)
{
	(void)a;
	return drain_common(cli, true);
}

static int
cmd_undrain(struct cli *cli, const struct args *a)
{
	(void)a;
	return drain_common(cli, false);
}

/* ------------------------------------------------------------------------ */
/* Hot keys                                                                 */
/* ------------------------------------------------------------------------ */

/* A key object as the command line writes it: "SRC[ sport P][ dport P]". */
static void
hot_key_text(const json_t *key, char *buf, size_t len)
{
	const json_t *sp = json_object_get(key, "sport");
	const json_t *dp = json_object_get(key, "dport");
	char s[32] = "", d[32] = "";

	if (json_is_string(key)) {
		snprintf(buf, len, "%s", json_string_value(key));
		return;
	}
	if (json_is_integer(sp))
		snprintf(s, sizeof(s), " sport %lld", (long long)json_integer_value(sp));
	if (json_is_integer(dp))
		snprintf(d, sizeof(d), " dport %lld", (long long)json_integer_value(dp));
	snprintf(buf, len, "%s%s%s", jstr(key, "src", "?"), s, d);
}

/* "N" or, from an array of addresses, "N (a, b, c, ...)": the first three. */
static void
hot_replicas_text(const json_t *r, char *buf, size_t len)
{
	const json_t *e;
	size_t i, n, used;

	if (!json_is_array(r)) {
		snprintf(buf, len, "%lld",
		         (long long)(json_is_integer(r) ? json_integer_value(r) : 0));
		return;
	}
	n = json_array_size(r);
	used = (size_t)snprintf(buf, len, "%zu", n);
	json_array_foreach (r, i, e) {
		if (used >= len)
			break;
		if (i == 3) {
			used += (size_t)snprintf(buf + used, len - used, ", ...");
			break;
		}
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : " (",
		                         json_is_string(e) ? json_string_value(e) : "?");
	}
	if (n > 0 && used < len)
		snprintf(buf + used, len - used, ")");
}

/* A JSON number as text: integers as they are, reals with %g. */
static void
num_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%g", json_real_value(v));
	else
		snprintf(buf, len, "?");
}

/* "name value, name value, ..." of an object's members, in their order. */
static void
print_members(const char *label, const json_t *o)
{
	const char *k;
	const json_t *v;
	bool any = false;

	printf("%s", label);
	json_object_foreach ((json_t *)o, k, v) {
		char n[64];

		num_text(v, n, sizeof(n));
		printf("%s%s %s", any ? ", " : "", k, n);
		any = true;
	}
	fputs(any ? "\n" : "(none)\n", stdout);
}

static const char *
share_text(const json_t *o, char *buf, size_t len)
{
	const json_t *s = json_object_get(o, "share");

	if (json_is_number(s))
		snprintf(buf, len, "%.2f%%", json_number_value(s) * 100.0);
	else
		snprintf(buf, len, "-");
	return buf;
}

/* The VIP ("?" if none), key and replicas of a hot-key override or event, as text. */
struct hot_text {
	char vip[128];
	char key[128];
	char replicas[256];
};

static void
hot_text_get(const json_t *o, struct hot_text *t)
{
	snprintf(t->vip, sizeof(t->vip), "?");
	if (json_is_object(json_object_get(o, "vip")))
		vip_text(json_object_get(o, "vip"), t->vip, sizeof(t->vip));
	hot_key_text(json_object_get(o, "key"), t->key, sizeof(t->key));
	hot_replicas_text(json_object_get(o, "replicas"), t->replicas, sizeof(t->replicas));
}

/* The overrides of a hot_list result as a table (@brief: VIP, key, share, replicas). */
static void
print_hot_overrides(const json_t *overrides, bool brief, unsigned int indent)
{
	const json_t *o;
	struct table t;
	size_t i;

	table_init(&t, brief ? "VIP|KEY|>SHARE|REPLICAS"
	                     : "VIP|KEY|>SHARE|REPLICAS|>SINCE WINDOW|PINNED");
	json_array_foreach (overrides, i, o) {
		struct hot_text ht;
		char sh[32];

		hot_text_get(o, &ht);
		share_text(o, sh, sizeof(sh));
		if (brief)
			table_add(&t, "%s\t%s\t%s\t%s", ht.vip, ht.key, sh, ht.replicas);
		else
			table_add(&t, "%s\t%s\t%s\t%s\t%lld\t%s", ht.vip, ht.key, sh, ht.replicas,
			          (long long)jint(o, "since_window"),
			          json_is_true(json_object_get(o, "pinned")) ? "yes" : "no");
	}
	table_print(&t, indent);
	table_free(&t);
}

static int
cmd_hot_list(struct cli *cli, const struct args *a)
{
	json_t *res;
	int rc = call_and_print(cli, "hot_list", NULL, &res);
	const json_t *ov;

	(void)a;
	if (res == NULL)
		return rc;
	ov = json_object_get(res, "overrides");
	printf("window    %lld\n", (long long)jint(res, "window"));
	print_members("params    ", json_object_get(res, "params"));
	print_members("counters  ", json_object_get(res, "counters"));
	if (json_array_size(ov) == 0) {
		fputs("\nno hot keys\n", stdout);
	} else {
		fputc('\n', stdout);
		print_hot_overrides(ov, false, 0);
	}
	json_decref(res);
	return rc;
}

static int
cmd_hot_events(struct cli *cli, const struct args *a)
{
	json_t *res;
	int rc = call_and_print(cli, "hot_events", NULL, &res);
	const json_t *e;
	struct table t;
	size_t i;

	(void)a;
	if (res == NULL)
		return rc;
	if (json_array_size(res) == 0) {
		fputs("no events\n", stdout);
		json_decref(res);
		return rc;
	}
	table_init(&t, ">WINDOW|EVENT|VIP|KEY|>SHARE|>REPLICAS");
	json_array_foreach (res, i, e) {
		struct hot_text ht;
		char sh[32];

		hot_text_get(e, &ht);
		table_add(&t, "%lld\t%s\t%s\t%s\t%s\t%s", (long long)jint(e, "window"),
		          jstr(e, "event", "?"), ht.vip, ht.key, share_text(e, sh, sizeof(sh)),
		          ht.replicas);
	}
	table_print(&t, 0);
	table_free(&t);
	json_decref(res);
	return rc;
}

/* --NAME X, a number in (lo, hi] (lo_open) or [lo, hi], added to @o as @key. */
static bool
opt_real(const struct args *a, const char *name, const char *key, double lo, bool lo_open,
         double hi, json_t *o)
{
	const char *s = arg_get(a, name);
	char *end;
	double v;

	if (s == NULL)
		return true;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v) ||
	    (lo_open ? v <= lo : v < lo) || v > hi) {
		usage_error(a->cmd, "--%s: '%s' is not a number %s %g and %g", name, s,
		            lo_open ? "above" : "from", lo, hi);
		return false;
	}
	json_object_set_new(o, key, json_real(v));
	return true;
}

static bool
opt_uint(const struct args *a, const char *name, const char *key, unsigned long lo,
         unsigned long hi, json_t *o)
{
	const char *s = arg_get(a, name);
	unsigned long v;

	if (s == NULL)
		return true;
	if (!parse_ulong(s, hi, &v) || v < lo) {
		usage_error(a->cmd, "--%s: '%s' is not an integer from %lu to %lu", name, s, lo,
		            hi);
		return false;
	}
	json_object_set_new(o, key, json_integer((json_int_t)v));
	return true;
}

static int
cmd_hot_set(struct cli *cli, const struct args *a)
{
	json_t *p = json_object();
	json_t *res;
	int rc;

	if (!opt_real(a, "threshold", "threshold", 0, true, 1, p) ||
	    !opt_real(a, "threshold-low", "threshold_low", 0, true, 1, p) ||
	    !opt_real(a, "epsilon", "epsilon", 0.001, false, 100, p) ||
	    !opt_uint(a, "demote-windows", "demote_windows", 1, 1000, p) ||
	    !opt_uint(a, "window-ms", "window_ms", 10, 60000, p)) {
		json_decref(p);
		return EXIT_USAGE;
	}
	if (json_object_size(p) == 0) {
		json_decref(p);
		return usage_error(a->cmd, "hot set: give at least one of --threshold, "
		                           "--threshold-low, --epsilon, --demote-windows, "
		                           "--window-ms");
	}
	rc = call_and_print(cli, "hot_set", p, &res);
	if (res != NULL) {
		print_members("hot-key parameters: ", res);
		json_decref(res);
	}
	return rc;
}

/* "VIP SRC [--sport P] [--dport P]" as {"vip": ..., "key": {...}}; NULL after a usage error. */
static json_t *
hot_key_params(const struct args *a, char *vt, size_t vtlen, char *kt, size_t ktlen)
{
	static const char *const ports[] = {"sport", "dport"};
	char src[INET6_ADDRSTRLEN];
	struct vip_ref v;
	json_t *key, *p;

	if (!arg_vip(a, 0, &v))
		return NULL;
	if (!parse_address(a->pos[1], src, sizeof(src))) {
		usage_error(a->cmd, "invalid source address '%s': not an IPv4 or IPv6 address",
		            a->pos[1]);
		return NULL;
	}
	key = json_pack("{s:s}", "src", src);
	for (size_t i = 0; i < 2; i++) {
		const char *s = arg_get(a, ports[i]);
		unsigned long port;

		if (s == NULL)
			continue;
		if (!parse_ulong(s, 65535, &port)) {
			usage_error(a->cmd, "--%s: '%s' is not a port from 0 to 65535", ports[i],
			            s);
			json_decref(key);
			return NULL;
		}
		json_object_set_new(key, ports[i], json_integer((json_int_t)port));
	}
	p = json_pack("{s:o, s:o}", "vip", vip_ref_json(&v), "key", key);
	vip_text(json_object_get(p, "vip"), vt, vtlen);
	hot_key_text(key, kt, ktlen);
	return p;
}

static int
cmd_hot_pin(struct cli *cli, const struct args *a)
{
	const char *rs = arg_get(a, "replicas");
	char vt[128], kt[128];
	unsigned long r = 0;
	json_t *p, *res;
	int rc;

	if (rs != NULL && !parse_ulong(rs, 256, &r))
		return usage_error(a->cmd, "--replicas: '%s' is not an integer from 0 to 256", rs);
	p = hot_key_params(a, vt, sizeof(vt), kt, sizeof(kt));
	if (p == NULL)
		return EXIT_USAGE;
	if (rs != NULL)
		json_object_set_new(p, "replicas", json_integer((json_int_t)r));
	rc = call_and_print(cli, "hot_pin", p, &res);
	if (res != NULL) {
		if (r != 0)
			printf("pinned %s of %s over %lu replicas\n", kt, vt, r);
		else
			printf("pinned %s of %s (replicas from its share)\n", kt, vt);
		json_decref(res);
	}
	return rc;
}

static int
cmd_hot_unpin(struct cli *cli, const struct args *a)
{
	char vt[128], kt[128];
	json_t *p = hot_key_params(a, vt, sizeof(vt), kt, sizeof(kt));
	json_t *res;
	int rc;

	if (p == NULL)
		return EXIT_USAGE;
	rc = call_and_print(cli, "hot_unpin", p, &res);
	if (res != NULL) {
		printf("unpinned %s of %s (demoted automatically once its share falls)\n", kt, vt);
		json_decref(res);
	}
	return rc;
}

/* Reads JSON from @name ("-": standard input); NULL after a usage error. */
static json_t *
load_json_arg(const struct args *a, const char *what, const char *name, bool text)
{
	json_error_t err;
	json_t *v;

	if (strcmp(name, "-") == 0)
		v = json_loadf(stdin, JSON_REJECT_DUPLICATES, &err);
	else if (text)
		v = json_loads(name, JSON_REJECT_DUPLICATES, &err);
	else
		v = json_load_file(name, JSON_REJECT_DUPLICATES, &err);
	if (v == NULL) {
		if (err.line > 0)
			usage_error(a->cmd, "%s: %d:%d: %s", what, err.line, err.column, err.text);
		else
			usage_error(a->cmd, "%s: %s", what, err.text);
	}
	return v;
}

static int
cmd_call(struct cli *cli, const struct args *a)
{
	const char *method = a->pos[0];
	json_t *params = NULL;
	json_t *res;
	int rc;

	if (*method == '\0')
		return usage_error(a->cmd, "call: empty METHOD");
	if (a->npos > 1) {
		params = load_json_arg(a, "PARAMS-JSON", a->pos[1], true);
		if (params == NULL)
			return EXIT_USAGE;
		if (!json_is_object(params)) {
			json_decref(params);
			return usage_error(a->cmd, "PARAMS-JSON must be a JSON object");
		}
	}
	rc = rpc_call(cli, method, params, &res);
	if (rc == EXIT_OK) {
		print_json(res);
		json_decref(res);
	}
	return rc;
}

/* Checks the batch file's calls: {"method": string, "params": object?} each. */
static bool
batch_valid(const struct args *a, const json_t *calls)
{
	json_t *c;
	size_t i;

	if (!json_is_array(calls) || json_array_size(calls) == 0) {
		usage_error(a->cmd, "batch: expected a non-empty JSON array of calls");
		return false;
	}
	json_array_foreach (calls, i, c) {
		const char *k;
		const json_t *v;

		if (!json_is_object(c)) {
			usage_error(a->cmd, "batch: [%zu]: expected an object", i);
			return false;
		}
		if (!json_is_string(json_object_get(c, "method"))) {
			usage_error(a->cmd, "batch: [%zu].method: expected a string", i);
			return false;
		}
		json_object_foreach (c, k, v) {
			if (strcmp(k, "method") == 0)
				continue;
			if (strcmp(k, "params") == 0 && json_is_object(v))
				continue;
			usage_error(a->cmd, "batch: [%zu].%s: %s", i, k,
			            strcmp(k, "params") == 0
			                    ? "expected an object"
			                    : "unknown field (a call is {\"method\", \"params\"}; "
			                      "ids are added by spillctl)");
			return false;
		}
	}
	return true;
}

static int
cmd_batch(struct cli *cli, const struct args *a)
{
	json_t *calls = load_json_arg(a, a->pos[0], a->pos[0], false);
	json_t *req;
	json_t *reply = NULL;
	json_t *ordered = NULL;
	const json_t *c;
	const json_t *failed = NULL;
	size_t n;
	size_t i;
	int rc;

	if (calls == NULL)
		return EXIT_USAGE;
	if (!batch_valid(a, calls)) {
		json_decref(calls);
		return EXIT_USAGE;
	}
	n = json_array_size(calls);
	req = json_array();
	json_array_foreach (calls, i, c) {
		json_t *p = json_object_get(c, "params");

		json_array_append_new(
		        req, make_request(cli, json_string_value(json_object_get(c, "method")),
		                          p != NULL ? json_incref(p) : NULL));
	}
	rc = exchange(cli, req, &reply);
	if (rc != EXIT_OK)
		goto out;

	/* The whole batch refused (empty, too long, unreadable): one error object. */
	if (json_is_object(reply)) {
		json_t *res;
		json_t *err;

		if (!reply_valid(reply, json_null(), &res, &err) || err == NULL) {
			rc = io_error(cli, "invalid reply from the server to a batch");
			goto out;
		}
		report_server_error(cli, err);
		rc = EXIT_SERVER;
		goto out;
	}
	if (!json_is_array(reply) || json_array_size(reply) != n) {
		rc = io_error(cli, "invalid reply from the server: expected %zu replies", n);
		goto out;
	}
	/* Replies may come in any order: put them in request order by id. */
	ordered = json_array();
	for (i = 0; i < n; i++) {
		const json_t *want = json_object_get(json_array_get(req, i), "id");
		json_t *found = NULL;
		json_t *r;
		size_t j;

		json_array_foreach (reply, j, r) {
			if (json_equal(json_object_get(r, "id"), want)) {
				found = r;
				break;
			}
		}
		{
			json_t *res;
			json_t *err;

			if (found == NULL || !reply_valid(found, want, &res, &err)) {
				rc = io_error(cli,
				              "invalid reply from the server: no valid reply "
				              "for call %zu",
				              i + 1);
				goto out;
			}
			if (err != NULL && (failed == NULL || (jint(failed, "code") == -32010 &&
			                                       jint(err, "code") != -32010)))
				failed = err;
		}
		json_array_append(ordered, found);
	}
	if (failed != NULL) {
		fprintf(stderr, "spillctl: %s (code %lld)\n", jstr(failed, "message", "?"),
		        (long long)jint(failed, "code"));
		rc = EXIT_SERVER;
	}
	if (cli->json) {
		json_t *out = json_array();
		json_t *r;

		/* Success: the results in call order. Failure: the reply objects. */
		json_array_foreach (ordered, i, r) {
			json_array_append(out, failed != NULL ? r : json_object_get(r, "result"));
		}
		print_json(out);
		json_decref(out);
	} else {
		const json_t *r;

		json_array_foreach (ordered, i, r) {
			const json_t *err = json_object_get(r, "error");
			const char *m = json_string_value(
			        json_object_get(json_array_get(calls, i), "method"));

			if (err != NULL)
				printf("%zu  %s: %s (code %lld)\n", i + 1, m,
				       jstr(err, "message", "?"), (long long)jint(err, "code"));
			else
				printf("%zu  %s: ok\n", i + 1, m);
		}
		if (failed != NULL)
			fputs("batch not applied (no change was made)\n", stdout);
		else
			printf("batch applied: %zu calls\n", n);
	}
out:
	json_decref(ordered);
	json_decref(reply);
	json_decref(req);
	json_decref(calls);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* top                                                                      */
/* ------------------------------------------------------------------------ */

static void
on_stop_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

/* Per-second rate of counter @key between two objects; 0 if it went backwards. */
static double
rate(const json_t *cur, const json_t *prev, const char *key, double dt)
{
	json_int_t d = jint(cur, key) - jint(prev, key);

	return d > 0 && dt > 0 ? (double)d / dt : 0.0;
}

static void
fmt_rate(char *buf, size_t len, double r)
{
	if (r >= 100 || r == 0)
		snprintf(buf, len, "%.0f", r);
	else
		snprintf(buf, len, "%.1f", r);
}

/* Index of the previous sample: "VIP" and "VIP|backend" to their objects. */
static json_t *
index_stats(const json_t *stats)
{
	json_t *idx = json_object();
	json_t *v;
	json_t *b;
	size_t i;
	size_t j;

	json_array_foreach (json_object_get(stats, "vips"), i, v) {
		char vt[128];
		char key[192];

		vip_text(v, vt, sizeof(vt));
		json_object_set(idx, vt, v);
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			snprintf(key, sizeof(key), "%s|%s", vt, jstr(b, "address", "?"));
			json_object_set(idx, key, b);
		}
	}
	return idx;
}

/* Rates of one VIP or backend: cells "PKT/S\tMBIT/S\tNEW/S[\tDROP/S]", "-" when new. */
static void
rate_cells(char *buf, size_t len, const json_t *cur, const json_t *prev, double dt, bool drops)
{
	char p[32] = "-";
	char m[32] = "-";
	char f[32] = "-";
	char d[32] = "-";

	if (prev != NULL) {
		fmt_rate(p, sizeof(p), rate(cur, prev, "packets", dt));
		snprintf(m, sizeof(m), "%.2f", rate(cur, prev, "bytes", dt) * 8 / 1e6);
		fmt_rate(f, sizeof(f), rate(cur, prev, "new_flows", dt));
		if (json_object_get(cur, "dropped") != NULL)
			fmt_rate(d, sizeof(d), rate(cur, prev, "dropped", dt));
	}
	snprintf(buf, len, "%s\t%s\t%s%s%s", p, m, f, drops ? "\t" : "", drops ? d : "");
}

static json_t *
top_rates_json(const json_t *cur, const json_t *prev, const json_t *idx, double dt)
{
	const json_t *tc = json_object_get(cur, "totals");
	const json_t *tp = json_object_get(prev, "totals");
	json_t *drops = json_object();
	json_t *vips = json_array();
	const char *reason;
	const json_t *x;
	const json_t *v;
	const json_t *b;
	size_t i;
	size_t j;

	json_object_foreach (json_object_get(tc, "drops"), reason, x) {
		json_object_set_new(drops, reason,
		                    json_real(rate(json_object_get(tc, "drops"),
		                                   json_object_get(tp, "drops"), reason, dt)));
	}
	json_array_foreach (json_object_get(cur, "vips"), i, v) {
		char vt[128];
		char key[192];
		const json_t *pv;
		json_t *bes = json_array();

		vip_text(v, vt, sizeof(vt));
		pv = json_object_get(idx, vt);
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			const json_t *pb;

			snprintf(key, sizeof(key), "%s|%s", vt, jstr(b, "address", "?"));
			pb = json_object_get(idx, key);
			json_array_append_new(
			        bes,
			        json_pack("{s:s, s:o, s:o, s:o}", "address",
			                  jstr(b, "address", "?"), "packets_per_s",
			                  pb ? json_real(rate(b, pb, "packets", dt)) : json_null(),
			                  "bytes_per_s",
			                  pb ? json_real(rate(b, pb, "bytes", dt)) : json_null(),
			                  "new_flows_per_s",
			                  pb ? json_real(rate(b, pb, "new_flows", dt))
			                     : json_null()));
		}
		json_array_append_new(
		        vips, json_pack("{s:s, s:o, s:o, s:o, s:o}", "vip", vt, "packets_per_s",
		                        pv ? json_real(rate(v, pv, "packets", dt)) : json_null(),
		                        "bytes_per_s",
		                        pv ? json_real(rate(v, pv, "bytes", dt)) : json_null(),
		                        "new_flows_per_s",
		                        pv ? json_real(rate(v, pv, "new_flows", dt)) : json_null(),
		                        "backends", bes));
	}
	return json_pack("{s:f, s:I, s:{s:f, s:f, s:f, s:o}, s:o}", "interval_s", dt, "generation",
	                 jint(cur, "generation"), "totals", "rx_pps",
	                 rate(tc, tp, "rx_packets", dt), "forwarded_pps",
	                 rate(tc, tp, "forwarded", dt), "dropped_pps", rate(tc, tp, "dropped", dt),
	                 "drops_per_s", drops, "vips", vips);
}

/* The hot keys of a hot_list result under the rates (top). */
static void
print_top_hot(const json_t *hot)
{
	const json_t *ov = json_object_get(hot, "overrides");

	if (json_array_size(ov) == 0) {
		fputs("\nhot keys: (none)\n", stdout);
		return;
	}
	fputs("\nhot keys:\n", stdout);
	print_hot_overrides(ov, true, 2);
}

/* @hot: the hot_list result, NULL when the server has no hot keys. */
static void
top_render(const struct cli *cli, const json_t *cur, const json_t *prev, const json_t *hot,
           double dt, double interval)
{
	const json_t *tc = json_object_get(cur, "totals");
	const json_t *tp = json_object_get(prev, "totals");
	json_t *idx = index_stats(prev);
	const json_t *v;
	const json_t *b;
	const char *reason;
	const json_t *x;
	char hms[32];
	char r1[32];
	char r2[32];
	char r3[32];
	struct table t;
	bool vip_drops = false;
	bool any = false;
	time_t wall = time(NULL);
	struct tm tm;
	size_t i;
	size_t j;

	if (cli->json) {
		json_t *o = top_rates_json(cur, prev, idx, dt);

		if (hot != NULL && json_is_array(json_object_get(hot, "overrides")))
			json_object_set(o, "hot_keys", json_object_get(hot, "overrides"));
		json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
		fputc('\n', stdout);
		json_decref(o);
		json_decref(idx);
		fflush(stdout);
		return;
	}
	localtime_r(&wall, &tm);
	strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	fmt_rate(r1, sizeof(r1), rate(tc, tp, "rx_packets", dt));
	fmt_rate(r2, sizeof(r2), rate(tc, tp, "forwarded", dt));
	fmt_rate(r3, sizeof(r3), rate(tc, tp, "dropped", dt));
	printf("spillctl top  %s  every %gs  generation %lld  %s\n", cli->socket_path, interval,
	       (long long)jint(cur, "generation"), hms);
	printf("rx %s pps  fwd %s pps  drop %s pps\n", r1, r2, r3);
	fputs("drops/s ", stdout);
	json_object_foreach (json_object_get(tc, "drops"), reason, x) {
		double r = rate(json_object_get(tc, "drops"), json_object_get(tp, "drops"), reason,
		                dt);

		if (r == 0)
			continue;
		fmt_rate(r1, sizeof(r1), r);
		printf("%s %s %s", any ? "," : "", reason, r1);
		any = true;
	}
	fputs(any ? "\n\n" : " (none)\n\n", stdout);

	json_array_foreach (json_object_get(cur, "vips"), i, v) {
		if (json_object_get(v, "dropped") != NULL)
			vip_drops = true;
	}
	table_init(&t, vip_drops ? "VIP / BACKEND|>WEIGHT|STATE|>PKT/S|>MBIT/S|>NEW FLOWS/S|>DROP/S"
	                         : "VIP / BACKEND|>WEIGHT|STATE|>PKT/S|>MBIT/S|>NEW FLOWS/S");
	json_array_foreach (json_object_get(cur, "vips"), i, v) {
		char vt[128];
		char key[192];
		char cells[160];

		vip_text(v, vt, sizeof(vt));
		rate_cells(cells, sizeof(cells), v, json_object_get(idx, vt), dt, vip_drops);
		table_add(&t, "%s\t\t\t%s", vt, cells);
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			const char *addr = jstr(b, "address", "?");

			snprintf(key, sizeof(key), "%s|%s", vt, addr);
			rate_cells(cells, sizeof(cells), b, json_object_get(idx, key), dt,
			           vip_drops);
			table_add(&t, "  %s\t%lld\t%s\t%s", addr, (long long)jint(b, "weight"),
			          jstr(b, "state", ""), cells);
		}
	}
	if (t.nrows != 0)
		table_print(&t, 0);
	else
		fputs("no VIPs\n", stdout);
	table_free(&t);
	if (hot != NULL)
		print_top_hot(hot);
	else
		print_hot_keys(cur);
	json_decref(idx);
	fflush(stdout);
}

/* Sleeps until @until (monotonic ns) or a stop signal. */
static void
sleep_until(int64_t until)
{
	while (!g_stop) {
		int64_t left = until - now_ns();
		struct timespec ts;

		if (left <= 0)
			return;
		ts.tv_sec = (time_t)(left / 1000000000);
		ts.tv_nsec = (long)(left % 1000000000);
		nanosleep(&ts, NULL);
	}
}

static int
cmd_top(struct cli *cli, const struct args *a)
{
	const char *iv = arg_get(a, "interval");
	const char *cv = arg_get(a, "count");
	bool tty = isatty(STDOUT_FILENO) && !cli->json;
	double interval = 1.0;
	unsigned long count = 0;
	unsigned long shown = 0;
	struct sigaction sa = {.sa_handler = on_stop_signal};
	json_t *prev = NULL;
	bool ask_hot = true; /* until hot_list fails: disabled, or an older server */
	int64_t prev_t = 0;
	int64_t next;
	int rc = EXIT_OK;

	if (iv != NULL && !parse_seconds(iv, 0.01, 3600, &interval))
		return usage_error(a->cmd,
		                   "--interval: '%s' is not a number of seconds from "
		                   "0.01 to 3600",
		                   iv);
	if (cv != NULL && (!parse_ulong(cv, 1000000000, &count) || count == 0))
		return usage_error(a->cmd, "--count: '%s' is not a positive integer", cv);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	next = now_ns();
	while (!g_stop) {
		json_t *cur;
		int64_t t;

		rc = rpc_call(cli, "stats", NULL, &cur);
		if (rc != EXIT_OK)
			break;
		t = now_ns();
		if (prev != NULL) {
			json_t *hot = NULL;
			json_t *herr = NULL;

			if (ask_hot) {
				rc = rpc_call_err(cli, "hot_list", NULL, &hot, &herr);
				if (rc == EXIT_SERVER) {
					ask_hot = false;
					rc = EXIT_OK;
				}
				json_decref(herr);
				if (rc != EXIT_OK) {
					json_decref(cur);
					break;
				}
			}
			if (tty)
				fputs("\033[H\033[2J", stdout);
			else if (shown != 0 && !cli->json)
				fputc('\n', stdout);
			top_render(cli, cur, prev, hot, (double)(t - prev_t) / 1e9, interval);
			json_decref(hot);
			shown++;
		}
		json_decref(prev);
		prev = cur;
		prev_t = t;
		if (count != 0 && shown >= count)
			break;
		next += (int64_t)(interval * 1e9);
		if (next < now_ns())
			next = now_ns(); /* a slow reply: do not try to catch up */
		sleep_until(next);
	}
	json_decref(prev);
	if (g_stop)
		rc = EXIT_OK;
	return rc;
}

static int cmd_help(struct cli *cli, const struct args *a);

/* ------------------------------------------------------------------------ */
/* Command table and help                                                   */
/* ------------------------------------------------------------------------ */

static const struct opt_spec opts_vip_add[] = {
        {"key", true, false},
        {"encap", true, false},
        {"backend", true, true},
        {NULL, false, false},
};

static const struct opt_spec opts_backend_add[] = {
        {"weight", true, false},
        {"name", true, false},
        {"state", true, false},
        {NULL, false, false},
};

static const struct opt_spec opts_backend_set[] = {
        {"weight", true, false},
        {"state", true, false},
        {NULL, false, false},
};

static const struct opt_spec opts_stats[] = {
        {"vip", true, false},
        {NULL, false, false},
};

static const struct opt_spec opts_table[] = {
        {"raw", false, false},
        {NULL, false, false},
};

static const struct opt_spec opts_top[] = {
        {"interval", true, false},
        {"count", true, false},
        {NULL, false, false},
};

static const struct opt_spec opts_hot_set[] = {
        {"threshold", true, false},      {"threshold-low", true, false}, {"epsilon", true, false},
        {"demote-windows", true, false}, {"window-ms", true, false},     {NULL, false, false},
};

static const struct opt_spec opts_hot_pin[] = {
        {"sport", true, false},
        {"dport", true, false},
        {"replicas", true, false},
        {NULL, false, false},
};

static const struct opt_spec opts_hot_unpin[] = {
        {"sport", true, false},
        {"dport", true, false},
        {NULL, false, false},
};

static const struct command g_commands[] = {
        {"version", "", "show the versions of spillctl and spillwayd",
         "Asks the server for its version and control protocol number (method\n"
         "\"version\") and prints them with spillctl's own.\n"
         "\n"
         "Examples:\n"
         "  spillctl version\n"
         "  spillctl --json version\n",
         NULL, 0, 0, cmd_version},
        {"vip list", "", "list the VIPs with their backends",
         "Prints one line per VIP (address:port/protocol, number of backends, hash\n"
         "key, encapsulation), each followed by its backends, indented: address,\n"
         "name (when it differs from the address), weight and state. Method\n"
         "\"vip_list\"; --json prints the array of VIP objects.\n"
         "\n"
         "Examples:\n"
         "  spillctl vip list\n"
         "  spillctl vip list --json | jq -r '.[] | .address'\n",
         NULL, 0, 0, cmd_vip_list},
        {"vip show", "VIP", "show one VIP",
         "Prints the VIP's settings and a table of its backends (method \"vip_get\").\n"
         "Exit status 1 with \"not found (code -32001)\" if there is no such VIP.\n"
         "\n"
         "Examples:\n"
         "  spillctl vip show 192.0.2.10:80/tcp\n"
         "  spillctl vip show '[2001:db8::10]:443/udp'\n",
         NULL, 1, 1, cmd_vip_show},
        {"vip add", "VIP [--key KEY] [--encap ENCAP] [--backend ADDR[:WEIGHT]]...",
         "add a VIP, optionally with backends",
         "Adds the VIP (method \"vip_add\"); it carries traffic when the command\n"
         "returns. Without --backend it has no backend and its packets are dropped\n"
         "(counted no_backend) until one is added.\n"
         "\n"
         "Options:\n"
         "  --key KEY              what the Maglev hash sees: 5tuple (the default),\n"
         "                         src_ip, or src_ip_dport\n"
         "  --encap ENCAP          ipip (the default) or gue\n"
         "  --backend ADDR[:WEIGHT]\n"
         "                         a backend, weight 0-65535 (default 1); repeat for\n"
         "                         more. IPv6 in brackets: [2001:db8::1] or\n"
         "                         [2001:db8::1]:3\n"
         "\n"
         "Examples:\n"
         "  spillctl vip add 192.0.2.10:80/tcp --backend 10.1.0.1 --backend 10.1.0.2:2\n"
         "  spillctl vip add 192.0.2.20/udp --key src_ip --encap gue --backend 10.1.0.9\n"
         "  spillctl vip add '[2001:db8::10]:443' --backend '[2001:db8:1::1]:3'\n",
         opts_vip_add, 1, 1, cmd_vip_add},
        {"vip remove", "VIP", "remove a VIP and all its backends",
         "Removes the VIP (method \"vip_remove\"); its traffic is no longer balanced\n"
         "once the command returns.\n"
         "\n"
         "Example:\n"
         "  spillctl vip remove 192.0.2.10:80/tcp\n",
         NULL, 1, 1, cmd_vip_remove},
        {"backend add", "VIP ADDR [--weight W] [--name NAME] [--state STATE]",
         "add a backend to a VIP",
         "Adds backend ADDR (IPv4 or IPv6, either family whatever the VIP's) to VIP\n"
         "(method \"backend_add\"). Only the flows whose table slots move to it\n"
         "change backend.\n"
         "\n"
         "Options:\n"
         "  --weight W       share of the table, 0-65535 (server default 1)\n"
         "  --name NAME      stable identity, 1-63 characters (default: the address);\n"
         "                   the backend's slots derive from it\n"
         "  --state STATE    active (default), draining or down\n"
         "\n"
         "Examples:\n"
         "  spillctl backend add 192.0.2.10:80/tcp 10.1.0.3\n"
         "  spillctl backend add 192.0.2.10:80 10.1.0.4 --weight 2 --name web-4\n",
         opts_backend_add, 2, 2, cmd_backend_add},
        {"backend remove", "VIP ADDR", "remove a backend from a VIP",
         "Removes backend ADDR from VIP (method \"backend_remove\"). Only the flows\n"
         "that were on it are given another backend. To let its connections finish\n"
         "first, drain it and remove it later.\n"
         "\n"
         "Example:\n"
         "  spillctl backend remove 192.0.2.10:80/tcp 10.1.0.3\n",
         NULL, 2, 2, cmd_backend_remove},
        {"backend set", "VIP ADDR [--weight W] [--state STATE]",
         "change a backend's weight or state",
         "Changes the weight, the state or both (method \"backend_set\").\n"
         "\n"
         "Options:\n"
         "  --weight W       0-65535; 0 gives it no new flows, its flows continue\n"
         "  --state STATE    active: takes new flows; draining: keeps its flows,\n"
         "                   gets no new ones; down: gets nothing, its flows move\n"
         "\n"
         "Examples:\n"
         "  spillctl backend set 192.0.2.10:80/tcp 10.1.0.2 --weight 3\n"
         "  spillctl backend set 192.0.2.10:80/tcp 10.1.0.2 --state active --weight 1\n",
         opts_backend_set, 2, 2, cmd_backend_set},
        {"backend drain", "VIP ADDR", "stop new flows to a backend, keep its flows",
         "Same as 'backend set VIP ADDR --state draining': the backend keeps its\n"
         "established flows and gets no new ones. Watch its new flows and packets\n"
         "fall with 'spillctl top', then remove it.\n"
         "\n"
         "Example:\n"
         "  spillctl backend drain 192.0.2.10:80/tcp 10.1.0.2\n",
         NULL, 2, 2, cmd_backend_drain},
        {"backend down", "VIP ADDR", "take a backend out now (its flows move)",
         "Same as 'backend set VIP ADDR --state down': the backend gets no packets;\n"
         "its flows are given other backends.\n"
         "\n"
         "Example:\n"
         "  spillctl backend down 192.0.2.10:80/tcp 10.1.0.2\n",
         NULL, 2, 2, cmd_backend_down},
        {"backend up", "VIP ADDR", "put a backend back in service",
         "Same as 'backend set VIP ADDR --state active'.\n"
         "\n"
         "Example:\n"
         "  spillctl backend up 192.0.2.10:80/tcp 10.1.0.2\n",
         NULL, 2, 2, cmd_backend_up},
        {"stats", "[--vip VIP]", "show the counters",
         "Prints the counters since start (method \"stats\"): the snapshot generation,\n"
         "the totals, the drop reasons that are not zero, packets, bytes and new\n"
         "flows per VIP and per backend, and one line per worker core. The counters\n"
         "are described in docs/operations.md (\"Counters\").\n"
         "\n"
         "Options:\n"
         "  --vip VIP    only this VIP's table (with --json: only its object)\n"
         "\n"
         "Examples:\n"
         "  spillctl stats\n"
         "  spillctl stats --vip 192.0.2.10:80/tcp\n"
         "  spillctl --json stats | jq .totals.drops\n",
         opts_stats, 0, 0, cmd_stats},
        {"table", "VIP [--raw]", "show a VIP's Maglev table shares",
         "Prints the table size and, per backend, its number of slots and its share\n"
         "of the table (method \"maglev_table\"); slots owned by no backend (no\n"
         "usable backend) are shown as (empty).\n"
         "\n"
         "Options:\n"
         "  --raw    also print the backend of every slot (large: one line per slot)\n"
         "\n"
         "Examples:\n"
         "  spillctl table 192.0.2.10:80/tcp\n"
         "  spillctl --json table 192.0.2.10:80/tcp --raw > table.json\n",
         opts_table, 1, 1, cmd_table},
        {"config get", "", "print the running configuration",
         "Prints the whole running configuration document (method \"config_get\"),\n"
         "in the configuration file's format, as JSON.\n"
         "\n"
         "Example:\n"
         "  spillctl config get > running.json\n",
         NULL, 0, 0, cmd_config_get},
        {"config save", "", "write the state file now",
         "Asks the server to write its state file (--state) now (method\n"
         "\"config_save\"). Accepted changes are already written before their reply;\n"
         "this is for a first save or after restoring the file. Fails with code\n"
         "-32603 when spillwayd has no state file.\n"
         "\n"
         "Example:\n"
         "  spillctl config save\n",
         NULL, 0, 0, cmd_config_save},
        {"drain", "", "withdraw this instance's routes, keep forwarding",
         "Asks spillwayd to withdraw every VIP route it announces through BIRD and\n"
         "to keep them withdrawn across changes (method \"drain\"), while it goes\n"
         "on forwarding what still reaches it: the routers move new traffic to the\n"
         "other instances. Prints how many prefixes BIRD still has from spillwayd\n"
         "(0 once BIRD confirmed). Fails with code -32603 when spillwayd runs\n"
         "without --bird-include/--bird-socket. See docs/scale-out.md.\n"
         "\n"
         "Example:\n"
         "  spillctl drain && sleep 5 && systemctl stop spillway\n",
         NULL, 0, 0, cmd_drain},
        {"undrain", "", "announce this instance's routes again",
         "Ends a drain (method \"undrain\"): every VIP address with a usable backend\n"
         "is announced through BIRD again.\n"
         "\n"
         "Example:\n"
         "  spillctl undrain\n",
         NULL, 0, 0, cmd_undrain},
        {"call", "METHOD [PARAMS-JSON]", "send any request (raw JSON-RPC)",
         "Sends one request with method METHOD and params PARAMS-JSON, a JSON object\n"
         "('-' reads it from standard input), and prints the result as JSON.\n"
         "Methods are listed in docs/control-protocol.md.\n"
         "\n"
         "Examples:\n"
         "  spillctl call vip_list\n"
         "  spillctl call backend_set '{\"vip\":{\"address\":\"192.0.2.10\",\"port\":80,\n"
         "    \"protocol\":\"tcp\"},\"address\":\"10.1.0.2\",\"weight\":0}'\n",
         NULL, 1, 2, cmd_call},
        {"batch", "FILE|-", "apply several calls as one transaction",
         "Reads a JSON array of calls, each {\"method\": M, \"params\": {...}}, from FILE\n"
         "(or standard input for -) and sends them as one JSON-RPC batch: the server\n"
         "applies all of them with one table rebuild, or none. spillctl numbers the\n"
         "requests itself. Prints each call's outcome; with --json, the array of\n"
         "results in call order, or, if the batch failed, the array of replies.\n"
         "Exit status 1 if the batch was not applied; the failing call's error is\n"
         "printed (the others report \"transaction aborted\", code -32010).\n"
         "\n"
         "Example (add 10.1.0.3 and drain 10.1.0.1 in one step):\n"
         "  spillctl batch - <<'EOF'\n"
         "  [{\"method\": \"backend_add\", \"params\": {\"vip\": {\"address\": \"192.0.2.10\",\n"
         "     \"port\": 80, \"protocol\": \"tcp\"}, \"address\": \"10.1.0.3\"}},\n"
         "   {\"method\": \"backend_set\", \"params\": {\"vip\": {\"address\": \"192.0.2.10\",\n"
         "     \"port\": 80, \"protocol\": \"tcp\"}, \"address\": \"10.1.0.1\",\n"
         "     \"state\": \"draining\"}}]\n"
         "  EOF\n",
         NULL, 1, 1, cmd_batch},
        {"top", "[--interval SEC] [--count N]", "live rates per VIP and backend",
         "Calls \"stats\" every SEC seconds and shows rates computed from the\n"
         "differences: received, forwarded and dropped packets/s, drops/s per\n"
         "reason, and per VIP and per backend packets/s, Mbit/s (inner bytes) and\n"
         "new flows/s (\"-\" for one that appeared since the last sample). A\n"
         "\"hot keys\" section (VIP, key, share, replicas; method \"hot_list\")\n"
         "appears when the server runs the hot-key controller. On a\n"
         "terminal the screen is redrawn; otherwise each refresh is printed as a\n"
         "block after a blank line (with --json: one JSON object per line).\n"
         "Stop with Ctrl-C.\n"
         "\n"
         "Options:\n"
         "  --interval SEC   seconds between refreshes, 0.01-3600 (default 1)\n"
         "  --count N        stop after N refreshes (N + 1 calls)\n"
         "\n"
         "Examples:\n"
         "  spillctl top\n"
         "  spillctl top --interval 5 --count 12 > rates.log\n",
         opts_top, 0, 0, cmd_top},
        {"hot list", "", "list the hot keys and their replicas",
         "Prints the hot-key controller's state (method \"hot_list\"): the current\n"
         "window, the parameters, the counters (promotions, demotions, re-plans,\n"
         "active and pinned overrides), and one row per hot key: its VIP, the key\n"
         "(written as 'hot pin' takes it: SRC [sport P] [dport P]), its latest share\n"
         "of the VIP's traffic, its replicas (how many, and the first three\n"
         "backends, its Maglev home first), the window it was promoted in, and\n"
         "whether an operator pinned it. Fails with code -32603 \"hot keys are\n"
         "disabled\" when spillwayd runs with hot.enabled false.\n"
         "\n"
         "Examples:\n"
         "  spillctl hot list\n"
         "  spillctl --json hot list | jq '.overrides[] | select(.share > 0.05)'\n",
         NULL, 0, 0, cmd_hot_list},
        {"hot events", "", "show recent promotions, demotions and re-plans",
         "Prints the controller's recent events, oldest first (method \"hot_events\"),\n"
         "one line each: the window, the event (promote, demote, replan, pin or\n"
         "unpin), the VIP, the key, its share then and its number of replicas.\n"
         "\n"
         "Examples:\n"
         "  spillctl hot events\n"
         "  spillctl --json hot events | jq -c '.[] | select(.event == \"promote\")'\n",
         NULL, 0, 0, cmd_hot_events},
        {"hot set",
         "[--threshold X] [--threshold-low X] [--epsilon X] [--demote-windows N] "
         "[--window-ms N]",
         "change the hot-key parameters",
         "Changes the controller's parameters from the next window (method\n"
         "\"hot_set\"); at least one option. Prints the parameters now in force.\n"
         "The change is runtime state, not configuration: the configuration's \"hot\"\n"
         "section is not rewritten.\n"
         "\n"
         "Options:\n"
         "  --threshold X        promote a key at this share of its VIP, above 0, at\n"
         "                       most 1 (0.01 = 1%)\n"
         "  --threshold-low X    demote below this share, above 0, at most the\n"
         "                       threshold\n"
         "  --epsilon X          load cap: backends stay under (1 + X) times the\n"
         "                       average, 0.001-100\n"
         "  --demote-windows N   demote after N consecutive windows below the lower\n"
         "                       threshold, 1-1000\n"
         "  --window-ms N        the measurement window, 10-60000 ms\n"
         "\n"
         "Examples:\n"
         "  spillctl hot set --threshold 0.05 --threshold-low 0.02\n"
         "  spillctl hot set --epsilon 0.1 --window-ms 200\n",
         opts_hot_set, 0, 0, cmd_hot_set},
        {"hot pin", "VIP SRC [--sport P] [--dport P] [--replicas R]",
         "spread one key by hand, never demoted",
         "Pins an override for one key of VIP (method \"hot_pin\"): its new flows\n"
         "spread over R replicas, and the controller never demotes it. Established\n"
         "flows stay on their backend. The key is what the VIP's key mode hashes:\n"
         "\n"
         "  src_ip         SRC\n"
         "  src_ip_dport   SRC --dport P (the VIP's port by default)\n"
         "  5tuple         SRC --sport P --dport P (the VIP's port by default);\n"
         "                 the destination and protocol are the VIP's\n"
         "\n"
         "An option the key mode does not use is refused by the server (code -32602).\n"
         "\n"
         "Options:\n"
         "  --sport P      the client's source port (5tuple), 0-65535\n"
         "  --dport P      the destination port (src_ip_dport, 5tuple), 0-65535\n"
         "  --replicas R   number of backends, 1-256; 0 or absent: computed from\n"
         "                 the key's share\n"
         "\n"
         "Examples:\n"
         "  spillctl hot pin 192.0.2.20:443/tcp 198.51.100.7 --replicas 8\n"
         "  spillctl hot pin 192.0.2.30/udp 203.0.113.9 --dport 53\n"
         "  spillctl hot pin 192.0.2.10:80/tcp 198.51.100.7 --sport 40000\n"
         "  spillctl hot pin '[2001:db8::10]:443/udp' 2001:db8:5::7\n",
         opts_hot_pin, 2, 2, cmd_hot_pin},
        {"hot unpin", "VIP SRC [--sport P] [--dport P]", "hand a pinned key back to the controller",
         "Unpins the override of one key (method \"hot_unpin\"), written as for 'hot\n"
         "pin'. The override stays until the controller demotes it (its share below\n"
         "the lower threshold for --demote-windows windows). Fails with code -32001\n"
         "if the key has no override.\n"
         "\n"
         "Example:\n"
         "  spillctl hot unpin 192.0.2.20:443/tcp 198.51.100.7\n",
         opts_hot_unpin, 2, 2, cmd_hot_unpin},
        {"help", "[COMMAND]", "describe spillctl or one command",
         "Same as 'spillctl --help' or 'spillctl COMMAND --help'.\n"
         "\n"
         "Example:\n"
         "  spillctl help backend drain\n",
         NULL, 0, 2, cmd_help},
};

static const size_t g_ncommands = sizeof(g_commands) / sizeof(g_commands[0]);

static void
print_command_help(const struct command *cmd)
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

static void
print_usage(FILE *f)
{
	fputs("Usage: spillctl [OPTIONS] COMMAND [ARGS]\n", f);
}

static void
print_help(const char *group)
{
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
	for (size_t i = 0; i < g_ncommands; i++) {
		const struct command *c = &g_commands[i];
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
	      "  3  cannot connect, I/O error, timeout or invalid reply\n"
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

static const struct command *
find_command(int argc, const char *const *argv, int *words)
{
	for (size_t i = 0; i < g_ncommands; i++) {
		int n = name_matches(g_commands[i].name, argc, argv);

		if (n > 0) {
			*words = n;
			return &g_commands[i];
		}
	}
	return NULL;
}

static int
cmd_help(struct cli *cli, const struct args *a)
{
	const struct command *c;
	int words;

	(void)cli;
	if (a->npos == 0) {
		print_help(NULL);
		return EXIT_OK;
	}
	c = find_command((int)a->npos, a->pos, &words);
	if (c != NULL && words == (int)a->npos) {
		print_command_help(c);
		return EXIT_OK;
	}
	if (a->npos == 1 && is_group(a->pos[0])) {
		print_help(a->pos[0]);
		return EXIT_OK;
	}
	return usage_error(NULL, "help: unknown command '%s%s%s'", a->pos[0],
	                   a->npos > 1 ? " " : "", a->npos > 1 ? a->pos[1] : "");
}

/* ------------------------------------------------------------------------ */

static int
run(struct cli *cli, int argc, char **argv)
{
	const struct command *cmd;
	struct args a;
	int words = 0;
	int i;
	int rc;

	/* Global options before the command. */
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		const char *inline_val;
		enum global_opt id = global_opt(argv[i], &inline_val);

		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (id == GOPT_NONE)
			return usage_error(NULL, "unknown option '%s'", argv[i]);
		if (id == GOPT_HELP && inline_val == NULL) {
			print_help(NULL);
			return EXIT_OK;
		}
		if (id == GOPT_VERSION && inline_val == NULL) {
			printf("spillctl %s\n", SPILLWAY_VERSION);
			return EXIT_OK;
		}
		rc = apply_global(cli, NULL, id, inline_val, argc, argv, &i);
		if (rc >= 0)
			return rc;
	}
	if (i >= argc) {
		print_usage(stderr);
		fputs("Try 'spillctl --help'.\n", stderr);
		return EXIT_USAGE;
	}
	cmd = find_command(argc - i, (const char *const *)(argv + i), &words);
	if (cmd == NULL) {
		if (is_group(argv[i])) {
			if (i + 1 < argc && (strcmp(argv[i + 1], "--help") == 0 ||
			                     strcmp(argv[i + 1], "-h") == 0)) {
				print_help(argv[i]);
				return EXIT_OK;
			}
			if (i + 1 >= argc)
				return usage_error(NULL,
				                   "'%s' needs a subcommand (see 'spillctl %s "
				                   "--help')",
				                   argv[i], argv[i]);
			return usage_error(NULL, "unknown command '%s %s'", argv[i], argv[i + 1]);
		}
		return usage_error(NULL, "unknown command '%s'", argv[i]);
	}
	rc = parse_args(cli, cmd, argc - i - words, argv + i + words, &a);
	if (rc < 0)
		rc = cmd->run(cli, &a);
	args_free(&a);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *env = getenv(SOCKET_ENV);
	struct cli cli = {
	        .socket_path = env != NULL && *env != '\0' ? env : DEFAULT_SOCKET,
	        .timeout_s = DEFAULT_TIMEOUT_S,
	        .conn = {.fd = -1},
	        .next_id = 1,
	};
	int rc = run(&cli, argc, argv);

	conn_close(&cli.conn);
	free(cli.conn.buf);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "spillctl: standard output: %s\n", strerror(errno));
		if (rc == EXIT_OK)
			rc = EXIT_IO;
	}
	return rc;
}
