// SPDX-License-Identifier: MIT
/*
 * profbuf/owned_test.c - rings one thread owns (profbuf_group_new_owned(),
 * profbuf/owned.c), read by the group reader as ring numbers nrings ...
 * nrings + nowned - 1.  Claims and their hand-over, exact round trips
 * beside shared rings, wrap-around of the data and the tag rings, loss
 * counting (overflow records in the ring and the last one before EOF),
 * reserve and commit in place, nesting in a real signal handler, close
 * racing writers, a blocking reader woken by a write and by close, the
 * fence mode (no membarrier(2)), errno and bad arguments, fork.
 *
 * Accounting everywhere: records read + the counts of the overflow
 * records read == the writes that returned 0 or -ENOSPC; a write that
 * returned -ESHUTDOWN is never read.
 */
#include <profring/profbuf_group.h>

#include "testing/checkrec.h"
#include "testing/harness.h"
#include "testing/ktest.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HDR 2
#define NSTK_MAX 24
#define NW 8 /* thread writers a test uses; their handlers are NW + i */
#define TAG(w) ((const void *)(uintptr_t)((w) + 1))

/* profbuf/owned.c: pretend membarrier(2) is missing (set before new). */
extern bool profbuf_owned_test_no_membarrier;

/* The stack length writer @w gives its record @seq. */
static size_t stklen(uint32_t w, uint64_t seq)
{
	return (size_t)((seq * 7 + w * 3) % NSTK_MAX);
}

/* ---- the books: what a reader saw ------------------------------------ */

/*
 * struct books - checkrec's state, with the stack lengths checked, and
 * the order of the first records read.
 */
struct books {
	struct checkrec_state st;
	bool check_len; /* every record's stack is stklen() long */
	uint64_t reads; /* reads that returned words */
	int nlog;
	uint32_t log_w[64]; /* writer of the first records, in order... */
	uint64_t log_seq[64]; /* ...and their seq; UINT32_MAX: overflow */
};

static struct books *new_books(bool check_len)
{
	struct books *b = calloc(1, sizeof(*b));

	if (b) {
		b->st.hdrsize = HDR;
		b->check_len = check_len;
	}
	return b;
}

static void log_rec(struct books *b, uint32_t w, uint64_t seq)
{
	if (b->nlog < 64) {
		b->log_w[b->nlog] = w;
		b->log_seq[b->nlog++] = seq;
	}
}

/* Check one read, record by record, as checkrec_read() does. */
static void check_read(struct books *b, const struct profbuf_read *r)
{
	struct profbuf_iter it;
	struct profbuf_record rec;

	if (r->ndata)
		b->reads++;
	profbuf_iter_init(&it, r, HDR);
	while (profbuf_iter_next(&it, &rec)) {
		uint64_t w, seq;

		if (profbuf_record_is_overflow(&rec)) {
			uint64_t c = profbuf_record_overflow_count(&rec);

			if (c == 0 || c > UINT32_MAX)
				checkrec_violation(&b->st,
						   "overflow record count", c,
						   (uint64_t)rec.time);
			b->st.overflow_records++;
			b->st.lost += c;
			log_rec(b, UINT32_MAX, c);
			continue;
		}
		w = rec.hdr[0] - 1;
		seq = rec.hdr[1];
		checkrec_one(&b->st, rec.hdr - 2, rec.tag);
		log_rec(b, (uint32_t)w, seq);
		if (b->check_len && w < CHECKREC_MAX_WRITERS &&
		    rec.nstk != stklen((uint32_t)w, seq))
			checkrec_violation(&b->st, "stack length", rec.nstk,
					   stklen((uint32_t)w, seq));
	}
	if (profbuf_iter_malformed(&it))
		checkrec_violation(&b->st, "malformed read", r->ndata,
				   r->ntags);
}

/* Read everything there is now, non-blocking. */
static void drain_now(struct profbuf_group *g, struct books *b)
{
	struct profbuf_read r;

	for (;;) {
		int rc = profbuf_group_read(g, PROFBUF_NONBLOCKING, &r);

		KT_CHECK_EQ(rc, 0);
		if (rc || !r.ndata)
			return;
		check_read(b, &r);
	}
}

/* Read to EOF (blocking) on this thread; return the reads' count. */
static void drain_eof(struct profbuf_group *g, struct books *b)
{
	struct profbuf_read r;

	for (;;) {
		int rc = profbuf_group_read(g, PROFBUF_BLOCKING, &r);

		KT_CHECK_EQ(rc, 0);
		if (rc || r.eof)
			return;
		check_read(b, &r);
	}
}

/* ---- writers --------------------------------------------------------- */

/*
 * struct ow - one writer id: a thread, or its signal handler.  Writes
 * checkrec records (hdr [id + 1, seq], time seq, tag id + 1) to @o, or
 * to the shared ring @b when it got no owned ring.
 */
struct ow {
	uint32_t id;
	int fixed; /* >= 0: every stack that long; -1: stklen() */
	struct profbuf_owned *o;
	struct profbuf *b;
	uint64_t seq, ok, lost, refused, bad;
	uint64_t first_refused; /* seq of the first -ESHUTDOWN */
	bool accepted_after_refusal;
};

static void ow_init(struct ow *w, uint32_t id, struct profbuf_owned *o)
{
	memset(w, 0, sizeof(*w));
	w->id = id;
	w->o = o;
	w->fixed = -1;
}

/* Reserve @n + @extra, fill @n, commit @n (a shorter commit if extra). */
static int put_resv(struct ow *w, size_t n, size_t extra, bool lib)
{
	uint64_t hdr[HDR];
	uintptr_t dummy[1];
	struct profbuf_owned_resv rv;
	int rc;

	checkrec_fill(hdr, dummy, w->id, w->seq, 0);
	if (lib)
		rc = (profbuf_owned_reserve)(w->o, TAG(w->id), (int64_t)w->seq,
					     hdr, HDR, n + extra, &rv);
	else
		rc = profbuf_owned_reserve(w->o, TAG(w->id), (int64_t)w->seq,
					   hdr, HDR, n + extra, &rv);
	if (rc)
		return rc;
	if (rv.nstk != n + extra)
		w->bad++;
	for (size_t i = 0; i < n; i++)
		rv.stk[i] = (uintptr_t)checkrec_word(w->id, w->seq, i);
	if (lib)
		rc = (profbuf_owned_commit)(&rv, n);
	else
		rc = profbuf_owned_commit(&rv, n);
	if (rc)
		w->bad++;
	return 0;
}

/*
 * ow_put() - one write of @w's next record by @mode: 0 inline write, 1
 * the library's write, 2 inline reserve/commit, 3 the library's (a
 * shorter commit one time in three).  Async-signal-safe.  Return its rc.
 */
static int ow_put(struct ow *w, int mode)
{
	uint64_t hdr[HDR];
	uintptr_t stk[NSTK_MAX + 2];
	size_t n = w->fixed >= 0 ? (size_t)w->fixed : stklen(w->id, w->seq);
	int rc;

	checkrec_fill(hdr, stk, w->id, w->seq, n);
	if (!w->o)
		rc = profbuf_write(w->b, TAG(w->id), (int64_t)w->seq, hdr, HDR,
				   stk, n);
	else if (mode == 0)
		rc = profbuf_owned_write(w->o, TAG(w->id), (int64_t)w->seq, hdr,
					 HDR, stk, n);
	else if (mode == 1)
		rc = (profbuf_owned_write)(w->o, TAG(w->id), (int64_t)w->seq,
					   hdr, HDR, stk, n);
	else
		rc = put_resv(w, n, (size_t)(w->seq % 3 == 0), mode == 3);
	if (rc == 0 || rc == -ENOSPC) {
		if (rc)
			w->lost++;
		else
			w->ok++;
		if (w->refused)
			w->accepted_after_refusal = true;
	} else if (rc == -ESHUTDOWN) {
		if (!w->refused++)
			w->first_refused = w->seq;
	} else {
		w->bad++;
	}
	w->seq++;
	return rc;
}

/* The books of writers @w[0 .. n) against what the reader saw. */
static void check_books(const struct books *b, const struct ow *const *w, int n)
{
	uint64_t ok = 0, lost = 0;

	for (int i = 0; i < n; i++) {
		KT_CHECK_EQ(b->st.read_by_writer[w[i]->id], w[i]->ok);
		KT_CHECK_EQ(w[i]->bad, 0);
		KT_CHECK(!w[i]->accepted_after_refusal);
		/* Nothing refused was read: all read came before. */
		if (w[i]->refused)
			KT_CHECK(b->st.next_seq[w[i]->id] <=
				 w[i]->first_refused);
		ok += w[i]->ok;
		lost += w[i]->lost;
	}
	KT_CHECK_EQ(b->st.records, ok);
	KT_CHECK_EQ(b->st.lost, lost);
	KT_CHECK_EQ(b->st.violations, 0);
}

/* ---- threads: writers with their handlers, a reader ------------------- */

