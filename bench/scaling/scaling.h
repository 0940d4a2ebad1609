/* SPDX-License-Identifier: MIT */
/*
 * bench/scaling/scaling.h - what the parts of scaling_bench share: the
 * record, the run of one implementation at one writer count (struct
 * sc_run), the implementations' operations (struct sc_ops), and the
 * entry points of each part.  What the benchmark measures and why is
 * said at the top of bench/scaling_bench.c.
 *
 *   run.c      one repetition of one implementation: threads, timer, books
 *   profbuf.c  profbuf, profbuf_group and its owned rings under the
 *              workload (ours)
 *   anchors.c  ck_mpmc, mutex, pipe and wfcq under the same workload
 *   compare.c  the writer counts, the report's rows, scaling.csv
 *   contend.c  the write path alone under concurrent writers
 *   drain.c    the reader's drain rate
 */
#ifndef PROFRING_BENCH_SCALING_H
#define PROFRING_BENCH_SCALING_H

#define _LGPL_SOURCE /* liburcu's wfcqueue inline, like ck_ring */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ck_ring.h>
#include <urcu/wfcqueue.h>

#include <profring/profbuf.h>
#include <profring/profbuf_group.h>

#include "bench/harness.h"

#define HDRSIZE BENCH_REC_HDRSIZE
#define WORDS BENCH_REC_WORDS
#define NSTK BENCH_REC_NSTK
#define REC_BYTES (WORDS * sizeof(uint64_t))
#define SC_RING_WORDS (1u << 16) /* profbuf ring of the scaling runs */
#define SC_SLOTS (SC_RING_WORDS / 32) /* slots of the anchors' rings */
#define CACHELINE 64
#define SCALING_CSV "bench/results/scaling.csv"
#define DR_WORDS (1u << 20) /* drain: profbuf ring size */
#define DR_RECS (DR_WORDS / WORDS - 1) /* records per prefill */
#define DR_ROUNDS 4 /* prefill + drain rounds per repetition */
#define CT_RECORDS 400000u /* contend: per repetition, over all writers */

_Static_assert(REC_BYTES <= PIPE_BUF, "pipe writes must be atomic");

/* A record as one value: ck_ring's and the other anchors' slot type. */
struct rec34 {
	uint64_t w[WORDS];
};

struct sc_run;

/*
 * struct sc_writer - one writer thread (one cache line or more each).
 * @m:       the run
 * @id:      0 ... W - 1
 * @ok:      writes accepted
 * @lost:    writes refused for want of room
 * @err:     any other error, which stops it
 * @ret:     wfcq: the SPSC ring its nodes come back on
 * @ret_buf: @ret's slots
 * @po:      profbuf_owned: the owned ring it claimed (NULL: none was
 *           free, it writes profbuf_group_mine()'s ring)
 */
struct sc_writer {
	_Alignas(CACHELINE) struct sc_run *m;
	unsigned int id;
	uint64_t ok;
	uint64_t lost;
	int err;
	pthread_t thread;
	struct ck_ring ret;
	struct ck_ring_buffer *ret_buf;
	struct profbuf_owned *po;
};

/*
 * struct sc_ops - one implementation under the scaling workload.
 * @open:   create the ring
 * @writer: writer thread body
 * @reader: reader thread body
 * @finish: the writers have been joined: let the reader end
 * @close:  check what is left and free the ring; 0 or -1
 * @counts_losses: the reader learns of refused writes (overflow records)
 */
struct sc_ops {
	int (*open)(struct sc_run *m);
	void *(*writer)(void *arg);
	void *(*reader)(void *arg);
	void (*finish)(struct sc_run *m);
	int (*close)(struct sc_run *m);
	bool counts_losses;
};

/*
 * struct mx_ring - the mutex-protected ring.
 * @lock:       guards everything below
 * @head, @tail: free-running slot counters
 * @slot:       SC_SLOTS records
 */
struct mx_ring {
	pthread_mutex_t lock;
	uint32_t head;
	uint32_t tail;
	struct rec34 slot[SC_SLOTS];
};

