// SPDX-License-Identifier: MIT
/*
 * bench/trace_bench.c - tracebuf's event write path against its anchors,
 * and its generation advance.
 *
 * What it measures.
 *
 * One thread, ns per event, for an event of type 8 with
 *
 * 1. 2 arguments - a counter (0, 1, 2, ... within a repetition: a 1- to
 *    3-byte varint) and a 48-bit value (a multiplicative hash of the
 *    counter: mostly 7 bytes) - written with tracebuf_emit();
 * 2. the same event with a stack id: tracebuf_begin(), tracebuf_ev_stack()
 *    of a 16-frame stack already interned in this generation (the hit
 *    path), tracebuf_ev_emit() of { counter, stack id }, tracebuf_end();
 * 3. 0 and 4 arguments (the 2 above, plus counter & 63 and the 48-bit
 *    value >> 20), with tracebuf_emit(), with the same goals as 2.
 *
 * Each repetition writes REP_EVENTS events in timed batches of --batch.
 * Between batches, untimed, the stream is drained with non-blocking
 * tracebuf_read() (so full buffers go back to the pool); at the end of a
 * repetition, untimed, tracebuf_advance() closes the generation and the
 * whole generation's stream is decoded and validated with
 * tracedec_decode(): every event's type, argument count, arguments (the
 * exact sequence written) and time order, the stack table, the end
 * record, and no lost record; tracebuf_stats() must count no loss.  Every
 * emit must return 0.  The memory bound (16 MiB of 64 KiB buffers) is far
 * more than a batch needs.  Any failure aborts the benchmark.  Each
 * tracebuf case has its own tracer (no CPU profile buffer).
 *
 * Then, generation advance with N idle threads, N = 0, 16, 64, each
 * N with its own tracer (no CPU profile buffer): before every advance,
 * untimed, each thread emits one tracebuf event of type 8 and goes back
 * to sleep on a condition variable; then tracebuf_advance() is timed
 * (median over ADV_ROUNDS advances, whatever --reps says) and the stream
 * drained, untimed.  Rows "advance 16 idle" and "advance 64 idle".  Each
 * advance must have flushed exactly N thread buffers and lost nothing,
 * and every emit must return 0, or the benchmark aborts.
 *
 * Why the anchors are fair.
 *
 *  - floor: what any varint event writer must do - write the type byte,
 *    the time delta since the previous event as a varint (time read the
 *    same way, ring_clock_ticks(), i.e. RDTSC, with the same "never
 *    negative" rule), and the same arguments with the same
 *    ring_varint_put(), into a thread-local 64 KiB byte array (tracebuf's
 *    buffer size) at a thread-local position, which goes back to 0 when
 *    fewer bytes than tracebuf's worst-case event are left.  It has no
 *    generation, no buffer hand-off, no batch header, no signal nesting,
 *    no argument check and is inlined, so tracebuf can only approach it:
 *    the goal is emit <= 1.3 x floor, at 0, 2 and 4 arguments and with
 *    a stack id (issue 18).  What it wrote is decoded and checked after
 *    every batch, untimed (so nothing can be optimised away).  The stack row's floor interns before it writes { counter,
 *    id }, as stacktab_bench's floor does on a hit: it hashes the 16 PCs
 *    with the same ring_hash_words() (the stack and its length hidden
 *    from the hash, as the library cannot know them) and compares the
 *    hash, the length and the PCs with a stored copy found by index: no
 *    table, no section, the id taken from the copy.
 *  - seqlock: the floor inside Go's writer protocol: traceAcquire() and
 *    traceRelease() each do an atomic add on the M's seqlock, which the
 *    generation switcher polls.  Here, atomic_fetch_add(seq, 1) on a
 *    thread-local counter before and after each event (checked after the
 *    batch).  tracebuf's begin/end do the same job with plain stores
 *    (ring/grace.h); the goal is emit <= 1.0 x seqlock.
 *  - advance: N = 0 is the anchor of N = 16 and N = 64.  Info.
 *
 * All cases of a row group run interleaved repetition by repetition
 * (harness.c) with the same argument sequence and batch size.
 * tracebuf_emit() runs as a C caller of the library runs it: its fast
 * path inline (<profring/tracebuf_inline.h>), the static library called
 * only when it declines; the anchors are inline too.  tracebuf_call is
 * the same event through the library's symbol (its own tracer), as a
 * binary built without the inline path (C++, PROFRING_NO_INLINE, or
 * before it existed) emits: its row says what the inline path saves.
 * The begin + stack + emit + end row calls the library.
 *
 * Caveats, so that the numbers are read right.
 *
 *  - On the KVM guests these figures come from, RDTSC alone costs about
 *    10 ns (printed under the table), so the floor is almost all clock
 *    read and barely depends on the argument count; the ratios are
 *    ratios to a clock-bound anchor.  Where RDTSC is cheaper the floor
 *    drops and the ratios rise.
 *  - On a shared host tracebuf's figures are bimodal (about 13 vs 21-29
 *    ns for 2 arguments), switching from one repetition to the next
 *    inside one process, while the clock-bound floor moves by 10%.  Code
 *    with more stores and calls per event (tracebuf, and the seqlock's
 *    locked adds) slows most in the slow periods - the signature of a
 *    busy SMT sibling on the host, though without hardware counters in
 *    the guest that cannot be proven.  Compare min with min, and use
 *    --reps 11 or more for medians.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "ring/clock.h"
#include "ring/compiler.h"
#include "ring/hash.h"
#include "ring/varint.h"
#include "harness.h"

#define REP_EVENTS (1u << 21) /* events per repetition of a case */
#define BUF_SIZE (64u << 10) /* tracebuf's buffers and the floor's array */
#define MAX_BYTES (16u << 20) /* tracebuf's memory bound */
#define EV_TYPE TRACEBUF_EV_USER
#define STACK_DEPTH 16
#define FLOOR_STACK_ID 1 /* the first stack of a generation */
#define HDR_BYTES 16 /* the stream header */
#define ADV_ROUNDS 50
#define ADV_TYPE 8
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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

