// SPDX-License-Identifier: MIT
/*
 * bench/scaling/compare.c - the writer counts, each implementation's
 * repetitions interleaved, the report's rows and bench/results/scaling.csv.
 */
#include "bench/scaling/scaling.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writer scaling: the comparison ---------------------------------- */

/* The anchors of the "scaling" rows are SC_CK ... SC_WQ. */
enum { SC_PB, SC_CK, SC_MX, SC_PP, SC_WQ, SC_PG, SC_PO, SC_N };

static const char *const sc_names[SC_N] = {
	"profbuf", "ck_mpmc",	    "mutex",	     "pipe",
	"wfcq",	   "profbuf_group", "profbuf_owned",
};
static const struct sc_ops *const sc_impls[SC_N] = {
	&pb_sc_ops, &ck_sc_ops, &mx_sc_ops, &pp_sc_ops,
	&wq_sc_ops, &pg_sc_ops, &po_sc_ops,
};

/* profbuf with one writer: the group rows' goal (issue 32). */
static struct bench_stats sc_one_writer;
static bool sc_have_one_writer;

static double lost_frac(const struct bench_stats *st)
{
	uint64_t all = st->ops + st->lost;

	return all ? (double)st->lost / (double)all : 0;
}

/*
 * sc_report() - one row per anchor; the goal holds against ck_mpmc for
 * W >= 2 only.
 */
static void sc_report(unsigned int nw, const struct bench_stats *st)
{
	char name[32], note[96];
	struct bench_row row = {
		.name = name,
		.unit = BENCH_MOPS,
		.ours = &st[SC_PB],
		.ours_name = sc_names[SC_PB],
		.note = note,
	};

	snprintf(name, sizeof(name), "scaling %uw 34w", nw);
	for (int i = SC_CK; i <= SC_WQ; i++) {
		bool goal = i == SC_CK && nw >= 2;

		snprintf(note, sizeof(note), "%slost %.1f%% vs %.1f%%",
			 goal ? "" : "info; ", 100 * lost_frac(&st[SC_PB]),
			 100 * lost_frac(&st[i]));
		row.anchor = &st[i];
		row.anchor_name = sc_names[i];
		row.goal_ratio = goal ? 1.0 : 0;
		row.goal_le = false;
		bench_report_row(&row);
	}
}

/*
 * sc_report_group() - the group's rows: against profbuf at this W, and
 * (for W >= 2) against profbuf's one-writer rate; info both (the goal is
 * the owned rings' row).
 */
static void sc_report_group(unsigned int nw, const struct bench_stats *st)
{
	char name[32], note[96];
	struct bench_row row = {
		.name = name,
		.unit = BENCH_MOPS,
		.ours = &st[SC_PG],
		.ours_name = sc_names[SC_PG],
		.anchor = &st[SC_PB],
		.anchor_name = sc_names[SC_PB],
		.note = note,
	};

	if (nw == 1) {
		sc_one_writer = st[SC_PB];
		sc_have_one_writer = true;
	}
	snprintf(name, sizeof(name), "group %uw 34w", nw);
	snprintf(note, sizeof(note), "info; lost %.1f%% vs %.1f%%",
		 100 * lost_frac(&st[SC_PG]), 100 * lost_frac(&st[SC_PB]));
	bench_report_row(&row);
	if (nw < 2 || !sc_have_one_writer)
		return;
	snprintf(note, sizeof(note), "info; lost %.1f%%; anchor: 1 writer",
		 100 * lost_frac(&st[SC_PG]));
	row.anchor = &sc_one_writer;
	row.anchor_name = "profbuf 1w";
	bench_report_row(&row);
}

/*
 * sc_report_owned() - the owned rings' rows: against the group (a ring
 * per CPU) at this W, info; and (for W >= 2) against profbuf's
 * one-writer rate, the goal (issue 32: W writers deliver at least what
 * one writer does).
 */
