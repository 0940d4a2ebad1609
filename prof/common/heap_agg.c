// SPDX-License-Identifier: MIT
/*
 * prof/common/heap_agg.c - sampled allocations and frees to heap-profile
 * entries.
 *
 * A site is (address space, stack, size): its sampled allocations and
 * bytes, and of those the ones still live.  The live blocks are a table
 * keyed by (space, address) holding their site; a free finds its block
 * there and takes one object and its size off the site's in-use counts.
 * Entries of the live table are reused, never removed: a block freed is
 * marked so, and the next block sampled at that address takes the entry.
 * The ring keeps a block's ALLOC before its FREE (stream.h), so a free
 * that finds no live block is not one we sampled in that space: counted,
 * ignored.  An ALLOC at an address still live means the free was lost:
 * the old block is counted freed first.
 *
 * An exec replaces an image: its blocks are no longer in use.  That takes
 * constant time, not a walk of the live table: each space counts its live
 * blocks, and a space marked gone counts them as gone by exec at once;
 * its sites then show no in-use values (their own counts are left as they
 * were), and its live entries are never looked up again (aggregate.c
 * gives the pid a new space, so no record names the gone one).
 *
 * At the end each site's raw counts are unbiased with Go's
 * scaleHeapSample (runtime/pprof/protomem.go): an allocation of s bytes is
 * sampled with probability 1 - exp(-s / rate) (heap.c), so counts and
 * bytes are divided by it; rate 1 (every allocation) scales by 1.  As in
 * Go, an entry with no bytes (malloc(0)) counts nothing.
 */
#include "prof/common/heap_agg.h"
#include "prof/wire/stream.h"

#include <profring/prof.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct heap_site {
	uint64_t key; /* hash of the three below */
	uint32_t space;
	uint32_t stack;
	uint64_t size;
	uint64_t allocs, inuse;
};

struct heap_live {
	uint64_t key; /* hash of space and addr */
	uint64_t addr;
	uint32_t space;
	uint32_t stack;
	uint64_t size;
	bool live;
};

struct site_id {
	uint32_t space, stack;
	uint64_t size;
};

struct live_id {
	uint32_t space;
	uint64_t addr;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
	return h * UINT64_C(0xff51afd7ed558ccd);
}

static uint64_t nonzero(uint64_t h)
{
	return h ? h : 1;
}

static bool site_eq(const void *entry, const void *arg)
{
	const struct heap_site *s = entry;
	const struct site_id *id = arg;

	return s->space == id->space && s->stack == id->stack &&
	       s->size == id->size;
}

static bool live_eq(const void *entry, const void *arg)
{
	const struct heap_live *l = entry;
	const struct live_id *id = arg;

	return l->space == id->space && l->addr == id->addr;
}

static struct heap_site *site_get(struct prof_heap_agg *h, uint32_t space,
				  uint32_t stack, uint64_t size)
{
	struct site_id id = { space, stack, size };
	struct heap_site *s;

	s = keyed_table_insert(&h->sites, nonzero(mix(mix(space, stack), size)),
			       site_eq, &id);
	if (s) {
		s->space = space;
		s->stack = stack;
		s->size = size;
	}
	return s;
}

/* Space @space's state, made if new; NULL without memory. */
static struct prof_heap_space *space_get(struct prof_heap_agg *h,
					 uint32_t space)
{
	struct prof_heap_space *v;

	v = array_grow(h->spaces, &h->capspaces, (size_t)space + 1, sizeof(*v));
	if (!v)
		return NULL;
	h->spaces = v;
	return &v[space];
}

static bool space_gone(const struct prof_heap_agg *h, uint32_t space)
{
	return space < h->capspaces && h->spaces[space].gone;
}

/* The block at @id stops being in use (it was freed, or replaced). */
static void retire(struct prof_heap_agg *h, struct heap_live *l)
{
	struct site_id id = { l->space, l->stack, l->size };
	struct heap_site *s;

	l->live = false;
	if (l->space < h->capspaces && h->spaces[l->space].inuse)
		h->spaces[l->space].inuse--;
	s = keyed_table_find(&h->sites,
			     nonzero(mix(mix(id.space, id.stack), id.size)),
			     site_eq, &id);
	if (s && s->inuse)
		s->inuse--;
}

static int take_free(struct prof_heap_agg *h, const struct profbuf_record *rec,
		     uint32_t space)
{
	struct live_id id;
	struct heap_live *l;

	if (rec->nstk != 1)
		return -EBADMSG;
	id.space = space;
	id.addr = rec->stk[0];
	l = keyed_table_find(&h->live, nonzero(mix(space, id.addr)), live_eq,
			     &id);
	if (!l || !l->live) {
		h->n.unknown_frees++;
		return 0;
	}
	retire(h, l);
	h->n.frees++;
	return 0;
}

