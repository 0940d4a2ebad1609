// SPDX-License-Identifier: MIT
/*
 * profbuf.c - the signal-safe profiling ring: the protocol, and the write
 * side (the reader is in read.c, the layout and life cycle in layout.c).
 *
 * THE PROTOCOL
 *
 * The record layout and the overflow rules are Go's (runtime/profbuf.go);
 * the way writers reserve and commit is ours, so that any number of writers,
 * including a signal handler interrupting a write on its own thread, can
 * write at once and none ever waits for another.
 *
 * State.
 *   w    packed index (ring/pindex.h): counts of data words and records
 *        *reserved* by writers, plus two flags: SLEEPING (the reader is, or
 *        is about to be, asleep on the futex word wake_seq) and EXTRA
 *        (overflow or close happened since the reader last looked).
 *   r    packed index of what the reader has given back to the writers.
 *   limit  r with its counts moved on by the ring's sizes: the end of the
 *        room the writers have, stored by the reader after r (read only
 *        by the fast path).
 *   committed[]  one stamp per tag slot: 1 once the record reserved in
 *        that slot is completely written, 0 again once the reader has
 *        given it back.
 *   ovf, ovf_time   the pending overflow record: ovf holds the count of
 *        discarded writes (bits 0-31), BUSY (bit 32), SEALED (bit 33),
 *        CLOSED (bit 34, set once by profbuf_close(): a writer checks
 *        "closed or overflow pending" with one load) and a generation
 *        (bits 35-63) that changes whenever the count goes from 0 to
 *        nonzero or back, against ABA; ovf_time is the time of the first
 *        discarded write of the pending run.
 * The reader alone owns r_next (what its last read returned), and
 * eof_returned.
 *
 * Write.
 *   1. Reserve: load w, then r (acquire, pairing with the reader's release
 *      of r: the slots it gave back are really free).  If the record fits
 *      (rewinding to offset 0 when it would cross the end of the ring, the
 *      skipped tail counting as used), CAS w forward by the words and one
 *      tag (acquire: a shorter commit may have given these words back;
 *      see Shorter commits).  The CAS fails only if another writer
 *      reserved or the reader changed a flag meanwhile; then retry.  Reserved space belongs to
 *      this writer alone: the reader does not look at it before the stamp,
 *      and no other writer can reserve it until the reader gives it back.
 *      The fast path (profbuf__write_fast(), <profring/profbuf_inline.h>)
 *      loads limit instead of r: r moved on by the ring's sizes, which the
 *      reader stores with release after r.  An older limit only shows
 *      less room than there is; the slow path then reads r.
 *   2. Fill: the rewind marker (a 0 word) if any, then the record and the
 *      tag, with plain stores.
 *   3. Commit: store committed[slot] = 1 with release.  That is all; there
 *      is no ordering among commits, a later reservation may commit first.
 *   If the reservation finds no room the write is discarded and counted in
 *   ovf; see Overflow.
 *
 * Records written in place.  profbuf_reserve() is steps 1 and 2 up to the
 * stack (the same fast path and slow path, overflow emission and owner
 * stamp included; a reservation with no room is counted lost like a
 * write), and hands the stack slots to the caller; profbuf_commit() is
 * step 3.  Nothing else changes: between the two the record is reserved
 * and uncommitted, as a write in progress is, so nesting (a handler's
 * write or reservation between them) works as it does for writes, and a
 * dead owner's reservation is stepped over by its owner stamp.
 *
 * Shorter commits.  A commit of n < reserved stack words keeps the record
 * exact: it stores a pad marker (PB_PAD_MARK | the unused words) in the
 * first unused word, then the record's length for n words, then tries
 * to give the unused words back: a CAS of w from just after this
 * reservation (flags aside) to that less the unused words.  It succeeds
 * when nobody reserved since (always with one writer); the next
 * reservation then starts where the record now ends and overwrites the
 * marker (its CAS acquires, pairing with the give-back's release, so
 * that its stores follow ours).  Otherwise the words stay reserved, and
 * the reader, finding the marker where the next record should start,
 * steps over it as over a rewind marker: it ends its run there and the
 * next read starts past it.  Every state is consistent for a reader
 * stepping over a dead writer: length R (whole reservation, marker
 * inside it), length n then the marker (stepped over), or given back
 * (the next record starts at the marker's word).
 *
 * Read.  The reader scans forward from r_next while the stamps are 1
 * (acquire, pairing with the commit) and returns the longest such run that
 * is contiguous in both rings: the committed prefix.  It stops at the first
 * reserved-but-uncommitted record: records are returned in reservation
 * order.  The next read gives the run back: it clears the tag slots and the
 * stamps, then stores r = r_next with release, and then limit.
 *
 * Sleeping and waking: exactly one wakeup per sleep.  The reader may set
 * SLEEPING only by a CAS on w from a value that shows nothing reserved
 * beyond r_next and EXTRA clear.  From then on:
 *   - a writer whose reservation CAS sees SLEEPING (and, with a watermark,
 *     enough pending words) clears it in that same CAS and so becomes the
 *     one waker: after committing it bumps wake_seq and futex-wakes it;
 *   - overflow, close, and the end of a BUSY period set EXTRA with a CAS
 *     (wakeup_extra()) and, if SLEEPING was set, clear it and wake.
 * Because every event the reader waits for is either a CAS on w or is
 * followed by one, and the reader's CAS fails if w moved since it looked,
 * no wakeup is lost.  The reader loads wake_seq before its CAS and sleeps
 * with FUTEX_WAIT(wake_seq, that value), so a wake between its CAS and the
 * futex call is not lost either.  Whoever wakes clears SLEEPING, so two
 * wakers never race for one sleep.
 *   When the reader finds a reservation not yet committed, it cannot sleep
 *   (that writer has passed its CAS and will not look at SLEEPING): it polls
 *   the stamp with back-off - spin, yield, then sleeps up to 1 ms - as
 *   liburcu's wfcqueue waits for an enqueuer.  Writers finish a record in
 *   nanoseconds unless preempted; one that never finishes stalls the reader
 *   (a documented contract).
 *
 * Overflow.  Go's rules, made safe for many writers:
 *   - A write that finds no room counts itself in ovf (pb_count_loss()).  The
 *     writer that moves the count from 0 to 1 does it by a CAS that also
 *     sets BUSY and bumps the generation; it then stores ovf_time and
 *     clears BUSY with release.  So the time is that of the first loss,
 *     and nobody reads it while it is being written.  Other losses just
 *     CAS the count up, BUSY or not.
 *   - A writer that finds a pending overflow (count > 0) tries to emit it:
 *     it claims ovf by setting BUSY with a CAS, reserves room for the
 *     overflow record and its own record in one reservation, then takes
 *     the count (which may have grown meanwhile: losses counted while it
 *     held BUSY are in it) and clears BUSY in one CAS, and writes both
 *     records.  With no room, it clears BUSY, adding its own loss in the
 *     same CAS.  A writer that finds BUSY already set counts itself lost,
 *     as Go's writer does whenever it cannot write the overflow record
 *     first: records never overtake an overflow record they follow.
 *   - The reader takes the count (CAS to 0, new generation) and
 *     synthesizes the overflow record when it has nothing committed to
 *     return.  It never takes it while BUSY: it waits (sleeps; the end of
 *     the BUSY period calls wakeup_extra()).
 *   While BUSY is held the count can only grow, so nothing is lost between
 *   a claim and a reservation, and no writer ever waits on BUSY.
 *
 * Shared buffers (profbuf_shared_init()).  The same block serves every
 * process that maps it; the futex word is process-shared.  A writer
 * process can die mid-write, so a writer names itself: right after its
 * reservation it stores the record's length (and rewind marker) and then
 * an owner stamp, PB_STAMP_OWNER | its tid, in the record's commit stamp
 * (claim_record(); write_with_overflow() claims both of its records at
 * once); and it names itself in busy_owner while it holds BUSY.  The
 * reader steps over a record whose owner is gone, counting it as a loss
 * (skip_dead_writer()), and clears a dead holder's BUSY
 * (recover_dead_busy()).  See "Dead writers" below for what stays bounded
 * only by the reader's timeout.
 *
 * Close and EOF.  close sets CLOSED, then wakeup_extra().  Writers refuse
 * to start once they see CLOSED.  The reader decides EOF only when CLOSED
 * is set, nothing committed or reserved is left, and no overflow is
 * pending; it then seals both words: ovf gets SEALED by a CAS from count 0,
 * not BUSY (a writer that counts a loss after that gets -ESHUTDOWN: refused,
 * not lost), then w's tag count is pushed 2^29 ahead of r by a CAS from the
 * value it checked (no live ring is that far ahead: every later
 * reservation finds no room and ends in pb_count_loss(), refused).  If either
 * CAS fails, someone wrote or lost something meanwhile: read it first.
 * So a write racing close is read, counted in an overflow record read
 * before EOF, or refused.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * This file defines the real profbuf_write(), so not the header's inline
 * one (PROFRING_NO_INLINE); it calls the header's fast path,
 * profbuf__write_fast(), by that name.  The stress build puts
 * ring_perturb() at the fast path's steps.
 */
