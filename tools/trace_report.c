// SPDX-License-Identifier: MIT
/*
 * trace_report.c - profring-trace's reports of a trace stream held in
 * memory (trace_report.h).
 *
 * The stream is decoded twice with tracedec_decode(): the first pass
 * validates it and collects each generation's tables (frequency, strings,
 * stacks, type names - they come after the generation's events), the
 * second prints, resolving ids through those tables.
 *
 * Linear time: generations and threads are found through hash indexes
 * (open addressing over their arrays, hashed with a per-process seed so
 * that no stream can pick colliding keys); a generation's strings and
 * stacks are sorted once and found by binary search.  Linear memory:
 * strings and type names are not copied (they point into the stream),
 * the PCs of all stacks share one pool, a generation holds only the
 * types it names, and arrays grow by half, their room untouched until
 * used.  The worst stream is one of minimal table entries: 2 bytes of
 * string entry take 24 bytes of table; an ordinary trace, mostly events
 * (which are not kept), needs a small fraction of its size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "tools/trace_report.h"
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
};

/* The built-in name and spec of @type in @g, if it has them. */
static bool builtin(const struct gen_info *g, unsigned int type)
{
	if (type >= TRACEBUF_EV_USER || !builtin_types[type].name)
		return false;
	if (type == TRACEBUF_EV_SPAN)
		return g && g->version >= 3;
	return type < TRACEBUF_EV_ALLOC || (g && g->version >= 2);
}

/* Is @ev a span (type 6 from version 3 on)? */
static bool is_span(const struct tracedec_event *ev)
{
	return ev->type == TRACEBUF_EV_SPAN && ev->version >= 3;
}

/* ---- memory ------------------------------------------------------------- */

static void trace_free(struct trace *t)
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

/* ---- the indexes -------------------------------------------------------- */

/* The kernel's 16 random bytes for this process (else a constant). */
static uint64_t process_seed(void)
{
	const uint8_t *r = (const uint8_t *)getauxval(AT_RANDOM);
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	if (r)
		memcpy(&seed, r, sizeof(seed));
	return seed;
}

/* splitmix64's finalizer over @key ^ @seed: every bit moves every bit. */
static uint64_t mix(uint64_t key, uint64_t seed)
{
	uint64_t z = key ^ seed;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t key_at(const void *base, size_t esize, size_t pos)
{
	uint64_t key;

	memcpy(&key, (const char *)base + pos * esize, sizeof(key));
	return key;
}

/* The slot of @key's entry in @base, or the empty slot it would take. */
static size_t *index_slot(const struct index *x, uint64_t seed,
			  const void *base, size_t esize, uint64_t key)
{
	size_t mask = x->cap - 1, i = (size_t)mix(key, seed) & mask;

	for (;; i = (i + 1) & mask) {
		size_t p = x->slots[i];

		if (!p || key_at(base, esize, p - 1) == key)
			return &x->slots[i];
	}
}

/* Room for one more entry (@base holds the x->n there are): 0 or -1. */
static int index_reserve(struct index *x, uint64_t seed, const void *base,
			 size_t esize)
{
	struct index old = *x;

	if (2 * (x->n + 1) <= x->cap)
		return 0;
	x->cap = old.cap ? 2 * old.cap : 64;
	x->slots = calloc(x->cap, sizeof(*x->slots));
	if (!x->slots) {
		*x = old;
		return -1;
	}
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i])
			*index_slot(x, seed, base, esize,
				    key_at(base, esize, old.slots[i] - 1)) =
				old.slots[i];
	free(old.slots);
	return 0;
}

/* The position of @key's entry in @base, found through @x; or SIZE_MAX. */
static size_t index_find(const struct index *x, uint64_t seed, const void *base,
			 size_t esize, uint64_t key)
{
	size_t *slot;

	if (!x->cap)
		return SIZE_MAX;
	slot = index_slot(x, seed, base, esize, key);
	return *slot ? *slot - 1 : SIZE_MAX;
}

