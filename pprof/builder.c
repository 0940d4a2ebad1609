// SPDX-License-Identifier: MIT
/*
 * pprof/builder.c - the string table, functions and locations of a
 * profile being written (builder.h), shared by the pprof encoder
 * (pprof.c) and the folded writer (folded.c).
 *
 * Strings: one table entry per distinct string.  Functions: one per
 * distinct symbol name, shown demangled; a function's file and start line
 * are the first ones its frames give.  Locations: one per adjusted
 * address (pcs[0] as is, pcs[i] - 1 for i > 0: the call instruction, see
 * profile.h) and address space (profile.h: one per process image; the
 * same address in two is two locations, each symbolized in its own
 * space); a special sample gets one location per special name, address 0
 * and no mapping, whose function is that name.  A location's lines are
 * its frames (symbolize.h: prof_symbolize_frames()), innermost first: an
 * address in inlined code has one line per inlined function, then one
 * for the function the symbol table names; without DWARF, one line of
 * line number 0.  A name comes from the symbolizer of the location's
 * space, else "<basename of the mapping's file>+0x<file offset>", else
 * "0x<address>".  A caller's frame in no mapping that nothing names is
 * dropped (pb_frame_loc()).  Ids are 1, 2, ... in order of first use.  Strings and
 * locations are found again through keyed tables (pprof/table.h) keyed by
 * a hash of their contents; functions through an array indexed by the
 * string index of their name.
 */
#include "pprof/builder.h"
#include "pprof/demangle.h"

#include "ring/hash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 4352 /* a synthesized name: a basename and an offset */

/* A nonzero hash of @s (FNV-1a; the table mixes it further). */
static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

static bool str_eq(const void *entry, const void *s)
{
	const struct str_entry *e = entry;

	return !strcmp(e->s, s);
}

/* Index of @s in the string table (0 after an error: b->err is set). */
uint32_t pb_str_intern(struct builder *b, const char *s)
{
	uint64_t h = hash_str(s);
	struct str_entry *e = keyed_table_find(&b->str_index, h, str_eq, s);
	char *copy, **strs;

	if (e || b->err)
		return e ? e->idx : 0;
	if (b->nstrs >= UINT32_MAX - 1)
		goto nomem;
	strs = array_grow(b->strs, &b->cap_strs, b->nstrs + 1, sizeof(*strs));
	if (!strs)
		goto nomem;
	b->strs = strs;
	copy = strdup(s);
	if (!copy)
		goto nomem;
	e = keyed_table_insert(&b->str_index, h, str_eq, s);
	if (!e) {
		free(copy);
		goto nomem;
	}
	e->s = copy;
	e->idx = (uint32_t)b->nstrs;
	b->strs[b->nstrs++] = copy;
	return e->idx;
nomem:
	b->err = -ENOMEM;
	return 0;
}

/*
 * Id of the function named @name (0 after an error).  Its display name is
 * @name demangled when it is a C++ symbol (demangle.h), else @name.
 */
uint32_t pb_func_intern(struct builder *b, const char *name)
{
	uint32_t si = pb_str_intern(b, name), *p, disp;
	struct pb_func *fn;
	char *readable;

	if (b->err)
		return 0;
	p = array_grow(b->func_of_str, &b->cap_fos, (size_t)si + 1, sizeof(*p));
	if (!p)
		goto nomem;
	b->func_of_str = p;
	if (p[si])
		return p[si];
	readable = prof_demangle(name);
	disp = readable ? pb_str_intern(b, readable) : si;
	free(readable);
	if (b->err)
		return 0;
	fn = array_grow(b->funcs, &b->cap_funcs, b->nfuncs + 1, sizeof(*fn));
	if (!fn)
		goto nomem;
	b->funcs = fn;
	b->funcs[b->nfuncs++] = (struct pb_func){ .sym = si, .disp = disp };
	b->func_of_str[si] = (uint32_t)b->nfuncs;
	return (uint32_t)b->nfuncs;
nomem:
	b->err = -ENOMEM;
	return 0;
}

