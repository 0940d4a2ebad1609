// SPDX-License-Identifier: MIT
/*
 * prof/agent/heap_pool.c - the pool sampled allocations come from.
 *
 * THE RULE
 *
 * The unsampled free() must read nothing another thread writes: a hint
 * table of sampled blocks that every sampled allocation and free updates
 * (what this replaces) is a cache line that bounces between every
 * allocating thread.  GWP-ASan's answer: sampled blocks come from a pool
 * of their own, and free() recognizes them by comparing the address with
 * the pool's bounds, which never change.  The pool is reserved once
 * (PROT_NONE address space, costing no memory) and its bounds are stored
 * before the first sampled block exists; a pointer into the pool reaches
 * a free() only through the program's own ordering after that.
 *
 * THE LAYOUT
 *
 * The reservation is NCLASSES regions of 2^region_bits bytes each;
 * region c holds slots of 2^(c + MIN_SHIFT) bytes, so a slot's class is
 * its offset's top bits and its index the rest: no header, no lookup.
 * Each region is aligned to its size, so every slot is aligned to its
 * own size, which serves memalign() and friends up to the slot size.  A
 * region is made readable and writable (mprotect) in chunks as its bump
 * index reaches them; two threads may do the same chunk, which is
 * harmless, and the committed mark only moves forward by CAS.
 *
 * THE FREE LISTS
 *
 * Freed slots of a class go on a lock-free stack (Treiber's) whose head
 * packs a 32-bit tag with the slot index + 1: the tag changes on every
 * push and pop, so a head read before another thread popped and pushed
 * again fails its CAS (no ABA).  The links are not in the slots (whose
 * new owner may be writing while a stale popper reads, a race to the C
 * memory model even though the popper's CAS then fails) but in an array
 * of 32-bit words per class beside the slots, reserved with them,
 * committed as the bump index grows, and only ever accessed atomically.
 * Slots of 64 KiB and more are given back to the kernel when freed
 * (MADV_DONTNEED: the mapping stays, the pages read as zero).
 *
 * No lock anywhere: an allocation or free in any thread, a signal
 * handler included, never waits.  A class that runs out of slots, or
 * memory the kernel refuses, makes prof_heap_pool_alloc() return NULL:
 * the caller then takes the block from the allocator and says so.
 */
#include "prof/agent/heap_pool.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define MIN_SHIFT 4 /* 16-byte slots, malloc's alignment */
#define NCLASSES 28 /* up to 2 GiB slots */
#define MAX_INDEX ((uint64_t)1 << 31) /* index + 1 fits the head's 32 bits */
#define CHUNK ((uint64_t)2 << 20) /* committed 2 MiB at a time */
#define GIVE_BACK_SHIFT 16 /* slots of 64 KiB and more: MADV_DONTNEED */

uintptr_t prof_heap_pool_lo;
_Atomic uintptr_t prof_heap_pool_span;

struct pool_class {
	_Atomic uint64_t free_head; /* (tag << 32) | (index + 1); 0 empty */
	_Atomic uint64_t bump; /* slots ever handed out fresh */
	_Atomic uint64_t committed; /* bytes readable from the region start */
	_Atomic uint64_t links_committed; /* the same, of its links */
	_Atomic uint64_t live; /* slots handed out, not freed */
} __attribute__((aligned(64)));

static struct {
	unsigned int region_bits;
	unsigned int links_bits; /* each class's link array: 2^links_bits */
	char *links;
	_Atomic int state; /* 0 none, 1 reserving, 2 ready, -1 failed */
	_Atomic uint64_t refused;
	struct pool_class cls[NCLASSES];
} pool;

static char *region(unsigned int c)
{
	return (char *)prof_heap_pool_lo + ((uintptr_t)c << pool.region_bits);
}

/* Slots in class @c's region: 0 for a class larger than a region. */
static uint64_t slots_in(unsigned int c)
{
	uint64_t n;

	if (c + MIN_SHIFT > pool.region_bits)
		return 0;
	n = (uint64_t)1 << (pool.region_bits - c - MIN_SHIFT);
	return n < MAX_INDEX ? n : MAX_INDEX;
}

/* The class whose slots hold @size bytes aligned to @align; -1: none. */
static int class_of(size_t size, size_t align)
{
	size_t need = size > align ? size : align;
	unsigned int shift = MIN_SHIFT;

	while (((size_t)1 << shift) < need) {
		if (++shift >= MIN_SHIFT + NCLASSES)
			return -1;
	}
	return (int)(shift - MIN_SHIFT);
}