#define PROFRING_NO_INLINE
#define PROFBUF__PERTURB() ring_perturb()
#include "ring/perturb.h"

#include <profring/profbuf.h>

#include "ring/compiler.h"
#include "ring/futex.h"
#include "ring/pindex.h"
#include "profbuf/profbuf_impl.h"
#include "profbuf/profbuf_testing.h"

/* What one reservation got: up to two records (overflow + own). */
struct pb_reservation {
	uint64_t end; /* w's counts just after the reservation */
	uint32_t tag; /* tag count of the first record */
	uint32_t pos[2]; /* data offset of each record */
	int32_t marker[2]; /* offset of the rewind marker before it, or -1 */
	bool wake; /* this writer cleared SLEEPING: it must wake */
};

/* ---- waking the reader --------------------------------------------- */

/*
 * wake_reader() - the caller cleared SLEEPING in a CAS on w: wake the
 * reader, once.
 */
static void wake_reader(struct profbuf *b)
{
	/*
	 * Acquire fence: pairs with the reader's release CAS that set
	 * SLEEPING, which our CAS read.  The reader's load of wake_seq before
	 * that CAS therefore happens before our increment, and its
	 * FUTEX_WAIT(wake_seq, old value) cannot sleep through it.
	 */
	atomic_thread_fence(memory_order_acquire);
	/* Relaxed: the futex word carries no data; the stamps do. */
	atomic_fetch_add_explicit(&b->wake_seq, 1, memory_order_relaxed);
	ring_futex_wake_op(&b->wake_seq, 1, b->shared);
}