static _Atomic int sig_on;
static _Thread_local struct ow *tls_sig;

/* SIGALRM: the thread's handler writes to its thread's ring. */
static void on_alarm(int sig)
{
	struct ow *h = tls_sig;
	int saved = errno;

	(void)sig;
	if (h && atomic_load_explicit(&sig_on, memory_order_relaxed))
		ow_put(h, (int)(h->seq % 4));
	errno = saved;
}

/* SIGUSR2: nothing; it only ends a reader's futex wait (EINTR). */
static void on_usr2(int sig)
{
	(void)sig;
}

/*
 * struct wthread - a writer thread: claims a ring (else writes its
 * shared ring), writes @n records, or until @deadline, or until
 * @past_close writes after its first refusal; with @signals, a 20 kHz
 * timer's handler writes too, as writer id NW + id.
 */
struct wthread {
	struct profbuf_group *g;
	struct ow w, h;
	uint64_t n, deadline, past_close;
	bool signals;
	_Atomic uint64_t progress; /* w.seq, for the closer */
	pthread_t t;
};

static void *wthread_main(void *arg)
{
	struct wthread *wt = arg;
	struct stress_timer timer = { 0 };

	ow_init(&wt->w, wt->w.id, profbuf_group_claim(wt->g));
	if (!wt->w.o)
		wt->w.b = profbuf_group_mine(wt->g);
	ow_init(&wt->h, NW + wt->w.id, wt->w.o);
	wt->h.b = wt->w.b;
	if (wt->signals) {
		tls_sig = &wt->h;
		KT_CHECK_EQ(stress_timer_start(&timer, SIGALRM, 20000, false),
			    0);
	}
	while (wt->w.seq < wt->n && wt->w.refused <= wt->past_close) {
		ow_put(&wt->w, (int)(wt->w.seq % 4));
		if ((wt->w.seq & 255) == 0) {
			atomic_store_explicit(&wt->progress, wt->w.seq,
					      memory_order_relaxed);
			if (wt->deadline && stress_now_ns() >= wt->deadline)
				break;
		}
	}
	stress_timer_stop(&timer);
	tls_sig = NULL;
	atomic_store_explicit(&wt->progress, UINT64_MAX, memory_order_relaxed);
	return NULL;
}

struct reader {
	struct profbuf_group *g;
	struct books *b;
	bool timed; /* 1 ms timed reads, else blocking ones */
	int err;
	_Atomic bool done;
	pthread_t t;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct profbuf_read r;
	int rc;

	for (;;) {
		if (rd->timed)
			rc = profbuf_group_read_timeout(rd->g, 1000000, &r);
		else
			rc = profbuf_group_read(rd->g, PROFBUF_BLOCKING, &r);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc) {
			rd->err = rc;
			break;
		}
		if (r.eof)
			break;
		check_read(rd->b, &r);
	}
	atomic_store(&rd->done, true);
	return NULL;
}

static void reader_start(struct reader *rd, struct profbuf_group *g,
			 struct books *b, bool timed)
{
	rd->g = g;
	rd->b = b;
	rd->timed = timed;
	rd->err = 0;
	atomic_store(&rd->done, false);
	pthread_create(&rd->t, NULL, reader_main, rd);
}

/*
 * reader_join() - join a reader after close and after every writer
 * ended.  Nothing is left that could delay its EOF: one still asleep 5 s
 * later missed its wakeup; it is then woken by SIGUSR2 (EINTR) so that
 * the test ends.  Return: true if it was stuck so.
 */
static bool reader_join(struct reader *rd)
{
	bool stuck = false;

	for (int i = 0; !atomic_load(&rd->done); i++) {
		stress_sleep_ns(1000000);
		if (i == 5000)
			fprintf(stderr, "  reader asleep 5 s after the last "
					"writer ended: waking it (SIGUSR2)\n");
		if (i >= 5000) {
			stuck = true;
			pthread_kill(rd->t, SIGUSR2);
		}
	}
	pthread_join(rd->t, NULL);
	KT_CHECK_EQ(rd->err, 0);
	return stuck;
}

/*
 * run_exact() - @nw writer threads (owned rings while there are, the
 * shared ring after) of @n writes each, or for @ns, with their handlers
 * when @signals, one reader; close once they end, read to EOF; the books.
 */
static void run_exact(struct profbuf_group *g, int nw, uint64_t n, uint64_t ns,
		      bool signals, bool timed)
{
	struct books *b = new_books(true);
	struct wthread *wt = calloc((size_t)nw, sizeof(*wt));
	const struct ow *all[2 * NW];
	struct reader rd;
	uint64_t hw = 0;
	size_t nown = 0;

	KT_REQUIRE(b && wt && nw <= NW);
	reader_start(&rd, g, b, timed);
	atomic_store(&sig_on, signals);
	for (int i = 0; i < nw; i++) {
		wt[i].g = g;
		wt[i].w.id = (uint32_t)i;
		wt[i].n = n;
		wt[i].deadline = ns ? stress_now_ns() + ns : 0;
		wt[i].signals = signals;
		pthread_create(&wt[i].t, NULL, wthread_main, &wt[i]);
	}
	for (int i = 0; i < nw; i++)
		pthread_join(wt[i].t, NULL);
	atomic_store(&sig_on, 0);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	KT_CHECK(!reader_join(&rd));
	for (int i = 0; i < nw; i++) {
		all[2 * i] = &wt[i].w;
		all[2 * i + 1] = &wt[i].h;
		hw += wt[i].h.seq;
		nown += wt[i].w.o != NULL;
	}
	/* The first to claim got owned rings (or rings of writers gone). */
	KT_CHECK(nown >= ((size_t)nw < profbuf_group_nowned(g)
				  ? (size_t)nw
				  : profbuf_group_nowned(g)));
	check_books(b, all, 2 * nw);
	/* TSan defers signals to safe points: they may all miss. */
	if (signals && !TESTING_UNDER_TSAN)
		KT_CHECK(hw > 0);
	printf("  %d writers: %llu read, %llu lost in %llu overflow records, "
	       "%llu written by handlers, %llu reads\n",
	       nw, (unsigned long long)b->st.records,
	       (unsigned long long)b->st.lost,
	       (unsigned long long)b->st.overflow_records,
	       (unsigned long long)hw, (unsigned long long)b->reads);
	free(wt);
	free(b);
}

/* ---- 1. claims --------------------------------------------------------- */

/* A thread that claims twice, then holds its claim until released. */
struct holder {
	struct profbuf_group *g;
	struct profbuf_owned *got[2];
	pthread_barrier_t *bar;
	pthread_t t;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	h->got[0] = profbuf_group_claim(h->g);
	h->got[1] = profbuf_group_claim(h->g);
	pthread_barrier_wait(h->bar); /* claimed */
	pthread_barrier_wait(h->bar); /* released */
	return NULL;
}

static void holders_start(struct holder *h, int n, struct profbuf_group *g,
			  pthread_barrier_t *bar)
{
	for (int i = 0; i < n; i++) {
		h[i] = (struct holder){ .g = g, .bar = bar };
		pthread_create(&h[i].t, NULL, holder_main, &h[i]);
	}
	pthread_barrier_wait(bar);
}

static void holders_end(struct holder *h, int n, pthread_barrier_t *bar)
{
	pthread_barrier_wait(bar);
	for (int i = 0; i < n; i++)
		pthread_join(h[i].t, NULL);
}

/*
 * N live threads get N distinct rings (the same one twice each), thread
 * N + 1 none; a non-owner cannot give one back; rings of exited threads
 * are claimed again.
 */
static void claim_distinct_and_exited(void)
{
	enum { N = 3 };
	struct profbuf_group *g = profbuf_group_new_owned(1, N, HDR, 256, 16);
	pthread_barrier_t bar;
	struct holder h[N];
	struct profbuf_owned *mine;

	KT_REQUIRE(g);
	KT_CHECK_EQ(profbuf_group_nowned(g), N);
	pthread_barrier_init(&bar, NULL, N + 1);
	holders_start(h, N, g, &bar);
	for (int i = 0; i < N; i++) {
		KT_CHECK(h[i].got[0] && h[i].got[0] == h[i].got[1]);
		for (int j = 0; j < i; j++)
			KT_CHECK(h[i].got[0] != h[j].got[0]);
	}
	KT_CHECK(!profbuf_group_claim(g)); /* thread N + 1 */
	KT_CHECK_EQ(profbuf_group_unclaim(h[0].got[0]), -EINVAL);
	holders_end(h, N, &bar);
	/* All exited: their rings are free again (errno kept: tgkill). */
	errno = 4321;
	mine = profbuf_group_claim(g);
	KT_CHECK_EQ(errno, 4321);
	KT_CHECK(mine && (mine == h[0].got[0] || mine == h[1].got[0] ||
			  mine == h[2].got[0]));
	KT_CHECK(profbuf_group_claim(g) == mine);
	/* And the next thread gets one of the two others. */
	pthread_barrier_destroy(&bar);
	pthread_barrier_init(&bar, NULL, 2);
	holders_start(h, 1, g, &bar);
	KT_CHECK(h[0].got[0] && h[0].got[0] != mine);
	holders_end(h, 1, &bar);
	pthread_barrier_destroy(&bar);
	profbuf_group_free(g);
}

