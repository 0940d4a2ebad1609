// SPDX-License-Identifier: MIT
/*
 * stacktab.c - lock-free, async-signal-safe stack interning.
 *
 * THE PROTOCOL
 *
 * A generation is a hash table of singly linked chains of immutable
 * nodes, an arena the nodes are carved from (ring/region.h) and an index
 * from id to node.  Links are 32-bit offsets into the arena in 8-byte
 * units (0 = none), so they fit the bucket words and cannot dangle outside
 * the arena.
 *
 * Lookup: hash the PCs (ring/hash.h), load the bucket head with acquire
 * (pairing with the release CAS that published it: the node's contents
 * are visible), walk the chain comparing hash, length and PCs.  The hit
 * path compares the PCs of the first node of the same hash and length
 * only; if there is none, or its PCs differ (a 64-bit hash collision),
 * the slow path loads the bucket head again (acquire) and searches that
 * whole chain, a superset of the one just searched (chains only grow at
 * their head), then inserts from that head if the stack is not there.
 *
 * Insert: nodes are only ever pushed at the head of a chain and never
 * removed until the whole generation is recycled, so there is no ABA.
 *   1. Carve a node, take an id (fetch_add), fill the node (not yet
 *      linked), point it at the head we searched from, record it in the
 *      id index (release).
 *   2. CAS the bucket from that head to the node (release).  Won: mark
 *      the node linked (relaxed) and return its id.
 *   3. If the CAS fails, the nodes pushed meanwhile lie between the new
 *      head and the one we searched from: search just those.  Same stack
 *      found: return its id; our node and id are wasted (the id index
 *      entry goes back to 0).  Otherwise relink to the new head and retry.
 * Two puts of the same stack therefore always agree on one id, and no
 * put waits for another.  A put interrupted by a handler that puts the
 * same stack is just such a race.
 *
 * Ids: a stack's id is that of the one node of it in the chains.  The id
 * index holds a node from step 1 on, before anyone knows whether its CAS
 * will win, so get, foreach and the dump (node_of()) ask more than an
 * index entry: the node must be in its chain.  The linked mark says so
 * cheaply (it is only ever set on a node its CAS linked); without it -
 * between a winning CAS and the mark, or for a node that is pending or
 * was wasted - node_of() looks for the node in its chain (acquire load
 * of the bucket, pairing with the release CAS that linked it).  A put
 * that found its stack in a chain loaded that bucket with acquire, which
 * orders after it the node's index entry (stored with release before the
 * CAS) and the link itself: a get of the id it returns, on its thread or
 * on any thread it hands the id to, finds both.  A pending or wasted node
 * is in no chain: no walk reports it and no get resolves its id.  So
 * every id a walk reports is a stack's, each stack once, and get resolves
 * it for the rest of the generation.  Puts never read the mark: only
 * node_of() does.
 *
 * Generations and reclamation: two generations, current one chosen by
 * `cur`, the other holding the previous generation (readable by
 * reference: stacktab_get_ref()).  Each knows its number (`seq`, the
 * count of resets before it).  Every put, get and foreach runs inside a
 * read-side section of ring/grace.h and loads `cur` (acquire, pairing
 * with the store in reset) inside it.  Reset first recycles the previous
 * generation: marks it retired (a get by reference no longer picks it),
 * waits a grace period (no get still reads it), clears it (arena rewound,
 * buckets and the used part of the index zeroed, the pages the recent
 * generations did not need given back: see clear_gen()) and gives it the
 * next number.  Then it stores that index in `cur` and waits a second
 * grace period: the ending generation is quiescent, and is dumped.  It
 * stays as it is, the previous generation, until the next reset.  A put
 * racing the reset lands in one generation or the other, and the
 * caller's id is valid in the generation it landed in, whose number a
 * put by reference returns with it.  A reset called from a foreach or dump callback of the
 * same table would wait for itself (the section, or the reset lock): a
 * thread-local list of the tables the thread is walking refuses it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <profring/stacktab.h>

#include "ring/compiler.h"
#include "ring/grace.h"
#include "ring/hash.h"
#include "ring/perturb.h"
#include "ring/region.h"

struct st_node {
	_Atomic uint32_t next; /* arena offset in words, 0 = end */
	uint32_t id;
	uint64_t hash;
	uint32_t n;
	_Atomic uint32_t linked; /* 1 once its CAS linked it in its chain */
	uintptr_t pcs[];
};

