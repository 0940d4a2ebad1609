/* SPDX-License-Identifier: MIT */
/*
 * pprof/profile.h - the aggregated CPU profile, between the collector
 * (which builds it from profbuf records) and the writers and readers
 * (pprof profile.proto, folded stacks, the report).
 *
 * Internal header of the profiler: never installed.
 *
 * Addresses: pcs[0] is the interrupted PC, pcs[1..] are return addresses,
 * as the unwinder found them.  Writers symbolize pcs[i] - 1 for i > 0 (the
 * call instruction, which lies inside the caller even when the call is the
 * last instruction of a noreturn path) and store that adjusted address in
 * pprof's Location.address.
 */
#ifndef PROFRING_PROF_PROFILE_H
#define PROFRING_PROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * struct prof_sample - one aggregated stack.
 * @pcs:	leaf first; NULL when @npcs is 0.
 * @npcs:	number of frames.
 * @tid:	thread the samples came from (0: not per-thread).
 * @thread_name: its name (/proc comm): at stop for a thread still running
 *		then, at its exit for one the sampler saw exit, else when
 *		its first sample was read; NULL if none could be had
 *		(collector.c, "Thread names").
 * @samples:	signals that landed on this stack (pprof "samples/count").
 * @periods:	sampling periods of CPU time they stand for: a signal
 *		counts 1 + the timer overruns it reported (pprof's
 *		"cpu/nanoseconds" value is @periods * period_ns).
 * @pid:	the process, a numeric "pid" label; 0: none or unknown
 *		(the in-process mode, a special entry), no label.
 * @space:	index of the address space its PCs belong to in the
 *		profile's @spaces (0 when there are none; the writers
 *		refuse a sample whose @space is out of range).
 * @state:	wall profiles: "running" or "sleeping", a "state" label;
 *		NULL: none.
 * @special:	NULL for a real stack; otherwise the name of a synthetic
 *		one-frame entry with no address, such as
 *		"[profring: lost samples]", whose @samples/@periods say how
 *		many were lost.
 */
struct prof_sample {
	const uintptr_t *pcs;
	size_t npcs;
	uint32_t tid;
	const char *thread_name;
	uint64_t samples;
	uint64_t periods;
	uint32_t pid;
	unsigned int space;
	const char *special;
	const char *state;
	bool return_addrs;
	uint64_t heap[4];
	uint64_t bytes;
};

/* The values of a heap profile's sample, in pprof's sample_type order. */
enum prof_heap_value {
	PROF_HEAP_ALLOC_OBJECTS = 0,
	PROF_HEAP_ALLOC_SPACE = 1,
	PROF_HEAP_INUSE_OBJECTS = 2,
	PROF_HEAP_INUSE_SPACE = 3,
};

struct prof_symbolizer;

/**
 * struct prof_profile - a whole profile.
 * @samples, @nsamples:	the stacks, in no particular order.
 * @period_ns:		CPU nanoseconds per sampling period (1e9 / hz).
 * @time_nanos:		wall-clock start, ns since the Unix epoch.
 * @duration_nanos:	wall-clock length of the profiling run.
 * @comments, @ncomments:	free-form lines stored as pprof comments
 *			(the profiler puts its accounting there).
 * @spaces, @nspaces:	one symbolizer per address space (a process
 *			image: the same address means different code in
 *			two of them; an entry may be NULL: raw addresses),
 *			or none (NULL, 0): the writers then use the
 *			symbolizer they are given.
 * @main_space:		the space whose mappings are written first (pprof
 *			takes the first program file among the mappings
 *			for the main binary, its "File:"): 0 unless said.
 * @heap_rate:		0: a CPU profile.  Otherwise a heap profile
 *			sampled every @heap_rate bytes on average: the
 *			samples' @heap values are written, @period_ns is
 *			unused.
 * @heap_alloc_default:	a heap profile whose default sample type is
 *			alloc_space (Go's /debug/pprof/allocs), not
 *			inuse_space.
 * @lock_rate:		0: not a lock profile.  Otherwise a mutex or
 *			block profile (Go's) recorded one wait in
 *			@lock_rate: sample types contentions/count and
 *			delay/nanoseconds, the samples' @samples and
 *			@periods (@period_ns is 1); period type
 *			contentions/count, period @lock_rate.
 * @wall:		a wall-clock profile: "wall" instead of "cpu" in the
 *			sample and period types (@period_ns is then
 *			nanoseconds of real time per tick).
 */
struct prof_profile {
	const struct prof_sample *samples;
	size_t nsamples;
	uint64_t period_ns;
	int64_t time_nanos;
	int64_t duration_nanos;
	const char *const *comments;
	size_t ncomments;
	struct prof_symbolizer *const *spaces;
	size_t nspaces;
	size_t main_space;
	uint64_t heap_rate;
	bool heap_alloc_default;
	uint64_t lock_rate;
	bool wall;
};

#endif /* PROFRING_PROF_PROFILE_H */
