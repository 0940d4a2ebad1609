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
 *			the main space's first (prof_profile.main_space:
 *			pprof's main binary is the first program file
 *			listed), then space after space, ids numbered on
 *			across spaces in space order (a file mapped in two
 *			spaces is listed in each): id,
 *			memory_start, memory_limit, file_offset, filename,
 *			build_id (when known), has_functions, and
 *			has_filenames, has_line_numbers, has_inline_frames
 *			when DWARF gave lines in it
 *	4  location	id, mapping_id (when known), address, its lines
 *			(function, line: 0 when unknown), innermost
 *			(inlined) first
 *	5  function	id, name (demangled for C++, pprof/demangle.h),
 *			system_name (the symbol), filename and start_line
 *			(when DWARF has them)
 *	9, 10		time_nanos, duration_nanos
 *	11, 12		period_type ("cpu", "nanoseconds"), period
 *	13		comment (packed string indices)
 *	14		default_sample_type: "cpu"
 * A wall-clock profile (prof_profile.wall) says "wall" where a CPU
 * profile says "cpu" (sample type, period type, default), and its samples
 * have a label "state" (str: running or sleeping) when known.
 * A heap profile (prof_profile.heap_rate nonzero) differs as Go's
 * runtime/pprof heap profiles do: sample_type ("alloc_objects", "count"),
 * ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space",
 * "bytes"); each sample's four values, and a label "bytes" (num = the
 * object size); period_type ("space", "bytes"), period = the rate;
 * default_sample_type "inuse_space".  Its stacks are return addresses
 * from the first frame on (profile.h: return_addrs).
 * A lock profile (prof_profile.lock_rate nonzero) is written as Go's
 * mutex and block profiles are: sample_type ("contentions", "count"),
 * ("delay", "nanoseconds"); period_type ("contentions", "count"), period
 * = the rate; default_sample_type "delay".
 *	6  string_table	last, string 0 being ""
 * Every string is referenced by a field written before the table, so any
 * strict prefix of the encoding lacks a referenced string: a truncated
 * profile never decodes as a smaller valid one.
 *
 * Strings, functions and locations are interned by builder.c (which
 * says how they are deduplicated and named); folded stacks are folded.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof/builder.h"
#include "pprof/outfile.h"
#include "pprof/pprof.h"
#include "pprof/proto.h"

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

/* Scratch buffers for the nested messages, two levels deep. */
struct enc {
	struct builder b;
	struct proto_buf out, msg, sub;
	uint32_t samples_s, count_s, cpu_s, ns_s;
	uint32_t space_s, bytes_s, inuse_space_s, alloc_space_s; /* heap */
	uint32_t tid_s; /* interned at first use: every string is used */
	uint32_t thread_s;
	uint32_t pid_s;
	uint32_t state_s;
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
			e->tid_s = pb_str_intern(&e->b, "tid");
		proto_buf_reset(&e->sub);
		proto_put_int64(&e->sub, 1, e->tid_s);
		proto_put_int64(&e->sub, 3, ps->tid);
		proto_put_message(&e->msg, 3, &e->sub);
	}
	if (ps->thread_name && *ps->thread_name) {
		if (!e->thread_s)
			e->thread_s = pb_str_intern(&e->b, "thread");
		proto_buf_reset(&e->sub);
		proto_put_int64(&e->sub, 1, e->thread_s);
		proto_put_int64(&e->sub, 2,
				pb_str_intern(&e->b, ps->thread_name));
		proto_put_message(&e->msg, 3, &e->sub);
	}
	if (ps->state) {
		if (!e->state_s)
			e->state_s = pb_str_intern(&e->b, "state");
		proto_buf_reset(&e->sub);
		proto_put_int64(&e->sub, 1, e->state_s);
		proto_put_int64(&e->sub, 2, pb_str_intern(&e->b, ps->state));
		proto_put_message(&e->msg, 3, &e->sub);
	}
	if (ps->pid) {
		if (!e->pid_s)
			e->pid_s = pb_str_intern(&e->b, "pid");
		proto_buf_reset(&e->sub);
		proto_put_int64(&e->sub, 1, e->pid_s);
		proto_put_int64(&e->sub, 3, ps->pid);
		proto_put_message(&e->msg, 3, &e->sub);
	}
	proto_put_message(&e->out, PF_SAMPLE, &e->msg);
}

/*
 * The location ids of @ps into @ids (room for npcs or 1); their count
 * (frames of junk are dropped: pb_frame_loc()).
 */
