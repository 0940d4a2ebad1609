/* SPDX-License-Identifier: MIT */
/*
 * <profring/tracedec.h> - decode and validate a profring trace stream
 * (tracebuf/FORMAT.md).
 *
 * tracedec_decode() walks a whole stream held in memory and calls a
 * visitor for every event, string, stack, type name, frequency, lost count
 * and generation end, in stream order.  It checks everything the format
 * fixes - magic and version, record kinds and lengths, every varint,
 * argument counts, payload sizes, ids, generation order, the batch count of
 * every generation - and stops at the first violation with its offset.  It
 * allocates nothing and its stack use is bounded, whatever the input.
 * Resolving ids (a stack id of an event to its PCs) is left to the
 * visitor: the tables of a generation come after its events.
 */
#ifndef PROFRING_TRACEDEC_H
#define PROFRING_TRACEDEC_H

#include <stddef.h>
#include <stdint.h>

#include <profring/tracebuf.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tracedec_event {
	uint64_t gen, tid, batch_seq;
	uint64_t ticks; /* absolute: batch base + deltas */
	unsigned int level, type, nargs;
	uint64_t args[TRACEBUF_MAX_ARGS];
	const uint8_t *bytes; /* payload events: nargs == 0 */
	size_t nbytes;
};

/* Every callback may be NULL; a nonzero return stops the walk with it. */
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
};

struct tracedec_error {
	/*
	 * Byte offset of the problem in the stream; the stream's length when
	 * it ends where more was due (a truncated record).
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

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_TRACEDEC_H */
