// SPDX-License-Identifier: MIT
/*
 * tracebuf.c - per-thread event buffers with generations.
 *
 * THE PROTOCOL
 *
 * Threads.  Each thread that writes has a slot in the tracer's ring_grace
 * (ring/grace.h), found through an initial-exec TLS cache, and a struct
 * tb_thread at the same index.  tracebuf_emit()'s fast path, inline in C
 * callers, reads these (and the chunk's cursor) directly: their layout is
 * frozen (<profring/tracebuf_inline.h>, asserted in tracebuf_impl.h).  A
 * begin/end pair is a read-side section of that grace: its plain depth
 * store is the per-thread "inside a write" marker (Go's per-M seqlock,
 * without Go's atomic add), and its depth says whether this write
 * interrupted another one on the same thread (a signal handler): depth 0
 * writes to the thread's level-0 buffer, depth 1 to its level-1 (nested)
 * buffer, deeper is counted lost.  Only the owner thread (and, one level
 * at a time, its handlers) touch a level's buffer.
 *
 * Generations.  `gen` (0 = stopped) is loaded with acquire inside the
 * section; the thread writes to its buffer for gen & 1.  tracebuf_advance()
 * stores gen + 1 (release), then ring_grace_wait(): afterwards no thread
 * is inside a pair of the old generation, and none will be (they load the
 * new one).  So the old generation's buffers, and its string and stack
 * tables (one pair per generation parity), are quiescent: advance takes
 * every thread's old buffers (also those of idle and exited threads),
 * queues them, and queues the generation's tables, type names, clock
 * frequency, lost counts and end record.
 *
 * Buffers.  A fixed pool (the memory bound), handed out by a lock-free
 * stack of indices whose head carries a tag against ABA; async-signal-safe.
 * A full buffer is finished (its record header written) and pushed on the
 * reader's queue, an MPSC FIFO (ring/mpscq.h) with a wait-free push.  The
 * reader sleeps on a futex: it announces itself in rd_sleeping, then
 * re-checks the queue; a pusher, after pushing, checks rd_sleeping (both
 * sides separate the store and the load by a seq_cst fence: Dekker), and
 * whoever clears rd_sleeping wakes it, once.  Read buffers go back to the
 * pool.  The queue has one consumer: tracebuf_read() takes `reading` with
 * an acquire exchange (a concurrent second read gets -EBUSY) and gives it
 * back with a release store, handing the queue's consumer side and the
 * reader-owned fields to the next read, whichever thread makes it.
 * FIFO order keeps every record of a generation ahead of its end
 * record: the buffers pushed by writers before advance's grace period, and
 * those advance pushes itself, all precede the tables it pushes last.
 *
 * CPU samples: a SIGPROF handler writes to the tracer's profbuf; advance
 * drains it into the closing generation as events with interned stacks,
 * before it flips (so it writes in that generation, like any thread).
 *
 * Memory events and the snapshot that starts each generation: tracemem.c,
 * called by advance after its grace period and before the stack tables
 * are reset.
 */
/*
 * This file defines the real tracebuf_emit(), so not the header's inline
 * one (PROFRING_NO_INLINE); it calls the header's fast path,
 * tracebuf__emit_fast(), by that name.  The stress build puts
 * ring_perturb() at the fast path's steps.
 */
#define PROFRING_NO_INLINE
#define TRACEBUF__PERTURB() ring_perturb()
#include "ring/perturb.h"

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

/* The public limits are the format's (see tracebuf_format.h). */
_Static_assert(TRACEBUF_MAX_ARGS == TB_MAX_ARGS, "TRACEBUF_MAX_ARGS");
_Static_assert(TRACEBUF_MAX_TYPE == TB_MAX_TYPE, "TRACEBUF_MAX_TYPE");
_Static_assert(TRACEBUF_MAX_PAYLOAD == TB_MAX_PAYLOAD, "TRACEBUF_MAX_PAYLOAD");
_Static_assert(TRACEBUF_MAX_STRING == TB_MAX_STRING, "TRACEBUF_MAX_STRING");
_Static_assert(TRACEBUF_MAX_TYPE_NAME == TB_MAX_TYPE_NAME, "type name");
/* What the stack tables keep fits the format's K records... */
_Static_assert(STACKTAB_MAX_DEPTH <= TB_MAX_FRAMES, "stack depth");
/* ... and a string, packed as a "stack" of words, is never truncated. */
_Static_assert(1 + (TB_MAX_STRING + 7) / 8 <= STACKTAB_MAX_DEPTH,
	       "string length");
