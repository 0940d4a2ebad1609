// SPDX-License-Identifier: MIT
/*
 * decode.c - read a pprof profile.proto file (ours, Go's, anyone's) and
 * decode it into a checked struct pprof_doc (decode.h).
 *
 * Reading: zlib's gzread reads gzip'd and plain files alike; a gzip
 * stream that is corrupt (CRC) or ends early is -EBADMSG.
 *
 * Decoding happens in two passes.  The first walks the wire format
 * (pprof/proto.h, every read bounds-checked) and keeps every field of
 * interest of the tables in flat arrays, as the fields may come in any
 * order (the string table is usually last); samples are only counted.
 * Each message is a table of its known fields (struct field_spec: number,
 * kind, place), read by one loop, dec_fields().  Unknown fields are
 * skipped; a known field with the wrong wire type is malformed.  The
 * second checks references: string indices inside the table (whose entry
 * 0 is ""), nonzero unique ids of mappings, locations and functions, every
 * location's mapping and line function ids (0: none) existing; it turns
 * ids into indices (decode.h).  Then every sample is read, one at a time,
 * as pprof_doc_samples() reads them for the summary: its location ids must
 * exist, its labels' string indices be in the table, and it must have one
 * value per sample type.  Anything else is -EBADMSG, with the first
 * problem found as the message.
 *
 * Every array grows through pprof_vec_reserve(), which counts its growth
 * against the profile's memory limit (pprof_doc_charge()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof/decode.h"
#include "pprof/proto.h"
#include "pprof/report.h"
#include "pprof/table.h"

/* A decoding under way: the profile it fills, where its first error goes. */
struct dec {
	struct pprof_doc *doc;
	struct pprof_err *err;
};

int pprof_doc_charge(struct pprof_doc *doc, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes) ||
	    bytes > doc->mem_limit - doc->mem)
		return -EFBIG;
	doc->mem += bytes;
	return 0;
}

int pprof_vec_reserve(struct pprof_doc *doc, struct vec *v, size_t need,
		      size_t size, struct pprof_err *e)
{
	size_t cap = v->cap ? v->cap : 16;
	void *p;

	if (need <= v->cap)
		return 0;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			return pprof_err_nomem(e);
		cap *= 2;
	}
	if (pprof_doc_charge(doc, cap - v->cap, size))
		return pprof_err_big(e, doc);
	p = array_grow(v->data, &v->cap, need, size);
	if (!p)
		return pprof_err_nomem(e);
	v->data = p;
	return 0;
}

static int vec_reserve(struct dec *d, struct vec *v, size_t need, size_t size)
{
	return pprof_vec_reserve(d->doc, v, need, size, d->err);
}

/* Append an element, zeroed, to @v: *@e points to it. */
static int vec_push(struct dec *d, struct vec *v, size_t size, void **e)
{
	int err = vec_reserve(d, v, v->n + 1, size);

	*e = NULL;
	if (err)
		return err;
	*e = memset((char *)v->data + v->n++ * size, 0, size);
	return 0;
}

int pprof_err_bad(struct pprof_err *e, const char *fmt, ...)
{
	va_list ap;

	if (!e->failed && e->len) {
		va_start(ap, fmt);
		vsnprintf(e->msg, e->len, fmt, ap);
		va_end(ap);
	}
	e->failed = true;
	return -EBADMSG;
}

int pprof_err_nomem(struct pprof_err *e)
{
	if (!e->failed && e->len)
		snprintf(e->msg, e->len, "out of memory");
	e->failed = true;
	return -ENOMEM;
}

int pprof_err_big(struct pprof_err *e, const struct pprof_doc *doc)
{
	if (!e->failed && e->len)
		snprintf(e->msg, e->len,
			 "profile too large: summarizing its %zu bytes needs "
			 "over %zu MiB (the limit: %d bytes per byte + %d MiB)",
			 doc->rawlen, doc->mem_limit >> 20, DOC_MEM_PER_BYTE,
			 DOC_MEM_BASE_MIB);
	e->failed = true;
	return -EFBIG;
}

