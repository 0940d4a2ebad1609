/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/sampler.h - the profiler's signal side: the sampling handler, the
 * timers that drive it on a real-time signal of its own, the threads it
 * tracks; the records it writes are stream.h's.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_SAMPLER_H
#define PROFRING_PROF_SAMPLER_H

#include <profring/prof.h>
#include <profring/profbuf.h>

#include "prof/wire/stream.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Wake the collector once this many words are pending, or a quarter of
 * the ring if that is less (prof.c).  A session's limits and defaults are
 * prof.h's PROFRING_PROF_MAX_* and PROFRING_PROF_DEFAULT_*.
 */
#define PROF_WAKE_WORDS ((size_t)8192)

/**
 * struct prof_sampler_config - what the handler needs for one session.
 * @buf:	the ring the handler writes to.
 * @period_ns:	CPU nanoseconds between samples.
 * @timer:	requested timer kind.
 * @unwinder:	stack walker.
 * @max_frames:	frames per sample, at most PROFRING_PROF_MAX_FRAMES.
 * @exclude_tid: a thread never to arm (the collector's).
 * @counters:	where the handler counts (never NULL): the session's own,
 *		or a slot in memory shared with the launcher.
 * @wall:	wall-clock mode (wall.c): no CPU timers; a ticker thread
 *		signals every thread each @period_ns of real time.
 * @own_tids:	wall mode: threads of the profiler's never to signal (0:
 *		none): the one that waits out a served window (serve.c's
 *		caller, an HTTP connection or periodic.c's thread: asleep
 *		all the window, and not the program's), and the session's
 *		collector beside the window's (it blocks every signal: one
 *		sent would stay pending, a window after a window).
 */
struct prof_sampler_config {
	struct profbuf *buf;
	uint64_t period_ns;
	enum profring_prof_timer timer;
	enum profring_prof_unwinder unwinder;
	unsigned int max_frames;
	pid_t exclude_tid;
	struct prof_counters *counters;
	bool wall;
	pid_t own_tids[2];
};

void prof_sampler_init_process(void);
struct prof_stack_bounds;
pid_t prof_sampler_self(struct prof_stack_bounds *bounds);
int prof_sampler_start(const struct prof_sampler_config *c);
int prof_sampler_stop(void);
void prof_sampler_note_cpu(void);
void prof_sampler_rescan(void);
void prof_sampler_thread_enter(void);
void prof_sampler_add_stats(struct profring_prof_stats *st,
			    struct prof_counters *c);
void prof_sampler_taken_over(int sig);
bool prof_sampler_is_our_handler(const void *fn);
int prof_real_pthread_create(pthread_t *t, const pthread_attr_t *attr,
			     void *(*fn)(void *), void *arg);

/*
 * An exited thread's name (its comm: at most 15 bytes and a NUL; "" if
 * unknown), kept for the profile (prof_sampler_exited_names()).
 */
struct tid_name {
	uint32_t tid;
	char name[16];
};

typedef void (*prof_name_fn)(void *arg, const struct tid_name *n);
void prof_sampler_exited_names(prof_name_fn fn, void *arg);

#endif /* PROFRING_PROF_SAMPLER_H */
