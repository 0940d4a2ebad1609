// SPDX-License-Identifier: MIT
/*
 * grace_test.c - regression tests for ring/grace: each case is a bug that
 * a stress run or a review found.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring/grace.h"
#include "testing/ktest.h"

struct waiter {
	struct ring_grace *g;
	atomic_bool done;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	ring_grace_wait(w->g);
	atomic_store(&w->done, true);
	return NULL;
}

/* A nested section (a handler's) must not end the one it interrupted. */
static void nested_section_keeps_outer(void)
{
	struct ring_grace g;
	struct ring_grace_section outer, inner;
	struct waiter w = { .g = &g };
	pthread_t th;

	KT_REQUIRE(ring_grace_init(&g, 16, false) == 0);
	KT_REQUIRE(ring_grace_enter(&g, &outer));
	pthread_create(&th, NULL, wait_main, &w);
	usleep(20000);
	KT_CHECK(!atomic_load(&w.done));
	KT_REQUIRE(ring_grace_enter(&g, &inner)); /* as a handler would */
	ring_grace_exit(&inner);
	usleep(50000);
	KT_CHECK(!atomic_load(&w.done)); /* the outer section goes on */
	ring_grace_exit(&outer);
	pthread_join(th, NULL);
	KT_CHECK(atomic_load(&w.done));
	ring_grace_destroy(&g);
}

struct claimer {
	struct ring_grace *g;
	struct ring_grace_slot *slot;
	uint64_t token;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int step;
};

static void *first_main(void *arg)
{
	struct claimer *c = arg;

	c->slot = ring_grace_slot(c->g);
	c->token = __atomic_load_n(&ring_grace_tls.token, __ATOMIC_RELAXED);
	return NULL; /* exits: its slot may be released */
}

/*
 * Two slots, two threads: A claims one, B the other; A exits and its slot
 * becomes a tombstone.  B, looking its slot up again (a cache miss), must
 * find its own - not claim A's, even if A's comes first in B's probe
 * order.  Repeated so that B's probe starts at A's slot in some rounds.
 */
static void one_slot_per_thread(void)
{
	for (int round = 0; round < 24; round++) {
		struct ring_grace g;
		struct claimer a = { .g = &g };
		struct ring_grace_slot *mine, *again;
		pthread_t th;

		KT_REQUIRE(ring_grace_init(&g, 2, false) == 0);
		pthread_create(&th, NULL, first_main, &a);
		pthread_join(th, NULL);
		KT_REQUIRE(a.slot);
		/* This thread takes the other slot (A's is still held). */
		mine = ring_grace_slot_slow(&g);
		KT_REQUIRE(mine && mine != a.slot);
		KT_CHECK(ring_grace_release(&g, (uint32_t)(a.slot - g.slots),
					    a.token));
		again = ring_grace_slot_slow(&g);
		KT_CHECK(again == mine);
		ring_grace_destroy(&g);
	}
}

struct token_probe {
	struct ring_grace *g;
	uint64_t token;
};

static void *token_main(void *arg)
{
	struct token_probe *p = arg;

	ring_grace_slot_slow(p->g);
	p->token = __atomic_load_n(&ring_grace_tls.token, __ATOMIC_RELAXED);
	return NULL;
}

/* Every thread is a new owner, even one that reuses a dead thread's tid. */
static void tokens_are_per_thread(void)
{
	struct ring_grace g;
	uint64_t seen[64];

	KT_REQUIRE(ring_grace_init(&g, 128, false) == 0);
	for (int i = 0; i < 64; i++) {
		struct token_probe p = { .g = &g };
		pthread_t th;

		pthread_create(&th, NULL, token_main, &p);
		pthread_join(th, NULL);
		seen[i] = p.token;
		KT_CHECK(ring_grace_owned(seen[i]));
		for (int k = 0; k < i; k++)
			KT_CHECK(seen[k] != seen[i]);
	}
	ring_grace_destroy(&g);
}

struct holder {
	struct ring_grace *g;
	atomic_int state; /* 1: inside; 2: may leave */
	bool die;
};

/* Enter a section, then die inside it or wait to be let out. */
static void *holder_main(void *arg)
{
	struct holder *h = arg;
	struct ring_grace_section sec;

	if (!ring_grace_enter(h->g, &sec))
		return NULL;
	atomic_store(&h->state, 1);
	if (h->die)
		pthread_exit(NULL); /* never leaves the section */
	while (atomic_load(&h->state) != 2)
		usleep(1000);
	ring_grace_exit(&sec);
	return NULL;
}

