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
 *    -ESHUTDOWN; it is never lost silently.  Writes that begin after
 *    close returns are refused with -ESHUTDOWN (the error of every "not
 *    running" case of the library; before soname 2 it was -EINVAL).
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

/*
 * One read: @ntags whole records in @ndata words, walked with struct
 * profbuf_iter below.  An empty read (ndata == 0) has data and tags NULL.
 * C++ callers write the type as `struct profbuf_read`, as C does: the
 * function profbuf_read() hides its bare name there.
 */
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
 * @nhdr: 1 ... hdrsize (0 is always -EINVAL: it makes an all-zero header,
 *        which only overflow records have)
 * @stk:  the stack, @nstk words
 * @nstk: stack length
 *
 * Async-signal-safe and lock-free; callable from any thread and from a
 * signal handler that interrupted a write to the same buffer.  In C for
 * x86-64 or arm64 compiled with GCC or Clang and optimization (and
 * without PROFRING_NO_INLINE), its fast path runs inline
 * in the caller and the library is called only when that declines
 * (<profring/profbuf_inline.h>, which also says what an old binary sees);
 * the guarantees are the same either way.
 *
 * Return: 0 when written; -ENOSPC when there was no room (the record is
 * discarded and counted in an overflow record); -EINVAL on misuse (NULL
 * @b, @nhdr > hdrsize, a NULL @hdr or @stk with a nonzero length, an
 * all-zero header, a record larger than the ring); -ESHUTDOWN after
 * close.
 */
int profbuf_write(struct profbuf *b, const void *tag, int64_t now,
		  const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
		  size_t nstk);

/**
 * profbuf_write_wait() - profbuf_write() that waits for room instead of
 * losing the record, for writers that may block.
 * @timeout_ns: wait at most this long (then the write is counted lost,
 *              as profbuf_write() counts it, and -ENOSPC returned).
 *
 * For records that must not be dropped (a heap profiler at rate 1, where
 * a lost free would invent a leak): while the reader lags, the writer
 * holds nothing (no reservation, no overflow claim) and looks again after
 * a back-off (spins, yields, then sleeps from 1 us doubling to 1 ms), so
 * writers that cannot wait, on other threads or in a signal handler that
 * interrupts this one, go on as with profbuf_write(), and nothing is
 * counted for the waiting.  Blocks: never call it where the reader
 * cannot run until it returns (on the reader's own thread, or in a
 * handler that may have interrupted the reader): there only the timeout
 * ends it.  Lock-free in the sense that it takes no lock; not wait-free.
 *
 * Return: as profbuf_write().
 */
int profbuf_write_wait(struct profbuf *b, const void *tag, int64_t now,
		       const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
		       size_t nstk, uint64_t timeout_ns);

/**
 * struct profbuf_resv - a record reserved in the ring, written in place
 * (profbuf_reserve(), profbuf_commit()).
 * @stk:  the record's stack slots, in the ring: the caller stores up to
 *        @nstk words here, then commits
 * @nstk: how many slots were reserved
 *
 * The other fields are the library's (profbuf__ names: not API).
 */
struct profbuf_resv {
	uintptr_t *stk;
	size_t nstk;
	struct profbuf *profbuf__b;
	uint64_t *profbuf__rec; /* the record's length word */
	uint32_t *profbuf__stamp; /* its commit stamp */
	uint32_t profbuf__flags; /* PROFBUF__RESV_*: commit in the library */
	uint64_t profbuf__w_end; /* w (no flags) just after the reservation */
};

/**
 * profbuf_reserve() - reserve a record for its stack to be written in
 * place: profbuf_write() in two halves, for a caller that walks the
 * stack straight into the ring (no stack buffer, no copy).
 * @b, @tag, @now, @hdr, @nhdr: as for profbuf_write(); the header, time
 *        and tag are stored here.
 * @nstk: stack slots to reserve (the most the caller may store)
 * @rv:   filled in: the slots, rv->stk[0 .. rv->nstk)
 *
 * The record is then the caller's until profbuf_commit(@rv, n) publishes
 * it with its first n slots.  Commit every reservation that returned 0,
 * soon: the reader waits for it (as for a write in progress), records
 * reserved after it included.  Async-signal-safe and lock-free, as
 * profbuf_write(); nestable: a signal handler on the same thread may
 * reserve and commit (or write) between its caller's reserve and commit.
 * A reservation that finds no room is counted lost, exactly as
 * profbuf_write() counts a write.  In a shared buffer the reservation is
 * named by its owner stamp, as a write is: if its process dies before
 * committing, the reader steps over it and counts it lost.  Inline in C
 * callers like profbuf_write() (<profring/profbuf_inline.h>).
 *
 * Return: 0 with @rv filled in; otherwise as profbuf_write() (-ENOSPC:
 * counted lost; -EINVAL; -ESHUTDOWN), with @rv->stk NULL and nothing to
 * commit.
 */
int profbuf_reserve(struct profbuf *b, const void *tag, int64_t now,
		    const uint64_t *hdr, size_t nhdr, size_t nstk,
		    struct profbuf_resv *rv);

/**
 * profbuf_commit() - publish a reserved record with its first @nstk
 * stack slots.
 * @rv:   from profbuf_reserve() (returned 0); spent by this call
 * @nstk: 0 ... rv->nstk
 *
 * A shorter commit keeps the record exact: the reader sees @nstk stack
 * words.  The rest of the reservation is given back to the ring when no
 * record was reserved after it (always, with one writer); otherwise it
 * stays unused, marked as padding that the reader steps over (it ends
 * that read's run of records), so it costs ring space, never a record.
 * Async-signal-safe; touches only the reservation and the write word.
 *
 * Return: 0; -EINVAL for a NULL or spent @rv, or @nstk above rv->nstk
 * (the record is then committed with all rv->nstk slots).
 */
int profbuf_commit(struct profbuf_resv *rv, size_t nstk);

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
 * profbuf_after_fork() - make @b usable in the child of a fork().
 * @b:   a buffer the parent had when it forked
 * @now: the time to give an overflow record this call starts
 *
 * In the child only the thread that called fork() exists.  Without this
 * call the child cannot use @b: a parent's reader caught inside a read
 * leaves it -EBUSY for ever, and a record a parent's writer had reserved
 * but not committed stalls the reader for ever.  This call frees the
 * reader role, and gives up every record from the first one the parent
 * left uncommitted to the end of the ring (committed ones after it too:
 * their start cannot be found), counting them in the pending overflow
 * record, so that records read + overflow counts still equal the writes
 * accepted.  A pending overflow run whose first-loss time was being
 * stored at the fork keeps the previous run's time.
 *
 * Call it in the child before any other use of @b, with no writer,
 * reader or signal handler using @b meanwhile, and never from a handler
 * that interrupted a profbuf_write() of this thread.  Not async-signal-
 * safe in that sense; it makes no system call and allocates nothing.  A
 * closed buffer stays closed, a drained one still returns EOF.
 *
 * Return: how many reserved records were given up (0 or more), or -EINVAL
 * for NULL.
 */
int profbuf_after_fork(struct profbuf *b, int64_t now);

/**
 * profbuf_shared_size() - bytes of memory a buffer of these sizes takes
 * (profbuf_shared_init()).
 * @hdrsize, @bufwords, @ntags: as for profbuf_new().
 *
 * Return: the size, or 0 with errno EINVAL.
 */
size_t profbuf_shared_size(size_t hdrsize, size_t bufwords, size_t ntags);

/**
 * profbuf_shared_init() - lay a new, empty buffer out in memory the caller
 * provides, for use by several processes.
 * @mem:  at least profbuf_shared_size() bytes, aligned to 64 bytes, mapped
 *        MAP_SHARED (a memfd, a shm_open() object, or MAP_SHARED |
 *        MAP_ANONYMOUS before fork()).  The header and the commit
 *        stamps are zeroed here, the rings left as they are (they are
 *        written before they are read), so their pages cost nothing
 *        until used.
 * @size: its size.
 * @hdrsize, @bufwords, @ntags: as for profbuf_new().
 *
 * The buffer holds no pointer: every process that maps @mem, at any
 * address, attaches with profbuf_shared_attach() (a fork child keeps the
 * parent's handle) and may write or read, with every guarantee of this
 * header, and these differences:
 *  - A tag is carried bit for bit: a pointer means something only in the
 *    writer's process.  Use small integers cast to pointers.
 *  - The reader sleeps on a process-shared futex; one reader at a time
 *    across all processes (a second gets -EBUSY).
 *  - A writer stores an owner stamp (its thread id) just after reserving,
 *    which costs a gettid() on a thread's first write (and after fork).
 *    If the writer's thread is then killed before committing (its process
 *    SIGKILLed, say), a reader that has waited about a millisecond on the
 *    record sees that the thread is gone, steps over the record and
 *    counts it as a loss, in an overflow record like any other
 *    (profbuf_stats().dead_skipped counts them apart): records read +
 *    overflow counts = writes that returned 0 or -ENOSPC + writes whose
 *    writer died.  A stopped writer (SIGSTOP) is alive and is waited for.
 *    A writer that dies while it holds the pending overflow count is
 *    recovered the same way (it names itself too, right after claiming
 *    it; one that dies in between leaves the count, and EOF, to the
 *    reader's timeout).  A writer killed between
 *    its reservation and its owner stamp (the stamp follows the record's
 *    length, one cache miss later) leaves a record only the reader's
 *    timeout bounds (profbuf_read_timeout(); profbuf_stats()
 *    .stalled_unowned says so): under a full ring with writers killed at
 *    random (stress/profbuf_shared_stress --kill) that happened in about
 *    half the runs; a writer that exits normally never does.  Thread ids are
 *    those of the reader's pid namespace: writers in another pid
 *    namespace are not supported.
 *  - The memory is trusted by this handle: a process that scribbles on
 *    the buffer's header can make every user of it misbehave (a corrupt
 *    record length is caught: -EIO).  A reader that must survive the
 *    writers' memory uses profbuf_reader_attach() instead.
 * Not async-signal-safe.  profbuf_free() on the handle frees nothing (the
 * memory is the caller's to unmap).
 *
 * Return: the handle (it is @mem), or NULL with errno EINVAL.
 */
struct profbuf *profbuf_shared_init(void *mem, size_t size, size_t hdrsize,
				    size_t bufwords, size_t ntags);

/**
 * profbuf_shared_attach() - use a buffer another process laid out.
 * @mem:  the same memory (the same object), mapped here at any address,
 *        aligned to 64 bytes.
 * @size: the mapping's size.
 *
 * Not async-signal-safe.
 *
 * Return: the handle (it is @mem), or NULL with errno EPROTO (not a
 * buffer of this version) or EINVAL (sizes that do not fit @size).
 */
struct profbuf *profbuf_shared_attach(void *mem, size_t size);

/**
 * struct profbuf_reader - a guarded reader of a shared buffer
 * (profbuf_reader_attach()); opaque, in the reader's own memory.
 */
struct profbuf_reader;

/**
 * profbuf_reader_attach() - read a shared buffer whose writers may
 * corrupt its memory.
 * @mem:  the buffer, as for profbuf_shared_attach().
 * @size: the mapping's size.
 *
 * For a reader that must outlive what it reads: a profiler reading the
 * program it profiles, whose wild writes may land in the buffer.  The
 * buffer's geometry (sizes, offsets, header size) is read once, here,
 * checked against what profbuf_shared_init() lays out for those sizes and
 * against @size, and kept in the reader's memory; so are the reader's
 * position, its EOF and its overflow record.  Of @mem the reader then
 * reads only what writers write (the write word, the overflow word, the
 * commit stamps, the records and tags), and treats each as a claim to
 * check: a write index out of range of the ring, or a record length that
 * does not fit, is corruption.  Each run is copied into the reader's
 * memory and checked again there before it is returned, so the consumer
 * parses words that cannot change under it.  A tag is a number the
 * writer chose (check it before you use it).  Overflow counts are the
 * writers' claims: report them as such.
 *
 * What can still go wrong is said, never done: the first corruption
 * found (the geometry in @mem no longer the one attached to, which writers
 * follow, counts too) ends the reading (every later read returns -EIO;
 * profbuf_reader_stats() says what was found), and every run returned
 * before it stays valid.  No read waits past its timeout, however the
 * memory changes (stepping over dead writers included).  Memory that
 * can shrink under the mapping faults (SIGBUS): seal it first (a memfd
 * with F_SEAL_SHRINK).  The reader does not take the buffer's shared
 * reader flag: one guarded reader, and no other reader, per buffer.
 *
 * Not async-signal-safe (it allocates a copy the size of the ring).
 *
 * Return: the reader, or NULL with errno EINVAL (bad @mem or @size, or a
 * geometry that does not fit), EPROTO (not a shared buffer of this
 * version) or ENOMEM.
 */
struct profbuf_reader *profbuf_reader_attach(void *mem, size_t size);

/**
 * profbuf_reader_read() - profbuf_read_timeout() for a guarded reader.
 * @rd:         the reader.
 * @timeout_ns: wait at most this long for something to read.
 * @r:          the read; its data, tags and overflow record are in the
 *              reader's memory, valid until the next read on @rd.
 *
 * Return: 0 (with @r empty on timeout: ndata 0, eof false), -ETIMEDOUT
 * as profbuf_read_timeout(), -EBUSY for a read already in progress on
 * @rd, -EIO once the buffer was found corrupted (then always), -EINVAL.
 */
int profbuf_reader_read(struct profbuf_reader *rd, uint64_t timeout_ns,
			struct profbuf_read *r);

/**
 * profbuf_reader_close() - profbuf_close() on the reader's buffer; any
 * thread may call it while another reads.
 *
 * Return: as profbuf_close().
 */
int profbuf_reader_close(struct profbuf_reader *rd);

/**
 * struct profbuf_reader_stats - what a guarded reader knows.
 * @dead_skipped:    as in struct profbuf_stats.
 * @stalled_unowned: as in struct profbuf_stats.
 * @unread:          records the write word says are reserved and not
 *                   read yet (0 once EOF was read; a claim, at most the
 *                   ring's tags): what is lost if reading stops now.
 * @corrupt:         what was found corrupted, a static string; NULL
 *                   while none was.
 */
struct profbuf_reader_stats {
	uint64_t dead_skipped;
	uint32_t stalled_unowned;
	uint32_t unread;
	const char *corrupt;
};

/**
 * profbuf_reader_stats() - the reader's counts; call between reads.
 *
 * Return: 0, or -EINVAL.
 */
int profbuf_reader_stats(struct profbuf_reader *rd,
			 struct profbuf_reader_stats *st);

/**
 * profbuf_reader_free() - free the reader (not the buffer); NULL is a
 * no-op.
 */
void profbuf_reader_free(struct profbuf_reader *rd);

/**
 * struct profbuf_stats - what the reader knows of lost writers.
 * @dead_skipped:   records stepped over because their writer died (also
 *                  counted in overflow records).
 * @stalled_unowned: 1 if the reader's last wait was on a record whose
 *                  writer stored no owner stamp yet (shared buffers).
 */
struct profbuf_stats {
	uint64_t dead_skipped;
	uint32_t stalled_unowned;
};

/**
 * profbuf_stats() - the reader's counts; call between reads, from the
 * reader.
 *
 * Return: 0, or -EINVAL.
 */
int profbuf_stats(struct profbuf *b, struct profbuf_stats *st);

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

/*
 * The header words per record @b was made with (profbuf_new(),
 * profbuf_shared_init()): what profbuf_iter_init() takes.  0 for a NULL
 * @b.  Async-signal-safe.
 */
size_t profbuf_hdrsize(const struct profbuf *b);

/*
 * Walking a read.  A reader takes a read apart with an iterator instead of
 * parsing the layout itself:
 *
 *	struct profbuf_iter it;
 *	struct profbuf_record rec;
 *
 *	profbuf_iter_init(&it, &r, profbuf_hdrsize(b));
 *	while (profbuf_iter_next(&it, &rec)) {
 *		if (profbuf_record_is_overflow(&rec))
 *			lost += profbuf_record_overflow_count(&rec);
 *		else
 *			use(rec.time, rec.hdr, rec.stk, rec.nstk, rec.tag);
 *	}
 *
 * The functions below are static inline (no call, no library symbol).
 * They allocate nothing, take no lock, make no system call, touch no
 * global state and leave errno alone: they are async-signal-safe and may
 * run on any thread.  They only read the words and tags of the read and
 * write the iterator and the record the caller passes.  Whatever the words
 * hold, they never read outside data[0, ndata) and tags[0, ntags): every
 * length word is checked against hdrsize and the words left before it is
 * used, and a bad one ends the walk (profbuf_iter_malformed()).
 */

/* Stack words are the ring's uint64_t words, seen as uintptr_t. */
#ifdef __cplusplus
static_assert(sizeof(uintptr_t) == sizeof(uint64_t),
	      "profbuf stack words are 64 bits");
#else
_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t),
	       "profbuf stack words are 64 bits");
