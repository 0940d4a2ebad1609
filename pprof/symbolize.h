/* SPDX-License-Identifier: MIT */
/*
 * pprof/symbolize.h - symbolization: which executable mapping holds an
 * address, and the name of the function there, from the ELF symbol tables
 * of the mapped files; its source line and inlined functions from their
 * DWARF (both read by elfutils' libdwfl; without libdw.so.1, the files'
 * own symbol tables are read by elfsym.c, and there are no lines).  The
 * mappings are this process's own (/proc/self/maps, dladdr() as the
 * fallback), or those another process reported (no fallback: see
 * symbolize.c).
 *
 * Not async-signal-safe and not thread-safe: the profiler calls it at stop
 * time, from one normal thread.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_SYMBOLIZE_H
#define PROFRING_PROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct prof_symbolizer;

/**
 * struct prof_mapping - one executable mapping of the process.
 * @start:	first address.
 * @limit:	one past the last address.
 * @offset:	file offset mapped at @start.
 * @path:	file path as /proc/self/maps names it, or as the process
 *		reported it (without " (deleted)"); or "[vdso]"; or, for
 *		the JIT code a perf map names, "[perf-PID.map]" (the map's
 *		file name in brackets: prof_symbolizer_set_perf_map()).
 * @build_id:	GNU build-id in lowercase hex; "" if none or not known.
 * @id:		1-based, in address order (pprof's Mapping.id).
 * @has_functions: nonzero once a lookup in this mapping found symbols.
 * @has_lines:	nonzero once a lookup found source lines (DWARF): pprof's
 *		has_filenames, has_line_numbers and has_inline_frames.
 */
struct prof_mapping {
	uint64_t start, limit, offset;
	const char *path;
	const char *build_id;
	unsigned int id;
	int has_functions;
	int has_lines;
};

/**
 * struct prof_frame - one function at a code address.  An address in
 * code the compiler inlined has several: the innermost inlined function
 * first, then the function it was inlined into, and so on out to the
 * function the symbol table names.
 * @name:	the function's symbol (mangled) name, or NULL.
 * @file:	the source file of the address (an outer frame: of the call
 *		to the frame before it), or NULL.
 * @line:	its line, 0 if unknown.
 * @decl_file:	the file the function is defined in, or NULL.
 * @start_line:	the line its definition starts at, 0 if unknown.
 */
struct prof_frame {
	const char *name;
	const char *file;
	unsigned int line;
	const char *decl_file;
	unsigned int start_line;
};

/**
 * prof_symbolizer_new() - snapshot the executable mappings of the process.
 *
 * Reads /proc/self/maps and keeps the executable mappings of files and the
 * [vdso]; the files themselves are opened lazily, at the first lookup or
 * prof_symbolizer_mappings().  JIT code is named from this process's perf
 * map, /tmp/perf-<getpid()>.map, if there is one (read then too).
 *
 * Return: the symbolizer, or NULL with errno set.
 */
struct prof_symbolizer *prof_symbolizer_new(void);

/**
 * struct prof_map_spec - an executable mapping another process reported.
 * @start, @limit: its addresses, [start, limit).
 * @offset:	file offset mapped at @start.
 * @path:	the file (or "[vdso]").
 */
struct prof_map_spec {
	uint64_t start, limit, offset;
	const char *path;
};

/**
 * prof_symbolizer_new_maps() - a symbolizer over the mappings of another
 * process (or of one that is gone), as it reported them, in order.
 * @maps: the mappings, in the order they were made; NULL if @n is 0.  A
 *	  later one replaces every earlier one it overlaps, even in part (a
 *	  library dlclosed, another loaded at its addresses): the last one
 *	  wins.  Those with @start >= @limit or a NULL @path are left out.
 *	  Copied: @maps need not outlive the call.
 * @n:	  how many.
 *
 * The files are opened by path when first needed (a file gone since, or
 * not ELF, names nothing: raw addresses); dladdr() is never asked (it
 * would look in this process); a [vdso] is read from this process's own
 * (the kernel maps the same one into every process).  No perf map until
 * prof_symbolizer_set_perf_map() names one.
 *
 * Return: the symbolizer, or NULL with errno set (EINVAL: NULL @maps and
 * @n > 0; ENOMEM).
 */
struct prof_symbolizer *
prof_symbolizer_new_maps(const struct prof_map_spec *maps, size_t n);

/**
 * prof_symbolizer_free() - unmap the files, free everything.
 * @s: may be NULL.
 *
 * Every name and mapping the symbolizer returned becomes invalid.
 */
void prof_symbolizer_free(struct prof_symbolizer *s);

/**
 * prof_symbolizer_mappings() - the mappings, in address order.
 * @s:   the symbolizer.
 * @out: set to the array (valid until prof_symbolizer_free()).
 *
 * Reads the build-id of every mapped file not read yet.  has_functions
 * reflects the lookups done so far.
 *
 * Return: the number of mappings.
 */
size_t prof_symbolizer_mappings(struct prof_symbolizer *s,
				const struct prof_mapping **out);

