// SPDX-License-Identifier: MIT
/*
 * prof/agent/heap.c - the heap profiler's allocation side: sampling by bytes,
 * sampled blocks in a pool of their own, the records (stream.h).
 *
 * SAMPLING
 *
 * As Go's runtime, tcmalloc and jemalloc do: each thread counts down the
 * bytes it allocates from an exponential draw of mean `rate`; the
 * allocation that takes the count to zero or below is sampled and a new
 * count drawn.  Every byte is then equally likely to be the one that
 * triggers, so an allocation of s bytes is sampled with probability
 * 1 - exp(-s / rate), which is what the collector divides by (Go's
 * scaleHeapSample, heap_agg.c).  rate 1 draws 0: every allocation is
 * sampled.  The decision comes before the allocation (prof_heap_take(),
 * heap.h: a load of prof_heap_on, a subtraction and a branch, all in the
 * thread's own memory); a thread's first allocation in a session takes
 * the slow path once to draw its first count.
 *
 * SAMPLED BLOCKS
 *
 * A sampled block comes from the pool (heap_pool.c), not the allocator,
 * and free() recognizes it by its address alone (prof_heap_owns(): the
 * pool's bounds never change).  So nothing on the unsampled paths reads
 * memory another thread writes, and there is no table of sampled blocks
 * to keep.  The ALLOC record is written when the block is taken from the
 * pool, the FREE record before it goes back: a later ALLOC of the same
 * address, in any thread, comes after it in the ring, since the pool's
 * free list hands the slot over with release and acquire.  realloc() of
 * a pooled block is a new block, a copy and a release, in that order: a
 * realloc that fails leaves the block, and the profile, as they were.  A
 * sampled allocation the pool cannot take (larger than 2 GiB, or no
 * memory) comes from the allocator, is recorded PROF_ALLOC_UNTRACKED and
 * counted: its free cannot be recognized.
 *
 * RECORDS WAIT FOR ROOM
 *
 * Allocating threads may block, so heap records are written with
 * profbuf_write_wait(): a full ring makes them wait for the reader (at
 * most HEAP_WAIT_NS) rather than lose an ALLOC (memory hidden) or a FREE
 * (a leak invented).  The CPU sampler's records, written from signal
 * handlers, never wait, and a waiting heap record holds nothing they
 * need.  A record still refused at the deadline is counted
 * (heap_refused), and the launcher says so on stderr.
 *
 * SESSIONS
 *
 * prof_heap_on says whether a session samples (rec_session.h's pairing,
 * which the lock profiler shares).  The slow paths (a sampled
 * allocation; a free of a pooled block) raise `inflight` (seq_cst), then
 * re-read prof_heap_on (seq_cst) before they touch the ring; stop clears
 * prof_heap_on (seq_cst), then waits for `inflight` to drop to 0: either
 * the slow path sees the session gone, or stop sees it in flight, so
 * nothing writes a ring that was closed and freed.  Blocks sampled in one
 * session and freed in a later one are reported freed there; the
 * collector counts such frees as unknown and ignores them.  Pooled blocks
 * outlive sessions: the pool is never unmapped.
 */
#include "prof/agent/heap.h"
#include "prof/agent/heap_pool.h"
#include "prof/agent/ring_guard.h"
#include "prof/agent/hooks.h"
#include "prof/agent/rec_session.h"
#include "prof/agent/sampler.h"
#include "prof/agent/unwind.h"

#include "ring/clock.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* How long a heap record waits for room in the ring. */
#define HEAP_WAIT_NS 1000000000u

_Thread_local struct prof_heap_thread prof_heap_self
	__attribute__((tls_model("initial-exec")));
atomic_uint prof_heap_on;

static struct prof_rec_session heap;

/* Bytes until the next sample: exponential, mean heap.rate. */
static int64_t draw(struct prof_heap_thread *t)
{
	double u, x;

	if (heap.rate <= 1)
		return 0;
	u = (double)(prof_rec_random(&t->rng) >> 11) * 0x1p-53; /* [0, 1) */
	x = -log1p(-u) * (double)heap.rate;
	return x >= 0x1p62 ? (int64_t)1 << 62 : (int64_t)x;
}

static int put(enum prof_rec_kind kind, pid_t tid, const uintptr_t *w, size_t n)
{
	uint64_t hdr[PROF_HDR_WORDS];

	prof_rec_hdr(&heap, hdr, kind, tid);
	return prof_ring_write_wait(heap.buf, NULL, (int64_t)ring_clock_ticks(),
				    hdr, PROF_HDR_WORDS, w, n, HEAP_WAIT_NS);
}

