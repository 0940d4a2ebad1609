/* SPDX-License-Identifier: MIT */
/*
 * <profring/tracebuf_inline.h> - tracebuf_emit()'s fast path, inline at the
 * call site.  Included by <profring/tracebuf.h>; not included on its own
 * (the library's ring/varint.h includes it for the varint encoder alone).
 *
 * WHY.  An event's fixed cost was mostly the call and what the caller
 * already knows: the call boundary, the checks of a type and an argument
 * count that are constants at the call site, and the look-up of the
 * thread's slot (issue 18, bench/RESULTS.md).  So, when compiling C for
 * x86-64 (where the tracer's clock is RDTSC) with GCC or Clang and
 * optimizing, a call written tracebuf_emit(...) runs this fast path in the
 * caller (tracebuf_emit is then a function-like macro), and
 * calls the library's tracebuf_emit() only when it declines.  It declines
 * for an argument it does not like, a tracer whose @inline_span is 0, a
 * thread whose slot is not in the tracer's own TLS way (its first event,
 * or a way another structure took over), a stopped tracer, a handler
 * nested two deep, and a missing or full buffer: then it leaves its
 * section, if it entered one, having written nothing, and the library
 * does everything, the checks included.  The library's own
 * tracebuf_emit() runs this same function first, so there is one fast
 * path, not two.  Define PROFRING_NO_INLINE before including
 * <profring/tracebuf.h> to always call the library (code that names a
 * struct member tracebuf_emit, or interposes the function and must see
 * every event).  (tracebuf_emit)(...) and its address always reach the
 * library.
 *
 * THE PROTOCOL is tracebuf.c's and ring/grace.h's, step by step (read it
 * there): find the thread's slot in the tracer's own TLS way (in the slot
 * array and owned by the thread's token, checked on one load of the way);
 * enter the section (load the slot's word, store it plus one with
 * release, a compiler barrier: membarrier() in the updater's grace period
 * does the rest, which is why a tracer whose readers need a fence has
 * @inline_span 0); load gen with acquire; find the thread's buffer for
 * (gen & 1, depth) and its room; read the clock and write the event;
 * exit (store the word seen at entry, plus one period if it was
 * outermost, with release).  No atomic read-modify-write;
 * async-signal-safe; wait-free.
 *
 * ABI.  An inline emitter reads the tracer's block, a thread's slot, its
 * buffer record and the thread's TLS ways directly, so the structs and
 * constants below, and the event encoding (tracebuf/FORMAT.md, version
 * 2), are frozen, and the library exports its TLS ways under the name
 * profring__grace_tls.  The first thing read is @inline_span, at byte 12
 * of the tracer: every layout keeps it there; only when it is nonzero is
 * anything else read.
 *  - A binary built before this header calls the tracebuf_emit symbol and
 *    sees no change.
 *  - A binary built with it needs a libprofring.so.1 that exports
 *    profring__grace_tls (this one or later): against an older one the
 *    dynamic loader refuses to start it ("undefined symbol:
 *    profring__grace_tls"), as for any newer function; it never runs
 *    against an older layout.  Built with PROFRING_NO_INLINE, it does not
 *    name the symbol.
 *  - A tracer whose readers need a fence (a kernel without membarrier)
 *    has @inline_span 0, and so must every tracer of a library whose
 *    layout, TLS ways or protocol differ from version 1: inline emitters
 *    built against this header then read nothing more and call it,
 *    slower but right.
 *  - A copy of libprofring.a linked into a shared object without a
 *    version script exports profring__grace_tls from it too, as it
 *    exports its functions: copies that interpose share one set of ways
 *    and one token per thread, which every copy of version 1 reads alike.
 *
 * The section's entry and exit and the way's check below are version 1's
 * copies of ring_grace_enter_slot(), ring_grace_exit() and
 * ring_grace_way_holds() (ring/grace.h): frozen here, free to change
 * there, as long as a library that changes them sets @inline_span 0.
 * tracebuf/tracebuf_impl.h checks at compile time that the library's
 * structs put every field where these say.
 *
 * Internal names start with tracebuf__ or profring__: not API.
 */
