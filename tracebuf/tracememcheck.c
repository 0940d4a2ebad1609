// SPDX-License-Identifier: MIT
/*
 * tracebuf/tracememcheck.c - tracedec_mem_check(): replay a stream's
 * memory events (tracedec.h, FORMAT.md).
 *
 * One decode collects every memory event (generation, id, kind, size,
 * time, stream position), the losses and the generation ends; a sort by
 * (generation, id, snapshot first, time, position) puts each object's
 * life in a generation in order, and one pass replays it: an id starts
 * live if the snapshot has it; an allocation of a live id is a double
 * allocation (a free was missed), a free of an id not live is unknown.
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
	struct mev *ev;
	size_t nev, cap;
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
	e->pos = c->nev++;
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

static int on_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct mgen *g = gen_of(arg, gen);

	(void)batches;
	(void)flags;
	if (!g)
		return -ENOMEM;
	g->ended = true;
	return 0;
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

static int replay(struct mcheck *c, const struct tracedec_mem_visitor *v,
		  void *arg)
{
	size_t i = 0;
	int rc = 0;

	/* (qsort() wants a valid array, even of none.) */
	if (c->nev > 1)
		qsort(c->ev, c->nev, sizeof(*c->ev), cmp_mev);
	if (c->ngens > 1)
		qsort(c->gens, c->ngens, sizeof(*c->gens), cmp_gen);
	for (size_t gi = 0; gi < c->ngens && !rc; gi++) {
		const struct mgen *mg = &c->gens[gi];
		size_t k = i;

		while (k < c->nev && c->ev[k].gen == mg->gen)
			k++;
		if (k > i || mg->info)
			rc = replay_gen(c, v, arg, mg, c->ev + i, k - i);
		else
			c->prev_gen = 0;
		i = k;
	}
	return rc;
}

RING_API int tracedec_mem_check(const uint8_t *buf, size_t len,
				const struct tracedec_mem_visitor *v, void *arg,
				struct tracedec_error *err)
{
	static const struct tracedec_mem_visitor none;
	static const struct tracedec_visitor collect = {
		.event = on_event,
		.lost = on_lost,
		.mem_info = on_info,
		.gen_end = on_end,
	};
	struct mcheck c = { 0 };
	int rc = tracedec_decode(buf, len, &collect, &c, err);

	if (rc == -ENOMEM || (!rc && c.oom))
		rc = -ENOMEM;
	else if (!rc)
		rc = replay(&c, v ? v : &none, arg);
	if (!rc && c.oom)
		rc = -ENOMEM;
	free(c.ev);
	free(c.gens);
	free(c.live);
	free(c.prev_live);
	return rc;
}
