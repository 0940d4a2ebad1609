// SPDX-License-Identifier: MIT
/*
 * prof/launcher/record_http.c - what `profring-prof record --http` serves: the
 * /debug/pprof/ endpoints of the program it runs, answered by the
 * launcher (http.c's server, serve.h's ops) from what it reads.
 *
 * The launcher samples the program for the whole run and aggregates every
 * record it reads, so a CPU profile of a window (a wall-clock one under
 * --mode wall, /debug/pprof/wall) is a difference: each
 * (stack, thread)'s samples at the window's start are remembered, and the
 * profile at its end has only what came since.  The window is the
 * reader's: it lags the program by at most the reader's period (0.1 s) at
 * both ends.  One CPU window at a time (409 for a second), as in-process.
 * Heap profiles are serve_agg.c's, lent from the same aggregation; the
 * mutex and block profiles (?seconds=N a difference, as CPU windows) are
 * made from it too.
 * /symbol and /cmdline are the program's (its pid and its reported
 * mappings), not the launcher's.
 *
 * Every look at the aggregation holds the reader's lock, which the reader
 * holds around each record it takes: a request makes the reader wait
 * while it builds and encodes a profile (its ring holds what the program
 * writes meanwhile), never the program.
 */
#include "prof/launcher/record_http.h"
#include "prof/common/aggregate.h"
#include "prof/common/mutex_agg.h"
#include "prof/common/http.h"
#include "prof/agent/serve.h"
#include "prof/wire/shm.h"

#include "pprof/demangle.h"
#include "pprof/pprof.h"
#include "ring/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define COMMENT_LEN 256

static const struct prof_record_view *view;
static _Atomic bool cpu_busy;

/*
 * The writers' counts now; the heap records the ring refused are not CPU
 * samples lost (prof_agg_set_heap_refused()).  Under the lock.
 */
static void counts_now(struct prof_counts *k)
{
	prof_shm_sum(view->shm, k);
	prof_agg_set_heap_refused(view->agg, k->heap_refused);
}

/* ---- CPU: a window of the run's aggregation ------------------------------ */

struct window {
	struct prof_cpu_base base;
	struct prof_agg_counts c0;
	int64_t t0, m0;
};

static int encode_window(struct window *w, struct prof_blob *out)
{
	const char *name = view->wall ? "wall" : "profile";
	char comment[COMMENT_LEN];
	const char *line = comment;
	struct prof_agg_counts c1;
	struct prof_counts k;
	struct prof_profile p;
	int err;

	counts_now(&k);
	prof_agg_forget_symbols(view->agg); /* code loaded since: read again */
	err = prof_agg_profile_since(view->agg, &w->base, &p);
	if (err)
		goto out;
	prof_agg_counts(view->agg, &c1);
	snprintf(comment, sizeof(comment),
		 "profring-prof record --http /debug/pprof/%s: %u Hz; "
		 "in the window samples read %" PRIu64 ", lost %" PRIu64,
		 name, view->hz, c1.read - w->c0.read, c1.lost - w->c0.lost);
	p.period_ns = 1000000000u / view->hz;
	p.wall = view->wall;
	p.time_nanos = w->t0;
	p.duration_nanos = (int64_t)ring_clock_mono_ns() - w->m0;
	p.comments = &line;
	p.ncomments = 1;
	err = prof_pprof_encode(&p, NULL, &out->data, &out->len);
	prof_agg_profile_free(&p);
out:
	prof_agg_forget_symbols(view->agg); /* the reader takes records again */
	return err;
}

/* A window of the run's samples (CPU or wall, as the run is). */
static int window(unsigned int seconds, const _Atomic bool *quit,
		  struct prof_blob *out)
{
	struct window w = { 0 };
	struct prof_counts k;
	int err;

	/* Acquire: pairs with the release store below by the last holder. */
	if (atomic_exchange_explicit(&cpu_busy, true, memory_order_acquire))
		return -EBUSY;
	w.t0 = (int64_t)ring_clock_ns(CLOCK_REALTIME);
	w.m0 = (int64_t)ring_clock_mono_ns();
	pthread_mutex_lock(view->lock);
	counts_now(&k);
	err = prof_agg_cpu_base(view->agg, &w.base);
	prof_agg_counts(view->agg, &w.c0);
	pthread_mutex_unlock(view->lock);
	if (!err)
		err = prof_serve_wait(seconds, quit);
	if (!err) {
		pthread_mutex_lock(view->lock);
		err = encode_window(&w, out);
		pthread_mutex_unlock(view->lock);
	}
	prof_cpu_base_free(&w.base);
	/* Release: pairs with the acquire exchange above. */
	atomic_store_explicit(&cpu_busy, false, memory_order_release);
	return err;
}

static int record_cpu(unsigned int seconds, const _Atomic bool *quit,
		      struct prof_blob *out)
{
	return view->cpu ? window(seconds, quit, out) : -ENOENT;
}

static int record_wall(unsigned int seconds, const _Atomic bool *quit,
		       struct prof_blob *out)
{
	return view->wall ? window(seconds, quit, out) : -ENOENT;
}

/* ---- heap: serve_agg.c's, from the launcher's aggregation ---------------- */

