// SPDX-License-Identifier: MIT
/*
 * profbuf_resv_test.c - records written in place: profbuf_reserve() and
 * profbuf_commit().  Exact contents and accounting, shorter commits
 * (given back, or padding the reader steps over), nesting in a real
 * signal handler, wrap-around, overflow, close racing a reservation,
 * concurrent writers, the library path, and a shared buffer whose
 * reserving process dies.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <profring/profbuf.h>

#include "testing/ktest.h"
#include "testing/checkrec.h"

#define HDR 2
#define U64S(...) ((const uint64_t[]){ __VA_ARGS__ })

/* Reserve @nstk, fill @n of them with checkrec words, commit @n. */
static int put(struct profbuf *b, uint32_t writer, uint64_t seq, size_t nstk,
	       size_t n)
{
	uint64_t hdr[HDR];
	uintptr_t dummy[1];
	struct profbuf_resv rv;
	int rc;

	checkrec_fill(hdr, dummy, writer, seq, 0);
	rc = profbuf_reserve(b, (void *)(uintptr_t)(writer + 1), (int64_t)seq,
			     hdr, HDR, nstk, &rv);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		rv.stk[i] = (uintptr_t)checkrec_word(writer, seq, i);
	return profbuf_commit(&rv, n);
}

/* Read everything there is now (non-blocking); @reads counts non-empty. */
static void drain_now(struct profbuf *b, struct checkrec_state *st, int *reads)
{
	struct profbuf_read r;

	for (;;) {
		KT_REQUIRE(profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0);
		if (!r.ndata)
			return;
		if (reads)
			(*reads)++;
		checkrec_read(st, &r);
	}
}

static struct checkrec_state *new_state(void)
{
	struct checkrec_state *st = calloc(1, sizeof(*st));

	if (st)
		st->hdrsize = HDR;
	return st;
}

/* Reserve, fill in place, commit: the record reads back exactly. */
static void reserve_commit_basic(void)
{
	struct profbuf *b = profbuf_new(HDR, 256, 16);
	struct checkrec_state *st = new_state();
	struct profbuf_read r;
	struct profbuf_iter it;
	struct profbuf_record rec;
	struct profbuf_resv rv;
	uint64_t hdr[1] = { 9 };

	KT_REQUIRE(b && st);
	KT_CHECK_EQ(put(b, 0, 0, 5, 5), 0);
	KT_CHECK_EQ(put(b, 0, 1, 0, 0), 0);
	/* a one-word header, zero-padded */
	KT_REQUIRE(profbuf_reserve(b, NULL, 77, hdr, 1, 2, &rv) == 0);
	KT_CHECK_EQ(rv.nstk, 2);
	rv.stk[0] = 5;
	rv.stk[1] = 6;
	KT_CHECK_EQ(profbuf_commit(&rv, 2), 0);
	KT_REQUIRE(profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0);
	KT_CHECK_EQ(r.ntags, 3);
	profbuf_iter_init(&it, &r, HDR);
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK_EQ(rec.nstk, 5);
	KT_CHECK_EQ(rec.stk[4], checkrec_word(0, 0, 4));
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK_EQ(rec.nstk, 0);
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK_EQ(rec.time, 77);
	KT_CHECK(rec.hdr[0] == 9 && rec.hdr[1] == 0);
	KT_CHECK(rec.nstk == 2 && rec.stk[0] == 5 && rec.stk[1] == 6);
	KT_CHECK(!profbuf_iter_next(&it, &rec) && !profbuf_iter_malformed(&it));
	free(st);
	profbuf_free(b);
}

/*
 * Misuse: a bad header or size is refused and counts nothing; a spent
 * reservation, or a commit longer than reserved, is -EINVAL (the latter
 * commits all the slots).
 */
