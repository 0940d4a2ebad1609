/* SPDX-License-Identifier: MIT */
/*
 * <profring/profbuf_inline.h> - profbuf_write()'s fast path, inline at the
 * call site.  Included by <profring/profbuf.h>; not included on its own.
 *
 * WHY.  A write's fixed cost is mostly the call: seven arguments passed,
 * six registers saved and restored, checks of arguments the caller knows
 * at compile time (issue 18, bench/RESULTS.md).  So, when compiling C
 * for x86-64 or arm64 with GCC or Clang and optimizing, a call written
 * profbuf_write(...) runs this fast path in the caller (profbuf_write is
 * then a function-like macro), and calls the library's profbuf_write()
 * only when it declines.  It declines for a shared buffer, a pending overflow
 * or CLOSED, a sleeping reader, a record that would reach the ring's end,
 * no room, an argument it does not like, or a lost CAS: the library then
 * does everything, the checks included.  Define PROFRING_NO_INLINE before
 * including <profring/profbuf.h> to always call the library: needed by
 * code that names a struct member profbuf_write, or that interposes the
 * function (a wrapper, --wrap, an LD_PRELOAD mock) and must see every
 * write.  (profbuf_write)(...) and its address always reach the library.
 *
 * THE PROTOCOL is profbuf.c's, step by step (read it there): acquire-load
 * ovf, load w, acquire-load limit (r moved on by the ring's sizes, which
 * the reader stores after r), check room, reserve with one CAS on w, fill
 * the record and its tag, release-store the commit stamp.  The library's
 * own profbuf_write() runs this same function first, so there is one
 * fast path, not two; profbuf_reserve()'s is the same steps up to the
 * stack (profbuf__claim_fast()), and profbuf_commit()'s is the stamp.
 *
 * ABI.  An inline writer reads the buffer's block directly, so the words
 * in struct profbuf_layout_v1 and the constants below are frozen.  It
 * writes only into a buffer whose @inline_hdrsize is nonzero (the
 * buffer's hdrsize), and calls profbuf_write() for any other:
 *  - a binary built before this header calls the profbuf_write symbol and
 *    sees no change;
 *  - a shared buffer (profbuf_shared_init()) has @inline_hdrsize 0: its
 *    writers must name themselves in the stamps, which the library does;
 *  - a library from before this header has 0 there too (it was padding),
 *    so a binary built with it also runs against an older
 *    libprofring.so.1, calling it for every write;
 *  - a library whose layout or protocol differs from version 1 must keep
 *    a u32 0 at @inline_hdrsize's offset in every buffer: inline writers
 *    built against this header then call it, slower but right.
 * profbuf/profbuf_impl.h checks at compile time that the library's struct
 * profbuf puts every field where this one says.
 *
 * Internal names start with profbuf__: not API.
 */
#ifndef PROFRING_PROFBUF_INLINE_H
#define PROFRING_PROFBUF_INLINE_H

#if !defined(PROFRING_NO_INLINE) && !defined(__cplusplus) && \
	defined(__GNUC__) && defined(__OPTIMIZE__) &&        \
	(defined(__x86_64__) || defined(__aarch64__))
#define PROFBUF__INLINE 1
#endif

/*
 * A view of the library's own struct (which it accesses by its type):
 * may_alias, so that a compiler that sees both (the library, an LTO
 * build) does not reorder accesses across them.
 */
#if defined(__GNUC__)
#define PROFBUF__VIEW __attribute__((may_alias))
#else
#define PROFBUF__VIEW
#endif

/*
 * struct profbuf_layout_v1 - the start of every profbuf's block, as the
 * inline path reads it (the library's struct profbuf, fields it alone
 * uses left out).  @w, @limit, @ovf are accessed only with __atomic
 * builtins; @r is not read here.
 */
struct PROFBUF__VIEW profbuf_layout_v1 {
	uint64_t w; /* packed index: data count, flags, tag count */
	uint64_t pad_w[7];
	uint64_t r; /* the same, given back by the reader */
	uint64_t limit; /* r, its counts moved on by the ring's sizes */
	uint64_t pad_r[6];
	uint64_t ovf; /* overflow count (bits 0-31), flags */
	uint64_t pad_ovf[7];
	uint32_t wake_watermark;
	uint32_t hdrsize;
	uint32_t data_len; /* power of two */
	uint32_t tag_len; /* power of two */
	uint32_t shared; /* not read here: @inline_hdrsize is 0 if set */
	uint32_t inline_hdrsize; /* 0: inline writers call profbuf_write() */
	uint64_t data_off; /* bytes from the block to the data ring */
	uint64_t tags_off; /* ... to the tag ring (const void *) */
	uint64_t stamps_off; /* ... to the commit stamps (uint32_t) */
};

