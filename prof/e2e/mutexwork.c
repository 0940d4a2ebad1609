// SPDX-License-Identifier: MIT
/*
 * prof/e2e/mutexwork.c - lock waits whose truth the program measures
 * itself (prof/e2e/mutex_test.sh).
 *
 *   mutexwork share N FILE  two threads take lock A in f_lock_a(), two
 *		take lock B in f_lock_b(), N times each, holding A three
 *		times as long as B; each call to pthread_mutex_lock is timed
 *		(CLOCK_MONOTONIC) and the sums go to FILE as
 *		"f_lock_a NS" and "f_lock_b NS" lines.
 *   mutexwork hang	what must never hang or change: threads dlopen at
 *		once (the profiler's own lock, taken inside its dlopen
 *		hook), timed condition waits that time out and that are
 *		signalled, fork while another thread holds a lock (the child
 *		locks, waits and exits 7), recursive and error-checking
 *		mutexes, rwlocks and a semaphore contended.  It prints what
 *		each returned: the same with and without the profiler.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	while (nanosleep(&ts, &ts))
		;
}

/* ---- share ---- */

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static uint64_t waited_a, waited_b; /* under their own lock */
static long iters;

__attribute__((noinline)) static void f_lock_a(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_mutex_lock(&lock_a);
	t1 = now_ns();
	waited_a += t1 - t0;
	sleep_us(300);
	pthread_mutex_unlock(&lock_a);
}

__attribute__((noinline)) static void f_lock_b(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_mutex_lock(&lock_b);
	t1 = now_ns();
	waited_b += t1 - t0;
	sleep_us(100);
	pthread_mutex_unlock(&lock_b);
}

static void *worker(void *arg)
{
	void (*fn)(void) = (void (*)(void))(uintptr_t)arg;

	for (long i = 0; i < iters; i++) {
		fn();
		sleep_us(20);
	}
	return NULL;
}

static int share(long n, const char *file)
{
	pthread_t t[4];
	FILE *f;

	iters = n;
	for (int i = 0; i < 4; i++)
		pthread_create(
			&t[i], NULL, worker,
			(void *)(uintptr_t)(i % 2 ? f_lock_b : f_lock_a));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	f = fopen(file, "w");
	if (!f)
		return 1;
	fprintf(f, "f_lock_a %llu\nf_lock_b %llu\n",
		(unsigned long long)waited_a, (unsigned long long)waited_b);
	fclose(f);
	printf("share: %ld rounds\n", n);
	return 0;
}

/* ---- hang ---- */

static void *dl_loop(void *arg)
{
	(void)arg;
	for (int i = 0; i < 30; i++) {
		void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);

		if (h)
			dlclose(h);
	}
	return NULL;
}

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int signalled, stop_signalling;

static void *signaller(void *arg)
{
	(void)arg;
	for (;;) {
		sleep_us(3000);
		pthread_mutex_lock(&cm);
		if (stop_signalling) {
			pthread_mutex_unlock(&cm);
			return NULL;
		}
		signalled++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&cm);
	}
}

static void cond_part(void)
{
	int timeouts = 0, wakes = 0, bad = 0;
	pthread_t t;

	pthread_create(&t, NULL, signaller, NULL);
	pthread_mutex_lock(&cm);
	for (int i = 0; i < 40; i++) {
		struct timespec dl;
		int seen = signalled, rc = 0;

		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += 2000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		while (signalled == seen && rc == 0)
			rc = pthread_cond_timedwait(&cv, &cm, &dl);
		if (rc == ETIMEDOUT)
			timeouts++;
		else if (rc == 0)
			wakes++;
		else
			bad++;
	}
	stop_signalling = 1;
	pthread_mutex_unlock(&cm);
	pthread_join(t, NULL);
	printf("cond: %d waits, %s timed out, %s woken, %d errors\n", 40,
	       timeouts ? "some" : "none", wakes ? "some" : "none", bad);
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static sem_t held_sem;

static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	sem_post(&held_sem);
	sleep_us(100000);
	pthread_mutex_unlock(&held);
	return NULL;
}

static void fork_part(void)
{
	pthread_t t;
	pid_t pid;
	int st = 0;

	sem_init(&held_sem, 0, 0);
	pthread_create(&t, NULL, holder, NULL);
	sem_wait(&held_sem); /* the holder has the lock */
	pid = fork();
	if (pid == 0) {
		pthread_mutex_t mine = PTHREAD_MUTEX_INITIALIZER;
		pthread_cond_t c = PTHREAD_COND_INITIALIZER;
		struct timespec dl;
		int rc;

		pthread_mutex_lock(&mine);
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += 1000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		rc = pthread_cond_timedwait(&c, &mine, &dl);
		pthread_mutex_unlock(&mine);
		/* The inherited lock stays held: trylock says so. */
		_exit(rc == ETIMEDOUT && pthread_mutex_trylock(&held) == EBUSY
			      ? 7
			      : 1);
	}
	waitpid(pid, &st, 0);
	pthread_mutex_lock(&held); /* waits for the holder */
	pthread_mutex_unlock(&held);
	pthread_join(t, NULL);
	printf("fork: child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static pthread_mutex_t kinds_m;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t sem;

static void *contender(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&kinds_m);
	pthread_mutex_unlock(&kinds_m);
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	sem_post(&sem);
	return NULL;
}

static void kinds_part(void)
{
	pthread_mutexattr_t at;
	pthread_mutex_t ec;
	pthread_t t;
	int r1, r2, r3, r4, r5;

	pthread_mutexattr_init(&at);
	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&kinds_m, &at);
	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&ec, &at);
	sem_init(&sem, 0, 0);
	r1 = pthread_mutex_lock(&kinds_m);
	r2 = pthread_mutex_lock(&kinds_m); /* recursive: 0 */
	pthread_rwlock_wrlock(&rw);
	pthread_create(&t, NULL, contender, NULL);
	sleep_us(20000); /* the contender waits */
	pthread_mutex_unlock(&kinds_m);
	pthread_mutex_unlock(&kinds_m);
	sleep_us(20000);
	pthread_rwlock_unlock(&rw);
	r3 = sem_wait(&sem); /* posted by the contender */
	pthread_join(t, NULL);
	r4 = pthread_mutex_lock(&ec);
	r5 = pthread_mutex_lock(&ec); /* error-checking: EDEADLK */
	printf("kinds: %d %d %d %d %s\n", r1, r2, r3, r4,
	       r5 == EDEADLK ? "EDEADLK" : "other");
}

static int hang(void)
{
	pthread_t t[4];

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, dl_loop, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("dlopen: done\n");
	cond_part();
	fork_part();
	kinds_part();
	return 3;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "share"))
		return share(atol(argv[2]), argv[3]);
	if (argc == 2 && !strcmp(argv[1], "hang"))
		return hang();
	fprintf(stderr, "usage: mutexwork share N FILE | hang\n");
	return 2;
}
