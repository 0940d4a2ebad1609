// SPDX-License-Identifier: MIT
/*
 * bench/stacktab_bench.c - stacktab against its anchors.
 *
 * What it measures.
 *
 * The data set is NSTACKS distinct stacks of DEPTH PCs (uintptr_t), made
 * by a fixed-seed PRNG, held in the caller's memory as an unwinder would
 * leave them, and one shuffled permutation of them: every case below
 * visits the stacks in that same order, so that no case is helped by a
 * sequential walk through its table.  Every op's result is stored in a
 * per-batch array inside the timed region and checked after the batch,
 * untimed, against the expected id (for get: length and PCs); a wrong
 * result aborts the run.
 *
 * 1. put hit: ns per stacktab_put() of a stack already in the table (the
 *    table holds all NSTACKS stacks, ids 1 ... NSTACKS).  This is the
 *    profiler's steady state: almost every sample's stack was seen.
 * 2. get: ns per stacktab_get() copying out the DEPTH PCs of an existing
 *    id (ids in the same shuffled order).
 * 3. insert: ns per stacktab_put() of a new stack into an empty table,
 *    NSTACKS inserts per round, the table emptied between rounds
 *    (stacktab_reset(), untimed).
 *
 * Why the anchors are fair.
 *
 *  - floor: what any interning table must do at least on a hit - hash
 *    the DEPTH words with the same ring_hash_words(), compare the hash and
 *    memcmp() the words against a stored copy (laid out like a stacktab
 *    node, in one array like its arena), but find that copy by direct
 *    index: no bucket, no chain, no read-side section.  Since the copy's
 *    address does not depend on the hash, the CPU loads it while it
 *    hashes; a hash table must hash first, then load a bucket, then the
 *    node.  Information since issue 32 (no hash table can find a copy
 *    by index); get is reported against it too, for scale, and against
 *    a plain memcpy() from the copy.
 *  - hash_floor: an ideal single-threaded hash table, the floor of any
 *    hash table: hash with the same ring_hash_words(), load the bucket
 *    (NBUCKETS 32-bit node indices, bucket = the hash's top bits, as
 *    stacktab picks it), compare the node it points to (stored hash,
 *    length, memcmp() of the PCs; nodes laid out like stacktab's, in one
 *    array in insertion order like its arena) and follow the node's next
 *    index on a mismatch (a shared bucket; about 14% of the stacks here).
 *    No read-side section, no atomics, inline.  The goal is put hit <=
 *    1.3 x hash_floor (issue 32).
 *  - ck_hs: ConcurrencyKit's open-addressing set in CK_HS_MODE_SPMC |
 *    CK_HS_MODE_OBJECT (lock-free readers, one writer: stacktab allows
 *    any number of both), storing pointers to objects that hold the PCs
 *    and the id.  Its hash callback is ring_hash_words(), computed for
 *    every lookup as a real caller must (CK_HS_HASH), and its compare
 *    callback memcmp()s the PCs.  It has as many slots as stacktab has
 *    buckets (2^15, 30% full: it never grows here).  ck_hs on this
 *    platform has no pointer packing, so it calls the compare callback
 *    for every occupied slot it probes; that is ck_hs as shipped.
 *  - rculfhash: liburcu's lock-free resizable hash table (default memb
 *    flavour), the same hash, a match function that memcmp()s, 2^15
 *    buckets without auto-resize, each lookup inside rcu_read_lock() /
 *    rcu_read_unlock() as stacktab's puts are inside its own read-side
 *    section.  rculfhash compares the stored hash before calling match.
 *  - Inserts: ck_hs_put() and cds_lfht_add_unique() both fail on a
 *    present key, like stacktab's insert, so all three do a full lookup
 *    and a publication per new stack.  The anchors' nodes are allocated
 *    and first touched before the timed region (they are not charged a
 *    malloc() or page faults); inside it they copy the PCs into the node,
 *    number it and publish it.  stacktab carves its node from its arena
 *    inside the timed region (its reset keeps the arena's pages
 *    committed, so after the first rounds there are no page faults; the
 *    count is printed under the table).  The insert rows are
 *    information, not a requirement.
 *
 * All cases run interleaved repetition by repetition (harness.c) over
 * the same stacks and order, timed in batches of --batch operations.
 * stacktab, ck_hs and rculfhash are called through their libraries (no
 * inlining across the call; ck_hs also calls its callbacks through
 * pointers); the floor is inline.  That is part of the cost of a library
 * and is not corrected for.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <ck_hs.h>
#include <urcu.h>
#include <urcu/rculfhash.h>

#include <profring/stacktab.h>

#include "ring/hash.h"
#include "harness.h"

#define DEPTH 32
#define NSTACKS 10000u
#define NBUCKETS (1u << 15) /* stacktab's choice: 2 x NSTACKS, rounded up */
#define ARENA_BYTES (8u << 20)
#define LOOKUP_PASSES 200 /* passes over the shuffled stacks per repetition */
#define INSERT_ROUNDS 40 /* fills of an empty table per repetition */
#define TEXT_BASE 0x555555554000ull
#define TEXT_SIZE (16u << 20)
#define SEED 0x5eed5eedull

