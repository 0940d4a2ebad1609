// SPDX-License-Identifier: MIT
/*
 * bench/stacktab/lookups.c - put hit and get: stacktab, the floors, ck_hs
 * and rculfhash over the same stacks and order, and their rows.
 */
#include "bench/stacktab/stacktab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int lookups(const struct bench_opts *o, struct data *d,
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
