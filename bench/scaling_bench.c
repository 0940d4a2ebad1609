// SPDX-License-Identifier: MIT
/*
 * bench/scaling_bench.c - profbuf under many writers, and its reader.
 * (profbuf's write inside a SIGPROF handler is sigprof_bench.c's;
 * tracebuf's generation advance is trace_bench.c's.)
 *
 * What it measures.
 *
 * 1. Writer scaling.  W = 1, 2, 4, ... up to the number of CPUs, that
 *    number itself, and twice it, writer threads writing 34-word records
 *    (hdrsize 2) as fast as they can for --seconds, and one reader thread
 *    draining: records delivered to the reader per second and the
 *    fraction of writes lost to a full ring, for profbuf (blocking reader)
 *    and four anchors carrying the same record.  One row per W and anchor
 *    ("scaling Ww 34w"), and one line per W and implementation in
 *    bench/results/scaling.csv for bench/plot.sh.  The timed region runs
 *    from the common start of all threads to the end of the reader's
 *    drain after the writers stopped.  Each W group runs its cases
 *    interleaved, (--reps + 1) / 2 repetitions (5 implementations times
 *    the W list times --seconds would otherwise take minutes).
 * 2. Reader drain rate.  A profbuf of 2^20 words prefilled (untimed) with
 *    34-word records; timed: profbuf_read() non-blocking until the ring is
 *    empty, each returned run copied out to a destination array (a reader
 *    that does not touch the words measures nothing).  Words per second.
 *
 * The record is harness.h's bench_rec, which sigprof_bench writes too.
 *
 * Every result is checked, and any mismatch aborts the benchmark: profbuf
 * records read + overflow counts == writes accepted + writes refused,
 * exactly; for every anchor, records the reader got == writes accepted;
 * every record delivered is intact; the drained and the copied words are
 * the words written.
 *
 * Why the anchors are fair.
 *
 *  - ck_mpmc: ConcurrencyKit's typed by-value ring (CK_RING_PROTOTYPE) of
 *    34-word structs, the multi-producer enqueue, one reader dequeueing
 *    by value with the MPMC dequeue; a failed enqueue counts as lost.
 *    Like profbuf it is a lock-free bounded ring of copied records; it is
 *    not signal-safe against a handler interrupting an enqueue to the
 *    same ring on the same thread, and a writer preempted in the middle of
 *    an enqueue stalls the other writers (profbuf's do not wait).  The
 *    goal, for W >= 2: profbuf delivers >= 1.0 x ck_mpmc.
 *  - mutex: a ring of the same slots behind one pthread mutex; the writer
 *    copies its record in under the lock, the reader copies one record out
 *    under the lock.  The obvious design, not signal-safe.  Info.
 *  - pipe: each writer write(2)s the record's 272 bytes (< PIPE_BUF, so
 *    atomic) to a pipe whose write end is O_NONBLOCK (EAGAIN counts as
 *    lost) and whose size is set to the rings' footprint; the reader
 *    read(2)s 64 records' worth at a time, blocking.  Signal-safe, one
 *    syscall per record.  Info.
 *  - wfcq: liburcu's wait-free concurrent queue (inline, _LGPL_SOURCE,
 *    as ck_ring is inline).  Each writer owns a pool of SC_SLOTS / W
 *    preallocated nodes (the same records in flight as the rings hold) and
 *    cds_wfcq_enqueue()s one, record copied in; an empty pool counts as
 *    lost.  The reader __cds_wfcq_dequeue_blocking()s, copies the record
 *    out and gives the node back to its writer through a per-writer
 *    ck_ring SPSC of node pointers (the reader is its only producer, the
 *    writer its only consumer).  Info.
 *  - profbuf_group: the same records written with profbuf_group_write()
 *    to a group (<profring/profbuf_group.h>) of one ring per CPU, each
 *    of the single profbuf's size, read with profbuf_group_read()
 *    (blocking): every writer thread has a ring of its own while W <=
 *    CPUs.  Rows "group Ww 34w": against profbuf at the same W (info),
 *    and against profbuf with one writer (issue 32's goal for W >= 2:
 *    the group delivers at least one writer's rate).
 *  - drain: memcpy of the same number of words from a prefilled array of
 *    the ring's size to a destination of the same size.  profbuf's reader
 *    does this copy and the read protocol on top; info.
 *
 * The readers of ck_mpmc, mutex and wfcq yield the CPU when they find
 * nothing; profbuf's sleeps on a futex, the pipe's in read(2).  With
 * --pin the reader has the last CPU to itself and the writers share the
 * others; unpinned, the scheduler places all threads.  profbuf is called
 * through the static library; ck_ring and wfcq are inline.
 *
 * Caveats, so that the numbers are read right.
 *
 *  - W > CPUs - 1 is oversubscribed (on 2 CPUs, W >= 2 always is): a
 *    writer preempted between reserving and committing holds up the
 *    reader (all rings) and, in ck_ring, the other writers too; a wfcq
 *    enqueuer preempted between its exchange and its link makes the
 *    dequeuer sleep 10 ms (liburcu's adaptive wait).  Those rows mostly
 *    measure how each design tolerates preemption.
 */
