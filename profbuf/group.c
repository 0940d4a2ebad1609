// SPDX-License-Identifier: MIT
/*
 * group.c - profbuf rings read as one (<profring/profbuf_group.h>).
 *
 * THE PROTOCOL
 *
 * A group is N private profbufs (profbuf_new()) and one reader.  Nothing
 * of profbuf's protocol (profbuf.c) changes: each ring is written by its
 * writers and read by the group exactly as a lone profbuf is; this file
 * adds only which ring a writer uses, in what order the reader visits
 * the rings, and how the reader sleeps on all of them at once.
 *
 * Which ring.  Each thread has a number, taken once from a process-wide
 * counter (relaxed fetch_add: the number is a name, not a message) and
 * kept in an initial-exec TLS word.  The number is installed with a CAS
 * from 0, so that a signal handler that interrupts its thread's first
 * write and writes first settles the same number for both: all of a
 * thread's records go to one ring, which keeps them in order.  A writer
 * uses ring (number mod N), the modulo by Lemire's multiply (fastmod,
 * precomputed at creation): the write path reads the group's read-only
 * fields, the TLS word, and its ring; writers on different rings share
 * no cache line that anybody writes.
 *
 * Reading.  The group reader reads each ring with profbuf_read()
 * non-blocking, which returns one ring's committed run (or its overflow
 * record, or its EOF) and gives back that ring's previous run.  A group
 * read returns the first run found visiting the rings in turn from the
 * one after the ring it returned last; so every ring gets a turn in N
 * reads.  To give a run's room back at once rather than N reads later, a
 * read first reads again the ring it returned last: that gives the run
 * back, and what that read returns is kept (stashed) and returned at
 * that ring's turn, before the ring is read again.  A stash is records
 * read from the ring and not yet returned: the ring's room they hold is
 * what any unread records hold.  A ring that returned EOF is done and
 * visited no more; when all are, the group read returns EOF.  Per ring
 * everything is profbuf's: runs in reservation order, overflow records
 * with the ring's own counts, EOF after everything accepted.
 *
 * Sleeping and waking.  When a visit of all rings found nothing:
 *   - if some ring has a record reserved and not committed (its w is
 *     ahead of the reader's r_next), the reader may not sleep (that
 *     writer will not look at SLEEPING): it backs off (spin, yield,
 *     sleep 1 us doubling to 1 ms) and looks again, as profbuf's reader
 *     does;
 *   - otherwise it arms every ring that is not done with profbuf's own
 *     sleep step (read.c, sleep_reader()): load the ring's futex word
 *     wake_seq, then CAS SLEEPING into its w from a value that shows
 *     nothing reserved beyond r_next and EXTRA clear (release, pairing
 *     with the acquire fence in wake_reader()).  A ring whose CAS fails
 *     has moved: the reader disarms those it armed and looks again.
 *     Having armed all, it sleeps in futex_waitv(2) on every armed
 *     ring's wake_seq with the value it loaded.
 * A ring's writer (or its close, or the end of its overflow's BUSY
 * period) that finds SLEEPING clears it in its CAS and is that ring's
 * one waker: it bumps the ring's wake_seq and futex-wakes it, which ends
 * the vector wait (or makes it return at once, if the bump came first).
 * So no wakeup is lost, by profbuf's argument, ring by ring.  On waking
 * (or on timeout) the reader disarms every ring it armed: it CASes
 * SLEEPING out of w where it is still set (withdrawn, as a timed-out
 * profbuf reader does).  Where a writer cleared it first, that writer
 * wakes its ring's word: at most one wakeup per ring armed, the first
 * of which ends the sleep; a later one finds nobody asleep, or makes the
 * next sleep return at once (its wake_seq moved), costing one more look.
 * Per ring, sleeps == wakeups + withdrawn still holds
 * (profbuf_test_counters()).
 *   Without futex_waitv (ENOSYS: Linux before 5.16; EPERM: a seccomp
 * filter that refuses it) the reader does not arm: it looks again after
 * sleeping 1 us doubling to 1 ms.
 *
 * Owned rings (profbuf_group_new_owned()).  Rings nrings ... nrings +
 * nowned - 1 of the reader's turn are rings one thread owns, with their
 * own protocol (owned.c): a visit reads one with pbo_read(), which
 * returns a run, nothing, or its EOF (after a last overflow record), and
 * gives the last run back as profbuf_read() does, so the stash and the
 * turns above work for them unchanged.  Their writers never look at
 * SLEEPING: to sleep, the reader also sets each owned ring's sleeping
 * flag, runs the membarrier (pbo_barrier()) and looks at each once more
 * (pbo_pending()); its wait vector then has one more entry, the owned
 * rings' common futex word, which their waker bumps.  A write in
 * progress on an owned ring does not keep the reader awake (its end
 * wakes it), except after close: a write that ends refused, or an owner
 * that died inside a write, wakes nobody, so the reader then polls.
 *
 * Close: profbuf_close() of every ring, each async-signal-safe, and
 * pbo_close() of every owned ring (a release store and a wakeup).
 *
 * The group's reader is the only reader of its rings: it takes the
 * group's `reading` flag (acquire exchange; release store when done,
 * handing the reader-owned fields, the rings' reader state included, to
 * the next read on any thread), and then reads the rings' reader state
 * (r_next) and w as profbuf's reader does.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <profring/profbuf.h>
#include <profring/profbuf_group.h>

#include "ring/compiler.h"
#include "ring/pindex.h"
#include "profbuf/owned_impl.h"
#include "profbuf/profbuf_impl.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#define PBG_FUTEX_32 2u /* FUTEX2_SIZE_U32 */

