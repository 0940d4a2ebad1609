// SPDX-License-Identifier: MIT
/*
 * bench/scaling/run.c - one repetition of one implementation at one
 * writer count: the threads (pinned with --pin), the timer, the books.
 */
#include "bench/scaling/scaling.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void die(const char *what, int err)
{
	bench_fail(what, err);
	exit(1);
}

static void sleep_seconds(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s };

	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * sc_thread_start() - thread prologue: pin, then wait for the start.
 * @m:   the run
 * @idx: writer id, or -1 for the reader
 *
 * With --pin the reader gets the last CPU to itself, as a profiler's
 * collector thread would, and the writers share the others.
 */
void sc_thread_start(struct sc_run *m, int idx)
{
	int ncpus = bench_ncpus();
	int writer_cpus = ncpus > 1 ? ncpus - 1 : 1;
	int cpu = idx < 0 ? ncpus - 1 : idx % writer_cpus;

	if (m->o->pin && bench_pin_cpu(cpu))
		fprintf(stderr, "scaling_bench: cannot pin thread %d\n", idx);
	pthread_barrier_wait(&m->start);
}

static void sc_spawn(struct sc_run *m)
{
	int rc;

	for (unsigned int i = 0; i < m->nw; i++) {
		rc = pthread_create(&m->w[i].thread, NULL, m->ops->writer,
				    &m->w[i]);
		if (rc)
			die("pthread_create", rc);
	}
	rc = pthread_create(&m->reader, NULL, m->ops->reader, m);
	if (rc)
		die("pthread_create", rc);
}

/* Join the writers and total their counts; -1 if one failed. */
static int sc_collect(struct sc_run *m, uint64_t *ok, uint64_t *lost)
{
	int rc = 0;

	*ok = *lost = 0;
	for (unsigned int i = 0; i < m->nw; i++) {
		pthread_join(m->w[i].thread, NULL);
		if (m->w[i].err && !rc)
			rc = bench_fail("concurrent write", m->w[i].err);
		*ok += m->w[i].ok;
		*lost += m->w[i].lost;
	}
	return rc;
}

/* The books: every accepted write read, every refusal reported. */
static int sc_check(const struct sc_run *m, uint64_t ok, uint64_t lost)
{
	if (m->err)
		return bench_fail("concurrent read", m->err);
	if (m->delivered != ok) {
		fprintf(stderr,
			"scaling_bench: %u writers: %llu accepted, %llu read\n",
			m->nw, (unsigned long long)ok,
			(unsigned long long)m->delivered);
		return -1;
	}
	if (m->ops->counts_losses && m->ovf != lost) {
		fprintf(stderr,
			"scaling_bench: %llu refused, %llu in overflow records\n",
			(unsigned long long)lost, (unsigned long long)m->ovf);
		return -1;
	}
	return 0;
}

/*
 * sc_case_run() - one repetition: start the threads, let the writers run
 * for --seconds, stop them, let the reader drain, check the books.
 */
int sc_case_run(void *arg, struct bench_sample *s)
{
	struct sc_run *m = arg;
	struct bench_timer t;
	uint64_t ok, lost;
	int rc;

	atomic_store(&m->stop, false);
	atomic_store(&m->done, false);
	m->delivered = m->ovf = 0;
	m->err = 0;
	for (unsigned int i = 0; i < m->nw; i++)
		m->w[i] = (struct sc_writer){ .m = m, .id = i };
	if (m->ops->open(m))
		return -1;
	pthread_barrier_init(&m->start, NULL, m->nw + 2);
	sc_spawn(m);
	pthread_barrier_wait(&m->start);
	bench_timer_start(&t);
	sleep_seconds(m->o->seconds);
	atomic_store(&m->stop, true);
	rc = sc_collect(m, &ok, &lost);
	m->ops->finish(m);
	pthread_join(m->reader, NULL);
	bench_timer_stop(&t, s, m->delivered);
	s->lost += lost;
	pthread_barrier_destroy(&m->start);
	if (!rc)
		rc = sc_check(m, ok, lost);
	return m->ops->close(m) || rc ? -1 : 0;
}

/* Readers without EOF: the writers are joined; all they wrote is visible. */
void sc_finish_done(struct sc_run *m)
{
	atomic_store_explicit(&m->done, true, memory_order_release);
}

/*
 * sc_read_until_done() - the polling readers' loop: call @get until the
 * writers are done and it finds nothing; yield when it finds nothing
 * before that.
 * @get: takes one record into @out; true if there was one
 */
void sc_read_until_done(struct sc_run *m,
			bool (*get)(struct sc_run *m, struct rec34 *out))
{
	struct rec34 out;
	bool done, got;

	sc_thread_start(m, -1);
	for (;;) {
		/* Acquire: pairs with sc_finish_done(). */
		done = atomic_load_explicit(&m->done, memory_order_acquire);
		got = get(m, &out);
		if (got && !bench_rec_ok(out.w)) {
			m->err = -EIO;
			return;
		}
		if (got)
			m->delivered++;
		else if (done)
			return;
		else
			sched_yield();
	}
}
