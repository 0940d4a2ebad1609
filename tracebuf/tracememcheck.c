// SPDX-License-Identifier: MIT
/*
 * tracebuf/tracememcheck.c - tracedec_mem_check(): replay a stream's
 * memory events (tracedec.h, FORMAT.md).
 *
 * The decode (incremental: tracedec_stream_*) collects the memory events
 * (generation, id, kind, size, time, stream position) and the losses of
 * the generations open; when a generation's end record comes, its events
 * are taken out, a sort by (generation, id, snapshot first, time,
 * position) puts each object's life in order, and one pass replays it:
 * an id starts live if the snapshot has it; an allocation of a live id
 * is a double allocation (a free was missed), a free of an id not live is
 * unknown.
 * What is live at a generation's end is compared with the next
 * generation's snapshot, by a merge of the two id-sorted lists.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracedec.h>

#include "ring/compiler.h"

enum { MK_EXISTS, MK_ALLOC, MK_FREE }; /* sort order within an id */

struct mev {
	uint64_t gen, id, size, ticks;
	uint64_t pos; /* stream order */
	unsigned int kind;
};

struct mgen {
	uint64_t gen, lost;
	bool info, ended;
};

struct mcheck {
	const struct tracedec_mem_visitor *v;
	void *arg;
	struct mev *ev; /* of the generations not replayed yet */
	size_t nev, cap;
	uint64_t npos; /* events seen: the next one's stream position */
	struct mgen *gens;
	size_t ngens, gcap;
	uint64_t *live, *prev_live; /* ids live at a generation's end */
	size_t nlive, nprev_live, live_cap, prev_cap;
	uint64_t prev_gen; /* whose end prev_live is; 0 none */
	bool oom;
};

static void *grow(void *p, size_t *cap, size_t need, size_t size, bool *oom)
{
	size_t n = *cap ? *cap : 256;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	p = realloc(p, n * size);
	if (!p) {
		*oom = true;
		return NULL;
	}
	*cap = n;
	return p;
}

static struct mgen *gen_of(struct mcheck *c, uint64_t gen)
{
	struct mgen *g;

	for (size_t i = c->ngens; i-- > 0;)
		if (c->gens[i].gen == gen)
			return &c->gens[i];
	g = grow(c->gens, &c->gcap, c->ngens + 1, sizeof(*g), &c->oom);
	if (!g)
		return NULL;
	c->gens = g;
	g = &c->gens[c->ngens++];
	memset(g, 0, sizeof(*g));
	g->gen = gen;
	return g;
}

static int on_event(void *arg, const struct tracedec_event *ev)
{
	struct mcheck *c = arg;
	struct mev *e;

	if (ev->version < 2 || ev->type < 3 || ev->type > 5)
		return 0;
	e = grow(c->ev, &c->cap, c->nev + 1, sizeof(*e), &c->oom);
	if (!e || !gen_of(c, ev->gen))
		return -ENOMEM;
	c->ev = e;
	e = &c->ev[c->nev];
	e->gen = ev->gen;
	e->id = ev->args[0];
	e->size = ev->type == 4 ? 0 : ev->args[1];
	e->ticks = ev->ticks;
	e->pos = c->npos++;
	c->nev++;
	e->kind = ev->type == 5	  ? MK_EXISTS
		  : ev->type == 3 ? MK_ALLOC
				  : MK_FREE;
	return 0;
}

static int on_lost(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		   uint64_t count)
{
	struct mgen *g = gen_of(arg, gen);

	(void)tid;
	(void)level;
	if (!g)
		return -ENOMEM;
	g->lost += count;
	return 0;
}

static int on_info(void *arg, uint64_t gen, uint64_t min_addr, uint64_t align,
		   uint64_t page)
{
	struct mgen *g = gen_of(arg, gen);

	(void)min_addr;
	(void)align;
	(void)page;
	if (!g)
		return -ENOMEM;
	g->info = true;
	return 0;
}

static int replay_ended(struct mcheck *c, struct mgen *mg);

static int on_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct mgen *g = gen_of(arg, gen);

	(void)batches;
	(void)flags;
	if (!g)
		return -ENOMEM;
	g->ended = true;
	/* Its every event is in (FORMAT.md): replay it now. */
	return replay_ended(arg, g);
}

