/* SPDX-License-Identifier: MIT */
/*
 * pprof/report.h - read a pprof profile.proto file (ours or Go's,
 * gzip'd or not) and summarize it per function, like `go tool pprof -top`.
 *
 * The decoder is bounds-checked throughout and checks what the profile
 * refers to (ids of locations, functions and mappings exist and are
 * unique, string indices are in the table, every sample has one value per
 * sample type): any input gives a summary or -EBADMSG, never a crash.
 * Time and memory are bounded by the size of the input: a profile is at
 * most PROF_PROFILE_MAX bytes uncompressed (the file read is held whole,
 * in a buffer at most twice its size); the arrays that decoding and
 * summarizing it build may take 16 bytes per byte of it plus 16 MiB
 * (qsort()'s scratch, no larger than the array it sorts, aside), and the
 * summary visits at most 32 frames per byte plus 16M (after dropping a
 * sample's repeated locations and a location's repeated functions); past
 * a limit the answer is -EFBIG and a message naming it.
 *
 * The API of pprof/'s reading side, for the tools and tests.  Behind it:
 * decode.c reads the file and decodes it (decode.h), summary.c
 * summarizes it, print.c prints the report.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_REPORT_H
#define PROFRING_PROF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The largest profile read, uncompressed: 128 MiB. */
#define PROF_PROFILE_MAX (128u << 20)

/**
 * struct prof_report_opts - what prof_report() prints.
 * @top:	rows of the function table; 0 means 20.
 * @by_thread:	also print the value per "tid" label.
 * @sample_index: which sample type (0-based); -1 means the profile's
 *		default_sample_type (the last sample type if it has none).
 * @by_line:	rows per source line ("name file:line"), not per function.
 */
struct prof_report_opts {
	size_t top;
	int by_thread;
	int sample_index;
	int by_line;
};

/**
 * struct prof_report_func - one function of the summary.
 * @name:	the function's name; for a location without line
 *		information, "0x<address>".
 * @flat:	value of the samples where it is the leaf.
 * @cum:	value of the samples where it appears, counted once per
 *		sample.
 */
struct prof_report_func {
	const char *name;
	int64_t flat, cum;
};

/**
 * struct prof_report_tid - the value of the samples of one thread.
 * @tid:	the "tid" label's number.
 * @has_tid:	0 for the row of the samples that have no "tid" label.
 * @value:	their value.
 * @name:	the "thread" label's string of one of them ("" if none).
 */
struct prof_report_tid {
	uint64_t tid;
	int has_tid;
	int64_t value;
	const char *name;
};

/**
 * struct prof_report_location - one location of the profile.
 * @id, @address: as in the profile.
 * @mapping:	index into prof_summary.maps, or -1 for none.
 * @name:	its first (innermost) line's function name, or NULL if it
 *		has no line.
 */
struct prof_report_location {
	uint64_t id, address;
	long mapping;
	const char *name;
};

/**
 * struct prof_report_mapping - one mapping of the profile.
 * @id, @start, @limit, @offset, @has_functions: as in the profile.
 * @filename, @build_id: their strings ("" if unset).
 */
struct prof_report_mapping {
	uint64_t id, start, limit, offset;
	const char *filename, *build_id;
	int has_functions;
};

/**
 * struct prof_summary - a decoded profile, summarized for one sample type.
 * @type, @unit:	the sample type summarized.
 * @sample_index:	its index.
 * @nsample_types:	sample types in the profile.
 * @default_index:	index of the default sample type.
 * @total:		value of all samples.
 * @nsamples:		samples in the profile.
 * @period_type, @period_unit, @period, @time_nanos, @duration_nanos:
 *			as in the profile ("" if unset).
 * @comments, @ncomments: the comments.
 * @funcs, @nfuncs:	every function with a nonzero flat or cum value,
 *			by flat descending, then name, then cum descending.
 * @tids, @ntids:	value per "tid" label, by tid, the samples without
 *			one last (if any).
 * @locs, @nlocs:	the locations, in profile order.
 * @maps, @nmaps:	the mappings, in profile order.
 */
