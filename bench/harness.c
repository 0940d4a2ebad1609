// SPDX-License-Identifier: MIT
/*
 * bench/harness.c - the shared benchmark harness (see harness.h).
 *
 * It measures nothing of its own; it times what the cases mark as timed,
 * runs the cases of a group interleaved so that ours and its anchors are
 * measured under the same conditions, and reports min / median / max over
 * the repetitions.  The timer is CLOCK_MONOTONIC (vDSO, tens of ns per
 * call); cases should time batches long enough that one clock read per
 * batch is negligible - the header line prints what it costs here.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <profring/profbuf.h>

#include "harness.h"

#define RESULTS_DIR "bench/results"

static FILE *report_md;
static FILE *report_csv;
static const char *report_program;
static bool report_noted;

/**
 * bench_now_ns() - CLOCK_MONOTONIC in nanoseconds.
 */
uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/**
 * bench_ncpus() - the number of online CPUs, at least 1.
 */
int bench_ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

/**
 * bench_pin_cpu() - pin the calling thread to one CPU.
 * @cpu: CPU number, taken modulo the number of online CPUs
 *
 * Return: 0, or a negative errno.
 */
int bench_pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % bench_ncpus(), &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void usage(const char *prog, int status)
{
	fprintf(status ? stderr : stdout,
		"usage: %s [--reps N] [--seconds S] [--batch K] [--pin] "
		"[--noise]\n"
		"  --reps N     timed repetitions of every case (default 5)\n"
		"  --seconds S  duration of each timed-duration run (default 1)\n"
		"  --batch K    operations per timed batch (default 128)\n"
		"  --pin        pin threads to CPUs\n"
		"  --noise      a CPU hog on the last CPU while it runs\n",
		prog);
	exit(status);
}

static unsigned long parse_count(const char *prog, const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v == 0 || v > 1000000)
		usage(prog, 2);
	return v;
}

static double parse_seconds(const char *prog, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (*s == '\0' || *end != '\0' || !(v > 0 && v <= 3600))
		usage(prog, 2);
	return v;
}

/* ---- --noise: a CPU hog beside the benchmark -------------------------- */

static pid_t noise_pid;

static void noise_stop(void)
{
	if (noise_pid <= 0)
		return;
	kill(noise_pid, SIGKILL);
	waitpid(noise_pid, NULL, 0);
	noise_pid = 0;
}

/*
 * noise_start() - fork a child that spins on the last CPU (CPU 0 is where
 * --pin puts the benchmark) until the benchmark exits: noise_stop() at
 * exit, and the kernel kills it should the benchmark die first
 * (PR_SET_PDEATHSIG).  A process, not a thread, so that the benchmarks
 * that count or signal their own threads see none of it.  The hog does
 * integer work and touches no memory of its own beyond the stack: it
 * takes the other core's (or SMT sibling's) pipeline, as a busy
 * neighbour does.
 */
static void noise_start(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "bench: --noise: fork: %s\n", strerror(errno));
		exit(1);
	}
	if (pid == 0) {
		volatile uint64_t x = 1;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		bench_pin_cpu(bench_ncpus() - 1);
		for (;;)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	}
	noise_pid = pid;
	atexit(noise_stop);
}

/**
 * bench_parse_args() - parse the common options; exit on an error.
 * @argc, @argv: as given to main()
 * @o:           filled in (defaults for what is not given)
 */
void bench_parse_args(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "batch", required_argument, NULL, 'b' },
		{ "pin", no_argument, NULL, 'p' },
		{ "noise", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct bench_opts){
		.reps = 5, .warmup = 1, .seconds = 1.0, .batch = 128
	};
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'r')
			o->reps = (unsigned int)parse_count(argv[0], optarg);
		else if (c == 's')
			o->seconds = parse_seconds(argv[0], optarg);
		else if (c == 'b')
			o->batch = (unsigned int)parse_count(argv[0], optarg);
		else if (c == 'p')
			o->pin = true;
		else if (c == 'n')
			o->noise = true;
		else
			usage(argv[0], c == 'h' ? 0 : 2);
	}
	if (optind != argc)
		usage(argv[0], 2);
	if (o->noise)
		noise_start();
}

/* ---- running cases --------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of @v[0..n), n >= 1; sorts @v. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One repetition of @c; NULL @st for a warm-up run. */
static int run_once(const struct bench_case *c, double *ns_op, double *tsc_op,
		    struct bench_stats *st)
{
	struct bench_sample s = { 0 };

