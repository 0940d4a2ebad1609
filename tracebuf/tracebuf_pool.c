// SPDX-License-Identifier: MIT
/*
 * tracebuf_pool.c - a tracer's buffers: the fixed pool they are
 * handed out from, and the queue that hands full ones to the reader (see
 * "Buffers" in tracebuf.c's protocol).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <profring/stacktab.h>
#include <profring/tracebuf.h>

#include "ring/clock.h"
#include "ring/compiler.h"
#include "ring/futex.h"
#include "ring/grace.h"
#include "ring/mpscq.h"
#include "ring/perturb.h"
#include "ring/region.h"
#include "ring/varint.h"
#include "tracebuf/tracebuf_format.h"
#include "tracebuf/tracebuf_impl.h"

/* ---- the buffer pool ----------------------------------------------------- */

struct tb_chunk *tb_pool_pop(struct tracebuf *t)
{
	/* Acquire: pairs with the release CAS in tb_pool_push(). */
	uint64_t head =
		atomic_load_explicit(&t->free_head, memory_order_acquire);
	uint32_t idx, next;

	do {
		idx = (uint32_t)head;
		if (!idx)
			return NULL;
		/* A stale next only makes the CAS fail (the tag moved). */
		next = atomic_load_explicit(&t->free_next[idx - 1],
					    memory_order_relaxed);
		/* Acquire: pairs with the release CAS in tb_pool_push(). */
	} while (!atomic_compare_exchange_weak_explicit(
		&t->free_head, &head, ((head >> 32) + 1) << 32 | next,
		memory_order_acquire, memory_order_acquire));
	atomic_fetch_sub_explicit(&t->free_count, 1, memory_order_relaxed);
	return &t->chunks[idx - 1];
}

void tb_pool_push(struct tracebuf *t, struct tb_chunk *c)
{
	uint64_t head =
		atomic_load_explicit(&t->free_head, memory_order_relaxed);

	do
		atomic_store_explicit(&t->free_next[c->idx], (uint32_t)head,
				      memory_order_relaxed);
	/* Release: the buffer's last use happens before its next pop. */
	while (!atomic_compare_exchange_weak_explicit(
		&t->free_head, &head, ((head >> 32) + 1) << 32 | (c->idx + 1),
		memory_order_release, memory_order_relaxed));
	atomic_fetch_add_explicit(&t->free_count, 1, memory_order_relaxed);
}

/* ---- handing chunks to the reader --------------------------------------- */

void tb_publish(struct tracebuf *t, struct tb_chunk *c)
{
	ring_mpscq_push(&t->q, &c->node);
	ring_perturb();
	/* Pairs with the fence in wait_for_chunk(): see the protocol. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&t->rd_sleeping, memory_order_relaxed) &&
	    atomic_exchange_explicit(&t->rd_sleeping, 0,
				     memory_order_relaxed)) {
		atomic_fetch_add_explicit(&t->rd_seq, 1, memory_order_relaxed);
		ring_futex_wake(&t->rd_seq, 1);
	}
}

/* Finish a buffer's record header and queue it (or recycle it if empty). */
void tb_flush_buf(struct tracebuf *t, struct tb_chunk *c)
{
	if (c->pos == TB_BATCH_HDR) {
		tb_pool_push(t, c);
		return;
	}
	tb_put_u32(c->data + 4, c->pos - TB_REC_HDR);
	c->len = c->pos;
	atomic_fetch_add_explicit(&t->gen_batches[c->gen & 1], 1,
				  memory_order_relaxed);
	tb_publish(t, c);
}
