/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/hooks.h - what libprofring-prof.so interposes besides
 * pthread_create (sampler.c): the dynamic loader's entry points, the
 * signal-disposition calls and those that take signal masks and sets
 * (hooks.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HOOKS_H
#define PROFRING_PROF_HOOKS_H

#include <signal.h>
#include <stdbool.h>

bool prof_hooks_in_loader(void);
int prof_hooks_real_sigaction(int sig, const struct sigaction *act,
			      struct sigaction *old);

#endif /* PROFRING_PROF_HOOKS_H */
