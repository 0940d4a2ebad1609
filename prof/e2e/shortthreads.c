// SPDX-License-Identifier: MIT
/*
 * shortthreads.c - a thread-per-task workload whose CPU split is known,
 * for the sampler's accounting of short threads (threads_test.sh,
 * bench/threads_accuracy.sh):
 *
 *	shortthreads THREADS US [BATCH]
 *
 * THREADS threads, started BATCH at a time (default 2), each spinning in
 * thread_work() until its own CPU clock (CLOCK_THREAD_CPUTIME_ID) has
 * advanced by US microseconds; while a batch runs, the main thread spins
 * in main_work() for BATCH * US microseconds of its own CPU, then joins
 * the batch.  The last line is the truth, measured by the clocks:
 *
 *	thread_work_ns N main_work_ns N cpu_ns N share P
 *
 * cpu_ns being the whole process's CPU time (CLOCK_PROCESS_CPUTIME_ID,
 * read after the last join) and P thread_work's percentage of it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define MAX_BATCH 64

static _Atomic uint64_t thread_work_ns;
static volatile uint64_t sink;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin until the calling thread has used @ns more CPU; return it. */
static NOINLINE uint64_t spin(uint64_t ns)
{
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t;

	do {
		for (int i = 0; i < 1000; i++)
			sink = sink * 2862933555777941757u + 3037000493u;
		t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	} while (t - t0 < ns);
	return t - t0;
}

static NOINLINE void *thread_work(void *arg)
{
	uint64_t used = spin((uint64_t)(uintptr_t)arg);

	/* Relaxed: a sum read after every join. */
	atomic_fetch_add_explicit(&thread_work_ns, used, memory_order_relaxed);
	return NULL;
}

static NOINLINE uint64_t main_work(uint64_t ns)
{
	uint64_t used = spin(ns);

	__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
	return used;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_BATCH];
	uint64_t main_ns = 0, cpu, per;
	long n, batch = 2, i, k, started;

	if (argc < 3 || (n = atol(argv[1])) <= 0 || atof(argv[2]) <= 0 ||
	    (argc > 3 && ((batch = atol(argv[3])) <= 0 || batch > MAX_BATCH))) {
		fprintf(stderr, "usage: shortthreads THREADS US [BATCH<=%d]\n",
			MAX_BATCH);
		return 2;
	}
	per = (uint64_t)(atof(argv[2]) * 1000);
	for (i = 0; i < n; i += started) {
		started = 0;
		for (k = 0; k < batch && i + k < n; k++) {
			if (pthread_create(&t[k], NULL, thread_work,
					   (void *)(uintptr_t)per)) {
				perror("pthread_create");
				return 1;
			}
			started++;
		}
		main_ns += main_work(per * (uint64_t)started);
		for (k = 0; k < started; k++)
			pthread_join(t[k], NULL);
	}
	cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	/* Relaxed: every thread was joined. */
	per = atomic_load_explicit(&thread_work_ns, memory_order_relaxed);
	printf("thread_work_ns %llu main_work_ns %llu cpu_ns %llu share %.1f\n",
	       (unsigned long long)per, (unsigned long long)main_ns,
	       (unsigned long long)cpu, 100.0 * (double)per / (double)cpu);
	return 0;
}