/*
 * One ring: given back (not while a write is in progress), another live
 * thread claims it; its owner exits, and the ring is claimed again; what
 * each owner wrote is read, in order.
 */
static void claim_unclaim_handover(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 256, 16);
	struct books *b = new_books(true);
	pthread_barrier_t bar;
	struct holder h[1];
	struct profbuf_owned *o;
	struct profbuf_owned_resv rv;
	struct ow w;

	KT_REQUIRE(g && b);
	KT_CHECK(!profbuf_group_claim(NULL));
	KT_CHECK_EQ(profbuf_group_unclaim(NULL), -EINVAL);
	pthread_barrier_init(&bar, NULL, 2);
	o = profbuf_group_claim(g);
	KT_REQUIRE(o);
	ow_init(&w, 0, o);
	KT_CHECK_EQ(ow_put(&w, 0), 0);
	holders_start(h, 1, g, &bar);
	KT_CHECK(!h[0].got[0]); /* taken, its owner alive */
	holders_end(h, 1, &bar);
	KT_REQUIRE(profbuf_owned_reserve(o, TAG(0), 1, (uint64_t[]){ 1, 1 },
					 HDR, stklen(0, 1), &rv) == 0);
	KT_CHECK_EQ(profbuf_group_unclaim(o), -EBUSY);
	for (size_t i = 0; i < rv.nstk; i++)
		rv.stk[i] = (uintptr_t)checkrec_word(0, 1, i);
	KT_CHECK_EQ(profbuf_owned_commit(&rv, rv.nstk), 0);
	w.seq++;
	w.ok++;
	KT_CHECK_EQ(profbuf_group_unclaim(o), 0);
	KT_CHECK_EQ(profbuf_group_unclaim(o), -EINVAL); /* not ours now */
	/* Given back: a live thread claims it, and keeps it. */
	holders_start(h, 1, g, &bar);
	KT_CHECK(h[0].got[0] == o && h[0].got[1] == o);
	KT_CHECK(!profbuf_group_claim(g));
	KT_CHECK_EQ(profbuf_group_unclaim(o), -EINVAL);
	holders_end(h, 1, &bar);
	/* Its owner exited: ours again, and we go on writing. */
	KT_CHECK(profbuf_group_claim(g) == o);
	KT_CHECK_EQ(ow_put(&w, 1), 0);
	drain_now(g, b);
	check_books(b, (const struct ow *[]){ &w }, 1);
	pthread_barrier_destroy(&bar);
	free(b);
	profbuf_group_free(g);
}

/* ---- 2. round trip ------------------------------------------------------ */

#define RT_N 12

struct rt_thread {
	struct profbuf_group *g;
	struct profbuf_owned *o;
	int rc[5];
};

/* Another thread: its own ring, five records marked 0x900 + i. */
static void *rt_other(void *arg)
{
	struct rt_thread *t = arg;

	t->o = profbuf_group_claim(t->g);
	for (int i = 0; i < 5; i++) {
		uintptr_t pc = (uintptr_t)(0x9900 + i);

		t->rc[i] = profbuf_owned_write(t->o, TAG(0x900), 9000 + i,
					       (uint64_t[]){ 0x900u + i }, 1,
					       &pc, 1);
	}
	return NULL;
}

static void rt_write(struct profbuf_owned *o, int i)
{
	uint64_t hdr[3] = { 0x100u + i, i * 10u + 1, i * 100u + 2 };
	uintptr_t stk[6];
	size_t nhdr = 1 + (size_t)i % 3, nstk = (size_t)i % 6;

	for (size_t k = 0; k < nstk; k++)
		stk[k] = 0xabc000u + (uintptr_t)i * 16 + k;
	if (i % 2)
		KT_CHECK_EQ(profbuf_owned_write(o, TAG(0x100 + i), 1000 + i,
						hdr, nhdr, stk, nstk),
			    0);
	else
		KT_CHECK_EQ((profbuf_owned_write)(o, TAG(0x100 + i), 1000 + i,
						  hdr, nhdr, stk, nstk),
			    0);
}

/* Record @i of rt_write(), exactly (hdrsize 3: zero-padded). */
static void rt_check(const struct profbuf_record *rec, int i)
{
	size_t nhdr = 1 + (size_t)i % 3, nstk = (size_t)i % 6;
	uint64_t hdr[3] = { 0x100u + i, i * 10u + 1, i * 100u + 2 };

	KT_CHECK_EQ(rec->time, 1000 + i);
	KT_CHECK(rec->tag == TAG(0x100 + i));
	KT_CHECK_EQ(rec->nhdr, 3);
	for (size_t k = 0; k < 3; k++)
		KT_CHECK_EQ(rec->hdr[k], k < nhdr ? hdr[k] : 0);
	KT_CHECK_EQ(rec->nstk, nstk);
	for (size_t k = 0; k < nstk && k < rec->nstk; k++)
		KT_CHECK_EQ(rec->stk[k], 0xabc000u + (uintptr_t)i * 16 + k);
}

/*
 * Write, read back through the group: header, time, stack and tag
 * intact, each ring's records in the order written, owned rings read as
 * ring numbers nrings ... and the shared ring (profbuf_group_mine())
 * read beside them.
 */
static void round_trip(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 2, 3, 256, 32);
	struct rt_thread other = { .g = g };
	struct profbuf_read r;
	struct profbuf_iter it;
	struct profbuf_record rec;
	struct profbuf_owned *o;
	size_t ring_o = 0, ring_x = 0;
	int n_o = 0, n_s = 0, n_x = 0, bad_ring = 0;
	pthread_t t;

	KT_REQUIRE(g);
	KT_CHECK_EQ(profbuf_group_nrings(g), 1);
	KT_CHECK_EQ(profbuf_group_nowned(g), 2);
	o = profbuf_group_claim(g);
	KT_REQUIRE(o);
	for (int i = 0; i < RT_N; i++) {
		rt_write(o, i);
		if (i % 4 == 0) {
			uintptr_t pc[2] = { 0x55, (uintptr_t)i };

			KT_CHECK_EQ(profbuf_write(profbuf_group_mine(g),
						  TAG(0x500 + i), 5000 + i,
						  (uint64_t[]){ 0x500u + i }, 1,
						  pc, 2),
				    0);
		}
	}
	pthread_create(&t, NULL, rt_other, &other);
	pthread_join(t, NULL);
	KT_REQUIRE(other.o && other.o != o);
	for (int i = 0; i < 5; i++)
		KT_CHECK_EQ(other.rc[i], 0);
	for (;;) {
		size_t ring;

		KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
		if (!r.ndata)
			break;
		ring = profbuf_group_last_ring(g);
		profbuf_iter_init(&it, &r, 3);
		while (profbuf_iter_next(&it, &rec)) {
			if (rec.hdr[0] >= 0x100 && rec.hdr[0] < 0x100 + RT_N) {
				if (!ring_o)
					ring_o = ring;
				bad_ring += ring != ring_o;
				KT_CHECK_EQ(rec.hdr[0], 0x100u + n_o);
				rt_check(&rec, n_o++);
			} else if (rec.hdr[0] >= 0x900 && rec.hdr[0] < 0x905) {
				if (!ring_x)
					ring_x = ring;
				bad_ring += ring != ring_x;
				KT_CHECK_EQ(rec.hdr[0], 0x900u + n_x);
				KT_CHECK_EQ(rec.time, 9000 + n_x);
				KT_CHECK(rec.tag == TAG(0x900));
				KT_CHECK(rec.nstk == 1 &&
					 rec.stk[0] == 0x9900u + n_x);
				KT_CHECK(rec.hdr[1] == 0 && rec.hdr[2] == 0);
				n_x++;
			} else {
				bad_ring += ring != 0;
				KT_CHECK_EQ(rec.hdr[0], 0x500u + 4 * n_s);
				KT_CHECK_EQ(rec.time, 5000 + 4 * n_s);
				KT_CHECK(rec.tag == TAG(0x500 + 4 * n_s));
				KT_CHECK(rec.nstk == 2 && rec.stk[0] == 0x55 &&
					 rec.stk[1] == 4u * n_s);
				n_s++;
			}
		}
		KT_CHECK(!profbuf_iter_malformed(&it));
	}
	KT_CHECK_EQ(n_o, RT_N);
	KT_CHECK_EQ(n_s, 3);
	KT_CHECK_EQ(n_x, 5);
	KT_CHECK_EQ(bad_ring, 0);
	/* Owned rings are ring numbers 1 and 2 (nrings = 1). */
	KT_CHECK(ring_o >= 1 && ring_o <= 2 && ring_x >= 1 && ring_x <= 2);
	KT_CHECK(ring_o != ring_x);
	KT_CHECK_EQ(ring_o, o->profbuf__index);
	KT_CHECK_EQ(ring_x, other.o->profbuf__index);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_BLOCKING, &r), 0);
	KT_CHECK(r.eof && !r.ndata);
	profbuf_group_free(g);
}

