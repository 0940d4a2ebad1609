/* SPDX-License-Identifier: MIT */
/*
 * ring/grace.h - read-side sections and grace periods that work in signal
 * handlers, on threads nobody registered.
 *
 * THE PROTOCOL
 *
 * A structure that is read and updated lock-free, and whose memory is
 * recycled wholesale (a stack table reset at the end of a trace
 * generation), needs to know when nobody still reads the old memory.
 * liburcu's grace periods do that, but its fast readers need each thread
 * registered beforehand, and its auto-registering flavour allocates and
 * locks on a thread's first read: neither works in a SIGPROF handler on a
 * thread the profiler never saw.  So:
 *
 *  - Each structure owns an array of slots, one per thread that ever read
 *    it, each owned by a token: nonce << 32 | tid, made once per thread
 *    on its first use (a nonce from a global counter, so that a new
 *    thread that gets a dead thread's tid is a different owner; a thread
 *    and its signal handlers settle on one token by a CAS).
 *  - A thread finds its slot through an initial-exec TLS cache (struct
 *    tracebuf_tls_v1 in profring__grace_tls: no allocation, no lock, no
 *    dynamic TLS) holding the thread's token and its last
 *    RING_GRACE_TLS_WAYS slot pointers, of any structures (a tracer's
 *    event uses the tracer's slot and those of its tables).  A way is a
 *    hit if its slot lies in this structure's array and that slot's
 *    owner is the thread's token.  Each structure is dealt a way of its
 *    own at init, tried first; then all the ways are scanned.  Each way
 *    is read with one pointer load and checked on that copy, so a
 *    handler that re-points the way in between cannot hand us a wrong
 *    slot.  A miss stores the slot found in the structure's way and
 *    moves the pointer it displaces to the next way, round robin: plain
 *    pointer stores, so a handler caching its own slot meanwhile can at
 *    worst evict entries or leave one in two ways, never make one
 *    wrong.  A fork()ed child clears the cache and its
 *    token (pthread_atfork): it has a new tid.
 *  - On a miss the thread probes the array from hash(tid) - open
 *    addressing: a released slot becomes a tombstone, never free again,
 *    so a thread's own slot always lies before the first never-used slot
 *    of its probe sequence and is found before any free one - and claims
 *    the first tombstone or never-used slot it passed with a CAS (a
 *    failed CAS that finds its own token means a signal handler on the
 *    thread claimed it first), or, with reclaim, takes over the slot of
 *    a thread that has exited (tgkill(pid, tid, 0) says ESRCH) by a CAS
 *    on the dead owner's token.  All async-signal-safe.
 *  - A slot's word holds a nesting depth (low 8 bits) and a period count
 *    (the rest).  ring_grace_enter() loads the word and stores it with
 *    depth + 1; ring_grace_exit() stores, with release, the word it saw at
 *    entry, plus one period if that was the outermost section.  A signal
 *    handler that interrupts a section nests and restores the word
 *    exactly.  If it interrupts the load/store pair of an outermost
 *    enter, the interrupted store rewinds the period; the updater below
 *    then just waits for that section too.  No atomic read-modify-write.
 *  - The updater first makes its change (say, stores the index of the new
 *    current generation, with release), then ring_grace_wait() forces a
 *    full memory barrier on every thread of the process with
 *    membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED, as liburcu's memb
 *    flavour does; MEMBARRIER_CMD_GLOBAL if that is refused), so the
 *    readers need only a compiler barrier between their store of the
 *    depth and their loads of the structure.  Then, for each slot, it
 *    loads the word with acquire: depth 0 means that thread is outside
 *    (and will see the change when it enters); otherwise it waits until
 *    the depth is 0 or the period has moved (acquire, pairing with the
 *    release store in ring_grace_exit(): the reader's accesses happen
 *    before the updater goes on).  A change of depth alone proves
 *    nothing: a handler's nested section changes it while the section it
 *    interrupted goes on.  Without membarrier (registration refused at
 *    ring_grace_init(): old kernels), readers issue a seq_cst fence
 *    instead and so does the updater.
 *
 * What can block: only ring_grace_wait(), which waits for sections in
 * progress (calling it from inside a section blocks it forever).  A
 * section whose thread no longer exists - a thread killed inside one, or,
 * in the child of fork(), a section of any parent thread but the one that
 * forked - is over: the wait asks tgkill(pid, tid, 0) once it has backed
 * off a while.  Enter and exit never wait.
 */
#ifndef PROFRING_RING_GRACE_H
#define PROFRING_RING_GRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <profring/tracebuf_inline.h>

#include "ring/compiler.h"
#include "ring/perturb.h"

