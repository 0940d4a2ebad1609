// SPDX-License-Identifier: MIT
/*
 * pprof.c - the profile as gzip'd pprof profile.proto, and as folded
 * stacks.
 *
 * THE ENCODING (github.com/google/pprof, proto/profile.proto)
 *
 * One Profile message, gzip'd (zlib deflate, gzip header):
 *	1  sample_type	("samples", "count"), ("cpu", "nanoseconds")
 *	2  sample	location_id (1, packed, leaf first), value (2, packed:
 *			[samples, periods * period_ns]), label (3: key "tid",
 *			num = tid; only when tid != 0), label (3: key
 *			"thread", str = the thread's name; when known), label
 *			(3: key "pid", num = pid; only when pid != 0)
 *	3  mapping	every mapping of every address space's symbolizer,
 *			space after space, ids numbered on across spaces (a
 *			file mapped in two spaces is listed in each): id,
 *			memory_start, memory_limit, file_offset, filename,
 *			build_id (when known), has_functions
 *	4  location	id, mapping_id (when known), address, one line: the
 *			function, line 0
 *	5  function	id, name (demangled for C++, pprof/demangle.h),
 *			system_name (the symbol)
 *	9, 10		time_nanos, duration_nanos
 *	11, 12		period_type ("cpu", "nanoseconds"), period
 *	13		comment (packed string indices)
 *	14		default_sample_type: "cpu"
 * A heap profile (prof_profile.heap_rate nonzero) differs as Go's
 * runtime/pprof heap profiles do: sample_type ("alloc_objects", "count"),
 * ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space",
 * "bytes"); each sample's four values, and a label "bytes" (num = the
 * object size); period_type ("space", "bytes"), period = the rate;
 * default_sample_type "inuse_space".  Its stacks are return addresses
 * from the first frame on (profile.h: return_addrs).
 *	6  string_table	last, string 0 being ""
 * Every string is referenced by a field written before the table, so any
 * strict prefix of the encoding lacks a referenced string: a truncated
 * profile never decodes as a smaller valid one.
 *
 * DEDUPLICATION
 *
 * Strings: one table entry per distinct string.  Functions: one per
 * distinct name.  Locations: one per adjusted address (pcs[0] as is,
 * pcs[i] - 1 for i > 0: the call instruction, see profile.h) and address
 * space (profile.h: one per process image; the same address in two is two
 * locations, each symbolized in its own space); a special sample gets one
 * location per special name, address 0 and no mapping, whose function is
 * that name.  Ids are 1, 2, ... in order of first use.  A name comes from
 * the symbolizer of the location's space, else
 * "<basename of the mapping's file>+0x<file offset>", else "0x<address>".
 * Strings and locations are found again through keyed tables
 * (pprof/table.h) keyed by a hash of their contents; functions through an
 * array indexed by the string index of their name.
 *
 * The folded writer names frames the same way (through the same tables),
 * joins them root first with ';', sorts the paths and adds up the
 * sampling periods of equal paths: a line's count is CPU time in periods
 * (period_ns each), so its share is the share of pprof's cpu/nanoseconds
 * value, not of the signals (a signal stands for 1 + its timer's
 * overruns; profile.h).  A heap profile's lines count the bytes of its
 * default sample type (inuse_space, or alloc_space); a path whose count
 * is 0 has no line.  When samples come from more than one process (two
 * distinct nonzero pids), each real stack is rooted at a "[pid N]" frame,
 * so that a flame graph splits by process first, as perf's
 * stackcollapse-perf.pl --pid does with "comm-pid" (we have no process
 * name, and brackets mark our synthetic frames); a sample of pid 0, such
 * as the lost-samples entry, has no such frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "ring/hash.h"
#include "pprof/demangle.h"
#include "pprof/outfile.h"
#include "pprof/pprof.h"
#include "pprof/proto.h"
#include "pprof/table.h"

/* Profile fields. */
enum {
	PF_SAMPLE_TYPE = 1,
	PF_SAMPLE = 2,
	PF_MAPPING = 3,
	PF_LOCATION = 4,
	PF_FUNCTION = 5,
	PF_STRING_TABLE = 6,
	PF_TIME_NANOS = 9,
	PF_DURATION_NANOS = 10,
	PF_PERIOD_TYPE = 11,
	PF_PERIOD = 12,
	PF_COMMENT = 13,
	PF_DEFAULT_SAMPLE_TYPE = 14,
};