static int reserve(void)
{
	/*
	 * As much address space as the process may have, halving down: 64
	 * GiB a class (1.75 TiB of PROT_NONE, which costs no memory), and
	 * under an address-space limit (ulimit -v, valgrind) down to 16
	 * MiB a class, where the classes above 16 MiB are refused.
	 */
	for (unsigned int bits = 36; bits >= 24; bits--) {
		uint64_t span = (uint64_t)NCLASSES << bits;
		/* 4 bytes of link for every slot the smallest class has. */
		unsigned int lbits =
			(bits - MIN_SHIFT < 31 ? bits - MIN_SHIFT : 31) + 2;
		/* Room to align the start to a region's size, then links. */
		void *m = mmap(NULL,
			       span + ((uint64_t)1 << bits) +
				       ((uint64_t)NCLASSES << lbits),
			       PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);
		uintptr_t lo;

		if (m == MAP_FAILED)
			continue;
		lo = ((uintptr_t)m + ((uintptr_t)1 << bits) - 1) &
		     ~(((uintptr_t)1 << bits) - 1);
		pool.region_bits = bits;
		pool.links_bits = lbits;
		pool.links = (char *)(lo + span);
		prof_heap_pool_lo = lo;
		/* Release: pairs with prof_heap_pool_owns()'s acquire. */
		atomic_store_explicit(&prof_heap_pool_span, span,
				      memory_order_release);
		return 0;
	}
	return -ENOMEM;
}

/**
 * prof_heap_pool_init() - reserve the pool's address space, once.
 *
 * Called before a heap session first samples (not in a signal handler).
 * Concurrent callers wait for the first (a spin: it is one mmap()).
 *
 * Return: 0, or -ENOMEM (no address space: nothing is sampled).
 */
int prof_heap_pool_init(void)
{
	int zero = 0, st;

	/* Acquire: pairs with the release below; the bounds are set. */
	st = atomic_load_explicit(&pool.state, memory_order_acquire);
	if (st == 2)
		return 0;
	if (st == 0 && atomic_compare_exchange_strong_explicit(
			       &pool.state, &zero, 1, memory_order_relaxed,
			       memory_order_relaxed)) {
		st = reserve() ? -1 : 2;
		/* Release: pairs with the acquire loads of state. */
		atomic_store_explicit(&pool.state, st, memory_order_release);
		return st == 2 ? 0 : -ENOMEM;
	}
	while ((st = atomic_load_explicit(&pool.state, memory_order_acquire)) ==
	       1)
		;
	return st == 2 ? 0 : -ENOMEM;
}

/* Make @base readable up to @end bytes; @mark says how far it is. */
static bool commit(char *base, _Atomic uint64_t *mark, uint64_t end)
{
	/* Relaxed: the mark only says what mprotect() already did. */
	uint64_t done = atomic_load_explicit(mark, memory_order_relaxed);
	uint64_t want;

	if (end <= done)
		return true;
	want = (end + CHUNK - 1) & ~(CHUNK - 1);
	if (mprotect(base + done, want - done, PROT_READ | PROT_WRITE))
		return false;
	while (done < want && !atomic_compare_exchange_weak_explicit(
				      mark, &done, want, memory_order_relaxed,
				      memory_order_relaxed))
		;
	return true;
}

static void *slot(unsigned int c, uint64_t index)
{
	return region(c) + (index << (c + MIN_SHIFT));
}

static _Atomic uint32_t *links_of(unsigned int c)
{
	return (_Atomic uint32_t *)(pool.links +
				    ((uintptr_t)c << pool.links_bits));
}

/* Slot @index of class @c is new: its slot and its link readable. */
static bool commit_slot(unsigned int c, uint64_t index)
{
	struct pool_class *k = &pool.cls[c];

	return commit(region(c), &k->committed,
		      (index + 1) << (c + MIN_SHIFT)) &&
	       commit((char *)links_of(c), &k->links_committed,
		      4 * (index + 1));
}

static void *pop(unsigned int c)
{
	struct pool_class *k = &pool.cls[c];
	/* Acquire: pairs with push()'s release; the link is visible. */
	uint64_t head =
		atomic_load_explicit(&k->free_head, memory_order_acquire);
	uint64_t link, index;

	while (head & UINT32_MAX) {
		index = (head & UINT32_MAX) - 1;
		/* Relaxed: a stale link fails the CAS below (the tag). */
		link = atomic_load_explicit(&links_of(c)[index],
					    memory_order_relaxed);
		/* Acquire, also on failure: as the load above. */
		if (atomic_compare_exchange_weak_explicit(
			    &k->free_head, &head,
			    (((head >> 32) + 1) << 32) | (link & UINT32_MAX),
			    memory_order_acquire, memory_order_acquire))
			return slot(c, index);
	}
	return NULL;
}