/*
 * The stack above the allocator's @frame: libunwind's walk (from the
 * allocator's return address, read from its frame record; what libunwind
 * allocates is ignored), or the frame-pointer chain.
 */
static void take_stack(uintptr_t frame, const struct prof_stack_bounds *b,
		       uintptr_t *pcs, struct prof_unwind_result *res)
{
	if (heap.libunwind && !prof_hooks_in_loader()) {
		prof_heap_ignore_begin();
		prof_unwind_libunwind_from(((const uintptr_t *)frame)[1], pcs,
					   heap.max_frames, res);
		prof_heap_ignore_end();
		/* Ours can only be outermost: cut the walk there. */
		for (size_t i = 0; i < res->n; i++)
			if (prof_self_text_has(pcs[i])) {
				res->n = i;
				break;
			}
		if (res->n)
			return;
	}
	prof_unwind_fp_caller(frame, b, pcs, heap.max_frames, res);
}

/* Write @p's ALLOC; false (counted) when the ring refused it. */
static bool record_alloc(void *p, size_t size, uintptr_t frame, bool tracked)
{
	uintptr_t w[PROF_ALLOC_WORDS + PROFRING_PROF_MAX_FRAMES];
	struct prof_unwind_result res;
	struct prof_stack_bounds b;
	pid_t tid = prof_sampler_self(&b);

	take_stack(frame, &b, w + PROF_ALLOC_WORDS, &res);
	w[PROF_ALLOC_ADDR] = (uintptr_t)p;
	w[PROF_ALLOC_SIZE] = size;
	w[PROF_ALLOC_FLAGS] = tracked ? 0 : PROF_ALLOC_UNTRACKED;
	if (put(PROF_REC_ALLOC, tid, w, PROF_ALLOC_WORDS + res.n)) {
		prof_rec_count(&heap.counters->heap_refused);
		return false;
	}
	prof_rec_count(&heap.counters->heap_allocs);
	if (!tracked)
		prof_rec_count(&heap.counters->heap_untracked);
	return true;
}

/* Enter a slow path's ring section; false: no session (leave at once). */
static bool enter(void)
{
	return prof_rec_enter(&heap, &prof_heap_on);
}

static void leave(void)
{
	prof_rec_leave(&heap);
}

/* Write @p's PROF_REC_FREE (it was untracked), if a session runs. */
static void write_free(uintptr_t p)
{
	uintptr_t w[1] = { p };
	struct prof_stack_bounds b;

	if (!enter())
		return;
	if (put(PROF_REC_FREE, prof_sampler_self(&b), w, 1)) {
		prof_rec_count(&heap.counters->heap_refused);
		prof_rec_count(&heap.counters->heap_frees_refused);
	} else {
		prof_rec_count(&heap.counters->heap_frees);
	}
	leave();
}

/*
 * resample() - the countdown ran out: draw the next one, and say whether
 * this allocation of @size is sampled (not the profiler's own, and not a
 * thread's first allocation of a session, whose draw stands in for the
 * old session's count).
 */
static bool resample(size_t size)
{
	struct prof_heap_thread *t = &prof_heap_self;
	/* Relaxed: published by the seq_cst store of prof_heap_on. */
	uint32_t gen = atomic_load_explicit(&heap.gen, memory_order_relaxed);

	if (t->ignore) {
		/* Not the program's: draw again (a memoryless count). */
		t->countdown = draw(t);
		return false;
	}
	if (t->gen != gen) {
		t->gen = gen;
		t->countdown = draw(t) - (int64_t)size;
		if (t->countdown > 0)
			return false;
	}
	t->countdown = draw(t);
	return true;
}

/**
 * prof_heap_new() - the slow path of prof_heap_take(): the countdown ran
 * out for an allocation of @size bytes aligned to @align (a power of two).
 * @zero:	the block must be zeroed (calloc).
 * @frame:	the frame of the interposed allocator's slow path, whose
 *		callers make the stack.
 * @untracked:	set when the allocation is sampled but the pool could not
 *		take it: allocate from the allocator, then call
 *		prof_heap_untracked().
 *
 * No lock; the record may wait for room in the ring (HEAP_WAIT_NS).
 * errno preserved.
 * Return: the sampled block, from the pool and recorded; NULL when the
 * allocation is not sampled after all (or its record was refused, at the
 * ring's deadline: counted), or the pool refused it.
 */
