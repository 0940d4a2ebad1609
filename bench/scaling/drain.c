// SPDX-License-Identifier: MIT
/*
 * bench/scaling/drain.c - the reader's drain rate: a prefilled profbuf
 * read non-blocking and copied out, against memcpy of the same words.
 */
#include "bench/scaling/scaling.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reader drain rate ----------------------------------------------- */

/*
 * struct dr_case - the drain cases' state.
 * @pb:   profbuf of DR_WORDS words (profbuf case)
 * @from: the anchor's prefilled source, DR_RECS records
 * @to:   destination of the copy, DR_RECS records
 * @now:  next time stamp
 */
struct dr_case {
	struct profbuf *pb;
	uint64_t *from;
	uint64_t *to;
	uint64_t now;
};

/* Every record of @to intact, with time stamps @first, @first + 1, ... */
static int dr_check(const uint64_t *to, size_t words, uint64_t first)
{
	if (words != (size_t)DR_RECS * WORDS) {
		fprintf(stderr, "scaling_bench: drained %zu words, wrote %zu\n",
			words, (size_t)DR_RECS * WORDS);
		return -1;
	}
	for (size_t i = 0; i < DR_RECS; i++) {
		const uint64_t *r = to + i * WORDS;

		if (!bench_rec_ok(r) || r[1] != first + i) {
			fprintf(stderr,
				"scaling_bench: drain: bad record %zu\n", i);
			return -1;
		}
	}
	return 0;
}

static int dr_prefill(struct dr_case *c)
{
	int rc;

	for (size_t i = 0; i < DR_RECS; i++) {
		rc = profbuf_write(c->pb, c, (int64_t)c->now++, bench_rec.hdr,
				   HDRSIZE, bench_rec.stk, NSTK);
		if (rc)
			return bench_fail("prefill profbuf_write", rc);
	}
	return 0;
}

/*
 * pb_drain_once() - read non-blocking until a read comes back empty,
 * copying every run out; only this is timed.
 *
 * Return: the words copied, or a negative errno.
 */
static long pb_drain_once(struct dr_case *c, struct bench_sample *s)
{
	struct profbuf_read rd;
	struct bench_timer t;
	size_t words = 0;
	int rc;

	bench_timer_start(&t);
	for (;;) {
		rc = profbuf_read(c->pb, PROFBUF_NONBLOCKING, &rd);
		if (rc || !rd.ndata ||
		    words + rd.ndata > (size_t)DR_RECS * WORDS)
			break;
		memcpy(c->to + words, rd.data, rd.ndata * sizeof(*rd.data));
		words += rd.ndata;
	}
	bench_timer_stop(&t, s, words);
	if (rc)
		return rc;
	return rd.ndata ? -EOVERFLOW : (long)words;
}

static int pb_drain_run(void *arg, struct bench_sample *s)
{
	struct dr_case *c = arg;
	uint64_t first;
	long words;

	for (int r = 0; r < DR_ROUNDS; r++) {
		first = c->now;
		if (dr_prefill(c))
			return -1;
		words = pb_drain_once(c, s);
		if (words < 0)
			return bench_fail("profbuf drain", (int)words);
		if (dr_check(c->to, (size_t)words, first))
			return -1;
	}
	return 0;
}

static int memcpy_drain_run(void *arg, struct bench_sample *s)
{
	struct dr_case *c = arg;
	size_t words = (size_t)DR_RECS * WORDS;
	struct bench_timer t;

	for (int r = 0; r < DR_ROUNDS; r++) {
		for (size_t i = 0; i < DR_RECS; i++)
			c->from[i * WORDS + 1] = c->now + i;
		bench_timer_start(&t);
		memcpy(c->to, c->from, words * sizeof(*c->to));
		bench_timer_stop(&t, s, words);
		if (dr_check(c->to, words, c->now))
			return -1;
		c->now += DR_RECS;
	}
	return 0;
}

/* Both cases' buffers, touched so that no page fault is timed. */
static int dr_init(struct dr_case *c)
{
	size_t bytes = (size_t)DR_RECS * REC_BYTES;

	for (int i = 0; i < 2; i++) {
		c[i].to = malloc(bytes);
		if (!c[i].to)
			return bench_fail("malloc", -ENOMEM);
		memset(c[i].to, 0, bytes);
	}
	c[0].pb = profbuf_new(HDRSIZE, DR_WORDS, bench_round_pow2(DR_RECS + 1));
	if (!c[0].pb)
		return bench_fail("profbuf_new", errno);
	c[1].from = malloc(bytes);
	if (!c[1].from)
		return bench_fail("malloc", -ENOMEM);
	for (size_t i = 0; i < DR_RECS; i++)
		bench_rec_fill(c[1].from + i * WORDS, 0);
	return 0;
}

/**
 * drain() - measure and report the reader's drain rate.
 * @o: options
 *
 * Return: 0, or -1 if anything failed.
 */
int drain(const struct bench_opts *o)
{
	struct dr_case c[2] = { 0 };
	struct bench_case bc[2] = {
		{ "profbuf_read", pb_drain_run, &c[0] },
		{ "memcpy", memcpy_drain_run, &c[1] },
	};
	struct bench_stats st[2];
	int rc = dr_init(c);

	if (!rc)
		rc = bench_run_cases(bc, 2, o, st);
	if (!rc)
		bench_info_row("drain 34w", BENCH_MOPS, &st[0], bc[0].name,
			       &st[1], bc[1].name,
			       "info; Mop/s = million words/s");
	profbuf_free(c[0].pb);
	for (int i = 0; i < 2; i++) {
		free(c[i].to);
		free(c[i].from);
	}
	return rc;
}
