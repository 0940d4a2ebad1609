// SPDX-License-Identifier: MIT
/*
 * httpwork.c - a long-running program for the HTTP server's test
 * (http_test.sh): for SECONDS seconds, one thread burns CPU in
 * hot_spin() while another allocates in alloc_site() (64 KiB blocks, one
 * in four kept until the end) and frees the rest; then it frees what it
 * kept and prints one line that does not depend on timing.
 *
 *	httpwork SECONDS
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP 256

static volatile unsigned long sink;
static const char *stop_file;
static volatile int stopping;

static bool stop_asked(void)
{
	return access(stop_file, F_OK) == 0;
}

static NOINLINE void hot_spin(void)
{
	for (unsigned long i = 0; i < 2000000; i++)
		sink += i * i;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!stopping)
		hot_spin();
	return NULL;
}

static NOINLINE void *alloc_site(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, 64);
	return p;
}

int main(int argc, char **argv)
{
	static void *keep[KEEP];
	pthread_t t;

	if (argc != 2)
		return 2;
	stop_file = argv[1];
	if (pthread_create(&t, NULL, spinner, NULL))
		return 2;
	for (unsigned long i = 0; !stop_asked(); i++) {
		void *p = alloc_site(64 << 10);

		if (i % 4 == 0) { /* kept: the oldest kept one goes */
			free(keep[i / 4 % KEEP]);
			keep[i / 4 % KEEP] = p;
		} else {
			free(p);
		}
		if (i % 64 == 63) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	stopping = 1;
	pthread_join(t, NULL);
	for (size_t i = 0; i < KEEP; i++)
		free(keep[i]);
	printf("httpwork done\n");
	return 0;
}
