/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control socket server: Unix stream listener, per-client line framing and
 * output queues, all non-blocking on one level-triggered epoll set of its own.
 * Every limit closes only the offending connection; the daemon never waits on
 * a client. Requests of one client are answered in order, at most per_turn of
 * them per process call: the rest wait in its input buffer on a FIFO of
 * clients with work left, and an eventfd keeps the epoll set readable
 * meanwhile. With group commit, the replies of a process call are held until
 * its one commit has run, then finished and sent in order.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control/io/server.h"
#include "control/io/server_file.h"
#include "control/base/clock.h"

#define READ_CHUNK (64u * 1024) /* bytes read per readable client per process call */
#define KEEP_BUF (64u * 1024)   /* buffers above this are freed once empty */
#define ACCEPT_BURST 64         /* connections accepted per process call */
#define EVENT_BATCH 64          /* epoll events handled per process call */

struct client {
	struct client *prev, *next;
	int fd;
	uint32_t events;      /* what epoll is asked for now */
	bool closing;         /* no more input: close once the output is sent */
	uint64_t last_active; /* ms: last complete request or output progress */
	char *in;             /* received bytes not yet framed into lines */
	size_t in_len, in_cap;
	size_t scan; /* in[0, scan) holds no '\n' */
	char *out;   /* out[out_head, out_len) is unsent */
	size_t out_head, out_len, out_cap;
	bool backlog;         /* complete lines left over: on the ready FIFO, not read */
	struct client *ready; /* next on the ready FIFO */
	uint64_t served_turn; /* the process call that last answered it */
	/* Group commit: replies of this process call, not yet queued, in order. */
	struct held *held;
	unsigned int n_held, held_cap;
	struct client *held_next; /* next client with held replies */
};

/* A reply waiting for the process call's commit. */
struct held {
	char *text;
	void *token; /* lb_server_params.reply_token's, for finish */
	bool force;  /* queued even over the output limit (an error before closing) */
};

struct lb_server {
	struct lb_server_params p;
	char *path;
	dev_t dev; /* identity of the socket file we created */
	ino_t ino;
	int lfd, epfd;
	int kick;           /* eventfd in the epoll set, signalled while ready is not empty */
	bool kicked;        /* kick holds a count */
	bool accept_paused; /* out of descriptors: retried from the tick */
	unsigned int n_clients;
	struct client *clients;
	struct client *ready_head, *ready_tail; /* clients with requests left, FIFO */
	uint64_t turn;                          /* process calls so far */
	struct client *held_head;               /* clients with held replies, first served first */
	struct client **held_tail;
};

static char *
builtin_error_reply(int code, const char *message)
{
	/* message is ours and needs no escaping. */
	const char *fmt =
	        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}";
	size_t n = (size_t)snprintf(NULL, 0, fmt, code, message) + 1;
	char *s = malloc(n);

	if (s != NULL)
		snprintf(s, n, fmt, code, message);
	return s;
}

/* ---- clients ---------------------------------------------------------------- */

static void
ready_push(struct lb_server *s, struct client *c)
{
	c->backlog = true;
	c->ready = NULL;
	if (s->ready_tail != NULL)
		s->ready_tail->ready = c;
	else
		s->ready_head = c;
	s->ready_tail = c;
}

static struct client *
ready_pop(struct lb_server *s)
{
	struct client *c = s->ready_head;

	if (c != NULL) {
		s->ready_head = c->ready;
		if (s->ready_head == NULL)
			s->ready_tail = NULL;
		c->ready = NULL;
		c->backlog = false;
	}
	return c;
}

static void
ready_remove(struct lb_server *s, struct client *c)
{
	struct client **pp = &s->ready_head, *prev = NULL;

	while (*pp != NULL && *pp != c) {
		prev = *pp;
		pp = &(*pp)->ready;
	}
	if (*pp == NULL)
		return;
	*pp = c->ready;
	if (s->ready_tail == c)
		s->ready_tail = prev;
	c->backlog = false;
}

