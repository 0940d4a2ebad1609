// SPDX-License-Identifier: MIT
/*
 * profbuf/layout.c - a profbuf's life cycle: one block laid out as
 * profbuf_impl.h says, in anonymous memory (profbuf_new()) or in memory
 * the caller shares between processes (profbuf_shared_init(),
 * profbuf_shared_attach()).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <profring/profbuf.h>

#include "profbuf/profbuf_impl.h"
#include "profbuf/profbuf_testing.h"
#include "ring/region.h"

static uint32_t round_pow2(size_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static uint64_t align_up(uint64_t n, uint64_t a)
{
	return (n + a - 1) & ~(a - 1);
}

static int plan(size_t hdrsize, size_t bufwords, size_t ntags,
		struct pb_layout *l)
{
	if (hdrsize == 0 || hdrsize >= RING_PINDEX_MAX_ENTRIES ||
	    bufwords >= RING_PINDEX_MAX_ENTRIES ||
	    ntags >= RING_PINDEX_MAX_ENTRIES)
		return -EINVAL;
	if (bufwords < 3 + hdrsize)
		bufwords = 3 + hdrsize;
	l->hdrsize = (uint32_t)hdrsize;
	l->data_len = round_pow2(bufwords);
	l->tag_len = round_pow2(ntags);
	if (l->data_len >= RING_PINDEX_MAX_ENTRIES ||
	    l->tag_len >= RING_PINDEX_MAX_ENTRIES)
		return -EINVAL;
	l->data_off = align_up(sizeof(struct profbuf), RING_CACHELINE);
	l->tags_off = align_up(l->data_off + 8 * (uint64_t)l->data_len,
			       RING_CACHELINE);
	l->stamps_off = align_up(l->tags_off + 8 * (uint64_t)l->tag_len,
				 RING_CACHELINE);
	l->ovf_rec_off = align_up(l->stamps_off + 4 * (uint64_t)l->tag_len,
				  RING_CACHELINE);
	l->size = l->ovf_rec_off + 8 * (3 + (uint64_t)hdrsize);
	return 0;
}

/* Lay a new buffer out in zeroed memory @mem. */
static struct profbuf *lay_out(void *mem, const struct pb_layout *l,
			       bool shared, uint32_t data_count,
			       uint32_t tag_count)
{
	struct profbuf *b = mem;
	uint64_t start = ring_pindex_make(data_count, tag_count);

	b->hdrsize = l->hdrsize;
	b->data_len = l->data_len;
	b->tag_len = l->tag_len;
	b->shared = shared;
	b->inline_hdrsize = shared ? 0 : l->hdrsize;
	b->data_off = l->data_off;
	b->tags_off = l->tags_off;
	b->stamps_off = l->stamps_off;
	b->ovf_rec_off = l->ovf_rec_off;
	b->size = l->size;
	b->magic = PB_MAGIC;
	b->version = PB_VERSION;
	atomic_init(&b->w, start);
	atomic_init(&b->r, start);
	atomic_init(&b->limit, pb_limit(b, start));
	b->rs.r_next = start;
	b->rs.r_given = start;
	return b;
}

struct profbuf *profbuf_new_at(size_t hdrsize, size_t bufwords, size_t ntags,
			       uint32_t data_count, uint32_t tag_count)
{
	struct pb_layout l;
	void *mem;
	int err = plan(hdrsize, bufwords, ntags, &l);

	if (err) {
		errno = -err;
		return NULL;
	}
	/* Zeroed, and committed only as the ring is used. */
	mem = ring_map_zeroed(l.size);
	if (!mem)
		return NULL;
	return lay_out(mem, &l, false, data_count, tag_count);
}

RING_API struct profbuf *profbuf_new(size_t hdrsize, size_t bufwords,
				     size_t ntags)
{
	return profbuf_new_at(hdrsize, bufwords, ntags, 0, 0);
}

RING_API void profbuf_free(struct profbuf *b)
{
	if (!b || b->shared)
		return; /* a shared buffer's memory is its caller's */
	munmap(b, b->size);
}

