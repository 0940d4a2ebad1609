/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/sleep_hook.h - what the interposed sleeps (sleep_hook.c) read of
 * the wall-clock sampler (wall.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_SLEEP_HOOK_H
#define PROFRING_PROF_SLEEP_HOOK_H

#include <stdatomic.h>

/*
 * How many of this thread's system calls a wall signal cut short (the
 * handler found the call returning EINTR: wall.c's prof_wall_state()).
 * Written by the thread's own handler only, read by the thread: relaxed
 * (a count; the thread and its handler need no ordering between them).
 */
extern _Thread_local _Atomic unsigned long prof_wall_cuts
	__attribute__((tls_model("initial-exec")));

#endif /* PROFRING_PROF_SLEEP_HOOK_H */
