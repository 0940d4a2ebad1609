// SPDX-License-Identifier: MIT
/*
 * bench/profbuf_bench.c - profbuf against its anchors.
 *
 * What it measures.
 *
 * 1. Single writer: ns per profbuf_write() for records of 8, 34 and 66
 *    words (hdrsize 2, stacks of 4, 30 and 62 words, header nonzero).  No
 *    reader runs inside the timed region: each timed batch writes --batch
 *    records into an empty ring that holds them all, then the ring is
 *    drained untimed with non-blocking reads, and so on for 2^20 records
 *    per repetition.  Every write must return 0 and every drain must give
 *    back exactly the batch; anything else aborts the benchmark, since a
 *    benchmark that times failures measures nothing.
 *
 * 2. Writers racing each other and a reader: bench/scaling_bench.c
 *    (1 ... 2 x nproc writers against ck_ring MPMC, a mutex ring, a
 *    pipe and liburcu's wfcqueue).
 *
 * Why the anchors are fair.
 *
 *  - floor: what any multi-writer ring must do at least - one atomic
 *    compare-exchange on a 64-bit counter to claim a slot, and a memcpy of
 *    the same record (len, time, header, stack) into a plain uint64_t
 *    slot.  It never checks for room, commits nothing and has no reader,
 *    so profbuf can only approach it; the goal is profbuf <= 1.5 / 1.3 /
 *    1.2 x floor at 8 / 34 / 66 words.
 *  - ck_spsc: ConcurrencyKit's typed by-value ring (CK_RING_PROTOTYPE)
 *    with a struct the size of the record.  Its caller holds the record in
 *    such a struct (as a profiler would unwind straight into it) and sets
 *    the time; ck_ring_enqueue_spsc copies all of it into the ring.  So
 *    both sides copy the same words into the ring once.  ck_spsc_resv is
 *    the same ring filled in place (reserve, the same copy as the floor
 *    from the same separate header and stack arrays, commit).  ck_ring
 *    SPSC is single-writer only and needs no atomic read-modify-write;
 *    profbuf pays for being multi-writer and signal-safe.  Goal <= 1.0.
 *
 * Caveats, so that the numbers are read right.
 *
 *  - ck_spsc is slower than its work suggests, for two reasons outside
 *    ck_ring's design: storing the time into the caller's struct right
 *    before the enqueue's wide loads costs a store-forwarding stall, and
 *    GCC (generic tuning) inlines the constant 272- and 528-byte copies
 *    as "rep movsq", which has a large start-up cost on some CPUs (clang
 *    calls memcpy()).  ck_spsc_resv has neither and is the like-for-like
 *    measure of an SPSC ring's cost.
 *
 * All implementations use the same batch size, ring footprint, record and
 * time stamps, and run interleaved repetition by repetition (harness.c).
 * profbuf writes as a C caller of the library does: profbuf_write()'s
 * fast path inline (<profring/profbuf_inline.h>), the library called
 * only when it declines; ck_ring and the floor are inline too.
 * profbuf_call is the same buffer written through the library's symbol,
 * as a binary built without the inline path (C++, PROFRING_NO_INLINE, or
 * before it existed) writes: its row says what the inline path saves.
 * owned_resv is a record written in place into a ring the writing thread
 * owns (profbuf_group_claim(), profbuf/owned.c: no locked instruction):
 * profbuf_owned_reserve() (which stores the length, time, header and
 * tag), the stack copied into the reserved slots as ck_spsc_resv copies
 * it, profbuf_owned_commit(); its row is against ck_spsc_resv, goal <= 1.3
 * (issue 32).  profbuf_resv is the same in place write into a profbuf
 * (any number of writers: one locked CAS), an information row.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ck_ring.h>

#include <profring/profbuf.h>
#include <profring/profbuf_group.h>

#include "harness.h"

#define HDRSIZE 2
#define MAX_STACK 62
#define REP_RECORDS (1u << 20) /* records per single-writer repetition */
#define MT_WORDS 34
#define MT_RING_WORDS (1u << 16)
#define MT_SLOTS (MT_RING_WORDS / 32)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "64-bit stacks only");

