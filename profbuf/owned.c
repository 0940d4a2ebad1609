// SPDX-License-Identifier: MIT
/*
 * owned.c - rings one thread owns, read with a group's other rings
 * (<profring/profbuf_group.h>, profbuf_group_new_owned()): the protocol,
 * and the write side (the owners and the reader are in owned_read.c).
 *
 * THE PROTOCOL
 *
 * Why.  A profbuf ring's write word is compare-and-swapped by every
 * writer and by its reader (SLEEPING, the EOF seal): the CAS must be
 * locked, and on one thread that lock is a quarter of what a write
 * costs (bench/RESULTS.md, issue 32).  An owned ring has one writer
 * thread, with its signal handlers nested in its writes, and a reader
 * that never writes the words the writer moves; so the writer needs
 * atomicity only against its own signal handlers, which one instruction
 * has without a lock prefix.  This is the Linux perf ring buffer's
 * scheme (kernel/events/ring_buffer.c: local_cmpxchg on head, the
 * outermost writer publishes), in user space, with the reader's
 * membarrier(2) in place of the kernel's barriers; where perf counts
 * nesting in a word of its own, a write here knows it is outermost when
 * head equals pub as it reserves, so one CAS is all a write stores
 * besides the record and pub.
 *
 * State (struct profbuf_owned, <profring/profbuf_owned_inline.h>).
 * Counts are packed: data words in bits 0-31 (wrapping at 2^32), records
 * in bits 34-63 (wrapping at 2^30).
 *   The owner's line, written only by the owner thread and its handlers
 *   (and by the reader once the owner is gone for good, at EOF):
 *   head   what writes reserved, with two flags: COUNTING (a loss is
 *          being counted) and PENDING (losses no overflow record counts
 *          yet);
 *   pub    what the reader may read, every record before it complete;
 *          a write is in progress on the thread while head's counts are
 *          ahead of pub, or COUNTING is set;
 *   lost, said, lost_time  writes refused for want of room, ever; how
 *          many of them overflow records count; the time of the first
 *          loss not yet counted.
 *   The reader's line: tail (what the reader gave back), sleeping, and
 *   closed (set once by close).
 * Every read-modify-write of head and said is profbuf__local_cas(), of
 * lost local_add(): atomic against a handler on the thread, which is all
 * that writes them.
 *
 * Write.
 *   1. Load tail (acquire, pairing with the reader's release store of
 *      it: the reader is done with the room it gave back), head and pub.
 *      The write is outermost if head's counts equal pub (nothing in
 *      progress), else nested in a write a handler interrupted.
 *   2. Reserve: the record (and, with PENDING, an overflow record before
 *      it), rewinding to offset 0 with a 0 marker word when it would
 *      cross the ring's end.  Move head there (PENDING cleared) by a
 *      local CAS from the value loaded: it fails only if a handler wrote
 *      since; start again.  (PENDING with lost = said, a handler's
 *      overflow record having counted what it flagged, is cleared with
 *      no record; losses a handler counted between our look and the CAS,
 *      restoring head's flags, we flag again after it.)
 *   3. Load closed (after the CAS: see Close).  Closed: undo (a local
 *      CAS of head back) and refuse (-ESHUTDOWN).
 *   4. Fill the marker, the records and the tags with plain stores: the
 *      space is ours (no one else reserves from this head, and the
 *      reader reads only up to pub).  An overflow record counts lost -
 *      said, read after the CAS, and moves said by a local CAS; if a
 *      handler interrupting us counted them first, the record is made
 *      void (PB_PAD_MARK | OWNED_VOID | its length): the reader steps
 *      over its words and its tag slot, and no overflow record counts
 *      0.
 *   5. Commit: a nested write does nothing more: the write it
 *      interrupted is still in progress, before it in the ring, and
 *      publishes both.  The outermost stores pub = the end of its
 *      reservation (release, pairing with the reader's acquire load of
 *      pub), then loads head: a handler that wrote after our reservation
 *      and before that store saw a write in progress and left its
 *      records (complete now) to us, so if head moved, move pub to head
 *      again, until they agree, by a local CAS of pub from the value
 *      loaded (a handler after the store of pub finds nothing in
 *      progress and publishes its own: the CAS then fails rather than
 *      take pub back).  So pub only grows,
 *      and a record is published by the time its outermost write
 *      returns.  Then load sleeping and, if set, wake the reader.
 *   No room: set COUNTING and PENDING in head by a local CAS, then as
 *   in step 3 load closed (closed: refuse, counting nothing), add 1 to
 *   lost (lost_time stored if it starts a run), then clear COUNTING if
 *   we set it (release, pairing with the reader's acquire load of head:
 *   lost is final when the reader sees it clear).  -ENOSPC.
 *   A shorter commit stores the record's new length, then gives the
 *   unused words back by a local CAS of head from just after the record
 *   to that less them (always, unless a handler reserved after it); else
 *   it stores a pad marker (PB_PAD_MARK | the unused words) after the
 *   record, which the reader steps over as over a rewind marker.
 *
 * Read.  The reader owns r_next.  A read first gives back what the last
 * read of the ring returned (tail = r_next, release), then loads pub
 * (acquire) and returns the records from r_next up to pub that are
 * contiguous in the data and the tag rings, stepping over rewind and pad
 * markers.  Order: reservation order, which on one thread is the order
 * written (a handler's record lands among its thread's in the order of
 * their reservations).
 *
 * Sleeping and waking.  The reader loads the group's futex word, stores
 * sleeping = 1 in each owned ring (release, pairing with the waker's
 * acquire exchange: the load of the futex word comes first), then runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), then loads each ring's
 * pub (and closed and head), and sleeps only if nothing moved.  A writer
 * stores pub, then (a compiler barrier between) loads sleeping.  The
 * membarrier makes every running thread of the process execute a full
 * barrier: a writer whose store of pub came before it has that store
 * seen by the reader's load after it; a writer whose load of sleeping
 * comes after it sees 1.  Either the reader sees the record, or the
 * writer sees the flag: no wakeup is lost (the asymmetric Dekker pairing
 * of liburcu's urcu-memb).  The writer that exchanges sleeping from 1 to
 * 0 bumps the futex word and wakes it.
 *
 * Close and EOF.  Close stores closed = 1 (release) in every ring and
 * wakes the reader.  The reader, the first time it finds closed, runs the
 * membarrier, which pairs with the writer's CAS of head (step 2, or
 * the loss's) and its later load of closed (step 3): a writer whose CAS
 * came before the barrier shows a write in progress to the reader's
 * later loads, and one whose load of closed comes after it sees 1.  The
 * reader declares the ring's EOF once no write is in progress (acquire
 * loads) and pub and r_next agree; nothing of the owner's changes after
 * that (every later write refuses, giving back what it reserved), so it
 * then reads lost and said, and returns a last overflow record for the
 * losses no record counted yet, before the EOF.  A write that sees
 * closed after its CAS undoes its reservation; if a handler's write lies
 * after it, the undo fails, and then the write is kept: that handler
 * loaded closed = 0, so before the barrier, so our CAS came before it
 * too and the reader waits for our write.  So a write racing close is
 * read, counted, or refused (-ESHUTDOWN).  An owner thread that exited
 * inside a write (pthread_exit() from a handler) leaves it in progress
 * for good: the reader, finding its thread gone (tgkill(2) ESRCH),
 * counts the records it reserved and did not publish as lost and ends
 * the ring.
 *
 * Without membarrier(2) (a kernel before 4.14, or refused by a seccomp
 * filter when the group was made), the writers of every owned ring made
 * then take a seq_cst fence where the reader's membarrier would have
 * ordered them (after the CAS of step 2, before loading sleeping), and
 * the reader a seq_cst fence: correct, at a locked instruction's cost.
 *
 * Owners.  A ring's owner word holds its owner's token (ring/grace.h:
 * its tid and a nonce, so that a thread that reuses a dead owner's tid
 * is not taken for it; 0: none).  A
 * thread claims a ring by a CAS from 0 (acquire, pairing with the
 * release store of profbuf_group_unclaim(): the owner's words are handed
 * over with the ring), or from the tid of a thread that has exited with
 * no write in progress (acquire loads, pairing with its last release
 * store of pub).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring/compiler.h"
#include "ring/futex.h"
#include "ring/grace.h"
#include "ring/perturb.h"
#include "profbuf/owned_impl.h"
#include "profbuf/profbuf_impl.h"

/* *@p += @v, atomic against a signal handler on this thread. */
static inline void local_add(uint64_t *p, uint64_t v)
{
#ifdef PROFBUF__OWNED_ASM
	__asm__ __volatile__("addq %1, %0" : "+m"(*p) : "er"(v) : "memory");
#else
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

/* ---- membarrier ------------------------------------------------------ */

/* Tests: pretend membarrier(2) is missing (profbuf/owned_test.c). */
bool profbuf_owned_test_no_membarrier;

/* Do owned rings made now need their writers to fence? */
bool pbo_writers_fence(void)
{
	/* The registration ring/grace.c makes for its grace periods. */
	return !ring_grace_membarrier() || profbuf_owned_test_no_membarrier;
}

/*
 * pbo_barrier() - order the reader's stores before it against the
 * owners' loads, and the owners' stores against the reader's loads after
 * it (see Sleeping and Close).  @fence: the rings' writers fence.
 * Return: false if it could not (membarrier(2) refused since).
 */
bool pbo_barrier(bool fence)
{
	int saved = errno;
	bool ok = true;

	if (fence) {
		atomic_thread_fence(memory_order_seq_cst);
		return true;
	}
	/*
	 * Registered at creation; refused now only by a filter installed
	 * since.  Then the owners do not fence: the caller must not rely on
	 * it (it polls; and at close waits 1 ms, which a write's few
	 * instructions between its CAS and its load of closed take only
	 * when preempted between them, and then the context switch is a
	 * barrier): see the header, Owned rings.
	 */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0)) {
		atomic_thread_fence(memory_order_seq_cst);
		ok = false;
	}
	errno = saved;
	return ok;
}