#endif

/**
 * struct profbuf_record - one record of a read, from profbuf_iter_next().
 * @time: its time stamp (@now of profbuf_write()); for an overflow record,
 *        the time of the first write it counts
 * @hdr:  the header, @nhdr words, zero-padded by the writer; all zero only
 *        in an overflow record
 * @nhdr: the hdrsize given to profbuf_iter_init()
 * @stk:  the stack, @nstk words; for an overflow record, the count
 * @nstk: the stack's length (1 in an overflow record)
 * @tag:  its tag; NULL for an overflow record
 *
 * @hdr and @stk point into the read's words: like the read, they are valid
 * until the next profbuf_read() or profbuf_read_timeout() on the buffer.
 */
struct profbuf_record {
	int64_t time;
	const uint64_t *hdr;
	size_t nhdr;
	const uintptr_t *stk;
	size_t nstk;
	const void *tag;
};

/**
 * struct profbuf_iter - a walk over the records of one read.
 *
 * Set up by profbuf_iter_init(); the fields are private.  It is plain
 * caller storage (on the stack, say): there is nothing to free.
 */
struct profbuf_iter {
	const uint64_t *data;
	const void *const *tags;
	size_t ndata;
	size_t ntags;
	size_t hdrsize;
	size_t off; /* word offset of the next record */
	size_t idx; /* its tag index */
	bool malformed;
};