#define ST_WORD 8u
#define ST_MIN_NODE (sizeof(struct st_node) + sizeof(uintptr_t))

struct st_gen {
	/*
	 * The generation number it holds (the count of resets before it),
	 * or ST_RETIRED while a reset clears it for reuse.
	 */
	_Atomic uint64_t seq;
	struct ring_region arena;
	_Atomic uint32_t *buckets;
	_Atomic uint32_t *ids; /* id -> node offset, 0 = none */
	_Atomic uint32_t next_id;
	uint32_t max_ids;
	uint32_t ids_touched; /* index entries touched since last give-back */
};

#define ST_RETIRED UINT64_MAX

/* A reset keeps the pages the largest of this many generations used. */
#define ST_RECENT 4

struct stacktab {
	ring_cacheline_aligned _Atomic uint32_t cur;
	uint32_t bucket_shift; /* hash >> shift = bucket */
	size_t nbuckets;
	struct st_gen gen[2];
	struct ring_grace grace;
	/* Rare paths. */
	ring_cacheline_aligned _Atomic uint64_t inserts;
	_Atomic uint64_t losses;
	_Atomic uint64_t wasted;
	_Atomic uint64_t resets;
	pthread_mutex_t reset_lock;
	/* Under reset_lock: arena bytes and ids of the last generations. */
	size_t recent_bytes[ST_RECENT];
	uint32_t recent_ids[ST_RECENT];
	unsigned int recent_pos;
};

/*
 * The tables the calling thread is walking (foreach, a reset's dump),
 * innermost first, each entry on its walker's stack: a reset of one of
 * them would wait for itself.
 */
struct st_walking {
	const struct stacktab *t;
	struct st_walking *outer;
};

static _Thread_local struct st_walking *st_walking;

static struct st_node *node_at(struct st_gen *g, uint32_t off)
{
	return (struct st_node *)(g->arena.base + (size_t)off * ST_WORD);
}

static bool node_matches(const struct st_node *nd, uint64_t hash,
			 const uintptr_t *pcs, uint32_t n)
{
	return nd->hash == hash && nd->n == n &&
	       !memcmp(nd->pcs, pcs, n * sizeof(*pcs));
}

/*
 * chain_find() - search the chain from @head down to (not including)
 * @stop for the stack.  Return: its id, or 0.
 */
static uint32_t chain_find(struct st_gen *g, uint32_t head, uint32_t stop,
			   uint64_t hash, const uintptr_t *pcs, uint32_t n)
{
	for (uint32_t off = head; off && off != stop;) {
		struct st_node *nd = node_at(g, off);

		if (node_matches(nd, hash, pcs, n))
			return nd->id;
		/* Relaxed: links are immutable once published. */
		off = atomic_load_explicit(&nd->next, memory_order_relaxed);
	}
	return 0;
}

/* Carve and fill a node for the stack, with an id; 0 if out of memory. */
static uint32_t new_node(struct st_gen *g, uint64_t hash, const uintptr_t *pcs,
			 uint32_t n, uint32_t head)
{
	struct st_node *nd = ring_region_alloc(
		&g->arena, sizeof(*nd) + n * sizeof(*pcs), ST_WORD);
	uint32_t id, off;

	if (!nd)
		return 0;
	/* Relaxed: ids only need to be unique; the bucket CAS publishes. */
	id = atomic_fetch_add_explicit(&g->next_id, 1, memory_order_relaxed);
	if (id >= g->max_ids)
		return 0; /* the id space is spent: a loss */
	off = (uint32_t)(((char *)nd - g->arena.base) / ST_WORD);
	nd->id = id;
	nd->hash = hash;
	nd->n = n;
	/* Relaxed: published with the node by the release below. */
	atomic_store_explicit(&nd->linked, 0, memory_order_relaxed);
	memcpy(nd->pcs, pcs, n * sizeof(*pcs));
	atomic_store_explicit(&nd->next, head, memory_order_relaxed);
	/*
	 * Release: pairs with the acquire load of the index in node_of(),
	 * which may see the id before the bucket CAS (and then looks for
	 * the node in its chain).
	 */
	atomic_store_explicit(&g->ids[id], off, memory_order_release);
	return off;
}

