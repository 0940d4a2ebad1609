// SPDX-License-Identifier: MIT
/*
 * stacktab_collide_test.c - stacks whose 64-bit hashes are equal.
 *
 * The hit path of stacktab_put() compares the PCs of the first node of its
 * chain with the same hash and length only, and leaves everything else to
 * its slow path; random stacks never collide, so these tests make
 * collisions.  ring_hash_words() mixes four lanes, each a bijection of its
 * word for a given lane state, and folds them with rotations and xor: a
 * stack whose lane b takes another value and whose lane d cancels that in
 * the fold has the same hash.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include <profring/stacktab.h>

#include "ring/hash.h"
#include "stacktab/stacktab_testing.h"
#include "testing/ktest.h"

/*
 * GCC 12 warns that the hash's tail loop would overflow for a length near
 * 2^61 (as in bench/work/opcount.c): the lengths here are DEPTH.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif

#define DEPTH 32 /* eight rounds of the four lanes, no tail */
#define COLL 8 /* stacks of one hash */

static uintptr_t coll[COLL][DEPTH];

static uint64_t rotl(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

/* The word that takes a lane from state @acc to state @out. */
static uint64_t lane_word(uint64_t acc, uint64_t out)
{
	uint64_t inv = RING_HASH_K1, y = out ^ (out >> 32);

	/* Newton's iteration for the inverse of K1 modulo 2^64. */
	for (int i = 0; i < 6; i++)
		inv *= 2 - RING_HASH_K1 * inv;
	return (y * inv) ^ acc;
}

/*
 * Stacks 1 ... COLL - 1: stack 0 with the last words of lanes b (index
 * DEPTH - 3) and d (DEPTH - 1) changed so that the fold is unchanged.
 */
static void make_collisions(void)
{
	uint64_t lane[4] = { DEPTH, RING_HASH_K2, ~(uint64_t)DEPTH,
			     RING_HASH_K1 };
	uint64_t b_end, d_end;

	for (int k = 0; k < DEPTH; k++)
		coll[0][k] = 0x555555554000ull + 16 * (uintptr_t)k;
	/* The lane states before the last round. */
	for (int k = 0; k < DEPTH - 4; k++)
		lane[k % 4] = ring_hash_lane(lane[k % 4], coll[0][k]);
	b_end = ring_hash_lane(lane[1], coll[0][DEPTH - 3]);
	d_end = ring_hash_lane(lane[3], coll[0][DEPTH - 1]);
	for (int i = 1; i < COLL; i++) {
		uint64_t b = ring_hash_lane(lane[1], coll[0][DEPTH - 3] + i);

		memcpy(coll[i], coll[0], sizeof(coll[0]));
		coll[i][DEPTH - 3] += i;
		coll[i][DEPTH - 1] = lane_word(
			lane[3], d_end ^ rotl(b_end, 21) ^ rotl(b, 21));
	}
}

/* The construction holds: one hash, COLL different stacks. */
static void collisions_are_real(void)
{
	uint64_t h = ring_hash_words(coll[0], DEPTH);

	for (int i = 1; i < COLL; i++) {
		KT_CHECK_EQ(ring_hash_words(coll[i], DEPTH), h);
		KT_CHECK(memcmp(coll[i], coll[0], sizeof(coll[0])) != 0);
	}
}

/*
 * Each colliding stack gets its own id and keeps it; a put of a stack
 * behind a colliding node in its chain (all but the last put: nodes are
 * pushed at the head) is a hit, counted as one.
 */
static void colliding_stacks_keep_ids(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 64);
	uint32_t ids[COLL];
	uintptr_t out[DEPTH];
	struct stacktab_stats st;
	int walked = 0;

	KT_REQUIRE(t);
	for (int i = 0; i < COLL; i++) {
		ids[i] = stacktab_put(t, coll[i], DEPTH);
		KT_CHECK(ids[i] != 0);
		for (int j = 0; j < i; j++)
			KT_CHECK(ids[i] != ids[j]);
	}
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < COLL; i++)
			KT_CHECK_EQ(stacktab_put(t, coll[i], DEPTH), ids[i]);
	for (int i = 0; i < COLL; i++) {
		KT_CHECK_EQ(stacktab_get(t, ids[i], out, DEPTH), DEPTH);
		KT_CHECK(!memcmp(out, coll[i], sizeof(out)));
	}
	KT_CHECK_EQ(stacktab_foreach(t, stacktab_test_count, &walked), 0);
	KT_CHECK_EQ(walked, COLL);
	stacktab_stats(t, &st);
	KT_CHECK_EQ(st.inserts, COLL);
	KT_CHECK_EQ(st.hits, 3 * COLL);
	KT_CHECK_EQ(st.stacks, COLL);
	KT_CHECK_EQ(st.losses, 0);
	stacktab_free(t);
}

/* ---- threads racing inserts of colliding stacks ------------------------ */

#define RACERS 2
#define ROUNDS 2000

struct racer {
	struct stacktab *t;
	atomic_int *go; /* the round the racers may start */
	atomic_int *done; /* rounds finished, summed over the racers */
	int idx;
	uint32_t ids[COLL];
};

/* Put every colliding stack, racer 0 in order, racer 1 in reverse. */
static void *racer_main(void *arg)
{
	struct racer *r = arg;

	for (int round = 1; round <= ROUNDS; round++) {
		while (atomic_load(r->go) < round)
			sched_yield();
		for (int k = 0; k < COLL; k++) {
			int i = r->idx ? COLL - 1 - k : k;

			r->ids[i] = stacktab_put(r->t, coll[i], DEPTH);
		}
		atomic_fetch_add(r->done, 1);
	}
	return NULL;
}

/*
 * Two threads put the same colliding stacks into an emptied table, round
 * after round: they agree on every id, and the ids are distinct.
 */
static void racing_colliding_inserts(void)
{
	struct stacktab *t = stacktab_new(1 << 20, 64);
	struct racer r[RACERS];
	pthread_t th[RACERS];
	atomic_int go = 0, done = 0;
	int bad = 0;

	KT_REQUIRE(t);
	for (int i = 0; i < RACERS; i++) {
		r[i] = (struct racer){
			.t = t, .go = &go, .done = &done, .idx = i
		};
		KT_REQUIRE(!pthread_create(&th[i], NULL, racer_main, &r[i]));
	}
	for (int round = 1; round <= ROUNDS; round++) {
		atomic_store(&go, round);
		while (atomic_load(&done) < RACERS * round)
			sched_yield();
		for (int i = 0; i < COLL; i++) {
			bad |= !r[0].ids[i] || r[0].ids[i] != r[1].ids[i];
			for (int j = 0; j < i; j++)
				bad |= r[0].ids[i] == r[0].ids[j];
		}
		KT_CHECK_EQ(stacktab_reset(t, NULL, NULL), 0);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	KT_CHECK_EQ(bad, 0);
	stacktab_free(t);
}

int main(void)
{
	make_collisions();
	KT_RUN(collisions_are_real);
	KT_RUN(colliding_stacks_keep_ids);
	KT_RUN(racing_colliding_inserts);
	return ktest_exit();
}