	if (c->run(c->ctx, &s))
		return -1;
	if (s.ops == 0) {
		fprintf(stderr, "bench: case %s did no operations\n", c->name);
		return -1;
	}
	if (!st)
		return 0;
	*ns_op = (double)s.ns / (double)s.ops;
	*tsc_op = (double)s.tsc / (double)s.ops;
	st->ops += s.ops;
	st->lost += s.lost;
	return 0;
}

/* Reduce the per-repetition values of one case to its stats. */
static void reduce(double *ns_op, double *tsc_op, unsigned int reps,
		   struct bench_stats *st)
{
	st->median = median(ns_op, reps);
	st->min = ns_op[0];
	st->max = ns_op[reps - 1];
	st->tsc_median = median(tsc_op, reps);
}

/**
 * bench_run_cases() - measure a group of cases, interleaved.
 * @cases: the group
 * @n:     its size
 * @o:     @o->warmup untimed, then @o->reps timed repetitions of each
 * @st:    @n stats, filled in
 *
 * Repetition r runs the cases starting at case r % n, so that no case is
 * always first after a warm-up or always last.
 *
 * Return: 0, or -1 if a case failed or memory ran out.
 */
int bench_run_cases(const struct bench_case *cases, size_t n,
		    const struct bench_opts *o, struct bench_stats *st)
{
	double *ns_op = calloc(n * o->reps * 2, sizeof(*ns_op));
	double *tsc_op = ns_op + n * o->reps;
	int rc = -1;

	if (!ns_op)
		return -1;
	memset(st, 0, n * sizeof(*st));
	for (unsigned int r = 0; r < o->warmup; r++)
		for (size_t i = 0; i < n; i++)
			if (run_once(&cases[i], NULL, NULL, NULL))
				goto out;
	for (unsigned int r = 0; r < o->reps; r++) {
		for (size_t j = 0; j < n; j++) {
			size_t i = (r + j) % n, k = i * o->reps + r;

			if (run_once(&cases[i], &ns_op[k], &tsc_op[k], &st[i]))
				goto out;
		}
	}
	for (size_t i = 0; i < n; i++)
		reduce(ns_op + i * o->reps, tsc_op + i * o->reps, o->reps,
		       &st[i]);
	rc = 0;
out:
	free(ns_op);
	return rc;
}

/* ---- reporting --------------------------------------------------------- */

/* The CPU model from /proc/cpuinfo, into @buf. */
static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	char *p;

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) || !(p = strchr(line, ':')))
			continue;
		p += 1 + strspn(p + 1, " \t");
		p[strcspn(p, "\n")] = '\0';
		snprintf(buf, len, "%s", p);
		break;
	}
	fclose(f);
}

static const char *compiler(void)
{
#ifdef __clang__
	return __VERSION__; /* "Debian Clang 14.0.6" */
#else
	return "gcc " __VERSION__;
#endif
}

/* Median cost of one bench_now_ns() call, in ns. */
static double timer_overhead(void)
{
	double v[101];

	for (size_t i = 0; i < 101; i++) {
		uint64_t t0 = bench_now_ns(), t1;

		for (int j = 0; j < 9; j++)
			bench_now_ns();
		t1 = bench_now_ns();
		v[i] = (double)(t1 - t0) / 10;
	}
	return median(v, 101);
}

/* Open the result files: truncate unless BENCH_APPEND is set. */
static void open_reports(void)
{
	bool append = getenv("BENCH_APPEND") != NULL;
	const char *mode = append ? "a" : "w";

	if (mkdir(RESULTS_DIR, 0777) && errno != EEXIST) {
		fprintf(stderr,
			"bench: cannot create %s (%s); no files written\n",
			RESULTS_DIR, strerror(errno));
		return;
	}
	report_md = fopen(RESULTS_DIR "/latest.md", mode);
	report_csv = fopen(RESULTS_DIR "/latest.csv", mode);
	if (!report_md || !report_csv)
		fprintf(stderr, "bench: cannot open %s/latest.*: %s\n",
			RESULTS_DIR, strerror(errno));
	if (report_md && !append)
		fprintf(report_md, "# profring benchmark results\n");
	if (report_csv && !append)
		fprintf(report_csv,
			"program,case,unit,ours,ours_median,ours_min,ours_max,"
			"ours_tsc,anchor,anchor_median,anchor_min,anchor_max,"
			"anchor_tsc,ratio,goal,met,note\n");
}

