/* SPDX-License-Identifier: MIT */
/*
 * prof/aggregate.h - turn the profiler's records (stream.h) into a profile
 * (pprof/profile.h): intern stacks, count samples per (stack, thread),
 * follow processes and their address spaces.
 *
 * One reader at a time; not async-signal-safe (it allocates).  Used by the
 * in-process collector thread (collector.c) and by the launcher
 * (record.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_AGGREGATE_H
#define PROFRING_PROF_AGGREGATE_H

#include <profring/prof.h>
#include <profring/profbuf.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pprof/profile.h"
#include "pprof/table.h"

/* Names of the synthetic entries (struct prof_sample.special). */
#define PROF_LOST_NAME "[profring: lost samples]"
#define PROF_TABLE_FULL_NAME "[profring: stack table full]"
#define PROF_NO_STACK_NAME "[profring: no stack]"
#define PROF_UNSAMPLED_NAME "[profring: unsampled CPU]"

struct prof_agg;

/*
 * struct prof_agg_counts - what the records said.
 * @read:	samples read.
 * @lost:	samples lost (overflow records).
 * @periods:	periods the read samples stand for.
 * @table_full:	samples kept without interning (stack table full).
 * @stacks:	distinct stacks.
 * @threads:	distinct threads that sent samples.
 * @images:	process images that attached (HELLO records).
 * @maps:	mapping records.
 * @bad:	records that made no sense (unknown kind, bad payload):
 *		skipped and counted, never trusted.
 * @pids:	distinct processes that sent samples.
 */
struct prof_agg_counts {
	uint64_t read, lost, periods, table_full, stacks, threads;
	uint64_t images, maps, bad, pids;
};

struct prof_agg *prof_agg_new(bool in_process, size_t table_bytes, int *err);
void prof_agg_free(struct prof_agg *a);
int prof_agg_take(struct prof_agg *a, const struct profbuf_read *r);
void prof_agg_counts(const struct prof_agg *a, struct prof_agg_counts *c);
int prof_agg_profile(struct prof_agg *a, struct prof_profile *p);
/* A window's start (prof_agg_cpu_base()). */
struct prof_cpu_base {
	struct keyed_table entries; /* aggregate.c's entries, copied */
	uint64_t lost;
};

int prof_agg_cpu_base(const struct prof_agg *a, struct prof_cpu_base *b);
void prof_cpu_base_free(struct prof_cpu_base *b);
int prof_agg_profile_since(struct prof_agg *a, const struct prof_cpu_base *base,
			   struct prof_profile *p);
const char *prof_agg_symbol(struct prof_agg *a, pid_t pid, uint64_t pc);
void prof_agg_profile_free(struct prof_profile *p);
void prof_agg_set_heap_refused(struct prof_agg *a, uint64_t n);
struct prof_heap_base;
int prof_agg_heap_base(const struct prof_agg *a, struct prof_heap_base *b);
void prof_agg_forget_symbols(struct prof_agg *a);
int prof_agg_heap_profile(struct prof_agg *a, uint64_t rate,
			  const struct prof_heap_base *base,
			  struct prof_profile *p);
struct prof_heap_counts;
void prof_agg_heap_counts(const struct prof_agg *a, struct prof_heap_counts *c);
void prof_agg_refresh_names(struct prof_agg *a);
void prof_agg_set_thread_name(struct prof_agg *a, pid_t tid, const char *name);
int prof_agg_set_process_cpu(struct prof_agg *a, pid_t pid, uint64_t ns,
			     uint64_t period_ns);

#endif /* PROFRING_PROF_AGGREGATE_H */