/* ---- 3. wrap ------------------------------------------------------------- */

/*
 * Many laps of a small ring, stacks of 0 ... 23 words (rewind markers at
 * the end), every way of writing, the reader keeping up: nothing lost.
 */
static void wrap_many_laps(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 128, 64);
	struct books *b = new_books(true);
	struct ow w;
	uint64_t words = 0;

	KT_REQUIRE(g && b);
	ow_init(&w, 3, profbuf_group_claim(g));
	KT_REQUIRE(w.o);
	KT_CHECK_EQ(w.o->profbuf__data_len, 128);
	for (int i = 0; i < 20000; i++) {
		size_t n = stklen(w.id, w.seq);

		/* Reserved: n, or n + 1 (given back) for a shorter commit. */
		words += 2 + HDR + n;
		KT_CHECK_EQ(ow_put(&w, i % 4), 0);
		drain_now(g, b);
	}
	check_books(b, (const struct ow *[]){ &w }, 1);
	KT_CHECK_EQ(b->st.overflow_records, 0);
	KT_CHECK(words / 128 >= 1000);
	printf("  %llu laps\n", (unsigned long long)(words / 128));
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	drain_eof(g, b);
	KT_CHECK_EQ(b->st.records, 20000);
	free(b);
	profbuf_group_free(g);
}

/*
 * A tag ring smaller than the data: it fills first (the fifth record of
 * four tags is lost, words to spare), then wraps lap after lap.
 */
static void tag_ring_wrap(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 256, 4);
	struct books *b = new_books(true);
	struct ow w;

	KT_REQUIRE(g && b);
	ow_init(&w, 1, profbuf_group_claim(g));
	KT_REQUIRE(w.o);
	KT_CHECK_EQ(w.o->profbuf__tag_len, 4);
	w.fixed = 2;
	b->check_len = false;
	for (int i = 0; i < 4; i++)
		KT_CHECK_EQ(ow_put(&w, i % 4), 0);
	KT_CHECK_EQ(ow_put(&w, 0), -ENOSPC);
	KT_CHECK_EQ(ow_put(&w, 1), -ENOSPC);
	drain_now(g, b);
	KT_CHECK_EQ(b->st.records, 4);
	for (int i = 0; i < 6000; i++) {
		/* The first pair starts with the overflow record: 3 tags. */
		KT_CHECK_EQ(ow_put(&w, i % 4), 0);
		KT_CHECK_EQ(ow_put(&w, (i + 1) % 4), 0);
		drain_now(g, b);
	}
	check_books(b, (const struct ow *[]){ &w }, 1);
	KT_CHECK_EQ(b->st.overflow_records, 1);
	KT_CHECK_EQ(b->st.lost, 2);
	profbuf_group_free(g);
	free(b);
}

/* ---- 4. overflow ----------------------------------------------------------- */

/* Read now, expecting one run: overflow(count @c, time @t), then @seq. */
static void expect_overflow_then(struct profbuf_group *g, struct books *b,
				 uint64_t c, int64_t t, int64_t seq)
{
	struct profbuf_read r;
	struct profbuf_iter it;
	struct profbuf_record rec;

	KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
	check_read(b, &r);
	profbuf_iter_init(&it, &r, HDR);
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK(profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), c);
	KT_CHECK_EQ(rec.time, t);
	if (seq < 0) {
		KT_CHECK(!profbuf_iter_next(&it, &rec));
		return;
	}
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(rec.time, seq);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
}

/* Fill the 64-word ring with 8-word records: 8 fit. */
static void fill8(struct ow *w)
{
	for (int i = 0; i < 8; i++)
		KT_CHECK_EQ(ow_put(w, i % 4), 0);
}

/*
 * No reader: the ring fills, writes are lost (-ENOSPC) and counted; the
 * next accepted write is read after an overflow record with the count
 * and the first lost write's time.  A record too big to follow its
 * overflow record is lost, the overflow record published alone.
 */
static void overflow_counted(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 64, 16);
	struct books *b = new_books(false);
	struct profbuf_read r;
	struct ow w;
	uintptr_t big[64] = { 0 };

	KT_REQUIRE(g && b);
	ow_init(&w, 0, profbuf_group_claim(g));
	KT_REQUIRE(w.o);
	KT_CHECK_EQ(w.o->profbuf__data_len, 64);
	w.fixed = 4;
	fill8(&w);
	for (int i = 0; i < 5; i++) /* seq 8 ... 12 */
		KT_CHECK_EQ(ow_put(&w, i % 4), -ENOSPC);
	drain_now(g, b);
	KT_CHECK_EQ(b->st.records, 8);
	KT_CHECK_EQ(b->st.overflow_records, 0); /* pending, in no record */
	/* seq 13, after an overflow record: 5 lost, from time 8 */
	KT_CHECK_EQ(ow_put(&w, 0), 0);
	expect_overflow_then(g, b, 5, 8, 13);
	drain_now(g, b);
	/* Again by every way of writing, the ring wrapped this time. */
	for (int m = 0; m < 4; m++) {
		uint64_t first;

		while (ow_put(&w, m) == 0)
			;
		first = w.seq - 1;
		KT_CHECK_EQ(ow_put(&w, (m + 1) % 4), -ENOSPC);
		drain_now(g, b);
		KT_CHECK_EQ(ow_put(&w, (m + 2) % 4), 0);
		expect_overflow_then(g, b, 2, (int64_t)first,
				     (int64_t)w.seq - 1);
		drain_now(g, b);
	}
	/* Only the overflow record fits beside a 60-word record. */
	while (ow_put(&w, 0) == 0)
		;
	drain_now(g, b); /* losses: 1, from seq w.seq - 1 */
	KT_CHECK_EQ(profbuf_owned_write(w.o, TAG(0), 7777,
					(uint64_t[]){ 1, 7777 }, HDR, big, 56),
		    -ENOSPC);
	w.lost++;
	expect_overflow_then(g, b, 1, (int64_t)w.seq - 1, -1);
	KT_CHECK_EQ(ow_put(&w, 1), 0);
	expect_overflow_then(g, b, 1, 7777, (int64_t)w.seq - 1);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	drain_eof(g, b);
	check_books(b, (const struct ow *[]){ &w }, 1);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.eof);
	free(b);
	profbuf_group_free(g);
}

/*
 * Losses pending when the owner stops writing: after close, a last
 * overflow record counts them (with the first one's time) before EOF;
 * writes after close are refused and counted nowhere, whether the ring
 * is full or not.
 */
static void losses_reported_at_eof(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 64, 16);
	struct books *b = new_books(false);
	struct profbuf_read r;
	struct ow w;

	KT_REQUIRE(g && b);
	ow_init(&w, 0, profbuf_group_claim(g));
	KT_REQUIRE(w.o);
	w.fixed = 4;
	fill8(&w);
	for (int i = 0; i < 3; i++) /* seq 8, 9, 10 */
		KT_CHECK_EQ(ow_put(&w, i), -ENOSPC);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	for (int i = 0; i < 4; i++) /* full: refused in count_loss() */
		KT_CHECK_EQ(ow_put(&w, i), -ESHUTDOWN);
	KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
	check_read(b, &r);
	KT_CHECK_EQ(b->st.records, 8);
	for (int i = 0; i < 4; i++) /* still full: not given back yet */
		KT_CHECK_EQ(ow_put(&w, i), -ESHUTDOWN);
	/* Gives the 8 back; the last overflow record. */
	expect_overflow_then(g, b, 3, 8, -1);
	for (int i = 0; i < 4; i++) /* room: reserved, undone, refused */
		KT_CHECK_EQ(ow_put(&w, i), -ESHUTDOWN);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.eof && !r.ndata);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_BLOCKING, &r), 0);
	KT_CHECK(r.eof && !r.ndata);
	check_books(b, (const struct ow *[]){ &w }, 1);
	KT_CHECK_EQ(w.refused, 12);
	free(b);
	profbuf_group_free(g);
}

/* ---- 5. reserve / commit ---------------------------------------------------- */

static int reserve_for(bool lib, struct profbuf_owned *o, uint32_t w,
		       uint64_t seq, size_t nstk, struct profbuf_owned_resv *rv)
{
	uint64_t hdr[HDR] = { w + 1, seq };

	if (lib)
		return (profbuf_owned_reserve)(o, TAG(w), (int64_t)seq, hdr,
					       HDR, nstk, rv);
	return profbuf_owned_reserve(o, TAG(w), (int64_t)seq, hdr, HDR, nstk,
				     rv);
}

static int commit_for(bool lib, struct profbuf_owned_resv *rv, size_t n)
{
	return lib ? (profbuf_owned_commit)(rv, n)
		   : profbuf_owned_commit(rv, n);
}