static void print_header(FILE *f, const char *fmt_head, const char *fmt_rule)
{
	fprintf(f, fmt_head, "case", "unit", "ours", "median [min-max]",
		"anchor", "median [min-max]", "ratio", "goal", "met", "note");
	if (fmt_rule)
		fprintf(f, "%s", fmt_rule);
}

/**
 * bench_report_begin() - start a program's report: a description of the
 * machine and the options, and the table header.
 * @program: the benchmark's name
 * @o:       its options
 */
void bench_report_begin(const char *program, const struct bench_opts *o)
{
	char model[128], info[512];
	time_t now = time(NULL);
	char date[32];

	report_program = program;
	report_noted = false;
	cpu_model(model, sizeof(model));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	snprintf(info, sizeof(info),
		 "%s; %s; %d CPUs; %s; reps %u (+%u warm-up), seconds %g, "
		 "batch %u, pin %s, noise %s; clock_gettime %.1f ns",
		 date, model, bench_ncpus(), compiler(), o->reps, o->warmup,
		 o->seconds, o->batch, o->pin ? "yes" : "no",
		 o->noise ? "yes (a hog on the last CPU)" : "no",
		 timer_overhead());
	printf("%s: %s\n\n", program, info);
	print_header(stdout,
		     "%-10s %-6s %-14s %-22s %-14s %-22s %6s %-6s %-4s %s\n",
		     NULL);
	open_reports();
	if (report_md) {
		fprintf(report_md, "\n## %s\n\n%s\n\n", program, info);
		print_header(
			report_md,
			"| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			"|---|---|---|--:|---|--:|--:|---|---|---|\n");
	}
}

/* The cell "median [min-max]" of @st in @unit. */
static void format_value(char *buf, size_t len, const struct bench_stats *st,
			 enum bench_unit unit)
{
	if (unit == BENCH_NS_PER_OP)
		snprintf(buf, len, "%.2f [%.2f-%.2f]", st->median, st->min,
			 st->max);
	else
		snprintf(buf, len, "%.2f [%.2f-%.2f]", 1e3 / st->median,
			 1e3 / st->max, 1e3 / st->min);
}

static double unit_value(enum bench_unit unit, double ns_op)
{
	return unit == BENCH_NS_PER_OP ? ns_op : 1e3 / ns_op;
}

/* @s as a CSV field, quoted, inner quotes doubled, then @sep. */
static void csv_string(FILE *f, const char *s, const char *sep)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fprintf(f, "\"%s", sep);
}

static void csv_stats(FILE *f, const struct bench_stats *st,
		      enum bench_unit unit)
{
	double lo = unit_value(unit, st->min);
	double hi = unit_value(unit, st->max);

	fprintf(f, "%.4f,%.4f,%.4f,%.4f,", unit_value(unit, st->median),
		lo < hi ? lo : hi, lo < hi ? hi : lo, st->tsc_median);
}

static void csv_row(const struct bench_row *row, double ratio, bool met)
{
	csv_string(report_csv, report_program, ",");
	csv_string(report_csv, row->name, ",");
	csv_string(report_csv, row->unit == BENCH_NS_PER_OP ? "ns/op" : "Mop/s",
		   ",");
	csv_string(report_csv, row->ours_name, ",");
	csv_stats(report_csv, row->ours, row->unit);
	csv_string(report_csv, row->anchor_name, ",");
	csv_stats(report_csv, row->anchor, row->unit);
	fprintf(report_csv, "%.4f,\"%s %.2f\",%s,", ratio,
		row->goal_le ? "<=" : ">=", row->goal_ratio,
		met ? "yes" : "no");
	csv_string(report_csv, row->note, "\n");
}

/**
 * bench_report_row() - print one comparison and append it to the files.
 * @row: the comparison
 *
 * Return: whether the goal was met.
 */