/*
 * The length every hash and compare is given: DEPTH, but set at run time,
 * so that the anchors hash and compare a length the compiler cannot see,
 * as stacktab (a separately compiled library) does.
 */
static size_t stack_len;

/*
 * struct flr_stack - the floor's stored copy, laid out like a stacktab
 * node (hash, id, length, PCs).
 */
struct flr_stack {
	uint64_t hash;
	uint32_t id;
	uint32_t n;
	uintptr_t pcs[DEPTH];
};

/*
 * struct hf_node - the hash floor's node, laid out like a stacktab node
 * (next, id, hash, length, PCs).
 */
struct hf_node {
	uint32_t next; /* index + 1 of the next node in the bucket, 0 = end */
	uint32_t id;
	uint64_t hash;
	uint32_t n;
	uint32_t pad;
	uintptr_t pcs[DEPTH];
};

/* struct ck_stack - a ck_hs object: the PCs first, they are the key. */
struct ck_stack {
	uintptr_t pcs[DEPTH];
	uint32_t id;
};

/* struct lf_stack - an rculfhash node. */
struct lf_stack {
	struct cds_lfht_node node;
	uint32_t id;
	uintptr_t pcs[DEPTH];
};

/*
 * struct data - the stacks, the order, and the populated tables the
 * lookup cases share.
 * @stacks:   the queries, NSTACKS x DEPTH PCs
 * @order:    a shuffled permutation of 0 ... NSTACKS - 1
 * @want_id:  expected result of a lookup of stack k: k + 1
 * @want_get: expected digest of a copy-out of stack k
 * @copies:   the floor's stored copies
 * @hf_buckets, @hf_nodes: the hash floor's buckets and nodes
 * @st:       stacktab holding every stack, stack k as id k + 1
 * @hs, @ck_objs: ck_hs and its objects
 * @lf, @lf_nodes: rculfhash and its nodes
 * @buf:      where get and its floor copy the PCs to
 */
struct data {
	uintptr_t (*stacks)[DEPTH];
	uint32_t *order;
	uint32_t *want_id;
	uint32_t *want_get;
	struct flr_stack *copies;
	uint32_t *hf_buckets;
	struct hf_node *hf_nodes;
	struct stacktab *st;
	struct ck_hs hs;
	struct ck_stack *ck_objs;
	struct cds_lfht *lf;
	struct lf_stack *lf_nodes;
	_Alignas(64) uintptr_t buf[DEPTH];
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "stacktab_bench: %s failed (%s); aborting\n", what,
		strerror(err));
	return -1;
}

