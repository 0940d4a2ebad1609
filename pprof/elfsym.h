/* SPDX-License-Identifier: MIT */
/*
 * pprof/elfsym.h - one mapped ELF file's build-id, load bias and function
 * symbols (elfsym.c), for the symbolizer (symbolize.c), which finds the
 * mapping that holds an address and asks the file it maps.
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

struct pprof_elf_sym {
	uint64_t value;
	uint64_t size;
	const char *name; /* in the mapped file's string table */
	int rank; /* binding: 0 global, 1 weak, 2 local */
};

enum pprof_elf_state { PPROF_ELF_NEW, PPROF_ELF_OPEN, PPROF_ELF_BAD };

/**
 * struct pprof_elf - a file that mappings map (or the [vdso]).
 * @next:	the symbolizer's list of its files.
 * @path:	its path (malloc'd), "[vdso]" for the vDSO.
 * @deleted:	it was deleted since it was mapped: never opened (what is
 *		at @path now is another file).
 * @in_memory:	the [vdso], read in place: not ours to unmap.
 * @foreign_vdso: another process's [vdso]: ours is read instead.
 * @syms_read:	pprof_elf_symbols() was called.
 * @state:	opened yet, and how that went.
 * @base, @size: its bytes once open.
 * @eh:		its ELF header once open.
 * @syms, @nsyms: its functions, sorted by address, one per address.
 * @debug:	the separate debug file holding the names in @syms, or NULL.
 * @build_id:	lowercase hex; "" if none or not read yet.
 *
 * Set @path, @deleted, @in_memory and @foreign_vdso in a zeroed one;
 * the rest is pprof_elf_open()'s and pprof_elf_symbols()'s.
 */
struct pprof_elf {
	struct pprof_elf *next;
	char *path;
	bool deleted;
	bool in_memory;
	bool foreign_vdso;
	bool syms_read;
	enum pprof_elf_state state;
	const uint8_t *base;
	size_t size;
	Elf64_Ehdr eh;
	struct pprof_elf_sym *syms;
	size_t nsyms;
	struct pprof_elf *debug;
	char build_id[2 * PPROF_BUILD_ID_MAX + 1];
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
 * pprof_elf_symbols() - read the function symbols of an open file (once).
 * @f:		the file, opened.
 *
 * Return: how many there are (0: none known).
 */
size_t pprof_elf_symbols(struct pprof_elf *f);

/**
 * pprof_elf_lookup() - the function at a virtual address of the file.
 * @f:		the file, its symbols read.
 * @vaddr:	the address, bias removed.
 *
 * Return: its name (valid until pprof_elf_free()), or NULL.
 */
const char *pprof_elf_lookup(const struct pprof_elf *f, uint64_t vaddr);

/**
 * pprof_elf_free() - unmap and free @f and its debug file.
 * @f:		may be NULL.
 */
void pprof_elf_free(struct pprof_elf *f);

/**
 * pprof_elf_set_debug_dir() - prof_symbolizer_set_debug_dir()'s work.
 * @dir:	as there.
 */
void pprof_elf_set_debug_dir(const char *dir);
/* The directory set (or the default). */
const char *pprof_elf_debug_dir(void);

/*
 * pprof_upper_bound() - index of the first of the @n elements of @size
 * bytes at @base, sorted by the uint64_t at offset @off in each, whose key
 * is above @key; @n if none.
 */
static inline size_t pprof_upper_bound(const void *base, size_t n, size_t size,
				       size_t off, uint64_t key)
{
	size_t lo = 0, hi = n, mid;
	uint64_t v;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		memcpy(&v, (const char *)base + mid * size + off, sizeof(v));
		if (v <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif /* PROFRING_PPROF_ELFSYM_H */
