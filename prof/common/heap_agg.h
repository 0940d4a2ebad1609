/* SPDX-License-Identifier: MIT */
/*
 * prof/common/heap_agg.h - the collector's half of the heap profiler: sampled
 * allocations and frees (stream.h's PROF_REC_ALLOC and PROF_REC_FREE)
 * counted per (address space, stack, size), and the unbiased estimates
 * written as pprof's four heap values.
 *
 * One reader at a time; not async-signal-safe (it allocates).  The stack
 * table and the address spaces are the aggregation's (aggregate.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HEAP_AGG_H
#define PROFRING_PROF_HEAP_AGG_H

#include <profring/profbuf.h>
#include <profring/stacktab.h>

#include "pprof/profile.h"
#include "pprof/table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Pseudo stack ids of the synthetic sites (real ids are small). */
#define PROF_HEAP_STACK_FULL UINT32_MAX
#define PROF_HEAP_STACK_EMPTY (UINT32_MAX - 1)
#define PROF_HEAP_STACK_UNTRACKED (UINT32_MAX - 2)

/* The synthetic entry of allocations the address table could not hold. */
#define PROF_HEAP_UNTRACKED_NAME "[profring: heap table full]"
/* The synthetic entry of heap records the ring had no room for. */
#define PROF_HEAP_LOST_NAME "[profring: lost heap records]"

/*
 * A synthetic site's name, by its pseudo stack id (the heap's and the
 * lock profiles'); NULL for a real stack.
 */
static inline const char *prof_heap_special(uint32_t stack)
{
	switch (stack) {
	case PROF_HEAP_STACK_FULL:
		return "[profring: stack table full]";
	case PROF_HEAP_STACK_EMPTY:
		return "[profring: no stack]";
	case PROF_HEAP_STACK_UNTRACKED:
		return PROF_HEAP_UNTRACKED_NAME;
	}
	return NULL;
}

/*
 * struct prof_heap_counts - what the heap records said.
 * @allocs:	sampled allocations read.
 * @frees:	frees of sampled blocks read and matched.
 * @unknown_frees: frees of a block not known live in that address space
 *		(sampled in a parent before a fork, in an earlier session,
 *		or whose allocation record was lost): ignored.
 * @replaced:	allocations at an address still known live (its free was
 *		lost): the old block is counted freed.
 * @untracked:	allocations counted without in-use (table full).
 * @exec_gone:	blocks live when their image was replaced by exec: no
 *		longer in use.
 */
struct prof_heap_counts {
	uint64_t allocs, frees, unknown_frees, replaced, untracked, exec_gone;
};

/* One address space's heap state: blocks live in it, and whether gone. */
struct prof_heap_space {
	uint64_t inuse; /* blocks live (sampled, not freed) */
	bool gone; /* its image was replaced by exec: none is in use */
};

struct prof_heap_agg {
	struct keyed_table sites; /* struct heap_site */
	struct keyed_table live; /* struct heap_live */
	struct prof_heap_space *spaces; /* by space index, as blocks come */
	size_t capspaces;
	struct prof_heap_counts n;
};

void prof_heap_agg_init(struct prof_heap_agg *h);
void prof_heap_agg_free(struct prof_heap_agg *h);
int prof_heap_agg_take(struct prof_heap_agg *h, struct stacktab *tab,
		       const struct profbuf_record *rec, uint32_t space,
		       bool is_free);
void prof_heap_agg_image_gone(struct prof_heap_agg *h, uint32_t space);
size_t prof_heap_agg_count(const struct prof_heap_agg *h);
/* Sites' counts at one moment (prof_heap_agg_base()). */
struct prof_heap_base {
	struct keyed_table sites; /* struct heap_site */
};

int prof_heap_agg_fill(struct prof_heap_agg *h, struct stacktab *tab,
		       uint64_t rate, uint64_t lost,
		       const struct prof_heap_base *base,
		       struct prof_sample *out, size_t *n);
int prof_heap_agg_base(const struct prof_heap_agg *h, struct prof_heap_base *b);
void prof_heap_base_free(struct prof_heap_base *b);
void prof_heap_comment(char *buf, size_t len, uint64_t rate,
		       const struct prof_heap_counts *hc, uint64_t written,
		       uint64_t refused, uint64_t untracked);
int prof_sample_copy_stack(struct stacktab *tab, uint32_t id,
			   struct prof_sample *s);
void prof_heap_scale(uint64_t count, uint64_t bytes, uint64_t rate,
		     uint64_t *scount, uint64_t *sbytes);

#endif /* PROFRING_PROF_HEAP_AGG_H */
