/* SPDX-License-Identifier: MIT */
/*
 * pprof/dwfl_impl.h - what dwfl.c (files, symbols) and dwarf.c (frames)
 * share: libdw's functions, loaded by dwfl.c, and a file's state.
 *
 * Internal to pprof/dwfl.c and pprof/dwarf.c; built only with libdw's
 * headers (PROFRING_HAVE_LIBDW).
 */
#ifndef PROFRING_PPROF_DWFL_IMPL_H
#define PROFRING_PPROF_DWFL_IMPL_H

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pprof/table.h"

#define MAX_FDS 4 /* a file's: itself, its debug file, a dwz file */
#define MAX_DEPTH 32 /* frames at one address: inlining deeper is cut */

struct prof_frame;
struct pprof_sym;

/*
 * libdw's functions, resolved once (dw_load() in dwfl.c) and called as
 * pprof_dw.name().
 */
#define DW_FUNCS(X)                     \
	X(dwfl_begin)                   \
	X(dwfl_end)                     \
	X(dwfl_report_begin)            \
	X(dwfl_report_elf)              \
	X(dwfl_report_end)              \
	X(dwfl_build_id_find_debuginfo) \
	X(dwfl_offline_section_address) \
	X(dwfl_module_getdwarf)         \
	X(dwfl_module_getelf)           \
	X(dwfl_module_getsymtab)        \
	X(dwfl_module_getsym_info)      \
	X(dwarf_getelf)                 \
	X(dwarf_begin_elf)              \
	X(dwarf_setalt)                 \
	X(dwelf_dwarf_gnu_debugaltlink) \
	X(elf_begin)                    \
	X(elf_end)                      \
	X(elf_cntl)                     \
	X(elf_rawfile)                  \
	X(dwfl_module_addrdie)          \
	X(dwfl_module_nextcu)           \
	X(dwarf_getsrc_die)             \
	X(dwarf_linesrc)                \
	X(dwarf_lineno)                 \
	X(dwarf_child)                  \
	X(dwarf_siblingof)              \
	X(dwarf_haspc)                  \
	X(dwarf_ranges)                 \
	X(dwarf_dieoffset)              \
	X(dwarf_tag)                    \
	X(dwarf_attr)                   \
	X(dwarf_attr_integrate)         \
	X(dwarf_formstring)             \
	X(dwarf_formudata)              \
	X(dwarf_getsrcfiles)            \
	X(dwarf_filesrc)                \
	X(dwarf_decl_file)              \
	X(dwarf_decl_line)
#define DW_MEMBER(f) __typeof__(f) *f;
#define DW_RESOLVE(f)                                           \
	*(void **)&pprof_dw.f = dlsym(h, #f); /* POSIX's way */ \
	if (!pprof_dw.f)                                        \
		return dw_lacks(h, #f);

struct pprof_dw_funcs {
	DW_FUNCS(DW_MEMBER)
	bool tried, ok;
};

extern struct pprof_dw_funcs pprof_dw;

/* The lock around every file and libdw call (dwfl.c: "Locking"). */
extern pthread_mutex_t pprof_dwfl_lock;

/* One address's frames, in the file's cache. */
struct addr_entry {
	uint64_t key; /* vaddr + 1 (0 marks an empty slot) */
	uint32_t first, n; /* in the file's frames */
};

/* A function's code range, in a unit's table (struct cu_funcs). */
struct fn_range {
	uint64_t lo, hi;
	Dwarf_Die die;
};

/* A unit's code range (struct pprof_dwarf's cus). */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Die *cu; /* libdwfl's, valid as long as the module */
	Dwarf_Addr bias;
};

/* A unit's functions, by address: made at its first lookup. */
struct cu_funcs {
	uint64_t key; /* the unit's DIE offset + 1 */
	struct fn_range *r;
	size_t n;
};

struct pprof_dwarf {
	struct pprof_dwarf *next;
	char *path, *build_id, *debug_dir;
	Dwfl *dwfl; /* NULL: no symbols and no DWARF here */
	Dwfl_Module *mod;
	bool want_dwarf; /* asked to read its DWARF (part of the key) */
	bool has_dwarf;
	struct pprof_sym *syms; /* by address: table_syms(); libelf's names */
	size_t nsyms;
	bool syms_done;
	struct { /* opened for it while it is opened (find_debuginfo()) */
		int fd;
		dev_t dev;
		ino_t ino;
	} fds[MAX_FDS];
	unsigned int nfds;
	char *debug_path; /* its debug file's, if one was found */
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	struct keyed_table addrs; /* struct addr_entry */
	struct keyed_table units; /* struct cu_funcs */
	struct cu_range *cus; /* by address, when there are no aranges */
	size_t ncus;
	bool cus_done;
	struct prof_frame *frames;
	size_t nframes, capframes;
};

#endif /* PROFRING_PPROF_DWFL_IMPL_H */