/* struct futex_waitv of <linux/futex.h>, which old headers lack. */
struct pbg_waitv {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t reserved;
};

/* The reader's view of one ring. */
struct pbg_ring {
	struct profbuf_read stash; /* read, returned at the ring's turn */
	bool stashed;
	bool done; /* returned EOF */
};

struct profbuf_group {
	/*
	 * Read-only once made: all that a writer reads of the group (and
	 * rings[], in cache lines of its own).
	 */
	struct profbuf **rings;
	uint32_t nrings;
	uint64_t fastmod; /* UINT64_MAX / nrings + 1 */
	/* Owned rings (owned.c), nrings ... nrings + nowned - 1 in reads. */
	struct profbuf_owned *owned;
	uint32_t nowned;
	uint32_t nall; /* nrings + nowned */
	/* Set once by profbuf_group_close(). */
	ring_cacheline_aligned _Atomic uint32_t closed;
	/* The owned rings' futex word (owned.c, Sleeping and waking). */
	ring_cacheline_aligned uint32_t owned_wake;
	/* The reader's. */
	ring_cacheline_aligned _Atomic uint32_t reading;
	struct pbg_ring *rs; /* nall */
	struct pbo_reader *ors; /* nowned */
	struct pbg_waitv *waiters; /* nrings + 1 */
	uint32_t *armed;
	uint32_t next; /* the ring the next visit starts at */
	uint32_t last; /* the ring the last read returned */
	bool returned; /* a read returned a run of ring last */
	bool eof_returned;
	bool no_waitv; /* futex_waitv() is not there (see sleep_group()) */
	bool owned_armed; /* sleeping set in the owned rings */
	bool owned_fence; /* their writers fence (no membarrier(2)) */
	uint32_t ndone;
};

/* Tests: pretend futex_waitv() is missing (profbuf/group_test.c). */
bool profbuf_group_test_no_waitv;

/* ---- which ring ---------------------------------------------------- */

/* The thread's number + 1; 0 until its first write to any group. */
static _Thread_local _Atomic uint32_t pbg_self
	__attribute__((tls_model("initial-exec")));
static _Atomic uint32_t pbg_threads;