static void sc_report_owned(unsigned int nw, const struct bench_stats *st)
{
	char name[32], note[96];
	struct bench_row row = {
		.name = name,
		.unit = BENCH_MOPS,
		.ours = &st[SC_PO],
		.ours_name = sc_names[SC_PO],
		.anchor = &st[SC_PG],
		.anchor_name = sc_names[SC_PG],
		.note = note,
	};

	snprintf(name, sizeof(name), "owned %uw 34w", nw);
	snprintf(note, sizeof(note), "info; lost %.1f%% vs %.1f%%",
		 100 * lost_frac(&st[SC_PO]), 100 * lost_frac(&st[SC_PG]));
	bench_report_row(&row);
	if (nw < 2 || !sc_have_one_writer)
		return;
	snprintf(note, sizeof(note), "lost %.1f%%; anchor: 1 writer",
		 100 * lost_frac(&st[SC_PO]));
	row.anchor = &sc_one_writer;
	row.anchor_name = "profbuf 1w";
	row.goal_ratio = 1.0;
	bench_report_row(&row);
}

/*
 * sc_csv() - the W group's lines of scaling.csv:
 * writers,impl,delivered_per_s,lost_fraction,delivered_per_s_min,
 * delivered_per_s_max,cpus - delivered records per second over the
 * repetitions (median, min, max), and writes lost / writes attempted
 * over all of them.
 */
static void sc_csv(FILE *f, unsigned int nw, const struct bench_stats *st)
{
	if (!f)
		return;
	for (int i = 0; i < SC_N; i++)
		fprintf(f, "%u,%s,%.1f,%.6f,%.1f,%.1f,%d\n", nw, sc_names[i],
			1e9 / st[i].median, lost_frac(&st[i]), 1e9 / st[i].max,
			1e9 / st[i].min, bench_ncpus());
	fflush(f);
}

/**
 * scaling_one() - measure and report one writer count.
 * @o:  options; the group runs (@o->reps + 1) / 2 repetitions
 * @nw: writers
 * @f:  scaling.csv, or NULL
 *
 * Return: 0, or -1 if anything failed.
 */
static int scaling_one(const struct bench_opts *o, unsigned int nw, FILE *f)
{
	struct bench_opts so = *o;
	struct sc_run *m;
	struct bench_case bc[SC_N];
	struct bench_stats st[SC_N];
	int rc = -1;

	so.warmup = 0; /* every repetition starts fresh threads and rings */
	so.reps = (o->reps + 1) / 2;
	m = aligned_alloc(CACHELINE, SC_N * sizeof(*m));
	if (!m)
		return bench_fail("aligned_alloc", -ENOMEM);
	memset(m, 0, SC_N * sizeof(*m));
	for (int i = 0; i < SC_N; i++) {
		m[i].ops = sc_impls[i];
		m[i].o = o;
		m[i].nw = nw;
		m[i].w = aligned_alloc(CACHELINE, nw * sizeof(*m[i].w));
		if (!m[i].w)
			goto out;
		bc[i] = (struct bench_case){ sc_names[i], sc_case_run, &m[i] };
	}
	rc = bench_run_cases(bc, SC_N, &so, st);
	if (!rc) {
		sc_report(nw, st);
		sc_report_group(nw, st);
		sc_report_owned(nw, st);
		sc_csv(f, nw, st);
	}
out:
	for (int i = 0; i < SC_N; i++)
		free(m[i].w);
	free(m);
	return rc;
}

/*
 * scaling() - W = 1, 2, 4, ... below the CPU count, the CPU count, and
 * twice it.
 */
int scaling(const struct bench_opts *o)
{
	unsigned int ncpus = (unsigned int)bench_ncpus(), nw;
	FILE *f = fopen(SCALING_CSV, "w");
	int rc = 0;

	if (f)
		fprintf(f, "writers,impl,delivered_per_s,lost_fraction,"
			   "delivered_per_s_min,delivered_per_s_max,cpus\n");
	else
		fprintf(stderr, "scaling_bench: cannot open %s: %s\n",
			SCALING_CSV, strerror(errno));
	for (nw = 1; nw < ncpus && !rc; nw *= 2)
		rc = scaling_one(o, nw, f);
	if (!rc)
		rc = scaling_one(o, ncpus, f);
	if (!rc)
		rc = scaling_one(o, 2 * ncpus, f);
	if (f)
		fclose(f);
	return rc;
}
