// SPDX-License-Identifier: MIT
/*
 * profbuf/guard.c - the guarded reader (profbuf_reader_attach()): a reader
 * of a shared buffer that survives its writers' memory.
 *
 * The rule is the kernel's for user memory and perf's for data_tail:
 * what another process can write is input, never state.  The reader
 * reads the geometry once, checks it (pb_check_layout()) and keeps it,
 * with its position, EOF and overflow record, in memory of its own (the
 * view's @st and @ovf_rec point there).  Reading then runs the protocol
 * of read.c on that view, which, seeing @guard set, checks each claim of
 * the block: a write index further from the read position than the ring
 * has slots, or a record length that does not fit, is corruption
 * (pb_corrupt()); each run is copied into @guard's buffers and walked
 * again there, so that the caller parses words no writer can change.  The
 * first corruption is sticky: every later read returns -EIO, and the
 * runs returned before stay what they were.  The block's geometry is
 * compared with ours before each read (writers follow it: one that
 * changed means writers stopped, or write elsewhere).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <profring/profbuf.h>

#include "ring/compiler.h"
#include "ring/pindex.h"
#include "profbuf/profbuf_impl.h"

/*
 * struct profbuf_reader - a reader of a shared buffer in its own memory.
 * @v:       the view, built once at attach from the checked geometry.
 * @st:      the reader's state (@v.st points here).
 * @g:       the copy of each run (@v.guard points here).
 * @reading: one read at a time on this handle.
 * @ovf_rec: the overflow record it hands out.
 * @l:       the geometry it attached to.
 */
struct profbuf_reader {
	struct pb_view v;
	struct pb_rstate st;
	struct pb_guard g;
	_Atomic uint32_t reading;
	uint64_t *ovf_rec;
	struct pb_layout l;
};

/*
 * The block's geometry is still the one we attached to?  We never use
 * it, but the writers do: one that changed means they stopped writing
 * (prof/agent/ring_guard.h) or write elsewhere, and the reading ends here.
 */
static bool geometry_kept(const struct profbuf_reader *rd)
{
	const struct profbuf *b = rd->v.b;
	const struct pb_layout *l = &rd->l;

	return b->hdrsize == l->hdrsize && b->data_len == l->data_len &&
	       b->tag_len == l->tag_len && b->data_off == l->data_off &&
	       b->tags_off == l->tags_off && b->stamps_off == l->stamps_off &&
	       b->ovf_rec_off == l->ovf_rec_off && b->size == l->size;
}

RING_API struct profbuf_reader *profbuf_reader_attach(void *mem, size_t size)
{
	struct profbuf_reader *rd;
	struct pb_layout l;
	struct profbuf *b;
	int err = pb_check_layout(mem, size, &l);

	if (err) {
		errno = -err;
		return NULL;
	}
	b = mem;
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return NULL;
	rd->g.copy = malloc(sizeof(uint64_t) * l.data_len);
	rd->g.tag_copy = malloc(sizeof(void *) * l.tag_len);
	rd->ovf_rec = malloc(sizeof(uint64_t) * (3 + (size_t)l.hdrsize));
	if (!rd->g.copy || !rd->g.tag_copy || !rd->ovf_rec) {
		profbuf_reader_free(rd);
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * Our read position is where the block says writers were given
	 * back room to; it is clamped by the checks of every later read (a
	 * w out of range of it is corruption).  Relaxed: a count, checked.
	 */
	rd->st.r_next = rd->st.r_given =
		atomic_load_explicit(&b->r, memory_order_relaxed) &
		~RING_PINDEX_FLAGS;
	rd->v = (struct pb_view){
		.b = b,
		.data = (uint64_t *)((char *)b + l.data_off),
		.tags = (const void **)((char *)b + l.tags_off),
		.stamps = (_Atomic uint32_t *)((char *)b + l.stamps_off),
		.ovf_rec = rd->ovf_rec,
		.hdrsize = l.hdrsize,
		.data_len = l.data_len,
		.tag_len = l.tag_len,
		.shared = true,
		.st = &rd->st,
		.guard = &rd->g,
	};
	rd->l = l;
	return rd;
}

RING_API int profbuf_reader_read(struct profbuf_reader *rd, uint64_t timeout_ns,
				 struct profbuf_read *r)
{
	int rc;

	if (!rd || !r)
		return -EINVAL;
	/* Acquire/release: as in read_common(), for this handle's state. */
	if (atomic_exchange_explicit(&rd->reading, 1, memory_order_acquire))
		return -EBUSY;
	if (!rd->g.corrupt && !geometry_kept(rd))
		pb_corrupt(&rd->v, "the ring's geometry was overwritten");
	rc = pb_read_view_timeout(&rd->v, timeout_ns, r);
	atomic_store_explicit(&rd->reading, 0, memory_order_release);
	return rc;
}

RING_API int profbuf_reader_close(struct profbuf_reader *rd)
{
	if (!rd)
		return -EINVAL;
	return profbuf_close(rd->v.b);
}

RING_API int profbuf_reader_stats(struct profbuf_reader *rd,
				  struct profbuf_reader_stats *st)
{
	uint64_t bw;
	int32_t pending;

	if (!rd || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->dead_skipped = rd->st.dead_skipped;
	st->stalled_unowned = rd->st.stalled_unowned;
	st->corrupt = rd->g.corrupt;
	/* Relaxed: a count to report, checked against the ring's size. */
	bw = atomic_load_explicit(&rd->v.b->w, memory_order_relaxed);
	pending = ring_count_sub(ring_pindex_tag(bw),
				 ring_pindex_tag(rd->st.r_next));
	if (!rd->st.eof_returned && pending > 0 &&
	    (uint32_t)pending <= rd->v.tag_len)
		st->unread = (uint32_t)pending;
	return 0;
}

RING_API void profbuf_reader_free(struct profbuf_reader *rd)
{
	if (!rd)
		return;
	free(rd->g.copy);
	free(rd->g.tag_copy);
	free(rd->ovf_rec);
	free(rd);
}
