// SPDX-License-Identifier: MIT
/*
 * tracebuf_read.c - the reader: the stream header, then the
 * queued buffers and records in order, sleeping on a futex when there are
 * none (see "Buffers" in tracebuf.c's protocol), and the stats.
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

/* ---- the reader --------------------------------------------------------- */

static const uint8_t *stream_header(void)
{
	static uint8_t hdr[TB_STREAM_HDR];

	tb_put_stream_hdr(hdr);
	return hdr;
}

void tb_give_back_chunk(struct tracebuf *t, struct tb_chunk *c)
{
	if (!c)
		return;
	if (c->kind == TB_BUF) {
		tb_pool_push(t, c);
	} else if (c->kind == TB_META) {
		free(c->data);
		free(c);
	}
}

static void wait_for_chunk(struct tracebuf *t)
{
	uint32_t seq = atomic_load_explicit(&t->rd_seq, memory_order_relaxed);

	atomic_store_explicit(&t->rd_sleeping, 1, memory_order_relaxed);
	/* Pairs with the fence in tb_publish(): see the protocol. */
	atomic_thread_fence(memory_order_seq_cst);
	if (!ring_mpscq_empty(&t->q)) {
		atomic_store_explicit(&t->rd_sleeping, 0, memory_order_relaxed);
		return;
	}
	ring_perturb();
	ring_futex_wait(&t->rd_seq, seq, NULL);
}

/* tracebuf_read() for the one reader that holds t->reading; @c is zeroed. */
static int read_chunk(struct tracebuf *t, enum profbuf_mode mode,
		      struct tracebuf_chunk *c)
{
	struct ring_mpscq_node *n;
	struct tb_chunk *ch;

	if (!t->header_sent) {
		t->header_sent = true;
		c->data = stream_header();
		c->len = TB_STREAM_HDR;
		atomic_fetch_add_explicit(&t->bytes, TB_STREAM_HDR,
					  memory_order_relaxed);
		return 0;
	}
	tb_give_back_chunk(t, t->rd_prev);
	t->rd_prev = NULL;
	if (t->eof) {
		c->eof = true;
		return 0;
	}
	while (!(n = ring_mpscq_pop(&t->q))) {
		if (mode == PROFBUF_NONBLOCKING)
			return 0;
		wait_for_chunk(t);
	}
	ch = (struct tb_chunk *)n;
	if (ch->kind == TB_EOF) {
		t->eof = c->eof = true;
		return 0;
	}
	t->rd_prev = ch;
	c->data = ch->data;
	c->len = ch->len;
	atomic_fetch_add_explicit(&t->bytes, ch->len, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->batches, ch->kind == TB_BUF,
				  memory_order_relaxed);
	return 0;
}

RING_API int tracebuf_read(struct tracebuf *t, enum profbuf_mode mode,
			   struct tracebuf_chunk *c)
{
	int rc;

	if (!t || !c)
		return -EINVAL;
	/*
	 * Acquire: pairs with the release store at the end of the previous
	 * read, handing over the reader-owned fields (header_sent, rd_prev,
	 * eof) and the consumer side of the queue.
	 */
	if (atomic_exchange_explicit(&t->reading, 1, memory_order_acquire))
		return -EBUSY;
	memset(c, 0, sizeof(*c));
	rc = read_chunk(t, mode, c);
	/* Release: pairs with the acquire exchange above. */
	atomic_store_explicit(&t->reading, 0, memory_order_release);
	return rc;
}

RING_API void tracebuf_stats(struct tracebuf *t, struct tracebuf_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!t)
		return;
	s->generation = atomic_load_explicit(&t->gen, memory_order_relaxed);
	s->batches = atomic_load_explicit(&t->batches, memory_order_relaxed);
	s->bytes = atomic_load_explicit(&t->bytes, memory_order_relaxed);
	s->lost = atomic_load_explicit(&t->lost, memory_order_relaxed);
	s->buffers_free =
		atomic_load_explicit(&t->free_count, memory_order_relaxed);
	s->mem_live = tb_mem_live(&t->objs);
	s->mem_full = atomic_load_explicit(&t->objs.full, memory_order_relaxed);
}