/*
 * wakeup_extra() - after changing ovf (end of a BUSY period, CLOSED):
 * set EXTRA so that a reader about to sleep sees w move, and wake a
 * sleeping one.
 */
static void wakeup_extra(struct profbuf *b)
{
	uint64_t old = atomic_load_explicit(&b->w, memory_order_relaxed);
	uint64_t new;

	do {
		new = (old | PB_EXTRA) & ~PB_SLEEPING;
		/*
		 * Release: pairs with the reader's acquire CAS that clears
		 * EXTRA: the ovf change (count, BUSY, CLOSED) made before
		 * this CAS is visible when it looks again.
		 */
	} while (!atomic_compare_exchange_weak_explicit(
		&b->w, &old, new, memory_order_release, memory_order_relaxed));
	if (old & PB_SLEEPING)
		wake_reader(b);
}

/* ---- counting losses ----------------------------------------------- */

/*
 * In a shared buffer, the writer's thread id, cached: the owner stamp
 * names it.  Reset in a fork child (profbuf_shared_fork_child(), set up
 * by profbuf_shared_init/attach).
 */
static _Thread_local uint32_t self_tid
	__attribute__((tls_model("initial-exec")));

void profbuf_shared_fork_child(void)
{
	self_tid = 0;
}

static __attribute__((noinline)) uint32_t owner_token(void)
{
	if (!self_tid)
		self_tid = (uint32_t)syscall(SYS_gettid); /* keeps no errno */
	return PB_STAMP_OWNER | self_tid;
}

/*
 * Shared buffers: name the holder of BUSY right after claiming it, and
 * forget it just before letting go, so that a reader can tell a holder
 * that died (recover_dead_busy()).  Relaxed: ordered by the BUSY CASes
 * around them (see there).
 */
static inline void busy_claimed(struct profbuf *b)
{
	if (ring_unlikely(b->shared))
		atomic_store_explicit(&b->busy_owner, owner_token(),
				      memory_order_relaxed);
}

static inline void busy_leaving(struct profbuf *b)
{
	if (ring_unlikely(b->shared))
		atomic_store_explicit(&b->busy_owner, 0, memory_order_relaxed);
}

/* Clear BUSY, adding @n losses in the same CAS, and tell the reader. */
static void ovf_release_busy(struct profbuf *b, uint32_t n)
{
	uint64_t o = atomic_load_explicit(&b->ovf, memory_order_relaxed);

	busy_leaving(b);
	/*
	 * Release: pairs with the acquire loads of ovf in
	 * write_with_overflow() and take_overflow(): ovf_time, stored while
	 * BUSY was held, is visible to whoever sees BUSY clear.
	 */
	while (!atomic_compare_exchange_weak_explicit(
		&b->ovf, &o, ovf_add(o, n) & ~OVF_BUSY, memory_order_release,
		memory_order_relaxed))
		;
	wakeup_extra(b);
}

