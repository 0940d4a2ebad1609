// SPDX-License-Identifier: MIT
/*
 * profbuf/group_test.c - profbuf rings read as one
 * (<profring/profbuf_group.h>): threads get rings of their own, a signal
 * handler writes to its thread's ring, the merged read keeps each
 * writer's order and accounts for every write exactly (records read +
 * overflow counts = writes accepted + writes lost), a sleeping reader is
 * woken by a write to any ring with no wakeup lost or left over, a read's
 * room goes back at the next read, reads take the rings in turn, close
 * ends in EOF.
 */
#include <profring/profbuf_group.h>

#include "profbuf/profbuf_testing.h"
#include "testing/checkrec.h"
#include "testing/harness.h"
#include "testing/ktest.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HDR 2
#define NSTK_MAX 24

extern bool profbuf_group_test_no_waitv;

static struct profbuf_group *grp;
static _Atomic int handler_on;
static _Thread_local struct gw *tls_handler;

/* One writer id: a thread, or the signal handler of one. */
struct gw {
	uint32_t id;
	uint64_t seq, ok, lost;
	struct gw *handler;
	struct profbuf *ring; /* where it wrote (mine()) */
	bool moved; /* mine() changed between writes */
	int n;
};

static void gw_write(struct gw *w)
{
	uint64_t hdr[HDR];
	uintptr_t stk[NSTK_MAX];
	size_t n = (size_t)(w->seq % NSTK_MAX);
	struct profbuf *mine = profbuf_group_mine(grp);
	int rc;

	checkrec_fill(hdr, stk, w->id, w->seq, n);
	if (w->ring && w->ring != mine)
		w->moved = true;
	w->ring = mine;
	/* Half through the group call, half through the ring's own. */
	if (w->seq & 1)
		rc = profbuf_group_write(grp, (void *)(uintptr_t)(w->id + 1),
					 (int64_t)w->seq, hdr, HDR, stk, n);
	else
		rc = profbuf_write(mine, (void *)(uintptr_t)(w->id + 1),
				   (int64_t)w->seq, hdr, HDR, stk, n);
	w->seq++;
	if (rc == 0)
		w->ok++;
	else if (rc == -ENOSPC)
		w->lost++;
}

static void on_alarm(int sig)
{
	struct gw *h = tls_handler;
	int saved = errno;

	(void)sig;
	if (h && atomic_load_explicit(&handler_on, memory_order_relaxed))
		gw_write(h);
	errno = saved;
}

/* A writer thread; with a handler, SIGALRM from its own timer. */
static void *writer_main(void *arg)
{
	struct gw *w = arg;
	struct stress_timer timer = { 0 };

	tls_handler = w->handler;
	if (w->handler)
		KT_CHECK_EQ(stress_timer_start(&timer, SIGALRM, 20000, false),
			    0);
	for (int i = 0; i < w->n; i++)
		gw_write(w);
	stress_timer_stop(&timer);
	tls_handler = NULL;
	return NULL;
}

/* Read until EOF (blocking, or timed reads), checking every record. */
static void drain(struct checkrec_state *st, bool timed)
{
	struct profbuf_read r;
	int rc;

	for (;;) {
		if (timed)
			rc = profbuf_group_read_timeout(grp, 1000000, &r);
		else
			rc = profbuf_group_read(grp, PROFBUF_BLOCKING, &r);
		if (rc == -ETIMEDOUT)
			continue;
		KT_CHECK_EQ(rc, 0);
		if (rc || r.eof)
			return;
		checkrec_read(st, &r);
	}
}

struct reader_arg {
	struct checkrec_state *st;
	bool timed;
};

static void *reader_main(void *arg)
{
	struct reader_arg *ra = arg;

	drain(ra->st, ra->timed);
	return NULL;
}

/* Every ring: every sleep ended by one wakeup or withdrawn. */
static void check_wakeups(void)
{
	uint64_t sleeps = 0;

	for (size_t i = 0; i < profbuf_group_nrings(grp); i++) {
		struct profbuf_test_counters c;

		profbuf_test_counters(profbuf_group_ring(grp, i), &c);
		KT_CHECK_EQ(c.sleeps, c.wakeups + c.withdrawn);
		sleeps += c.sleeps;
	}
	printf("  reader sleeps %llu\n", (unsigned long long)sleeps);
}

/*
 * run_writers() - @nw writer threads (with signal handlers writing too
 * when @signals) into a group of @nrings small rings, one reader thread;
 * then the books: per writer, records read == writes accepted, and the
 * overflow counts == writes lost, in each writer's order.
 */
