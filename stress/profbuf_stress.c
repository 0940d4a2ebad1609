// SPDX-License-Identifier: MIT
/*
 * profbuf_stress.c - torture profbuf with many writers, signal storms and
 * awkward readers, and account for every record.
 *
 * N writer threads write self-checking records (testing/checkrec.h) of
 * random length as fast as they can.  With --signals, each writer thread
 * also gets SIGPROF from its own timer, and the handler writes to the same
 * buffer - often while its thread is in the middle of a write (nested
 * writers).  The main thread reads (blocking, non-blocking or timed, with
 * random stalls if asked) and checks every word, each writer's order, and
 * at the end the exact accounting: for every writer, records read == writes
 * that returned 0, and the overflow counts read == writes that returned
 * -ENOSPC.  Even writers write inline, odd ones call the library
 * (<profring/profbuf_inline.h>); every fourth (ids 2, 6, ...) writes in
 * place instead: profbuf_reserve() of a few more stack words than it
 * stores, then profbuf_commit() of those it stored (a shorter commit:
 * given back, or padding).  --close-early closes the buffer while
 * the writers still run: writes after that must be refused, nothing
 * accepted may be lost.  --wrap starts the counters just below their
 * 2^32 / 2^30 wrap.  It also checks that every reader sleep was ended by
 * exactly one wakeup, and walks every read with the record iterator too
 * (<profring/profbuf.h>), which must agree with the checker.
 * --group N writes to a group of N rings read as one
 * (<profring/profbuf_group.h>) instead of one profbuf: each thread, and
 * its handler, writes to its own ring (shared once threads outnumber
 * rings), odd ids through profbuf_group_write(), even ones inline to
 * profbuf_group_mine()'s ring; the same checks hold over the merged read
 * (per-writer order, exact accounting), and every ring's sleeps end in
 * one wakeup each.  --owned (with --group N) also gives the group one
 * owned ring per writer thread (profbuf_group_new_owned()): each thread
 * claims one at start (profbuf_group_mine()'s ring if none is left) and
 * it and its handler write there, odd ids through the library's
 * profbuf_owned_write(), even ones inline, every fourth in place with
 * profbuf_owned_reserve()/profbuf_owned_commit() (inline or the
 * library's, in turn) and shorter commits; even threads give their ring
 * back at the end (profbuf_group_unclaim()), odd ones exit owning it.
 *
 * Exit status 0 only if nothing was violated.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The inline write path, perturbed as the library is (make stress-perturb). */
#include "ring/perturb.h"
#define PROFBUF__PERTURB() ring_perturb()
#include <profring/profbuf.h>
#include <profring/profbuf_group.h>

#include "profbuf/profbuf_testing.h"
#include "testing/checkrec.h"
#include "testing/harness.h"

#define PROG "profbuf_stress"
#define MAX_STACK 256

static struct {
	long seconds, writers, seed, bufwords, tags, max_stack, hz, watermark;
	long group;
	const char *mode;
	bool signals, cpu_clock, stall, close_early, wrap, owned;
} opt = {
	.seconds = 5,
	.writers = 4,
	.seed = 1,
	.bufwords = 1 << 14,
	.tags = 1 << 10,
	.max_stack = 64,
	.hz = 10000,
	.mode = "blocking",
};

