/* SPDX-License-Identifier: MIT */
/*
 * <profring/stacktab.h> - lock-free, async-signal-safe stack interning.
 *
 * A stack table maps a stack (an array of PCs) to a small nonzero id, the
 * same id every time for the same PCs, and back.  A SIGPROF handler can
 * intern the stack it just unwound and write only the id.  Memory comes
 * from a bounded arena fixed at creation; there is no malloc after
 * stacktab_new().
 *
 * Generations.  A stacktab_reset() starts a new, empty generation (ids
 * begin again at 1) and hands the one ending to a callback - a tracer
 * emits it as the generation's stack table.  A bare id names a stack of
 * the current generation: stacktab_get() resolves it until the next
 * reset.  A reference (stacktab_put_ref(): the id with its generation's
 * number) resolves, through stacktab_get_ref(), for one reset longer: the
 * table keeps the previous generation readable until the reset after the
 * one that ended it, and recycles its memory then.  So a record that
 * carries a reference and is read after one reset - a profiler that
 * resets while records are still in its ring - still finds its stack.
 * Puts and gets running during a reset use the new generation or finish
 * in the old one; memory is recycled only once none of them can still
 * touch it.
 *
 * Guarantees:
 *  - stacktab_put() and stacktab_get() are async-signal-safe and lock-free
 *    on the lookup and the insert path alike: no malloc, no lock, errno
 *    preserved.  They may run concurrently from any number of threads and
 *    from a handler that interrupted a put or get on its own thread.  An
 *    insert that loses a race to a concurrent insert of the same stack
 *    returns the winner's id (its own node and id are wasted and counted).
 *  - What can block: stacktab_reset() waits until every put, get and
 *    foreach that began before it has ended (a grace period), and for a
 *    reset in progress.  A thread that no longer exists is not waited
 *    for: one that died inside a put, or, in the child of fork(), every
 *    parent thread but the one that forked (so the child may reset, put,
 *    get and walk; a reset the parent was inside at the fork leaves the
 *    child's resets waiting for its lock).  A reset called from a foreach or dump callback of the same
 *    table would wait for itself: it is refused (-EDEADLK).  Nothing else
 *    ever waits.
 *  - Losses are counted, never hidden: a put that finds the arena (or the
 *    id space, or the table's thread slots) full returns 0 and counts a
 *    loss.  It never returns a wrong id.
 *  - Ids are stacks: every id that a put returned or that foreach or a
 *    reset's dump reported resolves, through stacktab_get(), to its stack
 *    until the next reset; a walk reports each stack once, and never the
 *    id of an insert that lost its race (a wasted id).
 *  - How long a reference resolves: every reference stacktab_put_ref()
 *    returned resolves, through stacktab_get_ref(), to its stack until the
 *    second reset after the put (through its own generation and the
 *    next); after that, get_ref returns 0 for it.  Generation numbers are
 *    32 bits in a reference: one 2^32 resets old (13 years at 10 resets a
 *    second) would be taken for a current one.
 *  - Stacks deeper than STACKTAB_MAX_DEPTH frames are truncated to their
 *    first (innermost) STACKTAB_MAX_DEPTH frames, consistently: two stacks
 *    that agree on those frames get the same id.
 *  - The table does not grow: past about 2 x expected_stacks its chains
 *    get longer and lookups slower, but nothing breaks.
 *
 * Memory: each of the two generations has an arena that holds at most
 * max_bytes of stacks, exactly (address space is reserved rounded up to
 * pages, and committed only as it is first used), an id index (one 32-bit
 * word per possible id: max_bytes / 32 + 1 of them, committed as used)
 * and a bucket array (a power of two of at least 2 x expected_stacks
 * 32-bit words, committed in full by the first reset that clears the
 * generation for reuse, and kept).  A reset clears the generation before
 * the one ending (the ending one stays readable); it keeps committed the
 * arena and index pages that the largest of the last four generations
 * cleared (this one and the three before it) used, and gives the rest of
 * the cleared generation's pages back to the kernel
 * (madvise(MADV_DONTNEED)).  So a table whose generations stay about the
 * same size reuses its pages without page faults, and the memory of a
 * burst is given back by the fifth reset after the one that ended the
 * burst's generation.  At most STACKTAB_MAX_THREADS threads (alive at
 * once) can use one table.
 */
#ifndef PROFRING_STACKTAB_H
#define PROFRING_STACKTAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STACKTAB_MAX_DEPTH 128
#define STACKTAB_MAX_THREADS 4096

struct stacktab;

struct stacktab_stats {
	uint64_t stacks; /* in the current generation */
	uint64_t bytes; /* arena bytes the current generation used (its
			 * first 8 bytes are reserved): at most max_bytes */
	uint64_t hits; /* puts that found their stack (all generations;
			   * a handler's put that interrupts another put's
			   * count may go uncounted) */
	uint64_t inserts; /* stacks added (all generations) */
	uint64_t losses; /* puts that returned 0 for lack of memory */
	uint64_t wasted; /* inserts that lost a race to the same stack */
	uint64_t resets;
};