/*
 * struct rec_src - the record every implementation copies.
 * @hdr:  header words (nonzero)
 * @stk:  stack words
 * @nstk: stack length
 * @len:  record length in words, 2 + HDRSIZE + @nstk
 */
struct rec_src {
	uint64_t hdr[HDRSIZE];
	uintptr_t stk[MAX_STACK];
	size_t nstk;
	uint64_t len;
};

static void rec_src_init(struct rec_src *r, unsigned int words)
{
	memset(r, 0, sizeof(*r));
	r->len = words;
	r->nstk = words - 2 - HDRSIZE;
	r->hdr[0] = 0x1d;
	r->hdr[1] = 0x2e;
	for (size_t i = 0; i < r->nstk; i++)
		r->stk[i] = 0x400000 + 16 * i;
}

/**
 * rec_fill() - copy a record into ring memory: the floor's copy.
 * @d:   destination, @r->len words
 * @r:   the record
 * @now: its time stamp
 */
static inline void rec_fill(uint64_t *d, const struct rec_src *r, uint64_t now)
{
	d[0] = r->len;
	d[1] = now;
	memcpy(d + 2, r->hdr, sizeof(r->hdr));
	memcpy(d + 2 + HDRSIZE, r->stk, r->nstk * sizeof(r->stk[0]));
}

/* Whether @d holds the record @r (any time stamp). */
static bool rec_ok(const uint64_t *d, const struct rec_src *r)
{
	return d[0] == r->len && d[2] == r->hdr[0] &&
	       d[r->len - 1] == r->stk[r->nstk - 1];
}

