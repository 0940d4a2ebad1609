// SPDX-License-Identifier: MIT
/*
 * prof/agent/mutex_hook.c - the lock calls, interposed by libprofring-prof.so
 * for the lock profiler (mutex.c): pthread_mutex_lock and
 * pthread_mutex_timedlock, pthread_rwlock_rdlock, _wrlock and their timed
 * forms, pthread_cond_wait and pthread_cond_timedwait, sem_wait and
 * sem_timedwait.
 *
 * With no session (prof_lock_on clear) each is a jump to the next
 * definition.  With one, a mutex whose lock word says free goes straight
 * to the blocking call (looks_free()); a held mutex, and any other lock,
 * is tried first (trylock, tryrdlock, trywrlock, sem_trywait).  A try
 * that succeeds, or fails for another reason than the lock being held
 * (EBUSY; EAGAIN for a semaphore), gives the call's result, which is
 * what the blocking call would have returned (a recursive mutex's count,
 * a robust mutex's EOWNERDEAD, a read lock's EAGAIN at its maximum
 * count).  Only a try that found the lock held reaches the slow path
 * (an error-checking mutex's EDEADLK comes from the blocking call
 * there), noinline so that its frame starts the walk: prof_lock_begin()
 * samples the wait (its start), the real call waits, prof_lock_end()
 * takes the waiter's stack and writes the record.  A condition variable wait always
 * waits: every call is an event (the block profile's only).
 *
 * The try-then-wait order changes nothing a program may rely on: a
 * failed try takes nothing, and POSIX promises no order among waiters.
 *
 * Bootstrap: the next definitions are found once with dlsym(RTLD_NEXT)
 * (the condition variables with dlvsym at GLIBC_2.3.2: a plain dlsym
 * finds glibc's old 2.2.5 compatibility versions, which take a different
 * structure).  A lock call made while this thread resolves (dlsym
 * calling back into a lock of the program's: not seen with glibc) gets
 * glibc's exported __pthread_mutex_lock, or EAGAIN for the others.
 * Several threads may resolve at once: each stores the same pointers.
 *
 * Built into libprofring-prof.so only, and not under the sanitizers
 * (TSan intercepts these calls itself).  Built with frame pointers
 * (Makefile): the slow paths' frames chain to the program's.
 */
#include "prof/agent/mutex.h"

#include "ring/compiler.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define HOOK __attribute__((visibility("default")))
#define FRAME() ((uintptr_t)__builtin_frame_address(0))

struct next_fns {
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*rdlock)(pthread_rwlock_t *);
	int (*tryrdlock)(pthread_rwlock_t *);
	int (*timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*wrlock)(pthread_rwlock_t *);
	int (*trywrlock)(pthread_rwlock_t *);
	int (*timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
			      const struct timespec *);
	int (*sem_wait)(sem_t *);
	int (*sem_trywait)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
};

static struct next_fns next;
static atomic_int resolved;
static _Thread_local int resolving __attribute__((tls_model("initial-exec")));

/* glibc exports it (GLIBC_2.2.5): the mutex lock while we resolve. */
extern int __pthread_mutex_lock(pthread_mutex_t *) __attribute__((weak));

#define LOOK(field, name) \
	(next.field = (__typeof__(next.field))dlsym(RTLD_NEXT, name))

static void *look_cond(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");

	return p ? p : dlsym(RTLD_NEXT, name);
}

static __attribute__((noinline, cold)) bool resolve_once(void)
{
	if (resolving)
		return false;
	resolving = 1;
	LOOK(mutex_lock, "pthread_mutex_lock");
	LOOK(mutex_trylock, "pthread_mutex_trylock");
	LOOK(mutex_timedlock, "pthread_mutex_timedlock");
	LOOK(rdlock, "pthread_rwlock_rdlock");
	LOOK(tryrdlock, "pthread_rwlock_tryrdlock");
	LOOK(timedrdlock, "pthread_rwlock_timedrdlock");
	LOOK(wrlock, "pthread_rwlock_wrlock");
	LOOK(trywrlock, "pthread_rwlock_trywrlock");
	LOOK(timedwrlock, "pthread_rwlock_timedwrlock");
	next.cond_wait =
		(__typeof__(next.cond_wait))look_cond("pthread_cond_wait");
	next.cond_timedwait = (__typeof__(next.cond_timedwait))look_cond(
		"pthread_cond_timedwait");
	LOOK(sem_wait, "sem_wait");
	LOOK(sem_trywait, "sem_trywait");
	LOOK(sem_timedwait, "sem_timedwait");
	resolving = 0;
	/* Release: pairs with ready()'s acquire; the pointers are set. */
	atomic_store_explicit(&resolved, 1, memory_order_release);
	return true;
}

/* The next definitions are known; false while this thread resolves. */
static inline bool ready(void)
{
	/* Acquire: pairs with resolve_once()'s release. */
	if (ring_likely(atomic_load_explicit(&resolved, memory_order_acquire)))
		return true;
	return resolve_once();
}

/* Recording?  Relaxed: see prof_lock_on (mutex.h). */
static inline bool on(void)
{
	return atomic_load_explicit(&prof_lock_on, memory_order_relaxed);
}

/* A slow path: @call waits, between begin and end, with @kind. */
#define WAIT(kind, call)                            \
	({                                          \
		struct prof_lock_wait w;            \
		int rc_;                            \
		prof_lock_begin(&w);                \
		rc_ = (call);                       \
		prof_lock_end(&w, (kind), FRAME()); \
		rc_;                                \
	})