/* ---- pass one: the wire format ---- */

/* How a field's value is decoded, and where it goes. */
enum field_kind {
	FK_U64, /* a varint: the uint64_t at ->offset */
	FK_I64, /* a varint: the int64_t at ->offset */
	FK_BOOL, /* a varint: the bool at ->offset, true when nonzero */
	FK_UNUSED, /* a varint, not kept */
	FK_REPEATED, /* varints, packed or not: the struct vec (uint64_t) */
	FK_MESSAGE, /* length-delimited: its bytes go to ->sub */
};

/*
 * One field of a message: its number, its kind, the offset of its place
 * in the object decoded into (not for FK_MESSAGE) and its name in error
 * messages.
 */
struct field_spec {
	uint32_t num;
	enum field_kind kind;
	size_t offset;
	const char *name;
	int (*sub)(struct dec *d, struct proto_reader *r); /* FK_MESSAGE */
};

/* Table entries: a field at @member of @type; a message decoded by @fn. */
#define FIELD(num, kind, type, member, name)                  \
	{                                                     \
		num, kind, offsetof(type, member), name, NULL \
	}
#define SUBMSG(num, fn, name)                \
	{                                    \
		num, FK_MESSAGE, 0, name, fn \
	}
#define UNUSED(num, name)                     \
	{                                     \
		num, FK_UNUSED, 0, name, NULL \
	}

/* A repeated varint field, packed or not, appended to @v (uint64_t). */
static int rd_repeated(struct dec *d, struct proto_reader *r, enum proto_wire w,
		       struct vec *v, const char *what)
{
	struct proto_reader sub = { 0 };
	uint64_t x;
	void *e;
	int err;

	if (proto_read_repeated(r, w, &sub))
		return pprof_err_bad(d->err, "%s: bad repeated field", what);
	while (proto_more(&sub)) {
		if (proto_read_varint(&sub, &x))
			return pprof_err_bad(d->err, "%s: bad packed varint",
					     what);
		err = vec_push(d, v, sizeof(x), &e);
		if (err)
			return err;
		memcpy(e, &x, sizeof(x));
	}
	return 0;
}

/* The value of field @fs, whose key (wire type @w) was just read. */
static int dec_field(struct dec *d, struct proto_reader *r, enum proto_wire w,
		     const struct field_spec *fs, void *obj)
{
	char *p = (char *)obj + fs->offset;
	struct proto_reader sub = { 0 };
	uint64_t v;

	if (fs->kind == FK_REPEATED)
		return rd_repeated(d, r, w, (struct vec *)p, fs->name);
	if (fs->kind == FK_MESSAGE) {
		if (w != PROTO_LEN || proto_read_len(r, &sub))
			return pprof_err_bad(d->err,
					     "%s: bad length-delimited field",
					     fs->name);
		return fs->sub(d, &sub);
	}
	if (w != PROTO_VARINT || proto_read_varint(r, &v))
		return pprof_err_bad(d->err, "%s: bad varint", fs->name);
	if (fs->kind == FK_U64)
		*(uint64_t *)p = v;
	else if (fs->kind == FK_I64)
		*(int64_t *)p = (int64_t)v;
	else if (fs->kind == FK_BOOL)
		*(bool *)p = v != 0;
	return 0;
}

/*
 * Decode the fields of message @msg in @r into @obj: those in @fields (up
 * to an entry with number 0), skipping the others.  If @seen, set bit n of
 * *@seen for each field number n < 64 met.
 */
static int dec_fields(struct dec *d, struct proto_reader *r, const char *msg,
		      const struct field_spec *fields, void *obj,
		      uint64_t *seen)
{
	const struct field_spec *fs;
	enum proto_wire w;
	uint32_t f;
	int err = 0;

	while (!err && proto_more(r)) {
		if (proto_read_key(r, &f, &w))
			return pprof_err_bad(d->err, "%s: bad field key", msg);
		for (fs = fields; fs->num && fs->num != f; fs++)
			;
		if (fs->num)
			err = dec_field(d, r, w, fs, obj);
		else if (proto_skip(r, f, w))
			err = pprof_err_bad(d->err, "%s: bad field %" PRIu32,
					    msg, f);
		if (seen && f < 64)
			*seen |= 1ull << f;
	}
	return err;
}