static void fill_resv(struct profbuf_owned_resv *rv, uint32_t w, uint64_t seq,
		      size_t n)
{
	for (size_t i = 0; i < n; i++)
		rv->stk[i] = (uintptr_t)checkrec_word(w, seq, i);
}

/*
 * In place, by the inline path and the library's: a whole commit; a
 * shorter one given back (the next record starts right after it, in the
 * same run); a shorter one with a write after it (nested: padding, which
 * the reader steps over; nothing read before the outer commit); a commit
 * longer than reserved (-EINVAL, committed whole); a second commit.
 */
static void reserve_commit_in_place(void)
{
	for (int lib = 0; lib < 2; lib++) {
		struct profbuf_group *g =
			profbuf_group_new_owned(1, 1, HDR, 256, 16);
		struct books *b = new_books(false);
		struct profbuf_owned_resv rv, inner;
		struct profbuf_read r;
		struct profbuf_owned *o;
		struct ow w;

		KT_REQUIRE(g && b);
		o = profbuf_group_claim(g);
		KT_REQUIRE(o);
		ow_init(&w, 0, o);
		/* seq 0: whole */
		KT_REQUIRE(reserve_for(lib, o, 0, 0, 5, &rv) == 0);
		KT_CHECK_EQ(rv.nstk, 5);
		fill_resv(&rv, 0, 0, 5);
		KT_CHECK_EQ(commit_for(lib, &rv, 5), 0);
		/* seq 1: 40 reserved, 3 committed; seq 2 right after */
		KT_REQUIRE(reserve_for(lib, o, 0, 1, 40, &rv) == 0);
		fill_resv(&rv, 0, 1, 3);
		KT_CHECK_EQ(commit_for(lib, &rv, 3), 0);
		KT_REQUIRE(reserve_for(lib, o, 0, 2, 4, &rv) == 0);
		fill_resv(&rv, 0, 2, 4);
		KT_CHECK_EQ(commit_for(lib, &rv, 4), 0);
		KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
		KT_CHECK_EQ(r.ntags, 3);
		KT_CHECK_EQ(r.ndata,
			    (2 + HDR + 5) + (2 + HDR + 3) + (2 + HDR + 4));
		check_read(b, &r);
		/* seq 3: 30 reserved; seq 4 written meanwhile; 4 committed */
		KT_REQUIRE(reserve_for(lib, o, 0, 3, 30, &rv) == 0);
		fill_resv(&rv, 0, 3, 30);
		KT_REQUIRE(reserve_for(!lib, o, 0, 4, 2, &inner) == 0);
		fill_resv(&inner, 0, 4, 2);
		KT_CHECK_EQ(commit_for(!lib, &inner, 2), 0);
		KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
		KT_CHECK_EQ(r.ndata, 0); /* the outer write is in progress */
		KT_CHECK_EQ(commit_for(lib, &rv, 4), 0);
		/* seq 5: 3 reserved, "4" committed: -EINVAL, whole */
		KT_REQUIRE(reserve_for(lib, o, 0, 5, 3, &rv) == 0);
		fill_resv(&rv, 0, 5, 3);
		KT_CHECK_EQ(commit_for(lib, &rv, 4), -EINVAL);
		KT_CHECK_EQ(commit_for(lib, &rv, 3), -EINVAL); /* spent */
		KT_CHECK_EQ(commit_for(!lib, &rv, 3), -EINVAL);
		KT_CHECK_EQ(commit_for(lib, NULL, 0), -EINVAL);
		memset(&rv, 0, sizeof(rv));
		KT_CHECK_EQ(commit_for(lib, &rv, 0), -EINVAL);
		drain_now(g, b);
		KT_CHECK_EQ(b->st.records, 6);
		KT_CHECK_EQ(b->st.violations, 0);
		KT_CHECK_EQ(b->st.lost, 0);
		/* order and lengths: 5, 3, 4, 4, 2, 3 */
		KT_REQUIRE(b->nlog == 6);
		for (int i = 0; i < 6; i++)
			KT_CHECK_EQ(b->log_seq[i], i);
		KT_CHECK_EQ(profbuf_group_close(g), 0);
		drain_eof(g, b);
		KT_CHECK_EQ(b->st.records, 6);
		free(b);
		profbuf_group_free(g);
	}
}

/* ---- 6. nesting in a signal handler ----------------------------------------- */

/* A 20 kHz timer's handler writes to the ring its thread writes, ~1 s. */
static void signal_nested_exact(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 512, 64);

	KT_REQUIRE(g);
	run_exact(g, 1, UINT64_MAX, 800000000, true, false);
	profbuf_group_free(g);
}

static struct ow *usr1_w;
static _Atomic int usr1_calls;

/* SIGUSR1: three writes by every way, on top of the thread's. */
static void on_usr1(int sig)
{
	int saved = errno;

	(void)sig;
	atomic_fetch_add(&usr1_calls, 1);
	for (int i = 0; i < 3 && usr1_w; i++)
		ow_put(usr1_w, (int)(usr1_w->seq % 4));
	errno = saved;
}

/*
 * A handler that runs between its thread's reserve and commit: its
 * records are read after the thread's, and none before the thread's
 * commit publishes them all; whole and shorter commits, both paths.
 */
static void signal_between_reserve_and_commit(void)
{
	for (int k = 0; k < 4; k++) {
		bool lib = k & 1, shorter = k & 2;
		struct profbuf_group *g =
			profbuf_group_new_owned(1, 1, HDR, 256, 16);
		struct books *b = new_books(false);
		struct profbuf_owned_resv rv;
		struct profbuf_read r;
		struct ow w0, w1;

		KT_REQUIRE(g && b);
		ow_init(&w0, 0, profbuf_group_claim(g));
		ow_init(&w1, 1, w0.o);
		KT_REQUIRE(w0.o);
		usr1_w = &w1;
		atomic_store(&usr1_calls, 0);
		KT_REQUIRE(reserve_for(lib, w0.o, 0, 0, 10, &rv) == 0);
		fill_resv(&rv, 0, 0, 10);
		pthread_kill(pthread_self(), SIGUSR1);
		KT_CHECK_EQ(atomic_load(&usr1_calls), 1);
		KT_CHECK_EQ(w1.ok, 3);
		KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
		KT_CHECK_EQ(r.ndata, 0);
		KT_CHECK_EQ(commit_for(lib, &rv, shorter ? 6 : 10), 0);
		usr1_w = NULL;
		drain_now(g, b);
		KT_REQUIRE(b->nlog == 4);
		KT_CHECK(b->log_w[0] == 0 && b->log_seq[0] == 0);
		for (int i = 1; i < 4; i++)
			KT_CHECK(b->log_w[i] == 1 &&
				 b->log_seq[i] == (uint64_t)i - 1);
		KT_CHECK_EQ(b->st.violations, 0);
		KT_CHECK_EQ(b->st.read_by_writer[1], 3);
		free(b);
		profbuf_group_free(g);
	}
}

/* ---- 7. close ---------------------------------------------------------------- */

/*
 * Writers (two owned rings, one on the shared ring) write on while the
 * group is closed; the reader reads to EOF.  Every write accepted or
 * lost is read or counted, no refused one read, none accepted after a
 * refusal; closed early and late.
 */
static void close_races_writers(void)
{
	for (int round = 0; round < 4; round++) {
		struct profbuf_group *g =
			profbuf_group_new_owned(1, 2, HDR, 256, 32);
		struct books *b = new_books(true);
		struct wthread wt[3];
		const struct ow *all[3];
		struct reader rd;
		uint64_t at = (uint64_t)round * 20000;
		int nown = 0;

		KT_REQUIRE(g && b);
		memset(wt, 0, sizeof(wt));
		reader_start(&rd, g, b, round & 1);
		for (int i = 0; i < 3; i++) {
			wt[i].g = g;
			wt[i].w.id = (uint32_t)i;
			wt[i].n = UINT64_MAX;
			wt[i].past_close = 3000;
			pthread_create(&wt[i].t, NULL, wthread_main, &wt[i]);
		}
		for (int i = 0; i < 3; i++)
			while (atomic_load(&wt[i].progress) < at)
				sched_yield();
		KT_CHECK_EQ(profbuf_group_close(g), 0);
		for (int i = 0; i < 3; i++) {
			pthread_join(wt[i].t, NULL);
			all[i] = &wt[i].w;
			KT_CHECK_EQ(wt[i].w.refused, 3001);
			nown += wt[i].w.o != NULL;
		}
		KT_CHECK(nown >= 2); /* or a ring taken from one gone */
		KT_CHECK(!reader_join(&rd));
		check_books(b, all, 3);
		free(b);
		profbuf_group_free(g);
	}
}

/*
 * struct lossy - a writer that fills its ring, then loses writes until
 * the group closes, then has them refused, until told to stop.
 */
struct lossy {
	struct profbuf_group *g;
	struct ow w;
	_Atomic int full, stop;
	pthread_t t;
};