#ifndef PROFRING_TRACEBUF_INLINE_H
#define PROFRING_TRACEBUF_INLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The structs below are views of the library's own (which it accesses
 * by their types): may_alias, so that a compiler that sees both (the
 * library, an LTO build) does not reorder accesses across them.
 */
#if defined(__GNUC__)
#define TRACEBUF__VIEW __attribute__((may_alias))
#else
#define TRACEBUF__VIEW
#endif

/*
 * struct tracebuf_layout_v1 - the start of every tracer's block, as the
 * inline path reads it (the library's struct tracebuf; the fields it
 * alone uses are left out).  @gen is accessed only with __atomic
 * builtins.
 */
struct TRACEBUF__VIEW tracebuf_layout_v1 {
	uint64_t gen; /* 0: stopped; the buffers' parity is gen & 1 */
	uint32_t buf_size; /* bytes of each buffer */
	/*
	 * The gate, read first: 0, and inline emitters read nothing more
	 * and call tracebuf_emit().  Else the bytes of the slot array.
	 */
	uint32_t inline_span;
	/* Thread i's buffers are threads[i], its slot slots[i]. */
	void *threads; /* struct tracebuf_thread_v1, TRACEBUF__THREAD_BYTES apart */
	void *slots; /* struct tracebuf_slot_v1, TRACEBUF__SLOT_BYTES apart */
	uint32_t reserved;
	uint32_t way; /* the TLS way this tracer's slot is cached in */
};

/* A thread's slot: its owner token and its section word (period | depth). */
struct TRACEBUF__VIEW tracebuf_slot_v1 {
	uint64_t owner;
	uint64_t word;
};

/* A thread's buffers: [gen & 1][depth], each NULL or a buffer record. */
struct TRACEBUF__VIEW tracebuf_thread_v1 {
	void *buf[2][2];
};

/* A buffer record: where the next event goes, and the last event's time. */
struct TRACEBUF__VIEW tracebuf_buf_v1 {
	void *reserved0[2];
	uint8_t *data;
	uint32_t reserved1;
	uint32_t pos; /* the next event's offset in data */
	uint64_t reserved2;
	uint64_t last; /* ticks of the last event */
};

#define TRACEBUF__TLS_WAYS 8

/*
 * struct tracebuf_tls_v1 - a thread's TLS ways: its last slots (of any
 * of the library's structures), where a displaced slot goes next, and its
 * owner token (0 until first use).  The library's own type for them
 * (ring/grace.h), not a view.
 */
struct tracebuf_tls_v1 {
	void *slot[TRACEBUF__TLS_WAYS];
	unsigned int next;
	uint64_t token; /* __atomic builtins only */
};

#define TRACEBUF__SLOT_BYTES 64
#define TRACEBUF__THREAD_BYTES 128
#define TRACEBUF__DEPTH_MASK ((uint64_t)0xff)
#define TRACEBUF__PERIOD ((uint64_t)0x100)
#define TRACEBUF__VARINT_MAX 10
/* The most bytes an event of @nargs arguments takes (the room it needs). */
#define TRACEBUF__EVENT_MAX(nargs) (1 + TRACEBUF__VARINT_MAX * (1 + (nargs)))

#if defined(__GNUC__) && !defined(__cplusplus)
extern __thread struct tracebuf_tls_v1 profring__grace_tls
	__attribute__((tls_model("initial-exec")));

/*
 * tracebuf__varint_put() - write @v at @p as an unsigned LEB128 (7 bits
 * a byte, low bits first, the high bit set on every byte but the last; 1
 * to 10 bytes); return the bytes used.  The stream's integer encoding
 * (tracebuf/FORMAT.md); ring/varint.h's ring_varint_put() is this.
 */
static inline size_t tracebuf__varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)v | 0x80;
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/*
 * tracebuf__put_head() - an event's head at @c's cursor: the type byte
 * (@type << 3 | @code: the argument count, or the payload's mark) and
 * the ticks since the buffer's last event (0 if the clock went back),
 * which @now becomes.  Return: where the arguments go.  The caller has
 * checked the room and moves the cursor.  The library's encoder too.
 */