static int lend_heap(int (*fn)(const struct prof_heap_view *v, void *arg),
		     void *arg)
{
	struct prof_heap_view v = {
		.agg = view->agg,
		.rate = view->heap_rate,
		.start_realtime_ns = view->start_realtime_ns,
		.start_mono_ns = view->start_mono_ns,
	};
	struct prof_counts k;
	int err;

	if (!view->heap_rate)
		return -ENOENT;
	pthread_mutex_lock(view->lock);
	counts_now(&k);
	v.written = k.heap_allocs + k.heap_frees;
	v.refused = k.heap_refused;
	v.untracked = k.heap_untracked;
	err = fn(&v, arg);
	pthread_mutex_unlock(view->lock);
	return err;
}

static int record_heap(bool allocs, unsigned int seconds,
		       const _Atomic bool *quit, struct prof_blob *out)
{
	return prof_serve_heap(lend_heap, allocs, seconds, quit, out);
}

/* ---- locks: Go's mutex and block profiles -------------------------------- */

/* The lock profile of @base's window (NULL: the whole run) into @out. */
static int lock_profile(bool block, const struct prof_lock_base *base,
			int64_t t0, int64_t m0, struct prof_blob *out)
{
	char comment[COMMENT_LEN];
	const char *line = comment;
	struct prof_profile p;
	struct prof_counts k;
	int err;

	counts_now(&k);
	prof_agg_forget_symbols(view->agg); /* code loaded since: read again */
	err = prof_agg_lock_profile(view->agg, block, view->mutex_rate,
				    k.lock_refused, base, &p);
	if (err)
		goto out;
	prof_lock_comment(comment, sizeof(comment), block, view->mutex_rate,
			  prof_agg_lock_waits(view->agg), k.lock_written,
			  k.lock_refused);
	p.time_nanos = t0;
	p.duration_nanos = (int64_t)ring_clock_mono_ns() - m0;
	p.comments = &line;
	p.ncomments = 1;
	err = prof_pprof_encode(&p, NULL, &out->data, &out->len);
	prof_agg_profile_free(&p);
out:
	prof_agg_forget_symbols(view->agg); /* records may come again */
	return err;
}

/*
 * /mutex and /block: the whole run's, or (@seconds) the waits recorded in
 * the next @seconds, a difference of the run's aggregation as the CPU
 * window's.
 */
static int record_lock(bool block, unsigned int seconds,
		       const _Atomic bool *quit, struct prof_blob *out)
{
	struct prof_lock_base base;
	struct prof_counts k;
	int64_t t0, m0;
	int err;

	if (!view->mutex_rate)
		return -ENOENT;
	if (!seconds) {
		pthread_mutex_lock(view->lock);
		err = lock_profile(block, NULL, view->start_realtime_ns,
				   view->start_mono_ns, out);
		pthread_mutex_unlock(view->lock);
		return err;
	}
	t0 = (int64_t)ring_clock_ns(CLOCK_REALTIME);
	m0 = (int64_t)ring_clock_mono_ns();
	pthread_mutex_lock(view->lock);
	counts_now(&k);
	err = prof_agg_lock_base(view->agg, k.lock_refused, &base);
	pthread_mutex_unlock(view->lock);
	if (!err)
		err = prof_serve_wait(seconds, quit);
	if (!err) {
		pthread_mutex_lock(view->lock);
		err = lock_profile(block, &base, t0, m0, out);
		pthread_mutex_unlock(view->lock);
	}
	prof_lock_base_free(&base);
	return err;
}

/* ---- the program's pid and names ----------------------------------------- */

static pid_t record_pid(void)
{
	return view->pid;
}

static int record_symbols(const uint64_t *pcs, size_t n, FILE *out)
{
	pthread_mutex_lock(view->lock);
	prof_agg_forget_symbols(view->agg);
	for (size_t i = 0; i < n; i++) {
		const char *name =
			prof_agg_symbol(view->agg, view->pid, pcs[i]);

		if (name)
			fprintf(out, "%#llx %s\n", (unsigned long long)pcs[i],
				name);
	}
	prof_agg_forget_symbols(view->agg);
	pthread_mutex_unlock(view->lock);
	return 0;
}

static const struct prof_http_ops record_ops = {
	.cpu = record_cpu,
	.wall = record_wall,
	.heap = record_heap,
	.lock = record_lock,
	.pid = record_pid,
	.symbols = record_symbols,
	.cpu_off = "CPU profiling is off: record with -o FILE too (--heap "
		   "alone profiles memory only), without --mode wall\n",
	.wall_off = "wall-clock profiling is off: record with --mode wall\n",
	.heap_off = "heap profiling is off: record with --heap-rate BYTES "
		    "(or --heap FILE)\n",
	.lock_off = "lock profiling is off: record with --mutex-rate N (or "
		    "--mutex FILE, --block FILE)\n",
};

int prof_record_http_start(const char *addr, const struct prof_record_view *v)
{
	view = v;
	prof_demangle_allow_load(); /* our own process */
	return prof_http_start(addr, &record_ops);
}

void prof_record_http_stop(void)
{
	prof_http_stop();
}