struct prof_summary {
	const char *type, *unit;
	size_t sample_index, nsample_types, default_index;
	int64_t total;
	size_t nsamples;
	const char *period_type, *period_unit;
	int64_t period, time_nanos, duration_nanos;
	const char *const *comments;
	size_t ncomments;
	const struct prof_report_func *funcs;
	size_t nfuncs;
	const struct prof_report_tid *tids;
	size_t ntids;
	const struct prof_report_location *locs;
	size_t nlocs;
	const struct prof_report_mapping *maps;
	size_t nmaps;
};

/**
 * prof_sat_add() - @a + @b, saturated to INT64_MIN or INT64_MAX: how a
 * summary adds values up (its total, flat and cum values, values per tid).
 * @a, @b:	the values.
 *
 * Return: the sum, or the bound it passes.
 */
static inline int64_t prof_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

/**
 * prof_read_file() - read a whole file, gunzip'ing it if it is gzip'd.
 * @path:	the file.
 * @data:	set to the malloc'd contents (free() it); NULL if empty.
 * @len:	set to their length.
 *
 * Return: 0; -EBADMSG for a corrupt or truncated gzip stream; -EFBIG past
 * PROF_PROFILE_MAX; -ENOMEM; or the -errno of open/read.
 */
int prof_read_file(const char *path, uint8_t **data, size_t *len);

/**
 * prof_summary_decode() - decode a profile.proto message and summarize it.
 * @data, @len:	the message (not gzip'd).
 * @sample_index: the sample type to summarize, -1 for the default.
 * @out:	set to the summary (prof_summary_free() it), or NULL.
 * @err, @errlen: if @errlen, what was wrong, as a NUL-terminated line.
 *
 * @data must stay as it is while the call runs (it is read twice).
 *
 * Return: 0; -EBADMSG for a malformed profile; -EINVAL for a
 * @sample_index out of range; -EFBIG for a profile past the limits of
 * size, time and memory (at the top of this file); -ENOMEM.
 */
int prof_summary_decode(const void *data, size_t len, int sample_index,
			struct prof_summary **out, char *err, size_t errlen);

/**
 * prof_summary_load() - prof_read_file() then prof_summary_decode().
 * @path:	the file.
 * @sample_index, @out, @err, @errlen: as prof_summary_decode().
 *
 * A failure of prof_read_file() is explained in @err too.
 *
 * Return: as prof_read_file() and prof_summary_decode().
 */
int prof_summary_load(const char *path, int sample_index,
		      struct prof_summary **out, char *err, size_t errlen);

/**
 * prof_summary_load_opts() - prof_summary_load(), with frames named by
 * line when @by_line: "name file:line" (as `go tool pprof -lines` does),
 * each line of a location (an inlined function's too) a frame of its own.
 */
int prof_summary_load_opts(const char *path, int sample_index, bool by_line,
			   struct prof_summary **out, char *err, size_t errlen);

/**
 * prof_summary_free() - free a summary and the profile it points into.
 * @s:	may be NULL.
 */
void prof_summary_free(struct prof_summary *s);

/**
 * prof_report_print() - print a summary like `go tool pprof -top`.
 * @p:		the summary.
 * @out:	where to print.
 * @o:		options, or NULL for the defaults.
 *
 * A header (sample type, total, duration, comments), then the top
 * functions by flat value: "flat flat% sum% cum cum% name"; with
 * @o->by_thread, the value per tid.  The profile's strings (type, unit,
 * comments, names) are printed escaped (pprof/escape.h): no control
 * character of theirs reaches @out.
 *
 * Return: 0; or the -errno of a failed write (-EIO if none is known).
 */
int prof_report_print(const struct prof_summary *p, FILE *out,
		      const struct prof_report_opts *o);

/**
 * prof_report() - prof_summary_load() then prof_report_print().
 * @path:	the profile, gzip'd or not.
 * @out:	where to print.
 * @o:		options, or NULL for the defaults.
 * @err, @errlen: if @errlen, what went wrong, as one NUL-terminated line
 *		(no newline) that names @path when reading it failed, or
 *		says that writing the report did.  Nothing is printed on
 *		stderr.
 *
 * Return: 0; -EBADMSG for a malformed profile; -EINVAL for a bad
 * sample_index; -EFBIG for a profile past the limits; or another -errno
 * (reading @path, writing @out).
 */
int prof_report(const char *path, FILE *out, const struct prof_report_opts *o,
		char *err, size_t errlen);

#endif /* PROFRING_PROF_REPORT_H */