static inline __attribute__((always_inline)) uint8_t *
tracebuf__put_head(struct tracebuf_buf_v1 *c, unsigned int type,
		   unsigned int code, uint64_t now)
{
	uint8_t *p = c->data + c->pos;
	uint64_t last = c->last;

	*p++ = (uint8_t)(type << 3 | code);
	p += tracebuf__varint_put(p, now > last ? now - last : 0);
	if (now > last)
		c->last = now;
	return p;
}

/* tracebuf__put_head(), then @nargs varint arguments; the cursor moves. */
static inline __attribute__((always_inline)) void
tracebuf__put_event(struct tracebuf_buf_v1 *c, unsigned int type,
		    const uint64_t *args, unsigned int nargs, uint64_t now)
{
	uint8_t *p = tracebuf__put_head(c, type, nargs, now);

	for (unsigned int i = 0; i < nargs; i++)
		p += tracebuf__varint_put(p, args[i]);
	c->pos = (uint32_t)(p - c->data);
}
#endif /* __GNUC__ && !__cplusplus */

#endif /* PROFRING_TRACEBUF_INLINE_H */

/* The fast path itself: only after <profring/tracebuf.h> declared the API. */
#if defined(PROFRING_TRACEBUF_H) && !defined(PROFRING_TRACEBUF_INLINE_EMIT)
#define PROFRING_TRACEBUF_INLINE_EMIT

#if !defined(PROFRING_NO_INLINE) && !defined(__cplusplus) && \
	defined(__GNUC__) && defined(__OPTIMIZE__) && defined(__x86_64__)
#define TRACEBUF__INLINE 1
#endif

#if defined(__GNUC__) && !defined(__cplusplus)
/*
 * The library's event types (1-7): written by its own functions alone,
 * refused by tracebuf_emit() and tracebuf_ev_emit().
 */
static inline int tracebuf__library_type(unsigned int type)
{
	return type < TRACEBUF_EV_USER;
}

/* Whether @type, @nargs and @args are out of range for any event. */
static inline int tracebuf__bad_args(unsigned int type, const uint64_t *args,
				     unsigned int nargs)
{
	return !type || type > TRACEBUF_MAX_TYPE || nargs > TRACEBUF_MAX_ARGS ||
	       (nargs && !args);
}

/*
 * Whether tracebuf_emit() takes @type, @nargs and @args (else -EINVAL):
 * the library's rule too (tracebuf.c).
 */
static inline __attribute__((always_inline)) int
tracebuf__emit_args_ok(unsigned int type, const uint64_t *args,
		       unsigned int nargs)
{
	return !tracebuf__library_type(type) &&
	       !tracebuf__bad_args(type, args, nargs);
}
#endif /* __GNUC__ && !__cplusplus */

#if defined(__GNUC__) && !defined(__cplusplus) && defined(__x86_64__)
#define TRACEBUF__FAST 1

#ifndef TRACEBUF__PERTURB
#define TRACEBUF__PERTURB() ((void)0)
#endif

/*
 * tracebuf__exit() - leave the section entered with word @w: store @w,
 * plus one period if it was the outermost.  Release: pairs with the
 * acquire loads of ring_grace_wait(), so every access of the section
 * happens before the updater goes on.
 */
static inline __attribute__((always_inline)) void
tracebuf__exit(struct tracebuf_slot_v1 *slot, uint64_t w)
{
	if (!(w & TRACEBUF__DEPTH_MASK))
		w += TRACEBUF__PERIOD;
	__atomic_store_n(&slot->word, w, __ATOMIC_RELEASE);
}

/*
 * tracebuf__emit_fast() - the fast path: write the event and return 0, or
 * write nothing and return 1 (the library then does everything).
 * Async-signal-safe, wait-free, lock-free.
 *
 * The clock is read last, just before the write.  Read first (so that
 * the look-ups would run in its shadow, as was thought), RDTSC made an
 * event without arguments slower on the AMD guests of bench/RESULTS.md:
 * the microcoded read holds up the instructions after it.  With 2 or 4
 * arguments, where the arguments' encoding waits for the time delta,
 * first and last measured the same within the guest's noise.  Read last,
 * the event is also stamped inside its section, after its buffer's last
 * event: a handler that ran before the read wrote earlier in this
 * buffer, and one that runs after it writes in the next level's buffer
 * (or is refused, two deep).  Read first, such a handler's event could
 * precede this one in the buffer with a later stamp, and this event's
 * delta was clamped to 0 (tracebuf__put_head()).
 */