/* Append a copy of the @size bytes at @e to @v. */
static int vec_add(struct dec *d, struct vec *v, const void *e, size_t size)
{
	void *p;
	int err = vec_push(d, v, size, &p);

	if (!err)
		memcpy(p, e, size);
	return err;
}

/* Decode message @msg into a new element of @v (@size bytes). */
static int dec_elem(struct dec *d, struct proto_reader *r, struct vec *v,
		    size_t size, const char *msg,
		    const struct field_spec *fields)
{
	void *e;
	int err = vec_push(d, v, size, &e);

	return err ? err : dec_fields(d, r, msg, fields, e, NULL);
}

static const struct field_spec value_type_fields[] = {
	FIELD(1, FK_I64, struct d_vt, type, "value type.type"),
	FIELD(2, FK_I64, struct d_vt, unit, "value type.unit"),
	{ 0 },
};

static const struct field_spec label_fields[] = {
	FIELD(1, FK_I64, struct d_label, key, "label.key"),
	FIELD(2, FK_I64, struct d_label, str, "label.str"),
	FIELD(3, FK_I64, struct d_label, num, "label.num"),
	FIELD(4, FK_I64, struct d_label, num_unit, "label.num_unit"),
	{ 0 },
};

static int dec_label(struct dec *d, struct proto_reader *r)
{
	struct d_label *l;
	uint64_t seen = 0;
	int err = vec_push(d, &d->doc->s_labels, sizeof(*l), (void **)&l);

	if (err)
		return err;
	err = dec_fields(d, r, "label", label_fields, l, &seen);
	l->has_num = seen >> 3 & 1; /* label.num */
	return err;
}

/*
 * The sample being read: its repeated fields go to the profile's arrays
 * for it (s_locs gets uint64_t ids, which checking turns into indices).
 */
static const struct field_spec sample_fields[] = {
	FIELD(1, FK_REPEATED, struct pprof_doc, s_locs, "sample.location_id"),
	FIELD(2, FK_REPEATED, struct pprof_doc, s_vals, "sample.value"),
	SUBMSG(3, dec_label, "sample.label"),
	{ 0 },
};

/* Pass one counts the samples; pprof_doc_samples() reads them. */
static int count_sample(struct dec *d, struct proto_reader *r)
{
	(void)r;
	d->doc->nsamples++;
	return 0;
}

static const struct field_spec mapping_fields[] = {
	FIELD(1, FK_U64, struct d_map, id, "mapping.id"),
	FIELD(2, FK_U64, struct d_map, start, "mapping.memory_start"),
	FIELD(3, FK_U64, struct d_map, limit, "mapping.memory_limit"),
	FIELD(4, FK_U64, struct d_map, offset, "mapping.file_offset"),
	FIELD(5, FK_I64, struct d_map, filename, "mapping.filename"),
	FIELD(6, FK_I64, struct d_map, build_id, "mapping.build_id"),
	FIELD(7, FK_BOOL, struct d_map, has_functions, "mapping.has_functions"),
	{ 0 },
};

static int dec_mapping(struct dec *d, struct proto_reader *r)
{
	struct d_map m = { 0 };
	int err = dec_fields(d, r, "mapping", mapping_fields, &m, NULL);

	return err ? err : vec_add(d, &d->doc->maps, &m, sizeof(m));
}

static const struct field_spec line_fields[] = {
	FIELD(1, FK_U64, struct d_line, function_id, "line.function_id"),
	FIELD(2, FK_I64, struct d_line, line, "line.line"),
	{ 0 },
};

static int dec_line(struct dec *d, struct proto_reader *r)
{
	return dec_elem(d, r, &d->doc->lines, sizeof(struct d_line), "line",
			line_fields);
}

