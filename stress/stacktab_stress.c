// SPDX-License-Identifier: MIT
/*
 * stacktab_stress.c - torture stacktab with threads and signal handlers
 * interning overlapping random stacks, resets under load and a full arena.
 *
 * A deterministic pool of distinct stacks (random depths, shared prefixes,
 * some deeper than STACKTAB_MAX_DEPTH) is interned by N threads and, with
 * --signals, by SIGPROF handlers on those threads (nested in their
 * thread's put).  Checks:
 *  - steady (no resets): every thread and handler got the same id for the
 *    same stack, distinct stacks got distinct ids, and afterwards every id
 *    maps back to its stack and a fresh single-threaded pass agrees;
 *  - --resets: the main thread resets at random intervals; every dumped
 *    generation holds only intact pool stacks, each at most once, and a
 *    generation's ids are unique;
 *  - always: a walker thread walks the table (stacktab_foreach) again and
 *    again; a walk reports only intact pool stacks, each at most once, in
 *    id order, and (without --resets) under an id stacktab_get() resolves
 *    to the same stack;
 *  - --arena small: puts that returned 0 == losses counted, exactly,
 *    everything that was interned is intact, and the arena bytes used
 *    never exceed --arena;
 *  - without --signals: puts == hits + inserts + wasted + losses, exactly.
 * Exit status 0 only if nothing was violated.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/stacktab.h>

#include "testing/harness.h"

#define PROG "stacktab_stress"
#define MAX_FRAMES (STACKTAB_MAX_DEPTH + 32)

static struct {
	long seconds, writers, seed, stacks, arena, hz;
	bool signals, resets;
} opt = {
	.seconds = 5,
	.writers = 4,
	.seed = 1,
	.stacks = 4096,
	.arena = 64 << 20,
	.hz = 10000,
};

static const struct stress_flag flags[] = {
	{ "seconds", "run time (default 5)", STRESS_INT, &opt.seconds },
	{ "writers", "threads (default 4)", STRESS_INT, &opt.writers },
	{ "seed", "PRNG seed (default 1)", STRESS_INT, &opt.seed },
	{ "stacks", "distinct stacks in the pool (default 4096)", STRESS_INT,
	  &opt.stacks },
	{ "arena", "arena bytes per generation (default 64 MiB)", STRESS_INT,
	  &opt.arena },
	{ "signals", "SIGPROF handlers intern too", STRESS_BOOL, &opt.signals },
	{ "hz", "signals per second per thread (default 10000)", STRESS_INT,
	  &opt.hz },
	{ "resets", "reset at random intervals under load", STRESS_BOOL,
	  &opt.resets },
	{ NULL, NULL, 0, NULL },
};

struct pool_stack {
	size_t n;
	uintptr_t *pcs;
};

static struct pool_stack *pool;
static struct stacktab *tab;
static atomic_bool stop;
static atomic_ulong violations;

/* Per thread (and per handler): the ids it was given, per pool stack. */
struct putter {
	_Alignas(64) uint32_t *ids;
	uint64_t rng, puts, zeros, nested;
	pthread_t th;
	struct putter *handler;
};

static _Thread_local struct putter *tls_handler;
static _Thread_local volatile sig_atomic_t tls_in_put;

static void violation(const char *what, uint64_t a, uint64_t b)
{
	if (atomic_fetch_add(&violations, 1) < 10)
		fprintf(stderr, PROG ": %s (%llu, %llu)\n", what,
			(unsigned long long)a, (unsigned long long)b);
}

static size_t effective_n(size_t n)
{
	return n < STACKTAB_MAX_DEPTH ? n : STACKTAB_MAX_DEPTH;
}

static void make_pool(void)
{
	uint64_t rng = (uint64_t)opt.seed * 7919u + 1;

	pool = calloc((size_t)opt.stacks, sizeof(*pool));
	for (long i = 0; i < opt.stacks; i++) {
		size_t n = 1 + stress_rand(&rng) % 48;

		if (i % 97 == 0)
			n = MAX_FRAMES; /* truncated */
		pool[i].n = n;
		pool[i].pcs = malloc(n * sizeof(uintptr_t));
		for (size_t k = 0; k < n; k++)
			pool[i].pcs[k] =
				0x400000 + (stress_rand(&rng) % 256) * 8;
		/* A unique frame within the first STACKTAB_MAX_DEPTH. */
		pool[i].pcs[effective_n(n) - 1] = 0x7f0000000000 + (uintptr_t)i;
	}
}