/* ---- the writer ------------------------------------------------------ */

/* Wake the reader if it sleeps (see Sleeping and waking). */
void pbo_wake(struct profbuf_owned *o)
{
	_Atomic uint32_t *word = (_Atomic uint32_t *)o->profbuf__wake;

	/*
	 * Acquire: pairs with the reader's release store of sleeping: its
	 * load of the futex word happened before our increment.
	 */
	if (!__atomic_exchange_n(&o->profbuf__sleeping, 0, __ATOMIC_ACQUIRE))
		return;
	/* Relaxed: the futex call orders; the value only has to move. */
	atomic_fetch_add_explicit(word, 1, memory_order_relaxed);
	ring_futex_wake(word, 1);
}

/* After a store the reader's membarrier orders (see the protocol). */
static inline void writer_barrier(struct profbuf_owned *o)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (o->profbuf__fence)
		atomic_thread_fence(memory_order_seq_cst);
}

/*
 * profbuf__owned_publish() - step 5 for an outermost write that found
 * head moved after its store of pub, or the reader asleep: move pub up
 * to head until they agree, then wake the reader if it sleeps.  pub is
 * moved by a local CAS from the value loaded: a handler that publishes
 * between our loads and our store makes it fail, so pub never goes back.
 */
RING_API void profbuf__owned_publish(struct profbuf_owned *o)
{
	int saved = errno;

	for (;;) {
		uint64_t p =
			__atomic_load_n(&o->profbuf__pub, __ATOMIC_RELAXED);
		uint64_t h =
			__atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED) &
			~OW_FLAGS;

		if (h == p)
			break;
		ring_perturb();
		/*
		 * Release (a store on x86-64, release elsewhere): pairs with
		 * the reader's acquire load of pub.
		 */
		profbuf__local_cas(&o->profbuf__pub, p, h);
	}
	writer_barrier(o);
	if (__atomic_load_n(&o->profbuf__sleeping, __ATOMIC_RELAXED))
		pbo_wake(o);
	errno = saved;
}

