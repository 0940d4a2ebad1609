/* SPDX-License-Identifier: MIT */
/*
 * bench/trace/trace.h - what the parts of trace_bench share: the
 * constants, the case (struct ev_case), the arguments of event number n
 * (make_args()), the interned stack's PCs, and the entry points of each
 * part.  What the benchmark measures and why is said at the top of
 * bench/trace_bench.c.
 *
 *   tracebuf.c  the tracebuf cases: timed batches, drains, validation
 *   anchors.c   the floor and the seqlock
 *   compare.c   the row groups: tracebuf and its anchors, their rows
 *   advance.c   generation advance with idle threads
 */
#ifndef PROFRING_BENCH_TRACE_H
#define PROFRING_BENCH_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <profring/tracebuf.h>

#include "bench/harness.h"

#define REP_EVENTS (1u << 21) /* events per repetition of a case */
#define BUF_SIZE (64u << 10) /* tracebuf's buffers and the floor's array */
#define MAX_BYTES (16u << 20) /* tracebuf's memory bound */
#define EV_TYPE TRACEBUF_EV_USER
#define STACK_DEPTH 16
#define FLOOR_STACK_ID 1 /* the first stack of a generation */
#define HDR_BYTES 16 /* the stream header */
#define ADV_ROUNDS 50
#define ADV_TYPE 8
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum impl { IM_TRACE, IM_FLOOR, IM_SEQLOCK, IM_CALL };

/*
 * struct ev_case - one case.
 * @name:     for messages
 * @impl:     tracebuf, floor or seqlock
 * @nargs:    0, 2 or 4
 * @stack:    the event is { counter, stack id }
 * @batch:    events per timed batch
 * @n:        counter of the next event
 * @tb:       tracebuf's tracer
 * @hdr:      its stream header, read once
 * @stack_id: the stack's id in the current generation
 * @bytes:    stream bytes read over the timed repetitions (tracebuf) or
 *            bytes written (anchors)
 * @events:   events over them
 */
struct ev_case {
	const char *name;
	enum impl impl;
	unsigned int nargs;
	bool stack;
	unsigned int batch;
	uint64_t n;
	struct tracebuf *tb;
	uint8_t hdr[HDR_BYTES];
	uint64_t stack_id;
	uint64_t bytes;
	uint64_t events;
};

/* The 16 PCs of the interned stack (main() sets them). */
extern uintptr_t stack_pcs[STACK_DEPTH];

/* Report what failed in case @c (NULL: setup); returns -1. */
int fail(const struct ev_case *c, const char *what, int err);

/*
 * make_args() - the arguments of event number @n.  Always inlined with
 * constant @nargs and @stack, so that every case computes only those it
 * writes.
 */
static inline __attribute__((always_inline)) void
make_args(uint64_t n, unsigned int nargs, bool stack, uint64_t id, uint64_t *a)
{
	uint64_t h = (n * 0x9e3779b97f4a7c15ull) >> 16; /* 48 bits */

	if (stack) {
		a[0] = n;
		a[1] = id;
		return;
	}
	if (nargs > 0)
		a[0] = n;
	if (nargs > 1)
		a[1] = h;
	if (nargs > 2)
		a[2] = n & 0x3f;
	if (nargs > 3)
		a[3] = h >> 20;
}

/* ---- tracebuf.c ------------------------------------------------------ */

int tb_run(void *arg, struct bench_sample *s);
int tb_init(struct ev_case *c);
void tb_fini(struct ev_case *c);
void tb_free_acc(void);

/* ---- anchors.c ------------------------------------------------------- */

void flr_init(void);
int flr_run(void *arg, struct bench_sample *s);

/* ---- compare.c, advance.c -------------------------------------------- */

double clock_cost(void);
int groups_run(const struct bench_opts *o);
int advance(const struct bench_opts *o);

#endif /* PROFRING_BENCH_TRACE_H */