/* A deterministic PRNG: splitmix64. */
static uint64_t prng(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- the anchors' callbacks --------------------------------------------- */

static unsigned long ckh_hash(const void *key, unsigned long seed)
{
	return (unsigned long)ring_hash_words(key, stack_len) ^ seed;
}

static bool ckh_compare(const void *a, const void *b)
{
	return !memcmp(a, b, stack_len * sizeof(uintptr_t));
}

static void *ckm_malloc(size_t bytes)
{
	return malloc(bytes);
}

static void ckm_free(void *p, size_t bytes, bool defer)
{
	(void)bytes;
	(void)defer; /* one thread: nobody can still read the old map */
	free(p);
}

static struct ck_malloc ck_allocator = { .malloc = ckm_malloc,
					 .free = ckm_free };

static int lf_match(struct cds_lfht_node *node, const void *key)
{
	const struct lf_stack *s =
		caa_container_of(node, struct lf_stack, node);

	return !memcmp(s->pcs, key, stack_len * sizeof(s->pcs[0]));
}

static bool ck_init(struct ck_hs *hs)
{
	return ck_hs_init(hs, CK_HS_MODE_SPMC | CK_HS_MODE_OBJECT, ckh_hash,
			  ckh_compare, &ck_allocator, NBUCKETS / 2 + 1, 0);
}

static struct cds_lfht *lf_new(void)
{
	return cds_lfht_new(NBUCKETS, NBUCKETS, NBUCKETS, 0, NULL);
}

/* ---- the data set ------------------------------------------------------- */

/* PCs spread over a 16 MiB text segment. */
static void gen_stacks(struct data *d)
{
	uint64_t state = SEED;

	for (uint32_t k = 0; k < NSTACKS; k++)
		for (int i = 0; i < DEPTH; i++)
			d->stacks[k][i] = (uintptr_t)(TEXT_BASE +
						      prng(&state) % TEXT_SIZE);
	for (uint32_t k = 0; k < NSTACKS; k++)
		d->order[k] = k;
	for (uint32_t k = NSTACKS - 1; k > 0; k--) {
		uint32_t j = (uint32_t)(prng(&state) % (k + 1));
		uint32_t tmp = d->order[k];

		d->order[k] = d->order[j];
		d->order[j] = tmp;
	}
}

/* What get and its floor return for stack @pcs: length and two PCs. */
static uint32_t get_digest(size_t n, const uintptr_t *pcs)
{
	return (uint32_t)(n + pcs[0] + pcs[DEPTH - 1]);
}

/* The hash floor's bucket of @h: its top bits, as stacktab's. */
static inline uint32_t hf_bucket(uint64_t h)
{
	return (uint32_t)(h >> (64 - __builtin_ctz(NBUCKETS)));
}

/* Put every stack in every table, stack k with id k + 1; check that. */
static int populate(struct data *d)
{
	struct cds_lfht_node *ret;

	for (uint32_t k = 0; k < NSTACKS; k++) {
		const uintptr_t *q = d->stacks[k];
		uint64_t h = ring_hash_words(q, stack_len);

		d->want_id[k] = k + 1;
		d->want_get[k] = get_digest(DEPTH, q);
		d->copies[k] = (struct flr_stack){ .hash = h,
						   .id = k + 1,
						   .n = DEPTH };
		memcpy(d->copies[k].pcs, q, sizeof(d->copies[k].pcs));
		d->hf_nodes[k] = (struct hf_node){
			.next = d->hf_buckets[hf_bucket(h)],
			.id = k + 1,
			.hash = h,
			.n = DEPTH,
		};
		memcpy(d->hf_nodes[k].pcs, q, sizeof(d->hf_nodes[k].pcs));
		d->hf_buckets[hf_bucket(h)] = k + 1;
		if (stacktab_put(d->st, q, DEPTH) != k + 1)
			return fail("stacktab_put (distinct stacks)", EINVAL);
		memcpy(d->ck_objs[k].pcs, q, sizeof(d->ck_objs[k].pcs));
		d->ck_objs[k].id = k + 1;
		if (!ck_hs_put(&d->hs, CK_HS_HASH(&d->hs, ckh_hash, q),
			       &d->ck_objs[k]))
			return fail("ck_hs_put", EINVAL);
		memcpy(d->lf_nodes[k].pcs, q, sizeof(d->lf_nodes[k].pcs));
		d->lf_nodes[k].id = k + 1;
		cds_lfht_node_init(&d->lf_nodes[k].node);
		rcu_read_lock();
		ret = cds_lfht_add_unique(d->lf, h, lf_match,
					  d->lf_nodes[k].pcs,
					  &d->lf_nodes[k].node);
		rcu_read_unlock();
		if (ret != &d->lf_nodes[k].node)
			return fail("cds_lfht_add_unique", EINVAL);
	}
	return 0;
}

static int data_init(struct data *d)
{
	memset(d, 0, sizeof(*d));
	stack_len = DEPTH;
	d->stacks = calloc(NSTACKS, sizeof(*d->stacks));
	d->order = calloc(NSTACKS, sizeof(*d->order));
	d->want_id = calloc(NSTACKS, sizeof(*d->want_id));
	d->want_get = calloc(NSTACKS, sizeof(*d->want_get));
	d->copies = calloc(NSTACKS, sizeof(*d->copies));
	d->hf_buckets = calloc(NBUCKETS, sizeof(*d->hf_buckets));
	d->hf_nodes = calloc(NSTACKS, sizeof(*d->hf_nodes));
	d->ck_objs = calloc(NSTACKS, sizeof(*d->ck_objs));
	d->lf_nodes = calloc(NSTACKS, sizeof(*d->lf_nodes));
	if (!d->stacks || !d->order || !d->want_id || !d->want_get ||
	    !d->copies || !d->hf_buckets || !d->hf_nodes || !d->ck_objs ||
	    !d->lf_nodes)
		return fail("calloc", ENOMEM);
	d->st = stacktab_new(ARENA_BYTES, NSTACKS);
	if (!d->st)
		return fail("stacktab_new", errno);
	if (!ck_init(&d->hs))
		return fail("ck_hs_init", ENOMEM);
	d->lf = lf_new();
	if (!d->lf)
		return fail("cds_lfht_new", ENOMEM);
	gen_stacks(d);
	return populate(d);
}

/* Empty an rculfhash and wait until nobody can read its nodes. */
static void lf_empty(struct cds_lfht *lf)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	rcu_read_lock();
	for (cds_lfht_first(lf, &iter); (node = cds_lfht_iter_get_node(&iter));
	     cds_lfht_next(lf, &iter))
		cds_lfht_del(lf, node);
	rcu_read_unlock();
	synchronize_rcu();
}

