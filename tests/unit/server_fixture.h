/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What test_server.c and test_server_file.c share: a server in a fresh
 * temporary directory whose requests are echoed back, plain Unix socket
 * clients, and the loops that drive the server (lb_server_process and
 * lb_server_tick) while a client writes, reads or waits to be closed.
 */
#ifndef SPW_TEST_SERVER_FIXTURE_H
#define SPW_TEST_SERVER_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "control/io/server.h"

#define ERR_LEN 512
#define WAIT_MS 3000 /* generous bound for anything that should be immediate */

struct fixture {
	char dir[64];
	char path[128];
	struct lb_server *srv;
	unsigned int calls;
	unsigned int a_calls; /* lines starting with 'a' answered so far */
	int b_after_a;        /* a_calls when the line "b" was answered; -1: not yet */
};

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t now_ms(void);

/* The on_request callback: "echo:LINE"; a line starting with '#' is a notification (no reply). */
char *echo(void *arg, const char *line, size_t len);

/* cmocka setup/teardown: a fresh directory holding f->path; teardown destroys f->srv. */
int setup(void **state);
int teardown(void **state);

/* Server parameters for f: its path, echo, defaults otherwise. */
struct lb_server_params params(struct fixture *f);

/* lb_server_create into f->srv, or the test fails. */
struct lb_server *start(struct fixture *f, const struct lb_server_params *p);

/* A non-blocking client connected to path. */
int client(const char *path);

/* Sends all of data, driving the server while the socket is full. */
void send_all(struct lb_server *s, int fd, const char *data, size_t len);
void send_str(struct lb_server *s, int fd, const char *str);

/* Reads n lines (or up to EOF) into buf, driving the server meanwhile. */
size_t read_lines(struct lb_server *s, int fd, char *buf, size_t cap, unsigned int n, bool *eof);

/* Reads one line and requires it to be want. */
void expect_reply(struct lb_server *s, int fd, const char *want);

/* Drives the server (and its ticks) until fd sees EOF; false on timeout. */
bool wait_closed(struct lb_server *s, int fd, unsigned int ms);

/* Drives the server and its ticks for ms milliseconds. */
void pump(struct lb_server *s, unsigned int ms);

#endif /* SPW_TEST_SERVER_FIXTURE_H */
