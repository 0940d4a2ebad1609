/* SPDX-License-Identifier: MIT */
/*
 * <profring/tracebuf.h> - per-thread event tracing with generations.
 *
 * Threads (and signal handlers) emit compact events - a type, up to
 * TRACEBUF_MAX_ARGS integer arguments, or a byte payload - into per-thread
 * buffers; one reader thread reads the resulting byte stream (specified in
 * tracebuf/FORMAT.md; decoded by <profring/tracedec.h>).  Time is cut into
 * generations: tracebuf_advance() closes the current one, flushing every
 * thread's buffers and emitting the generation's string table, stack table,
 * type names, clock frequency, lost counts and an end marker, so that each
 * generation can be decoded on its own.
 *
 * Memory: a tracer made with mem_objects > 0 also keeps a table of live
 * objects (tracebuf_ev_mem_alloc(), tracebuf_ev_mem_free()), and starts
 * every generation after the first with an "exists" event for each object
 * live at its start (the snapshot; Go's traceSnapshotMemory), so that a
 * generation's memory events also stand alone: every free in it is of an
 * object allocated in it or in its snapshot.
 *
 * Writing:
 *
 *	struct tracebuf_ev ev;
 *
 *	if (tracebuf_begin(t, &ev) == 0) {
 *		uint64_t args[2] = { tracebuf_ev_string(&ev, "query"),
 *				     tracebuf_ev_stack(&ev, pcs, n) };
 *		tracebuf_ev_emit(&ev, MY_TYPE, args, 2);
 *		tracebuf_end(&ev);
 *	}
 *
 * Ids from tracebuf_ev_string() and tracebuf_ev_stack() belong to the
 * generation the begin/end pair is in, and so do the events emitted in it:
 * an advance cannot come between an id and its use.  tracebuf_emit() is
 * begin + emit + end.
 *
 * Guarantees:
 *  - begin, emit, the id helpers and end are async-signal-safe and never
 *    block: no malloc, no lock, errno preserved; the emit fast path does
 *    no atomic read-modify-write (its per-thread "writing" marker is a
 *    plain store, see ring/grace.h).  They use initial-exec TLS only.
 *  - A signal handler that interrupts an event on its own thread writes
 *    into a second (nested) buffer of that thread; a handler interrupting
 *    that one is counted as lost.  The interrupted event is never damaged.
 *  - Nothing is lost silently: an event that finds no buffer (the memory
 *    bound is reached) or nests too deep is counted, per thread, and the
 *    counts appear in the stream (lost records) at the next advance or
 *    stop.  An event refused because the tracer is not running
 *    (-ESHUTDOWN) is not a loss: there is no generation to count it in.
 *  - What can block: tracebuf_advance() and tracebuf_stop() wait until no
 *    thread is inside a begin/end pair of the generation they close
 *    (calling them from inside one blocks them for ever).  A thread that
 *    no longer exists is not waited for: one that died inside a pair, or,
 *    in the child of fork(), every parent thread but the one that forked.
 *    A blocking tracebuf_read() waits for data.  With a memory table,
 *    tracebuf_advance() walks it (time in proportion to its slots) and
 *    waits once more for the pairs begun during that walk.
 *  - fork(): the child may emit, advance and stop.  A read the parent
 *    was inside at the fork leaves the child's tracebuf_read() -EBUSY:
 *    read a tracer in the process that was reading it.
 *  - Errors: -EINVAL for misuse (a NULL pointer, an argument out of
 *    range), -ESHUTDOWN when the tracer is not running (not yet started,
 *    or stopped), -ENOSPC for an event lost and counted, -EBUSY for a
 *    second concurrent reader; each function below lists its own.
 *  - Threads that exit need do nothing: their buffers are flushed at the
 *    next advance.  Threads that start mid-trace just work.
 */
#ifndef PROFRING_TRACEBUF_H
#define PROFRING_TRACEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <profring/profbuf.h>
#include <profring/stacktab.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Limits of the stream format (tracebuf/FORMAT.md; tracebuf.c checks at
 * compile time that they are the format's).
 */