/* w: bits 0-31 the data count, bit 32 SLEEPING, bits 34-63 the tag count. */
#define PROFBUF__W_SLEEPING ((uint64_t)1 << 32)
#define PROFBUF__W_FLAGS ((uint64_t)3 << 32)
#define PROFBUF__W_TAG_SHIFT 34
/* No ring holds this many words or tags. */
#define PROFBUF__MAX_WORDS ((uint32_t)1 << 28)
/* ovf: a pending overflow count, or CLOSED. */
#define PROFBUF__OVF_PENDING (((uint64_t)1 << 34) | UINT32_MAX)
#define PROFBUF__STAMP_COMMITTED 1u

#if defined(__GNUC__) && !defined(__cplusplus)

/* Four words: two 16-byte moves. */
static inline __attribute__((always_inline)) void
profbuf__copy4(uint64_t *d, const uint64_t *s)
{
	__builtin_memcpy(d, s, 4 * sizeof(*d));
}

/* Up to this many words are copied inline; more by memcpy(). */
#define PROFBUF__INLINE_COPY_WORDS 16

/*
 * profbuf__copy() - @n words, any @n.  Up to 16: 4-word copies, the last
 * ending at the last word (overlapping the one before it, as glibc's
 * memcpy() does), and under 4 the first and last words and the one
 * between; so two or three branches, no loop.  A header or a short stack
 * is a few words: a memcpy() call would cost more than the copy, but for
 * longer ones memcpy()'s loop wins.
 */
static inline __attribute__((always_inline)) void
profbuf__copy(uint64_t *d, const uint64_t *s, size_t n)
{
	/*
	 * With @n unknown, hide where @s points: GCC would warn about the
	 * branches for larger @n when @s is an array too short for them,
	 * though @n then never gets there.  The empty asm costs nothing.
	 */
	if (!__builtin_constant_p(n))
		__asm__("" : "+r"(s));
	if (n > PROFBUF__INLINE_COPY_WORDS) {
		__builtin_memcpy(d, s, n * sizeof(*d));
	} else if (n >= 4) {
		profbuf__copy4(d, s);
		profbuf__copy4(d + n - 4, s + n - 4);
		if (n > 8) {
			profbuf__copy4(d + 4, s + 4);
			if (n > 12)
				profbuf__copy4(d + 8, s + 8);
		}
	} else if (n) {
		d[0] = s[0];
		d[n - 1] = s[n - 1];
		if (n == 3)
			d[1] = s[1];
	}
}

/* A constant header up to this many words is held in registers. */
#define PROFBUF__HELD_WORDS 4

#ifndef PROFBUF__PERTURB
#define PROFBUF__PERTURB() ((void)0)
#endif

/* profbuf_resv.profbuf__flags: the commit must run in the library. */
#define PROFBUF__RESV_WAKE 1u /* this reservation cleared SLEEPING */

/*
 * struct profbuf__slot - a record the fast path reserved and filled up to
 * its stack: where it starts, where its stack goes, its commit stamp, and w just after it.
 */
struct profbuf__slot {
	uint64_t *rec;
	uint64_t *stk;
	uint32_t *stamp;
	uint64_t nw;
};

/*
 * profbuf__claim_fast() - the fast path up to the stack, for
 * profbuf__write_fast() and profbuf__reserve_fast(): reserve the record
 * of @nstk stack words and store its length, time, header and tag, then
 * return 0 with @s filled in; or do nothing and return 1 (the library's
 * write_slow() then does everything).  @bad: a caller's own argument
 * check, folded into the checks' one branch.  Async-signal-safe,
 * lock-free, wait-free: one CAS, never retried.
 */
static inline __attribute__((always_inline)) int
profbuf__claim_fast(struct profbuf *pb, const void *tag, int64_t now,
		    const uint64_t *hdr, size_t nhdr, size_t nstk, bool bad,
		    struct profbuf__slot *s)
{
	struct profbuf_layout_v1 *b = (struct profbuf_layout_v1 *)pb;
	uint32_t hs, len, pos, size, tags, slot;
	uint64_t old, nw, room, any, *d, h[PROFBUF__HELD_WORDS];
	bool held = __builtin_constant_p(nhdr) && nhdr <= PROFBUF__HELD_WORDS;
	const void **tagp;
	uint32_t *stamp;

