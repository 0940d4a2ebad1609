// SPDX-License-Identifier: MIT
/*
 * tracebuf/tracedec.c - the trace stream decoder and validator (see
 * tracedec.h and FORMAT.md).
 *
 * A cursor walks the buffer; every read checks the bytes left first, so
 * no input can make it read out of bounds.  The state is a fixed table of
 * the generations still open (whose end record has not come yet) with
 * their batch counts, and a TB_MAX_FRAMES-entry PC array for the stack
 * being reported: tracedec_decode() keeps it on its stack, the
 * incremental form (tracedec_stream_*) in one allocation, between the
 * pieces it is fed.  Both decode whole records where they lie (a record
 * cut by the end of a piece is left for the caller to feed again, with
 * what follows), so offsets and errors are the same.  Work is linear in
 * the input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracedec.h>

#include "ring/compiler.h"
#include "ring/varint.h"
#include "tracebuf/tracebuf_format.h"

#define DEC_OPEN_GENS 8

/* The public limits are the format's (see tracebuf_format.h). */
_Static_assert(TRACEDEC_MAX_ARGS == TB_MAX_ARGS, "TRACEDEC_MAX_ARGS");
_Static_assert(TRACEDEC_MAX_TYPE == TB_MAX_TYPE, "TRACEDEC_MAX_TYPE");
_Static_assert(TRACEDEC_MAX_PAYLOAD == TB_MAX_PAYLOAD, "TRACEDEC_MAX_PAYLOAD");
_Static_assert(TRACEDEC_MAX_STRING == TB_MAX_STRING, "TRACEDEC_MAX_STRING");
_Static_assert(TRACEDEC_MAX_FRAMES == TB_MAX_FRAMES, "TRACEDEC_MAX_FRAMES");
_Static_assert(TRACEDEC_MAX_TYPE_NAME == TB_MAX_TYPE_NAME, "type name");

struct dec {
	const uint8_t *buf; /* at stream offset base_off */
	size_t base_off;
	const struct tracedec_visitor *v;
	void *arg;
	struct tracedec_error *err;
	uint64_t last_end;
	unsigned int version;
	struct {
		uint64_t gen, batches;
	} open[DEC_OPEN_GENS];
};

/* A cursor over part of the buffer. */
struct cur {
	const uint8_t *p;
	size_t left;
};

static int bad(struct dec *d, const uint8_t *at, const char *what)
{
	if (d->err) {
		d->err->offset = d->base_off + (size_t)(at - d->buf);
		d->err->what = what;
	}
	return -EBADMSG;
}

static int get_varint(struct dec *d, struct cur *c, uint64_t *v,
		      const char *what)
{
	size_t n = ring_varint_get(c->p, c->left, v);

	if (!n)
		return bad(d, c->p, what);
	c->p += n;
	c->left -= n;
	return 0;
}

/* A varint no larger than @max. */
static int get_bounded(struct dec *d, struct cur *c, uint64_t *v, uint64_t max,
		       const char *what)
{
	const uint8_t *at = c->p;
	int rc = get_varint(d, c, v, what);

	if (!rc && *v > max)
		return bad(d, at, what);
	return rc;
}

static int get_bytes(struct dec *d, struct cur *c, size_t n,
		     const uint8_t **out, const char *what)
{
	if (n > c->left)
		return bad(d, c->p, what);
	*out = c->p;
	c->p += n;
	c->left -= n;
	return 0;
}

/* ---- records ------------------------------------------------------------ */

/* Version 2: alloc and exists take (id, size, stack), free (id). */
static bool mem_arity_ok(unsigned int type, unsigned int nargs)
{
	switch (type) {
	case 3: /* TRACEBUF_EV_ALLOC */
	case 5: /* TRACEBUF_EV_EXISTS */
		return nargs == 3;
	case 4: /* TRACEBUF_EV_FREE */
		return nargs == 1;
	}
	return true;
}

