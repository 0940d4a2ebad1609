/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/thread_cpu.h - each thread's CPU time, accounted in whole sampling
 * periods with the remainders carried (thread_cpu.c), for the sampler's
 * per-thread timers.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_THREAD_CPU_H
#define PROFRING_PROF_THREAD_CPU_H

#include <stddef.h>
#include <stdint.h>

uint64_t prof_thread_cpu_weigh(int gen, uint64_t period_ns, uint64_t fallback);
void prof_thread_cpu_started(uintptr_t fn, uintptr_t ret);
int64_t prof_thread_cpu_born(int gen, uint64_t now_ns);
int64_t prof_thread_cpu_exit(int gen, uint64_t base_ns, uint64_t now_ns);
uint64_t prof_thread_cpu_carry(int64_t *carry_ns, int64_t ns,
			       uint64_t period_ns);
size_t prof_thread_cpu_stack(uintptr_t leaf, uintptr_t *pcs);
int prof_thread_cpu_now(uint64_t *ns);

#endif /* PROFRING_PROF_THREAD_CPU_H */