#define NAME_MAX_LEN 4352 /* a synthesized name: a basename and an offset */

/* An entry of the string table's index (struct keyed_table). */
struct str_entry {
	uint64_t key; /* hash_str() of the string */
	const char *s; /* the table's copy */
	uint32_t idx; /* its index in the string table */
};

struct loc {
	uint64_t addr;
	uint32_t mapping_id;
	uint32_t func; /* function id */
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
	uint32_t *func_str; /* function id - 1 -> string index (symbol) */
	uint32_t *func_disp; /* function id - 1 -> string index (display) */
	size_t cap_disp;
	size_t nfuncs, cap_funcs;
	struct loc *locs;
	size_t nlocs, cap_locs;
	struct keyed_table loc_index; /* struct loc_entry */
	int err;
};

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
static uint32_t str_intern(struct builder *b, const char *s)
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
static uint32_t func_intern(struct builder *b, const char *name)
{
	uint32_t si = str_intern(b, name), *p, disp;
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
	disp = readable ? str_intern(b, readable) : si;
	free(readable);
	if (b->err)
		return 0;
	p = array_grow(b->func_str, &b->cap_funcs, b->nfuncs + 1, sizeof(*p));
	if (!p)
		goto nomem;
	b->func_str = p;
	p = array_grow(b->func_disp, &b->cap_disp, b->nfuncs + 1, sizeof(*p));
	if (!p)
		goto nomem;
	b->func_disp = p;
	b->func_str[b->nfuncs] = si;
	b->func_disp[b->nfuncs++] = disp;
	b->func_of_str[si] = (uint32_t)b->nfuncs;
	return (uint32_t)b->nfuncs;
nomem:
	b->err = -ENOMEM;
	return 0;
}

