/* SPDX-License-Identifier: MIT */
/*
 * testing/trace_stream.h - collect a tracer's stream in memory, for the
 * tests that decode it.
 */
#ifndef PROFRING_TESTING_TRACE_STREAM_H
#define PROFRING_TESTING_TRACE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <profring/tracebuf.h>

struct stream {
	uint8_t *p;
	size_t len, cap;
	bool eof;
};

/* Append @n bytes (aborts on OOM: a test cannot go on without them). */
void stream_add(struct stream *s, const uint8_t *p, size_t n);

/* Read until nothing is ready (or EOF). */
void read_ready(struct tracebuf *t, struct stream *s);

/* Read until EOF (the tracer must be stopped, or be stopped by another
 * thread). */
void read_to_eof(struct tracebuf *t, struct stream *s);

#endif /* PROFRING_TESTING_TRACE_STREAM_H */
