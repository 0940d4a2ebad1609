// SPDX-License-Identifier: MIT
/*
 * bench/work/wall_sleepers.c - wall-clock mode's cost: argv[1] threads
 * (default 100) sleep, waking every argv[4] ms (default 200; a
 * nanosleep restarted with the time left after EINTR),
 * while the main thread computes a fixed amount (argv[2] million
 * iterations, default 300), after sleeping argv[3] seconds (default 0:
 * an idle process's cost); prints the compute loop's wall time.
 * (bench/wall_overhead.sh runs it plain and under `record --mode wall`.)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static long nap_ms = 200;

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = { nap_ms / 1000, nap_ms % 1000 * 1000000 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	long iters = (argc > 2 ? atol(argv[2]) : 300) * 1000000L;
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	struct timespec idle = { argc > 3 ? atoi(argv[3]) : 0, 0 };
	double t0;

	if (argc > 4)
		nap_ms = atol(argv[4]);
	if (!t)
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, sleeper, NULL))
			return 1;
	while (nanosleep(&idle, &idle) && errno == EINTR)
		;
	t0 = now_s();
	for (long i = 0; i < iters; i++)
		sink += (unsigned long)i * 7;
	printf("compute %.3f s\n", now_s() - t0);
	free(t);
	return 0; /* exit() ends the sleepers wherever they are */
}
