/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/serve.h - the profiles the HTTP server (http.c) answers with, and
 * who makes them: an in-process session (serve.c, with what it needs of
 * prof.c) or the launcher of `profring-prof record --http` (record_http.c);
 * both make heap profiles the same way (serve_agg.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_SERVE_H
#define PROFRING_PROF_SERVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct prof_agg;

/* A response body: malloc'd bytes. */
struct prof_blob {
	uint8_t *data;
	size_t len;
};

/*
 * struct prof_http_ops - what a server serves.  Every call runs on a
 * connection's thread, never in a signal handler; those with @quit return
 * -ECANCELED early when it becomes true (the server is stopping).
 * @cpu:	the CPU profile of the next @seconds: 0; -EBUSY (one at a
 *		time); -ENOENT (no CPU sampling: @cpu_off says why); -errno.
 * @wall:	the wall-clock profile of the next @seconds (wall.c, at
 *		PROFRING_PROF_DEFAULT_WALL_HZ), as @cpu (it holds the same
 *		sampler: one of the two at a time); NULL: not served here
 *		(404).
 * @heap:	the heap profile now (@seconds 0), or the allocations of the
 *		next @seconds; default sample type alloc_space if @allocs,
 *		else inuse_space: 0; -ENOENT (heap sampling off: @heap_off
 *		says how to turn it on); -errno.
 * @lock:	the mutex profile (@block false: contention on mutexes and
 *		rwlocks) or the block profile (every lock wait), since the
 *		start (@seconds 0) or of the next @seconds: 0; -ENOENT (lock
 *		profiling off: @lock_off says how to turn it on); -errno.
 *		NULL: not served here (404).
 * @pid:	the profiled program's pid now (/cmdline's).
 * @symbols:	write "0x%llx name\n" to @out for each of the @n addresses
 *		the program's code has a name for (gperftools' /symbol).
 * @cpu_off, @wall_off, @heap_off, @lock_off: the 404 texts (@wall's
 *		-ENOENT: @wall_off; @lock_off NULL when @lock is).
 */
struct prof_http_ops {
	int (*cpu)(unsigned int seconds, const _Atomic bool *quit,
		   struct prof_blob *out);
	int (*wall)(unsigned int seconds, const _Atomic bool *quit,
		    struct prof_blob *out);
	int (*heap)(bool allocs, unsigned int seconds, const _Atomic bool *quit,
		    struct prof_blob *out);
	int (*lock)(bool block, unsigned int seconds, const _Atomic bool *quit,
		    struct prof_blob *out);
	pid_t (*pid)(void);
	int (*symbols)(const uint64_t *pcs, size_t n, FILE *out);
	const char *cpu_off, *wall_off, *heap_off, *lock_off;
};

/* serve.c: an in-process session's. */
extern const struct prof_http_ops prof_serve_session_ops;
void prof_serve_session_stop(void);

/*
 * A heap aggregation as its owner lends it: while the lender's @fn runs,
 * no record is taken into @agg.
 * @written, @refused, @untracked: the writers' counts (stream.h's
 *		heap_allocs + heap_frees, heap_refused, heap_untracked).
 */
struct prof_heap_view {
	struct prof_agg *agg;
	uint64_t rate;
	int64_t start_realtime_ns, start_mono_ns;
	uint64_t written, refused, untracked;
};

/* Call @fn with the view: what @fn returned, or -ENOENT (no heap). */
typedef int (*prof_heap_lender)(int (*fn)(const struct prof_heap_view *v,
					  void *arg),
				void *arg);

/* prof.c */
int prof_session_claim_cpu(pid_t *collector_tid);
void prof_session_release_cpu(void);
int prof_session_heap(int (*fn)(const struct prof_heap_view *v, void *arg),
		      void *arg);

/* serve_agg.c */
int prof_serve_wait(unsigned int seconds, const _Atomic bool *quit);
int prof_serve_heap(prof_heap_lender lend, bool allocs, unsigned int seconds,
		    const _Atomic bool *quit, struct prof_blob *out);

/*
 * prof_serve_cpu() - sample the CPU in this process for @seconds (or
 * until *@quit) and make the gzip'd pprof profile of that window.
 * @partial: when *@quit ends the window early, make the profile of what
 *	it had (else -ECANCELED).
 * Return: 0; -EBUSY (another request or the session's CPU profile holds
 * the sampler); -ECANCELED (*@quit: the server is stopping); -errno.
 */
int prof_serve_cpu(unsigned int seconds, unsigned int hz,
		   const _Atomic bool *quit, bool partial,
		   struct prof_blob *out);
/* prof_serve_cpu() in wall-clock mode: a wall profile of the window. */
int prof_serve_wall(unsigned int seconds, unsigned int hz,
		    const _Atomic bool *quit, bool partial,
		    struct prof_blob *out);

#endif /* PROFRING_PROF_SERVE_H */