/* The insert path: see the protocol.  Return: id, or 0 (a loss). */
static uint32_t insert(struct stacktab *t, struct st_gen *g,
		       _Atomic uint32_t *bucket, uint32_t head, uint64_t hash,
		       const uintptr_t *pcs, uint32_t n)
{
	uint32_t off = new_node(g, hash, pcs, n, head);
	struct st_node *nd;
	uint32_t seen = head, found;

	if (!off) {
		atomic_fetch_add_explicit(&t->losses, 1, memory_order_relaxed);
		return 0;
	}
	nd = node_at(g, off);
	ring_perturb();
	/*
	 * Release on success: pairs with the acquire load of the bucket in
	 * lookups, publishing the node.  Acquire on failure: the nodes
	 * pushed meanwhile are visible to the search below.
	 */
	while (!atomic_compare_exchange_weak_explicit(bucket, &head, off,
						      memory_order_release,
						      memory_order_acquire)) {
		found = chain_find(g, head, seen, hash, pcs, n);
		if (found) {
			atomic_store_explicit(&g->ids[nd->id], 0,
					      memory_order_relaxed);
			atomic_fetch_add_explicit(&t->wasted, 1,
						  memory_order_relaxed);
			return found;
		}
		seen = head;
		atomic_store_explicit(&nd->next, head, memory_order_relaxed);
	}
	/*
	 * Relaxed: the mark only says the node is in its chain, which the
	 * CAS above made true; the node's contents are ordered by the index
	 * (see node_of()).
	 */
	atomic_store_explicit(&nd->linked, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->inserts, 1, memory_order_relaxed);
	return nd->id;
}

/* The current generation, inside a read-side section. */
static struct st_gen *current(struct stacktab *t)
{
	/* Acquire: pairs with the release store of cur in reset(). */
	return &t->gen[atomic_load_explicit(&t->cur, memory_order_acquire)];
}

/*
 * put_slow() - the rest of a put whose hit path did not find its stack:
 * the chain held no node of its hash and length, or one whose PCs differ
 * (a hash collision).  Search the whole chain again from its head,
 * reloaded (a chain only grows at its head, so this is a superset of the
 * one searched), and insert if the stack is not there.  Out of line so
 * that the hit path needs few registers.  @slot: the put's grace slot,
 * whose hit counter a stack found here counts on.
 */
static __attribute__((noinline)) uint32_t
put_slow(struct stacktab *t, struct st_gen *g, struct ring_grace_slot *slot,
	 uint64_t hash, const uintptr_t *pcs, uint32_t n)
{
	_Atomic uint32_t *bucket = &g->buckets[hash >> t->bucket_shift];
	/* Acquire: pairs with the release CAS in insert(). */
	uint32_t head = atomic_load_explicit(bucket, memory_order_acquire);
	uint32_t id = chain_find(g, head, 0, hash, pcs, n);

	if (!id)
		return insert(t, g, bucket, head, hash, pcs, n);
	/* Owner-only counter: a plain increment, no RMW. */
	atomic_store_explicit(
		&slot->count,
		atomic_load_explicit(&slot->count, memory_order_relaxed) + 1,
		memory_order_relaxed);
	return id;
}

/*
 * The hit path is written for the common case, a stack already in its
 * chain: walk the chain for the first node of the same hash and length
 * (no call, few registers), then compare its PCs once.  A 64-bit hash
 * match of a different stack is rare enough to leave to put_slow().
 */