static void data_fini(struct data *d)
{
	if (d->lf) {
		lf_empty(d->lf);
		cds_lfht_destroy(d->lf, NULL);
	}
	if (d->hs.map)
		ck_hs_destroy(&d->hs);
	stacktab_free(d->st);
	free(d->stacks);
	free(d->order);
	free(d->want_id);
	free(d->want_get);
	free(d->copies);
	free(d->hf_buckets);
	free(d->hf_nodes);
	free(d->ck_objs);
	free(d->lf_nodes);
}

/* ---- lookups: the implementations --------------------------------------- */

/*
 * A lookup batch: for each stack index in @keys[0 .. n), the result into
 * @got.  Everything it does is timed.
 */
typedef void lk_batch_fn(struct data *d, const uint32_t *keys, unsigned int n,
			 uint32_t *got);

static void put_batch(struct data *d, const uint32_t *keys, unsigned int n,
		      uint32_t *got)
{
	for (unsigned int j = 0; j < n; j++)
		got[j] = stacktab_put(d->st, d->stacks[keys[j]], DEPTH);
}

/* The floor: hash, then compare against the copy found by index. */
static void floor_batch(struct data *d, const uint32_t *keys, unsigned int n,
			uint32_t *got)
{
	for (unsigned int j = 0; j < n; j++) {
		const uintptr_t *q = d->stacks[keys[j]];
		const struct flr_stack *c = &d->copies[keys[j]];
		uint64_t h = ring_hash_words(q, stack_len);

		got[j] = c->hash == h && c->n == DEPTH &&
					 !memcmp(c->pcs, q, c->n * sizeof(*q))
				 ? c->id
				 : 0;
	}
}

/*
 * The hash floor: hash, load the bucket, compare the node it points to
 * (its chain on a mismatch).
 */
static void hash_floor_batch(struct data *d, const uint32_t *keys,
			     unsigned int n, uint32_t *got)
{
	for (unsigned int j = 0; j < n; j++) {
		const uintptr_t *q = d->stacks[keys[j]];
		uint64_t h = ring_hash_words(q, stack_len);
		uint32_t i = d->hf_buckets[hf_bucket(h)];
		const struct hf_node *nd;

		got[j] = 0;
		for (; i; i = nd->next) {
			nd = &d->hf_nodes[i - 1];
			if (nd->hash == h && nd->n == stack_len &&
			    !memcmp(nd->pcs, q, stack_len * sizeof(*q))) {
				got[j] = nd->id;
				break;
			}
		}
	}
}