static int cmp_mev(const void *a, const void *b)
{
	const struct mev *x = a, *y = b;

	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if ((x->kind == MK_EXISTS) != (y->kind == MK_EXISTS))
		return x->kind == MK_EXISTS ? -1 : 1;
	if (x->ticks != y->ticks)
		return x->ticks < y->ticks ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_gen(const void *a, const void *b)
{
	const struct mgen *x = a, *y = b;

	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

/* Replay one id's events e[0 .. n) of generation @g. */
static int replay_id(struct mcheck *c, const struct tracedec_mem_visitor *v,
		     void *arg, struct tracedec_mem_gen *g, const struct mev *e,
		     size_t n, uint64_t start)
{
	bool live = false;
	uint64_t size = 0;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		int64_t db = 0, dobj = 0;
		uint64_t at = e[i].ticks;

		switch (e[i].kind) {
		case MK_EXISTS:
		case MK_ALLOC:
			if (e[i].kind == MK_EXISTS) {
				g->exists++;
				at = start;
			} else {
				g->allocs++;
			}
			if (live) { /* twice in a snapshot, or a free missed */
				g->double_allocs++;
				db = -(int64_t)size;
				dobj = -1;
			}
			live = true;
			size = e[i].size;
			db += (int64_t)size;
			dobj += 1;
			break;
		default:
			g->frees++;
			if (!live) {
				if (!g->unknown_frees++)
					g->first_unknown_id = e[i].id;
				break;
			}
			live = false;
			db = -(int64_t)size;
			dobj = -1;
			break;
		}
		if ((db || dobj) && v->change)
			rc = v->change(arg, g->gen, at, db, dobj);
	}
	if (live && !rc) {
		uint64_t *l = grow(c->live, &c->live_cap, c->nlive + 1,
				   sizeof(*l), &c->oom);

		if (!l)
			return -ENOMEM;
		c->live = l;
		c->live[c->nlive++] = e[0].id;
		g->live_objects++;
		g->live_bytes += size;
	}
	return rc;
}

/* Compare the snapshot of @g (its exists ids, sorted) with prev_live. */
static void compare_snapshot(struct mcheck *c, struct tracedec_mem_gen *g,
			     const struct mev *e, size_t n)
{
	size_t i = 0, j = 0;

	if (!c->prev_gen || c->prev_gen + 1 != g->gen)
		return;
	while (i < n || j < c->nprev_live) {
		uint64_t a = UINT64_MAX, b = UINT64_MAX;

		while (i < n && e[i].kind != MK_EXISTS)
			i++;
		if (i < n)
			a = e[i].id;
		if (j < c->nprev_live)
			b = c->prev_live[j];
		if (i >= n && j >= c->nprev_live)
			break;
		if (a == b) {
			/* Skip the rest of this id's exists events. */
			while (i < n && e[i].id == a)
				i++;
			j++;
		} else if (a < b) {
			g->snapshot_extra++;
			while (i < n && e[i].id == a)
				i++;
		} else {
			g->snapshot_missing++;
			j++;
		}
	}
}

static int replay_gen(struct mcheck *c, const struct tracedec_mem_visitor *v,
		      void *arg, const struct mgen *mg, const struct mev *e,
		      size_t n)
{
	struct tracedec_mem_gen g = { .gen = mg->gen, .lost = mg->lost };
	uint64_t start = UINT64_MAX, *t;
	size_t t_cap;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		if (e[i].kind != MK_EXISTS && e[i].ticks < start)
			start = e[i].ticks;
	for (size_t i = 0; i < n; i++)
		if (e[i].kind == MK_EXISTS && e[i].ticks < start)
			start = e[i].ticks;
	c->nlive = 0;
	for (size_t i = 0, k; i < n && !rc; i = k) {
		for (k = i + 1; k < n && e[k].id == e[i].id; k++)
			;
		rc = replay_id(c, v, arg, &g, e + i, k - i, start);
	}
	if (rc)
		return rc;
	compare_snapshot(c, &g, e, n);
	/* This generation's live ids are the next one's reference. */
	t = c->prev_live;
	t_cap = c->prev_cap;
	c->prev_live = c->live;
	c->prev_cap = c->live_cap;
	c->nprev_live = c->nlive;
	c->live = t;
	c->live_cap = t_cap;
	c->prev_gen = mg->ended ? mg->gen : 0;
	return v->gen ? v->gen(arg, &g) : 0;
}

/*
 * Replay generation @mg (whose end record came, or at the stream's end)
 * with its events, taken out of c->ev (the other open generation's stay,
 * in stream order), then forget it.
 */
static int replay_one(struct mcheck *c, struct mgen *mg)
{
	struct mev *mine, *e = c->ev;
	size_t n = 0, rest = 0;
	int rc = 0;

	for (size_t i = 0; i < c->nev; i++)
		n += e[i].gen == mg->gen;
	mine = malloc((n ? n : 1) * sizeof(*mine));
	if (!mine)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < c->nev; i++) {
		if (e[i].gen == mg->gen)
			mine[n++] = e[i];
		else
			e[rest++] = e[i];
	}
	c->nev = rest;
	if (n > 1)
		qsort(mine, n, sizeof(*mine), cmp_mev);
	if (n || mg->info)
		rc = replay_gen(c, c->v, c->arg, mg, mine, n);
	else
		c->prev_gen = 0;
	free(mine);
	/* Forget it: a generation ends once. */
	*mg = c->gens[--c->ngens];
	return rc;
}

