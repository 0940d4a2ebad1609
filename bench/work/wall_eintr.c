// SPDX-License-Identifier: MIT
/*
 * bench/work/wall_eintr.c - what wall-clock sampling's signals do to a
 * naive program: three 1 s waits, each one call that is not retried, in
 * one of poll, select, epoll_wait, nanosleep (argv[1]); prints how many
 * of the calls returned EINTR and how long the three took.
 * (bench/wall_overhead.sh runs it plain and under `record --mode wall`.)
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int wait_once(const char *how, int ep)
{
	struct timespec ts = { 1, 0 };
	struct timeval tv = { 1, 0 };
	struct epoll_event ev;

	if (!strcmp(how, "poll"))
		return poll(NULL, 0, 1000);
	if (!strcmp(how, "select"))
		return select(0, NULL, NULL, NULL, &tv);
	if (!strcmp(how, "epoll"))
		return epoll_wait(ep, &ev, 1, 1000);
	return nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "poll";
	int ep = epoll_create1(0), eintr = 0;
	double t0 = now_s();

	for (int i = 0; i < 3; i++)
		if (wait_once(how, ep) < 0 && errno == EINTR)
			eintr++;
	printf("%s: 3 calls of 1 s, %d returned EINTR, %.2f s in all\n", how,
	       eintr, now_s() - t0);
	close(ep);
	return 0;
}