/*
 * Put the entry at @pos of @base (the last, its key set, not yet in @x)
 * into @x.  Return: 0, or -1 when out of memory.
 */
static int index_add(struct index *x, uint64_t seed, const void *base,
		     size_t esize, size_t pos)
{
	if (index_reserve(x, seed, base, esize))
		return -1;
	*index_slot(x, seed, base, esize, key_at(base, esize, pos)) = pos + 1;
	x->n++;
	return 0;
}

/*
 * grow() - room for @need elements of @size bytes in @arr (of *@cap).
 *
 * Half again as many each time (not zeroed, so that pages of room not yet
 * used stay untouched).  Return: the array, or NULL when out of memory or
 * when the size would overflow (@arr and @*cap then as they were).
 */
static void *grow(void *arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return arr;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap += ncap / 2;
	}
	if (ncap > SIZE_MAX / size)
		return NULL;
	p = realloc(arr, ncap * size);
	if (p)
		*cap = ncap;
	return p;
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
		g = grow(t->gens, &t->cap_gens, t->ngens + 1, sizeof(*g));
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
		th = grow(t->threads, &t->cap_threads, t->nthreads + 1,
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

static const struct str_ent *find_string(const struct gen_info *g, uint64_t id)
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
static struct type_ent *named_type(const struct gen_info *g, unsigned int type)
{
	for (size_t i = 0; g && i < g->ntypes; i++)
		if (g->types[i].type == type)
			return &g->types[i];
	return NULL;
}

/* The name of @type in @g (or a built-in one); NULL if it has none. */
static const char *type_name(const struct gen_info *g, unsigned int type,
			     size_t *len)
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
static char type_arg(const struct gen_info *g, unsigned int type,
		     unsigned int i)
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
	e = grow(g->strs, &g->cap_strs, g->nstrs + 1, sizeof(*e));
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
	e = grow(g->stacks, &g->cap_stacks, g->nstacks + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	g->stacks = e;
	p = grow(t->pcs, &t->cap_pcs, t->npcs + n, sizeof(*p));
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

static const struct tracedec_visitor collect_visitor = {
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
static void finish_collect(struct trace *t)
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

/* ---- output helpers ----------------------------------------------------- */

/*
 * put_text() - write @len bytes at @s for the text reports: printable
 * ASCII as it is, a backslash as \\, any other byte as \xHH, so that the
 * report holds no control character (no terminal escape) from the stream.
 */
static void put_text(FILE *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\')
			fputs("\\\\", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			putc(c, out);
	}
}

/**
 * put_quoted() - write @len bytes at @s as a JSON string literal: quotes,
 * backslashes and control characters escaped, every byte outside printable
 * ASCII as \u00XX (so any input gives valid JSON; the dump uses it too).
 */
static void put_quoted(FILE *out, const char *s, size_t len)
{
	putc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '\r')
			fputs("\\r", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			putc(c, out);
	}
	putc('"', out);
}

static void put_hex_bytes(FILE *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%02x", p[i]);
}

/* A type's name, or "type N", quoted for JSON or escaped for text. */
static void put_type(FILE *out, const struct gen_info *g, unsigned int type,
		     bool json)
{
	size_t len;
	const char *name = type_name(g, type, &len);
	char buf[32];

	if (!name) {
		snprintf(buf, sizeof(buf), "type %u", type);
		name = buf;
		len = strlen(buf);
	}
	if (json) {
		put_quoted(out, name, len);
	} else {
		put_text(out, name, len);
		fprintf(out, "(%u)", type);
	}
}

/* ---- errors ------------------------------------------------------------- */

/* One line on t->err: "profring-trace: NAME: " and @what. */
void complain(const struct trace *t, const char *what)
{
	fputs("profring-trace: ", t->err);
	put_text(t->err, t->path, strlen(t->path));
	fprintf(t->err, ": %s\n", what);
}

/* A generation without its end record lacks its tables: refuse it. */
static int check_ended(const struct trace *t)
{
	char msg[128];

	for (size_t i = 0; i < t->ngens; i++) {
		if (t->gens[i].ended)
			continue;
		snprintf(msg, sizeof(msg),
			 "offset %zu: stream ends inside generation %" PRIu64
			 " (no end record)",
			 t->len, t->gens[i].gen);
		complain(t, msg);
		return -1;
	}
	return 0;
}

/**
 * decode() - run tracedec_decode() over the stream with @v.
 *
 * Return: 0, or -1 with the error and its offset on t->err.
 */
static int decode(struct trace *t, const struct tracedec_visitor *v)
{
	struct tracedec_error err = { 0 };
	int rc = tracedec_decode(t->buf, t->len, v, t, &err);
	char msg[160];

	if (rc == -EBADMSG) {
		snprintf(msg, sizeof(msg), "offset %zu: %s", err.offset,
			 err.what ? err.what : "bad stream");
		complain(t, msg);
		return -1;
	}
	if (rc) {
		complain(t, strerror(rc < 0 ? -rc : rc));
		return -1;
	}
	return 0;
}

/* ---- dump --------------------------------------------------------------- */

static void dump_batch_line(struct trace *t, const struct tracedec_event *ev)
{
	if (t->in_batch && t->last_gen == ev->gen && t->last_tid == ev->tid &&
	    t->last_level == ev->level && t->last_seq == ev->batch_seq)
		return;
	fprintf(t->out,
		"batch gen=%" PRIu64 " thread=%" PRIu64 " level=%u seq=%" PRIu64
		"\n",
		ev->gen, ev->tid, ev->level, ev->batch_seq);
	t->in_batch = true;
	t->last_gen = ev->gen;
	t->last_tid = ev->tid;
	t->last_level = ev->level;
	t->last_seq = ev->batch_seq;
}

static void dump_arg(struct trace *t, const struct gen_info *g, char kind,
		     uint64_t v)
{
	const struct str_ent *s;
	const struct stack_ent *k;

	if (kind == 's' && (s = find_string(g, v))) {
		put_quoted(t->out, s->s, s->len);
	} else if (kind == 'k' && (k = find_stack(g, v))) {
		putc('[', t->out);
		for (size_t i = 0; i < k->n; i++)
			fprintf(t->out, "%s0x%" PRIx64, i ? " " : "",
				t->pcs[k->off + i]);
		putc(']', t->out);
	} else if (kind == 's' || kind == 'k') {
		fprintf(t->out, "%s#%" PRIu64 "(%s)",
			kind == 's' ? "string" : "stack", v,
			v ? "missing" : "lost");
	} else if (kind == 'o' && g && g->has_mem_info) {
		fprintf(t->out, "%" PRIu64 "@0x%" PRIx64, v,
			g->min_addr + v * g->align);
	} else {
		fprintf(t->out, "%" PRIu64, v);
	}
}

static int dump_event(void *arg, const struct tracedec_event *ev)
{
	struct trace *t = arg;
	const struct gen_info *g = gen_get(t, ev->gen, false);
	/* The batch line has the writer; the event, the thread it is about. */
	uint64_t ns = to_ns(t, g, ev->time) - t->base_ns;

	dump_batch_line(t, ev);
	fprintf(t->out,
		"  event gen=%" PRIu64 " thread=%" PRIu64 " level=%u t=%" PRIu64
		"ns ",
		ev->gen, ev->thread, ev->level, ns);
	put_type(t->out, g, ev->type, false);
	if (ev->bytes) {
		fprintf(t->out, " bytes[%zu]=", ev->nbytes);
		put_hex_bytes(t->out, ev->bytes, ev->nbytes);
	}
	for (unsigned int i = 0; i < ev->nargs; i++) {
		char kind = type_arg(g, ev->type, i);

		fprintf(t->out, " %c:", kind);
		dump_arg(t, g, kind, ev->args[i]);
	}
	putc('\n', t->out);
	return 0;
}

static int dump_string(void *arg, uint64_t gen, uint64_t id, const char *s,
		       size_t len)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "string gen=%" PRIu64 " id=%" PRIu64 " ", gen, id);
	put_quoted(t->out, s, len);
	putc('\n', t->out);
	return 0;
}

