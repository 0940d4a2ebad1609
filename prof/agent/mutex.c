// SPDX-License-Identifier: MIT
/*
 * prof/agent/mutex.c - the lock profiler's waiting side: which contended waits
 * are recorded, the waiter's stack, the records (stream.h's
 * PROF_REC_LOCK).
 *
 * WHAT IS A WAIT
 *
 * The interposed calls (mutex_hook.c) look at a mutex's lock word, or
 * try the other locks, first; only when the lock is held by another
 * thread (a mutex, rwlock or semaphore) or the call always waits (a
 * condition variable) do they come here.  An uncontended mutex acquire
 * therefore costs the profiler a load of prof_lock_on and one of the
 * lock word (bench/mutex_cost.sh), nothing else.
 *
 * SAMPLING
 *
 * As Go's SetMutexProfileFraction (runtime/mprof.go, mutexevent): each
 * wait is recorded with probability 1 / rate, a draw of the thread's own
 * generator, independent of the wait's length; the collector multiplies
 * a recorded wait's count and delay by rate (saveBlockEventStack's
 * mutexProfile case), which makes both sums unbiased.  rate 1 records
 * every wait.  Go's block profile samples by duration instead
 * (blocksampled: probability delay / rate); here both profiles share the
 * one fraction, so that a single --mutex-rate gives both.
 *
 * The default rate (PROF_LOCK_DEFAULT_RATE, 10): a recorded wait walks
 * the waiter's stack with libunwind, the lock held (4 us on average
 * over 3,400 warm walks of prof/e2e/mutexwork; a thread's first walk,
 * milliseconds), where a contended wait already costs a futex sleep and
 * a wake-up, a few microseconds; one in ten keeps the profiler's share
 * of the contended path near a tenth of the walk, and a lock contended a
 * thousand times a second still gives 100 records a second: a profile
 * of a few seconds has its top sites within a few percent.
 *
 * THE STACK AND THE DELAY
 *
 * The delay runs from the failed try (CLOCK_MONOTONIC) until the call
 * returns: the time the program's own clock sees the thread spend in the
 * call.  The stack is walked after that, the lock held, as Go walks it
 * after its semacquire.  Walked before blocking (a few microseconds warm,
 * milliseconds for a thread's first walk), it made a recorded waiter miss
 * its turn at the lock, so that recorded waits were longer than the
 * others and the total, scaled by the rate, 20 to 90% too long at rate
 * 10 (prof/e2e/mutex_test.sh's workload, 2 busy CPUs).  Walked after, the
 * recorded wait is the one the program would have had; the walk lengthens
 * the critical section instead, for one wait in rate, which the other
 * waiters' delays show as they would any longer section.  The record is
 * written then: one profbuf_write, never waiting for room (a full ring
 * loses the record, counted lock_refused: waiting would hold the
 * program's lock).
 *
 * The delay is charged to the waiter's stack, not to the unlocker's as
 * Go's mutex profile charges it.  Doing that needs the unlock to know
 * its waiters' start times: glibc's futex word says only that there are
 * waiters (2), not since when, so it would take interposing every
 * unlock and a table from lock address to waiting times, written by the
 * waiters and read by every contended unlock; left for later.
 *
 * RE-ENTRY
 *
 * libunwind takes pthread mutexes of its own, and the program's locks may
 * be taken inside code we call: while a thread is in here (busy), its
 * lock calls go straight to libc.  Threads and sections the heap profiler
 * ignores (the profiler's own) are not recorded either.  The walk runs
 * holding the program's lock, as the heap profiler's runs under whatever
 * locks the allocating code holds; the loader lock libunwind may take
 * (dl_iterate_phdr's) is held by others only briefly and never across
 * the program's code (constructors run under dlopen's other lock), unless
 * the program takes locks in a dl_iterate_phdr callback of its own; a
 * thread inside the loader walks with frame pointers
 * (prof_hooks_in_loader()).
 *
 * SESSIONS
 *
 * As heap.c's (rec_session.h): prof_lock_begin() (its sampling draw) and
 * prof_lock_end() (the walk and the write) each raise `inflight`
 * (seq_cst) and reread prof_lock_on (seq_cst) before they read the
 * session's fields; prof_lock_stop() clears prof_lock_on and waits for
 * `inflight` to drop, so no record is written to a ring closed under it,
 * and a new session's start never writes the fields under a reader.  The
 * count is never held across the wait itself (a thread may wait for
 * ever): a wait that began in one session and ends after its stop is not
 * recorded, in a later session (`gen`) either.
 */
#include "prof/agent/mutex.h"
#include "prof/agent/heap.h"
#include "prof/agent/hooks.h"
#include "prof/agent/rec_session.h"
#include "prof/agent/ring_guard.h"
#include "prof/agent/sampler.h"
#include "prof/agent/unwind.h"

#include "ring/clock.h"

#include <errno.h>
#include <string.h>

atomic_uint prof_lock_on;

/* The thread is inside the lock profiler: its lock calls go to libc. */
static _Thread_local unsigned int busy
	__attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t rng __attribute__((tls_model("initial-exec")));

/* A wait's record is its own session's (lk.gen). */
static struct prof_rec_session lk;