/* Finish and drop the held replies of a client that is going away. */
static void
held_drop(struct lb_server *s, struct client *c)
{
	struct client **pp = &s->held_head;

	for (unsigned int i = 0; i < c->n_held; i++) {
		struct held *h = &c->held[i];

		free(h->token != NULL ? s->p.finish(s->p.arg, h->text, h->token) : h->text);
	}
	c->n_held = 0;
	while (*pp != NULL && *pp != c)
		pp = &(*pp)->held_next;
	if (*pp == c) {
		*pp = c->held_next;
		if (s->held_tail == &c->held_next)
			s->held_tail = pp;
	}
	c->held_next = NULL;
}

static void
client_close(struct lb_server *s, struct client *c)
{
	if (c->backlog)
		ready_remove(s, c);
	held_drop(s, c);
	free(c->held);
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		s->clients = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	s->n_clients--;
	free(c->in);
	free(c->out);
	free(c);
}

static size_t
pending(const struct client *c)
{
	return c->out_len - c->out_head;
}

/*
 * Ask epoll for input unless closing or requests are still waiting in the
 * input buffer, for output only while some is pending.
 */
static int
client_rearm(struct lb_server *s, struct client *c)
{
	uint32_t want = (c->closing || c->backlog ? 0 : EPOLLIN) | (pending(c) > 0 ? EPOLLOUT : 0);
	struct epoll_event ev = {.events = want, .data.ptr = c};

	if (want == c->events)
		return 0;
	if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
		return -errno;
	c->events = want;
	return 0;
}

/* Send what the kernel takes. 0 (possibly with output left), or -errno: close. */
static int
client_flush(struct client *c)
{
	while (pending(c) > 0) {
		ssize_t n =
		        send(c->fd, c->out + c->out_head, pending(c), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno; /* EPIPE, ECONNRESET: the peer is gone */
		}
		c->out_head += (size_t)n;
		c->last_active = lb_now_ms();
	}
	c->out_head = c->out_len = 0;
	if (c->out_cap > KEEP_BUF) {
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	return 0;
}

/*
 * After a turn's work on c (rc its result so far): send what is queued, close
 * once a closing client has nothing left to send, else wait for its next
 * event; on any error the client is closed.
 */
static void
client_settle(struct lb_server *s, struct client *c, int rc)
{
	if (rc == 0)
		rc = client_flush(c);
	if (rc == 0 && c->closing && pending(c) == 0)
		rc = -ESHUTDOWN;
	if (rc == 0)
		rc = client_rearm(s, c);
	if (rc != 0)
		client_close(s, c);
}

static int
out_append(struct client *c, const char *data, size_t len)
{
	size_t need = pending(c) + len + 1;

	if (c->out_head > 0 && c->out_len + len + 1 > c->out_cap) {
		memmove(c->out, c->out + c->out_head, pending(c));
		c->out_len -= c->out_head;
		c->out_head = 0;
	}
	if (need > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(c->out, cap);
		if (p == NULL)
			return -ENOMEM;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out[c->out_len + len] = '\n';
	c->out_len += len + 1;
	return 0;
}

/*
 * Queue a reply (takes it). Over the output limit with earlier replies still
 * unsent after a flush, the client is not reading: -ENOBUFS, close it. A reply
 * that could not fit the limit even alone is replaced by an error reply
 * (LB_SERVER_ERR_REPLY_TOO_LARGE), so the queue never holds more than the
 * limit (forced error replies aside).
 */
static int
client_queue(struct lb_server *s, struct client *c, char *reply, bool force)
{
	size_t len;
	int rc;

	if (reply == NULL)
		return force ? -ENOMEM : 0;
	len = strlen(reply);
	if (!force && len + 1 > s->p.max_output) {
		char msg[96];

		snprintf(msg, sizeof(msg),
		         "reply too large (%zu bytes, limit %zu bytes per client)", len,
		         s->p.max_output);
		free(reply);
		reply = s->p.error_reply(LB_SERVER_ERR_REPLY_TOO_LARGE, msg);
		if (reply == NULL)
			return -ENOMEM;
		len = strlen(reply);
	}
	if (!force && pending(c) > 0 && pending(c) + len + 1 > s->p.max_output) {
		rc = client_flush(c);
		if (rc == 0 && pending(c) > 0 && pending(c) + len + 1 > s->p.max_output)
			rc = -ENOBUFS;
		if (rc != 0) {
			free(reply);
			return rc;
		}
	}
	rc = out_append(c, reply, len);
	free(reply);
	return rc;
}

/*
 * A reply of this process call: queued at once without group commit, held
 * for the commit with it (in order: a client with held replies holds the rest
 * of its replies too). Takes reply (NULL: nothing to send) and token.
 */
static int
client_reply(struct lb_server *s, struct client *c, char *reply, void *token, bool force)
{
	struct held *h;

	if (s->p.commit == NULL)
		return client_queue(s, c, reply, force);
	if (reply == NULL && token == NULL)
		return force ? -ENOMEM : 0;
	if (c->n_held == c->held_cap) {
		unsigned int cap = c->held_cap ? c->held_cap * 2 : 8;

		h = realloc(c->held, cap * sizeof(*h));
		if (h == NULL) {
			free(token != NULL ? s->p.finish(s->p.arg, reply, token) : reply);
			return -ENOMEM;
		}
		c->held = h;
		c->held_cap = cap;
	}
	if (c->n_held == 0) {
		c->held_next = NULL;
		*s->held_tail = c;
		s->held_tail = &c->held_next;
	}
	c->held[c->n_held++] = (struct held){reply, token, force};
	return 0;
}

static int
client_too_large(struct lb_server *s, struct client *c)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "request too large (limit %zu bytes)", s->p.max_request);
	c->closing = true;
	c->in_len = c->scan = 0;
	return client_reply(s, c, s->p.error_reply(LB_SERVER_ERR_TOO_LARGE, msg), NULL, true);
}

