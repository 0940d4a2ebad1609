/* SPDX-License-Identifier: MIT */
/*
 * <profring/profbuf.h> - the signal-safe profiling ring.
 *
 * A profbuf carries fixed-size-header + stack records from any number of
 * writers (threads, and signal handlers that interrupt them, including a
 * handler that interrupts a write to the same buffer) to one reader thread.
 * Its behaviour is that of the Go runtime's profBuf (runtime/profbuf.go);
 * what Go leaves out - concurrent and nested writers, errors instead of
 * aborts, exactly one wakeup per sleep - is added.
 *
 * Record layout, in a ring of uint64_t words:
 *
 *	[len, time, hdr[0..hdrsize), stk[0..nstk)]	len = 2 + hdrsize + nstk
 *
 * The header is zero-padded to hdrsize words.  A record never wraps around
 * the end of the ring: the writer leaves a 0 word (rewind marker) and starts
 * at offset 0; readers never see the marker.  Each record has one tag (an
 * opaque pointer), kept in a parallel ring.
 *
 * Lost records.  A write that finds no room is discarded and counted.  The
 * count, with the time of the first discarded write, reaches the reader as
 * an overflow record [2 + hdrsize + 1, time, 0 ... 0, count] with a NULL
 * tag: written by the next writer that has room for it and its own record,
 * or synthesized by the reader when the ring is empty.  An ordinary write
 * may not have an all-zero header, so overflow records are unambiguous.
 * For every run: records read + the counts of all overflow records read =
 * writes that returned 0 or -ENOSPC.  (A single overflow record holds up to
 * 2^32 - 1 losses; beyond that the count sticks, as in Go.)
 *
 * Guarantees:
 *  - profbuf_write() and profbuf_close() are async-signal-safe: no malloc,
 *    no lock, no syscall except a futex wake when the reader sleeps, errno
 *    preserved.
 *  - profbuf_write() is lock-free and never waits for another writer: it
 *    reserves space with a compare-and-swap and commits its record on its
 *    own.  A CAS retry happens only when another writer reserved or the
 *    reader changed a flag in the meantime.
 *  - The reader returns only the committed prefix of the ring, in
 *    reservation order.  It waits for every reserved record: a writer that
 *    reserves and never commits (a thread killed mid-write, a siglongjmp out
 *    of a handler inside profbuf_write) stalls the reader at that record
 *    forever (a timed read still returns -ETIMEDOUT).  The same holds for a
 *    writer that dies between its commit and the wakeup it owes a sleeping
 *    reader, or while it holds the overflow record (between counting the
 *    first loss and storing its time, or while emitting it).  While a
 *    reserved
 *    record is being written (nanoseconds, unless the writer is preempted)
 *    a blocking reader polls for it with back-off; otherwise it sleeps on a
 *    futex and is woken exactly once by a writer or by close.
 *  - A write racing profbuf_close() lands and is read before EOF, is
 *    counted in an overflow record read before EOF, or is refused with
 *    -EINVAL; it is never lost silently.  Writes that begin after close
 *    returns are refused with -EINVAL.
 *  - Records come in reservation order.  An overflow record synthesized by
 *    the reader is returned as soon as nothing committed is left to read,
 *    so it may precede a record still being written at that moment.
 *  - Records longer than half the ring may not fit at the current write
 *    position even in an empty ring and are then counted as overflow; keep
 *    records at most bufwords / 2.
 */
#ifndef PROFRING_PROFBUF_H
#define PROFRING_PROFBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct profbuf;

enum profbuf_mode {
	PROFBUF_BLOCKING,
	PROFBUF_NONBLOCKING,
};

struct profbuf_read {
	const uint64_t *data; /* whole records; valid until the next read */
	size_t ndata; /* words */
	const void *const *tags; /* one per record; NULL for overflow records */
	size_t ntags;
	bool eof;
};

/**
 * profbuf_new() - create a profiling buffer.
 * @hdrsize:  header words per record, >= 1
 * @bufwords: ring size in words, rounded up to a power of two, and to at
 *            least 2 + hdrsize + 1 (room for an overflow record)
 * @ntags:    ring size in records, rounded up to a power of two
 *
 * Not async-signal-safe (it allocates).
 *
 * Return: the buffer, or NULL with errno set: EINVAL for hdrsize 0 or a
 * ring of 2^28 words or tags or more, ENOMEM.
 */
struct profbuf *profbuf_new(size_t hdrsize, size_t bufwords, size_t ntags);

/**
 * profbuf_free() - free a buffer; NULL is a no-op.
 *
 * No writer or reader may be using it.
 */
void profbuf_free(struct profbuf *b);

/**
 * profbuf_write() - append one record.
 * @b:    the buffer
 * @tag:  opaque pointer returned with the record (may be NULL)
 * @now:  the record's time stamp
 * @hdr:  @nhdr header words, zero-padded to hdrsize; not all zero
 * @nhdr: 0 ... hdrsize
 * @stk:  the stack, @nstk words
 * @nstk: stack length
 *
 * Async-signal-safe and lock-free; callable from any thread and from a
 * signal handler that interrupted a write to the same buffer.
 *
 * Return: 0 when written; -ENOSPC when there was no room (the record is
 * discarded and counted in an overflow record); -EINVAL on misuse (NULL
 * @b, @nhdr > hdrsize, a NULL @hdr or @stk with a nonzero length, an
 * all-zero header, a record larger than the ring) or after close.
 */
int profbuf_write(struct profbuf *b, const void *tag, int64_t now,
		  const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
		  size_t nstk);

/**
 * profbuf_read() - return the next run of committed records.
 * @b:    the buffer
 * @mode: PROFBUF_BLOCKING waits until there is something to return (data,
 *        an overflow record, or EOF); PROFBUF_NONBLOCKING returns at once,
 *        possibly with nothing (ndata == 0, eof false)
 * @r:    filled in: records and their tags, pointing into the ring
 *
 * The records stay valid, and their ring space reserved, until the next
 * call, which gives them back to the writers.  Only one thread may read at
 * a time.  Once everything written before profbuf_close(), overflow
 * included, has been returned, @r->eof is set, then on every later call.
 *
 * Return: 0, -EINVAL for a NULL argument, -EBUSY if another read is in
 * progress.
 */
int profbuf_read(struct profbuf *b, enum profbuf_mode mode,
		 struct profbuf_read *r);

/**
 * profbuf_read_timeout() - profbuf_read() in blocking mode, for at most
 * @timeout_ns nanoseconds (UINT64_MAX: no limit).
 *
 * Return: as profbuf_read(), or -ETIMEDOUT when nothing arrived in time
 * (@r is then empty).
 */
int profbuf_read_timeout(struct profbuf *b, uint64_t timeout_ns,
			 struct profbuf_read *r);

/**
 * profbuf_close() - no more writes.
 *
 * Async-signal-safe.  The reader returns everything already accepted, then
 * EOF.
 *
 * Return: 0, -EALREADY if already closed, -EINVAL for NULL.
 */
int profbuf_close(struct profbuf *b);

/**
 * profbuf_set_wake_watermark() - wake a sleeping reader only once @words
 * words are pending (or on overflow or close).
 *
 * The default, 0, wakes it on every commit.  Records below the watermark
 * wait in the ring until more arrive: pair a watermark with
 * profbuf_read_timeout().
 *
 * Return: 0, -EINVAL for NULL or a watermark larger than the ring.
 */
int profbuf_set_wake_watermark(struct profbuf *b, size_t words);

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_PROFBUF_H */