/* The least string table (a quarter) is one stacktab_new() takes. */
_Static_assert(TRACEBUF_MIN_STACK_BYTES / 4 >= 4096, "string table size");

/* ---- the buffer pool ----------------------------------------------------- */

static struct tb_chunk *pool_pop(struct tracebuf *t)
{
	/* Acquire: pairs with the release CAS in pool_push(). */
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
		/* Acquire: pairs with the release CAS in pool_push(). */
	} while (!atomic_compare_exchange_weak_explicit(
		&t->free_head, &head, ((head >> 32) + 1) << 32 | next,
		memory_order_acquire, memory_order_acquire));
	atomic_fetch_sub_explicit(&t->free_count, 1, memory_order_relaxed);
	return &t->chunks[idx - 1];
}

static void pool_push(struct tracebuf *t, struct tb_chunk *c)
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

static void publish(struct tracebuf *t, struct tb_chunk *c)
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
static void flush_buf(struct tracebuf *t, struct tb_chunk *c)
{
	if (c->pos == TB_BATCH_HDR) {
		pool_push(t, c);
		return;
	}
	tb_put_u32(c->data + 4, c->pos - TB_REC_HDR);
	c->len = c->pos;
	atomic_fetch_add_explicit(&t->gen_batches[c->gen & 1], 1,
				  memory_order_relaxed);
	publish(t, c);
}

/* ---- writing ------------------------------------------------------------ */

static struct tb_thread *ev_thread(struct tracebuf_ev *ev)
{
	return ev->thread;
}

/* A new buffer for (gen, level) of this thread; the old one is flushed. */
static struct tb_chunk *refill(struct tracebuf_ev *ev)
{
	struct tracebuf *t = ev->t;
	struct tb_thread *th = ev_thread(ev);
	unsigned int p = ev->gen & 1, lv = ev->level;
	struct tb_chunk *c = th->buf[p][lv];
	struct ring_grace_slot *slot = ev->section_slot;

	if (c) {
		th->buf[p][lv] = NULL;
		flush_buf(t, c);
	}
	ring_perturb();
	c = pool_pop(t);
	if (!c)
		return NULL;
	if (th->seq_gen[p][lv] != ev->gen) {
		th->seq_gen[p][lv] = ev->gen;
		th->seq[p][lv] = 0;
	}
	c->gen = ev->gen;
	c->last = ring_clock_ticks();
	c->pos = TB_BATCH_HDR;
	tb_put_rec_hdr(c->data, TB_KIND_BATCH, (uint8_t)lv, 0);
	tb_put_u64(c->data + 8, ev->gen);
	/* Relaxed: our own slot's owner only changes by us. */
	tb_put_u64(c->data + 16,
		   (uint64_t)ring_grace_owner_tid(atomic_load_explicit(
			   &slot->owner, memory_order_relaxed)));
	tb_put_u64(c->data + 24, th->seq[p][lv]++);
	tb_put_u64(c->data + 32, c->last);
	th->buf[p][lv] = c;
	return c;
}

/* refill(), or NULL counted lost: the slow half of room_for(). */
static __attribute__((noinline)) struct tb_chunk *
refill_or_count(struct tracebuf_ev *ev)
{
	struct tb_chunk *c = refill(ev);

	if (!c)
		tb_count_lost(ev);
	return c;
}

/* The buffer to write @need bytes into, or NULL (counted lost). */
static inline __attribute__((always_inline)) struct tb_chunk *
room_for(struct tracebuf_ev *ev, size_t need)
{
	struct tb_thread *th = ev_thread(ev);
	struct tb_chunk *c = th->buf[ev->gen & 1][ev->level];

	if (ring_likely(c && c->pos + need <= ev->t->buf_size))
		return c;
	return refill_or_count(ev);
}

void tb_count_lost(struct tracebuf_ev *ev)
{
	struct tb_thread *th = ev_thread(ev);

	atomic_fetch_add_explicit(&th->lost[ev->gen & 1][ev->level], 1,
				  memory_order_relaxed);
}

/*
 * A buffer's cursor as the public header's encoder sees it (struct
 * tracebuf_buf_v1, a view of struct tb_chunk: tracebuf_impl.h): one
 * encoder for the library and the inline path.
 */
static inline struct tracebuf_buf_v1 *cursor(struct tb_chunk *c)
{
	return (struct tracebuf_buf_v1 *)(void *)c;
}

/* Event header: type byte and time delta to now. */
static inline __attribute__((always_inline)) uint8_t *
put_event_head(struct tb_chunk *c, unsigned int type, unsigned int code)
{
	return tracebuf__put_head(cursor(c), type, code, ring_clock_ticks());
}

