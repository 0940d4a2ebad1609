// SPDX-License-Identifier: MIT
/*
 * bench/mutex_storm.c - the lock profiler's workload (bench/mutex_cost.sh):
 *
 *   mutex_storm uncontended N	one thread locks and unlocks one mutex N
 *			times; prints "uncontended NS" (ns of the thread's CPU
 *			time per pair).
 *   mutex_storm contended T N	T threads each lock one shared mutex N
 *			times, yielding the CPU while it holds it, so that
 *			most acquires find it held, however busy the
 *			machine; prints "contended NS" (ns of all the
 *			threads' CPU time per acquire).
 * With anything else (make bench runs it with its flags) it runs both,
 * small, and prints them: a plain figure, no profiler.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t shared;
static long iters;

/* The thread's own CPU time: what other programs run on the CPUs does
 * not count (the machine may be shared). */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Every thread's CPU time: what the threads spend, not how long the
 * scheduler made them wait for a CPU. */
static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double uncontended(long n)
{
	uint64_t t0 = cpu_ns();

	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		shared++;
		pthread_mutex_unlock(&m);
	}
	return (double)(cpu_ns() - t0) / (double)n;
}

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&m);
		shared++;
		sched_yield(); /* off the CPU holding it: the others wait */
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static double contended(int t, long n)
{
	pthread_t th[64];
	uint64_t t0;

	if (t < 1 || t > 64)
		t = 2;
	iters = n;
	t0 = process_cpu_ns();
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	return (double)(process_cpu_ns() - t0) / ((double)n * t);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "uncontended")) {
		printf("uncontended %.3f\n", uncontended(atol(argv[2])));
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "contended")) {
		printf("contended %.3f\n",
		       contended(atoi(argv[2]), atol(argv[3])));
		return 0;
	}
	printf("mutex_storm: uncontended %.2f ns/pair, contended (2 threads) "
	       "%.1f CPU ns/acquire (plain; bench/mutex_cost.sh compares)\n",
	       uncontended(10000000), contended(2, 1000000));
	return 0;
}