/*
 * struct wq_node - a wfcq node: link, owner, record.
 */
struct wq_node {
	struct cds_wfcq_node link;
	struct sc_writer *owner;
	struct rec34 rec;
};

/*
 * struct sc_run - one implementation at one W.
 * @ops, @o, @nw:   implementation, options, writers
 * @start:          all threads and the timer start together
 * @stop:           writers stop
 * @done:           writers joined (for readers that get no EOF)
 * @w:              the writers
 * @delivered:      intact ordinary records the reader got
 * @ovf:            sum of the overflow records' counts (profbuf)
 * @err:            the reader's error
 * @pb:             profbuf
 * @pg:             profbuf_group (and profbuf_owned's group)
 * @ck, @ck_buf:    the ck_ring and its slots
 * @mx:             the mutex ring
 * @pipefd:         the pipe
 * @wq_head, @wq_tail, @wq_nodes, @wq_pool: the wfcq, its nodes, per
 *                  writer
 */
struct sc_run {
	const struct sc_ops *ops;
	const struct bench_opts *o;
	unsigned int nw;
	pthread_barrier_t start;
	atomic_bool stop;
	atomic_bool done;
	struct sc_writer *w;
	pthread_t reader;
	uint64_t delivered;
	uint64_t ovf;
	int err;
	struct profbuf *pb;
	struct profbuf_group *pg;
	struct ck_ring ck;
	struct rec34 *ck_buf;
	struct mx_ring *mx;
	int pipefd[2];
	_Alignas(CACHELINE) struct __cds_wfcq_head wq_head;
	_Alignas(CACHELINE) struct cds_wfcq_tail wq_tail;
	struct wq_node *wq_nodes;
	unsigned int wq_pool;
};

/* ---- run.c ----------------------------------------------------------- */

void sc_thread_start(struct sc_run *m, int idx);
int sc_case_run(void *arg, struct bench_sample *s);
void sc_finish_done(struct sc_run *m);
void sc_read_until_done(struct sc_run *m,
			bool (*get)(struct sc_run *m, struct rec34 *out));

static inline bool sc_stopped(const struct sc_run *m)
{
	return atomic_load_explicit(&m->stop, memory_order_relaxed);
}

/*
 * sc_write_until_stopped() - the writers' loop: @put writes one record
 * until the run stops; its 0 counts in @w->ok, -ENOSPC (no room) in
 * @w->lost, and any other error stops the writer (@w->err).
 * @put: @rec (bench_rec_fill()'s, for it to use or not) stamped @now
 *
 * Always inlined, @put with it: each writer's timed loop has no call
 * through a pointer, as when every writer spelled the loop out.
 */
static inline __attribute__((always_inline)) void *sc_write_until_stopped(
	struct sc_writer *w,
	int (*put)(struct sc_writer *w, struct rec34 *rec, uint64_t now))
{
	struct sc_run *m = w->m;
	uint64_t now = 0, ok = 0, lost = 0;
	struct rec34 rec;
	int rc;

	bench_rec_fill(rec.w, 0);
	sc_thread_start(m, (int)w->id);
	while (!sc_stopped(m)) {
		rc = put(w, &rec, now++);
		if (rc == 0) {
			ok++;
		} else if (rc == -ENOSPC) {
			lost++;
		} else {
			w->err = rc;
			break;
		}
	}
	w->ok = ok;
	w->lost = lost;
	return NULL;
}

/* ---- the implementations (profbuf.c, anchors.c) ---------------------- */

extern const struct sc_ops pb_sc_ops, pg_sc_ops, po_sc_ops;
extern const struct sc_ops ck_sc_ops, mx_sc_ops, pp_sc_ops, wq_sc_ops;

/* ---- compare.c, contend.c, drain.c ----------------------------------- */

int scaling(const struct bench_opts *o);
int contend(const struct bench_opts *o);
int drain(const struct bench_opts *o);

#endif /* PROFRING_BENCH_SCALING_H */
