/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the BIRD announcer's unit tests (test_bird.c, test_bird_async.c)
 * share: the configurations and their snapshots, and a fake BIRD (a thread on
 * a Unix socket in a fresh temporary directory) that accepts, refuses, stays
 * silent, answers late or speaks another protocol.
 */
#ifndef SPW_TEST_BIRD_FIXTURE_H
#define SPW_TEST_BIRD_FIXTURE_H

#include <pthread.h>

#include "control/build/snapshot_build.h"

#define ERR_LEN 256

/* ---- configurations ---- */

#define ENCAP                                                                                      \
	"\"encap\": {\"source_v4\": \"10.0.0.1\", \"source_v6\": \"fd00::1\","                     \
	" \"next_hop_mac\": \"02:00:00:00:00:01\"}, \"maglev\": {\"table_size\": 251},"

/* .1 twice (80 usable, 443 only draining), .2 weight 0 only, .3 down + active,
 * .4 no backends, fd00::10 any port (usable), fd00::11 down only. */
#define CFG_MIXED                                                                                  \
	"{" ENCAP " \"vips\": ["                                                                   \
	"{\"address\": \"10.100.0.1\", \"port\": 443, \"protocol\": \"tcp\", \"backends\": ["      \
	"  {\"address\": \"10.1.0.1\", \"state\": \"draining\"}]},"                                \
	"{\"address\": \"10.100.0.3\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["       \
	"  {\"address\": \"10.1.0.1\", \"state\": \"down\"}, {\"address\": \"10.1.0.2\"}]},"       \
	"{\"address\": \"10.100.0.1\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["       \
	"  {\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\", \"weight\": 0}]},"             \
	"{\"address\": \"10.100.0.2\", \"port\": 80, \"protocol\": \"udp\", \"backends\": ["       \
	"  {\"address\": \"10.1.0.1\", \"weight\": 0}]},"                                          \
	"{\"address\": \"10.100.0.4\", \"port\": 80, \"protocol\": \"tcp\"},"                      \
	"{\"address\": \"fd00::10\", \"port\": 0, \"protocol\": \"udp\", \"backends\": ["          \
	"  {\"address\": \"fd01::1\"}]},"                                                          \
	"{\"address\": \"fd00::11\", \"port\": 53, \"protocol\": \"udp\", \"backends\": ["         \
	"  {\"address\": \"fd01::1\", \"state\": \"down\"}]}]}"

/* A and B announced. */
#define CFG_AB                                                                                     \
	"{" ENCAP " \"vips\": ["                                                                   \
	"{\"address\": \"10.100.0.1\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["       \
	"  {\"address\": \"10.1.0.1\"}]},"                                                         \
	"{\"address\": \"10.100.0.2\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["       \
	"  {\"address\": \"10.1.0.1\"}]}]}"

/* ---- a fake BIRD on a Unix socket ---- */

enum fake_mode {
	FAKE_OK,          /* welcome, then 0002- + 0003 */
	FAKE_REFUSE,      /* welcome, then 8002 (configuration error) */
	FAKE_SILENT,      /* accepts, never says anything */
	FAKE_NOT_BIRD,    /* answers something that is not BIRD's protocol */
	FAKE_IN_PROGRESS, /* 0004 */
	FAKE_HOLD         /* silent until released, then as FAKE_OK */
};

struct fake {
	char dir[64];
	char sock[128];
	char include[128];
	int lfd;
	pthread_t thread;
	volatile int mode;
	volatile int stop;
	volatile int release; /* FAKE_HOLD: answer now */
	int accepts;          /* connections accepted */
	int commands;         /* "configure" lines seen (read after the exchange ends) */
	pthread_mutex_t lock;
	char last_cmd[64];
};

/* The snapshot of the configuration text (generation 1); fails the test on error. */
struct lb_snapshot *snap_of(const char *text);

/* "configure" lines the fake has seen, and connections it has accepted. */
int fake_commands(struct fake *f);
int fake_accepts(struct fake *f);

/* Until the fake has accepted n connections (bounded; it serves one at a time). */
void wait_accepts(struct fake *f, int n);

/*
 * cmocka setup/teardown: a struct fake in *state, listening on f->sock in a
 * fresh directory f->dir (f->include names a file there, not yet written),
 * its thread started; teardown stops the thread and removes the directory.
 */
int setup(void **state);
int teardown(void **state);

#endif /* SPW_TEST_BIRD_FIXTURE_H */