static int batch_event(struct dec *d, struct cur *c, struct tracedec_event *ev)
{
	const uint8_t *at = c->p;
	uint64_t delta, n;
	uint8_t b = *c->p;
	int rc;

	c->p++;
	c->left--;
	ev->type = b >> 3;
	ev->nargs = b & 7;
	ev->bytes = NULL;
	ev->nbytes = 0;
	if (!ev->type)
		return bad(d, at, "event of type 0");
	rc = get_varint(d, c, &delta, "bad event time");
	if (rc)
		return rc;
	ev->ticks += delta;
	if (ev->nargs == TB_NARGS_BYTES) {
		ev->nargs = 0;
		rc = get_bounded(d, c, &n, TB_MAX_PAYLOAD,
				 "bad event payload length");
		if (!rc)
			rc = get_bytes(d, c, n, &ev->bytes,
				       "event payload past its batch");
		ev->nbytes = n;
	} else {
		if (ev->nargs > TB_MAX_ARGS)
			return bad(d, at, "too many event arguments");
		if (d->version >= 2 && !mem_arity_ok(ev->type, ev->nargs))
			return bad(d, at, "memory event with wrong arguments");
		for (unsigned int i = 0; i < ev->nargs && !rc; i++)
			rc = get_varint(d, c, &ev->args[i],
					"bad event argument");
	}
	if (rc)
		return rc;
	ev->thread = ev->tid;
	ev->time = ev->ticks;
	ev->duration = 0;
	if (ev->type == TB_EV_CPU_SAMPLE && ev->nargs == 4) {
		/* The sampled thread, at its sample's time (see the header). */
		ev->thread = ev->args[1];
		ev->time = ev->args[0];
	} else if (ev->type == TB_EV_SPAN && d->version >= 3) {
		if (ev->nargs < 2)
			return bad(d, at, "span with fewer than 2 arguments");
		/* From its start to the event; a start after it: length 0. */
		if (ev->args[1] < ev->ticks) {
			ev->time = ev->args[1];
			ev->duration = ev->ticks - ev->args[1];
		}
	} else if (ev->type == TB_EV_SPAN_OF && d->version >= 3) {
		if (ev->nargs != TB_SPAN_OF_ARGS)
			return bad(d, at, "thread span without 5 arguments");
		/* Its own thread, from its start to its own end. */
		ev->thread = ev->args[2];
		ev->time = ev->args[3];
		if (ev->args[1] < ev->args[3]) {
			ev->time = ev->args[1];
			ev->duration = ev->args[3] - ev->args[1];
		}
	}
	return d->v->event ? d->v->event(d->arg, ev) : 0;
}

static int rec_batch(struct dec *d, struct cur *c, uint64_t gen,
		     unsigned int level)
{
	struct tracedec_event ev = { .gen = gen,
				     .level = level,
				     .version = d->version };
	int rc = 0;

	if (c->left < 24)
		return bad(d, c->p, "batch header truncated");
	ev.tid = tb_get_u64(c->p);
	ev.batch_seq = tb_get_u64(c->p + 8);
	ev.ticks = tb_get_u64(c->p + 16);
	c->p += 24;
	c->left -= 24;
	while (c->left && !rc)
		rc = batch_event(d, c, &ev);
	return rc;
}

static int rec_strings(struct dec *d, struct cur *c, uint64_t gen)
{
	uint64_t id, len;
	const uint8_t *s;
	int rc = 0;

	while (c->left && !rc) {
		const uint8_t *at = c->p;

		rc = get_varint(d, c, &id, "bad string id");
		if (!rc && !id)
			rc = bad(d, at, "string id 0");
		if (!rc)
			rc = get_bounded(d, c, &len, TB_MAX_STRING,
					 "bad string length");
		if (!rc)
			rc = get_bytes(d, c, len, &s, "string past its record");
		if (!rc && d->v->string)
			rc = d->v->string(d->arg, gen, id, (const char *)s,
					  len);
	}
	return rc;
}

