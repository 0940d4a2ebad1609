// SPDX-License-Identifier: MIT
/*
 * heapedge.c - the heap profiler's edge cases, for heap_edge_test.sh.
 * Each mode allocates through one function whose counts are known:
 *   heapedge realloc_fail  f_realloc_fail: malloc(8 MiB), then a realloc
 *                          to 2^62 bytes that fails (exit 3 if it does
 *                          not): the 8 MiB stay in use
 *   heapedge reallocarray  f_reallocarray: 100 x reallocarray(NULL,
 *                          1024, 1024), 90 of them freed
 *   heapedge churn         f_churn in 4 threads, 2,000 times each:
 *                          malloc(256 KiB), realloc to 512 KiB (mmap'd:
 *                          the addresses go back to the kernel and come
 *                          back to any thread), free: nothing in use
 *   heapedge spin          f_spin: 0.5 s of CPU time allocating and
 *                          freeing 64-byte blocks
 * Each prints one line, "heapedge MODE", and exits 0.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define CHURN_THREADS 4
#define CHURN_ROUNDS 2000

static void *volatile sink;

static NOINLINE void f_realloc_fail(void)
{
	char *p = malloc(8 << 20), *q;

	if (!p)
		exit(3);
	memset(p, 1, 8 << 20);
	q = realloc(p, (size_t)1 << 62);
	if (q)
		exit(3);
	sink = p;
}

static NOINLINE void f_reallocarray(void)
{
	void *keep[10];

	for (int i = 0; i < 100; i++) {
		void *p = reallocarray(NULL, 1024, 1024);

		if (!p)
			exit(3);
		if (i < 10)
			keep[i] = p;
		else
			free(p);
	}
	sink = keep[9];
}

static NOINLINE void *f_churn(void *arg)
{
	for (int i = 0; i < CHURN_ROUNDS; i++) {
		char *p = malloc(256 << 10), *q;

		if (!p)
			exit(3);
		p[0] = 1;
		q = realloc(p, 512 << 10);
		if (!q)
			exit(3);
		q[1] = 2;
		free(q);
	}
	return arg;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static NOINLINE void f_spin(void)
{
	double end = cpu_s() + 0.5;

	while (cpu_s() < end)
		for (int i = 0; i < 1000; i++) {
			void *p = malloc(64);

			sink = p;
			free(p);
		}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "realloc_fail")) {
		f_realloc_fail();
	} else if (!strcmp(mode, "reallocarray")) {
		f_reallocarray();
	} else if (!strcmp(mode, "churn")) {
		pthread_t t[CHURN_THREADS];

		/* A fixed threshold: the blocks stay mmap'd. */
		mallopt(M_MMAP_THRESHOLD, 128 << 10);
		for (int i = 0; i < CHURN_THREADS; i++)
			if (pthread_create(&t[i], NULL, f_churn, NULL))
				return 3;
		for (int i = 0; i < CHURN_THREADS; i++)
			pthread_join(t[i], NULL);
	} else if (!strcmp(mode, "spin")) {
		f_spin();
	} else {
		fprintf(stderr, "usage: heapedge realloc_fail|reallocarray|"
				"churn|spin\n");
		return 2;
	}
	printf("heapedge %s\n", mode);
	return 0;
}
