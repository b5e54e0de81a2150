/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared part of the BIRD announcer's unit tests (bird_fixture.h): the
 * snapshots of test configurations, and the fake BIRD's thread, which serves
 * one connection at a time in the mode the test sets and counts what it saw.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "bird_fixture.h"
#include "control/model/config.h"

struct lb_snapshot *
snap_of(const char *text)
{
	json_error_t je;
	json_t *root = json_loads(text, 0, &je);
	char err[ERR_LEN];
	struct lb_config *c;
	struct lb_snapshot *s;

	if (root == NULL)
		fail_msg("test config: %s (line %d)", je.text, je.line);
	c = lb_config_from_json(root, err, sizeof(err));
	json_decref(root);
	if (c == NULL)
		fail_msg("test config: %s", err);
	s = lb_snapshot_build(c, 1, err, sizeof(err));
	assert_non_null(s);
	lb_config_free(c);
	return s;
}

/* ---- the fake BIRD ---- */

static void
say(int fd, const char *text)
{
	(void)!write(fd, text, strlen(text));
}

static void
fake_serve(struct fake *f, int cfd)
{
	static const char welcome[] = "0001 BIRD 2.0.12 ready.\n";
	char buf[256];
	size_t len = 0;
	int mode = f->mode;

	if (mode == FAKE_NOT_BIRD) {
		say(cfd, "HTTP/1.0 400 Bad Request\r\n");
		return;
	}
	while (mode == FAKE_HOLD) {
		struct pollfd p = {.fd = cfd, .events = POLLIN};

		if (f->stop)
			return;
		if (f->release)
			mode = FAKE_OK;
		else if (poll(&p, 1, 10) > 0 && read(cfd, buf, sizeof(buf)) <= 0)
			return; /* the client gave up */
	}
	if (mode != FAKE_SILENT)
		(void)!write(cfd, welcome, sizeof(welcome) - 1);
	for (;;) {
		struct pollfd p = {.fd = cfd, .events = POLLIN};
		ssize_t n;

		if (f->stop)
			return;
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(cfd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return; /* the client gave up (timeout) or closed */
		len += (size_t)n;
		buf[len] = '\0';
		if (strchr(buf, '\n') == NULL)
			continue;
		pthread_mutex_lock(&f->lock);
		f->commands++;
		snprintf(f->last_cmd, sizeof(f->last_cmd), "%.*s", (int)strcspn(buf, "\n"), buf);
		pthread_mutex_unlock(&f->lock);
		if (mode == FAKE_SILENT)
			continue; /* keep quiet until the client leaves */
		if (mode == FAKE_OK)
			say(cfd, "0002-Reading configuration from /etc/bird/bird.conf\n"
			         "0003 Reconfigured\n");
		else if (mode == FAKE_IN_PROGRESS)
			say(cfd, "0004 Reconfiguration in progress\n");
		else
			say(cfd, "0002-Reading configuration from /etc/bird/bird.conf\n"
			         "8002 /run/spw.conf:3:9 syntax error, unexpected CF_SYM\n");
		return;
	}
}

static void *
fake_main(void *arg)
{
	struct fake *f = arg;

	while (!f->stop) {
		struct pollfd p = {.fd = f->lfd, .events = POLLIN};
		int cfd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		cfd = accept(f->lfd, NULL, NULL);
		if (cfd < 0)
			continue;
		pthread_mutex_lock(&f->lock);
		f->accepts++;
		pthread_mutex_unlock(&f->lock);
		fake_serve(f, cfd);
		close(cfd);
	}
	return NULL;
}

int
fake_commands(struct fake *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->commands;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int
fake_accepts(struct fake *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->accepts;
	pthread_mutex_unlock(&f->lock);
	return n;
}

void
wait_accepts(struct fake *f, int n)
{
	for (int i = 0; i < 2000 && fake_accepts(f) < n; i++)
		usleep(1000);
	assert_true(fake_accepts(f) >= n);
}

int
setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_bird.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/bird.ctl", f->dir);
	snprintf(f->include, sizeof(f->include), "%s/spillway.conf", f->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
	pthread_mutex_init(&f->lock, NULL);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(f->lfd, 8) != 0)
		return -1;
	if (pthread_create(&f->thread, NULL, fake_main, f) != 0)
		return -1;
	*state = f;
	return 0;
}

int
teardown(void **state)
{
	struct fake *f = *state;
	char cmd[128];

	f->stop = 1;
	pthread_join(f->thread, NULL);
	close(f->lfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	pthread_mutex_destroy(&f->lock);
	free(f);
	return 0;
}