static void *lossy_main(void *arg)
{
	struct lossy *l = arg;

	ow_init(&l->w, 0, profbuf_group_claim(l->g));
	if (!l->w.o) {
		l->w.bad++;
		atomic_store(&l->full, 1);
		return NULL;
	}
	while (ow_put(&l->w, (int)(l->w.seq % 2)) == 0)
		;
	atomic_store(&l->full, 1);
	while (!atomic_load_explicit(&l->stop, memory_order_relaxed))
		ow_put(&l->w, (int)(l->w.seq % 2));
	/* Refused after the stop too, up to a fixed end. */
	for (int i = 0; i < 1000; i++)
		ow_put(&l->w, (int)(l->w.seq % 2));
	return NULL;
}

/*
 * One trial: a full ring whose owner goes on losing writes, closed
 * while it does; the reader reads to EOF while the owner's refused
 * writes go on.  @blocking: a blocking reader, which must reach EOF
 * without a write that wakes it (the owner's end wakes nobody).
 * Return: the reader was stuck.
 */
static bool close_lossy_trial(struct books *b, bool blocking)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 64, 16);
	struct lossy l = { .g = g };
	struct reader rd;
	bool stuck;

	if (!g)
		return false;
	pthread_create(&l.t, NULL, lossy_main, &l);
	while (!atomic_load(&l.full))
		sched_yield();
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	reader_start(&rd, g, b, !blocking);
	/* The owner is refused on until the reader's EOF, then stops. */
	for (int i = 0; i < 2000 && !atomic_load(&rd.done); i++)
		stress_sleep_ns(1000);
	atomic_store(&l.stop, 1);
	pthread_join(l.t, NULL);
	stuck = reader_join(&rd);
	check_books(b, (const struct ow *[]){ &l.w }, 1);
	/* Per trial the books start again for writer 0. */
	b->st.read_by_writer[0] = 0;
	b->st.next_seq[0] = 0;
	b->st.records = 0;
	b->st.lost = 0;
	profbuf_group_free(g);
	return stuck;
}

/*
 * Close while the owner of a full ring loses writes: the last overflow
 * record before EOF counts exactly the losses (not a write refused
 * meanwhile); timed reads, for ~1 s of trials.
 */
static void close_with_losses_exact(void)
{
	struct books *b = new_books(true);
	uint64_t end = stress_now_ns() + 1000000000ull;
	int trials = 0, before;

	KT_REQUIRE(b);
	do {
		before = ktest_failed_checks;
		close_lossy_trial(b, false);
		trials++;
	} while (ktest_failed_checks == before && stress_now_ns() < end);
	printf("  %d trials, %llu overflow records\n", trials,
	       (unsigned long long)b->st.overflow_records);
	free(b);
}

/*
 * The same with a blocking reader: it reaches EOF though no write of the
 * owner's publishes anything after close (a loss or a refusal in
 * progress when it looked must not leave it asleep for good).
 */
static void close_with_losses_blocking_eof(void)
{
	struct books *b = new_books(true);
	uint64_t end = stress_now_ns() + 1000000000ull;
	int trials = 0, stuck = 0;

	KT_REQUIRE(b);
	do {
		stuck += close_lossy_trial(b, true);
		trials++;
	} while (!stuck && stress_now_ns() < end);
	printf("  %d trials, %d with the reader asleep after the owner "
	       "stopped\n",
	       trials, stuck);
	KT_CHECK_EQ(stuck, 0);
	free(b);
}

struct waker {
	struct profbuf_group *g;
	_Atomic int phase; /* the reader's: 1, 2, 3 read started */
	int rc[3];
	int stuck;
	struct profbuf_read r[3];
	uint64_t hdr0[3];
	pthread_t t;
};

/* The reader: a blocking read, a timed one (10 s), a blocking one. */
static void *waker_reader(void *arg)
{
	struct waker *wk = arg;

	for (int i = 0; i < 3; i++) {
		atomic_store(&wk->phase, i + 1);
		if (i == 1)
			wk->rc[i] = profbuf_group_read_timeout(
				wk->g, 10000000000ull, &wk->r[i]);
		else
			wk->rc[i] = profbuf_group_read(wk->g, PROFBUF_BLOCKING,
						       &wk->r[i]);
		wk->hdr0[i] = wk->r[i].ndata ? wk->r[i].data[2] : 0;
	}
	atomic_store(&wk->phase, 4);
	return NULL;
}

/*
 * wait_phase() - wait for the reader to start read @p (@p 4: to end).
 * A reader that does not get there within 5 s of what should wake it
 * missed a wakeup: counted in @stuck, and woken by SIGUSR2 (EINTR; it
 * looks again) so that the test ends.
 */
static void wait_phase(struct waker *wk, int p)
{
	for (int i = 0; atomic_load(&wk->phase) < p; i++) {
		stress_sleep_ns(1000000);
		if (i == 5000)
			wk->stuck++;
		if (i >= 5000)
			pthread_kill(wk->t, SIGUSR2);
	}
	if (p < 4)
		stress_sleep_ns(
			20000000); /* let it fall asleep (not asserted) */
}

static void waker_join(struct waker *wk)
{
	wait_phase(wk, 4);
	pthread_join(wk->t, NULL);
	KT_CHECK_EQ(wk->stuck, 0);
}

/*
 * A reader asleep on an empty group is woken by a write to an owned
 * ring (blocking, and timed), and by close; and by the commit of a
 * write that was in progress at close, whose record it then reads.
 */
static void blocking_reader_woken(void)
{
	for (int k = 0; k < 2; k++) {
		struct profbuf_group *g =
			profbuf_group_new_owned(1, 2, HDR, 256, 16);
		struct waker wk = { .g = g };
		struct profbuf_owned *o;
		struct profbuf_owned_resv rv;
		struct profbuf_read r;

		KT_REQUIRE(g);
		o = profbuf_group_claim(g);
		KT_REQUIRE(o);
		pthread_create(&wk.t, NULL, waker_reader, &wk);
		wait_phase(&wk, 1);
		KT_CHECK_EQ(profbuf_owned_write(o, NULL, 1, (uint64_t[]){ 11 },
						1, NULL, 0),
			    0);
		wait_phase(&wk, 2);
		KT_CHECK_EQ((profbuf_owned_write)(o, NULL, 2,
						  (uint64_t[]){ 22 }, 1, NULL,
						  0),
			    0);
		wait_phase(&wk, 3);
		if (k == 0) {
			KT_CHECK_EQ(profbuf_group_close(g), 0);
		} else {
			/* In progress at close: its commit wakes the reader. */
			KT_REQUIRE(profbuf_owned_reserve(o, NULL, 3,
							 (uint64_t[]){ 33 }, 1,
							 0, &rv) == 0);
			KT_CHECK_EQ(profbuf_group_close(g), 0);
			stress_sleep_ns(20000000);
			KT_CHECK_EQ(profbuf_owned_commit(&rv, 0), 0);
		}
		waker_join(&wk);
		for (int i = 0; i < 3; i++)
			KT_CHECK_EQ(wk.rc[i], 0);
		KT_CHECK(wk.hdr0[0] == 11 && wk.r[0].ntags == 1);
		KT_CHECK(wk.hdr0[1] == 22 && wk.r[1].ntags == 1);
		if (k == 0) {
			KT_CHECK(wk.r[2].eof && !wk.r[2].ndata);
		} else {
			KT_CHECK(wk.hdr0[2] == 33 && wk.r[2].ntags == 1);
			KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_BLOCKING, &r),
				    0);
			KT_CHECK(r.eof);
		}
		profbuf_group_free(g);
	}
}

/*
 * struct pingpong - a reader that counts what it reads, for a writer
 * that writes the next record only once the last one was read: every
 * write then finds the reader asleep or falling asleep.
 */
struct pingpong {
	struct profbuf_group *g;
	struct books *b;
	_Atomic uint64_t got;
	int err;
	pthread_t t;
};

static void *pingpong_reader(void *arg)
{
	struct pingpong *pp = arg;
	struct profbuf_read r;
	int rc;

	for (;;) {
		rc = profbuf_group_read(pp->g, PROFBUF_BLOCKING, &r);
		if (rc || r.eof) {
			pp->err = rc;
			return NULL;
		}
		check_read(pp->b, &r);
		atomic_store(&pp->got, pp->b->st.records);
	}
}

/*
 * Write and wait for the read, over and over (for 0.5 s at most): no
 * wakeup is lost, or the game stops; a reader not done 5 s after a
 * write is stuck (FAIL), woken by SIGUSR2 to go on.
 */
