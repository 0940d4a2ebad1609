// SPDX-License-Identifier: MIT
/*
 * stacktab_test.c - unit tests for stacktab: every rule of the header, then
 * threads and SIGPROF handlers interning overlapping stacks (checked
 * against a reference), and puts racing resets.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <profring/stacktab.h>

#include "stacktab/stacktab_testing.h"
#include "testing/ktest.h"
#include "testing/harness.h"

#define POOL 512
#define MAXN 160

/* A deterministic pool of distinct stacks, some sharing prefixes. */
static uintptr_t pool[POOL][MAXN];
static size_t pool_n[POOL];

static void make_pool(void)
{
	uint64_t rng = 42;

	for (int i = 0; i < POOL; i++) {
		pool_n[i] = 1 + stress_rand(&rng) % 40;
		if (i % 7 == 0)
			pool_n[i] = 32;
		for (size_t k = 0; k < pool_n[i]; k++)
			pool[i][k] = 0x400000 + (stress_rand(&rng) % 64) * 16;
		/* Unique last frame: distinct even with shared prefixes. */
		pool[i][pool_n[i] - 1] = 0x7f0000000000 + (uintptr_t)i;
	}
}

static void same_and_distinct_ids(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 1024);
	uint32_t ids[POOL];
	struct stacktab_stats st;

	KT_REQUIRE(t);
	for (int i = 0; i < POOL; i++) {
		ids[i] = stacktab_put(t, pool[i], pool_n[i]);
		KT_CHECK(ids[i] != 0);
	}
	for (int i = 0; i < POOL; i++) {
		KT_CHECK_EQ(stacktab_put(t, pool[i], pool_n[i]), ids[i]);
		for (int j = i + 1; j < POOL; j++)
			if (ids[i] == ids[j])
				KT_CHECK(ids[i] != ids[j]);
	}
	/* A prefix is a different stack. */
	KT_CHECK(stacktab_put(t, pool[7], 31) != ids[7]);
	stacktab_stats(t, &st);
	KT_CHECK_EQ(st.stacks, POOL + 1);
	KT_CHECK_EQ(st.inserts, POOL + 1);
	KT_CHECK_EQ(st.hits, POOL);
	KT_CHECK_EQ(st.losses, 0);
	KT_CHECK(st.bytes >= POOL * 32);
	stacktab_free(t);
}

static void empty_and_bad_args(void)
{
	struct stacktab *t = stacktab_new(1 << 16, 16);
	uintptr_t pc = 1, out[4];
	struct stacktab_stats st;

	KT_REQUIRE(t);
	KT_CHECK_EQ(stacktab_put(t, &pc, 0), 0);
	KT_CHECK_EQ(stacktab_put(t, NULL, 3), 0);
	KT_CHECK_EQ(stacktab_put(NULL, &pc, 1), 0);
	KT_CHECK_EQ(stacktab_get(t, 0, out, 4), 0);
	KT_CHECK_EQ(stacktab_get(t, 12345, out, 4), 0);
	KT_CHECK_EQ(stacktab_get(t, UINT32_MAX, out, 4), 0);
	KT_CHECK_EQ(stacktab_get(NULL, 1, out, 4), 0);
	KT_CHECK_EQ(stacktab_foreach(t, NULL, NULL), -EINVAL);
	KT_CHECK_EQ(stacktab_reset(NULL, NULL, NULL), -EINVAL);
	stacktab_stats(t, &st);
	KT_CHECK_EQ(st.stacks + st.losses + st.inserts, 0);
	errno = 0;
	KT_CHECK(!stacktab_new(100, 16) && errno == EINVAL);
	KT_CHECK(!stacktab_new(1 << 16, 0) && errno == EINVAL);
	stacktab_free(t);
	stacktab_free(NULL);
}

static void get_after_put(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 1024);
	uintptr_t out[MAXN];

	KT_REQUIRE(t);
	for (int i = 0; i < POOL; i++) {
		uint32_t id = stacktab_put(t, pool[i], pool_n[i]);

		memset(out, 0, sizeof(out));
		KT_CHECK_EQ(stacktab_get(t, id, out, MAXN), pool_n[i]);
		KT_CHECK(!memcmp(out, pool[i], pool_n[i] * sizeof(uintptr_t)));
	}
	/* A short buffer gets a prefix; the length is still the full one. */
	uint32_t id = stacktab_put(t, pool[7], pool_n[7]);

	memset(out, 0, sizeof(out));
	KT_CHECK_EQ(stacktab_get(t, id, out, 3), pool_n[7]);
	KT_CHECK(!memcmp(out, pool[7], 3 * sizeof(uintptr_t)) && out[3] == 0);
	KT_CHECK_EQ(stacktab_get(t, id, NULL, 0), pool_n[7]);
	stacktab_free(t);
}

static void truncation(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 64);
	uintptr_t deep[200], other[200], out[200];
	uint32_t a, b;

	KT_REQUIRE(t);
	for (int i = 0; i < 200; i++)
		deep[i] = other[i] = 0x1000 + (uintptr_t)i;
	other[150] = 1; /* differs only past the maximum depth */
	a = stacktab_put(t, deep, 200);
	b = stacktab_put(t, other, 200);
	KT_CHECK(a != 0);
	KT_CHECK_EQ(a, b);
	KT_CHECK_EQ(stacktab_put(t, deep, STACKTAB_MAX_DEPTH), a);
	KT_CHECK(stacktab_put(t, deep, STACKTAB_MAX_DEPTH - 1) != a);
	KT_CHECK_EQ(stacktab_get(t, a, out, 200), STACKTAB_MAX_DEPTH);
	KT_CHECK(!memcmp(out, deep, STACKTAB_MAX_DEPTH * sizeof(uintptr_t)));
	stacktab_free(t);
}