const char *pb_func_name(const struct builder *b, uint32_t func)
{
	return b->strs[b->funcs[func - 1].disp];
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Append a line of function @func at @line to the lines (no-op on error). */
static void add_line(struct builder *b, uint32_t func, uint32_t line)
{
	struct pb_line *l;

	if (b->err)
		return;
	l = array_grow(b->lines, &b->cap_lines, b->nlines + 1, sizeof(*l));
	if (!l) {
		b->err = -ENOMEM;
		return;
	}
	b->lines = l;
	b->lines[b->nlines++] = (struct pb_line){ func, line };
}

/* A function's file and start line, from the first frame that has them. */
static void set_decl(struct builder *b, uint32_t func,
		     const struct prof_frame *f)
{
	struct pb_func *fn = &b->funcs[func - 1];
	const char *file = f->decl_file ? f->decl_file : f->file;

	if (!fn->file && file)
		fn->file = pb_str_intern(b, file);
	if (!fn->start_line)
		fn->start_line = f->start_line;
}

/*
 * The lines of the location at @addr of @space (into b->lines, innermost
 * first): symbolized, with inlined frames and source lines where DWARF
 * has them; else one line named after its place.
 */
static void addr_lines(struct builder *b, struct loc *k)
{
	const struct space *sp = &b->spaces[k->space]; /* checked */
	struct prof_frame fr[PB_MAX_FRAMES];
	unsigned int mid = 0;
	size_t n = prof_symbolize_frames(sp->sym, (uintptr_t)k->addr, fr,
					 PB_MAX_FRAMES, &mid);
	const struct prof_mapping *m;
	char buf[NAME_MAX_LEN];

	if (mid > sp->nmaps)
		mid = 0;
	k->mapping_id = mid ? sp->id_base + mid : 0;
	k->line0 = (uint32_t)b->nlines;
	for (size_t i = 0; i < n && !b->err; i++) {
		uint32_t func = pb_func_intern(b, fr[i].name);

		if (!func)
			return;
		set_decl(b, func, &fr[i]);
		add_line(b, func, fr[i].line);
	}
	if (!n) {
		if (mid) {
			m = &sp->maps[mid - 1];
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64,
				 base_name(m->path),
				 k->addr - m->start + m->offset);
		} else {
			snprintf(buf, sizeof(buf), "0x%" PRIx64, k->addr);
		}
		add_line(b, pb_func_intern(b, buf), 0);
	}
	k->nlines = (uint32_t)(b->nlines - k->line0);
}

/* A nonzero hash of a location's key. */
static uint64_t loc_hash(uint64_t addr, uint32_t special, uint32_t space)
{
	uintptr_t w[3] = { (uintptr_t)addr, special, space };
	uint64_t h = ring_hash_words(w, 3);

	return h ? h : 1;
}

static bool loc_eq(const void *entry, const void *key)
{
	const struct loc_entry *e = entry;
	const struct loc *k = key;

	return e->addr == k->addr && e->special == k->special &&
	       e->space == k->space;
}

/* Id of the location of adjusted address @addr in @space, or of @special. */
uint32_t pb_loc_intern(struct builder *b, uint32_t space, uint64_t addr,
		       const char *special)
{
	struct loc k = { .addr = special ? 0 : addr,
			 .space = special ? 0 : space },
		   *locs;
	struct loc_entry *e;
	uint64_t h;

	if (special)
		k.special = pb_func_intern(b, special);
	h = loc_hash(k.addr, k.special, k.space);
	e = keyed_table_find(&b->loc_index, h, loc_eq, &k);
	if (e || b->err)
		return e ? e->id : 0;
	if (special) {
		k.line0 = (uint32_t)b->nlines;
		k.nlines = 1;
		add_line(b, k.special, 0);
	} else {
		addr_lines(b, &k);
	}
	if (b->err || b->nlocs >= UINT32_MAX - 1)
		goto nomem;
	locs = array_grow(b->locs, &b->cap_locs, b->nlocs + 1, sizeof(*locs));
	if (!locs)
		goto nomem;
	b->locs = locs;
	e = keyed_table_insert(&b->loc_index, h, loc_eq, &k);
	if (!e)
		goto nomem;
	e->addr = k.addr;
	e->special = k.special;
	e->space = k.space;
	b->locs[b->nlocs++] = k;
	e->id = (uint32_t)b->nlocs;
	return e->id;
nomem:
	if (!b->err)
		b->err = -ENOMEM;
	return 0;
}