#define TRACEBUF_MAX_ARGS 6 /* arguments of one event */
#define TRACEBUF_MAX_TYPE 31 /* event types, from 1 */
#define TRACEBUF_MAX_PAYLOAD 1024 /* bytes of an event's payload */
#define TRACEBUF_MAX_STRING 1000 /* bytes of an interned string */
#define TRACEBUF_MAX_TYPE_NAME 255 /* bytes of an event type's name */

/*
 * Threads that can write to one tracer at once: each holds a slot from
 * its first event until the advance after it exits; one more gets
 * -ENOSPC (counted, as thread 0).  The stack and string tables serve as
 * many threads, no more.
 */
#define TRACEBUF_MAX_THREADS STACKTAB_MAX_THREADS

/*
 * The least stack_bytes (struct tracebuf_opts): the string table gets a
 * quarter of it, and a stack table takes no less than 4096 bytes.
 */
#define TRACEBUF_MIN_STACK_BYTES 16384

/*
 * Event types 1-7 are the library's; 8 ... TRACEBUF_MAX_TYPE are yours.
 * tracebuf_emit(), tracebuf_ev_emit() and tracebuf_ev_emit_bytes() refuse
 * 1-7 (-EINVAL), so that an event of a library type always means what
 * the format says: CPU samples and lost samples are written by
 * tracebuf_ev_cpu_sample() and tracebuf_ev_lost_samples() (and the moves
 * from tracebuf_cpu_profbuf()), the memory events (3-5) by
 * tracebuf_ev_mem_alloc() and tracebuf_ev_mem_free() alone (so that
 * every stream's memory events agree with its snapshots), spans (6) by
 * tracebuf_ev_span(), spans of a named thread (7) by
 * tracebuf_ev_span_of().  An object id
 * is (address - mem_min_addr) / mem_align; each generation's memory info
 * record gives both, and the page size (tracebuf/FORMAT.md).
 */
enum tracebuf_event_type {
	/* args: sample ticks, thread id, stack id, sample count */
	TRACEBUF_EV_CPU_SAMPLE = 1,
	/* args: samples lost by the CPU profile buffer */
	TRACEBUF_EV_LOST_SAMPLES = 2,
	/* args: object id, size in bytes, stack id (0: none) */
	TRACEBUF_EV_ALLOC = 3,
	/* args: object id */
	TRACEBUF_EV_FREE = 4,
	/* args: object id, size, stack id: live when the generation began */
	TRACEBUF_EV_EXISTS = 5,
	/*
	 * args: name (a string id), start ticks, then up to 4 of yours: a
	 * span from start to the event's time (tracebuf_ev_span())
	 */
	TRACEBUF_EV_SPAN = 6,
	/*
	 * args: name (a string id), start ticks, thread id, end ticks,
	 * stack id (0: none): a span of that thread (tracebuf_ev_span_of())
	 */
	TRACEBUF_EV_SPAN_OF = 7,
	TRACEBUF_EV_USER = 8,
};

/* The most objects a tracer's memory table can be sized for. */
#define TRACEBUF_MAX_MEM_OBJECTS ((size_t)1 << 24)

struct tracebuf;

/*
 * Options of tracebuf_new().  What a zero field means is given for each;
 * note that a zero cpu_words means "no CPU sample buffer", not a default.
 */