static void ck_batch(struct data *d, const uint32_t *keys, unsigned int n,
		     uint32_t *got)
{
	for (unsigned int j = 0; j < n; j++) {
		const uintptr_t *q = d->stacks[keys[j]];
		const struct ck_stack *o =
			ck_hs_get(&d->hs, CK_HS_HASH(&d->hs, ckh_hash, q), q);

		got[j] = o ? o->id : 0;
	}
}

static void lf_batch(struct data *d, const uint32_t *keys, unsigned int n,
		     uint32_t *got)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	for (unsigned int j = 0; j < n; j++) {
		const uintptr_t *q = d->stacks[keys[j]];
		uint64_t h = ring_hash_words(q, stack_len);

		rcu_read_lock();
		cds_lfht_lookup(d->lf, h, lf_match, q, &iter);
		node = cds_lfht_iter_get_node(&iter);
		got[j] =
			node ? caa_container_of(node, struct lf_stack, node)->id
			     : 0;
		rcu_read_unlock();
	}
}

static void get_batch(struct data *d, const uint32_t *keys, unsigned int n,
		      uint32_t *got)
{
	for (unsigned int j = 0; j < n; j++) {
		size_t len = stacktab_get(d->st, keys[j] + 1, d->buf, DEPTH);

		got[j] = get_digest(len, d->buf);
	}
}

/* get's floor: copy the PCs of the copy found by index. */
static void copy_batch(struct data *d, const uint32_t *keys, unsigned int n,
		       uint32_t *got)
{
	for (unsigned int j = 0; j < n; j++) {
		const struct flr_stack *c = &d->copies[keys[j]];

		memcpy(d->buf, c->pcs, c->n * sizeof(c->pcs[0]));
		/* The whole copy is a result: keep every store. */
		__asm__ __volatile__("" : : "r"(d->buf) : "memory");
		got[j] = get_digest(c->n, d->buf);
	}
}

/* ---- lookups: the comparison -------------------------------------------- */

/*
 * struct lk_case - one lookup case.
 * @d:     the shared data
 * @batch: its implementation
 * @want:  the expected result per stack index
 * @size:  operations per timed batch
 * @got:   the results of the last batch
 * @name:  for error messages
 */
struct lk_case {
	struct data *d;
	lk_batch_fn *batch;
	const uint32_t *want;
	unsigned int size;
	uint32_t *got;
	const char *name;
};

static int lk_check(const struct lk_case *c, const uint32_t *keys,
		    unsigned int n)
{
	for (unsigned int j = 0; j < n; j++) {
		if (c->got[j] == c->want[keys[j]])
			continue;
		fprintf(stderr,
			"stacktab_bench: %s: stack %u gave %u, expected %u\n",
			c->name, keys[j], c->got[j], c->want[keys[j]]);
		return -1;
	}
	return 0;
}

/*
 * lk_run() - one repetition: LOOKUP_PASSES passes over the shuffled
 * stacks, in timed batches each checked untimed.
 */
static int lk_run(void *arg, struct bench_sample *s)
{
	struct lk_case *c = arg;
	const uint32_t *order = c->d->order;
	struct bench_timer t;
	unsigned int n;

	for (int pass = 0; pass < LOOKUP_PASSES; pass++) {
		for (uint32_t pos = 0; pos < NSTACKS; pos += n) {
			n = NSTACKS - pos < c->size ? NSTACKS - pos : c->size;
			bench_timer_start(&t);
			c->batch(c->d, order + pos, n, c->got);
			bench_timer_stop(&t, s, n);
			if (lk_check(c, order + pos, n))
				return -1;
		}
	}
	return 0;
}

enum { LK_PUT, LK_HFLOOR, LK_FLOOR, LK_CK, LK_LF, LK_GET, LK_COPY, LK_N };

static const char *const lk_names[LK_N] = { "stacktab",	 "hash_floor",
					    "floor",	 "ck_hs",
					    "rculfhash", "stacktab_get",
					    "copy" };
static lk_batch_fn *const lk_impls[LK_N] = { put_batch,	  hash_floor_batch,
					     floor_batch, ck_batch,
					     lf_batch,	  get_batch,
					     copy_batch };