/*
 * The waiter's stack above the hook's @frame into @pcs (room for
 * PROFRING_PROF_MAX_FRAMES), our own frames cut: those before the
 * program's (the hook's), and any after (our pthread_create trampoline,
 * outermost).  Return: the frames kept.
 */
static size_t take_stack(uintptr_t frame, uintptr_t *pcs)
{
	struct prof_unwind_result res = { 0 };
	struct prof_stack_bounds b;
	size_t skip = 0, n = 0;

	if (lk.libunwind && !prof_hooks_in_loader())
		prof_unwind_libunwind_from(((const uintptr_t *)frame)[1], pcs,
					   lk.max_frames, &res);
	if (!res.n) {
		prof_sampler_self(&b);
		prof_unwind_fp_caller(frame, &b, pcs, lk.max_frames, &res);
	}
	while (skip < res.n && prof_self_text_has(pcs[skip]))
		skip++;
	for (size_t i = skip; i < res.n && !prof_self_text_has(pcs[i]); i++)
		pcs[n++] = pcs[i];
	return n;
}

/* Enter the ring section; false: no session (left at once). */
static bool enter(void)
{
	return prof_rec_enter(&lk, &prof_lock_on);
}

static void leave(void)
{
	prof_rec_leave(&lk);
}

/**
 * prof_lock_begin() - a wait is about to block: sample it, and if it is
 * sampled note its start.
 * @w:		the wait, on the caller's stack; @w->t0 is 0 unless
 *		sampled (then prof_lock_end() must follow).
 *
 * errno preserved.  Never blocks, never allocates: a draw and a clock.
 */
void prof_lock_begin(struct prof_lock_wait *w)
{
	w->t0 = 0;
	if (busy || prof_heap_self.ignore || !enter())
		return;
	if (lk.rate <= 1 || !(prof_rec_random(&rng) % lk.rate)) {
		/* Relaxed: read under the in-flight count, as the fields. */
		w->gen = atomic_load_explicit(&lk.gen, memory_order_relaxed);
		w->t0 = ring_clock_mono_ns();
		if (!w->t0)
			w->t0 = 1;
	}
	leave();
}

/**
 * prof_lock_end() - the sampled wait @w ended (the lock taken, or the
 * wait given up): its delay, the waiter's stack, its record.
 * @kind:	PROF_LOCK_* (stream.h).
 * @frame:	__builtin_frame_address(0) of the hook's slow path.
 *
 * errno preserved.  Never waits for room in the ring; may allocate
 * (libunwind, ignored by the heap profiler).
 */
void prof_lock_end(struct prof_lock_wait *w, unsigned int kind, uintptr_t frame)
{
	uint64_t hdr[PROF_HDR_WORDS];
	uintptr_t p[PROF_LOCK_WORDS + PROFRING_PROF_MAX_FRAMES];
	struct prof_stack_bounds b;
	uint64_t now = ring_clock_mono_ns();
	int saved = errno;
	size_t n;

	if (!w->t0 || !enter())
		return;
	/* Relaxed: under the in-flight count; another session's: not ours. */
	if (atomic_load_explicit(&lk.gen, memory_order_relaxed) != w->gen) {
		leave();
		return;
	}
	busy++;
	prof_heap_ignore_begin();
	n = take_stack(frame, p + PROF_LOCK_WORDS);
	prof_heap_ignore_end();
	p[PROF_LOCK_KIND] = kind;
	p[PROF_LOCK_DELAY] = now > w->t0 ? now - w->t0 : 0;
	prof_rec_hdr(&lk, hdr, PROF_REC_LOCK, prof_sampler_self(&b));
	if (!prof_ring_write(lk.buf, NULL, (int64_t)ring_clock_ticks(), hdr,
			     PROF_HDR_WORDS, p, PROF_LOCK_WORDS + n))
		prof_rec_count(&lk.counters->lock_written);
	else
		prof_rec_count(&lk.counters->lock_refused);
	leave();
	busy--;
	errno = saved;
}

/**
 * prof_lock_start() - start recording contended waits into @cfg's ring.
 *
 * Not async-signal-safe.  The caller serializes start and stop.
 * Return: 0, or -EINVAL for a zero rate or a missing ring or counters.
 */
int prof_lock_start(const struct prof_lock_config *cfg)
{
	if (!cfg->rate || !cfg->buf || !cfg->counters)
		return -EINVAL;
	prof_rec_start(&lk, &prof_lock_on, cfg->buf, cfg->rate, cfg->max_frames,
		       cfg->counters, cfg->libunwind);
	return 0;
}

/**
 * prof_lock_stop() - stop recording; return once no wait is writing.
 *
 * Not async-signal-safe.  After it the ring may be closed and freed.
 */
void prof_lock_stop(void)
{
	prof_rec_stop(&lk, &prof_lock_on);
}

/**
 * prof_lock_after_fork_child() - in a fork child (one thread).
 * @keep:	the child is profiled too (its records go where its
 *		parent's went, counted in @counters); else recording stops.
 *
 * A wait the forking thread was in cannot be: fork() is not called from
 * inside a lock call.  Waits of the parent's other threads do not exist
 * in the child: their in-flight counts are dropped.
 */
void prof_lock_after_fork_child(bool keep, struct prof_counters *counters)
{
	prof_rec_after_fork_child(&lk, &prof_lock_on, keep, counters);
	rng ^= (uint64_t)lk.pid << 32;
}