static void run_writers(size_t nrings, int nw, bool signals, bool timed,
			size_t bufwords)
{
	struct checkrec_state *st = calloc(1, sizeof(*st));
	struct gw *w = calloc((size_t)nw * 2, sizeof(*w));
	pthread_t *t = calloc((size_t)nw, sizeof(*t)), rt;
	struct reader_arg ra = { st, timed };
	struct sigaction sa = { .sa_handler = on_alarm,
				.sa_flags = SA_RESTART };
	uint64_t ok = 0, lost = 0, nested = 0;

	KT_REQUIRE(st && w && t);
	grp = profbuf_group_new(nrings, HDR, bufwords, 64);
	KT_REQUIRE(grp);
	st->hdrsize = HDR;
	for (int i = 0; i < nw * 2; i++) {
		w[i].id = (uint32_t)i;
		w[i].n = 20000;
	}
	for (int i = 0; i < nw && signals; i++)
		w[i].handler = &w[nw + i];
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	pthread_create(&rt, NULL, reader_main, &ra);
	atomic_store(&handler_on, signals);
	for (int i = 0; i < nw; i++)
		pthread_create(&t[i], NULL, writer_main, &w[i]);
	for (int i = 0; i < nw; i++)
		pthread_join(t[i], NULL);
	atomic_store(&handler_on, 0);
	KT_CHECK_EQ(profbuf_group_close(grp), 0);
	pthread_join(rt, NULL);
	for (int i = 0; i < nw * 2; i++) {
		KT_CHECK_EQ(st->read_by_writer[i], w[i].ok);
		KT_CHECK(!w[i].moved);
		ok += w[i].ok;
		lost += w[i].lost;
	}
	for (int i = 0; i < nw && signals; i++) {
		KT_CHECK(!w[nw + i].ring || w[nw + i].ring == w[i].ring);
		nested += w[nw + i].seq;
	}
	KT_CHECK_EQ(st->lost, lost);
	KT_CHECK_EQ(st->records, ok);
	KT_CHECK_EQ(st->violations, 0);
	check_wakeups();
	printf("  %d writers, %zu rings: %llu read, %llu lost, %llu overflow "
	       "records, %llu written by handlers\n",
	       nw, nrings, (unsigned long long)ok, (unsigned long long)lost,
	       (unsigned long long)st->overflow_records,
	       (unsigned long long)nested);
	profbuf_group_free(grp);
	grp = NULL;
	free(st);
	free(w);
	free(t);
}

/* Four threads, four rings, a small ring each: losses, all counted. */
static void many_writers_exact(void)
{
	run_writers(4, 4, false, false, 512);
}

/* More threads than rings: they share, and nothing changes. */
static void shared_rings_exact(void)
{
	run_writers(2, 5, false, true, 1024);
}

/* Signal handlers write on top of their threads, to the same ring. */
static void nested_handlers_exact(void)
{
	run_writers(3, 3, true, false, 1024);
}

/* No futex_waitv: the reader polls, and still misses nothing. */
static void without_waitv_exact(void)
{
	profbuf_group_test_no_waitv = true;
	run_writers(3, 3, false, false, 512);
	profbuf_group_test_no_waitv = false;
}

/*
 * The child of refused_waitv_polls(): futex_waitv refused with EPERM by a
 * seccomp filter, as container runtimes' default profiles refuse calls
 * they do not know.  Exit 0 if an empty group's 300 ms timed read timed
 * out having used less than a third of that in CPU (it polled), 1 if
 * not (it spun), 2 if the filter could not be installed.
 */
static int refused_waitv_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 449 /* futex_waitv */, 0,
			 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = f };
	struct profbuf_group *g = profbuf_group_new(2, HDR, 256, 16);
	struct profbuf_read r;
	struct timespec a, b;
	int64_t cpu_ns;
	int rc;

	if (!g || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 2;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	rc = profbuf_group_read_timeout(g, 300000000, &r);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	cpu_ns = (b.tv_sec - a.tv_sec) * 1000000000ll + b.tv_nsec - a.tv_nsec;
	return rc == -ETIMEDOUT && cpu_ns < 100000000 ? 0 : 1;
}