struct tracebuf_opts {
	/* Bytes of one per-thread buffer, 4096 ... 16 MiB; 0: 64 KiB. */
	size_t buf_size;
	/* Bound on all buffers together, at least 2 buffers; 0: 16 MiB. */
	size_t max_bytes;
	/*
	 * Stack table arena per generation (and a quarter of it for the
	 * string table), at least TRACEBUF_MIN_STACK_BYTES; 0: 8 MiB.
	 */
	size_t stack_bytes;
	/*
	 * Distinct stacks (and strings) expected per generation, a hint
	 * that sizes the tables' hash buckets; 0: 4096.  Any value is
	 * taken: above what a table's arena can hold (one stack of one
	 * frame per 32 bytes) it is cut down to that.
	 */
	size_t expected_stacks;
	/*
	 * Words of the CPU sample profbuf, as profbuf_new() takes them
	 * (rounded up to a power of two, below 2^28), with cpu_words / 16
	 * tag slots; 0: no CPU sample buffer (tracebuf_cpu_profbuf()
	 * returns NULL).
	 */
	size_t cpu_words;
	/*
	 * Live objects the memory table is sized for (1 ...
	 * TRACEBUF_MAX_MEM_OBJECTS; it has twice as many slots, rounded up
	 * to a power of two, of 24 bytes each, committed as first used);
	 * 0: no memory events (tracebuf_ev_mem_alloc() returns -EOPNOTSUPP).
	 */
	size_t mem_objects;
	/* The lowest address an object may have; ids count from it. */
	uintptr_t mem_min_addr;
	/* A power of two every address is a multiple of (from mem_min_addr);
	 * 0: 8. */
	size_t mem_align;
};

/*
 * A begin/end pair in progress (see above).  Declared here so that it can
 * live on the caller's stack; its fields are the library's.
 */
struct tracebuf_ev {
	struct tracebuf *t;
	void *thread;
	uint64_t gen;
	void *section_slot;
	uint64_t section_saved;
	unsigned int level;
};

/* A piece of the stream returned by tracebuf_read(). */
struct tracebuf_chunk {
	const uint8_t *data; /* valid until the next read */
	size_t len;
	bool eof;
};

struct tracebuf_stats {
	uint64_t generation;
	uint64_t batches; /* buffers handed to the reader */
	uint64_t bytes; /* stream bytes handed to the reader, header included */
	uint64_t lost; /* events lost so far (all threads) */
	uint64_t buffers_free;
	uint64_t mem_live; /* objects in the memory table now (a walk of it) */
	uint64_t mem_full; /* allocations refused: no free slot in reach */
};

/**
 * tracebuf_new() - create a tracer (not yet started).
 * @opts: the options, each zero field meaning what struct tracebuf_opts
 *        says; NULL: every field's zero default, and a CPU sample buffer
 *        of 2^17 words (1 MiB)
 *
 * Return: the tracer, or NULL with errno set: EINVAL for an option out of
 * range, ENOMEM.
 */
struct tracebuf *tracebuf_new(const struct tracebuf_opts *opts);

/**
 * tracebuf_start() - start generation 1.  A tracer runs once: after
 * tracebuf_stop() it cannot be started again.
 *
 * Return: 0; -EALREADY if it is running; -ESHUTDOWN if it was stopped;
 * -EINVAL if @t is NULL.
 */
int tracebuf_start(struct tracebuf *t);

/**
 * tracebuf_stop() - end the last generation (as tracebuf_advance()) and
 * make the reader see EOF after it.  Writers get -ESHUTDOWN from then on,
 * and tracebuf_start() too.  A tracer that was never started is stopped
 * all the same: its stream is the stream header alone, then EOF (so a
 * reader blocked on it returns).
 *
 * Return: 0 (also when the last generation's tables could not be
 * emitted: its end record says so); -ESHUTDOWN if it was already stopped
 * (the reader's EOF came from that first stop); -EINVAL if @t is NULL.
 */
int tracebuf_stop(struct tracebuf *t);

/* Free; the tracer must be stopped (or never started) and unused. */
void tracebuf_free(struct tracebuf *t);

/**
 * tracebuf_begin() - start writing events in the current generation.
 *
 * Return: 0; -ESHUTDOWN if the tracer is not running (not yet started, or
 * stopped); -ENOSPC if this thread can write nothing now (nested too
 * deep, no thread slot): the loss is counted; -EINVAL if @t or @ev is
 * NULL.  On error, do not call tracebuf_end().
 */
int tracebuf_begin(struct tracebuf *t, struct tracebuf_ev *ev);

