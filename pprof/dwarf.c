// SPDX-License-Identifier: MIT
/*
 * pprof/dwarf.c - the source lines and inlined frames of a code address,
 * from the DWARF of its file (dwarf.h), read by libdw; the file, opened
 * by libdwfl, is dwfl.c's.
 *
 * Frames.  For an address, the compilation unit that covers it
 * (dwfl_module_addrdie, by .debug_aranges; clang writes none, and libdw
 * 0.188 then finds nothing: a table of the units' ranges, made once per
 * file, instead), then the function whose code holds it, from a
 * table of the unit's functions by address made at its first lookup (a
 * walk of the unit's DIEs for each address, as dwarf_getscopes() does,
 * cost 4.7 times binutils' addr2line on libc), then the inlined instances
 * inside that function that hold it, walking down its DIEs: every
 * DW_TAG_inlined_subroutine is a frame, and the function the last one.
 * The innermost frame's line is the unit's line table's
 * (dwarf_getsrc_die); each outer frame's is the call site its inner one
 * records (DW_AT_call_file, DW_AT_call_line).
 * A function's name is its DW_AT_linkage_name (mangled, as the symbol
 * table has it) or else DW_AT_name, through DW_AT_abstract_origin and
 * DW_AT_specification; its declaration's file and line are the
 * function's file and start line.
 *
 * Cache.  Each file keeps the frames of every address asked, so a second
 * profile of the same code costs a hash lookup per location.
 *
 * Locking: pprof_dwfl_lock, as everything of dwfl.c.
 */
#include "pprof/dwarf.h"

#ifdef PROFRING_HAVE_LIBDW
#include <stdlib.h>
#include <string.h>

#include "pprof/dwfl_impl.h"
#include "pprof/symbolize.h"

/* A function's name: linkage (mangled) name, else its name. */
static const char *func_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s;

	if (pprof_dw.dwarf_attr_integrate(die, DW_AT_linkage_name, &a) &&
	    (s = pprof_dw.dwarf_formstring(&a)))
		return s;
	if (pprof_dw.dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a) &&
	    (s = pprof_dw.dwarf_formstring(&a)))
		return s;
	if (pprof_dw.dwarf_attr_integrate(die, DW_AT_name, &a) &&
	    (s = pprof_dw.dwarf_formstring(&a)))
		return s;
	return NULL;
}

/* An inlined call's site, in the caller: its file and line. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file,
		      unsigned int *line)
{
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word v;
	size_t n;

	*file = NULL;
	*line = 0;
	if (pprof_dw.dwarf_attr(inl, DW_AT_call_line, &a) &&
	    !pprof_dw.dwarf_formudata(&a, &v))
		*line = (unsigned int)v;
	if (pprof_dw.dwarf_attr(inl, DW_AT_call_file, &a) &&
	    !pprof_dw.dwarf_formudata(&a, &v) &&
	    !pprof_dw.dwarf_getsrcfiles(cu, &files, &n) && v < n)
		*file = pprof_dw.dwarf_filesrc(files, v, NULL, NULL);
}

/*
 * A function's file and start line.  dwarf_decl_file() of libdw 0.188
 * refuses DWARF 5's file 0 (clang names the unit's own file so): then the
 * unit's file table is read here.
 */
static void set_decl(Dwarf_Die *cu, Dwarf_Die *die, struct prof_frame *f)
{
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word v;
	size_t n;
	int line = 0;

	f->decl_file = pprof_dw.dwarf_decl_file(die);
	if (!f->decl_file &&
	    pprof_dw.dwarf_attr_integrate(die, DW_AT_decl_file, &a) &&
	    !pprof_dw.dwarf_formudata(&a, &v) &&
	    !pprof_dw.dwarf_getsrcfiles(cu, &files, &n) && v < n)
		f->decl_file = pprof_dw.dwarf_filesrc(files, v, NULL, NULL);
	f->start_line = !pprof_dw.dwarf_decl_line(die, &line) && line > 0
				? (unsigned)line
				: 0;
}

/* Append @die's code ranges to @f (@cap its room); false without memory. */
static bool add_ranges(struct cu_funcs *f, size_t *cap, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = pprof_dw.dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		struct fn_range *r;

		if (lo >= hi)
			continue;
		r = array_grow(f->r, cap, f->n + 1, sizeof(*r));
		if (!r)
			return false;
		f->r = r;
		f->r[f->n++] = (struct fn_range){ lo, hi, *die };
	}
	return true;
}

