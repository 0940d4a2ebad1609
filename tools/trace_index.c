// SPDX-License-Identifier: MIT
/*
 * trace_index.c - the hash indexes over a trace's generations and
 * threads (open addressing over their arrays, hashed with a
 * per-process seed so that no stream can pick colliding keys), and the
 * arrays that grow by half (trace_report_impl.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "tools/trace_report_impl.h"

/* The kernel's 16 random bytes for this process (else a constant). */
uint64_t trace_seed(void)
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
size_t index_find(const struct index *x, uint64_t seed, const void *base,
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
int index_add(struct index *x, uint64_t seed, const void *base, size_t esize,
	      size_t pos)
{
	if (index_reserve(x, seed, base, esize))
		return -1;
	*index_slot(x, seed, base, esize, key_at(base, esize, pos)) = pos + 1;
	x->n++;
	return 0;
}

/*
 * trace_grow() - room for @need elements of @size bytes in @arr (of *@cap).
 *
 * Half again as many each time (not zeroed, so that pages of room not yet
 * used stay untouched).  Return: the array, or NULL when out of memory or
 * when the size would overflow (@arr and @*cap then as they were).
 */
void *trace_grow(void *arr, size_t *cap, size_t need, size_t size)
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
