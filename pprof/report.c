// SPDX-License-Identifier: MIT
/*
 * report.c - decode a pprof profile.proto (ours, Go's, anyone's) and print
 * a `go tool pprof -top`-like report.
 *
 * Reading: zlib's gzread reads gzip'd and plain files alike; a gzip
 * stream that is corrupt (CRC) or ends early is -EBADMSG.
 *
 * Decoding happens in two passes.  The first walks the wire format
 * (pprof/proto.h, every read bounds-checked) and keeps every field of
 * interest in flat arrays, as the fields may come in any order (the string
 * table is usually last).  Each message is a table of its known fields
 * (struct field_spec: number, kind, place), read by one loop, dec_fields().
 * Unknown fields are skipped; a known field with the wrong wire type is
 * malformed.  The second checks references: string
 * indices inside the table (whose entry 0 is ""), nonzero unique ids of
 * mappings, locations and functions, every sample's location ids and
 * every location's mapping and line function ids (0: none) existing, and
 * one value per sample type in every sample.  Anything else is -EBADMSG,
 * with the first problem found as the message.
 *
 * Summary: the frames of a sample are its locations leaf first and, within
 * a location, its lines in order (line[0] is the innermost inlined
 * function).  A frame is named by its function's name (its system name if
 * the name is empty), or "0x<address>" when its location has no line or
 * the line no named function.  Frames are grouped by name: a sample's
 * value goes to the flat value of its first frame and, once per sample,
 * to the cum value of every name among its frames.  Sums saturate instead
 * of overflowing.
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

#include "pprof/proto.h"
#include "pprof/report.h"

#define MAX_FILE (1ull << 30)
#define NONE SIZE_MAX

/* A growable array of elements of one size. */
struct vec {
	void *data;
	size_t n, cap;
};

/* Append a zeroed element; return it, or NULL. */
static void *vec_push(struct vec *v, size_t size)
{
	char *e;

	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 8;
		void *p;

		if (cap > SIZE_MAX / size)
			return NULL;
		p = realloc(v->data, cap * size);
		if (!p)
			return NULL;
		v->data = p;
		v->cap = cap;
	}
	e = (char *)v->data + v->n++ * size;
	memset(e, 0, size);
	return e;
}

struct d_vt {
	int64_t type, unit;
};

struct d_label {
	int64_t key, str, num, num_unit;
	bool has_num;
};

struct d_sample {
	size_t loc0, nloc; /* in pb.sample_locs */
	size_t val0, nval; /* in pb.values */
	size_t lab0, nlab; /* in pb.labels */
};

struct d_map {
	uint64_t id, start, limit, offset;
	int64_t filename, build_id;
	bool has_functions;
};

struct d_line {
	uint64_t function_id;
	int64_t line;
	size_t func; /* index, NONE for function_id 0 */
};

struct d_loc {
	uint64_t id, mapping_id, address;
	size_t line0, nline; /* in pb.lines */
	size_t map; /* index, NONE for mapping_id 0 */
};

struct d_func {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
};

/* The profile as decoded: the pass-one arrays. */
struct pb {
	struct vec strs; /* char * */
	struct vec stypes; /* struct d_vt */
	struct vec samples; /* struct d_sample */
	struct vec sample_locs; /* uint64_t: ids, then location indices */
	struct vec values; /* int64_t */
	struct vec labels; /* struct d_label */
	struct vec maps; /* struct d_map */
	struct vec locs; /* struct d_loc */
	struct vec lines; /* struct d_line */
	struct vec funcs; /* struct d_func */
	struct vec comments; /* int64_t */
	struct d_vt period_type;
	int64_t period, time_nanos, duration_nanos, default_st, drop, keep;
};

struct dec {
	struct pb *pb;
	char *err;
	size_t errlen;
	bool failed;
};

#define AT(v, type, i) (((type *)(v).data)[i])