static void reserve_errors(void)
{
	struct profbuf *b = profbuf_new(HDR, 64, 8);
	struct checkrec_state *st = new_state();
	uint64_t hdr[HDR] = { 1, 0 }, zero[HDR] = { 0, 0 };
	struct profbuf_resv rv;

	KT_REQUIRE(b && st);
	KT_CHECK_EQ(profbuf_reserve(NULL, NULL, 0, hdr, 1, 1, &rv), -EINVAL);
	KT_CHECK(rv.stk == NULL);
	KT_CHECK_EQ(profbuf_reserve(b, NULL, 0, zero, HDR, 1, &rv), -EINVAL);
	KT_CHECK_EQ(profbuf_reserve(b, NULL, 0, hdr, 0, 1, &rv), -EINVAL);
	KT_CHECK_EQ(profbuf_reserve(b, NULL, 0, U64S(1, 2, 3), HDR + 1, 1, &rv),
		    -EINVAL);
	KT_CHECK_EQ(profbuf_reserve(b, NULL, 0, hdr, 1, 64, &rv), -EINVAL);
	KT_CHECK_EQ(profbuf_reserve(b, NULL, 0, hdr, 1, 1, NULL), -EINVAL);
	KT_CHECK_EQ(profbuf_commit(NULL, 0), -EINVAL);
	KT_CHECK_EQ((profbuf_commit)(NULL, 0), -EINVAL);
	hdr[0] = 1; /* checkrec's writer 0, seq 0 */
	KT_REQUIRE(profbuf_reserve(b, (void *)1, 0, hdr, HDR, 3, &rv) == 0);
	for (size_t i = 0; i < 3; i++)
		rv.stk[i] = (uintptr_t)checkrec_word(0, 0, i);
	KT_CHECK_EQ(profbuf_commit(&rv, 4), -EINVAL); /* committed with 3 */
	KT_CHECK_EQ(put(b, 0, 1, 1, 1), 0);
	rv = (struct profbuf_resv){ 0 };
	KT_CHECK_EQ(profbuf_commit(&rv, 0), -EINVAL); /* never reserved */
	KT_REQUIRE(profbuf_reserve(b, (void *)1, 2, U64S(1, 2), HDR, 1, &rv) ==
		   0);
	rv.stk[0] = (uintptr_t)checkrec_word(0, 2, 0);
	KT_CHECK_EQ(profbuf_commit(&rv, 1), 0);
	KT_CHECK_EQ(profbuf_commit(&rv, 1), -EINVAL); /* spent */
	KT_CHECK_EQ((profbuf_commit)(&rv, 0), -EINVAL);
	drain_now(b, st, NULL);
	/* the over-long commit's record, whole, and the two after it */
	KT_CHECK_EQ(st->records, 3);
	KT_CHECK_EQ(st->violations, 0);
	KT_CHECK_EQ(st->lost, 0);
	free(st);
	profbuf_free(b);
}

/*
 * A shorter commit with nobody after it gives the rest back: the next
 * record follows it directly, in the same read.
 */
static void shorter_commit_gives_back(void)
{
	struct profbuf *b = profbuf_new(HDR, 256, 16);
	struct checkrec_state *st = new_state();
	struct profbuf_read r;
	int reads = 0;

	KT_REQUIRE(b && st);
	KT_CHECK_EQ(put(b, 0, 0, 40, 3), 0);
	KT_CHECK_EQ(put(b, 0, 1, 40, 0), 0);
	KT_CHECK_EQ(put(b, 0, 2, 4, 4), 0);
	KT_REQUIRE(profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0);
	KT_CHECK_EQ(r.ntags, 3);
	KT_CHECK_EQ(r.ndata, (2 + HDR + 3) + (2 + HDR) + (2 + HDR + 4));
	checkrec_read(st, &r);
	drain_now(b, st, &reads);
	KT_CHECK_EQ(reads, 0);
	KT_CHECK_EQ(st->records, 3);
	KT_CHECK_EQ(st->violations, 0);
	free(st);
	profbuf_free(b);
}

/*
 * A shorter commit after another reservation cannot give back: the
 * rest is padding, stepped over by the reader (its run ends there).
 * Library path and inline path alike.
 */
