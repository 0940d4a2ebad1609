// SPDX-License-Identifier: MIT
/*
 * prof/heap.c - the heap profiler's allocation side: sampling by bytes,
 * the address table of sampled blocks, the records (stream.h).
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
 * sampled.  The fast path (prof_heap_alloc(), heap.h) is a load of
 * prof_heap_on, a subtraction and a branch; a thread's first allocation
 * in a session takes the slow path once to draw its first count.
 *
 * THE ADDRESS TABLE
 *
 * A sampled block's address goes into an open-addressing table of words
 * (never freed, so a free() racing a stop reads valid memory): 0 is an
 * empty slot, 1 a removed one (a tombstone, reused by inserts).  Insert
 * claims the first empty or removed slot on the block's probe path with a
 * CAS; remove CASes the block's address to a tombstone.  A block is
 * inserted before its allocator returns it and removed before it is freed,
 * so one address is never in the table twice, and a lookup stops at the
 * first empty slot.  Probes stop after PROBE_MAX slots: an insert that
 * finds no room marks its record PROF_ALLOC_UNTRACKED and counts it; a
 * lookup that finds nothing is an unsampled block.  No lock anywhere: a
 * free() in any thread, a signal handler included, never waits.
 *
 * realloc() gives its block back inside the allocator, and only if it
 * succeeds: the FREE cannot be written before it (a failed realloc leaves
 * the block the program's), and after it another thread may be handed
 * the same address.  So while a realloc of a sampled block runs, its slot
 * holds the address with HELD set (prof_heap_hold(), counted in `held`);
 * afterwards prof_heap_unhold() writes the FREE if the block was given
 * back, then clears the slot (a tombstone), or puts the address back if
 * it was not.  A sampled allocation that is handed a held address waits
 * for that slot to clear (the other thread is between its realloc's
 * return and its FREE: a few hundred nanoseconds) so that the FREE comes
 * first in the ring, or as long as the scheduler keeps that thread off
 * a CPU; it gives up after HOLD_WAIT_NS (a thread stopped by a debugger
 * there), and then the two records may come in either order.  A signal
 * handler that allocates on top of the holding thread does not wait for
 * it (`holding`).  A fork child clears the slots its parent's other
 * threads held (heap_fork_child()).
 * In front of the table sits a filter: a counter per hash bucket of how
 * many tracked blocks hash there, so that most frees of unsampled blocks
 * cost one load of a small array; prof_heap_maybe_tracked, a count of
 * the whole table, lets frees skip even that while nothing is tracked.
 *
 * SESSIONS
 *
 * prof_heap_on says whether a session samples.  The slow paths (a sampled
 * allocation; a free that found its block) raise `inflight` (seq_cst),
 * then re-read prof_heap_on (seq_cst) before they touch the ring; stop
 * clears prof_heap_on (seq_cst), then waits for `inflight` to drop to 0:
 * either the slow path sees the session gone, or stop sees it in flight,
 * so nothing writes a ring that was closed and freed.  Blocks sampled in
 * one session and freed in a later one are reported freed there; the
 * collector counts such frees as unknown and ignores them.
 */
#include "prof/heap.h"
#include "prof/ring_guard.h"
#include "prof/hooks.h"
#include "prof/sampler.h"
#include "prof/unwind.h"

#include "ring/clock.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define TOMBSTONE ((uintptr_t)1)
/* A slot's address with this bit set: its block is inside a realloc. */
#define HELD ((uintptr_t)2)
#define HOLD_WAIT_NS 1000000000
#define HOLD_SPINS 64
#define PROBE_MAX 64
/* Table sizes (slots): small for sparse sampling, large for every block. */
#define TABLE_BITS_SPARSE 16
#define TABLE_BITS_DENSE 22
#define DENSE_BELOW_RATE ((uint64_t)64 << 10)
#define FILTER_BITS 14

_Thread_local struct prof_heap_thread prof_heap_self
	__attribute__((tls_model("initial-exec")));
atomic_uint prof_heap_on;
atomic_ulong prof_heap_maybe_tracked;
/* The slot this thread holds (prof_heap_hold()) plus 1; 0: none. */
static _Thread_local unsigned long holding
	__attribute__((tls_model("initial-exec")));