static uint32_t round_pow2(size_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* ---- single writer: cases ------------------------------------------------ */

struct st_case;

/*
 * struct st_ops - one implementation under the single-writer workload.
 * @batch: write c->batch records, timing only that
 * @drain: empty the ring, untimed, checking what comes out
 */
struct st_ops {
	int (*batch)(struct st_case *c, struct bench_sample *s);
	int (*drain)(struct st_case *c);
};

/*
 * struct st_case - the state of one single-writer case.
 * @ops:    its implementation
 * @src:    the record
 * @batch:  records per timed batch
 * @now:    next time stamp
 * @pb:     profbuf
 * @floor_head, @floor_slots, @floor_mask: the floor's ring
 * @ck, @ck_buf: the ck_ring and its slots
 * @ck_rec: the caller-held record of the by-value ck enqueue
 * @grp, @own: a group with one owned ring, and that ring, claimed
 */
struct st_case {
	const struct st_ops *ops;
	const struct rec_src *src;
	unsigned int batch;
	uint64_t now;
	struct profbuf *pb;
	_Atomic uint64_t floor_head;
	uint64_t *floor_slots;
	uint64_t floor_mask;
	struct ck_ring ck;
	void *ck_buf;
	void *ck_rec;
	struct profbuf_group *grp;
	struct profbuf_owned *own;
};

static int write_failed(const char *what, int rc)
{
	fprintf(stderr, "profbuf_bench: %s failed (%d: %s); aborting\n", what,
		rc, strerror(rc < 0 ? -rc : rc));
	return -1;
}

static int drained(struct st_case *c, const char *what, unsigned int got)
{
	if (got == c->batch)
		return 0;
	fprintf(stderr, "profbuf_bench: %s drained %u records, wrote %u\n",
		what, got, c->batch);
	return -1;
}

/*
 * st_run() - one repetition: REP_RECORDS records in timed batches, each
 * followed by an untimed drain.
 */
static int st_run(void *arg, struct bench_sample *s)
{
	struct st_case *c = arg;

	for (uint32_t n = 0; n < REP_RECORDS; n += c->batch)
		if (c->ops->batch(c, s) || c->ops->drain(c))
			return -1;
	return 0;
}

/* ---- single writer: profbuf ---------------------------------------------- */

/*
 * PB_BATCH() - a timed batch of writes by @write: profbuf_write, which C
 * callers get inline, or (profbuf_write), the library's symbol.
 */
#define PB_BATCH(name, write)                                          \
	static int name(struct st_case *c, struct bench_sample *s)     \
	{                                                              \
		const struct rec_src *r = c->src;                      \
		uint64_t now = c->now;                                 \
		struct bench_timer t;                                  \
		int bad = 0;                                           \
                                                                       \
		bench_timer_start(&t);                                 \
		for (unsigned int i = 0; i < c->batch; i++)            \
			bad |= write(c->pb, r, (int64_t)now++, r->hdr, \
				     HDRSIZE, r->stk, r->nstk);        \
		bench_timer_stop(&t, s, c->batch);                     \
		c->now = now;                                          \
		return bad ? write_failed("profbuf_write", bad) : 0;   \
	}

PB_BATCH(pb_batch, profbuf_write)
PB_BATCH(pb_call_batch, (profbuf_write))

/*
 * pb_check_run() - count the records of a read, all ordinary and intact.
 *
 * Return: the count, or -1.
 */
static long pb_check_run(const struct profbuf_read *rd, const struct rec_src *r)
{
	size_t off = 0;

	for (size_t i = 0; i < rd->ntags; i++) {
		if (!rd->tags[i] || off + r->len > rd->ndata ||
		    !rec_ok(rd->data + off, r))
			return -1;
		off += r->len;
	}
	return off == rd->ndata ? (long)rd->ntags : -1;
}

/*
 * pb_drain() - read until a read comes back empty.  Each read first gives
 * back the run the previous one returned, so after the empty read the
 * whole ring is free again.
 */
static int pb_drain(struct st_case *c)
{
	struct profbuf_read rd;
	unsigned int got = 0;
	long n;
	int rc;

	do {
		rc = profbuf_read(c->pb, PROFBUF_NONBLOCKING, &rd);
		if (rc)
			return write_failed("profbuf_read", rc);
		n = pb_check_run(&rd, c->src);
		if (n < 0)
			return drained(c, "profbuf (bad record)", 0);
		got += (unsigned int)n;
	} while (rd.ndata);
	return drained(c, "profbuf", got);
}

static const struct st_ops pb_ops = { pb_batch, pb_drain };

static const struct st_ops pb_call_ops = { pb_call_batch, pb_drain };

/*
 * pb_resv_batch() - the record written in place: profbuf_reserve() (the
 * header, time and tag stored by it), the stack copied into the
 * reserved slots as ck_spsc_resv copies it, profbuf_commit().
 */
static int pb_resv_batch(struct st_case *c, struct bench_sample *s)
{
	const struct rec_src *r = c->src;
	uint64_t now = c->now;
	struct profbuf_resv rv;
	struct bench_timer t;
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		int rc = profbuf_reserve(c->pb, r, (int64_t)now++, r->hdr,
					 HDRSIZE, r->nstk, &rv);

		if (rc) {
			bad = rc;
			break;
		}
		memcpy(rv.stk, r->stk, r->nstk * sizeof(r->stk[0]));
		bad |= profbuf_commit(&rv, r->nstk);
	}
	bench_timer_stop(&t, s, c->batch);
	c->now = now;
	return bad ? write_failed("profbuf_reserve", bad) : 0;
}

static const struct st_ops pb_resv_ops = { pb_resv_batch, pb_drain };

/*
 * own_resv_batch() - the record written in place into a ring this thread
 * owns (profbuf_group_claim()): profbuf_owned_reserve() (which stores the
 * length, time, header and tag), the stack copied into the reserved
 * slots as ck_spsc_resv copies it, profbuf_owned_commit().
 */
static int own_resv_batch(struct st_case *c, struct bench_sample *s)
{
	const struct rec_src *r = c->src;
	uint64_t now = c->now;
	struct profbuf_owned_resv rv;
	struct bench_timer t;
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		int rc = profbuf_owned_reserve(c->own, r, (int64_t)now++,
					       r->hdr, HDRSIZE, r->nstk, &rv);

		if (rc) {
			bad = rc;
			break;
		}
		memcpy(rv.stk, r->stk, r->nstk * sizeof(r->stk[0]));
		bad |= profbuf_owned_commit(&rv, r->nstk);
	}
	bench_timer_stop(&t, s, c->batch);
	c->now = now;
	return bad ? write_failed("profbuf_owned_reserve", bad) : 0;
}

