/* SPDX-License-Identifier: MIT */
/*
 * <profring/profbuf_owned_inline.h> - a ring one thread owns, and its
 * write fast path, inline at the call site.  Included by
 * <profring/profbuf_group.h>; not included on its own.
 *
 * THE PROTOCOL is profbuf/owned.c's (read it there).  In short: only the
 * owner thread and its signal handlers write the owner's words, so a
 * reservation moves head with a compare-exchange that need not be locked
 * (one instruction is atomic against a signal handler on the same
 * thread); a write that finds head equal to pub is outermost (no write
 * in progress on the thread), and its commit publishes head as pub
 * (release) and looks at the reader's sleeping flag; a nested one
 * leaves that to the write it interrupted.  The reader never writes the
 * owner's words: it gives room back in tail, and says it sleeps in
 * sleeping; the loads that must not pass the owner's stores are ordered
 * by the reader's membarrier(2), or, where the kernel has none, by a
 * fence the writer then takes (@fence).
 *
 * The struct is laid out here because the fast path reads it; its fields
 * are private (profbuf__ names are not API), and only the library
 * creates one (profbuf_group_new_owned()).
 */
#ifndef PROFRING_PROFBUF_OWNED_INLINE_H
#define PROFRING_PROFBUF_OWNED_INLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * struct profbuf_owned - one owned ring.  Three cache lines: the owner's
 * (written by the owner thread and its handlers alone), the reader's
 * (written by the reader and by close), and the ring's constants.
 * head, pub and tail are packed counts: bits 0-31 data words, bits
 * 34-63 records; head also has two flags: COUNTING (bit 32: a loss is
 * being counted) and PENDING (bit 33: losses no overflow record counts
 * yet).  A write is in progress on the owner thread while head is
 * ahead of pub or COUNTING is set.
 */
struct profbuf_owned {
	/* The owner's. */
	uint64_t profbuf__head; /* reserved, and the flags */
	uint64_t profbuf__pub; /* published: all of it committed */
	uint64_t profbuf__lost; /* writes lost for want of room, ever */
	uint64_t profbuf__said; /* of those, counted in overflow records */
	int64_t profbuf__lost_time; /* time of the first loss not yet said */
	uint64_t profbuf__pad1[3];
	/* The reader's. */
	uint64_t profbuf__tail; /* given back by the reader */
	uint32_t profbuf__sleeping; /* the reader sleeps, or is about to */
	uint32_t profbuf__closed;
	uint64_t profbuf__pad2[6];
	/* Constants, and the owner word (written at claim and unclaim). */
	uint64_t *profbuf__data;
	const void **profbuf__tags;
	uint32_t profbuf__hdrsize;
	uint32_t profbuf__data_len; /* power of two */
	uint32_t profbuf__tag_len; /* power of two */
	uint32_t profbuf__fence; /* no membarrier(2): the writer fences */
	uint32_t profbuf__inline_hdrsize; /* 0 with @fence: no fast path */
	uint32_t profbuf__index; /* in its group */
	uint64_t profbuf__owner; /* the owner's token (tid, nonce), 0: none */
	uint32_t *profbuf__wake; /* the group's futex word */
	uint64_t profbuf__pad3[2];
} __attribute__((aligned(64)));

#define PROFBUF__OWNED_COUNTING ((uint64_t)1 << 32)
#define PROFBUF__OWNED_PENDING ((uint64_t)1 << 33)
#define PROFBUF__OWNED_FLAGS ((uint64_t)3 << 32)

/*
 * struct profbuf_owned_resv - a record reserved in an owned ring, from
 * profbuf_owned_reserve(): the caller stores up to @nstk words at @stk,
 * then profbuf_owned_commit().  The other fields are private.
 */
struct profbuf_owned_resv {
	uintptr_t *stk;
	size_t nstk;
	struct profbuf_owned *profbuf__o;
	/*
	 * head just after the reservation, and PROFBUF__OWNED_OUTER if no
	 * write was in progress (its commit publishes)
	 */
	uint64_t profbuf__end;
};

#define PROFBUF__OWNED_OUTER ((uint64_t)1 << 32)

/* Out of line (the library). */
int profbuf__owned_closed(struct profbuf_owned *o, uint64_t h, uint64_t nh);
void profbuf__owned_publish(struct profbuf_owned *o);

#if defined(__GNUC__) && !defined(__cplusplus) && \
	(defined(__x86_64__) || defined(__aarch64__))
#define PROFBUF__OWNED_FAST 1

#if defined(__SANITIZE_THREAD__)
#define PROFBUF__OWNED_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROFBUF__OWNED_TSAN 1
#endif
#endif
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(PROFBUF__OWNED_TSAN)
#define PROFBUF__OWNED_ASM 1
#endif

/*
 * profbuf__local_cas() - compare-exchange *@p from @old to @nw, atomic
 * against a signal handler on this thread, not against other CPUs: on
 * x86-64 a cmpxchg without the lock prefix (one instruction: a signal is
 * taken before or after it; a store, so release under x86's ordering),
 * elsewhere (and under TSan, which cannot see into asm) an atomic one,
 * release on success.
 */
static inline __attribute__((always_inline)) int
profbuf__local_cas(uint64_t *p, uint64_t old, uint64_t nw)
{
#ifdef PROFBUF__OWNED_ASM
	int ok;

	__asm__ __volatile__("cmpxchgq %3, %1"
			     : "=@ccz"(ok), "+m"(*p), "+a"(old)
			     : "r"(nw)
			     : "memory");
	return ok;
#else
	return __atomic_compare_exchange_n(p, &old, nw, 0, __ATOMIC_RELEASE,
					   __ATOMIC_RELAXED);
#endif
}

