// SPDX-License-Identifier: MIT
/*
 * trace_decode_fuzz.c - arbitrary bytes into the trace decoder, and into
 * the memory replay (tracedec_mem_check()).
 *
 * The decoder must return 0 or -EBADMSG with an offset inside the input,
 * never crash, hang, read out of bounds (ASan: the input is an exact-size
 * copy) or allocate; a truncated record's offset must be the record's
 * own, all before it valid.  Half the inputs get a valid stream header in
 * front, so that the fuzzer spends its time on records rather than on the
 * magic.  A visitor touches every field it is handed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracedec.h>

#include "tracebuf/tracebuf_format.h"

static uint64_t sink;

static int on_event(void *arg, const struct tracedec_event *ev)
{
	(void)arg;
	sink += ev->gen + ev->tid + ev->ticks + ev->type + ev->nargs;
	for (unsigned int i = 0; i < ev->nargs; i++)
		sink += ev->args[i];
	for (size_t i = 0; i < ev->nbytes; i++)
		sink += ev->bytes[i];
	return 0;
}

static int on_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		    size_t n)
{
	(void)arg;
	for (size_t i = 0; i < n; i++)
		sink += pcs[i];
	sink += gen + id;
	return 0;
}

static int on_string(void *arg, uint64_t gen, uint64_t id, const char *s,
		     size_t len)
{
	(void)arg;
	for (size_t i = 0; i < len; i++)
		sink += (uint8_t)s[i];
	sink += gen + id;
	return 0;
}

static const struct tracedec_visitor visitor = {
	.event = on_event,
	.stack = on_stack,
	.string = on_string,
};

/* Every generation's counts add up: no more live than ever came in. */
static int on_mem_gen(void *arg, const struct tracedec_mem_gen *g)
{
	(void)arg;
	if (g->live_objects > g->exists + g->allocs ||
	    g->unknown_frees > g->frees) {
		fprintf(stderr,
			"trace_decode_fuzz: mem gen %llu inconsistent\n",
			(unsigned long long)g->gen);
		abort();
	}
	return 0;
}

static const struct tracedec_mem_visitor mem_visitor = { .gen = on_mem_gen };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool framed = size && (data[0] & 1);
	size_t len = size + (framed ? TB_STREAM_HDR - 1 : 0);
	uint8_t *buf = malloc(len ? len : 1);
	struct tracedec_error err = { .offset = SIZE_MAX };
	int rc;

	if (framed) {
		tb_put_stream_hdr(buf);
		memcpy(buf + TB_STREAM_HDR, data + 1, size - 1);
	} else if (size) {
		memcpy(buf, data, size);
	}
	rc = tracedec_decode(buf, len, &visitor, NULL, &err);
	if (rc && (rc != -EBADMSG || err.offset > len || !err.what)) {
		fprintf(stderr, "trace_decode_fuzz: rc %d offset %zu\n", rc,
			err.offset);
		abort();
	}
	/* A truncated record's offset is its own: all before it is valid. */
	if (rc &&
	    (!strcmp(err.what, "record truncated") ||
	     !strcmp(err.what, "record header truncated")) &&
	    tracedec_decode(buf, err.offset, NULL, NULL, NULL)) {
		fprintf(stderr,
			"trace_decode_fuzz: %s at %zu: before not valid\n",
			err.what, err.offset);
		abort();
	}
	/* The memory replay takes what the decoder takes, and agrees. */
	if (tracedec_mem_check(buf, len, &mem_visitor, NULL, NULL) !=
	    (rc ? -EBADMSG : 0)) {
		fprintf(stderr, "trace_decode_fuzz: mem_check disagrees\n");
		abort();
	}
	free(buf);
	return 0;
}