/* Step 5 for the outermost write, which reserved up to @end. */
static void commit_outer(struct profbuf_owned *o, uint64_t end)
{
	/* Release: pairs with the reader's acquire load of pub. */
	__atomic_store_n(&o->profbuf__pub, end, __ATOMIC_RELEASE);
	ring_perturb();
	writer_barrier(o);
	if (__atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED) != end ||
	    __atomic_load_n(&o->profbuf__sleeping, __ATOMIC_RELAXED))
		profbuf__owned_publish(o);
}

/*
 * profbuf__owned_closed() - step 3 found closed after the CAS from @h to
 * @nh: undo it, unless a handler reserved after it (head's counts moved;
 * a handler that refused gave its space back).  The flags are kept as
 * handlers left them, with PENDING back if our reservation took it.
 * Return: 1 undone (refuse), 0 a handler's write lies after ours (keep
 * ours; see Close).
 */
RING_API int profbuf__owned_closed(struct profbuf_owned *o, uint64_t h,
				   uint64_t nh)
{
	for (;;) {
		uint64_t cur =
			__atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED);

		if ((cur & ~OW_FLAGS) != (nh & ~OW_FLAGS))
			return 0;
		if (profbuf__local_cas(&o->profbuf__head, cur,
				       (h & ~OW_FLAGS) | (cur & OW_COUNTING) |
					       ((cur | h) & OW_PENDING)))
			return 1;
	}
}