	if (__builtin_expect(!b || !hdr, 0))
		return 1;
	/* 0 in a shared, older or newer buffer: no nhdr is below it. */
	hs = b->inline_hdrsize;
	size = b->data_len;
	/*
	 * nhdr 0 (an all-zero header) or above hdrsize, a stack at least as
	 * long as any ring (len below cannot wrap, and the room tests see
	 * the rest), the caller's @bad, a buffer not for us: one branch.
	 */
	if (__builtin_expect(
		    nhdr - 1 >= hs || nstk >= PROFBUF__MAX_WORDS || bad, 0))
		return 1;
	/*
	 * nhdr >= 1 now.  A header of a few words known at compile time is
	 * loaded once, here, and stored from registers after the CAS; any
	 * other is read twice: the first and last words, then any between.
	 */
	if (held) {
		any = 0;
		for (size_t i = 0; i < nhdr; i++)
			any |= h[i] = hdr[i];
	} else {
		any = hdr[0] | hdr[nhdr - 1];
		for (size_t i = 1; i + 1 < nhdr; i++)
			any |= hdr[i];
	}
	if (__builtin_expect(!any, 0))
		return 1;
	len = 2 + hs + (uint32_t)nstk;
	/*
	 * Acquire: pairs with the release that ends a BUSY period (the
	 * overflow record's time is visible to whoever emits it) and with
	 * profbuf_close()'s (a write that starts after close returned sees
	 * CLOSED).
	 */
	if (__builtin_expect(__atomic_load_n(&b->ovf, __ATOMIC_ACQUIRE) &
				     PROFBUF__OVF_PENDING,
			     0))
		return 1;
	/*
	 * Reserve, with SLEEPING clear and the record ending before the
	 * ring's end: no rewind, and no carry out of the data count into the
	 * flags, so that w moves to nw by one add (the tag count sits in the
	 * top bits and wraps by itself).  The room test is on limit - nw,
	 * the room left after our record, read unsigned: its low 32 bits are
	 * the data room, past the ring if the record does not fit; its top 30
	 * bits the tag room, or one less when the low bits borrow (always
	 * when w has EXTRA set: the last free tag slot then goes the slow
	 * way), past the tag ring if the tag ring is full.  A sealed w is
	 * 2^29 records ahead: its tag room is about 2^29, past any tag ring,
	 * however stale limit is (as everywhere here, counts compared are
	 * less than 2^29 apart).  A w that moved since we loaded it makes the
	 * CAS fail, whatever the test said.
	 */
	old = __atomic_load_n(&b->w, __ATOMIC_RELAXED);
	/*
	 * Acquire: pairs with the reader's release store of limit once it has
	 * cleared the stamps and is done with the space up to r.
	 */
	room = __atomic_load_n(&b->limit, __ATOMIC_ACQUIRE);
	pos = (uint32_t)old & (size - 1);
	nw = old + len + ((uint64_t)1 << PROFBUF__W_TAG_SHIFT);
	room -= nw;
	tags = b->tag_len;
	if (__builtin_expect((old & PROFBUF__W_SLEEPING) || pos + len >= size ||
				     (uint32_t)room > size ||
				     (uint32_t)(room >> PROFBUF__W_TAG_SHIFT) >=
					     tags,
			     0))
		return 1;
	slot = (uint32_t)(old >> PROFBUF__W_TAG_SHIFT) & (tags - 1);
	d = (uint64_t *)((char *)b + b->data_off) + pos;
	tagp = (const void **)((char *)b + b->tags_off) + slot;
	stamp = (uint32_t *)((char *)b + b->stamps_off) + slot;
	/*
	 * Every address is computed before the CAS: a locked CAS waits for
	 * earlier stores and holds back later loads, so what the stores
	 * after it need should be in registers already (issue 18).  The
	 * empty asm keeps the compiler from sinking the loads past it.
	 */
	__asm__("" : "+r"(d), "+r"(tagp), "+r"(stamp));
	/*
	 * The space was proven free by the acquire of limit, and the stamp
	 * publishes.  Acquire on success: pairs with the release CAS of a
	 * shorter profbuf_commit() that gave its tail back: that writer's
	 * stores into the tail happen before ours (free on x86-64, where
	 * the locked CAS is a full barrier).  One try: if w moved, the
	 * slow way starts over.
	 */
	if (__builtin_expect(!__atomic_compare_exchange_n(&b->w, &old, nw, 0,
							  __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED),
			     0))
		return 1;
	PROFBUF__PERTURB();
	*tagp = tag;
	d[0] = len;
	d[1] = (uint64_t)now;
	if (held) {
		for (size_t i = 0; i < nhdr; i++)
			d[2 + i] = h[i];
	} else {
		profbuf__copy(d + 2, hdr, nhdr);
	}
	for (size_t i = nhdr; i < hs; i++) {
		__asm__("" : "+r"(i));
		d[2 + i] = 0;
	}
	s->rec = d;
	s->stk = d + 2 + hs;
	s->stamp = stamp;
	s->nw = nw;
	return 0;
}

