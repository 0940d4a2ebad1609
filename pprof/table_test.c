// SPDX-License-Identifier: MIT
/*
 * table_test.c - unit tests for pprof/table.h: array_grow() (capacities,
 * zeroed room, contents kept, overflow refused) and the keyed table
 * (unique keys with payloads, keys shared by many entries told apart by
 * @eq, the walk, the probing and growth rules its users rely on for a
 * deterministic slot order, a copy).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing/ktest.h"
#include "testing/harness.h"
#include "ring/hash.h"
#include "pprof/table.h"

struct entry {
	uint64_t key;
	uint64_t value;
	uint32_t tag;
};

static void grow_array(void)
{
	uint32_t *a = NULL, *b;
	size_t cap = 0, zero = 0;

	a = array_grow(a, &cap, 1, sizeof(*a));
	KT_REQUIRE(a);
	KT_CHECK_EQ(cap, 16);
	for (size_t i = 0; i < cap; i++)
		zero += a[i] == 0;
	KT_CHECK_EQ(zero, 16);
	for (size_t i = 0; i < cap; i++)
		a[i] = (uint32_t)i + 1;
	KT_CHECK(array_grow(a, &cap, 16, sizeof(*a)) == a); /* fits */
	KT_CHECK_EQ(cap, 16);
	b = array_grow(a, &cap, 100, sizeof(*a));
	KT_REQUIRE(b);
	a = b;
	KT_CHECK_EQ(cap, 128);
	for (size_t i = 0; i < 16; i++)
		KT_CHECK_EQ(a[i], i + 1);
	zero = 0;
	for (size_t i = 16; i < cap; i++)
		zero += a[i] == 0;
	KT_CHECK_EQ(zero, 128 - 16);
	/* Sizes that overflow: refused, the array as it was. */
	KT_CHECK(!array_grow(a, &cap, SIZE_MAX / 2 + 2, sizeof(*a)));
	KT_CHECK(!array_grow(a, &cap, SIZE_MAX / 4, sizeof(*a)));
	KT_CHECK_EQ(cap, 128);
	KT_CHECK_EQ(a[15], 16);
	free(a);
}

/* A nonzero key for @i, spread out. */
static uint64_t key_of(uint64_t i)
{
	return ring_hash_lane(0x1234, i) | 1;
}

static void unique_keys(void)
{
	enum { N = 5000 };
	struct keyed_table t;
	struct entry *e;
	size_t i, seen = 0, bad = 0;

	keyed_table_init(&t, sizeof(struct entry));
	KT_CHECK(!keyed_table_find(&t, key_of(1), NULL, NULL)); /* empty */
	KT_CHECK(!keyed_table_insert(&t, 0, NULL, NULL)); /* key 0 refused */
	KT_CHECK_EQ(t.n, 0);
	for (i = 0; i < N; i++) {
		e = keyed_table_insert(&t, key_of(i), NULL, NULL);
		KT_REQUIRE(e);
		bad += e->key != key_of(i) || e->value || e->tag;
		e->value = i * 3;
		/* 64 slots hold 32 entries; the 33rd doubles them. */
		if (i == 0 || i == 31)
			KT_CHECK_EQ(t.cap, 64);
		if (i == 32)
			KT_CHECK_EQ(t.cap, 128);
	}
	KT_CHECK_EQ(bad, 0);
	KT_CHECK_EQ(t.n, N);
	KT_CHECK_EQ(t.cap, 16384); /* 64 doubled while 2 * n > cap */
	for (i = 0; i < N; i++) {
		e = keyed_table_find(&t, key_of(i), NULL, NULL);
		bad += !e || e->key != key_of(i) || e->value != i * 3;
	}
	KT_CHECK_EQ(bad, 0);
	for (i = N; i < 2 * N; i++)
		bad += keyed_table_find(&t, key_of(i), NULL, NULL) != NULL;
	KT_CHECK_EQ(bad, 0);
	KT_CHECK(!keyed_table_find(&t, 0, NULL, NULL));
	/* Inserting a key that is there finds it. */
	e = keyed_table_insert(&t, key_of(7), NULL, NULL);
	KT_CHECK(e && e->value == 21);
	KT_CHECK_EQ(t.n, N);
	/* The walk meets each entry once. */
	i = 0;
	while ((e = keyed_table_next(&t, &i))) {
		seen++;
		bad += e->value % 3 || e->tag;
		e->tag++;
	}
	KT_CHECK_EQ(seen, N);
	KT_CHECK_EQ(bad, 0);
	keyed_table_free(&t);
	KT_CHECK(t.n == 0 && t.cap == 0 && t.esize == sizeof(struct entry));
	KT_CHECK(!keyed_table_find(&t, key_of(1), NULL, NULL));
}

static bool tag_eq(const void *entry, const void *arg)
{
	const struct entry *e = entry;

	return e->tag == *(const uint32_t *)arg;
}

