// SPDX-License-Identifier: MIT
/*
 * prof/agent/collector.c - the reader thread of the in-process mode.
 *
 * One thread, with every signal blocked (it is never sampled), drains the
 * session's profbuf until EOF: blocking reads with a timeout, woken by the
 * writers only past a watermark (see COLLECT_PERIOD_NS), and hands each
 * read to the aggregation (aggregate.c: stacks interned, samples counted
 * per (stack, thread), losses kept visible).  Every COLLECT_PERIOD_NS it
 * has the sampler arm threads it did not see start, and checks that the
 * program still has a thread of its own (maybe_rescan()).
 *
 * Thread names: aggregate.c reads a thread's name at its first sample; at
 * the end the names of live threads are read again and exited threads get
 * the name they exited with (prof_sampler_exited_names()).
 *
 * The aggregation is the collector thread's until it is joined, but for
 * prof_collector_with_agg(), which looks at it meanwhile (the HTTP
 * server's heap profiles): both hold agg_lock, the collector only while
 * it takes one read.  prof_collector_profile() reads it after the join,
 * which orders everything (pthread_join synchronizes with the thread's
 * end).
 */
#include "prof/agent/collector.h"
#include "prof/common/procfs.h"
#include "prof/agent/heap.h"

#include "ring/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * The writers wake the collector only once PROF_WAKE_WORDS are pending (or
 * on overflow or close): a wakeup per sample would cost the profiled
 * program a context switch per sample.  What stays below the mark is read
 * at least every COLLECT_PERIOD_NS.
 */
#define COLLECT_PERIOD_NS 200000000u

struct prof_collector {
	struct profbuf *buf;
	struct prof_agg *agg;
	pthread_mutex_t agg_lock; /* the collector's takes, with_agg() */
	pthread_t thread;
	sem_t started;
	pid_t tid;
	int error;
	_Atomic bool alone; /* the program's last thread is gone */
};

/* Test hook: a pause after every read, so that a small ring overflows. */
static atomic_uint test_stall_us;
/*
 * Test hook: a small stack table, so that it fills.  The hooks are relaxed
 * settings: no data is published with them.
 */
static atomic_size_t test_table_bytes;

/**
 * prof_collector_set_test_table_bytes() - size the next collectors' stack
 * tables (tests only).
 * @bytes: arena bytes, at least 4096; 0 for the default.
 */
void prof_collector_set_test_table_bytes(size_t bytes)
{
	atomic_store_explicit(&test_table_bytes, bytes, memory_order_relaxed);
}

/**
 * prof_collector_set_test_stall() - make the reader slow (tests only).
 * @us: microseconds to sleep after each read; 0 for none.
 */
void prof_collector_set_test_stall(unsigned int us)
{
	atomic_store_explicit(&test_stall_us, us, memory_order_relaxed);
}

static void test_stall(void)
{
	unsigned int us =
		atomic_load_explicit(&test_stall_us, memory_order_relaxed);
	struct timespec ts = { 0, (long)us * 1000 };

	if (us)
		nanosleep(&ts, NULL);
}

/* Is the calling thread the only one left in the process? */
static bool only_thread_left(void)
{
	char buf[1024], *p;

	if (prof_read_small("/proc/self/status", buf, sizeof(buf)) < 0)
		return false;
	p = strstr(buf, "\nThreads:");
	return p && strtol(p + 9, NULL, 10) == 1;
}

/*
 * Every COLLECT_PERIOD_NS: arm threads that started unseen; and if every
 * thread of the program is gone (main ended with pthread_exit(), the
 * others returned), end the process as its last thread would have: exit(0)
 * (POSIX: "as if exit() were called with 0"), which runs the destructors
 * and so writes the profile (prof_collector_join() knows it is called from
 * here).  Without this, our thread alone would keep the process alive.
 */
static void maybe_rescan(struct prof_collector *c, uint64_t *last)
{
	uint64_t now = ring_clock_mono_ns();

	if (now - *last < COLLECT_PERIOD_NS)
		return;
	*last = now;
	prof_sampler_rescan();
	if (only_thread_left()) {
		/* Relaxed: read by this thread only (prof_collector_join). */
		atomic_store_explicit(&c->alone, true, memory_order_relaxed);
		exit(0);
	}
}

/* Read until EOF (or a fatal error). */
static void drain(struct prof_collector *c, bool rescan)
{
	uint64_t last_rescan = ring_clock_mono_ns();
	struct profbuf_read r;
	int err;

	for (;;) {
		if (rescan)
			maybe_rescan(c, &last_rescan);
		err = profbuf_read_timeout(c->buf, COLLECT_PERIOD_NS, &r);
		/* On a timeout the next read takes what is below the mark. */
		if (err == -ETIMEDOUT)
			continue;
		if (!err) {
			pthread_mutex_lock(&c->agg_lock);
			err = prof_agg_take(c->agg, &r);
			pthread_mutex_unlock(&c->agg_lock);
		}
		if (err) {
			/* Keep draining so that writers are not left to
			 * overflow, but remember the first error. */
			if (!c->error)
				c->error = err;
			if (err != -ENOMEM)
				break;
		}
		if (r.eof)
			break;
		test_stall();
	}
}