static int take_alloc(struct prof_heap_agg *h, struct stacktab *tab,
		      const struct profbuf_record *rec, uint32_t space)
{
	const uintptr_t *w = rec->stk;
	struct prof_heap_space *sp;
	struct heap_site *s;
	struct heap_live *l;
	struct live_id id;
	uint32_t stack = 0;
	size_t npcs;

	if (rec->nstk < PROF_ALLOC_WORDS ||
	    rec->nstk > PROF_ALLOC_WORDS + PROFRING_PROF_MAX_FRAMES ||
	    w[PROF_ALLOC_FLAGS] & ~(uint64_t)PROF_ALLOC_UNTRACKED)
		return -EBADMSG;
	sp = space_get(h, space);
	if (!sp)
		return -ENOMEM;
	npcs = rec->nstk - PROF_ALLOC_WORDS;
	if (npcs) {
		stack = stacktab_put(tab, w + PROF_ALLOC_WORDS, npcs);
		if (!stack)
			stack = PROF_HEAP_STACK_FULL;
	} else {
		stack = PROF_HEAP_STACK_EMPTY;
	}
	if (w[PROF_ALLOC_FLAGS] & PROF_ALLOC_UNTRACKED)
		stack = PROF_HEAP_STACK_UNTRACKED;
	s = site_get(h, space, stack, w[PROF_ALLOC_SIZE]);
	if (!s)
		return -ENOMEM;
	s->allocs++;
	h->n.allocs++;
	if (stack == PROF_HEAP_STACK_UNTRACKED) {
		h->n.untracked++;
		return 0;
	}
	id.space = space;
	id.addr = w[PROF_ALLOC_ADDR];
	l = keyed_table_insert(&h->live, nonzero(mix(space, id.addr)), live_eq,
			       &id);
	if (!l)
		return -ENOMEM;
	if (l->live) {
		retire(h, l); /* may move nothing: find, not insert */
		h->n.replaced++;
	}
	/* site_get() above may have moved the sites, never the live table */
	s = site_get(h, space, stack, w[PROF_ALLOC_SIZE]);
	if (!s)
		return -ENOMEM;
	s->inuse++;
	sp->inuse++;
	l->addr = id.addr;
	l->space = space;
	l->stack = stack;
	l->size = w[PROF_ALLOC_SIZE];
	l->live = true;
	return 0;
}

/**
 * prof_heap_agg_image_gone() - the image of address space @space was
 * replaced by exec: its blocks are no longer in use (the kernel took its
 * memory back), though their frees will never come.  Constant time: the
 * space is marked (a space with no blocks has nothing to mark).
 */
void prof_heap_agg_image_gone(struct prof_heap_agg *h, uint32_t space)
{
	struct prof_heap_space *sp;

	if (space >= h->capspaces || h->spaces[space].gone)
		return;
	sp = &h->spaces[space];
	h->n.exec_gone += sp->inuse;
	sp->inuse = 0;
	sp->gone = true;
}

/**
 * prof_heap_agg_init() - an empty heap aggregation.
 */
void prof_heap_agg_init(struct prof_heap_agg *h)
{
	memset(h, 0, sizeof(*h));
	keyed_table_init(&h->sites, sizeof(struct heap_site));
	keyed_table_init(&h->live, sizeof(struct heap_live));
}

/**
 * prof_heap_agg_free() - free its tables; @h is then as after init.
 */
void prof_heap_agg_free(struct prof_heap_agg *h)
{
	keyed_table_free(&h->sites);
	keyed_table_free(&h->live);
	free(h->spaces);
	prof_heap_agg_init(h);
}

/**
 * prof_heap_agg_take() - take one PROF_REC_ALLOC or PROF_REC_FREE record.
 * @h:		the aggregation.
 * @tab:	where stacks are interned.
 * @rec:	the record (its payload as stream.h says).
 * @space:	the address space of the record's process.
 * @is_free:	a PROF_REC_FREE.
 *
 * Return: 0, -EBADMSG for a payload that makes no sense, -ENOMEM.
 */
int prof_heap_agg_take(struct prof_heap_agg *h, struct stacktab *tab,
		       const struct profbuf_record *rec, uint32_t space,
		       bool is_free)
{
	return is_free ? take_free(h, rec, space)
		       : take_alloc(h, tab, rec, space);
}

/**
 * prof_heap_agg_count() - the entries prof_heap_agg_fill() may write, at
 * most (the sites, and one for lost records).
 */
size_t prof_heap_agg_count(const struct prof_heap_agg *h)
{
	return h->sites.n + 1;
}

/**
 * prof_heap_scale() - Go's scaleHeapSample: @count objects of @bytes bytes
 * in all, sampled at @rate, as estimates of the true counts.
 */
void prof_heap_scale(uint64_t count, uint64_t bytes, uint64_t rate,
		     uint64_t *scount, uint64_t *sbytes)
{
	double scale;

	if (!count || !bytes) {
		*scount = *sbytes = 0;
		return;
	}
	if (rate <= 1) {
		*scount = count;
		*sbytes = bytes;
		return;
	}
	scale = 1 / (1 - exp(-((double)bytes / (double)count) / (double)rate));
	*scount = (uint64_t)((double)count * scale);
	*sbytes = (uint64_t)((double)bytes * scale);
}

