// SPDX-License-Identifier: MIT
/*
 * bench/stacktab_bench.c - stacktab against its anchors.  This file is
 * the description and main(); the parts are in bench/stacktab/
 * (stacktab.h says which file holds which).
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
#include <stdio.h>

#include "stacktab/stacktab.h"

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
