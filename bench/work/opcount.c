// SPDX-License-Identifier: MIT
/*
 * bench/work/opcount.c - the write paths one operation at a time, for
 * instruction counts under callgrind (the timing benchmarks are noisy on
 * a shared machine; instruction counts are not).
 *
 *	valgrind --tool=callgrind --callgrind-out-file=/tmp/oc.out \
 *		--toggle-collect='op_*' build/bench/opcount
 *	callgrind_annotate --inclusive=yes /tmp/oc.out | grep op_
 *
 * Each op_<case>() is a noinline loop of OPS operations of its case and
 * nothing else; the set-up and the untimed drains (profbuf reads,
 * tracebuf reads) sit outside them.  Ir of op_<case>, inclusive, divided
 * by OPS, is the instructions per operation; the anchors of the timing
 * benchmarks (the floors, the seqlock) are here too, written the same way.
 * It also checks what it wrote (every call must return 0), so that a
 * broken path cannot look cheap.  pb_write_* write as a C caller does
 * (profbuf_write()'s fast path inline), pb_call_* through the library
 * symbol, as a binary built without the inline path does; likewise
 * tb_emit_* (tracebuf_emit() inline) and tb_call_*.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/profbuf.h>
#include <profring/stacktab.h>
#include <profring/tracebuf.h>

#include "ring/clock.h"
#include "ring/compiler.h"
#include "ring/hash.h"
#include "ring/varint.h"

#define OPS 1000u
#define HDRSIZE 2
#define DEPTH 32

static uint64_t hdr[HDRSIZE] = { 0x1d, 0x2e };
static uintptr_t stk[64];
static uint64_t floor_ring[1024 * 66];
static _Atomic uint64_t floor_head;
static uint8_t flr_data[1 << 16];
static uint32_t flr_pos;
static uint64_t flr_last;
static _Atomic uint64_t flr_seq;
/* On the heap, as an unwinder's buffer (and no array bound for GCC). */
static uintptr_t *pcs;
/* DEPTH at run time: the floor hashes a length it cannot see, as stacktab. */
static volatile size_t depth = DEPTH; /* volatile: never folded */
static int bad;
/* The floor's stack length by record size, set at run time as the bench's. */
static size_t stk_len[67];

/* OPS writes of n words by @write: profbuf_write (inline) or (profbuf_write). */
#define PB_OP(name, write, n)                                          \
	static __attribute__((noinline)) void name(struct profbuf *b)  \
	{                                                              \
		for (unsigned int i = 0; i < OPS; i++)                 \
			bad |= write(b, hdr, i + 1, hdr, HDRSIZE, stk, \
				     stk_len[n]);                      \
	}