/* The 16 PCs of the interned stack. */
static uintptr_t stack_pcs[STACK_DEPTH];

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

enum impl { IM_TRACE, IM_FLOOR, IM_SEQLOCK, IM_CALL };

/*
 * struct ev_case - one case.
 * @name:     for messages
 * @impl:     tracebuf, floor or seqlock
 * @nargs:    0, 2 or 4
 * @stack:    the event is { counter, stack id }
 * @batch:    events per timed batch
 * @n:        counter of the next event
 * @tb:       tracebuf's tracer
 * @hdr:      its stream header, read once
 * @stack_id: the stack's id in the current generation
 * @bytes:    stream bytes read over the timed repetitions (tracebuf) or
 *            bytes written (anchors)
 * @events:   events over them
 */
struct ev_case {
	const char *name;
	enum impl impl;
	unsigned int nargs;
	bool stack;
	unsigned int batch;
	uint64_t n;
	struct tracebuf *tb;
	uint8_t hdr[HDR_BYTES];
	uint64_t stack_id;
	uint64_t bytes;
	uint64_t events;
};

/*
 * The stream of one generation of the case being run, accumulated by the
 * drains for the validation at the end of the repetition.
 */
static uint8_t *acc;
static size_t acc_len, acc_cap;

static int fail(const struct ev_case *c, const char *what, int err)
{
	fprintf(stderr, "trace_bench: %s: %s failed (%d: %s); aborting\n",
		c ? c->name : "setup", what, err,
		strerror(err < 0 ? -err : err));
	return -1;
}

/*
 * make_args() - the arguments of event number @n.  Always inlined with
 * constant @nargs and @stack, so that every case computes only those it
 * writes.
 */
static inline __attribute__((always_inline)) void
make_args(uint64_t n, unsigned int nargs, bool stack, uint64_t id, uint64_t *a)
{
	uint64_t h = (n * 0x9e3779b97f4a7c15ull) >> 16; /* 48 bits */

	if (stack) {
		a[0] = n;
		a[1] = id;
		return;
	}
	if (nargs > 0)
		a[0] = n;
	if (nargs > 1)
		a[1] = h;
	if (nargs > 2)
		a[2] = n & 0x3f;
	if (nargs > 3)
		a[3] = h >> 20;
}

/* ---- tracebuf ------------------------------------------------------------ */

