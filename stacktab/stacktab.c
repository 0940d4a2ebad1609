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
 * are visible), walk the chain comparing hash, length and PCs.
 *
 * Insert: nodes are only ever pushed at the head of a chain and never
 * removed until the whole generation is recycled, so there is no ABA.
 *   1. Carve a node, take an id (fetch_add), fill the node, point it at
 *      the head we searched from, record it in the id index (release).
 *   2. CAS the bucket from that head to the node (release).
 *   3. If the CAS fails, the nodes pushed meanwhile lie between the new
 *      head and the one we searched from: search just those.  Same stack
 *      found: return its id; our node and id are wasted (the id index
 *      entry goes back to 0: nobody has seen that id).  Otherwise relink
 *      to the new head and retry.
 * Two puts of the same stack therefore always agree on one id, and no
 * put waits for another.  A put interrupted by a handler that puts the
 * same stack is just such a race.
 *
 * Generations and reclamation: two generations, current one chosen by
 * `cur`.  Every put, get and foreach runs inside a read-side section of
 * ring/grace.h and loads `cur` (acquire, pairing with the store in
 * reset) inside it.  Reset stores the other index in `cur`, waits a grace
 * period, then the old generation is quiescent: it is dumped and cleared
 * (arena rewound with its pages kept committed, buckets and the used part
 * of the index zeroed: see clear_gen()), ready to be the next
 * generation.  A put racing the reset lands in one generation or the
 * other, and the caller's id is valid in the generation it landed in.
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
	uint32_t pad;
	uintptr_t pcs[];
};

#define ST_WORD 8u
#define ST_MIN_NODE (sizeof(struct st_node) + sizeof(uintptr_t))

struct st_gen {
	struct ring_region arena;
	_Atomic uint32_t *buckets;
	_Atomic uint32_t *ids; /* id -> node offset, 0 = none */
	_Atomic uint32_t next_id;
	uint32_t max_ids;
};

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
};

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
	nd->pad = 0;
	memcpy(nd->pcs, pcs, n * sizeof(*pcs));
	atomic_store_explicit(&nd->next, head, memory_order_relaxed);
	/*
	 * Release: pairs with the acquire loads of the index in get() and
	 * foreach(), which may see the id before the bucket CAS.
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
	atomic_fetch_add_explicit(&t->inserts, 1, memory_order_relaxed);
	return nd->id;
}

/* The current generation, inside a read-side section. */
static struct st_gen *current(struct stacktab *t)
{
	/* Acquire: pairs with the release store of cur in reset(). */
	return &t->gen[atomic_load_explicit(&t->cur, memory_order_acquire)];
}

RING_API uint32_t stacktab_put(struct stacktab *t, const uintptr_t *pcs,
			       size_t n)
{
	struct ring_grace_section sec;
	_Atomic uint32_t *bucket;
	struct st_gen *g;
	uint32_t head, id;
	uint64_t hash;

	if (ring_unlikely(!t || !pcs || !n))
		return 0;
	if (n > STACKTAB_MAX_DEPTH)
		n = STACKTAB_MAX_DEPTH;
	hash = ring_hash_words(pcs, n);
	if (ring_unlikely(!ring_grace_enter(&t->grace, &sec))) {
		atomic_fetch_add_explicit(&t->losses, 1, memory_order_relaxed);
		return 0;
	}
	g = current(t);
	bucket = &g->buckets[hash >> t->bucket_shift];
	/* Acquire: pairs with the release CAS in insert(). */
	head = atomic_load_explicit(bucket, memory_order_acquire);
	id = chain_find(g, head, 0, hash, pcs, (uint32_t)n);
	if (ring_likely(id)) {
		/* Owner-only counter: a plain increment, no RMW. */
		atomic_store_explicit(
			&sec.slot->count,
			atomic_load_explicit(&sec.slot->count,
					     memory_order_relaxed) +
				1,
			memory_order_relaxed);
	} else {
		id = insert(t, g, bucket, head, hash, pcs, (uint32_t)n);
	}
	ring_grace_exit(&sec);
	return id;
}

/* The node of @id in @g, or NULL. */
static struct st_node *node_of(struct st_gen *g, uint32_t id)
{
	uint32_t off;

