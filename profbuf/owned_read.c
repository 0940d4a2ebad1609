// SPDX-License-Identifier: MIT
/*
 * owned_read.c - rings one thread owns: their owners (claim, unclaim,
 * an exited owner's ring taken over) and their reader, the group's
 * (profbuf/group.c calls these).  THE PROTOCOL is profbuf/owned.c's:
 * read there what each side may write and when, and what pairs with
 * what.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ring/compiler.h"
#include "ring/grace.h"
#include "profbuf/owned_impl.h"
#include "profbuf/profbuf_impl.h"

/* ---- owners ---------------------------------------------------------- */

/* Claim @o, seen owned by @seen, for @tid (see Owners). */
static bool take(struct profbuf_owned *o, uint64_t seen, uint64_t tid)
{
	/* Acquire: pairs with unclaim's release store of the owner. */
	return __atomic_compare_exchange_n(&o->profbuf__owner, &seen, tid, 0,
					   __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED) ||
	       seen == tid;
}

/*
 * in_progress() - is a write in progress on @o's owner thread (head
 * ahead of pub, or a loss being counted)?
 */
static bool in_progress(struct profbuf_owned *o)
{
	/*
	 * Acquire: pairs with the release CAS that clears COUNTING, and
	 * with the release store of pub (all before it is complete).
	 */
	uint64_t h = __atomic_load_n(&o->profbuf__head, __ATOMIC_ACQUIRE);

	return (h & OW_COUNTING) ||
	       (h & ~OW_FLAGS) !=
		       __atomic_load_n(&o->profbuf__pub, __ATOMIC_ACQUIRE);
}

/*
 * Has @o's owner exited, outside any write of its?  Gone first: then
 * its words are final when we look.
 */
static bool owner_gone(struct profbuf_owned *o, uint64_t owner)
{
	return owner && ring_grace_thread_gone(ring_grace_owner_tid(owner)) &&
	       !in_progress(o);
}

struct profbuf_owned *pbo_claim(struct profbuf_owned *rings, uint32_t n)
{
	uint64_t tid = ring_grace_token();

	/* Relaxed: a hint; take() decides. */
	for (uint32_t i = 0; i < n; i++)
		if (__atomic_load_n(&rings[i].profbuf__owner,
				    __ATOMIC_RELAXED) == tid)
			return &rings[i];
	for (uint32_t i = 0; i < n; i++)
		if (!__atomic_load_n(&rings[i].profbuf__owner,
				     __ATOMIC_RELAXED) &&
		    take(&rings[i], 0, tid))
			return &rings[i];
	for (uint32_t i = 0; i < n; i++) {
		uint64_t owner = __atomic_load_n(&rings[i].profbuf__owner,
						 __ATOMIC_RELAXED);

		if (owner_gone(&rings[i], owner) && take(&rings[i], owner, tid))
			return &rings[i];
	}
	return NULL;
}

RING_API int profbuf_group_unclaim(struct profbuf_owned *o)
{
	if (!o || __atomic_load_n(&o->profbuf__owner, __ATOMIC_RELAXED) !=
			  ring_grace_token())
		return -EINVAL;
	if (in_progress(o))
		return -EBUSY;
	/* Release: pairs with the acquire CAS of the next claim. */
	__atomic_store_n(&o->profbuf__owner, 0, __ATOMIC_RELEASE);
	return 0;
}

/* ---- the reader ------------------------------------------------------ */

int pbo_init(struct profbuf_owned *o, struct pbo_reader *st, size_t hdrsize,
	     size_t bufwords, size_t ntags, uint32_t *wake, uint32_t index)
{
	size_t words = 1, tags = 1;

	if (!hdrsize || hdrsize > 1024 || bufwords >= RING_PINDEX_MAX_ENTRIES ||
	    ntags >= RING_PINDEX_MAX_ENTRIES)
		return -EINVAL;
	while (words < bufwords || words < 2 * (3 + hdrsize))
		words <<= 1;
	while (tags < ntags || tags < 2)
		tags <<= 1;
	memset(o, 0, sizeof(*o));
	memset(st, 0, sizeof(*st));
	o->profbuf__data = calloc(words, sizeof(uint64_t));
	o->profbuf__tags = calloc(tags, sizeof(void *));
	st->ovf = calloc(3 + hdrsize, sizeof(uint64_t));
	if (!o->profbuf__data || !o->profbuf__tags || !st->ovf) {
		pbo_fini(o, st);
		return -ENOMEM;
	}
	o->profbuf__hdrsize = (uint32_t)hdrsize;
	o->profbuf__data_len = (uint32_t)words;
	o->profbuf__tag_len = (uint32_t)tags;
	/* A child of fork() gets new tokens (pbo_after_fork()). */
	ring_grace_setup();
	o->profbuf__fence = pbo_writers_fence();
	o->profbuf__inline_hdrsize = o->profbuf__fence ? 0 : (uint32_t)hdrsize;
	o->profbuf__wake = wake;
	o->profbuf__index = index;
	return 0;
}