/* An event of @nargs arguments, stamped now, into @c, which has room. */
static inline __attribute__((always_inline)) void
put_event(struct tb_chunk *c, unsigned int type, const uint64_t *args,
	  unsigned int nargs)
{
	tracebuf__put_event(cursor(c), type, args, nargs, ring_clock_ticks());
}

RING_API int tracebuf_ev_emit(struct tracebuf_ev *ev, unsigned int type,
			      const uint64_t *args, unsigned int nargs)
{
	struct tb_chunk *c;

	if (ring_unlikely(!tracebuf__emit_args_ok(type, args, nargs)))
		return -EINVAL; /* 1-7: the library's functions' alone */
	c = room_for(ev, TRACEBUF__EVENT_MAX(nargs));
	if (ring_unlikely(!c))
		return -ENOSPC;
	put_event(c, type, args, nargs);
	return 0;
}

int tb_emit(struct tracebuf_ev *ev, unsigned int type, const uint64_t *args,
	    unsigned int nargs)
{
	struct tb_chunk *c;

	if (ring_unlikely(tracebuf__bad_args(type, args, nargs)))
		return -EINVAL;
	c = room_for(ev, TRACEBUF__EVENT_MAX(nargs));
	if (ring_unlikely(!c))
		return -ENOSPC;
	put_event(c, type, args, nargs);
	return 0;
}

RING_API int tracebuf_ev_cpu_sample(struct tracebuf_ev *ev, uint64_t ticks,
				    uint64_t tid, const uintptr_t *pcs,
				    size_t n, uint64_t count)
{
	uint64_t args[4] = { ticks, tid, 0, count };

	if (n && !pcs)
		return -EINVAL;
	args[2] = n ? tracebuf_ev_stack(ev, pcs, n) : 0;
	/* tb_emit(): type 1 is the library's, refused to tracebuf_emit(). */
	return tb_emit(ev, TRACEBUF_EV_CPU_SAMPLE, args, 4);
}

RING_API int tracebuf_ev_lost_samples(struct tracebuf_ev *ev, uint64_t count)
{
	return tb_emit(ev, TRACEBUF_EV_LOST_SAMPLES, &count, 1);
}

RING_API int tracebuf_ev_span(struct tracebuf_ev *ev, uint32_t name,
			      uint64_t start, const uint64_t *args,
			      unsigned int nargs)
{
	uint64_t a[TB_MAX_ARGS];

	if (nargs > TB_MAX_ARGS - 2 || (!args && nargs))
		return -EINVAL;
	a[0] = name;
	a[1] = start;
	for (unsigned int i = 0; i < nargs; i++)
		a[2 + i] = args[i];
	/* tb_emit(): type 6 is the library's, refused to tracebuf_emit(). */
	return tb_emit(ev, TRACEBUF_EV_SPAN, a, nargs + 2);
}

RING_API int tracebuf_span(struct tracebuf *t, const char *name, uint64_t start,
			   const uint64_t *args, unsigned int nargs)
{
	struct tracebuf_ev ev;
	int rc;

	if (nargs > TB_MAX_ARGS - 2 || (!args && nargs))
		return -EINVAL;
	rc = tracebuf_begin(t, &ev);
	if (rc)
		return rc;
	rc = tracebuf_ev_span(&ev, tracebuf_ev_string(&ev, name), start, args,
			      nargs);
	tracebuf_end(&ev);
	return rc;
}

RING_API int tracebuf_ev_emit_bytes(struct tracebuf_ev *ev, unsigned int type,
				    const void *data, size_t len)
{
	struct tb_chunk *c;
	uint8_t *p;

	if (type > TRACEBUF_MAX_TYPE || tracebuf__library_type(type) ||
	    len > TRACEBUF_MAX_PAYLOAD || (len && !data))
		return -EINVAL;
	c = room_for(ev, 1 + 2 * RING_VARINT_MAX + len);
	if (!c)
		return -ENOSPC;
	p = put_event_head(c, type, TB_NARGS_BYTES);
	p += ring_varint_put(p, len);
	if (len)
		memcpy(p, data, len);
	c->pos = (uint32_t)(p + len - c->data);
	return 0;
}

RING_API uint32_t tracebuf_ev_stack(struct tracebuf_ev *ev,
				    const uintptr_t *pcs, size_t n)
{
	return stacktab_put(ev->t->stacks[ev->gen & 1], pcs, n);
}