	if (!id || id >= g->max_ids)
		return NULL;
	/* Acquire: pairs with the release store in new_node(). */
	off = atomic_load_explicit(&g->ids[id], memory_order_acquire);
	return off ? node_at(g, off) : NULL;
}

RING_API size_t stacktab_get(struct stacktab *t, uint32_t id, uintptr_t *pcs,
			     size_t max)
{
	struct ring_grace_section sec;
	struct st_node *nd;
	size_t n = 0;

	if (!t || !ring_grace_enter(&t->grace, &sec))
		return 0;
	nd = node_of(current(t), id);
	if (nd) {
		n = nd->n;
		if (pcs)
			memcpy(pcs, nd->pcs,
			       (n < max ? n : max) * sizeof(*pcs));
	}
	ring_grace_exit(&sec);
	return n;
}

static int walk(struct st_gen *g, stacktab_fn fn, void *arg)
{
	/* Relaxed: ids below next_id are either published or holes. */
	uint32_t end = atomic_load_explicit(&g->next_id, memory_order_relaxed);
	int rc = 0;

	if (end > g->max_ids)
		end = g->max_ids;
	for (uint32_t id = 1; id < end && !rc; id++) {
		struct st_node *nd = node_of(g, id);

		if (nd)
			rc = fn(arg, id, nd->pcs, nd->n);
	}
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
	rc = walk(current(t), fn, arg);
	ring_grace_exit(&sec);
	return rc;
}

/*
 * Make a quiescent generation empty.  Its pages stay committed (the arena
 * is bounded anyway): the next generation reuses them without faulting.
 * Nodes are fully written when carved, so only the buckets and the used
 * part of the id index need zeroing.
 */
static void clear_gen(struct stacktab *t, struct st_gen *g)
{
	uint32_t used_ids =
		atomic_load_explicit(&g->next_id, memory_order_relaxed);

	if (used_ids > g->max_ids)
		used_ids = g->max_ids;
	ring_region_reset(&g->arena, false);
	/* Reserve offset 0 in the arena: it means "no node". */
	ring_region_alloc(&g->arena, ST_WORD, ST_WORD);
	memset((void *)g->buckets, 0, t->nbuckets * sizeof(*g->buckets));
	memset((void *)g->ids, 0, used_ids * sizeof(*g->ids));
	atomic_store_explicit(&g->next_id, 1, memory_order_relaxed);
}

RING_API int stacktab_reset(struct stacktab *t, stacktab_fn dump, void *arg)
{
	struct st_gen *old;
	uint32_t cur;
	int rc = 0;

	if (!t)
		return -EINVAL;
	pthread_mutex_lock(&t->reset_lock);
	cur = atomic_load_explicit(&t->cur, memory_order_relaxed);
	old = &t->gen[cur];
	/*
	 * Release: pairs with the acquire load in current(): the new
	 * generation, cleared by the previous reset, is seen empty.
	 */
	atomic_store_explicit(&t->cur, cur ^ 1, memory_order_release);
	ring_grace_wait(&t->grace);
	if (dump)
		rc = walk(old, dump, arg);
	clear_gen(t, old);
	atomic_fetch_add_explicit(&t->resets, 1, memory_order_relaxed);
	pthread_mutex_unlock(&t->reset_lock);
	return rc;
}

RING_API void stacktab_stats(struct stacktab *t, struct stacktab_stats *s)
{
	struct st_gen *g;
	uint32_t next;

	memset(s, 0, sizeof(*s));
	if (!t)
		return;
	/* Acquire: pairs with the release store of cur in reset(). */
	g = &t->gen[atomic_load_explicit(&t->cur, memory_order_acquire)];
	s->inserts = atomic_load_explicit(&t->inserts, memory_order_relaxed);
	s->losses = atomic_load_explicit(&t->losses, memory_order_relaxed);
	s->wasted = atomic_load_explicit(&t->wasted, memory_order_relaxed);
	s->resets = atomic_load_explicit(&t->resets, memory_order_relaxed);
	s->hits = ring_grace_count_sum(&t->grace);
	s->bytes = ring_region_used(&g->arena);
	next = atomic_load_explicit(&g->next_id, memory_order_relaxed);
	if (next > g->max_ids)
		next = g->max_ids;
	/* Published stacks: ids handed out minus holes. */
	for (uint32_t id = 1; id < next; id++)
		s->stacks += node_of(g, id) != NULL;
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
