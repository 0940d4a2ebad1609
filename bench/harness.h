/* SPDX-License-Identifier: MIT */
/*
 * bench/harness.h - the shared benchmark harness.
 *
 * A benchmark is a set of cases.  A case is a function that performs one
 * repetition of its workload and accounts, through a bench_timer, only
 * the part it wants timed (so that set-up, draining and checking stay
 * outside the measurement).  The harness runs every case of a group
 * interleaved - warm-up runs first, then repetition 1 of each case, then
 * repetition 2, ... with the order rotated every repetition - so that a
 * case and its anchor see the same machine state (frequency, noise,
 * neighbours), and reduces the repetitions to min / median / max ns per
 * operation.
 *
 * Results are printed as a table with one row per comparison (ours
 * against an anchor, their ratio and the goal) and appended to
 * bench/results/latest.md and bench/results/latest.csv.  The first
 * program of a run truncates those files; a program started with the
 * environment variable BENCH_APPEND set appends to them instead, so that
 * several benchmark programs can share one report.
 *
 * It also holds what more than one benchmark program needs: an error
 * message in the program's name (bench_fail()), a row without a goal
 * (bench_info_row()), and the 34-word profbuf record that scaling_bench
 * and sigprof_bench write and check (bench_rec).
 */
#ifndef PROFRING_BENCH_HARNESS_H
#define PROFRING_BENCH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/*
 * struct bench_opts - command line options shared by every benchmark.
 * @reps:    timed repetitions of each case (--reps)
 * @warmup:  untimed repetitions of each case before them
 * @seconds: duration of one repetition of a timed-duration case
 *           (--seconds)
 * @batch:   operations per timed batch (--batch)
 * @pin:     pin threads to CPUs (--pin)
 * @noise:   run a CPU hog on the last CPU while the benchmark runs
 *           (--noise): bench_parse_args() starts it, exit stops it
 */
struct bench_opts {
	unsigned int reps;
	unsigned int warmup;
	double seconds;
	unsigned int batch;
	bool pin;
	bool noise;
};

/*
 * struct bench_sample - what one repetition of a case measured.
 * @ns:   timed nanoseconds
 * @tsc:  timed time-stamp-counter ticks (0 where there is no TSC)
 * @ops:  operations done in the timed region
 * @lost: operations that failed (e.g. a full ring), not in @ops
 */
struct bench_sample {
	uint64_t ns;
	uint64_t tsc;
	uint64_t ops;
	uint64_t lost;
};

/*
 * struct bench_case - one workload.
 * @name: short name for the report
 * @run:  performs one repetition, adding to the sample; returns 0, or -1
 *        after printing why (the benchmark then stops)
 * @ctx:  passed to @run
 */
struct bench_case {
	const char *name;
	int (*run)(void *ctx, struct bench_sample *s);
	void *ctx;
};

/*
 * struct bench_stats - a case over its repetitions.
 * @min, @median, @max: ns per operation
 * @tsc_median:         TSC ticks per operation, median (0 without TSC)
 * @ops, @lost:         totals over the timed repetitions
 */
struct bench_stats {
	double min;
	double median;
	double max;
	double tsc_median;
	uint64_t ops;
	uint64_t lost;
};

/*
 * struct bench_timer - the start of a timed region.
 */
struct bench_timer {
	uint64_t ns;
	uint64_t tsc;
};

enum bench_unit {
	BENCH_NS_PER_OP, /* lower is better */
	BENCH_MOPS, /* million operations per second, higher is better */
};

/*
 * struct bench_row - one line of the report: ours against an anchor.
 * @name:        the comparison, e.g. "write 34w"
 * @unit:        how both values are shown and the ratio computed
 * @ours, @anchor:  the stats of the two cases
 * @ours_name, @anchor_name:  their case names
 * @goal_ratio:  bound on ours / anchor (in @unit)
 * @goal_le:     true: the goal is ratio <= @goal_ratio; false: >=
 * @note:        free text for the last column (may be NULL)
 */
