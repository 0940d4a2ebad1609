/* SPDX-License-Identifier: MIT */
/*
 * ring/futex.h - the two futex operations profring needs.
 *
 * Both are raw syscalls: async-signal-safe, and they preserve errno (a
 * signal handler that wakes a reader must not clobber the errno of the code
 * it interrupted).
 */
#ifndef PROFRING_RING_FUTEX_H
#define PROFRING_RING_FUTEX_H

#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/**
 * ring_futex_wait_op() - ring_futex_wait(), on a word that may be shared
 * with other processes (@shared: FUTEX_WAIT, keyed by the page; else
 * FUTEX_WAIT_PRIVATE, keyed by this process's address).
 */
static inline int ring_futex_wait_op(_Atomic uint32_t *word, uint32_t expected,
				     const struct timespec *timeout,
				     bool shared)
{
	int saved = errno;
	long rc = syscall(SYS_futex, (uint32_t *)word,
			  shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, expected,
			  timeout, NULL, 0);
	int err = rc < 0 ? errno : 0;

	errno = saved;
	if (err == ETIMEDOUT || err == EINTR)
		return -err;
	return 0;
}

/**
 * ring_futex_wake_op() - ring_futex_wake(), @shared as for
 * ring_futex_wait_op().
 */
static inline void ring_futex_wake_op(_Atomic uint32_t *word, int n,
				      bool shared)
{
	int saved = errno;

	syscall(SYS_futex, (uint32_t *)word,
		shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
	errno = saved;
}

/**
 * ring_futex_wait() - sleep while *@word == @expected.
 * @word:     the futex word
 * @expected: the value seen before deciding to sleep
 * @timeout:  relative timeout, or NULL to wait forever
 *
 * Return: 0 when woken (or the word had already changed), -ETIMEDOUT,
 * -EINTR.  Spurious returns are possible: the caller re-checks its
 * condition.
 */
static inline int ring_futex_wait(_Atomic uint32_t *word, uint32_t expected,
				  const struct timespec *timeout)
{
	return ring_futex_wait_op(word, expected, timeout, false);
}

/**
 * ring_futex_wake() - wake up to @n threads sleeping on @word.
 */
static inline void ring_futex_wake(_Atomic uint32_t *word, int n)
{
	ring_futex_wake_op(word, n, false);
}

#endif /* PROFRING_RING_FUTEX_H */
