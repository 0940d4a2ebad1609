// SPDX-License-Identifier: MIT
/*
 * trace_collect.c - the first pass over a trace stream: each
 * generation's tables (frequency, strings, stacks, type names - they
 * come after the generation's events) and the threads, counted and
 * kept; and the lookups the reports make in them
 * (trace_report_impl.h).  Strings and type names are not copied (they
 * point into the stream), the PCs of all stacks share one pool, a
 * generation holds only the types it names; a generation's strings
 * and stacks are sorted once and found by binary search.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "tools/trace_report_impl.h"

/* Names of the library's own event types, for streams that leave them out. */
static const struct {
	const char *name, *spec;
} builtin_types[TRACEBUF_EV_USER] = {
	[TRACEBUF_EV_CPU_SAMPLE] = { "cpu sample", "tuku" },
	[TRACEBUF_EV_LOST_SAMPLES] = { "lost samples", "u" },
	/* Version 2 on (see builtin()); 'o': an object id. */
	[TRACEBUF_EV_ALLOC] = { "alloc", "ouk" },
	[TRACEBUF_EV_FREE] = { "free", "o" },
	[TRACEBUF_EV_EXISTS] = { "exists", "ouk" },
	/* Version 3 on: a span, its name and start. */
	[TRACEBUF_EV_SPAN] = { "span", "st" },
	/* Version 3 on: a span of a thread, its name, start, end, stack. */
	[TRACEBUF_EV_SPAN_OF] = { "thread span", "stutk" },
};

/* The built-in name and spec of @type in @g, if it has them. */
static bool builtin(const struct gen_info *g, unsigned int type)
{
	if (type >= TRACEBUF_EV_USER || !builtin_types[type].name)
		return false;
	if (type == TRACEBUF_EV_SPAN || type == TRACEBUF_EV_SPAN_OF)
		return g && g->version >= 3;
	return type < TRACEBUF_EV_ALLOC || (g && g->version >= 2);
}

/* Is @ev a span (type 6 or 7 from version 3 on)? */
bool is_span(const struct tracedec_event *ev)
{
	return (ev->type == TRACEBUF_EV_SPAN ||
		ev->type == TRACEBUF_EV_SPAN_OF) &&
	       ev->version >= 3;
}

/* ---- memory ------------------------------------------------------------- */

void trace_free(struct trace *t)
{
	for (size_t i = 0; i < t->ngens; i++) {
		free(t->gens[i].strs);
		free(t->gens[i].stacks);
		free(t->gens[i].types);
	}
	free(t->gens);
	free(t->gen_index.slots);
	free(t->threads);
	free(t->thread_index.slots);
	free(t->pcs);
}

/* ---- lookups ------------------------------------------------------------ */

/* The generation @gen, or NULL; @add creates it (NULL when out of memory). */
struct gen_info *gen_get(struct trace *t, uint64_t gen, bool add)
{
	struct gen_info *g;
	size_t i;

	if (t->gen_hint < t->ngens && t->gens[t->gen_hint].gen == gen)
		return &t->gens[t->gen_hint];
	i = index_find(&t->gen_index, t->seed, t->gens, sizeof(*g), gen);
	if (i == SIZE_MAX) {
		if (!add)
			return NULL;
		g = trace_grow(t->gens, &t->cap_gens, t->ngens + 1, sizeof(*g));
		if (!g)
			return NULL;
		t->gens = g;
		i = t->ngens;
		t->gens[i] = (struct gen_info){ .gen = gen,
						.version = t->version,
						.min_ticks = UINT64_MAX };
		if (index_add(&t->gen_index, t->seed, t->gens, sizeof(*g), i))
			return NULL;
		t->ngens++;
	}
	t->gen_hint = i;
	return &t->gens[i];
}

/* The thread @tid, created if new; NULL when out of memory. */
static struct thread_info *thread_get(struct trace *t, uint64_t tid)
{
	struct thread_info *th;
	size_t i;

	if (t->thread_hint < t->nthreads &&
	    t->threads[t->thread_hint].tid == tid)
		return &t->threads[t->thread_hint];
	i = index_find(&t->thread_index, t->seed, t->threads, sizeof(*th), tid);
	if (i == SIZE_MAX) {
		th = trace_grow(t->threads, &t->cap_threads, t->nthreads + 1,
				sizeof(*th));
		if (!th)
			return NULL;
		t->threads = th;
		i = t->nthreads;
		t->threads[i] = (struct thread_info){ .tid = tid };
		if (index_add(&t->thread_index, t->seed, t->threads,
			      sizeof(*th), i))
			return NULL;
		t->nthreads++;
	}
	t->thread_hint = i;
	return &t->threads[i];
}

