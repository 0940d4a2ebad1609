// SPDX-License-Identifier: MIT
/*
 * prof/common/serve_agg.c - heap profiles made from an aggregation while the
 * program runs (serve.h), for an in-process session's server and for the
 * launcher's alike.
 *
 * The aggregation is lent by its owner (prof_heap_lender) while no record
 * is taken into it: the symbolizers are made anew (the program may have
 * loaded code since the last profile), the profile built and encoded, and
 * the symbolizers dropped again before the owner goes on (it may take the
 * mappings of a new image next).  A delta (?seconds) remembers every
 * site's allocations first and subtracts them at the end.
 */
#include "prof/agent/serve.h"
#include "prof/common/aggregate.h"
#include "prof/common/heap_agg.h"
#include "pprof/pprof.h"

#include "ring/clock.h"

#include <errno.h>
#include <time.h>

#define COMMENT_LEN 256

/**
 * prof_serve_wait() - sleep @seconds in steps, or until *@quit.
 *
 * Return: 0, or -ECANCELED when *@quit became true.
 */
int prof_serve_wait(unsigned int seconds, const _Atomic bool *quit)
{
	static const struct timespec step = { 0, 50000000 };
	uint64_t end = ring_clock_mono_ns() + (uint64_t)seconds * 1000000000u;

	while (ring_clock_mono_ns() < end) {
		/* Relaxed: a flag to poll; nothing is published with it. */
		if (atomic_load_explicit(quit, memory_order_relaxed))
			return -ECANCELED;
		nanosleep(&step, NULL);
	}
	return 0;
}

struct heap_req {
	bool allocs;
	bool delta;
	struct prof_heap_base base;
	int64_t t0, m0; /* the delta's start */
	struct prof_blob *out;
};

static int take_base(const struct prof_heap_view *v, void *arg)
{
	struct heap_req *r = arg;

	return prof_agg_heap_base(v->agg, &r->base);
}

static int make_heap(const struct prof_heap_view *v, void *arg)
{
	struct heap_req *r = arg;
	char comment[COMMENT_LEN];
	const char *line = comment;
	struct prof_heap_counts hc;
	struct prof_profile p;
	int err;

	prof_agg_forget_symbols(v->agg); /* code loaded since: read again */
	err = prof_agg_heap_profile(v->agg, v->rate, r->delta ? &r->base : NULL,
				    &p);
	if (err)
		goto out;
	prof_agg_heap_counts(v->agg, &hc);
	prof_heap_comment(comment, sizeof(comment), v->rate, &hc, v->written,
			  v->refused, v->untracked);
	p.time_nanos = r->delta ? r->t0 : v->start_realtime_ns;
	p.duration_nanos = (int64_t)ring_clock_mono_ns() -
			   (r->delta ? r->m0 : v->start_mono_ns);
	p.comments = &line;
	p.ncomments = 1;
	p.heap_alloc_default = r->allocs;
	err = prof_pprof_encode(&p, NULL, &r->out->data, &r->out->len);
	prof_agg_profile_free(&p);
out:
	prof_agg_forget_symbols(v->agg); /* records may come again */
	return err;
}

/**
 * prof_serve_heap() - the heap profile now (@seconds 0), or the
 * allocations of the next @seconds (or until *@quit), from the
 * aggregation @lend lends; its default sample type alloc_space if
 * @allocs, else inuse_space.
 *
 * Return: 0; -ENOENT (heap sampling is off); -ECANCELED; -errno.
 */
int prof_serve_heap(prof_heap_lender lend, bool allocs, unsigned int seconds,
		    const _Atomic bool *quit, struct prof_blob *out)
{
	struct heap_req r = { .allocs = allocs,
			      .delta = seconds > 0,
			      .out = out };
	int err;

	if (!r.delta)
		return lend(make_heap, &r);
	r.t0 = (int64_t)ring_clock_ns(CLOCK_REALTIME);
	r.m0 = (int64_t)ring_clock_mono_ns();
	err = lend(take_base, &r);
	if (!err)
		err = prof_serve_wait(seconds, quit);
	if (!err)
		err = lend(make_heap, &r);
	prof_heap_base_free(&r.base);
	return err;
}