/*
 * tb_batch_n() - a timed batch of tracebuf_emit(): as a C caller of the
 * library emits, inline (<profring/tracebuf_inline.h>), or with @call
 * through the library's symbol, as a binary built without the inline path
 * does (C++, PROFRING_NO_INLINE, or before it existed).
 */
static inline __attribute__((always_inline)) int
tb_batch_n(struct ev_case *c, struct bench_sample *s, unsigned int nargs,
	   bool call)
{
	struct tracebuf *tb = c->tb;
	uint64_t a[TRACEBUF_MAX_ARGS], n = c->n;
	struct bench_timer t;
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		make_args(n++, nargs, false, 0, a);
		if (call)
			bad |= (tracebuf_emit)(tb, EV_TYPE, a, nargs);
		else
			bad |= tracebuf_emit(tb, EV_TYPE, a, nargs);
	}
	bench_timer_stop(&t, s, c->batch);
	c->n = n;
	return bad ? fail(c, "tracebuf_emit", bad) : 0;
}

static int tb_batch_stack(struct ev_case *c, struct bench_sample *s)
{
	struct tracebuf *tb = c->tb;
	uint64_t a[2], n = c->n, id = c->stack_id, badid = 0;
	struct tracebuf_ev ev;
	struct bench_timer t;
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		bad = tracebuf_begin(tb, &ev);
		if (ring_unlikely(bad))
			break;
		a[0] = n++;
		a[1] = tracebuf_ev_stack(&ev, stack_pcs, STACK_DEPTH);
		badid |= a[1] ^ id;
		bad = tracebuf_ev_emit(&ev, EV_TYPE, a, 2);
		tracebuf_end(&ev);
		if (ring_unlikely(bad))
			break;
	}
	bench_timer_stop(&t, s, c->batch);
	c->n = n;
	if (bad)
		return fail(c, "tracebuf_begin/ev_emit", bad);
	return badid ? fail(c, "tracebuf_ev_stack (id changed)", EPROTO) : 0;
}

static int tb_batch(struct ev_case *c, struct bench_sample *s)
{
	bool call = c->impl == IM_CALL;

	if (c->stack)
		return tb_batch_stack(c, s);
	if (c->nargs == 0)
		return call ? tb_batch_n(c, s, 0, true)
			    : tb_batch_n(c, s, 0, false);
	if (c->nargs == 2)
		return call ? tb_batch_n(c, s, 2, true)
			    : tb_batch_n(c, s, 2, false);
	return call ? tb_batch_n(c, s, 4, true) : tb_batch_n(c, s, 4, false);
}

static int acc_append(const uint8_t *p, size_t len)
{
	uint8_t *q;
	size_t cap;

	if (acc_len + len > acc_cap) {
		cap = acc_cap ? acc_cap : 1 << 20;
		while (cap < acc_len + len)
			cap *= 2;
		q = realloc(acc, cap);
		if (!q)
			return -ENOMEM;
		acc = q;
		acc_cap = cap;
	}
	memcpy(acc + acc_len, p, len);
	acc_len += len;
	return 0;
}

/* Read everything the tracer has queued, into acc; untimed. */
static int tb_drain(struct ev_case *c)
{
	struct tracebuf_chunk ch;
	int rc;

	do {
		rc = tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
		if (!rc && ch.len)
			rc = acc_append(ch.data, ch.len);
		if (rc)
			return fail(c, "tracebuf_read", rc);
	} while (ch.len);
	return 0;
}

/*
 * struct verify - the validation of one generation.
 * @c:      the case
 * @next:   counter of the next event expected
 * @ticks:  time of the previous event
 * @stacks: stack records matching the interned stack
 * @ends:   end records
 * @why:    what was wrong
 */
struct verify {
	const struct ev_case *c;
	uint64_t next;
	uint64_t ticks;
	uint64_t stacks;
	uint64_t ends;
	const char *why;
};

static int v_bad(struct verify *v, const char *why)
{
	v->why = why;
	return -EPROTO;
}

static int v_event(void *arg, const struct tracedec_event *ev)
{
	struct verify *v = arg;
	const struct ev_case *c = v->c;
	uint64_t want[TRACEBUF_MAX_ARGS];

	if (ev->type != EV_TYPE || ev->nargs != c->nargs || ev->level)
		return v_bad(v, "event type, argument count or level");
	if (ev->ticks < v->ticks)
		return v_bad(v, "event time went back");
	v->ticks = ev->ticks;
	if (c->stack)
		make_args(v->next, 2, true, c->stack_id, want);
	else
		make_args(v->next, 4, false, 0, want);
	if (memcmp(ev->args, want, c->nargs * sizeof(want[0])))
		return v_bad(v, "event arguments");
	v->next++;
	return 0;
}