static int cmp_str(const void *a, const void *b)
{
	const struct str_ent *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int cmp_stack(const void *a, const void *b)
{
	const struct stack_ent *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

const struct str_ent *find_string(const struct gen_info *g, uint64_t id)
{
	struct str_ent key = { .id = id };

	if (!g->nstrs)
		return NULL;
	return bsearch(&key, g->strs, g->nstrs, sizeof(key), cmp_str);
}

const struct stack_ent *find_stack(const struct gen_info *g, uint64_t id)
{
	struct stack_ent key = { .id = id };

	if (!g->nstacks)
		return NULL;
	return bsearch(&key, g->stacks, g->nstacks, sizeof(key), cmp_stack);
}

/* The type table entry of @type in @g, if @g names it. */
struct type_ent *named_type(const struct gen_info *g, unsigned int type)
{
	for (size_t i = 0; g && i < g->ntypes; i++)
		if (g->types[i].type == type)
			return &g->types[i];
	return NULL;
}

/* The name of @type in @g (or a built-in one); NULL if it has none. */
const char *type_name(const struct gen_info *g, unsigned int type, size_t *len)
{
	const struct type_ent *e = named_type(g, type);

	if (e && e->name_len) {
		*len = e->name_len;
		return e->name;
	}
	if (builtin(g, type)) {
		*len = strlen(builtin_types[type].name);
		return builtin_types[type].name;
	}
	return NULL;
}

/* The spec letter of argument @i of @type in @g: 'u' when unknown. */
char type_arg(const struct gen_info *g, unsigned int type, unsigned int i)
{
	const struct type_ent *e = named_type(g, type);
	const char *spec = NULL;
	size_t len = 0;

	if (e) {
		spec = e->spec;
		len = e->spec_len;
	} else if (builtin(g, type)) {
		spec = builtin_types[type].spec;
		len = strlen(spec);
	}
	return i < len ? spec[i] : 'u';
}

/* Ticks of @g's clock to nanoseconds. */
uint64_t to_ns(const struct trace *t, const struct gen_info *g, uint64_t ticks)
{
	uint64_t hz = g && g->hz ? g->hz : t->fallback_hz;
	unsigned __int128 ns = (unsigned __int128)ticks * 1000000000u / hz;

	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* ---- first pass: collect ------------------------------------------------ */

static int collect_event(void *arg, const struct tracedec_event *ev)
{
	struct trace *t = arg;
	struct gen_info *g = gen_get(t, ev->gen, true);
	/* A CPU sample counts for the thread it sampled, at its time. */
	struct thread_info *th = thread_get(t, ev->thread);

	if (!g || !th)
		return -ENOMEM;
	if (ev->time < g->min_ticks)
		g->min_ticks = ev->time;
	if (ev->time > g->max_ticks)
		g->max_ticks = ev->time;
	g->events++;
	th->events[ev->level]++;
	t->type_events[ev->type]++;
	t->payload_events += ev->bytes != NULL;
	t->events++;
	return 0;
}

static int collect_string(void *arg, uint64_t gen, uint64_t id, const char *s,
			  size_t len)
{
	struct trace *t = arg;
	struct gen_info *g = gen_get(t, gen, true);
	struct str_ent *e;

	if (!g)
		return -ENOMEM;
	e = trace_grow(g->strs, &g->cap_strs, g->nstrs + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	g->strs = e;
	g->strs[g->nstrs++] = (struct str_ent){ .id = id, .s = s, .len = len };
	t->strings++;
	return 0;
}

static int collect_stack(void *arg, uint64_t gen, uint64_t id,
			 const uint64_t *pcs, size_t n)
{
	struct trace *t = arg;
	struct gen_info *g = gen_get(t, gen, true);
	struct stack_ent *e;
	uint64_t *p;

	if (!g)
		return -ENOMEM;
	e = trace_grow(g->stacks, &g->cap_stacks, g->nstacks + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	g->stacks = e;
	p = trace_grow(t->pcs, &t->cap_pcs, t->npcs + n, sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->pcs = p;
	memcpy(t->pcs + t->npcs, pcs, n * sizeof(*pcs));
	g->stacks[g->nstacks++] =
		(struct stack_ent){ .id = id, .off = t->npcs, .n = n };
	t->npcs += n;
	t->stacks++;
	return 0;
}

static int collect_type(void *arg, uint64_t gen, unsigned int type,
			const char *name, size_t name_len, const char *spec,
			size_t spec_len)
{
	struct trace *t = arg;
	struct gen_info *g = gen_get(t, gen, true);
	struct type_ent *e;

	if (!g)
		return -ENOMEM;
	/* A later entry for the same type replaces an earlier one. */
	e = named_type(g, type);
	if (!e) {
		/* At most TRACEDEC_MAX_TYPE entries: grown one at a time. */
		e = realloc(g->types, (g->ntypes + 1) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		g->types = e;
		e = &g->types[g->ntypes++];
	}
	*e = (struct type_ent){ .type = type,
				.name = name,
				.spec = spec,
				.name_len = name_len,
				.spec_len = spec_len };
	return 0;
}

static int collect_freq(void *arg, uint64_t gen, uint64_t hz)
{
	struct trace *t = arg;
	struct gen_info *g = gen_get(t, gen, true);

	if (!g)
		return -ENOMEM;
	g->hz = hz;
	if (!t->fallback_hz)
		t->fallback_hz = hz;
	return 0;
}

static int collect_lost(void *arg, uint64_t gen, uint64_t tid,
			unsigned int level, uint64_t count)
{
	struct trace *t = arg;
	struct thread_info *th = thread_get(t, tid);

	(void)gen;
	if (!th)
		return -ENOMEM;
	th->lost[level] += count;
	t->lost += count;
	return 0;
}

static int collect_end(void *arg, uint64_t gen, uint64_t batches,
		       uint64_t flags)
{
	struct trace *t = arg;
	struct gen_info *g = gen_get(t, gen, true);

	if (!g)
		return -ENOMEM;
	g->ended = true;
	g->batches = batches;
	g->flags = flags;
	t->batches += batches;
	t->table_failures += flags & 1;
	return 0;
}

static int collect_mem_info(void *arg, uint64_t gen, uint64_t min_addr,
			    uint64_t align, uint64_t page_size)
{
	struct gen_info *g = gen_get(arg, gen, true);

	(void)page_size;
	if (!g)
		return -ENOMEM;
	g->has_mem_info = true;
	g->min_addr = min_addr;
	g->align = align;
	return 0;
}

const struct tracedec_visitor trace_collect_visitor = {
	.mem_info = collect_mem_info,
	.event = collect_event,
	.string = collect_string,
	.stack = collect_stack,
	.type = collect_type,
	.freq = collect_freq,
	.lost = collect_lost,
	.gen_end = collect_end,
};

/*
 * Sort @n elements of @size at @arr by @cmp, if they are not in order
 * already: the writer emits its tables in id order, and those need
 * neither the work nor qsort()'s scratch copy.  Nothing at all for fewer
 * than two: qsort() wants a valid array, even of 0 elements.
 */
static void sort(void *arr, size_t n, size_t size,
		 int (*cmp)(const void *, const void *))
{
	const char *p = arr;
	size_t i;

	for (i = 1; i < n && cmp(p + (i - 1) * size, p + i * size) <= 0; i++)
		;
	if (i < n)
		qsort(arr, n, size, cmp);
}

/* Sort the id tables and find the trace's first and last event times. */
void trace_finish_collect(struct trace *t)
{
	if (!t->fallback_hz) {
		t->fallback_hz = 1000000000u; /* no F record at all: ns */
		t->hz_guessed = true;
	}
	t->base_ns = UINT64_MAX;
	for (size_t i = 0; i < t->ngens; i++) {
		struct gen_info *g = &t->gens[i];
		uint64_t lo, hi;

		t->hz_guessed |= !g->hz && g->events;
		sort(g->strs, g->nstrs, sizeof(*g->strs), cmp_str);
		sort(g->stacks, g->nstacks, sizeof(*g->stacks), cmp_stack);
		if (!g->events)
			continue;
		lo = to_ns(t, g, g->min_ticks);
		hi = to_ns(t, g, g->max_ticks);
		if (lo < t->base_ns)
			t->base_ns = lo;
		if (hi > t->end_ns)
			t->end_ns = hi;
	}
	if (t->base_ns == UINT64_MAX)
		t->base_ns = t->end_ns = 0;
}
