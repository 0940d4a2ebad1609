/* SPDX-License-Identifier: MIT */
/*
 * prof/wire/stream.h - what the profiled process tells the collector: the
 * records it writes to the profiler's profbuf, and the per-process
 * counters it keeps.
 *
 * In-process mode (LD_PRELOAD with PROFRING_PROF, or the API) the ring and
 * the counters are the process's own; under `profring-prof record` they
 * live in memory shared with the launcher (prof/wire/shm.h), which reads them
 * whatever happens to the profiled process.
 *
 * Every record has PROF_HDR_WORDS header words:
 *   hdr[PROF_HDR_KIND_PERIODS]  kind << PROF_KIND_SHIFT | periods; a
 *		sample is kind 0 with periods >= 1, so no header is all zero
 *		(profbuf reserves that for its overflow records);
 *   hdr[PROF_HDR_TID]  the writing thread's id;
 *   hdr[PROF_HDR_PID]  the writing process's id.
 * Its payload (the profbuf "stack" words) depends on the kind:
 *   PROF_REC_SAMPLE  the PCs, leaf first (pprof/profile.h);
 *   PROF_REC_MAP     one executable mapping: start, limit, file offset,
 *		then the path as a NUL-terminated string packed into words
 *		(prof_stream_pack());
 *   PROF_REC_HELLO   a process attached: its parent's pid, a flags word
 *		(PROF_HELLO_FORKED: a fork child, whose mappings are its
 *		parent's as they were; otherwise a new image, at start or
 *		after exec, whose own PROF_REC_MAP records follow), then the
 *		executable's path packed as above.  A new image starts a new
 *		address space for that pid: samples written after the HELLO
 *		belong to it.
 *   PROF_REC_ALLOC   a sampled allocation (heap.c): its address, the size
 *		requested, a flags word (PROF_ALLOC_UNTRACKED: the address
 *		table was full, so its free will not be seen: count it as
 *		allocated, never as in use), then the PCs, return addresses
 *		only, the allocator's caller first.
 *   PROF_REC_FREE    a sampled allocation was freed: its address.  A
 *		block's FREE is written before the block goes back to the
 *		allocator, and its ALLOC before the program has the block,
 *		so the ring holds them in order even when another thread
 *		frees it or the address is handed out again.
 *   PROF_REC_WALL    a wall-clock sample (wall.c): periods = the wall
 *		ticks it stands for; payload: a state word (PROF_WALL_*),
 *		then the PCs as a sample's.
 *   PROF_REC_REPEAT  a wall-clock sample of a thread that has not run
 *		since its last one (written by wall.c's ticker, not by the
 *		thread): its tid in the header, periods = ticks; payload: the
 *		state word.  It counts again the thread's last wall stack.
 *   PROF_REC_LOCK    a sampled wait for a lock (mutex.c): a kind word
 *		(PROF_LOCK_*: mutex and rwlock waits are contention, the
 *		mutex profile; all of them make the block profile), the
 *		delay in nanoseconds, then the waiter's PCs, return
 *		addresses only, the lock call's caller first.
 * Mappings are only ever added: code unloaded by dlclose stays known, so
 * that samples taken in it before are named (a later mapping over the same
 * addresses wins for later lookups).
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_STREAM_H
#define PROFRING_PROF_STREAM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PROF_HDR_KIND_PERIODS 0
#define PROF_HDR_TID 1
#define PROF_HDR_PID 2
#define PROF_HDR_WORDS 3

#define PROF_KIND_SHIFT 56
#define PROF_PERIODS_MASK ((UINT64_C(1) << PROF_KIND_SHIFT) - 1)

enum prof_rec_kind {
	PROF_REC_SAMPLE = 0,
	PROF_REC_MAP = 1,
	PROF_REC_HELLO = 2,
	PROF_REC_ALLOC = 3,
	PROF_REC_FREE = 4,
	PROF_REC_WALL = 5,
	PROF_REC_REPEAT = 6,
	PROF_REC_LOCK = 7,
};

/* The state word of PROF_REC_WALL and PROF_REC_REPEAT. */
#define PROF_WALL_RUNNING 0u
#define PROF_WALL_SLEEPING 1u

/* PROF_REC_ALLOC's payload: address, size, flags, PCs. */
#define PROF_ALLOC_ADDR 0
#define PROF_ALLOC_SIZE 1
#define PROF_ALLOC_FLAGS 2
#define PROF_ALLOC_WORDS 3
#define PROF_ALLOC_UNTRACKED 1u

/* PROF_REC_LOCK's payload: what was waited for, the delay, PCs. */
#define PROF_LOCK_KIND 0
#define PROF_LOCK_DELAY 1
#define PROF_LOCK_WORDS 2
/* PROF_LOCK_KIND: up to PROF_LOCK_RWLOCK_WR, contention (mutex profile). */
#define PROF_LOCK_MUTEX 0u
#define PROF_LOCK_RWLOCK_RD 1u
#define PROF_LOCK_RWLOCK_WR 2u
#define PROF_LOCK_COND 3u
#define PROF_LOCK_SEM 4u
#define PROF_LOCK_KINDS 5u

/* PROF_REC_HELLO's flags word. */
#define PROF_HELLO_FORKED 1u