static void *collector_main(void *arg)
{
	struct prof_collector *c = arg;

	c->tid = (pid_t)syscall(SYS_gettid);
	prof_heap_ignore_thread(); /* our allocations are not the program's */
	sem_post(&c->started);
	drain(c, true);
	return NULL;
}

/**
 * prof_collector_start() - start the reader thread on @buf.
 * @buf: the session's ring.
 * @err: receives -errno on failure.
 *
 * Return: the collector, or NULL.
 */
struct prof_collector *prof_collector_start(struct profbuf *buf, int *err)
{
	struct prof_collector *c = calloc(1, sizeof(*c));
	sigset_t all, old;
	int rc;

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->buf = buf;
	pthread_mutex_init(&c->agg_lock, NULL);
	c->agg = prof_agg_new(
		true,
		atomic_load_explicit(&test_table_bytes, memory_order_relaxed),
		err);
	if (!c->agg)
		goto fail_agg;
	if (sem_init(&c->started, 0, 0)) {
		*err = -errno;
		goto fail_sem;
	}
	/* The thread inherits the mask: it never takes a signal. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = prof_real_pthread_create(&c->thread, NULL, collector_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		*err = -rc;
		goto fail_thread;
	}
	while (sem_wait(&c->started) && errno == EINTR)
		;
	return c;

fail_thread:
	sem_destroy(&c->started);
fail_sem:
	prof_agg_free(c->agg);
fail_agg:
	free(c);
	return NULL;
}

/**
 * prof_collector_tid() - the reader thread's id (never to be sampled).
 * @c: the collector.
 *
 * Return: its tid.
 */
pid_t prof_collector_tid(const struct prof_collector *c)
{
	return c->tid;
}

/**
 * prof_collector_join() - wait for the reader to reach EOF (the ring must
 * have been closed).  Called on the reader thread itself (its exit(0)
 * when it was left alone ran the destructor that stops the session), it
 * drains the ring there instead.
 * @c: the collector.
 *
 * Return: 0, or the first error the reader met.
 */
int prof_collector_join(struct prof_collector *c)
{
	/* Relaxed: stored by this same thread when it is the caller. */
	if (atomic_load_explicit(&c->alone, memory_order_relaxed) &&
	    pthread_equal(pthread_self(), c->thread))
		drain(c, false);
	else
		pthread_join(c->thread, NULL);
	return c->error;
}

/* A name the sampler took from an exiting thread: its final one. */
static void take_exited_name(void *arg, const struct tid_name *n)
{
	prof_agg_set_thread_name(arg, (pid_t)n->tid, n->name);
}

/**
 * prof_collector_profile() - the aggregated samples, after the join.
 * @c: the collector.
 * @p: receives the samples and the symbolizer of the process (the caller
 *     fills in the period, times and comments); free with
 *     prof_collector_profile_free().
 *
 * Return: 0 or -errno.
 */
int prof_collector_profile(struct prof_collector *c, struct prof_profile *p)
{
	/* Live threads' names first, then the ones exited threads left. */
	prof_agg_refresh_names(c->agg);
	prof_sampler_exited_names(take_exited_name, c->agg);
	return prof_agg_profile(c->agg, p);
}

/**
 * prof_collector_profile_free() - free what prof_collector_profile() made.
 * @p: the profile; its samples are freed and zeroed.
 */
void prof_collector_profile_free(struct prof_profile *p)
{
	prof_agg_profile_free(p);
}

/**
 * prof_collector_add_stats() - fill in the reader's side of @st.
 * @c:  the collector, joined.
 * @st: read, lost, periods, stacks, stack_table_full.
 */
void prof_collector_add_stats(const struct prof_collector *c,
			      struct profring_prof_stats *st)
{
	struct prof_agg_counts n;

	prof_agg_counts(c->agg, &n);
	st->read = n.read;
	st->lost = n.lost;
	st->periods = n.periods;
	st->stacks = n.stacks;
	st->stack_table_full = n.table_full;
}

/**
 * prof_collector_with_agg() - call @fn with the aggregation of a running
 * collector, between two of its reads (it waits meanwhile: the ring
 * fills).  Not from a signal handler.
 *
 * Return: what @fn returned.
 */
int prof_collector_with_agg(struct prof_collector *c,
			    int (*fn)(struct prof_agg *a, void *arg), void *arg)
{
	int rc;

	pthread_mutex_lock(&c->agg_lock);
	rc = fn(c->agg, arg);
	pthread_mutex_unlock(&c->agg_lock);
	return rc;
}

/**
 * prof_collector_agg() - the aggregation of a joined collector (for the
 * heap profile and its counts); valid until prof_collector_free().
 */
struct prof_agg *prof_collector_agg(struct prof_collector *c)
{
	return c->agg;
}

/**
 * prof_collector_free() - free a joined collector.
 * @c: the collector, or NULL.
 */
void prof_collector_free(struct prof_collector *c)
{
	if (!c)
		return;
	sem_destroy(&c->started);
	prof_agg_free(c->agg);
	pthread_mutex_destroy(&c->agg_lock);
	free(c);
}