static const struct stress_flag flags[] = {
	{ "seconds", "run time (default 5)", STRESS_INT, &opt.seconds },
	{ "writers", "writer threads (default 4)", STRESS_INT, &opt.writers },
	{ "seed", "PRNG seed (default 1)", STRESS_INT, &opt.seed },
	{ "bufwords", "ring words (default 16384)", STRESS_INT, &opt.bufwords },
	{ "tags", "ring records (default 1024)", STRESS_INT, &opt.tags },
	{ "max-stack", "longest stack (default 64)", STRESS_INT,
	  &opt.max_stack },
	{ "mode", "reader: blocking|nonblocking|timed", STRESS_STR, &opt.mode },
	{ "signals", "SIGPROF storm: handlers write too", STRESS_BOOL,
	  &opt.signals },
	{ "hz", "signals per second per thread (default 10000)", STRESS_INT,
	  &opt.hz },
	{ "cpu-clock",
	  "thread CPU-time timers (tick-limited) instead of "
	  "CLOCK_MONOTONIC",
	  STRESS_BOOL, &opt.cpu_clock },
	{ "stall", "reader stalls at random", STRESS_BOOL, &opt.stall },
	{ "watermark", "wake the reader only at this many words", STRESS_INT,
	  &opt.watermark },
	{ "close-early", "close while writers run", STRESS_BOOL,
	  &opt.close_early },
	{ "wrap", "start counters just below 2^32 / 2^30", STRESS_BOOL,
	  &opt.wrap },
	{ "group", "N rings read as one (profbuf_group), 0: one profbuf",
	  STRESS_INT, &opt.group },
	{ "owned", "with --group: one owned ring per writer thread",
	  STRESS_BOOL, &opt.owned },
	{ NULL, NULL, 0, NULL },
};

/* One per writer id; ids [0, writers) are threads, the rest handlers. */
struct writer {
	_Alignas(64) uint32_t id_pad; /* own cache line: no false sharing */
	uint32_t id;
	uint64_t seq, ok, lost, refused, nested;
	uint64_t unclaim_failed; /* --owned: profbuf_group_unclaim() != 0 */
	uint64_t rng;
	pthread_t thread;
	struct writer *handler; /* the id its thread's handler writes as */
};

static struct profbuf *buf;
static struct profbuf_group *grp; /* --group: buf is unused */
static struct writer *writers;
static atomic_bool stop;
static _Thread_local struct writer *tls_handler;
static _Thread_local volatile sig_atomic_t tls_in_write;
/* --owned: the thread's claimed ring, which its handler writes too. */
static _Thread_local struct profbuf_owned *tls_owned;

/*
 * A record written in place: reserve up to 7 stack words more than the
 * @n it has, store them in the reservation, commit @n.
 */
static int write_in_place(struct writer *w, struct profbuf *b,
			  const uint64_t *hdr, const uintptr_t *stk, size_t n)
{
	struct profbuf_resv rv;
	int rc = profbuf_reserve(b, (void *)(uintptr_t)(w->id + 1),
				 (int64_t)w->seq, hdr, 2,
				 n + stress_rand(&w->rng) % 8, &rv);

	if (rc)
		return rc;
	memcpy(rv.stk, stk, n * sizeof(*stk));
	return profbuf_commit(&rv, n);
}

/*
 * write_in_place() on an owned ring: inline on even sequence numbers,
 * the library's calls on odd ones.
 */
static int write_owned_in_place(struct writer *w, struct profbuf_owned *o,
				const uint64_t *hdr, const uintptr_t *stk,
				size_t n)
{
	struct profbuf_owned_resv rv;
	size_t extra = stress_rand(&w->rng) % 8;
	void *tag = (void *)(uintptr_t)(w->id + 1);
	int rc;

	if (w->seq & 1)
		rc = (profbuf_owned_reserve)(o, tag, (int64_t)w->seq, hdr, 2,
					     n + extra, &rv);
	else
		rc = profbuf_owned_reserve(o, tag, (int64_t)w->seq, hdr, 2,
					   n + extra, &rv);
	if (rc)
		return rc;
	memcpy(rv.stk, stk, n * sizeof(*stk));
	return w->seq & 1 ? (profbuf_owned_commit)(&rv, n)
			  : profbuf_owned_commit(&rv, n);
}

/* --owned: a record to the thread's owned ring @o. */
static int write_owned(struct writer *w, struct profbuf_owned *o,
		       const uint64_t *hdr, const uintptr_t *stk, size_t n)
{
	void *tag = (void *)(uintptr_t)(w->id + 1);

	if ((w->id & 3) == 2)
		return write_owned_in_place(w, o, hdr, stk, n);
	if (w->id & 1)
		return (profbuf_owned_write)(o, tag, (int64_t)w->seq, hdr, 2,
					     stk, n);
	return profbuf_owned_write(o, tag, (int64_t)w->seq, hdr, 2, stk, n);
}

