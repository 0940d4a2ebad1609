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
 *
 * Files: writing is here (begin, emit, end, the id helpers); the pool
 * and the reader's queue in tracebuf_pool.c; closing a generation,
 * start, advance and stop in tracebuf_gen.c; the reader in
 * tracebuf_read.c; new and free in tracebuf_new.c.
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
		tb_flush_buf(t, c);
	}
	ring_perturb();
	c = tb_pool_pop(t);
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

RING_API int tracebuf_ev_span_of(struct tracebuf_ev *ev, uint32_t name,
				 uint64_t start, uint64_t end, uint64_t tid,
				 const uintptr_t *pcs, size_t n)
{
	uint64_t a[TB_SPAN_OF_ARGS] = { name, start, tid, end, 0 };

	if (n && !pcs)
		return -EINVAL;
	a[4] = n ? tracebuf_ev_stack(ev, pcs, n) : 0;
	/* tb_emit(): type 7 is the library's, refused to tracebuf_emit(). */
	return tb_emit(ev, TRACEBUF_EV_SPAN_OF, a, TB_SPAN_OF_ARGS);
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