static __attribute__((noinline)) int mutex_wait(pthread_mutex_t *m,
						const struct timespec *t)
{
	return WAIT(PROF_LOCK_MUTEX,
		    t ? next.mutex_timedlock(m, t) : next.mutex_lock(m));
}

/*
 * glibc's lock word (its public pthread_mutex_t layout): 0 when the mutex
 * is free, whatever its kind.  Read relaxed, it is a hint: free, the
 * blocking call is the cheapest acquire (glibc's trylock costs 3.5 ns
 * more than its lock); held, the try tells.  A mutex taken between the
 * look and the call makes a wait that is not recorded: a window of a few
 * nanoseconds, which only ever hides contention.
 */
static inline bool looks_free(pthread_mutex_t *m)
{
	return !__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
}

HOOK int pthread_mutex_lock(pthread_mutex_t *m)
{
	int rc;

	if (ring_unlikely(!ready()))
		return __pthread_mutex_lock ? __pthread_mutex_lock(m) : EAGAIN;
	if (ring_likely(!on() || looks_free(m)))
		return next.mutex_lock(m);
	rc = next.mutex_trylock(m);
	if (ring_likely(rc != EBUSY))
		return rc;
	return mutex_wait(m, NULL);
}

HOOK int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
	int rc;

	if (ring_unlikely(!ready()))
		return EAGAIN;
	if (ring_likely(!on() || looks_free(m)))
		return next.mutex_timedlock(m, t);
	rc = next.mutex_trylock(m);
	if (ring_likely(rc != EBUSY))
		return rc;
	return mutex_wait(m, t);
}

static __attribute__((noinline)) int rwlock_wait(pthread_rwlock_t *l, bool wr,
						 const struct timespec *t)
{
	if (wr)
		return WAIT(PROF_LOCK_RWLOCK_WR,
			    t ? next.timedwrlock(l, t) : next.wrlock(l));
	return WAIT(PROF_LOCK_RWLOCK_RD,
		    t ? next.timedrdlock(l, t) : next.rdlock(l));
}

/*
 * A try that failed because the lock is held: EBUSY.  A read lock at its
 * maximum count says EAGAIN, as the blocking call would: returned as is.
 */
HOOK int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	int rc;

	if (ring_unlikely(!ready()))
		return EAGAIN;
	if (ring_likely(!on()))
		return next.rdlock(l);
	rc = next.tryrdlock(l);
	if (ring_likely(rc != EBUSY))
		return rc;
	return rwlock_wait(l, false, NULL);
}

HOOK int pthread_rwlock_timedrdlock(pthread_rwlock_t *l,
				    const struct timespec *t)
{
	int rc;

	if (ring_unlikely(!ready()))
		return EAGAIN;
	if (ring_likely(!on()))
		return next.timedrdlock(l, t);
	rc = next.tryrdlock(l);
	if (ring_likely(rc != EBUSY))
		return rc;
	return rwlock_wait(l, false, t);
}

HOOK int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	int rc;

	if (ring_unlikely(!ready()))
		return EAGAIN;
	if (ring_likely(!on()))
		return next.wrlock(l);
	rc = next.trywrlock(l);
	if (ring_likely(rc != EBUSY))
		return rc;
	return rwlock_wait(l, true, NULL);
}

HOOK int pthread_rwlock_timedwrlock(pthread_rwlock_t *l,
				    const struct timespec *t)
{
	int rc;

	if (ring_unlikely(!ready()))
		return EAGAIN;
	if (ring_likely(!on()))
		return next.timedwrlock(l, t);
	rc = next.trywrlock(l);
	if (ring_likely(rc != EBUSY))
		return rc;
	return rwlock_wait(l, true, t);
}

static __attribute__((noinline)) int
cond_wait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	return WAIT(PROF_LOCK_COND,
		    t ? next.cond_timedwait(c, m, t) : next.cond_wait(c, m));
}

HOOK int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (ring_unlikely(!ready()))
		return EAGAIN;
	if (ring_likely(!on()))
		return next.cond_wait(c, m);
	return cond_wait(c, m, NULL);
}

HOOK int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				const struct timespec *t)
{
	if (ring_unlikely(!ready()))
		return EAGAIN;
	if (ring_likely(!on()))
		return next.cond_timedwait(c, m, t);
	return cond_wait(c, m, t);
}

static __attribute__((noinline)) int sem_wait_slow(sem_t *s,
						   const struct timespec *t)
{
	return WAIT(PROF_LOCK_SEM,
		    t ? next.sem_timedwait(s, t) : next.sem_wait(s));
}

/* sem_trywait() fails with EAGAIN (errno) when the count is 0. */
static inline bool sem_took(sem_t *s)
{
	int saved = errno;

	if (!next.sem_trywait(s))
		return true;
	errno = saved;
	return false;
}

HOOK int sem_wait(sem_t *s)
{
	if (ring_unlikely(!ready())) {
		errno = EAGAIN;
		return -1;
	}
	if (ring_likely(!on()))
		return next.sem_wait(s);
	if (ring_likely(sem_took(s)))
		return 0;
	return sem_wait_slow(s, NULL);
}

HOOK int sem_timedwait(sem_t *s, const struct timespec *t)
{
	if (ring_unlikely(!ready())) {
		errno = EAGAIN;
		return -1;
	}
	if (ring_likely(!on()))
		return next.sem_timedwait(s, t);
	if (ring_likely(sem_took(s)))
		return 0;
	return sem_wait_slow(s, t);
}