static int v_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		   size_t n)
{
	struct verify *v = arg;

	(void)gen;
	if (id != v->c->stack_id || n != STACK_DEPTH)
		return v_bad(v, "stack table");
	for (size_t i = 0; i < n; i++)
		if (pcs[i] != stack_pcs[i])
			return v_bad(v, "stack PCs");
	v->stacks++;
	return 0;
}

static int v_lost(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		  uint64_t count)
{
	(void)gen;
	(void)tid;
	(void)level;
	(void)count;
	return v_bad(arg, "lost events");
}

static int v_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct verify *v = arg;

	(void)gen;
	(void)batches;
	if (flags)
		return v_bad(v, "end record flags");
	v->ends++;
	return 0;
}

/* Decode the generation in acc: every event written, in order, no loss. */
static int tb_validate(struct ev_case *c)
{
	static const struct tracedec_visitor vis = {
		.event = v_event,
		.stack = v_stack,
		.lost = v_lost,
		.gen_end = v_end,
	};
	struct verify v = { .c = c };
	struct tracedec_error err = { 0 };
	struct tracebuf_stats st;
	int rc;

	rc = tracedec_decode(acc, acc_len, &vis, &v, &err);
	if (rc == -EBADMSG) {
		fprintf(stderr, "trace_bench: %s: bad stream at %zu: %s\n",
			c->name, err.offset, err.what);
		return -1;
	}
	if (rc)
		return fail(c, v.why ? v.why : "tracedec_decode", rc);
	if (v.next != c->n || v.ends != 1 || v.stacks != (c->stack ? 1 : 0)) {
		fprintf(stderr,
			"trace_bench: %s: %llu events written, %llu decoded, "
			"%llu end and %llu stack records\n",
			c->name, (unsigned long long)c->n,
			(unsigned long long)v.next, (unsigned long long)v.ends,
			(unsigned long long)v.stacks);
		return -1;
	}
	tracebuf_stats(c->tb, &st);
	if (st.lost)
		return fail(c, "tracebuf_stats: events lost", -ENOSPC);
	return 0;
}

/* Intern the stack in the new generation (untimed: the one miss). */
static int tb_prime_stack(struct ev_case *c)
{
	struct tracebuf_ev ev;
	int rc = tracebuf_begin(c->tb, &ev);

	if (rc)
		return fail(c, "tracebuf_begin", rc);
	c->stack_id = tracebuf_ev_stack(&ev, stack_pcs, STACK_DEPTH);
	tracebuf_end(&ev);
	return c->stack_id ? 0 : fail(c, "tracebuf_ev_stack", -ENOSPC);
}

/*
 * tb_run() - one repetition: a fresh generation, REP_EVENTS events in
 * timed batches each drained untimed, then advance, drain, validate.
 */
static int tb_run(void *arg, struct bench_sample *s)
{
	struct ev_case *c = arg;
	int rc;

	acc_len = 0;
	if (acc_append(c->hdr, HDR_BYTES))
		return fail(c, "realloc", -ENOMEM);
	c->n = 0;
	if (c->stack && tb_prime_stack(c))
		return -1;
	while (c->n < REP_EVENTS)
		if (tb_batch(c, s) || tb_drain(c))
			return -1;
	rc = tracebuf_advance(c->tb);
	if (rc)
		return fail(c, "tracebuf_advance", rc);
	if (tb_drain(c) || tb_validate(c))
		return -1;
	c->bytes += acc_len - HDR_BYTES;
	c->events += c->n;
	return 0;
}