static void arena_exhaustion(void)
{
	struct stacktab *t = stacktab_new(4096, 64);
	uint32_t ids[POOL];
	int zeros = 0, ok = 0;
	struct stacktab_stats st;
	uintptr_t out[MAXN];

	KT_REQUIRE(t);
	for (int i = 0; i < POOL; i++) {
		ids[i] = stacktab_put(t, pool[i], pool_n[i]);
		zeros += ids[i] == 0;
		ok += ids[i] != 0;
	}
	KT_CHECK(zeros > 0 && ok > 0);
	stacktab_stats(t, &st);
	KT_CHECK_EQ(st.losses, zeros);
	KT_CHECK_EQ(st.stacks, ok);
	KT_CHECK(st.bytes <= 4096);
	/* What fitted is intact, and found again without a loss. */
	for (int i = 0; i < POOL; i++) {
		if (!ids[i])
			continue;
		KT_CHECK_EQ(stacktab_put(t, pool[i], pool_n[i]), ids[i]);
		KT_CHECK_EQ(stacktab_get(t, ids[i], out, MAXN), pool_n[i]);
		KT_CHECK(!memcmp(out, pool[i], pool_n[i] * sizeof(uintptr_t)));
	}
	stacktab_stats(t, &st);
	KT_CHECK_EQ(st.losses, zeros);
	stacktab_free(t);
}

struct seen {
	int count[POOL + 1];
	uint32_t ids[POOL];
	uint32_t last_id;
	int bad;
	struct stacktab *t;
};

static int find_pool(const uintptr_t *pcs, size_t n)
{
	for (int i = 0; i < POOL; i++)
		if (pool_n[i] == n && !memcmp(pool[i], pcs, n * sizeof(*pcs)))
			return i;
	return -1;
}

static int note_stack(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct seen *s = arg;
	int i = find_pool(pcs, n);

	if (i < 0 || id <= s->last_id || (s->ids[i] && s->ids[i] != id)) {
		s->bad++;
		return 0;
	}
	s->last_id = id;
	s->count[i]++;
	return 0;
}

static void foreach_once_each(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 1024);
	struct seen *s = calloc(1, sizeof(*s));

	KT_REQUIRE(t && s);
	for (int i = 0; i < POOL; i++)
		s->ids[i] = stacktab_put(t, pool[i], pool_n[i]);
	for (int i = POOL - 1; i >= 0; i--)
		stacktab_put(t, pool[i], pool_n[i]);
	KT_CHECK_EQ(stacktab_foreach(t, note_stack, s), 0);
	KT_CHECK_EQ(s->bad, 0);
	for (int i = 0; i < POOL; i++)
		KT_CHECK_EQ(s->count[i], 1);
	free(s);
	stacktab_free(t);
}

static int stop_at_third(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	int *calls = arg;

	(void)id, (void)pcs, (void)n;
	return ++*calls == 3 ? 77 : 0;
}

static void reset_generations(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 1024);
	struct seen *s = calloc(1, sizeof(*s));
	struct stacktab_stats st;
	uintptr_t out[MAXN];
	int calls = 0;

	KT_REQUIRE(t && s);
	for (int round = 0; round < 5; round++) {
		memset(s, 0, sizeof(*s));
		for (int i = 0; i < POOL; i++) {
			s->ids[i] = stacktab_put(t, pool[i], pool_n[i]);
			KT_CHECK(s->ids[i] != 0);
		}
		KT_CHECK_EQ(stacktab_put(t, pool[0], pool_n[0]), 1);
		KT_CHECK_EQ(stacktab_reset(t, note_stack, s), 0);
		KT_CHECK_EQ(s->bad, 0);
		for (int i = 0; i < POOL; i++)
			KT_CHECK_EQ(s->count[i], 1);
		/* The new generation is empty; old ids are gone. */
		stacktab_stats(t, &st);
		KT_CHECK_EQ(st.stacks, 0);
		KT_CHECK(st.bytes <= 8);
		KT_CHECK_EQ(st.resets, round + 1);
		KT_CHECK_EQ(stacktab_get(t, s->ids[5], out, MAXN), 0);
	}
	/* A dump that stops early still ends the generation. */
	for (int i = 0; i < 10; i++)
		stacktab_put(t, pool[i], pool_n[i]);
	KT_CHECK_EQ(stacktab_reset(t, stop_at_third, &calls), 77);
	KT_CHECK_EQ(calls, 3);
	stacktab_stats(t, &st);
	KT_CHECK_EQ(st.stacks, 0);
	free(s);
	stacktab_free(t);
}

/*
 * A reference resolves through its own generation and the next one: a
 * record still in a ring when the table is reset finds its stack.
 */
