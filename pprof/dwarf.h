/* SPDX-License-Identifier: MIT */
/*
 * pprof/dwarf.h - an ELF file's symbol table (dwfl.c) and the source
 * lines and inlined frames of its code, from its DWARF (dwarf.c), both
 * through elfutils' libdwfl and libdw, loaded when first needed, for the
 * symbolizer (symbolize.c), which reads the files' own symbol tables
 * (elfsym.c) where libdw cannot be loaded (pprof_dwarf_loaded()).
 *
 * Not async-signal-safe; thread-safe (one lock around the file cache).
 *
 * Internal to pprof/: never installed.
 */
#ifndef PROFRING_PPROF_DWARF_H
#define PROFRING_PPROF_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct prof_frame;
struct pprof_dwarf;

/*
 * A test and diagnostic knob: set (not empty, not "0") in the environment
 * of the process that symbolizes (the launcher, or an in-process
 * session's program), libdw is not loaded, as on a machine without
 * libdw.so.1.  Read once, at the first look for libdw.
 */
#define PPROF_ENV_NO_LIBDW "PROFRING_PROF_NO_LIBDW"

/**
 * pprof_dwarf_loaded() - whether libdw is loaded (it is tried at the
 * first call, here or pprof_dwarf_get()'s).
 * @why:	set to NULL, or to why not (dlerror()'s words, a function it
 *		lacks, the knob, or a build without elfutils' headers):
 *		valid for the life of the process.
 */
bool pprof_dwarf_loaded(const char **why);

/**
 * pprof_dwarf_get() - the file at @path, with the build-id @build_id
 * (lowercase hex, "" if none), as libdwfl reads it: its symbol table and
 * its DWARF, its own or a separate debug file's (found by build-id under
 * @debug_dir/.build-id/, NULL meaning /usr/lib/debug, or by
 * .gnu_debuglink); opened once per (path, build-id, @debug_dir) for the
 * life of the process, holding no file descriptor.
 * @image, @size: the file's bytes when it is in memory only (the [vdso]),
 *		else NULL and 0.
 * @want_dwarf:	read its DWARF too (else only its symbol table): part
 *		of the key, as the file is opened once either way.
 * Return: the file, or NULL (neither symbols nor DWARF, no libdw, no
 * memory, more than dwfl.c's MAX_FILES files).
 */
struct pprof_dwarf *pprof_dwarf_get(const char *path, const char *build_id,
				    const char *debug_dir, const void *image,
				    size_t size, bool want_dwarf);

/**
 * pprof_dwarf_symbol() - the symbol table's name for a code address.
 * @d:		the file.
 * @vaddr:	the address as the file's program headers number it.
 * Return: the (mangled) name of the symbol holding @vaddr (one of size 0:
 * up to the next), from .symtab, a debug file's, or .dynsym, valid for
 * the life of the process; NULL if none.
 */
const char *pprof_dwarf_symbol(struct pprof_dwarf *d, uint64_t vaddr);

/**
 * pprof_dwarf_frames() - the frames at a code address, innermost first:
 * each inlined function, then the function they were inlined into.
 * @d:		the file's DWARF.
 * @vaddr:	the address as the file's program headers number it (the
 *		run-time address less the load bias).
 * @out:	room for @max frames; names and files stay valid for the
 *		life of the process.  A frame's @name is its linkage (mangled)
 *		name where there is one.
 *
 * Return: how many frames were written (0: no DWARF covers @vaddr).
 */
size_t pprof_dwarf_frames(struct pprof_dwarf *d, uint64_t vaddr,
			  struct prof_frame *out, size_t max);

#endif /* PROFRING_PPROF_DWARF_H */