static void push(unsigned int c, uint64_t index)
{
	struct pool_class *k = &pool.cls[c];
	/* Relaxed: the CAS below publishes the link. */
	uint64_t head =
		atomic_load_explicit(&k->free_head, memory_order_relaxed);

	do {
		/* Relaxed: published by the CAS below. */
		atomic_store_explicit(&links_of(c)[index],
				      (uint32_t)(head & UINT32_MAX),
				      memory_order_relaxed);
		/* Release: pairs with pop()'s acquire. */
	} while (!atomic_compare_exchange_weak_explicit(
		&k->free_head, &head, (((head >> 32) + 1) << 32) | (index + 1),
		memory_order_release, memory_order_relaxed));
}

/**
 * prof_heap_pool_alloc() - a slot for @size bytes aligned to @align (a
 * power of two); its contents are undefined (zero when fresh).
 * Lock-free; async-signal-safe but for the mprotect() of a new chunk.
 *
 * Return: the block, or NULL (no pool, too large, the class full, or the
 * kernel refused memory), counted in refused.
 */
void *prof_heap_pool_alloc(size_t size, size_t align)
{
	int c = class_of(size, align);
	struct pool_class *k;
	uint64_t index;
	void *p;

	/* Acquire: pairs with reserve()'s release; region_bits is set. */
	if (c < 0 ||
	    !atomic_load_explicit(&prof_heap_pool_span, memory_order_acquire))
		goto refuse;
	k = &pool.cls[c];
	p = pop((unsigned int)c);
	if (!p) {
		/* Relaxed: the index is the slot; nothing else is handed over. */
		index = atomic_fetch_add_explicit(&k->bump, 1,
						  memory_order_relaxed);
		if (index >= slots_in((unsigned int)c) ||
		    !commit_slot((unsigned int)c, index))
			goto refuse;
		p = slot((unsigned int)c, index);
	}
	/* Relaxed: a count to report. */
	atomic_fetch_add_explicit(&k->live, 1, memory_order_relaxed);
	return p;
refuse:
	/* Relaxed: a count to report. */
	atomic_fetch_add_explicit(&pool.refused, 1, memory_order_relaxed);
	return NULL;
}

/**
 * prof_heap_pool_free() - give back the slot that holds @p (a block of
 * the pool: prof_heap_pool_owns()).  Lock-free, async-signal-safe.
 */
void prof_heap_pool_free(void *p)
{
	uintptr_t off = (uintptr_t)p - prof_heap_pool_lo;
	unsigned int c = (unsigned int)(off >> pool.region_bits);
	unsigned int shift = c + MIN_SHIFT;
	uint64_t index =
		(off & (((uintptr_t)1 << pool.region_bits) - 1)) >> shift;

	if (shift >= GIVE_BACK_SHIFT)
		madvise(slot(c, index), (size_t)1 << shift, MADV_DONTNEED);
	/* Relaxed: a count to report. */
	atomic_fetch_sub_explicit(&pool.cls[c].live, 1, memory_order_relaxed);
	push(c, index);
}

/* prof_heap_pool_usable() - the bytes @p may use: its slot's, from @p. */
size_t prof_heap_pool_usable(const void *p)
{
	uintptr_t off = (uintptr_t)p - prof_heap_pool_lo;
	unsigned int shift =
		(unsigned int)(off >> pool.region_bits) + MIN_SHIFT;

	return ((size_t)1 << shift) - (off & (((uintptr_t)1 << shift) - 1));
}

void prof_heap_pool_stats(struct prof_heap_pool_stats *st)
{
	memset(st, 0, sizeof(*st));
	/* Relaxed: a count to report. */
	st->reserved = atomic_load_explicit(&prof_heap_pool_span,
					    memory_order_relaxed);
	if (!st->reserved)
		return;
	for (unsigned int c = 0; c < NCLASSES; c++) {
		/* Relaxed, all: counts to report. */
		uint64_t live = atomic_load_explicit(&pool.cls[c].live,
						     memory_order_relaxed);

		st->committed += atomic_load_explicit(&pool.cls[c].committed,
						      memory_order_relaxed);
		st->live += live;
		st->live_bytes += live << (c + MIN_SHIFT);
	}
	st->refused = atomic_load_explicit(&pool.refused, memory_order_relaxed);
}
