/* SPDX-License-Identifier: MIT */
/*
 * prof/common/options.h - the profiler's options, parsed strictly: `record`'s
 * command line and the in-process mode's PROFRING_PROF_* variables, with
 * the same rules and ranges (prof.h's macros), each error one line naming
 * the option and what it wants.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_OPTIONS_H
#define PROFRING_PROF_OPTIONS_H

#include <profring/prof.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * struct prof_record_args - what `profring-prof record` was asked.
 * @opts:	the session (output and folded point at the paths below).
 * @output:	NULL with --heap and no -o (memory only); else absolute (resolved against the starting directory), checked
 *		writable; malloc'd.
 * @folded:	the same, or NULL.
 * @heap:	--heap: the heap profile's path, the same, or NULL.
 * @trace:	--trace: the trace's path (prof/launcher/trace_out.h), the same, or
 *		NULL.
 * @mutex:	--mutex: the mutex profile's path (contention), the same, or
 *		NULL.
 * @block:	--block: the block profile's path (every lock wait), the
 *		same, or NULL.
 * @mutex_rate:	--mutex-rate: one contended wait in this many recorded;
 *		0: not given (PROF_LOCK_DEFAULT_RATE, mutex.h).  With --http
 *		alone it turns lock profiling on for /debug/pprof/mutex and
 *		/block.
 * @http:	--http: the address the launcher serves /debug/pprof/ at
 *		(checked), or NULL; a pointer into argv.
 * @children:	forked descendants are profiled too: the default, as perf
 *		record's; --no-children turns it off (the last of
 *		--children and --no-children wins).
 * @quiet:	-q: no summary line (errors and warnings still).
 * @cmd_index:	argv index of the command.
 */
struct prof_record_args {
	struct profring_prof_opts opts;
	char *output;
	char *folded;
	char *heap;
	char *trace;
	char *mutex;
	char *block;
	uint64_t mutex_rate;
	const char *http;
	bool children;
	bool quiet;
	int cmd_index;
};

/*
 * struct prof_output_name - one output file, for prof_outputs_clash().
 * @opt:	how the user named it, with its separator: "-o ", "PROFRING_PROF=".
 * @given:	its path as given.
 * @path:	its path to compare (absolute, or relative to the working
 *		directory), or NULL: not asked for.
 */
struct prof_output_name {
	const char *opt;
	const char *given;
	const char *path;
};

int prof_outputs_clash(const struct prof_output_name *out, size_t n, char *err,
		       size_t errlen);
int prof_record_parse(int argc, char **argv, struct prof_record_args *a,
		      char *err, size_t errlen);
void prof_record_args_free(struct prof_record_args *a);
int prof_periodic_names_check(const struct profring_prof_opts *o, char *err,
			      size_t len);
int prof_opts_from_env(struct profring_prof_opts *o, char *err, size_t errlen);
int prof_output_check(const char *path, const char *what, char **abs, char *err,
		      size_t errlen);

#endif /* PROFRING_PROF_OPTIONS_H */