/*
 * pb_count_loss() - a write at time @now was discarded: count it.
 *
 * Return: -ENOSPC, or -ESHUTDOWN if the reader has sealed the buffer
 * (closed and drained): the write is then refused rather than counted.
 */
__attribute__((noinline, cold)) int pb_count_loss(struct profbuf *b,
						  int64_t now)
{
	uint64_t o = atomic_load_explicit(&b->ovf, memory_order_relaxed);

	for (;;) {
		if (o & OVF_SEALED)
			return -ESHUTDOWN;
		if (ovf_count(o) == 0) {
			/* First loss: claim the time slot with BUSY. */
			uint64_t claim = ovf_next_gen(o) | OVF_BUSY | 1;

			/*
			 * Acquire: pairs with the release of the CAS that
			 * took the previous run's count (take_overflow(),
			 * write_with_overflow()): the taker's load of the
			 * old ovf_time happens before our store of the new
			 * one, so it cannot read ours (load buffering).
			 * BUSY keeps readers of ovf_time away meanwhile.
			 */
			if (!atomic_compare_exchange_weak_explicit(
				    &b->ovf, &o, claim, memory_order_acquire,
				    memory_order_relaxed))
				continue;
			busy_claimed(b);
			ring_perturb();
			atomic_store_explicit(&b->ovf_time, (uint64_t)now,
					      memory_order_relaxed);
			ovf_release_busy(b, 0);
			return -ENOSPC;
		}
		/* Relaxed: only the count changes; no data rides on it. */
		if (atomic_compare_exchange_weak_explicit(
			    &b->ovf, &o, ovf_add(o, 1), memory_order_relaxed,
			    memory_order_relaxed))
			return -ENOSPC;
	}
}

/* ---- reserving ----------------------------------------------------- */

/*
 * reserve() - reserve @n (1 or 2) consecutive records of @want[i] words
 * and one tag each.
 *
 * Return: true with @rv filled in, false if there is no room.
 */
static inline __attribute__((always_inline)) bool
reserve(struct profbuf *b, const uint32_t *want, int n,
	struct pb_reservation *rv)
{
	uint64_t old = atomic_load_explicit(&b->w, memory_order_relaxed);
	uint64_t new;

	for (;;) {
		/*
		 * Acquire: pairs with the release store of r in
		 * give_back_run(): the reader is done with the data and tag
		 * slots up to r, and has cleared their stamps, before we
		 * write them.
		 */
		uint64_t r = atomic_load_explicit(&b->r, memory_order_acquire);
		int32_t room = ring_count_sub(ring_pindex_data(r),
					      ring_pindex_data(old)) +
			       (int32_t)b->data_len;
		uint32_t pos = ring_pindex_data(old) & (b->data_len - 1);
		uint32_t used = 0;

		if (ring_count_sub(ring_pindex_tag(r), ring_pindex_tag(old)) +
			    (int32_t)b->tag_len <
		    n)
			return false;
		for (int i = 0; i < n; i++) {
			rv->marker[i] = -1;
			if (pos + want[i] > b->data_len) {
				rv->marker[i] = (int32_t)pos;
				used += b->data_len - pos;
				pos = 0;
			}
			rv->pos[i] = pos;
			used += want[i];
			pos = (pos + want[i]) & (b->data_len - 1);
		}
		if (room < (int32_t)used)
			return false;

		new = ring_pindex_add(old, used, (uint32_t)n);
		rv->wake = false;
		/*
		 * Wake at the watermark, and always for an overflow record
		 * (n == 2): the reader may be asleep waiting for the end of
		 * our BUSY period, which this reservation ends silently.
		 */
		if ((old & PB_SLEEPING) &&
		    (n == 2 ||
		     (uint32_t)ring_count_sub(ring_pindex_data(new),
					      ring_pindex_data(r)) >=
			     atomic_load_explicit(&b->wake_watermark,
						  memory_order_relaxed))) {
			new &= ~PB_SLEEPING;
			rv->wake = true;
		}
		/*
		 * Acquire on success: pairs with the release CAS of a shorter
		 * commit that gave its tail back (give_back_tail()): that
		 * writer's stores into the tail happen before ours.  The
		 * reservation publishes nothing (the stamp does), and the
		 * space was proven free by the acquire of r.  Atomicity
		 * orders us against other writers and against the reader's
		 * SLEEPING and seal CASes; when we take over a SLEEPING flag,
		 * wake_reader() supplies the ordering.
		 */
		if (atomic_compare_exchange_weak_explicit(&b->w, &old, new,
							  memory_order_acquire,
							  memory_order_relaxed))
			break;
	}
	rv->end = new & ~RING_PINDEX_FLAGS;
	rv->tag = ring_pindex_tag(old);
	return true;
}