/*
 * The functions with code under @parent: its subprograms, and those in
 * its namespaces and classes (C++ puts some definitions there).
 */
static bool collect(struct cu_funcs *f, size_t *cap, Dwarf_Die *parent,
		    int depth)
{
	Dwarf_Die c;

	if (pprof_dw.dwarf_child(parent, &c))
		return true;
	do {
		switch (pprof_dw.dwarf_tag(&c)) {
		case DW_TAG_subprogram:
			if (!add_ranges(f, cap, &c))
				return false;
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (depth < MAX_DEPTH &&
			    !collect(f, cap, &c, depth + 1))
				return false;
			break;
		}
	} while (!pprof_dw.dwarf_siblingof(&c, &c));
	return true;
}

static int range_cmp(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* @cu's function table, made at its first use; NULL without memory. */
static struct cu_funcs *unit(struct pprof_dwarf *d, Dwarf_Die *cu)
{
	uint64_t key = pprof_dw.dwarf_dieoffset(cu) + 1;
	struct cu_funcs *f = keyed_table_find(&d->units, key, NULL, NULL);
	struct cu_funcs made = { .key = key };
	size_t cap = 0;

	if (f)
		return f;
	if (!collect(&made, &cap, cu, 0)) {
		free(made.r);
		return NULL;
	}
	if (made.n)
		qsort(made.r, made.n, sizeof(*made.r), range_cmp);
	f = keyed_table_insert(&d->units, key, NULL, NULL);
	if (!f) {
		free(made.r);
		return NULL;
	}
	*f = made;
	return f;
}

/* The function of @f whose code holds @pc, or NULL. */
static Dwarf_Die *function_at(struct cu_funcs *f, Dwarf_Addr pc)
{
	/* The first range starting after pc. */
	size_t lo = pprof_upper_bound(f->r, f->n, sizeof(*f->r),
				      offsetof(struct fn_range, lo), pc);
	for (size_t i = lo; i-- > 0 && lo - i <= 4;) /* nested: rare */
		if (pc < f->r[i].hi)
			return &f->r[i].die;
	return NULL;
}

/* May an inlined instance holding an address be under @tag? */
static bool is_scope(int tag)
{
	return tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block;
}

/*
 * The inlined instances holding @pc under @fn, outermost first, into
 * @chain (room for MAX_DEPTH): at each level the child scope that holds
 * @pc is walked into (lexical and try/catch blocks too, not counted).
 */
static size_t inlined_at(Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die *chain)
{
	Dwarf_Die cur = *fn, c;
	size_t n = 0;

	for (int depth = 0;
	     depth < 4 * MAX_DEPTH && !pprof_dw.dwarf_child(&cur, &c);
	     depth++) {
		bool found = false;

		do { /* continue: on to the next sibling */
			int tag = pprof_dw.dwarf_tag(&c);

			if (!is_scope(tag) || pprof_dw.dwarf_haspc(&c, pc) != 1)
				continue;
			if (tag == DW_TAG_inlined_subroutine && n < MAX_DEPTH)
				chain[n++] = c;
			found = true;
			break;
		} while (!pprof_dw.dwarf_siblingof(&c, &c));
		if (!found)
			break;
		cur = c;
	}
	return n;
}

static int cu_range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * The units' ranges, walked once: for files without .debug_aranges
 * (clang does not write them by default), where dwfl_module_addrdie()
 * finds nothing.  Without memory, what was tabled so far.
 */
static void table_units(struct pprof_dwarf *d)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias, base, lo, hi;
	size_t cap = 0;

	d->cus_done = true;
	while ((cu = pprof_dw.dwfl_module_nextcu(d->mod, cu, &bias))) {
		ptrdiff_t off = 0;

		while ((off = pprof_dw.dwarf_ranges(cu, off, &base, &lo, &hi)) >
		       0) {
			struct cu_range *r;

			if (lo >= hi)
				continue;
			r = array_grow(d->cus, &cap, d->ncus + 1, sizeof(*r));
			if (!r)
				goto sort;
			d->cus = r;
			d->cus[d->ncus++] =
				(struct cu_range){ lo + bias, hi + bias, cu,
						   bias };
		}
	}
sort:
	if (d->ncus)
		qsort(d->cus, d->ncus, sizeof(*d->cus), cu_range_cmp);
}

