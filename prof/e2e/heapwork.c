// SPDX-License-Identifier: MIT
/*
 * heapwork.c - a workload whose allocations are known exactly, for the
 * heap profiler's accuracy test (heap_test.sh).  Two threads each run
 * every function below once; each function allocates through one entry
 * of the malloc family, frees some of it and leaves the rest live at exit.
 * Per function and thread (the test doubles them):
 *   f_malloc   1000 x malloc(100), 600 freed
 *   f_calloc    500 x calloc(10, 30), all freed
 *   f_realloc   200 x malloc(64) then realloc to 256 (the 64 freed by it)
 *   f_memalign  300 x posix_memalign(64, 1000), 100 freed
 *   f_aligned   100 x aligned_alloc(4096, 8192), none freed
 * (f_malloc's pointer array, calloc(1000, 8), is counted there too.)
 * With an argument N (a scale), every count is multiplied by N, for the
 * sampled-rate check.  Other modes, for the other checks:
 *   heapwork threads N  N threads, each allocating and freeing a little
 *   heapwork errno      free() keeps errno (exit 4 if not)
 *   heapwork fork       a child allocates too; both print; the parent
 *                       exits with the child's status
 *   heapwork twice      the work of both threads, then 1.5 s asleep, then
 *                       all of it again (a trace's generations straddle it)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static long scale = 1;
static void *volatile sink;

static NOINLINE void f_malloc(void)
{
	long n = 1000 * scale, i;
	void **v = calloc(n, sizeof(*v)); /* counted under main_work */

	for (i = 0; i < n; i++)
		v[i] = malloc(100);
	for (i = 0; i < n * 6 / 10; i++)
		free(v[i]);
	sink = v;
}

static NOINLINE void f_calloc(void)
{
	for (long i = 0; i < 500 * scale; i++) {
		void *p = calloc(10, 30);

		sink = p;
		free(p);
	}
}

static NOINLINE void f_realloc(void)
{
	for (long i = 0; i < 200 * scale; i++) {
		char *p = malloc(64);

		p[0] = 1;
		sink = realloc(p, 256);
	}
}

static NOINLINE void f_memalign(void)
{
	for (long i = 0; i < 300 * scale; i++) {
		void *p = NULL;

		if (posix_memalign(&p, 64, 1000))
			exit(3);
		if (i < 100 * scale)
			free(p);
		else
			sink = p;
	}
}

static NOINLINE void f_aligned(void)
{
	for (long i = 0; i < 100 * scale; i++)
		sink = aligned_alloc(4096, 8192);
}

static NOINLINE void *main_work(void *arg)
{
	f_malloc();
	f_calloc();
	f_realloc();
	f_memalign();
	f_aligned();
	return arg;
}

static void *small_work(void *arg)
{
	for (int i = 0; i < 100; i++)
		free(malloc(16 + i));
	sink = malloc(48); /* live at exit */
	return arg;
}

static int many_threads(long n)
{
	pthread_t *t = calloc(n, sizeof(*t));
	long ok = 0;

	for (long i = 0; i < n; i++)
		if (!pthread_create(&t[i], NULL, small_work, NULL))
			ok++;
		else
			t[i] = 0;
	for (long i = 0; i < n; i++)
		if (t[i])
			pthread_join(t[i], NULL);
	printf("threads %ld\n", ok);
	free(t);
	return ok == n ? 0 : 5;
}

static int keeps_errno(void)
{
	for (int i = 0; i < 1000; i++) {
		void *p = malloc(1000);

		errno = 1234;
		free(p);
		if (errno != 1234)
			return 4;
	}
	printf("errno kept\n");
	return 0;
}

static int forks(void)
{
	int status;
	pid_t pid;

	main_work(NULL);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 6;
	if (!pid) {
		main_work(NULL);
		printf("child done\n");
		exit(7);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 6;
	printf("parent done\n");
	return WEXITSTATUS(status);
}

static int two_threads(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, main_work, NULL))
		return 2;
	main_work(NULL);
	pthread_join(t, NULL);
	return 0;
}

static int twice(void)
{
	int rc = two_threads();

	usleep(1500000);
	if (!rc)
		rc = two_threads();
	if (!rc)
		printf("heapwork twice done\n");
	return rc;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc > 2 && !strcmp(argv[1], "threads"))
		return many_threads(atol(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "errno"))
		return keeps_errno();
	if (argc > 1 && !strcmp(argv[1], "fork"))
		return forks();
	if (argc > 1 && !strcmp(argv[1], "twice"))
		return twice();
	if (argc > 1)
		scale = atol(argv[1]) > 0 ? atol(argv[1]) : 1;
	rc = two_threads();
	if (!rc)
		printf("heapwork done\n");
	return rc;
}
