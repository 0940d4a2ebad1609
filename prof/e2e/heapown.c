// SPDX-License-Identifier: MIT
/*
 * heapown.c - a program with its own malloc (a bump allocator that never
 * frees), as programs linked with a static allocator have: the heap
 * profiler's hooks never run in it, and it must say so
 * (heap_edge_test.sh).  Prints "heapown done".
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static _Alignas(16) char pool[16 << 20];
static size_t used;

void *malloc(size_t n)
{
	size_t at = used;

	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(pool) - at)
		return NULL;
	used += n;
	return pool + at;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t n, size_t size)
{
	void *p = n && size > sizeof(pool) / n ? NULL : malloc(n * size);

	return p ? memset(p, 0, n * size) : NULL;
}

void *realloc(void *old, size_t n)
{
	void *p = malloc(n);
	/* The old block is in the pool: this much of it is readable. */
	size_t room = old ? (size_t)(pool + sizeof(pool) - (char *)old) : 0;

	if (p && old)
		memmove(p, old, n < room ? n : room);
	return p;
}

int main(void)
{
	static void *volatile sink;

	for (int i = 0; i < 1000; i++)
		sink = malloc(1000);
	puts("heapown done");
	return 0;
}
