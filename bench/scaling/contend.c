// SPDX-License-Identifier: MIT
/*
 * bench/scaling/contend.c - the write path alone under W concurrent
 * writers: W threads (pinned one a CPU with --pin) each write
 * CT_RECORDS / W 34-word records as fast as they can into one profbuf,
 * or each into its own ring of a profbuf_group, and no reader runs
 * meanwhile: the rings hold every record (their pages touched before,
 * untimed), so nothing is lost and nothing but the writers is timed,
 * from the first one's start to the last one's end (each writer reads
 * the clock itself: a main thread preempted at the start barrier would
 * miss the writers' work).  Writes per second
 * over all writers: what the write path itself allows, where the
 * delivered rate of the scaling rows is also the reader's.  The books:
 * every record is read back afterwards, untimed.
 */
#include "bench/scaling/scaling.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CT_RING_WORDS (1u << 24) /* holds CT_RECORDS records of 34 words */
#define CT_RING_TAGS (1u << 19)

/*
 * struct ct_case - one implementation at one W.
 * @nw:     writers
 * @pin:    --pin
 * @group:  write to a profbuf_group (else one profbuf)
 * @pb, @pg: the ring or the group
 * @start:  the writers and the timer start together
 * @err:    a writer's error
 */
struct ct_case {
	unsigned int nw;
	bool pin;
	bool group;
	struct profbuf *pb;
	struct profbuf_group *pg;
	pthread_barrier_t start;
	_Atomic int err;
};

/*
 * struct ct_writer - one writer thread.
 * @start, @end: when it started and ended its writes
 */
struct ct_writer {
	struct ct_case *c;
	unsigned int id;
	pthread_t thread;
	struct bench_timer start;
	struct bench_timer end;
};

static void *ct_writer_main(void *arg)
{
	struct ct_writer *w = arg;
	struct ct_case *c = w->c;
	struct profbuf *b;
	uint32_t n = CT_RECORDS / c->nw;
	int rc;

	if (c->pin && bench_pin_cpu((int)w->id % bench_ncpus()))
		fprintf(stderr, "scaling_bench: cannot pin writer %u\n", w->id);
	b = c->group ? profbuf_group_mine(c->pg) : c->pb;
	pthread_barrier_wait(&c->start);
	bench_timer_start(&w->start);
	for (uint32_t i = 0; i < n; i++) {
		rc = profbuf_write(b, w, (int64_t)i, bench_rec.hdr, HDRSIZE,
				   bench_rec.stk, NSTK);
		if (rc) {
			atomic_store(&c->err, rc);
			break;
		}
	}
	bench_timer_start(&w->end);
	return NULL;
}

/* Read until empty; count the ordinary records, check each. */
static int ct_drain(struct ct_case *c, uint64_t *got)
{
	struct profbuf_read rd;
	uint64_t ovf = 0;
	int rc;

	for (;;) {
		rc = c->group ? profbuf_group_read(c->pg, PROFBUF_NONBLOCKING,
						   &rd)
			      : profbuf_read(c->pb, PROFBUF_NONBLOCKING, &rd);
		if (rc)
			return rc;
		if (!rd.ndata)
			return 0;
		rc = bench_rec_account(&rd, got, &ovf);
		if (rc)
			return rc;
	}
}

/* Touch every page of @b: write until it is full (untimed). */
static void ct_fill(struct profbuf *b)
{
	while (!profbuf_write(b, NULL, 0, bench_rec.hdr, HDRSIZE, bench_rec.stk,
			      NSTK))
		;
}

/*
 * ct_open() - the ring or the group (a ring per writer, each big enough
 * for that writer's records), its pages touched and drained.
 */
static int ct_open(struct ct_case *c)
{
	uint64_t got = 0;

	if (c->group) {
		c->pg = profbuf_group_new(
			c->nw < PROFBUF_GROUP_MAX_RINGS
				? c->nw
				: PROFBUF_GROUP_MAX_RINGS,
			HDRSIZE,
			bench_round_pow2((size_t)CT_RING_WORDS / c->nw),
			bench_round_pow2(CT_RING_TAGS / c->nw));
		if (!c->pg)
			return bench_fail("profbuf_group_new", errno);
		for (size_t i = 0; i < profbuf_group_nrings(c->pg); i++)
			ct_fill(profbuf_group_ring(c->pg, i));
	} else {
		c->pb = profbuf_new(HDRSIZE, CT_RING_WORDS, CT_RING_TAGS);
		if (!c->pb)
			return bench_fail("profbuf_new", errno);
		ct_fill(c->pb);
	}
	return ct_drain(c, &got) ? bench_fail("drain", -EIO) : 0;
}