static int write_one(struct writer *w)
{
	uint64_t hdr[2];
	uintptr_t stk[MAX_STACK];
	size_t n = stress_rand(&w->rng) % (uint64_t)(opt.max_stack + 1);
	struct profbuf_owned *o = tls_owned;
	int rc;

	checkrec_fill(hdr, stk, w->id, w->seq, n);
	if (o) {
		rc = write_owned(w, o, hdr, stk, n);
		goto count;
	}
	if ((w->id & 3) == 2) {
		rc = write_in_place(w, grp ? profbuf_group_mine(grp) : buf, hdr,
				    stk, n);
		goto count;
	}
	/*
	 * Even ids write inline (<profring/profbuf_inline.h>), odd ones call
	 * the library's profbuf_write(), as a binary built without the inline
	 * path does: both race each other.
	 */
	if (grp && (w->id & 1))
		rc = profbuf_group_write(grp, (void *)(uintptr_t)(w->id + 1),
					 (int64_t)w->seq, hdr, 2, stk, n);
	else if (grp)
		rc = profbuf_write(profbuf_group_mine(grp),
				   (void *)(uintptr_t)(w->id + 1),
				   (int64_t)w->seq, hdr, 2, stk, n);
	else if (w->id & 1)
		rc = (profbuf_write)(buf, (void *)(uintptr_t)(w->id + 1),
				     (int64_t)w->seq, hdr, 2, stk, n);
	else
		rc = profbuf_write(buf, (void *)(uintptr_t)(w->id + 1),
				   (int64_t)w->seq, hdr, 2, stk, n);
count:
	w->seq++;
	if (rc == 0)
		w->ok++;
	else if (rc == -ENOSPC)
		w->lost++;
	else
		w->refused++;
	return rc;
}

static void on_sigprof(int sig)
{
	struct writer *h = tls_handler;
	int saved = errno;

	(void)sig;
	if (!h)
		return;
	if (tls_in_write)
		h->nested++;
	write_one(h);
	errno = saved;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct stress_timer timer = { 0 };
	int rc;

	if (opt.owned)
		tls_owned = profbuf_group_claim(grp); /* NULL: mine() */
	if (opt.signals) {
		tls_handler = w->handler;
		rc = stress_timer_start(&timer, SIGPROF, opt.hz, opt.cpu_clock);
		if (rc)
			fprintf(stderr, PROG ": timer_create: %s\n",
				strerror(-rc));
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		tls_in_write = 1;
		rc = write_one(w);
		tls_in_write = 0;
		if (rc == -ESHUTDOWN)
			break; /* closed */
	}
	stress_timer_stop(&timer);
	tls_handler = NULL;
	/* Even threads give the ring back, odd ones exit owning it. */
	if (tls_owned && !(w->id & 1) && profbuf_group_unclaim(tls_owned))
		w->unclaim_failed++;
	tls_owned = NULL;
	return NULL;
}

/* The reader's calls, on the buffer or on the group. */
static int do_read(enum profbuf_mode mode, struct profbuf_read *r)
{
	return grp ? profbuf_group_read(grp, mode, r)
		   : profbuf_read(buf, mode, r);
}

static int do_read_timeout(uint64_t ns, struct profbuf_read *r)
{
	return grp ? profbuf_group_read_timeout(grp, ns, r)
		   : profbuf_read_timeout(buf, ns, r);
}

static int do_close(void)
{
	return grp ? profbuf_group_close(grp) : profbuf_close(buf);
}

static void read_all(struct checkrec_state *st, uint64_t deadline,
		     uint64_t *rng, uint64_t *reads)
{
	bool blocking = !strcmp(opt.mode, "blocking");
	bool timed = !strcmp(opt.mode, "timed");
	struct profbuf_read r;
	int rc;

	for (;;) {
		if (deadline && stress_now_ns() >= deadline)
			return;
		if (timed)
			rc = do_read_timeout(2000000, &r);
		else
			rc = do_read(blocking && !deadline
					     ? PROFBUF_BLOCKING
					     : PROFBUF_NONBLOCKING,
				     &r);
		if (rc && rc != -ETIMEDOUT) {
			checkrec_violation(st, "read error", (uint64_t)-rc, 0);
			return;
		}
		if (r.eof)
			return;
		(*reads)++;
		checkrec_read(st, &r);
		if (opt.stall && stress_rand(rng) % 128 == 0)
			stress_sleep_ns(stress_rand(rng) % 2000000);
	}
}

