// SPDX-License-Identifier: MIT
/*
 * heap_storm - the heap profiler's cost workloads (bench/heap_cost.sh),
 * the two storms of the heap-cost goal:
 *   a  blocks of 16-1023 bytes, each written whole, freed 256 allocations
 *      later, calloc for one in eight (a program that uses its memory);
 *   b  blocks of 16-255 bytes, untouched, freed 64 allocations later
 *      (the calls alone).
 *
 *	heap_storm a|b THREADS N	(N allocations per thread)
 *
 * Prints the allocations made; the script times the run.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long per_thread;
static int storm_a;

static void *storm(void *arg)
{
	unsigned long x = (unsigned long)(size_t)arg * 2654435761u + 1, sum = 0;
	int window = storm_a ? 256 : 64;
	void **live = calloc((size_t)window, sizeof(*live));

	for (long i = 0; i < per_thread; i++) {
		size_t size;
		char *p;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		free(live[i % window]);
		if (storm_a) {
			size = 16 + x % 1008;
			p = (x >> 20) % 8 == 0 ? calloc(1, size) : malloc(size);
			memset(p, (int)i, size);
		} else {
			size = 16 + x % 240;
			p = malloc(size);
		}
		sum += (unsigned char)p[0];
		live[i % window] = p;
	}
	for (int i = 0; i < window; i++)
		free(live[i]);
	free(live);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[256];

	storm_a = argc < 2 || strcmp(argv[1], "b");
	per_thread = argc > 3 ? atol(argv[3]) : 10000000;
	if (threads < 1 || threads > 256 || per_thread < 1) {
		fprintf(stderr, "usage: heap_storm a|b THREADS N\n");
		return 2;
	}
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, storm, (void *)(size_t)(i + 1));
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("%ld\n", per_thread * threads);
	return 0;
}
