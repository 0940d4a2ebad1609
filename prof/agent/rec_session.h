/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/rec_session.h - what the heap profiler (heap.c) and the lock
 * profiler (mutex.c) share: a session's fields, the in-flight count that
 * lets stop wait out the writers, the threads' generator, the records'
 * header and this library's own text.
 *
 * SESSIONS
 *
 * A profiler's `on` flag says whether a session records.  A slow path
 * (prof_rec_enter()) raises `inflight` (seq_cst), then re-reads `on`
 * (seq_cst) before it reads the session's fields or touches the ring;
 * prof_rec_stop() clears `on` (seq_cst), then waits for `inflight` to
 * drop to 0: either the slow path sees the session gone, or stop sees it
 * in flight, so nothing writes a ring that was closed and freed, and a
 * new session's start never writes the fields under a reader.  `gen`
 * counts the sessions started, so that what began in one is not
 * finished in another.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_REC_SESSION_H
#define PROFRING_PROF_REC_SESSION_H

#include <profring/profbuf.h>

#include "prof/wire/stream.h"
#include "ring/clock.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * struct prof_rec_session - one profiler's session.  The fields before
 * @gen are written by prof_rec_start() before `on` is set, and read after
 * it, under the in-flight count.
 */
struct prof_rec_session {
	struct profbuf *buf;
	uint64_t rate;
	unsigned int max_frames;
	struct prof_counters *counters;
	bool libunwind;
	pid_t pid;
	atomic_uint gen; /* sessions started: a record is its own's */
	atomic_uint inflight;
};

/*
 * Our own code's addresses (this library's executable segment), found
 * by prof_rec_start(): frames there are cut from a stack (libunwind walks
 * on past a thread's start function into our pthread_create trampoline,
 * which is not the program's).
 */
struct prof_self_text {
	uintptr_t lo, hi;
};

extern struct prof_self_text prof_self_text;

static inline bool prof_self_text_has(uintptr_t pc)
{
	return pc - prof_self_text.lo < prof_self_text.hi - prof_self_text.lo;
}

static inline void prof_rec_count(_Atomic uint64_t *c)
{
	/* Relaxed: a counter; nothing is published through it. */
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* xorshift64*: a thread's own generator at @state; never 0 once seeded. */
static inline uint64_t prof_rec_random(uint64_t *state)
{
	uint64_t x = *state;

	if (!x)
		x = ring_clock_ticks() ^ (uint64_t)(uintptr_t)state ^
		    UINT64_C(0x2545f4914f6cdd1d);
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x ? x : 1;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/* Enter @s's ring section; false: no session (left at once). */
static inline bool prof_rec_enter(struct prof_rec_session *s, atomic_uint *on)
{
	/* seq_cst, both: the Dekker pair with prof_rec_stop(). */
	atomic_fetch_add_explicit(&s->inflight, 1, memory_order_seq_cst);
	if (atomic_load_explicit(on, memory_order_seq_cst))
		return true;
	atomic_fetch_sub_explicit(&s->inflight, 1, memory_order_release);
	return false;
}

static inline void prof_rec_leave(struct prof_rec_session *s)
{
	/* Release: our ring writes happen before stop's acquire load. */
	atomic_fetch_sub_explicit(&s->inflight, 1, memory_order_release);
}

/* A record's header: one event of @kind, by thread @tid of @s's process. */
static inline void prof_rec_hdr(const struct prof_rec_session *s,
				uint64_t hdr[PROF_HDR_WORDS],
				enum prof_rec_kind kind, pid_t tid)
{
	hdr[PROF_HDR_KIND_PERIODS] = prof_hdr_kind_word(kind, 1);
	hdr[PROF_HDR_TID] = (uint64_t)tid;
	hdr[PROF_HDR_PID] = (uint64_t)s->pid;
}

void prof_rec_start(struct prof_rec_session *s, atomic_uint *on,
		    struct profbuf *buf, uint64_t rate, unsigned int max_frames,
		    struct prof_counters *counters, bool libunwind);
void prof_rec_stop(struct prof_rec_session *s, atomic_uint *on);
void prof_rec_after_fork_child(struct prof_rec_session *s, atomic_uint *on,
			       bool keep, struct prof_counters *counters);

#endif /* PROFRING_PROF_REC_SESSION_H */