RING_API uint32_t tracebuf_ev_string(struct tracebuf_ev *ev, const char *s)
{
	/* A string is interned as a stack: its length, then its bytes. */
	uintptr_t w[1 + (TB_MAX_STRING + 7) / 8] = { 0 };
	size_t len = 0;

	if (!s)
		return 0;
	while (len < TB_MAX_STRING && s[len])
		len++;
	w[0] = len;
	memcpy(&w[1], s, len);
	return stacktab_put(ev->t->strings[ev->gen & 1], w, 1 + (len + 7) / 8);
}

/* tb_begin()'s refusal: @ev's section was entered; leave it. */
static __attribute__((noinline, cold)) int begin_refused(struct tracebuf_ev *ev)
{
	struct ring_grace_section sec = { ev->section_slot, ev->section_saved };
	struct tb_thread *th = ev->thread;

	if (ev->gen)
		atomic_fetch_add_explicit(&th->lost[ev->gen & 1][1], 1,
					  memory_order_relaxed);
	ring_grace_exit(&sec);
	return ev->gen ? -ENOSPC : -ESHUTDOWN;
}

static __attribute__((noinline, cold)) int no_slot(struct tracebuf *t,
						   bool will_emit)
{
	if (will_emit)
		atomic_fetch_add_explicit(&t->lost_noslot, 1,
					  memory_order_relaxed);
	return -ENOSPC;
}

static inline __attribute__((always_inline)) int
begin(struct tracebuf *t, struct tracebuf_ev *ev, bool will_emit)
{
	struct ring_grace_section sec;

	if (ring_unlikely(!ring_grace_enter(&t->grace, &sec)))
		return no_slot(t, will_emit);
	ev->t = t;
	ev->section_slot = sec.slot;
	ev->section_saved = sec.saved;
	ev->level = (unsigned int)(sec.saved & RING_GRACE_DEPTH_MASK);
	/* Acquire: pairs with the release store of gen in close_gen(). */
	ev->gen = atomic_load_explicit(&t->gen, memory_order_acquire);
	ev->thread = &t->threads[sec.slot - t->grace.slots];
	if (ring_unlikely(!ev->gen || ev->level > 1))
		return begin_refused(ev);
	return 0;
}

int tb_begin(struct tracebuf *t, struct tracebuf_ev *ev, bool will_emit)
{
	if (ring_unlikely(!t || !ev))
		return -EINVAL;
	return begin(t, ev, will_emit);
}

RING_API int tracebuf_begin(struct tracebuf *t, struct tracebuf_ev *ev)
{
	if (ring_unlikely(!t || !ev))
		return -EINVAL;
	return begin(t, ev, true);
}

static inline void end(struct tracebuf_ev *ev)
{
	struct ring_grace_section sec = { ev->section_slot, ev->section_saved };

	ring_grace_exit(&sec);
}

RING_API void tracebuf_end(struct tracebuf_ev *ev)
{
	end(ev);
}

/* The event tracebuf_emit()'s slow paths hand to the general code. */
static struct tracebuf_ev emit_ev(struct tracebuf *t,
				  struct ring_grace_section sec, uint64_t gen,
				  unsigned int level)
{
	return (struct tracebuf_ev){
		.t = t,
		.thread = &t->threads[sec.slot - t->grace.slots],
		.gen = gen,
		.section_slot = sec.slot,
		.section_saved = sec.saved,
		.level = level,
	};
}

/*
 * emit_refill() - tracebuf_emit()'s end when its buffer is missing or
 * full: room_for()'s slow half, the event, and the section's exit.  Out
 * of line and called last, so that nothing in tracebuf_emit() is live
 * across it.  (Its arguments do not fit in registers, so GCC calls it
 * rather than jumping to it.)
 */
static __attribute__((noinline)) int
emit_refill(struct tracebuf *t, struct ring_grace_section sec, uint64_t gen,
	    unsigned int level, unsigned int type, const uint64_t *args,
	    unsigned int nargs)
{
	struct tracebuf_ev ev = emit_ev(t, sec, gen, level);
	struct tb_chunk *c = refill_or_count(&ev);
	int rc = -ENOSPC;

	if (c) {
		put_event(c, type, args, nargs);
		rc = 0;
	}
	ring_grace_exit(&sec);
	return rc;
}

/* tracebuf_emit()'s refusal by begin(), as there. */
static __attribute__((noinline, cold)) int
emit_refused(struct tracebuf *t, struct ring_grace_section sec, uint64_t gen,
	     unsigned int level)
{
	struct tracebuf_ev ev = emit_ev(t, sec, gen, level);

	return begin_refused(&ev);
}

