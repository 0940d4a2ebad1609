/* SPDX-License-Identifier: MIT */
/*
 * prof/perf_event.h - per-thread sampling by perf_event_open(): a
 * software cpu-clock counter of one thread that sends our signal to that
 * thread at each period of its CPU time (perf_event.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_PERF_EVENT_H
#define PROFRING_PROF_PERF_EVENT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * prof_perf_arm() - a counter of thread @tid's CPU time, overflowing every
 * @period_ns, each overflow sending @signo to @tid: only overflows in user
 * mode, or also those in the kernel with @kernel (perf_event.c says what
 * that changes).  Not async-signal-safe.
 * Return: its file descriptor (close-on-exec), or -errno: -EACCES or
 * -EPERM (perf_event_paranoid forbids it: with @kernel, above 1 without
 * CAP_PERFMON), -ENOSYS, -ENOENT, -EMFILE (out of descriptors, or one
 * past what prof_perf_is_ours() can tell).
 */
int prof_perf_arm(pid_t tid, int signo, uint64_t period_ns, bool kernel);

/* Disarm and close a counter of prof_perf_arm(). */
void prof_perf_disarm(int fd);

/*
 * prof_perf_forget() - a fork child: close a counter its parent armed (it
 * counts the parent's thread) without touching the parent's.
 * Async-signal-safe.
 */
void prof_perf_forget(int fd);

/*
 * prof_perf_is_ours() - did one of our counters send @si?
 * Async-signal-safe: one atomic load.
 */
bool prof_perf_is_ours(const siginfo_t *si);

#endif /* PROFRING_PROF_PERF_EVENT_H */
