/* SPDX-License-Identifier: MIT */
/*
 * <profring/profbuf_group.h> - profbuf rings read as one, for many
 * writer threads.
 *
 * One profbuf is one write word that every writer compare-and-swaps: from
 * two writer threads on, the cache line holding it moves between their
 * cores on every write, and that transfer, not the reader, bounds what
 * the ring delivers.  A group is N profbuf rings with the same sizes and
 * one reader: each writer thread writes to a ring of its own, so writers
 * on different threads share no cache line on the write path (while there
 * are at most N of them), and one reader drains all the rings.
 *
 * Rings.  A thread is dealt a ring on its first write to any group: the
 * thread gets the next number of a process-wide count (once per thread,
 * kept in initial-exec TLS; a signal handler that writes first settles the
 * number with its thread), and writes to ring number mod N of every group.
 * So the first N threads to write have rings of their own; later threads
 * share (a thread that exits does not give its number back).  A shared
 * ring is an ordinary profbuf: any number of writers, nested ones in a
 * signal handler included, exactly as <profring/profbuf.h> says.
 *
 * Order.  Records of one writer (one thread, with its signal handlers'
 * records among them in the order they were written) come in the order
 * written.  Records of threads on different rings are not ordered with
 * each other: each read returns a run of one ring; a consumer that needs
 * a global order sorts by the records' time stamps.  Successive reads
 * visit the rings in turn, so a busy ring cannot starve the others.
 *
 * Loss.  Each ring counts its own losses in its own overflow records,
 * which the group read returns like any other record: over the group,
 * records read + the counts of all overflow records read = writes that
 * returned 0 or -ENOSPC, as for one profbuf.
 *
 * Close and EOF.  profbuf_group_close() closes every ring; a read returns
 * EOF once every ring has returned everything it accepted and its EOF.
 *
 * Waking.  A blocking read that finds nothing sets each ring's SLEEPING
 * flag, as a profbuf reader does, and sleeps on all of the rings' futex
 * words at once (futex_waitv(2), Linux 5.16): the first write to any ring
 * wakes it, exactly once per ring (see profbuf/group.c).  On a kernel
 * without futex_waitv, or where a seccomp filter refuses it (EPERM), the
 * reader polls instead, sleeping at most 1 ms between looks.
 *
 * Guarantees: as <profring/profbuf.h> for each ring; profbuf_group_write(),
 * profbuf_group_mine() and profbuf_group_close() are async-signal-safe
 * (no allocation, no lock, errno preserved).
 */
#ifndef PROFRING_PROFBUF_GROUP_H
#define PROFRING_PROFBUF_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include <profring/profbuf.h>
#include <profring/profbuf_owned_inline.h>