void pbo_fini(struct profbuf_owned *o, struct pbo_reader *st)
{
	free(o->profbuf__data);
	free((void *)o->profbuf__tags);
	free(st->ovf);
	o->profbuf__data = NULL;
	o->profbuf__tags = NULL;
	st->ovf = NULL;
}

void pbo_close(struct profbuf_owned *o)
{
	/* Release: pairs with the reader's acquire load of closed. */
	__atomic_store_n(&o->profbuf__closed, 1, __ATOMIC_RELEASE);
	pbo_wake(o);
}

void pbo_arm(struct profbuf_owned *o)
{
	/* Release: pairs with wake()'s acquire exchange. */
	__atomic_store_n(&o->profbuf__sleeping, 1, __ATOMIC_RELEASE);
}

void pbo_disarm(struct profbuf_owned *o)
{
	/* Relaxed: withdrawn; a writer that took it first wakes. */
	__atomic_exchange_n(&o->profbuf__sleeping, 0, __ATOMIC_RELAXED);
}

/*
 * pbo_pending() - after pbo_arm() and pbo_barrier(): has the ring
 * anything for a read, or is it closed (wait_step() then polls while a
 * write is in progress), so that the reader must not sleep?
 */
bool pbo_pending(struct profbuf_owned *o, const struct pbo_reader *st)
{
	/* Acquire: pairs with the release store of pub and of closed. */
	return __atomic_load_n(&o->profbuf__pub, __ATOMIC_ACQUIRE) !=
		       st->r_next ||
	       __atomic_load_n(&o->profbuf__closed, __ATOMIC_ACQUIRE);
}

/*
 * pbo_closing() - closed, with a write still in progress: the reader
 * polls (a write that ends refused, or an owner that died inside a
 * write, wakes nobody).
 */
bool pbo_closing(struct profbuf_owned *o)
{
	return __atomic_load_n(&o->profbuf__closed, __ATOMIC_ACQUIRE) &&
	       in_progress(o);
}

/*
 * owner_died_writing() - the owner exited inside a write (in
 * progress for good): count what it reserved and did not publish as lost, and make
 * the ring's words whole for the EOF.
 */
static bool owner_died_writing(struct profbuf_owned *o)
{
	uint64_t owner = __atomic_load_n(&o->profbuf__owner, __ATOMIC_RELAXED);
	uint64_t p, h;

	if (!owner || !ring_grace_thread_gone(ring_grace_owner_tid(owner)))
		return false;
	p = __atomic_load_n(&o->profbuf__pub, __ATOMIC_ACQUIRE);
	h = __atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED);
	__atomic_store_n(&o->profbuf__lost,
			 __atomic_load_n(&o->profbuf__lost, __ATOMIC_RELAXED) +
				 ((o_tag(h) - o_tag(p)) & OWNED_TAG_MASK),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&o->profbuf__head, p, __ATOMIC_RELAXED);
	return true;
}

/* Nothing to read, and closed: EOF, a last overflow record, or wait. */
static int read_end(struct profbuf_owned *o, struct pbo_reader *st,
		    struct profbuf_read *out)
{
	uint32_t hs = o->profbuf__hdrsize;
	uint64_t c, lost;

	if (!st->fenced) {
		if (!pbo_barrier(o->profbuf__fence)) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
		st->fenced = true;
	}
	if (in_progress(o) && !owner_died_writing(o))
		return 0;
	/* Acquire: pairs with the release store of pub. */
	if (__atomic_load_n(&o->profbuf__pub, __ATOMIC_ACQUIRE) != st->r_next ||
	    (__atomic_load_n(&o->profbuf__head, __ATOMIC_RELAXED) &
	     ~OW_FLAGS) != st->r_next)
		return 0;
	/* The owner is done for good: its words are final. */
	/*
	 * Relaxed: final (the acquire loads above); a refused write still
	 * reads said (take_space()), so our store is an atomic one.
	 */
	lost = __atomic_load_n(&o->profbuf__lost, __ATOMIC_RELAXED);
	c = lost - __atomic_load_n(&o->profbuf__said, __ATOMIC_RELAXED);
	if (!c)
		return 2;
	__atomic_store_n(&o->profbuf__said, lost, __ATOMIC_RELAXED);
	st->ovf[0] = 3 + hs;
	st->ovf[1] = (uint64_t)__atomic_load_n(&o->profbuf__lost_time,
					       __ATOMIC_RELAXED);
	memset(st->ovf + 2, 0, hs * sizeof(uint64_t));
	st->ovf[2 + hs] = c;
	st->ovf_tag = NULL;
	*out = (struct profbuf_read){ .data = st->ovf,
				      .ndata = 3 + hs,
				      .tags = &st->ovf_tag,
				      .ntags = 1 };
	return 1;
}

