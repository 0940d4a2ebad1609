/* SPDX-License-Identifier: MIT */
/*
 * pprof/proto.h - the protocol-buffers wire format, as much of it as
 * pprof's profile.proto needs, shared by the encoder (pprof.c) and the
 * decoder (decode.c).
 *
 * A message is a sequence of fields, each a key (varint: field number << 3
 * | wire type) and a value: wire type 0 a varint (ring/varint.h; an int64
 * is its two's complement, 10 bytes when negative), 1 eight bytes, 2 a
 * varint length and that many bytes (strings, nested messages, packed
 * repeated varints), 5 four bytes; 3 and 4 open and close a (deprecated)
 * group.
 *
 * Writing: struct proto_buf grows with realloc; the first failure sets
 * ->err to -ENOMEM and every later append does nothing, so a caller checks
 * once at the end.  A nested message is encoded into its own proto_buf,
 * then appended, length-prefixed, with proto_put_message().
 *
 * Reading: struct proto_reader is a window on the input that never reads
 * outside it; every read returns 0 or -EBADMSG (truncated or malformed
 * input) and advances only on success.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_PROTO_H
#define PROFRING_PROF_PROTO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring/varint.h"

enum proto_wire {
	PROTO_VARINT = 0,
	PROTO_I64 = 1,
	PROTO_LEN = 2,
	PROTO_SGROUP = 3,
	PROTO_EGROUP = 4,
	PROTO_I32 = 5,
};

#define PROTO_MAX_FIELD ((1u << 29) - 1)
/* Nesting of groups that proto_skip() follows before calling it malformed. */
#define PROTO_MAX_DEPTH 64

/* A growable output buffer; zero-initialize it. */
struct proto_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int err;
};

static inline void proto_buf_free(struct proto_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

/* Empty @b for reuse, keeping its memory (and its error). */
static inline void proto_buf_reset(struct proto_buf *b)
{
	b->len = 0;
}

/* Room for @n more bytes at b->data + b->len, or NULL (b->err set). */
static inline uint8_t *proto_buf_room(struct proto_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *p;

	if (b->err)
		return NULL;
	if (n > SIZE_MAX / 2 - b->len) {
		b->err = -ENOMEM;
		return NULL;
	}
	if (b->len + n <= b->cap)
		return b->data + b->len;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return NULL;
	}
	b->data = p;
	b->cap = cap;
	return p + b->len;
}

static inline void proto_put_raw(struct proto_buf *b, const void *p, size_t n)
{
	uint8_t *dst = n ? proto_buf_room(b, n) : NULL;

	if (dst) {
		memcpy(dst, p, n);
		b->len += n;
	}
}

static inline void proto_put_varint(struct proto_buf *b, uint64_t v)
{
	uint8_t *dst = proto_buf_room(b, RING_VARINT_MAX);

	if (dst)
		b->len += ring_varint_put(dst, v);
}

static inline size_t proto_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline void proto_put_key(struct proto_buf *b, uint32_t field,
				 enum proto_wire wire)
{
	proto_put_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

static inline void proto_put_uint64(struct proto_buf *b, uint32_t field,
				    uint64_t v)
{
	proto_put_key(b, field, PROTO_VARINT);
	proto_put_varint(b, v);
}

static inline void proto_put_int64(struct proto_buf *b, uint32_t field,
				   int64_t v)
{
	proto_put_uint64(b, field, (uint64_t)v);
}

static inline void proto_put_bool(struct proto_buf *b, uint32_t field, bool v)
{
	proto_put_uint64(b, field, v ? 1 : 0);
}

static inline void proto_put_bytes(struct proto_buf *b, uint32_t field,
				   const void *p, size_t n)
{
	proto_put_key(b, field, PROTO_LEN);
	proto_put_varint(b, n);
	proto_put_raw(b, p, n);
}

static inline void proto_put_string(struct proto_buf *b, uint32_t field,
				    const char *s)
{
	proto_put_bytes(b, field, s, strlen(s));
}

/* A packed repeated varint field (int64 values: cast them); none: omitted. */
static inline void proto_put_packed(struct proto_buf *b, uint32_t field,
				    const uint64_t *v, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += proto_varint_size(v[i]);
	proto_put_key(b, field, PROTO_LEN);
	proto_put_varint(b, len);
	if (!proto_buf_room(b, len))
		return;
	for (size_t i = 0; i < n; i++)
		b->len += ring_varint_put(b->data + b->len, v[i]);
}

/* Append the message encoded in @sub as field @field (sub's error too). */
static inline void proto_put_message(struct proto_buf *b, uint32_t field,
				     const struct proto_buf *sub)
{
	if (sub->err && !b->err)
		b->err = sub->err;
	proto_put_bytes(b, field, sub->data, sub->len);
}

/* A bounded window on encoded bytes: [p, p + len), next byte at pos. */
struct proto_reader {
	const uint8_t *p;
	size_t len;
	size_t pos;
};

static inline void proto_reader_init(struct proto_reader *r, const void *p,
				     size_t len)
{
	r->p = p;
	r->len = p ? len : 0;
	r->pos = 0;
}

static inline bool proto_more(const struct proto_reader *r)
{
	return r->pos < r->len;
}

static inline int proto_read_varint(struct proto_reader *r, uint64_t *v)
{
	size_t n;

	*v = 0;
	if (r->pos >= r->len)
		return -EBADMSG;
	n = ring_varint_get(r->p + r->pos, r->len - r->pos, v);
	if (!n)
		return -EBADMSG;
	r->pos += n;
	return 0;
}

/*
 * A key: field number 1 to 2^29 - 1 and a wire type other than 6 or 7.
 * Like every read, it sets its outputs (to zero when it fails).
 */
static inline int proto_read_key(struct proto_reader *r, uint32_t *field,
				 enum proto_wire *wire)
{
	size_t pos = r->pos;
	uint64_t k;