/* The unit whose code holds @vaddr: by the aranges, else by the table. */
static Dwarf_Die *unit_at(struct pprof_dwarf *d, uint64_t vaddr,
			  Dwarf_Addr *bias)
{
	Dwarf_Die *cu = pprof_dw.dwfl_module_addrdie(d->mod, vaddr, bias);
	size_t lo;

	if (cu)
		return cu;
	if (!d->cus_done)
		table_units(d);
	/* The first range starting after vaddr. */
	lo = pprof_upper_bound(d->cus, d->ncus, sizeof(*d->cus),
			       offsetof(struct cu_range, lo), vaddr);
	if (!lo || vaddr >= d->cus[lo - 1].hi)
		return NULL;
	*bias = d->cus[lo - 1].bias;
	return d->cus[lo - 1].cu;
}

/*
 * The frames at @vaddr, innermost first, into @out (room for MAX_DEPTH):
 * the unit that covers it (dwfl_module_addrdie()), the function of the
 * unit's table whose code holds it, then the inlined instances inside
 * that function that hold it, found by walking down its DIEs.
 */
static size_t lookup(struct pprof_dwarf *d, uint64_t vaddr,
		     struct prof_frame *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = unit_at(d, vaddr, &bias);
	Dwarf_Die chain[MAX_DEPTH], *fn;
	Dwarf_Line *l;
	struct cu_funcs *f;
	const char *file = NULL;
	unsigned int line = 0;
	size_t n = 0, ni;
	int lineno;

	if (!cu || !(f = unit(d, cu)) || !(fn = function_at(f, vaddr - bias)))
		return 0;
	l = pprof_dw.dwarf_getsrc_die(cu, vaddr - bias);
	if (l) {
		file = pprof_dw.dwarf_linesrc(l, NULL, NULL);
		line = !pprof_dw.dwarf_lineno(l, &lineno) && lineno > 0
			       ? (unsigned int)lineno
			       : 0;
	}
	ni = inlined_at(fn, vaddr - bias, chain);
	for (size_t i = ni; i-- > 0 && n < MAX_DEPTH - 1;) {
		out[n] = (struct prof_frame){ .name = func_name(&chain[i]),
					      .file = file,
					      .line = line };
		set_decl(cu, &chain[i], &out[n]);
		n++;
		call_site(cu, &chain[i], &file, &line);
	}
	out[n] = (struct prof_frame){ .name = func_name(fn),
				      .file = file,
				      .line = line };
	set_decl(cu, fn, &out[n]);
	return n + 1;
}

/* Remember @n frames of @vaddr; false without memory. */
static bool remember(struct pprof_dwarf *d, uint64_t vaddr,
		     const struct prof_frame *f, size_t n)
{
	struct addr_entry *e;

	struct prof_frame *p = array_grow(d->frames, &d->capframes,
					  d->nframes + n, sizeof(*p));

	if (!p)
		return false;
	d->frames = p;
	e = keyed_table_insert(&d->addrs, vaddr + 1, NULL, NULL);
	if (!e)
		return false;
	e->first = (uint32_t)d->nframes;
	e->n = (uint32_t)n;
	memcpy(d->frames + d->nframes, f, n * sizeof(*f));
	d->nframes += n;
	return true;
}

size_t pprof_dwarf_frames(struct pprof_dwarf *d, uint64_t vaddr,
			  struct prof_frame *out, size_t max)
{
	struct prof_frame found[MAX_DEPTH];
	struct addr_entry *e;
	size_t n;

	if (!d->has_dwarf)
		return 0;
	pthread_mutex_lock(&pprof_dwfl_lock);
	e = keyed_table_find(&d->addrs, vaddr + 1, NULL, NULL);
	if (e) {
		n = e->n < max ? e->n : max;
		memcpy(out, d->frames + e->first, n * sizeof(*out));
		goto out;
	}
	n = lookup(d, vaddr, found);
	remember(d, vaddr, found, n); /* without memory: not cached */
	if (n > max)
		n = max;
	memcpy(out, found, n * sizeof(*out));
out:
	pthread_mutex_unlock(&pprof_dwfl_lock);
	return n;
}

#else /* !PROFRING_HAVE_LIBDW: symbol tables only */

size_t pprof_dwarf_frames(struct pprof_dwarf *d, uint64_t vaddr,
			  struct prof_frame *out, size_t max)
{
	(void)d;
	(void)vaddr;
	(void)out;
	(void)max;
	return 0;
}

#endif