static __attribute__((noinline, cold)) uint32_t take_thread_number(void)
{
	uint32_t mine, none = 0;

	/* Relaxed: a name, not a message; atomicity makes it unique. */
	do
		mine = atomic_fetch_add_explicit(&pbg_threads, 1,
						 memory_order_relaxed) +
		       1;
	while (!mine);
	/*
	 * Relaxed: only this thread and its signal handlers touch the word;
	 * the CAS is atomic against a handler that settled a number first,
	 * whose number we then take.
	 */
	if (!atomic_compare_exchange_strong_explicit(&pbg_self, &none, mine,
						     memory_order_relaxed,
						     memory_order_relaxed))
		mine = none;
	return mine;
}

static inline struct profbuf *ring_of_thread(const struct profbuf_group *g)
{
	/* Relaxed: thread-local; see take_thread_number(). */
	uint32_t n = atomic_load_explicit(&pbg_self, memory_order_relaxed);

	if (ring_unlikely(!n))
		n = take_thread_number();
	/* (n - 1) mod nrings, Lemire's fastmod_u32. */
	return g->rings[(uint32_t)(((unsigned __int128)(g->fastmod * (n - 1)) *
				    g->nrings) >>
				   64)];
}

RING_API struct profbuf *profbuf_group_mine(struct profbuf_group *g)
{
	return g ? ring_of_thread(g) : NULL;
}

RING_API int profbuf_group_write(struct profbuf_group *g, const void *tag,
				 int64_t now, const uint64_t *hdr, size_t nhdr,
				 const uintptr_t *stk, size_t nstk)
{
	if (ring_unlikely(!g))
		return -EINVAL;
	/* profbuf_write()'s inline fast path, here in the library. */
	return profbuf_write(ring_of_thread(g), tag, now, hdr, nhdr, stk, nstk);
}

RING_API int profbuf_group_close(struct profbuf_group *g)
{
	if (!g)
		return -EINVAL;
	/* Relaxed: each ring's close orders its writes (profbuf_close()). */
	if (atomic_exchange_explicit(&g->closed, 1, memory_order_relaxed))
		return -EALREADY;
	for (uint32_t i = 0; i < g->nrings; i++)
		profbuf_close(g->rings[i]);
	for (uint32_t i = 0; i < g->nowned; i++)
		pbo_close(&g->owned[i]);
	return 0;
}

/* ---- life cycle ---------------------------------------------------- */

RING_API struct profbuf_group *profbuf_group_new(size_t nrings, size_t hdrsize,
						 size_t bufwords, size_t ntags)
{
	return profbuf_group_new_owned(nrings, 0, hdrsize, bufwords, ntags);
}

/* The owned rings of @g and their reader state. */
static int new_owned_rings(struct profbuf_group *g, size_t nowned,
			   size_t hdrsize, size_t bufwords, size_t ntags)
{
	int rc;

	g->nowned = (uint32_t)nowned;
	if (!nowned)
		return 0;
	g->owned = aligned_alloc(RING_CACHELINE, nowned * sizeof(*g->owned));
	g->ors = calloc(nowned, sizeof(*g->ors));
	if (!g->owned || !g->ors) {
		g->nowned = 0;
		return ENOMEM;
	}
	memset(g->owned, 0, nowned * sizeof(*g->owned));
	for (size_t i = 0; i < nowned; i++) {
		rc = pbo_init(&g->owned[i], &g->ors[i], hdrsize, bufwords,
			      ntags, &g->owned_wake, (uint32_t)(g->nrings + i));
		if (rc) {
			g->nowned = (uint32_t)i;
			return -rc;
		}
	}
	g->owned_fence = g->owned[0].profbuf__fence;
	return 0;
}