/* Record the first problem; return -EBADMSG. */
__attribute__((format(printf, 2, 3))) static int bad(struct dec *d,
						     const char *fmt, ...)
{
	va_list ap;

	if (!d->failed && d->errlen) {
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	d->failed = true;
	return -EBADMSG;
}

static int nomem(struct dec *d)
{
	if (!d->failed && d->errlen)
		snprintf(d->err, d->errlen, "out of memory");
	d->failed = true;
	return -ENOMEM;
}

/* ---- pass one: the wire format ---- */

/* How a field's value is decoded, and where it goes. */
enum field_kind {
	FK_U64, /* a varint: the uint64_t at ->offset */
	FK_I64, /* a varint: the int64_t at ->offset */
	FK_BOOL, /* a varint: the bool at ->offset, true when nonzero */
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

/* A repeated varint field, packed or not, appended to @v (uint64_t). */
static int rd_repeated(struct dec *d, struct proto_reader *r, enum proto_wire w,
		       struct vec *v, const char *what)
{
	struct proto_reader sub = { 0 };
	uint64_t x, *e;

	if (proto_read_repeated(r, w, &sub))
		return bad(d, "%s: bad repeated field", what);
	while (proto_more(&sub)) {
		if (proto_read_varint(&sub, &x))
			return bad(d, "%s: bad packed varint", what);
		e = vec_push(v, sizeof(*e));
		if (!e)
			return nomem(d);
		*e = x;
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
			return bad(d, "%s: bad length-delimited field",
				   fs->name);
		return fs->sub(d, &sub);
	}
	if (w != PROTO_VARINT || proto_read_varint(r, &v))
		return bad(d, "%s: bad varint", fs->name);
	if (fs->kind == FK_U64)
		*(uint64_t *)p = v;
	else if (fs->kind == FK_I64)
		*(int64_t *)p = (int64_t)v;
	else
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
			return bad(d, "%s: bad field key", msg);
		for (fs = fields; fs->num && fs->num != f; fs++)
			;
		if (fs->num)
			err = dec_field(d, r, w, fs, obj);
		else if (proto_skip(r, f, w))
			err = bad(d, "%s: bad field %" PRIu32, msg, f);
		if (seen && f < 64)
			*seen |= 1ull << f;
	}
	return err;
}

/* Append a copy of the @size bytes at @e to @v. */
static int vec_add(struct dec *d, struct vec *v, const void *e, size_t size)
{
	void *p = vec_push(v, size);

	if (!p)
		return nomem(d);
	memcpy(p, e, size);
	return 0;
}

/* Decode message @msg into a new element of @v (@size bytes). */
static int dec_elem(struct dec *d, struct proto_reader *r, struct vec *v,
		    size_t size, const char *msg,
		    const struct field_spec *fields)
{
	void *e = vec_push(v, size);

	return e ? dec_fields(d, r, msg, fields, e, NULL) : nomem(d);
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
	struct d_label *l = vec_push(&d->pb->labels, sizeof(*l));
	uint64_t seen = 0;
	int err;

	if (!l)
		return nomem(d);
	err = dec_fields(d, r, "label", label_fields, l, &seen);
	l->has_num = seen >> 3 & 1; /* label.num */
	return err;
}

/* The repeated fields go to the profile's arrays. */
static const struct field_spec sample_fields[] = {
	FIELD(1, FK_REPEATED, struct pb, sample_locs, "sample.location_id"),
	FIELD(2, FK_REPEATED, struct pb, values, "sample.value"),
	SUBMSG(3, dec_label, "sample.label"),
	{ 0 },
};

static int dec_sample(struct dec *d, struct proto_reader *r)
{
	struct pb *pb = d->pb;
	struct d_sample s = { .loc0 = pb->sample_locs.n,
			      .val0 = pb->values.n,
			      .lab0 = pb->labels.n };
	int err = dec_fields(d, r, "sample", sample_fields, pb, NULL);

	s.nloc = pb->sample_locs.n - s.loc0;
	s.nval = pb->values.n - s.val0;
	s.nlab = pb->labels.n - s.lab0;
	return err ? err : vec_add(d, &pb->samples, &s, sizeof(s));
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

	return err ? err : vec_add(d, &d->pb->maps, &m, sizeof(m));
}

static const struct field_spec line_fields[] = {
	FIELD(1, FK_U64, struct d_line, function_id, "line.function_id"),
	FIELD(2, FK_I64, struct d_line, line, "line.line"),
	{ 0 },
};

static int dec_line(struct dec *d, struct proto_reader *r)
{
	return dec_elem(d, r, &d->pb->lines, sizeof(struct d_line), "line",
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
	struct d_loc l = { .line0 = d->pb->lines.n };
	int err = dec_fields(d, r, "location", location_fields, &l, NULL);

	l.nline = d->pb->lines.n - l.line0;
	return err ? err : vec_add(d, &d->pb->locs, &l, sizeof(l));
}

static const struct field_spec function_fields[] = {
	FIELD(1, FK_U64, struct d_func, id, "function.id"),
	FIELD(2, FK_I64, struct d_func, name, "function.name"),
	FIELD(3, FK_I64, struct d_func, system_name, "function.system_name"),
	FIELD(4, FK_I64, struct d_func, filename, "function.filename"),
	FIELD(5, FK_I64, struct d_func, start_line, "function.start_line"),
	{ 0 },
};

static int dec_function(struct dec *d, struct proto_reader *r)
{
	return dec_elem(d, r, &d->pb->funcs, sizeof(struct d_func), "function",
			function_fields);
}

static int dec_sample_type(struct dec *d, struct proto_reader *r)
{
	return dec_elem(d, r, &d->pb->stypes, sizeof(struct d_vt), "value type",
			value_type_fields);
}

static int dec_period_type(struct dec *d, struct proto_reader *r)
{
	return dec_fields(d, r, "value type", value_type_fields,
			  &d->pb->period_type, NULL);
}

/* A string_table entry: @r's bytes, NUL-terminated. */
static int dec_string(struct dec *d, struct proto_reader *r)
{
	char *s = malloc(r->len + 1), **e;

	e = s ? vec_push(&d->pb->strs, sizeof(*e)) : NULL;
	if (!e) {
		free(s);
		return nomem(d);
	}
	if (r->len)
		memcpy(s, r->p, r->len);
	s[r->len] = '\0';
	*e = s;
	return 0;
}

static const struct field_spec profile_fields[] = {
	SUBMSG(1, dec_sample_type, "sample_type"),
	SUBMSG(2, dec_sample, "sample"),
	SUBMSG(3, dec_mapping, "mapping"),
	SUBMSG(4, dec_location, "location"),
	SUBMSG(5, dec_function, "function"),
	SUBMSG(6, dec_string, "string_table"),
	FIELD(7, FK_I64, struct pb, drop, "drop_frames"),
	FIELD(8, FK_I64, struct pb, keep, "keep_frames"),
	FIELD(9, FK_I64, struct pb, time_nanos, "time_nanos"),
	FIELD(10, FK_I64, struct pb, duration_nanos, "duration_nanos"),
	SUBMSG(11, dec_period_type, "period_type"),
	FIELD(12, FK_I64, struct pb, period, "period"),
	FIELD(13, FK_REPEATED, struct pb, comments, "comment"),
	FIELD(14, FK_I64, struct pb, default_st, "default_sample_type"),
	{ 0 },
};

static int dec_profile(struct dec *d, const void *data, size_t len)
{
	struct proto_reader r;

	proto_reader_init(&r, data, len);
	return dec_fields(d, &r, "profile", profile_fields, d->pb, NULL);
}

/* ---- pass two: the references ---- */

static int check_str(struct dec *d, int64_t i, const char *what)
{
	if (i < 0 || (uint64_t)i >= d->pb->strs.n)
		return bad(d, "%s: string index %" PRId64 " out of range", what,
			   i);
	return 0;
}

static const char *str(const struct pb *pb, int64_t i)
{
	return AT(pb->strs, char *, i);
}

struct id_ent {
	uint64_t id;
	size_t idx;
};

static int id_cmp(const void *a, const void *b)
{
	const struct id_ent *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Sorted (id, index) pairs of @n elements of @size bytes whose uint64_t
 * id is first; ids must be nonzero and unique.
 */
static int id_index(struct dec *d, const struct vec *v, size_t size,
		    struct id_ent **out, const char *what)
{
	struct id_ent *ix = calloc(v->n + 1, sizeof(*ix));

	*out = ix;
	if (!ix)
		return nomem(d);
	for (size_t i = 0; i < v->n; i++) {
		memcpy(&ix[i].id, (const char *)v->data + i * size,
		       sizeof(uint64_t));
		ix[i].idx = i;
		if (!ix[i].id)
			return bad(d, "%s with id 0", what);
	}
	qsort(ix, v->n, sizeof(*ix), id_cmp);
	for (size_t i = 1; i < v->n; i++)
		if (ix[i].id == ix[i - 1].id)
			return bad(d, "two %ss with id %" PRIu64, what,
				   ix[i].id);
	return 0;
}

/* Index of @id in @ix, or NONE. */
static size_t id_find(const struct id_ent *ix, size_t n, uint64_t id)
{
	struct id_ent key = { .id = id }, *e;

	e = bsearch(&key, ix, n, sizeof(*ix), id_cmp);
	return e ? e->idx : NONE;
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
	struct pb *pb = d->pb;
	const int64_t refs[] = { pb->period_type.type, pb->period_type.unit,
				 pb->default_st, pb->drop, pb->keep };

	if (!pb->strs.n || str(pb, 0)[0])
		return bad(d, "string_table[0] is not \"\"");
	if (!pb->stypes.n)
		return bad(d, "no sample_type");
	for (size_t i = 0; i < pb->stypes.n; i++) {
		const struct d_vt *vt = &AT(pb->stypes, struct d_vt, i);
		const int64_t vrefs[] = { vt->type, vt->unit };

		if (check_strs(d, vrefs, 2, "sample_type"))
			return -EBADMSG;
	}
	if (check_strs(d, pb->comments.data, pb->comments.n, "comment"))
		return -EBADMSG;
	return check_strs(d, refs, 5, "profile");
}

static int check_funcs(struct dec *d)
{
	for (size_t i = 0; i < d->pb->funcs.n; i++) {
		const struct d_func *f = &AT(d->pb->funcs, struct d_func, i);
		const int64_t refs[] = { f->name, f->system_name, f->filename };

		if (check_strs(d, refs, 3, "function"))
			return -EBADMSG;
	}
	return 0;
}

static int check_maps(struct dec *d)
{
	for (size_t i = 0; i < d->pb->maps.n; i++) {
		const struct d_map *m = &AT(d->pb->maps, struct d_map, i);
		const int64_t refs[] = { m->filename, m->build_id };

		if (check_strs(d, refs, 2, "mapping"))
			return -EBADMSG;
	}
	return 0;
}

/* Resolve the location's mapping and its lines' functions. */
static int check_loc(struct dec *d, struct d_loc *l, const struct id_ent *mix,
		     const struct id_ent *fix)
{
	struct pb *pb = d->pb;

	l->map = l->mapping_id ? id_find(mix, pb->maps.n, l->mapping_id) : NONE;
	if (l->mapping_id && l->map == NONE)
		return bad(d, "location %" PRIu64 ": no mapping %" PRIu64,
			   l->id, l->mapping_id);
	for (size_t k = 0; k < l->nline; k++) {
		struct d_line *ln = &AT(pb->lines, struct d_line, l->line0 + k);

		ln->func = ln->function_id
				   ? id_find(fix, pb->funcs.n, ln->function_id)
				   : NONE;
		if (ln->function_id && ln->func == NONE)
			return bad(d,
				   "location %" PRIu64 ": no function %" PRIu64,
				   l->id, ln->function_id);
	}
	return 0;
}

static int check_locs(struct dec *d)
{
	struct id_ent *mix = NULL, *fix = NULL;
	struct pb *pb = d->pb;
	int err;

	err = id_index(d, &pb->maps, sizeof(struct d_map), &mix, "mapping");
	if (!err)
		err = id_index(d, &pb->funcs, sizeof(struct d_func), &fix,
			       "function");
	for (size_t i = 0; !err && i < pb->locs.n; i++)
		err = check_loc(d, &AT(pb->locs, struct d_loc, i), mix, fix);
	free(mix);
	free(fix);
	return err;
}

static int check_sample(struct dec *d, const struct d_sample *s,
			const struct id_ent *lix)
{
	struct pb *pb = d->pb;

	if (s->nval != pb->stypes.n)
		return bad(d, "a sample has %zu values for %zu sample types",
			   s->nval, pb->stypes.n);
	for (size_t k = 0; k < s->nloc; k++) {
		uint64_t *id = &AT(pb->sample_locs, uint64_t, s->loc0 + k);
		size_t i = id_find(lix, pb->locs.n, *id);

		if (i == NONE)
			return bad(d, "a sample has unknown location %" PRIu64,
				   *id);
		*id = i;
	}
	for (size_t k = 0; k < s->nlab; k++) {
		const struct d_label *l =
			&AT(pb->labels, struct d_label, s->lab0 + k);
		const int64_t refs[] = { l->key, l->str, l->num_unit };

		if (check_strs(d, refs, 3, "label"))
			return -EBADMSG;
	}
	return 0;
}

static int check_samples(struct dec *d)
{
	struct id_ent *lix = NULL;
	struct pb *pb = d->pb;
	int err;

	err = id_index(d, &pb->locs, sizeof(struct d_loc), &lix, "location");
	for (size_t i = 0; !err && i < pb->samples.n; i++)
		err = check_sample(d, &AT(pb->samples, struct d_sample, i),
				   lix);
	free(lix);
	return err;
}

static int check_profile(struct dec *d)
{
	static int (*const checks[])(struct dec *) = {
		check_header, check_funcs,   check_maps,
		check_locs,   check_samples,
	};
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(checks) / sizeof(checks[0]); i++)
		err = checks[i](d);
	return err;
}

static void pb_free(struct pb *pb)
{
	for (size_t i = 0; i < pb->strs.n; i++)
		free(AT(pb->strs, char *, i));
	free(pb->strs.data);
	free(pb->stypes.data);
	free(pb->samples.data);
	free(pb->sample_locs.data);
	free(pb->values.data);
	free(pb->labels.data);
	free(pb->maps.data);
	free(pb->locs.data);
	free(pb->lines.data);
	free(pb->funcs.data);
	free(pb->comments.data);
}

/* ---- the summary ---- */

struct summary {
	struct prof_summary pub;
	struct pb pb;
	const char **comments;
	const char **names; /* sorted, unique: the frame groups */
	size_t ngroups;
	const char **fname; /* per function: its name, or NULL */
	char **loc_name; /* per location: "0x<address>", or NULL */
	size_t *func_group, *loc_group;
	struct prof_report_func *funcs;
	struct prof_report_tid *tids;
	struct prof_report_location *locs;
	struct prof_report_mapping *maps;
};

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t group_of(const struct summary *s, const char *name)
{
	const char **e;

	if (!name)
		return NONE;
	e = bsearch(&name, s->names, s->ngroups, sizeof(*s->names),
		    str_ptr_cmp);
	return e ? (size_t)(e - s->names) : NONE;
}

/* Does location @l need its address as a name (a frame without one)? */
static bool loc_needs_name(const struct summary *s, const struct d_loc *l)
{
	if (!l->nline)
		return true;
	for (size_t k = 0; k < l->nline; k++) {
		size_t f = AT(s->pb.lines, struct d_line, l->line0 + k).func;

		if (f == NONE || !s->fname[f])
			return true;
	}
	return false;
}

static int name_funcs(struct summary *s)
{
	const struct pb *pb = &s->pb;

	s->fname = calloc(pb->funcs.n + 1, sizeof(*s->fname));
	if (!s->fname)
		return -ENOMEM;
	for (size_t i = 0; i < pb->funcs.n; i++) {
		const struct d_func *f = &AT(pb->funcs, struct d_func, i);
		const char *n = str(pb, f->name);

		if (!n[0])
			n = str(pb, f->system_name);
		s->fname[i] = n[0] ? n : NULL;
	}
	return 0;
}

static int name_locs(struct summary *s)
{
	const struct pb *pb = &s->pb;
	char buf[32];

	s->loc_name = calloc(pb->locs.n + 1, sizeof(*s->loc_name));
	if (!s->loc_name)
		return -ENOMEM;
	for (size_t i = 0; i < pb->locs.n; i++) {
		const struct d_loc *l = &AT(pb->locs, struct d_loc, i);

		if (!loc_needs_name(s, l))
			continue;
		snprintf(buf, sizeof(buf), "0x%" PRIx64, l->address);
		s->loc_name[i] = strdup(buf);
		if (!s->loc_name[i])
			return -ENOMEM;
	}
	return 0;
}

/* The distinct frame names, and each function's and location's. */
static int make_groups(struct summary *s)
{
	size_t nf = s->pb.funcs.n, nl = s->pb.locs.n, n = 0;

	s->names = calloc(nf + nl + 1, sizeof(*s->names));
	s->func_group = calloc(nf + 1, sizeof(*s->func_group));
	s->loc_group = calloc(nl + 1, sizeof(*s->loc_group));
	if (!s->names || !s->func_group || !s->loc_group)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++)
		if (s->fname[i])
			s->names[n++] = s->fname[i];
	for (size_t i = 0; i < nl; i++)
		if (s->loc_name[i])
			s->names[n++] = s->loc_name[i];
	qsort(s->names, n, sizeof(*s->names), str_ptr_cmp);
	for (size_t i = 0; i < n; i++)
		if (!s->ngroups ||
		    strcmp(s->names[i], s->names[s->ngroups - 1]))
			s->names[s->ngroups++] = s->names[i];
	for (size_t i = 0; i < nf; i++)
		s->func_group[i] = group_of(s, s->fname[i]);
	for (size_t i = 0; i < nl; i++)
		s->loc_group[i] = group_of(s, s->loc_name[i]);
	return 0;
}

/* Group of line @k of location @li. */
static size_t frame_group(const struct summary *s, size_t li, size_t k)
{
	const struct d_loc *l = &AT(s->pb.locs, struct d_loc, li);
	size_t f;

	if (k >= l->nline)
		return s->loc_group[li];
	f = AT(s->pb.lines, struct d_line, l->line0 + k).func;
	if (f == NONE || s->func_group[f] == NONE)
		return s->loc_group[li];
	return s->func_group[f];
}

struct acc {
	int64_t *flat, *cum;
	size_t *stamp;
};

static void add_sample(const struct summary *s, const struct d_sample *ds,
		       size_t stamp, int64_t v, struct acc *a)
{
	bool leaf = true;

	for (size_t k = 0; k < ds->nloc; k++) {
		size_t li =
			(size_t)AT(s->pb.sample_locs, uint64_t, ds->loc0 + k);
		size_t nl = AT(s->pb.locs, struct d_loc, li).nline;

		for (size_t j = 0; j < (nl ? nl : 1); j++) {
			size_t g = frame_group(s, li, j);

			if (leaf)
				a->flat[g] = sat_add(a->flat[g], v);
			leaf = false;
			if (a->stamp[g] != stamp) {
				a->stamp[g] = stamp;
				a->cum[g] = sat_add(a->cum[g], v);
			}
		}
	}
}

static int func_cmp(const void *a, const void *b)
{
	const struct prof_report_func *x = a, *y = b;
	int c;

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->cum > y->cum ? -1 : x->cum < y->cum;
}

static void fill_funcs(struct summary *s, const struct acc *a)
{
	size_t n = 0;

	for (size_t g = 0; g < s->ngroups; g++) {
		if (!a->flat[g] && !a->cum[g])
			continue;
		s->funcs[n].name = s->names[g];
		s->funcs[n].flat = a->flat[g];
		s->funcs[n++].cum = a->cum[g];
	}
	qsort(s->funcs, n, sizeof(*s->funcs), func_cmp);
	s->pub.funcs = s->funcs;
	s->pub.nfuncs = n;
}

static int sum_funcs(struct summary *s)
{
	size_t idx = s->pub.sample_index, g = s->ngroups + 1;
	struct acc a;
	int err = -ENOMEM;

	a.flat = calloc(g, sizeof(*a.flat));
	a.cum = calloc(g, sizeof(*a.cum));
	a.stamp = calloc(g, sizeof(*a.stamp));
	s->funcs = calloc(g, sizeof(*s->funcs));
	if (!a.flat || !a.cum || !a.stamp || !s->funcs)
		goto out;
	for (size_t i = 0; i < s->pb.samples.n; i++) {
		const struct d_sample *ds =
			&AT(s->pb.samples, struct d_sample, i);
		int64_t v = AT(s->pb.values, int64_t, ds->val0 + idx);

		s->pub.total = sat_add(s->pub.total, v);
		add_sample(s, ds, i + 1, v, &a);
	}
	fill_funcs(s, &a);
	err = 0;
out:
	free(a.flat);
	free(a.cum);
	free(a.stamp);
	return err;
}

/* The "tid" label of sample @ds: 1 and *tid, or 0; its "thread" name. */
static int sample_tid(const struct pb *pb, const struct d_sample *ds,
		      uint64_t *tid, const char **name)
{
	int found = 0;

	*name = "";
	for (size_t k = 0; k < ds->nlab; k++) {
		const struct d_label *l =
			&AT(pb->labels, struct d_label, ds->lab0 + k);

		if (l->has_num && !strcmp(str(pb, l->key), "tid")) {
			*tid = (uint64_t)l->num;
			found = 1;
		} else if (!l->has_num && !strcmp(str(pb, l->key), "thread")) {
			*name = str(pb, l->str);
		}
	}
	return found;
}

static int tid_cmp(const void *a, const void *b)
{
	const struct prof_report_tid *x = a, *y = b;

	if (x->has_tid != y->has_tid)
		return x->has_tid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int sum_tids(struct summary *s)
{
	const struct pb *pb = &s->pb;
	size_t n = 0, i, j;

	s->tids = calloc(pb->samples.n + 1, sizeof(*s->tids));
	if (!s->tids)
		return -ENOMEM;
	for (i = 0; i < pb->samples.n; i++) {
		const struct d_sample *ds =
			&AT(pb->samples, struct d_sample, i);

		s->tids[i].has_tid =
			sample_tid(pb, ds, &s->tids[i].tid, &s->tids[i].name);
		s->tids[i].value =
			AT(pb->values, int64_t, ds->val0 + s->pub.sample_index);
	}
	qsort(s->tids, pb->samples.n, sizeof(*s->tids), tid_cmp);
	for (i = 0; i < pb->samples.n; i = j) {
		s->tids[n] = s->tids[i];
		for (j = i + 1;
		     j < pb->samples.n && !tid_cmp(&s->tids[i], &s->tids[j]);
		     j++) {
			s->tids[n].value =
				sat_add(s->tids[n].value, s->tids[j].value);
			if (!*s->tids[n].name)
				s->tids[n].name = s->tids[j].name;
		}
		n++;
	}
	s->pub.tids = s->tids;
	s->pub.ntids = n;
	return 0;
}

static int fill_tables(struct summary *s)
{
	const struct pb *pb = &s->pb;

	s->locs = calloc(pb->locs.n + 1, sizeof(*s->locs));
	s->maps = calloc(pb->maps.n + 1, sizeof(*s->maps));
	if (!s->locs || !s->maps)
		return -ENOMEM;
	for (size_t i = 0; i < pb->locs.n; i++) {
		const struct d_loc *l = &AT(pb->locs, struct d_loc, i);
		size_t f = l->nline
				   ? AT(pb->lines, struct d_line, l->line0).func
				   : NONE;

		s->locs[i] = (struct prof_report_location){
			.id = l->id,
			.address = l->address,
			.mapping = l->map == NONE ? -1 : (long)l->map,
			.name = f == NONE ? NULL : s->fname[f],
		};
	}
	for (size_t i = 0; i < pb->maps.n; i++) {
		const struct d_map *m = &AT(pb->maps, struct d_map, i);

		s->maps[i] = (struct prof_report_mapping){
			.id = m->id,
			.start = m->start,
			.limit = m->limit,
			.offset = m->offset,
			.filename = str(pb, m->filename),
			.build_id = str(pb, m->build_id),
			.has_functions = m->has_functions,
		};
	}
	s->pub.locs = s->locs;
	s->pub.nlocs = pb->locs.n;
	s->pub.maps = s->maps;
	s->pub.nmaps = pb->maps.n;
	return 0;
}

/* Header fields; the default sample type; the one to summarize. */
static int fill_header(struct summary *s, int sample_index, struct dec *d)
{
	const struct pb *pb = &s->pb;
	struct prof_summary *p = &s->pub;
	const struct d_vt *vt;

	p->nsample_types = pb->stypes.n;
	p->default_index = pb->stypes.n - 1;
	for (size_t i = 0; pb->default_st && i < pb->stypes.n; i++)
		if (!strcmp(str(pb, AT(pb->stypes, struct d_vt, i).type),
			    str(pb, pb->default_st))) {
			p->default_index = i;
			break;
		}
	if (sample_index < -1 ||
	    (sample_index >= 0 && (size_t)sample_index >= pb->stypes.n)) {
		bad(d, "sample index %d out of range: %zu sample types",
		    sample_index, pb->stypes.n);
		return -EINVAL;
	}
	p->sample_index =
		sample_index < 0 ? p->default_index : (size_t)sample_index;
	vt = &AT(pb->stypes, struct d_vt, p->sample_index);
	p->type = str(pb, vt->type);
	p->unit = str(pb, vt->unit);
	p->nsamples = pb->samples.n;
	p->period_type = str(pb, pb->period_type.type);
	p->period_unit = str(pb, pb->period_type.unit);
	p->period = pb->period;
	p->time_nanos = pb->time_nanos;
	p->duration_nanos = pb->duration_nanos;
	return 0;
}

static int fill_comments(struct summary *s)
{
	const struct pb *pb = &s->pb;

	s->comments = calloc(pb->comments.n + 1, sizeof(*s->comments));
	if (!s->comments)
		return -ENOMEM;
	for (size_t i = 0; i < pb->comments.n; i++)
		s->comments[i] = str(pb, AT(pb->comments, int64_t, i));
	s->pub.comments = s->comments;
	s->pub.ncomments = pb->comments.n;
	return 0;
}

static int summarize(struct summary *s, int sample_index, struct dec *d)
{
	static int (*const steps[])(struct summary *) = {
		fill_comments, name_funcs, name_locs,	make_groups,
		sum_funcs,     sum_tids,   fill_tables,
	};
	int err = fill_header(s, sample_index, d);

	if (err)
		return err;
	for (size_t i = 0; !err && i < sizeof(steps) / sizeof(steps[0]); i++)
		err = steps[i](s);
	return err ? nomem(d) : 0;
}

void prof_summary_free(struct prof_summary *p)
{
	struct summary *s = (struct summary *)p;

	if (!s)
		return;
	if (s->loc_name)
		for (size_t i = 0; i < s->pb.locs.n; i++)
			free(s->loc_name[i]);
	free(s->loc_name);
	free(s->comments);
	free(s->names);
	free(s->fname);
	free(s->func_group);
	free(s->loc_group);
	free(s->funcs);
	free(s->tids);
	free(s->locs);
	free(s->maps);
	pb_free(&s->pb);
	free(s);
}

int prof_summary_decode(const void *data, size_t len, int sample_index,
			struct prof_summary **out, char *err, size_t errlen)
{
	struct summary *s = calloc(1, sizeof(*s));
	struct dec d = { .pb = s ? &s->pb : NULL,
			 .err = err,
			 .errlen = errlen };
	int rc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (!s)
		return nomem(&d);
	rc = dec_profile(&d, data, len);
	if (!rc)
		rc = check_profile(&d);
	if (!rc)
		rc = summarize(s, sample_index, &d);
	if (rc) {
		prof_summary_free(&s->pub);
		return rc;
	}
	*out = &s->pub;
	return 0;
}

/* ---- reading files ---- */

/* gzread everything into @buf; then look at how the stream ended. */
static int gz_slurp(gzFile gz, struct proto_buf *buf)
{
	const unsigned int chunk = 1 << 16;
	uint8_t *room;
	int n, errnum;

	do {
		if (buf->len + chunk > MAX_FILE)
			return -EFBIG;
		room = proto_buf_room(buf, chunk);
		if (!room)
			return -ENOMEM;
		n = gzread(gz, room, chunk);
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

int prof_summary_load(const char *path, int sample_index,
		      struct prof_summary **out, char *err, size_t errlen)
{
	uint8_t *data;
	size_t len;
	int rc;

	*out = NULL;
	rc = prof_read_file(path, &data, &len);
	if (rc) {
		if (errlen)
			snprintf(err, errlen, "%s",
				 rc == -EBADMSG ? "corrupt gzip stream"
						: strerror(-rc));
		return rc;
	}
	rc = prof_summary_decode(data, len, sample_index, out, err, errlen);
	free(data);
	return rc;
}

/* ---- printing ---- */

/* How values of one unit print: divided by @div, followed by @suffix. */
struct scale {
	double div;
	const char *suffix;
};

static struct scale pick_scale(const char *unit, int64_t total)
{
	double t = total < 0 ? -(double)total : (double)total;

	if (strcmp(unit, "nanoseconds"))
		return (struct scale){ 1, "" };
	if (t >= 1e9)
		return (struct scale){ 1e9, "s" };
	if (t >= 1e6)
		return (struct scale){ 1e6, "ms" };
	if (t >= 1e3)
		return (struct scale){ 1e3, "us" };
	return (struct scale){ 1, "ns" };
}

/* @v in @sc's unit, two decimals unless whole ("90ms", "1.50s"). */
static const char *fmt_value(char *buf, size_t n, int64_t v,
			     const struct scale *sc)
{
	size_t len;

	if (sc->div == 1 || !v) {
		snprintf(buf, n, "%" PRId64 "%s", v, v ? sc->suffix : "");
		return buf;
	}
	snprintf(buf, n, "%.2f", (double)v / sc->div);
	len = strlen(buf);
	if (len > 3 && !strcmp(buf + len - 3, ".00"))
		buf[len - 3] = '\0';
	snprintf(buf + strlen(buf), n - strlen(buf), "%s", sc->suffix);
	return buf;
}

/* @v of @total as a percentage, six characters wide, as pprof does. */
static const char *fmt_pct(char *buf, size_t n, int64_t v, int64_t total)
{
	double r = total ? 100.0 * (double)v / (double)total : 0.0;

	r = r < 0 ? -r : r;
	if (r >= 99.95 && r <= 100.05)
		snprintf(buf, n, "  100%%");
	else if (r >= 1.0)
		snprintf(buf, n, "%5.2f%%", r);
	else
		snprintf(buf, n, "%5.2g%%", r);
	return buf;
}

static void print_header(const struct prof_summary *p, FILE *out,
			 const struct scale *sc)
{
	char a[48], b[48];

	fprintf(out, "Type: %s (%s)\n", p->type, p->unit);
	if (p->duration_nanos) {
		struct scale s = pick_scale("nanoseconds", p->duration_nanos);

		fprintf(out, "Duration: %s, ",
			fmt_value(a, sizeof(a), p->duration_nanos, &s));
	}
	fprintf(out, "Total: %s in %zu sample records\n",
		fmt_value(b, sizeof(b), p->total, sc), p->nsamples);
	for (size_t i = 0; i < p->ncomments; i++)
		fprintf(out, "Comment: %s\n", p->comments[i]);
}

static void print_funcs(const struct prof_summary *p, FILE *out,
			const struct scale *sc, size_t top)
{
	size_t n = p->nfuncs < top ? p->nfuncs : top;
	char a[48], b[48], c[16], d[16], e[16];
	int64_t shown = 0, sum = 0;
	const char *share;

	for (size_t i = 0; i < n; i++)
		shown = sat_add(shown, p->funcs[i].flat);
	share = fmt_pct(c, sizeof(c), shown, p->total);
	share += strspn(share, " ");
	fprintf(out, "Showing top %zu of %zu functions, %s (%s) of %s\n", n,
		p->nfuncs, fmt_value(a, sizeof(a), shown, sc), share,
		fmt_value(b, sizeof(b), p->total, sc));
	fprintf(out, "%10s %6s %6s %10s %6s  %s\n", "flat", "flat%", "sum%",
		"cum", "cum%", "name");
	for (size_t i = 0; i < n; i++) {
		const struct prof_report_func *f = &p->funcs[i];

		sum = sat_add(sum, f->flat);
		fprintf(out, "%10s %s %s %10s %s  %s\n",
			fmt_value(a, sizeof(a), f->flat, sc),
			fmt_pct(c, sizeof(c), f->flat, p->total),
			fmt_pct(d, sizeof(d), sum, p->total),
			fmt_value(b, sizeof(b), f->cum, sc),
			fmt_pct(e, sizeof(e), f->cum, p->total), f->name);
	}
}

static void print_tids(const struct prof_summary *p, FILE *out,
		       const struct scale *sc)
{
	char a[48], c[16];

	fprintf(out, "\nBy thread (\"tid\" label):\n%10s %6s  %s\n", "value",
		"value%", "tid  name");
	for (size_t i = 0; i < p->ntids; i++) {
		const struct prof_report_tid *t = &p->tids[i];

		fprintf(out, "%10s %s  ", fmt_value(a, sizeof(a), t->value, sc),
			fmt_pct(c, sizeof(c), t->value, p->total));
		if (t->has_tid)
			fprintf(out, "%" PRIu64 "%s%s\n", t->tid,
				*t->name ? "  " : "", t->name);
		else
			fprintf(out, "(none)\n");
	}
}

int prof_report(const char *path, FILE *out, const struct prof_report_opts *o)
{
	struct prof_report_opts def = { .top = 0, .sample_index = -1 };
	struct prof_summary *p;
	struct scale sc;
	char msg[256];
	int err;

	if (!o)
		o = &def;
	err = prof_summary_load(path, o->sample_index, &p, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "prof_report: %s: %s%s\n", path,
			err == -EBADMSG ? "malformed profile: " : "", msg);
		return err;
	}
	sc = pick_scale(p->unit, p->total);
	print_header(p, out, &sc);
	print_funcs(p, out, &sc, o->top ? o->top : 20);
	if (o->by_thread)
		print_tids(p, out, &sc);
	prof_summary_free(p);
	if (fflush(out) || ferror(out))
		return -EIO;
	return 0;
}