static int replay_ended(struct mcheck *c, struct mgen *mg)
{
	return replay_one(c, mg);
}

/* At the stream's end: the generations that never ended, in order. */
static int replay_rest(struct mcheck *c)
{
	int rc = 0;

	if (c->ngens > 1)
		qsort(c->gens, c->ngens, sizeof(*c->gens), cmp_gen);
	while (c->ngens && !rc) {
		/* The lowest first; replay_one() moves the last into it. */
		struct mgen g = c->gens[0];

		memmove(c->gens, c->gens + 1, --c->ngens * sizeof(*c->gens));
		c->gens[c->ngens++] = g;
		rc = replay_one(c, &c->gens[c->ngens - 1]);
	}
	return rc;
}

struct tracedec_mem_stream {
	struct tracedec_stream *dec;
	struct mcheck c;
};

static const struct tracedec_visitor collect = {
	.event = on_event,
	.lost = on_lost,
	.mem_info = on_info,
	.gen_end = on_end,
};

RING_API struct tracedec_mem_stream *
tracedec_mem_stream_new(const struct tracedec_mem_visitor *v, void *arg)
{
	static const struct tracedec_mem_visitor none;
	struct tracedec_mem_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->c.v = v ? v : &none;
	s->c.arg = arg;
	s->dec = tracedec_stream_new(&collect, &s->c);
	if (!s->dec) {
		free(s);
		return NULL;
	}
	return s;
}

RING_API void tracedec_mem_stream_free(struct tracedec_mem_stream *s)
{
	if (!s)
		return;
	tracedec_stream_free(s->dec);
	free(s->c.ev);
	free(s->c.gens);
	free(s->c.live);
	free(s->c.prev_live);
	free(s);
}

/* A failure of ours (out of memory) wins over the decoder's word for it. */
static int mem_rc(struct tracedec_mem_stream *s, int rc)
{
	if (s->c.oom)
		return -ENOMEM;
	return rc;
}

RING_API int tracedec_mem_stream_feed(struct tracedec_mem_stream *s,
				      const uint8_t *buf, size_t len,
				      size_t *used, struct tracedec_error *err)
{
	if (!s) {
		if (used)
			*used = 0;
		return -EINVAL;
	}
	return mem_rc(s, tracedec_stream_feed(s->dec, buf, len, used, err));
}

RING_API int tracedec_mem_stream_end(struct tracedec_mem_stream *s, size_t left,
				     struct tracedec_error *err)
{
	int rc;

	if (!s)
		return -EINVAL;
	rc = mem_rc(s, tracedec_stream_end(s->dec, left, err));
	if (!rc)
		rc = mem_rc(s, replay_rest(&s->c));
	return rc;
}

RING_API int tracedec_mem_check(const uint8_t *buf, size_t len,
				const struct tracedec_mem_visitor *v, void *arg,
				struct tracedec_error *err)
{
	struct tracedec_mem_stream *s;
	size_t used;
	int rc;

	/* Nothing is reported of a stream that does not decode. */
	rc = tracedec_decode(buf, len, NULL, NULL, err);
	if (rc)
		return rc;
	s = tracedec_mem_stream_new(v, arg);
	if (!s)
		return -ENOMEM;
	rc = tracedec_mem_stream_feed(s, buf, len, &used, err);
	if (!rc)
		rc = tracedec_mem_stream_end(s, len - used, err);
	tracedec_mem_stream_free(s);
	return rc;
}
