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

#include "grace.h"
#include "region.h"

_Thread_local struct ring_grace_tls ring_grace_tls
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

/* Claim @slot for @tid if it is free or its owner has exited. */
static bool claim(struct ring_grace_slot *slot, pid_t tid, bool reclaim)
{
	/* Relaxed: the slot's word is ours alone once the CAS succeeds. */
	pid_t owner = atomic_load_explicit(&slot->tid, memory_order_relaxed);

	if (owner == tid)
		return true;
	if (owner &&
	    !(reclaim &&
	      !(atomic_load_explicit(&slot->word, memory_order_relaxed) &
		RING_GRACE_DEPTH_MASK) &&
	      ring_grace_thread_gone(owner)))
		return false;
	/*
	 * A failed CAS that finds our own tid: a signal handler on this
	 * thread claimed the slot between our load and our CAS.  It is ours;
	 * taking another would split the thread across two slots.
	 */
	/* Acquire: pairs with the release store in ring_grace_release(). */
	return atomic_compare_exchange_strong_explicit(&slot->tid, &owner, tid,
						       memory_order_acquire,
						       memory_order_relaxed) ||
	       owner == tid;
}

struct ring_grace_slot *ring_grace_slot_slow(struct ring_grace *g)
{
	pid_t tid = ring_grace_tls.tid;
	uint32_t start;

	if (!tid) {
		int saved = errno;

		tid = (pid_t)syscall(SYS_gettid);
		errno = saved;
		ring_grace_tls.tid = tid;
	}
	start = ((uint32_t)tid * 0x9e3779b1u) & (g->nslots - 1);
	/* First pass: our own or a free slot; second: a dead thread's. */
	for (int reclaim = 0; reclaim < 1 + g->reclaim; reclaim++) {
		for (uint32_t i = 0; i < g->nslots; i++) {
			struct ring_grace_slot *slot =
				&g->slots[(start + i) & (g->nslots - 1)];

			if (!claim(slot, tid, reclaim))
				continue;
			/*
			 * One pointer store: a handler that caches its own
			 * slot meanwhile can at worst evict an entry, never
			 * make one wrong (each is checked on use).
			 */
			ring_grace_tls.slot[ring_grace_tls.next++ %
					    RING_GRACE_TLS_WAYS] = slot;
			return slot;
		}
	}
	return NULL;
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

void ring_grace_wait(struct ring_grace *g)
{
	/*
	 * Pairs with the readers' compiler barrier (membarrier) or seq_cst
	 * fence in ring_grace_enter(): after this, a reader that stored its
	 * depth after we look at it also loads what we changed before.
	 */
	if (g->reader_fence ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		atomic_thread_fence(memory_order_seq_cst);

	for (uint32_t i = 0; i < g->nslots; i++) {
		struct ring_grace_slot *slot = &g->slots[i];
		unsigned int step = 0;
		uint64_t w;

		if (!atomic_load_explicit(&slot->tid, memory_order_relaxed))
			continue;
		/* Acquire: pairs with the release in ring_grace_exit(). */
		w = atomic_load_explicit(&slot->word, memory_order_acquire);
		while (!section_over(
			w, atomic_load_explicit(&slot->word,
						memory_order_acquire)))
			backoff(&step);
	}
}

void ring_grace_release(struct ring_grace *g, uint32_t i)
{
	/* Relaxed: published by the release store of tid below. */
	atomic_store_explicit(&g->slots[i].word, 0, memory_order_relaxed);
	atomic_store_explicit(&g->slots[i].count, 0, memory_order_relaxed);
	/*
	 * Release: pairs with the acquire CAS in claim(): the next owner
	 * starts from the reset word and count.
	 */
	atomic_store_explicit(&g->slots[i].tid, 0, memory_order_release);
}

uint64_t ring_grace_count_sum(const struct ring_grace *g)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < g->nslots; i++)
		if (atomic_load_explicit(&g->slots[i].tid,
					 memory_order_relaxed))
			sum += atomic_load_explicit(&g->slots[i].count,
						    memory_order_relaxed);
	return sum;
}