/**
 * profbuf_iter_init() - start walking the records of a read.
 * @it:      the iterator to set up
 * @r:       a read filled in by profbuf_read() or profbuf_read_timeout();
 *           an empty read (nothing yet, or EOF) has no records
 * @hdrsize: the hdrsize the buffer was created with (profbuf_new())
 *
 * @it refers to @r's words and tags, not to @r itself, so @r may go out of
 * scope; the walk is valid until the next read on the buffer.  A @hdrsize
 * of 0 (profbuf_new() refuses it) or a NULL @r->data or @r->tags with a
 * nonzero count marks the read malformed: the walk returns no record.
 *
 * Context: async-signal-safe, allocation-free, O(1).
 */
static inline void profbuf_iter_init(struct profbuf_iter *it,
				     const struct profbuf_read *r,
				     size_t hdrsize)
{
	it->data = r->data;
	it->tags = r->tags;
	it->ndata = r->ndata;
	it->ntags = r->ntags;
	it->hdrsize = hdrsize;
	it->off = 0;
	it->idx = 0;
	it->malformed = hdrsize == 0 || hdrsize > SIZE_MAX - 3 ||
			(r->ndata && !r->data) || (r->ntags && !r->tags);
}

/**
 * profbuf_iter_next() - the next record of the read.
 * @it:  the iterator
 * @rec: filled in when true is returned; untouched otherwise
 *
 * Records come in the read's order, each with its own tag.  The walk ends
 * when the words and the tags are used up together (a well-formed read);
 * it ends early, and profbuf_iter_malformed() becomes true, at a length
 * word below 2 + hdrsize or beyond the words left, or when the words run
 * out before the tags or the tags before the words.  A read returned by
 * profbuf walked with the buffer's hdrsize is never malformed unless
 * memory was corrupted.
 *
 * Context: async-signal-safe, allocation-free, O(1); never reads outside
 * the read's words and tags.
 *
 * Return: true with @rec filled in; false at the end of the walk, and on
 * every later call.
 */
