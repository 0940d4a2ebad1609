/* SPDX-License-Identifier: MIT */
/*
 * prof/serve.h - the profiles the HTTP server (http.c) answers with,
 * made in memory while the program runs (serve.c), and what they need of
 * the session (prof.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_SERVE_H
#define PROFRING_PROF_SERVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct prof_agg;
struct prof_counters;

/* A running session's heap aggregation, as prof_session_heap() lends it. */
struct prof_heap_view {
	struct prof_agg *agg;
	uint64_t rate;
	int64_t start_realtime_ns, start_mono_ns;
	const struct prof_counters *counters;
};

/* prof.c */
int prof_session_claim_cpu(void);
void prof_session_release_cpu(void);
int prof_session_heap(int (*fn)(const struct prof_heap_view *v, void *arg),
		      void *arg);

/* A response body: malloc'd bytes. */
struct prof_blob {
	uint8_t *data;
	size_t len;
};

/*
 * prof_serve_cpu() - sample the CPU for @seconds (or until *@quit) and
 * make the gzip'd pprof profile of that window.
 * @partial: when *@quit ends the window early, make the profile of what
 *	it had (else -ECANCELED).
 * Return: 0; -EBUSY (another request or the session's CPU profile holds
 * the sampler); -ECANCELED (*@quit: the server is stopping); -errno.
 */
int prof_serve_cpu(unsigned int seconds, unsigned int hz,
		   const _Atomic bool *quit, bool partial,
		   struct prof_blob *out);

/*
 * prof_serve_heap() - the heap profile now (@seconds 0), or the
 * allocations of the next @seconds; its default sample type alloc_space
 * if @allocs, else inuse_space.
 * Return: 0; -ENOENT (heap sampling is off); -ECANCELED; -errno.
 */
int prof_serve_heap(bool allocs, unsigned int seconds, const _Atomic bool *quit,
		    struct prof_blob *out);

#endif /* PROFRING_PROF_SERVE_H */
