/* SPDX-License-Identifier: MIT */
/*
 * prof/common/aggregate_impl.h - what aggregate.c (records in) and
 * aggregate_profile.c (profiles out) share: the aggregation's state.  The
 * protocol is aggregate.c's opening comment.
 *
 * Internal to the aggregation: never installed.
 */
#ifndef PROFRING_PROF_AGGREGATE_IMPL_H
#define PROFRING_PROF_AGGREGATE_IMPL_H

#include "prof/common/aggregate.h"
#include "prof/common/heap_agg.h"
#include "prof/common/mutex_agg.h"

#include <profring/stacktab.h>

#include "pprof/table.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Pseudo stack ids for the synthetic entries (real ids are small). */
#define STACK_TABLE_FULL UINT32_MAX
#define STACK_EMPTY (UINT32_MAX - 1)

/* The key's thread half: a wall entry, its state; the thread index + 1. */
#define KEY_WALL (UINT32_C(1) << 30)
#define KEY_SLEEPING (UINT32_C(1) << 31)
#define KEY_THREAD(k) ((uint32_t)(k) & (KEY_WALL - 1))

/* The stack table's arena (address space, committed as used) and size. */
#define AGG_STACKS_MAX_BYTES ((size_t)64 << 20)
#define AGG_EXPECTED_STACKS 16384

/* Samples are interned whole: the stack table must not cut them. */
_Static_assert(PROFRING_PROF_MAX_FRAMES <= STACKTAB_MAX_DEPTH,
	       "a sample's frames must fit the stack table");

/*
 * A pid's entry in pid_space when its current image got no space (the
 * limit of spaces reached): its records are dropped.
 */
#define SPACE_NONE UINT32_MAX

/*
 * One image of one process: its pid and the mappings it reported (or
 * inherited); their paths are the aggregation's interned ones (paths).
 * Only a space with something to name gets a symbolizer (the main one
 * too): images that never sent a sample cost nothing at the end.
 */
struct agg_space {
	pid_t pid;
	bool sampled; /* a thread or heap site of it counted: symbolized */
	struct prof_map_spec *maps;
	size_t nmaps, capmaps;
};

/* An interned mapping path (struct prof_agg's paths). */
struct agg_path {
	uint64_t key; /* a seeded hash of the path */
	char *path;
};

struct agg_thread {
	uint32_t space;
	uint32_t tid;
	uint32_t wall_stack; /* its last wall sample's stack; 0: none */
	char name[16]; /* comm: at most 15 bytes and a NUL; "" if unknown */
};

/* Keyed table entries (pprof/table.h): a nonzero 64-bit key first. */
struct agg_entry {
	uint64_t key; /* stack << 32 | KEY_* | thread index + 1 */
	uint64_t samples;
	uint64_t periods;
};

/* A process's CPU time over its session (prof_agg_set_process_cpu()). */
struct cpu_entry {
	uint64_t key; /* pid */
	uint64_t ns;
};

struct index_entry {
	uint64_t key; /* thread: (space + 1) << 32 | tid; pid: pid */
	uint32_t index;
};

struct prof_agg {
	bool in_process;
	struct prof_agg_limits lim;
	uint64_t path_seed; /* paths' hash: not one the program can aim at */
	struct keyed_table paths; /* struct agg_path: each path once */
	struct stacktab *tab;
	struct keyed_table agg; /* struct agg_entry */
	struct keyed_table thread_index; /* struct index_entry */
	struct keyed_table pid_space; /* pid -> current space */
	struct agg_thread *threads;
	size_t nthreads, capthreads;
	struct agg_space *spaces;
	size_t nspaces, capspaces;
	struct prof_symbolizer **syms; /* made by prof_agg_profile() */
	size_t nsyms;
	struct prof_agg_counts n;
	struct prof_heap_agg heap;
	uint64_t heap_refused;
	struct prof_lock_agg lock; /* lock waits (mutex_agg.c) */
	struct keyed_table proc_cpu; /* struct cpu_entry */
	uint64_t period_ns; /* a CPU sample's period, for proc_cpu */
};

/* aggregate.c */
void prof_agg_read_comm(pid_t pid, uint32_t tid, char name[16]);
int prof_agg_space_new(struct prof_agg *a, pid_t pid, uint32_t *out);

/* aggregate_profile.c */
uint64_t prof_agg_cpu_lost(const struct prof_agg *a);

#endif /* PROFRING_PROF_AGGREGATE_IMPL_H */