static int dump_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		      size_t n)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "stack gen=%" PRIu64 " id=%" PRIu64 " frames=%zu", gen,
		id, n);
	for (size_t i = 0; i < n; i++)
		fprintf(t->out, " 0x%" PRIx64, pcs[i]);
	putc('\n', t->out);
	return 0;
}

static int dump_type(void *arg, uint64_t gen, unsigned int type,
		     const char *name, size_t name_len, const char *spec,
		     size_t spec_len)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "type gen=%" PRIu64 " type=%u name=", gen, type);
	put_quoted(t->out, name, name_len);
	fputs(" spec=", t->out);
	put_quoted(t->out, spec, spec_len);
	putc('\n', t->out);
	return 0;
}

static int dump_freq(void *arg, uint64_t gen, uint64_t hz)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "freq gen=%" PRIu64 " hz=%" PRIu64 "\n", gen, hz);
	return 0;
}

static int dump_lost(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		     uint64_t count)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out,
		"lost gen=%" PRIu64 " thread=%" PRIu64
		" level=%u count=%" PRIu64 "\n",
		gen, tid, level, count);
	return 0;
}

static int dump_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out,
		"end gen=%" PRIu64 " batches=%" PRIu64 " flags=%#" PRIx64
		"%s\n",
		gen, batches, flags,
		flags & 1 ? " (tables incomplete: out of memory)" : "");
	return 0;
}

