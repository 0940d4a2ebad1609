/* SPDX-License-Identifier: MIT */
/*
 * ring/perturb.h - schedule perturbation at protocol steps.
 *
 * ring_perturb() marks a point between two steps of a lock-free protocol
 * (between reserve and commit, around a flag CAS, before a futex sleep).
 * In normal builds it expands to nothing, so it costs nothing.  Built with
 * -DPROFRING_PERTURB (make stress-perturb), it yields or spins for a short
 * pseudo-random time, widening race windows the way the kernel's torture
 * tests do.  The perturbation uses only a thread-local xorshift state and
 * sched_yield(), both async-signal-safe.
 */
#ifndef PROFRING_RING_PERTURB_H
#define PROFRING_RING_PERTURB_H

#ifdef PROFRING_PERTURB
#include <sched.h>
#include <stdint.h>

#include "ring/compiler.h"

static inline void ring_perturb(void)
{
	static _Thread_local __attribute__((tls_model("initial-exec")))
	uint32_t state;
	uint32_t x = state ? state : (uint32_t)(uintptr_t)&state | 1;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	state = x;
	if ((x & 15) == 0)
		sched_yield();
	else
		for (uint32_t i = x & 255; i; i--)
			ring_cpu_relax();
}
#else
#define ring_perturb() \
	do {           \
	} while (0)
#endif

#endif /* PROFRING_RING_PERTURB_H */
