/* SPDX-License-Identifier: MIT */
/*
 * profbuf/profbuf_impl.h - the layout of a profbuf, shared by the protocol
 * (profbuf.c) and the life cycle (layout.c).
 *
 * A profbuf is one block: this struct, then the data ring, the tag ring,
 * the commit stamps and the reader's overflow record, each found at an
 * offset from the struct (no pointers), so that the same block works
 * mapped at any address in any number of processes
 * (profbuf_shared_init()).  A private buffer (profbuf_new()) is the same
 * block in anonymous memory.
 *
 * Internal: never installed.
 */
#ifndef PROFRING_PROFBUF_IMPL_H
#define PROFRING_PROFBUF_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <profring/profbuf.h>

#include "ring/compiler.h"
#include "ring/pindex.h"

#define PB_SLEEPING RING_PINDEX_FLAG_A
#define PB_EXTRA RING_PINDEX_FLAG_B
/* Tag-count distance of a sealed w from r: more than any live ring. */
#define PB_SEAL_DISTANCE ((uint32_t)1 << 29)

#define OVF_COUNT_MASK ((uint64_t)UINT32_MAX)
#define OVF_BUSY ((uint64_t)1 << 32)
#define OVF_SEALED ((uint64_t)1 << 33)
#define OVF_CLOSED ((uint64_t)1 << 34)
#define OVF_GEN_SHIFT 35

/*
 * struct pb_rstate - what a reader keeps between reads.
 * @eof_returned: EOF was returned; every later read returns it.
 * @r_next:       where the run returned last ends.
 * @r_given:      what the reader last stored in r (given back).
 * @sleeps:       SLEEPING set by us (for tests).
 * @withdrawn:    SLEEPING cleared by us, not a waker.
 * @last_time:    of the last record returned.
 * @dead_skipped: records of dead writers skipped.
 * @stalled_unowned: waiting on a record with no owner.
 */
struct pb_rstate {
	bool eof_returned;
	uint64_t r_next;
	uint64_t r_given;
	uint64_t sleeps;
	uint64_t withdrawn;
	uint64_t last_time;
	uint64_t dead_skipped;
	uint32_t stalled_unowned;
};

struct profbuf {
	/* Reserved by writers; SLEEPING/EXTRA also moved by the reader. */
	ring_cacheline_aligned _Atomic uint64_t w;
	/* Given back by the reader. */
	ring_cacheline_aligned _Atomic uint64_t r;
	/*
	 * r moved on by the ring's sizes (pb_limit()): where the room the
	 * reader gave back ends.  Stored after r; only the inline write path
	 * (profbuf__write_fast()) reads it.
	 */
	_Atomic uint64_t limit;
	/* The pending overflow record, and CLOSED. */
	ring_cacheline_aligned _Atomic uint64_t ovf;
	_Atomic uint64_t ovf_time;
	/* Shared buffers: who holds BUSY (an owner stamp), or 0. */
	_Atomic uint32_t busy_owner;
	/* Read-mostly. */
	ring_cacheline_aligned _Atomic uint32_t wake_watermark;
	uint32_t hdrsize;
	uint32_t data_len; /* power of two */
	uint32_t tag_len; /* power of two */
	uint32_t shared; /* laid out by profbuf_shared_init() */
	/*
	 * hdrsize in a private buffer, 0 in a shared one: inline writers
	 * (struct profbuf_layout_v1) write only where it is nonzero.
	 */
	uint32_t inline_hdrsize;
	/* Where the rings are, in bytes from the struct. */
	uint64_t data_off;
	uint64_t tags_off;
	uint64_t stamps_off;
	uint64_t ovf_rec_off;
	uint64_t size; /* of the whole block */
	uint64_t magic;
	uint32_t version;
	/* Futex word the reader sleeps on; bumped by the one waker. */
	ring_cacheline_aligned _Atomic uint32_t wake_seq;
	/* Reader-owned (a plain handle's reader; see struct pb_view). */
	_Atomic uint32_t reading;
	struct pb_rstate rs;
};

/*
 * The inline write path (<profring/profbuf_inline.h>) reads these fields
 * and constants as struct profbuf_layout_v1 and its PROFBUF__ names say:
 * the frozen ABI, checked here.
 */
#define PB_LAYOUT_AT(f, g)                                                  \
	_Static_assert(                                                     \
		offsetof(struct profbuf, f) ==                              \
				offsetof(struct profbuf_layout_v1, g) &&    \
			sizeof(((struct profbuf *)0)->f) ==                 \
				sizeof(((struct profbuf_layout_v1 *)0)->g), \
		"inline layout v1: " #f)
PB_LAYOUT_AT(w, w);
PB_LAYOUT_AT(r, r);
PB_LAYOUT_AT(limit, limit);
PB_LAYOUT_AT(ovf, ovf);
PB_LAYOUT_AT(hdrsize, hdrsize);
PB_LAYOUT_AT(data_len, data_len);
PB_LAYOUT_AT(tag_len, tag_len);
PB_LAYOUT_AT(shared, shared);
PB_LAYOUT_AT(inline_hdrsize, inline_hdrsize);
PB_LAYOUT_AT(data_off, data_off);
PB_LAYOUT_AT(tags_off, tags_off);
PB_LAYOUT_AT(stamps_off, stamps_off);
#undef PB_LAYOUT_AT
_Static_assert(PB_SLEEPING == PROFBUF__W_SLEEPING &&
		       RING_PINDEX_FLAGS == PROFBUF__W_FLAGS &&
		       RING_PINDEX_TAG_SHIFT == PROFBUF__W_TAG_SHIFT &&
		       RING_PINDEX_MAX_ENTRIES == PROFBUF__MAX_WORDS,
	       "inline layout v1: w");

/*
 * Commit stamps (one per tag slot): 0 free, 1 committed; in a shared
 * buffer, PB_STAMP_OWNER | pid while that process writes the record
 * (its length word already stored).
 */
#define PB_STAMP_FREE 0u
#define PB_STAMP_COMMITTED 1u
#define PB_STAMP_OWNER 0x80000000u
/*
 * A pad marker (profbuf_commit() of fewer stack words than reserved):
 * stored in the first unused word, it says how many words the reader
 * steps over to the next record (which may then start with a rewind
 * marker).  No record length has bit 63 set.
 */
#define PB_PAD_MARK ((uint64_t)1 << 63)
_Static_assert(PB_STAMP_COMMITTED == PROFBUF__STAMP_COMMITTED &&
		       (OVF_CLOSED | OVF_COUNT_MASK) == PROFBUF__OVF_PENDING,
	       "inline layout v1: stamps, ovf");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
		       sizeof(const void *) == sizeof(uint64_t) &&
		       PB_SEAL_DISTANCE == (uint32_t)1 << 29,
	       "inline layout v1: tag and stamp sizes, the seal's distance");