static int dump_mem_info(void *arg, uint64_t gen, uint64_t min_addr,
			 uint64_t align, uint64_t page_size)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out,
		"meminfo gen=%" PRIu64 " min_addr=0x%" PRIx64 " align=%" PRIu64
		" page_size=%" PRIu64 "\n",
		gen, min_addr, align, page_size);
	return 0;
}

static const struct tracedec_visitor dump_visitor = {
	.mem_info = dump_mem_info,
	.event = dump_event,
	.string = dump_string,
	.stack = dump_stack,
	.type = dump_type,
	.freq = dump_freq,
	.lost = dump_lost,
	.gen_end = dump_end,
};

static int cmd_dump(struct trace *t)
{
	fputs("# ", t->out);
	put_text(t->out, t->path, strlen(t->path));
	fprintf(t->out,
		": %zu bytes, %" PRIu64
		" events; t= ns since the first event\n",
		t->len, t->events);
	if (t->hz_guessed)
		fprintf(t->out,
			"# some generations have no frequency record\n");
	return decode(t, &dump_visitor);
}

/* ---- summary ------------------------------------------------------------ */

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

	if (!t->type_events[TRACEBUF_EV_SPAN] || t->version < 3)
		return 0;
	if (tracedec_decode(t->buf, t->len, &v, &s, &err)) {
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

static int cmd_summary(struct trace *t)
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

/* ---- json --------------------------------------------------------------- */

static void json_u64(FILE *out, uint64_t v)
{
	/* Above 2^53 a JavaScript number loses digits: keep them as text. */
	if (v > JSON_MAX_SAFE_INT)
		fprintf(out, "\"%" PRIu64 "\"", v);
	else
		fprintf(out, "%" PRIu64, v);
}

static void json_arg(const struct trace *t, const struct gen_info *g, char kind,
		     uint64_t v)
{
	const struct str_ent *s;
	const struct stack_ent *k;

	if (kind == 's' && (s = find_string(g, v))) {
		put_quoted(t->out, s->s, s->len);
	} else if (kind == 'k' && (k = find_stack(g, v))) {
		putc('[', t->out);
		for (size_t i = 0; i < k->n; i++)
			fprintf(t->out, "%s\"0x%" PRIx64 "\"", i ? "," : "",
				t->pcs[k->off + i]);
		putc(']', t->out);
	} else {
		json_u64(t->out, v); /* a number, or an id not resolved */
	}
}

/* A span's name: its string, or "span" if the string is not there. */
static void json_span_name(const struct trace *t, const struct gen_info *g,
			   uint64_t id)
{
	const struct str_ent *s = find_string(g, id);

	if (s)
		put_quoted(t->out, s->s, s->len);
	else
		fputs("\"span\"", t->out);
}

/* Microseconds with nanosecond digits, as the format's ts and dur take. */
static void json_us(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000,
		(unsigned int)(ns % 1000));
}