static int fill_site(const struct heap_site *s, uint64_t allocs, uint64_t inuse,
		     struct stacktab *tab, uint64_t rate, struct prof_sample *o)
{
	memset(o, 0, sizeof(*o));
	o->space = s->space;
	o->bytes = s->size;
	prof_heap_scale(allocs, allocs * s->size, rate,
			&o->heap[PROF_HEAP_ALLOC_OBJECTS],
			&o->heap[PROF_HEAP_ALLOC_SPACE]);
	prof_heap_scale(inuse, inuse * s->size, rate,
			&o->heap[PROF_HEAP_INUSE_OBJECTS],
			&o->heap[PROF_HEAP_INUSE_SPACE]);
	o->special = prof_heap_special(s->stack);
	o->return_addrs = true;
	return o->special ? 0 : prof_sample_copy_stack(tab, s->stack, o);
}

/**
 * prof_sample_copy_stack() - @s's PCs: a malloc'd copy of stack @id of
 * @tab (for aggregate.c and the heap sites alike).
 *
 * Return: 0 or -ENOMEM.
 */
int prof_sample_copy_stack(struct stacktab *tab, uint32_t id,
			   struct prof_sample *s)
{
	uintptr_t pcs[PROFRING_PROF_MAX_FRAMES];
	uintptr_t *copy;
	size_t n;

	n = stacktab_get(tab, id, pcs, PROFRING_PROF_MAX_FRAMES);
	if (n > PROFRING_PROF_MAX_FRAMES)
		n = PROFRING_PROF_MAX_FRAMES;
	copy = malloc(n * sizeof(*copy) + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, pcs, n * sizeof(*copy));
	s->pcs = copy;
	s->npcs = n;
	return 0;
}

/**
 * prof_heap_agg_fill() - the heap profile's entries.
 * @h, @tab:	the aggregation and its stack table.
 * @rate:	the sampling rate, for the scaling.
 * @lost:	heap records the ring refused: an entry counting them as
 *		objects (their sizes are not known).
 * @base:	NULL; or the counts of an earlier prof_heap_agg_base():
 *		the allocations are those made since (sites with none are
 *		left out), the in-use values those of now.
 * @out:	room for prof_heap_agg_count() entries; pcs are malloc'd.
 * @n:		receives the number written (even on failure: free them).
 *
 * The entries' pid is left 0: the caller knows the spaces.
 * Return: 0 or -ENOMEM.
 */
int prof_heap_agg_fill(struct prof_heap_agg *h, struct stacktab *tab,
		       uint64_t rate, uint64_t lost,
		       const struct prof_heap_base *base,
		       struct prof_sample *out, size_t *n)
{
	const struct heap_site *s;
	size_t i = 0;
	int err;

	*n = 0;
	while ((s = keyed_table_next(&h->sites, &i))) {
		uint64_t allocs = s->allocs;

		if (base) {
			struct site_id id = { s->space, s->stack, s->size };
			const struct heap_site *b = keyed_table_find(
				&base->sites, s->key, site_eq, &id);

			allocs -= b ? b->allocs : 0;
			if (!allocs)
				continue; /* nothing new there */
		}
		err = fill_site(s, allocs,
				space_gone(h, s->space) ? 0 : s->inuse, tab,
				rate, &out[*n]);
		if (err)
			return err;
		(*n)++;
	}
	if (lost) {
		memset(&out[*n], 0, sizeof(out[0]));
		out[*n].special = PROF_HEAP_LOST_NAME;
		out[*n].heap[PROF_HEAP_ALLOC_OBJECTS] = lost;
		(*n)++;
	}
	return 0;
}

/**
 * prof_heap_agg_base() - remember every site's allocations so far, for a
 * delta (prof_heap_agg_fill() with @base).
 *
 * Return: 0 or -ENOMEM (free @b all the same).
 */
int prof_heap_agg_base(const struct prof_heap_agg *h, struct prof_heap_base *b)
{
	return keyed_table_copy(&b->sites, &h->sites);
}

void prof_heap_base_free(struct prof_heap_base *b)
{
	keyed_table_free(&b->sites);
}

/**
 * prof_heap_comment() - the heap profile's accounting line (a pprof
 * comment): what the writers wrote and lost, what the reader matched.
 * @buf, @len:	where it goes.
 * @rate:	the sampling rate.
 * @hc:		the reader's counts.
 * @written, @refused, @untracked: the writers' counts (stream.h's
 *		heap_allocs + heap_frees, heap_refused, heap_untracked).
 */
void prof_heap_comment(char *buf, size_t len, uint64_t rate,
		       const struct prof_heap_counts *hc, uint64_t written,
		       uint64_t refused, uint64_t untracked)
{
	snprintf(buf, len,
		 "profring-prof heap: rate %" PRIu64
		 " bytes; records written %" PRIu64 ", refused %" PRIu64
		 "; allocations read %" PRIu64 " (untracked %" PRIu64
		 "/%" PRIu64 "), frees matched %" PRIu64 ", unknown %" PRIu64
		 ", replaced %" PRIu64 ", gone by exec %" PRIu64,
		 rate, written, refused, hc->allocs, hc->untracked, untracked,
		 hc->frees, hc->unknown_frees, hc->replaced, hc->exec_gone);
}