/* ---- filling and committing ---------------------------------------- */

/*
 * claim_record() - shared buffers: say who writes the record reserved at
 * @tag_count (its length known), so that a reader can skip it if that
 * thread dies before committing (see "Dead writers").
 */
void (*profbuf_test_claim_hook)(void);

static void claim_record(struct profbuf *b, uint32_t tag_count, uint32_t pos,
			 int32_t marker, uint64_t len)
{
	int saved = errno;

	if (marker >= 0)
		pb_data(b)[marker] = 0;
	pb_data(b)[pos] = len;
	/*
	 * Release: pairs with the acquire load of the stamp in
	 * skip_dead_writer(): the marker and length are visible first.
	 */
	atomic_store_explicit(&pb_stamps(b)[tag_count & (b->tag_len - 1)],
			      owner_token(), memory_order_release);
	errno = saved;
	if (profbuf_test_claim_hook)
		profbuf_test_claim_hook();
}

/*
 * begin_record() - fill everything of a reserved record but its stack:
 * the owner stamp (shared), the rewind marker, length, time, header and
 * tag.  Return: where its stack goes.
 */
static inline uint64_t *begin_record(struct profbuf *b, uint32_t tag_count,
				     uint32_t pos, int32_t marker,
				     const void *tag, int64_t now,
				     const uint64_t *restrict hdr, size_t nhdr,
				     size_t nstk)
{
	uint64_t *restrict d = pb_data(b) + pos;

	if (ring_unlikely(b->shared))
		claim_record(b, tag_count, pos, marker, 2 + b->hdrsize + nstk);
	if (marker >= 0)
		pb_data(b)[marker] = 0;
	d[0] = 2 + b->hdrsize + nstk;
	d[1] = (uint64_t)now;
	for (size_t i = 0; i < nhdr; i++)
		d[2 + i] = hdr[i];
	for (size_t i = nhdr; i < b->hdrsize; i++)
		d[2 + i] = 0;
	pb_tags(b)[tag_count & (b->tag_len - 1)] = tag;
	return d + 2 + b->hdrsize;
}

static inline void commit_record(struct profbuf *b, uint32_t tag_count)
{
	ring_perturb();
	/*
	 * Release: pairs with the acquire load of the stamp in scan_run():
	 * the marker, the record and the tag are visible before the stamp.
	 */
	atomic_store_explicit(&pb_stamps(b)[tag_count & (b->tag_len - 1)],
			      PB_STAMP_COMMITTED, memory_order_release);
}

static inline void put_record(struct profbuf *b, uint32_t tag_count,
			      uint32_t pos, int32_t marker, const void *tag,
			      int64_t now, const uint64_t *restrict hdr,
			      size_t nhdr, const uintptr_t *restrict stk,
			      size_t nstk)
{
	uint64_t *restrict s = begin_record(b, tag_count, pos, marker, tag, now,
					    hdr, nhdr, nstk);

	_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t),
		       "stack words are copied as uint64_t");
	if (nstk) /* stk may be NULL then */
		memcpy(s, stk, nstk * sizeof(*s));
	commit_record(b, tag_count);
}

/*
 * resv_begin() - the caller's record of reservation @rv (its record @i)
 * is begun: hand its stack slots over in @out.
 */
static void resv_begin(struct profbuf *b, const struct pb_reservation *rv,
		       int i, const void *tag, int64_t now, const uint64_t *hdr,
		       size_t nhdr, size_t nstk, struct profbuf_resv *out)
{
	uint32_t tc = rv->tag + (uint32_t)i;
	uint64_t *s = begin_record(b, tc, rv->pos[i], rv->marker[i], tag, now,
				   hdr, nhdr, nstk);

	out->stk = (uintptr_t *)s;
	out->nstk = nstk;
	out->profbuf__b = b;
	out->profbuf__rec = pb_data(b) + rv->pos[i];
	out->profbuf__stamp = (uint32_t *)&pb_stamps(b)[tc & (b->tag_len - 1)];
	out->profbuf__flags = rv->wake ? PROFBUF__RESV_WAKE : 0;
	out->profbuf__w_end = rv->end;
}

