// SPDX-License-Identifier: MIT
/*
 * sample_cost_bench.c - what one CPU sample costs the thread it samples,
 * per-thread perf_event counters against POSIX CPU-time timers, at 999 Hz.
 *
 *	sample_cost_bench [--reps N]
 *
 * The same fixed loop (WORK additions on this thread) runs unprofiled,
 * then under profring_prof_start() with --timer posix, then with the
 * default per-thread perf counters, interleaved by the harness, at HZ
 * (10 kHz, the most the profiler takes: a sample costs microseconds, so
 * at 99 Hz its cost is lost in the machine's noise; POSIX timers fire at
 * the kernel's tick whatever is asked, so they take fewer samples).  Timed:
 * the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) over the loop,
 * which holds the signals' delivery, our handler and its stack walk, and
 * the loop itself; start, stop and the profile's writing are outside it
 * (the collector thread's CPU is not this thread's).  Each row's ratio is
 * the profiled loop over the plain one; the note divides the difference
 * of the minima (the runs least disturbed by the machine's other work) by
 * the median number of signals a run took: the cost of one sample to the
 * sampled thread.
 */
#include "bench/harness.h"

#include <profring/prof.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORK 300000000ul
#define HZ 10000

static volatile unsigned long sink;
static char out_path[64];

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void work(void)
{
	for (unsigned long i = 0; i < WORK; i++)
		sink += i;
}

struct mode {
	int profiled;
	enum profring_prof_timer timer;
	uint64_t signals[64]; /* per repetition, for the note */
	unsigned int runs;
};

static int run_mode(void *ctx, struct bench_sample *s)
{
	struct mode *m = ctx;
	struct profring_prof_opts o = { .output = out_path,
					.hz = HZ,
					.timer = m->timer };
	struct profring_prof_stats st;
	uint64_t t0;

	if (m->profiled && profring_prof_start(&o)) {
		fprintf(stderr, "sample_cost_bench: cannot start\n");
		return -1;
	}
	t0 = thread_cpu_ns();
	work();
	s->ns += thread_cpu_ns() - t0;
	s->ops += 1;
	if (m->profiled) {
		profring_prof_stop();
		profring_prof_get_stats(&st);
		m->signals[m->runs++ % 64] = st.signals;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median_signals(struct mode *m)
{
	unsigned int n = m->runs < 64 ? m->runs : 64;

	qsort(m->signals, n, sizeof(m->signals[0]), cmp_u64);
	return n ? m->signals[n / 2] : 0;
}

static void row(const char *name, struct bench_stats *ours,
		const char *ours_name, struct bench_stats *plain,
		struct mode *m)
{
	char note[160];
	uint64_t sig = median_signals(m);

	snprintf(note, sizeof(note),
		 "%llu signals a run (%.0f per CPU-s); %.2f us of the "
		 "thread's CPU per sample",
		 (unsigned long long)sig, sig / (ours->median / 1e9),
		 sig ? (ours->min - plain->min) / 1e3 / (double)sig : 0);
	bench_info_row(name, BENCH_NS_PER_OP, ours, ours_name, plain,
		       "unprofiled loop", note);
}

int main(int argc, char **argv)
{
	struct mode plain = { 0 };
	struct mode posix = { .profiled = 1,
			      .timer = PROFRING_PROF_TIMER_POSIX };
	struct mode perf = { .profiled = 1,
			     .timer = PROFRING_PROF_TIMER_THREAD };
	struct bench_case cases[] = {
		{ "unprofiled loop", run_mode, &plain },
		{ "POSIX timers, 10 kHz", run_mode, &posix },
		{ "perf counters, 10 kHz", run_mode, &perf },
	};
	struct bench_stats st[3];
	struct bench_opts o;
	int rc = 0;

	bench_parse_args(argc, argv, &o);
	snprintf(out_path, sizeof(out_path), "/tmp/sample_cost_%d.pb.gz",
		 (int)getpid());
	bench_report_begin("sample_cost_bench", &o);
	if (bench_run_cases(cases, 3, &o, st)) {
		rc = bench_fail("a case", EIO);
		goto out;
	}
	row("sample cost, POSIX timers 10 kHz", &st[1], cases[1].name, &st[0],
	    &posix);
	row("sample cost, perf counters 10 kHz", &st[2], cases[2].name, &st[0],
	    &perf);
	bench_report_end();
out:
	unlink(out_path);
	return rc;
}