static inline __attribute__((always_inline)) int
tracebuf__emit_fast(struct tracebuf *t, unsigned int type, const uint64_t *args,
		    unsigned int nargs)
{
	const struct tracebuf_layout_v1 *l =
		(const struct tracebuf_layout_v1 *)(void *)t;
	struct tracebuf_thread_v1 *th;
	struct tracebuf_slot_v1 *slot;
	struct tracebuf_buf_v1 *c;
	uint64_t token, w, gen;
	uint32_t span, way;
	unsigned int level;
	uintptr_t off;

	if (!tracebuf__emit_args_ok(type, args, nargs) || !t)
		return 1;
	span = l->inline_span; /* the gate: nothing else is read if 0 */
	if (!span)
		return 1;
	way = l->way & (TRACEBUF__TLS_WAYS - 1);
	/* Relaxed: only this thread (and its handlers) store the token. */
	token = __atomic_load_n(&profring__grace_tls.token, __ATOMIC_RELAXED);
	/*
	 * One load of the way, checked on the copy (ring/grace.h): in the
	 * array (so not NULL), @off is a multiple of the slot size, as
	 * every slot pointer is aligned to it.  Relaxed: our own TLS.
	 */
	slot = (struct tracebuf_slot_v1 *)__atomic_load_n(
		&profring__grace_tls.slot[way], __ATOMIC_RELAXED);
	off = (uintptr_t)slot - (uintptr_t)l->slots;
	if (off >= span)
		return 1;
	/* Relaxed: our own slot's owner only changes by us. */
	if (__atomic_load_n(&slot->owner, __ATOMIC_RELAXED) != token)
		return 1;
	/* Relaxed: only this thread (and its handlers) store the word. */
	w = __atomic_load_n(&slot->word, __ATOMIC_RELAXED);
	TRACEBUF__PERTURB(); /* a handler's whole section may land here */
	/* Release: as ring_grace_enter_slot()'s store (see there). */
	__atomic_store_n(&slot->word, w + 1, __ATOMIC_RELEASE);
	/* Orders the store before our loads; membarrier() does the rest. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	level = (unsigned int)(w & TRACEBUF__DEPTH_MASK);
	/* Acquire: pairs with the release store of gen in close_gen(). */
	gen = __atomic_load_n(&l->gen, __ATOMIC_ACQUIRE);
	if (__builtin_expect(!gen || level > 1, 0))
		goto decline;
	th = (struct tracebuf_thread_v1 *)((char *)l->threads +
					   off * (TRACEBUF__THREAD_BYTES /
						  TRACEBUF__SLOT_BYTES));
	c = (struct tracebuf_buf_v1 *)th->buf[gen & 1][level];
	if (__builtin_expect(
		    !c || c->pos + TRACEBUF__EVENT_MAX(nargs) > l->buf_size, 0))
		goto decline;
	tracebuf__put_event(c, type, args, nargs, __builtin_ia32_rdtsc());
	tracebuf__exit(slot, w);
	return 0;
decline:
	tracebuf__exit(slot, w);
	return 1;
}

#endif /* __GNUC__ && !__cplusplus && __x86_64__ */
#ifdef TRACEBUF__INLINE
/*
 * tracebuf_emit(), inline: a call written tracebuf_emit(...) runs this;
 * the function's address, or (tracebuf_emit)(...), is still the
 * library's.
 */
static inline __attribute__((always_inline)) int
tracebuf__emit_inline(struct tracebuf *t, unsigned int type,
		      const uint64_t *args, unsigned int nargs)
{
	if (__builtin_expect(!tracebuf__emit_fast(t, type, args, nargs), 1))
		return 0;
	return (tracebuf_emit)(t, type, args, nargs);
}
#define tracebuf_emit(...) tracebuf__emit_inline(__VA_ARGS__)
#endif /* TRACEBUF__INLINE */

#endif /* PROFRING_TRACEBUF_H && !PROFRING_TRACEBUF_INLINE_EMIT */
