// SPDX-License-Identifier: MIT
/*
 * trace_mem.c - profring-trace's memory reports (trace_report_impl.h):
 * the summary's per-generation live objects and bytes (from
 * tracedec_mem_check(), which also finds frees of unknown ids, double
 * allocations and snapshots that disagree with the generation before),
 * its top allocation stacks, and the json report's live-heap counter.
 *
 * Top stacks: each allocation adds its size to its stack's entry in its
 * generation's table (the counts live in struct stack_ent); the entries
 * of every generation are then merged by their PCs, so a stack seen in
 * many generations is one line.  Memory: the stack tables the first pass
 * built, plus one pointer per stack that allocated.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "tools/trace_report_impl.h"

#define TOP_STACKS 10

struct mem_summary {
	struct trace *t;
	uint64_t gens;
	bool contradicts; /* where no loss explains it */
};

/* ---- per generation -------------------------------------------------------- */

static void say_contradiction(struct mem_summary *s,
			      const struct tracedec_mem_gen *g)
{
	char msg[256];

	if (g->lost || s->contradicts)
		return; /* a loss explains it; or said already */
	s->contradicts = true;
	snprintf(msg, sizeof(msg),
		 "generation %" PRIu64 ": memory events contradict "
		 "themselves without a loss (%" PRIu64
		 " unknown frees, %" PRIu64 " double allocations, %" PRIu64
		 " missing from and %" PRIu64 " extra in its snapshot)",
		 g->gen, g->unknown_frees, g->double_allocs,
		 g->snapshot_missing, g->snapshot_extra);
	complain(s->t, msg);
}

static int summary_gen(void *arg, const struct tracedec_mem_gen *g)
{
	struct mem_summary *s = arg;
	struct trace *t = s->t;
	const struct gen_info *gi = gen_get(t, g->gen, false);

	s->gens++;
	fprintf(t->out,
		"memory gen %" PRIu64 " exists %" PRIu64 " allocs %" PRIu64
		" frees %" PRIu64 " live_objects %" PRIu64
		" live_bytes %" PRIu64,
		g->gen, g->exists, g->allocs, g->frees, g->live_objects,
		g->live_bytes);
	if (g->lost)
		fprintf(t->out, " lost %" PRIu64, g->lost);
	if (g->unknown_frees) {
		fprintf(t->out, " unknown_frees %" PRIu64 " (first id %" PRIu64,
			g->unknown_frees, g->first_unknown_id);
		if (gi && gi->has_mem_info)
			fprintf(t->out, " at 0x%" PRIx64,
				gi->min_addr + g->first_unknown_id * gi->align);
		putc(')', t->out);
	}
	if (g->double_allocs)
		fprintf(t->out, " double_allocs %" PRIu64, g->double_allocs);
	if (g->snapshot_missing || g->snapshot_extra)
		fprintf(t->out,
			" snapshot_missing %" PRIu64 " snapshot_extra %" PRIu64,
			g->snapshot_missing, g->snapshot_extra);
	putc('\n', t->out);
	if (g->unknown_frees || g->double_allocs || g->snapshot_missing ||
	    g->snapshot_extra)
		say_contradiction(s, g);
	return 0;
}

/* ---- top allocation stacks ------------------------------------------------ */

struct top {
	struct trace *t;
	struct stack_ent **ents; /* stacks that allocated */
	size_t n, cap;
	uint64_t nostack_count, nostack_bytes, count, bytes;
	bool oom;
};