/* While writing, a blocking reader must not block past the deadline. */
static void read_phase(struct checkrec_state *st, uint64_t deadline,
		       uint64_t *rng, uint64_t *reads)
{
	if (strcmp(opt.mode, "blocking")) {
		read_all(st, deadline, rng, reads);
		return;
	}
	while (stress_now_ns() < deadline) {
		struct profbuf_read r;

		if (do_read_timeout(1000000, &r) == 0 && !r.eof) {
			(*reads)++;
			checkrec_read(st, &r);
		}
		if (opt.stall && stress_rand(rng) % 128 == 0)
			stress_sleep_ns(stress_rand(rng) % 2000000);
	}
}

static uint64_t check_accounting(struct checkrec_state *st, long nids,
				 uint64_t *ok, uint64_t *lost,
				 uint64_t *refused)
{
	uint64_t bad = 0;

	*ok = *lost = *refused = 0;
	for (long i = 0; i < nids; i++) {
		struct writer *w = &writers[i];

		if (st->read_by_writer[i] != w->ok) {
			fprintf(stderr,
				PROG ": writer %ld: %llu accepted, "
				     "%llu read\n",
				i, (unsigned long long)w->ok,
				(unsigned long long)st->read_by_writer[i]);
			bad++;
		}
		*ok += w->ok;
		*lost += w->lost;
		*refused += w->refused;
		if (w->unclaim_failed) {
			fprintf(stderr, PROG ": writer %ld: unclaim failed\n",
				i);
			bad++;
		}
	}
	if (st->lost != *lost) {
		fprintf(stderr,
			PROG ": %llu writes lost, overflow records "
			     "count %llu\n",
			(unsigned long long)*lost,
			(unsigned long long)st->lost);
		bad++;
	}
	if (*refused && !opt.close_early) {
		fprintf(stderr, PROG ": %llu writes refused without close\n",
			(unsigned long long)*refused);
		bad++;
	}
	return bad;
}

/* Every sleep on a ring (each ring of a group) ended in one wakeup. */
static uint64_t check_ring_wakeups(struct profbuf *b)
{
	struct profbuf_test_counters c;

	profbuf_test_counters(b, &c);
	if (c.sleeps == c.wakeups + c.withdrawn)
		return 0;
	fprintf(stderr, PROG ": %llu sleeps, %llu wakeups, %llu withdrawn\n",
		(unsigned long long)c.sleeps, (unsigned long long)c.wakeups,
		(unsigned long long)c.withdrawn);
	return 1;
}

static uint64_t check_wakeups(void)
{
	uint64_t bad = 0;

	if (!grp)
		return check_ring_wakeups(buf);
	for (size_t i = 0; i < profbuf_group_nrings(grp); i++)
		bad += check_ring_wakeups(profbuf_group_ring(grp, i));
	return bad;
}

