// SPDX-License-Identifier: MIT
/*
 * heap_stress - the heap profiler's allocation side under allocation and
 * free storms, with CPU sampling into the same ring at the same time.
 *
 * Worker threads allocate (malloc, calloc, realloc of their own block)
 * and free, and trade blocks through a shared array, so that most blocks
 * are freed by another thread than the one that allocated them; each call
 * goes through prof_heap_take() / prof_heap_new() / prof_heap_owns() /
 * prof_heap_release() / prof_heap_realloc() exactly as the interposed
 * malloc family does (prof/agent/malloc_hook.c, which this program cannot use:
 * under the sanitizers they own malloc).  Meanwhile the
 * sampler's per-thread CPU timers (--hz) write samples from signal
 * handlers into the same ring, and the collector thread reads it.
 * The rate is 1 (every allocation is sampled), so the books are exact:
 *
 *  - every allocation made is an ALLOC written or refused; when none was
 *    refused, every free made is a FREE written or refused (a block
 *    whose ALLOC was refused is not tracked: its free writes nothing);
 *  - the reader read every record written: allocations read = ALLOCs
 *    written, frees matched = FREEs written, no free unknown, no address
 *    seen live twice;
 *  - with nothing refused, the heap profile's in-use objects are the
 *    blocks still held at the end, exactly;
 *  - the CPU side: signals = samples read + samples lost.
 *
 * Heap records wait for room (profbuf_write_wait()), so even when the
 * storm outruns the reader (no --pace) or the ring is 4096 words
 * (--small-ring) nothing need be refused, and the books balance with
 * allocations seen = allocations made; a record refused at the wait's
 * deadline would be counted, and the books still hold.  Summary: ops = allocations made, verified = allocation
 * records read, lost = heap records refused.
 */
#include "prof/agent/collector.h"
#include "prof/agent/heap.h"
#include "prof/common/heap_agg.h"
#include "prof/agent/sampler.h"
#include "testing/harness.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "heap_stress"
#define SLOTS 1024

static struct {
	long seconds;
	long threads;
	long hz;
	long seed;
	long pace;
	bool small_ring;
} opt = { .seconds = 5, .threads = 4, .hz = 1000, .seed = 1 };

static const struct stress_flag flags[] = {
	{ "seconds", "run time (default 5)", STRESS_INT, &opt.seconds },
	{ "threads", "allocating threads (default 4)", STRESS_INT,
	  &opt.threads },
	{ "hz", "CPU samples per CPU-second (default 1000)", STRESS_INT,
	  &opt.hz },
	{ "seed", "PRNG seed (default 1)", STRESS_INT, &opt.seed },
	{ "pace",
	  "sleep this many us every 64 operations (default 0: a "
	  "storm the reader cannot keep up with)",
	  STRESS_INT, &opt.pace },
	{ "small-ring", "a 4096-word ring: records refused, and counted",
	  STRESS_BOOL, &opt.small_ring },
	{ NULL, NULL, 0, NULL },
};

#define MAX_THREADS 64

static _Atomic(void *) slots[SLOTS];
static void *finals[MAX_THREADS]; /* each worker's last block, kept */
static atomic_bool stop;
static atomic_ullong made_allocs, made_frees, violations;

static void violation(const char *what, unsigned long long a,
		      unsigned long long b)
{
	fprintf(stderr, "%s: violation: %s (%llu vs %llu)\n", PROG, what, a, b);
	/* Relaxed: a count, read after the joins. */
	atomic_fetch_add_explicit(&violations, 1, memory_order_relaxed);
}

/*
 * The interposed allocator's shape (prof/agent/malloc_hook.c): the decision
 * first, a sampled block from the pool in a slow path of its own, and
 * every free or realloc of a pooled block to heap.c.
 */
__attribute__((noinline)) static void *my_sampled(size_t size, bool zero)
{
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
	bool untracked;
	void *p = prof_heap_new(size, 16, zero, frame, &untracked);

	if (p)
		return p;
	p = zero ? calloc(1, size) : malloc(size);
	if (untracked)
		prof_heap_untracked(p, size, frame);
	return p;
}

