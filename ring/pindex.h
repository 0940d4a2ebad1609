/* SPDX-License-Identifier: MIT */
/*
 * ring/pindex.h - the packed ring index: two counts and two flags in one
 * 64-bit word, so that both can be moved by a single compare-and-swap.
 *
 *   bits  0..31  data count (words), wraps at 2^32
 *   bit  32      flag A (profbuf: reader sleeping)
 *   bit  33      flag B (profbuf: extra information pending)
 *   bits 34..63  tag count (records), wraps at 2^30
 *
 * Counts are absolute and wrap; a position in a ring of 2^k entries
 * (k <= 28) is the count modulo 2^k, which stays right across the wrap
 * because 2^k divides both 2^32 and 2^30.  Two counts are compared with
 * ring_count_sub(), which sign-extends their 30-bit difference: correct as
 * long as they are less than 2^29 apart, which holds because rings are
 * smaller than 2^28.
 */
#ifndef PROFRING_RING_PINDEX_H
#define PROFRING_RING_PINDEX_H

#include <stdint.h>

#define RING_PINDEX_FLAG_A ((uint64_t)1 << 32)
#define RING_PINDEX_FLAG_B ((uint64_t)1 << 33)
#define RING_PINDEX_FLAGS (RING_PINDEX_FLAG_A | RING_PINDEX_FLAG_B)
#define RING_PINDEX_TAG_SHIFT 34
#define RING_TAG_COUNT_MASK (((uint32_t)1 << 30) - 1)
/* Largest ring (words or tags) the packed counts can index. */
#define RING_PINDEX_MAX_ENTRIES ((uint32_t)1 << 28)

static inline uint32_t ring_pindex_data(uint64_t x)
{
	return (uint32_t)x;
}

static inline uint32_t ring_pindex_tag(uint64_t x)
{
	return (uint32_t)(x >> RING_PINDEX_TAG_SHIFT);
}

static inline uint64_t ring_pindex_make(uint32_t data, uint32_t tag)
{
	return (uint64_t)(tag & RING_TAG_COUNT_MASK) << RING_PINDEX_TAG_SHIFT |
	       data;
}

/**
 * ring_count_sub() - @x - @y for two data counts or two tag counts.
 *
 * The difference is computed modulo 2^32 and sign-extended from 30 bits,
 * which is right for data counts (wrapping at 2^32) and tag counts
 * (wrapping at 2^30) alike, provided |x - y| < 2^29.
 */
static inline int32_t ring_count_sub(uint32_t x, uint32_t y)
{
	return (int32_t)((x - y) << 2) >> 2;
}

/**
 * ring_pindex_add() - advance both counts of @x, keeping its flags.
 */
static inline uint64_t ring_pindex_add(uint64_t x, uint32_t data, uint32_t tag)
{
	return ring_pindex_make(ring_pindex_data(x) + data,
				ring_pindex_tag(x) + tag) |
	       (x & RING_PINDEX_FLAGS);
}

#endif /* PROFRING_RING_PINDEX_H */