static const struct field_spec location_fields[] = {
	FIELD(1, FK_U64, struct d_loc, id, "location.id"),
	FIELD(2, FK_U64, struct d_loc, mapping_id, "location.mapping_id"),
	FIELD(3, FK_U64, struct d_loc, address, "location.address"),
	SUBMSG(4, dec_line, "location.line"),
	{ 0 },
};

static int dec_location(struct dec *d, struct proto_reader *r)
{
	struct d_loc l = { .line0 = d->doc->lines.n };
	int err = dec_fields(d, r, "location", location_fields, &l, NULL);

	l.nline = d->doc->lines.n - l.line0;
	return err ? err : vec_add(d, &d->doc->locs, &l, sizeof(l));
}

static const struct field_spec function_fields[] = {
	FIELD(1, FK_U64, struct d_func, id, "function.id"),
	FIELD(2, FK_I64, struct d_func, name, "function.name"),
	FIELD(3, FK_I64, struct d_func, system_name, "function.system_name"),
	FIELD(4, FK_I64, struct d_func, filename, "function.filename"),
	UNUSED(5, "function.start_line"),
	{ 0 },
};

static int dec_function(struct dec *d, struct proto_reader *r)
{
	return dec_elem(d, r, &d->doc->funcs, sizeof(struct d_func), "function",
			function_fields);
}

static int dec_sample_type(struct dec *d, struct proto_reader *r)
{
	return dec_elem(d, r, &d->doc->stypes, sizeof(struct d_vt),
			"value type", value_type_fields);
}

static int dec_period_type(struct dec *d, struct proto_reader *r)
{
	return dec_fields(d, r, "value type", value_type_fields,
			  &d->doc->period_type, NULL);
}

/*
 * A string_table entry: @r's bytes, NUL-terminated, appended to the text;
 * its offset there to the table.  The text is less than twice the message
 * (one NUL per string of at least two bytes of it), which
 * PROF_PROFILE_MAX keeps under 4 GiB.
 */
static int dec_string(struct dec *d, struct proto_reader *r)
{
	struct vec *text = &d->doc->text;
	uint32_t off = (uint32_t)text->n;
	int err;

	err = vec_reserve(d, text, text->n + r->len + 1, 1);
	if (!err)
		err = vec_add(d, &d->doc->strs, &off, sizeof(off));
	if (err)
		return err;
	if (r->len)
		memcpy((char *)text->data + text->n, r->p, r->len);
	((char *)text->data)[text->n + r->len] = '\0';
	text->n += r->len + 1;
	return 0;
}

static const struct field_spec profile_fields[] = {
	SUBMSG(1, dec_sample_type, "sample_type"),
	SUBMSG(2, count_sample, "sample"),
	SUBMSG(3, dec_mapping, "mapping"),
	SUBMSG(4, dec_location, "location"),
	SUBMSG(5, dec_function, "function"),
	SUBMSG(6, dec_string, "string_table"),
	FIELD(7, FK_I64, struct pprof_doc, drop, "drop_frames"),
	FIELD(8, FK_I64, struct pprof_doc, keep, "keep_frames"),
	FIELD(9, FK_I64, struct pprof_doc, time_nanos, "time_nanos"),
	FIELD(10, FK_I64, struct pprof_doc, duration_nanos, "duration_nanos"),
	SUBMSG(11, dec_period_type, "period_type"),
	FIELD(12, FK_I64, struct pprof_doc, period, "period"),
	FIELD(13, FK_REPEATED, struct pprof_doc, comments, "comment"),
	FIELD(14, FK_I64, struct pprof_doc, default_st, "default_sample_type"),
	{ 0 },
};

static int dec_profile(struct dec *d, const void *data, size_t len)
{
	struct proto_reader r;

	proto_reader_init(&r, data, len);
	return dec_fields(d, &r, "profile", profile_fields, d->doc, NULL);
}

/* ---- pass two: the references ---- */

