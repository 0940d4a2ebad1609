// SPDX-License-Identifier: MIT
/*
 * bench/trace/compare.c - the row groups: tracebuf and its anchors for
 * one event, run interleaved, and their rows; RDTSC's cost for the note.
 */
#include "bench/trace/trace.h"

#include <stdio.h>
#include <string.h>

#include "ring/clock.h"

int fail(const struct ev_case *c, const char *what, int err)
{
	fprintf(stderr, "trace_bench: %s: %s failed (%d: %s); aborting\n",
		c ? c->name : "setup", what, err,
		strerror(err < 0 ? -err : err));
	return -1;
}

/* ---- the comparison ------------------------------------------------------ */

static volatile uint64_t clock_sink;

/* ns per ring_clock_ticks() alone, best of 5 runs of 2^20 reads. */
double clock_cost(void)
{
	uint64_t sum = 0, best = UINT64_MAX, t0;

	for (int r = 0; r < 5; r++) {
		t0 = bench_now_ns();
		for (int i = 0; i < (1 << 20); i++)
			sum += ring_clock_ticks();
		t0 = bench_now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	clock_sink = sum;
	return (double)best / (1 << 20);
}

/*
 * struct group - a row group: tracebuf and its anchors for one event.
 * @name:  row name
 * @ours:  tracebuf case name
 * @nargs: arguments
 * @stack: { counter, stack id }
 * @ncase: 3 (tracebuf, floor, seqlock) or 4 (and tracebuf_call)
 */
struct group {
	const char *name;
	const char *ours;
	unsigned int nargs;
	bool stack;
	unsigned int ncase;
};

static const struct group groups[] = {
	{ "emit 2 args", "tracebuf_emit", 2, false, 4 },
	{ "emit stack", "begin+stack+emit", 2, true, 3 },
	{ "emit 0 args", "tracebuf_emit", 0, false, 4 },
	{ "emit 4 args", "tracebuf_emit", 4, false, 4 },
};

#define NCASE 4
static const char *const anchor_names[NCASE - 1] = { "floor", "seqlock",
						     "tracebuf_call" };

static void group_report(const struct group *g, const struct ev_case *c,
			 const struct bench_stats *st)
{
	struct bench_row row = {
		.name = g->name,
		.unit = BENCH_NS_PER_OP,
		.ours = &st[0],
		.ours_name = g->ours,
		.goal_le = true,
	};
	char note[96];

	for (unsigned int i = 1; i < g->ncase; i++) {
		snprintf(note, sizeof(note), "bytes/event %.2f vs %.2f%s",
			 (double)c[0].bytes / (double)c[0].events,
			 (double)c[i].bytes / (double)c[i].events,
			 c[i].impl == IM_SEQLOCK ? " (+2 lock add)"
			 : c[i].impl == IM_CALL ? "; inline vs the library call"
						: "");
		row.anchor = &st[i];
		row.anchor_name = anchor_names[i - 1];
		row.goal_ratio = c[i].impl == IM_FLOOR ? 1.3 : 1.0;
		row.note = note;
		bench_report_row(&row);
	}
}

static int group_run(const struct bench_opts *o, const struct group *g)
{
	struct ev_case c[NCASE] = { 0 };
	struct bench_case bc[NCASE];
	struct bench_stats st[NCASE];
	static const enum impl impls[NCASE] = { IM_TRACE, IM_FLOOR, IM_SEQLOCK,
						IM_CALL };
	bool tracer;
	int rc = -1;

	for (unsigned int i = 0; i < g->ncase; i++) {
		c[i] = (struct ev_case){
			.name = i ? anchor_names[i - 1] : g->ours,
			.impl = impls[i],
			.nargs = g->nargs,
			.stack = g->stack,
			.batch = o->batch,
		};
		tracer = impls[i] == IM_TRACE || impls[i] == IM_CALL;
		bc[i] = (struct bench_case){ c[i].name,
					     tracer ? tb_run : flr_run, &c[i] };
	}
	if (tb_init(&c[0]) || (g->ncase == NCASE && tb_init(&c[NCASE - 1])))
		goto out;
	rc = bench_run_cases(bc, g->ncase, o, st);
	if (!rc)
		group_report(g, c, st);
out:
	tb_fini(&c[0]);
	tb_fini(&c[NCASE - 1]);
	return rc;
}

/* Every row group in turn; 0, or -1 if one failed. */
int groups_run(const struct bench_opts *o)
{
	for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
		if (group_run(o, &groups[i]))
			return -1;
	return 0;
}