#ifdef __cplusplus
extern "C" {
#endif

struct profbuf_group;

/* The most rings a group has (what one futex_waitv(2) waits on). */
#define PROFBUF_GROUP_MAX_RINGS 128

/**
 * profbuf_group_new() - create @nrings profbufs read as one.
 * @nrings:   1 ... PROFBUF_GROUP_MAX_RINGS (the writer threads that get a
 *            ring of their own: the machine's CPU count, say)
 * @hdrsize, @bufwords, @ntags: of each ring, as for profbuf_new()
 *
 * Not async-signal-safe (it allocates).
 *
 * Return: the group, or NULL with errno set: EINVAL (@nrings, or what
 * profbuf_new() refuses), ENOMEM.
 */
struct profbuf_group *profbuf_group_new(size_t nrings, size_t hdrsize,
					size_t bufwords, size_t ntags);

/**
 * profbuf_group_free() - free a group and its rings; NULL is a no-op.
 *
 * No writer or reader may be using it.
 */
void profbuf_group_free(struct profbuf_group *g);

/**
 * profbuf_group_nrings() - how many rings @g has.
 */
size_t profbuf_group_nrings(const struct profbuf_group *g);

/**
 * profbuf_group_ring() - ring @i of @g (NULL if out of range), for
 * settings (profbuf_set_wake_watermark()) and tests.  Never read it
 * directly: the group is its reader.
 */
struct profbuf *profbuf_group_ring(struct profbuf_group *g, size_t i);

/**
 * profbuf_group_mine() - the calling thread's ring of @g.
 *
 * Any profbuf write call works on it: profbuf_write(),
 * profbuf_write_wait(), profbuf_reserve() and profbuf_commit().
 * Async-signal-safe, lock-free; the first call on a thread takes a
 * number with one atomic add.
 *
 * Return: the ring, or NULL for a NULL @g.
 */
struct profbuf *profbuf_group_mine(struct profbuf_group *g);

/**
 * profbuf_group_write() - profbuf_write() to the calling thread's ring.
 * @g: the group; the other arguments and the return value are
 *     profbuf_write()'s.
 *
 * Async-signal-safe and lock-free; the ring's inline fast path runs in
 * the library.
 */
int profbuf_group_write(struct profbuf_group *g, const void *tag, int64_t now,
			const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
			size_t nstk);

/**
 * profbuf_group_read() - return the next run of committed records of
 * some ring (see Order above).
 * @g, @mode, @r: as for profbuf_read(); @r is walked with struct
 *        profbuf_iter and the rings' hdrsize, and stays valid until the
 *        next read of @g.
 *
 * Only one thread may read at a time.  @r->eof is set once every ring
 * has returned its EOF, then on every later call.
 *
 * Return: 0, -EINVAL for a NULL argument or bad @mode, -EBUSY if another
 * read is in progress, -EIO as profbuf_read().
 */
int profbuf_group_read(struct profbuf_group *g, enum profbuf_mode mode,
		       struct profbuf_read *r);

/**
 * profbuf_group_read_timeout() - profbuf_group_read() in blocking mode,
 * for at most @timeout_ns nanoseconds (UINT64_MAX: no limit).
 *
 * Return: as profbuf_group_read(), or -ETIMEDOUT when nothing arrived in
 * time (@r is then empty).
 */
int profbuf_group_read_timeout(struct profbuf_group *g, uint64_t timeout_ns,
			       struct profbuf_read *r);

/**
 * profbuf_group_last_ring() - the ring the last read's records came
 * from (0 before any).  Call it from the reader, between reads.
 */
size_t profbuf_group_last_ring(const struct profbuf_group *g);

/**
 * profbuf_group_close() - no more writes to any ring of @g.
 *
 * Async-signal-safe.  The reader returns everything already accepted,
 * then EOF.
 *
 * Return: 0, -EALREADY if already closed, -EINVAL for NULL.
 */
int profbuf_group_close(struct profbuf_group *g);

/**
 * profbuf_group_after_fork() - profbuf_after_fork() for every ring of @g,
 * and the group's reader role freed, under the same rules.
 *
 * Return: the records given up over all rings, or -EINVAL for NULL.
 */
int profbuf_group_after_fork(struct profbuf_group *g, int64_t now);

/*
 * Owned rings.  A group made by profbuf_group_new_owned() also has
 * rings that one thread owns: profbuf_group_claim() gives the calling
 * thread one, and only that thread (and its signal handlers, nested in
 * its writes) writes it.  Its writes take no locked instruction and
 * touch no cache line another writer touches: the reader never writes
 * the owner's words (profbuf/owned.c).  Written with
 * profbuf_owned_write() or profbuf_owned_reserve()/profbuf_owned_commit(),
 * read by the group's read with the other rings, in the same record
 * format (walk it with struct profbuf_iter), with the same loss
 * accounting: an overflow record, in the ring, counts the writes the
 * ring refused for want of room before it; losses not yet counted when
 * the owner writes nothing more are counted by a last overflow record
 * before the ring's EOF.
 *
 * What a writer waits for: nothing.  What the reader waits for: a write
 * in progress at close (it polls, up to 1 ms apart, until the write
 * ends).  It sleeps after a membarrier(2) (Linux 4.14); where that is
 * refused when the group is made, the owners' writes take a fence
 * instead and always go through the library (correct, slower).  If it
 * is refused later (a seccomp filter installed since), the reader polls,
 * and at close waits 1 ms for writes already past their check of it: a
 * write preempted for longer at that point may then be lost uncounted.
 *
 * A thread that exits inside a write (pthread_exit() from a signal
 * handler) leaves that write's records unpublished: at close the reader
 * counts each record it reserved as one lost write (an overflow record
 * among them counts as one).
 */

/* The most owned rings a group has. */
#define PROFBUF_GROUP_MAX_OWNED 1024

/**
 * profbuf_group_new_owned() - a group of @nrings shared rings (as
 * profbuf_group_new()) and @nowned owned rings, all of the same sizes.
 * @nowned: 0 ... PROFBUF_GROUP_MAX_OWNED: the threads that may own a ring
 *          at once (a thread that finds none free writes a shared ring)
 *
 * Not async-signal-safe (it allocates).
 *
 * Return: the group, or NULL with errno set: EINVAL, ENOMEM.
 */
struct profbuf_group *profbuf_group_new_owned(size_t nrings, size_t nowned,
					      size_t hdrsize, size_t bufwords,
					      size_t ntags);

/**
 * profbuf_group_nowned() - how many owned rings @g has.  In reads, ring
 * numbers (profbuf_group_last_ring()) nrings ... nrings + nowned - 1 are
 * the owned rings.
 */
size_t profbuf_group_nowned(const struct profbuf_group *g);

/**
 * profbuf_group_claim() - the calling thread's owned ring: the one it
 * owns, else a free one (never owned, or given back, or whose owner
 * thread has exited), claimed.
 *
 * Async-signal-safe, lock-free: a CAS per ring tried (the thread's
 * token, its tid and a nonce, is made once per thread with gettid(2));
 * when every ring is taken, a tgkill(2) per ring to find an owner that
 * has exited.  errno preserved.  Keep the pointer: it is this thread's
 * until profbuf_group_unclaim().  Its signal handlers may use it too.
 * After fork(), profbuf_group_after_fork() gives every ring owned at the
 * fork to the child's thread (the others do not exist there).
 *
 * Return: the ring, or NULL for a NULL @g, a group without owned rings,
 * or all taken (write profbuf_group_mine() then).
 */
struct profbuf_owned *profbuf_group_claim(struct profbuf_group *g);

/**
 * profbuf_group_unclaim() - give the ring back (the owner thread, with
 * no write of its own in progress on it); what it wrote is still read.
 * Its signal handlers must not write it after this: block their signals
 * or take the pointer from them first (a second thread writing it would
 * break it).
 *
 * Return: 0, -EINVAL (NULL, or not owned by the calling thread), -EBUSY
 * (a write in progress).
 */
int profbuf_group_unclaim(struct profbuf_owned *o);

/**
 * profbuf_owned_write() - profbuf_write() to an owned ring: the owner
 * thread only (and its signal handlers).
 * @o: the ring; the other arguments as for profbuf_write()
 *
 * Async-signal-safe, wait-free: no lock, no locked instruction on the
 * way of a record that fits (a wakeup of a sleeping reader is a system
 * call); errno preserved.
 *
 * Return: 0; -ENOSPC (no room: the write is lost and counted, see Owned
 * rings); -ESHUTDOWN (the group is closed: refused, not counted);
 * -EINVAL (a NULL @o or @hdr, @nhdr 0 or above hdrsize, an all-zero
 * header, a stack missing or as long as the ring).
 */
int profbuf_owned_write(struct profbuf_owned *o, const void *tag, int64_t now,
			const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
			size_t nstk);

/**
 * profbuf_owned_reserve() - profbuf_reserve() for an owned ring: reserve
 * a record of @nstk stack slots, its header, time and tag stored; the
 * caller fills rv->stk[0 .. n) and commits with profbuf_owned_commit().
 *
 * As profbuf_owned_write() for who may call it and what it returns.
 * Commit every reservation that returned 0, soon: the reader sees none
 * of the thread's records until its outermost write in progress ends.
 * Nestable: a signal handler on the thread may reserve and commit (or
 * write) between its thread's reserve and commit.
 */
int profbuf_owned_reserve(struct profbuf_owned *o, const void *tag, int64_t now,
			  const uint64_t *hdr, size_t nhdr, size_t nstk,
			  struct profbuf_owned_resv *rv);

/**
 * profbuf_owned_commit() - publish a reservation with its first @nstk
 * stack words.  A shorter commit gives the rest back when nothing was
 * reserved after it, else leaves padding the reader steps over.
 *
 * Async-signal-safe, wait-free.
 *
 * Return: 0; -EINVAL (NULL, committed already; or @nstk above the
 * reservation's: it is committed whole).
 */
int profbuf_owned_commit(struct profbuf_owned_resv *rv, size_t nstk);

#ifdef PROFBUF__OWNED_FAST
/* The three, inline: the library is called only where they decline. */
static inline __attribute__((always_inline)) int
profbuf__owned_reserve_inline(struct profbuf_owned *o, const void *tag,
			      int64_t now, const uint64_t *hdr, size_t nhdr,
			      size_t nstk, struct profbuf_owned_resv *rv)
{
	if (__builtin_expect(!profbuf__owned_claim_fast(o, tag, now, hdr, nhdr,
							nstk, !rv, rv),
			     1))
		return 0;
	return (profbuf_owned_reserve)(o, tag, now, hdr, nhdr, nstk, rv);
}

static inline __attribute__((always_inline)) int
profbuf__owned_commit_inline(struct profbuf_owned_resv *rv, size_t nstk)
{
	if (__builtin_expect(rv && !profbuf__owned_commit_fast(rv, nstk), 1))
		return 0;
	return (profbuf_owned_commit)(rv, nstk);
}

static inline __attribute__((always_inline)) int
profbuf__owned_write_inline(struct profbuf_owned *o, const void *tag,
			    int64_t now, const uint64_t *hdr, size_t nhdr,
			    const uintptr_t *stk, size_t nstk)
{
	struct profbuf_owned_resv rv;

	if (__builtin_expect(!profbuf__owned_claim_fast(o, tag, now, hdr, nhdr,
							nstk, !stk && nstk,
							&rv),
			     1)) {
		profbuf__copy((uint64_t *)rv.stk, (const uint64_t *)stk, nstk);
		if (__builtin_expect(!profbuf__owned_commit_fast(&rv, nstk), 1))
			return 0;
		return (profbuf_owned_commit)(&rv, nstk);
	}
	return (profbuf_owned_write)(o, tag, now, hdr, nhdr, stk, nstk);
}

#if !defined(PROFRING_NO_INLINE) && defined(__OPTIMIZE__)
#define profbuf_owned_write(...) profbuf__owned_write_inline(__VA_ARGS__)
#define profbuf_owned_reserve(...) profbuf__owned_reserve_inline(__VA_ARGS__)
#define profbuf_owned_commit(...) profbuf__owned_commit_inline(__VA_ARGS__)
#endif
#endif /* PROFBUF__OWNED_FAST */

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_PROFBUF_GROUP_H */
