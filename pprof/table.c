// SPDX-License-Identifier: MIT
/*
 * table.c - the keyed table of table.h: open addressing with linear
 * probing over entries that start with their nonzero uint64_t key.
 *
 * The table doubles (from 64 slots) before an insert would leave it more
 * than half full, which keeps probe runs short; growing reinserts the
 * entries in slot order.  The slot order of a table is thus a function of
 * the keys and the order they were inserted in, nothing else (the
 * collector's profile lists its samples in that order).
 */
#include <errno.h>

#include "ring/hash.h"
#include "pprof/table.h"

#define FIRST_CAP 64

static uint64_t *entry_at(const struct keyed_table *t, size_t i)
{
	return (uint64_t *)(t->slots + i * t->esize);
}

/* The slot of the entry @key and @eq name, or the empty slot it would take. */
static uint64_t *slot_of(const struct keyed_table *t, uint64_t key,
			 bool (*eq)(const void *, const void *),
			 const void *arg)
{
	size_t mask = t->cap - 1, i = (size_t)ring_hash_lane(0, key) & mask;
	uint64_t *e;

	for (;; i = (i + 1) & mask) {
		e = entry_at(t, i);
		if (!*e || (*e == key && (!eq || eq(e, arg))))
			return e;
	}
}

/* The first empty slot on @key's probe run. */
static uint64_t *empty_slot(const struct keyed_table *t, uint64_t key)
{
	size_t mask = t->cap - 1, i = (size_t)ring_hash_lane(0, key) & mask;

	while (*entry_at(t, i))
		i = (i + 1) & mask;
	return entry_at(t, i);
}

/* Twice the slots (FIRST_CAP at first), the entries moved in slot order. */
static int grow(struct keyed_table *t)
{
	struct keyed_table old = *t;
	uint64_t *e;
	size_t i;

	t->cap = old.cap ? 2 * old.cap : FIRST_CAP;
	t->slots = calloc(t->cap, t->esize);
	if (!t->slots) {
		*t = old;
		return -ENOMEM;
	}
	for (i = 0; i < old.cap; i++) {
		e = entry_at(&old, i);
		if (*e)
			memcpy(empty_slot(t, *e), e, t->esize);
	}
	free(old.slots);
	return 0;
}

void keyed_table_init(struct keyed_table *t, size_t esize)
{
	*t = (struct keyed_table){ .esize = esize };
}

void keyed_table_free(struct keyed_table *t)
{
	free(t->slots);
	keyed_table_init(t, t->esize);
}

int keyed_table_copy(struct keyed_table *dst, const struct keyed_table *src)
{
	keyed_table_init(dst, src->esize);
	if (!src->cap)
		return 0;
	dst->slots = malloc(src->cap * src->esize);
	if (!dst->slots)
		return -ENOMEM;
	memcpy(dst->slots, src->slots, src->cap * src->esize);
	dst->n = src->n;
	dst->cap = src->cap;
	return 0;
}

void *keyed_table_find(const struct keyed_table *t, uint64_t key,
		       bool (*eq)(const void *entry, const void *arg),
		       const void *arg)
{
	uint64_t *e;

	if (!t->cap || !key)
		return NULL;
	e = slot_of(t, key, eq, arg);
	return *e ? e : NULL;
}

void *keyed_table_insert(struct keyed_table *t, uint64_t key,
			 bool (*eq)(const void *entry, const void *arg),
			 const void *arg)
{
	uint64_t *e;

	if (!key || (2 * (t->n + 1) > t->cap && grow(t)))
		return NULL;
	e = slot_of(t, key, eq, arg);
	if (!*e) {
		*e = key;
		t->n++;
	}
	return e;
}

void *keyed_table_next(const struct keyed_table *t, size_t *i)
{
	uint64_t *e;

	while (*i < t->cap) {
		e = entry_at(t, (*i)++);
		if (*e)
			return e;
	}
	return NULL;
}