static void shorter_commit_pads(void)
{
	struct profbuf *b = profbuf_new(HDR, 256, 16);
	struct checkrec_state *st = new_state();
	struct profbuf_resv outer, lib;
	uint64_t hdr[HDR] = { 1, 0 }, hdr1[HDR] = { 1, 1 };
	int reads = 0;

	KT_REQUIRE(b && st);
	KT_REQUIRE(profbuf_reserve(b, (void *)1, 0, hdr, HDR, 30, &outer) == 0);
	KT_REQUIRE((profbuf_reserve)(b, (void *)1, 1, hdr1, HDR, 20, &lib) ==
		   0);
	for (int i = 0; i < 20; i++)
		lib.stk[i] = (uintptr_t)checkrec_word(0, 1, (size_t)i);
	KT_CHECK_EQ(put(b, 0, 2, 10, 2), 0);
	for (int i = 0; i < 2; i++)
		outer.stk[i] = (uintptr_t)checkrec_word(0, 0, (size_t)i);
	KT_CHECK_EQ(profbuf_commit(&outer, 2), 0);
	KT_CHECK_EQ((profbuf_commit)(&lib, 5), 0);
	KT_CHECK_EQ(put(b, 0, 3, 6, 6), 0);
	drain_now(b, st, &reads);
	KT_CHECK_EQ(st->records, 4);
	KT_CHECK_EQ(st->violations, 0);
	/* outer | lib (padded) | seq 2 (padded, then given back) seq 3 */
	KT_CHECK_EQ(reads, 3);
	free(st);
	profbuf_free(b);
}

/* ---- nesting in a real signal handler ------------------------------- */

static struct profbuf *sig_buf;
static uint64_t sig_seq;
static _Atomic int sig_rc;

static void nested_handler(int sig)
{
	int saved = errno;

	(void)sig;
	/* a write and a shorter in-place record, nested in the caller's */
	atomic_store(&sig_rc, put(sig_buf, 1, sig_seq, 12, 7) |
				      put(sig_buf, 1, sig_seq + 1, 3, 3));
	sig_seq += 2;
	errno = saved;
}

/*
 * A handler reserves and commits between its thread's reserve and
 * commit, at every offset into a small ring (wrapping it many times):
 * everything reads back exactly, in reservation order per writer.
 */
static void nested_in_handler(void)
{
	struct sigaction sa = { .sa_handler = nested_handler };
	struct checkrec_state *st = new_state();
	uint64_t hdr[HDR], outer = 0;
	uintptr_t dummy[1];
	struct profbuf_resv rv;

	KT_REQUIRE(st);
	sig_buf = profbuf_new(HDR, 512, 64);
	KT_REQUIRE(sig_buf);
	sigemptyset(&sa.sa_mask);
	KT_REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	for (int i = 0; i < 3000; i++) {
		size_t want = 2 + (size_t)i % 37, n = want - (size_t)i % 3;

		checkrec_fill(hdr, dummy, 0, outer, 0);
		KT_REQUIRE(profbuf_reserve(sig_buf, (void *)1, (int64_t)outer,
					   hdr, HDR, want, &rv) == 0);
		for (size_t k = 0; k < n; k++)
			rv.stk[k] = (uintptr_t)checkrec_word(0, outer, k);
		raise(SIGUSR1);
		KT_CHECK_EQ(atomic_load(&sig_rc), 0);
		KT_CHECK_EQ(profbuf_commit(&rv, n), 0);
		outer++;
		drain_now(sig_buf, st, NULL);
	}
	signal(SIGUSR1, SIG_DFL);
	KT_CHECK_EQ(st->violations, 0);
	KT_CHECK_EQ(st->records, outer + sig_seq);
	KT_CHECK_EQ(st->read_by_writer[0], outer);
	KT_CHECK_EQ(st->lost, 0);
	free(st);
	profbuf_free(sig_buf);
}

/* ---- overflow, wrap-around, close ------------------------------------ */

/*
 * A small ring, reservations of random sizes and shorter commits, reads
 * now and then: every reservation that found no room is counted lost in
 * an overflow record (emitted by a later reservation or the reader),
 * exactly: records read + losses = reservations that returned 0 or
 * -ENOSPC.
 */
static void wrap_and_overflow_exact(void)
{
	struct profbuf *b = profbuf_new(HDR, 256, 16);
	struct checkrec_state *st = new_state();
	uint64_t ok = 0, nospc = 0, seed = 12345;
	struct profbuf_read r;

	KT_REQUIRE(b && st);
	for (uint64_t seq = 0; seq < 200000; seq++) {
		size_t want, n;
		int rc;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		want = (size_t)(seed >> 33) % 60;
		n = want ? (size_t)(seed >> 20) % (want + 1) : 0;
		rc = put(b, 0, seq, want, n);
		KT_REQUIRE(rc == 0 || rc == -ENOSPC);
		ok += rc == 0;
		nospc += rc == -ENOSPC;
		if ((seed >> 50) % 5 == 0 &&
		    profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0)
			checkrec_read(st, &r);
	}
	profbuf_close(b);
	do {
		KT_REQUIRE(profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0);
		checkrec_read(st, &r);
	} while (!r.eof);
	printf("  %llu written in place, %llu lost, %llu overflow records\n",
	       (unsigned long long)ok, (unsigned long long)nospc,
	       (unsigned long long)st->overflow_records);
	KT_CHECK_EQ(st->violations, 0);
	KT_CHECK_EQ(st->records, ok);
	KT_CHECK_EQ(st->lost, nospc);
	KT_CHECK(nospc > 0 && st->overflow_records > 0);
	free(st);
	profbuf_free(b);
}

