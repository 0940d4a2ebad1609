// SPDX-License-Identifier: MIT
/*
 * varint_fuzz.c - LEB128 both ways.
 *
 * Every 8 input bytes are a value: encoding it and decoding the result
 * must give it back in the same number of bytes (1-10).  The input is also
 * decoded as raw bytes: whatever ring_varint_get() accepts must re-encode
 * to the same value, never reading past the bytes it was given.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring/varint.h"

static void fail(const char *what, uint64_t v)
{
	fprintf(stderr, "varint_fuzz: %s (%llu)\n", what,
		(unsigned long long)v);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[RING_VARINT_MAX];
	uint8_t *copy = malloc(size ? size : 1);
	size_t off = 0;

	for (size_t i = 0; i + 8 <= size; i += 8) {
		uint64_t v, back;
		size_t n;

		memcpy(&v, data + i, 8);
		n = ring_varint_put(buf, v);
		if (n < 1 || n > RING_VARINT_MAX ||
		    ring_varint_get(buf, n, &back) != n || back != v)
			fail("round trip", v);
		if (n > 1 && ring_varint_get(buf, n - 1, &back))
			fail("a truncated varint was accepted", v);
	}
	/* Raw bytes, from an exact-size copy so ASan sees any over-read. */
	if (size)
		memcpy(copy, data, size);
	while (off < size) {
		uint64_t v;
		size_t n = ring_varint_get(copy + off, size - off, &v);

		if (!n) {
			off++;
			continue;
		}
		if (ring_varint_put(buf, v) > n)
			fail("re-encoding grew", v);
		off += n;
	}
	free(copy);
	return 0;
}
