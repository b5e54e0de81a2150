/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event loop of loop.h on one epoll set. Each registration is a heap entry
 * that epoll hands back as its data pointer; a registration deleted during a
 * dispatch is only marked dead and freed when the dispatch ends, so an event
 * already fetched for it is skipped instead of reaching freed memory.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "control/base/loop.h"

#define EVENT_BATCH 64 /* events fetched per epoll_wait */

struct entry {
	struct entry *next;
	int fd;
	uint32_t events; /* LB_LOOP_READABLE | LB_LOOP_WRITABLE */
	lb_loop_fn cb;
	void *arg;
	bool dead;
};

struct lb_loop {
	int epfd;
	struct entry *live; /* registered */
	struct entry *dead; /* deleted during a dispatch, freed after it */
	unsigned int depth; /* dispatches under way (callbacks may dispatch) */
	bool stop;
};

struct lb_loop *
lb_loop_create(void)
{
	struct lb_loop *loop = calloc(1, sizeof(*loop));

	if (loop == NULL)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		int e = errno;

		free(loop);
		errno = e;
		return NULL;
	}
	return loop;
}

static struct entry **
find(struct lb_loop *loop, int fd)
{
	struct entry **pp = &loop->live;

	while (*pp != NULL && (*pp)->fd != fd)
		pp = &(*pp)->next;
	return pp;
}

int
lb_loop_add(struct lb_loop *loop, int fd, uint32_t events, lb_loop_fn cb, void *arg)
{
	struct epoll_event ev = {0};
	struct entry *e;

	if (loop == NULL || cb == NULL || fd < 0 || events == 0 ||
	    (events & ~(LB_LOOP_READABLE | LB_LOOP_WRITABLE)) != 0)
		return -EINVAL;
	if (*find(loop, fd) != NULL)
		return -EEXIST;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	e->fd = fd;
	e->events = events;
	e->cb = cb;
	e->arg = arg;
	if (events & LB_LOOP_READABLE)
		ev.events |= EPOLLIN;
	if (events & LB_LOOP_WRITABLE)
		ev.events |= EPOLLOUT;
	ev.data.ptr = e;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		int rc = -errno;

		free(e);
		return rc;
	}
	e->next = loop->live;
	loop->live = e;
	return 0;
}

int
lb_loop_del(struct lb_loop *loop, int fd)
{
	struct entry **pp, *e;

	if (loop == NULL || fd < 0)
		return -EINVAL;
	pp = find(loop, fd);
	e = *pp;
	if (e == NULL)
		return -ENOENT;
	/* Fails only if fd was closed already, which removed it from the set. */
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	*pp = e->next;
	if (loop->depth == 0) {
		free(e);
		return 0;
	}
	e->dead = true;
	e->next = loop->dead;
	loop->dead = e;
	return 0;
}

static void
free_list(struct entry *e)
{
	while (e != NULL) {
		struct entry *next = e->next;

		free(e);
		e = next;
	}
}

/* What the callback is told: an error or hang-up counts as every registered event. */
static uint32_t
fired(const struct entry *e, uint32_t epoll_events)
{
	uint32_t m = 0;

	if (epoll_events & (EPOLLERR | EPOLLHUP))
		return e->events;
	if (epoll_events & EPOLLIN)
		m |= LB_LOOP_READABLE;
	if (epoll_events & EPOLLOUT)
		m |= LB_LOOP_WRITABLE;
	return m & e->events;
}

int
lb_loop_run_once(struct lb_loop *loop, int timeout_ms)
{
	struct epoll_event evs[EVENT_BATCH];
	int n, called = 0;

	if (loop == NULL)
		return -EINVAL;
	loop->stop = false;
	n = epoll_wait(loop->epfd, evs, EVENT_BATCH, timeout_ms);
	if (n < 0)
		return -errno;
	loop->depth++;
	for (int i = 0; i < n && !loop->stop; i++) {
		struct entry *e = evs[i].data.ptr;
		uint32_t m;

		if (e->dead)
			continue;
		m = fired(e, evs[i].events);
		if (m == 0)
			continue;
		e->cb(loop, e->fd, m, e->arg);
		called++;
	}
	if (--loop->depth == 0) {
		free_list(loop->dead);
		loop->dead = NULL;
	}
	return called;
}

int
lb_loop_run(struct lb_loop *loop)
{
	if (loop == NULL)
		return -EINVAL;
	for (;;) {
		int n = lb_loop_run_once(loop, -1);

		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;
		if (loop->stop)
			return 0;
	}
}

void
lb_loop_stop(struct lb_loop *loop)
{
	if (loop != NULL)
		loop->stop = true;
}

void
lb_loop_destroy(struct lb_loop *loop)
{
	if (loop == NULL)
		return;
	free_list(loop->live);
	free_list(loop->dead);
	close(loop->epfd);
	free(loop);
}
