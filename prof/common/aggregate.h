/* SPDX-License-Identifier: MIT */
/*
 * prof/common/aggregate.h - turn the profiler's records (stream.h) into a profile
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

#include "pprof/elfsym.h" /* struct pprof_elf */
#include "pprof/profile.h"
#include "pprof/symbolize.h" /* struct prof_map_spec, prof_mapping */
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
 * @pids:	distinct processes that sent samples or attached.
 * @images_dropped: images (HELLO records) given no address space, the
 *		limit of spaces reached: their records are dropped.
 * @maps_dropped: mappings not kept, a limit reached (mappings per image,
 *		or the memory of all mappings): MAP records, and mappings
 *		a fork child would have inherited.  Code in them is shown
 *		as raw addresses.
 * @dropped:	records skipped because their image or thread was past a
 *		limit (images_dropped, or the limit of threads).
 * @map_bytes:	the memory the kept mappings stand for (struct
 *		prof_agg_limits' map_bytes), at most that limit.
 */
struct prof_agg_counts {
	uint64_t read, lost, periods, table_full, stacks, threads;
	uint64_t images, maps, bad, pids;
	uint64_t images_dropped, maps_dropped, dropped, map_bytes;
};

/*
 * Limits on what the records (the profiled program's: hostile input) may
 * make the aggregation hold.  Past one, what does not fit is dropped and
 * counted (struct prof_agg_counts), never allocated.
 * PROF_AGG_PATH_MAX: bytes of a path in a HELLO or MAP record, its NUL
 *		included (the agent's PATH_MAX): a longer one is bad.
 * PROF_AGG_PERIODS_MAX: periods of one sample record: more is bad.
 * struct prof_agg_limits (prof_agg_set_limits(); the defaults are the
 * PROF_AGG_*_MAX below):
 * @spaces:	address spaces (process images: one per HELLO).
 * @threads:	threads with samples ((image, tid) pairs).
 * @space_maps:	mappings of one image, those a fork child inherits
 *		included.
 * @map_bytes:	the memory of the mappings of every image: each one
 *		kept counts PROF_AGG_MAP_COST (its spec here, and what its
 *		image's symbolizer keeps for it) and its path with its NUL
 *		(the aggregation holds each distinct path once, but each
 *		image's symbolizer copies its own).
 */
#define PROF_AGG_PATH_MAX 4096
#define PROF_AGG_PERIODS_MAX (UINT64_C(1) << 32)
#define PROF_AGG_SPACES_MAX (1u << 20)
#define PROF_AGG_THREADS_MAX (1u << 20)
#define PROF_AGG_SPACE_MAPS_MAX 8192u
#define PROF_AGG_MAP_BYTES_MAX ((uint64_t)256 << 20)
/*
 * What one mapping kept costs, its path aside: its spec here; its
 * symbolizer's mapping, file record and private record (symbolize.c's
 * map_ext, some 40 bytes) with the allocator's due.
 */
#define PROF_AGG_MAP_COST                                             \
	(sizeof(struct prof_map_spec) + sizeof(struct prof_mapping) + \
	 sizeof(struct pprof_elf) + 64)

struct prof_agg_limits {
	uint32_t spaces, threads, space_maps;
	uint64_t map_bytes;
};

struct prof_agg *prof_agg_new(bool in_process, size_t table_bytes, int *err);
void prof_agg_free(struct prof_agg *a);
void prof_agg_set_limits(struct prof_agg *a, const struct prof_agg_limits *lim);
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
struct prof_lock_base;
int prof_agg_lock_profile(struct prof_agg *a, bool block, uint64_t rate,
			  uint64_t lost, const struct prof_lock_base *base,
			  struct prof_profile *p);
int prof_agg_lock_base(const struct prof_agg *a, uint64_t lost,
		       struct prof_lock_base *b);
uint64_t prof_agg_lock_waits(const struct prof_agg *a);
struct prof_heap_counts;
void prof_agg_heap_counts(const struct prof_agg *a, struct prof_heap_counts *c);
void prof_agg_refresh_names(struct prof_agg *a);
void prof_agg_set_thread_name(struct prof_agg *a, pid_t tid, const char *name);
int prof_agg_set_process_cpu(struct prof_agg *a, pid_t pid, uint64_t ns,
			     uint64_t period_ns);

#endif /* PROFRING_PROF_AGGREGATE_H */