/* End the pair begun by tracebuf_begin(). */
void tracebuf_end(struct tracebuf_ev *ev);

/**
 * tracebuf_ev_emit() - emit an event of @type (1 ... TRACEBUF_MAX_TYPE)
 * with @nargs (0 ... TRACEBUF_MAX_ARGS) arguments, time-stamped now.
 *
 * Return: 0; -ENOSPC (no buffer: lost and counted); -EINVAL for a @type
 * or @nargs out of range, a library type (1-7, see above), or NULL @args
 * with @nargs > 0.
 */
int tracebuf_ev_emit(struct tracebuf_ev *ev, unsigned int type,
		     const uint64_t *args, unsigned int nargs);

/**
 * tracebuf_ev_cpu_sample() - emit a CPU sample (type 1) taken at @ticks
 * (tracebuf_ticks() then) on thread @tid, of the stack of @n PCs
 * (innermost first; interned in this pair's generation; @n 0: no stack),
 * standing for @count samples.  For a profiler with a sample buffer of
 * its own; samples written to tracebuf_cpu_profbuf() are moved in with
 * this.  Decoders draw it on @tid at @ticks.
 * Return: as tracebuf_ev_emit(); -EINVAL for NULL @pcs with @n > 0.
 */
int tracebuf_ev_cpu_sample(struct tracebuf_ev *ev, uint64_t ticks, uint64_t tid,
			   const uintptr_t *pcs, size_t n, uint64_t count);

/* Emit a lost-samples event (type 2): @count CPU samples were dropped. */
int tracebuf_ev_lost_samples(struct tracebuf_ev *ev, uint64_t count);

/**
 * tracebuf_ev_span() - emit a span: something that began at @start
 * (tracebuf_ticks() then) and ends now, named by the string @name (an id
 * from tracebuf_ev_string() of this pair), with @nargs (0 ...
 * TRACEBUF_MAX_ARGS - 2) arguments of yours.  Decoders see its start,
 * its length and its thread (struct tracedec_event's time, duration and
 * thread); `profring-trace json` draws it as a slice on its thread's
 * track (spans nest as their times do) and `summary` totals its time
 * per name.  One event, written at the end: a span never comes out
 * half, and an advance between its start and its end is harmless (it
 * belongs to the generation it ends in).
 *
 * Span names are strings, not event types: a runtime with more event
 * kinds than the 24 user types names them with strings, for spans here
 * and for instant events as an 's' argument of one user type.
 *
 * Async-signal-safe, never blocks, as tracebuf_ev_emit().
 * Return: 0; -ENOSPC (lost and counted); -EINVAL for @nargs out of
 * range or NULL @args with @nargs > 0.
 */
int tracebuf_ev_span(struct tracebuf_ev *ev, uint32_t name, uint64_t start,
		     const uint64_t *args, unsigned int nargs);

/**
 * tracebuf_ev_span_of() - emit a span of thread @tid: something that
 * began at @start and ended at @end (tracebuf_ticks() then), named by the
 * string @name (an id from tracebuf_ev_string() of this pair), with the
 * stack of @n PCs (innermost first; interned in this pair's generation;
 * @n 0: no stack).  For a writer that learns of a span after it ended,
 * on another thread (a profiler's reader: a lock wait it was told of):
 * decoders see it on @tid from @start to @end (struct tracedec_event's
 * thread, time and duration), not on the emitting thread now; an @end
 * not after @start is a span of length 0 at @end.  `profring-trace json`
 * draws it as a slice on @tid's track and `summary` totals its time per
 * name, as tracebuf_ev_span()'s.
 *
 * Async-signal-safe, never blocks, as tracebuf_ev_emit().
 * Return: 0; -ENOSPC (lost and counted); -EINVAL for NULL @pcs with
 * @n > 0.
 */
int tracebuf_ev_span_of(struct tracebuf_ev *ev, uint32_t name, uint64_t start,
			uint64_t end, uint64_t tid, const uintptr_t *pcs,
			size_t n);