static int check_str(struct dec *d, int64_t i, const char *what)
{
	if (i < 0 || (uint64_t)i >= d->doc->strs.n)
		return pprof_err_bad(
			d->err, "%s: string index %" PRId64 " out of range",
			what, i);
	return 0;
}

/* @n zeroed elements of @size bytes, counted against the limit, or NULL. */
static void *doc_calloc(struct dec *d, size_t n, size_t size, int *err)
{
	void *p = NULL;

	*err = 0;
	if (pprof_doc_charge(d->doc, n + 1, size))
		*err = pprof_err_big(d->err, d->doc);
	else if (!(p = calloc(n + 1, size)))
		*err = pprof_err_nomem(d->err);
	return p;
}

static int id_cmp(const void *a, const void *b)
{
	const struct d_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Sorted (id, index) pairs of @n elements of @size bytes whose uint64_t
 * id is first; ids must be nonzero and unique.
 */
static int id_index(struct dec *d, const struct vec *v, size_t size,
		    struct d_id **out, const char *what)
{
	int err;
	struct d_id *ix = doc_calloc(d, v->n, sizeof(*ix), &err);

	*out = ix;
	if (!ix)
		return err;
	for (size_t i = 0; i < v->n; i++) {
		memcpy(&ix[i].id, (const char *)v->data + i * size,
		       sizeof(uint64_t));
		ix[i].idx = i;
		if (!ix[i].id)
			return pprof_err_bad(d->err, "%s with id 0", what);
	}
	qsort(ix, v->n, sizeof(*ix), id_cmp);
	for (size_t i = 1; i < v->n; i++)
		if (ix[i].id == ix[i - 1].id)
			return pprof_err_bad(d->err, "two %ss with id %" PRIu64,
					     what, ix[i].id);
	return 0;
}

/* Index of @id in @ix, or DOC_NONE. */
static size_t id_find(const struct d_id *ix, size_t n, uint64_t id)
{
	struct d_id key = { .id = id }, *e;

	e = bsearch(&key, ix, n, sizeof(*ix), id_cmp);
	return e ? e->idx : DOC_NONE;
}

/* Each of the @n string indices at @idx is in the table. */
static int check_strs(struct dec *d, const int64_t *idx, size_t n,
		      const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (check_str(d, idx[i], what))
			return -EBADMSG;
	return 0;
}

static int check_header(struct dec *d)
{
	struct pprof_doc *doc = d->doc;
	const int64_t refs[] = { doc->period_type.type, doc->period_type.unit,
				 doc->default_st, doc->drop, doc->keep };

	if (!doc->strs.n || doc_str(doc, 0)[0])
		return pprof_err_bad(d->err, "string_table[0] is not \"\"");
	if (!doc->stypes.n)
		return pprof_err_bad(d->err, "no sample_type");
	for (size_t i = 0; i < doc->stypes.n; i++) {
		const struct d_vt *vt = &VEC_AT(doc->stypes, struct d_vt, i);
		const int64_t vrefs[] = { vt->type, vt->unit };

		if (check_strs(d, vrefs, 2, "sample_type"))
			return -EBADMSG;
	}
	if (check_strs(d, doc->comments.data, doc->comments.n, "comment"))
		return -EBADMSG;
	return check_strs(d, refs, 5, "profile");
}

static int check_funcs(struct dec *d)
{
	for (size_t i = 0; i < d->doc->funcs.n; i++) {
		const struct d_func *f =
			&VEC_AT(d->doc->funcs, struct d_func, i);
		const int64_t refs[] = { f->name, f->system_name, f->filename };

		if (check_strs(d, refs, 3, "function"))
			return -EBADMSG;
	}
	return 0;
}

static int check_maps(struct dec *d)
{
	for (size_t i = 0; i < d->doc->maps.n; i++) {
		const struct d_map *m = &VEC_AT(d->doc->maps, struct d_map, i);
		const int64_t refs[] = { m->filename, m->build_id };

		if (check_strs(d, refs, 2, "mapping"))
			return -EBADMSG;
	}
	return 0;
}

/* Resolve the location's mapping and its lines' functions. */
static int check_loc(struct dec *d, struct d_loc *l, const struct d_id *mix,
		     const struct d_id *fix)
{
	struct pprof_doc *doc = d->doc;

	l->map = l->mapping_id ? id_find(mix, doc->maps.n, l->mapping_id)
			       : DOC_NONE;
	if (l->mapping_id && l->map == DOC_NONE)
		return pprof_err_bad(
			d->err, "location %" PRIu64 ": no mapping %" PRIu64,
			l->id, l->mapping_id);
	for (size_t k = 0; k < l->nline; k++) {
		struct d_line *ln =
			&VEC_AT(doc->lines, struct d_line, l->line0 + k);

		ln->func = ln->function_id
				   ? id_find(fix, doc->funcs.n, ln->function_id)
				   : DOC_NONE;
		if (ln->function_id && ln->func == DOC_NONE)
			return pprof_err_bad(d->err,
					     "location %" PRIu64
					     ": no function %" PRIu64,
					     l->id, ln->function_id);
	}
	return 0;
}

static int check_locs(struct dec *d)
{
	struct d_id *mix = NULL, *fix = NULL;
	struct pprof_doc *doc = d->doc;
	int err;

	err = id_index(d, &doc->maps, sizeof(struct d_map), &mix, "mapping");
	if (!err)
		err = id_index(d, &doc->funcs, sizeof(struct d_func), &fix,
			       "function");
	for (size_t i = 0; !err && i < doc->locs.n; i++)
		err = check_loc(d, &VEC_AT(doc->locs, struct d_loc, i), mix,
				fix);
	free(mix);
	free(fix);
	return err;
}

/* The locations' ids, which samples refer to, in doc->loc_ix. */
static int check_loc_ids(struct dec *d)
{
	return id_index(d, &d->doc->locs, sizeof(struct d_loc), &d->doc->loc_ix,
			"location");
}

/*
 * Read the sample in @r into the profile's arrays for it and check it: @s
 * points to them, its location ids turned into indices.
 */
static int read_sample(struct dec *d, struct proto_reader *r,
		       struct d_sample *s)
{
	struct pprof_doc *doc = d->doc;
	uint64_t *loc;
	int err;

	doc->s_locs.n = 0;
	doc->s_vals.n = 0;
	doc->s_labels.n = 0;
	err = dec_fields(d, r, "sample", sample_fields, doc, NULL);
	if (err)
		return err;
	if (doc->s_vals.n != doc->stypes.n)
		return pprof_err_bad(
			d->err, "a sample has %zu values for %zu sample types",
			doc->s_vals.n, doc->stypes.n);
	loc = doc->s_locs.data;
	for (size_t k = 0; k < doc->s_locs.n; k++) {
		size_t i = id_find(doc->loc_ix, doc->locs.n, loc[k]);

		if (i == DOC_NONE)
			return pprof_err_bad(
				d->err,
				"a sample has unknown location %" PRIu64,
				loc[k]);
		loc[k] = i;
	}
	for (size_t k = 0; k < doc->s_labels.n; k++) {
		const struct d_label *l =
			&VEC_AT(doc->s_labels, struct d_label, k);
		const int64_t refs[] = { l->key, l->str, l->num_unit };

		if (check_strs(d, refs, 3, "label"))
			return -EBADMSG;
	}
	*s = (struct d_sample){
		.locs = loc,
		.nloc = doc->s_locs.n,
		.vals = doc->s_vals.data,
		.nval = doc->s_vals.n,
		.labels = doc->s_labels.data,
		.nlab = doc->s_labels.n,
	};
	return 0;
}

int pprof_doc_samples(struct pprof_doc *doc,
		      int (*fn)(void *arg, const struct d_sample *s), void *arg,
		      struct pprof_err *e)
{
	struct dec d = { .doc = doc, .err = e };
	struct proto_reader r, sub;
	struct d_sample s;
	enum proto_wire w;
	uint32_t f;
	int err = 0;

	proto_reader_init(&r, doc->raw, doc->rawlen);
	while (!err && proto_more(&r)) {
		if (proto_read_key(&r, &f, &w))
			return pprof_err_bad(e, "profile: bad field key");
		if (f != 2) {
			if (proto_skip(&r, f, w))
				return pprof_err_bad(
					e, "profile: bad field %" PRIu32, f);
			continue;
		}
		if (w != PROTO_LEN || proto_read_len(&r, &sub))
			return pprof_err_bad(
				e, "sample: bad length-delimited field");
		err = read_sample(&d, &sub, &s);
		if (!err && fn)
			err = fn(arg, &s);
	}
	return err;
}

static int check_samples(struct dec *d)
{
	return pprof_doc_samples(d->doc, NULL, NULL, d->err);
}

static int check_profile(struct dec *d)
{
	static int (*const checks[])(struct dec *) = {
		check_header, check_funcs,   check_maps,
		check_locs,   check_loc_ids, check_samples,
	};
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(checks) / sizeof(checks[0]); i++)
		err = checks[i](d);
	return err;
}