struct bench_row {
	const char *name;
	enum bench_unit unit;
	const struct bench_stats *ours;
	const char *ours_name;
	const struct bench_stats *anchor;
	const char *anchor_name;
	double goal_ratio;
	bool goal_le;
	const char *note;
};

void bench_parse_args(int argc, char **argv, struct bench_opts *o);
uint64_t bench_now_ns(void);
int bench_ncpus(void);
int bench_pin_cpu(int cpu);
int bench_run_cases(const struct bench_case *cases, size_t n,
		    const struct bench_opts *o, struct bench_stats *st);
void bench_report_begin(const char *program, const struct bench_opts *o);
bool bench_report_row(const struct bench_row *row);
void bench_report_note(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
void bench_report_end(void);
void bench_info_row(const char *name, enum bench_unit unit,
		    const struct bench_stats *ours, const char *ours_name,
		    const struct bench_stats *anchor, const char *anchor_name,
		    const char *note);
int bench_fail(const char *what, int err);
uint32_t bench_round_pow2(size_t n);

/* ---- the 34-word profbuf record of scaling_bench and sigprof_bench ---- */

#define BENCH_REC_HDRSIZE 2
#define BENCH_REC_WORDS 34 /* len, time, 2 header words, 30 PCs */
#define BENCH_REC_NSTK (BENCH_REC_WORDS - 2 - BENCH_REC_HDRSIZE)

_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "64-bit stacks only");

/*
 * struct bench_rec - the record every writer writes (bench_rec_init()).
 * @hdr: header words (nonzero)
 * @stk: stack words
 */
struct bench_rec {
	uint64_t hdr[BENCH_REC_HDRSIZE];
	uintptr_t stk[BENCH_REC_NSTK];
};

extern struct bench_rec bench_rec;

struct profbuf_read;

void bench_rec_init(void);
int bench_rec_account(const struct profbuf_read *rd, uint64_t *delivered,
		      uint64_t *ovf);

/**
 * bench_rec_fill() - lay out the record in @d: len, time, header, stack.
 * @d:   destination, BENCH_REC_WORDS words
 * @now: its time stamp
 */
static inline void bench_rec_fill(uint64_t *d, uint64_t now)
{
	d[0] = BENCH_REC_WORDS;
	d[1] = now;
	memcpy(d + 2, bench_rec.hdr, sizeof(bench_rec.hdr));
	memcpy(d + 2 + BENCH_REC_HDRSIZE, bench_rec.stk, sizeof(bench_rec.stk));
}

/**
 * bench_rec_ok() - whether @d holds the record (any time stamp).
 * @d: BENCH_REC_WORDS words, laid out as by bench_rec_fill()
 */
static inline bool bench_rec_ok(const uint64_t *d)
{
	return d[0] == BENCH_REC_WORDS && d[2] == bench_rec.hdr[0] &&
	       d[3] == bench_rec.hdr[1] && d[4] == bench_rec.stk[0] &&
	       d[BENCH_REC_WORDS - 1] == bench_rec.stk[BENCH_REC_NSTK - 1];
}

/**
 * bench_tsc() - the time-stamp counter, or 0 where there is none.
 *
 * On x86 this is RDTSC: constant-rate reference ticks, not core cycles.
 */
static inline uint64_t bench_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

/**
 * bench_timer_start() - open a timed region.
 * @t: filled in with the current time
 */
static inline void bench_timer_start(struct bench_timer *t)
{
	t->tsc = bench_tsc();
	t->ns = bench_now_ns();
}

/**
 * bench_timer_stop() - close a timed region and account it.
 * @t:   the region's start
 * @s:   the sample to add to
 * @ops: operations done in the region
 */
static inline void bench_timer_stop(const struct bench_timer *t,
				    struct bench_sample *s, uint64_t ops)
{
	uint64_t ns = bench_now_ns();

	s->tsc += bench_tsc() - t->tsc;
	s->ns += ns - t->ns;
	s->ops += ops;
}

#endif /* PROFRING_BENCH_HARNESS_H */