static struct {
	/* Written by start before prof_heap_on is set; read after it. */
	struct profbuf *buf;
	uint64_t rate;
	unsigned int max_frames;
	struct prof_counters *counters;
	bool libunwind;
	pid_t pid;
	atomic_uint gen;
	atomic_uint inflight;
	atomic_ulong held; /* slots with HELD set (may be stale high) */
	/* The table: mapped at the first start, kept for good. */
	_Atomic uintptr_t *table;
	unsigned int table_bits;
	_Atomic uint32_t filter[1u << FILTER_BITS];
} heap;

static uint64_t hash_addr(uintptr_t p)
{
	return (uint64_t)(p >> 4) * UINT64_C(0x9e3779b97f4a7c15);
}

static _Atomic uint32_t *filter_of(uint64_t h)
{
	return &heap.filter[h >> (64 - FILTER_BITS)];
}

static void count(_Atomic uint64_t *c)
{
	/* Relaxed: a counter; nothing is published through it. */
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/*
 * Insert @p; false when its probe path is full, or when @p has HELD set
 * (no allocator we know hands out an address that is not a multiple of
 * 4; such a block could not be told from a held one: untracked).
 */
static bool table_insert(uintptr_t p)
{
	uint64_t h = hash_addr(p), mask = (UINT64_C(1) << heap.table_bits) - 1;
	size_t i = h >> (64 - heap.table_bits);

	if (p & HELD)
		return false;
	/* Relaxed: the filter and the count are hints (heap.h). */
	atomic_fetch_add_explicit(filter_of(h), 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&prof_heap_maybe_tracked, 1,
				  memory_order_relaxed);
	for (unsigned int n = 0; n < PROBE_MAX; n++, i = (i + 1) & mask) {
		/* Relaxed: a slot holds no data but its own value. */
		uintptr_t v = atomic_load_explicit(&heap.table[i],
						   memory_order_relaxed);

		if (v > TOMBSTONE)
			continue;
		/* Relaxed: the address is the whole message; whoever frees
		 * the block learnt it through the program's own ordering. */
		if (atomic_compare_exchange_strong_explicit(
			    &heap.table[i], &v, p, memory_order_relaxed,
			    memory_order_relaxed))
			return true;
	}
	atomic_fetch_sub_explicit(filter_of(h), 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&prof_heap_maybe_tracked, 1,
				  memory_order_relaxed);
	return false;
}

/* Remove @p; false when it was not there. */
static bool table_remove(uintptr_t p)
{
	uint64_t h = hash_addr(p), mask = (UINT64_C(1) << heap.table_bits) - 1;
	size_t i = h >> (64 - heap.table_bits);

	/* Relaxed: a hint; see heap.h. */
	if (!atomic_load_explicit(filter_of(h), memory_order_relaxed))
		return false;
	for (unsigned int n = 0; n < PROBE_MAX; n++, i = (i + 1) & mask) {
		/* Relaxed: as in table_insert(). */
		uintptr_t v = atomic_load_explicit(&heap.table[i],
						   memory_order_relaxed);

		if (!v)
			return false;
		if (v != p)
			continue;
		if (!atomic_compare_exchange_strong_explicit(
			    &heap.table[i], &v, TOMBSTONE, memory_order_relaxed,
			    memory_order_relaxed))
			return false; /* a double free racing: not ours */
		atomic_fetch_sub_explicit(filter_of(h), 1,
					  memory_order_relaxed);
		atomic_fetch_sub_explicit(&prof_heap_maybe_tracked, 1,
					  memory_order_relaxed);
		return true;
	}
	return false;
}

/* A tracked block's slot became a tombstone: count it out of the hints. */
static void untracked_hints(uintptr_t p)
{
	/* Relaxed: hints; see heap.h. */
	atomic_fetch_sub_explicit(filter_of(hash_addr(p)), 1,
				  memory_order_relaxed);
	atomic_fetch_sub_explicit(&prof_heap_maybe_tracked, 1,
				  memory_order_relaxed);
}

/* Set HELD on @p's slot; return the slot, or -1 when @p is not there. */
static long table_hold(uintptr_t p)
{
	uint64_t h = hash_addr(p), mask = (UINT64_C(1) << heap.table_bits) - 1;
	size_t i = h >> (64 - heap.table_bits);

	/* Relaxed: as in table_remove(). */
	if ((p & HELD) ||
	    !atomic_load_explicit(filter_of(h), memory_order_relaxed))
		return -1;
	for (unsigned int n = 0; n < PROBE_MAX; n++, i = (i + 1) & mask) {
		/* Relaxed: as in table_insert(). */
		uintptr_t v = atomic_load_explicit(&heap.table[i],
						   memory_order_relaxed);

		if (!v)
			return -1;
		if (v != p)
			continue;
		/*
		 * Relaxed, both: the count and the mark come before the
		 * realloc that gives the block back; the allocator's own
		 * ordering carries them to the thread it hands the address
		 * to next (wait_unheld()).
		 */
		atomic_fetch_add_explicit(&heap.held, 1, memory_order_relaxed);
		if (atomic_compare_exchange_strong_explicit(
			    &heap.table[i], &v, p | HELD, memory_order_relaxed,
			    memory_order_relaxed)) {
			holding = i + 1;
			return (long)i;
		}
		atomic_fetch_sub_explicit(&heap.held, 1, memory_order_relaxed);
		return -1;
	}
	return -1;
}

/*
 * This thread is being handed @p: if another thread's realloc gave it
 * back and holds its slot still (its FREE not written yet), wait for the
 * slot to clear, at most HOLD_WAIT_NS, so that the FREE comes first.
 */
static void wait_unheld(uintptr_t p)
{
	uint64_t h = hash_addr(p), mask = (UINT64_C(1) << heap.table_bits) - 1;
	size_t i = h >> (64 - heap.table_bits);
	struct timespec nap = { 0, 50000 };
	uint64_t deadline = 0, now;
	unsigned int n, spins = 0;

	/* Relaxed: see table_hold(). */
	if ((p & HELD) ||
	    !atomic_load_explicit(&heap.held, memory_order_relaxed))
		return;
	for (n = 0; n < PROBE_MAX; n++, i = (i + 1) & mask) {
		/* Relaxed: as in table_insert(). */
		uintptr_t v = atomic_load_explicit(&heap.table[i],
						   memory_order_relaxed);

		if (!v)
			return;
		if (v == (p | HELD))
			break;
	}
	if (n == PROBE_MAX || holding == i + 1) /* ours: a handler on top */
		return;
	/* Acquire: pairs with prof_heap_unhold()'s release: its FREE was
	 * reserved in the ring before the record we are about to write. */
	while (atomic_load_explicit(&heap.table[i], memory_order_acquire) ==
	       (p | HELD)) {
		if (spins++ < HOLD_SPINS) {
			sched_yield();
			continue;
		}
		now = ring_clock_mono_ns();
		if (!deadline)
			deadline = now + HOLD_WAIT_NS;
		else if (now > deadline)
			return;
		nanosleep(&nap, NULL);
	}
}

/* xorshift64*: the thread's own generator; never 0 once seeded. */
static uint64_t next_random(struct prof_heap_thread *t)
{
	uint64_t x = t->rng;

	if (!x)
		x = ring_clock_ticks() ^ (uint64_t)(uintptr_t)t ^
		    UINT64_C(0x2545f4914f6cdd1d);
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x ? x : 1;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/* Bytes until the next sample: exponential, mean heap.rate. */
static int64_t draw(struct prof_heap_thread *t)
{
	double u, x;

	if (heap.rate <= 1)
		return 0;
	u = (double)(next_random(t) >> 11) * 0x1p-53; /* [0, 1) */
	x = -log1p(-u) * (double)heap.rate;
	return x >= 0x1p62 ? (int64_t)1 << 62 : (int64_t)x;
}

static int put(enum prof_rec_kind kind, pid_t tid, const uintptr_t *w, size_t n)
{
	uint64_t hdr[PROF_HDR_WORDS];

	hdr[PROF_HDR_KIND_PERIODS] = prof_hdr_kind_word(kind, 1);
	hdr[PROF_HDR_TID] = (uint64_t)tid;
	hdr[PROF_HDR_PID] = (uint64_t)heap.pid;
	return prof_ring_write(heap.buf, NULL, (int64_t)ring_clock_ticks(), hdr,
			       PROF_HDR_WORDS, w, n);
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
		if (res->n)
			return;
	}
	prof_unwind_fp_caller(frame, b, pcs, heap.max_frames, res);
}

static void record_alloc(void *p, size_t size, uintptr_t frame)
{
	uintptr_t w[PROF_ALLOC_WORDS + PROFRING_PROF_MAX_FRAMES];
	struct prof_unwind_result res;
	struct prof_stack_bounds b;
	pid_t tid = prof_sampler_self(&b);
	bool tracked;

	take_stack(frame, &b, w + PROF_ALLOC_WORDS, &res);
	wait_unheld((uintptr_t)p);
	tracked = table_insert((uintptr_t)p);
	w[PROF_ALLOC_ADDR] = (uintptr_t)p;
	w[PROF_ALLOC_SIZE] = size;
	w[PROF_ALLOC_FLAGS] = tracked ? 0 : PROF_ALLOC_UNTRACKED;
	if (put(PROF_REC_ALLOC, tid, w, PROF_ALLOC_WORDS + res.n)) {
		if (tracked)
			table_remove((uintptr_t)p);
		count(&heap.counters->heap_refused);
		return;
	}
	count(&heap.counters->heap_allocs);
	if (!tracked)
		count(&heap.counters->heap_untracked);
}

/* Enter a slow path's ring section; false: no session (leave at once). */
static bool enter(void)
{
	/* seq_cst, both: the Dekker pair with prof_heap_stop() (above). */
	atomic_fetch_add_explicit(&heap.inflight, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&prof_heap_on, memory_order_seq_cst))
		return true;
	atomic_fetch_sub_explicit(&heap.inflight, 1, memory_order_release);
	return false;
}

