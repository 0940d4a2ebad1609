// SPDX-License-Identifier: MIT
/*
 * tracebuf_gen.c - closing a generation: the records that end
 * it (lost counts, stack and string tables, type names, frequency, memory
 * info, end), the CPU samples moved in, and start, advance and stop (see
 * "Generations" and "CPU samples" in tracebuf.c's protocol).
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

/* ---- generation records (advance thread only: may allocate) ------------- */

/* A growable byte buffer for the records that close a generation. */
struct tb_meta {
	uint8_t *p;
	size_t len, cap, rec; /* rec: offset of the open record */
	bool oom;
};

static void meta_reserve(struct tb_meta *m, size_t n)
{
	uint8_t *p;
	size_t cap;

	if (m->oom || m->len + n <= m->cap)
		return;
	cap = m->cap ? m->cap * 2 : 4096;
	while (cap < m->len + n)
		cap *= 2;
	p = realloc(m->p, cap);
	if (!p) {
		m->oom = true;
		return;
	}
	m->p = p;
	m->cap = cap;
}

static void meta_bytes(struct tb_meta *m, const void *b, size_t n)
{
	meta_reserve(m, n);
	if (m->oom)
		return;
	memcpy(m->p + m->len, b, n);
	m->len += n;
}

static void meta_varint(struct tb_meta *m, uint64_t v)
{
	uint8_t b[RING_VARINT_MAX];

	meta_bytes(m, b, ring_varint_put(b, v));
}

static void meta_u64(struct tb_meta *m, uint64_t v)
{
	uint8_t b[8];

	tb_put_u64(b, v);
	meta_bytes(m, b, 8);
}

static void meta_open(struct tb_meta *m, uint8_t kind, uint64_t gen)
{
	uint8_t h[TB_REC_HDR];

	tb_put_rec_hdr(h, kind, 0, 0);
	m->rec = m->len;
	meta_bytes(m, h, sizeof(h));
	meta_u64(m, gen);
}

static void meta_close(struct tb_meta *m)
{
	if (!m->oom)
		tb_put_u32(m->p + m->rec + 4,
			   (uint32_t)(m->len - m->rec - TB_REC_HDR));
}

static int dump_stack(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct tb_meta *m = arg;

	meta_varint(m, id);
	meta_varint(m, n);
	for (size_t i = 0; i < n; i++)
		meta_varint(m, pcs[i]);
	return 0;
}

static int dump_string(void *arg, uint32_t id, const uintptr_t *w, size_t n)
{
	struct tb_meta *m = arg;
	size_t len = w[0];

	if (n < 1 || len > (n - 1) * 8)
		return 0; /* cannot happen: we packed it */
	meta_varint(m, id);
	meta_varint(m, len);
	meta_bytes(m, &w[1], len);
	return 0;
}

static void meta_types(struct tracebuf *t, struct tb_meta *m)
{
	for (unsigned int i = 1; i <= TRACEBUF_MAX_TYPE; i++) {
		if (!t->type_name[i])
			continue;
		meta_varint(m, i);
		meta_varint(m, strlen(t->type_name[i]));
		meta_bytes(m, t->type_name[i], strlen(t->type_name[i]));
		meta_varint(m, strlen(t->type_spec[i]));
		meta_bytes(m, t->type_spec[i], strlen(t->type_spec[i]));
	}
}

/*
 * A thread that has exited keeps its slot (and its data) until advance
 * has flushed everything it wrote: only then may another thread take the
 * slot, so nothing of the dead thread is ever reported under a new one.
 */
static void release_if_gone(struct tracebuf *t, uint32_t i, uint64_t owner)
{
	struct tb_thread *th = &t->threads[i];

	/* First: only a dead thread's buffer pointers are ours to read. */
	if (!ring_grace_thread_gone(ring_grace_owner_tid(owner)))
		return;
	/*
	 * Acquire: pairs with the release store of the dead thread's last
	 * ring_grace_exit(), the last store to its word: all it wrote (its
	 * buffer pointers too) is visible.  Seeing it dead is no ordering.
	 */
	atomic_load_explicit(&t->grace.slots[i].word, memory_order_acquire);
	for (int p = 0; p < 2; p++)
		for (int lv = 0; lv < 2; lv++)
			if (th->buf[p][lv])
				return;
	for (int p = 0; p < 2; p++)
		for (int lv = 0; lv < 2; lv++)
			if (atomic_load_explicit(&th->lost[p][lv],
						 memory_order_relaxed))
				return;
	memset(th->seq, 0, sizeof(th->seq));
	memset(th->seq_gen, 0, sizeof(th->seq_gen));
	/* A tombstone now: a new owner finds it, nobody inherits it. */
	ring_grace_release(&t->grace, i, owner);
}