static void refs_survive_reset(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 1024);
	uint64_t refs[POOL], ref;
	uintptr_t out[MAXN];

	KT_REQUIRE(t);
	for (int i = 0; i < POOL; i++) {
		refs[i] = stacktab_put_ref(t, pool[i], pool_n[i]);
		KT_CHECK(refs[i] != 0);
		KT_CHECK_EQ(STACKTAB_REF_GEN(refs[i]), 0);
		KT_CHECK_EQ(STACKTAB_REF_ID(refs[i]),
			    stacktab_put(t, pool[i], pool_n[i]));
	}
	KT_CHECK_EQ(stacktab_reset(t, NULL, NULL), 0);
	/* New puts in generation 1 reuse ids 1, 2, ... */
	ref = stacktab_put_ref(t, pool[7], pool_n[7]);
	KT_CHECK_EQ(STACKTAB_REF_GEN(ref), 1);
	KT_CHECK_EQ(STACKTAB_REF_ID(ref), 1);
	for (int i = 0; i < POOL; i++) {
		memset(out, 0, sizeof(out));
		KT_CHECK_EQ(stacktab_get_ref(t, refs[i], out, MAXN), pool_n[i]);
		KT_CHECK(!memcmp(out, pool[i], pool_n[i] * sizeof(*out)));
	}
	/* The bare id names the current generation's stack 1. */
	KT_CHECK_EQ(stacktab_get(t, STACKTAB_REF_ID(ref), out, MAXN),
		    pool_n[7]);
	KT_CHECK_EQ(stacktab_get_ref(t, ref, out, MAXN), pool_n[7]);
	/* A second reset: generation 0's references resolve no more. */
	KT_CHECK_EQ(stacktab_reset(t, NULL, NULL), 0);
	for (int i = 0; i < POOL; i++)
		KT_CHECK_EQ(stacktab_get_ref(t, refs[i], out, MAXN), 0);
	KT_CHECK_EQ(stacktab_get_ref(t, ref, out, MAXN), pool_n[7]);
	KT_CHECK_EQ(stacktab_reset(t, NULL, NULL), 0);
	KT_CHECK_EQ(stacktab_get_ref(t, ref, out, MAXN), 0);
	/* Not a generation the table holds: 0, never a wrong stack. */
	KT_CHECK_EQ(stacktab_get_ref(t, (uint64_t)9 << 32 | 1, out, MAXN), 0);
	KT_CHECK_EQ(stacktab_get_ref(NULL, refs[0], out, MAXN), 0);
	KT_CHECK_EQ(stacktab_put_ref(t, pool[0], 0), 0);
	stacktab_free(t);
}

struct ref_racer {
	struct stacktab *t;
	atomic_bool stop;
	atomic_ulong started, done; /* resets */
	uint64_t checked, bad;
};

/*
 * Put by reference and resolve the reference after a pause: while at most
 * one reset overlapped the two, it must resolve to its stack.
 */
static void *ref_putter_main(void *arg)
{
	struct ref_racer *r = arg;
	uintptr_t out[MAXN];
	uint64_t rng = 7;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		int i = (int)(stress_rand(&rng) % POOL);
		uint64_t done, ref;
		size_t n;

		done = atomic_load_explicit(&r->done, memory_order_acquire);
		ref = stacktab_put_ref(r->t, pool[i], pool_n[i]);
		if (!ref)
			continue;
		if (i & 1)
			sched_yield();
		n = stacktab_get_ref(r->t, ref, out, MAXN);
		/* Never a wrong stack; its own while it must resolve. */
		if (n && (n != pool_n[i] ||
			  memcmp(out, pool[i], pool_n[i] * sizeof(*out))))
			r->bad++;
		if (atomic_load_explicit(&r->started, memory_order_acquire) -
			    done >
		    1)
			continue;
		r->checked++;
		r->bad += !n;
	}
	return NULL;
}

static void refs_race_resets(void)
{
	struct ref_racer r = { .t = stacktab_new(1 << 20, 1024) };
	pthread_t th;

	KT_REQUIRE(r.t);
	KT_REQUIRE(pthread_create(&th, NULL, ref_putter_main, &r) == 0);
	for (int i = 0; i < 2000; i++) {
		atomic_fetch_add_explicit(&r.started, 1, memory_order_seq_cst);
		KT_CHECK_EQ(stacktab_reset(r.t, NULL, NULL), 0);
		atomic_fetch_add_explicit(&r.done, 1, memory_order_seq_cst);
		/* A pause: puts and gets between resets, not only during. */
		nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
	}
	atomic_store_explicit(&r.stop, 1, memory_order_relaxed);
	pthread_join(th, NULL);
	printf("  %llu references checked across 2000 resets\n",
	       (unsigned long long)r.checked);
	KT_CHECK(r.checked > 0);
	KT_CHECK_EQ(r.bad, 0);
	stacktab_free(r.t);
}

/* ---- threads and handlers ---------------------------------------------- */

struct putter {
	struct stacktab *t;
	uint64_t rng;
	uint32_t ids[POOL]; /* what this thread (or its handler) got */
	uint32_t handler_ids[POOL];
	uint64_t puts, handler_puts, zero, mismatch;
	pthread_t th;
};

static atomic_bool stop_putting;
static _Thread_local struct putter *tls_putter;
static _Thread_local volatile sig_atomic_t in_put;
static atomic_ulong nested_puts;

static void record_id(struct putter *p, uint32_t *ids, int i, uint32_t id)
{
	if (!id)
		p->zero++;
	else if (ids[i] && ids[i] != id)
		p->mismatch++;
	else
		ids[i] = id;
}

static void on_sigprof(int sig)
{
	struct putter *p = tls_putter;
	int saved = errno, i;

	(void)sig;
	if (!p)
		return;
	if (in_put)
		atomic_fetch_add_explicit(&nested_puts, 1,
					  memory_order_relaxed);
	i = (int)(stress_rand(&p->rng) % POOL);
	record_id(p, p->handler_ids, i, stacktab_put(p->t, pool[i], pool_n[i]));
	p->handler_puts++;
	errno = saved;
}

static void *putter_main(void *arg)
{
	struct putter *p = arg;
	struct stress_timer timer;

	tls_putter = p;
	stress_timer_start(&timer, SIGPROF, 5000, false);
	while (!atomic_load_explicit(&stop_putting, memory_order_relaxed)) {
		int i = (int)(stress_rand(&p->rng) % POOL);
		uint32_t id;

		in_put = 1;
		id = stacktab_put(p->t, pool[i], pool_n[i]);
		in_put = 0;
		record_id(p, p->ids, i, id);
		p->puts++;
	}
	stress_timer_stop(&timer);
	tls_putter = NULL;
	return NULL;
}

static void start_putters(struct putter *p, int n, struct stacktab *t)
{
	struct sigaction sa = { .sa_handler = on_sigprof,
				.sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	atomic_store(&stop_putting, false);
	for (int i = 0; i < n; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].t = t;
		p[i].rng = 1000 + (uint64_t)i;
		pthread_create(&p[i].th, NULL, putter_main, &p[i]);
	}
}