/* Called for each stack: return nonzero to stop. */
typedef int (*stacktab_fn)(void *arg, uint32_t id, const uintptr_t *pcs,
			   size_t n);

/**
 * stacktab_new() - create a stack table.
 * @max_bytes:       arena bound per generation, in bytes, enforced exactly
 *                   (8 reserved, then 24 + 8 per frame for each stack), at
 *                   least 4096
 * @expected_stacks: distinct stacks expected per generation (sizes the
 *                   hash table), at least 1
 *
 * Return: the table, or NULL with errno set (EINVAL, ENOMEM).
 */
struct stacktab *stacktab_new(size_t max_bytes, size_t expected_stacks);

/* Free; NULL is a no-op.  No one may be using the table. */
void stacktab_free(struct stacktab *t);

/**
 * stacktab_put() - intern @n PCs.
 *
 * Async-signal-safe, lock-free.
 *
 * Return: the stack's id (nonzero), or 0 for an empty stack, a NULL
 * table or @pcs, or when the arena or the id space is full or the calling
 * thread could get no thread slot (a loss, counted).
 */
uint32_t stacktab_put(struct stacktab *t, const uintptr_t *pcs, size_t n);

/**
 * stacktab_put_ref() - intern @n PCs, as stacktab_put(), and return a
 * reference to the stack: its id in the low 32 bits, the low 32 bits of
 * its generation's number (0 for the first, then one more for each reset)
 * in the high 32 bits.  Write the reference, not the id, in a record that
 * may be read after a reset.
 *
 * Async-signal-safe, lock-free.
 *
 * Return: the reference (nonzero; STACKTAB_REF_ID() is the id
 * stacktab_put() would have returned), or 0 as stacktab_put() returns 0.
 */
uint64_t stacktab_put_ref(struct stacktab *t, const uintptr_t *pcs, size_t n);

#define STACKTAB_REF_ID(ref) ((uint32_t)(ref))
#define STACKTAB_REF_GEN(ref) ((uint32_t)((ref) >> 32))

/**
 * stacktab_get() - copy the PCs of stack @id into @pcs (at most @max).
 *
 * Async-signal-safe, lock-free, O(1) to find the stack (an id whose
 * insert is still in flight costs a walk of one hash chain).
 *
 * Return: the stack's length (which may exceed @max: only @max PCs are
 * copied), or 0 if @id is not a stack of the current generation, @t is
 * NULL, or the calling thread could get no thread slot.
 */
size_t stacktab_get(struct stacktab *t, uint32_t id, uintptr_t *pcs,
		    size_t max);

/**
 * stacktab_get_ref() - copy the PCs of the stack @ref names into @pcs (at
 * most @max), from the current generation or the previous one.
 *
 * Async-signal-safe, lock-free, O(1) to find the stack, as stacktab_get().
 *
 * Return: the stack's length (which may exceed @max), or 0 if @ref is not
 * a reference stacktab_put_ref() returned since the reset before the last
 * one (see "How long a reference resolves" above), @t is NULL, or the
 * calling thread could get no thread slot.
 */
size_t stacktab_get_ref(struct stacktab *t, uint64_t ref, uintptr_t *pcs,
			size_t max);

/**
 * stacktab_foreach() - call @fn for every stack of the current generation,
 * in id order.
 *
 * Each stack once, under the id its puts return; a stack whose put
 * returned before the walk began (on this thread, or on one that handed
 * the id over) is seen, concurrent puts may or may not be.  @fn may put,
 * get and walk; a stacktab_reset() of this table from @fn is refused with
 * -EDEADLK.  Not signal-safe.
 *
 * Return: 0 once @fn has seen every stack; the first nonzero value @fn
 * returned (the walk stops there; choose values that cannot be mistaken
 * for the errors below); -EINVAL if @t or @fn is NULL; -EAGAIN if the
 * calling thread could not get a thread slot (STACKTAB_MAX_THREADS live
 * threads already use the table): nothing was walked, try again from a
 * thread that has used the table or once threads have exited.
 */
int stacktab_foreach(struct stacktab *t, stacktab_fn fn, void *arg);

/**
 * stacktab_reset() - start a new generation.
 * @dump: if not NULL, called for every stack of the generation that
 *        ends, in id order, each once, once no put or get can still add to
 *        it
 * @arg:  passed to @dump
 *
 * Clears the generation before the one ending, giving back memory (see
 * "Memory" above), after a grace period (no get by reference still reads
 * it); makes it current; waits for a second grace period (see above);
 * then dumps the generation ending, which stays readable by reference
 * until the next reset.  Resets are serialized.  Not signal-safe.
 *
 * Return: 0, or the first nonzero value @dump returned (the generation
 * still ends), or -EINVAL (@t is NULL), or -EDEADLK when called from a
 * foreach or @dump callback of this same table on this thread (nothing
 * is done: it would wait for itself).
 */
int stacktab_reset(struct stacktab *t, stacktab_fn dump, void *arg);

/*
 * Fill @s.  Counters are read without stopping writers.  stacks and bytes
 * stay 0 if the calling thread could get no thread slot.
 */
void stacktab_stats(struct stacktab *t, struct stacktab_stats *s);

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_STACKTAB_H */