	*field = 0;
	*wire = PROTO_VARINT;
	if (proto_read_varint(r, &k))
		return -EBADMSG;
	if ((k >> 3) < 1 || (k >> 3) > PROTO_MAX_FIELD || (k & 7) > 5) {
		r->pos = pos;
		return -EBADMSG;
	}
	*field = (uint32_t)(k >> 3);
	*wire = (enum proto_wire)(k & 7);
	return 0;
}

/* Advance by @n bytes if that many are left. */
static inline int proto_advance(struct proto_reader *r, size_t n)
{
	if (n > r->len - r->pos)
		return -EBADMSG;
	r->pos += n;
	return 0;
}

/* A length-delimited value: @sub becomes a window on its bytes. */
static inline int proto_read_len(struct proto_reader *r,
				 struct proto_reader *sub)
{
	size_t pos = r->pos;
	uint64_t n;

	proto_reader_init(sub, NULL, 0);
	if (proto_read_varint(r, &n))
		return -EBADMSG;
	if (n > r->len - r->pos) {
		r->pos = pos;
		return -EBADMSG;
	}
	sub->p = r->p + r->pos;
	sub->len = (size_t)n;
	sub->pos = 0;
	r->pos += (size_t)n;
	return 0;
}

static inline int proto_skip_depth(struct proto_reader *r, uint32_t field,
				   enum proto_wire wire, int depth);

/* Skip a group's fields up to its end-group key for @field. */
static inline int proto_skip_group(struct proto_reader *r, uint32_t field,
				   int depth)
{
	enum proto_wire w;
	uint32_t f;

	if (depth >= PROTO_MAX_DEPTH)
		return -EBADMSG;
	for (;;) {
		if (proto_read_key(r, &f, &w))
			return -EBADMSG;
		if (w == PROTO_EGROUP)
			return f == field ? 0 : -EBADMSG;
		if (proto_skip_depth(r, f, w, depth + 1))
			return -EBADMSG;
	}
}

static inline int proto_skip_depth(struct proto_reader *r, uint32_t field,
				   enum proto_wire wire, int depth)
{
	struct proto_reader sub;
	uint64_t v;

	switch (wire) {
	case PROTO_VARINT:
		return proto_read_varint(r, &v);
	case PROTO_I64:
		return proto_advance(r, 8);
	case PROTO_LEN:
		return proto_read_len(r, &sub);
	case PROTO_I32:
		return proto_advance(r, 4);
	case PROTO_SGROUP:
		return proto_skip_group(r, field, depth);
	default:
		return -EBADMSG;
	}
}

/*
 * Skip the value of a field whose key (@field, @wire) was just read.  An
 * end-group key outside a group is malformed.
 */
static inline int proto_skip(struct proto_reader *r, uint32_t field,
			     enum proto_wire wire)
{
	size_t pos = r->pos;

	if (!proto_skip_depth(r, field, wire, 0))
		return 0;
	r->pos = pos;
	return -EBADMSG;
}

/*
 * A repeated varint field, packed (wire type 2) or not (0): @sub becomes a
 * window on its one or more varints, to read with proto_read_varint()
 * until !proto_more(@sub).
 */
static inline int proto_read_repeated(struct proto_reader *r,
				      enum proto_wire wire,
				      struct proto_reader *sub)
{
	size_t pos = r->pos;
	uint64_t v;

	proto_reader_init(sub, NULL, 0);
	if (wire == PROTO_LEN)
		return proto_read_len(r, sub);
	if (wire != PROTO_VARINT || proto_read_varint(r, &v))
		return -EBADMSG;
	sub->p = r->p + pos;
	sub->len = r->pos - pos;
	sub->pos = 0;
	return 0;
}

#endif /* PROFRING_PROF_PROTO_H */