static void leave(void)
{
	/* Release: our ring writes happen before stop's acquire load. */
	atomic_fetch_sub_explicit(&heap.inflight, 1, memory_order_release);
}

/* Write @p's PROF_REC_FREE (it was untracked), if a session runs. */
static void write_free(uintptr_t p)
{
	uintptr_t w[1] = { p };
	struct prof_stack_bounds b;

	if (!enter())
		return;
	if (put(PROF_REC_FREE, prof_sampler_self(&b), w, 1)) {
		count(&heap.counters->heap_refused);
		count(&heap.counters->heap_frees_refused);
	} else {
		count(&heap.counters->heap_frees);
	}
	leave();
}

/**
 * prof_heap_sample() - the slow path of prof_heap_alloc(): the countdown
 * ran out (or this thread has not drawn one for this session yet).
 * @p:		the block (NULL: the allocation failed; nothing recorded).
 * @size:	bytes requested.
 * @frame:	the interposed allocator's frame.
 *
 * Unwinds, tracks @p, writes PROF_REC_ALLOC.  No lock and no allocation,
 * but it waits for a realloc in another thread that has given @p back
 * and not yet written its FREE (wait_unheld()).  errno preserved.
 */
void prof_heap_sample(void *p, size_t size, uintptr_t frame)
{
	struct prof_heap_thread *t = &prof_heap_self;
	/* Relaxed: published by the seq_cst store of prof_heap_on. */
	uint32_t gen = atomic_load_explicit(&heap.gen, memory_order_relaxed);
	int saved = errno;

	if (t->ignore) {
		/* Not the program's: draw again (a memoryless count). */
		t->countdown = draw(t);
		errno = saved;
		return;
	}
	if (t->gen != gen) {
		/* The first draw of this session stands in for the old one. */
		t->gen = gen;
		t->countdown = draw(t) - (int64_t)size;
		if (t->countdown > 0)
			return;
	}
	t->countdown = draw(t);
	if (p && enter()) {
		record_alloc(p, size, frame);
		leave();
	}
	errno = saved;
}