RING_API struct profbuf_group *
profbuf_group_new_owned(size_t nrings, size_t nowned, size_t hdrsize,
			size_t bufwords, size_t ntags)
{
	struct profbuf_group *g;
	size_t size = (sizeof(*g) + RING_CACHELINE - 1) &
		      ~(size_t)(RING_CACHELINE - 1);
	size_t rings_size = (nrings * sizeof(*g->rings) + RING_CACHELINE - 1) &
			    ~(size_t)(RING_CACHELINE - 1);
	int err = ENOMEM;

	if (nrings == 0 || nrings > PROFBUF_GROUP_MAX_RINGS ||
	    nowned > PROFBUF_GROUP_MAX_OWNED) {
		errno = EINVAL;
		return NULL;
	}
	g = aligned_alloc(RING_CACHELINE, size);
	if (!g)
		goto fail;
	memset(g, 0, size);
	g->nrings = (uint32_t)nrings;
	g->fastmod = UINT64_MAX / nrings + 1;
	/*
	 * Writers read the ring pointers: lines of their own, so that no
	 * other allocation's writes (the reader's state) share them.
	 */
	g->rings = aligned_alloc(RING_CACHELINE, rings_size);
	if (g->rings)
		memset(g->rings, 0, rings_size);
	g->nall = (uint32_t)(nrings + nowned);
	g->rs = calloc(g->nall, sizeof(*g->rs));
	g->waiters = calloc(nrings + 1, sizeof(*g->waiters));
	g->armed = calloc(nrings, sizeof(*g->armed));
	if (!g->rings || !g->rs || !g->waiters || !g->armed)
		goto fail;
	for (size_t i = 0; i < nrings; i++) {
		g->rings[i] = profbuf_new(hdrsize, bufwords, ntags);
		if (!g->rings[i]) {
			err = errno;
			goto fail;
		}
	}
	err = new_owned_rings(g, nowned, hdrsize, bufwords, ntags);
	if (err)
		goto fail;
	return g;
fail:
	profbuf_group_free(g);
	errno = err;
	return NULL;
}

RING_API void profbuf_group_free(struct profbuf_group *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; g->rings && i < g->nrings; i++)
		profbuf_free(g->rings[i]);
	for (uint32_t i = 0; i < g->nowned; i++)
		pbo_fini(&g->owned[i], &g->ors[i]);
	free(g->owned);
	free(g->ors);
	free(g->rings);
	free(g->rs);
	free(g->waiters);
	free(g->armed);
	free(g);
}

RING_API size_t profbuf_group_nrings(const struct profbuf_group *g)
{
	return g ? g->nrings : 0;
}

RING_API size_t profbuf_group_nowned(const struct profbuf_group *g)
{
	return g ? g->nowned : 0;
}

RING_API struct profbuf_owned *profbuf_group_claim(struct profbuf_group *g)
{
	return g && g->nowned ? pbo_claim(g->owned, g->nowned) : NULL;
}

RING_API struct profbuf *profbuf_group_ring(struct profbuf_group *g, size_t i)
{
	return g && i < g->nrings ? g->rings[i] : NULL;
}

RING_API size_t profbuf_group_last_ring(const struct profbuf_group *g)
{
	return g ? g->last : 0;
}

/*
 * profbuf_group_after_fork() - see the header.  The caller is the child's
 * only user of @g: plain stores suffice (relaxed, as in
 * profbuf_after_fork()).
 */
RING_API int profbuf_group_after_fork(struct profbuf_group *g, int64_t now)
{
	int lost = 0;

	if (!g)
		return -EINVAL;
	atomic_store_explicit(&g->reading, 0, memory_order_relaxed);
	for (uint32_t i = 0; i < g->nrings; i++)
		lost += profbuf_after_fork(g->rings[i], now);
	for (uint32_t i = 0; i < g->nowned; i++)
		lost += pbo_after_fork(&g->owned[i], &g->ors[i]);
	/* Stashed runs are the parent's, counted above: not the child's. */
	for (uint32_t i = 0; i < g->nall; i++)
		g->rs[i].stashed = false;
	g->returned = false;
	g->owned_armed = false;
	return lost;
}

/* ---- the reader ---------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * struct pbg_wait - how long a read may still wait.
 * @block:    false: never wait
 * @deadline: CLOCK_MONOTONIC ns, or 0 for no limit
 * @backoff:  steps taken polling
 */
struct pbg_wait {
	bool block;
	uint64_t deadline;
	uint32_t backoff;
};