static int rec_stacks(struct dec *d, struct cur *c, uint64_t gen)
{
	uint64_t pcs[TB_MAX_FRAMES], id, n;
	int rc = 0;

	while (c->left && !rc) {
		const uint8_t *at = c->p;

		rc = get_varint(d, c, &id, "bad stack id");
		if (!rc && !id)
			rc = bad(d, at, "stack id 0");
		if (!rc)
			rc = get_bounded(d, c, &n, TB_MAX_FRAMES,
					 "bad stack depth");
		if (!rc && !n)
			rc = bad(d, at, "empty stack");
		for (uint64_t i = 0; i < n && !rc; i++)
			rc = get_varint(d, c, &pcs[i], "bad stack frame");
		if (!rc && d->v->stack)
			rc = d->v->stack(d->arg, gen, id, pcs, n);
	}
	return rc;
}

static int rec_types(struct dec *d, struct cur *c, uint64_t gen)
{
	uint64_t type, nlen, slen;
	const uint8_t *name, *spec;
	int rc = 0;

	while (c->left && !rc) {
		const uint8_t *at = c->p;

		rc = get_bounded(d, c, &type, TB_MAX_TYPE, "bad type");
		if (!rc && !type)
			rc = bad(d, at, "type 0");
		if (!rc)
			rc = get_bounded(d, c, &nlen, TB_MAX_TYPE_NAME,
					 "bad type name");
		if (!rc)
			rc = get_bytes(d, c, nlen, &name,
				       "type name truncated");
		if (!rc)
			rc = get_bounded(d, c, &slen, TB_MAX_ARGS,
					 "bad type spec");
		if (!rc)
			rc = get_bytes(d, c, slen, &spec,
				       "type spec truncated");
		for (uint64_t i = 0; i < slen && !rc; i++)
			if (!memchr("usktb", spec[i], 5))
				rc = bad(d, spec + i,
					 "bad letter in type spec");
		if (!rc && d->v->type)
			rc = d->v->type(d->arg, gen, (unsigned int)type,
					(const char *)name, nlen,
					(const char *)spec, slen);
	}
	return rc;
}

static int rec_lost(struct dec *d, struct cur *c, uint64_t gen)
{
	uint64_t tid, level, count;
	int rc = 0;

	while (c->left && !rc) {
		rc = get_varint(d, c, &tid, "bad lost thread id");
		if (!rc)
			rc = get_bounded(d, c, &level, 1, "bad lost level");
		if (!rc)
			rc = get_varint(d, c, &count, "bad lost count");
		if (!rc && d->v->lost)
			rc = d->v->lost(d->arg, gen, tid, (unsigned int)level,
					count);
	}
	return rc;
}