/* Every entry under one key, or under a few: @eq tells them apart. */
static void shared_keys(void)
{
	struct keyed_table t;
	struct entry *e;
	size_t bad = 0;

	keyed_table_init(&t, sizeof(struct entry));
	for (uint32_t tag = 1; tag <= 300; tag++) {
		uint64_t key = tag % 4 ? 42 : 43;

		KT_REQUIRE(!keyed_table_find(&t, key, tag_eq, &tag));
		e = keyed_table_insert(&t, key, tag_eq, &tag);
		KT_REQUIRE(e);
		bad += e->tag != 0 || e->key != key;
		e->tag = tag;
		e->value = tag * 7ull;
	}
	KT_CHECK_EQ(bad, 0);
	KT_CHECK_EQ(t.n, 300);
	for (uint32_t tag = 1; tag <= 300; tag++) {
		e = keyed_table_find(&t, tag % 4 ? 42 : 43, tag_eq, &tag);
		bad += !e || e->tag != tag || e->value != tag * 7ull;
		/* Under the other key it is not found. */
		bad += keyed_table_find(&t, tag % 4 ? 43 : 42, tag_eq, &tag) !=
		       NULL;
	}
	KT_CHECK_EQ(bad, 0);
	keyed_table_free(&t);
}

/*
 * The documented rules: an entry sits on its key's probe run (from
 * ring_hash_lane(0, key), no empty slot before it), and two tables fed the
 * same keys in the same order walk in the same order (the collector's
 * profile lists its samples so).
 */
static void probing_and_order(void)
{
	struct keyed_table a, b;
	struct entry *x, *y;
	uint64_t rng = 99;
	size_t bad = 0, i = 0, j = 0, mask, s;

	keyed_table_init(&a, sizeof(struct entry));
	keyed_table_init(&b, sizeof(struct entry));
	for (int k = 0; k < 3000; k++) {
		uint64_t key = stress_rand(&rng) % 2000 + 1;

		x = keyed_table_insert(&a, key, NULL, NULL);
		y = keyed_table_insert(&b, key, NULL, NULL);
		KT_REQUIRE(x && y);
		x->value++;
		y->value++;
	}
	KT_CHECK_EQ(a.n, b.n);
	mask = a.cap - 1;
	while ((x = keyed_table_next(&a, &i))) {
		y = keyed_table_next(&b, &j);
		bad += !y || y->key != x->key || y->value != x->value;
		for (s = ring_hash_lane(0, x->key) & mask; s != i - 1;
		     s = (s + 1) & mask)
			bad += !*(uint64_t *)(a.slots + s * a.esize);
	}
	KT_CHECK(!keyed_table_next(&b, &j));
	KT_CHECK_EQ(bad, 0);
	keyed_table_free(&a);
	keyed_table_free(&b);
}

/* A copy finds what the original finds, walks alike, and is its own. */
static void copy(void)
{
	struct keyed_table a, b;
	struct entry *x, *y;
	size_t bad = 0, i = 0, j = 0;

	keyed_table_init(&a, sizeof(struct entry));
	KT_REQUIRE(!keyed_table_copy(&b, &a)); /* empty */
	KT_CHECK(b.n == 0 && b.cap == 0 && b.esize == sizeof(struct entry));
	keyed_table_free(&b);
	for (uint32_t tag = 1; tag <= 500; tag++) {
		x = keyed_table_insert(&a, tag % 3 ? key_of(tag) : 42, tag_eq,
				       &tag);
		KT_REQUIRE(x);
		x->tag = tag;
		x->value = tag * 3ull;
	}
	KT_REQUIRE(!keyed_table_copy(&b, &a));
	KT_CHECK(b.n == a.n && b.cap == a.cap && b.slots != a.slots);
	for (uint32_t tag = 1; tag <= 500; tag++) {
		y = keyed_table_find(&b, tag % 3 ? key_of(tag) : 42, tag_eq,
				     &tag);
		bad += !y || y->value != tag * 3ull;
	}
	while ((x = keyed_table_next(&a, &i))) {
		y = keyed_table_next(&b, &j);
		bad += !y || y->key != x->key || y->tag != x->tag;
	}
	KT_CHECK(!keyed_table_next(&b, &j));
	KT_CHECK_EQ(bad, 0);
	x = keyed_table_find(&a, key_of(1), tag_eq, &(uint32_t){ 1 });
	KT_REQUIRE(x);
	x->value = 0; /* the copy keeps its own */
	y = keyed_table_find(&b, key_of(1), tag_eq, &(uint32_t){ 1 });
	KT_CHECK(y && y->value == 3);
	keyed_table_free(&a);
	keyed_table_free(&b);
}

int main(void)
{
	KT_RUN(grow_array);
	KT_RUN(unique_keys);
	KT_RUN(shared_keys);
	KT_RUN(probing_and_order);
	KT_RUN(copy);
	return ktest_exit();
}
