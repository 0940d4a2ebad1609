// SPDX-License-Identifier: MIT
/*
 * prof/agent/heap_pool_test.c - the pool of sampled blocks: every class, its
 * alignment and usable size, reuse through the free lists, the bounds
 * check against the allocator's blocks, and threads allocating and
 * freeing at once with exact accounting.
 */
#include "prof/agent/heap_pool.h"
#include "testing/ktest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void before_init(void)
{
	void *p = malloc(32);

	KT_CHECK(!prof_heap_pool_owns(p));
	KT_CHECK(!prof_heap_pool_owns(NULL));
	free(p);
}

static void classes(void)
{
	struct prof_heap_pool_stats st;

	KT_REQUIRE(prof_heap_pool_init() == 0);
	KT_CHECK(prof_heap_pool_init() == 0);
	for (size_t size = 1; size <= ((size_t)1 << 24); size = size * 3 + 1) {
		char *p = prof_heap_pool_alloc(size, 16);

		KT_REQUIRE(p);
		KT_CHECK(prof_heap_pool_owns(p));
		KT_CHECK(((uintptr_t)p & 15) == 0);
		KT_CHECK(prof_heap_pool_usable(p) >= size);
		memset(p, 0xa5, size);
		prof_heap_pool_free(p);
	}
	for (size_t align = 16; align <= 65536; align <<= 1) {
		char *p = prof_heap_pool_alloc(24, align);

		KT_REQUIRE(p);
		KT_CHECK(((uintptr_t)p & (align - 1)) == 0);
		prof_heap_pool_free(p);
	}
	KT_CHECK(!prof_heap_pool_alloc((size_t)1 << 40, 16));
	prof_heap_pool_stats(&st);
	KT_CHECK_EQ(st.live, 0);
	KT_CHECK(st.refused >= 1);
	KT_CHECK(st.reserved > 0);
}

static void reuse(void)
{
	void *a = prof_heap_pool_alloc(100, 16);
	void *b;

	KT_REQUIRE(a);
	prof_heap_pool_free(a);
	b = prof_heap_pool_alloc(120, 16); /* the same 128-byte class */
	KT_CHECK(a == b);
	prof_heap_pool_free(b);
}

static void not_ours(void)
{
	void *p = malloc(64), *q = malloc(1 << 20);

	KT_CHECK(!prof_heap_pool_owns(p));
	KT_CHECK(!prof_heap_pool_owns(q));
	free(p);
	free(q);
}

#define THREADS 4
#define ROUNDS 200000

static void *churn(void *arg)
{
	void *live[64] = { 0 };
	unsigned x = (unsigned)(uintptr_t)arg;
	long bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		int k = i % 64;
		size_t size;

		if (live[k]) {
			if (*(unsigned *)live[k] != (unsigned)k + x)
				bad++;
			prof_heap_pool_free(live[k]);
		}
		x = x * 1103515245 + 12345;
		size = 8 + (x >> 16) % 3000;
		live[k] = prof_heap_pool_alloc(size, 16);
		if (!live[k])
			return (void *)(intptr_t)-1;
		x = (unsigned)(uintptr_t)arg;
		*(unsigned *)live[k] = (unsigned)k + x;
	}
	for (int k = 0; k < 64; k++)
		prof_heap_pool_free(live[k]);
	return (void *)bad;
}

static void threads(void)
{
	struct prof_heap_pool_stats st;
	pthread_t t[THREADS];
	void *rc;
	long bad = 0;

	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, churn, (void *)(i * 7919 + 1));
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], &rc);
		bad += (long)rc;
	}
	KT_CHECK_EQ(bad, 0);
	prof_heap_pool_stats(&st);
	KT_CHECK_EQ(st.live, 0);
	printf("  %d threads x %d: committed %llu KiB\n", THREADS, ROUNDS,
	       (unsigned long long)st.committed >> 10);
}

int main(void)
{
	KT_RUN(before_init);
	KT_RUN(classes);
	KT_RUN(reuse);
	KT_RUN(not_ours);
	KT_RUN(threads);
	return ktest_exit();
}