/* Take every thread's buffers and lost counts of generation @gen. */
static void flush_threads(struct tracebuf *t, uint64_t gen, struct tb_meta *m)
{
	unsigned int p = gen & 1;

	for (uint32_t i = 0; i < t->grace.nslots; i++) {
		struct tb_thread *th = &t->threads[i];
		/* Relaxed: its data is ordered by the grace period. */
		uint64_t owner = atomic_load_explicit(&t->grace.slots[i].owner,
						      memory_order_relaxed);
		uint64_t tid = (uint64_t)ring_grace_owner_tid(owner);

		if (!ring_grace_owned(owner))
			continue;
		for (unsigned int lv = 0; lv < 2; lv++) {
			struct tb_chunk *c = th->buf[p][lv];
			uint64_t lost = atomic_exchange_explicit(
				&th->lost[p][lv], 0, memory_order_relaxed);

			if (c) {
				th->buf[p][lv] = NULL;
				tb_flush_buf(t, c);
			}
			if (lost) {
				meta_varint(m, tid);
				meta_varint(m, lv);
				meta_varint(m, lost);
				atomic_fetch_add_explicit(&t->lost, lost,
							  memory_order_relaxed);
			}
		}
		release_if_gone(t, i, owner);
	}
}

static void queue_meta(struct tracebuf *t, struct tb_meta *m)
{
	struct tb_chunk *c = calloc(1, sizeof(*c));

	if (!c || m->oom) {
		free(c);
		free(m->p);
		return;
	}
	c->kind = TB_META;
	c->data = m->p;
	c->len = (uint32_t)m->len;
	tb_publish(t, c);
}

/* Move the CPU samples waiting in the profbuf into the current generation. */
static void drain_cpu(struct tracebuf *t)
{
	struct profbuf_read r;
	struct tracebuf_ev ev;

	/* No slot for this thread: the samples wait in the profbuf. */
	if (!t->cpu || tb_begin(t, &ev, false))
		return;
	while (profbuf_read(t->cpu, PROFBUF_NONBLOCKING, &r) == 0 && r.ndata) {
		struct profbuf_iter it;
		struct profbuf_record rec;

		/* hdrsize 2, as made in tracebuf_new(): { tid, count } */
		profbuf_iter_init(&it, &r, 2);
		while (profbuf_iter_next(&it, &rec)) {
			if (profbuf_record_is_overflow(&rec)) {
				tracebuf_ev_lost_samples(
					&ev,
					profbuf_record_overflow_count(&rec));
				continue;
			}
			tracebuf_ev_cpu_sample(&ev, (uint64_t)rec.time,
					       rec.hdr[0], rec.stk, rec.nstk,
					       rec.hdr[1]);
		}
	}
	tracebuf_end(&ev);
}

/*
 * close_gen() - end the current generation; @next is the one to start
 * (0: stop).  Caller holds t->lock.
 */