#define RING_GRACE_DEPTH_MASK ((uint64_t)0xff)
#define RING_GRACE_PERIOD ((uint64_t)0x100)

/* Owner tokens: nonce << 32 | tid; 0 never used; RING_GRACE_TOMB released. */
#define RING_GRACE_TOMB UINT64_MAX

struct ring_grace_slot {
	ring_cacheline_aligned _Atomic uint64_t owner;
	_Atomic uint64_t word; /* period | depth */
	/* Owner-only event counter (stacktab: hits), summed by readers. */
	_Atomic uint64_t count;
};

struct ring_grace {
	struct ring_grace_slot *slots;
	uint32_t nslots; /* power of two */
	uint32_t way; /* TLS way tried first, < RING_GRACE_TLS_WAYS */
	bool reader_fence;
	bool reclaim; /* take over dead threads' slots when probing */
};

/* A section in progress: where to store what on exit. */
struct ring_grace_section {
	struct ring_grace_slot *slot;
	uint64_t saved;
};

/*
 * 0 or -errno.  Not signal-safe.  With @reclaim, a thread that finds no
 * free slot takes over one whose owner has exited; without, slots are
 * freed only by ring_grace_release() (for users that keep per-thread data
 * beside the slots and must flush it first).
 */
int ring_grace_init(struct ring_grace *g, uint32_t nslots, bool reclaim);

/* True if thread @tid of this process has exited.  Async-signal-safe. */
bool ring_grace_thread_gone(pid_t tid);

/*
 * The calling thread's owner token: its tid and a nonce no other thread
 * of the process had (a thread that reuses a dead one's tid gets another
 * token).  Made on first use; async-signal-safe.
 */
uint64_t ring_grace_token(void);

/*
 * Register the fork handler that gives the child's thread a new token
 * (done by ring_grace_init(); for other users of ring_grace_token()).
 * Not async-signal-safe.
 */
void ring_grace_setup(void);

/*
 * Is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) registered for this
 * process (ring_grace_setup() tries, once)?  Not async-signal-safe.
 */
bool ring_grace_membarrier(void);

/* A live owner token (not 0, not a tombstone)? */
static inline bool ring_grace_owned(uint64_t owner)
{
	return owner && owner != RING_GRACE_TOMB;
}

/* The tid in an owner token. */
static inline pid_t ring_grace_owner_tid(uint64_t owner)
{
	return (pid_t)(uint32_t)owner;
}

/*
 * Free slot @i, owned by @owner, a thread that has exited (the caller
 * checked): it becomes a tombstone.  False if @owner no longer owns it.
 */
bool ring_grace_release(struct ring_grace *g, uint32_t i, uint64_t owner);
void ring_grace_destroy(struct ring_grace *g);

/*
 * The calling thread's slot (claimed on first use, then cached), or NULL
 * if none is free (with reclaim: and no owner has exited).
 */
struct ring_grace_slot *ring_grace_slot_slow(struct ring_grace *g);

/*
 * The calling thread's owner token and its last slots (of any structures:
 * a tracer's event uses the tracer's and four tables' slots).  Each
 * struct ring_grace has a way of its own (ring_grace_init() deals them
 * out in turn), where the slow path caches the thread's slot of it; the
 * way's previous slot moves to way `next`, so that of two structures
 * dealt the same way the other stays cached too (found by the scan) until
 * a later miss overwrites it: a miss costs the slow path's probe, never
 * a wrong slot.
 */
#define RING_GRACE_TLS_WAYS TRACEBUF__TLS_WAYS

/*
 * The ways and the token are struct tracebuf_tls_v1 (slot[], next: where
 * a displaced slot goes; token: 0 until first use, set by CAS, accessed
 * with __atomic builtins), in the TLS variable profring__grace_tls that
 * the library exports: tracebuf_emit()'s inline path reads the tracer's
 * way and the token (<profring/tracebuf_inline.h>).  One declaration, of
 * one type, for the library and its inline callers.
 */
#define ring_grace_tls profring__grace_tls

/*
 * Whether @slot, a pointer from a TLS way, is ours: in the array at @base
 * (@span bytes) and owned by @token.  <profring/tracebuf_inline.h> holds
 * a frozen copy of this, of ring_grace_enter_slot() and of
 * ring_grace_exit() (version 1 of the section, which inline emitters
 * run): a change to any of them must close tracebuf's gate (inline_span
 * 0) or keep to version 1.
 */
static inline bool ring_grace_way_holds(struct ring_grace_slot *slot,
					uintptr_t base, uintptr_t span,
					uint64_t token)
{
	/* Relaxed: our own slot's owner only changes by us. */
	return (uintptr_t)slot - base < span &&
	       atomic_load_explicit(&slot->owner, memory_order_relaxed) ==
		       token;
}

