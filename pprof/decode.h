/* SPDX-License-Identifier: MIT */
/*
 * pprof/decode.h - a profile.proto message decoded into flat arrays and
 * checked (decode.c), for the summary (summary.c) to read.
 *
 * Every field of interest of every message is kept; nested repeated
 * fields (a sample's location ids, values and labels, a location's lines)
 * go to one array each in struct pprof_doc, and their owner holds the
 * index of its first and their number.  Once pprof_doc_decode() has
 * succeeded every reference has been checked: string indices are inside
 * the table, a sample's location ids have become indices into doc.locs,
 * and each location and line holds the index of its mapping and function
 * (DOC_NONE for an id of 0).
 *
 * Internal to pprof/: never installed.
 */
#ifndef PROFRING_PPROF_DECODE_H
#define PROFRING_PPROF_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The index of nothing: what an id of 0 (no mapping, no function) gives. */
#define DOC_NONE SIZE_MAX

/* A growable array of elements of one size (see array_grow()). */
struct vec {
	void *data;
	size_t n, cap;
};

/* Element @i of the struct vec @v, whose elements are of @type. */
#define VEC_AT(v, type, i) (((type *)(v).data)[i])

/* Decoded messages.  int64_t fields named after strings are indices. */
struct d_vt {
	int64_t type, unit;
};

struct d_label {
	int64_t key, str, num, num_unit;
	bool has_num;
};

struct d_sample {
	size_t loc0, nloc; /* in doc.sample_locs */
	size_t val0, nval; /* in doc.values */
	size_t lab0, nlab; /* in doc.labels */
};

struct d_map {
	uint64_t id, start, limit, offset;
	int64_t filename, build_id;
	bool has_functions;
};

struct d_line {
	uint64_t function_id;
	int64_t line;
	size_t func; /* index, DOC_NONE for function_id 0 */
};

struct d_loc {
	uint64_t id, mapping_id, address;
	size_t line0, nline; /* in doc.lines */
	size_t map; /* index, DOC_NONE for mapping_id 0 */
};

struct d_func {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
};

/**
 * struct pprof_doc - a decoded profile: the fields of its messages.
 * @strs:	the string table (char *, NUL-terminated copies).
 * @stypes:	the sample types (struct d_vt).
 * @samples:	the samples (struct d_sample).
 * @sample_locs: every sample's location ids, in order (uint64_t); once
 *		checked, indices into @locs.
 * @values:	every sample's values, in order (int64_t).
 * @labels:	every sample's labels, in order (struct d_label).
 * @maps, @locs, @funcs: the mappings, locations and functions, in
 *		profile order (struct d_map, struct d_loc, struct d_func).
 * @lines:	every location's lines, in order (struct d_line).
 * @comments:	the comments' string indices (int64_t).
 * @period_type, @period, @time_nanos, @duration_nanos: as in the profile.
 * @default_st:	default_sample_type, a string index.
 * @drop, @keep: drop_frames and keep_frames, string indices.
 */
struct pprof_doc {
	struct vec strs;
	struct vec stypes;
	struct vec samples;
	struct vec sample_locs;
	struct vec values;
	struct vec labels;
	struct vec maps;
	struct vec locs;
	struct vec lines;
	struct vec funcs;
	struct vec comments;
	struct d_vt period_type;
	int64_t period, time_nanos, duration_nanos, default_st, drop, keep;
};

/**
 * struct pprof_err - where the first problem met is explained.
 * @msg:	a buffer of @len bytes for it, as a NUL-terminated line.
 * @len:	its size; 0 for no message.
 * @failed:	set by the first problem; later ones leave @msg alone.
 */
struct pprof_err {
	char *msg;
	size_t len;
	bool failed;
};

/**
 * pprof_err_bad() - note a malformed profile.
 * @e:		the error; its message is set unless one was already.
 * @fmt:	printf format of the message.
 *
 * Return: -EBADMSG.
 */
__attribute__((format(printf, 2, 3))) int pprof_err_bad(struct pprof_err *e,
							const char *fmt, ...);

/**
 * pprof_err_nomem() - note that memory ran out ("out of memory").
 * @e:		the error, as pprof_err_bad().
 *
 * Return: -ENOMEM.
 */
int pprof_err_nomem(struct pprof_err *e);

/**
 * pprof_doc_decode() - decode and check a profile.proto message.
 * @doc:	zeroed; filled in (pprof_doc_free() it, whatever the result).
 * @data, @len:	the message (not gzip'd).
 * @e:		what was wrong.
 *
 * Return: 0; -EBADMSG for a malformed profile; -ENOMEM.
 */
int pprof_doc_decode(struct pprof_doc *doc, const void *data, size_t len,
		     struct pprof_err *e);

/**
 * pprof_doc_free() - free what @doc holds.
 * @doc:	the decoded profile.
 */
void pprof_doc_free(struct pprof_doc *doc);

/* String @i of a checked @doc. */
static inline const char *doc_str(const struct pprof_doc *doc, int64_t i)
{
	return VEC_AT(doc->strs, char *, i);
}

#endif /* PROFRING_PPROF_DECODE_H */
