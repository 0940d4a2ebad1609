/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/heap_pool.h - where sampled allocations live (heap_pool.c).
 *
 * A sampled block comes from the pool, every other block from the
 * allocator; free() tells them apart by comparing the address with the
 * pool's bounds, which are set once and never change (GWP-ASan's idea).
 * So an unsampled free() reads no memory that any thread writes.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HEAP_POOL_H
#define PROFRING_PROF_HEAP_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The pool's bounds: [prof_heap_pool_lo, prof_heap_pool_lo + span).
 * Both 0 until prof_heap_pool_init() reserved it; lo is stored first,
 * then span with release, once, and never again.
 */
extern uintptr_t prof_heap_pool_lo __attribute__((visibility("hidden")));
extern _Atomic uintptr_t prof_heap_pool_span
	__attribute__((visibility("hidden")));

/*
 * Is @p a block of the pool?  Two loads of words written once, and a
 * compare.  Acquire: pairs with prof_heap_pool_init()'s release store of
 * span, so that a span seen set comes with its lo (a plain load on x86).
 */
static inline bool prof_heap_pool_owns(const void *p)
{
	uintptr_t span = atomic_load_explicit(&prof_heap_pool_span,
					      memory_order_acquire);

	return (uintptr_t)p - prof_heap_pool_lo < span;
}

int prof_heap_pool_init(void);
void *prof_heap_pool_alloc(size_t size, size_t align);
void prof_heap_pool_free(void *p);
size_t prof_heap_pool_usable(const void *p);

/*
 * struct prof_heap_pool_stats - what the pool holds (for the profile's
 * comment and the memory figures).
 * @reserved:  bytes of address space reserved.
 * @committed: bytes made readable and writable (an upper bound of the
 *	       memory the pool uses; freed large slots are given back).
 * @live:      slots handed out and not freed.
 * @live_bytes: their slot sizes, added up.
 * @refused:   allocations the pool could not take (too large, a class
 *	       full, no memory).
 */
struct prof_heap_pool_stats {
	uint64_t reserved, committed, live, live_bytes, refused;
};

void prof_heap_pool_stats(struct prof_heap_pool_stats *st);

#endif /* PROFRING_PROF_HEAP_POOL_H */