/*
 * The ways are checked by ring_grace_way_holds(), with the array's
 * bounds and the token loaded once for all of them: the token changes
 * only from 0 to the thread's one value (a handler may set it between
 * our load and a way's check, but a way then holds no slot of ours yet:
 * a cached slot is one claimed with the token already set).
 *
 * ring_grace_slot_cached() is that look-up alone: @g's own way first,
 * then all of them; NULL when no way holds our slot of @g (then
 * ring_grace_slot_slow() finds or claims it).  (tracebuf_emit()'s inline
 * path tries @g's own way alone, and calls the library otherwise.)
 */
static inline struct ring_grace_slot *
ring_grace_slot_cached(struct ring_grace *g)
{
	uintptr_t base = (uintptr_t)g->slots;
	uintptr_t span = (uintptr_t)g->nslots * sizeof(struct ring_grace_slot);
	/* Relaxed: only this thread (and its handlers) store it. */
	uint64_t token =
		__atomic_load_n(&ring_grace_tls.token, __ATOMIC_RELAXED);
	/* One load per way, checked on the copy: see above. */
	struct ring_grace_slot *slot = ring_grace_tls.slot[g->way];

	if (ring_likely(ring_grace_way_holds(slot, base, span, token)))
		goto found;
	for (int i = 0; i < RING_GRACE_TLS_WAYS; i++) {
		slot = ring_grace_tls.slot[i];
		if (ring_grace_way_holds(slot, base, span, token))
			goto found;
	}
	return NULL;
found:
	/*
	 * In the array, so not NULL: saying so lets the compiler drop the
	 * callers' tests on this path.
	 */
	if (!slot)
		__builtin_unreachable();
	return slot;
}

/* The calling thread's slot of @g, or NULL (ring_grace_slot_slow()). */
static inline struct ring_grace_slot *ring_grace_slot(struct ring_grace *g)
{
	struct ring_grace_slot *slot = ring_grace_slot_cached(g);

	return slot ? slot : ring_grace_slot_slow(g);
}

/*
 * ring_grace_enter_slot() - ring_grace_enter() with the thread's slot of
 * @g already found (ring_grace_slot_cached() or ring_grace_slot_slow()).
 */
static inline void ring_grace_enter_slot(struct ring_grace *g,
					 struct ring_grace_slot *slot,
					 struct ring_grace_section *s)
{
	/* Relaxed: only this thread (and its handlers) store the word. */
	uint64_t w = atomic_load_explicit(&slot->word, memory_order_relaxed);

	ring_perturb(); /* a handler's whole section may land here */
	/*
	 * Release (a plain store on x86): an updater that sees this store
	 * has the previous section's accesses ordered before it without
	 * relying on C11's same-thread release sequences.
	 */
	atomic_store_explicit(&slot->word, w + 1, memory_order_release);
	/*
	 * The store above must be visible before our loads of the protected
	 * structure: membarrier() in ring_grace_wait() orders them; without
	 * it, this fence pairs with the fence there.
	 */
	if (ring_unlikely(g->reader_fence))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
	s->slot = slot;
	s->saved = w;
}

/**
 * ring_grace_enter() - begin a read-side section.
 *
 * Async-signal-safe, nests.  Return: false if the thread has no slot (all
 * are taken by live threads); the caller must not read then.
 */
static inline bool ring_grace_enter(struct ring_grace *g,
				    struct ring_grace_section *s)
{
	struct ring_grace_slot *slot = ring_grace_slot(g);

	if (ring_unlikely(!slot))
		return false;
	ring_grace_enter_slot(g, slot, s);
	return true;
}

/**
 * ring_grace_exit() - end the section begun by ring_grace_enter().
 */
static inline void ring_grace_exit(struct ring_grace_section *s)
{
	uint64_t w = s->saved;

	if (!(w & RING_GRACE_DEPTH_MASK))
		w += RING_GRACE_PERIOD;
	/*
	 * Release: pairs with the acquire loads in ring_grace_wait(): every
	 * access of this section happens before the updater goes on.
	 */
	atomic_store_explicit(&s->slot->word, w, memory_order_release);
}

/**
 * ring_grace_wait() - wait until every section that may have begun before
 * this call has ended.  Not signal-safe; never from inside a section.
 */
void ring_grace_wait(struct ring_grace *g);

/* Sum of the slots' owner-only counters. */
uint64_t ring_grace_count_sum(const struct ring_grace *g);

#endif /* PROFRING_RING_GRACE_H */
