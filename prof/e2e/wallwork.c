// SPDX-License-Identifier: MIT
/*
 * prof/e2e/wallwork.c - a thread that sleeps 70% of the time and computes
 * 30%, for wall_test.sh: its "worker" thread loops for argv[1] seconds
 * (default 3): compute_part() spins 22 ms (argv[2]), then sleep_part()
 * sleeps 51 ms (argv[3]; nanosleep, restarted with the time left after
 * EINTR: a wall-clock profiler's signals interrupt it).  By default a
 * 73 ms cycle, not a multiple of the 20 ms wall tick.  With argv[4] "abs"
 * the cycles lie on a fixed grid of the monotonic clock (sleep_part
 * sleeps until the cycle's end, clock_nanosleep TIMER_ABSTIME), as
 * periodic tasks do: a cycle that is a multiple of the wall tick then
 * keeps its phase against regular ticks (aliasing, which wall.c's
 * jittered ticks avoid; wall_test.sh checks it).  The main
 * thread waits in pthread_join().  stdout: one fixed line; stderr: the
 * time each part took by the monotonic clock, and how many nanosleeps
 * EINTR cut short.
 *
 * `wallwork sleeps N`: the sleeps a program makes without retrying, N
 * rounds of usleep, nanosleep, clock_nanosleep (relative) and sleep-until
 * (TIMER_ABSTIME) of 50 ms each, no signal handler installed; stderr:
 * how many each returned EINTR and the time they took.  Then one
 * nanosleep of 2 s with a SIGUSR1 handler installed, which another
 * thread sends 100 ms in: the program's own signal must still cut it
 * short (stderr: "own signal: EINTR" or "own signal: slept").
 *
 * `wallwork daemon`: computes 100 ms, calls daemon(1, 1) (the parent
 * exits at once), and the daemon computes 1 s more.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static unsigned long eintr;
static unsigned long long sleep_ns, compute_ns; /* by the program's clock */
static long compute_ms = 22, sleep_ms = 51; /* argv[2], argv[3] */
static int abs_cycle; /* argv[4] "abs": cycles on a fixed grid */
static unsigned long long cycle_end; /* abs: the current cycle's end */

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* 22 ms of real time (on a busy machine, less CPU: it still runs). */
__attribute__((noinline)) static void compute_part(void)
{
	unsigned long long end = mono_ns() + compute_ms * 1000000ull;

	while (mono_ns() < end)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i * 7;
}

/* A frame of its own, so that sleep_part is its caller in the stack
 * (libc's nanosleep has no frame pointer: the unwinder skips the caller
 * of a frameless leaf). */
__attribute__((noinline)) static void do_sleep(struct timespec *ts)
{
	if (abs_cycle) {
		int rc;

		while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ts,
					     NULL)) == EINTR)
			eintr++;
		(void)rc;
	} else {
		while (nanosleep(ts, ts) && errno == EINTR)
			eintr++;
	}
	__asm__ volatile("" ::: "memory");
}

/* Sleep @sleep_ms, or in abs mode until the cycle's end. */
__attribute__((noinline)) static void sleep_part(void)
{
	struct timespec ts = { sleep_ms / 1000, sleep_ms % 1000 * 1000000 };

	if (abs_cycle) {
		ts.tv_sec = (time_t)(cycle_end / 1000000000ull);
		ts.tv_nsec = (long)(cycle_end % 1000000000ull);
	}
	do_sleep(&ts);
	__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
	unsigned long long end = mono_ns() + *(unsigned long long *)arg;

	pthread_setname_np(pthread_self(), "worker");
	cycle_end = mono_ns();
	while (mono_ns() < end) {
		unsigned long long t0 = mono_ns(), t1, t2;

		cycle_end +=
			(unsigned long long)(compute_ms + sleep_ms) * 1000000;

		compute_part();
		t1 = mono_ns();
		sleep_part();
		t2 = mono_ns();
		compute_ns += t1 - t0;
		sleep_ns += t2 - t1;
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void *send_usr1(void *arg)
{
	struct timespec ts = { 0, 100000000 };

	nanosleep(&ts, NULL);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

/* The `sleeps` mode (see the top). */
static int sleeps(int rounds)
{
	const struct timespec d = { 0, 50000000 };
	struct timespec ts;
	unsigned long cut[4] = { 0 };
	unsigned long long t0 = mono_ns(), t1;
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t self = pthread_self(), t;
	int rc;

	for (int i = 0; i < rounds; i++) {
		cut[0] += usleep(50000) && errno == EINTR;
		cut[1] += nanosleep(&d, NULL) && errno == EINTR;
		cut[2] +=
			clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL) == EINTR;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += d.tv_nsec;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		cut[3] += clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					  NULL) == EINTR;
	}
	t1 = mono_ns();
	fprintf(stderr,
		"wallwork: sleeps EINTR usleep %lu nanosleep %lu "
		"clock_nanosleep %lu abs %lu; %d x 4 x 50 ms took %.3f s\n",
		cut[0], cut[1], cut[2], cut[3], rounds, (t1 - t0) / 1e9);
	sigaction(SIGUSR1, &sa, NULL);
	if (pthread_create(&t, NULL, send_usr1, &self))
		return 1;
	ts = (struct timespec){ 2, 0 };
	rc = nanosleep(&ts, NULL);
	fprintf(stderr, "wallwork: own signal: %s\n",
		rc && errno == EINTR ? "EINTR" : "slept");
	pthread_join(t, NULL);
	printf("wallwork done\n");
	return 0;
}

/* The `daemon` mode (see the top). */
static int daemonize(void)
{
	compute_ms = 100;
	compute_part();
	if (daemon(1, 1))
		return 1;
	compute_ms = 1000;
	compute_part();
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long ns =
		(unsigned long long)((argc > 1 ? atof(argv[1]) : 3.0) * 1e9);
	pthread_t t;

	if (argc > 2 && !strcmp(argv[1], "sleeps"))
		return sleeps(atoi(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "daemon"))
		return daemonize();
	if (argc > 3) {
		compute_ms = atol(argv[2]);
		sleep_ms = atol(argv[3]);
	}
	abs_cycle = argc > 4 && !strcmp(argv[4], "abs");
	if (pthread_create(&t, NULL, worker, &ns))
		return 1;
	pthread_join(t, NULL);
	printf("wallwork done\n");
	fprintf(stderr,
		"wallwork: sleep_part %llu ns, compute_part %llu ns, "
		"nanosleep EINTR %lu\n",
		sleep_ns, compute_ns, eintr);
	return 0;
}
