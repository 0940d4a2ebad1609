// SPDX-License-Identifier: MIT
/*
 * bench/scaling/profbuf.c - ours under the scaling workload: one profbuf
 * that every writer writes to, a profbuf_group with one ring per CPU,
 * and a group with one owned ring per writer (see bench/scaling_bench.c).
 */
#include "bench/scaling/scaling.h"

#include <errno.h>

/* ---- writer scaling: profbuf ----------------------------------------- */

static int pb_sc_open(struct sc_run *m)
{
	m->pb = profbuf_new(HDRSIZE, SC_RING_WORDS, SC_SLOTS);
	return m->pb ? 0 : bench_fail("profbuf_new", errno);
}

/*
 * read_until_eof() - the readers' loop: @read (blocking) until EOF, each
 * read checked and counted.  Inlined, @read with it, as
 * sc_write_until_stopped().
 */
static inline __attribute__((always_inline)) void *
read_until_eof(struct sc_run *m,
	       int (*read)(struct sc_run *m, struct profbuf_read *rd))
{
	struct profbuf_read rd;

	sc_thread_start(m, -1);
	do {
		m->err = read(m, &rd);
		if (!m->err)
			m->err = bench_rec_account(&rd, &m->delivered, &m->ovf);
	} while (!m->err && !rd.eof);
	return NULL;
}

/* The record straight from bench_rec: @rec is not used. */
static int pb_put(struct sc_writer *w, struct rec34 *rec, uint64_t now)
{
	(void)rec;
	return profbuf_write(w->m->pb, w, (int64_t)now, bench_rec.hdr, HDRSIZE,
			     bench_rec.stk, NSTK);
}

static void *pb_writer(void *arg)
{
	return sc_write_until_stopped(arg, pb_put);
}

static int pb_read(struct sc_run *m, struct profbuf_read *rd)
{
	return profbuf_read(m->pb, PROFBUF_BLOCKING, rd);
}

static void *pb_reader(void *arg)
{
	return read_until_eof(arg, pb_read);
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
const struct sc_ops pb_sc_ops = {
	pb_sc_open, pb_writer, pb_reader, pb_sc_finish, pb_sc_close, true,
};

/* ---- writer scaling: profbuf_group ----------------------------------- */

static int pg_sc_open(struct sc_run *m)
{
	m->pg = profbuf_group_new((size_t)bench_ncpus(), HDRSIZE, SC_RING_WORDS,
				  SC_SLOTS);
	return m->pg ? 0 : bench_fail("profbuf_group_new", errno);
}

static int pg_put(struct sc_writer *w, struct rec34 *rec, uint64_t now)
{
	(void)rec;
	return profbuf_group_write(w->m->pg, w, (int64_t)now, bench_rec.hdr,
				   HDRSIZE, bench_rec.stk, NSTK);
}

static void *pg_writer(void *arg)
{
	return sc_write_until_stopped(arg, pg_put);
}

static int pg_read(struct sc_run *m, struct profbuf_read *rd)
{
	return profbuf_group_read(m->pg, PROFBUF_BLOCKING, rd);
}

static void *pg_reader(void *arg)
{
	return read_until_eof(arg, pg_read);
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
const struct sc_ops pg_sc_ops = {
	pg_sc_open, pg_writer, pg_reader, pg_sc_finish, pg_sc_close, true,
};

/* ---- writer scaling: profbuf_group's owned rings --------------------- */

/*
 * One owned ring per writer, and the one shared ring a group has (for a
 * writer that finds no owned ring free: none here).
 */
static int po_sc_open(struct sc_run *m)
{
	m->pg = profbuf_group_new_owned(1, m->nw, HDRSIZE, SC_RING_WORDS,
					SC_SLOTS);
	return m->pg ? 0 : bench_fail("profbuf_group_new_owned", errno);
}

static int po_put(struct sc_writer *w, struct rec34 *rec, uint64_t now)
{
	(void)rec;
	if (__builtin_expect(!w->po, 0))
		return profbuf_write(profbuf_group_mine(w->m->pg), w,
				     (int64_t)now, bench_rec.hdr, HDRSIZE,
				     bench_rec.stk, NSTK);
	return profbuf_owned_write(w->po, w, (int64_t)now, bench_rec.hdr,
				   HDRSIZE, bench_rec.stk, NSTK);
}

/* The ring is claimed on the writer's thread, before the start (untimed). */
static void *po_writer(void *arg)
{
	struct sc_writer *w = arg;

	w->po = profbuf_group_claim(w->m->pg);
	return sc_write_until_stopped(w, po_put);
}

/* Read, finish and close as the group's. */
const struct sc_ops po_sc_ops = {
	po_sc_open, po_writer, pg_reader, pg_sc_finish, pg_sc_close, true,
};
