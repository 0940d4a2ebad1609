// SPDX-License-Identifier: MIT
/*
 * testing/trace_stream.c - see trace_stream.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing/trace_stream.h"

void stream_add(struct stream *s, const uint8_t *p, size_t n)
{
	if (!n)
		return;
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2 + 4096;
		s->p = realloc(s->p, s->cap);
		if (!s->p) {
			fprintf(stderr, "stream_add: out of memory\n");
			abort();
		}
	}
	memcpy(s->p + s->len, p, n);
	s->len += n;
}

void read_ready(struct tracebuf *t, struct stream *s)
{
	struct tracebuf_chunk c;

	while (!s->eof && tracebuf_read(t, PROFBUF_NONBLOCKING, &c) == 0 &&
	       (c.len || c.eof)) {
		stream_add(s, c.data, c.len);
		s->eof = c.eof;
	}
}

void read_to_eof(struct tracebuf *t, struct stream *s)
{
	struct tracebuf_chunk c;

	while (!s->eof && tracebuf_read(t, PROFBUF_BLOCKING, &c) == 0) {
		stream_add(s, c.data, c.len);
		s->eof = c.eof;
	}
}
