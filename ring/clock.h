/* SPDX-License-Identifier: MIT */
/*
 * ring/clock.h - a cheap, monotonic event clock.
 *
 * On x86-64 it is the time-stamp counter (invariant on every CPU this
 * library targets), read with RDTSC: a few nanoseconds, no syscall, no
 * vDSO.  Elsewhere it is CLOCK_MONOTONIC in nanoseconds.  Consumers learn
 * the tick rate from ring_clock_hz(), measured once against
 * CLOCK_MONOTONIC; async-signal-safe.
 */
#ifndef PROFRING_RING_CLOCK_H
#define PROFRING_RING_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ring_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ring_clock_ticks(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return ring_clock_mono_ns();
#endif
}

/* Ticks per second (measured once, ~10 ms, on first call; not signal-safe). */
uint64_t ring_clock_hz(void);

#endif /* PROFRING_RING_CLOCK_H */