static inline uint64_t prof_hdr_kind_word(enum prof_rec_kind kind,
					  uint64_t periods)
{
	return (uint64_t)kind << PROF_KIND_SHIFT |
	       (periods & PROF_PERIODS_MASK);
}

static inline enum prof_rec_kind prof_hdr_kind(uint64_t word)
{
	return (enum prof_rec_kind)(word >> PROF_KIND_SHIFT);
}

/* Words needed to pack a string of @len bytes and its NUL. */
static inline size_t prof_stream_words(size_t len)
{
	return (len + 1 + 7) / 8;
}

/*
 * prof_stream_pack() - pack @s (its first @len bytes) and a NUL into
 * @out, which has room for prof_stream_words(@len) words; the tail of the
 * last word is zeroed.  Async-signal-safe.
 */
static inline void prof_stream_pack(uint64_t *out, const char *s, size_t len)
{
	size_t n = prof_stream_words(len);

	out[n - 1] = 0;
	memcpy(out, s, len);
	((char *)out)[len] = 0;
}

/*
 * prof_stream_unpack() - the string packed in @w[0..@n): NULL unless it
 * ends in a NUL within the words.  Points into @w.
 */
static inline const char *prof_stream_unpack(const uint64_t *w, size_t n)
{
	const char *s = (const char *)w;

	if (!n || !memchr(s, 0, n * 8))
		return NULL;
	return s;
}

/*
 * struct prof_counters - one process's sampling accounting, kept where the
 * collector can read it even after the process died (shared memory under
 * the launcher).  Relaxed atomic counters: nothing is published through
 * them.  A signal of ours is either written or refused.
 * @written:	samples written to the ring.
 * @refused:	samples the ring refused (overflow, or after close).
 * @truncated:	samples whose stack was cut at max_frames.
 * @unchecked:	samples taken without known stack bounds.
 * @unwind_fallback: libunwind samples taken with frame pointers instead,
 *		because a thread was inside the dynamic loader.
 * @threads:	distinct threads given a timer (or, with the process
 *		timer, seen by the sampler).
 * @taken_over:	1 once the program took our signal for itself: its own
 *		handler, or a mask or wait naming it (hooks.c; sampling
 *		stopped then).
 * @maps_lost:	mapping records the ring had no room for (agent.c): code
 *		in those mappings is shown as raw addresses.
 * @signo:	the signal the sampler uses (0 before start).
 * @heap_allocs: sampled allocations written (PROF_REC_ALLOC).
 * @heap_frees:	frees of sampled allocations written (PROF_REC_FREE).
 * @heap_refused: heap records the ring refused (counted lost there too).
 * @heap_frees_refused: of those, FREE records.
 * @heap_untracked: sampled allocations the address table had no room
 *		for (written PROF_ALLOC_UNTRACKED).
 * @lock_written: sampled lock waits written (PROF_REC_LOCK).
 * @lock_refused: sampled lock waits the ring had no room for.
 * @heap_foreign: 1 when a heap session runs but the program's malloc is
 *		not ours (another allocator comes first in the lookup
 *		order): its allocations cannot be seen.
 * @cpu_ns:	the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) over its
 *		CPU session, stored once as the session ends (stop, or
 *		the library's unloading at exit under the launcher); 0 if
 *		it never ended so (killed, _exit, exec) or samples wall
 *		time.  The profile's "[profring: unsampled CPU]" entry is
 *		this less what the samples stand for.
 */
struct prof_counters {
	_Atomic uint64_t written;
	_Atomic uint64_t refused;
	_Atomic uint64_t truncated;
	_Atomic uint64_t unchecked;
	_Atomic uint64_t unwind_fallback;
	_Atomic uint64_t threads;
	_Atomic uint64_t maps_lost;
	_Atomic uint64_t heap_allocs;
	_Atomic uint64_t heap_frees;
	_Atomic uint64_t heap_refused;
	_Atomic uint64_t heap_frees_refused;
	_Atomic uint64_t heap_untracked;
	_Atomic uint64_t cpu_ns;
	_Atomic uint64_t lock_written;
	_Atomic uint64_t lock_refused;
	_Atomic uint32_t taken_over;
	_Atomic uint32_t signo;
	_Atomic uint32_t engines; /* PROF_ENGINE_* the session armed */
	_Atomic uint32_t heap_foreign;
};

/* What drove a session's samples (struct prof_counters' engines bits). */
#define PROF_ENGINE_PERF 1u /* perf_event cpu-clock counters per thread */
#define PROF_ENGINE_TIMERS 2u /* POSIX CPU-time timers per thread */
#define PROF_ENGINE_PROCESS 4u /* the process CPU-time timer */
#define PROF_ENGINE_KERNEL 8u /* perf counters sampling the kernel too */
#define PROF_ENGINE_FDS 16u /* counters held to their descriptor share */
#define PROF_ENGINE_LOST 32u /* counters the program closed: timers after */

/*
 * prof_maps_changed() - the program's code mappings changed (dlopen or
 * dlclose returned): report them to the collector.  Defined in agent.c;
 * called by the loader hooks outside signal handlers.
 */
void prof_maps_changed(void);

#endif /* PROFRING_PROF_STREAM_H */
