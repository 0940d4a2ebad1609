/* SPDX-License-Identifier: MIT */
/*
 * ring/hash.h - a fast hash of a word array (stacks of PCs).
 *
 * Four independent multiply-xor lanes, so that a 32-word stack costs about
 * eight dependent multiplies, then a final avalanche.  Not cryptographic:
 * callers compare the words on a hash match.
 */
#ifndef PROFRING_RING_HASH_H
#define PROFRING_RING_HASH_H

#include <stddef.h>
#include <stdint.h>

#define RING_HASH_K1 0x9e3779b97f4a7c15ull
#define RING_HASH_K2 0xbf58476d1ce4e5b9ull

static inline uint64_t ring_hash_lane(uint64_t acc, uint64_t w)
{
	acc ^= w;
	acc *= RING_HASH_K1;
	return acc ^ (acc >> 32);
}

static inline uint64_t ring_hash_words(const uintptr_t *w, size_t n)
{
	uint64_t a = n, b = RING_HASH_K2, c = ~(uint64_t)n, d = RING_HASH_K1;
	size_t i = 0;

	for (; i + 4 <= n; i += 4) {
		a = ring_hash_lane(a, w[i]);
		b = ring_hash_lane(b, w[i + 1]);
		c = ring_hash_lane(c, w[i + 2]);
		d = ring_hash_lane(d, w[i + 3]);
	}
	for (; i < n; i++)
		a = ring_hash_lane(a, w[i]);
	a ^= (b << 21 | b >> 43) ^ (c << 42 | c >> 22) ^ d;
	a = (a ^ (a >> 30)) * RING_HASH_K2;
	a = (a ^ (a >> 27)) * 0x94d049bb133111ebull;
	return a ^ (a >> 31);
}

#endif /* PROFRING_RING_HASH_H */
