// SPDX-License-Identifier: MIT
/*
 * trace_roundtrip_fuzz.c - events from the input, through the tracer and
 * back through the decoder: what comes out must be what went in.
 *
 * The input is read as a list of operations: events with 0 to
 * TRACEBUF_MAX_ARGS arguments of any size, events with byte payloads (0 to
 * TRACEBUF_MAX_PAYLOAD bytes), events carrying an interned string and an
 * interned stack, and generation advances.
 * One thread writes them; the stream is read to EOF and decoded.  Every
 * event must come back in order with its type, arguments or payload, in
 * the generation it was written in, with its string and stack ids
 * resolving, in that generation's tables, to the string and PCs given.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "trace_roundtrip_fuzz"
#include "fuzz_input.h"
#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#define MAX_OPS 512
#define MAX_TABLE 4096

struct op {
	unsigned int type, nargs;
	uint64_t args[TRACEBUF_MAX_ARGS];
	uint64_t gen;
	size_t nbytes, nstack;
	uint8_t bytes[TRACEBUF_MAX_PAYLOAD];
	char str[32];
	uintptr_t stack[8];
	bool interned;
};

struct table_ent {
	uint64_t gen, id;
	size_t n;
	uint64_t w[8];
	char s[32];
};

struct run {
	struct op *ops;
	size_t nops, next;
	struct table_ent *strings, *stacks;
	size_t nstrings, nstacks;
	uint64_t gen;
};

static uint64_t value(struct fuzz_input *in)
{
	uint64_t v = 0;
	unsigned int n = fuzz_byte(in) % 9;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | fuzz_byte(in);
	return v;
}

/* Decode the next operation; false at an advance (returns the op unset). */
static bool parse_op(struct fuzz_input *in, struct op *o)
{
	uint8_t k = fuzz_byte(in);

	memset(o, 0, sizeof(*o));
	/* Any type tracebuf_ev_emit() takes: the user's, not the library's. */
	o->type = TRACEBUF_EV_USER +
		  k % (TRACEBUF_MAX_TYPE + 1 - TRACEBUF_EV_USER);
	switch (k >> 5) {
	case 0:
		return false; /* advance */
	case 1:
		o->nbytes = fuzz_byte(in) * 4;
		if (o->nbytes > TRACEBUF_MAX_PAYLOAD)
			o->nbytes = TRACEBUF_MAX_PAYLOAD;
		for (size_t i = 0; i < o->nbytes; i++)
			o->bytes[i] = (uint8_t)(i * 31 + k);
		o->nargs = 0;
		o->nstack = SIZE_MAX; /* a payload event */
		return true;
	case 2:
		o->interned = true;
		snprintf(o->str, sizeof(o->str), "s%u", fuzz_byte(in) % 16);
		o->nstack = 1 + fuzz_byte(in) % 8;
		for (size_t i = 0; i < o->nstack; i++)
			o->stack[i] = 0x1000 + (fuzz_byte(in) % 4) * 8;
		o->nargs = 2;
		return true;
	default:
		o->nargs = fuzz_byte(in) % (TRACEBUF_MAX_ARGS + 1);
		for (unsigned int i = 0; i < o->nargs; i++)
			o->args[i] = value(in);
		return true;
	}
}

static int write_op(struct tracebuf *t, struct op *o)
{
	struct tracebuf_ev ev;
	int rc = tracebuf_begin(t, &ev);

	if (rc)
		return rc;
	if (o->nstack == SIZE_MAX) {
		rc = tracebuf_ev_emit_bytes(&ev, o->type, o->bytes, o->nbytes);
	} else {
		if (o->interned) {
			o->args[0] = tracebuf_ev_string(&ev, o->str);
			o->args[1] =
				tracebuf_ev_stack(&ev, o->stack, o->nstack);
		}
		rc = tracebuf_ev_emit(&ev, o->type, o->args, o->nargs);
	}
	o->gen = ev.gen;
	tracebuf_end(&ev);
	return rc;
}

/* ---- checking what comes back ------------------------------------------- */

static int on_event(void *arg, const struct tracedec_event *ev)
{
	struct run *r = arg;
	struct op *o;

	if (r->next >= r->nops)
		fuzz_fail("more events than written", (long long)r->next, 0);
	o = &r->ops[r->next++];
	if (ev->type != o->type || ev->gen != o->gen || ev->level)
		fuzz_fail("event type, generation or level", ev->type, o->type);
	if (o->nstack == SIZE_MAX) {
		if (ev->nargs || ev->nbytes != o->nbytes ||
		    (o->nbytes && memcmp(ev->bytes, o->bytes, o->nbytes)))
			fuzz_fail("payload", (long long)ev->nbytes,
				  (long long)o->nbytes);
		return 0;
	}
	if (ev->nargs != o->nargs || ev->nbytes ||
	    memcmp(ev->args, o->args, o->nargs * sizeof(uint64_t)))
		fuzz_fail("arguments", ev->nargs, o->nargs);
	return 0;
}

