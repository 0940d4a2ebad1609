// SPDX-License-Identifier: MIT
/*
 * prof/e2e/fds.c - a program that does what it likes with its file
 * descriptors, for prof/e2e/fds_test.sh (issue 37 items 1 and 3, issue
 * 30's "Descriptors"):
 *
 *	fds exit-close | exit-dup2 | start-close | start-dup2 | threads N M
 *
 * exit-close: a thread closes every descriptor from 3 to 255 (the
 * closefrom habit of daemons), opens 8 files of its own (descriptors 3
 * to 10) and exits; the main thread then writes to each of them.
 * exit-dup2: a thread puts /dev/null on every descriptor from 3 to the
 * soft RLIMIT_NOFILE - 1 with dup2() and exits; the main thread then
 * checks that every one of them is still open.
 * start-close, start-dup2: the main thread does the same at once (every
 * descriptor above 2 closed, or /dev/null dup2()ed over it), as many
 * daemons do at start.
 * threads N M: N threads start and wait; once all have started, the main
 * thread opens /dev/null M times and writes to each.
 *
 * Then (start-close, start-dup2) the main thread burns 0.4 s of its CPU
 * in burn().
 * A write or an open that fails, or a descriptor found closed, is said on
 * stderr and the exit status is 1; else the last line is "fds MODE: done"
 * and the status 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NFILES 8

static int bad;
static int files[NFILES];
static int nofile;
static volatile unsigned long sink;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started;
static int released;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noinline)) burn(double seconds)
{
	double end = cpu_now() + seconds;

	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++)
			sink = sink * 31 + (unsigned long)i;
	__asm__ volatile("" ::: "memory"); /* keep the frame */
}

static void close_above_2(int upto)
{
	for (int fd = 3; fd < upto; fd++)
		close(fd);
}

static void dup2_above_2(void)
{
	int null = open("/dev/null", O_WRONLY);

	if (null < 0) {
		fprintf(stderr, "fds: /dev/null: %s\n", strerror(errno));
		bad = 1;
		return;
	}
	for (int fd = 3; fd < nofile; fd++)
		if (fd != null && dup2(null, fd) < 0) {
			fprintf(stderr, "fds: dup2 to %d: %s\n", fd,
				strerror(errno));
			bad = 1;
		}
}

static void open_files(void)
{
	for (int i = 0; i < NFILES; i++) {
		files[i] = open("/dev/null", O_WRONLY);
		if (files[i] < 0) {
			fprintf(stderr, "fds: open: %s\n", strerror(errno));
			bad = 1;
		}
	}
}

static void *exit_close(void *arg)
{
	(void)arg;
	close_above_2(256);
	open_files();
	burn(0.02);
	return NULL;
}

static void *exit_dup2(void *arg)
{
	(void)arg;
	dup2_above_2();
	burn(0.02);
	return NULL;
}

static void check_written(void)
{
	for (int i = 0; i < NFILES; i++)
		if (files[i] >= 0 && write(files[i], "x", 1) != 1) {
			fprintf(stderr, "fds: write to fd %d: %s\n", files[i],
				strerror(errno));
			bad = 1;
		}
}

static void check_open(void)
{
	for (int fd = 3; fd < nofile; fd++)
		if (fcntl(fd, F_GETFD) < 0) {
			fprintf(stderr, "fds: fd %d: %s\n", fd,
				strerror(errno));
			bad = 1;
		}
}

static void run_thread(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL) || pthread_join(t, NULL)) {
		fprintf(stderr, "fds: thread failed\n");
		bad = 1;
	}
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	started++;
	pthread_cond_broadcast(&cond);
	while (!released)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void threads(int n, int m)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	int made = 0, fd;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (; t && made < n; made++)
		if (pthread_create(&t[made], &attr, waiter, NULL)) {
			fprintf(stderr, "fds: thread %d failed\n", made);
			bad = 1;
			break;
		}
	pthread_mutex_lock(&lock);
	while (started < made)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < m; i++) {
		fd = open("/dev/null", O_WRONLY);
		if (fd < 0 || write(fd, "x", 1) != 1) {
			fprintf(stderr,
				"fds: open %d of %d with %d threads: "
				"%s\n",
				i + 1, m, made, strerror(errno));
			bad = 1;
			break;
		}
	}
	pthread_mutex_lock(&lock);
	released = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	free(t);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 2;
	nofile = rl.rlim_cur > 65536 ? 65536 : (int)rl.rlim_cur;
	if (!strcmp(mode, "exit-close")) {
		run_thread(exit_close);
		check_written();
	} else if (!strcmp(mode, "exit-dup2")) {
		run_thread(exit_dup2);
		check_open();
	} else if (!strcmp(mode, "start-close")) {
		close_above_2(nofile);
	} else if (!strcmp(mode, "start-dup2")) {
		dup2_above_2();
	} else if (!strcmp(mode, "threads") && argc == 4) {
		threads(atoi(argv[2]), atoi(argv[3]));
	} else {
		fprintf(stderr, "usage: fds exit-close | exit-dup2 | "
				"start-close | start-dup2 | threads N M\n");
		return 2;
	}
	if (!strncmp(mode, "start-", 6))
		burn(0.4);
	if (!strcmp(mode, "exit-dup2") || !strcmp(mode, "start-dup2"))
		check_open();
	if (bad)
		return 1;
	printf("fds %s: done\n", mode);
	return 0;
}
