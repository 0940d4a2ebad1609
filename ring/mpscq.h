/* SPDX-License-Identifier: MIT */
/*
 * ring/mpscq.h - an intrusive multi-producer, single-consumer FIFO.
 *
 * THE PROTOCOL (the algorithm of liburcu's wfcqueue and Vyukov's MPSC
 * queue, written with C11 atomics so that ThreadSanitizer can see it)
 *
 * The queue is a singly linked list with a stub node.  Enqueue is
 * wait-free and async-signal-safe: exchange the tail with the new node
 * (acq_rel), then link the old tail to it (release store of old->next).
 * Between the two steps the list is momentarily cut; the consumer, on
 * finding head->next NULL while head is not the tail, waits for the
 * enqueuer to link (it is one store away, unless it was preempted or
 * interrupted: a signal handler on the same thread may enqueue meanwhile;
 * its node goes after the cut and appears once the cut is linked).  FIFO
 * in the order of the exchanges.  Only the consumer dequeues.
 */
#ifndef PROFRING_RING_MPSCQ_H
#define PROFRING_RING_MPSCQ_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "ring/compiler.h"

struct ring_mpscq_node {
	_Atomic(struct ring_mpscq_node *) next;
};

struct ring_mpscq {
	ring_cacheline_aligned _Atomic(struct ring_mpscq_node *) tail;
	ring_cacheline_aligned struct ring_mpscq_node *head; /* consumer */
	struct ring_mpscq_node stub;
};

static inline void ring_mpscq_init(struct ring_mpscq *q)
{
	atomic_init(&q->stub.next, NULL);
	q->head = &q->stub;
	atomic_init(&q->tail, &q->stub);
}

/* Wait-free, async-signal-safe, any number of producers. */
static inline void ring_mpscq_push(struct ring_mpscq *q,
				   struct ring_mpscq_node *n)
{
	struct ring_mpscq_node *prev;

	atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
	/*
	 * Acq_rel: release publishes @n's contents to whoever follows the
	 * link; acquire orders us after the previous enqueuer.
	 */
	prev = atomic_exchange_explicit(&q->tail, n, memory_order_acq_rel);
	/* Release: pairs with the acquire load of next in pop. */
	atomic_store_explicit(&prev->next, n, memory_order_release);
}

/* True if nothing is queued (consumer only). */
static inline bool ring_mpscq_empty(struct ring_mpscq *q)
{
	/* Acquire: pairs with the acq_rel exchange of tail in push. */
	return q->head == &q->stub &&
	       atomic_load_explicit(&q->tail, memory_order_acquire) == &q->stub;
}

/*
 * Dequeue the oldest node, or NULL if the queue is empty.  Consumer only.
 * Waits (yielding) while an enqueue it must follow is half done.
 */
static inline struct ring_mpscq_node *ring_mpscq_pop(struct ring_mpscq *q)
{
	struct ring_mpscq_node *head = q->head, *next;

	for (;;) {
		/* Acquire: pairs with the release store in push. */
		next = atomic_load_explicit(&head->next, memory_order_acquire);
		if (head == &q->stub) {
			if (!next) {
				if (atomic_load_explicit(
					    &q->tail, memory_order_acquire) ==
				    head)
					return NULL;
				sched_yield(); /* an enqueue is half done */
				continue;
			}
			q->head = head = next; /* skip the stub */
			continue;
		}
		if (next) {
			q->head = next;
			return head;
		}
		/* Acquire: pairs with the acq_rel exchange of tail in push. */
		if (atomic_load_explicit(&q->tail, memory_order_acquire) !=
		    head) {
			sched_yield(); /* an enqueue is half done */
			continue;
		}
		/* head is the last node: put the stub back behind it. */
		ring_mpscq_push(q, &q->stub);
	}
}

#endif /* PROFRING_RING_MPSCQ_H */