/*
 * Answer the complete lines in the input buffer, in order, at most per_turn
 * requests. With complete lines left over the client goes on the ready FIFO
 * (and is not read from) until a later turn has answered them.
 */
static int
client_lines(struct lb_server *s, struct client *c)
{
	unsigned int answered = 0;
	size_t start = 0;
	char *nl = NULL;
	int rc;

	c->served_turn = s->turn;
	while (!c->closing && (nl = memchr(c->in + c->scan, '\n', c->in_len - c->scan)) != NULL) {
		const char *line = c->in + start;
		size_t len = (size_t)(nl - line);

		if (answered == s->p.per_turn)
			break; /* this line is left for the next turn */
		start = c->scan = (size_t)(nl - c->in) + 1;
		if (len > s->p.max_request)
			return client_too_large(s, c);
		if (len == 0 || (len == 1 && line[0] == '\r'))
			continue; /* a blank line is no request */
		c->last_active = lb_now_ms();
		answered++;
		{
			char *reply = s->p.on_request(s->p.arg, line, len);
			void *token = s->p.commit != NULL ? s->p.reply_token(s->p.arg) : NULL;

			rc = client_reply(s, c, reply, token, false);
		}
		if (rc != 0)
			return rc;
	}
	if (c->closing) {
		c->in_len = c->scan = 0; /* a partial line at end of input is dropped */
		return 0;
	}
	memmove(c->in, c->in + start, c->in_len - start);
	c->in_len -= start;
	if (nl != NULL) {
		c->scan = 0;
		ready_push(s, c);
		return 0;
	}
	c->scan = c->in_len; /* the rest holds no '\n': not scanned again */
	if (c->in_len > s->p.max_request)
		return client_too_large(s, c);
	if (c->in_len == 0 && c->in_cap > KEEP_BUF) {
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
	return 0;
}

static int
client_read(struct lb_server *s, struct client *c)
{
	ssize_t n;

	if (c->in_cap - c->in_len < READ_CHUNK) {
		size_t cap = c->in_cap ? c->in_cap : READ_CHUNK;
		char *p;

		while (cap - c->in_len < READ_CHUNK)
			cap *= 2;
		p = realloc(c->in, cap);
		if (p == NULL)
			return -ENOMEM;
		c->in = p;
		c->in_cap = cap;
	}
	do
		n = recv(c->fd, c->in + c->in_len, READ_CHUNK, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (n == 0) {
		/* End of input: every complete line is answered already; a partial
		 * one is dropped. Send what is queued, then close. */
		c->closing = true;
		c->in_len = c->scan = 0;
		return 0;
	}
	c->in_len += (size_t)n;
	return client_lines(s, c);
}

static void
client_event(struct lb_server *s, struct client *c, uint32_t events)
{
	int rc = 0;

	if (events & EPOLLERR)
		rc = -EPIPE;
	if (rc == 0 && (events & EPOLLIN) && !c->closing && !c->backlog)
		rc = client_read(s, c);
	else if (rc == 0 && (events & EPOLLHUP))
		rc = -EPIPE; /* both directions gone: nothing can be delivered */
	if (rc == 0 && c->n_held > 0)
		return; /* sent, closed or rearmed once the commit has run */
	client_settle(s, c, rc);
}

static void
accept_clients(struct lb_server *s)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = {.events = EPOLLIN};
		struct client *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* Level-triggered: the listener would wake us forever.
				 * Stop watching it until the next tick. */
				struct epoll_event off = {.events = 0, .data.ptr = s};

				if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &off) == 0)
					s->accept_paused = true;
			}
			return;
		}
		if (s->n_clients >= s->p.max_clients) {
			close(fd); /* over the limit: accepted and closed at once */
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->events = EPOLLIN;
		c->last_active = lb_now_ms();
		ev.data.ptr = c;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			free(c);
			continue;
		}
		c->next = s->clients;
		if (s->clients != NULL)
			s->clients->prev = c;
		s->clients = c;
		s->n_clients++;
	}
}