static int on_string(void *arg, uint64_t gen, uint64_t id, const char *s,
		     size_t len)
{
	struct run *r = arg;
	struct table_ent *e;

	if (r->nstrings == MAX_TABLE || len >= sizeof(e->s))
		fuzz_fail("string table", (long long)len, 0);
	e = &r->strings[r->nstrings++];
	e->gen = gen;
	e->id = id;
	memcpy(e->s, s, len);
	e->s[len] = 0;
	return 0;
}

static int on_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		    size_t n)
{
	struct run *r = arg;
	struct table_ent *e;

	if (r->nstacks == MAX_TABLE || n > 8)
		fuzz_fail("stack table", (long long)n, 0);
	e = &r->stacks[r->nstacks++];
	e->gen = gen;
	e->id = id;
	e->n = n;
	memcpy(e->w, pcs, n * sizeof(*pcs));
	return 0;
}

static const struct table_ent *find(const struct table_ent *t, size_t n,
				    uint64_t gen, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].gen == gen && t[i].id == id)
			return &t[i];
	return NULL;
}

/* Interned ids resolve, in their generation, to what was given. */
static void check_ids(struct run *r)
{
	for (size_t i = 0; i < r->nops; i++) {
		const struct op *o = &r->ops[i];
		const struct table_ent *s, *k;

		if (!o->interned)
			continue;
		s = find(r->strings, r->nstrings, o->gen, o->args[0]);
		k = find(r->stacks, r->nstacks, o->gen, o->args[1]);
		if (!s || strcmp(s->s, o->str))
			fuzz_fail("string id does not resolve", (long long)i,
				  (long long)o->args[0]);
		if (!k || k->n != o->nstack)
			fuzz_fail("stack id does not resolve", (long long)i,
				  (long long)o->args[1]);
		for (size_t f = 0; f < o->nstack; f++)
			if (k->w[f] != o->stack[f])
				fuzz_fail("stack frames", (long long)i,
					  (long long)f);
	}
}

static uint8_t *read_stream(struct tracebuf *t, size_t *len)
{
	struct tracebuf_chunk c;
	uint8_t *p = NULL;
	size_t cap = 0;

	*len = 0;
	while (tracebuf_read(t, PROFBUF_BLOCKING, &c) == 0 && !c.eof) {
		if (*len + c.len > cap) {
			cap = (*len + c.len) * 2;
			p = realloc(p, cap);
		}
		memcpy(p + *len, c.data, c.len);
		*len += c.len;
	}
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tracebuf_opts opts = { .buf_size = 4096,
				      .max_bytes = 4 << 20,
				      .stack_bytes = 1 << 16,
				      .expected_stacks = 16,
				      .cpu_words = 0 };
	struct fuzz_input in = { data, size };
	struct run r = { 0 };
	struct tracedec_error err;
	struct tracebuf *t = tracebuf_new(&opts);
	uint8_t *stream;
	size_t len;
	int rc;

	if (!t)
		fuzz_fail("tracebuf_new", errno, 0);
	r.ops = calloc(MAX_OPS, sizeof(*r.ops));
	r.strings = calloc(MAX_TABLE, sizeof(*r.strings));
	r.stacks = calloc(MAX_TABLE, sizeof(*r.stacks));
	rc = tracebuf_start(t);
	if (rc)
		fuzz_fail("tracebuf_start", rc, 0);
	while (in.left && r.nops < MAX_OPS) {
		if (!parse_op(&in, &r.ops[r.nops])) {
			rc = tracebuf_advance(t);
			if (rc)
				fuzz_fail("tracebuf_advance", rc, 0);
			continue;
		}
		rc = write_op(t, &r.ops[r.nops]);
		if (rc)
			fuzz_fail("write", rc, (long long)r.nops);
		r.nops++;
	}
	rc = tracebuf_stop(t);
	if (rc)
		fuzz_fail("tracebuf_stop", rc, 0);
	stream = read_stream(t, &len);
	rc = tracedec_decode(stream, len,
			     &(struct tracedec_visitor){ .event = on_event,
							 .string = on_string,
							 .stack = on_stack },
			     &r, &err);
	if (rc)
		fuzz_fail(err.what ? err.what : "decode", rc,
			  (long long)err.offset);
	if (r.next != r.nops)
		fuzz_fail("events missing", (long long)r.next,
			  (long long)r.nops);
	check_ids(&r);
	free(stream);
	free(r.ops);
	free(r.strings);
	free(r.stacks);
	tracebuf_free(t);
	return 0;
}
