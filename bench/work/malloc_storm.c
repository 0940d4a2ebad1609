// SPDX-License-Identifier: MIT
/*
 * malloc_storm - the heap profiler benchmark's malloc-heavy workload
 * (bench/heap_overhead.sh): 2 threads, each making N small allocations
 * (16 to 255 bytes, through malloc) and freeing each one 64 allocations
 * later.  Prints the allocations made; the script times the run.
 *
 *	malloc_storm [N]	(default 10,000,000 per thread)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 64

static long per_thread = 10000000;

static void *storm(void *arg)
{
	void *live[WINDOW] = { 0 };
	unsigned long x = (unsigned long)(size_t)arg * 2654435761u + 1, sum = 0;

	for (long i = 0; i < per_thread; i++) {
		size_t size;
		char *p;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size = 16 + x % 240;
		free(live[i % WINDOW]);
		p = malloc(size);
		p[0] = (char)i;
		sum += (unsigned char)p[0];
		live[i % WINDOW] = p;
	}
	for (int i = 0; i < WINDOW; i++)
		free(live[i]);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		per_thread = atol(argv[1]) > 0 ? atol(argv[1]) : per_thread;
	if (pthread_create(&t, NULL, storm, (void *)1))
		return 1;
	storm((void *)2);
	pthread_join(t, NULL);
	printf("allocations %ld\n", 2 * per_thread);
	return 0;
}
