// SPDX-License-Identifier: MIT
/*
 * ring/region.c - the bounded bump allocator (see region.h).
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring/region.h"

void *ring_map_zeroed(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

size_t ring_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t page_up(size_t bytes)
{
	size_t page = ring_page_size();

	return bytes > SIZE_MAX - page ? SIZE_MAX & ~(page - 1)
				       : (bytes + page - 1) & ~(page - 1);
}

size_t ring_give_back(void *base, size_t from, size_t to)
{
	from = page_up(from);
	to = page_up(to);
	/* Private anonymous pages read back as zero after MADV_DONTNEED. */
	if (from < to)
		madvise((char *)base + from, to - from, MADV_DONTNEED);
	return from;
}

int ring_region_init(struct ring_region *r, size_t size)
{
	size_t mapped = page_up(size);

	if (!size || mapped < size)
		return -EINVAL;
	r->base = ring_map_zeroed(mapped);
	if (!r->base)
		return -errno;
	r->size = size;
	r->mapped = mapped;
	r->touched = 0;
	atomic_init(&r->used, 0);
	return 0;
}

void *ring_region_alloc(struct ring_region *r, size_t bytes, size_t align)
{
	size_t old = atomic_load_explicit(&r->used, memory_order_relaxed);
	size_t start, end;

	do {
		start = (old + align - 1) & ~(align - 1);
		end = start + bytes;
		if (end > r->size || end < start)
			return NULL;
		/*
		 * Relaxed: the bump only hands out disjoint ranges; whoever
		 * publishes what it writes there orders it.
		 */
	} while (!atomic_compare_exchange_weak_explicit(&r->used, &old, end,
							memory_order_relaxed,
							memory_order_relaxed));
	return r->base + start;
}

void ring_region_reset(struct ring_region *r, size_t keep)
{
	size_t used = ring_region_used(r);

	if (used > r->touched)
		r->touched = used;
	if (keep < r->touched) {
		ring_give_back(r->base, keep, r->touched);
		r->touched = keep;
	}
	atomic_store_explicit(&r->used, 0, memory_order_relaxed);
}

void ring_region_destroy(struct ring_region *r)
{
	if (r->base)
		munmap(r->base, r->mapped);
	r->base = NULL;
}