static int rec_freq(struct dec *d, struct cur *c, uint64_t gen)
{
	uint64_t hz;

	if (c->left != 8)
		return bad(d, c->p, "frequency record of the wrong size");
	hz = tb_get_u64(c->p);
	if (!hz)
		return bad(d, c->p, "frequency 0");
	return d->v->freq ? d->v->freq(d->arg, gen, hz) : 0;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int rec_meminfo(struct dec *d, struct cur *c, uint64_t gen)
{
	uint64_t min_addr, align, page;

	if (c->left != 24)
		return bad(d, c->p, "memory info record of the wrong size");
	min_addr = tb_get_u64(c->p);
	align = tb_get_u64(c->p + 8);
	page = tb_get_u64(c->p + 16);
	if (!pow2(align) || !pow2(page))
		return bad(d, c->p + 8, "memory info: not a power of two");
	return d->v->mem_info
		       ? d->v->mem_info(d->arg, gen, min_addr, align, page)
		       : 0;
}

/* The open-generation slot of @gen, taking a free one if needed. */
static int open_gen(struct dec *d, uint64_t gen)
{
	int free_slot = -1;

	for (int i = 0; i < DEC_OPEN_GENS; i++) {
		if (d->open[i].gen == gen)
			return i;
		if (!d->open[i].gen && free_slot < 0)
			free_slot = i;
	}
	if (free_slot >= 0) {
		d->open[free_slot].gen = gen;
		d->open[free_slot].batches = 0;
	}
	return free_slot;
}

static int rec_end(struct dec *d, struct cur *c, uint64_t gen, int slot)
{
	uint64_t batches, flags;

	if (c->left != 16)
		return bad(d, c->p, "end record of the wrong size");
	batches = tb_get_u64(c->p);
	flags = tb_get_u64(c->p + 8);
	if (d->last_end && gen != d->last_end + 1)
		return bad(d, c->p, "generations end out of order");
	if (batches != d->open[slot].batches)
		return bad(d, c->p, "batch count does not match");
	for (int i = 0; i < DEC_OPEN_GENS; i++)
		if (d->open[i].gen && d->open[i].gen < gen)
			return bad(d, c->p,
				   "an earlier generation never ended");
	d->open[slot].gen = 0;
	d->last_end = gen;
	return d->v->gen_end ? d->v->gen_end(d->arg, gen, batches, flags) : 0;
}

static int record(struct dec *d, const uint8_t *at, uint8_t kind, uint8_t level,
		  struct cur *c)
{
	uint64_t gen;
	int slot;

	if (c->left < 8)
		return bad(d, at, "record without a generation");
	gen = tb_get_u64(c->p);
	c->p += 8;
	c->left -= 8;
	if (!gen || gen <= d->last_end)
		return bad(d, at, "record of a generation already ended");
	if (level > (kind == TB_KIND_BATCH))
		return bad(d, at + 1, "bad record level");
	slot = open_gen(d, gen);
	if (slot < 0)
		return bad(d, at, "too many generations open");
	switch (kind) {
	case TB_KIND_BATCH:
		d->open[slot].batches++;
		return rec_batch(d, c, gen, level);
	case TB_KIND_STRINGS:
		return rec_strings(d, c, gen);
	case TB_KIND_STACKS:
		return rec_stacks(d, c, gen);
	case TB_KIND_TYPES:
		return rec_types(d, c, gen);
	case TB_KIND_FREQ:
		return rec_freq(d, c, gen);
	case TB_KIND_LOST:
		return rec_lost(d, c, gen);
	case TB_KIND_END:
		return rec_end(d, c, gen, slot);
	case TB_KIND_MEMINFO:
		if (d->version >= 2)
			return rec_meminfo(d, c, gen);
		break;
	}
	return bad(d, at, "unknown record kind");
}

/* Check the 16-byte stream header at d->buf and take its version. */
static int stream_header(struct dec *d)
{
	if (memcmp(d->buf, TB_MAGIC, 8))
		return bad(d, d->buf, "not a profring trace");
	d->version = tb_get_u32(d->buf + 8);
	if (d->version < TB_VERSION_MIN || d->version > TB_VERSION ||
	    tb_get_u32(d->buf + 12))
		return bad(d, d->buf + 8, "unsupported trace version");
	return 0;
}

/*
 * records() - decode the whole records among the @len bytes at @p (a
 * record header is checked as soon as it is whole); *@used: the bytes of
 * those records.  Stops at a record that is not all there.
 */
static int records(struct dec *d, const uint8_t *p, size_t len, size_t *used)
{
	size_t off = 0;
	int rc = 0;

	while (len - off >= TB_REC_HDR && !rc) {
		const uint8_t *at = p + off;
		struct cur c;
		uint32_t plen = tb_get_u32(at + 4);

		if (at[2] || at[3])
			return bad(d, at + 2, "reserved bytes not zero");
		if (plen > TB_MAX_REC_PAYLOAD)
			return bad(d, at + 4, "record length over the limit");
		if (plen > len - off - TB_REC_HDR)
			break;
		c.p = at + TB_REC_HDR;
		c.left = plen;
		rc = record(d, at, at[0], at[1], &c);
		off += TB_REC_HDR + plen;
	}
	*used = off;
	return rc;
}

/* The stream ends @left bytes after the whole records at @at. */
static int truncated(struct dec *d, const uint8_t *at, size_t left)
{
	if (!left)
		return 0;
	/* Truncated: the offset is the record's (see tracedec.h). */
	return bad(d, at,
		   left < TB_REC_HDR ? "record header truncated"
				     : "record truncated");
}

RING_API int tracedec_decode(const uint8_t *buf, size_t len,
			     const struct tracedec_visitor *v, void *arg,
			     struct tracedec_error *err)
{
	static const struct tracedec_visitor none;
	struct dec d = {
		.buf = buf, .v = v ? v : &none, .arg = arg, .err = err
	};
	size_t used;
	int rc;

	if (!buf || len < TB_STREAM_HDR)
		return bad(&d, buf, "not a profring trace");
	rc = stream_header(&d);
	if (!rc)
		rc = records(&d, buf + TB_STREAM_HDR, len - TB_STREAM_HDR,
			     &used);
	if (!rc)
		rc = truncated(&d, buf + TB_STREAM_HDR + used,
			       len - TB_STREAM_HDR - used);
	return rc;
}

/* ---- the incremental form ------------------------------------------------ */

struct tracedec_stream {
	struct dec d;
	struct tracedec_visitor v;
	size_t off; /* stream bytes consumed: the next record's offset */
	bool header; /* the stream header is consumed */
	int rc; /* the first failure, returned again */
	struct tracedec_error err;
};

RING_API struct tracedec_stream *
tracedec_stream_new(const struct tracedec_visitor *v, void *arg)
{
	struct tracedec_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (v)
		s->v = *v;
	s->d.v = &s->v;
	s->d.arg = arg;
	s->d.err = &s->err;
	return s;
}

RING_API void tracedec_stream_free(struct tracedec_stream *s)
{
	free(s);
}

/* Remember the first failure, and say it (again) in @err. */
static int stream_rc(struct tracedec_stream *s, int rc,
		     struct tracedec_error *err)
{
	if (rc && !s->rc)
		s->rc = rc;
	if (s->rc == -EBADMSG && err)
		*err = s->err;
	return s->rc;
}

RING_API int tracedec_stream_feed(struct tracedec_stream *s, const uint8_t *buf,
				  size_t len, size_t *used,
				  struct tracedec_error *err)
{
	size_t n = 0, hdr = 0;
	int rc = 0;

	if (used)
		*used = 0;
	if (!s || (!buf && len) || !used)
		return -EINVAL;
	if (s->rc)
		return stream_rc(s, 0, err);
	s->d.buf = buf;
	s->d.base_off = s->off;
	if (!s->header) {
		/* A wrong magic is said as soon as its bytes are there. */
		if (memcmp(buf, TB_MAGIC, len < 8 ? len : 8))
			return stream_rc(
				s, bad(&s->d, buf, "not a profring trace"),
				err);
		if (len < TB_STREAM_HDR)
			return 0;
		rc = stream_header(&s->d);
		if (rc)
			return stream_rc(s, rc, err);
		s->header = true;
		hdr = TB_STREAM_HDR;
	}
	rc = records(&s->d, buf + hdr, len - hdr, &n);
	*used = hdr + n;
	s->off += hdr + n;
	return stream_rc(s, rc, err);
}

RING_API int tracedec_stream_end(struct tracedec_stream *s, size_t left,
				 struct tracedec_error *err)
{
	if (!s)
		return -EINVAL;
	static const uint8_t here;

	if (s->rc)
		return stream_rc(s, 0, err);
	/* Offsets from here on are s->off's. */
	s->d.buf = &here;
	s->d.base_off = s->off;
	if (!s->header)
		return stream_rc(s, bad(&s->d, &here, "not a profring trace"),
				 err);
	return stream_rc(s, truncated(&s->d, &here, left), err);
}