static inline bool profbuf_iter_next(struct profbuf_iter *it,
				     struct profbuf_record *rec)
{
	const uint64_t *w;
	uint64_t len;

	if (it->malformed)
		return false;
	if (it->off == it->ndata || it->idx == it->ntags) {
		/* In a well-formed read, words and tags end together. */
		it->malformed = it->off != it->ndata || it->idx != it->ntags;
		return false;
	}
	w = it->data + it->off;
	len = w[0];
	/* off < ndata here: ndata - off cannot wrap. */
	if (len < 2 + it->hdrsize || len > it->ndata - it->off) {
		it->malformed = true;
		return false;
	}
	rec->time = (int64_t)w[1];
	rec->hdr = w + 2;
	rec->nhdr = it->hdrsize;
	rec->stk = (const uintptr_t *)(w + 2 + it->hdrsize);
	rec->nstk = (size_t)len - 2 - it->hdrsize;
	rec->tag = it->tags[it->idx];
	it->off += (size_t)len;
	it->idx++;
	return true;
}

/**
 * profbuf_iter_malformed() - did the walk stop before the end of the read?
 * @it: the iterator
 *
 * Context: async-signal-safe, O(1).
 *
 * Return: true once profbuf_iter_next() has stopped early (see there) or
 * if profbuf_iter_init() refused the read; false while the walk goes on
 * and after a well-formed read was walked to its end.
 */