/**
 * tracebuf_span() - tracebuf_begin(), the id of @name, tracebuf_ev_span()
 * and tracebuf_end() in one call.
 * Return: as tracebuf_begin() and tracebuf_ev_span().
 */
int tracebuf_span(struct tracebuf *t, const char *name, uint64_t start,
		  const uint64_t *args, unsigned int nargs);

/**
 * tracebuf_ev_emit_bytes() - emit an event of @type whose argument is
 * the @len bytes at @data (0 ... TRACEBUF_MAX_PAYLOAD).
 *
 * Return: as tracebuf_ev_emit(); -EINVAL also for @len out of range, or
 * NULL @data with @len > 0.
 */
int tracebuf_ev_emit_bytes(struct tracebuf_ev *ev, unsigned int type,
			   const void *data, size_t len);

/*
 * Intern a string: its id, 0 for a NULL @s or on loss.  At most its first
 * TRACEBUF_MAX_STRING bytes are kept.
 */
uint32_t tracebuf_ev_string(struct tracebuf_ev *ev, const char *s);

/* Intern a stack: its id, 0 for an empty stack or on loss. */
uint32_t tracebuf_ev_stack(struct tracebuf_ev *ev, const uintptr_t *pcs,
			   size_t n);

/**
 * tracebuf_ev_mem_alloc() - the object at @addr, of @size bytes, was
 * allocated at the stack of @n PCs (innermost first; @n 0: none).  Call it
 * before anyone else can have the object (before the allocator returns
 * it), so that its free comes after.  Records it in the tracer's memory
 * table and emits an allocation event; every later generation starts
 * with an "exists" event for it, until tracebuf_ev_mem_free().  An
 * object still in the table at @addr (its free was never seen) is freed
 * first, with its event.  Async-signal-safe, lock-free: the table is
 * open addressing with atomic slots; a probe looks at no more than 64.
 *
 * Return: 0; -ENOSPC: lost and counted (no buffer, or no free slot in
 * reach of @addr: also counted in tracebuf_stats()'s mem_full), and the
 * object is not in the table; -EOPNOTSUPP if the tracer has no memory
 * table (mem_objects 0); -EINVAL for an @addr below mem_min_addr, not
 * a multiple of mem_align from it, or below 2, or NULL @pcs with @n > 0.
 */
int tracebuf_ev_mem_alloc(struct tracebuf_ev *ev, uintptr_t addr, size_t size,
			  const uintptr_t *pcs, size_t n);

/**
 * tracebuf_ev_mem_free() - the object at @addr is about to be freed (call
 * it before the allocator may hand @addr out again).  Removes it from the
 * memory table and emits a free event (preceded by its "exists" event if
 * this generation's snapshot had not reached it yet).  Freeing one
 * address from two threads at once is a double free of the caller's.
 * Async-signal-safe, lock-free.
 *
 * Return: 0; -ENOENT if no object at @addr is in the table (nothing is
 * emitted: a free of an object the tracer never took); -ENOSPC (the
 * object left the table but its event was lost, and counted);
 * -EOPNOTSUPP, -EINVAL as tracebuf_ev_mem_alloc().
 */
int tracebuf_ev_mem_free(struct tracebuf_ev *ev, uintptr_t addr);

/**
 * tracebuf_mem_free_all() - free every object in the memory table, each
 * with its free event (say, the process whose addresses they were has
 * exec'd).  Objects allocated meanwhile by other threads may or may not
 * be freed.  Lock-free; time in proportion to the table's slots.
 *
 * Return: the objects freed (their events lost are counted as usual);
 * -EOPNOTSUPP without a memory table; -ESHUTDOWN, -ENOSPC, -EINVAL as
 * tracebuf_begin().
 */
long tracebuf_mem_free_all(struct tracebuf *t);

/* tracebuf_begin() + tracebuf_ev_mem_alloc() + tracebuf_end(). */
int tracebuf_mem_alloc(struct tracebuf *t, uintptr_t addr, size_t size,
		       const uintptr_t *pcs, size_t n);

