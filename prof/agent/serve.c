// SPDX-License-Identifier: MIT
/*
 * prof/agent/serve.c - what an in-process session's HTTP server serves
 * (serve.h's prof_serve_session_ops), made in memory while the program
 * runs.
 *
 * A CPU profile is a session of its own for the request's window: the
 * sampler claimed from prof.c (one holder at a time: the session's CPU
 * profile or one request), a ring and a collector of its own, sampling
 * for the window, then the ring drained and the profile encoded.  The
 * session's heap sampling, if any, goes on beside it in its own ring.  A
 * wall-clock profile (/debug/pprof/wall) is the same with the sampler in
 * wall mode (wall.c).
 *
 * A heap profile is made from the session's heap aggregation, lent by
 * prof_session_heap() while its collector waits (serve_agg.c).  /symbol
 * reads this process's mappings (a symbolizer made at the first request,
 * kept until the server stops).
 */
#include "prof/agent/serve.h"
#include "prof/common/aggregate.h"
#include "prof/agent/collector.h"
#include "prof/agent/sampler.h"
#include "prof/wire/stream.h"
#include "pprof/pprof.h"
#include "pprof/symbolize.h"

#include <profring/prof.h>

#include "ring/clock.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_WORDS ((size_t)1 << 18) /* 2 MiB of ring per CPU request */
#define COMMENT_LEN 256

static int encode_cpu(struct prof_collector *c, struct prof_counters *k,
		      unsigned int hz, bool wall, int64_t t0, int64_t m0,
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
		 "profring-prof /debug/pprof/%s: %u Hz; signals %" PRIu64
		 " = read %" PRIu64 " + lost %" PRIu64 "; threads %" PRIu64,
		 wall ? "wall" : "profile", hz, st.signals, st.read, st.lost,
		 st.threads);
	p.period_ns = 1000000000u / hz;
	p.wall = wall;
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
		      pid_t session_tid, unsigned int seconds, unsigned int hz,
		      bool wall, const _Atomic bool *quit, bool partial,
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
		.wall = wall,
		/* We wait it out; the session's collector blocks signals. */
		.own_tids = { (pid_t)syscall(SYS_gettid), session_tid },
	};
	int64_t t0 = (int64_t)ring_clock_ns(CLOCK_REALTIME);
	int64_t m0 = (int64_t)ring_clock_mono_ns();
	int err, werr;

	memset(&counters, 0, sizeof(counters));
	err = prof_sampler_start(&cfg);
	if (err)
		return err;
	werr = prof_serve_wait(seconds, quit);
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
	return err ? err : encode_cpu(c, &counters, hz, wall, t0, m0, out);
}

static int serve_window(unsigned int seconds, unsigned int hz, bool wall,
			const _Atomic bool *quit, bool partial,
			struct prof_blob *out)
{
	struct prof_collector *c;
	struct profbuf *buf;
	bool leak = false, joined = false;
	pid_t session_tid;
	int err = prof_session_claim_cpu(&session_tid);

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
	err = cpu_window(buf, c, session_tid, seconds, hz, wall, quit, partial,
			 out, &leak, &joined);
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

int prof_serve_cpu(unsigned int seconds, unsigned int hz,
		   const _Atomic bool *quit, bool partial,
		   struct prof_blob *out)
{
	return serve_window(seconds, hz, false, quit, partial, out);
}

int prof_serve_wall(unsigned int seconds, unsigned int hz,
		    const _Atomic bool *quit, bool partial,
		    struct prof_blob *out)
{
	return serve_window(seconds, hz, true, quit, partial, out);
}

/* ---- the session's server ----------------------------------------------- */

static struct {
	struct prof_symbolizer *sym; /* /symbol's, made on first use */
	pthread_mutex_t lock;
} symbols = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int session_cpu(unsigned int seconds, const _Atomic bool *quit,
		       struct prof_blob *out)
{
	return prof_serve_cpu(seconds, PROFRING_PROF_DEFAULT_HZ, quit, false,
			      out);
}

static int session_wall(unsigned int seconds, const _Atomic bool *quit,
			struct prof_blob *out)
{
	return prof_serve_wall(seconds, PROFRING_PROF_DEFAULT_WALL_HZ, quit,
			       false, out);
}

static int session_heap(bool allocs, unsigned int seconds,
			const _Atomic bool *quit, struct prof_blob *out)
{
	return prof_serve_heap(prof_session_heap, allocs, seconds, quit, out);
}

static pid_t session_pid(void)
{
	return getpid();
}

static int session_symbols(const uint64_t *pcs, size_t n, FILE *out)
{
	int err = 0;

	pthread_mutex_lock(&symbols.lock);
	if (!symbols.sym)
		symbols.sym = prof_symbolizer_new();
	if (!symbols.sym)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < n; i++) {
		const char *name =
			prof_symbolize(symbols.sym, (uintptr_t)pcs[i], NULL);

		if (name)
			fprintf(out, "%#llx %s\n", (unsigned long long)pcs[i],
				name);
	}
	pthread_mutex_unlock(&symbols.lock);
	return err;
}

/* The server stopped: the next one reads the mappings again. */
void prof_serve_session_stop(void)
{
	pthread_mutex_lock(&symbols.lock);
	prof_symbolizer_free(symbols.sym);
	symbols.sym = NULL;
	pthread_mutex_unlock(&symbols.lock);
}

const struct prof_http_ops prof_serve_session_ops = {
	.cpu = session_cpu,
	.wall = session_wall,
	.heap = session_heap,
	.pid = session_pid,
	.symbols = session_symbols,
	.cpu_off = "CPU profiling is off\n",
	.wall_off = "wall-clock profiling is off\n",
	.heap_off = "heap profiling is off: set PROFRING_PROF_HEAP_RATE "
		    "(or PROFRING_PROF_HEAP) to enable it\n",
};