bool bench_report_row(const struct bench_row *row)
{
	const char *unit = row->unit == BENCH_NS_PER_OP ? "ns/op" : "Mop/s";
	double ratio = unit_value(row->unit, row->ours->median) /
		       unit_value(row->unit, row->anchor->median);
	bool met = row->goal_le ? ratio <= row->goal_ratio
				: ratio >= row->goal_ratio;
	char ours[48], anchor[48], goal[16];
	const char *note = row->note ? row->note : "";

	format_value(ours, sizeof(ours), row->ours, row->unit);
	format_value(anchor, sizeof(anchor), row->anchor, row->unit);
	snprintf(goal, sizeof(goal), "%s%.2f",
		 row->goal_le ? "<=" : ">=", row->goal_ratio);
	printf("%-10s %-6s %-14s %-22s %-14s %-22s %6.3f %-6s %-4s %s\n",
	       row->name, unit, row->ours_name, ours, row->anchor_name, anchor,
	       ratio, goal, met ? "yes" : "no", note);
	if (report_md)
		fprintf(report_md,
			"| %s | %s | %s | %s | %s | %s | %.3f | %s | %s | %s |\n",
			row->name, unit, row->ours_name, ours, row->anchor_name,
			anchor, ratio, goal, met ? "yes" : "no", note);
	if (report_csv)
		csv_row(row, ratio, met);
	fflush(NULL);
	return met;
}

/**
 * bench_report_note() - print a line of text under the table, and append
 * it to the Markdown report.  Call it after the rows.
 * @fmt: printf format
 */
void bench_report_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!report_md)
		return;
	if (!report_noted)
		fputc('\n', report_md);
	report_noted = true;
	va_start(ap, fmt);
	vfprintf(report_md, fmt, ap);
	va_end(ap);
	fputs("\n\n", report_md);
}

/**
 * bench_report_end() - close the result files.
 */
void bench_report_end(void)
{
	if (report_md)
		fclose(report_md);
	if (report_csv)
		fclose(report_csv);
	report_md = NULL;
	report_csv = NULL;
}

/**
 * bench_info_row() - report a comparison without a goal (the ratio is
 * shown against ">= 0.00", which always holds).
 * @name:        the comparison
 * @unit:        how both values are shown and the ratio computed
 * @ours, @anchor:  the stats of the two cases
 * @ours_name, @anchor_name:  their case names
 * @note:        the last column (may be NULL)
 */
void bench_info_row(const char *name, enum bench_unit unit,
		    const struct bench_stats *ours, const char *ours_name,
		    const struct bench_stats *anchor, const char *anchor_name,
		    const char *note)
{
	struct bench_row row = {
		.name = name,
		.unit = unit,
		.ours = ours,
		.ours_name = ours_name,
		.anchor = anchor,
		.anchor_name = anchor_name,
		.goal_ratio = 0,
		.goal_le = false,
		.note = note,
	};

	bench_report_row(&row);
}

/**
 * bench_fail() - print that @what failed, in the name the program gave
 * bench_report_begin() ("bench" before it), and that it stops.
 * @what: the call or check that failed
 * @err:  an errno, positive or negative
 *
 * Return: -1, for "return bench_fail(...)".
 */
int bench_fail(const char *what, int err)
{
	fprintf(stderr, "%s: %s failed (%d: %s); aborting\n",
		report_program ? report_program : "bench", what, err,
		strerror(err < 0 ? -err : err));
	return -1;
}

/**
 * bench_round_pow2() - the smallest power of two >= @n (1 for 0).
 * @n: at most 2^31
 */
uint32_t bench_round_pow2(size_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* ---- the 34-word profbuf record ------------------------------------ */

struct bench_rec bench_rec;

/**
 * bench_rec_init() - fill in bench_rec; call it before any thread starts.
 */
void bench_rec_init(void)
{
	bench_rec.hdr[0] = 0x1d;
	bench_rec.hdr[1] = 0x2e;
	for (size_t i = 0; i < BENCH_REC_NSTK; i++)
		bench_rec.stk[i] = 0x400000 + 16 * i;
}

/**
 * bench_rec_account() - account one profbuf read of bench_rec records.
 * @rd:        what profbuf_read() returned
 * @delivered: incremented per ordinary record, each checked intact
 * @ovf:       the overflow records' counts added
 *
 * Return: 0, or -EIO for a record that is not intact or a run that does
 * not end on a record boundary.
 */
int bench_rec_account(const struct profbuf_read *rd, uint64_t *delivered,
		      uint64_t *ovf)
{
	size_t off = 0, len;

	for (size_t i = 0; i < rd->ntags; i++) {
		len = rd->data[off];
		if (len < 3 || off + len > rd->ndata)
			return -EIO;
		if (!rd->tags[i])
			*ovf += rd->data[off + len - 1];
		else if (bench_rec_ok(rd->data + off))
			(*delivered)++;
		else
			return -EIO;
		off += len;
	}
	return off == rd->ndata ? 0 : -EIO;
}