static inline __attribute__((always_inline)) uint32_t
put_in(struct stacktab *t, const uintptr_t *pcs, size_t n, uint64_t *seq)
{
	struct ring_grace_section sec;
	const struct st_node *nd = NULL;
	struct st_gen *g;
	uint32_t off, id;
	uint64_t hash;

	if (ring_unlikely(!t || !pcs))
		return 0;
	/* One test on the hit path for n == 0 and n too large. */
	if (ring_unlikely(n - 1 >= STACKTAB_MAX_DEPTH)) {
		if (!n)
			return 0;
		n = STACKTAB_MAX_DEPTH;
	}
	hash = ring_hash_words(pcs, n);
	if (ring_unlikely(!ring_grace_enter(&t->grace, &sec))) {
		atomic_fetch_add_explicit(&t->losses, 1, memory_order_relaxed);
		return 0;
	}
	g = current(t);
	/* Acquire: pairs with the release CAS in insert(). */
	off = atomic_load_explicit(&g->buckets[hash >> t->bucket_shift],
				   memory_order_acquire);
	while (off) {
		nd = node_at(g, off);
		if (nd->hash == hash && nd->n == n)
			break;
		/* Relaxed: links are immutable once published. */
		off = atomic_load_explicit(&nd->next, memory_order_relaxed);
	}
	if (ring_unlikely(!off)) {
		id = put_slow(t, g, sec.slot, hash, pcs, (uint32_t)n);
	} else if (ring_unlikely(memcmp(nd->pcs, pcs, n * sizeof(*pcs)))) {
		/*
		 * Its hash and length, loaded from the node (equal to ours),
		 * so that they need not live in registers across memcmp():
		 * the empty asm hides that they are equal from the compiler.
		 */
		__asm__("" : "+r"(nd));
		id = put_slow(t, g, sec.slot, nd->hash, pcs, nd->n);
	} else {
		id = nd->id;
		/* Owner-only counter: a plain increment, no RMW. */
		atomic_store_explicit(
			&sec.slot->count,
			atomic_load_explicit(&sec.slot->count,
					     memory_order_relaxed) +
				1,
			memory_order_relaxed);
	}
	/*
	 * Relaxed: stored before the release of cur that made @g current,
	 * and unchanged until a reset that waits for this section.
	 */
	if (seq)
		*seq = atomic_load_explicit(&g->seq, memory_order_relaxed);
	ring_grace_exit(&sec);
	return id;
}

RING_API uint32_t stacktab_put(struct stacktab *t, const uintptr_t *pcs,
			       size_t n)
{
	return put_in(t, pcs, n, NULL);
}

RING_API uint64_t stacktab_put_ref(struct stacktab *t, const uintptr_t *pcs,
				   size_t n)
{
	uint64_t seq = 0;
	uint32_t id = put_in(t, pcs, n, &seq);

	return id ? seq << 32 | id : 0;
}

/*
 * Is the node at @off in its chain?  For a node not (yet) marked linked:
 * its CAS may have won a moment ago, or it is pending or wasted.
 */
static bool chain_holds(struct stacktab *t, struct st_gen *g,
			const struct st_node *nd, uint32_t off)
{
	_Atomic uint32_t *bucket = &g->buckets[nd->hash >> t->bucket_shift];
	/* Acquire: pairs with the release CAS in insert(). */
	uint32_t o = atomic_load_explicit(bucket, memory_order_acquire);

	while (o && o != off)
		/* Relaxed: links are immutable once published. */
		o = atomic_load_explicit(&node_at(g, o)->next,
					 memory_order_relaxed);
	return o == off;
}

/*
 * The node of stack @id in @g, or NULL if @id is none: never handed out,
 * wasted, or a pending insert's (see "Ids" above).
 */
static struct st_node *node_of(struct stacktab *t, struct st_gen *g,
			       uint32_t id)
{
	struct st_node *nd;
	uint32_t off;

	if (!id || id >= g->max_ids)
		return NULL;
	/*
	 * Acquire: pairs with the release store in new_node(): the node's
	 * contents are visible.
	 */
	off = atomic_load_explicit(&g->ids[id], memory_order_acquire);
	if (!off)
		return NULL;
	nd = node_at(g, off);
	/* Relaxed: set only on a linked node; see insert(). */
	if (ring_likely(
		    atomic_load_explicit(&nd->linked, memory_order_relaxed)))
		return nd;
	return chain_holds(t, g, nd, off) ? nd : NULL;
}