static void pingpong(bool fence)
{
	struct pingpong pp = { 0 };
	uint64_t end = stress_now_ns() + 500000000ull;
	int stuck = 0;
	struct ow w;

	profbuf_owned_test_no_membarrier = fence;
	pp.g = profbuf_group_new_owned(1, 1, HDR, 256, 16);
	profbuf_owned_test_no_membarrier = false;
	pp.b = new_books(true);
	KT_REQUIRE(pp.g && pp.b);
	ow_init(&w, 0, profbuf_group_claim(pp.g));
	KT_REQUIRE(w.o);
	pthread_create(&pp.t, NULL, pingpong_reader, &pp);
	while (w.seq < 20000 && stress_now_ns() < end) {
		uint64_t t0 = stress_now_ns();

		KT_CHECK_EQ(ow_put(&w, (int)(w.seq % 4)), 0);
		for (int i = 0; atomic_load(&pp.got) < w.ok; i++) {
			sched_yield();
			if ((i & 1023) || stress_now_ns() - t0 < 5000000000u)
				continue;
			if (!stuck++)
				fprintf(stderr,
					"  reader asleep 5 s after "
					"write %llu: waking it\n",
					(unsigned long long)w.seq - 1);
			pthread_kill(pp.t, SIGUSR2);
		}
	}
	KT_CHECK_EQ(profbuf_group_close(pp.g), 0);
	pthread_join(pp.t, NULL);
	KT_CHECK_EQ(pp.err, 0);
	check_books(pp.b, (const struct ow *[]){ &w }, 1);
	KT_CHECK_EQ(stuck, 0);
	printf("  %llu round trips\n", (unsigned long long)w.seq);
	free(pp.b);
	profbuf_group_free(pp.g);
}

static void pingpong_no_lost_wakeup(void)
{
	pingpong(false);
}

static void pingpong_no_lost_wakeup_fence(void)
{
	pingpong(true);
}

/* An owner thread that exits inside a write (reserved, never committed). */
struct dier {
	struct profbuf_group *g;
	struct ow w;
	pthread_barrier_t *bar; /* if set: wait there when reserved, to exit */
	pthread_t t;
};

static void *dier_main(void *arg)
{
	struct dier *d = arg;
	struct profbuf_owned_resv rv;

	ow_init(&d->w, 0, profbuf_group_claim(d->g));
	if (!d->w.o)
		return NULL;
	for (int i = 0; i < 3; i++)
		ow_put(&d->w, i);
	if (reserve_for(false, d->w.o, 0, d->w.seq, 2, &rv) == 0)
		d->w.ok++; /* accepted: read, or counted lost */
	d->w.seq++;
	if (d->bar) {
		pthread_barrier_wait(d->bar); /* reserved */
		pthread_barrier_wait(d->bar); /* exit now */
	}
	return NULL;
}

/*
 * The owner exits with a write in progress: at close the reader counts
 * what it reserved as lost and reaches EOF, whether the owner was gone
 * before the reader looked (@late false) or went while the reader slept
 * waiting for that write's end (@late true).
 */
static void owner_exits(bool late)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 256, 16);
	struct books *b = new_books(true);
	struct dier d = { .g = g };
	pthread_barrier_t bar;
	struct reader rd;

	KT_REQUIRE(g && b);
	pthread_barrier_init(&bar, NULL, 2);
	d.bar = late ? &bar : NULL;
	pthread_create(&d.t, NULL, dier_main, &d);
	if (late)
		pthread_barrier_wait(&bar);
	else
		pthread_join(d.t, NULL);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	reader_start(&rd, g, b, false);
	if (late) {
		stress_sleep_ns(20000000); /* it sleeps (not asserted) */
		pthread_barrier_wait(&bar);
		pthread_join(d.t, NULL);
	}
	KT_CHECK(!reader_join(&rd));
	KT_REQUIRE(d.w.o);
	KT_CHECK_EQ(d.w.ok, 4);
	KT_CHECK_EQ(b->st.records, 3);
	KT_CHECK_EQ(b->st.lost, 1);
	KT_CHECK_EQ(b->st.violations, 0);
	pthread_barrier_destroy(&bar);
	free(b);
	profbuf_group_free(g);
}

static void owner_exits_mid_write(void)
{
	owner_exits(false);
}

static void owner_exits_mid_write_reader_asleep(void)
{
	owner_exits(true);
}

/* ---- 8. fence mode ------------------------------------------------------------- */

/*
 * Without membarrier(2) the writers fence and the inline path defers to
 * the library: the same exact books with a blocking reader, with and
 * without handlers, and a close racing writers.
 */
static void fence_mode_exact(void)
{
	struct profbuf_group *g;

	profbuf_owned_test_no_membarrier = true;
	g = profbuf_group_new_owned(1, 2, HDR, 512, 64);
	KT_REQUIRE(g);
	{
		struct profbuf_owned *o = profbuf_group_claim(g);

		KT_REQUIRE(o);
		KT_CHECK_EQ(o->profbuf__fence, 1);
		KT_CHECK_EQ(o->profbuf__inline_hdrsize, 0);
		KT_CHECK_EQ(profbuf_group_unclaim(o), 0);
	}
	run_exact(g, 2, 150000, 0, false, false);
	profbuf_group_free(g);
	g = profbuf_group_new_owned(1, 2, HDR, 512, 64);
	KT_REQUIRE(g);
	run_exact(g, 2, UINT64_MAX, 300000000, true, false);
	profbuf_group_free(g);
	profbuf_owned_test_no_membarrier = false;
	/* The hook is read at creation: rings made now have the fast path. */
	g = profbuf_group_new_owned(1, 1, HDR, 512, 64);
	KT_REQUIRE(g);
	KT_CHECK_EQ(g ? profbuf_group_claim(g)->profbuf__inline_hdrsize : 0,
		    HDR);
	profbuf_group_free(g);
}

/* The same, with membarrier(2): writers on owned and shared rings. */
static void concurrent_exact(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 2, HDR, 512, 64);

	KT_REQUIRE(g);
	run_exact(g, 3, 150000, 0, false, false);
	profbuf_group_free(g);
	g = profbuf_group_new_owned(1, 2, HDR, 1024, 64);
	KT_REQUIRE(g);
	run_exact(g, 2, 150000, 0, false, true);
	profbuf_group_free(g);
}

/* ---- 9. errno, bad arguments ------------------------------------------------------- */

#define KEEPS_ERRNO(call, want)              \
	do {                                 \
		errno = 1234;                \
		KT_CHECK_EQ((call), (want)); \
		KT_CHECK_EQ(errno, 1234);    \
	} while (0)

/*
 * Every call keeps errno, succeeding or not (a wakeup's system call
 * included); bad arguments are -EINVAL and count nothing.
 */
static void errno_and_bad_args(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 64, 16);
	struct profbuf_group *none = profbuf_group_new_owned(1, 0, HDR, 64, 16);
	uint64_t hdr[HDR] = { 1, 0 }, zero[HDR] = { 0, 0 };
	uint64_t h3[3] = { 1, 2, 3 };
	uintptr_t stk[64] = { 0 };
	struct profbuf_owned_resv rv;
	struct profbuf_owned *o;
	struct books *b = new_books(false);
	int before = ktest_failed_checks;

	KT_REQUIRE(g && none && b);
	KT_CHECK(!profbuf_group_claim(none));
	KT_CHECK_EQ(profbuf_group_nowned(none), 0);
	KT_CHECK_EQ(profbuf_group_nowned(NULL), 0);
	errno = 0;
	KT_CHECK(!profbuf_group_new_owned(1, PROFBUF_GROUP_MAX_OWNED + 1, HDR,
					  64, 16));
	KT_CHECK_EQ(errno, EINVAL);
	KT_CHECK(!profbuf_group_new_owned(1, 1, 0, 64, 16));
	KT_CHECK_EQ(errno, EINVAL);
	errno = 1234;
	o = profbuf_group_claim(g);
	KT_CHECK_EQ(errno, 1234);
	KT_REQUIRE(o);
	KT_CHECK_EQ(o->profbuf__data_len, 64);
	for (int lib = 0; lib < 2; lib++) {
#define W(...)                                    \
	(lib ? (profbuf_owned_write)(__VA_ARGS__) \
	     : profbuf_owned_write(__VA_ARGS__))
#define R(...)                                      \
	(lib ? (profbuf_owned_reserve)(__VA_ARGS__) \
	     : profbuf_owned_reserve(__VA_ARGS__))
		KEEPS_ERRNO(W(NULL, NULL, 0, hdr, HDR, stk, 1), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, NULL, HDR, stk, 1), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, hdr, 0, stk, 1), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, h3, 3, stk, 1), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, zero, HDR, stk, 1), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, zero, 1, stk, 1), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, hdr, HDR, NULL, 1), -EINVAL);
		/* A stack as long as the ring, or one that leaves no room. */
		KEEPS_ERRNO(W(o, NULL, 0, hdr, HDR, stk, 64), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, hdr, HDR, stk, 61), -EINVAL);
		KEEPS_ERRNO(W(o, NULL, 0, hdr, HDR, stk, SIZE_MAX), -EINVAL);
		KEEPS_ERRNO(R(NULL, NULL, 0, hdr, HDR, 1, &rv), -EINVAL);
		KEEPS_ERRNO(R(o, NULL, 0, NULL, HDR, 1, &rv), -EINVAL);
		KEEPS_ERRNO(R(o, NULL, 0, hdr, 0, 1, &rv), -EINVAL);
		KEEPS_ERRNO(R(o, NULL, 0, h3, 3, 1, &rv), -EINVAL);
		KEEPS_ERRNO(R(o, NULL, 0, zero, HDR, 1, &rv), -EINVAL);
		KEEPS_ERRNO(R(o, NULL, 0, hdr, HDR, 64, &rv), -EINVAL);
		KEEPS_ERRNO(R(o, NULL, 0, hdr, HDR, 1, NULL), -EINVAL);
		KEEPS_ERRNO(commit_for(lib, NULL, 0), -EINVAL);
		/* Good ones (32 words), then two losses. */
		for (int i = 0; i < 8; i++) {
			hdr[1] = (uint64_t)(lib * 100 + i);
			if (i % 2) {
				KEEPS_ERRNO(W(o, TAG(0), (int64_t)hdr[1], hdr,
					      HDR, stk, 0),
					    0);
			} else {
				KEEPS_ERRNO(R(o, TAG(0), (int64_t)hdr[1], hdr,
					      HDR, 0, &rv),
					    0);
				KEEPS_ERRNO(commit_for(lib, &rv, 0), 0);
			}
		}
		KEEPS_ERRNO(W(o, TAG(0), 0, hdr, HDR, stk, 60), -ENOSPC);
		KEEPS_ERRNO(R(o, TAG(0), 0, hdr, HDR, 30, &rv), -ENOSPC);