/*
 * write_with_overflow() - a pending overflow was seen (@o): emit it before
 * our record, or count our record as lost too (@may_wait: or return
 * -EAGAIN, counting nothing).
 *
 * @out: NULL to write our record; else reserve it (profbuf_reserve()):
 * begin it and hand it over in @out, for the caller to commit.
 *
 * Return: as profbuf_write(); 1 if the overflow was taken by someone else
 * meanwhile and the caller should write normally.
 */
static __attribute__((noinline, cold)) int
write_with_overflow(struct profbuf *b, uint64_t o, const void *tag, int64_t now,
		    const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
		    size_t nstk, bool may_wait, struct profbuf_resv *out)
{
	uint32_t want[2] = { 3 + b->hdrsize, 2 + b->hdrsize + (uint32_t)nstk };
	struct pb_reservation rv;
	uint64_t ovf_time;
	uint32_t count;
	uintptr_t count_word;

	do {
		if (ovf_count(o) == 0)
			return 1;
		if (o & OVF_BUSY)
			return may_wait ? -EAGAIN : pb_count_loss(b, now);
		/*
		 * Acquire: pairs with ovf_release_busy(): ovf_time of this
		 * run of losses is visible.
		 */
	} while (!atomic_compare_exchange_weak_explicit(
		&b->ovf, &o, o | OVF_BUSY, memory_order_acquire,
		memory_order_acquire));
	busy_claimed(b);
	ring_perturb();

	if (!reserve(b, want, 2, &rv)) {
		ovf_release_busy(b, may_wait ? 0 : 1);
		return may_wait ? -EAGAIN : -ENOSPC;
	}
	/* Shared: own both records at once, should we die holding BUSY. */
	if (ring_unlikely(b->shared)) {
		claim_record(b, rv.tag, rv.pos[0], rv.marker[0], want[0]);
		claim_record(b, rv.tag + 1, rv.pos[1], rv.marker[1], want[1]);
	}
	ring_perturb();
	/* Stable while we hold BUSY: only a 0 -> 1 claim stores it. */
	ovf_time = atomic_load_explicit(&b->ovf_time, memory_order_relaxed);
	o = atomic_load_explicit(&b->ovf, memory_order_relaxed);
	/*
	 * Take the count (grown, perhaps) and drop BUSY at once.  Release:
	 * pairs with the acquire of the next run's claim in pb_count_loss():
	 * our load of ovf_time above happens before its store of the next
	 * run's time.  Acquire: our reads follow every loss counted so far.
	 */
	busy_leaving(b);
	while (!atomic_compare_exchange_weak_explicit(
		&b->ovf, &o, ovf_next_gen(o), memory_order_acq_rel,
		memory_order_relaxed))
		;
	count = ovf_count(o);
	count_word = count;

	put_record(b, rv.tag, rv.pos[0], rv.marker[0], NULL, (int64_t)ovf_time,
		   NULL, 0, &count_word, 1);
	if (out) {
		resv_begin(b, &rv, 1, tag, now, hdr, nhdr, nstk, out);
		return 0;
	}
	put_record(b, rv.tag + 1, rv.pos[1], rv.marker[1], tag, now, hdr, nhdr,
		   stk, nstk);
	if (rv.wake)
		wake_reader(b);
	return 0;
}

/* Whether @hdr's @nhdr words are a header profbuf_write() takes. */
static bool header_ok(const struct profbuf *b, const uint64_t *hdr, size_t nhdr)
{
	uint64_t any = 0;

	if (!hdr || nhdr == 0 || nhdr > b->hdrsize)
		return false;
	for (size_t i = 0; i < nhdr; i++)
		any |= hdr[i];
	return any != 0;
}

/*
 * write_slow() - everything profbuf__write_fast() declines: bad
 * arguments, a pending overflow or CLOSED, a shared buffer, SLEEPING, a
 * rewind, no room, a lost CAS.  @may_wait: where the write would be
 * counted lost for want of room, return -EAGAIN and count nothing
 * (profbuf_write_wait()).  @out: NULL to write the record; else reserve
 * it instead (profbuf_reserve(); @stk unused): begun, and handed over
 * in @out for the caller to commit.
 */