static int setup(void)
{
	long nids = opt.writers * (opt.signals ? 2 : 1);
	uint32_t d0 = 0, t0 = 0;

	if (opt.writers < 1 || nids > CHECKREC_MAX_WRITERS ||
	    opt.bufwords < 16 || opt.max_stack < 0 ||
	    opt.max_stack > MAX_STACK) {
		fprintf(stderr, PROG ": bad --writers or --max-stack\n");
		return -1;
	}
	/* Records of at most half the ring always fit an empty ring. */
	if (opt.max_stack > opt.bufwords / 2 - 4)
		opt.max_stack = opt.bufwords / 2 - 4;
	if (opt.wrap) {
		d0 = 0u - 3u * (uint32_t)opt.bufwords - 5;
		t0 = (1u << 30) - 3u * (uint32_t)opt.tags - 3;
	}
	if (opt.group && opt.wrap) {
		fprintf(stderr, PROG ": --group does not take --wrap\n");
		return -1;
	}
	if (opt.owned && !opt.group) {
		fprintf(stderr, PROG ": --owned needs --group N\n");
		return -1;
	}
	writers = calloc((size_t)nids, sizeof(*writers));
	if (opt.group)
		grp = profbuf_group_new_owned(
			(size_t)opt.group, opt.owned ? (size_t)opt.writers : 0,
			2, (size_t)opt.bufwords, (size_t)opt.tags);
	else
		buf = profbuf_new_at(2, (size_t)opt.bufwords, (size_t)opt.tags,
				     d0, t0);
	if ((!buf && !grp) || !writers) {
		perror(PROG);
		return -1;
	}
	for (long i = 0; i < (grp ? opt.group : 1); i++) {
		if (profbuf_set_wake_watermark(
			    grp ? profbuf_group_ring(grp, (size_t)i) : buf,
			    (size_t)opt.watermark)) {
			fprintf(stderr, PROG ": bad --watermark\n");
			return -1;
		}
	}
	for (long i = 0; i < nids; i++) {
		writers[i].id = (uint32_t)i;
		writers[i].rng = (uint64_t)opt.seed * 1000003u + (uint64_t)i;
	}
	for (long i = 0; i < opt.writers && opt.signals; i++)
		writers[i].handler = &writers[opt.writers + i];
	return 0;
}

int main(int argc, char **argv)
{
	struct checkrec_state *st = calloc(1, sizeof(*st));
	struct sigaction sa = { .sa_handler = on_sigprof,
				.sa_flags = SA_RESTART };
	uint64_t rng = (uint64_t)opt.seed, reads = 0, start, elapsed;
	uint64_t ok, lost, refused, nested = 0, bad;
	long nids;
	char fields[512];

	stress_parse(argc, argv, PROG, flags);
	if (!st || setup())
		return 2;
	nids = opt.writers * (opt.signals ? 2 : 1);
	st->hdrsize = 2;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);

	start = stress_now_ns();
	for (long i = 0; i < opt.writers; i++)
		pthread_create(&writers[i].thread, NULL, writer_main,
			       &writers[i]);
	read_phase(st, start + (uint64_t)opt.seconds * 1000000000u, &rng,
		   &reads);
	if (opt.close_early) {
		do_close(); /* writers still running */
		read_all(st, 0, &rng, &reads);
		atomic_store(&stop, true);
		for (long i = 0; i < opt.writers; i++)
			pthread_join(writers[i].thread, NULL);
	} else {
		atomic_store(&stop, true);
		for (long i = 0; i < opt.writers; i++)
			pthread_join(writers[i].thread, NULL);
		do_close();
		read_all(st, 0, &rng, &reads);
	}
	elapsed = stress_now_ns() - start;

	bad = check_accounting(st, nids, &ok, &lost, &refused) +
	      check_wakeups();
	for (long i = 0; i < nids; i++)
		nested += writers[i].nested;
	snprintf(fields, sizeof(fields),
		 "writers=%ld group=%ld owned=%d signals=%d mode=%s "
		 "ring=%ld/%ld "
		 "watermark=%ld wrap=%d "
		 "close_early=%d seconds=%.1f ops=%llu verified=%llu "
		 "accepted=%llu lost=%llu "
		 "(%.1f%%) refused=%llu read=%llu overflow_records=%llu "
		 "reads=%llu nested=%llu rate=%.2fM/s",
		 opt.writers, opt.group, opt.owned, opt.signals, opt.mode,
		 opt.bufwords, opt.tags, opt.watermark, opt.wrap,
		 opt.close_early, (double)elapsed / 1e9,
		 (unsigned long long)(ok + lost + refused),
		 (unsigned long long)st->records, (unsigned long long)ok,
		 (unsigned long long)lost,
		 ok + lost ? 100.0 * (double)lost / (double)(ok + lost) : 0.0,
		 (unsigned long long)refused, (unsigned long long)st->records,
		 (unsigned long long)st->overflow_records,
		 (unsigned long long)reads, (unsigned long long)nested,
		 (double)st->records * 1e3 / (double)elapsed);
	bad += st->violations;
	free(st);
	free(writers);
	profbuf_free(buf);
	profbuf_group_free(grp);
	return stress_summary(PROG, fields, bad);
}