/* The overflow word (see profbuf.c, Overflow). */
static inline uint32_t ovf_count(uint64_t o)
{
	return (uint32_t)(o & OVF_COUNT_MASK);
}

/* The ovf value with a zero count, a new generation, BUSY clear. */
static inline uint64_t ovf_next_gen(uint64_t o)
{
	return (((o >> OVF_GEN_SHIFT) + 1) << OVF_GEN_SHIFT) | (o & OVF_CLOSED);
}

static inline uint64_t ovf_add(uint64_t o, uint32_t n)
{
	uint64_t c = (uint64_t)ovf_count(o) + n;

	if (c > UINT32_MAX) /* sticky at 2^32 - 1, as in Go */
		c = UINT32_MAX;
	return (o & ~OVF_COUNT_MASK) | c;
}

#define PB_MAGIC UINT64_C(0x3166756270726f66) /* "profbuf1" */
#define PB_VERSION 1u

static inline uint64_t *pb_data(const struct profbuf *b)
{
	return (uint64_t *)((char *)b + b->data_off);
}

static inline const void **pb_tags(const struct profbuf *b)
{
	return (const void **)((char *)b + b->tags_off);
}

static inline _Atomic uint32_t *pb_stamps(const struct profbuf *b)
{
	return (_Atomic uint32_t *)((char *)b + b->stamps_off);
}

/* The limit for r = @r: @r's counts moved on by the ring's sizes. */
static inline uint64_t pb_limit(const struct profbuf *b, uint64_t r)
{
	return ring_pindex_add(r & ~RING_PINDEX_FLAGS, b->data_len, b->tag_len);
}

static inline uint64_t *pb_ovf_rec(const struct profbuf *b)
{
	return (uint64_t *)((char *)b + b->ovf_rec_off);
}

/*
 * struct pb_guard - a guarded reader's own copy of each run
 * (profbuf_reader_attach(), read.c).
 * @copy, @tag_copy: room for a whole ring's words and tags.
 * @corrupt:         what was found corrupted first, or NULL.
 */
struct pb_guard {
	uint64_t *copy;
	const void **tag_copy;
	const char *corrupt;
};

/*
 * struct pb_view - what the reader works on (read.c): where the rings
 * are and their sizes, the block's words that writers share, and the
 * reader's state.
 * @b:      the block: of it the reader uses only w, r, limit, ovf,
 *          ovf_time, busy_owner and wake_seq.
 * @data, @tags, @stamps: the rings.
 * @ovf_rec: where the overflow record is made.
 * @hdrsize, @data_len, @tag_len, @shared: the geometry.
 * @st:     the reader's state.
 * @guard:  NULL for a plain handle; a guarded reader's copy otherwise.
 */
struct pb_view {
	struct profbuf *b;
	uint64_t *data;
	const void **tags;
	_Atomic uint32_t *stamps;
	uint64_t *ovf_rec;
	uint32_t hdrsize, data_len, tag_len;
	bool shared;
	struct pb_rstate *st;
	struct pb_guard *guard;
};

/* Where everything goes for one buffer's sizes (layout.c's plan()). */
struct pb_layout {
	uint32_t hdrsize, data_len, tag_len;
	uint64_t data_off, tags_off, stamps_off, ovf_rec_off, size;
};

/*
 * pb_check_layout() - is @mem (@size bytes) a shared buffer of this
 * version whose geometry is one layout.c lays out?  @l gets that
 * geometry, read once.
 * Return: 0, -EINVAL or -EPROTO.
 */
int pb_check_layout(const void *mem, size_t size, struct pb_layout *l);

/*
 * pb_corrupt() - a guarded reader found the ring corrupted (@what, a
 * static string; the first one stays): return -EIO (read.c).
 */
int pb_corrupt(struct pb_view *v, const char *what);

/* A blocking read of @v for at most @timeout_ns (read.c). */
int pb_read_view_timeout(struct pb_view *v, uint64_t timeout_ns,
			 struct profbuf_read *r);

/* A write at time @now was discarded: count it (profbuf.c). */
int pb_count_loss(struct profbuf *b, int64_t now);

/* After fork, in the child: forget the cached owner (profbuf.c). */
void profbuf_shared_fork_child(void);

#endif /* PROFRING_PROFBUF_IMPL_H */