static void *my_malloc(size_t size)
{
	return prof_heap_take(size) ? my_sampled(size, false) : malloc(size);
}

static void *my_calloc(size_t n, size_t size)
{
	return prof_heap_take(n * size) ? my_sampled(n * size, true)
					: calloc(n, size);
}

static const struct prof_heap_next libc_next = {
	.malloc = malloc,
	.free = free,
	.realloc = realloc,
	.usable = malloc_usable_size,
};

__attribute__((noinline)) static void *my_realloc(void *old, size_t size)
{
	if (prof_heap_owns(old) || prof_heap_take(size))
		return prof_heap_realloc(old, size,
					 (uintptr_t)__builtin_frame_address(0),
					 &libc_next);
	return realloc(old, size);
}

static void my_free(void *p)
{
	if (prof_heap_owns(p))
		prof_heap_release(p);
	else
		free(p);
}

static void *worker(void *arg)
{
	long idx = (long)(uintptr_t)arg;
	uint64_t rng = (uint64_t)(opt.seed * 7919 + idx + 1);
	unsigned long long allocs = 0, frees = 0;
	void *mine = NULL;
	unsigned long ops = 0;

	/* Relaxed: a flag; the join orders the rest. */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = stress_rand(&rng);
		size_t size = 1 + (size_t)(r >> 40) % 4096;
		void *p;

		if (opt.pace && !(++ops % 64))
			stress_sleep_ns((uint64_t)opt.pace * 1000u);
		switch (r % 4) {
		case 0:
			p = my_malloc(size);
			break;
		case 1:
			p = my_calloc(1 + size % 16, 16);
			break;
		case 2: /* realloc: our block freed, a new one allocated */
			if (!mine)
				continue;
			p = my_realloc(mine, size);
			mine = NULL;
			frees++;
			break;
		default:
			if (mine) {
				my_free(mine);
				mine = NULL;
				frees++;
			}
			continue;
		}
		if (!p)
			continue;
		allocs++;
		if (mine) {
			/* acq_rel: the block's contents travel with it. */
			void *old = atomic_exchange_explicit(
				&slots[(r >> 20) % SLOTS], mine,
				memory_order_acq_rel);

			if (old) {
				my_free(old);
				frees++;
			}
		}
		mine = p;
	}
	finals[idx] = mine; /* kept live to the end: in use */
	/* Relaxed: counts, read after the joins. */
	atomic_fetch_add_explicit(&made_allocs, allocs, memory_order_relaxed);
	atomic_fetch_add_explicit(&made_frees, frees, memory_order_relaxed);
	return NULL;
}

static unsigned long long rd(_Atomic uint64_t *c)
{
	/* Relaxed: every writer is done (stop waited for them). */
	return atomic_load_explicit(c, memory_order_relaxed);
}