#define PB_CASE(n)                                                             \
	PB_OP(op_pb_write_##n##w, profbuf_write, n)                            \
	PB_OP(op_pb_call_##n##w, (profbuf_write), n)                           \
	static __attribute__((noinline)) void op_floor_##n##w(void)            \
	{                                                                      \
		for (unsigned int i = 0; i < OPS; i++) {                       \
			uint64_t old = atomic_load_explicit(                   \
				&floor_head, memory_order_relaxed);            \
			uint64_t *d;                                           \
			while (!atomic_compare_exchange_strong(&floor_head,    \
							       &old, old + 1)) \
				;                                              \
			d = floor_ring + (old & 1023) * n;                     \
			d[0] = n;                                              \
			d[1] = i;                                              \
			memcpy(d + 2, hdr, sizeof(hdr));                       \
			memcpy(d + 4, stk, stk_len[n] * sizeof(*d));           \
		}                                                              \
	}

PB_CASE(8)
PB_CASE(34)
PB_CASE(66)

static void pb_drain(struct profbuf *b)
{
	struct profbuf_read rd;
	size_t got = 0;

	do {
		if (profbuf_read(b, PROFBUF_NONBLOCKING, &rd))
			bad = 1;
		got += rd.ntags;
	} while (rd.ndata);
	if (got != OPS)
		bad = 1;
}

static inline void flr_event(const uint64_t *a, unsigned int nargs)
{
	uint64_t now;
	uint8_t *p;

	if (flr_pos + 1 + 10 * (1 + nargs) > sizeof(flr_data))
		flr_pos = 0;
	p = flr_data + flr_pos;
	now = ring_clock_ticks();
	*p++ = (uint8_t)(8 << 3 | nargs);
	p += ring_varint_put(p, now > flr_last ? now - flr_last : 0);
	if (now > flr_last)
		flr_last = now;
	for (unsigned int i = 0; i < nargs; i++)
		p += ring_varint_put(p, a[i]);
	flr_pos = (uint32_t)(p - flr_data);
}

/* OPS events of n args by @emit: tracebuf_emit (inline) or (tracebuf_emit). */
#define TB_OP(name, emit, n)                                               \
	static __attribute__((noinline)) void name(struct tracebuf *t)     \
	{                                                                  \
		uint64_t a[4];                                             \
		for (unsigned int i = 0; i < OPS; i++) {                   \
			uint64_t h = (i * 0x9e3779b97f4a7c15ull) >> 16;    \
			a[0] = i, a[1] = h, a[2] = i & 63, a[3] = h >> 20; \
			bad |= emit(t, 8, a, n);                           \
		}                                                          \
	}

#define TB_CASE(n)                                                         \
	TB_OP(op_tb_emit_##n, tracebuf_emit, n)                            \
	TB_OP(op_tb_call_##n, (tracebuf_emit), n)                          \
	static __attribute__((noinline)) void op_floor_emit_##n(void)      \
	{                                                                  \
		uint64_t a[4];                                             \
		for (unsigned int i = 0; i < OPS; i++) {                   \
			uint64_t h = (i * 0x9e3779b97f4a7c15ull) >> 16;    \
			a[0] = i, a[1] = h, a[2] = i & 63, a[3] = h >> 20; \
			flr_event(a, n);                                   \
		}                                                          \
	}                                                                  \
	static __attribute__((noinline)) void op_seqlock_emit_##n(void)    \
	{                                                                  \
		uint64_t a[4];                                             \
		for (unsigned int i = 0; i < OPS; i++) {                   \
			uint64_t h = (i * 0x9e3779b97f4a7c15ull) >> 16;    \
			a[0] = i, a[1] = h, a[2] = i & 63, a[3] = h >> 20; \
			atomic_fetch_add(&flr_seq, 1);                     \
			flr_event(a, n);                                   \
			atomic_fetch_add(&flr_seq, 1);                     \
		}                                                          \
	}

TB_CASE(0)
TB_CASE(2)
TB_CASE(4)

static __attribute__((noinline)) void op_tb_emit_stack(struct tracebuf *t)
{
	struct tracebuf_ev ev;
	uint64_t a[2];

	for (unsigned int i = 0; i < OPS; i++) {
		if (tracebuf_begin(t, &ev)) {
			bad = 1;
			continue;
		}
		a[0] = i;
		a[1] = tracebuf_ev_stack(&ev, pcs, 16);
		bad |= tracebuf_ev_emit(&ev, 8, a, 2);
		tracebuf_end(&ev);
	}
}

/*
 * The stack row's anchors, as trace_bench's but leaner: hash the same 16
 * PCs (a length GCC cannot see) and compare the hash and the PCs with a
 * copy found by index (@copy, its hash in copy[DEPTH]), the id being the
 * compare's result (trace_bench also compares the length and loads the
 * id from the copy); then write { i, id }; the seqlock's two adds around
 * it.
 */
static volatile size_t depth16 = 16;

static inline uint64_t flr_intern(const uintptr_t *copy)
{
	size_t n = depth16;
	uint64_t h = ring_hash_words(pcs, n);

	return h == copy[DEPTH] && !memcmp(pcs, copy, n * sizeof(*pcs));
}

static __attribute__((noinline)) void op_floor_emit_stack(const uintptr_t *c)
{
	uint64_t a[2];

	for (unsigned int i = 0; i < OPS; i++) {
		a[0] = i;
		a[1] = flr_intern(c);
		bad |= a[1] != 1;
		flr_event(a, 2);
	}
}

static __attribute__((noinline)) void op_seqlock_emit_stack(const uintptr_t *c)
{
	uint64_t a[2];

	for (unsigned int i = 0; i < OPS; i++) {
		/* Seq_cst: Go's locked add, as in TB_CASE's seqlock. */
		atomic_fetch_add(&flr_seq, 1);
		a[0] = i;
		a[1] = flr_intern(c);
		bad |= a[1] != 1;
		flr_event(a, 2);
		atomic_fetch_add(&flr_seq, 1);
	}
}

static __attribute__((noinline)) void op_stacktab_hit(struct stacktab *s,
						      uint32_t id)
{
	for (unsigned int i = 0; i < OPS; i++)
		bad |= stacktab_put(s, pcs, DEPTH) != id;
}

/*
 * GCC 12 warns that the hash's tail loop would overflow for a length near
 * 2^61, having learnt from memcmp()'s size that it is below that (here
 * and in main()).
 */
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
static __attribute__((noinline)) void op_stacktab_floor(const uintptr_t *copy)
{
	uint64_t h0 = copy[DEPTH]; /* stored beside the copy, as in a node */
	size_t n = depth;

	for (unsigned int i = 0; i < OPS; i++) {
		uint64_t h = ring_hash_words(pcs, n);

		bad |= h != h0 || memcmp(pcs, copy, n * sizeof(*pcs));
	}
}

static void tb_drain(struct tracebuf *t)
{
	struct tracebuf_chunk ch;

	do
		bad |= tracebuf_read(t, PROFBUF_NONBLOCKING, &ch);
	while (ch.len);
}

int main(void)
{
	struct tracebuf_opts o = { .buf_size = 1 << 16,
				   .max_bytes = 16 << 20,
				   .stack_bytes = 1 << 20 };
	struct profbuf *b = profbuf_new(HDRSIZE, 1 << 17, 2048);
	struct tracebuf *t = tracebuf_new(&o);
	struct stacktab *s = stacktab_new(1 << 20, 64);
	uintptr_t *copy = calloc(DEPTH + 1, sizeof(*copy));
	uintptr_t *copy16 = calloc(DEPTH + 1, sizeof(*copy16));
	uint32_t id;

	pcs = calloc(DEPTH, sizeof(*pcs));
	if (!b || !t || !s || !pcs || !copy || !copy16 || tracebuf_start(t))
		return 1;
	for (int i = 0; i < 64; i++)
		stk[i] = 0x400000 + 16 * i;
	for (int i = 4; i < 67; i++)
		stk_len[i] = (size_t)i - 4;
	for (int i = 0; i < DEPTH; i++)
		pcs[i] = copy[i] = 0x555555554000ull + 977 * i;
	copy[DEPTH] = ring_hash_words(copy, depth);
	memcpy(copy16, copy, depth16 * sizeof(*copy));
	copy16[DEPTH] = ring_hash_words(copy16, depth16);
	id = stacktab_put(s, pcs, DEPTH);
	/* Twice each: the first warms up (lazy binding, first touches). */
	for (int r = 0; r < 2; r++) {
		op_pb_write_8w(b);
		pb_drain(b);
		op_pb_write_34w(b);
		pb_drain(b);
		op_pb_write_66w(b);
		pb_drain(b);
		op_pb_call_8w(b);
		pb_drain(b);
		op_pb_call_34w(b);
		pb_drain(b);
		op_pb_call_66w(b);
		pb_drain(b);
		op_floor_8w();
		op_floor_34w();
		op_floor_66w();
		op_tb_emit_0(t);
		op_tb_emit_2(t);
		op_tb_emit_4(t);
		op_tb_emit_stack(t);
		tb_drain(t);
		op_tb_call_0(t);
		op_tb_call_2(t);
		op_tb_call_4(t);
		tb_drain(t);
		op_floor_emit_0();
		op_floor_emit_2();
		op_floor_emit_4();
		op_seqlock_emit_0();
		op_seqlock_emit_2();
		op_seqlock_emit_4();
		op_floor_emit_stack(copy16);
		op_seqlock_emit_stack(copy16);
		op_stacktab_hit(s, id);
		op_stacktab_floor(copy);
	}
	tracebuf_stop(t);
	tb_drain(t);
	printf("opcount: %u ops per case, %s\n", OPS, bad ? "FAILED" : "ok");
	return bad;
}
