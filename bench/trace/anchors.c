// SPDX-License-Identifier: MIT
/*
 * bench/trace/anchors.c - the floor (the least any varint event writer
 * does, into a thread-local array) and the seqlock (the floor inside Go's
 * writer protocol), checked after every batch.
 */
#include "bench/trace/trace.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "ring/clock.h"
#include "ring/compiler.h"
#include "ring/hash.h"
#include "ring/varint.h"

/* Room an event of @nargs needs: tracebuf's own worst-case bound. */
#define EV_NEED(nargs) (1 + RING_VARINT_MAX * (1 + (nargs)))

/*
 * struct flr_buf - the floor's per-thread event array.
 * @pos:  next byte to write
 * @last: ticks of the previous event
 * @data: the events
 */
struct flr_buf {
	uint32_t pos;
	uint64_t last;
	uint8_t data[BUF_SIZE];
};

static _Thread_local _Alignas(64) struct flr_buf flr;
/* The seqlock anchor's per-thread counter (Go: m.trace.seqlock). */
static _Thread_local _Alignas(64) _Atomic uint64_t flr_seq;

/*
 * struct flr_stack - the floor's stored copy of the stack, laid out like a
 * stacktab node (hash, id, length, PCs).
 */
static struct flr_stack {
	uint64_t hash;
	uint32_t id;
	uint32_t n;
	uintptr_t pcs[STACK_DEPTH];
} flr_copy;

/* ---- the anchors --------------------------------------------------------- */

/* The floor's hash of @n PCs at @pcs. */
static inline __attribute__((always_inline)) uint64_t
flr_hash(const uintptr_t *pcs, size_t n)
{
	/* A stack and length the library cannot know either. */
	__asm__ __volatile__("" : "+r"(pcs), "+r"(n));
	return ring_hash_words(pcs, n);
}

/*
 * flr_intern() - the floor's stack id: hash @pcs, compare with the copy;
 * 0 if they differ.
 */
static inline __attribute__((always_inline)) uint64_t
flr_intern(const uintptr_t *pcs, size_t n)
{
	const struct flr_stack *c = &flr_copy;
	uint64_t h = flr_hash(pcs, n);

	if (c->hash != h || c->n != n || memcmp(c->pcs, pcs, n * sizeof(*pcs)))
		return 0;
	return c->id;
}

/* The floor: one event into the thread-local array. */
static inline __attribute__((always_inline)) void flr_event(const uint64_t *a,
							    unsigned int nargs)
{
	struct flr_buf *f = &flr;
	uint64_t now;
	uint8_t *p;

	if (ring_unlikely(f->pos + EV_NEED(nargs) > BUF_SIZE))
		f->pos = 0;
	p = f->data + f->pos;
	now = ring_clock_ticks();
	*p++ = (uint8_t)(EV_TYPE << 3 | nargs);
	p += ring_varint_put(p, now > f->last ? now - f->last : 0);
	if (now > f->last)
		f->last = now;
	for (unsigned int i = 0; i < nargs; i++)
		p += ring_varint_put(p, a[i]);
	f->pos = (uint32_t)(p - f->data);
}

static inline __attribute__((always_inline)) int
flr_batch_n(struct ev_case *c, struct bench_sample *s, unsigned int nargs,
	    bool stack, bool seqlock)
{
	uint64_t a[TRACEBUF_MAX_ARGS], n = c->n, badid = 0;
	struct bench_timer t;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		if (seqlock)
			atomic_fetch_add(&flr_seq, 1);
		make_args(n++, nargs, stack,
			  stack ? flr_intern(stack_pcs, STACK_DEPTH) : 0, a);
		badid |= stack ? a[1] ^ FLOOR_STACK_ID : 0;
		flr_event(a, nargs);
		if (seqlock)
			atomic_fetch_add(&flr_seq, 1);
	}
	bench_timer_stop(&t, s, c->batch);
	c->n = n;
	return badid ? fail(c, "floor intern (id changed)", EPROTO) : 0;
}

static int flr_batch(struct ev_case *c, struct bench_sample *s)
{
	bool sl = c->impl == IM_SEQLOCK;

	if (c->stack)
		return sl ? flr_batch_n(c, s, 2, true, true)
			  : flr_batch_n(c, s, 2, true, false);
	if (c->nargs == 0)
		return sl ? flr_batch_n(c, s, 0, false, true)
			  : flr_batch_n(c, s, 0, false, false);
	if (c->nargs == 2)
		return sl ? flr_batch_n(c, s, 2, false, true)
			  : flr_batch_n(c, s, 2, false, false);
	return sl ? flr_batch_n(c, s, 4, false, true)
		  : flr_batch_n(c, s, 4, false, false);
}

/*
 * flr_check() - decode the @count events the floor wrote from @pos on
 * (starting again at 0 where the writer did) and compare them with what
 * events @first, ... should hold; untimed.
 */
static int flr_check(struct ev_case *c, uint32_t pos, uint64_t first,
		     unsigned int count)
{
	const uint8_t *d = flr.data;
	uint64_t want[TRACEBUF_MAX_ARGS], v;
	uint32_t start;
	size_t k;

	for (unsigned int i = 0; i < count; i++) {
		if (pos + EV_NEED(c->nargs) > BUF_SIZE)
			pos = 0;
		start = pos;
		if (d[pos++] != (EV_TYPE << 3 | c->nargs))
			return fail(c, "floor check (type)", EPROTO);
		k = ring_varint_get(d + pos, BUF_SIZE - pos, &v);
		if (!k)
			return fail(c, "floor check (time)", EPROTO);
		pos += (uint32_t)k;
		if (c->stack)
			make_args(first + i, 2, true, FLOOR_STACK_ID, want);
		else
			make_args(first + i, 4, false, 0, want);
		for (unsigned int j = 0; j < c->nargs; j++) {
			k = ring_varint_get(d + pos, BUF_SIZE - pos, &v);
			if (!k || v != want[j])
				return fail(c, "floor check (argument)",
					    EPROTO);
			pos += (uint32_t)k;
		}
		c->bytes += pos - start;
	}
	if (pos != flr.pos)
		return fail(c, "floor check (length)", EPROTO);
	return 0;
}

/* One repetition of the floor or the seqlock: REP_EVENTS, checked. */
int flr_run(void *arg, struct bench_sample *s)
{
	struct ev_case *c = arg;

	c->n = 0;
	while (c->n < REP_EVENTS) {
		uint64_t first = c->n;
		uint64_t seq = atomic_load(&flr_seq);
		uint32_t pos = flr.pos;

		if (flr_batch(c, s) || flr_check(c, pos, first, c->batch))
			return -1;
		if (atomic_load(&flr_seq) !=
		    seq + (c->impl == IM_SEQLOCK ? 2ull * c->batch : 0))
			return fail(c, "seqlock check", EPROTO);
	}
	c->events += c->n;
	return 0;
}

/* The floor's stored copy of stack_pcs, once main() has set them. */
void flr_init(void)
{
	memcpy(flr_copy.pcs, stack_pcs, sizeof(stack_pcs));
	flr_copy.n = STACK_DEPTH;
	flr_copy.id = FLOOR_STACK_ID;
	flr_copy.hash = flr_hash(stack_pcs, STACK_DEPTH);
}