void *prof_heap_new(size_t size, size_t align, bool zero, uintptr_t frame,
		    bool *untracked)
{
	int saved = errno;
	void *p = NULL;

	*untracked = false;
	if (!resample(size))
		goto out;
	if (!enter())
		goto out;
	p = prof_heap_pool_alloc(size ? size : 1, align);
	if (!p) {
		*untracked = true;
	} else if (!record_alloc(p, size, frame, true)) {
		/* Refused (counted): an unsampled block, whose free is silent. */
		prof_heap_pool_free(p);
		p = NULL;
	} else if (zero) {
		memset(p, 0, size);
	}
	leave();
out:
	errno = saved;
	return p;
}

/**
 * prof_heap_untracked() - a sampled allocation the pool refused came from
 * the allocator at @p (NULL: it failed; nothing recorded).
 */
void prof_heap_untracked(void *p, size_t size, uintptr_t frame)
{
	int saved = errno;

	if (p && enter()) {
		record_alloc(p, size, frame, false);
		leave();
	}
	errno = saved;
}

/**
 * prof_heap_release() - free a pooled block (prof_heap_owns()): its FREE
 * record first, if a session runs, then the slot back to the pool.
 * No lock; the record may wait for room.  errno preserved.
 */
void prof_heap_release(void *p)
{
	int saved = errno;

	write_free((uintptr_t)p);
	prof_heap_pool_free(p);
	errno = saved;
}

/* prof_heap_usable() - the bytes a pooled block may use. */
size_t prof_heap_usable(const void *p)
{
	return prof_heap_pool_usable(p);
}

/**
 * prof_heap_realloc() - realloc() of a pooled block, or of any block
 * whose new size's countdown ran out (prof_heap_take()).
 * @nx:	the allocator's functions.
 *
 * A pooled block is never given to the allocator: its contents move to a
 * new block (sampled or not), and it is released only once that exists,
 * so a failed realloc leaves it, and the profile, unchanged.  A size of 0
 * frees it and returns NULL, as glibc does.
 */
void *prof_heap_realloc(void *old, size_t size, uintptr_t frame,
			const struct prof_heap_next *nx)
{
	bool pooled = old && prof_heap_owns(old), untracked = false;
	size_t have;
	void *p;

	if (!pooled) {
		/* A size of 0 frees (glibc): nothing to sample. */
		if (!size || (old && !nx->usable))
			return nx->realloc(old, size);
		p = prof_heap_new(size, 16, false, frame, &untracked);
		if (!p) {
			p = nx->realloc(old, size);
			if (untracked)
				prof_heap_untracked(p, size, frame);
			return p;
		}
		if (old) {
			have = nx->usable(old);
			memcpy(p, old, have < size ? have : size);
			nx->free(old);
		}
		return p;
	}
	if (!size) {
		prof_heap_release(old);
		return NULL;
	}
	p = prof_heap_take(size)
		    ? prof_heap_new(size, 16, false, frame, &untracked)
		    : NULL;
	if (!p) {
		p = nx->malloc(size);
		if (untracked)
			prof_heap_untracked(p, size, frame);
		if (!p)
			return NULL;
	}
	have = prof_heap_usable(old);
	memcpy(p, old, have < size ? have : size);
	prof_heap_release(old);
	return p;
}

/**
 * prof_heap_start() - start sampling allocations into @cfg's ring.
 *
 * Not async-signal-safe.  The caller serializes start and stop.
 * Return: 0, -EINVAL for a zero rate, -ENOMEM when the pool's address
 * space cannot be reserved.
 */
int prof_heap_start(const struct prof_heap_config *cfg)
{
	if (!cfg->rate || !cfg->buf || !cfg->counters)
		return -EINVAL;
	if (prof_heap_pool_init())
		return -ENOMEM;
	prof_rec_start(&heap, &prof_heap_on, cfg->buf, cfg->rate,
		       cfg->max_frames, cfg->counters, cfg->libunwind);
	return 0;
}

/**
 * prof_heap_stop() - stop sampling; return once no slow path is writing.
 *
 * Not async-signal-safe.  After it the ring may be closed and freed.
 */
void prof_heap_stop(void)
{
	prof_rec_stop(&heap, &prof_heap_on);
}

/**
 * prof_heap_ignore_thread() - the calling thread is the profiler's own:
 * its allocations are never sampled.
 */
void prof_heap_ignore_thread(void)
{
	prof_heap_ignore_begin();
}

/**
 * prof_heap_after_fork_child() - in a fork child (one thread).
 * @keep:	the child is profiled too (its records go where its
 *		parent's went, counted in @counters); else sampling stops.
 */
void prof_heap_after_fork_child(bool keep, struct prof_counters *counters)
{
	prof_rec_after_fork_child(&heap, &prof_heap_on, keep, counters);
	prof_heap_self.rng ^= (uint64_t)heap.pid << 32;
}