static void ct_close(struct ct_case *c)
{
	profbuf_free(c->pb);
	profbuf_group_free(c->pg);
	c->pb = NULL;
	c->pg = NULL;
}

/* Account the span from the first writer's start to the last one's end. */
static void ct_account(const struct ct_writer *w, unsigned int nw,
		       struct bench_sample *s, uint64_t ops)
{
	struct bench_timer first = w[0].start, last = w[0].end;

	for (unsigned int i = 1; i < nw; i++) {
		if (w[i].start.ns < first.ns)
			first.ns = w[i].start.ns;
		if (w[i].start.tsc < first.tsc)
			first.tsc = w[i].start.tsc;
		if (w[i].end.ns > last.ns)
			last.ns = w[i].end.ns;
		if (w[i].end.tsc > last.tsc)
			last.tsc = w[i].end.tsc;
	}
	s->ns += last.ns - first.ns;
	s->tsc += last.tsc - first.tsc;
	s->ops += ops;
}

static int ct_run(void *arg, struct bench_sample *s)
{
	struct ct_case *c = arg;
	struct ct_writer *w = calloc(c->nw, sizeof(*w));
	uint64_t want = (uint64_t)(CT_RECORDS / c->nw) * c->nw, got = 0;
	int rc;

	if (!w)
		return bench_fail("calloc", -ENOMEM);
	if (ct_open(c)) {
		free(w);
		return -1;
	}
	atomic_store(&c->err, 0);
	pthread_barrier_init(&c->start, NULL, c->nw + 1);
	for (unsigned int i = 0; i < c->nw; i++) {
		w[i] = (struct ct_writer){ .c = c, .id = i };
		rc = pthread_create(&w[i].thread, NULL, ct_writer_main, &w[i]);
		if (rc) { /* the others wait at the barrier: give up */
			bench_fail("pthread_create", rc);
			exit(1);
		}
	}
	pthread_barrier_wait(&c->start);
	for (unsigned int i = 0; i < c->nw; i++)
		pthread_join(w[i].thread, NULL);
	ct_account(w, c->nw, s, want);
	pthread_barrier_destroy(&c->start);
	rc = atomic_load(&c->err);
	if (!rc)
		rc = ct_drain(c, &got);
	ct_close(c);
	free(w);
	if (rc)
		return bench_fail("contended write", rc);
	if (got != want) {
		fprintf(stderr,
			"scaling_bench: contend: %llu written, %llu read\n",
			(unsigned long long)want, (unsigned long long)got);
		return -1;
	}
	return 0;
}

/* One W: profbuf and the group, interleaved. */
static int contend_one(const struct bench_opts *o, unsigned int nw)
{
	struct ct_case c[2] = { { .nw = nw, .pin = o->pin },
				{ .nw = nw, .pin = o->pin, .group = true } };
	struct bench_case bc[2] = {
		{ "profbuf_group", ct_run, &c[1] },
		{ "profbuf", ct_run, &c[0] },
	};
	struct bench_stats st[2];
	char name[32];
	int rc = bench_run_cases(bc, 2, o, st);

	if (rc)
		return rc;
	snprintf(name, sizeof(name), "contend %uw 34w", nw);
	bench_info_row(name, BENCH_MOPS, &st[0], bc[0].name, &st[1], bc[1].name,
		       "info; writes/s, writers only, no reader running");
	return 0;
}

/*
 * contend() - W = 1, 2, 4, ... up to the CPU count, and the CPU count:
 * never more writers than CPUs (preemption would be measured).
 */
int contend(const struct bench_opts *o)
{
	unsigned int ncpus = (unsigned int)bench_ncpus(), nw;
	int rc = 0;

	for (nw = 1; nw < ncpus && !rc; nw *= 2)
		rc = contend_one(o, nw);
	if (!rc)
		rc = contend_one(o, ncpus);
	return rc;
}