/* The address pprof stores for frame @i of @pcs. */
uint64_t pb_frame_addr(const struct prof_sample *ps, size_t i)
{
	return i || ps->return_addrs ? (uint64_t)ps->pcs[i] - 1
				     : (uint64_t)ps->pcs[0];
}

/*
 * The location id of frame @i of @ps; 0 for a frame dropped (or after an
 * error: b->err says).  A return address (not the leaf: the interrupted
 * PC is code that ran) that lies in no mapping of its space's symbolizer
 * and that it cannot name (no perf map's JIT code, no dladdr()) is junk:
 * a frame-pointer walk from a leaf without a frame (a libc system call
 * wrapper) reads the caller's register, which code built without frame
 * pointers uses for anything (`sleep 2` under wall mode: a caller
 * 0x39397156).  It is dropped.  A space whose mappings are unknown (no
 * symbolizer, or one that knows none) keeps every frame.
 */
uint32_t pb_frame_loc(struct builder *b, const struct prof_sample *ps, size_t i)
{
	const struct space *sp =
		ps->space < b->nspaces ? &b->spaces[ps->space] : NULL;
	uint64_t addr = pb_frame_addr(ps, i);
	struct loc k = { .addr = addr, .space = ps->space };
	unsigned int mid = 0;

	if (i && sp && sp->sym && sp->nmaps &&
	    !keyed_table_find(&b->loc_index, loc_hash(addr, 0, ps->space),
			      loc_eq, &k) &&
	    !prof_symbolize(sp->sym, (uintptr_t)addr, &mid) && !mid)
		return 0;
	return pb_loc_intern(b, ps->space, addr, NULL);
}

/*
 * The address spaces: the profile's own (p->spaces), or the one
 * symbolizer @s (which may be NULL).
 */
int pb_init(struct builder *b, const struct prof_profile *p,
	    struct prof_symbolizer *s)
{
	uint32_t base = 0;

	memset(b, 0, sizeof(*b));
	b->nspaces = p->nspaces ? p->nspaces : 1;
	b->spaces = calloc(b->nspaces, sizeof(*b->spaces));
	if (!b->spaces)
		return -ENOMEM;
	for (size_t i = 0; i < b->nspaces; i++) {
		struct space *sp = &b->spaces[i];

		sp->sym = p->nspaces ? p->spaces[i] : s;
		sp->nmaps = prof_symbolizer_mappings(sp->sym, &sp->maps);
		sp->id_base = base;
		base += (uint32_t)sp->nmaps;
	}
	keyed_table_init(&b->str_index, sizeof(struct str_entry));
	keyed_table_init(&b->loc_index, sizeof(struct loc_entry));
	pb_str_intern(b, "");
	return b->err;
}

void pb_free(struct builder *b)
{
	for (size_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	keyed_table_free(&b->str_index);
	keyed_table_free(&b->loc_index);
	free(b->func_of_str);
	free(b->funcs);
	free(b->lines);
	free(b->locs);
	free(b->spaces);
}

int pb_check_profile(const struct prof_profile *p)
{
	size_t nspaces;

	if (!p || (p->nsamples && !p->samples) ||
	    (p->ncomments && !p->comments) || (p->nspaces && !p->spaces))
		return -EINVAL;
	nspaces = p->nspaces ? p->nspaces : 1;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *ps = &p->samples[i];

		if ((ps->npcs && !ps->pcs && !ps->special) ||
		    ps->space >= nspaces)
			return -EINVAL;
	}
	for (size_t i = 0; i < p->ncomments; i++)
		if (!p->comments[i])
			return -EINVAL;
	return 0;
}
