/* SPDX-License-Identifier: MIT */
/*
 * tracebuf/tracebuf_format.h - constants and field helpers of the trace
 * stream (FORMAT.md), shared by the writer and the decoder.
 *
 * The limits below are the format's, each defined here once; FORMAT.md
 * states them under these names.  The public headers cannot include this
 * one, so they spell the limits their users need again
 * (TRACEBUF_MAX_ARGS, TRACEDEC_MAX_ARGS, ...), and tracebuf.c and
 * tracedec.c pin every such copy to the definition here with a
 * _Static_assert.
 */
#ifndef PROFRING_TRACEBUF_FORMAT_H
#define PROFRING_TRACEBUF_FORMAT_H

#include <stdint.h>
#include <string.h>

#define TB_MAGIC "PRTRACE\n"
#define TB_VERSION 3
/* The oldest version the decoder reads: 1 has no memory records. */
#define TB_VERSION_MIN 1
#define TB_STREAM_HDR 16
#define TB_REC_HDR 8
#define TB_BATCH_HDR (TB_REC_HDR + 32)
#define TB_MAX_REC_PAYLOAD ((uint32_t)1 << 26)

/* Event types are 1 ... TB_MAX_TYPE (5 bits of the event's first byte). */
#define TB_MAX_TYPE 31
/* Arguments per event: 0 ... TB_MAX_ARGS (3 bits, less TB_NARGS_BYTES). */
#define TB_MAX_ARGS 6
/* The argument count that says a byte payload follows instead. */
#define TB_NARGS_BYTES 7
/* Bytes in an event's payload. */
#define TB_MAX_PAYLOAD 1024
/* Bytes in a string of an S record. */
#define TB_MAX_STRING 1000
/* Frames in a stack of a K record. */
#define TB_MAX_FRAMES 128
/* Bytes in a type name of a T record (its spec: TB_MAX_ARGS letters). */
#define TB_MAX_TYPE_NAME 255
/*
 * A CPU sample ("Library event types"): arguments sample ticks, sampled
 * thread, stack id, count.
 */
#define TB_EV_CPU_SAMPLE 1
/*
 * A span (version 3): arguments name (a string id), start ticks, then up
 * to TB_MAX_ARGS - 2 of the writer's.
 */
#define TB_EV_SPAN 6
/*
 * A span of a thread (version 3): arguments name (a string id), start
 * ticks, thread id, end ticks, stack id (0: none); exactly TB_SPAN_OF_ARGS.
 */
#define TB_EV_SPAN_OF 7
#define TB_SPAN_OF_ARGS 5

enum tb_kind {
	TB_KIND_BATCH = 'B',
	TB_KIND_STRINGS = 'S',
	TB_KIND_STACKS = 'K',
	TB_KIND_TYPES = 'T',
	TB_KIND_FREQ = 'F',
	TB_KIND_LOST = 'L',
	TB_KIND_END = 'E',
	TB_KIND_MEMINFO = 'M', /* version 2 */
};

#define TB_END_TABLES_LOST 1u

static inline void tb_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void tb_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t tb_get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t tb_get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void tb_put_rec_hdr(uint8_t *p, uint8_t kind, uint8_t level,
				  uint32_t len)
{
	p[0] = kind;
	p[1] = level;
	p[2] = p[3] = 0;
	tb_put_u32(p + 4, len);
}

static inline void tb_put_stream_hdr(uint8_t *p)
{
	memcpy(p, TB_MAGIC, 8);
	tb_put_u32(p + 8, TB_VERSION);
	tb_put_u32(p + 12, 0);
}

#endif /* PROFRING_TRACEBUF_FORMAT_H */