static __attribute__((noinline)) int
write_slow(struct profbuf *b, const void *tag, int64_t now, const uint64_t *hdr,
	   size_t nhdr, const uintptr_t *stk, size_t nstk, bool may_wait,
	   struct profbuf_resv *out)
{
	uint32_t want;
	struct pb_reservation rv;
	uint64_t o;

	if (!b || !header_ok(b, hdr, nhdr) || (!out && !stk && nstk) ||
	    nstk > b->data_len - 2 - b->hdrsize)
		return -EINVAL;
	want = 2 + b->hdrsize + (uint32_t)nstk;
	/*
	 * Acquire: pairs with ovf_release_busy(), so that if we go on to
	 * emit the overflow record its ovf_time is visible; and with the
	 * fetch_or in profbuf_close(), so that a write that starts after
	 * close returned (in happens-before order) sees CLOSED.
	 */
	o = atomic_load_explicit(&b->ovf, memory_order_acquire);
	if (o & (OVF_CLOSED | OVF_COUNT_MASK)) {
		int rc;

		if (o & OVF_CLOSED)
			return -ESHUTDOWN;
		rc = write_with_overflow(b, o, tag, now, hdr, nhdr, stk, nstk,
					 may_wait, out);
		if (rc <= 0)
			return rc;
	}
	if (ring_unlikely(!reserve(b, &want, 1, &rv)))
		return may_wait ? -EAGAIN : pb_count_loss(b, now);
	ring_perturb();
	if (out) {
		resv_begin(b, &rv, 0, tag, now, hdr, nhdr, nstk, out);
		return 0;
	}
	put_record(b, rv.tag, rv.pos[0], rv.marker[0], tag, now, hdr, nhdr, stk,
		   nstk);
	if (rv.wake)
		wake_reader(b);
	return 0;
}

/*
 * profbuf_write() is the profiler's per-sample cost, so its fast path -
 * a private buffer, no overflow pending, room before the ring's end (a
 * record that would reach it exactly, or rewind, goes the slow way),
 * nobody asleep, and w unchanged between its load and the one CAS - is
 * profbuf__write_fast() in <profring/profbuf_inline.h>, which C callers
 * also run inline (bench/RESULTS.md, profbuf_bench's rows "inline vs the
 * library call").  Whatever it declines, write_slow() does: the checks,
 * the general reserve() and put_record().  Both follow the protocol above
 * step by step, with the same memory orders; the fast path reads limit
 * where reserve() reads r (see Write).  An inline caller whose fast path
 * declined comes here and tries it once more: a lost CAS may win now, and
 * anything else declines again at once.
 */
RING_API int profbuf_write(struct profbuf *b, const void *tag, int64_t now,
			   const uint64_t *hdr, size_t nhdr,
			   const uintptr_t *stk, size_t nstk)
{
	if (ring_likely(
		    !profbuf__write_fast(b, tag, now, hdr, nhdr, stk, nstk)))
		return 0;
	return write_slow(b, tag, now, hdr, nhdr, stk, nstk, false, NULL);
}

/*
 * Waiting for room.  A writer that may wait loses nothing while the
 * reader lags: where a write would be counted lost, it holds nothing (no
 * reservation, no BUSY) and looks again after a back-off: a few spins,
 * then yields, then sleeps of 1 us doubling to 1 ms (the reader's give
 * back is what it waits for, and that takes a read).  Since it holds
 * nothing while it waits, writers that cannot wait (a signal handler on
 * the same thread included) go on as ever, and at its deadline the write
 * is counted lost like any other.
 */