static const char *func_name(const struct builder *b, uint32_t func)
{
	return b->strs[b->func_disp[func - 1]];
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The function at @addr of @space: symbolized, or named after its place. */
static uint32_t addr_func(struct builder *b, uint32_t space, uint64_t addr,
			  uint32_t *mapping_id)
{
	const struct space *sp = &b->spaces[space]; /* check_profile()'d */
	unsigned int mid = 0;
	const char *name = prof_symbolize(sp->sym, (uintptr_t)addr, &mid);
	const struct prof_mapping *m;
	char buf[NAME_MAX_LEN];

	if (mid > sp->nmaps)
		mid = 0;
	*mapping_id = mid ? sp->id_base + mid : 0;
	if (name)
		return func_intern(b, name);
	if (mid) {
		m = &sp->maps[mid - 1];
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base_name(m->path),
			 addr - m->start + m->offset);
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	}
	return func_intern(b, buf);
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
static uint32_t loc_intern(struct builder *b, uint32_t space, uint64_t addr,
			   const char *special)
{
	struct loc k = { .addr = special ? 0 : addr,
			 .space = special ? 0 : space },
		   *locs;
	struct loc_entry *e;
	uint64_t h;

	if (special)
		k.special = k.func = func_intern(b, special);
	h = loc_hash(k.addr, k.special, k.space);
	e = keyed_table_find(&b->loc_index, h, loc_eq, &k);
	if (e || b->err)
		return e ? e->id : 0;
	if (!special)
		k.func = addr_func(b, space, addr, &k.mapping_id);
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
static uint64_t frame_addr(const struct prof_sample *ps, size_t i)
{
	return i || ps->return_addrs ? (uint64_t)ps->pcs[i] - 1
				     : (uint64_t)ps->pcs[0];
}

/*
 * The address spaces: the profile's own (p->spaces), or the one
 * symbolizer @s (which may be NULL).
 */
static int builder_init(struct builder *b, const struct prof_profile *p,
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
	str_intern(b, "");
	return b->err;
}

static void builder_free(struct builder *b)
{
	for (size_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	keyed_table_free(&b->str_index);
	keyed_table_free(&b->loc_index);
	free(b->func_of_str);
	free(b->func_str);
	free(b->func_disp);
	free(b->locs);
	free(b->spaces);
}

static int check_profile(const struct prof_profile *p)
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

/* Scratch buffers for the nested messages, two levels deep. */
struct enc {
	struct builder b;
	struct proto_buf out, msg, sub;
	uint32_t samples_s, count_s, cpu_s, ns_s;
	uint32_t space_s, bytes_s, inuse_space_s, alloc_space_s; /* heap */
	uint32_t tid_s; /* interned at first use: every string is used */
	uint32_t thread_s;
	uint32_t pid_s;
};

static void put_value_type(struct enc *e, uint32_t field, uint32_t type,
			   uint32_t unit)
{
	proto_buf_reset(&e->msg);
	proto_put_int64(&e->msg, 1, type);
	proto_put_int64(&e->msg, 2, unit);
	proto_put_message(&e->out, field, &e->msg);
}

static int64_t sat_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static void put_label_num(struct enc *e, uint32_t key, uint64_t num)
{
	proto_buf_reset(&e->sub);
	proto_put_int64(&e->sub, 1, key);
	proto_put_int64(&e->sub, 3, (int64_t)num);
	proto_put_message(&e->msg, 3, &e->sub);
}

static void put_sample(struct enc *e, const struct prof_profile *p,
		       const struct prof_sample *ps, uint64_t *ids, size_t nids)
{
	uint64_t vals[4], cpu;
	size_t nvals = 2;

	if (p->heap_rate) {
		for (nvals = 0; nvals < 4; nvals++)
			vals[nvals] = (uint64_t)sat_i64(ps->heap[nvals]);
	} else {
		if (__builtin_mul_overflow(ps->periods, p->period_ns, &cpu))
			cpu = UINT64_MAX;
		vals[0] = (uint64_t)sat_i64(ps->samples);
		vals[1] = (uint64_t)sat_i64(cpu);
	}
	proto_buf_reset(&e->msg);
	proto_put_packed(&e->msg, 1, ids, nids);
	proto_put_packed(&e->msg, 2, vals, nvals);
	if (p->heap_rate && ps->bytes)
		put_label_num(e, e->bytes_s, ps->bytes);
	if (ps->tid) {
		if (!e->tid_s)
			e->tid_s = str_intern(&e->b, "tid");
		proto_buf_reset(&e->sub);
		proto_put_int64(&e->sub, 1, e->tid_s);
		proto_put_int64(&e->sub, 3, ps->tid);
		proto_put_message(&e->msg, 3, &e->sub);
	}
	if (ps->thread_name && *ps->thread_name) {
		if (!e->thread_s)
			e->thread_s = str_intern(&e->b, "thread");
		proto_buf_reset(&e->sub);
		proto_put_int64(&e->sub, 1, e->thread_s);
		proto_put_int64(&e->sub, 2, str_intern(&e->b, ps->thread_name));
		proto_put_message(&e->msg, 3, &e->sub);
	}
	if (ps->pid) {
		if (!e->pid_s)
			e->pid_s = str_intern(&e->b, "pid");
		proto_buf_reset(&e->sub);
		proto_put_int64(&e->sub, 1, e->pid_s);
		proto_put_int64(&e->sub, 3, ps->pid);
		proto_put_message(&e->msg, 3, &e->sub);
	}
	proto_put_message(&e->out, PF_SAMPLE, &e->msg);
}

/* The location ids of @ps into @ids (room for npcs or 1). */
static size_t sample_locs(struct builder *b, const struct prof_sample *ps,
			  uint64_t *ids)
{
	if (ps->special) {
		ids[0] = loc_intern(b, 0, 0, ps->special);
		return 1;
	}
	for (size_t i = 0; i < ps->npcs; i++)
		ids[i] = loc_intern(b, ps->space, frame_addr(ps, i), NULL);
	return ps->npcs;
}

static int put_samples(struct enc *e, const struct prof_profile *p)
{
	uint64_t *ids = NULL, *q;
	size_t cap = 0, n;

	for (size_t i = 0; i < p->nsamples && !e->b.err; i++) {
		const struct prof_sample *ps = &p->samples[i];

		q = array_grow(ids, &cap, ps->npcs + 1, sizeof(*ids));
		if (!q) {
			e->b.err = -ENOMEM;
			break;
		}
		ids = q;
		n = sample_locs(&e->b, ps, ids);
		put_sample(e, p, ps, ids, n);
	}
	free(ids);
	return e->b.err;
}

static void put_mappings(struct enc *e)
{
	for (size_t s = 0; s < e->b.nspaces; s++) {
		const struct space *sp = &e->b.spaces[s];

		for (size_t i = 0; i < sp->nmaps; i++) {
			const struct prof_mapping *m = &sp->maps[i];
			struct proto_buf *b = &e->msg;

			proto_buf_reset(b);
			proto_put_uint64(b, 1, sp->id_base + m->id);
			proto_put_uint64(b, 2, m->start);
			proto_put_uint64(b, 3, m->limit);
			proto_put_uint64(b, 4, m->offset);
			proto_put_int64(b, 5, str_intern(&e->b, m->path));
			if (m->build_id[0])
				proto_put_int64(b, 6,
						str_intern(&e->b, m->build_id));
			if (m->has_functions)
				proto_put_bool(b, 7, true);
			proto_put_message(&e->out, PF_MAPPING, b);
		}
	}
}

static void put_locations(struct enc *e)
{
	for (size_t i = 0; i < e->b.nlocs; i++) {
		const struct loc *l = &e->b.locs[i];

		proto_buf_reset(&e->sub);
		proto_put_uint64(&e->sub, 1, l->func);
		proto_buf_reset(&e->msg);
		proto_put_uint64(&e->msg, 1, i + 1);
		if (l->mapping_id)
			proto_put_uint64(&e->msg, 2, l->mapping_id);
		if (l->addr)
			proto_put_uint64(&e->msg, 3, l->addr);
		proto_put_message(&e->msg, 4, &e->sub);
		proto_put_message(&e->out, PF_LOCATION, &e->msg);
	}
}

static void put_functions(struct enc *e)
{
	for (size_t i = 0; i < e->b.nfuncs; i++) {
		proto_buf_reset(&e->msg);
		proto_put_uint64(&e->msg, 1, i + 1);
		proto_put_int64(&e->msg, 2, e->b.func_disp[i]);
		proto_put_int64(&e->msg, 3, e->b.func_str[i]);
		proto_put_message(&e->out, PF_FUNCTION, &e->msg);
	}
}

static int put_comments(struct enc *e, const struct prof_profile *p)
{
	uint64_t *idx = calloc(p->ncomments + 1, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < p->ncomments; i++)
		idx[i] = str_intern(&e->b, p->comments[i]);
	proto_put_packed(&e->out, PF_COMMENT, idx, p->ncomments);
	free(idx);
	return 0;
}

/* A heap profile's types, as Go's runtime/pprof writes them. */
static void put_heap_header(struct enc *e)
{
	uint32_t objects = str_intern(&e->b, "alloc_objects");
	uint32_t inuse_objects;

	e->alloc_space_s = str_intern(&e->b, "alloc_space");
	inuse_objects = str_intern(&e->b, "inuse_objects");

	e->inuse_space_s = str_intern(&e->b, "inuse_space");
	e->count_s = str_intern(&e->b, "count");
	e->bytes_s = str_intern(&e->b, "bytes");
	e->space_s = str_intern(&e->b, "space");
	put_value_type(e, PF_SAMPLE_TYPE, objects, e->count_s);
	put_value_type(e, PF_SAMPLE_TYPE, e->alloc_space_s, e->bytes_s);
	put_value_type(e, PF_SAMPLE_TYPE, inuse_objects, e->count_s);
	put_value_type(e, PF_SAMPLE_TYPE, e->inuse_space_s, e->bytes_s);
}

static void put_header(struct enc *e, const struct prof_profile *p)
{
	if (p->heap_rate) {
		put_heap_header(e);
		return;
	}
	e->samples_s = str_intern(&e->b, "samples");
	e->count_s = str_intern(&e->b, "count");
	e->cpu_s = str_intern(&e->b, "cpu");
	e->ns_s = str_intern(&e->b, "nanoseconds");
	put_value_type(e, PF_SAMPLE_TYPE, e->samples_s, e->count_s);
	put_value_type(e, PF_SAMPLE_TYPE, e->cpu_s, e->ns_s);
}

/* Encode the whole (uncompressed) Profile message into e->out. */
static int encode(struct enc *e, const struct prof_profile *p)
{
	put_header(e, p);
	if (put_samples(e, p))
		return e->b.err;
	put_mappings(e);
	put_locations(e);
	put_functions(e);
	proto_put_int64(&e->out, PF_TIME_NANOS, p->time_nanos);
	proto_put_int64(&e->out, PF_DURATION_NANOS, p->duration_nanos);
	if (p->heap_rate) {
		put_value_type(e, PF_PERIOD_TYPE, e->space_s, e->bytes_s);
		proto_put_int64(&e->out, PF_PERIOD, sat_i64(p->heap_rate));
	} else {
		put_value_type(e, PF_PERIOD_TYPE, e->cpu_s, e->ns_s);
		proto_put_int64(&e->out, PF_PERIOD, sat_i64(p->period_ns));
	}
	if (put_comments(e, p))
		return -ENOMEM;
	proto_put_int64(&e->out, PF_DEFAULT_SAMPLE_TYPE,
			!p->heap_rate		? e->cpu_s
			: p->heap_alloc_default ? e->alloc_space_s
						: e->inuse_space_s);
	for (size_t i = 0; i < e->b.nstrs; i++)
		proto_put_string(&e->out, PF_STRING_TABLE, e->b.strs[i]);
	if (e->b.err)
		return e->b.err;
	if (e->out.err || e->msg.err || e->sub.err)
		return -ENOMEM;
	return 0;
}

/* gzip @n bytes at @in into @out. */
static int gzip_buf(const uint8_t *in, size_t n, struct proto_buf *out)
{
	const size_t chunk = 1 << 16, max_in = 1u << 30;
	z_stream z;
	size_t pos = 0;
	uint8_t *room;
	int rc = Z_OK;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	do {
		if (!z.avail_in && pos < n) {
			z.next_in = (Bytef *)(uintptr_t)(in + pos);
			z.avail_in =
				(uInt)(n - pos < max_in ? n - pos : max_in);
			pos += z.avail_in;
		}
		room = proto_buf_room(out, chunk);
		if (!room)
			break;
		z.next_out = room;
		z.avail_out = (uInt)chunk;
		rc = deflate(&z, pos == n ? Z_FINISH : Z_NO_FLUSH);
		out->len += chunk - z.avail_out;
	} while (rc == Z_OK || rc == Z_BUF_ERROR);
	deflateEnd(&z);
	if (out->err)
		return out->err;
	return rc == Z_STREAM_END ? 0 : -EIO;
}

int prof_pprof_encode(const struct prof_profile *p, struct prof_symbolizer *s,
		      uint8_t **out, size_t *len)
{
	struct proto_buf gz = { 0 };
	struct enc e;
	int err;

	err = check_profile(p);
	if (err)
		return err;
	memset(&e, 0, sizeof(e));
	err = builder_init(&e.b, p, s);
	if (err)
		goto out;
	err = encode(&e, p);
	if (err)
		goto out;
	err = gzip_buf(e.out.data, e.out.len, &gz);
	if (err)
		goto out;
	*out = gz.data;
	*len = gz.len;
	gz.data = NULL;
out:
	proto_buf_free(&gz);
	proto_buf_free(&e.out);
	proto_buf_free(&e.msg);
	proto_buf_free(&e.sub);
	builder_free(&e.b);
	return err;
}

int prof_pprof_write(const struct prof_profile *p, struct prof_symbolizer *s,
		     const char *path)
{
	uint8_t *gz;
	size_t len;
	int err;

	if (!path)
		return -EINVAL;
	err = prof_pprof_encode(p, s, &gz, &len);
	if (err)
		return err;
	err = prof_outfile_write(path, gz, len);
	free(gz);
	return err;
}

/* Append @name to @text with ';' and newlines replaced. */
static void put_folded_name(struct proto_buf *text, const char *name)
{
	for (const char *c = name; *c; c++) {
		char ch = *c == ';' ? ':' : *c == '\n' || *c == '\r' ? ' ' : *c;

		proto_put_raw(text, &ch, 1);
	}
}

/*
 * Append the path of @ps, NUL-terminated, to @text; with @by_pid, rooted
 * at a "[pid N]" frame when its pid is known (a profile of several
 * processes: see the top of the file).
 */
static void put_folded_path(struct builder *b, struct proto_buf *text,
			    const struct prof_sample *ps, bool by_pid)
{
	char root[32];
	uint32_t loc;

	if (by_pid && ps->pid) {
		snprintf(root, sizeof(root), "[pid %u];", ps->pid);
		proto_put_raw(text, root, strlen(root));
	}
	if (ps->special)
		put_folded_name(text, ps->special);
	for (size_t i = ps->special ? 0 : ps->npcs; i-- > 0;) {
		loc = loc_intern(b, ps->space, frame_addr(ps, i), NULL);
		if (!loc)
			break;
		put_folded_name(text, func_name(b, b->locs[loc - 1].func));
		if (i)
			proto_put_raw(text, ";", 1);
	}
	proto_put_raw(text, "", 1);
}

struct folded_line {
	size_t off; /* of the path in the text */
	const char *path;
	uint64_t count;
};

static int line_cmp(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/* Sort the paths, add up equal ones, print "path count\n" lines (not 0). */
static int folded_text(struct folded_line *lines, size_t n,
		       struct proto_buf *out)
{
	char num[32];
	size_t i, j;

	qsort(lines, n, sizeof(*lines), line_cmp);
	for (i = 0; i < n; i = j) {
		uint64_t count = 0;

		for (j = i; j < n && !strcmp(lines[j].path, lines[i].path); j++)
			count += lines[j].count;
		if (!count)
			continue; /* a heap site with nothing in use */
		snprintf(num, sizeof(num), " %" PRIu64 "\n", count);
		proto_put_raw(out, lines[i].path, strlen(lines[i].path));
		proto_put_raw(out, num, strlen(num));
	}
	return out->err;
}

/* A folded line's weight: pprof's default sample type, in its units. */
static uint64_t folded_count(const struct prof_profile *p,
			     const struct prof_sample *ps)
{
	if (!p->heap_rate)
		return ps->periods;
	return ps->heap[p->heap_alloc_default ? PROF_HEAP_ALLOC_SPACE
					      : PROF_HEAP_INUSE_SPACE];
}

/* Every sample's path into @text, and a line for it into @*linesp. */
static int folded_paths(struct builder *b, const struct prof_profile *p,
			struct proto_buf *text, struct folded_line **linesp,
			size_t *nlines)
{
	struct folded_line *lines = calloc(p->nsamples + 1, sizeof(*lines));
	bool by_pid = false;
	uint32_t pid = 0;
	size_t n = 0;

	if (!lines)
		return -ENOMEM;
	/* Two distinct nonzero pids: several processes. */
	for (size_t i = 0; i < p->nsamples && !by_pid; i++) {
		uint32_t q = p->samples[i].pid;

		by_pid = q && pid && q != pid;
		pid = q ? q : pid;
	}
	*linesp = lines;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *ps = &p->samples[i];

		if (!ps->special && !ps->npcs)
			continue;
		lines[n].off = text->len;
		lines[n++].count = folded_count(p, ps);
		put_folded_path(b, text, ps, by_pid);
	}
	if (b->err || text->err)
		return b->err ? b->err : text->err;
	for (size_t i = 0; i < n; i++)
		lines[i].path = (const char *)text->data + lines[i].off;
	*nlines = n;
	return 0;
}

int prof_folded_write(const struct prof_profile *p, struct prof_symbolizer *s,
		      const char *path)
{
	struct proto_buf text = { 0 }, out = { 0 };
	struct folded_line *lines = NULL;
	struct builder b;
	size_t n = 0;
	int err;

	err = path ? check_profile(p) : -EINVAL;
	if (err)
		return err;
	err = builder_init(&b, p, s);
	if (err)
		goto out;
	err = folded_paths(&b, p, &text, &lines, &n);
	if (err)
		goto out;
	err = folded_text(lines, n, &out);
	if (err)
		goto out;
	err = prof_outfile_write(path, out.data, out.len);
out:
	free(lines);
	proto_buf_free(&text);
	proto_buf_free(&out);
	builder_free(&b);
	return err;
}
