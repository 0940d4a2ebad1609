// SPDX-License-Identifier: MIT
/*
 * prof/agent/mutex_test.c - the lock profiler's waiting side (mutex.c) and its
 * aggregation (mutex_agg.c), without the interposed calls: threads wait
 * between prof_lock_begin() and prof_lock_end() while the session starts
 * and stops (TSan checks mutex.c's own state under `make tsan`); every
 * wait is a record at rate 1, about one in ten at rate 10; a wait that
 * outlives its session writes nothing and does not hold stop up; the
 * collector's scaling by the rate, its mutex/block split and its deltas.
 */
#include "prof/agent/mutex.h"
#include "prof/common/mutex_agg.h"
#include "testing/ktest.h"

#include <profring/stacktab.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define RING_WORDS (1u << 18)

static struct profbuf *buf;
static struct prof_counters ctr;
static long per_thread;
static long sleep_ns;

static void start_session(uint64_t rate, bool reset)
{
	struct prof_lock_config c = {
		.buf = buf,
		.rate = rate,
		.max_frames = 16,
		.counters = &ctr,
		.libunwind = false,
	};

	if (reset) /* not while waits may count */
		memset(&ctr, 0, sizeof(ctr));
	KT_REQUIRE(prof_lock_start(&c) == 0);
}

static void start(uint64_t rate)
{
	start_session(rate, true);
}

static __attribute__((noinline)) void one_wait(unsigned int kind)
{
	struct prof_lock_wait w;
	struct timespec ts = { 0, sleep_ns };

	prof_lock_begin(&w);
	if (sleep_ns)
		nanosleep(&ts, NULL);
	prof_lock_end(&w, kind, (uintptr_t)__builtin_frame_address(0));
}

static void *waiter(void *arg)
{
	unsigned int kind = (unsigned int)(uintptr_t)arg % PROF_LOCK_KINDS;

	for (long i = 0; i < per_thread; i++)
		one_wait(kind);
	return NULL;
}

