/* SPDX-License-Identifier: MIT */
/*
 * prof/heap.h - the heap profiler's allocation side (heap.c): which
 * allocations are sampled, and the records they become (stream.h's
 * PROF_REC_ALLOC and PROF_REC_FREE).  The interposed malloc family
 * (malloc_hook.c) calls prof_heap_alloc() and prof_heap_free(); the
 * collector (aggregate.c, heap_agg.c) turns the records into a heap
 * profile.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HEAP_H
#define PROFRING_PROF_HEAP_H

#include <profring/profbuf.h>

#include "prof/stream.h"
#include "ring/compiler.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * struct prof_heap_config - one heap-profiling session.
 * @buf:	the ring the records go to.
 * @rate:	mean bytes between samples; 1 samples every allocation.
 * @max_frames:	frames per sampled stack.
 * @counters:	where the allocation side counts (never NULL).
 * @libunwind:	walk sampled stacks with libunwind (through code built
 *		without frame pointers: libstdc++'s operator new, python)
 *		rather than frame pointers; frame pointers all the same while
 *		the thread is inside the dynamic loader.
 */
struct prof_heap_config {
	struct profbuf *buf;
	uint64_t rate;
	unsigned int max_frames;
	struct prof_counters *counters;
	bool libunwind;
};

/*
 * struct prof_heap_thread - a thread's sampling state, initial-exec TLS.
 * @countdown:	bytes left until the next sample; the fast path subtracts
 *		each allocation's size and takes the slow path at or below 0.
 * @rng:	the thread's random state for the exponential draws.
 * @gen:	the session @countdown was drawn for (0: none yet).
 * @ignore:	nonzero: the thread's allocations are the profiler's own
 *		(its collector thread, or code between
 *		prof_heap_ignore_begin() and prof_heap_ignore_end()).
 */
struct prof_heap_thread {
	int64_t countdown;
	uint64_t rng;
	uint32_t gen;
	uint32_t ignore;
};

extern _Thread_local struct prof_heap_thread prof_heap_self
	__attribute__((tls_model("initial-exec")));

/*
 * Nonzero while a session samples.  Relaxed on the fast paths: a session
 * starting or stopping is seen a little late, which only moves its edge;
 * the slow paths recheck it under the in-flight count (heap.c).
 */
extern atomic_uint prof_heap_on;
/* Live entries of the address table (may be stale high): 0 skips lookups. */
extern atomic_ulong prof_heap_maybe_tracked;

void prof_heap_sample(void *p, size_t size, uintptr_t frame);
void prof_heap_forget(void *p);
long prof_heap_hold(void *p);
void prof_heap_unhold(void *p, long slot, bool released);

/**
 * prof_heap_alloc() - account one allocation of @size bytes at @p.
 * @frame:	__builtin_frame_address(0) of the interposed allocator, whose
 *		callers make the stack.
 *
 * The fast path of an unsampled allocation: a load, a subtraction and a
 * branch.  Never allocates, never locks; preserves errno.
 */
static inline void prof_heap_alloc(void *p, size_t size, uintptr_t frame)
{
	struct prof_heap_thread *t = &prof_heap_self;

	/* Relaxed: see prof_heap_on. */
	if (!atomic_load_explicit(&prof_heap_on, memory_order_relaxed))
		return;
	t->countdown -= (int64_t)size;
	if (ring_unlikely(t->countdown <= 0))
		prof_heap_sample(p, size, frame);
}

/**
 * prof_heap_free() - @p is about to go back to the allocator.
 *
 * Call before the block is freed (stream.h says why).  One relaxed load
 * while nothing is tracked; else one probe of a filter, and of the table
 * when the filter says maybe.  Lock-free; preserves errno.
 */
static inline void prof_heap_free(void *p)
{
	/* Relaxed: a stale nonzero only costs a lookup; an allocation
	 * tracked by another thread reached this one through the
	 * program's own synchronisation, which orders the count too. */
	if (p && atomic_load_explicit(&prof_heap_maybe_tracked,
				      memory_order_relaxed))
		prof_heap_forget(p);
}

/**
 * prof_heap_realloc_begin() - @p is about to be handed to realloc(),
 * which gives it back only if it succeeds: a sampled block is held
 * (heap.c), not yet freed.  Costs what prof_heap_free() costs.
 *
 * Return: what to give prof_heap_realloc_end().
 */
static inline long prof_heap_realloc_begin(void *p)
{
	/* Relaxed: as in prof_heap_free(). */
	if (p && atomic_load_explicit(&prof_heap_maybe_tracked,
				      memory_order_relaxed))
		return prof_heap_hold(p);
	return -1;
}

/**
 * prof_heap_realloc_end() - realloc() returned; @released: it gave @p
 * back (it succeeded, or freed @p for a size of 0).  Call before the new
 * block is accounted with prof_heap_alloc().
 */
static inline void prof_heap_realloc_end(void *p, long slot, bool released)
{
	if (slot >= 0)
		prof_heap_unhold(p, slot, released);
}

/*
 * prof_heap_ignore_begin(), prof_heap_ignore_end() - around the
 * profiler's own allocations in the program's threads (they nest): they
 * are not the program's.  Async-signal-safe.
 */
static inline void prof_heap_ignore_begin(void)
{
	prof_heap_self.ignore++;
}

static inline void prof_heap_ignore_end(void)
{
	prof_heap_self.ignore--;
}

/*
 * Defined by malloc_hook.c, which is not built everywhere (the sanitizer
 * builds, the unit tests): weak, NULL there.
 */
const char *prof_malloc_foreign(void)
	__attribute__((weak, visibility("hidden")));

int prof_heap_start(const struct prof_heap_config *cfg);
void prof_heap_stop(void);
void prof_heap_ignore_thread(void);
void prof_heap_after_fork_child(bool keep, struct prof_counters *counters);

#endif /* PROFRING_PROF_HEAP_H */