#undef W
#undef R
		drain_now(g, b);
	}
	/* A bad reservation accepted would hold EOF back for good. */
	KT_REQUIRE(ktest_failed_checks == before);
	/* Sixteen records read; the last two losses said at EOF. */
	KEEPS_ERRNO(profbuf_group_close(g), 0);
	KEEPS_ERRNO(profbuf_owned_write(o, NULL, 3, hdr, HDR, NULL, 0),
		    -ESHUTDOWN);
	KEEPS_ERRNO(profbuf_owned_reserve(o, NULL, 3, hdr, HDR, 0, &rv),
		    -ESHUTDOWN);
	drain_eof(g, b);
	KT_CHECK_EQ(b->st.records, 16);
	KT_CHECK_EQ(b->st.lost, 4);
	KT_CHECK_EQ(b->st.overflow_records, 2);
	KT_CHECK_EQ(b->st.violations, 0);
	free(b);
	profbuf_group_free(g);
	profbuf_group_free(none);
}

/*
 * A write that wakes a sleeping reader (a futex system call) keeps
 * errno, by the inline path and the library's.
 */
static void errno_kept_by_wakeups(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 256, 16);
	struct profbuf_owned_resv rv;
	struct profbuf_owned *o;
	struct waker wk = { .g = g };

	KT_REQUIRE(g);
	o = profbuf_group_claim(g);
	KT_REQUIRE(o);
	pthread_create(&wk.t, NULL, waker_reader, &wk);
	wait_phase(&wk, 1);
	KEEPS_ERRNO(
		profbuf_owned_write(o, NULL, 1, (uint64_t[]){ 11 }, 1, NULL, 0),
		0);
	wait_phase(&wk, 2);
	KEEPS_ERRNO((profbuf_owned_reserve)(o, NULL, 2, (uint64_t[]){ 22 }, 1,
					    0, &rv),
		    0);
	KEEPS_ERRNO((profbuf_owned_commit)(&rv, 0), 0);
	wait_phase(&wk, 3);
	KEEPS_ERRNO(profbuf_group_close(g), 0);
	waker_join(&wk);
	KT_CHECK(wk.hdr0[0] == 11 && wk.hdr0[1] == 22);
	KT_CHECK(wk.r[2].eof);
	profbuf_group_free(g);
}

/* ---- 10. fork ---------------------------------------------------------------------- */

/*
 * In the child: after_fork() gives up what the parent left unread
 * (@dropped), the child writes its ring (claimed again: its own) and
 * reads back exactly its records.  Return: failed checks.
 */
static int fork_child(struct profbuf_group *g, struct profbuf_owned *o,
		      int dropped)
{
	int before = ktest_failed_checks;
	struct books *b = new_books(false);
	struct ow w;

	if (!b)
		return 1;
	KT_CHECK_EQ(profbuf_group_after_fork(g, 0), dropped);
	KT_CHECK(profbuf_group_claim(g) == o);
	ow_init(&w, 5, o);
	w.fixed = 4;
	for (int i = 0; i < 6; i++)
		KT_CHECK_EQ(ow_put(&w, i % 4), 0);
	drain_now(g, b);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	drain_eof(g, b);
	check_books(b, (const struct ow *[]){ &w }, 1);
	KT_CHECK_EQ(b->st.overflow_records, 0);
	free(b);
	return ktest_failed_checks - before;
}

static void fork_and_wait(struct profbuf_group *g, struct profbuf_owned *o,
			  int dropped)
{
	int status = 0;
	pid_t pid = fork();

	KT_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(fork_child(g, o, dropped) ? 1 : 0);
	KT_REQUIRE(waitpid(pid, &status, 0) == pid);
	KT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * fork(): records the parent left unread are dropped in the child and
 * counted by profbuf_group_after_fork(); the child writes and reads its
 * ring; the parent still reads its own.
 */
static void after_fork_drops_unread(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 64, 16);
	struct books *b = new_books(false);
	struct ow w;

	KT_REQUIRE(g && b);
	ow_init(&w, 0, profbuf_group_claim(g));
	KT_REQUIRE(w.o);
	w.fixed = 4;
	for (int i = 0; i < 3; i++)
		KT_CHECK_EQ(ow_put(&w, i), 0);
	drain_now(g, b);
	for (int i = 0; i < 4; i++)
		KT_CHECK_EQ(ow_put(&w, i), 0);
	fork_and_wait(g, w.o, 4);
	drain_now(g, b);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	drain_eof(g, b);
	check_books(b, (const struct ow *[]){ &w }, 1);
	KT_CHECK_EQ(b->st.records, 7);
	free(b);
	profbuf_group_free(g);
}

/*
 * fork() when the group reader holds an owned ring's run it read but has
 * not returned (stashed while it gave that ring's room back and returned
 * the shared ring's records): that run is unread too, dropped and
 * counted, never read in the child.
 */
static void after_fork_drops_stashed_run(void)
{
	struct profbuf_group *g = profbuf_group_new_owned(1, 1, HDR, 64, 16);
	struct books *b = new_books(false);
	struct profbuf_read r;
	struct ow w, s;

	KT_REQUIRE(g && b);
	ow_init(&w, 0, profbuf_group_claim(g));
	KT_REQUIRE(w.o);
	ow_init(&s, 1, NULL);
	s.b = profbuf_group_ring(g, 0);
	w.fixed = s.fixed = 4;
	KT_CHECK_EQ(ow_put(&w, 0), 0);
	KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
	KT_CHECK_EQ(profbuf_group_last_ring(g), 1);
	check_read(b, &r);
	KT_CHECK_EQ(ow_put(&w, 0), 0);
	KT_CHECK_EQ(ow_put(&s, 0), 0);
	/* Gives ring 1's run back, stashing the next; returns ring 0's. */
	KT_REQUIRE(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r) == 0);
	KT_CHECK_EQ(profbuf_group_last_ring(g), 0);
	check_read(b, &r);
	fork_and_wait(g, w.o, 1);
	drain_now(g, b);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	drain_eof(g, b);
	check_books(b, (const struct ow *[]){ &w, &s }, 2);
	free(b);
	profbuf_group_free(g);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm,
				.sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sa.sa_flags = 0; /* no restart: a futex wait ends with EINTR */
	sigaction(SIGUSR2, &sa, NULL);

	KT_RUN(claim_distinct_and_exited);
	KT_RUN(claim_unclaim_handover);
	KT_RUN(round_trip);
	KT_RUN(wrap_many_laps);
	KT_RUN(tag_ring_wrap);
	KT_RUN(overflow_counted);
	KT_RUN(losses_reported_at_eof);
	KT_RUN(reserve_commit_in_place);
	KT_RUN(signal_between_reserve_and_commit);
	KT_RUN(signal_nested_exact);
	KT_RUN(blocking_reader_woken);
	KT_RUN(pingpong_no_lost_wakeup);
	KT_RUN(pingpong_no_lost_wakeup_fence);
	KT_RUN(close_races_writers);
	KT_RUN(close_with_losses_exact);
	KT_RUN(close_with_losses_blocking_eof);
	KT_RUN(owner_exits_mid_write);
	KT_RUN(owner_exits_mid_write_reader_asleep);
	KT_RUN(concurrent_exact);
	KT_RUN(fence_mode_exact);
	KT_RUN(errno_and_bad_args);
	KT_RUN(errno_kept_by_wakeups);
	KT_RUN(after_fork_drops_unread);
	KT_RUN(after_fork_drops_stashed_run);
	return ktest_exit();
}
