/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/perf_event.h - per-thread sampling by perf_event_open(): a
 * software cpu-clock counter of one thread that sends our signal to that
 * thread at each period of its CPU time (perf_event.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_PERF_EVENT_H
#define PROFRING_PROF_PERF_EVENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * struct prof_perf_counter - one counter of ours: its descriptor, and what
 * tells it from any other file the program may have put on that number
 * since (perf_event.c, "Descriptors").
 * @fd:		its descriptor, or -1: none.
 * @id:		the kernel's id of the event (PERF_EVENT_IOC_ID, never 0).
 * @dev, @ino:	its file's, by fstat().
 */
struct prof_perf_counter {
	int fd;
	uint64_t id;
	uint64_t dev;
	uint64_t ino;
};

/*
 * prof_perf_arm() - @c: a counter of thread @tid's CPU time, overflowing
 * every @period_ns, each overflow sending @signo to @tid: only overflows
 * in user mode, or also those in the kernel with @kernel (perf_event.c
 * says what that changes).  Its descriptor is placed at or above a floor
 * (perf_event.c, "Descriptors"), close-on-exec.  @held: how many counters
 * the caller holds now; none is opened past the descriptors' share.  Not
 * async-signal-safe.
 * Return: 0 (@c filled in) or -errno (@c->fd -1): -EACCES or -EPERM
 * (perf_event_paranoid forbids it: with @kernel, above 1 without
 * CAP_PERFMON), -ENOSYS, -ENOENT, -EMFILE (the share is used up, no free
 * number at or above the floor, or one past what prof_perf_is_ours() can
 * tell), -ENFILE.
 */
int prof_perf_arm(struct prof_perf_counter *c, pid_t tid, int signo,
		  uint64_t period_ns, bool kernel, size_t held);

/*
 * prof_perf_is_intact() - is @c's descriptor still our counter (not
 * closed, nor replaced by a file of the program's)?  Async-signal-safe:
 * fstat() and one ioctl().
 */
bool prof_perf_is_intact(const struct prof_perf_counter *c);

/*
 * prof_perf_disarm() - disarm and close @c if it is still ours; if not,
 * only forget it (the number is the program's now: never closed).
 * Async-signal-safe.  Return: whether it was still ours.
 */
bool prof_perf_disarm(struct prof_perf_counter *c);

/*
 * prof_perf_forget() - a fork child: close a counter its parent armed (it
 * counts the parent's thread) without touching the parent's, if the
 * number is still that counter's.  Async-signal-safe.
 */
void prof_perf_forget(struct prof_perf_counter *c);

/*
 * prof_perf_is_ours() - did one of our counters send @si?
 * Async-signal-safe: one atomic load.
 */
bool prof_perf_is_ours(const siginfo_t *si);

#endif /* PROFRING_PROF_PERF_EVENT_H */
