// SPDX-License-Identifier: MIT
/*
 * profring-trace.c - print a profring trace stream (tracebuf/FORMAT.md).
 *
 *	profring-trace dump FILE	every record and event as text
 *	profring-trace summary FILE	counts: generations, events, losses
 *	profring-trace json FILE	Chrome trace-event JSON (Perfetto UI)
 *
 * The whole file is read into memory and decoded twice with
 * tracedec_decode(): the first pass validates it and collects each
 * generation's tables (frequency, strings, stacks, type names - they come
 * after the generation's events), the second prints, resolving ids through
 * those tables.  A stream that does not decode, or that ends inside a
 * generation (its tables missing), is an error: the message and its byte
 * offset go to stderr and the exit status is 1.  Usage errors exit 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "pprof/table.h"

#define NLEVELS 2
#define JSON_MAX_SAFE_INT (1ull << 53)

struct str_ent {
	uint64_t id;
	char *s;
	size_t len;
};

struct stack_ent {
	uint64_t id;
	uint64_t *pcs;
	size_t n;
};

struct type_ent {
	char *name; /* NULL: not named in this generation */
	char *spec;
	size_t name_len, spec_len;
};

/* What the first pass learns about one generation. */
struct gen_info {
	uint64_t gen;
	uint64_t hz; /* 0: no F record */
	uint64_t min_ticks, max_ticks;
	uint64_t events, batches, flags;
	bool ended;
	struct str_ent *strs;
	size_t nstrs, cap_strs;
	struct stack_ent *stacks;
	size_t nstacks, cap_stacks;
	struct type_ent types[TRACEDEC_MAX_TYPE + 1];
};

struct thread_info {
	uint64_t tid;
	uint64_t events[NLEVELS];
	uint64_t lost[NLEVELS];
};

struct trace {
	const char *path;
	uint8_t *buf;
	size_t len;
	struct gen_info *gens;
	size_t ngens, cap_gens, gen_hint;
	struct thread_info *threads;
	size_t nthreads, cap_threads, thread_hint;
	uint64_t type_events[TRACEDEC_MAX_TYPE + 1];
	uint64_t events, payload_events, lost, batches, strings, stacks;
	uint64_t table_failures;
	uint64_t fallback_hz; /* for a generation without an F record */
	bool hz_guessed;
	uint64_t base_ns, end_ns; /* first and last event */
	/* printing state (second pass) */
	FILE *out;
	uint64_t printed;
	uint64_t last_gen, last_tid, last_seq;
	unsigned int last_level;
	bool in_batch;
};

/* Names of the library's own event types, for streams that leave them out. */
static const struct {
	const char *name, *spec;
} builtin_types[TRACEBUF_EV_USER] = {
	[TRACEBUF_EV_CPU_SAMPLE] = { "cpu sample", "tuku" },
	[TRACEBUF_EV_LOST_SAMPLES] = { "lost samples", "u" },
};

/* ---- memory ------------------------------------------------------------- */

static char *memdup(const char *s, size_t len)
{
	char *p = malloc(len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = 0;
	}
	return p;
}

static void gen_info_free(struct gen_info *g)
{
	for (size_t i = 0; i < g->nstrs; i++)
		free(g->strs[i].s);
	for (size_t i = 0; i < g->nstacks; i++)
		free(g->stacks[i].pcs);
	for (int i = 0; i <= TRACEDEC_MAX_TYPE; i++) {
		free(g->types[i].name);
		free(g->types[i].spec);
	}
	free(g->strs);
	free(g->stacks);
}

static void trace_free(struct trace *t)
{
	for (size_t i = 0; i < t->ngens; i++)
		gen_info_free(&t->gens[i]);
	free(t->gens);
	free(t->threads);
	free(t->buf);
}

/* ---- reading the file --------------------------------------------------- */

/**
 * read_file() - read all of @t->path (a file or a pipe) into @t->buf.
 *
 * Return: 0, or -1 with a message on stderr.
 */