#ifdef PROFBUF__OWNED_FAST
/*
 * profbuf__owned_claim_fast() - reserve a record of @nstk stack words at
 * the owner's head and store its length, time, header and tag: return 0
 * with @rv filled in; or return 1 having changed nothing (the library
 * then does everything).  Async-signal-safe; wait-free; no locked
 * instruction.  The steps are owned.c's Write.
 */
static inline __attribute__((always_inline)) int
profbuf__owned_claim_fast(struct profbuf_owned *o, const void *tag, int64_t now,
			  const uint64_t *hdr, size_t nhdr, size_t nstk,
			  int bad, struct profbuf_owned_resv *rv)
{
	uint32_t hs, size, len, pos;
	uint64_t h, t, p, nh, any, *d;

	if (__builtin_expect(!o || !hdr || bad, 0))
		return 1;
	/* 0 where the writers must fence: the library does it all. */
	hs = o->profbuf__inline_hdrsize;
	size = o->profbuf__data_len;
	/* nhdr 0 or above hdrsize, a stack longer than any ring. */
	if (__builtin_expect(nhdr - 1 >= hs || nstk >= size, 0))
		return 1;
	any = hdr[0] | hdr[nhdr - 1];
	for (size_t i = 1; i + 1 < nhdr; i++)
		any |= hdr[i];
	len = 2 + hs + (uint32_t)nstk;
	/*
	 * Acquire: pairs with the reader's release store of tail, once it
	 * is done reading the room it gives back.  head and pub: the
	 * thread's own.
	 */
	t = __atomic_load_n(&o->profbuf__tail, __ATOMIC_ACQUIRE);
	h = __atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED);
	p = __atomic_load_n(&o->profbuf__pub, __ATOMIC_RELAXED);
	pos = (uint32_t)h & (size - 1);
	/* One more record; the data count wraps by itself. */
	nh = ((h & ~(uint64_t)UINT32_MAX) + ((uint64_t)1 << 34)) |
	     (uint32_t)((uint32_t)h + len);
	/*
	 * Declined: an all-zero header, a flag (losses to count first, or
	 * a loss being counted), the ring's end (a rewind), no room for the
	 * words or the tag.  Counts compared are less than 2^29 apart.
	 */
	if (__builtin_expect(
		    (int)!any | (int)!!(h & PROFBUF__OWNED_FLAGS) |
			    (int)(pos + len > size) |
			    (int)((uint32_t)nh - (uint32_t)t > size) |
			    (int)(((uint32_t)((nh >> 34) - (t >> 34)) &
				   ((1u << 30) - 1)) > o->profbuf__tag_len),
		    0))
		return 1;
	d = o->profbuf__data + pos;
	/* A handler that wrote since our load makes this fail. */
	if (__builtin_expect(!profbuf__local_cas(&o->profbuf__head, h, nh), 0))
		return 1;
	/*
	 * Closed?  After our store of head (the reader's membarrier orders
	 * the two: owned.c, Close).
	 */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(
		    __atomic_load_n(&o->profbuf__closed, __ATOMIC_RELAXED) &&
			    profbuf__owned_closed(o, h, nh),
		    0))
		return 1;
	o->profbuf__tags[(uint32_t)(h >> 34) & (o->profbuf__tag_len - 1)] = tag;
	d[0] = len;
	d[1] = (uint64_t)now;
	for (size_t i = 0; i < nhdr; i++)
		d[2 + i] = hdr[i];
	for (size_t i = nhdr; i < hs; i++)
		d[2 + i] = 0;
	rv->stk = (uintptr_t *)(d + 2 + hs);
	rv->nstk = nstk;
	rv->profbuf__o = o;
	rv->profbuf__end = nh | (h == p ? PROFBUF__OWNED_OUTER : 0);
	return 0;
}

/*
 * profbuf__owned_commit_fast() - commit a whole reservation: a nested
 * one leaves publishing to the write it interrupted; the outermost
 * publishes.  Return 0, or 1 having done nothing (the library then
 * commits).
 */
static inline __attribute__((always_inline)) int
profbuf__owned_commit_fast(struct profbuf_owned_resv *rv, size_t nstk)
{
	struct profbuf_owned *o = rv->profbuf__o;
	uint64_t end = rv->profbuf__end & ~PROFBUF__OWNED_OUTER;

	/* inline_hdrsize 0: the writers fence: the library commits. */
	if (__builtin_expect(
		    !o || nstk != rv->nstk || !o->profbuf__inline_hdrsize, 0))
		return 1;
	rv->profbuf__o = (struct profbuf_owned *)0;
	if (!(rv->profbuf__end & PROFBUF__OWNED_OUTER))
		return 0;
	/*
	 * Release: pairs with the reader's acquire load of pub: every
	 * record up to it is complete (nested writes end first).
	 */
	__atomic_store_n(&o->profbuf__pub, end, __ATOMIC_RELEASE);
	/*
	 * head moved: a handler wrote after our reservation, before our
	 * store, saw a write in progress, and left its records to us.
	 * Then look at the reader, after the store of pub (the reader's
	 * membarrier orders the two).
	 */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(
		    (int)(__atomic_load_n(&o->profbuf__head,
					  __ATOMIC_RELAXED) != end) |
			    (int)!!__atomic_load_n(&o->profbuf__sleeping,
						   __ATOMIC_RELAXED),
		    0))
		profbuf__owned_publish(o);
	return 0;
}
#endif /* PROFBUF__OWNED_FAST */

#endif /* PROFRING_PROFBUF_OWNED_INLINE_H */