static void lk_report(const struct bench_stats *st)
{
	struct bench_row row = {
		.name = "put hit",
		.unit = BENCH_NS_PER_OP,
		.ours = &st[LK_PUT],
		.ours_name = lk_names[LK_PUT],
		.goal_le = true,
	};

	for (int i = LK_HFLOOR; i <= LK_LF; i++) {
		if (i == LK_FLOOR) {
			bench_info_row(row.name, row.unit, row.ours,
				       row.ours_name, &st[i], lk_names[i],
				       "info: copy found by index");
			continue;
		}
		row.anchor = &st[i];
		row.anchor_name = lk_names[i];
		row.goal_ratio = i == LK_HFLOOR ? 1.3 : 1.0;
		bench_report_row(&row);
	}
	row.name = "get";
	row.ours = &st[LK_GET];
	row.ours_name = "stacktab";
	row.anchor = &st[LK_FLOOR];
	row.anchor_name = lk_names[LK_FLOOR];
	row.goal_ratio = 1.0;
	row.note = "info: copy-out vs hash+compare";
	bench_report_row(&row);
}

/**
 * lookups() - measure and report put hit and get against their anchors.
 * @o:    options
 * @d:    the populated tables
 * @copy: filled in with the stats of get's copy floor, for a note
 *
 * Return: 0, or -1 if anything failed.
 */
static int lookups(const struct bench_opts *o, struct data *d,
		   struct bench_stats *copy)
{
	struct lk_case c[LK_N];
	struct bench_case bc[LK_N];
	struct bench_stats st[LK_N];
	uint32_t *got = calloc(o->batch, sizeof(*got));
	int rc;

	if (!got)
		return fail("calloc", ENOMEM);
	for (int i = 0; i < LK_N; i++) {
		c[i] = (struct lk_case){
			.d = d,
			.batch = lk_impls[i],
			.want = i >= LK_GET ? d->want_get : d->want_id,
			.size = o->batch,
			.got = got,
			.name = lk_names[i],
		};
		bc[i] = (struct bench_case){ lk_names[i], lk_run, &c[i] };
	}
	rc = bench_run_cases(bc, LK_N, o, st);
	if (!rc) {
		lk_report(st);
		*copy = st[LK_COPY];
	}
	free(got);
	return rc;
}

/* ---- inserts ------------------------------------------------------------ */

struct ins_case;

/*
 * struct ins_ops - one implementation under the insert workload.
 * @init:  create the table and, for the anchors, allocate and first touch
 *         one node per stack, so that no timed insert pays for them;
 *         0, or -1 after printing why
 * @reset: empty the table (untimed)
 * @batch: insert stacks @keys[0 .. n) as ids @id, @id + 1, ...; each
 *         result into @got (timed)
 */
struct ins_ops {
	int (*init)(struct ins_case *c);
	void (*reset)(struct ins_case *c);
	void (*batch)(struct ins_case *c, const uint32_t *keys, unsigned int n,
		      uint32_t id, uint32_t *got);
};

/*
 * struct ins_case - the state of one insert case.
 * @ops:     its implementation
 * @d:       the stacks and the order
 * @size:    operations per timed batch
 * @got:     the results of the last batch
 * @faults:  minor page faults in its timed rounds
 * @rounds:  its timed rounds
 * @st:      stacktab
 * @hs, @ck_pool: ck_hs and its objects (one per stack, preallocated)
 * @lf, @lf_pool: rculfhash and its nodes (one per stack, preallocated)
 */
struct ins_case {
	const struct ins_ops *ops;
	struct data *d;
	unsigned int size;
	uint32_t *got;
	uint64_t faults;
	uint64_t rounds;
	struct stacktab *st;
	struct ck_hs hs;
	struct ck_stack *ck_pool;
	struct cds_lfht *lf;
	struct lf_stack *lf_pool;
};

static int st_ins_init(struct ins_case *c)
{
	c->st = stacktab_new(ARENA_BYTES, NSTACKS);
	return c->st ? 0 : fail("stacktab_new", errno);
}

/* A new generation: empty; steady generations keep their pages. */
static void st_reset(struct ins_case *c)
{
	stacktab_reset(c->st, NULL, NULL);
}