static int read_file(struct trace *t)
{
	size_t cap = 0;
	FILE *f = fopen(t->path, "rb");
	void *p;

	if (!f) {
		fprintf(stderr, "profring-trace: %s: %s\n", t->path,
			strerror(errno));
		return -1;
	}
	for (;;) {
		size_t n;

		p = array_grow(t->buf, &cap, t->len + 65536, 1);
		if (!p) {
			fprintf(stderr, "profring-trace: %s: out of memory\n",
				t->path);
			goto fail;
		}
		t->buf = p;
		n = fread(t->buf + t->len, 1, cap - t->len, f);
		t->len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "profring-trace: %s: read error\n", t->path);
		goto fail;
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	return -1;
}

/* ---- lookups ------------------------------------------------------------ */

/* The generation @gen, or NULL; @add creates it (NULL when out of memory). */
static struct gen_info *gen_get(struct trace *t, uint64_t gen, bool add)
{
	struct gen_info *g;
	size_t i;

	if (t->gen_hint < t->ngens && t->gens[t->gen_hint].gen == gen)
		return &t->gens[t->gen_hint];
	/* Records interleave only across the few open generations: the last. */
	for (i = t->ngens; i-- > 0;) {
		if (t->gens[i].gen == gen) {
			t->gen_hint = i;
			return &t->gens[i];
		}
	}
	if (!add)
		return NULL;
	g = array_grow(t->gens, &t->cap_gens, t->ngens + 1, sizeof(*g));
	if (!g)
		return NULL;
	t->gens = g;
	g = &t->gens[t->ngens];
	memset(g, 0, sizeof(*g));
	g->gen = gen;
	g->min_ticks = UINT64_MAX;
	t->gen_hint = t->ngens++;
	return g;
}

/* The thread @tid, created if new; NULL when out of memory. */
static struct thread_info *thread_get(struct trace *t, uint64_t tid)
{
	struct thread_info *th;

	if (t->thread_hint < t->nthreads &&
	    t->threads[t->thread_hint].tid == tid)
		return &t->threads[t->thread_hint];
	for (size_t i = 0; i < t->nthreads; i++) {
		if (t->threads[i].tid == tid) {
			t->thread_hint = i;
			return &t->threads[i];
		}
	}
	th = array_grow(t->threads, &t->cap_threads, t->nthreads + 1,
			sizeof(*th));
	if (!th)
		return NULL;
	t->threads = th;
	th = &t->threads[t->nthreads];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	t->thread_hint = t->nthreads++;
	return th;
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

static const struct stack_ent *find_stack(const struct gen_info *g, uint64_t id)
{
	struct stack_ent key = { .id = id };

	if (!g->nstacks)
		return NULL;
	return bsearch(&key, g->stacks, g->nstacks, sizeof(key), cmp_stack);
}

/* The name of @type in @g (or a built-in one); NULL if it has none. */
static const char *type_name(const struct gen_info *g, unsigned int type,
			     size_t *len)
{
	if (g && g->types[type].name && g->types[type].name_len) {
		*len = g->types[type].name_len;
		return g->types[type].name;
	}
	if (type < TRACEBUF_EV_USER && builtin_types[type].name) {
		*len = strlen(builtin_types[type].name);
		return builtin_types[type].name;
	}
	return NULL;
}

/* The spec letter of argument @i of @type in @g: 'u' when unknown. */
static char type_arg(const struct gen_info *g, unsigned int type,
		     unsigned int i)
{
	const char *spec = NULL;
	size_t len = 0;

	if (g && g->types[type].name) {
		spec = g->types[type].spec;
		len = g->types[type].spec_len;
	} else if (type < TRACEBUF_EV_USER && builtin_types[type].spec) {
		spec = builtin_types[type].spec;
		len = strlen(spec);
	}
	return i < len ? spec[i] : 'u';
}

/* Ticks of @g's clock to nanoseconds. */
static uint64_t to_ns(const struct trace *t, const struct gen_info *g,
		      uint64_t ticks)
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
	struct thread_info *th = thread_get(t, ev->tid);

