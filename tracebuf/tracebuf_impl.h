/* SPDX-License-Identifier: MIT */
/*
 * tracebuf/tracebuf_impl.h - the tracer's state, shared by tracebuf.c (the
 * protocol: buffers, generations, the reader) and tracemem.c (memory
 * events and the live-object table).  Not installed.
 */
#ifndef PROFRING_TRACEBUF_IMPL_H
#define PROFRING_TRACEBUF_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <profring/tracebuf.h>

#include "ring/compiler.h"
#include "ring/grace.h"
#include "ring/mpscq.h"
#include "tracebuf/tracemem.h"

enum tb_chunk_kind { TB_BUF, TB_META, TB_EOF };

struct tb_chunk {
	struct ring_mpscq_node node; /* first: the queue hands back nodes */
	uint32_t kind;
	uint32_t len; /* bytes for the reader */
	uint8_t *data;
	/* Buffers only. */
	uint32_t idx;
	uint32_t pos;
	uint64_t gen;
	uint64_t last; /* ticks of the last event */
};

struct tb_thread {
	struct tb_chunk *buf[2][2]; /* [gen & 1][level] */
	uint64_t seq[2][2]; /* next batch number */
	uint64_t seq_gen[2][2]; /* generation seq[][] counts for */
	_Atomic uint64_t lost[2][2]; /* [gen & 1][level] */
};

/*
 * The first fields are struct tracebuf_layout_v1's, which the inline
 * emitters of <profring/tracebuf_inline.h> read: frozen (see the asserts
 * below).
 */
struct tracebuf {
	ring_cacheline_aligned _Atomic uint64_t gen;
	uint32_t buf_size;
	/* Bytes of grace.slots; 0 if readers need a fence (grace.h). */
	uint32_t inline_span;
	struct tb_thread *threads;
	struct ring_grace grace;
	struct tb_chunk *chunks;
	uint8_t *mem;
	uint32_t nbufs;
	_Atomic uint32_t *free_next;
	ring_cacheline_aligned _Atomic uint64_t free_head; /* tag | idx + 1 */
	struct ring_mpscq q;
	ring_cacheline_aligned _Atomic uint32_t rd_sleeping;
	_Atomic uint32_t rd_seq;
	struct stacktab *stacks[2], *strings[2];
	struct profbuf *cpu;
	char *type_name[TRACEBUF_MAX_TYPE + 1];
	char *type_spec[TRACEBUF_MAX_TYPE + 1];
	ring_cacheline_aligned _Atomic uint64_t gen_batches[2];
	_Atomic uint64_t batches, bytes, lost, lost_noslot;
	_Atomic uint32_t free_count;
	/* 1 while a tracebuf_read() runs: it owns rd_prev, header_sent, eof. */
	_Atomic uint32_t reading;
	/* Reader-owned. */
	struct tb_chunk *rd_prev;
	bool header_sent, eof;
	struct tb_chunk eof_chunk;
	struct tb_mem objs; /* memory events: tracemem.c */
	pthread_mutex_t lock; /* advance, stop, name_type */
};

/* The inline path's view of these structs (tracebuf_inline.h): frozen. */
#define TB_SAME(a, fa, b, fb)                                \
	(offsetof(struct a, fa) == offsetof(struct b, fb) && \
	 sizeof(((struct a *)0)->fa) == sizeof(((struct b *)0)->fb))
_Static_assert(
	TB_SAME(tracebuf, gen, tracebuf_layout_v1, gen) &&
		TB_SAME(tracebuf, buf_size, tracebuf_layout_v1, buf_size) &&
		TB_SAME(tracebuf, inline_span, tracebuf_layout_v1,
			inline_span) &&
		TB_SAME(tracebuf, threads, tracebuf_layout_v1, threads) &&
		TB_SAME(tracebuf, grace.slots, tracebuf_layout_v1, slots) &&
		TB_SAME(tracebuf, grace.way, tracebuf_layout_v1, way),
	"struct tracebuf_layout_v1");
_Static_assert(TB_SAME(ring_grace_slot, owner, tracebuf_slot_v1, owner) &&
		       TB_SAME(ring_grace_slot, word, tracebuf_slot_v1, word) &&
		       sizeof(struct ring_grace_slot) == TRACEBUF__SLOT_BYTES,
	       "struct tracebuf_slot_v1");
_Static_assert(TB_SAME(tb_thread, buf, tracebuf_thread_v1, buf) &&
		       sizeof(struct tb_thread) == TRACEBUF__THREAD_BYTES &&
		       TRACEBUF__THREAD_BYTES % TRACEBUF__SLOT_BYTES == 0,
	       "struct tracebuf_thread_v1");
_Static_assert(TB_SAME(tb_chunk, data, tracebuf_buf_v1, data) &&
		       TB_SAME(tb_chunk, pos, tracebuf_buf_v1, pos) &&
		       TB_SAME(tb_chunk, last, tracebuf_buf_v1, last),
	       "struct tracebuf_buf_v1");
_Static_assert(RING_GRACE_DEPTH_MASK == TRACEBUF__DEPTH_MASK &&
		       RING_GRACE_PERIOD == TRACEBUF__PERIOD,
	       "section word");
/* grace.slots: TRACEBUF_MAX_THREADS, a power of two (not rounded up). */
_Static_assert((uint64_t)TRACEBUF__SLOT_BYTES *TRACEBUF_MAX_THREADS <=
			       UINT32_MAX &&
		       !(TRACEBUF_MAX_THREADS & (TRACEBUF_MAX_THREADS - 1)),
	       "inline_span");
#undef TB_SAME

/* tracebuf_begin(); @will_emit: a refusal loses an event (count it). */
int tb_begin(struct tracebuf *t, struct tracebuf_ev *ev, bool will_emit);

/* tracebuf_ev_emit() for every type, the memory events' too. */
int tb_emit(struct tracebuf_ev *ev, unsigned int type, const uint64_t *args,
	    unsigned int nargs);

/* Count one event of @ev's thread and level lost. */
void tb_count_lost(struct tracebuf_ev *ev);

/* The buffer pool and the reader's queue (tracebuf_pool.c). */
struct tb_chunk *tb_pool_pop(struct tracebuf *t);
void tb_pool_push(struct tracebuf *t, struct tb_chunk *c);
/* Queue @c for the reader, waking it if it sleeps. */
void tb_publish(struct tracebuf *t, struct tb_chunk *c);
/* Finish a buffer's record header and queue it (or recycle it if empty). */
void tb_flush_buf(struct tracebuf *t, struct tb_chunk *c);

/* A chunk the reader is done with: back to the pool, or freed. */
void tb_give_back_chunk(struct tracebuf *t, struct tb_chunk *c);

#endif /* PROFRING_TRACEBUF_IMPL_H */