/* Keep the epoll set readable exactly while some client has requests left. */
static void
kick_update(struct lb_server *s)
{
	uint64_t v = 1;

	if (s->ready_head != NULL && !s->kicked)
		s->kicked = write(s->kick, &v, sizeof(v)) == (ssize_t)sizeof(v);
	else if (s->ready_head == NULL && s->kicked)
		s->kicked = !(read(s->kick, &v, sizeof(v)) == (ssize_t)sizeof(v));
}

/* Answer the next requests of a client that had some left (rearm or close it). */
static void
client_resume(struct lb_server *s, struct client *c)
{
	int rc = client_lines(s, c);

	if (rc == 0 && c->n_held > 0)
		return; /* sent, closed or rearmed once the commit has run */
	client_settle(s, c, rc);
}

/*
 * Group commit: one commit for every reply held in this process call, then
 * each finished and queued in order, and the clients flushed, closed or
 * rearmed as after any answer.
 */
static void
release_held(struct lb_server *s)
{
	struct client *c;

	s->p.commit(s->p.arg);
	while ((c = s->held_head) != NULL) {
		int rc = 0;

		s->held_head = c->held_next;
		if (s->held_head == NULL)
			s->held_tail = &s->held_head;
		c->held_next = NULL;
		for (unsigned int i = 0; i < c->n_held; i++) {
			struct held *h = &c->held[i];
			char *text = h->token != NULL ? s->p.finish(s->p.arg, h->text, h->token)
			                              : h->text;

			if (rc == 0)
				rc = client_queue(s, c, text, h->force);
			else
				free(text);
		}
		c->n_held = 0;
		client_settle(s, c, rc);
	}
}

int
lb_server_process(struct lb_server *s)
{
	struct epoll_event evs[EVENT_BATCH];
	struct client *c;
	size_t waiting = 0;
	int n;

	s->turn++;
	do
		n = epoll_wait(s->epfd, evs, EVENT_BATCH, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* A client is freed only while its own event is handled, and each
	 * descriptor appears at most once per batch: the pointers stay valid. */
	for (int i = 0; i < n; i++) {
		if (evs[i].data.ptr == s)
			accept_clients(s);
		else if (evs[i].data.ptr != &s->kick)
			client_event(s, evs[i].data.ptr, evs[i].events);
	}
	/* Then one more share for each client that was waiting, in FIFO order;
	 * one that was read and answered above waits for the next call. */
	for (c = s->ready_head; c != NULL; c = c->ready)
		waiting++;
	while (waiting-- > 0 && (c = ready_pop(s)) != NULL) {
		if (c->served_turn == s->turn)
			ready_push(s, c);
		else
			client_resume(s, c);
	}
	if (s->held_head != NULL)
		release_held(s);
	kick_update(s);
	return 0;
}

void
lb_server_tick(struct lb_server *s)
{
	uint64_t now = lb_now_ms();
	struct client *c, *next;

	for (c = s->clients; c != NULL; c = next) {
		next = c->next;
		if (now - c->last_active >= s->p.idle_ms)
			client_close(s, c);
	}
	if (s->accept_paused) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};

		if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &ev) == 0)
			s->accept_paused = false;
	}
}

