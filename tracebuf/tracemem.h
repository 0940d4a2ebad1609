/* SPDX-License-Identifier: MIT */
/*
 * tracebuf/tracemem.h - the tracer's live-object table (tracemem.c), as
 * tracebuf.c sees it.  Not installed.
 */
#ifndef PROFRING_TRACEMEM_H
#define PROFRING_TRACEMEM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct tracebuf;
struct tracebuf_opts;

/* One slot of the table; see the protocol in tracemem.c. */
struct tb_obj {
	_Atomic uint64_t key; /* 0 never used, 1 tombstone, else the address */
	_Atomic uint64_t size;
	_Atomic uint64_t state; /* stack id << 32 | gen << 1 | live */
};

struct tb_mem {
	struct tb_obj *slots; /* NULL: the tracer has no memory events */
	uint64_t mask; /* slots - 1 */
	uint64_t min_addr;
	uint64_t align;
	unsigned int align_shift;
	uint64_t page_size;
	_Atomic uint64_t full; /* allocations refused: no slot in reach */
	/* Advance thread only: old stack id -> new, during a snapshot. */
	uint32_t *remap;
	size_t remap_len;
};

/* Objects in the table now (a walk: for tracebuf_stats()). */
uint64_t tb_mem_live(const struct tb_mem *m);

/* Set up from the options (mem_objects 0: none); 0 or -EINVAL, -ENOMEM. */
int tb_mem_init(struct tb_mem *m, const struct tracebuf_opts *o);
void tb_mem_destroy(struct tb_mem *m);

/*
 * tb_mem_snapshot() - emit, in generation @next, an "exists" event for
 * every object live in generation @old, and move those objects to @next.
 * Called by close_gen() under the tracer's lock, once no thread is inside
 * a pair of @old and before @old's stack table is reset.  Ends with a
 * grace period (see the protocol in tracemem.c).
 */
void tb_mem_snapshot(struct tracebuf *t, uint64_t old, uint64_t next);

#endif /* PROFRING_TRACEMEM_H */