/*
 * Close while a reservation is held: the reader waits for it before EOF;
 * a reservation after close is refused and counts nothing.
 */
static void close_racing_reservation(void)
{
	struct profbuf *b = profbuf_new(HDR, 256, 16);
	struct checkrec_state *st = new_state();
	uint64_t hdr[HDR] = { 1, 0 };
	struct profbuf_read r;
	struct profbuf_resv rv, late;

	KT_REQUIRE(b && st);
	KT_REQUIRE(profbuf_reserve(b, (void *)1, 0, hdr, HDR, 8, &rv) == 0);
	KT_CHECK_EQ(profbuf_close(b), 0);
	KT_CHECK_EQ(profbuf_reserve(b, (void *)1, 1, hdr, HDR, 8, &late),
		    -ESHUTDOWN);
	KT_CHECK_EQ(profbuf_read_timeout(b, 20000000, &r), -ETIMEDOUT);
	rv.stk[0] = (uintptr_t)checkrec_word(0, 0, 0);
	KT_CHECK_EQ(profbuf_commit(&rv, 1), 0);
	KT_REQUIRE(profbuf_read(b, PROFBUF_BLOCKING, &r) == 0);
	KT_CHECK(!r.eof && r.ntags == 1);
	checkrec_read(st, &r);
	KT_REQUIRE(profbuf_read(b, PROFBUF_BLOCKING, &r) == 0);
	KT_CHECK(r.eof);
	KT_CHECK_EQ(st->records, 1);
	KT_CHECK_EQ(st->violations, 0);
	free(st);
	profbuf_free(b);
}

/* ---- concurrent writers ----------------------------------------------- */

struct cw {
	struct profbuf *b;
	uint32_t id;
	uint64_t ok, lost;
};

static _Atomic int cw_done;

static void *cw_main(void *arg)
{
	struct cw *c = arg;
	uint64_t seed = c->id + 1;

	for (uint64_t seq = 0; seq < 100000; seq++) {
		size_t want, n;
		int rc;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		want = (size_t)(seed >> 33) % 40;
		n = want ? (size_t)(seed >> 20) % (want + 1) : 0;
		rc = put(c->b, c->id, seq, want, n);
		if (rc == 0)
			c->ok++;
		else if (rc == -ENOSPC)
			c->lost++;
		else
			c->lost = UINT64_MAX / 2;
	}
	atomic_fetch_add(&cw_done, 1);
	return NULL;
}

/*
 * Two writers reserving and committing short into one small ring while a
 * reader drains it: padding and give-backs interleave; exact.
 */
