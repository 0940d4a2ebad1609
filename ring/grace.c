// SPDX-License-Identifier: MIT
/*
 * ring/grace.c - thread slots and grace-period waits (see grace.h for the
 * protocol).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring/grace.h"
#include "ring/perturb.h"
#include "ring/region.h"

RING_API __thread struct tracebuf_tls_v1 profring__grace_tls
	__attribute__((tls_model("initial-exec")));

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static bool have_membarrier;

/* The child of fork() has a new tid: forget the parent's slot. */
static void forget_slot_in_child(void)
{
	memset(&ring_grace_tls, 0, sizeof(ring_grace_tls));
}

static void grace_once(void)
{
	pthread_atfork(NULL, NULL, forget_slot_in_child);
	have_membarrier =
		syscall(SYS_membarrier,
			MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The TLS way the next ring_grace_init() deals out. */
static _Atomic uint32_t next_way;

int ring_grace_init(struct ring_grace *g, uint32_t nslots, bool reclaim)
{
	uint32_t n = 1;

	while (n < nslots)
		n <<= 1;
	pthread_once(&atfork_once, grace_once);
	/* Lazily committed: only the pages of claimed slots are touched. */
	g->slots = ring_map_zeroed((size_t)n * sizeof(*g->slots));
	if (!g->slots)
		return -errno;
	g->nslots = n;
	/* Relaxed: a spreading hint; any value works. */
	g->way = atomic_fetch_add_explicit(&next_way, 1, memory_order_relaxed) %
		 RING_GRACE_TLS_WAYS;
	g->reader_fence = !have_membarrier;
	g->reclaim = reclaim;
	return 0;
}

void ring_grace_destroy(struct ring_grace *g)
{
	if (g->slots)
		munmap(g->slots, (size_t)g->nslots * sizeof(*g->slots));
	g->slots = NULL;
}

bool ring_grace_thread_gone(pid_t tid)
{
	int saved = errno;
	bool gone = syscall(SYS_tgkill, getpid(), tid, 0) < 0 && errno == ESRCH;

	errno = saved;
	return gone;
}

static _Atomic uint32_t next_nonce;

/*
 * The calling thread's owner token, made on first use.  A signal handler
 * may interrupt the making: whichever CAS lands first gives the thread its
 * token, the other adopts it, so a thread and its handlers are one owner.
 */
static uint64_t my_token(void)
{
	uint64_t token =
		__atomic_load_n(&ring_grace_tls.token, __ATOMIC_RELAXED);
	uint64_t none = 0;
	uint32_t nonce;
	int saved;

	if (ring_likely(token))
		return token;
	saved = errno;
	/* Relaxed: a nonce only needs to differ between threads. */
	nonce = atomic_fetch_add_explicit(&next_nonce, 1,
					  memory_order_relaxed) +
		1;
	token = (uint64_t)(nonce ? nonce : 1) << 32 |
		(uint32_t)syscall(SYS_gettid);
	errno = saved;
	/* Relaxed: our own TLS word; the CAS only settles a handler race. */
	if (__atomic_compare_exchange_n(&ring_grace_tls.token, &none, token,
					false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		return token;
	return none;
}

/*
 * cache() - put @slot in @g's own way, and the slot it displaces in way
 * `next` (skipping @g's).  Plain pointer stores: a handler that caches
 * its own slot between them can at worst evict entries (its own, or
 * ours) or leave one in two ways, never make one wrong (each is checked
 * on use); an evicted slot costs its thread the slow path's probe.
 */
static struct ring_grace_slot *cache(struct ring_grace *g,
				     struct ring_grace_slot *slot)
{
	unsigned int w = g->way;
	struct ring_grace_slot *old = ring_grace_tls.slot[w];
	unsigned int j;

	ring_grace_tls.slot[w] = slot;
	if (!old || old == slot)
		return slot;
	j = ring_grace_tls.next++ % RING_GRACE_TLS_WAYS;
	if (j == w)
		j = ring_grace_tls.next++ % RING_GRACE_TLS_WAYS;
	ring_grace_tls.slot[j] = old;
	return slot;
}

void ring_grace_setup(void)
{
	pthread_once(&atfork_once, grace_once);
}

bool ring_grace_membarrier(void)
{
	ring_grace_setup();
	return have_membarrier;
}

uint64_t ring_grace_token(void)
{
	return my_token();
}

/*
 * Claim @slot, seen holding @seen (0, a tombstone or a dead owner), for
 * @token.  A failed CAS that finds @token: a signal handler on this thread
 * claimed it between our load and our CAS; it is ours all the same.
 */
static bool claim(struct ring_grace_slot *slot, uint64_t seen, uint64_t token)
{
	/* Acquire: pairs with the release CAS in ring_grace_release(). */
	return atomic_compare_exchange_strong_explicit(
		       &slot->owner, &seen, token, memory_order_acquire,
		       memory_order_relaxed) ||
	       seen == token;
}

/* Take over the slot of a thread that has exited (with @g->reclaim). */
static struct ring_grace_slot *reclaim_dead(struct ring_grace *g,
					    uint64_t token)
{
	for (uint32_t i = 0; i < g->nslots; i++) {
		struct ring_grace_slot *slot = &g->slots[i];
		/* Relaxed: the CAS in claim() decides. */
		uint64_t o = atomic_load_explicit(&slot->owner,
						  memory_order_relaxed);

		/*
		 * Ours already: a handler on this thread claimed it after
		 * our probe.  Taking a dead slot too would give the thread
		 * two.
		 */
		if (o == token)
			return cache(g, slot);
		if (!ring_grace_owned(o) ||
		    !ring_grace_thread_gone(ring_grace_owner_tid(o)))
			continue;
		/*
		 * Only once the owner is known dead is its word final.
		 * Acquire: pairs with the release store of the dead
		 * owner's last ring_grace_exit(), the last store to its
		 * word: all it did inside its sections is visible to us,
		 * the next owner.  Seeing it dead is no ordering (as in
		 * tracebuf's release_if_gone()).
		 */
		if (!(atomic_load_explicit(&slot->word, memory_order_acquire) &
		      RING_GRACE_DEPTH_MASK) &&
		    claim(slot, o, token))
			return cache(g, slot);
	}
	return NULL;
}

struct ring_grace_slot *ring_grace_slot_slow(struct ring_grace *g)
{
	uint64_t token = my_token();
	uint32_t start = ((uint32_t)token * 0x9e3779b1u) & (g->nslots - 1);

	for (;;) {
		struct ring_grace_slot *free_slot = NULL;
		uint64_t free_seen = 0;

		/* Our slot, if any, lies before the first never-used one. */
		for (uint32_t i = 0; i < g->nslots; i++) {
			struct ring_grace_slot *slot =
				&g->slots[(start + i) & (g->nslots - 1)];
			/* Relaxed: claim() acquires. */
			uint64_t o = atomic_load_explicit(&slot->owner,
							  memory_order_relaxed);

			if (o == token)
				return cache(g, slot);
			if (!ring_grace_owned(o) && !free_slot) {
				free_slot = slot;
				free_seen = o;
			}
			if (!o)
				break;
		}
		if (!free_slot)
			return g->reclaim ? reclaim_dead(g, token) : NULL;
		ring_perturb(); /* a handler may claim it first */
		if (claim(free_slot, free_seen, token))
			return cache(g, free_slot);
		/* Another thread took it first: look again. */
	}
}

static void backoff(unsigned int *step)
{
	struct timespec ts = { 0, 1000L << (*step < 10 ? *step : 10) };

	if ((*step)++ < 16) {
		sched_yield();
		return;
	}
	nanosleep(&ts, NULL);
}

/*
 * Has the section seen in @then ended by @now?  Depth 0 means no section;
 * otherwise only the outermost exit moves the period.  A nested section
 * (a signal handler) changes the depth but not the period, so it must not
 * count: the section it interrupted is still going on.
 */
static bool section_over(uint64_t then, uint64_t now)
{
	return !(then & RING_GRACE_DEPTH_MASK) ||
	       !(now & RING_GRACE_DEPTH_MASK) ||
	       (now & ~RING_GRACE_DEPTH_MASK) !=
		       (then & ~RING_GRACE_DEPTH_MASK);
}

/*
 * A section whose thread no longer exists is over: it will never touch
 * the structure again.  So are the sections of the parent's other threads
 * in the child of fork(), where they do not exist (tgkill with the
 * child's pid says ESRCH for their tids).  Asked only after the section
 * has outlasted the first back-off steps, and then every 16th step: it
 * is a system call.
 */
static bool owner_gone(uint64_t owner, unsigned int step)
{
	return step >= 16 && !(step & 15) &&
	       ring_grace_thread_gone(ring_grace_owner_tid(owner));
}

void ring_grace_wait(struct ring_grace *g)
{
	/*
	 * Pairs with the readers' compiler barrier (membarrier) or seq_cst
	 * fence in ring_grace_enter(): after this, a reader that stored its
	 * depth after we look at it also loads what we changed before.
	 */
	if (g->reader_fence ||
	    (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) &&
	     /* Registered at init, refused now (a seccomp filter?). */
	     syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0)))
		atomic_thread_fence(memory_order_seq_cst);

	for (uint32_t i = 0; i < g->nslots; i++) {
		struct ring_grace_slot *slot = &g->slots[i];
		unsigned int step = 0;
		uint64_t w, owner;

		/* Relaxed: a slot claimed after this is in a later section. */
		owner = atomic_load_explicit(&slot->owner,
					     memory_order_relaxed);
		if (!ring_grace_owned(owner))
			continue;
		/* Acquire: pairs with the release in ring_grace_exit(). */
		w = atomic_load_explicit(&slot->word, memory_order_acquire);
		while (!section_over(
			w, atomic_load_explicit(&slot->word,
						memory_order_acquire))) {
			if (owner_gone(owner, step))
				break;
			backoff(&step);
		}
	}
}

bool ring_grace_release(struct ring_grace *g, uint32_t i, uint64_t owner)
{
	struct ring_grace_slot *slot = &g->slots[i];

	/*
	 * Relaxed: nobody uses the slot while a dead owner's token is on it;
	 * the release CAS below publishes the reset.
	 */
	atomic_store_explicit(&slot->word, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->count, 0, memory_order_relaxed);
	/*
	 * Release: pairs with the acquire CAS in claim(): the next owner
	 * starts from the reset word and count.
	 */
	return atomic_compare_exchange_strong_explicit(
		&slot->owner, &owner, RING_GRACE_TOMB, memory_order_release,
		memory_order_relaxed);
}

uint64_t ring_grace_count_sum(const struct ring_grace *g)
{
	uint64_t sum = 0;

	/* Relaxed: statistics, read while owners count. */
	for (uint32_t i = 0; i < g->nslots; i++)
		if (ring_grace_owned(atomic_load_explicit(
			    &g->slots[i].owner, memory_order_relaxed)))
			sum += atomic_load_explicit(&g->slots[i].count,
						    memory_order_relaxed);
	return sum;
}