static size_t sample_locs(struct builder *b, const struct prof_sample *ps,
			  uint64_t *ids)
{
	size_t n = 0;

	if (ps->special) {
		ids[0] = pb_loc_intern(b, 0, 0, ps->special);
		return 1;
	}
	for (size_t i = 0; i < ps->npcs; i++) {
		ids[n] = pb_frame_loc(b, ps, i);
		n += ids[n] != 0;
	}
	return n;
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

static void put_space_mappings(struct enc *e, const struct space *sp)
{
	for (size_t i = 0; i < sp->nmaps; i++) {
		const struct prof_mapping *m = &sp->maps[i];
		struct proto_buf *b = &e->msg;

		proto_buf_reset(b);
		proto_put_uint64(b, 1, sp->id_base + m->id);
		proto_put_uint64(b, 2, m->start);
		proto_put_uint64(b, 3, m->limit);
		proto_put_uint64(b, 4, m->offset);
		proto_put_int64(b, 5, pb_str_intern(&e->b, m->path));
		if (m->build_id[0])
			proto_put_int64(b, 6,
					pb_str_intern(&e->b, m->build_id));
		if (m->has_functions)
			proto_put_bool(b, 7, true);
		if (m->has_lines) {
			proto_put_bool(b, 8, true);
			proto_put_bool(b, 9, true);
			proto_put_bool(b, 10, true);
		}
		proto_put_message(&e->out, PF_MAPPING, b);
	}
}

/* The main space's mappings first (pprof's main binary), then the rest. */
static void put_mappings(struct enc *e, const struct prof_profile *p)
{
	size_t first = p->main_space < e->b.nspaces ? p->main_space : 0;

	put_space_mappings(e, &e->b.spaces[first]);
	for (size_t s = 0; s < e->b.nspaces; s++)
		if (s != first)
			put_space_mappings(e, &e->b.spaces[s]);
}

static void put_locations(struct enc *e)
{
	for (size_t i = 0; i < e->b.nlocs; i++) {
		const struct loc *l = &e->b.locs[i];

		proto_buf_reset(&e->msg);
		proto_put_uint64(&e->msg, 1, i + 1);
		if (l->mapping_id)
			proto_put_uint64(&e->msg, 2, l->mapping_id);
		if (l->addr)
			proto_put_uint64(&e->msg, 3, l->addr);
		for (uint32_t k = 0; k < l->nlines; k++) {
			const struct pb_line *ln = &e->b.lines[l->line0 + k];

			proto_buf_reset(&e->sub);
			proto_put_uint64(&e->sub, 1, ln->func);
			if (ln->line)
				proto_put_int64(&e->sub, 2, ln->line);
			proto_put_message(&e->msg, 4, &e->sub);
		}
		proto_put_message(&e->out, PF_LOCATION, &e->msg);
	}
}

static void put_functions(struct enc *e)
{
	for (size_t i = 0; i < e->b.nfuncs; i++) {
		const struct pb_func *f = &e->b.funcs[i];

		proto_buf_reset(&e->msg);
		proto_put_uint64(&e->msg, 1, i + 1);
		proto_put_int64(&e->msg, 2, f->disp);
		proto_put_int64(&e->msg, 3, f->sym);
		if (f->file)
			proto_put_int64(&e->msg, 4, f->file);
		if (f->start_line)
			proto_put_int64(&e->msg, 5, f->start_line);
		proto_put_message(&e->out, PF_FUNCTION, &e->msg);
	}
}

static int put_comments(struct enc *e, const struct prof_profile *p)
{
	uint64_t *idx = calloc(p->ncomments + 1, sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < p->ncomments; i++)
		idx[i] = pb_str_intern(&e->b, p->comments[i]);
	proto_put_packed(&e->out, PF_COMMENT, idx, p->ncomments);
	free(idx);
	return 0;
}

/* A heap profile's types, as Go's runtime/pprof writes them. */
static void put_heap_header(struct enc *e)
{
	uint32_t objects = pb_str_intern(&e->b, "alloc_objects");
	uint32_t inuse_objects;

	e->alloc_space_s = pb_str_intern(&e->b, "alloc_space");
	inuse_objects = pb_str_intern(&e->b, "inuse_objects");

	e->inuse_space_s = pb_str_intern(&e->b, "inuse_space");
	e->count_s = pb_str_intern(&e->b, "count");
	e->bytes_s = pb_str_intern(&e->b, "bytes");
	e->space_s = pb_str_intern(&e->b, "space");
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
	e->samples_s =
		pb_str_intern(&e->b, p->lock_rate ? "contentions" : "samples");
	e->count_s = pb_str_intern(&e->b, "count");
	e->cpu_s = pb_str_intern(&e->b, p->lock_rate ? "delay"
					: p->wall    ? "wall"
						     : "cpu");
	e->ns_s = pb_str_intern(&e->b, "nanoseconds");
	put_value_type(e, PF_SAMPLE_TYPE, e->samples_s, e->count_s);
	put_value_type(e, PF_SAMPLE_TYPE, e->cpu_s, e->ns_s);
}

/* Encode the whole (uncompressed) Profile message into e->out. */
static int encode(struct enc *e, const struct prof_profile *p)
{
	put_header(e, p);
	if (put_samples(e, p))
		return e->b.err;
	put_mappings(e, p);
	put_locations(e);
	put_functions(e);
	proto_put_int64(&e->out, PF_TIME_NANOS, p->time_nanos);
	proto_put_int64(&e->out, PF_DURATION_NANOS, p->duration_nanos);
	if (p->heap_rate) {
		put_value_type(e, PF_PERIOD_TYPE, e->space_s, e->bytes_s);
		proto_put_int64(&e->out, PF_PERIOD, sat_i64(p->heap_rate));
	} else if (p->lock_rate) {
		put_value_type(e, PF_PERIOD_TYPE, e->samples_s, e->count_s);
		proto_put_int64(&e->out, PF_PERIOD, sat_i64(p->lock_rate));
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

	err = pb_check_profile(p);
	if (err)
		return err;
	memset(&e, 0, sizeof(e));
	err = pb_init(&e.b, p, s);
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
	pb_free(&e.b);
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
