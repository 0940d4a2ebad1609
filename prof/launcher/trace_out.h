/* SPDX-License-Identifier: MIT */
/*
 * prof/launcher/trace_out.h - `profring-prof record --trace FILE`: what the
 * launcher reads from the profiled program, also written as a profring
 * trace (tracebuf/FORMAT.md), generation by generation while it runs.
 *
 * Internal header of the profiler (the launcher's): never installed.
 */
#ifndef PROFRING_PROF_TRACE_OUT_H
#define PROFRING_PROF_TRACE_OUT_H

#include <stdbool.h>
#include <stdint.h>

#include <profring/profbuf.h>
#include <profring/tracebuf.h>

struct prof_trace;

/*
 * The event type of a wall-clock sample (trace_out.c): the first of the
 * user-defined types, named "wall sample" in the stream; arguments: the
 * ticks when sampled, the thread id, the stack id, the periods (wall
 * ticks), the state's string id ("running" or "sleeping").
 */
#define PROF_TRACE_EV_WALL TRACEBUF_EV_USER

/*
 * struct prof_trace_counts - what prof_trace_close() reports.
 * @bytes:	the stream's size.
 * @generations: generations written.
 * @lost:	events the tracer could not take (counted in the stream).
 * @not_traced:	heap records of other processes than the one started
 *		(and its images after exec), and allocations the heap
 *		profiler could not track: not in the trace.
 */
struct prof_trace_counts {
	uint64_t bytes, generations, lost, not_traced;
};

/*
 * prof_trace_open() - create @path (truncated) and start the tracer and
 * its writer thread, which advances the generation every second.
 * @heap_rate: the heap profiler's rate, 0 if it is off (it sizes the
 *	memory table).
 * @wall: wall-clock mode: the "wall sample" type is named in the stream.
 * Return: 0, or -errno.
 */
int prof_trace_open(struct prof_trace **out, const char *path,
		    uint64_t heap_rate, bool wall);

/* Write the records of @r (PROF_HDR_WORDS header words) as events. */
void prof_trace_take(struct prof_trace *t, const struct profbuf_read *r);

/*
 * prof_trace_close() - end the last generation, write everything, close
 * the file and free @t.  Return: 0, or -errno of the first write or close
 * that failed.
 */
int prof_trace_close(struct prof_trace *t, struct prof_trace_counts *c);

#endif /* PROFRING_PROF_TRACE_OUT_H */