static int tb_init(struct ev_case *c)
{
	struct tracebuf_opts o = {
		.buf_size = BUF_SIZE,
		.max_bytes = MAX_BYTES,
		.stack_bytes = 1 << 20,
		.expected_stacks = 64,
		.cpu_words = 0, /* no CPU profile buffer */
	};
	struct tracebuf_chunk ch;
	int rc;

	c->tb = tracebuf_new(&o);
	if (!c->tb)
		return fail(c, "tracebuf_new", errno);
	rc = tracebuf_name_type(c->tb, EV_TYPE, "bench",
				c->stack ? "uk" : &"uuuu"[4 - c->nargs]);
	if (rc)
		return fail(c, "tracebuf_name_type", rc);
	rc = tracebuf_start(c->tb);
	if (rc)
		return fail(c, "tracebuf_start", rc);
	rc = tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
	if (rc || ch.len != HDR_BYTES)
		return fail(c, "tracebuf_read (stream header)", rc ? rc : -EIO);
	memcpy(c->hdr, ch.data, HDR_BYTES);
	return 0;
}

static void tb_fini(struct ev_case *c)
{
	struct tracebuf_chunk ch;

	if (!c->tb)
		return;
	tracebuf_stop(c->tb);
	do
		tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
	while (ch.len && !ch.eof);
	tracebuf_free(c->tb);
	c->tb = NULL;
}

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
static int flr_run(void *arg, struct bench_sample *s)
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

/* ---- the comparison ------------------------------------------------------ */

static volatile uint64_t clock_sink;