static void concurrent_writers_exact(void)
{
	struct profbuf *b = profbuf_new(HDR, 1024, 64);
	struct checkrec_state *st = new_state();
	struct cw c[2] = { { b, 0, 0, 0 }, { b, 1, 0, 0 } };
	pthread_t th[2];
	struct profbuf_read r;

	KT_REQUIRE(b && st);
	atomic_store(&cw_done, 0);
	for (int i = 0; i < 2; i++)
		KT_REQUIRE(pthread_create(&th[i], NULL, cw_main, &c[i]) == 0);
	while (atomic_load(&cw_done) < 2) {
		int rc = profbuf_read_timeout(b, 1000000, &r);

		KT_REQUIRE(rc == 0 || rc == -ETIMEDOUT);
		if (!rc)
			checkrec_read(st, &r);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	profbuf_close(b);
	do {
		KT_REQUIRE(profbuf_read(b, PROFBUF_BLOCKING, &r) == 0);
		checkrec_read(st, &r);
	} while (!r.eof);
	KT_CHECK_EQ(st->violations, 0);
	KT_CHECK_EQ(st->records, c[0].ok + c[1].ok);
	KT_CHECK_EQ(st->lost, c[0].lost + c[1].lost);
	KT_CHECK_EQ(st->read_by_writer[0], c[0].ok);
	free(st);
	profbuf_free(b);
}

/* ---- shared buffers: a reserving process dies ------------------------- */

#define SH_WORDS 1024
#define SH_TAGS 64

struct sh_area {
	_Atomic int reserved;
	_Atomic int go;
	char pad[56];
};

/*
 * The child reserves, says so, waits for the parent's record behind its
 * own, then either commits short (padding, across processes) and exits,
 * or is killed holding the reservation.
 */
static void sh_child(struct profbuf *b, struct sh_area *a, bool commit)
{
	uint64_t hdr[HDR];
	uintptr_t dummy[1];
	struct profbuf_resv rv;

	checkrec_fill(hdr, dummy, 1, 0, 0);
	if (profbuf_reserve(b, (void *)2, 0, hdr, HDR, 40, &rv))
		_exit(1);
	for (int i = 0; i < 3; i++)
		rv.stk[i] = (uintptr_t)checkrec_word(1, 0, (size_t)i);
	atomic_store(&a->reserved, 1);
	while (!atomic_load(&a->go))
		usleep(1000);
	if (commit)
		profbuf_commit(&rv, 3);
	else
		pause(); /* killed holding it */
	_exit(0);
}

static void shared_child(bool commit)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = profbuf_shared_size(HDR, SH_WORDS, SH_TAGS);
	char *m = mmap(NULL, page + size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct checkrec_state *st = new_state();
	struct sh_area *a = (struct sh_area *)m;
	struct profbuf_stats ps;
	struct profbuf_read r;
	struct profbuf *b;
	pid_t pid;
	int rc;

	KT_REQUIRE(m != MAP_FAILED && st);
	b = profbuf_shared_init(m + page, size, HDR, SH_WORDS, SH_TAGS);
	KT_REQUIRE(b);
	pid = fork();
	KT_REQUIRE(pid >= 0);
	if (pid == 0)
		sh_child(b, a, commit);
	for (int i = 0; i < 5000 && !atomic_load(&a->reserved); i++)
		usleep(1000);
	KT_REQUIRE(atomic_load(&a->reserved));
	KT_CHECK_EQ(put(b, 0, 0, 20, 5), 0); /* behind the child's */
	atomic_store(&a->go, 1);
	if (!commit) {
		usleep(10000);
		kill(pid, SIGKILL);
	}
	waitpid(pid, NULL, 0);
	KT_CHECK_EQ(put(b, 0, 1, 4, 4), 0);
	profbuf_close(b);
	for (int i = 0; i < 500; i++) {
		rc = profbuf_read_timeout(b, 10000000, &r);
		if (rc == -ETIMEDOUT)
			continue;
		KT_REQUIRE(rc == 0);
		if (r.eof)
			break;
		checkrec_read(st, &r);
	}
	KT_CHECK(r.eof);
	KT_CHECK_EQ(st->violations, 0);
	KT_CHECK_EQ(st->read_by_writer[0], 2);
	KT_CHECK_EQ(st->read_by_writer[1], commit ? 1 : 0);
	KT_CHECK_EQ(st->lost, commit ? 0 : 1);
	KT_CHECK_EQ(profbuf_stats(b, &ps), 0);
	KT_CHECK_EQ(ps.dead_skipped, commit ? 0 : 1);
	free(st);
	munmap(m, page + size);
}

static void shared_shorter_commit_across_processes(void)
{
	if (TESTING_UNDER_TSAN)
		KT_SKIP("TSan does not follow writes from other processes");
	shared_child(true);
}

static void shared_reserving_process_killed(void)
{
	if (TESTING_UNDER_TSAN)
		KT_SKIP("TSan does not follow writes from other processes");
	shared_child(false);
}

int main(void)
{
	KT_RUN(reserve_commit_basic);
	KT_RUN(reserve_errors);
	KT_RUN(shorter_commit_gives_back);
	KT_RUN(shorter_commit_pads);
	KT_RUN(nested_in_handler);
	KT_RUN(wrap_and_overflow_exact);
	KT_RUN(close_racing_reservation);
	KT_RUN(concurrent_writers_exact);
	KT_RUN(shared_shorter_commit_across_processes);
	KT_RUN(shared_reserving_process_killed);
	return ktest_exit();
}