/*
 * tracebuf_emit()'s fast path is the public header's (tracebuf__emit_fast()
 * in <profring/tracebuf_inline.h>: the same steps for a thread whose slot
 * is in the tracer's own TLS way and whose buffer has room); emit_in() is
 * the whole event it falls back to (after emit_slow() found the slot),
 * begin + emit + end in one body: no struct tracebuf_ev in memory, and no
 * call with values live across it: the rare paths (a refill, a refusal)
 * end the event out of line, called last.  The same section, loads and
 * stores as the three calls, in the same order, with the same results (a
 * refusal of begin() comes before a bad argument).
 *
 * The clock is read just before the write, as the fast path reads it
 * (see there why): after its buffer's batch time (a refill has just set
 * it) and the events a handler wrote there before it, so their order is
 * not what clamps its delta to 0 (a clock that went back, across CPUs
 * say, still is).
 */
static inline __attribute__((always_inline)) int
emit_in(struct tracebuf *t, struct ring_grace_slot *slot, unsigned int type,
	const uint64_t *args, unsigned int nargs)
{
	struct ring_grace_section sec;
	struct tb_thread *th;
	struct tb_chunk *c;
	unsigned int level;
	uint64_t gen;
	int rc = 0;

	ring_grace_enter_slot(&t->grace, slot, &sec);
	level = (unsigned int)(sec.saved & RING_GRACE_DEPTH_MASK);
	/* Acquire: pairs with the release store of gen in close_gen(). */
	gen = atomic_load_explicit(&t->gen, memory_order_acquire);
	if (ring_unlikely(!gen || level > 1))
		return emit_refused(t, sec, gen, level);
	if (ring_unlikely(!tracebuf__emit_args_ok(type, args, nargs))) {
		rc = -EINVAL;
		goto out;
	}
	th = &t->threads[sec.slot - t->grace.slots];
	c = th->buf[gen & 1][level];
	if (ring_unlikely(!c ||
			  c->pos + TRACEBUF__EVENT_MAX(nargs) > t->buf_size))
		return emit_refill(t, sec, gen, level, type, args, nargs);
	put_event(c, type, args, nargs);
out:
	ring_grace_exit(&sec);
	return rc;
}

/*
 * tracebuf_emit() when the fast path declined (or is not built here): the
 * whole event, from the slot look-up (all the TLS ways, then the probe)
 * to the section's exit.  Out of line, so the fast path saves nothing
 * for it.
 */
static __attribute__((noinline)) int emit_slow(struct tracebuf *t,
					       unsigned int type,
					       const uint64_t *args,
					       unsigned int nargs)
{
	struct ring_grace_slot *slot;

	if (ring_unlikely(!t))
		return -EINVAL;
	slot = ring_grace_slot(&t->grace);
	if (ring_unlikely(!slot))
		return no_slot(t, true);
	return emit_in(t, slot, type, args, nargs);
}

/*
 * The header's fast path (<profring/tracebuf_inline.h>), then, if it
 * declined, everything: what an inline caller does, out of line.
 */
RING_API int tracebuf_emit(struct tracebuf *t, unsigned int type,
			   const uint64_t *args, unsigned int nargs)
{
#ifdef TRACEBUF__FAST
	if (ring_likely(!tracebuf__emit_fast(t, type, args, nargs)))
		return 0;
#endif
	return emit_slow(t, type, args, nargs);
}

RING_API uint64_t tracebuf_ticks(void)
{
	return ring_clock_ticks();
}

RING_API struct profbuf *tracebuf_cpu_profbuf(struct tracebuf *t)
{
	return t ? t->cpu : NULL;
}

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
				flush_buf(t, c);
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
	publish(t, c);
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
		publish(t, &t->eof_chunk);
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

/* ---- the reader --------------------------------------------------------- */

static const uint8_t *stream_header(void)
{
	static uint8_t hdr[TB_STREAM_HDR];

	tb_put_stream_hdr(hdr);
	return hdr;
}

static void give_back_chunk(struct tracebuf *t, struct tb_chunk *c)
{
	if (!c)
		return;
	if (c->kind == TB_BUF) {
		pool_push(t, c);
	} else if (c->kind == TB_META) {
		free(c->data);
		free(c);
	}
}

static void wait_for_chunk(struct tracebuf *t)
{
	uint32_t seq = atomic_load_explicit(&t->rd_seq, memory_order_relaxed);

	atomic_store_explicit(&t->rd_sleeping, 1, memory_order_relaxed);
	/* Pairs with the fence in publish(): see the protocol. */
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
	give_back_chunk(t, t->rd_prev);
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
		pool_push(t, &t->chunks[i]);
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
	give_back_chunk(t, t->rd_prev);
	while ((n = ring_mpscq_pop(&t->q)))
		give_back_chunk(t, (struct tb_chunk *)n);
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