static inline bool profbuf_iter_malformed(const struct profbuf_iter *it)
{
	return it->malformed;
}

/**
 * profbuf_record_is_overflow() - does @rec count discarded writes?
 * @rec: a record from profbuf_iter_next()
 *
 * An overflow record stands for writes discarded for want of room (see
 * "Lost records" above): all-zero header, NULL tag, a one-word stack
 * holding the count, and the time of the first discarded write.  All three
 * are checked; profbuf_write() refuses an all-zero header, so no ordinary
 * record passes.
 *
 * Context: async-signal-safe, allocation-free, O(hdrsize).
 *
 * Return: true for an overflow record.
 */
static inline bool profbuf_record_is_overflow(const struct profbuf_record *rec)
{
	uint64_t any = 0;

	if (rec->tag != NULL || rec->nstk != 1)
		return false;
	for (size_t i = 0; i < rec->nhdr; i++)
		any |= rec->hdr[i];
	return any == 0;
}

/**
 * profbuf_record_overflow_count() - how many writes an overflow record
 * counts.
 * @rec: a record from profbuf_iter_next()
 *
 * Context: async-signal-safe, allocation-free, O(hdrsize).
 *
 * Return: the count, 1 ... 2^32 - 1 in an overflow record profbuf
 * returned; 0 if @rec is not an overflow record.
 */
static inline uint64_t
profbuf_record_overflow_count(const struct profbuf_record *rec)
{
	return profbuf_record_is_overflow(rec) ? (uint64_t)rec->stk[0] : 0;
}

/* profbuf_write()'s fast path, inline in C callers (see there). */
#include <profring/profbuf_inline.h>

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_PROFBUF_H */
