// SPDX-License-Identifier: MIT
/*
 * trace_summary.c - profring-trace summary: the counts of a stream
 * (generations, events by type, losses, threads); its memory lines
 * come from trace_mem.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "tools/trace_report_impl.h"

/* The name a type has in the last generation that names it. */
static void summary_type(struct trace *t, unsigned int type)
{
	const struct gen_info *g = NULL;

	for (size_t i = t->ngens; i-- > 0;) {
		if (named_type(&t->gens[i], type)) {
			g = &t->gens[i];
			break;
		}
	}
	if (!g && t->ngens)
		g = &t->gens[0]; /* a built-in name, by the stream's version */
	fprintf(t->out, "type %u ", type);
	put_type(t->out, g, type, true);
	fprintf(t->out, " events %" PRIu64 "\n", t->type_events[type]);
}

static void summary_threads(struct trace *t)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		const struct thread_info *th = &t->threads[i];

		fprintf(t->out,
			"thread %" PRIu64 " events %" PRIu64
			" (level 0 %" PRIu64 ", level 1 %" PRIu64
			") lost %" PRIu64 " (level 0 %" PRIu64
			", level 1 %" PRIu64 ")\n",
			th->tid, th->events[0] + th->events[1], th->events[0],
			th->events[1], th->lost[0] + th->lost[1], th->lost[0],
			th->lost[1]);
	}
}

/* Spans by name (the summary's second pass). */
#define SPAN_NAMES_MAX 1024
struct span_total {
	const char *name; /* NULL: the names past SPAN_NAMES_MAX */
	size_t len;
	uint64_t count, ns, max_ns;
};

struct span_sum {
	struct trace *t;
	struct span_total *v;
	size_t n;
	bool oom;
};

static struct span_total *span_slot(struct span_sum *s, const char *name,
				    size_t len)
{
	struct span_total *v;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].name && s->v[i].len == len &&
		    !memcmp(s->v[i].name, name, len))
			return &s->v[i];
	if (s->n == SPAN_NAMES_MAX) {
		name = NULL; /* the rest, together */
		len = 0;
		for (size_t i = 0; i < s->n; i++)
			if (!s->v[i].name)
				return &s->v[i];
	}
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->v = v;
	v[s->n] = (struct span_total){ .name = name, .len = len };
	return &v[s->n++];
}

static int sum_span(void *arg, const struct tracedec_event *ev)
{
	struct span_sum *s = arg;
	const struct gen_info *g;
	const struct str_ent *str;
	struct span_total *v;
	uint64_t ns;

	if (!is_span(ev))
		return 0;
	g = gen_get(s->t, ev->gen, false);
	str = find_string(g, ev->args[0]);
	v = str ? span_slot(s, str->s, str->len) : span_slot(s, "span", 4);
	if (!v) {
		s->oom = true;
		return -ENOMEM;
	}
	ns = to_ns(s->t, g, ev->time + ev->duration) - to_ns(s->t, g, ev->time);
	v->count++;
	v->ns += ns;
	if (ns > v->max_ns)
		v->max_ns = ns;
	return 0;
}

/* "span NAME count N total_ns T max_ns M" for each span name. */
static int summary_spans(struct trace *t)
{
	static const struct tracedec_visitor v = { .event = sum_span };
	struct span_sum s = { .t = t };
	struct tracedec_error err;
	int rc = 0;

	if ((!t->type_events[TRACEBUF_EV_SPAN] &&
	     !t->type_events[TRACEBUF_EV_SPAN_OF]) ||
	    t->version < 3)
		return 0;
	if (trace_walk(t, &v, &s, &err)) {
		complain(t, s.oom ? "out of memory" : err.what);
		rc = -1;
	}
	for (size_t i = 0; i < s.n && !rc; i++) {
		fputs("span ", t->out);
		if (s.v[i].name)
			put_quoted(t->out, s.v[i].name, s.v[i].len);
		else
			fputs("(other names)", t->out);
		fprintf(t->out,
			" count %" PRIu64 " total_ns %" PRIu64
			" max_ns %" PRIu64 "\n",
			s.v[i].count, s.v[i].ns, s.v[i].max_ns);
	}
	free(s.v);
	return rc;
}

int trace_summary(struct trace *t)
{
	uint64_t first = t->ngens ? t->gens[0].gen : 0;
	uint64_t last = t->ngens ? t->gens[t->ngens - 1].gen : 0;

	fputs("file ", t->out);
	put_text(t->out, t->path, strlen(t->path));
	fprintf(t->out, "\nbytes %zu\n", t->len);
	fprintf(t->out, "generations %zu (%" PRIu64 "-%" PRIu64 ")\n", t->ngens,
		first, last);
	fprintf(t->out, "batches %" PRIu64 "\n", t->batches);
	fprintf(t->out, "events %" PRIu64 "\n", t->events);
	fprintf(t->out, "payload_events %" PRIu64 "\n", t->payload_events);
	fprintf(t->out, "lost %" PRIu64 "\n", t->lost);
	fprintf(t->out, "strings %" PRIu64 "\nstacks %" PRIu64 "\n", t->strings,
		t->stacks);
	fprintf(t->out, "duration_ns %" PRIu64 "%s\n", t->end_ns - t->base_ns,
		t->hz_guessed ? " (frequency missing: ticks taken as ns)" : "");
	if (t->table_failures)
		fprintf(t->out, "incomplete_tables %" PRIu64 "\n",
			t->table_failures);
	for (unsigned int i = 1; i <= TRACEDEC_MAX_TYPE; i++)
		if (t->type_events[i])
			summary_type(t, i);
	if (summary_spans(t))
		return -1;
	fprintf(t->out, "threads %zu\n", t->nthreads);
	summary_threads(t);
	return trace_mem_summary(t);
}