struct lb_server *
lb_server_create(const struct lb_server_params *p, char *err, size_t errlen)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct lb_server *s = NULL;
	bool bound = false;
	gid_t gid = 0;
	int rc;

	if (p == NULL || p->on_request == NULL || (p->mode & ~(mode_t)0777) != 0 ||
	    (p->commit != NULL && (p->reply_token == NULL || p->finish == NULL))) {
		snprintf(err, errlen, "control socket: invalid parameters");
		errno = EINVAL;
		return NULL;
	}
	rc = lb_server_file_prepare(p->path, p->group, &gid, err, errlen);
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s != NULL) {
		s->lfd = s->epfd = s->kick = -1;
		s->held_tail = &s->held_head;
		s->path = strdup(p->path);
	}
	if (s == NULL || s->path == NULL) {
		snprintf(err, errlen, "%s: out of memory", p->path);
		rc = -ENOMEM;
		goto fail;
	}
	s->p = *p;
	s->p.path = s->path;
	s->p.group = NULL; /* not kept: the caller's string */
	if (s->p.mode == 0)
		s->p.mode = LB_SERVER_DEFAULT_MODE;
	if (s->p.max_request == 0)
		s->p.max_request = LB_SERVER_DEFAULT_MAX_REQUEST;
	if (s->p.max_output == 0)
		s->p.max_output = LB_SERVER_DEFAULT_MAX_OUTPUT;
	if (s->p.idle_ms == 0)
		s->p.idle_ms = LB_SERVER_DEFAULT_IDLE_MS;
	if (s->p.max_clients == 0)
		s->p.max_clients = LB_SERVER_DEFAULT_MAX_CLIENTS;
	if (s->p.per_turn == 0)
		s->p.per_turn = LB_SERVER_DEFAULT_PER_TURN;
	if (s->p.error_reply == NULL)
		s->p.error_reply = builtin_error_reply;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	s->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->kick >= 0) {
		struct epoll_event kev = {.events = EPOLLIN, .data.ptr = &s->kick};

		if (s->epfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->kick, &kev) != 0) {
			close(s->kick);
			s->kick = -1;
		}
	}
	if (s->epfd < 0 || s->lfd < 0 || s->kick < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", p->path, strerror(-rc));
		goto fail;
	}
	rc = lb_server_file_bind(s->lfd, p->path, s->p.mode, p->group, gid, &s->dev, &s->ino, err,
	                         errlen);
	if (rc != 0)
		goto fail;
	bound = true;
	ev.data.ptr = s;
	/* A backlog as deep as the client limit: a burst of connections waits for
	 * accept() rather than failing with EAGAIN (the kernel caps it at somaxconn). */
	if (listen(s->lfd, (int)s->p.max_clients) != 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot listen: %s", p->path, strerror(-rc));
		goto fail;
	}
	return s;
fail:
	if (bound)
		unlink(p->path);
	if (s != NULL) {
		if (s->lfd >= 0)
			close(s->lfd);
		if (s->epfd >= 0)
			close(s->epfd);
		if (s->kick >= 0)
			close(s->kick);
		free(s->path);
		free(s);
	}
	errno = -rc;
	return NULL;
}

int
lb_server_fd(const struct lb_server *s)
{
	return s->epfd;
}

unsigned int
lb_server_clients(const struct lb_server *s)
{
	return s->n_clients;
}

void
lb_server_destroy(struct lb_server *s)
{
	struct stat st;

	if (s == NULL)
		return;
	while (s->clients != NULL)
		client_close(s, s->clients);
	close(s->lfd);
	close(s->epfd);
	close(s->kick);
	/* Only our own file: a successor may already have replaced it. */
	if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	free(s->path);
	free(s);
}
