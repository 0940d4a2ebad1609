/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/mutex.h - the lock profiler's waiting side (mutex.c): which
 * contended waits are sampled, and the records they become (stream.h's
 * PROF_REC_LOCK).  The interposed lock calls (mutex_hook.c) ask
 * prof_lock_on before anything else, and call prof_lock_begin() and
 * prof_lock_end() around a wait that the uncontended attempt could not
 * avoid; the collector (mutex_agg.c) turns the records into the mutex
 * and block profiles.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_MUTEX_H
#define PROFRING_PROF_MUTEX_H

#include <profring/prof.h>
#include <profring/profbuf.h>

#include "prof/wire/stream.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The default --mutex-rate: one contended wait in this many is recorded. */
#define PROF_LOCK_DEFAULT_RATE 10u

/**
 * struct prof_lock_config - one lock-profiling session.
 * @buf:	the ring the records go to.
 * @rate:	one contended wait in @rate is recorded; 1: every one.
 * @max_frames:	frames per recorded stack.
 * @counters:	where the waiting side counts (never NULL).
 * @libunwind:	walk stacks with libunwind (complete through code built
 *		without frame pointers), else frame pointers.
 */
struct prof_lock_config {
	struct profbuf *buf;
	uint64_t rate;
	unsigned int max_frames;
	struct prof_counters *counters;
	bool libunwind;
};

/*
 * Nonzero while a session records.  Relaxed on the fast paths: a session
 * starting or stopping is seen a little late, which only moves its edge;
 * prof_lock_begin() rechecks it under the in-flight count (mutex.c).
 */
extern atomic_uint prof_lock_on __attribute__((visibility("hidden")));

/*
 * struct prof_lock_wait - one wait between prof_lock_begin() and
 * prof_lock_end(), on the waiter's stack.
 * @t0:		CLOCK_MONOTONIC ns when the wait began (0: not sampled).
 * @gen:	the session it began in.
 */
struct prof_lock_wait {
	uint64_t t0;
	unsigned int gen;
};

void prof_lock_begin(struct prof_lock_wait *w);
void prof_lock_end(struct prof_lock_wait *w, unsigned int kind,
		   uintptr_t frame);

int prof_lock_start(const struct prof_lock_config *cfg);
void prof_lock_stop(void);
void prof_lock_after_fork_child(bool keep, struct prof_counters *counters);

#endif /* PROFRING_PROF_MUTEX_H */