#define _LGPL_SOURCE /* liburcu's wfcqueue inline, like ck_ring */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ck_ring.h>
#include <urcu/wfcqueue.h>

#include <profring/profbuf.h>
#include <profring/profbuf_group.h>

#include "harness.h"

#define HDRSIZE BENCH_REC_HDRSIZE
#define WORDS BENCH_REC_WORDS
#define NSTK BENCH_REC_NSTK
#define REC_BYTES (WORDS * sizeof(uint64_t))
#define SC_RING_WORDS (1u << 16) /* profbuf ring of the scaling runs */
#define SC_SLOTS (SC_RING_WORDS / 32) /* slots of the anchors' rings */
#define PP_READ_RECS 64 /* records per pipe read */
#define DR_WORDS (1u << 20) /* drain: profbuf ring size */
#define DR_RECS (DR_WORDS / WORDS - 1) /* records per prefill */
#define DR_ROUNDS 4 /* prefill + drain rounds per repetition */
#define SCALING_CSV "bench/results/scaling.csv"
#define CACHELINE 64

_Static_assert(REC_BYTES <= PIPE_BUF, "pipe writes must be atomic");

/* A record as one value: ck_ring's and the other anchors' slot type. */
struct rec34 {
	uint64_t w[WORDS];
};

CK_RING_PROTOTYPE(rec34, rec34)

static void die(const char *what, int err)
{
	bench_fail(what, err);
	exit(1);
}

static void sleep_seconds(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s };

	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- writer scaling: common ------------------------------------------ */

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
 * @pg:             profbuf_group
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

/*
 * sc_thread_start() - thread prologue: pin, then wait for the start.
 * @m:   the run
 * @idx: writer id, or -1 for the reader
 *
 * With --pin the reader gets the last CPU to itself, as a profiler's
 * collector thread would, and the writers share the others.
 */
static void sc_thread_start(struct sc_run *m, int idx)
{
	int ncpus = bench_ncpus();
	int writer_cpus = ncpus > 1 ? ncpus - 1 : 1;
	int cpu = idx < 0 ? ncpus - 1 : idx % writer_cpus;

	if (m->o->pin && bench_pin_cpu(cpu))
		fprintf(stderr, "scaling_bench: cannot pin thread %d\n", idx);
	pthread_barrier_wait(&m->start);
}

static void sc_spawn(struct sc_run *m)
{
	int rc;

	for (unsigned int i = 0; i < m->nw; i++) {
		rc = pthread_create(&m->w[i].thread, NULL, m->ops->writer,
				    &m->w[i]);
		if (rc)
			die("pthread_create", rc);
	}
	rc = pthread_create(&m->reader, NULL, m->ops->reader, m);
	if (rc)
		die("pthread_create", rc);
}

/* Join the writers and total their counts; -1 if one failed. */
static int sc_collect(struct sc_run *m, uint64_t *ok, uint64_t *lost)
{
	int rc = 0;

	*ok = *lost = 0;
	for (unsigned int i = 0; i < m->nw; i++) {
		pthread_join(m->w[i].thread, NULL);
		if (m->w[i].err && !rc)
			rc = bench_fail("concurrent write", m->w[i].err);
		*ok += m->w[i].ok;
		*lost += m->w[i].lost;
	}
	return rc;
}

/* The books: every accepted write read, every refusal reported. */
static int sc_check(const struct sc_run *m, uint64_t ok, uint64_t lost)
{
	if (m->err)
		return bench_fail("concurrent read", m->err);
	if (m->delivered != ok) {
		fprintf(stderr,
			"scaling_bench: %u writers: %llu accepted, %llu read\n",
			m->nw, (unsigned long long)ok,
			(unsigned long long)m->delivered);
		return -1;
	}
	if (m->ops->counts_losses && m->ovf != lost) {
		fprintf(stderr,
			"scaling_bench: %llu refused, %llu in overflow records\n",
			(unsigned long long)lost, (unsigned long long)m->ovf);
		return -1;
	}
	return 0;
}

/*
 * sc_case_run() - one repetition: start the threads, let the writers run
 * for --seconds, stop them, let the reader drain, check the books.
 */