static int close_gen(struct tracebuf *t, uint64_t next)
{
	uint64_t old = atomic_load_explicit(&t->gen, memory_order_relaxed);
	struct tb_meta m = { 0 };
	uint64_t flags = 0, noslot;
	unsigned int p = old & 1;

	drain_cpu(t);
	/* Release: pairs with the acquire load in tracebuf_begin(). */
	atomic_store_explicit(&t->gen, next, memory_order_release);
	ring_perturb();
	ring_grace_wait(&t->grace);
	/* Before the old stack table is reset: the walk reads it. */
	tb_mem_snapshot(t, old, next);

	meta_open(&m, TB_KIND_LOST, old);
	noslot = atomic_exchange_explicit(&t->lost_noslot, 0,
					  memory_order_relaxed);
	if (noslot) {
		/* Threads beyond the slot limit: reported as thread 0. */
		meta_varint(&m, 0);
		meta_varint(&m, 0);
		meta_varint(&m, noslot);
		atomic_fetch_add_explicit(&t->lost, noslot,
					  memory_order_relaxed);
	}
	flush_threads(t, old, &m);
	meta_close(&m);
	meta_open(&m, TB_KIND_STACKS, old);
	stacktab_reset(t->stacks[p], dump_stack, &m);
	meta_close(&m);
	meta_open(&m, TB_KIND_STRINGS, old);
	stacktab_reset(t->strings[p], dump_string, &m);
	meta_close(&m);
	meta_open(&m, TB_KIND_TYPES, old);
	meta_types(t, &m);
	meta_close(&m);
	meta_open(&m, TB_KIND_FREQ, old);
	meta_u64(&m, ring_clock_hz());
	meta_close(&m);
	if (t->objs.slots) {
		meta_open(&m, TB_KIND_MEMINFO, old);
		meta_u64(&m, t->objs.min_addr);
		meta_u64(&m, t->objs.align);
		meta_u64(&m, t->objs.page_size);
		meta_close(&m);
	}
	if (m.oom) {
		/* Say at least that the generation ended, and how. */
		free(m.p);
		memset(&m, 0, sizeof(m));
		flags |= TB_END_TABLES_LOST;
	}
	meta_open(&m, TB_KIND_END, old);
	meta_u64(&m, atomic_exchange_explicit(&t->gen_batches[p], 0,
					      memory_order_relaxed));
	meta_u64(&m, flags);
	meta_close(&m);
	queue_meta(t, &m);
	return flags ? -ENOMEM : 0;
}

RING_API int tracebuf_advance(struct tracebuf *t)
{
	int rc = -ESHUTDOWN;

	if (!t)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	if (atomic_load_explicit(&t->gen, memory_order_relaxed))
		rc = close_gen(
			t, atomic_load_explicit(&t->gen, memory_order_relaxed) +
				   1);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

RING_API int tracebuf_start(struct tracebuf *t)
{
	int rc = -EINVAL;

	if (!t)
		return rc;
	pthread_mutex_lock(&t->lock);
	if (t->eof_chunk.kind == TB_EOF) {
		rc = -ESHUTDOWN; /* stopped for good */
	} else if (atomic_load_explicit(&t->gen, memory_order_relaxed)) {
		rc = -EALREADY;
	} else {
		/* Release: pairs with the acquire load in tracebuf_begin(). */
		atomic_store_explicit(&t->gen, 1, memory_order_release);
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

RING_API int tracebuf_stop(struct tracebuf *t)
{
	int rc = -ESHUTDOWN;

	if (!t)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	/*
	 * Close the CPU profbuf first: a sample written before this is
	 * drained into the last generation below, one written after is
	 * refused by profbuf_write() (-EINVAL), never silently lost.
	 */
	if (t->cpu)
		profbuf_close(t->cpu);
	if (atomic_load_explicit(&t->gen, memory_order_relaxed))
		rc = close_gen(t, 0);
	else if (t->eof_chunk.kind != TB_EOF)
		rc = 0; /* never started: no generation to close */
	if (rc != -ESHUTDOWN) {
		/* Stopped for good: tracebuf_start() checks this kind. */
		t->eof_chunk.kind = TB_EOF;
		tb_publish(t, &t->eof_chunk);
	}
	pthread_mutex_unlock(&t->lock);
	/* -ENOMEM: stopped all the same; the end record says what failed. */
	return rc == -ENOMEM ? 0 : rc;
}

RING_API int tracebuf_name_type(struct tracebuf *t, unsigned int type,
				const char *name, const char *spec)
{
	char *n, *s;

	if (!t || !type || type > TRACEBUF_MAX_TYPE || !name || !spec ||
	    strlen(name) > TB_MAX_TYPE_NAME || strlen(spec) > TB_MAX_ARGS ||
	    strspn(spec, "usktb") != strlen(spec))
		return -EINVAL;
	n = strdup(name);
	s = strdup(spec);
	if (!n || !s) {
		free(n);
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_lock(&t->lock);
	free(t->type_name[type]);
	free(t->type_spec[type]);
	t->type_name[type] = n;
	t->type_spec[type] = s;
	pthread_mutex_unlock(&t->lock);
	return 0;
}