static void wait_for_room(uint32_t step)
{
	struct timespec ts = { 0, 0 };

	if (step < 16) {
		for (int i = 0; i < 64; i++)
			ring_cpu_relax();
	} else if (step < 32) {
		sched_yield();
	} else {
		step -= 32;
		ts.tv_nsec = step < 10 ? 1000L << step : 1000000L;
		nanosleep(&ts, NULL);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

RING_API int profbuf_write_wait(struct profbuf *b, const void *tag, int64_t now,
				const uint64_t *hdr, size_t nhdr,
				const uintptr_t *stk, size_t nstk,
				uint64_t timeout_ns)
{
	uint64_t deadline = 0;
	int rc;

	for (uint32_t step = 0;; step++) {
		if (!profbuf__write_fast(b, tag, now, hdr, nhdr, stk, nstk))
			return 0;
		rc = write_slow(b, tag, now, hdr, nhdr, stk, nstk, true, NULL);
		if (rc != -EAGAIN)
			return rc;
		if (!deadline)
			deadline = mono_ns() + timeout_ns;
		else if (step % 8 == 0 && mono_ns() >= deadline)
			return write_slow(b, tag, now, hdr, nhdr, stk, nstk,
					  false, NULL);
		wait_for_room(step);
	}
}

/* ---- records written in place ------------------------------------- */

/*
 * Reserve and commit (profbuf_reserve(), profbuf_commit()) are the
 * write's steps 1-2 and 3 of the protocol, handed to the caller in
 * between: the reservation is write's own (the fast path, or
 * write_slow(), overflow emission and owner stamp included), filled up
 * to its stack; the commit is the stamp.  See "Shorter commits".
 */
RING_API int profbuf_reserve(struct profbuf *b, const void *tag, int64_t now,
			     const uint64_t *hdr, size_t nhdr, size_t nstk,
			     struct profbuf_resv *rv)
{
	int rc;

	if (ring_likely(
		    !profbuf__reserve_fast(b, tag, now, hdr, nhdr, nstk, rv)))
		return 0;
	if (!rv)
		return -EINVAL;
	rc = write_slow(b, tag, now, hdr, nhdr, NULL, nstk, false, rv);
	if (rc) {
		rv->stk = NULL;
		rv->nstk = 0;
		rv->profbuf__stamp = NULL;
	}
	return rc;
}

/*
 * give_back_tail() - commit @rv with @n of its stack slots: the rest is
 * given back if the reservation is still the last one, padding otherwise
 * (see "Shorter commits").
 */
static void give_back_tail(struct profbuf_resv *rv, size_t n)
{
	struct profbuf *b = rv->profbuf__b;
	uint64_t *d = rv->profbuf__rec;
	uint32_t pad = (uint32_t)(rv->nstk - n);
	uint64_t w, end = rv->profbuf__w_end;

	rv->stk[n] = PB_PAD_MARK | pad;
	d[0] = (uint64_t)((uint64_t *)rv->stk - d) + n;
	ring_perturb();
	w = atomic_load_explicit(&b->w, memory_order_relaxed);
	while ((w & ~RING_PINDEX_FLAGS) == end) {
		uint64_t nw = ring_pindex_make(ring_pindex_data(w) - pad,
					       ring_pindex_tag(w)) |
			      (w & RING_PINDEX_FLAGS);

		/*
		 * Release: pairs with the acquire CAS of the next
		 * reservation (reserve(), profbuf__write_fast(),
		 * profbuf__reserve_fast()), which may take the tail: our
		 * stores into it happen before its.
		 */
		if (atomic_compare_exchange_weak_explicit(&b->w, &w, nw,
							  memory_order_release,
							  memory_order_relaxed))
			break;
	}
}

RING_API int profbuf_commit(struct profbuf_resv *rv, size_t nstk)
{
	struct profbuf *b;
	int rc = 0;

	if (!rv || !rv->profbuf__stamp)
		return -EINVAL;
	b = rv->profbuf__b;
	if (nstk > rv->nstk) {
		nstk = rv->nstk;
		rc = -EINVAL;
	}
	if (nstk < rv->nstk)
		give_back_tail(rv, nstk);
	ring_perturb();
	/*
	 * Release: pairs with the acquire load of the stamp in scan_run():
	 * the record, its tag and its padding are visible before the stamp.
	 */
	atomic_store_explicit((_Atomic uint32_t *)rv->profbuf__stamp,
			      PB_STAMP_COMMITTED, memory_order_release);
	rv->profbuf__stamp = NULL;
	if (rv->profbuf__flags & PROFBUF__RESV_WAKE)
		wake_reader(b);
	return rc;
}

RING_API int profbuf_close(struct profbuf *b)
{
	if (!b)
		return -EINVAL;
	/*
	 * Release: pairs with the acquire loads of ovf in
	 * profbuf__write_fast(), write_slow() and read_step().
	 */
	if (atomic_fetch_or_explicit(&b->ovf, OVF_CLOSED,
				     memory_order_release) &
	    OVF_CLOSED)
		return -EALREADY;
	wakeup_extra(b);
	return 0;
}

RING_API int profbuf_set_wake_watermark(struct profbuf *b, size_t words)
{
	if (!b || words > b->data_len)
		return -EINVAL;
	/* Relaxed: a tuning knob; writers read it on their next reservation. */
	atomic_store_explicit(&b->wake_watermark, (uint32_t)words,
			      memory_order_relaxed);
	return 0;
}