static int sc_case_run(void *arg, struct bench_sample *s)
{
	struct sc_run *m = arg;
	struct bench_timer t;
	uint64_t ok, lost;
	int rc;

	atomic_store(&m->stop, false);
	atomic_store(&m->done, false);
	m->delivered = m->ovf = 0;
	m->err = 0;
	for (unsigned int i = 0; i < m->nw; i++)
		m->w[i] = (struct sc_writer){ .m = m, .id = i };
	if (m->ops->open(m))
		return -1;
	pthread_barrier_init(&m->start, NULL, m->nw + 2);
	sc_spawn(m);
	pthread_barrier_wait(&m->start);
	bench_timer_start(&t);
	sleep_seconds(m->o->seconds);
	atomic_store(&m->stop, true);
	rc = sc_collect(m, &ok, &lost);
	m->ops->finish(m);
	pthread_join(m->reader, NULL);
	bench_timer_stop(&t, s, m->delivered);
	s->lost += lost;
	pthread_barrier_destroy(&m->start);
	if (!rc)
		rc = sc_check(m, ok, lost);
	return m->ops->close(m) || rc ? -1 : 0;
}

/* Readers without EOF: the writers are joined; all they wrote is visible. */
static void sc_finish_done(struct sc_run *m)
{
	atomic_store_explicit(&m->done, true, memory_order_release);
}

/*
 * sc_read_until_done() - the polling readers' loop: call @get until the
 * writers are done and it finds nothing; yield when it finds nothing
 * before that.
 * @get: takes one record into @out; true if there was one
 */
static void sc_read_until_done(struct sc_run *m,
			       bool (*get)(struct sc_run *m, struct rec34 *out))
{
	struct rec34 out;
	bool done, got;

	sc_thread_start(m, -1);
	for (;;) {
		/* Acquire: pairs with sc_finish_done(). */
		done = atomic_load_explicit(&m->done, memory_order_acquire);
		got = get(m, &out);
		if (got && !bench_rec_ok(out.w)) {
			m->err = -EIO;
			return;
		}
		if (got)
			m->delivered++;
		else if (done)
			return;
		else
			sched_yield();
	}
}

static bool sc_stopped(const struct sc_run *m)
{
	return atomic_load_explicit(&m->stop, memory_order_relaxed);
}

/* ---- writer scaling: profbuf ----------------------------------------- */

static int pb_sc_open(struct sc_run *m)
{
	m->pb = profbuf_new(HDRSIZE, SC_RING_WORDS, SC_SLOTS);
	return m->pb ? 0 : bench_fail("profbuf_new", errno);
}