/*
 * count_loss() - a write lost for want of room (see Write): set COUNTING
 * and PENDING, look at closed (closed: refuse, counting nothing), add 1
 * to lost, clear COUNTING if we set it.  Async-signal-safe.
 * Return: -ENOSPC, -ESHUTDOWN.
 */
static int count_loss(struct profbuf_owned *o, int64_t now)
{
	uint64_t h;
	bool mine;
	int rc = -ESHUTDOWN;

	do
		h = __atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED);
	while (!profbuf__local_cas(&o->profbuf__head, h, h | OW_COUNTING));
	/* A handler's loss nested in ours leaves COUNTING to us. */
	mine = !(h & OW_COUNTING);
	writer_barrier(o);
	if (!__atomic_load_n(&o->profbuf__closed, __ATOMIC_RELAXED)) {
		if (__atomic_load_n(&o->profbuf__lost, __ATOMIC_RELAXED) ==
		    __atomic_load_n(&o->profbuf__said, __ATOMIC_RELAXED))
			__atomic_store_n(&o->profbuf__lost_time, now,
					 __ATOMIC_RELAXED);
		local_add(&o->profbuf__lost, 1);
		rc = -ENOSPC;
	}
	/*
	 * PENDING if counted (set only now: a refusal leaves head as it
	 * was, so that the write it interrupted can still undo its
	 * reservation; a handler's overflow record may also have taken the
	 * flag before our add), and COUNTING cleared if ours.  Release:
	 * pairs with the reader's acquire load of head: lost is final when
	 * COUNTING is seen clear.
	 */
	for (;;) {
		uint64_t nh;

		h = __atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED);
		nh = (h | (rc == -ENOSPC ? OW_PENDING : 0)) &
		     ~(mine ? OW_COUNTING : 0);
		if (nh == h || profbuf__local_cas(&o->profbuf__head, h, nh))
			return rc;
	}
}

/* Are there losses no overflow record counts yet? */
static bool unsaid(struct profbuf_owned *o)
{
	return __atomic_load_n(&o->profbuf__lost, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&o->profbuf__said, __ATOMIC_RELAXED);
}

static void set_pending(struct profbuf_owned *o)
{
	uint64_t h;

	do
		h = __atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED);
	while (!(h & OW_PENDING) &&
	       !profbuf__local_cas(&o->profbuf__head, h, h | OW_PENDING));
}

static bool bad_args(struct profbuf_owned *o, const uint64_t *hdr, size_t nhdr,
		     size_t nstk)
{
	uint64_t any = 0;

	if (!o || !hdr || nhdr == 0 || nhdr > o->profbuf__hdrsize ||
	    nstk >= o->profbuf__data_len ||
	    2 + o->profbuf__hdrsize + nstk > o->profbuf__data_len)
		return true;
	for (size_t i = 0; i < nhdr; i++)
		any |= hdr[i];
	return !any;
}

/*
 * struct pbo_space - what one reservation took.
 * @h, @nh:  head before and after it
 * @at:      data offset of its first record
 * @outer:   no write was in progress: ours publishes
 * @ovf:     it starts with an overflow record
 * @mine:    it holds the caller's record too (not only an overflow record)
 */
