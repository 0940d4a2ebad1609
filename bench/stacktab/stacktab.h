/* SPDX-License-Identifier: MIT */
/*
 * bench/stacktab/stacktab.h - what the parts of stacktab_bench share: the
 * constants, the run-time stack length, the nodes of the anchors, the data
 * set (struct data), the helpers the timed loops inline, and the entry
 * points of each part.  What the benchmark measures and why is said at
 * the top of bench/stacktab_bench.c.
 *
 *   data.c     the stacks, their order, and the populated tables
 *   anchors.c  ck_hs's and rculfhash's callbacks and set-up
 *   lookups.c  put hit and get against their anchors
 *   inserts.c  inserts into an empty table against ck_hs and rculfhash
 */
#ifndef PROFRING_BENCH_STACKTAB_H
#define PROFRING_BENCH_STACKTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ck_hs.h>
#include <urcu.h>
#include <urcu/rculfhash.h>

#include <profring/stacktab.h>

#include "ring/hash.h"
#include "bench/harness.h"

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
extern size_t stack_len;

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

/* Report what failed; returns -1. */
int fail(const char *what, int err);

/* ---- inline in the timed loops ---------------------------------------- */

static inline unsigned long ckh_hash(const void *key, unsigned long seed)
{
	return (unsigned long)ring_hash_words(key, stack_len) ^ seed;
}

/* What get and its floor return for stack @pcs: length and two PCs. */
static inline uint32_t get_digest(size_t n, const uintptr_t *pcs)
{
	return (uint32_t)(n + pcs[0] + pcs[DEPTH - 1]);
}

/* The hash floor's bucket of @h: its top bits, as stacktab's. */
static inline uint32_t hf_bucket(uint64_t h)
{
	return (uint32_t)(h >> (64 - __builtin_ctz(NBUCKETS)));
}

/* ---- data.c ------------------------------------------------------------ */

int data_init(struct data *d);
void data_fini(struct data *d);

/* ---- anchors.c --------------------------------------------------------- */

int lf_match(struct cds_lfht_node *node, const void *key);
bool ck_init(struct ck_hs *hs);
struct cds_lfht *lf_new(void);
void lf_empty(struct cds_lfht *lf);

/* ---- lookups.c, inserts.c ---------------------------------------------- */

int lookups(const struct bench_opts *o, struct data *d,
	    struct bench_stats *copy);
int inserts(const struct bench_opts *o, struct data *d);

#endif /* PROFRING_BENCH_STACKTAB_H */