void pprof_doc_free(struct pprof_doc *doc)
{
	free(doc->text.data);
	free(doc->strs.data);
	free(doc->stypes.data);
	free(doc->maps.data);
	free(doc->locs.data);
	free(doc->lines.data);
	free(doc->funcs.data);
	free(doc->comments.data);
	free(doc->loc_ix);
	free(doc->s_locs.data);
	free(doc->s_vals.data);
	free(doc->s_labels.data);
}

int pprof_doc_decode(struct pprof_doc *doc, const void *data, size_t len,
		     struct pprof_err *e)
{
	struct dec d = { .doc = doc, .err = e };
	int rc;

	doc->raw = data;
	doc->rawlen = data ? len : 0;
	doc->mem_limit = DOC_MEM_PER_BYTE * doc->rawlen +
			 ((size_t)DOC_MEM_BASE_MIB << 20);
	if (doc->rawlen > PROF_PROFILE_MAX) {
		if (!e->failed && e->len)
			snprintf(e->msg, e->len,
				 "profile too large: %zu bytes (the limit: "
				 "%u MiB)",
				 len, PROF_PROFILE_MAX >> 20);
		e->failed = true;
		return -EFBIG;
	}
	rc = dec_profile(&d, data, len);
	return rc ? rc : check_profile(&d);
}

