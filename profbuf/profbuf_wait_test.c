// SPDX-License-Identifier: MIT
/*
 * profbuf/profbuf_wait_test.c - profbuf_write_wait(): a writer that may
 * wait loses nothing to a slow reader; writers that cannot wait (a signal
 * handler nested on the waiting thread) go on and are counted; a write
 * with no reader at all ends at its timeout, counted lost; a closed
 * buffer refuses at once.
 */
#include <profring/profbuf.h>

#include "testing/ktest.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HDR 1
#define WAIT_NS 2000000000u

static _Atomic int writing;
static _Atomic uint64_t nested_tried;
static struct profbuf *nested_buf;

struct counts {
	uint64_t records, lost, marked; /* marked: hdr[0] == 2, the nested */
};

static void take(const struct profbuf_read *r, struct counts *c)
{
	struct profbuf_iter it;
	struct profbuf_record rec;

	profbuf_iter_init(&it, r, HDR);
	while (profbuf_iter_next(&it, &rec)) {
		if (profbuf_record_is_overflow(&rec)) {
			c->lost += profbuf_record_overflow_count(&rec);
			continue;
		}
		c->records++;
		c->marked += rec.hdr[0] == 2;
	}
}

/* Read slowly until EOF: the writers must wait for room. */
static void slow_drain(struct profbuf *b, struct counts *c)
{
	struct profbuf_read r;
	struct timespec pause = { 0, 200000 };

	for (;;) {
		if (profbuf_read_timeout(b, 1000000000u, &r))
			continue;
		if (r.eof)
			return;
		take(&r, c);
		nanosleep(&pause, NULL);
	}
}

struct reader_arg {
	struct profbuf *b;
	struct counts c;
};

static void *reader_thread(void *arg)
{
	struct reader_arg *ra = arg;

	slow_drain(ra->b, &ra->c);
	return NULL;
}

struct writer {
	struct profbuf *b;
	int n;
	int failed;
};

static void *waiting_writer(void *arg)
{
	struct writer *w = arg;
	uint64_t hdr[HDR] = { 1 };

	for (int i = 0; i < w->n; i++) {
		uintptr_t pc[3] = { (uintptr_t)i, 2, 3 };

		if (profbuf_write_wait(w->b, NULL, i, hdr, HDR, pc, 3, WAIT_NS))
			w->failed++;
	}
	return NULL;
}

/* A slow reader and two waiting writers: every record arrives. */
static void nothing_lost_to_a_slow_reader(void)
{
	struct profbuf *b = profbuf_new(HDR, 256, 64);
	struct writer w[2] = { { b, 20000, 0 }, { b, 20000, 0 } };
	struct reader_arg ra = { .b = b };
	pthread_t t[2], rt;

	KT_REQUIRE(b);
	pthread_create(&rt, NULL, reader_thread, &ra);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, waiting_writer, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	profbuf_close(b);
	pthread_join(rt, NULL);
	KT_CHECK_EQ(w[0].failed + w[1].failed, 0);
	KT_CHECK_EQ(ra.c.lost, 0);
	KT_CHECK_EQ(ra.c.records, 40000);
	profbuf_free(b);
}

static void on_alarm(int sig)
{
	uint64_t hdr[HDR] = { 2 };
	uintptr_t pc = 9;

	(void)sig;
	if (!atomic_load(&writing))
		return;
	atomic_fetch_add(&nested_tried, 1);
	profbuf_write(nested_buf, NULL, 0, hdr, HDR, &pc, 1);
}

/*
 * A handler that cannot wait writes on top of a waiting writer, on the
 * same thread, while the reader lags: no deadlock, the waiting writer's
 * records all arrive, and the handler's are read or counted lost.
 */
static void nested_writers_that_cannot_wait(void)
{
	struct profbuf *b = profbuf_new(HDR, 128, 32);
	struct writer w = { b, 20000, 0 };
	struct reader_arg ra = { .b = b };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct sigaction sa = { .sa_handler = on_alarm };
	pthread_t rt;

	KT_REQUIRE(b);
	nested_buf = b;
	sigaction(SIGALRM, &sa, NULL);
	pthread_create(&rt, NULL, reader_thread, &ra);
	atomic_store(&writing, 1);
	setitimer(ITIMER_REAL, &it, NULL); /* to this, the main thread */
	waiting_writer(&w);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	atomic_store(&writing, 0);
	profbuf_close(b);
	pthread_join(rt, NULL);
	printf("  nested writes %llu: read %llu, lost %llu\n",
	       (unsigned long long)atomic_load(&nested_tried),
	       (unsigned long long)ra.c.marked, (unsigned long long)ra.c.lost);
	KT_CHECK_EQ(w.failed, 0);
	KT_CHECK_EQ(ra.c.records - ra.c.marked, 20000);
	KT_CHECK_EQ(ra.c.marked + ra.c.lost, atomic_load(&nested_tried));
	profbuf_free(b);
}

/* No reader: the wait ends at the timeout, and the write is counted. */
static void timeout_counts_the_loss(void)
{
	struct profbuf *b = profbuf_new(HDR, 64, 16);
	uint64_t hdr[HDR] = { 1 };
	uintptr_t pc = 1;
	struct counts c = { 0 };
	struct profbuf_read r;
	int rc, ok = 0;

	KT_REQUIRE(b);
	while ((rc = profbuf_write(b, NULL, 0, hdr, HDR, &pc, 1)) == 0)
		ok++;
	KT_CHECK_EQ(rc, -ENOSPC);
	KT_CHECK_EQ(profbuf_write_wait(b, NULL, 0, hdr, HDR, &pc, 1, 10000000),
		    -ENOSPC);
	profbuf_close(b);
	KT_CHECK_EQ(profbuf_write_wait(b, NULL, 0, hdr, HDR, &pc, 1, WAIT_NS),
		    -ESHUTDOWN);
	while (!profbuf_read(b, PROFBUF_NONBLOCKING, &r) && !r.eof && r.ndata)
		take(&r, &c);
	KT_CHECK_EQ(c.records, (uint64_t)ok);
	KT_CHECK_EQ(c.lost, 2);
	profbuf_free(b);
}

int main(void)
{
	KT_RUN(nothing_lost_to_a_slow_reader);
	KT_RUN(nested_writers_that_cannot_wait);
	KT_RUN(timeout_counts_the_loss);
	return ktest_exit();
}