/*
 * profbuf__write_fast() - the fast path: write the record and return 0,
 * or do nothing and return 1 (the library's write_slow() then does
 * everything).  Async-signal-safe, lock-free, wait-free: one CAS, never
 * retried.
 */
static inline __attribute__((always_inline)) int
profbuf__write_fast(struct profbuf *pb, const void *tag, int64_t now,
		    const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
		    size_t nstk)
{
	struct profbuf__slot s;

	/* A stack missing: declined with the claim's other checks. */
	if (profbuf__claim_fast(pb, tag, now, hdr, nhdr, nstk, !stk && nstk,
				&s))
		return 1;
	profbuf__copy(s.stk, (const uint64_t *)stk, nstk);
	PROFBUF__PERTURB();
	/*
	 * Release: pairs with the reader's acquire load of the stamp: the
	 * record and the tag are visible before the stamp.
	 */
	__atomic_store_n(s.stamp, PROFBUF__STAMP_COMMITTED, __ATOMIC_RELEASE);
	return 0;
}

/*
 * profbuf__reserve_fast() - profbuf_reserve()'s fast path: the write's
 * own, up to the stack, handed to the caller in @rv.  Return 0, or 1
 * having done nothing.
 */
static inline __attribute__((always_inline)) int
profbuf__reserve_fast(struct profbuf *pb, const void *tag, int64_t now,
		      const uint64_t *hdr, size_t nhdr, size_t nstk,
		      struct profbuf_resv *rv)
{
	struct profbuf__slot s;

	if (profbuf__claim_fast(pb, tag, now, hdr, nhdr, nstk, !rv, &s))
		return 1;
	rv->stk = (uintptr_t *)s.stk;
	rv->nstk = nstk;
	rv->profbuf__b = pb;
	rv->profbuf__rec = s.rec;
	rv->profbuf__stamp = s.stamp;
	rv->profbuf__flags = 0;
	rv->profbuf__w_end = s.nw & ~(uint64_t)PROFBUF__W_FLAGS;
	return 0;
}

/*
 * profbuf__commit_fast() - profbuf_commit() of a whole reservation that
 * owes no wakeup: the release store of the stamp.  Return 0, or 1 having
 * done nothing.
 */
static inline __attribute__((always_inline)) int
profbuf__commit_fast(struct profbuf_resv *rv, size_t nstk)
{
	if (__builtin_expect(nstk != rv->nstk || rv->profbuf__flags ||
				     !rv->profbuf__stamp,
			     0))
		return 1;
	PROFBUF__PERTURB();
	/*
	 * Release: pairs with the reader's acquire load of the stamp: the
	 * record and the tag are visible before the stamp.
	 */
	__atomic_store_n(rv->profbuf__stamp, PROFBUF__STAMP_COMMITTED,
			 __ATOMIC_RELEASE);
	rv->profbuf__stamp = (uint32_t *)0;
	return 0;
}

#endif /* __GNUC__ && !__cplusplus */

#ifdef PROFBUF__INLINE
/*
 * profbuf_write(), inline: a call written profbuf_write(...) runs this; the
 * function's address, or (profbuf_write)(...), is still the library's.
 */
static inline __attribute__((always_inline)) int
profbuf__write_inline(struct profbuf *b, const void *tag, int64_t now,
		      const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
		      size_t nstk)
{
	if (__builtin_expect(
		    !profbuf__write_fast(b, tag, now, hdr, nhdr, stk, nstk), 1))
		return 0;
	return (profbuf_write)(b, tag, now, hdr, nhdr, stk, nstk);
}
#define profbuf_write(...) profbuf__write_inline(__VA_ARGS__)

/* profbuf_reserve() and profbuf_commit(), inline, as profbuf_write(). */
static inline __attribute__((always_inline)) int
profbuf__reserve_inline(struct profbuf *b, const void *tag, int64_t now,
			const uint64_t *hdr, size_t nhdr, size_t nstk,
			struct profbuf_resv *rv)
{
	if (__builtin_expect(
		    !profbuf__reserve_fast(b, tag, now, hdr, nhdr, nstk, rv),
		    1))
		return 0;
	return (profbuf_reserve)(b, tag, now, hdr, nhdr, nstk, rv);
}
#define profbuf_reserve(...) profbuf__reserve_inline(__VA_ARGS__)

static inline __attribute__((always_inline)) int
profbuf__commit_inline(struct profbuf_resv *rv, size_t nstk)
{
	if (__builtin_expect(rv && !profbuf__commit_fast(rv, nstk), 1))
		return 0;
	return (profbuf_commit)(rv, nstk);
}
#define profbuf_commit(...) profbuf__commit_inline(__VA_ARGS__)
#endif /* PROFBUF__INLINE */

#endif /* PROFRING_PROFBUF_INLINE_H */