	if (!g || !th)
		return -ENOMEM;
	if (ev->ticks < g->min_ticks)
		g->min_ticks = ev->ticks;
	if (ev->ticks > g->max_ticks)
		g->max_ticks = ev->ticks;
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
	e = array_grow(g->strs, &g->cap_strs, g->nstrs + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	g->strs = e;
	e = &g->strs[g->nstrs];
	e->id = id;
	e->len = len;
	e->s = memdup(s, len);
	if (!e->s)
		return -ENOMEM;
	g->nstrs++;
	t->strings++;
	return 0;
}

static int collect_stack(void *arg, uint64_t gen, uint64_t id,
			 const uint64_t *pcs, size_t n)
{
	struct trace *t = arg;
	struct gen_info *g = gen_get(t, gen, true);
	struct stack_ent *e;

	if (!g)
		return -ENOMEM;
	e = array_grow(g->stacks, &g->cap_stacks, g->nstacks + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	g->stacks = e;
	e = &g->stacks[g->nstacks];
	e->id = id;
	e->n = n;
	e->pcs = malloc(n * sizeof(*pcs));
	if (!e->pcs)
		return -ENOMEM;
	memcpy(e->pcs, pcs, n * sizeof(*pcs));
	g->nstacks++;
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
	e = &g->types[type];
	free(e->name);
	free(e->spec);
	e->name = memdup(name, name_len);
	e->spec = memdup(spec, spec_len);
	e->name_len = name_len;
	e->spec_len = spec_len;
	if (!e->name || !e->spec)
		return -ENOMEM;
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

static const struct tracedec_visitor collect_visitor = {
	.event = collect_event,
	.string = collect_string,
	.stack = collect_stack,
	.type = collect_type,
	.freq = collect_freq,
	.lost = collect_lost,
	.gen_end = collect_end,
};

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
		qsort(g->strs, g->nstrs, sizeof(*g->strs), cmp_str);
		qsort(g->stacks, g->nstacks, sizeof(*g->stacks), cmp_stack);
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

/* A generation without its end record lacks its tables: refuse it. */
static int check_ended(const struct trace *t)
{
	for (size_t i = 0; i < t->ngens; i++) {
		if (t->gens[i].ended)
			continue;
		fprintf(stderr,
			"profring-trace: %s: offset %zu: stream ends inside generation %" PRIu64
			" (no end record)\n",
			t->path, t->len, t->gens[i].gen);
		return -1;
	}
	return 0;
}

/**
 * decode() - run tracedec_decode() over the file with @v.
 *
 * Return: 0, or -1 with the error and its offset on stderr.
 */
static int decode(struct trace *t, const struct tracedec_visitor *v)
{
	struct tracedec_error err = { 0 };
	int rc = tracedec_decode(t->buf, t->len, v, t, &err);

	if (rc == -EBADMSG) {
		fprintf(stderr, "profring-trace: %s: offset %zu: %s\n", t->path,
			err.offset, err.what ? err.what : "bad stream");
		return -1;
	}
	if (rc) {
		fprintf(stderr, "profring-trace: %s: %s\n", t->path,
			strerror(rc < 0 ? -rc : rc));
		return -1;
	}
	return 0;
}

/* ---- output helpers ----------------------------------------------------- */

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

/* A type's name, or "type N", quoted for JSON or bare for text. */
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
	if (json)
		put_quoted(out, name, len);
	else
		fprintf(out, "%.*s(%u)", (int)len, name, type);
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
				k->pcs[i]);
		putc(']', t->out);
	} else if (kind == 's' || kind == 'k') {
		fprintf(t->out, "%s#%" PRIu64 "(%s)",
			kind == 's' ? "string" : "stack", v,
			v ? "missing" : "lost");
	} else {
		fprintf(t->out, "%" PRIu64, v);
	}
}

