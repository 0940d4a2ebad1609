/* SPDX-License-Identifier: MIT */
/*
 * ring/clock.h - a cheap, monotonic event clock.
 *
 * On x86-64 it is the time-stamp counter (invariant on every CPU this
 * library targets), read with RDTSC: a few nanoseconds, no syscall, no
 * vDSO.  Elsewhere it is CLOCK_MONOTONIC in nanoseconds.  Consumers learn
 * the tick rate from ring_clock_hz(), measured once against
 * CLOCK_MONOTONIC.
 *
 * ring_clock_ns(), ring_clock_mono_ns() and ring_clock_ticks() are
 * async-signal-safe; ring_clock_hz() is not (see there).
 */
#ifndef PROFRING_RING_CLOCK_H
#define PROFRING_RING_CLOCK_H

#include <stdint.h>
#include <time.h>

/* @clock in nanoseconds (clock_gettime: async-signal-safe). */
static inline uint64_t ring_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ring_clock_mono_ns(void)
{
	return ring_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t ring_clock_ticks(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return ring_clock_mono_ns();
#endif
}

/*
 * Ticks per second.  The first call measures it (sleeping about 10 ms);
 * later calls return the same value.  Not async-signal-safe: it runs
 * pthread_once(), which a signal handler must not call (one that
 * interrupted the first call on its own thread would deadlock).
 */
uint64_t ring_clock_hz(void);

#endif /* PROFRING_RING_CLOCK_H */
