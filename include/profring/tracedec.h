/* SPDX-License-Identifier: MIT */
/*
 * <profring/tracedec.h> - decode and validate a profring trace stream
 * (tracebuf/FORMAT.md).
 *
 * tracedec_decode() walks a whole stream held in memory (and
 * tracedec_stream_feed() one fed in pieces, see below) and calls a
 * visitor for every event, string, stack, type name, frequency, lost count
 * and generation end, in stream order.  It checks everything the format
 * fixes - magic and version, record kinds and lengths, every varint,
 * argument counts, payload sizes, ids, generation order, the batch count of
 * every generation - and stops at the first violation with its offset.  It
 * allocates nothing and its stack use is bounded, whatever the input.
 * Resolving ids (a stack id of an event to its PCs) is left to the
 * visitor: the tables of a generation come after its events.  It reads
 * format versions 1, 2 and 3 (2 adds memory events and records, 3 spans).  That a
 * free is of an object the generation knows (allocated in it, or in its
 * snapshot) takes a table per generation: tracedec_mem_check() below
 * checks it, and allocates.
 *
 * This header stands alone: a decoder needs nothing of the writer's
 * <profring/tracebuf.h>.  The limits below are the stream format's; every
 * value the decoder hands to a visitor is within them.
 */
#ifndef PROFRING_TRACEDEC_H
#define PROFRING_TRACEDEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRACEDEC_MAX_ARGS 6 /* arguments of an event (nargs from 0) */
#define TRACEDEC_MAX_TYPE 31 /* event types, from 1 */
#define TRACEDEC_MAX_PAYLOAD 1024 /* bytes of an event's payload */
#define TRACEDEC_MAX_STRING 1000 /* bytes of a string */
#define TRACEDEC_MAX_FRAMES 128 /* frames of a stack (from 1) */
#define TRACEDEC_MAX_TYPE_NAME 255 /* bytes of a type name */

struct tracedec_event {
	uint64_t gen, tid, batch_seq;
	uint64_t ticks; /* absolute: batch base + deltas */
	unsigned int level; /* 0 thread, 1 nested signal handler */
	unsigned int type, nargs;
	uint64_t args[TRACEDEC_MAX_ARGS];
	const uint8_t *bytes; /* payload events: nargs == 0 */
	size_t nbytes;
	/*
	 * The stream's format version (1, 2 or 3).  Types 3-5 are memory
	 * events (<profring/tracebuf.h>) only from version 2 on, type 6 a
	 * span only from version 3 on, as type 7 (a span of a thread);
	 * the decoder has checked their argument counts then.
	 */
	unsigned int version;
	/*
	 * The thread the event is about and when it happened.  A CPU
	 * sample (type 1 with 4 arguments) is written into the trace by
	 * whichever thread moved it there, later: @tid and @ticks are that
	 * thread's and that moment's, while @thread and @time are the
	 * sampled thread and the sample's time (its arguments 1 and 0).
	 * A span (type 6, version 3) starts at @time (its argument 1) and
	 * lasts @duration ticks, to @ticks (0 if its start is not before
	 * @ticks: then @time is @ticks).  A span of a thread (type 7,
	 * version 3) is about its argument 2, from its argument 1 to its
	 * argument 3 (an end not after its start: @time is the end,
	 * @duration 0).  For every other event, @tid and @ticks, and
	 * @duration 0.  Draw and count events by these.
	 */
	uint64_t thread, time, duration;
};

/*
 * Every callback may be NULL; a nonzero return stops the walk with it.
 * Strings are not NUL-terminated (@len bytes); a type's spec has at most
 * TRACEDEC_MAX_ARGS letters.  Pointers handed to a callback point into
 * the stream buffer, except a stack's PCs: the decoder's own array, valid
 * only during that call.
 */
struct tracedec_visitor {
	int (*event)(void *arg, const struct tracedec_event *ev);
	int (*string)(void *arg, uint64_t gen, uint64_t id, const char *s,
		      size_t len);
	int (*stack)(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		     size_t n);
	int (*type)(void *arg, uint64_t gen, unsigned int type,
		    const char *name, size_t name_len, const char *spec,
		    size_t spec_len);
	int (*freq)(void *arg, uint64_t gen, uint64_t hz);
	int (*lost)(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		    uint64_t count);
	int (*gen_end)(void *arg, uint64_t gen, uint64_t batches,
		       uint64_t flags);
	/*
	 * A generation's memory info (version 2): object id = (address -
	 * @min_addr) / @align; @align and @page_size are powers of two.
	 */
	int (*mem_info)(void *arg, uint64_t gen, uint64_t min_addr,
			uint64_t align, uint64_t page_size);
};

struct tracedec_error {
	/*
	 * Byte offset of the problem in the stream.  When the stream ends
	 * inside a record (a truncated record: its header, or its payload
	 * shorter than its header says), the offset of that record: the
	 * bytes before it are whole records, all valid.  0 when the stream
	 * is shorter than its 16-byte header.
	 */
	size_t offset;
	const char *what; /* a static message */
};

/**
 * tracedec_decode() - walk and validate @len bytes of stream at @buf.
 *
 * Return: 0 when the whole stream is valid (a stream may end after any
 * complete record); -EBADMSG with @err filled in; or the first nonzero
 * value a callback returned.
 */
int tracedec_decode(const uint8_t *buf, size_t len,
		    const struct tracedec_visitor *v, void *arg,
		    struct tracedec_error *err);