static void st_ins_batch(struct ins_case *c, const uint32_t *keys,
			 unsigned int n, uint32_t id, uint32_t *got)
{
	(void)id; /* stacktab numbers a generation's stacks from 1 */
	for (unsigned int j = 0; j < n; j++)
		got[j] = stacktab_put(c->st, c->d->stacks[keys[j]], DEPTH);
}

/* Touch every page of @p (a nonzero fill: no compiler makes it calloc()). */
static void *prefault(void *p, size_t bytes)
{
	if (p)
		memset(p, 0xa5, bytes);
	return p;
}

static int ck_ins_init(struct ins_case *c)
{
	c->ck_pool = prefault(malloc(NSTACKS * sizeof(*c->ck_pool)),
			      NSTACKS * sizeof(*c->ck_pool));
	return c->ck_pool && ck_init(&c->hs) ? 0 : fail("ck_hs set-up", ENOMEM);
}

static void ck_reset(struct ins_case *c)
{
	ck_hs_reset(&c->hs);
}

static void ck_ins_batch(struct ins_case *c, const uint32_t *keys,
			 unsigned int n, uint32_t id, uint32_t *got)
{
	for (unsigned int j = 0; j < n; j++) {
		const uintptr_t *q = c->d->stacks[keys[j]];
		struct ck_stack *o = &c->ck_pool[keys[j]];

		memcpy(o->pcs, q, sizeof(o->pcs));
		o->id = id + j;
		got[j] = ck_hs_put(&c->hs, CK_HS_HASH(&c->hs, ckh_hash, q), o)
				 ? o->id
				 : 0;
	}
}

static int lf_ins_init(struct ins_case *c)
{
	c->lf_pool = prefault(malloc(NSTACKS * sizeof(*c->lf_pool)),
			      NSTACKS * sizeof(*c->lf_pool));
	c->lf = lf_new();
	return c->lf_pool && c->lf ? 0 : fail("rculfhash set-up", ENOMEM);
}

static void lf_reset(struct ins_case *c)
{
	lf_empty(c->lf);
}

static void lf_ins_batch(struct ins_case *c, const uint32_t *keys,
			 unsigned int n, uint32_t id, uint32_t *got)
{
	struct cds_lfht_node *ret;

	for (unsigned int j = 0; j < n; j++) {
		const uintptr_t *q = c->d->stacks[keys[j]];
		struct lf_stack *nd = &c->lf_pool[keys[j]];
		uint64_t h = ring_hash_words(q, stack_len);

		memcpy(nd->pcs, q, sizeof(nd->pcs));
		nd->id = id + j;
		cds_lfht_node_init(&nd->node);
		rcu_read_lock();
		ret = cds_lfht_add_unique(c->lf, h, lf_match, nd->pcs,
					  &nd->node);
		rcu_read_unlock();
		got[j] = ret == &nd->node ? nd->id : 0;
	}
}

static const struct ins_ops st_ins_ops = { st_ins_init, st_reset,
					   st_ins_batch };
static const struct ins_ops ck_ins_ops = { ck_ins_init, ck_reset,
					   ck_ins_batch };
static const struct ins_ops lf_ins_ops = { lf_ins_init, lf_reset,
					   lf_ins_batch };

static uint64_t minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_minflt;
}

/* Every insert of the batch that began at id @id got its own new id. */
static int ins_check(const struct ins_case *c, unsigned int n, uint32_t id)
{
	for (unsigned int j = 0; j < n; j++) {
		if (c->got[j] == id + j)
			continue;
		fprintf(stderr, "stacktab_bench: insert %u gave %u\n", id + j,
			c->got[j]);
		return -1;
	}
	return 0;
}

/* One round: empty the table, insert every stack in the shuffled order. */
static int ins_round(struct ins_case *c, struct bench_sample *s)
{
	const uint32_t *order = c->d->order;
	struct bench_timer t;
	uint64_t faults;
	unsigned int n;

	c->ops->reset(c);
	faults = minor_faults();
	for (uint32_t pos = 0; pos < NSTACKS; pos += n) {
		n = NSTACKS - pos < c->size ? NSTACKS - pos : c->size;
		bench_timer_start(&t);
		c->ops->batch(c, order + pos, n, pos + 1, c->got);
		bench_timer_stop(&t, s, n);
		if (ins_check(c, n, pos + 1))
			return -1;
	}
	c->faults += minor_faults() - faults;
	c->rounds++;
	return 0;
}

