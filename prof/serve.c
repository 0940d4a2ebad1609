// SPDX-License-Identifier: MIT
/*
 * prof/serve.c - the profiles of the HTTP server's requests (serve.h),
 * made in memory while the program runs.
 *
 * A CPU profile is a session of its own for the request's window: the
 * sampler claimed from prof.c (one holder at a time: the session's CPU
 * profile or one request), a ring and a collector of its own, sampling
 * for the window, then the ring drained and the profile encoded.  The
 * session's heap sampling, if any, goes on beside it in its own ring.
 *
 * A heap profile is made from the session's heap aggregation, lent by
 * prof_session_heap() while its collector waits: the symbolizers are made
 * anew (the program may have loaded code since the last one), the profile
 * built and encoded, all before the collector goes on.  A delta (?seconds)
 * remembers every site's allocations first and subtracts them at the end.
 */
#include "prof/serve.h"
#include "prof/aggregate.h"
#include "prof/collector.h"
#include "prof/heap_agg.h"
#include "prof/sampler.h"
#include "prof/stream.h"
#include "pprof/pprof.h"

#include <profring/prof.h>

#include "ring/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW_WORDS ((size_t)1 << 18) /* 2 MiB of ring per CPU request */
#define COMMENT_LEN 256

/* Sleep @seconds in steps, or until *@quit: -ECANCELED then. */
static int wait_window(unsigned int seconds, const _Atomic bool *quit)
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

static int encode_cpu(struct prof_collector *c, struct prof_counters *k,
		      unsigned int hz, int64_t t0, int64_t m0,
		      struct prof_blob *out)
{
	char comment[COMMENT_LEN];
	const char *line = comment;
	struct profring_prof_stats st = { 0 };
	struct prof_profile p;
	int err;

	prof_sampler_add_stats(&st, k);
	prof_collector_add_stats(c, &st);
	err = prof_collector_profile(c, &p);
	if (err)
		return err;
	snprintf(comment, sizeof(comment),
		 "profring-prof /debug/pprof/profile: %u Hz; signals %" PRIu64
		 " = read %" PRIu64 " + lost %" PRIu64 "; threads %" PRIu64,
		 hz, st.signals, st.read, st.lost, st.threads);
	p.period_ns = 1000000000u / hz;
	p.time_nanos = t0;
	p.duration_nanos = (int64_t)ring_clock_mono_ns() - m0;
	p.comments = &line;
	p.ncomments = 1;
	err = prof_pprof_encode(&p, NULL, &out->data, &out->len);
	prof_collector_profile_free(&p);
	return err;
}

/* Sample for the window into @buf, read by @c; then encode. */
static int cpu_window(struct profbuf *buf, struct prof_collector *c,
		      unsigned int seconds, unsigned int hz,
		      const _Atomic bool *quit, bool partial,
		      struct prof_blob *out, bool *leak, bool *joined)
{
	static struct prof_counters counters; /* one window at a time */
	struct prof_sampler_config cfg = {
		.buf = buf,
		.period_ns = 1000000000u / hz,
		.timer = PROFRING_PROF_TIMER_THREAD,
		.unwinder = PROFRING_PROF_UNWIND_FP,
		.max_frames = PROFRING_PROF_DEFAULT_FRAMES,
		.exclude_tid = prof_collector_tid(c),
		.counters = &counters,
	};
	int64_t t0 = (int64_t)ring_clock_ns(CLOCK_REALTIME);
	int64_t m0 = (int64_t)ring_clock_mono_ns();
	int err, werr;

	memset(&counters, 0, sizeof(counters));
	err = prof_sampler_start(&cfg);
	if (err)
		return err;
	werr = wait_window(seconds, quit);
	if (werr == -ECANCELED && partial)
		werr = 0; /* the window so far is wanted */
	if (prof_sampler_stop()) {
		/* A handler never finished: leave the ring alone (prof.c). */
		*leak = true;
		return -EIO;
	}
	profbuf_close(buf);
	err = prof_collector_join(c);
	*joined = true;
	if (werr)
		return werr;
	return err ? err : encode_cpu(c, &counters, hz, t0, m0, out);
}

int prof_serve_cpu(unsigned int seconds, unsigned int hz,
		   const _Atomic bool *quit, bool partial,
		   struct prof_blob *out)
{
	struct prof_collector *c;
	struct profbuf *buf;
	bool leak = false, joined = false;
	int err = prof_session_claim_cpu();

	if (err)
		return err;
	buf = profbuf_new(PROF_HDR_WORDS, WINDOW_WORDS, WINDOW_WORDS / 4 + 1);
	if (!buf) {
		err = -errno;
		goto release;
	}
	profbuf_set_wake_watermark(buf, PROF_WAKE_WORDS);
	c = prof_collector_start(buf, &err);
	if (!c)
		goto free_buf;
	err = cpu_window(buf, c, seconds, hz, quit, partial, out, &leak,
			 &joined);
	if (leak)
		goto release;
	if (!joined) { /* the sampler never started */
		profbuf_close(buf);
		prof_collector_join(c);
	}
	prof_collector_free(c);
free_buf:
	profbuf_free(buf);
release:
	prof_session_release_cpu();
	return err;
}

/* ---- heap ------------------------------------------------------------------ */

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

static uint64_t count(const _Atomic uint64_t *v)
{
	/* Relaxed: a count for the comment, read while writers run. */
	return atomic_load_explicit(v, memory_order_relaxed);
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
		return err;
	prof_agg_heap_counts(v->agg, &hc);
	prof_heap_comment(comment, sizeof(comment), v->rate, &hc,
			  count(&v->counters->heap_allocs) +
				  count(&v->counters->heap_frees),
			  count(&v->counters->heap_refused),
			  count(&v->counters->heap_untracked));
	p.time_nanos = r->delta ? r->t0 : v->start_realtime_ns;
	p.duration_nanos = (int64_t)ring_clock_mono_ns() -
			   (r->delta ? r->m0 : v->start_mono_ns);
	p.comments = &line;
	p.ncomments = 1;
	p.heap_alloc_default = r->allocs;
	err = prof_pprof_encode(&p, NULL, &r->out->data, &r->out->len);
	prof_agg_profile_free(&p);
	return err;
}

int prof_serve_heap(bool allocs, unsigned int seconds, const _Atomic bool *quit,
		    struct prof_blob *out)
{
	struct heap_req r = { .allocs = allocs,
			      .delta = seconds > 0,
			      .out = out };
	int err;

	if (r.delta) {
		r.t0 = (int64_t)ring_clock_ns(CLOCK_REALTIME);
		r.m0 = (int64_t)ring_clock_mono_ns();
		err = prof_session_heap(take_base, &r);
		if (!err)
			err = wait_window(seconds, quit);
		if (!err)
			err = prof_session_heap(make_heap, &r);
		prof_heap_base_free(&r.base);
		return err;
	}
	return prof_session_heap(make_heap, &r);
}