/*
 * The incremental form: a stream of any length decoded as it is read, in
 * memory bounded by its longest record (at most 8 + 2^26 bytes), with the
 * same validation, the same errors and the same offsets (from the
 * stream's start) as tracedec_decode().  Not signal-safe.
 *
 *	struct tracedec_stream *s = tracedec_stream_new(&visitor, arg);
 *	size_t have = 0, used;
 *	while ((n = read(fd, buf + have, cap - have)) > 0) {
 *		have += n;
 *		if (tracedec_stream_feed(s, buf, have, &used, &err))
 *			break;			// err.offset: in the stream
 *		memmove(buf, buf + used, have - used);
 *		have -= used;			// a record cut short: kept
 *		// grow buf if have == cap: a record is that long
 *	}
 *	rc = tracedec_stream_end(s, have, &err);	// truncated?
 *	tracedec_stream_free(s);
 *
 * Pointers handed to callbacks point into the piece being fed: valid
 * during the call (and as long as the caller keeps that memory).
 */
struct tracedec_stream;

/* A decoder for one stream, or NULL (out of memory).  @v may be NULL. */
struct tracedec_stream *tracedec_stream_new(const struct tracedec_visitor *v,
					    void *arg);

/**
 * tracedec_stream_feed() - decode the whole records at the start of the
 * @len bytes at @buf, which continue the stream where the bytes consumed
 * so far end (the first piece starts with the stream header).
 * @used: set to the bytes consumed: the header and the whole records.
 *        The rest (a record cut short: at most 8 + 2^26 bytes) must be
 *        fed again at the start of the next piece, followed by more.
 * Return: 0; -EBADMSG with @err filled in (the offset in the stream); the
 * first nonzero value a callback returned; -EINVAL for a NULL @s or
 * @used, or NULL @buf with @len > 0.  After a failure every call returns
 * it again.
 */
int tracedec_stream_feed(struct tracedec_stream *s, const uint8_t *buf,
			 size_t len, size_t *used, struct tracedec_error *err);

/**
 * tracedec_stream_end() - the stream ended, @left bytes after those
 * consumed (what the last feed left).
 * Return: 0 when the stream was whole (tracedec_decode() would have
 * returned 0); -EBADMSG with @err (a stream shorter than its header, or
 * a truncated record, at its offset); an earlier failure again.
 */
int tracedec_stream_end(struct tracedec_stream *s, size_t left,
			struct tracedec_error *err);

/* Free; NULL is a no-op. */
void tracedec_stream_free(struct tracedec_stream *s);

/* What tracedec_mem_check() found in one generation. */
struct tracedec_mem_gen {
	uint64_t gen;
	uint64_t exists, allocs, frees; /* events */
	uint64_t live_objects, live_bytes; /* at the generation's end */
	/* Frees of an id neither allocated in it nor in its snapshot. */
	uint64_t unknown_frees;
	uint64_t first_unknown_id; /* the first such id (valid if any) */
	/* Allocations of an id already live (its free missing). */
	uint64_t double_allocs;
	/*
	 * The snapshot is the live set of the generation before: objects
	 * live at that one's end but not in this snapshot, and the other
	 * way round (both 0 in a stream without losses).
	 */
	uint64_t snapshot_missing, snapshot_extra;
	uint64_t lost; /* events the generation's lost records count */
};

/*
 * Callbacks of tracedec_mem_check(), each may be NULL; a nonzero return
 * stops the walk with it.  @gen: for each generation that has memory
 * events or a memory info record, in order.  @change: a step of the live
 * heap (an object entering or leaving the live set), per generation and
 * then per id, not in time order: @ticks is the event's time, or, for a
 * snapshot's object, the earliest time of the generation's memory events.
 */
struct tracedec_mem_visitor {
	int (*gen)(void *arg, const struct tracedec_mem_gen *g);
	int (*change)(void *arg, uint64_t gen, uint64_t ticks, int64_t bytes,
		      int64_t objects);
};

/**
 * tracedec_mem_check() - replay the memory events of a stream (version 2;
 * a version 1 stream has none) generation by generation.  Within a
 * generation, a snapshot's exists events count as at its start, then
 * allocations and frees in time order (ties in stream order).
 * Allocates memory in proportion to the stream's memory events; not
 * signal-safe.
 *
 * Return: 0; -EBADMSG (the stream does not decode: @err says where);
 * -ENOMEM; or the first nonzero value a callback returned.
 */
int tracedec_mem_check(const uint8_t *buf, size_t len,
		       const struct tracedec_mem_visitor *v, void *arg,
		       struct tracedec_error *err);

/*
 * The incremental form of tracedec_mem_check(), fed as tracedec_stream_*
 * is (same @used contract, same errors and offsets): a generation is
 * replayed, its callbacks called, when its end record is fed (those that
 * never ended, at tracedec_mem_stream_end()), and its events are then
 * forgotten, so memory is in proportion to the memory events of the
 * generations open at once (two, from the library's writer), not of the
 * stream.  Unlike tracedec_mem_check(), which first validates the whole
 * stream, the callbacks of the generations before a bad record have been
 * called when it is found.  Not signal-safe.
 */
struct tracedec_mem_stream;

/* A checker for one stream, or NULL (out of memory).  @v may be NULL. */
struct tracedec_mem_stream *
tracedec_mem_stream_new(const struct tracedec_mem_visitor *v, void *arg);

/* As tracedec_stream_feed(); also -ENOMEM. */
int tracedec_mem_stream_feed(struct tracedec_mem_stream *s, const uint8_t *buf,
			     size_t len, size_t *used,
			     struct tracedec_error *err);

/* As tracedec_stream_end(), then the generations that never ended. */
int tracedec_mem_stream_end(struct tracedec_mem_stream *s, size_t left,
			    struct tracedec_error *err);

/* Free; NULL is a no-op. */
void tracedec_mem_stream_free(struct tracedec_mem_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_TRACEDEC_H */