static int json_event(void *arg, const struct tracedec_event *ev)
{
	struct trace *t = arg;
	const struct gen_info *g = gen_get(t, ev->gen, false);
	/* A CPU sample on the track of the thread it sampled, at its time. */
	uint64_t ns = to_ns(t, g, ev->time) - t->base_ns;

	fputs(t->printed++ ? ",\n{\"name\":" : "\n{\"name\":", t->out);
	if (is_span(ev)) {
		/* A complete event: a slice from its start, nested by time. */
		json_span_name(t, g, ev->args[0]);
		fputs(",\"cat\":\"profring\",\"ph\":\"X\"", t->out);
		json_us(t->out, "ts", ns);
		json_us(t->out, "dur",
			to_ns(t, g, ev->time + ev->duration) - t->base_ns - ns);
	} else {
		put_type(t->out, g, ev->type, true);
		fputs(",\"cat\":\"profring\",\"ph\":\"i\",\"s\":\"t\"", t->out);
		json_us(t->out, "ts", ns);
	}
	fprintf(t->out,
		",\"pid\":1,\"tid\":%" PRIu64 ",\"args\":{\"gen\":%" PRIu64
		",\"level\":%u",
		ev->thread, ev->gen, ev->level);
	if (ev->bytes) {
		fputs(",\"bytes\":\"", t->out);
		put_hex_bytes(t->out, ev->bytes, ev->nbytes);
		putc('"', t->out);
	}
	for (unsigned int i = 0; i < ev->nargs; i++) {
		fprintf(t->out, ",\"arg%u\":", i);
		json_arg(t, g, type_arg(g, ev->type, i), ev->args[i]);
	}
	fputs("}}", t->out);
	return 0;
}

static const struct tracedec_visitor json_visitor = {
	.event = json_event,
};

/* Thread-name metadata, so that each track is labelled. */
static void json_threads(struct trace *t)
{
	for (size_t i = 0; i < t->nthreads; i++)
		fprintf(t->out,
			"%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%" PRIu64
			",\"args\":{\"name\":\"thread %" PRIu64 "\"}}",
			t->printed++ ? "," : "", t->threads[i].tid,
			t->threads[i].tid);
}

static int cmd_json(struct trace *t)
{
	fputs("{\"traceEvents\":[", t->out);
	if (decode(t, &json_visitor))
		return -1;
	if (trace_mem_json(t))
		return -1;
	json_threads(t);
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", t->out);
	return 0;
}

/* ---- the report --------------------------------------------------------- */

int trace_report(enum trace_report_cmd cmd, const char *name,
		 const uint8_t *buf, size_t len, FILE *out, FILE *err)
{
	struct trace t = { .path = name,
			   .buf = buf,
			   .len = len,
			   .seed = process_seed(),
			   .out = out,
			   .err = err };
	int rc = -1;

	if (len >= 12) /* else decode() says what is wrong */
		t.version = (unsigned int)buf[8] | (unsigned int)buf[9] << 8 |
			    (unsigned int)buf[10] << 16 |
			    (unsigned int)buf[11] << 24;
	if (decode(&t, &collect_visitor) || check_ended(&t))
		goto out;
	finish_collect(&t);
	switch (cmd) {
	case TRACE_REPORT_DUMP:
		rc = cmd_dump(&t);
		break;
	case TRACE_REPORT_SUMMARY:
		rc = cmd_summary(&t);
		break;
	case TRACE_REPORT_JSON:
		rc = cmd_json(&t);
		break;
	default:
		complain(&t, "unknown report");
		break;
	}
out:
	trace_free(&t);
	return rc;
}