RING_API size_t stacktab_get(struct stacktab *t, uint32_t id, uintptr_t *pcs,
			     size_t max)
{
	struct ring_grace_section sec;
	struct st_node *nd;
	size_t n = 0;

	if (!t || !ring_grace_enter(&t->grace, &sec))
		return 0;
	nd = node_of(t, current(t), id);
	if (nd) {
		n = nd->n;
		if (pcs)
			memcpy(pcs, nd->pcs,
			       (n < max ? n : max) * sizeof(*pcs));
	}
	ring_grace_exit(&sec);
	return n;
}

/*
 * The generation named @want (the low 32 bits of its number), current or
 * previous, inside a read-side section; NULL if neither is it.  A
 * generation being cleared for reuse is ST_RETIRED from before the grace
 * period that precedes its clearing (see stacktab_reset()), so one found
 * here is not cleared before the section ends.
 */
static struct st_gen *gen_named(struct stacktab *t, uint32_t want)
{
	/* Acquire: pairs with the release store of cur in reset(). */
	uint32_t c = atomic_load_explicit(&t->cur, memory_order_acquire);

	for (uint32_t i = 0; i < 2; i++) {
		struct st_gen *g = &t->gen[c ^ i];
		/*
		 * Acquire: pairs with the release store of the number once
		 * the generation was cleared: its empty state is visible.
		 */
		uint64_t seq =
			atomic_load_explicit(&g->seq, memory_order_acquire);

		if (seq != ST_RETIRED && (uint32_t)seq == want)
			return g;
	}
	return NULL;
}

RING_API size_t stacktab_get_ref(struct stacktab *t, uint64_t ref,
				 uintptr_t *pcs, size_t max)
{
	struct ring_grace_section sec;
	struct st_gen *g;
	struct st_node *nd = NULL;
	size_t n = 0;

	if (!t || !ring_grace_enter(&t->grace, &sec))
		return 0;
	g = gen_named(t, (uint32_t)(ref >> 32));
	if (g)
		nd = node_of(t, g, (uint32_t)ref);
	if (nd) {
		n = nd->n;
		if (pcs)
			memcpy(pcs, nd->pcs,
			       (n < max ? n : max) * sizeof(*pcs));
	}
	ring_grace_exit(&sec);
	return n;
}

/* Call @fn for each stack of @g, with @t on this thread's walking list. */
static int walk(struct stacktab *t, struct st_gen *g, stacktab_fn fn, void *arg)
{
	struct st_walking self = { t, st_walking };
	/* Relaxed: ids below next_id are stacks, holes or pending. */
	uint32_t end = atomic_load_explicit(&g->next_id, memory_order_relaxed);
	int rc = 0;

	if (end > g->max_ids)
		end = g->max_ids;
	st_walking = &self;
	for (uint32_t id = 1; id < end && !rc; id++) {
		struct st_node *nd = node_of(t, g, id);

		if (nd)
			rc = fn(arg, id, nd->pcs, nd->n);
	}
	st_walking = self.outer;
	return rc;
}

RING_API int stacktab_foreach(struct stacktab *t, stacktab_fn fn, void *arg)
{
	struct ring_grace_section sec;
	int rc;

	if (!t || !fn)
		return -EINVAL;
	if (!ring_grace_enter(&t->grace, &sec))
		return -EAGAIN;
	rc = walk(t, current(t), fn, arg);
	ring_grace_exit(&sec);
	return rc;
}

/*
 * Make a quiescent generation empty.  Of its arena and its id index, the
 * pages that the largest of the last ST_RECENT generations (this one
 * included) needed stay committed, so that a steady table reuses them
 * without faulting; the rest go back to the kernel, so that a burst does
 * not hold its memory forever.  Nodes are fully written when carved, so
 * only the buckets and the kept part of the index need zeroing (pages
 * given back read as zero).  Called under reset_lock.
 */