/**
 * prof_heap_forget() - the slow path of prof_heap_free(): if @p is a
 * sampled block, untrack it and write PROF_REC_FREE.
 *
 * Lock-free; no allocation; errno preserved.
 */
void prof_heap_forget(void *p)
{
	int saved;

	if (!heap.table || !table_remove((uintptr_t)p))
		return;
	saved = errno;
	write_free((uintptr_t)p);
	errno = saved;
}

/**
 * prof_heap_hold() - the slow path of prof_heap_realloc_begin(): if @p is
 * a sampled block, mark its slot HELD (the opening comment says why).
 *
 * Lock-free; no allocation; errno preserved.
 * Return: the slot, for prof_heap_unhold(); -1 if @p is not tracked.
 */
long prof_heap_hold(void *p)
{
	return heap.table ? table_hold((uintptr_t)p) : -1;
}

/**
 * prof_heap_unhold() - realloc() returned: the held block @p in @slot
 * was given back (@released: write its FREE, then clear the slot) or is
 * still the program's (the slot holds @p again, and nothing is written).
 *
 * Lock-free; no allocation; errno preserved.
 */
void prof_heap_unhold(void *p, long slot, bool released)
{
	_Atomic uintptr_t *s = &heap.table[slot];
	int saved = errno;

	if (released) {
		write_free((uintptr_t)p);
		/* Release: pairs with wait_unheld()'s acquire. */
		atomic_store_explicit(s, TOMBSTONE, memory_order_release);
		untracked_hints((uintptr_t)p);
	} else {
		/* Relaxed: nothing was written; the block is as it was. */
		atomic_store_explicit(s, (uintptr_t)p, memory_order_relaxed);
	}
	holding = 0; /* after the slot: a handler on top must not wait */
	/* Relaxed: a hint for wait_unheld(); stale high costs a lookup. */
	atomic_fetch_sub_explicit(&heap.held, 1, memory_order_relaxed);
	errno = saved;
}