static bool deadline_passed(const struct pbg_wait *wt)
{
	return wt->deadline && now_ns() >= wt->deadline;
}

/*
 * back_off() - wait a little before looking again: spin, yield, then
 * sleep 1 us doubling to 1 ms (profbuf's wait_for_commit() steps), or
 * straight to the sleeps when @sleep_only.
 */
static void back_off(struct pbg_wait *wt, bool sleep_only)
{
	uint32_t step = wt->backoff++;
	struct timespec ts = { 0, 0 };

	if (sleep_only)
		step += 96;
	if (step < 64) {
		for (int i = 0; i < 32; i++)
			ring_cpu_relax();
	} else if (step < 96) {
		sched_yield();
	} else {
		step -= 96;
		ts.tv_nsec = step < 10 ? 1000L << step : 1000000L;
		nanosleep(&ts, NULL);
	}
}

/*
 * visit() - ring @i's turn: its stash, or a non-blocking read of it.
 * Return: 1 with @out filled in, 0 for nothing, or an error.
 */
static int visit(struct profbuf_group *g, uint32_t i, struct profbuf_read *out)
{
	struct pbg_ring *rs = &g->rs[i];
	struct profbuf_read r;
	int rc;

	if (rs->done)
		return 0;
	if (rs->stashed) {
		*out = rs->stash;
		rs->stashed = false;
		return 1;
	}
	if (i >= g->nrings) {
		rc = pbo_read(&g->owned[i - g->nrings], &g->ors[i - g->nrings],
			      &r);
		if (rc == 2) {
			rs->done = true;
			g->ndone++;
			return 0;
		}
		if (rc == 1)
			*out = r;
		return rc;
	}
	rc = profbuf_read(g->rings[i], PROFBUF_NONBLOCKING, &r);
	if (rc)
		return rc;
	if (r.eof) {
		rs->done = true;
		g->ndone++;
		return 0;
	}
	if (!r.ndata)
		return 0;
	*out = r;
	return 1;
}

/*
 * give_back_last() - read again the ring the last read returned: this
 * gives its run back to its writers; what it returns is stashed.
 */
static int give_back_last(struct profbuf_group *g)
{
	struct pbg_ring *rs = &g->rs[g->last];
	struct profbuf_read r;
	int rc = visit(g, g->last, &r);

	g->returned = false;
	if (rc == 1) {
		rs->stash = r;
		rs->stashed = true;
		rc = 0;
	}
	return rc;
}

/* Is a record reserved in @b and not yet returned (maybe uncommitted)? */
static bool ring_reserved(struct profbuf *b)
{
	/* Relaxed: as read_step()'s load of w; the stamps publish. */
	uint64_t bw = atomic_load_explicit(&b->w, memory_order_relaxed);

	return ring_pindex_tag(bw) != ring_pindex_tag(b->rs.r_next);
}

/* Take sleeping back from the owned rings, if armed. */
static void disarm_owned(struct profbuf_group *g)
{
	if (!g->owned_armed)
		return;
	for (uint32_t i = 0; i < g->nowned; i++)
		pbo_disarm(&g->owned[i]);
	g->owned_armed = false;
}

/*
 * arm_owned() - set sleeping in every owned ring not done, then the
 * barrier, then look (owned.c, Sleeping and waking); add the futex word
 * to the wait vector at @n.
 * Return: @n + 1, or 0 if a ring has something (all disarmed).
 */
static uint32_t arm_owned(struct profbuf_group *g, uint32_t n)
{
	uint32_t seq;

	if (!g->nowned)
		return n;
	/* Relaxed: pbo_arm()'s release orders it before the flags. */
	seq = __atomic_load_n(&g->owned_wake, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < g->nowned; i++)
		if (!g->rs[g->nrings + i].done)
			pbo_arm(&g->owned[i]);
	g->owned_armed = true;
	if (!pbo_barrier(g->owned_fence)) {
		/* membarrier(2) refused since: poll from now on. */
		g->no_waitv = true;
		disarm_owned(g);
		return 0;
	}
	for (uint32_t i = 0; i < g->nowned; i++) {
		if (!g->rs[g->nrings + i].done &&
		    pbo_pending(&g->owned[i], &g->ors[i])) {
			disarm_owned(g);
			return 0;
		}
	}
	g->waiters[n] = (struct pbg_waitv){
		.val = seq,
		.uaddr = (uint64_t)(uintptr_t)&g->owned_wake,
		.flags = PBG_FUTEX_32 | FUTEX_PRIVATE_FLAG,
	};
	return n + 1;
}

