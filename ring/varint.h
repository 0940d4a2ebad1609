/* SPDX-License-Identifier: MIT */
/*
 * ring/varint.h - unsigned LEB128: 7 bits a byte, low bits first, the high
 * bit set on every byte but the last.  A uint64_t takes 1 to 10 bytes.
 */
#ifndef PROFRING_RING_VARINT_H
#define PROFRING_RING_VARINT_H

#include <stddef.h>
#include <stdint.h>

#include <profring/tracebuf_inline.h>

#define RING_VARINT_MAX TRACEBUF__VARINT_MAX

/*
 * Write @v at @p (room for RING_VARINT_MAX bytes); return the bytes used.
 * The encoder is the public header's, which tracebuf_emit()'s inline path
 * uses: one encoder for the library and its inline callers.
 */
static inline size_t ring_varint_put(uint8_t *p, uint64_t v)
{
	return tracebuf__varint_put(p, v);
}

/*
 * Read a varint from @p (@left bytes available) into @v.
 * Return: bytes used, or 0 if it is truncated, longer than 10 bytes, or
 * overflows 64 bits.
 */
static inline size_t ring_varint_get(const uint8_t *p, size_t left, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < left && i < RING_VARINT_MAX; i++) {
		uint64_t b = p[i] & 0x7f;

		if (i == RING_VARINT_MAX - 1 && b > 1)
			return 0;
		x |= b << (7 * i);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

#endif /* PROFRING_RING_VARINT_H */