static int top_event(void *arg, const struct tracedec_event *ev)
{
	struct top *tp = arg;
	struct gen_info *g;
	struct stack_ent *k;

	if (ev->version < 2 || ev->type != TRACEBUF_EV_ALLOC)
		return 0;
	tp->count++;
	tp->bytes += ev->args[1];
	g = gen_get(tp->t, ev->gen, false);
	/* Ours: the first pass made the table; find_stack() lends it. */
	k = g ? (struct stack_ent *)find_stack(g, ev->args[2]) : NULL;
	if (!k) {
		tp->nostack_count++;
		tp->nostack_bytes += ev->args[1];
		return 0;
	}
	if (!k->alloc_count) {
		if (tp->n == tp->cap) {
			size_t cap = tp->cap ? tp->cap * 2 : 64;
			struct stack_ent **p =
				realloc(tp->ents, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			tp->ents = p;
			tp->cap = cap;
		}
		tp->ents[tp->n++] = k;
	}
	k->alloc_count++;
	k->alloc_bytes += ev->args[1];
	return 0;
}

/* By PCs (@pool: the trace's), for qsort_r(). */
static int cmp_by_pcs(const void *a, const void *b, void *pool)
{
	const struct stack_ent *x = *(struct stack_ent *const *)a;
	const struct stack_ent *y = *(struct stack_ent *const *)b;
	const uint64_t *pcs = pool;
	size_t n = x->n < y->n ? x->n : y->n;

	for (size_t i = 0; i < n; i++) {
		uint64_t p = pcs[x->off + i], q = pcs[y->off + i];

		if (p != q)
			return p < q ? -1 : 1;
	}
	return (x->n > y->n) - (x->n < y->n);
}

static int cmp_by_bytes(const void *a, const void *b)
{
	const struct stack_ent *x = *(struct stack_ent *const *)a;
	const struct stack_ent *y = *(struct stack_ent *const *)b;

	if (x->alloc_bytes != y->alloc_bytes)
		return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
	return (x->alloc_count < y->alloc_count) -
	       (x->alloc_count > y->alloc_count);
}

/* Fold the entries of equal stacks (sorted by PCs) into the first. */
static void merge_equal(struct top *tp)
{
	size_t out = 0;

	for (size_t i = 0; i < tp->n; i++) {
		if (out &&
		    !cmp_by_pcs(&tp->ents[out - 1], &tp->ents[i], tp->t->pcs)) {
			tp->ents[out - 1]->alloc_count +=
				tp->ents[i]->alloc_count;
			tp->ents[out - 1]->alloc_bytes +=
				tp->ents[i]->alloc_bytes;
			continue;
		}
		tp->ents[out++] = tp->ents[i];
	}
	tp->n = out;
}

static void print_top(struct top *tp)
{
	FILE *out = tp->t->out;

	fprintf(out,
		"memory top allocation stacks by bytes (of %" PRIu64
		" allocations, %" PRIu64 " bytes):\n",
		tp->count, tp->bytes);
	for (size_t i = 0; i < tp->n && i < TOP_STACKS; i++) {
		const struct stack_ent *k = tp->ents[i];

		fprintf(out, "  bytes %" PRIu64 " allocs %" PRIu64 " [",
			k->alloc_bytes, k->alloc_count);
		for (size_t j = 0; j < k->n; j++)
			fprintf(out, "%s0x%" PRIx64, j ? " " : "",
				tp->t->pcs[k->off + j]);
		fputs("]\n", out);
	}
	if (tp->nostack_count)
		fprintf(out,
			"  bytes %" PRIu64 " allocs %" PRIu64 " (no stack)\n",
			tp->nostack_bytes, tp->nostack_count);
}

/*
 * Does the stream have memory events or memory info records (version 2
 * on)?  Without, the memory reports are empty, and the stream is not read
 * again for them.
 */
static bool has_memory(const struct trace *t)
{
	if (t->version < 2)
		return false;
	if (t->type_events[TRACEBUF_EV_ALLOC] ||
	    t->type_events[TRACEBUF_EV_FREE] ||
	    t->type_events[TRACEBUF_EV_EXISTS])
		return true;
	for (size_t i = 0; i < t->ngens; i++)
		if (t->gens[i].has_mem_info)
			return true;
	return false;
}

static int summary_top(struct trace *t)
{
	static const struct tracedec_visitor v = { .event = top_event };
	struct top tp = { .t = t };
	int rc = trace_walk(t, &v, &tp, NULL);

	if (!rc && tp.count) {
		if (tp.n > 1)
			qsort_r(tp.ents, tp.n, sizeof(*tp.ents), cmp_by_pcs,
				t->pcs);
		merge_equal(&tp);
		if (tp.n > 1)
			qsort(tp.ents, tp.n, sizeof(*tp.ents), cmp_by_bytes);
		print_top(&tp);
	}
	free(tp.ents);
	return rc;
}

int trace_mem_summary(struct trace *t)
{
	static const struct tracedec_mem_visitor v = { .gen = summary_gen };
	struct mem_summary s = { .t = t };
	int rc;

	if (!has_memory(t))
		return 0;
	rc = trace_mem_walk(t, &v, &s);
	if (!rc && s.gens)
		rc = summary_top(t);
	if (rc) {
		complain(t, strerror(rc < 0 ? -rc : rc));
		return -1;
	}
	return s.contradicts ? 1 : 0;
}

/* ---- json: the live heap as a counter track -------------------------------- */

struct change {
	uint64_t gen, ticks;
	int64_t bytes, objects;
};

struct changes {
	struct change *c;
	size_t n, cap;
};

static int keep_change(void *arg, uint64_t gen, uint64_t ticks, int64_t bytes,
		       int64_t objects)
{
	struct changes *cs = arg;

	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 1024;
		struct change *p = realloc(cs->c, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		cs->c = p;
		cs->cap = cap;
	}
	cs->c[cs->n++] = (struct change){ gen, ticks, bytes, objects };
	return 0;
}

static int cmp_change(const void *a, const void *b)
{
	const struct change *x = a, *y = b;

	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return (x->ticks > y->ticks) - (x->ticks < y->ticks);
}

/*
 * One counter event per distinct time: a generation starts again from
 * its snapshot (which its changes include, at its start).
 */
static void print_counter(struct trace *t, const struct changes *cs)
{
	int64_t bytes = 0, objects = 0;

	for (size_t i = 0; i < cs->n; i++) {
		const struct change *c = &cs->c[i];
		const struct gen_info *g;
		uint64_t ns;

		if (i && cs->c[i - 1].gen != c->gen)
			bytes = objects = 0;
		bytes += c->bytes;
		objects += c->objects;
		if (i + 1 < cs->n && cs->c[i + 1].gen == c->gen &&
		    cs->c[i + 1].ticks == c->ticks)
			continue;
		g = gen_get(t, c->gen, false);
		ns = to_ns(t, g, c->ticks);
		ns = ns > t->base_ns ? ns - t->base_ns : 0;
		fprintf(t->out,
			"%s\n{\"name\":\"live heap\",\"cat\":\"profring\","
			"\"ph\":\"C\",\"ts\":%" PRIu64 ".%03u,\"pid\":1,"
			"\"args\":{\"bytes\":%" PRId64 ",\"objects\":%" PRId64
			"}}",
			t->printed++ ? "," : "", ns / 1000,
			(unsigned int)(ns % 1000), bytes, objects);
	}
}

int trace_mem_json(struct trace *t)
{
	static const struct tracedec_mem_visitor v = { .change = keep_change };
	struct changes cs = { 0 };
	int rc;

	if (!has_memory(t))
		return 0;
	rc = trace_mem_walk(t, &v, &cs);
	if (!rc) {
		if (cs.n > 1)
			qsort(cs.c, cs.n, sizeof(*cs.c), cmp_change);
		print_counter(t, &cs);
	} else {
		complain(t, strerror(rc < 0 ? -rc : rc));
	}
	free(cs.c);
	return rc ? -1 : 0;
}
