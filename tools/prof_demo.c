// SPDX-License-Identifier: MIT
/*
 * prof_demo - a workload with a known CPU profile, for profring-prof's
 * demo, tests and benchmark.
 *
 *	prof_demo [--units N]		two threads: hot_seventy() does 7
 *					units of work, hot_thirty() 3, so
 *					70% / 30% of the CPU time goes to them
 *					whatever the scheduling
 *	prof_demo --threads K [--ms M]	K threads in waves of 4, each burning
 *					about M ms of CPU in thread_burn();
 *					prints "tid N" for each
 *
 * One unit is a fixed number of iterations of the same inlined loop in
 * both functions, so the split is a property of the code, not of the
 * machine.  Prints the CPU time it used.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNIT_ITERATIONS 20000000L

static long units = 10;
static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t churn(uint64_t x, long n)
{
	while (n-- > 0) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ __volatile__("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) uint64_t hot_seventy(long n);
__attribute__((noinline)) uint64_t hot_thirty(long n);
__attribute__((noinline)) uint64_t thread_burn(long ms);

/*
 * The hot functions call out now and then, as real code does: a leaf
 * function gets no frame of its own from GCC 12 even with
 * -mno-omit-leaf-frame-pointer (clang honours it), and a frame-pointer
 * unwinder then cannot see the leaf's caller.
 */
__attribute__((noinline)) void progress(uint64_t *done);

__attribute__((noinline)) void progress(uint64_t *done)
{
	__asm__ __volatile__("" : : "r"(done) : "memory");
	(*done)++;
}

#define CHUNK 100000

static inline __attribute__((always_inline)) uint64_t work(uint64_t x, long n)
{
	uint64_t done = 0;

	for (; n > 0; n -= CHUNK) {
		x = churn(x, n < CHUNK ? n : CHUNK);
		progress(&done);
	}
	return x + done;
}

__attribute__((noinline)) uint64_t hot_seventy(long n)
{
	return work(0x9e3779b97f4a7c15u, n);
}

__attribute__((noinline)) uint64_t hot_thirty(long n)
{
	return work(0x7f4a7c159e3779b9u, n);
}

static double cpu_seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Burn about @ms of this thread's CPU time. */
__attribute__((noinline)) uint64_t thread_burn(long ms)
{
	double end = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) + (double)ms / 1e3;
	uint64_t x = 1;

	while (cpu_seconds(CLOCK_THREAD_CPUTIME_ID) < end)
		x = churn(x | 1, 100000);
	return x;
}

static void *run_seventy(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < 7 * units; i++)
		sink += hot_seventy(UNIT_ITERATIONS);
	return NULL;
}

static void *run_thirty(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < 3 * units; i++)
		sink += hot_thirty(UNIT_ITERATIONS);
	return NULL;
}

static void *run_burn(void *arg)
{
	long ms = *(long *)arg;

	printf("tid %ld\n", (long)syscall(SYS_gettid));
	sink += thread_burn(ms);
	return NULL;
}

static int split(void)
{
	pthread_t a, b;

	if (pthread_create(&a, NULL, run_seventy, NULL) ||
	    pthread_create(&b, NULL, run_thirty, NULL)) {
		perror("prof_demo: pthread_create");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}

static int waves(long nthreads, long ms)
{
	pthread_t t[4];
	long i, j, n;

	for (i = 0; i < nthreads; i += n) {
		n = nthreads - i < 4 ? nthreads - i : 4;
		for (j = 0; j < n; j++)
			if (pthread_create(&t[j], NULL, run_burn, &ms)) {
				perror("prof_demo: pthread_create");
				return 1;
			}
		for (j = 0; j < n; j++)
			pthread_join(t[j], NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long nthreads = 0, ms = 100;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--units") && i + 1 < argc) {
			units = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			nthreads = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--ms") && i + 1 < argc) {
			ms = atol(argv[++i]);
		} else {
			fprintf(stderr,
				"usage: prof_demo [--units N] | --threads K [--ms M]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = nthreads ? waves(nthreads, ms) : split();
	printf("prof_demo: %.2f s of CPU\n",
	       cpu_seconds(CLOCK_PROCESS_CPUTIME_ID));
	return rc;
}
