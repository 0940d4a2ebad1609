// SPDX-License-Identifier: MIT
/*
 * prof/e2e/hostile.c - programs that profilers get wrong, one per mode,
 * for prof/e2e/e2e_test.sh.
 *
 *	hostile MODE [ARG]
 *
 * Every mode burns CPU in burn() (so a profile has something to show)
 * and prints one line; the line and the exit status are what a run under
 * the profiler must leave unchanged.
 *   burn [MS]      burn MS ms (default 300), exit 0
 *   mainexit       two threads burn, main returns by pthread_exit()
 *   exit3          burn, then _exit(3)
 *   abort          burn, then abort()
 *   segv           burn, then a NULL dereference
 *   wait           burn until a signal ends it (SIGTERM from outside)
 *   ownprof        its own SIGPROF handler at 100 Hz: prints the count
 *   sigwaitd       SIGPROF blocked everywhere, a thread sigwait()s for it
 *                  (ITIMER_PROF at 100 Hz): prints the count
 *   blockall       two threads started with every signal blocked (as
 *                  liblzma starts its workers) burn 300 ms each
 *   dlloop LIB S   one thread dlopen/dlsym/call/dlclose LIB in a loop for
 *                  S seconds while another burns
 *   forktree PROG  two children, each fork+exec PROG burn 200 (grandchildren)
 *   chdir DIR      chdir(DIR), then burn
 */
#ifndef HOSTILE_STATIC
#include <dlfcn.h>
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static atomic_int signals_seen;
static atomic_int stop_burning;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(int ms)
{
	double end = cpu_now() + ms / 1e3;

	while (cpu_now() < end && !atomic_load(&stop_burning))
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i * 7;
}

static void *burner(void *arg)
{
	burn((int)(long)arg);
	return NULL;
}

static void on_sigprof(int sig)
{
	(void)sig;
	atomic_fetch_add(&signals_seen, 1);
}

static int mode_mainexit(void)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, burner, (void *)300L);
	printf("mainexit: main leaves\n"); /* buffered: flushed at exit */
	pthread_exit(NULL);
}

static void start_itimer(void)
{
	struct itimerval itv = { { 0, 10000 }, { 0, 10000 } };

	setitimer(ITIMER_PROF, &itv, NULL);
}

static int mode_ownprof(void)
{
	struct sigaction sa = { .sa_handler = on_sigprof };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	start_itimer();
	burn(2000);
	printf("ownprof: %d\n", atomic_load(&signals_seen));
	return 0;
}

static void *waiter(void *arg)
{
	sigset_t *set = arg;
	int sig;

	while (!atomic_load(&stop_burning))
		if (!sigwait(set, &sig))
			atomic_fetch_add(&signals_seen, 1);
	return NULL;
}

static int mode_sigwaitd(void)
{
	static sigset_t set;
	pthread_t w, t[2];

	sigemptyset(&set);
	sigaddset(&set, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits it */
	pthread_create(&w, NULL, waiter, &set);
	start_itimer();
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, burner, (void *)1000L);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("sigwaitd: %d\n", atomic_load(&signals_seen));
	return 0;
}

#ifndef HOSTILE_STATIC
static int mode_dlloop(const char *lib, int seconds)
{
	time_t end = time(NULL) + seconds;
	pthread_t t;
	long loops = 0;

	atomic_store(&stop_burning, 0);
	pthread_create(&t, NULL, burner, (void *)(long)(seconds * 1000));
	while (time(NULL) < end) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		int (*fn)(int);

		if (!h) {
			fprintf(stderr, "dlloop: %s\n", dlerror());
			return 1;
		}
		*(void **)&fn = dlsym(h, "dlloop_work");
		if (fn)
			sink += (unsigned long)fn(2000);
		dlclose(h);
		loops++;
	}
	atomic_store(&stop_burning, 1);
	pthread_join(t, NULL);
	printf("dlloop: done\n");
	return loops > 0 ? 0 : 1;
}
#endif

static int mode_blockall(void)
{
	sigset_t all, old;
	pthread_t t[2];

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, burner, (void *)300L);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("blockall: done\n");
	return 0;
}

static int mode_forktree(const char *prog)
{
	pid_t kids[2];
	int status, bad = 0;

	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			pid_t g = fork();

			if (g == 0) {
				execl(prog, prog, "burn", "200", (char *)NULL);
				_exit(127);
			}
			burn(100);
			waitpid(g, &status, 0);
			_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
		}
	}
	burn(100);
	for (int i = 0; i < 2; i++) {
		waitpid(kids[i], &status, 0);
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	printf("forktree: %s\n", bad ? "a child failed" : "done");
	return bad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "burn";

	setvbuf(stdout, NULL, _IOFBF, 4096); /* exits must flush it */
	if (!strcmp(mode, "burn")) {
		burn(argc > 2 ? atoi(argv[2]) : 300);
		printf("burn: done\n");
		return 0;
	}
	if (!strcmp(mode, "mainexit"))
		return mode_mainexit();
	if (!strcmp(mode, "exit3")) {
		burn(300);
		printf("exit3: leaving\n");
		fflush(stdout);
		_exit(3);
	}
	if (!strcmp(mode, "abort")) {
		burn(300);
		printf("abort: aborting\n");
		fflush(stdout);
		abort();
	}
	if (!strcmp(mode, "segv")) {
		burn(300);
		printf("segv: crashing\n");
		fflush(stdout);
		sink = *(volatile unsigned long *)(uintptr_t)(argc - argc);
		return 0;
	}
	if (!strcmp(mode, "wait")) {
		printf("wait: burning\n");
		fflush(stdout);
		burn(30000);
		return 0;
	}
	if (!strcmp(mode, "blockall"))
		return mode_blockall();
	if (!strcmp(mode, "ownprof"))
		return mode_ownprof();
	if (!strcmp(mode, "sigwaitd"))
		return mode_sigwaitd();
#ifndef HOSTILE_STATIC
	if (!strcmp(mode, "dlloop") && argc > 3)
		return mode_dlloop(argv[2], atoi(argv[3]));
#endif
	if (!strcmp(mode, "forktree") && argc > 2)
		return mode_forktree(argv[2]);
	if (!strcmp(mode, "chdir") && argc > 2) {
		if (chdir(argv[2]))
			return 1;
		burn(200);
		printf("chdir: done\n");
		return 0;
	}
	fprintf(stderr, "hostile: unknown mode %s\n", mode);
	return 2;
}