/* Read the group until a read comes back empty, as pb_drain(). */
static int own_drain(struct st_case *c)
{
	struct profbuf_read rd;
	unsigned int got = 0;
	long n;
	int rc;

	do {
		rc = profbuf_group_read(c->grp, PROFBUF_NONBLOCKING, &rd);
		if (rc)
			return write_failed("profbuf_group_read", rc);
		n = pb_check_run(&rd, c->src);
		if (n < 0)
			return drained(c, "owned ring (bad record)", 0);
		got += (unsigned int)n;
	} while (rd.ndata);
	return drained(c, "owned ring", got);
}

static const struct st_ops own_resv_ops = { own_resv_batch, own_drain };

/* A group of one shared and one owned ring as pb_st_init()'s, claimed. */
static int own_st_init(struct st_case *c)
{
	size_t words = ((size_t)c->batch + 1) * c->src->len;

	c->ops = &own_resv_ops;
	c->grp = profbuf_group_new_owned(1, 1, HDRSIZE, round_pow2(words),
					 round_pow2(c->batch + 1));
	if (!c->grp)
		return write_failed("profbuf_group_new_owned", errno);
	c->own = profbuf_group_claim(c->grp);
	return c->own ? 0 : write_failed("profbuf_group_claim", -EBUSY);
}

/*
 * pb_st_init() - a profbuf for @c: data ring of at least one batch plus
 * one record (a record never wraps; the skipped tail counts as used), tag
 * ring the size of the ck_ring's.
 */
static int pb_st_init(struct st_case *c, const struct st_ops *ops)
{
	size_t words = ((size_t)c->batch + 1) * c->src->len;

	c->ops = ops;
	c->pb = profbuf_new(HDRSIZE, round_pow2(words),
			    round_pow2(c->batch + 1));
	return c->pb ? 0 : write_failed("profbuf_new", errno);
}

/* ---- single writer: the floor -------------------------------------------- */

static int floor_batch(struct st_case *c, struct bench_sample *s)
{
	const struct rec_src *r = c->src;
	uint64_t now = c->now, old;
	struct bench_timer t;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		old = atomic_load_explicit(&c->floor_head,
					   memory_order_relaxed);
		while (!atomic_compare_exchange_strong(&c->floor_head, &old,
						       old + 1))
			;
		rec_fill(c->floor_slots + (old & c->floor_mask) * r->len, r,
			 now++);
	}
	bench_timer_stop(&t, s, c->batch);
	c->now = now;
	return 0;
}

/* The floor has no reader: nothing to give back. */
static int floor_drain(struct st_case *c)
{
	(void)c;
	return 0;
}

static const struct st_ops floor_ops = { floor_batch, floor_drain };

/* Slots as many as the ck_ring's, of the record's size. */
static int floor_st_init(struct st_case *c)
{
	uint32_t slots = round_pow2(c->batch + 1);

	c->ops = &floor_ops;
	c->floor_mask = slots - 1;
	c->floor_slots = calloc(slots, c->src->len * sizeof(uint64_t));
	return c->floor_slots ? 0 : write_failed("calloc", -ENOMEM);
}

/* ---- single writer: ck_ring SPSC, by value ------------------------------- */

/*
 * CK_ST_CASES() - the typed ck_ring of records of @n words and its two
 * single-writer implementations: ck_enq_ops_@n (enqueue a caller-held
 * record by value) and ck_resv_ops_@n (reserve a slot, fill it from the
 * separate arrays, commit).
 */