/* ---- reading files ---- */

/*
 * gzread everything into @buf, up to one byte past PROF_PROFILE_MAX (a
 * profile past it is refused); then look at how the stream ended.
 */
static int gz_slurp(gzFile gz, struct proto_buf *buf)
{
	const size_t chunk = 1 << 16;
	size_t want;
	uint8_t *room;
	int n, errnum;

	do {
		if (buf->len > PROF_PROFILE_MAX)
			return -EFBIG;
		want = (size_t)PROF_PROFILE_MAX + 1 - buf->len;
		want = want < chunk ? want : chunk;
		room = proto_buf_room(buf, want);
		if (!room)
			return -ENOMEM;
		n = gzread(gz, room, (unsigned int)want);
		if (n > 0)
			buf->len += (size_t)n;
	} while (n > 0);
	gzerror(gz, &errnum);
	if (errnum == Z_ERRNO)
		return errno ? -errno : -EIO;
	if (errnum == Z_MEM_ERROR)
		return -ENOMEM;
	return n < 0 || errnum != Z_OK ? -EBADMSG : 0;
}

int prof_read_file(const char *path, uint8_t **data, size_t *len)
{
	struct proto_buf buf = { 0 };
	gzFile gz;
	int err;

	*data = NULL;
	*len = 0;
	errno = 0;
	gz = gzopen(path, "rb");
	if (!gz)
		return errno ? -errno : -ENOMEM;
	err = gz_slurp(gz, &buf);
	gzclose_r(gz);
	if (err) {
		proto_buf_free(&buf);
		return err;
	}
	*data = buf.data;
	*len = buf.len;
	return 0;
}
