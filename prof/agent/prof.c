// SPDX-License-Identifier: MIT
/*
 * prof/agent/prof.c - profring-prof's sessions: profring_prof_start() and
 * profring_prof_stop(), and the LD_PRELOAD entry (a constructor that
 * attaches to `profring-prof record` when it runs us (agent.c), or else
 * starts a session when PROFRING_PROF names an output file, and a
 * destructor that stops it at exit).
 *
 * A session is: a profbuf the sampler's handler writes one record per sample
 * to (sampler.c) and the heap profiler one per sampled allocation and its
 * free (heap.c), a collector thread that drains it (collector.c), and at
 * stop the writers (pprof.c).  Start and stop are serialized by a mutex and
 * belong to the process that started the session: a forked child has no
 * timers and no collector, so it has no session to stop.
 *
 * Stop's order is what makes the accounting exact: the heap profiler and
 * the sampler stop first
 * (timers deleted, handlers in flight waited for), so the ring's close
 * races no writer; the collector then drains to EOF, overflow included; so
 * at stop signals = samples read + samples lost.
 */
#include "prof/agent/agent.h"
#include "prof/agent/collector.h"
#include "prof/agent/heap.h"
#include "prof/common/heap_agg.h"
#include "prof/common/http.h"
#include "prof/agent/mutex.h"
#include "prof/agent/mutex_session.h"
#include "prof/common/options.h"
#include "prof/agent/periodic.h"
#include "prof/agent/serve.h"
#include "prof/wire/shm.h"
#include "prof/agent/unwind.h"
#include "pprof/pprof.h"

#include "ring/clock.h"
#include "ring/compiler.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROF_NCOMMENTS 4 /* the last only with a perf map */
#define PROF_COMMENT_LEN 256