#define CK_ST_CASES(n)                                                         \
	struct rec##n {                                                        \
		uint64_t w[n];                                                 \
	};                                                                     \
	CK_RING_PROTOTYPE(rec##n, rec##n)                                      \
                                                                               \
	static int ck_enq_batch_##n(struct st_case *c, struct bench_sample *s) \
	{                                                                      \
		struct rec##n *rec = c->ck_rec, *buf = c->ck_buf;              \
		uint64_t now = c->now;                                         \
		struct bench_timer t;                                          \
		bool ok = true;                                                \
                                                                               \
		bench_timer_start(&t);                                         \
		for (unsigned int i = 0; i < c->batch; i++) {                  \
			rec->w[1] = now++;                                     \
			ok &= ck_ring_enqueue_spsc_rec##n(&c->ck, buf, rec);   \
		}                                                              \
		bench_timer_stop(&t, s, c->batch);                             \
		c->now = now;                                                  \
		return ok ? 0 : write_failed("ck enqueue", -ENOSPC);           \
	}                                                                      \
                                                                               \
	static int ck_resv_batch_##n(struct st_case *c,                        \
				     struct bench_sample *s)                   \
	{                                                                      \
		struct rec##n *buf = c->ck_buf, *slot;                         \
		uint64_t now = c->now;                                         \
		struct bench_timer t;                                          \
		unsigned int i;                                                \
                                                                               \
		bench_timer_start(&t);                                         \
		for (i = 0; i < c->batch; i++) {                               \
			slot = ck_ring_enqueue_reserve_spsc_rec##n(&c->ck,     \
								   buf);       \
			if (!slot)                                             \
				break;                                         \
			rec_fill(slot->w, c->src, now++);                      \
			ck_ring_enqueue_commit_spsc(&c->ck);                   \
		}                                                              \
		bench_timer_stop(&t, s, c->batch);                             \
		c->now = now;                                                  \
		return i == c->batch ? 0                                       \
				     : write_failed("ck reserve", -ENOSPC);    \
	}                                                                      \
                                                                               \
	static int ck_drain_##n(struct st_case *c)                             \
	{                                                                      \
		struct rec##n out;                                             \
		unsigned int got = 0;                                          \
                                                                               \
		while (ck_ring_dequeue_spsc_rec##n(&c->ck, c->ck_buf, &out)) { \
			if (!rec_ok(out.w, c->src))                            \
				return drained(c, "ck (bad record)", 0);       \
			got++;                                                 \
		}                                                              \
		return drained(c, "ck_ring", got);                             \
	}                                                                      \
                                                                               \
	static const struct st_ops ck_enq_ops_##n = { ck_enq_batch_##n,        \
						      ck_drain_##n };          \
	static const struct st_ops ck_resv_ops_##n = { ck_resv_batch_##n,      \
						       ck_drain_##n }

CK_ST_CASES(8);
CK_ST_CASES(34);
CK_ST_CASES(66);

/* A ck_ring of batch + 1 slots (capacity: slots - 1), caller record set. */
static int ck_st_init(struct st_case *c, const struct st_ops *ops)
{
	uint32_t slots = round_pow2(c->batch + 1);
	size_t bytes = c->src->len * sizeof(uint64_t);

	c->ops = ops;
	ck_ring_init(&c->ck, slots);
	c->ck_buf = calloc(slots, bytes);
	c->ck_rec = calloc(1, bytes);
	if (!c->ck_buf || !c->ck_rec)
		return write_failed("calloc", -ENOMEM);
	rec_fill(c->ck_rec, c->src, 0);
	return 0;
}

static void st_fini(struct st_case *c)
{
	profbuf_free(c->pb);
	profbuf_group_free(c->grp);
	free(c->floor_slots);
	free(c->ck_buf);
	free(c->ck_rec);
}

/* ---- single writer: the comparison --------------------------------------- */

/*
 * struct st_size - a record size, its goal against the floor and its
 * typed ck_ring implementations.  The goal tightens with the size: the
 * floor has no fixed cost of its own (no room check, no tag, no commit),
 * so the smaller the record the larger profbuf's share (issue 18).
 */
struct st_size {
	unsigned int words;
	const char *name;
	double floor_goal;
	const struct st_ops *ck_enq;
	const struct st_ops *ck_resv;
};

static const struct st_size st_sizes[] = {
	{ 8, "write 8w", 1.5, &ck_enq_ops_8, &ck_resv_ops_8 },
	{ 34, "write 34w", 1.3, &ck_enq_ops_34, &ck_resv_ops_34 },
	{ 66, "write 66w", 1.2, &ck_enq_ops_66, &ck_resv_ops_66 },
};