static void stop_putters(struct putter *p, int n)
{
	atomic_store(&stop_putting, true);
	for (int i = 0; i < n; i++)
		pthread_join(p[i].th, NULL);
	signal(SIGPROF, SIG_IGN);
}

static void concurrent_against_reference(void)
{
	enum { NT = 4 };
	struct stacktab *t = stacktab_new(1 << 20, 1024);
	struct putter *p = calloc(NT, sizeof(*p));
	uint32_t ref[POOL] = { 0 };
	uint64_t puts = 0, hputs = 0;
	uintptr_t out[MAXN];
	struct stacktab_stats st;

	KT_REQUIRE(t && p);
	start_putters(p, NT, t);
	usleep(400000);
	stop_putters(p, NT);
	/* Everybody agreed on one id per stack ... */
	for (int k = 0; k < NT; k++) {
		KT_CHECK_EQ(p[k].zero, 0);
		KT_CHECK_EQ(p[k].mismatch, 0);
		for (int i = 0; i < POOL; i++) {
			uint32_t ids[2] = { p[k].ids[i], p[k].handler_ids[i] };

			for (int j = 0; j < 2; j++) {
				if (ids[j] && ref[i])
					KT_CHECK_EQ(ids[j], ref[i]);
				if (ids[j])
					ref[i] = ids[j];
			}
		}
		puts += p[k].puts;
		hputs += p[k].handler_puts;
	}
	/* ... which is what a single-threaded pass finds now. */
	for (int i = 0; i < POOL; i++) {
		uint32_t id = stacktab_put(t, pool[i], pool_n[i]);

		if (ref[i])
			KT_CHECK_EQ(id, ref[i]);
		KT_CHECK_EQ(stacktab_get(t, id, out, MAXN), pool_n[i]);
		KT_CHECK(!memcmp(out, pool[i], pool_n[i] * sizeof(uintptr_t)));
	}
	stacktab_stats(t, &st);
	KT_CHECK_EQ(st.stacks, POOL);
	KT_CHECK_EQ(st.inserts, POOL);
	KT_CHECK_EQ(st.losses, 0);
	KT_CHECK(hputs > 0);
	printf("  %llu thread puts, %llu handler puts (%lu nested), %llu "
	       "lost races\n",
	       (unsigned long long)puts, (unsigned long long)hputs,
	       atomic_load(&nested_puts), (unsigned long long)st.wasted);
	free(p);
	stacktab_free(t);
}

struct dump_check {
	int bad;
	uint64_t stacks;
	uint8_t seen[POOL];
};

static int check_dump(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct dump_check *d = arg;
	int i = find_pool(pcs, n);

	(void)id;
	if (i < 0 || d->seen[i]++)
		d->bad++;
	d->stacks++;
	return 0;
}

/* Resets under load: every dumped generation holds intact, unique stacks. */
static void resets_under_load(void)
{
	enum { NT = 3 };
	struct stacktab *t = stacktab_new(1 << 20, 1024);
	struct putter *p = calloc(NT, sizeof(*p));
	struct dump_check d;
	uint64_t dumped = 0;
	int resets = 0, bad = 0;

	KT_REQUIRE(t && p);
	start_putters(p, NT, t);
	for (uint64_t end = stress_now_ns() + 400000000u; stress_now_ns() < end;
	     resets++) {
		memset(&d, 0, sizeof(d));
		stacktab_reset(t, check_dump, &d);
		bad += d.bad;
		dumped += d.stacks;
	}
	stop_putters(p, NT);
	KT_CHECK_EQ(bad, 0);
	for (int k = 0; k < NT; k++)
		KT_CHECK_EQ(p[k].zero, 0);
	printf("  %d resets under load, %llu stacks dumped\n", resets,
	       (unsigned long long)dumped);
	KT_CHECK(resets > 10 && dumped > 0);
	free(p);
	stacktab_free(t);
}

/* ---- foreach racing inserts of the same stacks ------------------------- */

/*
 * Each round starts from an empty generation and lets RACERS threads put
 * the same RACE_STACKS fresh stacks in the same order, so inserts race
 * inserts of the same stack.  A SIGPROF handler on each racer puts the
 * stack its thread is putting (if it interrupts that put between its
 * lookup and its bucket CAS, the handler's insert wins and the thread's
 * loses: its id is wasted), then lingers while the interrupted put stays
 * where it was.  Meanwhile the main thread walks the table again and
 * again.  A losing insert's id sits in the index for a few instructions
 * only: this catches it now and then (a PROFRING_PERTURB build widens the
 * window); the test after it catches it every time.  A walk may report
 * only stacks: each at most once per
 * walk, and each under an id that, once the puts have returned,
 * stacktab_get() resolves to the same frames.
 */
enum {
	RACERS = 3,
	RACE_STACKS = 1024,
	RACE_IDS = RACE_STACKS * (2 * RACERS + 1) + 2,
};

#define RACE_TAG ((uintptr_t)0x7f0000000000)

/* Stack @i of a round: a unique first frame, then frames from @i. */
static size_t race_stack(uint32_t i, uintptr_t *pcs)
{
	size_t n = 1 + (i * 7u) % 24;

	pcs[0] = RACE_TAG + i;
	for (size_t k = 1; k < n; k++)
		pcs[k] = 0x400000 + ((i * 31u + k * 17u) % 64) * 16;
	return n;
}

struct race {
	struct stacktab *t;
	atomic_uint round; /* bumped by the main thread to start a round */
	atomic_uint done; /* racers that finished the current round */
	atomic_bool quit;
	atomic_ulong handler_puts;
};

static struct race *race_now;
static _Thread_local volatile sig_atomic_t racing = -1; /* stack in a put */