struct pbo_space {
	uint64_t h, nh;
	uint32_t at;
	bool outer;
	bool ovf;
	bool mine;
};

/*
 * take_space() - steps 1 to 3 for a record of @len words.
 * Return: 0 with @sp filled in, -ENOSPC (counted), -ESHUTDOWN.
 */
static int take_space(struct profbuf_owned *o, uint32_t len, int64_t now,
		      struct pbo_space *sp)
{
	uint32_t size = o->profbuf__data_len, olen = 3 + o->profbuf__hdrsize;

	for (;;) {
		/* Acquire: pairs with the reader's release store of tail. */
		uint64_t t =
			__atomic_load_n(&o->profbuf__tail, __ATOMIC_ACQUIRE);
		uint64_t h =
			__atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED);
		uint64_t p =
			__atomic_load_n(&o->profbuf__pub, __ATOMIC_RELAXED);
		uint32_t d = o_data(h), pos = d & (size - 1), total = 0;
		uint32_t ntag = 0, skip;

		sp->h = h;
		/* Inside a loss being counted is outermost: no record. */
		sp->outer = (h & ~OW_FLAGS) == p;
		/*
		 * PENDING with nothing left to count (a handler's overflow
		 * record took it) is cleared without a record.
		 */
		sp->ovf = (h & OW_PENDING) && unsaid(o);
		/* A record that cannot follow its overflow record is lost. */
		sp->mine = !sp->ovf || olen + len <= size;
		if (sp->ovf) {
			total += olen;
			ntag++;
		}
		if (sp->mine) {
			total += len;
			ntag++;
		}
		skip = pos + total > size ? size - pos : 0;
		if ((uint32_t)(d + skip + total - o_data(t)) > size ||
		    ((o_tag(h) + ntag - o_tag(t)) & OWNED_TAG_MASK) >
			    o->profbuf__tag_len)
			return count_loss(o, now);
		/* PENDING goes with the overflow record; COUNTING stays. */
		sp->nh = o_make(d + skip + total, o_tag(h) + ntag) |
			 (h & OW_COUNTING);
		ring_perturb();
		if (!profbuf__local_cas(&o->profbuf__head, h, sp->nh))
			continue;
		writer_barrier(o);
		if (__atomic_load_n(&o->profbuf__closed, __ATOMIC_RELAXED) &&
		    profbuf__owned_closed(o, h, sp->nh))
			return -ESHUTDOWN;
		/*
		 * Losses a handler counted between our look and our CAS
		 * (its flags gone again by then): say them next time.
		 */
		if ((h & OW_PENDING) && !sp->ovf && unsaid(o))
			set_pending(o);
		if (skip)
			o->profbuf__data[pos] = 0; /* the rewind marker */
		sp->at = (pos + skip) & (size - 1);
		return 0;
	}
}

/* The overflow record at @d, with tag count @tag: step 4. */
static void fill_overflow(struct profbuf_owned *o, uint64_t *d, uint32_t tag)
{
	uint32_t hs = o->profbuf__hdrsize;
	uint64_t s = __atomic_load_n(&o->profbuf__said, __ATOMIC_RELAXED);
	uint64_t c = __atomic_load_n(&o->profbuf__lost, __ATOMIC_RELAXED);
	int64_t when =
		__atomic_load_n(&o->profbuf__lost_time, __ATOMIC_RELAXED);

	ring_perturb();
	o->profbuf__tags[tag & (o->profbuf__tag_len - 1)] = NULL;
	if (c == s || !profbuf__local_cas(&o->profbuf__said, s, c)) {
		/* A handler counted them first: a void record. */
		d[0] = PB_PAD_MARK | OWNED_VOID | (3 + hs);
		return;
	}
	d[0] = 3 + hs;
	d[1] = (uint64_t)when;
	memset(d + 2, 0, hs * sizeof(*d));
	d[2 + hs] = c - s;
}

static int reserve(struct profbuf_owned *o, const void *tag, int64_t now,
		   const uint64_t *hdr, size_t nhdr, size_t nstk,
		   struct profbuf_owned_resv *rv)
{
	uint32_t hs = o->profbuf__hdrsize, len = 2 + hs + (uint32_t)nstk;
	uint32_t slot;
	struct pbo_space sp = { 0 };
	uint64_t *d;
	int rc = take_space(o, len, now, &sp);

