// SPDX-License-Identifier: MIT
/*
 * bench/sigprof_bench.c - profbuf's write inside a SIGPROF handler.
 *
 * What it measures.
 *
 * The calling thread busy-loops for --seconds under a 1 kHz
 * CLOCK_MONOTONIC timer aimed at it (timer_create + SIGEV_THREAD_ID).  The
 * handler reads the clock (on x86-64 the TSC, fenced with LFENCE on both
 * sides and calibrated against CLOCK_MONOTONIC over the run;
 * clock_gettime elsewhere), writes one 34-word record (hdrsize 2, the
 * record of scaling_bench: harness.h's bench_rec) with profbuf_write() on
 * odd signals and nothing on even ones, and reads the clock again.  Min /
 * median / max over all signals of each kind; the difference of the
 * medians is what a sample adds to a handler.  One row, "sigprof 34w".
 *
 * Every result is checked, and any mismatch aborts the benchmark: every
 * handler write succeeded and was read back intact, with no overflow.
 *
 * Why the anchor is fair.
 *
 *  - handler: the floor is the same handler with the same two clock reads
 *    and nothing between them.  Info.
 *
 * Caveats, so that the numbers are read right.
 *
 *  - The handler runs once a millisecond, so the write path, the ring
 *    and the record are mostly out of the caches: the figure is a
 *    profiler's real per-sample cost, not profbuf_bench's hot loop.  Its
 *    max includes any interrupt or preemption inside the handler.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <profring/profbuf.h>

#include "harness.h"

#define HDRSIZE BENCH_REC_HDRSIZE
#define WORDS BENCH_REC_WORDS
#define NSTK BENCH_REC_NSTK
#define SIG_HZ 1000
#define SIG_MAX (1u << 15) /* signals measured at most */

/*
 * struct sig_state - the handler's state (it gets no argument).
 * @pb:       the ring it writes to
 * @use_tsc:  read the TSC (else CLOCK_MONOTONIC)
 * @stop:     ignore further signals
 * @n:        signals measured so far (< SIG_MAX)
 * @extra:    signals beyond SIG_MAX or after @stop
 * @bad:      writes that did not return 0
 * @dt:       per signal: clock ticks between the two reads
 */
struct sig_state {
	struct profbuf *pb;
	bool use_tsc;
	volatile sig_atomic_t stop;
	volatile uint32_t n;
	volatile uint32_t extra;
	volatile uint32_t bad;
	uint64_t dt[SIG_MAX];
};

static struct sig_state sig;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * sig_clock() - the handler's clock: on x86-64 RDTSC between two LFENCEs,
 * so that the write cannot move across either read; else CLOCK_MONOTONIC.
 */
static inline uint64_t sig_clock(void)
{
#if defined(__x86_64__)
	uint64_t t;

	if (sig.use_tsc) {
		__builtin_ia32_lfence();
		t = __builtin_ia32_rdtsc();
		__builtin_ia32_lfence();
		return t;
	}
#endif
	return bench_now_ns();
}

/*
 * sig_handler() - odd signals time a profbuf_write(), even ones nothing
 * between the same two clock reads.
 */
static void sig_handler(int signo)
{
	int saved = errno;
	uint32_t n = sig.n;
	uint64_t t0, t1;
	int rc = 0;

	(void)signo;
	if (sig.stop || n >= SIG_MAX) {
		sig.extra++;
		return;
	}
	t0 = sig_clock();
	atomic_signal_fence(memory_order_seq_cst);
	if (n & 1)
		rc = profbuf_write(sig.pb, &sig, (int64_t)t0, bench_rec.hdr,
				   HDRSIZE, bench_rec.stk, NSTK);
	atomic_signal_fence(memory_order_seq_cst);
	t1 = sig_clock();
	sig.dt[n] = t1 - t0;
	sig.bad += rc != 0;
	sig.n = n + 1;
	errno = saved;
}

/*
 * sig_timer_start() - a CLOCK_MONOTONIC timer sending SIGPROF to the
 * calling thread at SIG_HZ (as testing/harness.c stress_timer_start()).
 */
static int sig_timer_start(timer_t *id)
{
	long period = 1000000000L / SIG_HZ;
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID,
				.sigev_signo = SIGPROF };
	struct itimerspec its = {
		.it_interval = { 0, period },
		.it_value = { 0, period },
	};

	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, id))
		return -errno;
	if (timer_settime(*id, 0, &its, NULL)) {
		int err = errno;

		timer_delete(*id);
		return -err;
	}
	return 0;
}

/* Spin until @deadline (CLOCK_MONOTONIC ns), signals arriving. */
static void sig_busy_loop(uint64_t deadline)
{
	volatile uint64_t spin = 0;

	while (bench_now_ns() < deadline)
		for (int i = 0; i < 1000; i++)
			spin = spin + 1;
}

/*
 * sig_collect() - run the timer for --seconds.
 * @o:       options
 * @per_ns:  filled in: nanoseconds per clock tick
 *
 * Return: 0, or -1.
 */
