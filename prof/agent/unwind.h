/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/unwind.h - stack walkers for the SIGPROF handler.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_UNWIND_H
#define PROFRING_PROF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * struct prof_stack_bounds - a thread's stack, [lo, hi).
 * @lo, @hi:	the stack's limits; both 0 when unknown.
 */
struct prof_stack_bounds {
	uintptr_t lo;
	uintptr_t hi;
};

/**
 * struct prof_unwind_result - what one walk found.
 * @n:		frames written (pcs[0] is the interrupted PC).
 * @truncated:	true if frames were left because @max was reached.
 * @unchecked:	true if the bounds were unknown and frames were read with
 *		process_vm_readv (which fails instead of faulting).
 */
struct prof_unwind_result {
	size_t n;
	bool truncated;
	bool unchecked;
};

void prof_unwind_fp(const void *ucontext, const struct prof_stack_bounds *b,
		    uintptr_t *pcs, size_t max, struct prof_unwind_result *res);

void prof_unwind_fp_caller(uintptr_t fp, const struct prof_stack_bounds *b,
			   uintptr_t *pcs, size_t max,
			   struct prof_unwind_result *res);

bool prof_unwind_libunwind_available(void);
void prof_unwind_libunwind_prepare(void);
void prof_unwind_libunwind(void *ucontext, uintptr_t *pcs, size_t max,
			   struct prof_unwind_result *res);
void prof_unwind_libunwind_from(uintptr_t first, uintptr_t *pcs, size_t max,
				struct prof_unwind_result *res);

#endif /* PROFRING_PROF_UNWIND_H */