static struct {
	pthread_mutex_t lock;
	bool running;
	bool verbose; /* print a summary line on stderr at stop */
	pid_t owner;
	char *output; /* NULL: no CPU profiling (heap only) */
	char *folded;
	char *heap_output; /* NULL: no heap profile written */
	bool heap_on; /* heap sampling: heap_output, or served over HTTP */
	bool lock_on; /* lock waits recorded (lock_req, mutex_session.c) */
	bool http; /* this session started the HTTP server */
	bool http_failed; /* the last start failed there (http.c said why) */
	bool cpu_window; /* serve.c holds the sampler (an HTTP request) */
	bool periodic; /* periodic.c writes the profiles, window by window */
	char *period_cpu, *period_heap; /* their patterns */
	uint64_t heap_rate;
	/* At stop: the file whose malloc the program reaches, if not ours. */
	const char *malloc_foreign;
	unsigned int hz;
	bool wall; /* PROFRING_PROF_MODE_WALL */
	enum profring_prof_unwinder unwinder;
	struct profbuf *buf;
	struct prof_collector *collector;
	int64_t start_realtime_ns;
	int64_t start_mono_ns;
	struct profring_prof_stats stats;
	/* The sampler's counters for this process's session. */
	struct prof_counters counters;
} session = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The lock profiles the variables asked for (the constructor's alone). */
static struct prof_lock_req lock_req;

static int check_opts(const struct profring_prof_opts *o)
{
	char msg[256];
	size_t frames =
		o->max_frames ? o->max_frames : PROFRING_PROF_DEFAULT_FRAMES;

	if (o->hz > PROFRING_PROF_MAX_HZ ||
	    o->max_frames > PROFRING_PROF_MAX_FRAMES ||
	    o->heap_rate > PROFRING_PROF_MAX_HEAP_RATE)
		return -EINVAL;
	if (o->timer != PROFRING_PROF_TIMER_THREAD &&
	    o->timer != PROFRING_PROF_TIMER_PROCESS &&
	    o->timer != PROFRING_PROF_TIMER_POSIX &&
	    o->timer != PROFRING_PROF_TIMER_KERNEL)
		return -EINVAL;
	if (o->mode != PROFRING_PROF_MODE_CPU &&
	    o->mode != PROFRING_PROF_MODE_WALL)
		return -EINVAL;
	/* Wall mode: its own rate bound; not with the CPU's server. */
	if (o->mode == PROFRING_PROF_MODE_WALL &&
	    (o->hz > PROFRING_PROF_MAX_WALL_HZ || o->http))
		return -EINVAL;
	if (o->unwinder != PROFRING_PROF_UNWIND_FP &&
	    o->unwinder != PROFRING_PROF_UNWIND_LIBUNWIND)
		return -EINVAL;
	if (o->unwinder == PROFRING_PROF_UNWIND_LIBUNWIND &&
	    !prof_unwind_libunwind_available())
		return -ENOTSUP;
	if (o->period > PROFRING_PROF_MAX_PERIOD ||
	    o->keep > PROFRING_PROF_MAX_KEEP ||
	    (o->period && prof_periodic_names_check(o, msg, sizeof(msg))))
		return -EINVAL;
	/* Room for two of the largest records, or samples are refused. */
	if (o->buffer_words > PROFRING_PROF_MAX_BUFFER_WORDS ||
	    (o->buffer_words &&
	     o->buffer_words < 2 * (2 + PROF_HDR_WORDS + frames)))
		return -EINVAL;
	return 0;
}

static void session_release(void)
{
	prof_collector_free(session.collector);
	profbuf_free(session.buf);
	free(session.output);
	free(session.folded);
	free(session.heap_output);
	free(session.period_cpu);
	free(session.period_heap);
	session.period_cpu = session.period_heap = NULL;
	session.collector = NULL;
	session.buf = NULL;
	session.output = session.folded = session.heap_output = NULL;
}

static int ring_setup(const struct profring_prof_opts *o);

/* PROFRING_PROF_PERIOD: the patterns kept, heap sampling on for one. */
static int periodic_setup(const struct profring_prof_opts *o)
{
	if (!o->output && !o->heap_output)
		return -EINVAL;
	session.period_cpu = o->output ? strdup(o->output) : NULL;
	session.period_heap = o->heap_output ? strdup(o->heap_output) : NULL;
	if ((o->output && !session.period_cpu) ||
	    (o->heap_output && !session.period_heap))
		return -ENOMEM;
	session.heap_on = o->heap_output || (o->http && o->heap_rate);
	session.heap_rate =
		o->heap_rate ? o->heap_rate : PROFRING_PROF_DEFAULT_HEAP_RATE;
	return ring_setup(o);
}

static int session_setup(const struct profring_prof_opts *o)
{
	session.wall = o->mode == PROFRING_PROF_MODE_WALL;
	session.hz = o->hz	    ? o->hz
		     : session.wall ? PROFRING_PROF_DEFAULT_WALL_HZ
				    : PROFRING_PROF_DEFAULT_HZ;
	session.unwinder = o->unwinder;
	if (o->period) /* periodic.c writes the files: none at stop */
		return periodic_setup(o);
	/* CPU to a file by default, unless memory, locks or HTTP is all. */
	if (o->output ||
	    (!o->heap_output && !o->http && !prof_lock_req_on(&lock_req))) {
		session.output = strdup(
			o->output ? o->output : PROFRING_PROF_DEFAULT_OUTPUT);
		if (!session.output)
			return -ENOMEM;
	}
	session.folded = o->folded ? strdup(o->folded) : NULL;
	session.heap_output = o->heap_output ? strdup(o->heap_output) : NULL;
	session.heap_on = o->heap_output || (o->http && o->heap_rate);
	session.heap_rate =
		o->heap_rate ? o->heap_rate : PROFRING_PROF_DEFAULT_HEAP_RATE;
	if ((o->folded && !session.folded) ||
	    (o->heap_output && !session.heap_output))
		return -ENOMEM;
	return ring_setup(o);
}

/* The session's ring and its collector. */
static int ring_setup(const struct profring_prof_opts *o)
{
	size_t words = o->buffer_words ? o->buffer_words
				       : PROFRING_PROF_DEFAULT_BUFFER_WORDS;
	int err = -ENOMEM;

	/* A record is at least 5 words: one tag per 4 words is plenty. */
	session.buf = profbuf_new(PROF_HDR_WORDS, words, words / 4 + 1);
	if (!session.buf)
		return -errno;
	/* Wake the collector in batches (collector.c says why). */
	profbuf_set_wake_watermark(session.buf, words / 4 < PROF_WAKE_WORDS
							? words / 4
							: PROF_WAKE_WORDS);
	session.collector = prof_collector_start(session.buf, &err);
	if (!session.collector)
		return err;
	return 0;
}

/* Undo session_setup() after the collector started. */
static void session_abort(void)
{
	if (session.collector) {
		profbuf_close(session.buf);
		prof_collector_join(session.collector);
	}
	session_release();
}

static int start_heap(unsigned int max_frames)
{
	struct prof_heap_config h = {
		.buf = session.buf,
		.rate = session.heap_rate,
		.max_frames = max_frames,
		.counters = &session.counters,
		/* Rare, and never in a handler: complete stacks. */
		.libunwind = true,
	};

	return session.heap_on ? prof_heap_start(&h) : 0;
}

static int start_locks(unsigned int max_frames)
{
	struct prof_lock_config c = {
		.buf = session.buf,
		.rate = lock_req.rate,
		.max_frames = max_frames,
		.counters = &session.counters,
		/* Waits block anyway: complete stacks. */
		.libunwind = true,
	};
	int err;

	session.lock_on = false;
	if (!prof_lock_req_on(&lock_req))
		return 0;
	err = prof_lock_start(&c);
	session.lock_on = !err;
	return err;
}

/**
 * profring_prof_start() - start profiling the whole process.
 * @opts: options, or NULL for the defaults.
 *
 * Return: 0 or -errno; see prof.h.
 */
RING_API int profring_prof_start(const struct profring_prof_opts *opts)
{
	static const struct profring_prof_opts defaults;
	const struct profring_prof_opts *o = opts ? opts : &defaults;
	struct prof_sampler_config cfg;
	int err;

	err = check_opts(o);
	if (err)
		return err;
	prof_sampler_init_process();
	pthread_mutex_lock(&session.lock);
	err = -EBUSY;
	if (session.running && session.owner == getpid())
		goto out;
	/* An HTTP request's CPU profile holds the sampler. */
	if (session.cpu_window && (o->output || (!o->heap_output && !o->http)))
		goto out;
	if (session.running) /* inherited by fork: its threads are gone */
		session_release();
	session.running = false;
	memset(&session.stats, 0, sizeof(session.stats));
	err = session_setup(o);
	if (err)
		goto fail;
	cfg.buf = session.buf;
	cfg.period_ns = 1000000000u / session.hz;
	cfg.timer = o->timer;
	cfg.unwinder = o->unwinder;
	cfg.max_frames =
		o->max_frames ? o->max_frames : PROFRING_PROF_DEFAULT_FRAMES;
	cfg.exclude_tid = prof_collector_tid(session.collector);
	cfg.wall = session.wall;
	memset(&session.counters, 0, sizeof(session.counters));
	cfg.counters = &session.counters;
	session.start_realtime_ns = (int64_t)ring_clock_ns(CLOCK_REALTIME);
	session.start_mono_ns = (int64_t)ring_clock_mono_ns();
	err = session.output ? prof_sampler_start(&cfg) : 0;
	if (err)
		goto fail;
	err = start_heap(cfg.max_frames);
	if (!err) {
		err = start_locks(cfg.max_frames);
		if (err && session.heap_on)
			prof_heap_stop();
	}
	if (err) {
		if (session.output)
			prof_sampler_stop();
		goto fail;
	}
	session.http_failed = false;
	if (o->http) {
		prof_heap_ignore_begin(); /* its threads inherit it */
		err = prof_http_start(o->http, &prof_serve_session_ops);
		prof_heap_ignore_end();
		session.http_failed = err != 0;
		if (err) {
			if (session.heap_on)
				prof_heap_stop();
			if (session.lock_on)
				prof_lock_stop();
			if (session.output)
				prof_sampler_stop();
			goto fail;
		}
		session.http = true;
	}
	session.owner = getpid();
	session.running = true;
	session.periodic = false;
	if (o->period) {
		/* Its windows claim the sampler through prof.c: unlocked. */
		pthread_mutex_unlock(&session.lock);
		err = prof_periodic_start(session.period_cpu,
					  session.period_heap, o->period,
					  o->keep, session.hz, session.wall);
		pthread_mutex_lock(&session.lock);
		session.periodic = !err;
		if (err) {
			pthread_mutex_unlock(&session.lock);
			profring_prof_stop();
			return err;
		}
	}
	goto out;
fail:
	session_abort();
out:
	pthread_mutex_unlock(&session.lock);
	return err;
}

static void format_comments(char c[PROF_NCOMMENTS][PROF_COMMENT_LEN],
			    const struct profring_prof_stats *st)
{
	snprintf(c[0], PROF_COMMENT_LEN,
		 "profring-prof: %u Hz, %s on signal %u, %s unwinding",
		 session.hz,
		 /* Relaxed: written by start, which the caller follows. */
		 session.wall ? "wall clock (a ticker thread)"
			      : prof_engines_name(atomic_load_explicit(
					&session.counters.engines,
					memory_order_relaxed)),
		 /* Relaxed: written by start, which the caller follows. */
		 atomic_load_explicit(&session.counters.signo,
				      memory_order_relaxed),
		 session.unwinder == PROFRING_PROF_UNWIND_FP ? "frame-pointer"
							     : "libunwind");
	snprintf(c[1], PROF_COMMENT_LEN,
		 "signals %" PRIu64 " = read %" PRIu64 " + lost %" PRIu64
		 " (written %" PRIu64 ", refused %" PRIu64 ")",
		 st->signals, st->read, st->lost, st->written, st->refused);
	snprintf(c[2], PROF_COMMENT_LEN,
		 "threads %" PRIu64 ", stacks %" PRIu64 ", truncated %" PRIu64
		 ", unchecked unwinds %" PRIu64 ", stack table full %" PRIu64,
		 st->threads, st->stacks, st->truncated, st->unwind_unchecked,
		 st->stack_table_full);
}

/*
 * The warning of a heap session whose hooks the program's allocations
 * never reach: another allocator comes first in the lookup order (one
 * preloaded before us, or the program's own).
 */
static void malloc_foreign_line(char *buf, size_t len)
{
	const char *base = strrchr(session.malloc_foreign, '/');

	snprintf(buf, len,
		 "warning: the program's malloc is %s's, not ours: the heap "
		 "profile sees none of its allocations (put "
		 "libprofring-prof.so first in LD_PRELOAD)",
		 base ? base + 1 : session.malloc_foreign);
}

/* The heap profile, from the collector's aggregation. */
static int write_heap(void)
{
	struct prof_agg *agg = prof_collector_agg(session.collector);
	char comment[2][PROF_COMMENT_LEN];
	const char *lines[2] = { comment[0], comment[1] };
	struct prof_heap_counts hc;
	struct prof_profile p;
	int err;

	err = prof_agg_heap_profile(agg, session.heap_rate, NULL, &p);
	if (err)
		return err;
	prof_agg_heap_counts(agg, &hc);
	/* Relaxed: every writer is done (stop waited for them). */
	prof_heap_comment(
		comment[0], sizeof(comment[0]), session.heap_rate, &hc,
		atomic_load_explicit(&session.counters.heap_allocs,
				     memory_order_relaxed) +
			atomic_load_explicit(&session.counters.heap_frees,
					     memory_order_relaxed),
		atomic_load_explicit(&session.counters.heap_refused,
				     memory_order_relaxed),
		atomic_load_explicit(&session.counters.heap_untracked,
				     memory_order_relaxed));
	p.time_nanos = session.start_realtime_ns;
	p.duration_nanos =
		(int64_t)ring_clock_mono_ns() - session.start_mono_ns;
	p.comments = lines;
	p.ncomments = 1;
	if (session.malloc_foreign) {
		malloc_foreign_line(comment[1], sizeof(comment[1]));
		p.ncomments = 2;
	}
	err = prof_pprof_write(&p, NULL, session.heap_output);
	prof_agg_profile_free(&p);
	return err;
}

static int write_outputs(const struct profring_prof_stats *st)
{
	char comments[PROF_NCOMMENTS][PROF_COMMENT_LEN];
	const char *lines[PROF_NCOMMENTS];
	struct prof_profile p;
	int err, herr, i;

	herr = session.heap_output ? write_heap() : 0;
	if (herr && session.verbose)
		fprintf(stderr, "profring-prof: cannot write %s: %s\n",
			session.heap_output, strerror(-herr));
	err = session.lock_on
		      ? prof_lock_write(prof_collector_agg(session.collector),
					&lock_req, &session.counters,
					session.start_realtime_ns,
					(int64_t)ring_clock_mono_ns() -
						session.start_mono_ns,
					session.verbose)
		      : 0;
	herr = herr ? herr : err;
	if (!session.output)
		return herr;
	/* Relaxed: stop stored it (prof_sampler_stop()); 0 in wall mode. */
	prof_agg_set_process_cpu(prof_collector_agg(session.collector),
				 getpid(),
				 atomic_load_explicit(&session.counters.cpu_ns,
						      memory_order_relaxed),
				 1000000000u / session.hz);
	err = prof_collector_profile(session.collector, &p);
	if (err)
		return err;
	format_comments(comments, st);
	for (i = 0; i < PROF_NCOMMENTS; i++)
		lines[i] = comments[i];
	p.ncomments = PROF_NCOMMENTS - 1;
	if (prof_symbolizer_perf_map_comment(p.spaces, p.nspaces,
					     comments[PROF_NCOMMENTS - 1],
					     PROF_COMMENT_LEN))
		p.ncomments = PROF_NCOMMENTS;
	p.period_ns = 1000000000u / session.hz;
	p.wall = session.wall;
	p.time_nanos = session.start_realtime_ns;
	p.duration_nanos =
		(int64_t)ring_clock_mono_ns() - session.start_mono_ns;
	p.comments = lines;
	/* The profile's symbolizer (the process's own) is in p.spaces. */
	err = prof_pprof_write(&p, NULL, session.output);
	if (session.folded) {
		int ferr = prof_folded_write(&p, NULL, session.folded);

		err = err ? err : ferr;
	}
	prof_collector_profile_free(&p);
	return err ? err : herr;
}

static void print_heap_summary(void)
{
	char warning[PROF_COMMENT_LEN];
	struct prof_heap_counts hc;

	if (session.malloc_foreign) {
		malloc_foreign_line(warning, sizeof(warning));
		fprintf(stderr, "profring-prof: %s\n", warning);
	}

	prof_agg_heap_counts(prof_collector_agg(session.collector), &hc);
	fprintf(stderr,
		"profring-prof: heap profile %s: %" PRIu64
		" sampled allocations, %" PRIu64 " of them freed (rate %" PRIu64
		" bytes)\n",
		session.heap_output, hc.allocs, hc.frees, session.heap_rate);
}

static void print_summary(const struct profring_prof_stats *st, int err)
{
	if (session.heap_output)
		print_heap_summary();
	if (!session.output)
		return;
	if (err) {
		fprintf(stderr, "profring-prof: cannot write %s: %s\n",
			session.output, strerror(-err));
		return;
	}
	/* Relaxed: the handlers are done (stop waited for them). */
	if (atomic_load_explicit(&session.counters.taken_over,
				 memory_order_relaxed))
		fprintf(stderr,
			"profring-prof: the program took signal %u for itself "
			"(its own handler, or a mask or wait naming it): "
			"sampling stopped there\n",
			atomic_load_explicit(&session.counters.signo,
					     memory_order_relaxed));
	fprintf(stderr,
		"profring-prof: wrote %s: %" PRIu64 " samples (signals %" PRIu64
		" = read %" PRIu64 " + lost %" PRIu64 "), %" PRIu64
		" thread%s, %" PRIu64 " stacks\n",
		session.output, st->read + st->lost, st->signals, st->read,
		st->lost, st->threads, st->threads == 1 ? "" : "s", st->stacks);
}

/**
 * profring_prof_stop() - stop profiling and write the profile.
 *
 * Return: 0 or -errno; see prof.h.
 */
RING_API int profring_prof_stop(void)
{
	struct profring_prof_stats st;
	int err, werr;
	bool http, periodic;

	/*
	 * The server first, unlocked: its requests take the lock, and its
	 * stop waits for them.
	 */
	pthread_mutex_lock(&session.lock);
	http = session.running && session.owner == getpid() && session.http;
	periodic = session.running && session.owner == getpid() &&
		   session.periodic;
	pthread_mutex_unlock(&session.lock);
	if (http) {
		prof_http_stop();
		prof_serve_session_stop();
	}
	if (periodic) /* its last window written */
		prof_periodic_stop();
	pthread_mutex_lock(&session.lock);
	err = -ESHUTDOWN;
	if (!session.running || session.owner != getpid())
		goto out;
	session.running = false;
	session.http = false;
	session.periodic = false;
	session.malloc_foreign = NULL;
	if (session.heap_on) {
		prof_heap_stop(); /* no allocation touches the ring after this */
		if (prof_malloc_foreign)
			session.malloc_foreign = prof_malloc_foreign();
	}
	if (session.lock_on)
		prof_lock_stop(); /* no lock wait touches the ring after this */
	/* no handler touches the ring after this */
	err = session.output ? prof_sampler_stop() : 0;
	if (err) {
		/* A handler never finished: the ring may hold a reserved
		 * record forever; leak it rather than hang or free it. */
		if (session.verbose)
			fprintf(stderr, "profring-prof: a SIGPROF handler did "
					"not finish; no profile written\n");
		goto out;
	}
	profbuf_close(session.buf);
	err = prof_collector_join(session.collector);
	/*
	 * Before the stats: the ring's lost count includes the heap records
	 * it refused, which are not CPU samples.  Relaxed: every writer is
	 * done (stop waited for them).
	 */
	prof_agg_set_heap_refused(
		prof_collector_agg(session.collector),
		atomic_load_explicit(&session.counters.heap_refused,
				     memory_order_relaxed));
	memset(&st, 0, sizeof(st));
	prof_sampler_add_stats(&st, &session.counters);
	prof_collector_add_stats(session.collector, &st);
	session.stats = st;
	/* Even after a collector error: what it gathered is worth writing. */
	werr = write_outputs(&st);
	err = err ? err : werr;
	if (session.verbose)
		print_summary(&st, werr);
	session_release();
out:
	pthread_mutex_unlock(&session.lock);
	return err;
}

/**
 * profring_prof_get_stats() - the current or last session's accounting.
 * @st: filled in.
 *
 * Return: 0 or -EINVAL.
 */
RING_API int profring_prof_get_stats(struct profring_prof_stats *st)
{
	if (!st)
		return -EINVAL;
	pthread_mutex_lock(&session.lock);
	if (session.running) {
		memset(st, 0, sizeof(*st));
		prof_sampler_add_stats(st, &session.counters);
	} else {
		*st = session.stats;
	}
	pthread_mutex_unlock(&session.lock);
	return 0;
}

/* ---- for the HTTP server's profiles (serve.c) ---- */

/**
 * prof_session_claim_cpu() - take the sampler for an HTTP request's CPU
 * profile (or a periodic window's), if no session profiles the CPU and no
 * other request has it.
 * @collector_tid: the session's collector thread (it blocks every signal:
 *	a wall window must not signal it), 0 if none.
 *
 * Return: 0 (release it with prof_session_release_cpu()) or -EBUSY.
 */
int prof_session_claim_cpu(pid_t *collector_tid)
{
	int err = -EBUSY;

	*collector_tid = 0;
	pthread_mutex_lock(&session.lock);
	if (!session.cpu_window &&
	    !(session.running && session.owner == getpid() && session.output)) {
		session.cpu_window = true;
		if (session.running && session.owner == getpid() &&
		    session.collector)
			*collector_tid = prof_collector_tid(session.collector);
		err = 0;
	}
	pthread_mutex_unlock(&session.lock);
	return err;
}

void prof_session_release_cpu(void)
{
	pthread_mutex_lock(&session.lock);
	session.cpu_window = false;
	pthread_mutex_unlock(&session.lock);
}

struct heap_call {
	int (*fn)(const struct prof_heap_view *v, void *arg);
	void *arg;
	struct prof_heap_view v;
};

static uint64_t count(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static int heap_call(struct prof_agg *a, void *arg)
{
	struct heap_call *c = arg;

	c->v.agg = a;
	/* Relaxed: counts for a report, read while writers run. */
	c->v.written = count(&session.counters.heap_allocs) +
		       count(&session.counters.heap_frees);
	c->v.refused = count(&session.counters.heap_refused);
	c->v.untracked = count(&session.counters.heap_untracked);
	prof_agg_set_heap_refused(a, c->v.refused);
	return c->fn(&c->v, c->arg);
}

/**
 * prof_session_heap() - call @fn with the running session's heap
 * aggregation (the collector waits meanwhile), its rate and the writers'
 * counts.
 *
 * Return: what @fn returned; -ENOENT if no session samples the heap.
 */
int prof_session_heap(int (*fn)(const struct prof_heap_view *v, void *arg),
		      void *arg)
{
	struct heap_call c = { .fn = fn, .arg = arg };
	int err = -ENOENT;

	pthread_mutex_lock(&session.lock);
	if (session.running && session.owner == getpid() && session.heap_on) {
		c.v.rate = session.heap_rate;
		c.v.start_realtime_ns = session.start_realtime_ns;
		c.v.start_mono_ns = session.start_mono_ns;
		err = prof_collector_with_agg(session.collector, heap_call, &c);
	}
	pthread_mutex_unlock(&session.lock);
	return err;
}

/* ---- LD_PRELOAD: PROFRING_PROF=file and friends (PROFRING_PROF_ENV_*) ---- */

/*
 * Children inherit LD_PRELOAD, not the session: they must not overwrite
 * our output (nor try our HTTP port).  Every variable of prof.h's list is named PROFRING_PROF or
 * PROFRING_PROF_*: all such entries go.  They are taken out of environ by
 * hand: a program may define its own unsetenv() that does nothing this
 * early (bash does).
 */
static bool is_var(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(entry, name, n) && entry[n] == '=';
}

/*
 * @keep_http: the HTTP server runs: PROFRING_PROF_HTTP stays, as
 * "SPEC@PID" (the program, after an exec, serves again: a wrapper script
 * that execs the real program; a child, whose pid differs, does not), and
 * so does PROFRING_PROF_HEAP_RATE.
 */
static void preload_unset_env(bool keep_http)
{
	static const char prefix[] = PROFRING_PROF_ENV_OUTPUT;
	static char http_entry[160];
	char **from, **to;

	for (from = to = environ; *from; from++) {
		if (keep_http && is_var(*from, PROFRING_PROF_ENV_HTTP)) {
			const char *v = *from + sizeof(PROFRING_PROF_ENV_HTTP);
			size_t n = strcspn(v, "@");

			snprintf(http_entry, sizeof(http_entry), "%s=%.*s@%d",
				 PROFRING_PROF_ENV_HTTP, (int)n, v,
				 (int)getpid());
			*to++ = http_entry;
			continue;
		}
		if ((keep_http && is_var(*from, PROFRING_PROF_ENV_HEAP_RATE)) ||
		    strncmp(*from, prefix, sizeof(prefix) - 1) ||
		    ((*from)[sizeof(prefix) - 1] != '=' &&
		     (*from)[sizeof(prefix) - 1] != '_'))
			*to++ = *from;
	}
	*to = NULL;
}

/* A child forked while start or stop held the lock must not inherit it. */
static void session_after_fork_in_child(void)
{
	pthread_mutex_init(&session.lock, NULL);
	if (session.running && session.heap_on)
		prof_heap_after_fork_child(false, NULL);
	if (session.running && session.lock_on)
		prof_lock_after_fork_child(false, NULL);
	session.http = false; /* its threads stayed in the parent */
	session.periodic = false;
	session.cpu_window = false;
}

static bool env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

/*
 * Two of the variables' files are one, however spelt (options.c): one
 * would overwrite the other.  @o from prof_opts_from_env(), lock_req's
 * paths from prof_lock_req_from_env().
 */
static int env_outputs_clash(const struct profring_prof_opts *o, char *err,
			     size_t len)
{
	const struct prof_output_name names[] = {
		{ PROFRING_PROF_ENV_OUTPUT "=", o->output, o->output },
		{ PROFRING_PROF_ENV_FOLDED "=", o->folded, o->folded },
		{ PROFRING_PROF_ENV_HEAP "=", o->heap_output, o->heap_output },
		{ PROF_LOCK_ENV_MUTEX "=", getenv(PROF_LOCK_ENV_MUTEX),
		  lock_req.mutex },
		{ PROF_LOCK_ENV_BLOCK "=", getenv(PROF_LOCK_ENV_BLOCK),
		  lock_req.block },
	};

	return prof_outputs_clash(names, sizeof(names) / sizeof(names[0]), err,
				  len);
}

/*
 * Under `profring-prof record` the agent attaches to the launcher
 * (agent.c); otherwise PROFRING_PROF starts an in-process session.  A bad
 * variable gets one line naming it, and the program runs unprofiled.
 */
__attribute__((constructor)) static void prof_library_init(void)
{
	struct profring_prof_opts o;
	char msg[256];
	int err;

	prof_sampler_init_process(); /* the main thread's stack bounds */
	pthread_atfork(NULL, NULL, session_after_fork_in_child);
	if (prof_agent_init())
		return;
	/* An empty file name is asked too: one line (options.c) says so. */
	if (!env_set(PROFRING_PROF_ENV_OUTPUT) &&
	    !getenv(PROFRING_PROF_ENV_HEAP) &&
	    !env_set(PROFRING_PROF_ENV_HTTP) && !getenv(PROF_LOCK_ENV_MUTEX) &&
	    !getenv(PROF_LOCK_ENV_BLOCK))
		return;
	if (prof_opts_from_env(&o, msg, sizeof(msg)) ||
	    prof_lock_req_from_env(&lock_req, msg, sizeof(msg)) ||
	    env_outputs_clash(&o, msg, sizeof(msg))) {
		fprintf(stderr, "profring-prof: %s; not profiling\n", msg);
		prof_lock_req_free(&lock_req);
		preload_unset_env(false);
		return;
	}
	/*
	 * Only a server was asked for, and it is another process's (a
	 * wrapper's that forked us: "SPEC@PID" names it): nothing to do here,
	 * no file to write.
	 */
	if (!o.output && !o.heap_output && !o.http &&
	    !prof_lock_req_on(&lock_req)) {
		preload_unset_env(false);
		return;
	}
	session.verbose = true;
	err = profring_prof_start(&o); /* copies the strings */
	/* No server (http.c said why): what else was asked goes on. */
	if (err && session.http_failed && (o.output || o.heap_output)) {
		o.http = NULL;
		err = profring_prof_start(&o);
	}
	preload_unset_env(!err && session.http);
	if (err && !session.http_failed)
		fprintf(stderr, "profring-prof: cannot start: %s\n",
			strerrordesc_np(-err));
}

/* At exit: write the profile of a session still running. */
__attribute__((destructor)) static void prof_library_fini(void)
{
	profring_prof_stop();
}
