/* SPDX-License-Identifier: MIT */
/*
 * ring/compiler.h - compiler helpers shared by every profring component.
 *
 * Internal header: never installed, never included from include/profring/.
 */
#ifndef PROFRING_RING_COMPILER_H
#define PROFRING_RING_COMPILER_H

#define RING_CACHELINE 64
#define ring_cacheline_aligned _Alignas(RING_CACHELINE)

#define ring_likely(x) __builtin_expect(!!(x), 1)
#define ring_unlikely(x) __builtin_expect(!!(x), 0)

/* Symbols of the public API; everything else is hidden in the .so. */
#define RING_API __attribute__((visibility("default")))

/**
 * ring_cpu_relax() - tell the CPU we are spinning (PAUSE / YIELD).
 */
static inline void ring_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* PROFRING_RING_COMPILER_H */
