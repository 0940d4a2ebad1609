// SPDX-License-Identifier: MIT
/*
 * bench/stacktab/data.c - the data set: NSTACKS stacks of DEPTH PCs from
 * a fixed-seed PRNG, one shuffled order, and every table populated with
 * them for the lookups.
 */
#include "bench/stacktab/stacktab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DEPTH, set at run time by data_init() (stacktab.h says why). */
size_t stack_len;

int fail(const char *what, int err)
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

int data_init(struct data *d)
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

void data_fini(struct data *d)
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