enum {
	ST_PB,
	ST_FLOOR,
	ST_CK,
	ST_CK_RESV,
	ST_PB_CALL,
	ST_PB_RESV,
	ST_OWN_RESV,
	ST_N
};

static const char *const st_names[ST_N] = {
	"profbuf",	"floor",	"ck_spsc",    "ck_spsc_resv",
	"profbuf_call", "profbuf_resv", "owned_resv",
};

/* owned_resv (reserve, fill in place, commit) against ck_spsc_resv. */
#define RESV_GOAL 1.3

static int st_init_all(struct st_case *c, const struct st_size *sz)
{
	return pb_st_init(&c[ST_PB], &pb_ops) || floor_st_init(&c[ST_FLOOR]) ||
	       ck_st_init(&c[ST_CK], sz->ck_enq) ||
	       ck_st_init(&c[ST_CK_RESV], sz->ck_resv) ||
	       pb_st_init(&c[ST_PB_CALL], &pb_call_ops) ||
	       pb_st_init(&c[ST_PB_RESV], &pb_resv_ops) ||
	       own_st_init(&c[ST_OWN_RESV]);
}

static void st_report(const struct st_size *sz, const struct bench_stats *st)
{
	struct bench_row row = {
		.name = sz->name,
		.unit = BENCH_NS_PER_OP,
		.ours = &st[ST_PB],
		.ours_name = st_names[ST_PB],
		.goal_le = true,
	};

	for (int i = ST_FLOOR; i < ST_PB_RESV; i++) {
		row.anchor = &st[i];
		row.anchor_name = st_names[i];
		row.goal_ratio = i == ST_FLOOR ? sz->floor_goal : 1.0;
		row.note =
			i == ST_PB_CALL ? "inline vs the library call" : NULL;
		bench_report_row(&row);
	}
	row.ours = &st[ST_OWN_RESV];
	row.ours_name = st_names[ST_OWN_RESV];
	row.anchor = &st[ST_CK_RESV];
	row.anchor_name = st_names[ST_CK_RESV];
	row.goal_ratio = RESV_GOAL;
	row.note = "written in place, both";
	bench_report_row(&row);
	bench_info_row(sz->name, BENCH_NS_PER_OP, &st[ST_PB_RESV],
		       st_names[ST_PB_RESV], &st[ST_CK_RESV],
		       st_names[ST_CK_RESV],
		       "in place, many writers (one locked CAS)");
}

/**
 * single_writer() - measure and report one record size.
 * @o:  options
 * @sz: the size
 *
 * Return: 0, or -1 if anything failed.
 */
static int single_writer(const struct bench_opts *o, const struct st_size *sz)
{
	struct st_case c[ST_N] = { 0 };
	struct bench_case bc[ST_N];
	struct bench_stats st[ST_N];
	struct rec_src src;
	int rc = -1;

	rec_src_init(&src, sz->words);
	for (int i = 0; i < ST_N; i++) {
		c[i].src = &src;
		c[i].batch = o->batch;
		bc[i] = (struct bench_case){ st_names[i], st_run, &c[i] };
	}
	if (st_init_all(c, sz))
		goto out;
	rc = bench_run_cases(bc, ST_N, o, st);
	if (!rc)
		st_report(sz, st);
out:
	for (int i = 0; i < ST_N; i++)
		st_fini(&c[i]);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o;

	bench_parse_args(argc, argv, &o);
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "profbuf_bench: cannot pin to CPU 0\n");
	bench_report_begin("profbuf_bench", &o);
	for (size_t i = 0; i < ARRAY_SIZE(st_sizes); i++)
		if (single_writer(&o, &st_sizes[i]))
			return 1;
	bench_report_note("Single writer: ns per record, batches of %u into "
			  "an empty ring, drained untimed; %u records per "
			  "repetition.",
			  o.batch, REP_RECORDS);
	bench_report_note("Writers racing each other and a reader: see "
			  "scaling_bench.");
	bench_report_end();
	return 0;
}
