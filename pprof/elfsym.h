/* SPDX-License-Identifier: MIT */
/*
 * pprof/elfsym.h - one mapped ELF file's build-id, load bias and, where
 * libdw cannot be loaded, its own symbol table (elfsym.c), for the
 * symbolizer (symbolize.c), which finds the mapping that holds an
 * address and asks the file it maps; and the table of functions by
 * address that both symbol table readers (this one and dwfl.c's) keep.
 *
 * Not async-signal-safe and not thread-safe, as the symbolizer.
 *
 * Internal to pprof/: never installed.
 */
#ifndef PROFRING_PPROF_ELFSYM_H
#define PROFRING_PPROF_ELFSYM_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PPROF_BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 (sha1) */

enum pprof_elf_state { PPROF_ELF_NEW, PPROF_ELF_OPEN, PPROF_ELF_BAD };

/**
 * struct pprof_sym - a function of a symbol table.
 * @lo:		its address, as the file's program headers number it.
 * @size:	its size; 0: up to the next function.
 * @name:	its (mangled) name, valid as long as the table's reader.
 * @rank:	its binding: 0 global, 1 weak, 2 local (pprof_sym_rank()).
 */
struct pprof_sym {
	uint64_t lo, size;
	const char *name;
	int rank;
};

/**
 * pprof_sym_rank() - @rank of a symbol whose st_info is @info.
 */
int pprof_sym_rank(unsigned char info);

/**
 * pprof_syms_sort() - sort @n functions by address and keep one per
 * address: sized before size 0, global before weak before local, then
 * by name.
 * Return: how many are kept (the first ones of @syms).
 */
size_t pprof_syms_sort(struct pprof_sym *syms, size_t n);

/**
 * pprof_syms_find() - the function of a sorted table (pprof_syms_sort())
 * holding @vaddr: the last one at or below it, if its size reaches
 * @vaddr or it has none.
 * Return: its name, or NULL.
 */
const char *pprof_syms_find(const struct pprof_sym *syms, size_t n,
			    uint64_t vaddr);

/**
 * struct pprof_elf - a file that mappings map (or the [vdso]).
 * @next:	the symbolizer's list of its files.
 * @path:	its path (malloc'd), "[vdso]" for the vDSO.
 * @deleted:	it was deleted since it was mapped: never opened (what is
 *		at @path now is another file).
 * @in_memory:	the [vdso], read in place: not ours to unmap.
 * @foreign_vdso: another process's [vdso]: ours is read instead.
 * @state:	opened yet, and how that went.
 * @base, @size: its bytes once open.
 * @eh:		its ELF header once open.
 * @build_id:	lowercase hex; "" if none or not read yet.
 * @syms, @nsyms, @syms_done: its symbol table (pprof_elf_symbol()).
 *
 * Set @path, @deleted, @in_memory and @foreign_vdso in a zeroed one;
 * the rest is pprof_elf_open()'s.
 */
struct pprof_elf {
	struct pprof_elf *next;
	char *path;
	bool deleted;
	bool in_memory;
	bool foreign_vdso;
	enum pprof_elf_state state;
	const uint8_t *base;
	size_t size;
	Elf64_Ehdr eh;
	char build_id[2 * PPROF_BUILD_ID_MAX + 1];
	struct pprof_sym *syms;
	size_t nsyms;
	bool syms_done;
};

/**
 * pprof_elf_open() - map the file, check its header, read its build-id;
 * once: later calls say how the first went.
 * @f:		the file.
 * @start, @limit, @offset: the mapping at hand; read only for a file in
 *		memory (the [vdso], which must be mapped from offset 0).
 *
 * Return: true if @f is a 64-bit ELF file of this byte order.
 */
bool pprof_elf_open(struct pprof_elf *f, uint64_t start, uint64_t limit,
		    uint64_t offset);

/**
 * pprof_elf_bias() - the load bias of a mapping of an open file: what to
 * subtract from an address in it to get the file's virtual address.
 * @f:		the file, opened.
 * @start:	the mapping's first address.
 * @offset:	the file offset mapped at @start.
 * @bias:	set to the bias.
 *
 * Return: false if no PT_LOAD segment holds @offset.
 */
bool pprof_elf_bias(const struct pprof_elf *f, uint64_t start, uint64_t offset,
		    uint64_t *bias);

/**
 * pprof_elf_has_dwarf() - whether the file holds DWARF of its own (a
 * .debug_info section with contents), not only in a separate debug file.
 * @f:		the file, opened.
 */
bool pprof_elf_has_dwarf(const struct pprof_elf *f);

/**
 * pprof_elf_symbol() - the symbol table's name for a code address, read
 * here: the symbolizer's fallback when libdw cannot be loaded.
 * @f:		the file, opened.
 * @vaddr:	the address as the file's program headers number it.
 *
 * The file's own .symtab, else its .dynsym (no separate debug file, no
 * MiniDebugInfo: libdwfl's), tabled by address at the first call.
 *
 * Return: the (mangled) name of the function holding @vaddr, valid until
 * pprof_elf_close(); NULL if none.
 */
const char *pprof_elf_symbol(struct pprof_elf *f, uint64_t vaddr);

/**
 * pprof_elf_close() - unmap @f and free its symbol table, leaving it (and
 * its @path) to its owner.
 * @f:		the file.
 */
void pprof_elf_close(struct pprof_elf *f);

/**
 * pprof_elf_free() - unmap and free @f.
 * @f:		may be NULL.
 */
void pprof_elf_free(struct pprof_elf *f);

#endif /* PROFRING_PPROF_ELFSYM_H */
