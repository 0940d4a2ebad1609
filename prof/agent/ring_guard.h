/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/ring_guard.h - the agent's writes to the launcher's ring, guarded
 * against the program's wild writes.
 *
 * Under `profring-prof record` the ring lives in memory the program can
 * write (shm.h).  A wild write of the program being debugged may land on
 * the ring's geometry (its sizes and offsets), which every write follows:
 * unchecked, the next sample would make our signal handler, or our exit
 * code, fault, and the program's exit status would change.  So the agent
 * keeps the geometry it attached to (prof_shm_attach() takes it) and
 * every write compares the ring's with it first: a handful of loads from
 * the cache line the write reads anyway, about a nanosecond.  A ring
 * whose geometry changed is written no more: each write returns -EIO and
 * is counted refused by its caller, as a full ring's would be; the
 * launcher, which checks everything it reads on its own side, says what
 * happened.  Words other than the geometry (indices, stamps, records)
 * are bounded by the geometry's masks, so a write never leaves the ring.
 *
 * In-process buffers are the process's own memory: not guarded.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_RING_GUARD_H
#define PROFRING_PROF_RING_GUARD_H

#include <profring/profbuf.h>

#include <errno.h>
#include <stdbool.h>

#include "profbuf/profbuf_impl.h"

/*
 * struct prof_ring_snap - the shared ring this process attached to, and
 * its geometry then (shm.c).  @b is NULL before attach.
 */
struct prof_ring_snap {
	const struct profbuf *b;
	struct pb_layout l;
};

extern struct prof_ring_snap prof_ring_snap;

/* Async-signal-safe: plain loads and compares. */
static inline bool prof_ring_intact(const struct profbuf *b)
{
	const struct pb_layout *l = &prof_ring_snap.l;

	if (b != prof_ring_snap.b)
		return true;
	return b->hdrsize == l->hdrsize && b->data_len == l->data_len &&
	       b->tag_len == l->tag_len && b->shared && !b->inline_hdrsize &&
	       b->data_off == l->data_off && b->tags_off == l->tags_off &&
	       b->stamps_off == l->stamps_off &&
	       b->ovf_rec_off == l->ovf_rec_off;
}

/* profbuf_write(), or -EIO for a ring whose geometry was overwritten. */
static inline int prof_ring_write(struct profbuf *b, const void *tag,
				  int64_t now, const uint64_t *hdr, size_t nhdr,
				  const uintptr_t *stk, size_t nstk)
{
	if (__builtin_expect(!prof_ring_intact(b), 0))
		return -EIO;
	return profbuf_write(b, tag, now, hdr, nhdr, stk, nstk);
}

/*
 * profbuf_reserve(), or -EIO for a ring whose geometry was overwritten
 * (@rv then holds nothing to commit).  The reservation's slots are
 * computed from the geometry just checked, so the caller's stores into
 * them, and prof_ring_commit(), stay inside the ring whatever the
 * program writes meanwhile.
 */
static inline int prof_ring_reserve(struct profbuf *b, const void *tag,
				    int64_t now, const uint64_t *hdr,
				    size_t nhdr, size_t nstk,
				    struct profbuf_resv *rv)
{
	if (__builtin_expect(!prof_ring_intact(b), 0)) {
		rv->stk = NULL;
		rv->nstk = 0;
		return -EIO;
	}
	return profbuf_reserve(b, tag, now, hdr, nhdr, nstk, rv);
}

/*
 * profbuf_commit() of a prof_ring_reserve(): always, even if the geometry
 * changed since (the reader waits for every reservation).  It writes only
 * the reservation's own words, its stamp and the write index, all placed
 * by the geometry checked at the reservation.
 */
static inline int prof_ring_commit(struct profbuf_resv *rv, size_t nstk)
{
	return profbuf_commit(rv, nstk);
}

/* profbuf_write_wait(), or -EIO for a ring whose geometry was overwritten. */
static inline int prof_ring_write_wait(struct profbuf *b, const void *tag,
				       int64_t now, const uint64_t *hdr,
				       size_t nhdr, const uintptr_t *stk,
				       size_t nstk, uint64_t timeout_ns)
{
	if (__builtin_expect(!prof_ring_intact(b), 0))
		return -EIO;
	return profbuf_write_wait(b, tag, now, hdr, nhdr, stk, nstk,
				  timeout_ns);
}

#endif /* PROFRING_PROF_RING_GUARD_H */
