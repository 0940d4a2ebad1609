/* SPDX-License-Identifier: MIT */
/*
 * prof/common/mutex_agg.h - the collector's half of the lock profiler: sampled
 * lock waits (stream.h's PROF_REC_LOCK) counted per (address space,
 * stack, kind), written as Go's mutex and block profiles
 * (contentions/count, delay/nanoseconds), scaled by the rate.
 *
 * One reader at a time; not async-signal-safe (it allocates).  The stack
 * table and the address spaces are the aggregation's (aggregate.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_MUTEX_AGG_H
#define PROFRING_PROF_MUTEX_AGG_H

#include <profring/profbuf.h>
#include <profring/stacktab.h>

#include "pprof/profile.h"
#include "pprof/table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The synthetic entry of lock records the ring had no room for. */
#define PROF_LOCK_LOST_NAME "[profring: lost lock records]"

struct prof_lock_agg {
	struct keyed_table sites; /* struct lock_site */
	uint64_t waits; /* records read */
};

void prof_lock_agg_init(struct prof_lock_agg *m);
void prof_lock_agg_free(struct prof_lock_agg *m);
int prof_lock_agg_take(struct prof_lock_agg *m, struct stacktab *tab,
		       const struct profbuf_record *rec, uint32_t space);
size_t prof_lock_agg_count(const struct prof_lock_agg *m);
/* Sites' counts at one moment (prof_lock_agg_base()): a delta's start. */
struct prof_lock_base {
	struct keyed_table sites; /* struct lock_site */
	uint64_t lost; /* records refused by then */
};

int prof_lock_agg_fill(const struct prof_lock_agg *m, struct stacktab *tab,
		       bool block, uint64_t rate, uint64_t lost,
		       const struct prof_lock_base *base,
		       struct prof_sample *out, size_t *n);
int prof_lock_agg_base(const struct prof_lock_agg *m, uint64_t lost,
		       struct prof_lock_base *b);
void prof_lock_base_free(struct prof_lock_base *b);
void prof_lock_comment(char *buf, size_t len, bool block, uint64_t rate,
		       uint64_t read, uint64_t written, uint64_t refused);

#endif /* PROFRING_PROF_MUTEX_AGG_H */
