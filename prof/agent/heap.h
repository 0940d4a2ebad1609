/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/heap.h - the heap profiler's allocation side (heap.c): which
 * allocations are sampled, and the records they become (stream.h's
 * PROF_REC_ALLOC and PROF_REC_FREE).  The interposed malloc family
 * (malloc_hook.c) asks prof_heap_take() before each allocation and
 * prof_heap_owns() before each free; the collector (aggregate.c,
 * heap_agg.c) turns the records into a heap profile.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HEAP_H
#define PROFRING_PROF_HEAP_H

#include <profring/profbuf.h>

#include "prof/agent/heap_pool.h"
#include "prof/wire/stream.h"
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
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

/*
 * Nonzero while a session samples.  Relaxed on the fast paths: a session
 * starting or stopping is seen a little late, which only moves its edge;
 * the slow paths recheck it under the in-flight count (heap.c).
 */
extern atomic_uint prof_heap_on __attribute__((visibility("hidden")));

/**
 * prof_heap_take() - is an allocation of @size bytes to be sampled?
 * Called before the allocation; true means: call prof_heap_new().
 * The fast path of every allocation: a relaxed load of a word no one
 * writes during a session, a subtraction and a branch in the thread's own
 * memory.  Never allocates, never locks; preserves errno.
 */
static inline bool prof_heap_take(size_t size)
{
	struct prof_heap_thread *t = &prof_heap_self;

	/* Relaxed: see prof_heap_on. */
	if (!atomic_load_explicit(&prof_heap_on, memory_order_relaxed))
		return false;
	t->countdown -= (int64_t)size;
	return ring_unlikely(t->countdown <= 0);
}

/*
 * prof_heap_owns() - is @p a sampled block (from the pool)?  Give it to
 * prof_heap_release(), prof_heap_usable(), prof_heap_realloc(), never to
 * the allocator.  The fast path of every free(): bounds that never change.
 */
static inline bool prof_heap_owns(const void *p)
{
	return prof_heap_pool_owns(p);
}

void *prof_heap_new(size_t size, size_t align, bool zero, uintptr_t frame,
		    bool *untracked);
void prof_heap_untracked(void *p, size_t size, uintptr_t frame);
void prof_heap_release(void *p);
size_t prof_heap_usable(const void *p);

/*
 * struct prof_heap_next - the allocator's functions, for
 * prof_heap_realloc() (malloc_hook.c passes the next definitions; a test
 * passes libc's).  @usable may be NULL: reallocs of its blocks are then
 * never sampled.
 */
struct prof_heap_next {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*realloc)(void *, size_t);
	size_t (*usable)(void *);
};

void *prof_heap_realloc(void *old, size_t size, uintptr_t frame,
			const struct prof_heap_next *nx);

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