	if (rc)
		return rc;
	d = o->profbuf__data + sp.at;
	slot = o_tag(sp.h);
	if (sp.ovf) {
		fill_overflow(o, d, slot++);
		d += 3 + hs;
	}
	if (!sp.mine) {
		/* Only the overflow record fitted: publish it, lose ours. */
		if (sp.outer)
			commit_outer(o, sp.nh & ~OW_FLAGS);
		return count_loss(o, now);
	}
	o->profbuf__tags[slot & (o->profbuf__tag_len - 1)] = tag;
	d[0] = len;
	d[1] = (uint64_t)now;
	memcpy(d + 2, hdr, nhdr * sizeof(*d));
	memset(d + 2 + nhdr, 0, (hs - nhdr) * sizeof(*d));
	rv->stk = (uintptr_t *)(d + 2 + hs);
	rv->nstk = nstk;
	rv->profbuf__o = o;
	rv->profbuf__end =
		(sp.nh & ~OW_FLAGS) | (sp.outer ? PROFBUF__OWNED_OUTER : 0);
	return 0;
}

RING_API int(profbuf_owned_reserve)(struct profbuf_owned *o, const void *tag,
				    int64_t now, const uint64_t *hdr,
				    size_t nhdr, size_t nstk,
				    struct profbuf_owned_resv *rv)
{
	int saved = errno, rc;

	if (!rv || bad_args(o, hdr, nhdr, nstk))
		return -EINVAL;
	rc = reserve(o, tag, now, hdr, nhdr, nstk, rv);
	errno = saved;
	return rc;
}

/*
 * A shorter commit: the record's new length, the rest given back.
 * Return: head just after the record as it now ends.
 */
static uint64_t give_back(struct profbuf_owned_resv *rv, size_t nstk)
{
	struct profbuf_owned *o = rv->profbuf__o;
	uint32_t hs = o->profbuf__hdrsize;
	uint64_t *rec = (uint64_t *)rv->stk - 2 - hs;
	uint32_t len = 2 + hs + (uint32_t)nstk;
	uint32_t unused = (uint32_t)(rv->nstk - nstk);
	uint64_t end = rv->profbuf__end & ~PROFBUF__OWNED_OUTER;
	uint64_t back = o_make(o_data(end) - unused, o_tag(end));

	rec[0] = len;
	ring_perturb();
	if (profbuf__local_cas(&o->profbuf__head, end, back))
		return back;
	rec[len] = PB_PAD_MARK | unused;
	return end;
}

RING_API int(profbuf_owned_commit)(struct profbuf_owned_resv *rv, size_t nstk)
{
	struct profbuf_owned *o;
	uint64_t end;
	int saved = errno, rc = 0;

	if (!rv || !rv->profbuf__o)
		return -EINVAL;
	o = rv->profbuf__o;
	end = rv->profbuf__end & ~PROFBUF__OWNED_OUTER;
	if (nstk > rv->nstk) {
		nstk = rv->nstk;
		rc = -EINVAL;
	}
	if (nstk < rv->nstk)
		end = give_back(rv, nstk);
	rv->profbuf__o = NULL;
	if (rv->profbuf__end & PROFBUF__OWNED_OUTER)
		commit_outer(o, end);
	errno = saved;
	return rc;
}

RING_API int(profbuf_owned_write)(struct profbuf_owned *o, const void *tag,
				  int64_t now, const uint64_t *hdr, size_t nhdr,
				  const uintptr_t *stk, size_t nstk)
{
	struct profbuf_owned_resv rv;
	int saved = errno, rc;

	if ((!stk && nstk) || bad_args(o, hdr, nhdr, nstk))
		return -EINVAL;
	rc = reserve(o, tag, now, hdr, nhdr, nstk, &rv);
	if (!rc) {
		if (nstk)
			memcpy(rv.stk, stk, nstk * sizeof(*stk));
		rc = (profbuf_owned_commit)(&rv, nstk);
	}
	errno = saved;
	return rc;
}