static void put_one(struct putter *p)
{
	long i = (long)(stress_rand(&p->rng) % (uint64_t)opt.stacks);
	uint32_t id = stacktab_put(tab, pool[i].pcs, pool[i].n);

	p->puts++;
	if (!id) {
		p->zeros++;
		return;
	}
	/* Ids change with the generation: only compare without resets. */
	if (!opt.resets && p->ids[i] && p->ids[i] != id)
		violation("one stack, two ids", p->ids[i], id);
	p->ids[i] = id;
}

static void on_sigprof(int sig)
{
	struct putter *h = tls_handler;
	int saved = errno;

	(void)sig;
	if (!h)
		return;
	h->nested += tls_in_put;
	put_one(h);
	errno = saved;
}

static void *putter_main(void *arg)
{
	struct putter *p = arg;
	struct stress_timer timer = { 0 };

	if (opt.signals) {
		tls_handler = p->handler;
		stress_timer_start(&timer, SIGPROF, opt.hz, false);
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		tls_in_put = 1;
		put_one(p);
		tls_in_put = 0;
	}
	stress_timer_stop(&timer);
	tls_handler = NULL;
	return NULL;
}

struct dump_state {
	uint8_t *seen;
	uint32_t last_id;
	uint64_t stacks;
};

static long find_stack(const uintptr_t *pcs, size_t n)
{
	/* The unique frame is the last one kept. */
	uintptr_t key = pcs[n - 1];
	long i = (long)(key - 0x7f0000000000);

	if (key < 0x7f0000000000 || i >= opt.stacks ||
	    effective_n(pool[i].n) != n ||
	    memcmp(pool[i].pcs, pcs, n * sizeof(*pcs)))
		return -1;
	return i;
}

/* A foreach walk: like a dump, and (without resets) ids resolve. */
static int check_walked(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct dump_state *d = arg;
	uintptr_t out[MAX_FRAMES];
	long i = n ? find_stack(pcs, n) : -1;

	if (i < 0)
		violation("walked stack is not a pool stack", id, n);
	else if (d->seen[i]++)
		violation("stack twice in one walk", id, (uint64_t)i);
	if (id <= d->last_id)
		violation("ids out of order in a walk", id, d->last_id);
	d->last_id = id;
	d->stacks++;
	if (!opt.resets && (stacktab_get(tab, id, out, MAX_FRAMES) != n ||
			    memcmp(out, pcs, n * sizeof(*pcs))))
		violation("a walked id does not resolve", id, n);
	return 0;
}

static void *walker_main(void *arg)
{
	struct dump_state d = { .seen = calloc((size_t)opt.stacks, 1) };
	uint64_t *walks = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		memset(d.seen, 0, (size_t)opt.stacks);
		d.last_id = 0;
		if (stacktab_foreach(tab, check_walked, &d))
			violation("foreach failed", 0, 0);
		(*walks)++;
	}
	free(d.seen);
	return NULL;
}

static int check_dumped(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct dump_state *d = arg;
	long i = n ? find_stack(pcs, n) : -1;

	if (i < 0)
		violation("dumped stack is not a pool stack", id, n);
	else if (d->seen[i]++)
		violation("stack twice in one generation", id, (uint64_t)i);
	if (id <= d->last_id)
		violation("ids out of order in a dump", id, d->last_id);
	d->last_id = id;
	d->stacks++;
	return 0;
}