void profbuf_test_counters(struct profbuf *b, struct profbuf_test_counters *c)
{
	c->wakeups = atomic_load_explicit(&b->wake_seq, memory_order_relaxed);
	c->sleeps = b->rs.sleeps;
	c->withdrawn = b->rs.withdrawn;
}

void profbuf_test_close_late(struct profbuf *b)
{
	/* Relaxed: no reader or writer runs meanwhile (profbuf_testing.h). */
	atomic_fetch_and_explicit(&b->ovf, ~OVF_CLOSED, memory_order_relaxed);
	atomic_fetch_or_explicit(&b->w, PB_EXTRA, memory_order_relaxed);
}

/* ---- across processes -------------------------------------------------- */

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void register_fork_child(void)
{
	pthread_atfork(NULL, NULL, profbuf_shared_fork_child);
}

RING_API size_t profbuf_shared_size(size_t hdrsize, size_t bufwords,
				    size_t ntags)
{
	struct pb_layout l;
	int err = plan(hdrsize, bufwords, ntags, &l);

	if (err) {
		errno = -err;
		return 0;
	}
	return (size_t)l.size;
}

RING_API struct profbuf *profbuf_shared_init(void *mem, size_t size,
					     size_t hdrsize, size_t bufwords,
					     size_t ntags)
{
	struct pb_layout l;
	int err = plan(hdrsize, bufwords, ntags, &l);

	if (!err &&
	    (!mem || ((uintptr_t)mem & (RING_CACHELINE - 1)) || size < l.size))
		err = -EINVAL;
	if (err) {
		errno = -err;
		return NULL;
	}
	pthread_once(&fork_once, register_fork_child);
	/*
	 * The struct and the commit stamps must start at zero; the rings are
	 * never read before they are written.  Zeroing only these keeps a
	 * large ring's pages untouched (and uncommitted) until used.
	 */
	memset(mem, 0, (size_t)l.data_off);
	memset((char *)mem + l.stamps_off, 0, 4 * (size_t)l.tag_len);
	return lay_out(mem, &l, true, 0, 0);
}

int pb_check_layout(const void *mem, size_t size, struct pb_layout *l)
{
	const struct profbuf *b = mem;
	struct pb_layout seen;

	if (!mem || ((uintptr_t)mem & (RING_CACHELINE - 1)) ||
	    size < sizeof(*b))
		return -EINVAL;
	if (b->magic != PB_MAGIC || b->version != PB_VERSION || !b->shared)
		return -EPROTO;
	/* Each field read once: the memory may change under us. */
	seen = (struct pb_layout){
		.hdrsize = b->hdrsize,
		.data_len = b->data_len,
		.tag_len = b->tag_len,
		.data_off = b->data_off,
		.tags_off = b->tags_off,
		.stamps_off = b->stamps_off,
		.ovf_rec_off = b->ovf_rec_off,
		.size = b->size,
	};
	/* The geometry must be one plan() makes, and fit in @size. */
	if (plan(seen.hdrsize, seen.data_len, seen.tag_len, l) ||
	    l->data_len != seen.data_len || l->tag_len != seen.tag_len ||
	    l->data_off != seen.data_off || l->tags_off != seen.tags_off ||
	    l->stamps_off != seen.stamps_off ||
	    l->ovf_rec_off != seen.ovf_rec_off || l->size != seen.size ||
	    size < l->size)
		return -EINVAL;
	return 0;
}

RING_API struct profbuf *profbuf_shared_attach(void *mem, size_t size)
{
	struct pb_layout l;
	int err = pb_check_layout(mem, size, &l);

	if (err) {
		errno = -err;
		return NULL;
	}
	pthread_once(&fork_once, register_fork_child);
	return (struct profbuf *)mem;
}

RING_API size_t profbuf_hdrsize(const struct profbuf *b)
{
	return b ? b->hdrsize : 0;
}

RING_API int profbuf_stats(struct profbuf *b, struct profbuf_stats *st)
{
	if (!b || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->dead_skipped = b->rs.dead_skipped;
	st->stalled_unowned = b->rs.stalled_unowned;
	return 0;
}
