// SPDX-License-Identifier: MIT
/*
 * bench/stacktab/inserts.c - inserts into an empty table: stacktab
 * against ck_hs and rculfhash, their rows and page faults.
 */
#include "bench/stacktab/stacktab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

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
int inserts(const struct bench_opts *o, struct data *d)
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