/*
 * run_from() - the records from r_next up to @p contiguous in both rings,
 * markers stepped over.  Return: 1 with @out filled, 0 if only markers
 * were there, -EIO for a length no writer stores.
 */
static int run_from(struct profbuf_owned *o, struct pbo_reader *st, uint64_t p,
		    struct profbuf_read *out)
{
	uint32_t size = o->profbuf__data_len, tlen = o->profbuf__tag_len;
	uint32_t d = o_data(st->r_next), pos = d & (size - 1), start = pos;
	uint32_t ts = o_tag(st->r_next) & (tlen - 1), n = 0;
	uint64_t w = o->profbuf__data[pos];

	if (!w) { /* rewind marker */
		st->r_next = o_make(d + (size - pos), o_tag(st->r_next));
		return 0;
	}
	if (w & PB_PAD_MARK) {
		/* A void record holds a tag slot too. */
		st->r_next = o_make(d + (uint32_t)(w & ~OWNED_MARKS),
				    o_tag(st->r_next) + !!(w & OWNED_VOID));
		return 0;
	}
	while (d != o_data(p) && pos < size && ts + n < tlen) {
		w = o->profbuf__data[pos];
		if (!w || (w & PB_PAD_MARK))
			break;
		if (w < 2 + (uint64_t)o->profbuf__hdrsize || w > size - pos)
			return -EIO;
		d += (uint32_t)w;
		pos += (uint32_t)w;
		n++;
	}
	st->r_next = o_make(d, o_tag(st->r_next) + n);
	*out = (struct profbuf_read){ .data = o->profbuf__data + start,
				      .ndata = pos - start,
				      .tags = o->profbuf__tags + ts,
				      .ntags = n };
	return 1;
}

int pbo_read(struct profbuf_owned *o, struct pbo_reader *st,
	     struct profbuf_read *out)
{
	int rc;

	/*
	 * Release: pairs with the writers' acquire load of tail: we are
	 * done reading what the last read returned.
	 */
	if (__atomic_load_n(&o->profbuf__tail, __ATOMIC_RELAXED) != st->r_next)
		__atomic_store_n(&o->profbuf__tail, st->r_next,
				 __ATOMIC_RELEASE);
	for (;;) {
		/* Acquire: pairs with the release store of pub. */
		uint64_t p =
			__atomic_load_n(&o->profbuf__pub, __ATOMIC_ACQUIRE);

		if (p == st->r_next) {
			/* Acquire: pairs with pbo_close()'s release. */
			if (!__atomic_load_n(&o->profbuf__closed,
					     __ATOMIC_ACQUIRE))
				return 0;
			return read_end(o, st, out);
		}
		rc = run_from(o, st, p, out);
		if (rc)
			return rc;
		/* Stepped over a marker: give it back too. */
		__atomic_store_n(&o->profbuf__tail, st->r_next,
				 __ATOMIC_RELEASE);
	}
}

/*
 * pbo_after_fork() - in the child: the ring's unread records are the
 * parent's to read; drop them (return how many), and hand the ring to
 * the child's one thread if it had an owner.
 */
int pbo_after_fork(struct profbuf_owned *o, struct pbo_reader *st)
{
	uint64_t h = o->profbuf__head & ~OW_FLAGS;
	int dropped = (int)((o_tag(h) - o_tag(st->read_to)) & OWNED_TAG_MASK);

	o->profbuf__head = h;
	o->profbuf__pub = h;
	o->profbuf__tail = h;
	o->profbuf__sleeping = 0;
	o->profbuf__said = o->profbuf__lost;
	st->r_next = h;
	st->read_to = h;
	if (o->profbuf__owner)
		o->profbuf__owner = ring_grace_token();
	return dropped;
}