static void clear_gen(struct stacktab *t, struct st_gen *g)
{
	uint32_t used_ids =
		atomic_load_explicit(&g->next_id, memory_order_relaxed);
	size_t keep_bytes = 0, zero_end;
	uint32_t keep_ids = 0;

	if (used_ids > g->max_ids)
		used_ids = g->max_ids;
	t->recent_bytes[t->recent_pos] = ring_region_used(&g->arena);
	t->recent_ids[t->recent_pos] = used_ids;
	t->recent_pos = (t->recent_pos + 1) % ST_RECENT;
	for (int i = 0; i < ST_RECENT; i++) {
		if (t->recent_bytes[i] > keep_bytes)
			keep_bytes = t->recent_bytes[i];
		if (t->recent_ids[i] > keep_ids)
			keep_ids = t->recent_ids[i];
	}
	ring_region_reset(&g->arena, keep_bytes);
	/* Reserve offset 0 in the arena: it means "no node". */
	ring_region_alloc(&g->arena, ST_WORD, ST_WORD);
	memset((void *)g->buckets, 0, t->nbuckets * sizeof(*g->buckets));
	/* Entries past used_ids are still zero: nobody stored them. */
	zero_end = used_ids * sizeof(*g->ids);
	if (used_ids > g->ids_touched)
		g->ids_touched = used_ids;
	if (keep_ids < g->ids_touched) {
		size_t from = ring_give_back((void *)g->ids,
					     keep_ids * sizeof(*g->ids),
					     g->ids_touched * sizeof(*g->ids));

		if (zero_end > from)
			zero_end = from;
		g->ids_touched = keep_ids;
	}
	memset((void *)g->ids, 0, zero_end);
	atomic_store_explicit(&g->next_id, 1, memory_order_relaxed);
}

/*
 * Retire generation @g (the one before the current), wait until no get
 * can still read it, and clear it to hold generation @seq.  Under
 * reset_lock.
 */
static void recycle_gen(struct stacktab *t, struct st_gen *g, uint64_t seq)
{
	/*
	 * Release, then the grace period: a get that enters after the wait
	 * began sees the generation retired (ring_grace_wait()'s barrier).
	 */
	atomic_store_explicit(&g->seq, ST_RETIRED, memory_order_release);
	ring_grace_wait(&t->grace);
	clear_gen(t, g);
	/* Release: pairs with the acquire load in gen_named(). */
	atomic_store_explicit(&g->seq, seq, memory_order_release);
}

RING_API int stacktab_reset(struct stacktab *t, stacktab_fn dump, void *arg)
{
	struct st_gen *old;
	uint32_t cur;
	int rc = 0;

	if (!t)
		return -EINVAL;
	/*
	 * From a foreach callback we would wait for our own section, from a
	 * dump callback for our own lock: refuse.
	 */
	for (const struct st_walking *w = st_walking; w; w = w->outer)
		if (w->t == t)
			return -EDEADLK;
	pthread_mutex_lock(&t->reset_lock);
	cur = atomic_load_explicit(&t->cur, memory_order_relaxed);
	old = &t->gen[cur];
	/* The generation before the one ending becomes the next one. */
	recycle_gen(t, &t->gen[cur ^ 1],
		    atomic_load_explicit(&old->seq, memory_order_relaxed) + 1);
	/*
	 * Release: pairs with the acquire load in current(): the new
	 * generation, cleared just now, is seen empty.
	 */
	atomic_store_explicit(&t->cur, cur ^ 1, memory_order_release);
	ring_grace_wait(&t->grace);
	/* The ending generation stays readable, by reference, until the next reset. */
	if (dump)
		rc = walk(t, old, dump, arg);
	atomic_fetch_add_explicit(&t->resets, 1, memory_order_relaxed);
	pthread_mutex_unlock(&t->reset_lock);
	return rc;
}