/* ns per ring_clock_ticks() alone, best of 5 runs of 2^20 reads. */
static double clock_cost(void)
{
	uint64_t sum = 0, best = UINT64_MAX, t0;

	for (int r = 0; r < 5; r++) {
		t0 = bench_now_ns();
		for (int i = 0; i < (1 << 20); i++)
			sum += ring_clock_ticks();
		t0 = bench_now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	clock_sink = sum;
	return (double)best / (1 << 20);
}

/*
 * struct group - a row group: tracebuf and its anchors for one event.
 * @name:  row name
 * @ours:  tracebuf case name
 * @nargs: arguments
 * @stack: { counter, stack id }
 * @ncase: 3 (tracebuf, floor, seqlock) or 4 (and tracebuf_call)
 */
struct group {
	const char *name;
	const char *ours;
	unsigned int nargs;
	bool stack;
	unsigned int ncase;
};

static const struct group groups[] = {
	{ "emit 2 args", "tracebuf_emit", 2, false, 4 },
	{ "emit stack", "begin+stack+emit", 2, true, 3 },
	{ "emit 0 args", "tracebuf_emit", 0, false, 4 },
	{ "emit 4 args", "tracebuf_emit", 4, false, 4 },
};

#define NCASE 4
static const char *const anchor_names[NCASE - 1] = { "floor", "seqlock",
						     "tracebuf_call" };

static void group_report(const struct group *g, const struct ev_case *c,
			 const struct bench_stats *st)
{
	struct bench_row row = {
		.name = g->name,
		.unit = BENCH_NS_PER_OP,
		.ours = &st[0],
		.ours_name = g->ours,
		.goal_le = true,
	};
	char note[96];

	for (unsigned int i = 1; i < g->ncase; i++) {
		snprintf(note, sizeof(note), "bytes/event %.2f vs %.2f%s",
			 (double)c[0].bytes / (double)c[0].events,
			 (double)c[i].bytes / (double)c[i].events,
			 c[i].impl == IM_SEQLOCK ? " (+2 lock add)"
			 : c[i].impl == IM_CALL ? "; inline vs the library call"
						: "");
		row.anchor = &st[i];
		row.anchor_name = anchor_names[i - 1];
		row.goal_ratio = c[i].impl == IM_FLOOR ? 1.3 : 1.0;
		row.note = note;
		bench_report_row(&row);
	}
}

static int group_run(const struct bench_opts *o, const struct group *g)
{
	struct ev_case c[NCASE] = { 0 };
	struct bench_case bc[NCASE];
	struct bench_stats st[NCASE];
	static const enum impl impls[NCASE] = { IM_TRACE, IM_FLOOR, IM_SEQLOCK,
						IM_CALL };
	bool tracer;
	int rc = -1;

	for (unsigned int i = 0; i < g->ncase; i++) {
		c[i] = (struct ev_case){
			.name = i ? anchor_names[i - 1] : g->ours,
			.impl = impls[i],
			.nargs = g->nargs,
			.stack = g->stack,
			.batch = o->batch,
		};
		tracer = impls[i] == IM_TRACE || impls[i] == IM_CALL;
		bc[i] = (struct bench_case){ c[i].name,
					     tracer ? tb_run : flr_run, &c[i] };
	}
	if (tb_init(&c[0]) || (g->ncase == NCASE && tb_init(&c[NCASE - 1])))
		goto out;
	rc = bench_run_cases(bc, g->ncase, o, st);
	if (!rc)
		group_report(g, c, st);
out:
	tb_fini(&c[0]);
	tb_fini(&c[NCASE - 1]);
	return rc;
}

/* ---- generation advance with idle threads ---------------------------- */

/*
 * struct adv_case - a tracer and its idle threads.
 * @tb:       the tracer
 * @n:        threads
 * @started:  threads running
 * @threads:  their ids
 * @lock:     guards @round, @emitted, @quit, @err
 * @go:       @round changed or @quit set
 * @emitted_cv: @emitted grew
 * @round:    emit once per round
 * @emitted:  threads that emitted in this round
 * @quit:     threads end
 * @err:      a failed emit
 * @batches:  tracebuf_stats().batches after the last drain
 */
struct adv_case {
	struct tracebuf *tb;
	unsigned int n;
	unsigned int started;
	pthread_t *threads;
	pthread_mutex_t lock;
	pthread_cond_t go;
	pthread_cond_t emitted_cv;
	uint64_t round;
	unsigned int emitted;
	bool quit;
	int err;
	uint64_t batches;
};

/* An idle thread: one event per round, asleep in between. */
static void *adv_thread(void *arg)
{
	struct adv_case *c = arg;
	uint64_t seen = 0, a;
	int rc;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (c->round == seen && !c->quit)
			pthread_cond_wait(&c->go, &c->lock);
		if (c->quit)
			break;
		seen = a = c->round;
		pthread_mutex_unlock(&c->lock);
		rc = tracebuf_emit(c->tb, ADV_TYPE, &a, 1);
		pthread_mutex_lock(&c->lock);
		if (rc)
			c->err = rc;
		c->emitted++;
		pthread_cond_signal(&c->emitted_cv);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Start a round and wait until every thread has emitted in it. */
static int adv_emit_all(struct adv_case *c)
{
	int err;

	pthread_mutex_lock(&c->lock);
	c->round++;
	c->emitted = 0;
	pthread_cond_broadcast(&c->go);
	while (c->emitted < c->n)
		pthread_cond_wait(&c->emitted_cv, &c->lock);
	err = c->err;
	pthread_mutex_unlock(&c->lock);
	return err ? bench_fail("tracebuf_emit", err) : 0;
}

/* Read the stream until it is empty. */
static int adv_read_all(struct adv_case *c)
{
	struct tracebuf_chunk ch;
	int rc;

	do {
		rc = tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
		if (rc)
			return bench_fail("tracebuf_read", rc);
	} while (ch.len);
	return 0;
}

/* Read the stream empty; the advance flushed exactly n buffers. */
static int adv_drain(struct adv_case *c)
{
	struct tracebuf_stats ts;

	if (adv_read_all(c))
		return -1;
	tracebuf_stats(c->tb, &ts);
	if (ts.batches - c->batches != c->n || ts.lost) {
		fprintf(stderr,
			"trace_bench: advance: %llu buffers, %u threads, "
			"%llu lost\n",
			(unsigned long long)(ts.batches - c->batches), c->n,
			(unsigned long long)ts.lost);
		return -1;
	}
	c->batches = ts.batches;
	return 0;
}

/* One repetition: every thread emits, one timed advance, a drain. */
static int adv_run(void *arg, struct bench_sample *s)
{
	struct adv_case *c = arg;
	struct bench_timer t;
	int rc;

	if (adv_emit_all(c))
		return -1;
	bench_timer_start(&t);
	rc = tracebuf_advance(c->tb);
	bench_timer_stop(&t, s, 1);
	if (rc)
		return bench_fail("tracebuf_advance", rc);
	return adv_drain(c);
}

static int adv_init(struct adv_case *c)
{
	struct tracebuf_opts to = { .cpu_words = 0 }; /* no CPU profbuf */
	int rc;

	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->emitted_cv, NULL);
	c->tb = tracebuf_new(&to);
	if (!c->tb)
		return bench_fail("tracebuf_new", errno);
	rc = tracebuf_name_type(c->tb, ADV_TYPE, "round", "u");
	if (!rc)
		rc = tracebuf_start(c->tb);
	if (rc)
		return bench_fail("tracebuf_start", rc);
	c->threads = calloc(c->n ? c->n : 1, sizeof(*c->threads));
	if (!c->threads)
		return bench_fail("calloc", -ENOMEM);
	for (; c->started < c->n; c->started++) {
		rc = pthread_create(&c->threads[c->started], NULL, adv_thread,
				    c);
		if (rc)
			return bench_fail("pthread_create", rc);
	}
	return adv_read_all(c); /* the stream header */
}

static void adv_fini(struct adv_case *c)
{
	struct tracebuf_chunk ch;

	pthread_mutex_lock(&c->lock);
	c->quit = true;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
	for (unsigned int i = 0; i < c->started; i++)
		pthread_join(c->threads[i], NULL);
	free(c->threads);
	if (!c->tb)
		return;
	tracebuf_stop(c->tb);
	do
		tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
	while (ch.len && !ch.eof);
	tracebuf_free(c->tb);
}

/**
 * advance() - measure and report tracebuf_advance() with 0, 16 and 64
 * idle threads, ADV_ROUNDS advances each, interleaved.
 * @o: options
 *
 * Return: 0, or -1 if anything failed.
 */
static int advance(const struct bench_opts *o)
{
	static const unsigned int nthreads[] = { 0, 16, 64 };
	struct adv_case c[ARRAY_SIZE(nthreads)] = { 0 };
	struct bench_case bc[ARRAY_SIZE(nthreads)];
	struct bench_stats st[ARRAY_SIZE(nthreads)];
	struct bench_opts ao = *o;
	char names[ARRAY_SIZE(nthreads)][16], row[32];
	size_t inited;
	int rc = 0;

	ao.reps = ADV_ROUNDS;
	ao.warmup = 2;
	for (inited = 0; inited < ARRAY_SIZE(nthreads) && !rc; inited++) {
		c[inited].n = nthreads[inited];
		snprintf(names[inited], sizeof(names[inited]), "N=%u",
			 nthreads[inited]);
		bc[inited] = (struct bench_case){ names[inited], adv_run,
						  &c[inited] };
		rc = adv_init(&c[inited]);
	}
	if (!rc)
		rc = bench_run_cases(bc, ARRAY_SIZE(nthreads), &ao, st);
	for (size_t i = 1; i < ARRAY_SIZE(nthreads) && !rc; i++) {
		snprintf(row, sizeof(row), "advance %u idle", nthreads[i]);
		bench_info_row(row, BENCH_NS_PER_OP, &st[i], names[i], &st[0],
			       names[0],
			       "info; 1 event per thread per generation");
	}
	for (size_t i = 0; i < inited; i++)
		adv_fini(&c[i]);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o;

	bench_parse_args(argc, argv, &o);
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "trace_bench: cannot pin to CPU 0\n");
	for (int i = 0; i < STACK_DEPTH; i++)
		stack_pcs[i] = (uintptr_t)(0x555555554000ull + 0x1337 * i);
	memcpy(flr_copy.pcs, stack_pcs, sizeof(stack_pcs));
	flr_copy.n = STACK_DEPTH;
	flr_copy.id = FLOOR_STACK_ID;
	flr_copy.hash = flr_hash(stack_pcs, STACK_DEPTH);
	bench_report_begin("trace_bench", &o);
	for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
		if (group_run(&o, &groups[i]))
			return 1;
	if (advance(&o))
		return 1;
	bench_report_note("One thread; %u events per repetition in batches "
			  "of %u, drained untimed; event type 8; arguments: "
			  "counter, 48-bit value (2 args), + counter & 63, "
			  "value >> 20 (4 args); stack: 16 frames, interned "
			  "(hit); bytes/event: tracebuf stream (batch headers "
			  "included) vs the floor's array.",
			  REP_EVENTS, o.batch);
	bench_report_note("ring_clock_ticks() (RDTSC) alone: %.2f ns per "
			  "read (best of 5 x 2^20).",
			  clock_cost());
	bench_report_note("Advance: ns per tracebuf_advance() with N idle "
			  "threads, each of which emitted one event in the "
			  "generation; median of %d advances.",
			  ADV_ROUNDS);
	bench_report_end();
	free(acc);
	return 0;
}
