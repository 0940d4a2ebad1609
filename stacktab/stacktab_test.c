// SPDX-License-Identifier: MIT
/*
 * stacktab_test.c - unit tests for stacktab: every rule of the header, then
 * threads and SIGPROF handlers interning overlapping stacks (checked
 * against a reference), and puts racing resets.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <profring/stacktab.h>

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
	KT_RUN(concurrent_against_reference);
	KT_RUN(resets_under_load);
	return ktest_exit();
}