static int ins_run(void *arg, struct bench_sample *s)
{
	for (int r = 0; r < INSERT_ROUNDS; r++)
		if (ins_round(arg, s))
			return -1;
	return 0;
}

static void ins_fini(struct ins_case *c)
{
	stacktab_free(c->st);
	if (c->hs.map)
		ck_hs_destroy(&c->hs);
	if (c->lf) {
		lf_empty(c->lf);
		cds_lfht_destroy(c->lf, NULL);
	}
	free(c->ck_pool);
	free(c->lf_pool);
}

enum { INS_ST, INS_CK, INS_LF, INS_N };

static const char *const ins_names[INS_N] = { "stacktab", "ck_hs",
					      "rculfhash" };
static const struct ins_ops *const ins_impls[INS_N] = {
	&st_ins_ops,
	&ck_ins_ops,
	&lf_ins_ops,
};

static void ins_report(const struct bench_stats *st)
{
	struct bench_row row = {
		.name = "insert",
		.unit = BENCH_NS_PER_OP,
		.ours = &st[INS_ST],
		.ours_name = ins_names[INS_ST],
		.goal_ratio = 1.0,
		.goal_le = true,
		.note = "info: anchors' nodes preallocated",
	};

	for (int i = INS_CK; i < INS_N; i++) {
		row.anchor = &st[i];
		row.anchor_name = ins_names[i];
		bench_report_row(&row);
	}
}

/* Minor page faults per insert, over the timed rounds of @c. */
static double faults_per_insert(const struct ins_case *c)
{
	return c->rounds ? (double)c->faults / (double)(c->rounds * NSTACKS)
			 : 0;
}

/**
 * inserts() - measure and report inserts into an empty table.
 * @o: options
 * @d: the stacks and the order
 *
 * Return: 0, or -1 if anything failed.
 */
static int inserts(const struct bench_opts *o, struct data *d)
{
	struct ins_case c[INS_N] = { 0 };
	struct bench_case bc[INS_N];
	struct bench_stats st[INS_N];
	uint32_t *got = calloc(o->batch, sizeof(*got));
	int rc = -1;

	if (!got)
		return fail("calloc", ENOMEM);
	for (int i = 0; i < INS_N; i++) {
		c[i].ops = ins_impls[i];
		c[i].d = d;
		c[i].size = o->batch;
		c[i].got = got;
		bc[i] = (struct bench_case){ ins_names[i], ins_run, &c[i] };
		if (c[i].ops->init(&c[i]))
			goto out;
	}
	rc = bench_run_cases(bc, INS_N, o, st);
	if (!rc) {
		ins_report(st);
		bench_report_note("Insert: minor page faults per insert in the "
				  "timed region: stacktab %.3f, ck_hs %.3f, "
				  "rculfhash %.3f.",
				  faults_per_insert(&c[INS_ST]),
				  faults_per_insert(&c[INS_CK]),
				  faults_per_insert(&c[INS_LF]));
	}
out:
	for (int i = 0; i < INS_N; i++)
		ins_fini(&c[i]);
	free(got);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_stats copy = { 0 };
	struct bench_opts o;
	struct data d;
	int rc = 1;

	bench_parse_args(argc, argv, &o);
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "stacktab_bench: cannot pin to CPU 0\n");
	rcu_register_thread();
	if (data_init(&d))
		goto out;
	bench_report_begin("stacktab_bench", &o);
	if (lookups(&o, &d, &copy) || inserts(&o, &d))
		goto out;
	bench_report_note("Stacks of %d PCs, %u distinct, visited in one "
			  "shuffled order; batches of %u ops; lookups: %d "
			  "passes per repetition; inserts: %d rounds into an "
			  "empty table per repetition.",
			  DEPTH, NSTACKS, o.batch, LOOKUP_PASSES,
			  INSERT_ROUNDS);
	bench_report_note("get's own floor (memcpy of %d PCs from a copy "
			  "found by index): %.2f ns [%.2f-%.2f].",
			  DEPTH, copy.median, copy.min, copy.max);
	bench_report_end();
	rc = 0;
out:
	data_fini(&d);
	rcu_unregister_thread();
	return rc;
}
