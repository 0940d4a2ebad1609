/* SPDX-License-Identifier: MIT */
/*
 * pprof/decode.h - a profile.proto message decoded into flat arrays and
 * checked (decode.c), for the summary (summary.c) to read.
 *
 * The tables of the profile (strings, sample types, mappings, locations,
 * functions, comments) are kept in one array each, a location's lines in
 * one array for all of them, each location holding the index of its first
 * and their number.  The samples, most of any profile, are not kept: they
 * are read again from the message, one at a time, by pprof_doc_samples(),
 * so a profile of many samples takes no memory for them.  Once
 * pprof_doc_decode() has succeeded every reference has been checked:
 * string indices are inside the table, each location and line holds the
 * index of its mapping and function (DOC_NONE for an id of 0), and every
 * sample has been read once and checked the way pprof_doc_samples() hands
 * it out.
 *
 * The memory that a decoding and the summary built on it allocate is
 * counted against a limit set by the size of the message
 * (DOC_MEM_PER_BYTE, DOC_MEM_BASE_MIB): a profile that would need more is
 * refused with -EFBIG instead of growing without bound.
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

/* Memory a decoding and its summary may use: per byte of message, plus. */
#define DOC_MEM_PER_BYTE 16
#define DOC_MEM_BASE_MIB 16

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

/**
 * struct d_sample - one sample, as pprof_doc_samples() hands it out.
 * @locs, @nloc: its locations, leaf first, as indices into doc.locs
 *		(the ids read, turned into indices in place).
 * @vals, @nval: its values, one per sample type.
 * @labels, @nlab: its labels, string indices checked.
 */
struct d_sample {
	const uint64_t *locs;
	size_t nloc;
	const int64_t *vals;
	size_t nval;
	const struct d_label *labels;
	size_t nlab;
};

struct d_map {
	uint64_t id, start, limit, offset;
	int64_t filename, build_id;
	bool has_functions;
};

/* A line's number is checked to be a varint and not kept. */
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

/* A function's start line is checked to be a varint and not kept. */
struct d_func {
	uint64_t id;
	int64_t name, system_name, filename;
};

/* An id and the index of what has it: doc.loc_ix is sorted by id. */
struct d_id {
	uint64_t id;
	size_t idx;
};

/**
 * struct pprof_doc - a decoded profile: the fields of its messages.
 * @raw, @rawlen: the message, which pprof_doc_samples() reads again: it
 *		must outlive the decoded profile's use.
 * @text:	the string table's bytes, each string NUL-terminated (char).
 * @strs:	the string table: offsets into @text (uint32_t).
 * @stypes:	the sample types (struct d_vt).
 * @nsamples:	the samples in the message.
 * @maps, @locs, @funcs: the mappings, locations and functions, in
 *		profile order (struct d_map, struct d_loc, struct d_func).
 * @lines:	every location's lines, in order (struct d_line).
 * @comments:	the comments' string indices (int64_t).
 * @loc_ix:	the locations' ids and indices, by id (@locs.n of them).
 * @s_locs, @s_vals, @s_labels: the sample being read (uint64_t,
 *		int64_t, struct d_label), emptied for each.
 * @period_type, @period, @time_nanos, @duration_nanos: as in the profile.
 * @default_st:	default_sample_type, a string index.
 * @drop, @keep: drop_frames and keep_frames, string indices.
 * @mem:	bytes allocated for the profile and its summary, counted by
 *		pprof_doc_charge().
 * @mem_limit:	the most @mem may reach.
 */
struct pprof_doc {
	const uint8_t *raw;
	size_t rawlen;
	struct vec text;
	struct vec strs;
	struct vec stypes;
	size_t nsamples;
	struct vec maps;
	struct vec locs;
	struct vec lines;
	struct vec funcs;
	struct vec comments;
	struct d_id *loc_ix;
	struct vec s_locs, s_vals, s_labels;
	struct d_vt period_type;
	int64_t period, time_nanos, duration_nanos, default_st, drop, keep;
	size_t mem, mem_limit;
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
 * pprof_err_big() - note that the profile needs more memory than its
 * limit (@doc->mem_limit), naming the limit.
 * @e:		the error, as pprof_err_bad().
 * @doc:	the profile.
 *
 * Return: -EFBIG.
 */
int pprof_err_big(struct pprof_err *e, const struct pprof_doc *doc);

/**
 * pprof_doc_charge() - count @n elements of @size bytes, about to be
 * allocated, against @doc's memory limit.
 * @doc:	the profile.
 * @n, @size:	what is allocated.
 *
 * Return: 0; -EFBIG, nothing counted, if they would pass the limit.
 */
int pprof_doc_charge(struct pprof_doc *doc, size_t n, size_t size);

/**
 * pprof_vec_reserve() - make room for @need elements of @size bytes in
 * @v, its growth (as array_grow() makes it: from 16, doubling) counted by
 * pprof_doc_charge() first.
 * @doc:	the profile whose limit counts.
 * @v:		the array.
 * @need, @size: elements wanted, and their size.
 * @e:		what went wrong.
 *
 * Return: 0; -EFBIG past the limit; -ENOMEM.
 */
int pprof_vec_reserve(struct pprof_doc *doc, struct vec *v, size_t need,
		      size_t size, struct pprof_err *e);

/**
 * pprof_doc_decode() - decode and check a profile.proto message.
 * @doc:	zeroed; filled in (pprof_doc_free() it, whatever the result).
 * @data, @len:	the message (not gzip'd), kept by @doc (see @doc->raw).
 * @e:		what was wrong.
 *
 * Return: 0; -EBADMSG for a malformed profile; -EFBIG for a message
 * larger than PROF_PROFILE_MAX or a profile that needs more memory than
 * its limit; -ENOMEM.
 */
int pprof_doc_decode(struct pprof_doc *doc, const void *data, size_t len,
		     struct pprof_err *e);

/**
 * pprof_doc_samples() - read the samples of a decoded profile, in order.
 * @doc:	the profile, decoded by pprof_doc_decode().
 * @fn:		called with each sample (valid until it returns); a nonzero
 *		return stops the walk and is returned.  NULL: only check
 *		them (what pprof_doc_decode() does).
 * @arg:	passed to @fn.
 * @e:		what was wrong.
 *
 * Return: 0; what @fn returned; -EBADMSG for a malformed sample; -EFBIG;
 * -ENOMEM.
 */
int pprof_doc_samples(struct pprof_doc *doc,
		      int (*fn)(void *arg, const struct d_sample *s), void *arg,
		      struct pprof_err *e);

/**
 * pprof_doc_free() - free what @doc holds.
 * @doc:	the decoded profile.
 */
void pprof_doc_free(struct pprof_doc *doc);

/* String @i of a checked @doc. */
static inline const char *doc_str(const struct pprof_doc *doc, int64_t i)
{
	return (const char *)doc->text.data + VEC_AT(doc->strs, uint32_t, i);
}

#endif /* PROFRING_PPROF_DECODE_H */