static void on_race_signal(int sig)
{
	uintptr_t pcs[32];
	int saved = errno, i = racing;
	uint64_t until;

	(void)sig;
	if (i < 0)
		return;
	stacktab_put(race_now->t, pcs, race_stack((uint32_t)i, pcs));
	atomic_fetch_add_explicit(&race_now->handler_puts, 1,
				  memory_order_relaxed);
	/* Linger: the interrupted put stays where it is meanwhile. */
	for (until = stress_now_ns() + 50000; stress_now_ns() < until;)
		;
	errno = saved;
}

static void *racer_main(void *arg)
{
	struct race *r = arg;
	struct stress_timer timer;
	unsigned int seen = 0;
	uintptr_t pcs[32];

	stress_timer_start(&timer, SIGPROF, 2000, false);
	for (;;) {
		unsigned int round;

		/* Acquire: pairs with the release increment of round. */
		while ((round = atomic_load_explicit(
				&r->round, memory_order_acquire)) == seen) {
			if (atomic_load_explicit(&r->quit,
						 memory_order_relaxed))
				goto out;
			sched_yield();
		}
		seen = round;
		for (uint32_t i = 0; i < RACE_STACKS; i++) {
			size_t n = race_stack(i, pcs);

			racing = (sig_atomic_t)i;
			stacktab_put(r->t, pcs, n);
			racing = -1;
		}
		/* Release: our puts happen before the main thread's gets. */
		atomic_fetch_add_explicit(&r->done, 1, memory_order_release);
	}
out:
	stress_timer_stop(&timer);
	return NULL;
}

struct race_walk {
	int32_t reported[RACE_IDS]; /* id -> race stack + 1, this round */
	uint8_t in_walk[RACE_STACKS]; /* reports of each stack in a walk */
	int twice, not_a_stack, changed;
	uint64_t reports;
};

/* Which race stack @pcs is, or -1. */
static int race_find(const uintptr_t *pcs, size_t n)
{
	uintptr_t want[32];
	uint32_t i;

	if (!n || pcs[0] < RACE_TAG || pcs[0] >= RACE_TAG + RACE_STACKS)
		return -1;
	i = (uint32_t)(pcs[0] - RACE_TAG);
	if (race_stack(i, want) != n || memcmp(want, pcs, n * sizeof(*pcs)))
		return -1;
	return (int)i;
}

static int race_note(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct race_walk *w = arg;
	int i = race_find(pcs, n);

	w->reports++;
	if (i < 0 || id >= RACE_IDS) {
		w->not_a_stack++;
		return 0;
	}
	if (w->in_walk[i]++)
		w->twice++;
	if (w->reported[id] && w->reported[id] != i + 1)
		w->changed++;
	w->reported[id] = i + 1;
	return 0;
}

static void foreach_races_inserts(void)
{
	struct stacktab *t = stacktab_new(8 << 20, RACE_STACKS);
	struct race_walk *w = calloc(1, sizeof(*w));
	struct race r = { .t = t };
	struct sigaction sa = { .sa_handler = on_race_signal,
				.sa_flags = SA_RESTART };
	int unresolved = 0, walks = 0, rounds = 0, missing = 0;
	uintptr_t out[32], want[32];
	uint64_t t0;
	pthread_t th[RACERS];
	struct stacktab_stats st;

	KT_REQUIRE(t && w);
	t0 = stress_now_ns();
	race_now = &r;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	for (int k = 0; k < RACERS; k++)
		pthread_create(&th[k], NULL, racer_main, &r);
	for (uint64_t end = stress_now_ns() + 300000000u;
	     stress_now_ns() < end || rounds < 3; rounds++) {
		stacktab_reset(t, NULL, NULL);
		memset(w->reported, 0, sizeof(w->reported));
		atomic_store_explicit(&r.done, 0, memory_order_relaxed);
		/* Release: pairs with the racers' acquire load of round. */
		atomic_fetch_add_explicit(&r.round, 1, memory_order_release);
		/* Acquire: pairs with the racers' release increment. */
		while (atomic_load_explicit(&r.done, memory_order_acquire) <
		       RACERS) {
			memset(w->in_walk, 0, sizeof(w->in_walk));
			stacktab_foreach(t, race_note, w);
			walks++;
		}
		/* Every put has returned: wasted ids are final now. */
		for (uint32_t id = 1; id < RACE_IDS; id++) {
			int i = w->reported[id] - 1;
			size_t n;

			if (i < 0)
				continue;
			n = race_stack((uint32_t)i, want);
			memset(out, 0, sizeof(out));
			if (stacktab_get(t, id, out, 32) != n ||
			    memcmp(out, want, n * sizeof(*out)))
				unresolved++;
		}
		/* A walk after the puts sees every stack, once. */
		memset(w->in_walk, 0, sizeof(w->in_walk));
		stacktab_foreach(t, race_note, w);
		for (int i = 0; i < RACE_STACKS; i++)
			missing += w->in_walk[i] != 1;
	}
	atomic_store_explicit(&r.quit, true, memory_order_relaxed);
	for (int k = 0; k < RACERS; k++)
		pthread_join(th[k], NULL);
	signal(SIGPROF, SIG_IGN);
	stacktab_stats(t, &st);
	printf("  %d rounds in %llu ms, %d walks, %llu reports, %lu handler "
	       "puts, %llu lost races; %d twice, %d unresolved, %d not "
	       "stacks\n",
	       rounds, (unsigned long long)(stress_now_ns() - t0) / 1000000,
	       walks, (unsigned long long)w->reports,
	       atomic_load(&r.handler_puts), (unsigned long long)st.wasted,
	       w->twice, unresolved, w->not_a_stack);
	KT_CHECK_EQ(w->not_a_stack, 0);
	KT_CHECK_EQ(w->twice, 0);
	KT_CHECK_EQ(w->changed, 0);
	KT_CHECK_EQ(unresolved, 0);
	KT_CHECK_EQ(missing, 0);
	free(w);
	stacktab_free(t);
}