/* futex_waitv refused (EPERM), not missing: the reader polls, not spins. */
static void refused_waitv_polls(void)
{
	int status = 0;
	pid_t pid = fork();

	KT_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(refused_waitv_child());
	KT_REQUIRE(waitpid(pid, &status, 0) == pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
		KT_SKIP("no seccomp filter here");
	KT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

struct ring_probe {
	struct profbuf_group *g;
	struct profbuf *ring[2];
};

static void *probe_main(void *arg)
{
	struct ring_probe *p = arg;

	p->ring[0] = profbuf_group_mine(p->g);
	p->ring[1] = profbuf_group_mine(p->g);
	return NULL;
}

/* The first N threads to write get N different rings, each for good. */
static void threads_get_their_own_rings(void)
{
	struct profbuf_group *g = profbuf_group_new(4, HDR, 256, 16);
	struct ring_probe p[4];
	pthread_t t[4];

	KT_REQUIRE(g);
	for (int i = 0; i < 4; i++) {
		p[i].g = g;
		pthread_create(&t[i], NULL, probe_main, &p[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		KT_CHECK(p[i].ring[0] && p[i].ring[0] == p[i].ring[1]);
		for (int j = 0; j < i; j++)
			KT_CHECK(p[i].ring[0] != p[j].ring[0]);
	}
	profbuf_group_free(g);
}

static int put(struct profbuf_group *g, size_t ring, uint64_t mark)
{
	uint64_t hdr[HDR] = { mark, 0 };
	uintptr_t pc = 7;

	return profbuf_write(profbuf_group_ring(g, ring), NULL, 0, hdr, HDR,
			     &pc, 1);
}

/* The rings a read's records came from, by header mark: ring + 1. */
static uint64_t mark_of(const struct profbuf_read *r)
{
	return r->ndata ? r->data[2] : 0;
}

struct wake_arg {
	struct profbuf_group *g;
	size_t ring;
};

static void *late_writer(void *arg)
{
	struct wake_arg *wa = arg;
	struct timespec ts = { 0, 20000000 };

	nanosleep(&ts, NULL);
	put(wa->g, wa->ring, wa->ring + 1);
	return NULL;
}

/*
 * A reader asleep on an empty group is woken by one write to any ring,
 * each ring in turn; every sleep ends in one wakeup or a withdrawal.
 */
static void write_to_any_ring_wakes(void)
{
	struct profbuf_group *g = profbuf_group_new(5, HDR, 256, 16);
	struct profbuf_read r;
	struct wake_arg wa;
	pthread_t t;

	KT_REQUIRE(g);
	grp = g;
	for (size_t i = 0; i < 5; i++) {
		wa = (struct wake_arg){ g, (i * 3) % 5 };
		pthread_create(&t, NULL, late_writer, &wa);
		KT_CHECK_EQ(profbuf_group_read_timeout(g, 10000000000u, &r), 0);
		KT_CHECK_EQ(r.ntags, 1);
		KT_CHECK_EQ(mark_of(&r), wa.ring + 1);
		KT_CHECK_EQ(profbuf_group_last_ring(g), wa.ring);
		pthread_join(t, NULL);
	}
	KT_CHECK_EQ(profbuf_group_read_timeout(g, 5000000, &r), -ETIMEDOUT);
	KT_CHECK_EQ(r.ndata, 0);
	check_wakeups();
	grp = NULL;
	profbuf_group_free(g);
}

/* Reads visit the rings in turn: a busy ring does not starve the rest. */
static void reads_take_turns(void)
{
	struct profbuf_group *g = profbuf_group_new(3, HDR, 256, 16);
	struct profbuf_read r;
	uint64_t seen[4] = { 0 };

	KT_REQUIRE(g);
	for (int k = 0; k < 4; k++)
		for (size_t i = 0; i < 3; i++)
			KT_CHECK_EQ(put(g, i, i + 1), 0);
	for (int k = 0; k < 3; k++) {
		KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r), 0);
		KT_CHECK_EQ(r.ntags, 4);
		seen[mark_of(&r)]++;
		/* The ring just read gets more: it still waits its turn. */
		KT_CHECK_EQ(put(g, profbuf_group_last_ring(g),
				profbuf_group_last_ring(g) + 1),
			    0);
	}
	KT_CHECK_EQ(seen[1] + seen[2] + seen[3], 3);
	KT_CHECK(seen[1] == 1 && seen[2] == 1 && seen[3] == 1);
	profbuf_group_free(g);
}

/*
 * A full ring's run is given back at the next group read, even when that
 * read returns another ring's records.
 */
static void room_comes_back_at_the_next_read(void)
{
	struct profbuf_group *g = profbuf_group_new(2, HDR, 64, 64);
	struct profbuf_read r;
	int n = 0;

	KT_REQUIRE(g);
	while (put(g, 0, 1) == 0)
		n++;
	KT_CHECK(n > 0);
	KT_CHECK_EQ(put(g, 1, 2), 0);
	/* The first read starts at ring 0. */
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK_EQ(profbuf_group_last_ring(g), 0);
	KT_CHECK_EQ(r.ntags, (size_t)n);
	KT_CHECK_EQ(mark_of(&r), 1);
	/* Ring 0's run is out: ring 0 is still full until the next read. */
	KT_CHECK_EQ(put(g, 0, 1), -ENOSPC);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK_EQ(profbuf_group_last_ring(g), 1);
	KT_CHECK_EQ(mark_of(&r), 2);
	/* That read returned ring 1 and gave ring 0's room back. */
	KT_CHECK_EQ(put(g, 0, 1), 0);
	profbuf_group_free(g);
}

/* Close: writes refused, everything accepted read, then EOF for good. */
static void close_then_eof(void)
{
	struct profbuf_group *g = profbuf_group_new(3, HDR, 256, 16);
	struct checkrec_state *st = calloc(1, sizeof(*st));
	struct profbuf_read r;
	uint64_t n = 0;

	KT_REQUIRE(g && st);
	st->hdrsize = HDR;
	for (size_t i = 0; i < 3; i++)
		KT_CHECK_EQ(put(g, i, i + 1), 0);
	KT_CHECK_EQ(profbuf_group_close(g), 0);
	KT_CHECK_EQ(profbuf_group_close(g), -EALREADY);
	KT_CHECK_EQ(put(g, 1, 2), -ESHUTDOWN);
	KT_CHECK_EQ(profbuf_group_write(g, NULL, 0, (uint64_t[]){ 1, 0 }, HDR,
					NULL, 0),
		    -ESHUTDOWN);
	for (;;) {
		KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_BLOCKING, &r), 0);
		if (r.eof)
			break;
		n += r.ntags;
	}
	KT_CHECK_EQ(n, 3);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.eof);
	KT_CHECK_EQ(profbuf_group_read_timeout(g, 1000, &r), 0);
	KT_CHECK(r.eof);
	free(st);
	profbuf_group_free(g);
}