static void reset_loop(uint64_t deadline, uint64_t *resets, uint64_t *dumped)
{
	struct dump_state d = { .seen = calloc((size_t)opt.stacks, 1) };
	uint64_t rng = (uint64_t)opt.seed;

	while (stress_now_ns() < deadline) {
		stress_sleep_ns(stress_rand(&rng) % 20000000);
		memset(d.seen, 0, (size_t)opt.stacks);
		d.last_id = 0;
		stacktab_reset(tab, check_dumped, &d);
		(*resets)++;
	}
	*dumped = d.stacks;
	free(d.seen);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* After a steady run: everyone agrees, and the table agrees with them. */
static void check_steady(struct putter *ps, long nputters)
{
	uint32_t *ref = calloc((size_t)opt.stacks, sizeof(*ref));
	uint32_t *sorted = calloc((size_t)opt.stacks, sizeof(*sorted));
	uintptr_t out[MAX_FRAMES];
	long nsorted = 0;

	for (long k = 0; k < nputters; k++)
		for (long i = 0; i < opt.stacks; i++) {
			uint32_t id = ps[k].ids[i];

			if (!id)
				continue;
			if (ref[i] && ref[i] != id)
				violation("threads disagree on an id", ref[i],
					  id);
			ref[i] = id;
		}
	for (long i = 0; i < opt.stacks; i++) {
		uint32_t id = ref[i];
		size_t n;

		if (!id)
			continue;
		sorted[nsorted++] = id;
		if (stacktab_put(tab, pool[i].pcs, pool[i].n) != id)
			violation("a fresh put disagrees", id, (uint64_t)i);
		n = stacktab_get(tab, id, out, MAX_FRAMES);
		if (n != effective_n(pool[i].n) ||
		    memcmp(out, pool[i].pcs, n * sizeof(uintptr_t)))
			violation("get returns another stack", id, n);
	}
	/* Distinct stacks, distinct ids. */
	qsort(sorted, (size_t)nsorted, sizeof(*sorted), cmp_u32);
	for (long j = 1; j < nsorted; j++)
		if (sorted[j] == sorted[j - 1])
			violation("two stacks, one id", sorted[j], 0);
	free(sorted);
	free(ref);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigprof,
				.sa_flags = SA_RESTART };
	struct stacktab_stats st;
	struct putter *ps;
	uint64_t start, resets = 0, dumped = 0, puts = 0, zeros = 0, nested = 0;
	uint64_t walks = 0;
	pthread_t walker;
	long nputters;
	char fields[512];

	stress_parse(argc, argv, PROG, flags);
	if (opt.writers < 1 || opt.stacks < 1 || opt.arena < 4096)
		return 2;
	nputters = opt.writers * 2;
	make_pool();
	tab = stacktab_new((size_t)opt.arena, (size_t)opt.stacks);
	ps = calloc((size_t)nputters, sizeof(*ps));
	if (!tab || !ps) {
		perror(PROG);
		return 2;
	}
	for (long k = 0; k < nputters; k++) {
		ps[k].ids = calloc((size_t)opt.stacks, sizeof(uint32_t));
		ps[k].rng = (uint64_t)opt.seed * 1000003u + (uint64_t)k;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);

	start = stress_now_ns();
	for (long k = 0; k < opt.writers; k++) {
		ps[k].handler = &ps[opt.writers + k];
		pthread_create(&ps[k].th, NULL, putter_main, &ps[k]);
	}
	pthread_create(&walker, NULL, walker_main, &walks);
	if (opt.resets)
		reset_loop(start + (uint64_t)opt.seconds * 1000000000u, &resets,
			   &dumped);
	else
		stress_sleep_ns((uint64_t)opt.seconds * 1000000000u);
	atomic_store(&stop, true);
	for (long k = 0; k < opt.writers; k++)
		pthread_join(ps[k].th, NULL);
	pthread_join(walker, NULL);

	stacktab_stats(tab, &st);
	if (st.bytes > (uint64_t)opt.arena)
		violation("arena bytes over the bound", st.bytes,
			  (uint64_t)opt.arena);
	for (long k = 0; k < nputters; k++) {
		puts += ps[k].puts;
		zeros += ps[k].zeros;
		nested += ps[k].nested;
	}
	if (zeros != st.losses)
		violation("puts returning 0 != losses counted", zeros,
			  st.losses);
	if (!opt.signals &&
	    puts != st.hits + st.inserts + st.wasted + st.losses)
		violation("puts != hits + inserts + wasted + losses", puts,
			  st.hits + st.inserts + st.wasted + st.losses);
	if (!opt.resets)
		check_steady(ps, nputters);

	snprintf(fields, sizeof(fields),
		 "writers=%ld signals=%d resets=%llu stacks=%ld arena=%ld "
		 "seconds=%.1f ops=%llu verified=%llu lost=%llu nested=%llu "
		 "inserts=%llu wasted=%llu walks=%llu rate=%.2fM/s",
		 opt.writers, opt.signals, (unsigned long long)resets,
		 opt.stacks, opt.arena, (double)(stress_now_ns() - start) / 1e9,
		 (unsigned long long)puts,
		 (unsigned long long)(opt.resets ? dumped : st.stacks),
		 (unsigned long long)st.losses, (unsigned long long)nested,
		 (unsigned long long)st.inserts, (unsigned long long)st.wasted,
		 (unsigned long long)walks,
		 (double)puts * 1e3 / (double)(stress_now_ns() - start));
	for (long k = 0; k < nputters; k++)
		free(ps[k].ids);
	free(ps);
	for (long i = 0; i < opt.stacks; i++)
		free(pool[i].pcs);
	free(pool);
	stacktab_free(tab);
	return stress_summary(PROG, fields, atomic_load(&violations));
}
