/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tick rate spillgen times everything with (pacing, intervals, latency),
 * measured against CLOCK_MONOTONIC. EAL's rte_get_tsc_hz() is, without a
 * frequency the CPU reports, its own one-second measurement rounded to a
 * multiple of 10 MHz: on a 2.5961 GHz TSC it says 2.600 GHz, 0.15% fast, so
 * a 7-second run's interval edges drift 10 ms from the monotonic clock that
 * the checkers place the daemon's polls and windows on.
 */
#ifndef SG_CLOCK_H
#define SG_CLOCK_H

#include <stdint.h>

/**
 * The rate of the counter read_tick() reads, in ticks per second of
 * CLOCK_MONOTONIC, measured over about ms milliseconds (at least 10): the
 * ticks between two (tick, clock) pairs, each pair read back to back and the
 * tighter of a few tries kept, over the monotonic nanoseconds between them.
 * 0 if the clock cannot be read or the counter does not advance.
 */
uint64_t sg_clock_tick_hz(uint64_t (*read_tick)(void), unsigned int ms);

#endif /* SG_CLOCK_H */