int main(int argc, char **argv)
{
	struct prof_counters ctr;
	struct prof_sampler_config sc;
	struct prof_heap_config hc;
	struct profring_prof_stats st;
	struct prof_heap_counts n;
	struct prof_collector *col;
	struct prof_profile p;
	struct profbuf *buf;
	unsigned long long allocs, frees, live = 0, inuse = 0;
	unsigned long long refused, allocs_refused, frees_refused;
	char fields[512];
	pthread_t *t;
	size_t words;
	int err = 0;

	stress_parse(argc, argv, PROG, flags);
	if (opt.threads < 1 || opt.threads > MAX_THREADS || opt.hz < 1)
		return stress_summary(PROG, "bad arguments", 1);
	words = opt.small_ring ? 4096 : (size_t)1 << 22;
	prof_sampler_init_process();
	buf = profbuf_new(PROF_HDR_WORDS, words, words / 4 + 1);
	col = buf ? prof_collector_start(buf, &err) : NULL;
	t = calloc((size_t)opt.threads, sizeof(*t));
	if (!col || !t) {
		fprintf(stderr, "%s: set-up failed: %s\n", PROG,
			strerror(err ? -err : errno));
		return 1;
	}
	memset(&ctr, 0, sizeof(ctr));
	hc = (struct prof_heap_config){
		.buf = buf, .rate = 1, .max_frames = 32, .counters = &ctr
	};
	sc = (struct prof_sampler_config){
		.buf = buf,
		.period_ns = 1000000000u / (uint64_t)opt.hz,
		.timer = PROFRING_PROF_TIMER_THREAD,
		.unwinder = PROFRING_PROF_UNWIND_FP,
		.max_frames = 32,
		.exclude_tid = prof_collector_tid(col),
		.counters = &ctr,
	};
	if (prof_heap_start(&hc) || prof_sampler_start(&sc)) {
		fprintf(stderr, "%s: cannot start\n", PROG);
		return 1;
	}
	for (long i = 0; i < opt.threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i))
			return 1;
	stress_sleep_ns((uint64_t)opt.seconds * 1000000000u);
	/* Relaxed: a flag; the joins order what the workers did. */
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (long i = 0; i < opt.threads; i++)
		pthread_join(t[i], NULL);
	prof_heap_stop();
	prof_sampler_stop();
	profbuf_close(buf);
	prof_collector_join(col);

	for (size_t i = 0; i < SLOTS; i++)
		/* Relaxed: the workers are joined. */
		live += atomic_load_explicit(&slots[i], memory_order_relaxed) !=
			NULL;
	for (long i = 0; i < opt.threads; i++)
		live += finals[i] != NULL;
	/* Relaxed: the workers are joined. */
	allocs = atomic_load_explicit(&made_allocs, memory_order_relaxed);
	frees = atomic_load_explicit(&made_frees, memory_order_relaxed);
	refused = rd(&ctr.heap_refused);
	frees_refused = rd(&ctr.heap_frees_refused);
	allocs_refused = refused - frees_refused;
	prof_agg_set_heap_refused(prof_collector_agg(col), refused);
	prof_agg_heap_counts(prof_collector_agg(col), &n);
	if (allocs != rd(&ctr.heap_allocs) + allocs_refused)
		violation("allocations made != ALLOCs written + refused",
			  allocs, rd(&ctr.heap_allocs) + allocs_refused);
	if (!allocs_refused && frees != rd(&ctr.heap_frees) + frees_refused)
		violation("frees made != FREEs written + refused", frees,
			  rd(&ctr.heap_frees) + frees_refused);
	if (n.allocs != rd(&ctr.heap_allocs))
		violation("allocations read != written", n.allocs,
			  rd(&ctr.heap_allocs));
	if (n.frees != rd(&ctr.heap_frees))
		violation("frees matched != written", n.frees,
			  rd(&ctr.heap_frees));
	if (!refused && (n.unknown_frees || n.replaced))
		violation("unknown or replaced blocks with nothing lost",
			  n.unknown_frees, n.replaced);
	if (rd(&ctr.heap_untracked))
		violation("address table full", rd(&ctr.heap_untracked), 0);
	if (!prof_agg_heap_profile(prof_collector_agg(col), 1, NULL, &p)) {
		for (size_t i = 0; i < p.nsamples; i++)
			inuse += p.samples[i].heap[PROF_HEAP_INUSE_OBJECTS];
		prof_agg_profile_free(&p);
	}
	if (!refused && inuse != live)
		violation("in-use objects != blocks held", inuse, live);
	memset(&st, 0, sizeof(st));
	prof_sampler_add_stats(&st, &ctr);
	prof_collector_add_stats(col, &st);
	if (st.signals != st.read + st.lost)
		violation("signals != read + lost", st.signals,
			  st.read + st.lost);
	snprintf(fields, sizeof(fields),
		 "threads=%ld hz=%ld pace=%ld small_ring=%d seconds=%ld "
		 "ops=%llu "
		 "verified=%llu lost=%llu frees=%llu live=%llu signals=%llu",
		 opt.threads, opt.hz, opt.pace, opt.small_ring, opt.seconds,
		 allocs, (unsigned long long)n.allocs, refused, frees, live,
		 (unsigned long long)st.signals);
	prof_collector_free(col);
	profbuf_free(buf);
	free(t);
	/* Relaxed: see violation(). */
	return stress_summary(
		PROG, fields,
		atomic_load_explicit(&violations, memory_order_relaxed));
}
