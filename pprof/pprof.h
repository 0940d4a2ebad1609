/* SPDX-License-Identifier: MIT */
/*
 * pprof/pprof.h - write a struct prof_profile as gzip'd pprof
 * profile.proto or as folded stacks (flame graph input).
 *
 * Not async-signal-safe: the profiler calls these at stop time.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_PPROF_H
#define PROFRING_PROF_PPROF_H

#include "pprof/profile.h"
#include "pprof/symbolize.h"

/**
 * prof_pprof_write() - write @p as a gzip'd pprof profile.proto file.
 * @p:    the profile.
 * @s:    symbolizer for the function names and mappings, or NULL (every
 *        function is then named by its address, no mappings); not used
 *        when @p has address spaces of its own (@p->spaces, each of
 *        which may be NULL likewise).
 * @path: where to put it, by prof_outfile_write()'s rules: a regular file
 *        is replaced atomically, a device, FIFO or /dev/stdout written
 *        through.
 *
 * Sample types ("samples", "count") and ("cpu", "nanoseconds"), the
 * default "cpu"; period_type ("cpu", "nanoseconds"), period @p->period_ns;
 * a numeric label "tid" on samples with a nonzero tid, a string label
 * "thread", the thread's name, on samples whose thread_name is known (not
 * NULL, not empty), a numeric label "pid" on samples with a nonzero pid;
 * the comments of @p as pprof comments.  The mappings of every address
 * space, ids numbered on from one space to the next; locations by
 * address and space.  A function name nothing knows is "<basename of the
 * mapped file>+0x<file offset>", or "0x<address>" outside any mapping.
 * A caller's frame (not the leaf) outside every mapping of its space,
 * which nothing names, is dropped: the junk a frame-pointer walk reads
 * through code built without frame pointers (builder.c's
 * pb_frame_loc()); a space with no symbolizer keeps every frame.
 *
 * Return: 0, or -errno (-EINVAL for a NULL @p or @path, a sample with
 * frames but NULL pcs, @p->nspaces but NULL @p->spaces, or a sample whose
 * space is not below @p->nspaces (below 1 when that is 0); -ENOMEM; or
 * what prof_outfile_write() said).
 */
int prof_pprof_write(const struct prof_profile *p, struct prof_symbolizer *s,
		     const char *path);

/**
 * prof_pprof_encode() - the same gzip'd profile.proto, in memory.
 * @out, @len:	receive the bytes (malloc'd: the caller frees them).
 *
 * Return: 0, or -errno as prof_pprof_write() (-EINVAL, -ENOMEM).
 */
int prof_pprof_encode(const struct prof_profile *p, struct prof_symbolizer *s,
		      uint8_t **out, size_t *len);

/**
 * prof_folded_write() - write @p as folded stacks.
 * @p:    the profile.
 * @s:    symbolizer, or NULL.
 * @path: where to put it, as prof_pprof_write().
 *
 * One line per distinct path of function names, "root;...;leaf count",
 * sorted by path; count: the sampling periods of every stack with that
 * path (CPU time in units of @p->period_ns, the shares of pprof's
 * cpu/nanoseconds; a heap profile: the bytes of its default sample type,
 * inuse_space or alloc_space; a path whose count is 0 has no line); a
 * special entry is its name alone.  When the samples come from more than
 * one process (two distinct nonzero pids), the path of every sample with
 * a nonzero pid starts with a "[pid N]" frame, so that a flame graph
 * splits by process first.  ';' in a name becomes ':', a newline or
 * carriage return a space.  Names as in prof_pprof_write().  Samples
 * with no frames and no special name have no path and are left out.
 *
 * Return: 0, or -errno as prof_pprof_write().
 */
int prof_folded_write(const struct prof_profile *p, struct prof_symbolizer *s,
		      const char *path);

#endif /* PROFRING_PROF_PPROF_H */
