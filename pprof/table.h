/* SPDX-License-Identifier: MIT */
/*
 * pprof/table.h - the growable array and the hash table that the profile
 * writers and readers, the collector and the tools share.
 *
 * array_grow() is defined here, inline, so that a program that links no
 * build/libpprof.a (tools/profring-trace.c) can use it too; the keyed
 * table is in table.c.
 *
 * Both allocate with malloc: not async-signal-safe, never to be called
 * from a signal handler.  Neither locks: one thread at a time per array
 * or table.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PPROF_TABLE_H
#define PROFRING_PPROF_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/**
 * array_grow() - make room for @need elements of @size bytes in @arr.
 * @arr:	the array, @*cap elements; NULL when @*cap is 0.
 * @cap:	its capacity in elements; updated.
 * @need:	elements wanted.
 * @size:	bytes per element, nonzero.
 *
 * The capacity starts at 16 and doubles until it holds @need; the new room
 * is zeroed, so an array only ever appended to hands out zeroed elements.
 *
 * Return: the array, moved or not; NULL when out of memory or when the
 * size would overflow, @arr and @*cap then as they were.
 */
static inline void *array_grow(void *arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 16;
	char *p;

	if (need <= *cap)
		return arr;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return NULL;
	p = realloc(arr, ncap * size);
	if (!p)
		return NULL;
	memset(p + *cap * size, 0, (ncap - *cap) * size);
	*cap = ncap;
	return p;
}

/**
 * struct keyed_table - an open-addressing hash table of fixed-size entries.
 * @slots:	@cap entries of @esize bytes.
 * @n:		entries in use.
 * @cap:	slots: 0, then a power of two from 64, at most half used.
 * @esize:	bytes per entry.
 *
 * Every entry starts with a uint64_t key, nonzero: 0 marks an empty slot.
 * Probing is linear from ring_hash_lane(0, key).  Keys need not be unique:
 * a caller whose key is a hash of something larger passes an @eq that
 * compares the rest (entries are never removed; they move, and their
 * addresses change, only when an insert grows the table).
 */
struct keyed_table {
	char *slots;
	size_t n;
	size_t cap;
	size_t esize;
};

/**
 * keyed_table_init() - an empty table (it allocates at its first insert).
 * @t:		the table.
 * @esize:	bytes per entry: the size of a struct whose first member is
 *		its uint64_t key.
 */
void keyed_table_init(struct keyed_table *t, size_t esize);

/**
 * keyed_table_free() - free the slots; @t is then empty, as after
 * keyed_table_init().
 * @t:		the table.
 */
void keyed_table_free(struct keyed_table *t);

/**
 * keyed_table_copy() - @dst becomes a copy of @src: the same entries in
 * the same slots (so the same walk), found as in @src.
 * @dst:	the copy: free it with keyed_table_free(), even on failure.
 * @src:	the table, not changed.
 *
 * Return: 0, or -ENOMEM with @dst empty.
 */
int keyed_table_copy(struct keyed_table *dst, const struct keyed_table *src);

/**
 * keyed_table_find() - look an entry up.
 * @t:		the table.
 * @key:	its key.
 * @eq:		NULL when keys are unique; else true when the entry (whose
 *		key is @key) is the one wanted.
 * @arg:	passed to @eq.
 *
 * Return: the entry, or NULL.
 */
void *keyed_table_find(const struct keyed_table *t, uint64_t key,
		       bool (*eq)(const void *entry, const void *arg),
		       const void *arg);

/**
 * keyed_table_insert() - find an entry, or add it.
 * @t, @key, @eq, @arg:	as keyed_table_find(); @key nonzero.
 *
 * The table grows first if one more entry would fill more than half of
 * it (even when @key is there), moving every entry.
 *
 * Return: the entry found, or else a new one, zeroed but for its key;
 * NULL when out of memory (or for a @key of 0), the table as it was.
 */
void *keyed_table_insert(struct keyed_table *t, uint64_t key,
			 bool (*eq)(const void *entry, const void *arg),
			 const void *arg);

/**
 * keyed_table_next() - walk the entries, in slot order.
 * @t:		the table, not changed during the walk.
 * @i:		the slot to start at, 0 at first; set past the entry found.
 *
 * Return: the next entry in use, or NULL at the end.
 */
void *keyed_table_next(const struct keyed_table *t, size_t *i);

/*
 * pprof_upper_bound() - index of the first of the @n elements of @size
 * bytes at @base, sorted by the uint64_t at offset @off in each, whose key
 * is above @key; @n if none.
 */
static inline size_t pprof_upper_bound(const void *base, size_t n, size_t size,
				       size_t off, uint64_t key)
{
	size_t lo = 0, hi = n, mid;
	uint64_t v;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		memcpy(&v, (const char *)base + mid * size + off, sizeof(v));
		if (v <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif /* PROFRING_PPROF_TABLE_H */
