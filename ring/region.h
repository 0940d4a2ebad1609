/* SPDX-License-Identifier: MIT */
/*
 * ring/region.h - a bounded bump allocator over one mmap'd arena.
 *
 * The arena is reserved once (MAP_NORESERVE: the kernel commits pages on
 * first touch, so an arena of 64 MiB costs nothing until used) and carved
 * by an atomic bump pointer: no malloc, no lock, async-signal-safe.  Its
 * bound is the size asked for, to the byte (the mapping underneath is
 * rounded up to pages, the bound is not).  When it is full,
 * ring_region_alloc() returns NULL and the caller counts the loss.  There
 * is no free: ring_region_reset() releases everything at once, when the
 * caller knows nobody uses the memory any more, keeps the pages of a first
 * part of the arena committed for reuse (the caller chooses how much) and
 * gives every other page touched since the last give-back to the kernel.
 */
#ifndef PROFRING_RING_REGION_H
#define PROFRING_RING_REGION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct ring_region {
	char *base;
	size_t size; /* the bound: bytes that can be handed out */
	size_t mapped; /* size rounded up to pages */
	size_t touched; /* high-water mark of used since the last give-back */
	_Atomic size_t used;
};

/*
 * ring_map_zeroed() - @bytes of zeroed, lazily committed anonymous memory
 * (pages cost nothing until touched), or NULL with errno set; release
 * with munmap().  Not signal-safe.
 */
void *ring_map_zeroed(size_t bytes);

/* The page size. */
size_t ring_page_size(void);

/*
 * ring_give_back() - give the pages of [@from, @to) of the mapping at @base
 * back to the kernel (@from and @to rounded up to pages: the page holding
 * @from stays).  They read as zero again and cost nothing until touched.
 * Return: @from rounded up to a page, where the memory given back begins.
 * Not signal-safe.
 */
size_t ring_give_back(void *base, size_t from, size_t to);

/*
 * Reserve an arena that hands out at most @size bytes (the mapping is
 * rounded up to pages).  0 or -errno.  Not signal-safe.
 */
int ring_region_init(struct ring_region *r, size_t size);

/*
 * Carve @bytes aligned to @align (a power of two, at most a page); memory
 * from a fresh arena (or after a reset that gave the pages back) is zero;
 * after a reset that kept them it holds what was written before.  NULL
 * when full.  Async-signal-safe, lock-free.
 */
void *ring_region_alloc(struct ring_region *r, size_t bytes, size_t align);

/* Bytes handed out (including alignment padding). */
static inline size_t ring_region_used(const struct ring_region *r)
{
	size_t used = atomic_load_explicit(&r->used, memory_order_relaxed);

	return used < r->size ? used : r->size;
}

/*
 * Release everything: no one may be using the memory.  The pages holding
 * the first @keep bytes stay committed, keep their contents and cost no
 * page faults when reused; every later page touched since the last
 * give-back goes back to the kernel (and reads as zero again).  @keep = 0
 * gives back all, SIZE_MAX keeps all.  Not signal-safe.
 */
void ring_region_reset(struct ring_region *r, size_t keep);

void ring_region_destroy(struct ring_region *r);

#endif /* PROFRING_RING_REGION_H */
