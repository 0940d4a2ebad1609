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

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_PROFBUF_GROUP_H */
