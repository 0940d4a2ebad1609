// SPDX-License-Identifier: MIT
/*
 * ring/clock.c - the tick rate of ring_clock_ticks().
 */
#include <pthread.h>

#include "ring/clock.h"

static uint64_t clock_hz;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

static void measure(void)
{
#if defined(__x86_64__)
	uint64_t t0 = ring_clock_mono_ns(), c0 = ring_clock_ticks();
	uint64_t t1, c1;
	struct timespec ts = { 0, 10000000 };

	nanosleep(&ts, NULL);
	t1 = ring_clock_mono_ns();
	c1 = ring_clock_ticks();
	clock_hz = (uint64_t)((double)(c1 - c0) * 1e9 / (double)(t1 - t0));
#else
	clock_hz = 1000000000u;
#endif
}

uint64_t ring_clock_hz(void)
{
	pthread_once(&clock_once, measure);
	return clock_hz;
}