/**
 * prof_symbolize() - the function containing an address.
 * @s:		the symbolizer.
 * @addr:	a code address (for a return address, pass the call
 *		instruction's address: the return address - 1).
 * @mapping_id:	if not NULL, set to the id of the mapping holding @addr, or
 *		0.
 *
 * Looks in the symbol table of the mapped file as elfutils' libdwfl
 * reads it (pprof/dwarf.h: its .symtab, else its separate debug file's,
 * found by build-id under the debug directory, see
 * prof_symbolizer_set_debug_dir(), or by .gnu_debuglink, else its
 * .dynsym; when libdw.so.1 cannot be loaded, the file's own .symtab,
 * else its .dynsym, read by elfsym.c); then in the perf
 * map, if any (the last of its lines that covers @addr; @mapping_id is
 * then the perf map's mapping, unless @addr is in a file's); then, in a
 * symbolizer of this process's own mappings (prof_symbolizer_new()), asks
 * dladdr().
 *
 * Return: the name (valid until prof_symbolizer_free()), or NULL if nothing
 * knows it (stripped binary, JIT code no perf map names, no mapping).
 */
const char *prof_symbolize(struct prof_symbolizer *s, uintptr_t addr,
			   unsigned int *mapping_id);

/**
 * prof_symbolize_frames() - the frames at an address: prof_symbolize()'s
 * function, with source lines and the functions inlined there when the
 * mapped file (or its separate debug file) has DWARF (pprof/dwarf.h).
 * @s:		the symbolizer.
 * @addr:	as prof_symbolize().
 * @out:	room for @max frames, innermost first; strings valid until
 *		prof_symbolizer_free().  The outermost frame's name is the
 *		symbol table's (prof_symbolize()'s) where it has one.
 * @max:	at least 1.
 * @mapping_id:	as prof_symbolize().
 *
 * Return: the number of frames; 0 when nothing names the address (then
 * as prof_symbolize() returning NULL).
 */
size_t prof_symbolize_frames(struct prof_symbolizer *s, uintptr_t addr,
			     struct prof_frame *out, size_t max,
			     unsigned int *mapping_id);

/**
 * prof_symbolizer_set_perf_map() - where JIT code's names are: a perf map
 * (pprof/perfmap.h), by perf's convention /tmp/perf-PID.map for process PID
 * (PROF_PERFMAP_PATH_FMT).
 * @s:		the symbolizer; before its first lookup or
 *		prof_symbolizer_mappings() (it reads the file then).
 * @path:	the file (copied), or NULL for none.  A file that is not
 *		there, not a regular file, or owned by another user than
 *		this process's effective one or root, names nothing.
 *
 * Return: 0, -EBUSY (the perf map was already read), or -ENOMEM.
 */
int prof_symbolizer_set_perf_map(struct prof_symbolizer *s, const char *path);

struct prof_perfmap_stats;

/**
 * prof_symbolizer_perf_map_stats() - what reading the perf map found
 * (reading it now if it was not yet).
 * @s:	the symbolizer, or NULL.
 * @st:	filled in (zeroed if the map could not be read).
 *
 * Return: 0 if it was read, -ENOENT if there is none (no file, or no path
 * set), else the error prof_perfmap_read() gave.
 */
int prof_symbolizer_perf_map_stats(struct prof_symbolizer *s,
				   struct prof_perfmap_stats *st);

/**
 * prof_symbolizer_perf_map_comment() - one line on how several
 * symbolizers (a profile's address spaces) name code, for the profile's
 * comments: when libdw.so.1 cannot be loaded and they have mappings of
 * files, "symbolizer: ELF symbol tables ..." and why (the names come from
 * the files' own tables; there are no source lines or inlined frames);
 * then, after "; " if both, their perf maps: how many were read, how many
 * lines they kept and skipped.
 * @syms, @n:	the symbolizers (NULL ones are passed over).
 * @buf, @len:	where the line goes.
 *
 * Reads the perf maps not read yet; looks for libdw if no one has yet.
 *
 * Return: nonzero if there is something to say (@buf holds the line),
 * else 0.
 */
int prof_symbolizer_perf_map_comment(struct prof_symbolizer *const *syms,
				     size_t n, char *buf, size_t len);

/**
 * prof_symbolizer_warn_to() - where one line goes, once per process, when
 * a symbolizer first names code from a file's own symbol tables because
 * libdw.so.1 cannot be loaded (the launcher: stderr).
 * @f:	the stream, or NULL (the default): nowhere.  A library in someone
 *	else's program (an in-process session) must not write to it.
 */
void prof_symbolizer_warn_to(FILE *f);

/**
 * prof_symbolizer_set_debug_dir() - where separate debug files are looked
 * for (internal: for the tests).
 * @dir: the directory holding .build-id/xx/yyyy.debug, or NULL for the
 *	 default, /usr/lib/debug.  Not copied: it must outlive its use.
 *
 * Read at each symbolizer's first lookup in a mapped file without .symtab.
 */
void prof_symbolizer_set_debug_dir(const char *dir);

#endif /* PROFRING_PROF_SYMBOLIZE_H */