static int sig_collect(const struct bench_opts *o, double *per_ns)
{
	struct sigaction sa = { .sa_handler = sig_handler,
				.sa_flags = SA_RESTART };
	uint64_t ns0, tsc0, ns1;
	timer_t id;
	int rc;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL))
		return bench_fail("sigaction", errno);
	ns0 = bench_now_ns();
	tsc0 = bench_tsc();
	rc = sig_timer_start(&id);
	if (rc)
		return bench_fail("timer_create", rc);
	sig_busy_loop(ns0 + (uint64_t)(o->seconds * 1e9));
	sig.stop = 1;
	timer_delete(id);
	signal(SIGPROF, SIG_IGN); /* a signal still pending is dropped */
	ns1 = bench_now_ns();
	*per_ns = sig.use_tsc
			  ? (double)(ns1 - ns0) / (double)(bench_tsc() - tsc0)
			  : 1.0;
	return 0;
}

/*
 * sig_stats() - the samples of one parity as stats, in ns.
 * @odd: the profbuf_write samples (else the empty ones)
 * @tmp: scratch, SIG_MAX / 2 entries
 */
static void sig_stats(bool odd, double per_ns, uint64_t *tmp,
		      struct bench_stats *st)
{
	size_t k = 0;

	for (uint32_t i = odd; i < sig.n; i += 2)
		tmp[k++] = sig.dt[i];
	qsort(tmp, k, sizeof(*tmp), cmp_u64);
	memset(st, 0, sizeof(*st));
	st->ops = k;
	st->min = (double)tmp[0] * per_ns;
	st->max = (double)tmp[k - 1] * per_ns;
	st->median = (double)(k % 2 ? tmp[k / 2]
				    : (tmp[k / 2 - 1] + tmp[k / 2]) / 2) *
		     per_ns;
	st->tsc_median = sig.use_tsc ? st->median / per_ns : 0;
}

/* Every handler write succeeded and comes back intact. */
static int sig_check_ring(void)
{
	struct profbuf_read rd;
	uint64_t got = 0, ovf = 0;
	int rc;

	if (sig.bad)
		return bench_fail("profbuf_write in the handler",
				  -(int)sig.bad);
	do {
		rc = profbuf_read(sig.pb, PROFBUF_NONBLOCKING, &rd);
		if (!rc)
			rc = bench_rec_account(&rd, &got, &ovf);
		if (rc)
			return bench_fail("profbuf_read after the handler", rc);
	} while (rd.ndata);
	if (got == sig.n / 2 && !ovf)
		return 0;
	fprintf(stderr, "sigprof_bench: handler wrote %u, read %llu + %llu\n",
		sig.n / 2, (unsigned long long)got, (unsigned long long)ovf);
	return -1;
}

/**
 * sigprof() - measure and report the write cost inside a handler.
 * @o: options; the timer runs for @o->seconds
 *
 * Return: 0, or -1 if anything failed.
 */
static int sigprof(const struct bench_opts *o)
{
	struct bench_stats st[2];
	uint64_t *tmp = NULL;
	double per_ns = 1.0;
	char note[96];
	int rc = -1;

#if defined(__x86_64__)
	sig.use_tsc = bench_tsc() != 0;
#endif
	sig.pb = profbuf_new(HDRSIZE,
			     bench_round_pow2(SIG_MAX / 2 * WORDS + WORDS),
			     SIG_MAX);
	if (!sig.pb)
		return bench_fail("profbuf_new", errno);
	if (sig_collect(o, &per_ns) || sig_check_ring())
		goto out;
	if (sig.n < 4) {
		fprintf(stderr, "sigprof_bench: only %u SIGPROFs arrived\n",
			sig.n);
		goto out;
	}
	tmp = malloc(SIG_MAX / 2 * sizeof(*tmp));
	if (!tmp)
		goto out;
	sig_stats(true, per_ns, tmp, &st[0]);
	sig_stats(false, per_ns, tmp, &st[1]);
	snprintf(note, sizeof(note),
		 "info; +%.1f ns per sample (medians), %u signals",
		 st[0].median - st[1].median, sig.n);
	bench_info_row("sigprof 34w", BENCH_NS_PER_OP, &st[0], "handler+write",
		       &st[1], "handler", note);
	rc = 0;
out:
	free(tmp);
	profbuf_free(sig.pb);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o;

	bench_parse_args(argc, argv, &o);
	bench_rec_init();
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "sigprof_bench: cannot pin to CPU 0\n");
	bench_report_begin("sigprof_bench", &o);
	if (sigprof(&o))
		return 1;
	bench_report_note("SIGPROF: %d Hz CLOCK_MONOTONIC timer on a busy "
			  "thread for %g s; ns between two clock reads in "
			  "the handler, with and without one profbuf_write "
			  "of %d words, min / median / max over all signals.",
			  SIG_HZ, o.seconds, WORDS);
	bench_report_end();
	return 0;
}