/*
 * Wait for a grace period on another thread, for at most 10 s.  A waiter
 * that is still waiting then is left running, with its state leaked: the
 * caller's ring_grace must then stay mapped (static) too.
 */
static bool wait_returns(struct ring_grace *g)
{
	struct waiter *w = calloc(1, sizeof(*w));
	struct timespec ts;
	pthread_t th;
	bool done;

	if (!w)
		return false;
	w->g = g;
	pthread_create(&th, NULL, wait_main, w);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (pthread_timedjoin_np(th, NULL, &ts)) {
		pthread_detach(th);
		return false;
	}
	done = atomic_load(&w->done);
	free(w);
	return done;
}

/* A thread that dies inside a section does not block grace periods. */
static void dead_owner_section_is_over(void)
{
	static struct ring_grace g;
	struct holder h = { .g = &g, .die = true };
	pthread_t th;

	KT_REQUIRE(ring_grace_init(&g, 16, false) == 0);
	KT_REQUIRE(pthread_create(&th, NULL, holder_main, &h) == 0);
	pthread_join(th, NULL);
	KT_CHECK_EQ(atomic_load(&h.state), 1);
	KT_REQUIRE(wait_returns(&g)); /* else a waiter still reads g */
	ring_grace_destroy(&g);
}

/*
 * In the child of a fork, a section another parent thread was inside
 * does not exist: a grace period there does not wait for it (it hung in
 * 99 of 100 children).  The parent still waits for it.
 */
static void fork_child_ignores_parent_sections(void)
{
	static struct ring_grace g;
	struct holder h = { .g = &g };
	int status = -1;
	pthread_t th;
	pid_t pid;

	KT_REQUIRE(ring_grace_init(&g, 16, false) == 0);
	KT_REQUIRE(pthread_create(&th, NULL, holder_main, &h) == 0);
	while (atomic_load(&h.state) != 1)
		usleep(1000);
	pid = fork();
	if (pid == 0) {
		alarm(10);
		ring_grace_wait(&g);
		_exit(0);
	}
	KT_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	KT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	atomic_store(&h.state, 2);
	pthread_join(th, NULL);
	KT_REQUIRE(wait_returns(&g)); /* else a waiter still reads g */
	ring_grace_destroy(&g);
}

/*
 * Two structures dealt the same TLS way both stay cached: the second's
 * slot takes the way and the first's moves to another, where the scan
 * finds it.  A third, in a way of its own, is found there directly.
 */
static void shared_way_keeps_both(void)
{
	struct ring_grace a, b, c;
	struct ring_grace_slot *sa, *sb, *sc;

	/* Earlier tests' entries (and `next`) out of the way; token kept. */
	memset(ring_grace_tls.slot, 0, sizeof(ring_grace_tls.slot));
	ring_grace_tls.next = 0;
	KT_REQUIRE(ring_grace_init(&a, 4, false) == 0);
	KT_REQUIRE(ring_grace_init(&b, 4, false) == 0);
	KT_REQUIRE(ring_grace_init(&c, 4, false) == 0);
	a.way = b.way = 3;
	c.way = 5;
	sa = ring_grace_slot(&a);
	sb = ring_grace_slot(&b);
	sc = ring_grace_slot(&c);
	KT_REQUIRE(sa && sb && sc);
	KT_CHECK(ring_grace_tls.slot[3] == sb);
	KT_CHECK(ring_grace_tls.slot[5] == sc);
	KT_CHECK(ring_grace_slot_cached(&a) == sa);
	KT_CHECK(ring_grace_slot_cached(&b) == sb);
	KT_CHECK(ring_grace_slot_cached(&c) == sc);
	ring_grace_destroy(&a);
	ring_grace_destroy(&b);
	ring_grace_destroy(&c);
}

int main(void)
{
	KT_RUN(nested_section_keeps_outer);
	KT_RUN(one_slot_per_thread);
	KT_RUN(tokens_are_per_thread);
	KT_RUN(shared_way_keeps_both);
	KT_RUN(dead_owner_section_is_over);
	KT_RUN(fork_child_ignores_parent_sections);
	return ktest_exit();
}