static void bad_arguments(void)
{
	struct profbuf_group *g;
	struct profbuf_read r;

	errno = 0;
	KT_CHECK(!profbuf_group_new(0, HDR, 256, 16));
	KT_CHECK_EQ(errno, EINVAL);
	KT_CHECK(!profbuf_group_new(PROFBUF_GROUP_MAX_RINGS + 1, HDR, 256, 16));
	KT_CHECK(!profbuf_group_new(2, 0, 256, 16));
	KT_CHECK_EQ(errno, EINVAL);
	g = profbuf_group_new(1, HDR, 256, 16);
	KT_REQUIRE(g);
	KT_CHECK_EQ(profbuf_group_read(g, (enum profbuf_mode)7, &r), -EINVAL);
	KT_CHECK_EQ(profbuf_group_read(NULL, PROFBUF_NONBLOCKING, &r), -EINVAL);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, NULL), -EINVAL);
	KT_CHECK_EQ(profbuf_group_write(NULL, NULL, 0, (uint64_t[]){ 1, 0 },
					HDR, NULL, 0),
		    -EINVAL);
	KT_CHECK_EQ(profbuf_group_close(NULL), -EINVAL);
	KT_CHECK(!profbuf_group_mine(NULL));
	KT_CHECK(!profbuf_group_ring(g, 1));
	KT_CHECK(profbuf_group_mine(g) == profbuf_group_ring(g, 0));
	KT_CHECK_EQ(profbuf_group_nrings(g), 1);
	KT_CHECK_EQ(profbuf_group_read(g, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(!r.eof && !r.ndata);
	profbuf_group_free(g);
	profbuf_group_free(NULL);
}

int main(void)
{
	KT_RUN(bad_arguments);
	KT_RUN(threads_get_their_own_rings);
	KT_RUN(reads_take_turns);
	KT_RUN(room_comes_back_at_the_next_read);
	KT_RUN(close_then_eof);
	KT_RUN(write_to_any_ring_wakes);
	KT_RUN(many_writers_exact);
	KT_RUN(shared_rings_exact);
	KT_RUN(nested_handlers_exact);
	KT_RUN(without_waitv_exact);
	KT_RUN(refused_waitv_polls);
	return ktest_exit();
}