/* tracebuf_begin() + tracebuf_ev_mem_free() + tracebuf_end(). */
int tracebuf_mem_free(struct tracebuf *t, uintptr_t addr);

/*
 * tracebuf_begin() + tracebuf_ev_emit() + tracebuf_end().  Return: the
 * first error of the two, or 0.  In C on x86-64 with GCC or Clang and
 * optimization, a call written tracebuf_emit(...) runs its fast path
 * inline and calls this only when that declines; same protocol, same
 * guarantees (<profring/tracebuf_inline.h>, which also says what an old
 * binary sees).  (tracebuf_emit)(...) always calls the library.
 */
int tracebuf_emit(struct tracebuf *t, unsigned int type, const uint64_t *args,
		  unsigned int nargs);

/**
 * tracebuf_name_type() - give event @type a name and an argument spec for
 * decoders: one letter per argument, 'u' number, 's' string id, 'k' stack
 * id, 't' ticks, 'b' for a byte payload.  Emitted with every generation
 * (also before start: the first generation carries it).  Not signal-safe.
 *
 * Return: 0; -EINVAL for a NULL pointer, a @type out of range, a name of
 * more than TRACEBUF_MAX_TYPE_NAME bytes, a spec of more than
 * TRACEBUF_MAX_ARGS letters or with another letter; -ENOMEM.
 */
int tracebuf_name_type(struct tracebuf *t, unsigned int type, const char *name,
		       const char *spec);

/**
 * tracebuf_advance() - close the current generation (see above).  Also
 * moves the CPU samples waiting in the tracer's profbuf into the closing
 * generation.  Not signal-safe; advances are serialized.
 *
 * Return: 0; -ESHUTDOWN if the tracer is not running (not yet started, or
 * stopped); -EINVAL if @t is NULL; -ENOMEM (the generation's tables
 * could not be emitted: the stream says so in its end record; the next
 * generation has started all the same).
 */
int tracebuf_advance(struct tracebuf *t);

/**
 * tracebuf_cpu_profbuf() - the profbuf a SIGPROF handler writes CPU samples
 * to: header { thread id, sample count } (hdrsize 2), time = ring ticks
 * (or any monotonic count the reader understands), stack = the PCs; the
 * tag is not used (pass NULL).  NULL if the tracer was created without
 * one.  Samples written before tracebuf_start() wait in it and go into
 * the first generation; each generation's close (tracebuf_advance(),
 * tracebuf_stop()) moves what is there into it.  tracebuf_stop() closes
 * it first: a sample written before stop is in the last generation, one
 * written after is refused (profbuf_write() returns -ESHUTDOWN), never lost
 * silently.
 */
struct profbuf *tracebuf_cpu_profbuf(struct tracebuf *t);

/* The tick count events are stamped with (for CPU sample records). */
uint64_t tracebuf_ticks(void);

/**
 * tracebuf_read() - the next piece of the stream: the stream header first,
 * then each flushed batch and generation record in order; @c->eof once the
 * tracer is stopped and everything has been read, then on every later
 * call.  PROFBUF_BLOCKING waits for a piece (or EOF); PROFBUF_NONBLOCKING
 * returns at once, possibly with nothing (@c->len 0, @c->eof false).  A
 * piece stays valid until the next successful call, which gives it back.
 *
 * One read at a time, from any thread: a call made while another thread's
 * read is in progress returns -EBUSY at once and leaves the reader's
 * state alone.  Not signal-safe.
 *
 * Return: 0; -EBUSY (another read is in progress; @c is left untouched);
 * -EINVAL if @t or @c is NULL.
 */
int tracebuf_read(struct tracebuf *t, enum profbuf_mode mode,
		  struct tracebuf_chunk *c);

void tracebuf_stats(struct tracebuf *t, struct tracebuf_stats *s);

#ifdef __cplusplus
}
#endif

/* tracebuf_emit()'s inline fast path, and what an old binary sees. */
#include <profring/tracebuf_inline.h>

#endif /* PROFRING_TRACEBUF_H */
