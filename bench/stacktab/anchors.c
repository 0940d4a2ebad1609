// SPDX-License-Identifier: MIT
/*
 * bench/stacktab/anchors.c - ck_hs's and rculfhash's callbacks (the hash
 * is inline, in stacktab.h), their set-up, and emptying an rculfhash.
 */
#include "bench/stacktab/stacktab.h"

#include <stdlib.h>
#include <string.h>

/* ---- the anchors' callbacks --------------------------------------------- */

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

int lf_match(struct cds_lfht_node *node, const void *key)
{
	const struct lf_stack *s =
		caa_container_of(node, struct lf_stack, node);

	return !memcmp(s->pcs, key, stack_len * sizeof(s->pcs[0]));
}

bool ck_init(struct ck_hs *hs)
{
	return ck_hs_init(hs, CK_HS_MODE_SPMC | CK_HS_MODE_OBJECT, ckh_hash,
			  ckh_compare, &ck_allocator, NBUCKETS / 2 + 1, 0);
}

struct cds_lfht *lf_new(void)
{
	return cds_lfht_new(NBUCKETS, NBUCKETS, NBUCKETS, 0, NULL);
}

/* Empty an rculfhash and wait until nobody can read its nodes. */
void lf_empty(struct cds_lfht *lf)
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
