// SPDX-License-Identifier: MIT
/*
 * bench/scaling/anchors.c - the anchors under the scaling workload:
 * ConcurrencyKit's MPMC ring, a mutex ring, a pipe and liburcu's wfcqueue
 * (why they are fair: bench/scaling_bench.c).
 */
#include "bench/scaling/scaling.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PP_READ_RECS 64 /* records per pipe read */

CK_RING_PROTOTYPE(rec34, rec34)

/* ---- writer scaling: ck_ring MPMC ------------------------------------ */

static int ck_sc_open(struct sc_run *m)
{
	ck_ring_init(&m->ck, SC_SLOTS);
	m->ck_buf = calloc(SC_SLOTS, sizeof(*m->ck_buf));
	return m->ck_buf ? 0 : bench_fail("calloc", -ENOMEM);
}

static int ck_put(struct sc_writer *w, struct rec34 *rec, uint64_t now)
{
	struct sc_run *m = w->m;

	rec->w[1] = now;
	return ck_ring_enqueue_mpmc_rec34(&m->ck, m->ck_buf, rec) ? 0 : -ENOSPC;
}

static void *ck_writer(void *arg)
{
	return sc_write_until_stopped(arg, ck_put);
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
const struct sc_ops ck_sc_ops = {
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

/* Copy @rec, stamped @now, into the ring under the lock; -ENOSPC if full. */
static int mx_put(struct sc_writer *w, struct rec34 *rec, uint64_t now)
{
	struct mx_ring *r = w->m->mx;
	bool ok;

	rec->w[1] = now;
	pthread_mutex_lock(&r->lock);
	ok = r->head - r->tail < SC_SLOTS;
	if (ok)
		r->slot[r->head++ % SC_SLOTS] = *rec;
	pthread_mutex_unlock(&r->lock);
	return ok ? 0 : -ENOSPC;
}

static void *mx_writer(void *arg)
{
	return sc_write_until_stopped(arg, mx_put);
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

const struct sc_ops mx_sc_ops = {
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

/* A full pipe (EAGAIN) is -ENOSPC; a torn write, -EIO. */
static int pp_put(struct sc_writer *w, struct rec34 *rec, uint64_t now)
{
	ssize_t n;

	rec->w[1] = now;
	n = write(w->m->pipefd[1], rec, sizeof(*rec));
	if (n == (ssize_t)sizeof(*rec))
		return 0;
	if (n < 0 && errno == EAGAIN)
		return -ENOSPC;
	return n < 0 ? -errno : -EIO;
}

static void *pp_writer(void *arg)
{
	return sc_write_until_stopped(arg, pp_put);
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
const struct sc_ops pp_sc_ops = {
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

/* A node from @w's pool, @rec in it, enqueued; -ENOSPC: none left. */
static int wq_put(struct sc_writer *w, struct rec34 *rec, uint64_t now)
{
	struct sc_run *m = w->m;
	struct wq_node *n;

	rec->w[1] = now;
	if (!ck_ring_dequeue_spsc(&w->ret, w->ret_buf, &n))
		return -ENOSPC;
	n->rec = *rec;
	cds_wfcq_node_init(&n->link);
	cds_wfcq_enqueue(&m->wq_head, &m->wq_tail, &n->link);
	return 0;
}

static void *wq_writer(void *arg)
{
	return sc_write_until_stopped(arg, wq_put);
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

const struct sc_ops wq_sc_ops = {
	wq_sc_open, wq_writer, wq_reader, sc_finish_done, wq_sc_close, false,
};