/*
 * In a fork child: the threads that held slots stayed in the parent, and
 * whether their reallocs gave the blocks back is not known; the blocks
 * are forgotten (no record), so that no allocation waits for them.
 */
static void heap_fork_child(void)
{
	size_t slots = (size_t)1 << heap.table_bits;

	/* Relaxed, all: one thread. */
	if (!atomic_load_explicit(&heap.held, memory_order_relaxed))
		return;
	for (size_t i = 0; i < slots; i++) {
		uintptr_t v = atomic_load_explicit(&heap.table[i],
						   memory_order_relaxed);

		if (v > TOMBSTONE && (v & HELD)) {
			atomic_store_explicit(&heap.table[i], TOMBSTONE,
					      memory_order_relaxed);
			untracked_hints(v & ~HELD);
		}
	}
	atomic_store_explicit(&heap.held, 0, memory_order_relaxed);
}

/**
 * prof_heap_start() - start sampling allocations into @cfg's ring.
 *
 * Not async-signal-safe.  The caller serializes start and stop.
 * Return: 0, -EINVAL for a zero rate, -ENOMEM when the table cannot be
 * mapped.
 */
int prof_heap_start(const struct prof_heap_config *cfg)
{
	if (!cfg->rate || !cfg->buf || !cfg->counters)
		return -EINVAL;
	if (!heap.table) {
		unsigned int bits = cfg->rate < DENSE_BELOW_RATE
					    ? TABLE_BITS_DENSE
					    : TABLE_BITS_SPARSE;
		void *m = mmap(
			NULL, sizeof(uintptr_t) << bits, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m == MAP_FAILED)
			return -ENOMEM;
		heap.table_bits = bits;
		heap.table = m;
		pthread_atfork(NULL, NULL, heap_fork_child);
	}
	heap.buf = cfg->buf;
	heap.rate = cfg->rate;
	heap.max_frames = cfg->max_frames;
	heap.counters = cfg->counters;
	heap.libunwind = cfg->libunwind && prof_unwind_libunwind_available();
	if (heap.libunwind)
		prof_unwind_libunwind_prepare();
	heap.pid = getpid();
	/* Relaxed: published by the seq_cst store below. */
	atomic_fetch_add_explicit(&heap.gen, 1, memory_order_relaxed);
	/* seq_cst: pairs with enter()'s load (and publishes the fields). */
	atomic_store_explicit(&prof_heap_on, 1, memory_order_seq_cst);
	return 0;
}

/**
 * prof_heap_stop() - stop sampling; return once no slow path is writing.
 *
 * Not async-signal-safe.  After it the ring may be closed and freed.
 */
void prof_heap_stop(void)
{
	struct timespec ts = { 0, 100000 };

	/* seq_cst: the other half of enter()'s pair. */
	atomic_store_explicit(&prof_heap_on, 0, memory_order_seq_cst);
	/* Acquire: pairs with leave()'s release. */
	while (atomic_load_explicit(&heap.inflight, memory_order_acquire))
		nanosleep(&ts, NULL);
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
	/* Relaxed: one thread. */
	atomic_store_explicit(&heap.inflight, 0, memory_order_relaxed);
	heap.pid = getpid();
	prof_heap_self.rng ^= (uint64_t)heap.pid << 32;
	if (keep && counters)
		heap.counters = counters;
	else
		atomic_store_explicit(&prof_heap_on, 0, memory_order_relaxed);
}