static int dump_event(void *arg, const struct tracedec_event *ev)
{
	struct trace *t = arg;
	const struct gen_info *g = gen_get(t, ev->gen, false);
	uint64_t ns = to_ns(t, g, ev->ticks) - t->base_ns;

	dump_batch_line(t, ev);
	fprintf(t->out,
		"  event gen=%" PRIu64 " thread=%" PRIu64 " level=%u t=%" PRIu64
		"ns ",
		ev->gen, ev->tid, ev->level, ns);
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

static const struct tracedec_visitor dump_visitor = {
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
	fprintf(t->out,
		"# %s: %zu bytes, %" PRIu64
		" events; t= ns since the first event\n",
		t->path, t->len, t->events);
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
		if (t->gens[i].types[type].name) {
			g = &t->gens[i];
			break;
		}
	}
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

static int cmd_summary(struct trace *t)
{
	uint64_t first = t->ngens ? t->gens[0].gen : 0;
	uint64_t last = t->ngens ? t->gens[t->ngens - 1].gen : 0;

	fprintf(t->out, "file %s\n", t->path);
	fprintf(t->out, "bytes %zu\n", t->len);
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
	fprintf(t->out, "threads %zu\n", t->nthreads);
	summary_threads(t);
	return 0;
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

static void json_arg(FILE *out, const struct gen_info *g, char kind, uint64_t v)
{
	const struct str_ent *s;
	const struct stack_ent *k;

	if (kind == 's' && (s = find_string(g, v))) {
		put_quoted(out, s->s, s->len);
	} else if (kind == 'k' && (k = find_stack(g, v))) {
		putc('[', out);
		for (size_t i = 0; i < k->n; i++)
			fprintf(out, "%s\"0x%" PRIx64 "\"", i ? "," : "",
				k->pcs[i]);
		putc(']', out);
	} else {
		json_u64(out, v); /* a number, or an id that did not resolve */
	}
}

static int json_event(void *arg, const struct tracedec_event *ev)
{
	struct trace *t = arg;
	const struct gen_info *g = gen_get(t, ev->gen, false);
	uint64_t ns = to_ns(t, g, ev->ticks) - t->base_ns;

	fputs(t->printed++ ? ",\n{\"name\":" : "\n{\"name\":", t->out);
	put_type(t->out, g, ev->type, true);
	fprintf(t->out,
		",\"cat\":\"profring\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%" PRIu64
		".%03u,\"pid\":1,\"tid\":%" PRIu64 ",\"args\":{\"gen\":%" PRIu64
		",\"level\":%u",
		ns / 1000, (unsigned int)(ns % 1000), ev->tid, ev->gen,
		ev->level);
	if (ev->bytes) {
		fputs(",\"bytes\":\"", t->out);
		put_hex_bytes(t->out, ev->bytes, ev->nbytes);
		putc('"', t->out);
	}
	for (unsigned int i = 0; i < ev->nargs; i++) {
		fprintf(t->out, ",\"arg%u\":", i);
		json_arg(t->out, g, type_arg(g, ev->type, i), ev->args[i]);
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
	json_threads(t);
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", t->out);
	return 0;
}

/* ---- main --------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr, "usage: profring-trace dump|summary|json FILE\n");
	return 2;
}

/**
 * load() - read and validate the file, collecting its tables.
 *
 * Return: 0, or -1 with a message on stderr.
 */
static int load(struct trace *t)
{
	if (read_file(t))
		return -1;
	if (decode(t, &collect_visitor))
		return -1;
	if (check_ended(t))
		return -1;
	finish_collect(t);
	return 0;
}

int main(int argc, char **argv)
{
	struct trace t = { .out = stdout };
	int (*cmd)(struct trace * t);
	int rc = 1;

	if (argc != 3)
		return usage();
	if (!strcmp(argv[1], "dump"))
		cmd = cmd_dump;
	else if (!strcmp(argv[1], "summary"))
		cmd = cmd_summary;
	else if (!strcmp(argv[1], "json"))
		cmd = cmd_json;
	else
		return usage();
	t.path = argv[2];
	if (load(&t))
		goto out;
	if (cmd(&t))
		goto out;
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "profring-trace: write error\n");
		goto out;
	}
	rc = 0;
out:
	trace_free(&t);
	return rc;
}
