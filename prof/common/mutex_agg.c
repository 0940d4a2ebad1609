// SPDX-License-Identifier: MIT
/*
 * prof/common/mutex_agg.c - sampled lock waits to mutex- and block-profile
 * entries.
 *
 * A site is (address space, stack, kind): its recorded waits and their
 * delays.  The mutex profile is the contention on mutexes and rwlocks
 * (kinds up to PROF_LOCK_RWLOCK_WR); the block profile is every wait,
 * condition variables and semaphores included, as Go's block profile
 * holds its sync waits and its mutex profile only contention.
 *
 * Scaling, as Go's saveBlockEventStack does for mutexProfile
 * (runtime/mprof.go): each wait was recorded with probability 1 / rate,
 * so a site's count and delay are multiplied by rate, which makes the
 * sums unbiased.  rate 1 scales by 1.
 */
#include "prof/common/mutex_agg.h"
#include "prof/common/heap_agg.h"
#include "prof/wire/stream.h"

#include <profring/prof.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct lock_site {
	uint64_t key; /* hash of the three below */
	uint32_t space;
	uint32_t stack;
	uint32_t kind;
	uint64_t waits;
	uint64_t delay_ns;
};

struct site_id {
	uint32_t space, stack, kind;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
	return h * UINT64_C(0xff51afd7ed558ccd);
}

static bool site_eq(const void *entry, const void *arg)
{
	const struct lock_site *s = entry;
	const struct site_id *id = arg;

	return s->space == id->space && s->stack == id->stack &&
	       s->kind == id->kind;
}

void prof_lock_agg_init(struct prof_lock_agg *m)
{
	keyed_table_init(&m->sites, sizeof(struct lock_site));
	m->waits = 0;
}

void prof_lock_agg_free(struct prof_lock_agg *m)
{
	keyed_table_free(&m->sites);
}

/**
 * prof_lock_agg_take() - one PROF_REC_LOCK record of address space
 * @space.
 *
 * Return: 0, -EBADMSG (a malformed record), or -ENOMEM.
 */
int prof_lock_agg_take(struct prof_lock_agg *m, struct stacktab *tab,
		       const struct profbuf_record *rec, uint32_t space)
{
	const uintptr_t *w = rec->stk;
	struct site_id id = { .space = space };
	struct lock_site *s;
	uint64_t h;
	size_t npcs;

	if (rec->nstk < PROF_LOCK_WORDS ||
	    rec->nstk > PROF_LOCK_WORDS + PROFRING_PROF_MAX_FRAMES ||
	    w[PROF_LOCK_KIND] >= PROF_LOCK_KINDS)
		return -EBADMSG;
	id.kind = (uint32_t)w[PROF_LOCK_KIND];
	npcs = rec->nstk - PROF_LOCK_WORDS;
	if (npcs) {
		id.stack = stacktab_put(tab, w + PROF_LOCK_WORDS, npcs);
		if (!id.stack)
			id.stack = PROF_HEAP_STACK_FULL;
	} else {
		id.stack = PROF_HEAP_STACK_EMPTY;
	}
	h = mix(mix(id.space, id.stack), id.kind);
	s = keyed_table_insert(&m->sites, h ? h : 1, site_eq, &id);
	if (!s)
		return -ENOMEM;
	s->space = id.space;
	s->stack = id.stack;
	s->kind = id.kind;
	s->waits++;
	/* Saturating: the delay is the program's word. */
	if (__builtin_add_overflow(s->delay_ns, w[PROF_LOCK_DELAY],
				   &s->delay_ns))
		s->delay_ns = UINT64_MAX;
	m->waits++;
	return 0;
}

/* prof_lock_agg_fill()'s room: every site, and the lost entry. */
size_t prof_lock_agg_count(const struct prof_lock_agg *m)
{
	return m->sites.n + 1;
}

static uint64_t scaled(uint64_t v, uint64_t rate)
{
	uint64_t r;

	return __builtin_mul_overflow(v, rate, &r) ? UINT64_MAX : r;
}

/**
 * prof_lock_agg_fill() - the mutex profile's entries (@block false:
 * mutex and rwlock waits) or the block profile's (every wait).
 * @rate:	the sampling rate, for the scaling.
 * @lost:	lock records the ring refused: an entry counting them as
 *		contentions, rate each (their delays are not known).
 * @base:	NULL; or the counts of an earlier prof_lock_agg_base(): the
 *		waits since then (sites with none are left out).
 * @out:	room for prof_lock_agg_count() entries; pcs are malloc'd.
 * @n:		receives the number written (even on failure: free them).
 *
 * An entry's @samples is its contentions, @periods its delay in
 * nanoseconds (the profile's period_ns is 1).  Its pid is left 0.
 * Return: 0 or -ENOMEM.
 */
int prof_lock_agg_fill(const struct prof_lock_agg *m, struct stacktab *tab,
		       bool block, uint64_t rate, uint64_t lost,
		       const struct prof_lock_base *base,
		       struct prof_sample *out, size_t *n)
{
	const struct lock_site *s;
	size_t i = 0;

	if (!rate)
		rate = 1;
	*n = 0;
	while ((s = keyed_table_next(&m->sites, &i))) {
		struct prof_sample *o = &out[*n];
		uint64_t waits = s->waits, delay = s->delay_ns;

		if (!block && s->kind > PROF_LOCK_RWLOCK_WR)
			continue;
		if (base) {
			struct site_id id = { s->space, s->stack, s->kind };
			const struct lock_site *b = keyed_table_find(
				&base->sites, s->key, site_eq, &id);

			waits -= b ? b->waits : 0;
			delay -= b ? b->delay_ns : 0;
			if (!waits)
				continue; /* nothing new there */
		}
		memset(o, 0, sizeof(*o));
		o->space = s->space;
		o->samples = scaled(waits, rate);
		o->periods = scaled(delay, rate);
		o->special = prof_heap_special(s->stack);
		o->return_addrs = true;
		(*n)++;
		if (!o->special && prof_sample_copy_stack(tab, s->stack, o))
			return -ENOMEM;
	}
	if (base)
		lost = lost > base->lost ? lost - base->lost : 0;
	if (lost) {
		memset(&out[*n], 0, sizeof(out[0]));
		out[*n].special = PROF_LOCK_LOST_NAME;
		out[*n].samples = scaled(lost, rate);
		(*n)++;
	}
	return 0;
}

/**
 * prof_lock_agg_base() - remember every site's counts now, and @lost, the
 * records refused so far, for a delta (prof_lock_agg_fill() with @base).
 *
 * Return: 0 or -ENOMEM (free @b all the same).
 */
int prof_lock_agg_base(const struct prof_lock_agg *m, uint64_t lost,
		       struct prof_lock_base *b)
{
	b->lost = lost;
	return keyed_table_copy(&b->sites, &m->sites);
}

void prof_lock_base_free(struct prof_lock_base *b)
{
	keyed_table_free(&b->sites);
}

/**
 * prof_lock_comment() - the mutex or block profile's accounting line (a
 * pprof comment).
 * @read:	records the reader took.
 * @written, @refused: the writers' counts (stream.h's lock_written,
 *		lock_refused).
 */
void prof_lock_comment(char *buf, size_t len, bool block, uint64_t rate,
		       uint64_t read, uint64_t written, uint64_t refused)
{
	snprintf(
		buf, len,
		"profring-prof %s: one wait in %" PRIu64
		" recorded, counts and delays scaled by it; records written %" PRIu64
		", refused %" PRIu64 ", read %" PRIu64,
		block ? "block" : "mutex", rate, written, refused, read);
}