static void run_threads(void)
{
	pthread_t t[THREADS];

	for (uintptr_t i = 0; i < THREADS; i++)
		KT_REQUIRE(pthread_create(&t[i], NULL, waiter, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

/* Read every record now in the ring: count them, check each. */
static long drain(long *bad, uint64_t min_delay)
{
	struct profbuf_read r;
	struct profbuf_record rec;
	struct profbuf_iter it;
	long n = 0;

	for (;;) {
		if (profbuf_read(buf, PROFBUF_NONBLOCKING, &r)) {
			(*bad)++;
			return n;
		}
		if (!r.ndata)
			return n;
		profbuf_iter_init(&it, &r, PROF_HDR_WORDS);
		while (profbuf_iter_next(&it, &rec)) {
			if (profbuf_record_is_overflow(&rec) ||
			    prof_hdr_kind(rec.hdr[PROF_HDR_KIND_PERIODS]) !=
				    PROF_REC_LOCK ||
			    rec.hdr[PROF_HDR_PID] != (uint64_t)getpid() ||
			    rec.nstk < PROF_LOCK_WORDS ||
			    rec.stk[PROF_LOCK_KIND] >= PROF_LOCK_KINDS ||
			    rec.stk[PROF_LOCK_DELAY] < min_delay)
				(*bad)++;
			n++;
		}
	}
}

static uint64_t written(void)
{
	/* Relaxed: the writers were joined. */
	return atomic_load_explicit(&ctr.lock_written, memory_order_relaxed);
}

static void every_wait_at_rate_1(void)
{
	long bad = 0, n;

	per_thread = 200;
	sleep_ns = 20000;
	start(1);
	run_threads();
	prof_lock_stop();
	n = drain(&bad, (uint64_t)sleep_ns);
	KT_CHECK_EQ(n, THREADS * per_thread);
	KT_CHECK_EQ(written(), (uint64_t)(THREADS * per_thread));
	KT_CHECK_EQ(bad, 0);
}

static void one_in_ten(void)
{
	long bad = 0, n, want;

	per_thread = 5000;
	sleep_ns = 0;
	start(10);
	run_threads();
	prof_lock_stop();
	n = drain(&bad, 0);
	want = THREADS * per_thread / 10;
	/* Binomial: sd = sqrt(20000 * 0.1 * 0.9) = 42; five of them. */
	printf("  %ld of %ld waits recorded at rate 10 (expected %ld)\n", n,
	       (long)THREADS * per_thread, want);
	KT_CHECK(labs(n - want) < 5 * 42);
	KT_CHECK_EQ(written(), (uint64_t)n);
	KT_CHECK_EQ(bad, 0);
}

/* Sessions start and stop while the threads wait: nothing torn. */
static void *flipper(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		struct timespec ts = { 0, 100000 };

		start_session(1, false);
		nanosleep(&ts, NULL);
		prof_lock_stop();
	}
	return NULL;
}

static void start_stop_while_waiting(void)
{
	pthread_t f;
	long bad = 0, n;

	per_thread = 3000;
	sleep_ns = 1000;
	KT_REQUIRE(pthread_create(&f, NULL, flipper, NULL) == 0);
	run_threads();
	pthread_join(f, NULL);
	n = drain(&bad, 0);
	printf("  %ld records across 200 sessions\n", n);
	KT_CHECK_EQ(bad, 0);
}

/* A wait begun in a session that stops before it ends: no record. */
static void *long_wait(void *arg)
{
	(void)arg;
	sleep_ns = 200000000;
	one_wait(PROF_LOCK_COND);
	return NULL;
}

static void wait_outlives_session(void)
{
	struct timespec ts = { 0, 20000000 };
	long bad = 0;
	pthread_t t;

	start(1);
	KT_REQUIRE(pthread_create(&t, NULL, long_wait, NULL) == 0);
	nanosleep(&ts, NULL);
	prof_lock_stop(); /* returns at once: the wait holds nothing */
	pthread_join(t, NULL);
	KT_CHECK_EQ(drain(&bad, 0), 0);
	KT_CHECK_EQ(written(), 0);
}

/* ---- mutex_agg.c ---- */

static void take(struct prof_lock_agg *m, struct stacktab *tab,
		 unsigned int kind, uint64_t delay, uintptr_t pc)
{
	uint64_t hdr[PROF_HDR_WORDS] = { prof_hdr_kind_word(PROF_REC_LOCK, 1),
					 1, 1 };
	uintptr_t w[PROF_LOCK_WORDS + 1] = { kind, delay, pc };
	struct profbuf_record rec = { .hdr = hdr,
				      .nhdr = PROF_HDR_WORDS,
				      .stk = w,
				      .nstk = PROF_LOCK_WORDS + 1 };

	KT_CHECK(prof_lock_agg_take(m, tab, &rec, 0) == 0);
}

static void sum(const struct prof_sample *s, size_t n, uint64_t *c, uint64_t *d)
{
	*c = *d = 0;
	for (size_t i = 0; i < n; i++) {
		*c += s[i].samples;
		*d += s[i].periods;
		free((void *)s[i].pcs);
	}
}

static void aggregation(void)
{
	struct stacktab *tab = stacktab_new(1 << 20, 64);
	struct prof_lock_agg m;
	struct prof_lock_base base;
	struct prof_sample out[8];
	uintptr_t bad_w[PROF_LOCK_WORDS] = { PROF_LOCK_KINDS, 0 };
	uint64_t hdr[PROF_HDR_WORDS] = { 0 };
	struct profbuf_record bad = { .hdr = hdr, .stk = bad_w, .nstk = 2 };
	uint64_t c, d;
	size_t n;

	KT_REQUIRE(tab);
	prof_lock_agg_init(&m);
	take(&m, tab, PROF_LOCK_MUTEX, 100, 0x1000);
	take(&m, tab, PROF_LOCK_MUTEX, 300, 0x1000);
	take(&m, tab, PROF_LOCK_COND, 1000, 0x2000);
	KT_CHECK(prof_lock_agg_take(&m, tab, &bad, 0) == -EBADMSG);
	KT_REQUIRE(prof_lock_agg_count(&m) <= 8);
	/* Mutex profile, rate 3: the cond wait left out, scaled by 3. */
	KT_CHECK(prof_lock_agg_fill(&m, tab, false, 3, 0, NULL, out, &n) == 0);
	sum(out, n, &c, &d);
	KT_CHECK_EQ(n, 1);
	KT_CHECK_EQ(c, 6);
	KT_CHECK_EQ(d, 1200);
	/* Block profile: everything, and 2 lost records as 2 * rate. */
	KT_CHECK(prof_lock_agg_fill(&m, tab, true, 3, 2, NULL, out, &n) == 0);
	sum(out, n, &c, &d);
	KT_CHECK_EQ(n, 3);
	KT_CHECK_EQ(c, 15);
	KT_CHECK_EQ(d, 4200);
	/* A delta: what came after the base only. */
	KT_REQUIRE(prof_lock_agg_base(&m, 2, &base) == 0);
	take(&m, tab, PROF_LOCK_MUTEX, 50, 0x1000);
	KT_CHECK(prof_lock_agg_fill(&m, tab, true, 1, 2, &base, out, &n) == 0);
	sum(out, n, &c, &d);
	KT_CHECK_EQ(n, 1);
	KT_CHECK_EQ(c, 1);
	KT_CHECK_EQ(d, 50);
	prof_lock_base_free(&base);
	prof_lock_agg_free(&m);
	stacktab_free(tab);
}

int main(void)
{
	buf = profbuf_new(PROF_HDR_WORDS, RING_WORDS, RING_WORDS / 4);
	if (!buf)
		return 1;
	KT_RUN(every_wait_at_rate_1);
	KT_RUN(one_in_ten);
	KT_RUN(start_stop_while_waiting);
	KT_RUN(wait_outlives_session);
	KT_RUN(aggregation);
	profbuf_free(buf);
	return ktest_exit();
}