static void *pb_writer(void *arg)
{
	struct sc_writer *w = arg;
	struct sc_run *m = w->m;
	uint64_t now = 0, ok = 0, lost = 0;
	int rc;

	sc_thread_start(m, (int)w->id);
	while (!sc_stopped(m)) {
		rc = profbuf_write(m->pb, w, (int64_t)now++, bench_rec.hdr,
				   HDRSIZE, bench_rec.stk, NSTK);
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

static void *pb_reader(void *arg)
{
	struct sc_run *m = arg;
	struct profbuf_read rd;

	sc_thread_start(m, -1);
	do {
		m->err = profbuf_read(m->pb, PROFBUF_BLOCKING, &rd);
		if (!m->err)
			m->err = bench_rec_account(&rd, &m->delivered, &m->ovf);
	} while (!m->err && !rd.eof);
	return NULL;
}

static void pb_sc_finish(struct sc_run *m)
{
	profbuf_close(m->pb);
}

static int pb_sc_close(struct sc_run *m)
{
	profbuf_free(m->pb);
	m->pb = NULL;
	return 0;
}

/* Every refused write must reach the reader in an overflow record. */
static const struct sc_ops pb_sc_ops = {
	pb_sc_open, pb_writer, pb_reader, pb_sc_finish, pb_sc_close, true,
};

/* ---- writer scaling: profbuf_group ----------------------------------- */

static int pg_sc_open(struct sc_run *m)
{
	m->pg = profbuf_group_new((size_t)bench_ncpus(), HDRSIZE, SC_RING_WORDS,
				  SC_SLOTS);
	return m->pg ? 0 : bench_fail("profbuf_group_new", errno);
}

static void *pg_writer(void *arg)
{
	struct sc_writer *w = arg;
	struct sc_run *m = w->m;
	uint64_t now = 0, ok = 0, lost = 0;
	int rc;

	sc_thread_start(m, (int)w->id);
	while (!sc_stopped(m)) {
		rc = profbuf_group_write(m->pg, w, (int64_t)now++,
					 bench_rec.hdr, HDRSIZE, bench_rec.stk,
					 NSTK);
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

static void *pg_reader(void *arg)
{
	struct sc_run *m = arg;
	struct profbuf_read rd;

	sc_thread_start(m, -1);
	do {
		m->err = profbuf_group_read(m->pg, PROFBUF_BLOCKING, &rd);
		if (!m->err)
			m->err = bench_rec_account(&rd, &m->delivered, &m->ovf);
	} while (!m->err && !rd.eof);
	return NULL;
}

static void pg_sc_finish(struct sc_run *m)
{
	profbuf_group_close(m->pg);
}

static int pg_sc_close(struct sc_run *m)
{
	profbuf_group_free(m->pg);
	m->pg = NULL;
	return 0;
}

/* Every refused write must reach the reader in an overflow record. */
static const struct sc_ops pg_sc_ops = {
	pg_sc_open, pg_writer, pg_reader, pg_sc_finish, pg_sc_close, true,
};

/* ---- writer scaling: ck_ring MPMC ------------------------------------ */

static int ck_sc_open(struct sc_run *m)
{
	ck_ring_init(&m->ck, SC_SLOTS);
	m->ck_buf = calloc(SC_SLOTS, sizeof(*m->ck_buf));
	return m->ck_buf ? 0 : bench_fail("calloc", -ENOMEM);
}

static void *ck_writer(void *arg)
{
	struct sc_writer *w = arg;
	struct sc_run *m = w->m;
	uint64_t now = 0, ok = 0, lost = 0;
	struct rec34 rec;

	bench_rec_fill(rec.w, 0);
	sc_thread_start(m, (int)w->id);
	while (!sc_stopped(m)) {
		rec.w[1] = now++;
		if (ck_ring_enqueue_mpmc_rec34(&m->ck, m->ck_buf, &rec))
			ok++;
		else
			lost++;
	}
	w->ok = ok;
	w->lost = lost;
	return NULL;
}

static bool ck_get(struct sc_run *m, struct rec34 *out)
{
	return ck_ring_dequeue_mpmc_rec34(&m->ck, m->ck_buf, out);
}

static void *ck_reader(void *arg)
{
	sc_read_until_done(arg, ck_get);
	return NULL;
}

static int ck_sc_close(struct sc_run *m)
{
	free(m->ck_buf);
	m->ck_buf = NULL;
	return 0;
}

/* ck_ring keeps no loss count: the writers' is the only one. */
static const struct sc_ops ck_sc_ops = {
	ck_sc_open, ck_writer, ck_reader, sc_finish_done, ck_sc_close, false,
};

/* ---- writer scaling: mutex ring -------------------------------------- */

static int mx_sc_open(struct sc_run *m)
{
	m->mx = calloc(1, sizeof(*m->mx));
	if (!m->mx)
		return bench_fail("calloc", -ENOMEM);
	pthread_mutex_init(&m->mx->lock, NULL);
	return 0;
}

/* Copy @rec into the ring under the lock; false if it is full. */
static bool mx_put(struct mx_ring *r, const struct rec34 *rec)
{
	bool ok;

	pthread_mutex_lock(&r->lock);
	ok = r->head - r->tail < SC_SLOTS;
	if (ok)
		r->slot[r->head++ % SC_SLOTS] = *rec;
	pthread_mutex_unlock(&r->lock);
	return ok;
}

static void *mx_writer(void *arg)
{
	struct sc_writer *w = arg;
	struct sc_run *m = w->m;
	uint64_t now = 0, ok = 0, lost = 0;
	struct rec34 rec;

	bench_rec_fill(rec.w, 0);
	sc_thread_start(m, (int)w->id);
	while (!sc_stopped(m)) {
		rec.w[1] = now++;
		if (mx_put(m->mx, &rec))
			ok++;
		else
			lost++;
	}
	w->ok = ok;
	w->lost = lost;
	return NULL;
}

/* Copy the oldest record out under the lock; false if empty. */
static bool mx_get(struct sc_run *m, struct rec34 *out)
{
	struct mx_ring *r = m->mx;
	bool got;

	pthread_mutex_lock(&r->lock);
	got = r->tail != r->head;
	if (got)
		*out = r->slot[r->tail++ % SC_SLOTS];
	pthread_mutex_unlock(&r->lock);
	return got;
}

static void *mx_reader(void *arg)
{
	sc_read_until_done(arg, mx_get);
	return NULL;
}

static int mx_sc_close(struct sc_run *m)
{
	pthread_mutex_destroy(&m->mx->lock);
	free(m->mx);
	m->mx = NULL;
	return 0;
}

static const struct sc_ops mx_sc_ops = {
	mx_sc_open, mx_writer, mx_reader, sc_finish_done, mx_sc_close, false,
};

/* ---- writer scaling: pipe -------------------------------------------- */

/*
 * pp_sc_open() - a pipe with a non-blocking write end and a blocking read
 * end, sized like the rings (where the limit allows).
 */
static int pp_sc_open(struct sc_run *m)
{
	if (pipe2(m->pipefd, O_CLOEXEC))
		return bench_fail("pipe2", errno);
	if (fcntl(m->pipefd[1], F_SETFL, O_NONBLOCK))
		return bench_fail("fcntl O_NONBLOCK", errno);
	if (fcntl(m->pipefd[1], F_SETPIPE_SZ, SC_RING_WORDS * 8) < 0)
		fprintf(stderr, "scaling_bench: F_SETPIPE_SZ: %s\n",
			strerror(errno));
	return 0;
}

static void *pp_writer(void *arg)
{
	struct sc_writer *w = arg;
	struct sc_run *m = w->m;
	uint64_t now = 0, ok = 0, lost = 0;
	struct rec34 rec;
	ssize_t n;

	bench_rec_fill(rec.w, 0);
	sc_thread_start(m, (int)w->id);
	while (!sc_stopped(m)) {
		rec.w[1] = now++;
		n = write(m->pipefd[1], &rec, sizeof(rec));
		if (n == (ssize_t)sizeof(rec)) {
			ok++;
		} else if (n < 0 && errno == EAGAIN) {
			lost++;
		} else {
			w->err = n < 0 ? -errno : -EIO; /* a torn write */
			break;
		}
	}
	w->ok = ok;
	w->lost = lost;
	return NULL;
}

/* Check and count the whole records in @buf; return the bytes used. */
static size_t pp_account(struct sc_run *m, const uint64_t *buf, size_t bytes)
{
	size_t off;

	for (off = 0; off + REC_BYTES <= bytes && !m->err; off += REC_BYTES) {
		if (bench_rec_ok(buf + off / sizeof(*buf)))
			m->delivered++;
		else
			m->err = -EIO;
	}
	return off;
}

/*
 * pp_reader() - read until EOF.  Writes are atomic, but a read may end
 * inside a record; the tail is kept for the next read.
 */
static void *pp_reader(void *arg)
{
	struct sc_run *m = arg;
	uint64_t buf[PP_READ_RECS * WORDS];
	size_t have = 0, used;
	ssize_t n;

	sc_thread_start(m, -1);
	while (!m->err) {
		n = read(m->pipefd[0], (char *)buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			m->err = n < 0 ? -errno : have ? -EIO : 0;
			break;
		}
		have += (size_t)n;
		used = pp_account(m, buf, have);
		memmove(buf, (char *)buf + used, have - used);
		have -= used;
	}
	return NULL;
}

/* EOF for the reader. */
static void pp_sc_finish(struct sc_run *m)
{
	close(m->pipefd[1]);
}

static int pp_sc_close(struct sc_run *m)
{
	close(m->pipefd[0]);
	return 0;
}

/* The writers' EAGAIN count is the only loss count. */
static const struct sc_ops pp_sc_ops = {
	pp_sc_open, pp_writer, pp_reader, pp_sc_finish, pp_sc_close, false,
};

/* ---- writer scaling: liburcu wfcqueue -------------------------------- */

/* Give @wq_pool nodes to writer @w: its return ring, full. */
static int wq_pool_init(struct sc_run *m, struct sc_writer *w)
{
	uint32_t size = bench_round_pow2(m->wq_pool + 1);
	struct wq_node *n = m->wq_nodes + (size_t)w->id * m->wq_pool;

	w->ret_buf = calloc(size, sizeof(*w->ret_buf));
	if (!w->ret_buf)
		return bench_fail("calloc", -ENOMEM);
	ck_ring_init(&w->ret, size);
	for (unsigned int i = 0; i < m->wq_pool; i++) {
		n[i].owner = w;
		bench_rec_fill(n[i].rec.w, 0);
		ck_ring_enqueue_spsc(&w->ret, w->ret_buf, &n[i]);
	}
	return 0;
}

static int wq_sc_open(struct sc_run *m)
{
	m->wq_pool = SC_SLOTS / m->nw ? SC_SLOTS / m->nw : 1;
	m->wq_nodes = calloc((size_t)m->nw * m->wq_pool, sizeof(*m->wq_nodes));
	if (!m->wq_nodes)
		return bench_fail("calloc", -ENOMEM);
	__cds_wfcq_init(&m->wq_head, &m->wq_tail);
	for (unsigned int i = 0; i < m->nw; i++)
		if (wq_pool_init(m, &m->w[i]))
			return -1;
	return 0;
}

static void *wq_writer(void *arg)
{
	struct sc_writer *w = arg;
	struct sc_run *m = w->m;
	uint64_t now = 0, ok = 0, lost = 0;
	struct rec34 rec;
	struct wq_node *n;

	bench_rec_fill(rec.w, 0);
	sc_thread_start(m, (int)w->id);
	while (!sc_stopped(m)) {
		rec.w[1] = now++;
		if (!ck_ring_dequeue_spsc(&w->ret, w->ret_buf, &n)) {
			lost++;
			continue;
		}
		n->rec = rec;
		cds_wfcq_node_init(&n->link);
		cds_wfcq_enqueue(&m->wq_head, &m->wq_tail, &n->link);
		ok++;
	}
	w->ok = ok;
	w->lost = lost;
	return NULL;
}

/* Dequeue a node, copy its record out, give it back to its writer. */
static bool wq_get(struct sc_run *m, struct rec34 *out)
{
	struct cds_wfcq_node *l;
	struct wq_node *n;

	l = __cds_wfcq_dequeue_blocking(&m->wq_head, &m->wq_tail);
	if (!l)
		return false;
	n = caa_container_of(l, struct wq_node, link);
	*out = n->rec;
	ck_ring_enqueue_spsc(&n->owner->ret, n->owner->ret_buf, n);
	return true;
}

static void *wq_reader(void *arg)
{
	sc_read_until_done(arg, wq_get);
	return NULL;
}

/* Every node must be back in its writer's pool. */
static int wq_sc_close(struct sc_run *m)
{
	unsigned int missing = 0;

	for (unsigned int i = 0; i < m->nw; i++) {
		missing += m->wq_pool - ck_ring_size(&m->w[i].ret);
		free(m->w[i].ret_buf);
	}
	free(m->wq_nodes);
	m->wq_nodes = NULL;
	if (!missing)
		return 0;
	fprintf(stderr, "scaling_bench: wfcq: %u nodes not returned\n",
		missing);
	return -1;
}

static const struct sc_ops wq_sc_ops = {
	wq_sc_open, wq_writer, wq_reader, sc_finish_done, wq_sc_close, false,
};

/* ---- writer scaling: the comparison ---------------------------------- */

/* The anchors of the "scaling" rows are SC_CK ... SC_WQ. */
enum { SC_PB, SC_CK, SC_MX, SC_PP, SC_WQ, SC_PG, SC_N };

static const char *const sc_names[SC_N] = { "profbuf", "ck_mpmc",
					    "mutex",   "pipe",
					    "wfcq",    "profbuf_group" };
static const struct sc_ops *const sc_impls[SC_N] = {
	&pb_sc_ops, &ck_sc_ops, &mx_sc_ops, &pp_sc_ops, &wq_sc_ops, &pg_sc_ops,
};

/* profbuf with one writer: the group rows' goal (issue 32). */
static struct bench_stats sc_one_writer;
static bool sc_have_one_writer;

static double lost_frac(const struct bench_stats *st)
{
	uint64_t all = st->ops + st->lost;

	return all ? (double)st->lost / (double)all : 0;
}

/*
 * sc_report() - one row per anchor; the goal holds against ck_mpmc for
 * W >= 2 only.
 */
static void sc_report(unsigned int nw, const struct bench_stats *st)
{
	char name[32], note[96];
	struct bench_row row = {
		.name = name,
		.unit = BENCH_MOPS,
		.ours = &st[SC_PB],
		.ours_name = sc_names[SC_PB],
		.note = note,
	};

	snprintf(name, sizeof(name), "scaling %uw 34w", nw);
	for (int i = SC_CK; i <= SC_WQ; i++) {
		bool goal = i == SC_CK && nw >= 2;

		snprintf(note, sizeof(note), "%slost %.1f%% vs %.1f%%",
			 goal ? "" : "info; ", 100 * lost_frac(&st[SC_PB]),
			 100 * lost_frac(&st[i]));
		row.anchor = &st[i];
		row.anchor_name = sc_names[i];
		row.goal_ratio = goal ? 1.0 : 0;
		row.goal_le = false;
		bench_report_row(&row);
	}
}

/*
 * sc_report_group() - the group's rows: against profbuf at this W, and
 * (for W >= 2) against profbuf's one-writer rate, the goal.
 */
static void sc_report_group(unsigned int nw, const struct bench_stats *st)
{
	char name[32], note[96];
	struct bench_row row = {
		.name = name,
		.unit = BENCH_MOPS,
		.ours = &st[SC_PG],
		.ours_name = sc_names[SC_PG],
		.anchor = &st[SC_PB],
		.anchor_name = sc_names[SC_PB],
		.note = note,
	};

	if (nw == 1) {
		sc_one_writer = st[SC_PB];
		sc_have_one_writer = true;
	}
	snprintf(name, sizeof(name), "group %uw 34w", nw);
	snprintf(note, sizeof(note), "info; lost %.1f%% vs %.1f%%",
		 100 * lost_frac(&st[SC_PG]), 100 * lost_frac(&st[SC_PB]));
	bench_report_row(&row);
	if (nw < 2 || !sc_have_one_writer)
		return;
	snprintf(note, sizeof(note), "lost %.1f%%; anchor: 1 writer",
		 100 * lost_frac(&st[SC_PG]));
	row.anchor = &sc_one_writer;
	row.anchor_name = "profbuf 1w";
	row.goal_ratio = 1.0;
	bench_report_row(&row);
}

/*
 * sc_csv() - the W group's lines of scaling.csv:
 * writers,impl,delivered_per_s,lost_fraction,delivered_per_s_min,
 * delivered_per_s_max,cpus - delivered records per second over the
 * repetitions (median, min, max), and writes lost / writes attempted
 * over all of them.
 */
static void sc_csv(FILE *f, unsigned int nw, const struct bench_stats *st)
{
	if (!f)
		return;
	for (int i = 0; i < SC_N; i++)
		fprintf(f, "%u,%s,%.1f,%.6f,%.1f,%.1f,%d\n", nw, sc_names[i],
			1e9 / st[i].median, lost_frac(&st[i]), 1e9 / st[i].max,
			1e9 / st[i].min, bench_ncpus());
	fflush(f);
}

/**
 * scaling_one() - measure and report one writer count.
 * @o:  options; the group runs (@o->reps + 1) / 2 repetitions
 * @nw: writers
 * @f:  scaling.csv, or NULL
 *
 * Return: 0, or -1 if anything failed.
 */
static int scaling_one(const struct bench_opts *o, unsigned int nw, FILE *f)
{
	struct bench_opts so = *o;
	struct sc_run *m;
	struct bench_case bc[SC_N];
	struct bench_stats st[SC_N];
	int rc = -1;

	so.warmup = 0; /* every repetition starts fresh threads and rings */
	so.reps = (o->reps + 1) / 2;
	m = aligned_alloc(CACHELINE, SC_N * sizeof(*m));
	if (!m)
		return bench_fail("aligned_alloc", -ENOMEM);
	memset(m, 0, SC_N * sizeof(*m));
	for (int i = 0; i < SC_N; i++) {
		m[i].ops = sc_impls[i];
		m[i].o = o;
		m[i].nw = nw;
		m[i].w = aligned_alloc(CACHELINE, nw * sizeof(*m[i].w));
		if (!m[i].w)
			goto out;
		bc[i] = (struct bench_case){ sc_names[i], sc_case_run, &m[i] };
	}
	rc = bench_run_cases(bc, SC_N, &so, st);
	if (!rc) {
		sc_report(nw, st);
		sc_report_group(nw, st);
		sc_csv(f, nw, st);
	}
out:
	for (int i = 0; i < SC_N; i++)
		free(m[i].w);
	free(m);
	return rc;
}

/*
 * scaling() - W = 1, 2, 4, ... below the CPU count, the CPU count, and
 * twice it.
 */
static int scaling(const struct bench_opts *o)
{
	unsigned int ncpus = (unsigned int)bench_ncpus(), nw;
	FILE *f = fopen(SCALING_CSV, "w");
	int rc = 0;

	if (f)
		fprintf(f, "writers,impl,delivered_per_s,lost_fraction,"
			   "delivered_per_s_min,delivered_per_s_max,cpus\n");
	else
		fprintf(stderr, "scaling_bench: cannot open %s: %s\n",
			SCALING_CSV, strerror(errno));
	for (nw = 1; nw < ncpus && !rc; nw *= 2)
		rc = scaling_one(o, nw, f);
	if (!rc)
		rc = scaling_one(o, ncpus, f);
	if (!rc)
		rc = scaling_one(o, 2 * ncpus, f);
	if (f)
		fclose(f);
	return rc;
}

/* ---- reader drain rate ----------------------------------------------- */

/*
 * struct dr_case - the drain cases' state.
 * @pb:   profbuf of DR_WORDS words (profbuf case)
 * @from: the anchor's prefilled source, DR_RECS records
 * @to:   destination of the copy, DR_RECS records
 * @now:  next time stamp
 */
struct dr_case {
	struct profbuf *pb;
	uint64_t *from;
	uint64_t *to;
	uint64_t now;
};

/* Every record of @to intact, with time stamps @first, @first + 1, ... */
static int dr_check(const uint64_t *to, size_t words, uint64_t first)
{
	if (words != (size_t)DR_RECS * WORDS) {
		fprintf(stderr, "scaling_bench: drained %zu words, wrote %zu\n",
			words, (size_t)DR_RECS * WORDS);
		return -1;
	}
	for (size_t i = 0; i < DR_RECS; i++) {
		const uint64_t *r = to + i * WORDS;

		if (!bench_rec_ok(r) || r[1] != first + i) {
			fprintf(stderr,
				"scaling_bench: drain: bad record %zu\n", i);
			return -1;
		}
	}
	return 0;
}

static int dr_prefill(struct dr_case *c)
{
	int rc;

	for (size_t i = 0; i < DR_RECS; i++) {
		rc = profbuf_write(c->pb, c, (int64_t)c->now++, bench_rec.hdr,
				   HDRSIZE, bench_rec.stk, NSTK);
		if (rc)
			return bench_fail("prefill profbuf_write", rc);
	}
	return 0;
}

/*
 * pb_drain_once() - read non-blocking until a read comes back empty,
 * copying every run out; only this is timed.
 *
 * Return: the words copied, or a negative errno.
 */
static long pb_drain_once(struct dr_case *c, struct bench_sample *s)
{
	struct profbuf_read rd;
	struct bench_timer t;
	size_t words = 0;
	int rc;

	bench_timer_start(&t);
	for (;;) {
		rc = profbuf_read(c->pb, PROFBUF_NONBLOCKING, &rd);
		if (rc || !rd.ndata ||
		    words + rd.ndata > (size_t)DR_RECS * WORDS)
			break;
		memcpy(c->to + words, rd.data, rd.ndata * sizeof(*rd.data));
		words += rd.ndata;
	}
	bench_timer_stop(&t, s, words);
	if (rc)
		return rc;
	return rd.ndata ? -EOVERFLOW : (long)words;
}

static int pb_drain_run(void *arg, struct bench_sample *s)
{
	struct dr_case *c = arg;
	uint64_t first;
	long words;

	for (int r = 0; r < DR_ROUNDS; r++) {
		first = c->now;
		if (dr_prefill(c))
			return -1;
		words = pb_drain_once(c, s);
		if (words < 0)
			return bench_fail("profbuf drain", (int)words);
		if (dr_check(c->to, (size_t)words, first))
			return -1;
	}
	return 0;
}

static int memcpy_drain_run(void *arg, struct bench_sample *s)
{
	struct dr_case *c = arg;
	size_t words = (size_t)DR_RECS * WORDS;
	struct bench_timer t;

	for (int r = 0; r < DR_ROUNDS; r++) {
		for (size_t i = 0; i < DR_RECS; i++)
			c->from[i * WORDS + 1] = c->now + i;
		bench_timer_start(&t);
		memcpy(c->to, c->from, words * sizeof(*c->to));
		bench_timer_stop(&t, s, words);
		if (dr_check(c->to, words, c->now))
			return -1;
		c->now += DR_RECS;
	}
	return 0;
}

/* Both cases' buffers, touched so that no page fault is timed. */
static int dr_init(struct dr_case *c)
{
	size_t bytes = (size_t)DR_RECS * REC_BYTES;

	for (int i = 0; i < 2; i++) {
		c[i].to = malloc(bytes);
		if (!c[i].to)
			return bench_fail("malloc", -ENOMEM);
		memset(c[i].to, 0, bytes);
	}
	c[0].pb = profbuf_new(HDRSIZE, DR_WORDS, bench_round_pow2(DR_RECS + 1));
	if (!c[0].pb)
		return bench_fail("profbuf_new", errno);
	c[1].from = malloc(bytes);
	if (!c[1].from)
		return bench_fail("malloc", -ENOMEM);
	for (size_t i = 0; i < DR_RECS; i++)
		bench_rec_fill(c[1].from + i * WORDS, 0);
	return 0;
}

/**
 * drain() - measure and report the reader's drain rate.
 * @o: options
 *
 * Return: 0, or -1 if anything failed.
 */
static int drain(const struct bench_opts *o)
{
	struct dr_case c[2] = { 0 };
	struct bench_case bc[2] = {
		{ "profbuf_read", pb_drain_run, &c[0] },
		{ "memcpy", memcpy_drain_run, &c[1] },
	};
	struct bench_stats st[2];
	int rc = dr_init(c);

	if (!rc)
		rc = bench_run_cases(bc, 2, o, st);
	if (!rc)
		bench_info_row("drain 34w", BENCH_MOPS, &st[0], bc[0].name,
			       &st[1], bc[1].name,
			       "info; Mop/s = million words/s");
	profbuf_free(c[0].pb);
	for (int i = 0; i < 2; i++) {
		free(c[i].to);
		free(c[i].from);
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o;

	bench_parse_args(argc, argv, &o);
	bench_rec_init();
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "scaling_bench: cannot pin to CPU 0\n");
	bench_report_begin("scaling_bench", &o);
	if (scaling(&o) || drain(&o))
		return 1;
	bench_report_note("Scaling: W writers + 1 reader, 34-word records, "
			  "%g s per repetition, %u repetitions, %d CPUs; "
			  "Mop/s = records delivered to the reader per "
			  "second; lost = writes refused / writes attempted; "
			  "curves in %s.",
			  o.seconds, (o.reps + 1) / 2, bench_ncpus(),
			  SCALING_CSV);
	bench_report_note("Drain: %u records of %d words prefilled untimed, "
			  "then read non-blocking and copied out, %d rounds "
			  "per repetition; Mop/s = million words per second.",
			  DR_RECS, WORDS, DR_ROUNDS);
	bench_report_end();
	return 0;
}