/*
 * The same race, made deterministic: a put of a new stack is single-stepped
 * (the x86 trap flag: SIGTRAP after every instruction), and in round k the
 * SIGTRAP handler, at the put's k-th instruction, puts the same stack
 * itself and has a walker thread walk the table while the interrupted put
 * waits there - for every k from the first instruction of the put to its
 * last.  Whatever instruction the put is at, a walk reports the stack at
 * most once, under an id stacktab_get() resolves once the put returns.
 */
#if defined(__x86_64__) && !TESTING_UNDER_TSAN
#include <ucontext.h>

#define X86_TRAP_FLAG 0x100

struct stepper {
	struct stacktab *t;
	uintptr_t pcs[3];
	long step, act_at; /* instructions stepped; the one to act at */
	bool acted;
	uint32_t handler_id;
	atomic_ulong walk_req, walk_done;
	atomic_bool quit;
	/* The walker's reports in the last walk it served. */
	uint32_t walk_ids[8];
	int nwalk_ids, walk_bad;
};

static struct stepper stepper;

static int step_note(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct stepper *s = arg;

	if (n != 3 || memcmp(pcs, s->pcs, sizeof(s->pcs)) || s->nwalk_ids == 8)
		s->walk_bad++;
	else
		s->walk_ids[s->nwalk_ids++] = id;
	return 0;
}

static void *step_walker(void *arg)
{
	struct stepper *s = arg;

	while (!atomic_load_explicit(&s->quit, memory_order_relaxed)) {
		/* Acquire: pairs with the handler's release of its put. */
		unsigned long req = atomic_load_explicit(&s->walk_req,
							 memory_order_acquire);

		if (req ==
		    atomic_load_explicit(&s->walk_done, memory_order_relaxed)) {
			sched_yield();
			continue;
		}
		s->nwalk_ids = 0;
		stacktab_foreach(s->t, step_note, s);
		/* Release: the reports above, to the stepped thread. */
		atomic_store_explicit(&s->walk_done, req, memory_order_release);
	}
	return NULL;
}

static void on_step(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	struct stepper *s = &stepper;
	int saved = errno;
	unsigned long want;

	(void)sig, (void)si;
	if (++s->step != s->act_at)
		return;
	uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)X86_TRAP_FLAG;
	s->handler_id = stacktab_put(s->t, s->pcs, 3);
	s->acted = true;
	/* Release: pairs with the walker's acquire load of walk_req. */
	want = atomic_fetch_add_explicit(&s->walk_req, 1,
					 memory_order_release) +
	       1;
	/* Acquire: pairs with the walker's release store of walk_done. */
	while (atomic_load_explicit(&s->walk_done, memory_order_acquire) < want)
		sched_yield();
	errno = saved;
}

/* stacktab_put() with the trap flag set: on_step() after each instruction. */
static __attribute__((noinline)) uint32_t stepped_put(struct stepper *s)
{
	uint32_t id;

	/* Below the red zone, which the compiler may use. */
	__asm__ __volatile__(
		"lea -128(%%rsp), %%rsp; pushfq; "
		"orq $0x100, (%%rsp); popfq; lea 128(%%rsp), %%rsp" ::
			: "memory", "cc");
	id = stacktab_put(s->t, s->pcs, 3);
	__asm__ __volatile__(
		"lea -128(%%rsp), %%rsp; pushfq; "
		"andq $~0x100, (%%rsp); popfq; lea 128(%%rsp), %%rsp" ::
			: "memory", "cc");
	return id;
}