RING_API void stacktab_stats(struct stacktab *t, struct stacktab_stats *s)
{
	struct ring_grace_section sec;
	struct st_gen *g;
	uint32_t next;

	memset(s, 0, sizeof(*s));
	if (!t)
		return;
	s->inserts = atomic_load_explicit(&t->inserts, memory_order_relaxed);
	s->losses = atomic_load_explicit(&t->losses, memory_order_relaxed);
	s->wasted = atomic_load_explicit(&t->wasted, memory_order_relaxed);
	s->resets = atomic_load_explicit(&t->resets, memory_order_relaxed);
	s->hits = ring_grace_count_sum(&t->grace);
	/* The generation's nodes are read inside a section, as in get(). */
	if (!ring_grace_enter(&t->grace, &sec))
		return;
	g = current(t);
	s->bytes = ring_region_used(&g->arena);
	next = atomic_load_explicit(&g->next_id, memory_order_relaxed);
	if (next > g->max_ids)
		next = g->max_ids;
	/* Stacks: ids handed out minus holes and pending inserts. */
	for (uint32_t id = 1; id < next; id++)
		s->stacks += node_of(t, g, id) != NULL;
	ring_grace_exit(&sec);
}

/* ---- life cycle ------------------------------------------------------ */

static int gen_init(struct stacktab *t, struct st_gen *g, size_t max_bytes)
{
	int rc = ring_region_init(&g->arena, max_bytes);

	if (rc)
		return rc;
	g->max_ids = (uint32_t)(g->arena.size / ST_MIN_NODE + 1);
	g->buckets = ring_map_zeroed(t->nbuckets * sizeof(*g->buckets));
	g->ids = ring_map_zeroed((size_t)g->max_ids * sizeof(*g->ids));
	if (!g->buckets || !g->ids)
		return -ENOMEM;
	ring_region_alloc(&g->arena, ST_WORD, ST_WORD);
	atomic_init(&g->next_id, 1);
	/* Generation 0 is current; the other holds none yet. */
	atomic_init(&g->seq, g == &t->gen[0] ? 0 : ST_RETIRED);
	return 0;
}

static void gen_destroy(struct stacktab *t, struct st_gen *g)
{
	if (g->buckets)
		munmap(g->buckets, t->nbuckets * sizeof(*g->buckets));
	if (g->ids)
		munmap(g->ids, (size_t)g->max_ids * sizeof(*g->ids));
	ring_region_destroy(&g->arena);
}

RING_API struct stacktab *stacktab_new(size_t max_bytes, size_t expected_stacks)
{
	struct stacktab *t;
	int rc = -EINVAL;
	uint32_t bits = 6;

	/* Offsets are 32-bit word counts: at most 32 GiB of arena. */
	if (max_bytes < 4096 || max_bytes > ((size_t)UINT32_MAX * ST_WORD) ||
	    !expected_stacks || expected_stacks > (1u << 30))
		goto fail;
	t = aligned_alloc(RING_CACHELINE, sizeof(*t));
	rc = -ENOMEM;
	if (!t)
		goto fail;
	memset(t, 0, sizeof(*t));
	while (((size_t)1 << bits) < 2 * expected_stacks)
		bits++;
	t->nbuckets = (size_t)1 << bits;
	t->bucket_shift = 64 - bits;
	pthread_mutex_init(&t->reset_lock, NULL);
	rc = ring_grace_init(&t->grace, STACKTAB_MAX_THREADS, true);
	if (rc)
		goto free_t;
	for (int i = 0; i < 2; i++) {
		rc = gen_init(t, &t->gen[i], max_bytes);
		if (rc)
			goto free_gens;
	}
	return t;

free_gens:
	gen_destroy(t, &t->gen[0]);
	gen_destroy(t, &t->gen[1]);
	ring_grace_destroy(&t->grace);
free_t:
	free(t);
fail:
	errno = -rc;
	return NULL;
}

RING_API void stacktab_free(struct stacktab *t)
{
	if (!t)
		return;
	gen_destroy(t, &t->gen[0]);
	gen_destroy(t, &t->gen[1]);
	ring_grace_destroy(&t->grace);
	pthread_mutex_destroy(&t->reset_lock);
	free(t);
}