/* Take SLEEPING back from the first @n armed rings. */
static void disarm(struct profbuf_group *g, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		struct profbuf *b = g->rings[g->armed[k]];
		uint64_t cur =
			atomic_load_explicit(&b->w, memory_order_relaxed);

		/*
		 * Relaxed: we only withdraw the flag, as sleep_reader() does
		 * on timeout; a writer that took it first wakes that ring.
		 */
		while (cur & PB_SLEEPING) {
			if (atomic_compare_exchange_weak_explicit(
				    &b->w, &cur, cur & ~PB_SLEEPING,
				    memory_order_relaxed,
				    memory_order_relaxed)) {
				b->rs.withdrawn++;
				break;
			}
		}
	}
}

/*
 * arm() - set SLEEPING in every ring that is not done, each from a w
 * that shows nothing reserved and EXTRA clear (see the protocol), and
 * fill the wait vector.
 * Return: how many rings were armed, or 0 if one moved (all disarmed).
 */
static uint32_t arm(struct profbuf_group *g)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->nrings; i++) {
		struct profbuf *b = g->rings[i];
		uint32_t seq;
		uint64_t bw;

		if (g->rs[i].done)
			continue;
		seq = atomic_load_explicit(&b->wake_seq, memory_order_relaxed);
		bw = atomic_load_explicit(&b->w, memory_order_relaxed);
		/*
		 * Release: pairs with the acquire fence in wake_reader(): our
		 * load of wake_seq above happens before the waker's increment.
		 */
		if (ring_pindex_tag(bw) != ring_pindex_tag(b->rs.r_next) ||
		    (bw & (PB_EXTRA | PB_SLEEPING)) ||
		    !atomic_compare_exchange_strong_explicit(
			    &b->w, &bw, bw | PB_SLEEPING, memory_order_release,
			    memory_order_relaxed)) {
			disarm(g, n);
			return 0;
		}
		b->rs.sleeps++;
		g->waiters[n] = (struct pbg_waitv){
			.val = seq,
			.uaddr = (uint64_t)(uintptr_t)&b->wake_seq,
			.flags = PBG_FUTEX_32 | FUTEX_PRIVATE_FLAG,
		};
		g->armed[n++] = i;
	}
	if (g->nowned) {
		uint32_t m = arm_owned(g, n);

		if (!m)
			disarm(g, n);
		n = m;
	}
	return n;
}

/*
 * sleep_group() - sleep until a write, overflow or close on any ring
 * (see the protocol).
 * Return: 0 to look again, -ETIMEDOUT.
 */
static int sleep_group(struct profbuf_group *g, struct pbg_wait *wt)
{
	struct timespec abs, *timeout = NULL;
	uint32_t n;
	long rc;
	int err, saved = errno;

	if (wt->deadline) {
		abs.tv_sec = (time_t)(wt->deadline / 1000000000u);
		abs.tv_nsec = (long)(wt->deadline % 1000000000u);
		timeout = &abs;
	}
	n = arm(g);
	if (!n)
		return 0;
	rc = syscall(SYS_futex_waitv, g->waiters, n, 0, timeout,
		     CLOCK_MONOTONIC);
	err = rc < 0 ? errno : 0;
	errno = saved;
	disarm(g, n - g->owned_armed);
	disarm_owned(g);
	/*
	 * ENOSYS: a kernel before 5.16.  EPERM: a seccomp filter that does
	 * not know the call (container runtimes' default profiles answer
	 * so).  Either would fail again at once, every look: poll instead.
	 */
	if (err == ENOSYS || err == EPERM)
		g->no_waitv = true;
	return err == ETIMEDOUT ? -ETIMEDOUT : 0;
}