static void foreach_put_interrupted_at_every_step(void)
{
	struct stepper *s = &stepper;
	struct sigaction sa = { .sa_sigaction = on_step,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	struct sigaction old;
	int twice = 0, unresolved = 0, bad = 0;
	long steps = 0, rounds = 0, short_puts = 0;
	struct stacktab_stats st;
	uintptr_t out[4];
	pthread_t walker;

	memset(s, 0, sizeof(*s));
	s->t = stacktab_new(1 << 16, 16);
	KT_REQUIRE(s->t);
	s->pcs[0] = 0x401000, s->pcs[1] = 0x402000, s->pcs[2] = 0x403000;
	/* Claim this thread's slot outside the stepped put. */
	KT_CHECK(stacktab_put(s->t, s->pcs, 1) != 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, &old);
	pthread_create(&walker, NULL, step_walker, s);
	/* Round 0 counts the put's instructions; round k acts at the k-th. */
	for (long k = 0; k == 0 || k <= steps; k++, rounds++) {
		uint32_t id;

		stacktab_reset(s->t, NULL, NULL);
		s->step = 0;
		s->act_at = k;
		s->acted = false;
		s->nwalk_ids = 0;
		id = stepped_put(s);
		if (k == 0) {
			steps = s->step;
			if (!steps)
				break;
			continue;
		}
		/*
		 * The put ended before its k-th instruction (it can vary in a
		 * PROFRING_PERTURB build): nothing to check.
		 */
		if (!s->acted) {
			short_puts++;
			continue;
		}
		/* Both puts returned one id; the loser's (if any) is wasted. */
		if (!id || s->handler_id != id)
			bad++;
		bad += s->walk_bad;
		s->walk_bad = 0;
		twice += s->nwalk_ids > 1;
		for (int j = 0; j < s->nwalk_ids; j++)
			if (stacktab_get(s->t, s->walk_ids[j], out, 4) != 3 ||
			    memcmp(out, s->pcs, sizeof(s->pcs)))
				unresolved++;
	}
	atomic_store_explicit(&s->quit, true, memory_order_relaxed);
	pthread_join(walker, NULL);
	sigaction(SIGTRAP, &old, NULL);
	if (!steps) {
		stacktab_free(s->t);
		KT_SKIP("no SIGTRAP after an instruction with the trap flag");
	}
	stacktab_stats(s->t, &st);
	printf("  %ld instructions stepped in a put, %ld rounds (%ld ended "
	       "early), %llu lost races; %d twice, %d unresolved\n",
	       steps, rounds, short_puts, (unsigned long long)st.wasted, twice,
	       unresolved);
	KT_CHECK(steps > 20);
	KT_CHECK(short_puts < rounds / 2);
	/* Some rounds interrupted the put between its lookup and its CAS. */
	KT_CHECK(st.wasted > 0);
	KT_CHECK_EQ(bad, 0);
	KT_CHECK_EQ(twice, 0);
	KT_CHECK_EQ(unresolved, 0);
	stacktab_free(s->t);
}
#else
static void foreach_put_interrupted_at_every_step(void)
{
	KT_SKIP("single-stepping needs x86-64 and no ThreadSanitizer");
}
#endif

/* ---- the arena bound ---------------------------------------------------- */

/*
 * max_bytes is a bound, exactly: 5000 bytes hold the reserved first word
 * and (5000 - 8) / 32 one-frame stacks (24 + 8 bytes each), no more,
 * however the arena is rounded to pages underneath; in every generation.
 */
static void arena_bound_exact(void)
{
	struct stacktab *t = stacktab_new(5000, 16);
	struct stacktab_stats st;
	const int fit = (5000 - 8) / 32;

	KT_REQUIRE(t);
	for (int gen = 0; gen < 3; gen++) {
		int ok = 0, lost = 0;

		for (int i = 0; i < 400; i++) {
			uintptr_t pc = 0x1000 + (uintptr_t)i * 8;

			if (stacktab_put(t, &pc, 1))
				ok++;
			else
				lost++;
		}
		stacktab_stats(t, &st);
		KT_CHECK_EQ(ok, fit);
		KT_CHECK_EQ(st.stacks, fit);
		KT_CHECK_EQ(st.bytes, 8 + 32 * fit); /* 5000: it fills up */
		KT_CHECK(st.bytes <= 5000);
		KT_CHECK_EQ(st.losses, (uint64_t)lost * (gen + 1));
		KT_CHECK_EQ(stacktab_reset(t, NULL, NULL), 0);
	}
	stacktab_free(t);
}

/* ---- memory across resets ---------------------------------------------- */

/* Resident pages of this process, or -1. */
static long rss_pages(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size, res = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res;
}

/* Put @count distinct 128-frame stacks (1048-byte nodes) tagged @tag. */
static int put_deep(struct stacktab *t, int count, uintptr_t tag)
{
	uintptr_t pcs[STACKTAB_MAX_DEPTH];
	int ok = 0;

	for (int k = 0; k < STACKTAB_MAX_DEPTH; k++)
		pcs[k] = 0x400000 + (uintptr_t)k * 8;
	for (int i = 0; i < count; i++) {
		pcs[0] = tag << 32 | (uintptr_t)i;
		ok += stacktab_put(t, pcs, STACKTAB_MAX_DEPTH) != 0;
	}
	return ok;
}

/*
 * A burst generation's memory is given back once the burst is no longer
 * among the last four generations cleared: by the fifth reset after the
 * one that ended it, and not before (see the header).
 */
static void reset_gives_back_bursts(void)
{
	enum { BURST = (48 << 20) / 1048, MIB = 1 << 20 };
	struct stacktab *t = stacktab_new(64 << 20, 1024);
	long page = sysconf(_SC_PAGESIZE), base, burst, after[7];

	KT_REQUIRE(t);
	base = rss_pages();
	if (base < 0)
		KT_SKIP("no /proc/self/statm");
	KT_CHECK_EQ(put_deep(t, BURST, 1), BURST);
	burst = rss_pages();
	/* The burst is resident: at least 40 of its 48 MiB. */
	KT_REQUIRE((burst - base) * page >= 40 * MIB);
	for (int r = 1; r <= 6; r++) {
		KT_CHECK_EQ(stacktab_reset(t, NULL, NULL), 0);
		after[r] = rss_pages();
		KT_CHECK_EQ(put_deep(t, 10, 2 + (uintptr_t)r), 10);
	}
	printf("  rss MiB: before %ld, burst %ld, after resets 1..6: %ld %ld "
	       "%ld %ld %ld %ld\n",
	       base * page / MIB, burst * page / MIB, after[1] * page / MIB,
	       after[2] * page / MIB, after[3] * page / MIB,
	       after[4] * page / MIB, after[5] * page / MIB,
	       after[6] * page / MIB);
	/*
	 * Kept while the burst is the previous generation, then one of the
	 * last four cleared ...
	 */
	for (int r = 1; r <= 5; r++)
		KT_CHECK((burst - after[r]) * page < 8 * MIB);
	/* ... and given back by the fifth reset after the one ending it. */
	KT_CHECK((burst - after[6]) * page >= 40 * MIB);
	stacktab_free(t);
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

/*
 * Steady generations (8 MiB each, both arenas warm) keep their pages: the
 * next generations fault (almost) nothing in.
 */
static void steady_generations_keep_pages(void)
{
	enum { PER_GEN = (8 << 20) / 1048 };
	struct stacktab *t = stacktab_new(16 << 20, PER_GEN);
	long faults = 0;

	KT_REQUIRE(t);
	for (int gen = 0; gen < 8; gen++) {
		long before = minor_faults();

		KT_CHECK_EQ(put_deep(t, PER_GEN, 1), PER_GEN);
		if (gen >= 2)
			faults += minor_faults() - before;
		KT_CHECK_EQ(stacktab_reset(t, NULL, NULL), 0);
	}
	printf("  %ld page faults in 6 warm generations of 8 MiB\n", faults);
	/* 6 x 2048 pages of nodes: re-faulting them would be 12288. */
	KT_CHECK(faults < 200);
	stacktab_free(t);
}

/* ---- reset from inside a walk of the same table ------------------------ */

struct reenter {
	struct stacktab *t, *other;
	int inner, other_rc, outer, calls;
	bool foreach;
	atomic_bool finished;
};

static int reset_inside(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct reenter *r = arg;

	(void)id, (void)pcs, (void)n;
	if (r->calls++)
		return 0;
	r->inner = stacktab_reset(r->t, NULL, NULL);
	/* Another table is another matter: that reset works. */
	r->other_rc = stacktab_reset(r->other, NULL, NULL);
	return 5;
}

static void *reenter_main(void *arg)
{
	struct reenter *r = arg;

	if (r->foreach)
		r->outer = stacktab_foreach(r->t, reset_inside, r);
	else
		r->outer = stacktab_reset(r->t, reset_inside, r);
	atomic_store_explicit(&r->finished, true, memory_order_release);
	return NULL;
}

/*
 * stacktab_reset() from the dump callback of a reset of the same table,
 * or from a foreach callback of it, is refused with -EDEADLK (it used to
 * wait for itself forever).  Run on a thread, so that a hang is reported
 * as a failure rather than hanging the test.
 */
static void reset_from_own_walk_refused(void)
{
	for (int mode = 0; mode < 2; mode++) {
		struct reenter *r = calloc(1, sizeof(*r));
		uintptr_t pc = 0x1234, out[1];
		pthread_t th;
		uint64_t deadline = stress_now_ns() + 3000000000u;

		KT_REQUIRE(r);
		r->t = stacktab_new(1 << 16, 16);
		r->other = stacktab_new(1 << 16, 16);
		r->foreach = mode == 1;
		KT_REQUIRE(r->t && r->other);
		KT_CHECK(stacktab_put(r->t, &pc, 1) != 0);
		KT_CHECK(stacktab_put(r->other, &pc, 1) != 0);
		pthread_create(&th, NULL, reenter_main, r);
		/* Acquire: pairs with the release store in reenter_main(). */
		while (!atomic_load_explicit(&r->finished,
					     memory_order_acquire) &&
		       stress_now_ns() < deadline)
			usleep(1000);
		if (!atomic_load_explicit(&r->finished, memory_order_acquire)) {
			/* Stuck: leak the thread and its tables. */
			KT_CHECK(!"reset from its own walk returned");
			pthread_detach(th);
			continue;
		}
		pthread_join(th, NULL);
		KT_CHECK_EQ(r->inner, -EDEADLK);
		KT_CHECK_EQ(r->outer, 5);
		KT_CHECK_EQ(r->calls, 1);
		KT_CHECK_EQ(r->other_rc, 0);
		KT_CHECK_EQ(stacktab_get(r->other, 1, out, 1), 0);
		/* The refusal changed nothing; the table resets as usual. */
		KT_CHECK_EQ(stacktab_get(r->t, 1, out, 1), mode == 1 ? 1 : 0);
		KT_CHECK_EQ(stacktab_reset(r->t, NULL, NULL), 0);
		KT_CHECK_EQ(stacktab_get(r->t, 1, out, 1), 0);
		stacktab_free(r->t);
		stacktab_free(r->other);
		free(r);
	}
}

/* ---- fork ----------------------------------------------------------- */

static struct stacktab *fork_tab;
static atomic_int fork_stop;

static void *fork_putter_main(void *arg)
{
	uintptr_t pcs[8];
	unsigned int i = 0;

	(void)arg;
	while (!atomic_load_explicit(&fork_stop, memory_order_relaxed)) {
		for (int k = 0; k < 8; k++)
			pcs[k] = 0x1000 + (i % 512) * 16 + (uintptr_t)k;
		stacktab_put(fork_tab, pcs, 1 + i++ % 8);
	}
	return NULL;
}

/* In a child: reset, then put and read back a stack of our own. */
static int reset_child(void)
{
	uintptr_t mine[3] = { 0xdead, 0xbeef, 0xf00d }, out[3];
	uint32_t id;
	int n = 0;

	if (stacktab_reset(fork_tab, stacktab_test_count, &n))
		return 2;
	id = stacktab_put(fork_tab, mine, 3);
	if (!id || stacktab_get(fork_tab, id, out, 3) != 3 ||
	    memcmp(out, mine, sizeof(mine)))
		return 3;
	return 0;
}

/*
 * A hundred forks while two threads put stacks: each child resets the
 * table (the grace period must not wait for the parent's threads, which
 * do not exist there), puts and reads back a stack of its own.  This hung
 * in 99 of 100 children.
 */
static void reset_in_fork_child(void)
{
	pthread_t th[2];
	int bad;

	fork_tab = stacktab_new(1 << 20, 1024);
	KT_REQUIRE(fork_tab);
	atomic_store_explicit(&fork_stop, 0, memory_order_relaxed);
	for (int i = 0; i < 2; i++)
		KT_REQUIRE(pthread_create(&th[i], NULL, fork_putter_main,
					  NULL) == 0);
	bad = testing_fork_children(100, reset_child);
	atomic_store_explicit(&fork_stop, 1, memory_order_relaxed);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	KT_CHECK_EQ(bad, 0);
	stacktab_free(fork_tab);
}

int main(void)
{
	make_pool();
	KT_RUN(same_and_distinct_ids);
	KT_RUN(empty_and_bad_args);
	KT_RUN(get_after_put);
	KT_RUN(truncation);
	KT_RUN(arena_exhaustion);
	KT_RUN(foreach_once_each);
	KT_RUN(reset_generations);
	KT_RUN(refs_survive_reset);
	KT_RUN(refs_race_resets);
	KT_RUN(concurrent_against_reference);
	KT_RUN(resets_under_load);
	KT_RUN(foreach_races_inserts);
	KT_RUN(foreach_put_interrupted_at_every_step);
	KT_RUN(arena_bound_exact);
	KT_RUN(reset_gives_back_bursts);
	KT_RUN(steady_generations_keep_pages);
	KT_RUN(reset_from_own_walk_refused);
	KT_RUN(reset_in_fork_child);
	return ktest_exit();
}
