/* SPDX-License-Identifier: MIT */
/*
 * pprof/builder.h - what the pprof and folded writers (pprof.c,
 * folded.c) share: the string table, the functions and the locations of a
 * profile, interned as samples are walked (builder.c).
 *
 * Internal to pprof/: never installed.
 */
#ifndef PROFRING_PPROF_BUILDER_H
#define PROFRING_PPROF_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof/pprof.h"
#include "pprof/symbolize.h"
#include "pprof/table.h"

#define PB_MAX_FRAMES 32 /* lines of one location: inlining deeper is cut */

/* An entry of the string table's index (struct keyed_table). */
struct str_entry {
	uint64_t key; /* hash_str() of the string */
	const char *s; /* the table's copy */
	uint32_t idx; /* its index in the string table */
};

/* A function: string indices of its names and file; 0 when unknown. */
struct pb_func {
	uint32_t sym; /* the symbol (system_name) */
	uint32_t disp; /* the name shown: demangled */
	uint32_t file;
	uint32_t start_line;
};

/* A location's line: a function (id) and a line in it, 0 if unknown. */
struct pb_line {
	uint32_t func;
	uint32_t line;
};

/*
 * A location: its lines are lines[line0 .. line0 + nlines), innermost
 * (inlined) first, as pprof orders them.
 */
struct loc {
	uint64_t addr;
	uint32_t mapping_id;
	uint32_t line0, nlines;
	uint32_t special; /* function id of the special name, else 0 */
	uint32_t space; /* the address space (profile.h) */
};

/* An entry of the locations' index. */
struct loc_entry {
	uint64_t key; /* loc_hash() of the three below */
	uint64_t addr;
	uint32_t special;
	uint32_t space;
	uint32_t id; /* the location's id */
};

/* One address space: its symbolizer and mappings, their first id - 1. */
struct space {
	struct prof_symbolizer *sym;
	const struct prof_mapping *maps;
	size_t nmaps;
	uint32_t id_base;
};

struct builder {
	struct space *spaces;
	size_t nspaces;
	char **strs; /* string table */
	size_t nstrs, cap_strs;
	struct keyed_table str_index; /* struct str_entry */
	uint32_t *func_of_str; /* string index -> function id, 0: none */
	size_t cap_fos;
	struct pb_func *funcs; /* function id - 1 */
	size_t nfuncs, cap_funcs;
	struct pb_line *lines;
	size_t nlines, cap_lines;
	struct loc *locs;
	size_t nlocs, cap_locs;
	struct keyed_table loc_index; /* struct loc_entry */
	int err;
};

int pb_check_profile(const struct prof_profile *p);
int pb_init(struct builder *b, const struct prof_profile *p,
	    struct prof_symbolizer *s);
void pb_free(struct builder *b);
uint32_t pb_str_intern(struct builder *b, const char *s);
uint32_t pb_func_intern(struct builder *b, const char *name);
const char *pb_func_name(const struct builder *b, uint32_t func);
uint32_t pb_loc_intern(struct builder *b, uint32_t space, uint64_t addr,
		       const char *special);
uint64_t pb_frame_addr(const struct prof_sample *ps, size_t i);
uint32_t pb_frame_loc(struct builder *b, const struct prof_sample *ps,
		      size_t i);

#endif /* PROFRING_PPROF_BUILDER_H */
