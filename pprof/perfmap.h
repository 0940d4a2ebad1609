/* SPDX-License-Identifier: MIT */
/*
 * pprof/perfmap.h - names for JIT code from a perf map file,
 * /tmp/perf-PID.map: perf's convention, which V8 (node --perf-basic-prof),
 * the JVM's perf-map-agent, LuaJIT, .NET and others follow.  One line per
 * piece of code, "START SIZE NAME": START and SIZE in hex (an optional
 * 0x), NAME the rest of the line.  The file grows while the program runs
 * and a JIT re-uses addresses, so a later line wins over an earlier one
 * wherever they overlap.
 *
 * Read at symbolization time only (never on the signal path), from one
 * thread.  The file comes from the profiled program or anyone who can
 * write /tmp, so it is read as hostile input: bounded, and bad lines are
 * skipped one by one and counted (perfmap.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PPROF_PERFMAP_H
#define PROFRING_PPROF_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

/* Where a process's perf map is, by perf's convention (a pid as %d). */
#define PROF_PERFMAP_PATH_FMT "/tmp/perf-%d.map"

/*
 * The bounds.  At most the last PROF_PERFMAP_MAX_BYTES of the file are
 * read (its newest lines); at most PROF_PERFMAP_MAX_ENTRIES lines are
 * kept (those after are counted in over_cap); a line longer than
 * PROF_PERFMAP_MAX_LINE bytes is skipped.  Memory: the bytes read
 * (the NAMEs stay there); while the map is made, 20 bytes per line kept;
 * then 16 bytes per range of the map (at most two per line kept); the
 * arrays grow by doubling, so up to twice that.
 */
#define PROF_PERFMAP_MAX_BYTES ((size_t)64 << 20)
#define PROF_PERFMAP_MAX_ENTRIES ((size_t)1 << 20)
#define PROF_PERFMAP_MAX_LINE 4096

/**
 * struct prof_perfmap_stats - what reading a perf map found.
 * @lines:	lines looked at (an empty one included).
 * @entries:	lines kept.
 * @malformed:	lines that are not "START SIZE NAME": not hex, more than
 *		16 digits, a zero SIZE or one of 4 GiB or more, START + SIZE
 *		past 2^64, no NAME, a NUL byte.
 * @too_long:	lines longer than PROF_PERFMAP_MAX_LINE.
 * @truncated:	1 if the file ended in the middle of a line (a writer
 *		still at work): that line is skipped.
 * @over_cap:	good lines past PROF_PERFMAP_MAX_ENTRIES.
 * @bytes_skipped: bytes not read: those before the last
 *		PROF_PERFMAP_MAX_BYTES of a larger file, and the partial
 *		line where the read started.
 */
struct prof_perfmap_stats {
	uint64_t lines;
	uint64_t entries;
	uint64_t malformed;
	uint64_t too_long;
	uint64_t truncated;
	uint64_t over_cap;
	uint64_t bytes_skipped;
};

struct prof_perfmap;

/**
 * prof_perfmap_read() - read a perf map file.
 * @path:	the file.
 * @out:	set to the map (NULL on error); it may hold no entry.
 * @st:		if not NULL, filled in with what was found (zeroed on error).
 *
 * As perf does, the file must be a regular file owned by this process's
 * effective user or by root: anyone can write /tmp.  A FIFO is not waited
 * on.
 *
 * Return: 0, or -errno: -ENOENT (no such file), -EPERM (owned by someone
 * else), -EINVAL (not a regular file), -ENOMEM, or what open() or read()
 * said.
 */
int prof_perfmap_read(const char *path, struct prof_perfmap **out,
		      struct prof_perfmap_stats *st);

/**
 * prof_perfmap_parse() - make a map from the text of a perf map file.
 * @text:	the text (copied); it need not end in a NUL.
 * @len:	its length.
 * @st:		as prof_perfmap_read().
 *
 * Return: the map, or NULL with errno ENOMEM, or EFBIG if @len is above
 * PROF_PERFMAP_MAX_BYTES.
 */
struct prof_perfmap *prof_perfmap_parse(const char *text, size_t len,
					struct prof_perfmap_stats *st);

/**
 * prof_perfmap_lookup() - the name of the code at an address.
 * @m:		the map; may be NULL.
 * @addr:	the address.
 *
 * Return: the NAME of the last line whose [START, START + SIZE) holds
 * @addr (valid until prof_perfmap_free()), or NULL if none does.
 */
const char *prof_perfmap_lookup(const struct prof_perfmap *m, uint64_t addr);

/**
 * prof_perfmap_range() - the addresses the map names.
 * @m:		the map; may be NULL.
 * @start:	set to the lowest address named.
 * @limit:	set to one past the highest.
 *
 * Return: the number of disjoint ranges that name code (0: none; then
 * @start and @limit are 0).
 */
size_t prof_perfmap_range(const struct prof_perfmap *m, uint64_t *start,
			  uint64_t *limit);

/**
 * prof_perfmap_range_at() - one of the map's disjoint ranges.
 * @m:		the map.
 * @i:		which, from 0 (in address order) to prof_perfmap_range()'s
 *		count - 1.
 * @start:	set to its first address.
 * @limit:	set to one past its last.
 */
void prof_perfmap_range_at(const struct prof_perfmap *m, size_t i,
			   uint64_t *start, uint64_t *limit);

/**
 * prof_perfmap_free() - free a map.
 * @m: may be NULL.
 */
void prof_perfmap_free(struct prof_perfmap *m);

#endif /* PROFRING_PPROF_PERFMAP_H */