/*
 * look() - one visit of every ring, in turn from g->next.
 * Return: 1 with @out filled in (records or EOF), 0 for nothing, or an
 * error.
 */
static int look(struct profbuf_group *g, struct profbuf_read *out)
{
	int rc;

	for (uint32_t k = 0; k < g->nall; k++) {
		uint32_t i = (g->next + k) % g->nall;

		rc = visit(g, i, out);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			if (i >= g->nrings)
				g->ors[i - g->nrings].read_to =
					g->ors[i - g->nrings].r_next;
			g->last = i;
			g->returned = true;
			g->next = (i + 1) % g->nall;
			return 1;
		}
	}
	if (g->ndone == g->nall) {
		g->eof_returned = true;
		out->eof = true;
		return 1;
	}
	return 0;
}

/*
 * wait_step() - nothing was found: wait for something, as the protocol
 * says.  Return: 0 to look again, -ETIMEDOUT.
 */
static int wait_step(struct profbuf_group *g, struct pbg_wait *wt)
{
	if (deadline_passed(wt))
		return -ETIMEDOUT;
	for (uint32_t i = 0; i < g->nrings; i++) {
		if (!g->rs[i].done && ring_reserved(g->rings[i])) {
			back_off(wt, false);
			return 0;
		}
	}
	for (uint32_t i = 0; i < g->nowned; i++) {
		if (!g->rs[g->nrings + i].done && pbo_closing(&g->owned[i])) {
			back_off(wt, false);
			return 0;
		}
	}
	if (g->no_waitv || profbuf_group_test_no_waitv) {
		back_off(wt, true);
		return 0;
	}
	return sleep_group(g, wt);
}

static int read_group(struct profbuf_group *g, struct pbg_wait *wt,
		      struct profbuf_read *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (g->eof_returned) {
		out->eof = true;
		return 0;
	}
	if (g->returned) {
		rc = give_back_last(g);
		if (rc)
			return rc;
	}
	for (;;) {
		rc = look(g, out);
		if (rc)
			return rc < 0 ? rc : 0;
		if (!wt->block)
			return 0;
		rc = wait_step(g, wt);
		if (rc == -ETIMEDOUT) {
			/* One last look: a timeout never hides a record. */
			rc = look(g, out);
			if (rc)
				return rc < 0 ? rc : 0;
			return -ETIMEDOUT;
		}
	}
}

static int read_common(struct profbuf_group *g, struct pbg_wait *wt,
		       struct profbuf_read *out)
{
	int rc;

	if (!g || !out)
		return -EINVAL;
	/*
	 * Acquire: pairs with the release store at the end of the previous
	 * read, handing over the reader-owned fields.
	 */
	if (atomic_exchange_explicit(&g->reading, 1, memory_order_acquire))
		return -EBUSY;
	rc = read_group(g, wt, out);
	if (rc < 0)
		memset(out, 0, sizeof(*out));
	/* Release: pairs with the acquire exchange above. */
	atomic_store_explicit(&g->reading, 0, memory_order_release);
	return rc;
}

RING_API int profbuf_group_read(struct profbuf_group *g, enum profbuf_mode mode,
				struct profbuf_read *r)
{
	struct pbg_wait wt = { .block = mode == PROFBUF_BLOCKING };

	if (mode != PROFBUF_BLOCKING && mode != PROFBUF_NONBLOCKING)
		return -EINVAL;
	return read_common(g, &wt, r);
}

RING_API int profbuf_group_read_timeout(struct profbuf_group *g,
					uint64_t timeout_ns,
					struct profbuf_read *r)
{
	struct pbg_wait wt = { .block = true };
	uint64_t d = now_ns() + timeout_ns;

	wt.deadline = d < timeout_ns ? 0 : d; /* none past 2^64 ns */
	return read_common(g, &wt, r);
}
