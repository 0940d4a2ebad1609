// SPDX-License-Identifier: MIT
/*
 * prof/agent/sleep_hook.c - libprofring-prof.so's interposed nanosleep,
 * clock_nanosleep, usleep and sleep: a sleep that only our wall signal
 * cut short goes on for the time it had left, as it would have without
 * the profiler.
 *
 * The kernel never restarts these calls after a handler, SA_RESTART or
 * not: they return EINTR (signal(7)).  In wall mode (wall.c) a sleeping
 * thread takes a signal after it ran, so a program's sleep that does not
 * retry was cut short (20 x usleep(100 ms) took 1.57 s instead of 2.00
 * s, with 5 EINTR).  Here the real call is made again, with the time
 * left (the kernel's remaining time; a TIMER_ABSTIME sleep with the same
 * deadline), when both hold:
 *   - our handler cut this thread's call short while it slept: the
 *     handler counts the calls it finds returning EINTR under it
 *     (prof_wall_cuts, wall.c), so the EINTR is not only some other
 *     signal's;
 *   - no handler of the program's is installed, for any signal: so none
 *     ran during the sleep (a program signal that came just after ours,
 *     before the call returned, could not be told apart without wrapping
 *     the program's handlers), and none expected to cut it short.  The
 *     real dispositions are asked as EINTR comes back, one sigaction call
 *     per signal (60-odd calls: about 100 us where a system call costs
 *     1.6 us, as on the VM this was measured on); once a handler of the
 *     program's is seen they are never asked again, and no sleep is
 *     resumed (as before: profring-prof(1), --mode wall).
 * A handler installed and removed again between two looks is not seen.
 * glibc's own signals (thread cancellation, set*id) cannot be asked
 * about; one that came during our handler is taken for ours.  Anything
 * else returns what the real call returned, errno and all; the program's
 * remaining-time argument is written only when the call returns EINTR,
 * as the kernel writes it.
 *
 * Inside libc, sleep() and usleep() call nanosleep without the PLT: they
 * are interposed too, made as glibc makes them.  thrd_sleep, poll,
 * select, epoll_wait and the others still return EINTR.  Built with frame
 * pointers (Makefile): a sample in libc's frameless wrapper walks on
 * through our frame to the program's caller.  Sanitizer builds interpose
 * none of this (their runtimes intercept the same functions).
 */
#include "prof/agent/hooks.h"
#include "prof/agent/sleep_hook.h"

#include "ring/compiler.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PROF_SLEEP_HOOKS_OFF 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PROF_SLEEP_HOOKS_OFF 1
#endif

#ifndef PROF_SLEEP_HOOKS_OFF
typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);
typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *,
				  struct timespec *);

extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _end[] __attribute__((visibility("hidden")));

/* libc's @name (dlsym(RTLD_NEXT)), looked up once; NULL if none. */
static void *next_of(_Atomic(void *) *cache, const char *name)
{
	/* Relaxed: any thread finds the same. */
	void *p = atomic_load_explicit(cache, memory_order_relaxed);

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		atomic_store_explicit(cache, p, memory_order_relaxed);
	}
	return p;
}

static nanosleep_fn next_nanosleep(void)
{
	static _Atomic(void *) cache;
	nanosleep_fn f;
	void *p = next_of(&cache, "nanosleep");

	memcpy(&f, &p, sizeof(f));
	return f;
}

static clock_nanosleep_fn next_clock_nanosleep(void)
{
	static _Atomic(void *) cache;
	clock_nanosleep_fn f;
	void *p = next_of(&cache, "clock_nanosleep");

	memcpy(&f, &p, sizeof(f));
	return f;
}

/*
 * A handler of the program's was seen: from then on no sleep is resumed
 * (never wrong, only as before), and the dispositions are not asked
 * again.  Relaxed: a flag, nothing published with it.
 */
static atomic_bool program_handler;

/* Does every signal with a handler have ours (code of this library)? */
static bool only_our_handlers(void)
{
	struct sigaction sa;
	uintptr_t h;

	if (atomic_load_explicit(&program_handler, memory_order_relaxed))
		return false;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP ||
		    prof_hooks_real_sigaction(sig, NULL, &sa))
			continue; /* none, or glibc's own (refused) */
		if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
			continue;
		h = (uintptr_t)sa.sa_sigaction;
		if (h < (uintptr_t)__ehdr_start || h >= (uintptr_t)_end) {
			atomic_store_explicit(&program_handler, true,
					      memory_order_relaxed);
			return false;
		}
	}
	return true;
}

static unsigned long cuts_now(void)
{
	/* Relaxed: written by this thread's handler (sleep_hook.h). */
	return atomic_load_explicit(&prof_wall_cuts, memory_order_relaxed);
}

/*
 * Resume a sleep that returned EINTR?  @cuts: prof_wall_cuts before the
 * call (see the top of the file).
 */
static bool resume(unsigned long cuts)
{
	return cuts_now() != cuts && only_our_handlers();
}

RING_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
	nanosleep_fn next = next_nanosleep();
	struct timespec left;
	unsigned long cuts;
	int rc;

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	cuts = cuts_now();
	rc = next(req, &left);
	while (rc && errno == EINTR && resume(cuts)) {
		cuts = cuts_now();
		rc = next(&left, &left);
	}
	if (rc && errno == EINTR && rem)
		*rem = left;
	return rc;
}

RING_API int clock_nanosleep(clockid_t clock, int flags,
			     const struct timespec *req, struct timespec *rem)
{
	clock_nanosleep_fn next = next_clock_nanosleep();
	bool abs = flags & TIMER_ABSTIME;
	struct timespec left;
	unsigned long cuts;
	int rc;

	if (!next)
		return ENOSYS;
	cuts = cuts_now();
	rc = next(clock, flags, req, abs ? NULL : &left);
	while (rc == EINTR && resume(cuts)) {
		cuts = cuts_now();
		rc = abs ? next(clock, flags, req, NULL)
			 : next(clock, flags, &left, &left);
	}
	if (rc == EINTR && !abs && rem)
		*rem = left;
	return rc;
}

/* glibc's usleep(), through the nanosleep above. */
RING_API int usleep(useconds_t usec)
{
	struct timespec ts = { .tv_sec = (time_t)(usec / 1000000),
			       .tv_nsec = (long)(usec % 1000000) * 1000 };

	return nanosleep(&ts, NULL);
}

/* glibc's sleep(), through the nanosleep above. */
RING_API unsigned int sleep(unsigned int seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds };
	int saved = errno;

	if (nanosleep(&ts, &ts) < 0)
		return (unsigned int)ts.tv_sec; /* the whole seconds left */
	errno = saved;
	return 0;
}
#endif
