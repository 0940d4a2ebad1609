// SPDX-License-Identifier: MIT
/*
 * tracebuf_new.c - a tracer's life cycle: its options, pool,
 * tables and memory table made, and freed.
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

/*
 * The smallest stack table node (stacktab.h: 24 bytes + 8 per frame, and
 * a stack has a frame; a string is packed as at least one word): an
 * arena of N bytes holds at most N / TB_MIN_NODE stacks.
 */
#define TB_MIN_NODE 32

/* ---- life cycle --------------------------------------------------------- */

static size_t opt_or(size_t v, size_t dflt)
{
	return v ? v : dflt;
}

/* @expected, cut down to the stacks an arena of @bytes can hold. */
static size_t expected_in(size_t expected, size_t bytes)
{
	return expected < bytes / TB_MIN_NODE ? expected : bytes / TB_MIN_NODE;
}

static int tables_init(struct tracebuf *t, const struct tracebuf_opts *o)
{
	size_t sb = opt_or(o->stack_bytes, 8 << 20);
	size_t es = opt_or(o->expected_stacks, 4096);

	if (sb < TRACEBUF_MIN_STACK_BYTES)
		return -EINVAL;
	for (int i = 0; i < 2; i++) {
		/* EINVAL (stack_bytes above stacktab's bound), ENOMEM */
		t->stacks[i] = stacktab_new(sb, expected_in(es, sb));
		if (!t->stacks[i])
			return -errno;
		t->strings[i] = stacktab_new(sb / 4, expected_in(es, sb / 4));
		if (!t->strings[i])
			return -errno;
	}
	return 0;
}

static int pool_init(struct tracebuf *t, size_t max_bytes)
{
	t->nbufs = (uint32_t)(max_bytes / t->buf_size);
	if (t->nbufs < 2)
		return -EINVAL;
	t->chunks = calloc(t->nbufs, sizeof(*t->chunks));
	t->free_next = calloc(t->nbufs, sizeof(*t->free_next));
	t->mem = ring_map_zeroed((size_t)t->nbufs * t->buf_size);
	if (!t->chunks || !t->free_next || !t->mem)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nbufs; i++) {
		t->chunks[i].kind = TB_BUF;
		t->chunks[i].idx = i;
		t->chunks[i].data = t->mem + (size_t)i * t->buf_size;
		tb_pool_push(t, &t->chunks[i]);
	}
	return 0;
}

RING_API struct tracebuf *tracebuf_new(const struct tracebuf_opts *opts)
{
	struct tracebuf_opts o = { 0 };
	struct tracebuf *t;
	int rc = -ENOMEM;
	size_t cpu;

	if (opts)
		o = *opts;
	t = aligned_alloc(RING_CACHELINE, sizeof(*t));
	if (!t)
		goto fail;
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	ring_mpscq_init(&t->q);
	t->buf_size = (uint32_t)opt_or(o.buf_size, 64 << 10);
	rc = -EINVAL;
	if (o.buf_size && (o.buf_size < 4096 || o.buf_size > (16 << 20)))
		goto free_t;
	rc = ring_grace_init(&t->grace, TRACEBUF_MAX_THREADS, false);
	if (rc)
		goto free_t;
	/* The inline path's sections have no fence (tracebuf_inline.h). */
	if (!t->grace.reader_fence)
		t->inline_span = t->grace.nslots * sizeof(*t->grace.slots);
	t->threads =
		ring_map_zeroed(TRACEBUF_MAX_THREADS * sizeof(*t->threads));
	if (!t->threads) {
		rc = -ENOMEM;
		goto free_t;
	}
	rc = pool_init(t, opt_or(o.max_bytes, 16 << 20));
	if (!rc)
		rc = tables_init(t, &o);
	if (!rc)
		rc = tb_mem_init(&t->objs, &o);
	cpu = opts && !opts->cpu_words ? 0 : opt_or(o.cpu_words, 1 << 17);
	if (!rc && cpu && !(t->cpu = profbuf_new(2, cpu, cpu / 16)))
		rc = -errno;
	if (!rc)
		return t;
free_t:
	tracebuf_free(t);
fail:
	errno = -rc;
	return NULL;
}

RING_API void tracebuf_free(struct tracebuf *t)
{
	struct ring_mpscq_node *n;

	if (!t)
		return;
	tb_give_back_chunk(t, t->rd_prev);
	while ((n = ring_mpscq_pop(&t->q)))
		tb_give_back_chunk(t, (struct tb_chunk *)n);
	for (int i = 0; i < 2; i++) {
		stacktab_free(t->stacks[i]);
		stacktab_free(t->strings[i]);
	}
	for (int i = 0; i <= TRACEBUF_MAX_TYPE; i++) {
		free(t->type_name[i]);
		free(t->type_spec[i]);
	}
	profbuf_free(t->cpu);
	tb_mem_destroy(&t->objs);
	if (t->mem)
		munmap(t->mem, (size_t)t->nbufs * t->buf_size);
	if (t->threads)
		munmap(t->threads, TRACEBUF_MAX_THREADS * sizeof(*t->threads));
	free(t->chunks);
	free((void *)t->free_next);
	ring_grace_destroy(&t->grace);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
