/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/periodic.h - periodic, rotated profile files of an in-process
 * session (PROFRING_PROF_PERIOD; periodic.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_PERIODIC_H
#define PROFRING_PROF_PERIODIC_H

#include <stdbool.h>
#include <stddef.h>

/*
 * prof_periodic_start() - every @period seconds write the CPU profile of
 * the window just ended (@wall: its wall-clock profile, the sampler in
 * wall mode at @hz) to @cpu (a pattern, or NULL) and the heap profile
 * as it is to @heap (a pattern, or NULL: or when heap sampling is off),
 * keeping the last @keep files of each (0: all).  Patterns: %p the pid,
 * %t the UTC time of the window's start (YYYYmmddTHHMMSSZ), %n the
 * window's number from 1, %% a %.
 * Return: 0 or -errno.
 */
int prof_periodic_start(const char *cpu, const char *heap, unsigned int period,
			unsigned int keep, unsigned int hz, bool wall);

/* End the window now, write it, and stop (at the session's stop). */
void prof_periodic_stop(void);

#endif /* PROFRING_PROF_PERIODIC_H */
