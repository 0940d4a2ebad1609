// SPDX-License-Identifier: MIT
/*
 * bench/trace/advance.c - tracebuf_advance() with 0, 16 and 64 idle
 * threads, each of which emitted one event in the generation.
 */
#include "bench/trace/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- generation advance with idle threads ---------------------------- */

/*
 * struct adv_case - a tracer and its idle threads.
 * @tb:       the tracer
 * @n:        threads
 * @started:  threads running
 * @threads:  their ids
 * @lock:     guards @round, @emitted, @quit, @err
 * @go:       @round changed or @quit set
 * @emitted_cv: @emitted grew
 * @round:    emit once per round
 * @emitted:  threads that emitted in this round
 * @quit:     threads end
 * @err:      a failed emit
 * @batches:  tracebuf_stats().batches after the last drain
 */
struct adv_case {
	struct tracebuf *tb;
	unsigned int n;
	unsigned int started;
	pthread_t *threads;
	pthread_mutex_t lock;
	pthread_cond_t go;
	pthread_cond_t emitted_cv;
	uint64_t round;
	unsigned int emitted;
	bool quit;
	int err;
	uint64_t batches;
};

/* An idle thread: one event per round, asleep in between. */
static void *adv_thread(void *arg)
{
	struct adv_case *c = arg;
	uint64_t seen = 0, a;
	int rc;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (c->round == seen && !c->quit)
			pthread_cond_wait(&c->go, &c->lock);
		if (c->quit)
			break;
		seen = a = c->round;
		pthread_mutex_unlock(&c->lock);
		rc = tracebuf_emit(c->tb, ADV_TYPE, &a, 1);
		pthread_mutex_lock(&c->lock);
		if (rc)
			c->err = rc;
		c->emitted++;
		pthread_cond_signal(&c->emitted_cv);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Start a round and wait until every thread has emitted in it. */
static int adv_emit_all(struct adv_case *c)
{
	int err;

	pthread_mutex_lock(&c->lock);
	c->round++;
	c->emitted = 0;
	pthread_cond_broadcast(&c->go);
	while (c->emitted < c->n)
		pthread_cond_wait(&c->emitted_cv, &c->lock);
	err = c->err;
	pthread_mutex_unlock(&c->lock);
	return err ? bench_fail("tracebuf_emit", err) : 0;
}

/* Read the stream until it is empty. */
static int adv_read_all(struct adv_case *c)
{
	struct tracebuf_chunk ch;
	int rc;

	do {
		rc = tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
		if (rc)
			return bench_fail("tracebuf_read", rc);
	} while (ch.len);
	return 0;
}

/* Read the stream empty; the advance flushed exactly n buffers. */
static int adv_drain(struct adv_case *c)
{
	struct tracebuf_stats ts;

	if (adv_read_all(c))
		return -1;
	tracebuf_stats(c->tb, &ts);
	if (ts.batches - c->batches != c->n || ts.lost) {
		fprintf(stderr,
			"trace_bench: advance: %llu buffers, %u threads, "
			"%llu lost\n",
			(unsigned long long)(ts.batches - c->batches), c->n,
			(unsigned long long)ts.lost);
		return -1;
	}
	c->batches = ts.batches;
	return 0;
}

/* One repetition: every thread emits, one timed advance, a drain. */
static int adv_run(void *arg, struct bench_sample *s)
{
	struct adv_case *c = arg;
	struct bench_timer t;
	int rc;

	if (adv_emit_all(c))
		return -1;
	bench_timer_start(&t);
	rc = tracebuf_advance(c->tb);
	bench_timer_stop(&t, s, 1);
	if (rc)
		return bench_fail("tracebuf_advance", rc);
	return adv_drain(c);
}

static int adv_init(struct adv_case *c)
{
	struct tracebuf_opts to = { .cpu_words = 0 }; /* no CPU profbuf */
	int rc;

	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->emitted_cv, NULL);
	c->tb = tracebuf_new(&to);
	if (!c->tb)
		return bench_fail("tracebuf_new", errno);
	rc = tracebuf_name_type(c->tb, ADV_TYPE, "round", "u");
	if (!rc)
		rc = tracebuf_start(c->tb);
	if (rc)
		return bench_fail("tracebuf_start", rc);
	c->threads = calloc(c->n ? c->n : 1, sizeof(*c->threads));
	if (!c->threads)
		return bench_fail("calloc", -ENOMEM);
	for (; c->started < c->n; c->started++) {
		rc = pthread_create(&c->threads[c->started], NULL, adv_thread,
				    c);
		if (rc)
			return bench_fail("pthread_create", rc);
	}
	return adv_read_all(c); /* the stream header */
}

static void adv_fini(struct adv_case *c)
{
	struct tracebuf_chunk ch;

	pthread_mutex_lock(&c->lock);
	c->quit = true;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
	for (unsigned int i = 0; i < c->started; i++)
		pthread_join(c->threads[i], NULL);
	free(c->threads);
	if (!c->tb)
		return;
	tracebuf_stop(c->tb);
	do
		tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
	while (ch.len && !ch.eof);
	tracebuf_free(c->tb);
}

/**
 * advance() - measure and report tracebuf_advance() with 0, 16 and 64
 * idle threads, ADV_ROUNDS advances each, interleaved.
 * @o: options
 *
 * Return: 0, or -1 if anything failed.
 */
int advance(const struct bench_opts *o)
{
	static const unsigned int nthreads[] = { 0, 16, 64 };
	struct adv_case c[ARRAY_SIZE(nthreads)] = { 0 };
	struct bench_case bc[ARRAY_SIZE(nthreads)];
	struct bench_stats st[ARRAY_SIZE(nthreads)];
	struct bench_opts ao = *o;
	char names[ARRAY_SIZE(nthreads)][16], row[32];
	size_t inited;
	int rc = 0;

	ao.reps = ADV_ROUNDS;
	ao.warmup = 2;
	for (inited = 0; inited < ARRAY_SIZE(nthreads) && !rc; inited++) {
		c[inited].n = nthreads[inited];
		snprintf(names[inited], sizeof(names[inited]), "N=%u",
			 nthreads[inited]);
		bc[inited] = (struct bench_case){ names[inited], adv_run,
						  &c[inited] };
		rc = adv_init(&c[inited]);
	}
	if (!rc)
		rc = bench_run_cases(bc, ARRAY_SIZE(nthreads), &ao, st);
	for (size_t i = 1; i < ARRAY_SIZE(nthreads) && !rc; i++) {
		snprintf(row, sizeof(row), "advance %u idle", nthreads[i]);
		bench_info_row(row, BENCH_NS_PER_OP, &st[i], names[i], &st[0],
			       names[0],
			       "info; 1 event per thread per generation");
	}
	for (size_t i = 0; i < inited; i++)
		adv_fini(&c[i]);
	return rc;
}
