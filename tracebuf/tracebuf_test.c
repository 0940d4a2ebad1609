// SPDX-License-Identifier: MIT
/*
 * tracebuf_test.c - unit tests for the tracer and the decoder: round trips
 * of every event form (and the stats' byte count), errors, table sizes,
 * a stop before any start (a blocked reader sees EOF), one reader at a
 * time, many threads with concurrent advances and a concurrent reader
 * (every event decoded once, in order, in its generation, or counted
 * lost), nested writes from SIGPROF handlers, threads exiting mid-trace,
 * CPU samples through the profbuf, the decoder on truncated (the error at
 * the record cut short) and corrupted streams, and the string length
 * limit.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "ring/varint.h"
#include "testing/ktest.h"
#include "testing/harness.h"
#include "testing/trace_stream.h"
#include "tracebuf/tracebuf_format.h"
#include "tracebuf/tracebuf_impl.h"

/* ---- collecting and decoding a stream ------------------------------------ */

#define MAX_EVENTS 20000
#define MAX_WHO 16
#define MAX_GEN 512

struct decoded {
	struct tracedec_event *ev;
	size_t nev;
	uint64_t strings, stacks, types, freqs, ends, lost_total;
	uint64_t last_gen_end;
	char string_text[64][64];
	uint64_t string_id[64];
	uint64_t stack_pcs[64][8];
	uint64_t stack_id[64], stack_n[64];
	uint64_t lost_by_tid[64][2];
	uint64_t lost_tid[64];
	int nlost_tids;
	/* Per emitter (args[0]) of type-8 events, checked as they come. */
	uint64_t who_count[MAX_WHO];
	uint64_t who_min[MAX_WHO][2][MAX_GEN], who_max[MAX_WHO][2][MAX_GEN];
	uint64_t who_level[MAX_WHO][2];
	uint64_t order_errors;
};

/*
 * A thread's events of one generation and level come in stream order (its
 * batches are queued in order; the last one by advance, after the
 * others).  A signal handler's events are split between the thread's
 * level-0 buffer (when it interrupted no event) and the nested one.
 */
static void track(struct decoded *d, const struct tracedec_event *ev)
{
	uint64_t w = ev->args[0], seq = ev->args[1], g = ev->gen;
	unsigned int lv = ev->level;

	if (ev->type != 8 || ev->nargs != 2 || w >= MAX_WHO || g >= MAX_GEN) {
		d->order_errors += ev->type == 8;
		return;
	}
	if (d->who_max[w][lv][g] && seq <= d->who_max[w][lv][g] - 1)
		d->order_errors++;
	if (!d->who_max[w][lv][g])
		d->who_min[w][lv][g] = seq;
	d->who_max[w][lv][g] = seq + 1;
	d->who_count[w]++;
	d->who_level[w][lv]++;
}

static int on_event(void *arg, const struct tracedec_event *ev)
{
	struct decoded *d = arg;

	track(d, ev);
	if (d->nev < MAX_EVENTS)
		d->ev[d->nev++] = *ev;
	return 0;
}

static int on_string(void *arg, uint64_t gen, uint64_t id, const char *s,
		     size_t len)
{
	struct decoded *d = arg;

	(void)gen;
	if (d->strings < 64 && len < 64) {
		memcpy(d->string_text[d->strings], s, len);
		d->string_text[d->strings][len] = 0;
		d->string_id[d->strings] = id;
	}
	d->strings++;
	return 0;
}

static int on_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		    size_t n)
{
	struct decoded *d = arg;

	(void)gen;
	if (d->stacks < 64 && n <= 8) {
		memcpy(d->stack_pcs[d->stacks], pcs, n * 8);
		d->stack_id[d->stacks] = id;
		d->stack_n[d->stacks] = n;
	}
	d->stacks++;
	return 0;
}

static int on_type(void *arg, uint64_t gen, unsigned int type, const char *name,
		   size_t nlen, const char *spec, size_t slen)
{
	struct decoded *d = arg;

	(void)gen, (void)type, (void)name, (void)nlen, (void)spec, (void)slen;
	d->types++;
	return 0;
}

static int on_freq(void *arg, uint64_t gen, uint64_t hz)
{
	struct decoded *d = arg;

	(void)gen, (void)hz;
	d->freqs++;
	return 0;
}

static int on_lost(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		   uint64_t count)
{
	struct decoded *d = arg;
	int i;

	(void)gen;
	for (i = 0; i < d->nlost_tids && d->lost_tid[i] != tid; i++)
		;
	if (i == d->nlost_tids && i < 64)
		d->lost_tid[d->nlost_tids++] = tid;
	if (i < 64)
		d->lost_by_tid[i][level] += count;
	d->lost_total += count;
	return 0;
}

static int on_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct decoded *d = arg;

	(void)batches, (void)flags;
	d->ends++;
	d->last_gen_end = gen;
	return 0;
}

static const struct tracedec_visitor visitor = {
	.event = on_event,
	.string = on_string,
	.stack = on_stack,
	.type = on_type,
	.freq = on_freq,
	.lost = on_lost,
	.gen_end = on_end,
};

static struct decoded *decode_all(struct stream *s)
{
	struct decoded *d = calloc(1, sizeof(*d));
	struct tracedec_error err = { 0 };
	int rc;

	d->ev = calloc(MAX_EVENTS, sizeof(*d->ev));
	rc = tracedec_decode(s->p, s->len, &visitor, d, &err);
	if (rc)
		fprintf(stderr, "  decode: %d at %zu: %s\n", rc, err.offset,
			err.what);
	KT_CHECK_EQ(rc, 0);
	return d;
}

static void decoded_free(struct decoded *d)
{
	free(d->ev);
	free(d);
}

static uint64_t lost_of(struct decoded *d, uint64_t tid, unsigned int level)
{
	for (int i = 0; i < d->nlost_tids; i++)
		if (d->lost_tid[i] == tid)
			return d->lost_by_tid[i][level];
	return 0;
}

static struct tracebuf *new_tracer(size_t max_bytes, size_t buf_size)
{
	struct tracebuf_opts o = { .buf_size = buf_size,
				   .max_bytes = max_bytes,
				   .stack_bytes = 1 << 20,
				   .expected_stacks = 256,
				   .cpu_words = 1 << 12 };

	return tracebuf_new(&o);
}

/* ---- round trips -------------------------------------------------------- */

static void roundtrip_every_form(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct stream s = { 0 };
	struct tracebuf_ev ev;
	uint64_t args[6] = { 0, 1, 127, 128, UINT64_MAX, 1ull << 63 };
	uintptr_t pcs[3] = { 0x401000, 0x402000, 0x7fffdeadbeef };
	uint8_t payload[TRACEBUF_MAX_PAYLOAD];
	struct tracebuf_stats st;
	struct decoded *d;
	uint32_t sid, kid;

	KT_REQUIRE(t);
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	KT_CHECK_EQ(tracebuf_name_type(t, 9, "query", "usk"), 0);
	KT_CHECK_EQ(tracebuf_start(t), 0);
	KT_CHECK_EQ(tracebuf_start(t), -EALREADY);
	for (unsigned int n = 0; n <= 6; n++)
		KT_CHECK_EQ(tracebuf_emit(t, 8 + n, args, n), 0);
	KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
	sid = tracebuf_ev_string(&ev, "hello, trace");
	kid = tracebuf_ev_stack(&ev, pcs, 3);
	KT_CHECK(sid && kid);
	KT_CHECK_EQ(tracebuf_ev_string(&ev, "hello, trace"), sid);
	KT_CHECK_EQ(tracebuf_ev_emit(&ev, 9, (uint64_t[]){ 5, sid, kid }, 3),
		    0);
	KT_CHECK_EQ(tracebuf_ev_emit_bytes(&ev, 20, payload, 0), 0);
	KT_CHECK_EQ(tracebuf_ev_emit_bytes(&ev, 21, payload, 1), 0);
	KT_CHECK_EQ(tracebuf_ev_emit_bytes(&ev, 22, payload, sizeof(payload)),
		    0);
	tracebuf_end(&ev);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	read_to_eof(t, &s);
	/* Every byte read is counted, the stream header's too. */
	tracebuf_stats(t, &st);
	KT_CHECK_EQ(st.bytes, s.len);
	d = decode_all(&s);
	KT_REQUIRE(d->nev == 11);
	for (unsigned int n = 0; n <= 6; n++) {
		KT_CHECK_EQ(d->ev[n].type, 8 + n);
		KT_CHECK_EQ(d->ev[n].nargs, n);
		KT_CHECK(!memcmp(d->ev[n].args, args, n * 8));
		KT_CHECK_EQ(d->ev[n].gen, 1);
		KT_CHECK_EQ(d->ev[n].level, 0);
		KT_CHECK_EQ(d->ev[n].tid, syscall(SYS_gettid));
		if (n)
			KT_CHECK(d->ev[n].ticks >= d->ev[n - 1].ticks);
	}
	KT_CHECK(d->ev[7].type == 9 && d->ev[7].args[1] == sid &&
		 d->ev[7].args[2] == kid);
	KT_CHECK(d->ev[8].nbytes == 0 && d->ev[9].nbytes == 1 &&
		 d->ev[9].bytes[0] == payload[0]);
	KT_CHECK(d->ev[10].nbytes == sizeof(payload) &&
		 !memcmp(d->ev[10].bytes, payload, sizeof(payload)));
	KT_CHECK(d->strings == 1 && d->string_id[0] == sid &&
		 !strcmp(d->string_text[0], "hello, trace"));
	KT_CHECK(d->stacks == 1 && d->stack_id[0] == kid &&
		 d->stack_n[0] == 3 && d->stack_pcs[0][2] == pcs[2]);
	KT_CHECK(d->types == 1 && d->freqs == 1 && d->ends == 1);
	KT_CHECK_EQ(d->lost_total, 0);
	decoded_free(d);
	free(s.p);
	tracebuf_free(t);
}

static void emit_errors(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct tracebuf_chunk c;
	struct tracebuf_ev ev;
	uint64_t a[7] = { 0 };

	KT_REQUIRE(t);
	/* Not started: not running. */
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 1), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_begin(t, &ev), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_advance(t), -ESHUTDOWN);
	/* Misuse. */
	KT_CHECK_EQ(tracebuf_advance(NULL), -EINVAL);
	KT_CHECK_EQ(tracebuf_stop(NULL), -EINVAL);
	KT_CHECK_EQ(tracebuf_start(NULL), -EINVAL);
	KT_CHECK_EQ(tracebuf_begin(t, NULL), -EINVAL);
	KT_CHECK_EQ(tracebuf_read(t, PROFBUF_NONBLOCKING, NULL), -EINVAL);
	KT_CHECK_EQ(tracebuf_read(NULL, PROFBUF_NONBLOCKING, &c), -EINVAL);
	KT_CHECK_EQ(tracebuf_start(t), 0);
	KT_CHECK_EQ(tracebuf_emit(t, 0, a, 1), -EINVAL);
	KT_CHECK_EQ(tracebuf_emit(t, 32, a, 1), -EINVAL);
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 7), -EINVAL);
	KT_CHECK_EQ(tracebuf_emit(t, 8, NULL, 2), -EINVAL);
	/* The memory events are tracemem.c's alone, on every path. */
	KT_CHECK_EQ(tracebuf_emit(t, TRACEBUF_EV_ALLOC, a, 3), -EINVAL);
	KT_CHECK_EQ(tracebuf_emit(t, TRACEBUF_EV_EXISTS, a, 3), -EINVAL);
	KT_CHECK_EQ(tracebuf_emit(NULL, 8, a, 1), -EINVAL);
	KT_CHECK_EQ(tracebuf_name_type(t, 8, "x", "uq"), -EINVAL);
	KT_CHECK_EQ(tracebuf_name_type(t, 0, "x", "u"), -EINVAL);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	/* Stopped: not running, for good. */
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 1), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_begin(t, &ev), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_advance(t), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_stop(t), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_start(t), -ESHUTDOWN);
	tracebuf_free(t);
	errno = 0;
	KT_CHECK(!tracebuf_new(&(struct tracebuf_opts){ .buf_size = 100 }));
	KT_CHECK_EQ(errno, EINVAL);
}

/* A tracer made with @stack_bytes and @expected: 0, or the errno. */
static int new_with_tables(size_t stack_bytes, size_t expected)
{
	struct tracebuf_opts o = { .max_bytes = 1 << 20,
				   .stack_bytes = stack_bytes,
				   .expected_stacks = expected };
	struct tracebuf *t;

	errno = 0;
	t = tracebuf_new(&o);
	if (!t)
		return errno ? errno : -1;
	tracebuf_free(t);
	return 0;
}

/*
 * stack_bytes below TRACEBUF_MIN_STACK_BYTES is refused with EINVAL;
 * from it on, every expected_stacks works (it is a hint, cut down to
 * what the arena holds), and the tables take what they were given.
 */
static void table_sizes(void)
{
	static const size_t small[] = { 1, 4096, 8192, 12288,
					TRACEBUF_MIN_STACK_BYTES - 1 };
	static const size_t expected[] = {
		0, 1, 4096, (size_t)1 << 30, (size_t)1 << 31, SIZE_MAX
	};
	struct tracebuf *t;
	struct tracebuf_ev ev;
	uintptr_t pc;
	uint32_t id = 0;

	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		KT_CHECK_EQ(new_with_tables(small[i], 0), EINVAL);
	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		KT_CHECK_EQ(
			new_with_tables(TRACEBUF_MIN_STACK_BYTES, expected[i]),
			0);
		KT_CHECK_EQ(new_with_tables(0, expected[i]), 0);
	}
	/* The smallest tables, a huge hint: they intern all they can hold. */
	t = tracebuf_new(&(struct tracebuf_opts){
		.max_bytes = 1 << 20,
		.stack_bytes = TRACEBUF_MIN_STACK_BYTES,
		.expected_stacks = (size_t)1 << 31 });
	KT_REQUIRE(t);
	KT_REQUIRE(tracebuf_start(t) == 0);
	KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
	for (pc = 1; pc <= 100; pc++)
		id = tracebuf_ev_stack(&ev, &pc, 1);
	KT_CHECK_EQ(id, 100);
	KT_CHECK(tracebuf_ev_string(&ev, "s") != 0);
	tracebuf_end(&ev);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	tracebuf_free(t);
}

struct eof_reader {
	struct tracebuf *t;
	struct stream s;
	_Atomic int reads;
	int rc;
	pthread_t th;
};

static void *eof_reader_main(void *arg)
{
	struct eof_reader *r = arg;
	struct tracebuf_chunk c;

	while (!r->s.eof) {
		r->rc = tracebuf_read(r->t, PROFBUF_BLOCKING, &c);
		if (r->rc)
			break;
		atomic_fetch_add(&r->reads, 1);
		stream_add(&r->s, c.data, c.len);
		r->s.eof = c.eof;
	}
	return NULL;
}

/*
 * A tracer stopped without ever starting: a reader blocked on it sees
 * EOF (after the stream header), the stream decodes, and the tracer is
 * stopped for good.
 */
static void stop_never_started(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct eof_reader r = { .t = t };
	struct tracebuf_stats st;
	struct timespec ts;
	struct tracebuf_chunk c;
	int rc = -1;

	KT_REQUIRE(t);
	pthread_create(&r.th, NULL, eof_reader_main, &r);
	/* Until the reader has its header and sits in a blocking read. */
	for (int i = 0; i < 2000; i++) {
		if (atomic_load(&r.reads) &&
		    (rc = tracebuf_read(t, PROFBUF_NONBLOCKING, &c)) == -EBUSY)
			break;
		usleep(1000);
	}
	KT_CHECK_EQ(rc, -EBUSY);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	rc = pthread_timedjoin_np(r.th, NULL, &ts);
	KT_CHECK_EQ(rc, 0);
	if (rc) {
		/* The reader is stuck for good: leave it (and t) be. */
		printf("  the reader still waits after 10 s\n");
		return;
	}
	KT_CHECK_EQ(r.rc, 0);
	KT_CHECK(r.s.eof);
	KT_CHECK_EQ(r.s.len, TB_STREAM_HDR);
	KT_CHECK_EQ(tracedec_decode(r.s.p, r.s.len, NULL, NULL, NULL), 0);
	tracebuf_stats(t, &st);
	KT_CHECK_EQ(st.bytes, TB_STREAM_HDR);
	/* Every later read is EOF too. */
	KT_CHECK(tracebuf_read(t, PROFBUF_BLOCKING, &c) == 0 && c.eof);
	KT_CHECK_EQ(tracebuf_stop(t), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_start(t), -ESHUTDOWN);
	KT_CHECK_EQ(tracebuf_emit(t, 8, (uint64_t[]){ 1 }, 1), -ESHUTDOWN);
	free(r.s.p);
	tracebuf_free(t);
}

/*
 * One reader at a time: while a blocking read waits, a second read from
 * another thread returns -EBUSY at once and disturbs nothing; the first
 * read then gets the whole stream.
 */
struct busy_reader {
	struct tracebuf *t;
	struct stream s;
	pthread_t th;
};

static void *busy_reader_main(void *arg)
{
	struct busy_reader *r = arg;
	struct tracebuf_chunk c;
	int rc;

	while (!r->s.eof) {
		rc = tracebuf_read(r->t, PROFBUF_BLOCKING, &c);
		if (rc == -EBUSY) { /* the main thread's probe, retry */
			usleep(100);
			continue;
		}
		if (rc)
			break;
		stream_add(&r->s, c.data, c.len);
		r->s.eof = c.eof;
	}
	return NULL;
}

static void second_reader_busy(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct busy_reader r = { 0 };
	struct tracebuf_chunk c;
	struct decoded *d;
	uint64_t a = 42, end;
	int rc;

	KT_REQUIRE(t);
	KT_REQUIRE(tracebuf_start(t) == 0);
	/* The stream header first, so the probes below find nothing. */
	KT_REQUIRE(tracebuf_read(t, PROFBUF_NONBLOCKING, &c) == 0);
	r.t = t;
	stream_add(&r.s, c.data, c.len);
	pthread_create(&r.th, NULL, busy_reader_main, &r);
	/* Probe until the reader thread is inside its (blocked) read. */
	end = stress_now_ns() + 2000000000u;
	do {
		rc = tracebuf_read(t, PROFBUF_NONBLOCKING, &c);
		if (rc == 0)
			KT_CHECK_EQ(c.len, 0); /* nothing was emitted */
		if (rc != -EBUSY)
			usleep(1000);
	} while (rc != -EBUSY && stress_now_ns() < end);
	KT_CHECK_EQ(rc, -EBUSY);
	/* A second blocking read does not wait either. */
	if (rc == -EBUSY)
		KT_CHECK_EQ(tracebuf_read(t, PROFBUF_BLOCKING, &c), -EBUSY);
	KT_CHECK_EQ(tracebuf_emit(t, 8, &a, 1), 0);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	pthread_join(r.th, NULL);
	KT_CHECK(r.s.eof);
	d = decode_all(&r.s);
	KT_CHECK(d->nev == 1 && d->ev[0].args[0] == 42);
	KT_CHECK_EQ(d->ends, 1);
	decoded_free(d);
	free(r.s.p);
	tracebuf_free(t);
}

/* ---- threads, advances, a concurrent reader ------------------------------ */

#define NT 4

struct emitter {
	struct tracebuf *t;
	uint32_t who;
	uint64_t seq, ok, lost, tid;
	pthread_t th;
};

static atomic_bool stop_emitting;

static void emit_one(struct emitter *e)
{
	uint64_t args[2] = { e->who, e->seq++ };
	int rc = tracebuf_emit(e->t, 8, args, 2);

	if (rc == 0)
		e->ok++;
	else if (rc == -ENOSPC)
		e->lost++;
}

static void *emitter_main(void *arg)
{
	struct emitter *e = arg;

	e->tid = (uint64_t)syscall(SYS_gettid);
	while (!atomic_load_explicit(&stop_emitting, memory_order_relaxed)) {
		for (int i = 0; i < 64; i++)
			emit_one(e);
		usleep(100); /* ~0.5M events/s: a stream a test can hold */
	}
	return NULL;
}

struct reader {
	struct tracebuf *t;
	struct stream s;
	bool slow;
	pthread_t th;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct tracebuf_chunk c;

	while (!r->s.eof && tracebuf_read(r->t, PROFBUF_BLOCKING, &c) == 0) {
		stream_add(&r->s, c.data, c.len);
		r->s.eof = c.eof;
		if (r->slow)
			usleep(3000); /* the pool runs dry: losses */
	}
	return NULL;
}

/*
 * Per emitter: the events decoded are exactly the ones accepted, in order
 * within each generation, generations in order, each loss counted.
 */
static void check_emitters(struct decoded *d, struct emitter *e, int n)
{
	KT_CHECK_EQ(d->order_errors, 0);
	for (int k = 0; k < n; k++) {
		uint32_t w = e[k].who;

		KT_CHECK_EQ(d->who_count[w], e[k].ok);
		KT_CHECK_EQ(e[k].ok + e[k].lost, e[k].seq);
		for (int lv = 0; lv < 2; lv++) {
			uint64_t prev_max = 0;

			for (int g = 1; g < MAX_GEN; g++) {
				if (!d->who_max[w][lv][g])
					continue;
				KT_CHECK(d->who_min[w][lv][g] >= prev_max);
				prev_max = d->who_max[w][lv][g];
			}
		}
	}
}

static void threads_with_advance(size_t max_bytes, bool slow_reader)
{
	struct tracebuf *t = new_tracer(max_bytes, 4096);
	struct emitter e[NT];
	struct reader r = { 0 };
	struct decoded *d;
	int advances = 0;
	uint64_t lost = 0;

	KT_REQUIRE(t);
	KT_CHECK_EQ(tracebuf_start(t), 0);
	r.t = t;
	r.slow = slow_reader;
	pthread_create(&r.th, NULL, reader_main, &r);
	atomic_store(&stop_emitting, false);
	for (int k = 0; k < NT; k++) {
		e[k] = (struct emitter){ .t = t, .who = (uint32_t)k };
		pthread_create(&e[k].th, NULL, emitter_main, &e[k]);
	}
	for (uint64_t end = stress_now_ns() + 400000000u; stress_now_ns() < end;
	     advances++) {
		usleep(1000 + (unsigned int)(rand() % 5000));
		KT_CHECK_EQ(tracebuf_advance(t), 0);
	}
	atomic_store(&stop_emitting, true);
	for (int k = 0; k < NT; k++) {
		pthread_join(e[k].th, NULL);
		lost += e[k].lost;
	}
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	pthread_join(r.th, NULL);
	d = decode_all(&r.s);
	KT_CHECK_EQ(d->ends, advances + 1);
	KT_CHECK_EQ(d->last_gen_end, advances + 1);
	check_emitters(d, e, NT);
	for (int k = 0; k < NT; k++)
		KT_CHECK_EQ(lost_of(d, e[k].tid, 0), e[k].lost);
	printf("  %llu events, %llu lost, %d advances, %zu bytes\n",
	       (unsigned long long)(d->who_count[0] + d->who_count[1] +
				    d->who_count[2] + d->who_count[3]),
	       (unsigned long long)lost, advances, r.s.len);
	decoded_free(d);
	free(r.s.p);
	tracebuf_free(t);
}

static void threads_advance_reader(void)
{
	threads_with_advance(1 << 22, false);
}

static void threads_tiny_memory(void)
{
	threads_with_advance(8 * 4096, true); /* constant losses */
}

/* ---- SIGPROF handlers writing nested events ----------------------------- */

static _Thread_local struct emitter *tls_handler_emitter;

static void on_sigprof(int sig)
{
	struct emitter *h = tls_handler_emitter;
	int saved = errno;

	(void)sig;
	if (h)
		emit_one(h);
	errno = saved;
}

static void *signalled_main(void *arg)
{
	struct emitter *e = arg; /* e[0] the thread, e[1] its handler */
	struct stress_timer timer;

	e[0].tid = e[1].tid = (uint64_t)syscall(SYS_gettid);
	tls_handler_emitter = &e[1];
	stress_timer_start(&timer, SIGPROF, 5000, false);
	while (!atomic_load_explicit(&stop_emitting, memory_order_relaxed)) {
		struct tracebuf_ev ev;
		uint64_t args[2] = { e[0].who, e[0].seq++ };
		uint64_t until = stress_now_ns() + 5000;
		int rc = tracebuf_begin(e[0].t, &ev);

		if (!rc) {
			rc = tracebuf_ev_emit(&ev, 8, args, 2);
			while (stress_now_ns() < until)
				; /* stay inside: handlers nest here */
			tracebuf_end(&ev);
		}
		e[0].ok += rc == 0;
		e[0].lost += rc == -ENOSPC;
	}
	stress_timer_stop(&timer);
	tls_handler_emitter = NULL;
	return NULL;
}

static void nested_sigprof(void)
{
	struct tracebuf *t = new_tracer(1 << 22, 4096);
	struct emitter e[4];
	struct reader r = { 0 };
	struct sigaction sa = { .sa_handler = on_sigprof,
				.sa_flags = SA_RESTART };
	struct decoded *d;
	uint64_t nested = 0;

	KT_REQUIRE(t);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	tracebuf_start(t);
	r.t = t;
	pthread_create(&r.th, NULL, reader_main, &r);
	atomic_store(&stop_emitting, false);
	for (int k = 0; k < 4; k++)
		e[k] = (struct emitter){ .t = t, .who = (uint32_t)k };
	pthread_create(&e[0].th, NULL, signalled_main, &e[0]);
	pthread_create(&e[2].th, NULL, signalled_main, &e[2]);
	for (int i = 0; i < 30; i++) {
		usleep(10000);
		tracebuf_advance(t);
	}
	atomic_store(&stop_emitting, true);
	pthread_join(e[0].th, NULL);
	pthread_join(e[2].th, NULL);
	signal(SIGPROF, SIG_IGN);
	tracebuf_stop(t);
	pthread_join(r.th, NULL);
	d = decode_all(&r.s);
	nested = d->who_level[1][1] + d->who_level[3][1];
	KT_CHECK(e[1].seq > 0 && e[3].seq > 0);
	/* Lost counts are per thread and level: thread's + its handler's. */
	for (int k = 0; k < 4; k += 2)
		KT_CHECK_EQ(lost_of(d, e[k].tid, 0) + lost_of(d, e[k].tid, 1),
			    e[k].lost + e[k + 1].lost);
	check_emitters(d, e, 4);
	/* TSan delivers signals at its own safe points: no nesting there. */
	if (!getenv("TSAN_OPTIONS"))
		KT_CHECK(nested > 0);
	printf("  %llu handler events, %llu of them nested in an event\n",
	       (unsigned long long)(e[1].ok + e[3].ok),
	       (unsigned long long)nested);
	decoded_free(d);
	free(r.s.p);
	tracebuf_free(t);
}

/* ---- threads that exit, CPU samples ------------------------------------- */

static void *short_lived(void *arg)
{
	struct emitter *e = arg;

	e->tid = (uint64_t)syscall(SYS_gettid);
	for (int i = 0; i < 1000; i++)
		emit_one(e);
	return NULL;
}

static void threads_exit_mid_trace(void)
{
	struct tracebuf *t = new_tracer(1 << 22, 4096);
	struct emitter e[16];
	struct stream s = { 0 };
	struct decoded *d;

	KT_REQUIRE(t);
	tracebuf_start(t);
	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < 4; k++) {
			struct emitter *x = &e[round * 4 + k];

			*x = (struct emitter){
				.t = t, .who = (uint32_t)(round * 4 + k)
			};
			pthread_create(&x->th, NULL, short_lived, x);
		}
		for (int k = 0; k < 4; k++)
			pthread_join(e[round * 4 + k].th, NULL);
		if (round == 1)
			tracebuf_advance(t); /* some flushed mid-way */
		read_ready(t, &s);
	}
	tracebuf_stop(t);
	read_to_eof(t, &s);
	d = decode_all(&s);
	check_emitters(d, e, 16);
	decoded_free(d);
	free(s.p);
	tracebuf_free(t);
}

/* Stop @t and decode its whole stream into a struct decoded. */
static struct decoded *stop_and_decode(struct tracebuf *t, struct stream *s)
{
	tracebuf_stop(t);
	read_to_eof(t, s);
	return decode_all(s);
}

/* Free what stop_and_decode() returned and filled, and the tracer. */
static void decoded_done(struct tracebuf *t, struct decoded *d,
			 struct stream *s)
{
	decoded_free(d);
	free(s->p);
	tracebuf_free(t);
}

/*
 * Two tracers whose slots the TLS caches in the same way (ways are dealt
 * in turn at init, so one of the next eight tracers shares the first
 * one's): one thread emits to both in turn.  Each event of one of them
 * finds the other's slot in the way: the inline path must decline (the
 * slot is not in this tracer's array) and the library find the right
 * one.  Every event lands in its tracer.
 */
static void tracers_sharing_a_way(void)
{
	struct tracebuf *t[10] = { 0 }, *pair[2] = { NULL, NULL };
	struct emitter e[2];

	t[0] = pair[0] = new_tracer(1 << 20, 4096);
	KT_REQUIRE(t[0]);
	for (int n = 1; n < 10 && !pair[1]; n++) {
		t[n] = new_tracer(1 << 20, 4096);
		KT_REQUIRE(t[n]);
		if (t[n]->grace.way == t[0]->grace.way)
			pair[1] = t[n];
	}
	KT_REQUIRE(pair[1]);
	for (int k = 0; k < 2; k++) {
		KT_CHECK_EQ(tracebuf_start(pair[k]), 0);
		e[k] = (struct emitter){ .t = pair[k], .who = (uint32_t)k };
	}
	for (int i = 0; i < 5000; i++) {
		emit_one(&e[0]);
		emit_one(&e[1]);
	}
	for (int k = 0; k < 2; k++) {
		struct stream s = { 0 };
		struct decoded *d;

		KT_CHECK_EQ(e[k].ok, 5000);
		d = stop_and_decode(pair[k], &s);
		KT_CHECK_EQ(d->order_errors, 0);
		KT_CHECK_EQ(d->who_count[k], 5000);
		KT_CHECK_EQ(d->who_count[1 - k], 0);
		decoded_free(d);
		free(s.p);
	}
	for (int n = 0; n < 10; n++)
		tracebuf_free(t[n]);
}

/*
 * A tracer whose gate is closed (inline_span 0: a kernel without
 * membarrier, or a future layout): every event goes through the library,
 * and arrives.
 */
static void emit_gate_closed(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct emitter e = { .t = t };
	struct stream s = { 0 };
	struct decoded *d;

	KT_REQUIRE(t);
	t->inline_span = 0;
	KT_CHECK_EQ(tracebuf_start(t), 0);
	for (int i = 0; i < 5000; i++)
		emit_one(&e);
	KT_CHECK_EQ(e.ok, 5000);
	d = stop_and_decode(t, &s);
	check_emitters(d, &e, 1);
	decoded_done(t, d, &s);
}

/*
 * An event nested two deep (two begins open on the thread, as two nested
 * handlers would have) is lost and counted, not written into a buffer
 * the thread does not have.  In an odd generation after an even one, so
 * that a "buffer" [1][2] read past the thread's four would be gen 2's
 * batch count, not NULL.
 */
static void emit_nested_too_deep(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct tracebuf_ev ev[2];
	struct stream s = { 0 };
	uint64_t a[2] = { 0, 0 };
	struct decoded *d;

	KT_REQUIRE(t);
	KT_CHECK_EQ(tracebuf_start(t), 0);
	KT_CHECK_EQ(tracebuf_advance(t), 0);
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 2), 0); /* the thread's buffer */
	KT_CHECK_EQ(tracebuf_advance(t), 0);
	KT_CHECK_EQ(atomic_load(&t->gen), 3);
	KT_CHECK_EQ(tracebuf_begin(t, &ev[0]), 0);
	KT_CHECK_EQ(tracebuf_begin(t, &ev[1]), 0);
	a[1] = 1;
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 2), -ENOSPC);
	tracebuf_end(&ev[1]);
	tracebuf_end(&ev[0]);
	d = stop_and_decode(t, &s);
	KT_CHECK_EQ(d->who_count[0], 1);
	KT_CHECK_EQ(d->lost_total, 1);
	decoded_done(t, d, &s);
}

/*
 * Stop's window, staged: gen already 0 while the thread's buffer of the
 * closing generation (an even one: parity 0, as gen 0's) is not yet
 * taken.  An event that sees gen 0 is refused, not written into it.
 */
static void emit_sees_gen_zero(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct stream s = { 0 };
	uint64_t a[2] = { 0, 0 }, gen;
	struct decoded *d;

	KT_REQUIRE(t);
	KT_CHECK_EQ(tracebuf_start(t), 0);
	KT_CHECK_EQ(tracebuf_advance(t), 0);
	gen = atomic_load(&t->gen);
	KT_CHECK_EQ(gen & 1, 0);
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 2), 0);
	atomic_store(&t->gen, 0);
	a[1] = 1;
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 2), -ESHUTDOWN);
	atomic_store(&t->gen, gen);
	d = stop_and_decode(t, &s);
	KT_CHECK_EQ(d->who_count[0], 1);
	decoded_done(t, d, &s);
}

static void *emit_and_exit(void *arg)
{
	uint64_t a[2] = { 1, 0 };

	return (void *)(intptr_t)tracebuf_emit(arg, 8, a, 2);
}

/*
 * The tracer's TLS way holding a slot of its array that another thread
 * owns (here forged; a way is only ever re-pointed at slots of ours, so
 * this is what a slot re-owned after a tracer's memory was reused would
 * look like): the event is not written into that thread's buffer.
 */
static void way_holds_anothers_slot(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct ring_grace_slot *mine = NULL, *theirs = NULL;
	struct stream s = { 0 };
	uint64_t a[2] = { 0, 0 };
	struct decoded *d;
	pthread_t th;
	void *rc;

	KT_REQUIRE(t);
	KT_CHECK_EQ(tracebuf_start(t), 0);
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 2), 0);
	pthread_create(&th, NULL, emit_and_exit, t);
	pthread_join(th, &rc);
	KT_CHECK_EQ((intptr_t)rc, 0);
	mine = ring_grace_tls.slot[t->grace.way];
	for (uint32_t i = 0; i < t->grace.nslots; i++)
		if (atomic_load(&t->grace.slots[i].owner) &&
		    &t->grace.slots[i] != mine)
			theirs = &t->grace.slots[i];
	KT_REQUIRE(theirs);
	ring_grace_tls.slot[t->grace.way] = theirs;
	a[1] = 1;
	KT_CHECK_EQ(tracebuf_emit(t, 8, a, 2), 0);
	d = stop_and_decode(t, &s);
	KT_CHECK_EQ(d->who_count[0], 2);
	KT_CHECK_EQ(d->who_count[1], 1);
	for (size_t i = 0; i < d->nev; i++)
		if (d->ev[i].type == 8 && d->ev[i].args[0] == 0)
			KT_CHECK_EQ(d->ev[i].tid,
				    (uint64_t)syscall(SYS_gettid));
	decoded_done(t, d, &s);
}

static atomic_int refused_noslot;

static void *emit_once(void *arg)
{
	uint64_t a = 1;
	int rc = tracebuf_emit(arg, 8, &a, 1);

	if (rc == -ENOSPC)
		atomic_fetch_add(&refused_noslot, 1);
	return NULL;
}

/*
 * More threads than thread slots, none released (no advance in between):
 * the ones without a slot are refused, and every refusal is counted in
 * the stream (thread 0) and in the stats - with its real count.
 */
static void thread_slots_exhausted(void)
{
	/* A buffer for every thread: dead threads hold theirs until advance. */
	struct tracebuf *t =
		new_tracer((size_t)(TRACEBUF_MAX_THREADS + 256) * 4096, 4096);
	struct stream s = { 0 };
	struct tracebuf_stats st;
	struct decoded *d;

	KT_REQUIRE(t);
	atomic_store(&refused_noslot, 0);
	tracebuf_start(t);
	for (int i = 0; i < TRACEBUF_MAX_THREADS + 150; i++) {
		pthread_t th;

		pthread_create(&th, NULL, emit_once, t);
		pthread_join(th, NULL);
		if (i % 512 == 0)
			read_ready(t, &s);
	}
	tracebuf_stop(t);
	read_to_eof(t, &s);
	d = decode_all(&s);
	tracebuf_stats(t, &st);
	KT_CHECK(atomic_load(&refused_noslot) >= 150);
	KT_CHECK_EQ(lost_of(d, 0, 0), atomic_load(&refused_noslot));
	KT_CHECK_EQ(st.lost, atomic_load(&refused_noslot));
	decoded_free(d);
	free(s.p);
	tracebuf_free(t);
}

static void cpu_samples(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct profbuf *pb;
	struct stream s = { 0 };
	struct decoded *d;
	uintptr_t pcs[2] = { 0x1234, 0x5678 };
	uint64_t hdr[2] = { 4242, 1 }, samples = 0, lost = 0;
	int accepted = 0, dropped = 0;

	KT_REQUIRE(t);
	pb = tracebuf_cpu_profbuf(t);
	KT_REQUIRE(pb);
	tracebuf_start(t);
	/* More than the profbuf holds: some are lost and reported. */
	for (int i = 0; i < 2000; i++) {
		int rc = profbuf_write(pb, NULL, (int64_t)tracebuf_ticks(), hdr,
				       2, pcs, 2);

		accepted += rc == 0;
		dropped += rc == -ENOSPC;
	}
	tracebuf_stop(t);
	read_to_eof(t, &s);
	d = decode_all(&s);
	for (size_t i = 0; i < d->nev; i++) {
		if (d->ev[i].type == TRACEBUF_EV_CPU_SAMPLE) {
			KT_CHECK_EQ(d->ev[i].args[1], 4242);
			KT_CHECK_EQ(d->ev[i].args[2], d->stack_id[0]);
			KT_CHECK_EQ(d->ev[i].args[3], 1);
			samples++;
		} else if (d->ev[i].type == TRACEBUF_EV_LOST_SAMPLES) {
			lost += d->ev[i].args[0];
		}
	}
	KT_CHECK(dropped > 0);
	KT_CHECK_EQ(samples, accepted);
	KT_CHECK_EQ(lost, dropped);
	KT_CHECK(d->stacks == 1 && d->stack_n[0] == 2 &&
		 d->stack_pcs[0][1] == 0x5678);
	decoded_free(d);
	free(s.p);
	tracebuf_free(t);
}

/*
 * CPU samples written after tracebuf_stop() are refused, never accepted
 * and dropped: 5 written while running are in the stream, 3 after stop
 * each get -EINVAL.
 */
static void cpu_samples_after_stop_refused(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct profbuf *pb;
	struct stream s = { 0 };
	struct decoded *d;
	uintptr_t pc = 0x1234;
	uint64_t hdr[2] = { 7, 1 }, samples = 0;
	int refused = 0;

	KT_REQUIRE(t);
	pb = tracebuf_cpu_profbuf(t);
	KT_REQUIRE(pb);
	tracebuf_start(t);
	for (int i = 0; i < 5; i++)
		KT_CHECK_EQ(profbuf_write(pb, NULL, (int64_t)tracebuf_ticks(),
					  hdr, 2, &pc, 1),
			    0);
	d = stop_and_decode(t, &s);
	for (int i = 0; i < 3; i++)
		refused += profbuf_write(pb, NULL, (int64_t)tracebuf_ticks(),
					 hdr, 2, &pc, 1) == -ESHUTDOWN;
	for (size_t i = 0; i < d->nev; i++)
		samples += d->ev[i].type == TRACEBUF_EV_CPU_SAMPLE;
	KT_CHECK_EQ(samples, 5);
	KT_CHECK_EQ(refused, 3);
	decoded_done(t, d, &s);
}

struct sampler {
	struct profbuf *pb;
	uint64_t tid, ticks[4];
};

static void *sampler_main(void *arg)
{
	struct sampler *sp = arg;
	uintptr_t pc = 0x1234;

	sp->tid = (uint64_t)syscall(SYS_gettid);
	for (int i = 0; i < 4; i++) {
		uint64_t hdr[2] = { sp->tid, 1 };

		sp->ticks[i] = tracebuf_ticks();
		if (profbuf_write(sp->pb, NULL, (int64_t)sp->ticks[i], hdr, 2,
				  &pc, 1))
			sp->ticks[i] = 0;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return NULL;
}

/*
 * A CPU sample belongs to the thread it sampled, at its own time: the
 * decoder's thread and time are the sample's, not those of the thread
 * that moved it into the trace (the advance, later), which tid and
 * ticks keep.
 */
static void cpu_samples_own_thread_and_time(void)
{
	struct sampler sp = { 0 };
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct stream s = { 0 };
	struct decoded *d;
	uint64_t me = (uint64_t)syscall(SYS_gettid);
	int samples = 0;
	pthread_t th;

	KT_REQUIRE(t);
	sp.pb = tracebuf_cpu_profbuf(t);
	KT_REQUIRE(sp.pb);
	tracebuf_start(t);
	KT_REQUIRE(pthread_create(&th, NULL, sampler_main, &sp) == 0);
	pthread_join(th, NULL);
	nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
	KT_CHECK_EQ(tracebuf_advance(t), 0);
	d = stop_and_decode(t, &s);
	for (size_t i = 0; i < d->nev; i++) {
		const struct tracedec_event *ev = &d->ev[i];

		if (ev->type != TRACEBUF_EV_CPU_SAMPLE)
			continue;
		KT_CHECK(samples < 4);
		if (samples >= 4)
			break;
		KT_CHECK_EQ(ev->thread, sp.tid);
		KT_CHECK_EQ(ev->time, sp.ticks[samples]);
		/* Moved in by this thread's advance, after the sample. */
		KT_CHECK_EQ(ev->tid, me);
		KT_CHECK(ev->ticks > ev->time);
		samples++;
	}
	KT_CHECK_EQ(samples, 4);
	/* Any other event: its own thread and time. */
	for (size_t i = 0; i < d->nev; i++)
		if (d->ev[i].type != TRACEBUF_EV_CPU_SAMPLE)
			KT_CHECK(d->ev[i].thread == d->ev[i].tid &&
				 d->ev[i].time == d->ev[i].ticks);
	decoded_done(t, d, &s);
}

/*
 * Spans: one event each, at the end, that decoders see from its start
 * for its length, nested as their times are, named by a string.
 */
static void spans(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct stream s = { 0 };
	struct decoded *d;
	struct tracebuf_ev ev;
	uint64_t me = (uint64_t)syscall(SYS_gettid), outer, inner, arg = 77;
	const struct tracedec_event *sp[2];
	int n = 0;

	KT_REQUIRE(t);
	tracebuf_start(t);
	outer = tracebuf_ticks();
	inner = tracebuf_ticks() + 1;
	KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
	KT_CHECK_EQ(tracebuf_ev_span(&ev, tracebuf_ev_string(&ev, "inner"),
				     inner, &arg, 1),
		    0);
	/* At most 4 arguments of ours. */
	KT_CHECK_EQ(tracebuf_ev_span(&ev, 1, inner, &arg, 5), -EINVAL);
	KT_CHECK_EQ(tracebuf_ev_span(&ev, 1, inner, NULL, 1), -EINVAL);
	tracebuf_end(&ev);
	KT_CHECK_EQ(tracebuf_span(t, "outer", outer, NULL, 0), 0);
	d = stop_and_decode(t, &s);
	for (size_t i = 0; i < d->nev; i++)
		if (d->ev[i].type == TRACEBUF_EV_SPAN && n < 2)
			sp[n++] = &d->ev[i];
	KT_REQUIRE(n == 2);
	KT_CHECK_EQ(sp[0]->time, inner);
	KT_CHECK_EQ(sp[0]->duration, sp[0]->ticks - inner);
	KT_CHECK_EQ(sp[0]->nargs, 3);
	KT_CHECK_EQ(sp[0]->args[2], 77);
	KT_CHECK_EQ(sp[1]->time, outer);
	KT_CHECK_EQ(sp[1]->nargs, 2);
	/* The outer span holds the inner one. */
	KT_CHECK(sp[1]->time < sp[0]->time &&
		 sp[1]->time + sp[1]->duration >=
			 sp[0]->time + sp[0]->duration);
	KT_CHECK(sp[0]->thread == me && sp[1]->thread == me);
	KT_CHECK_EQ(sp[0]->version, 3);
	for (uint64_t i = 0; i < d->strings; i++) {
		if (d->string_id[i] == sp[0]->args[0])
			KT_CHECK(!strcmp(d->string_text[i], "inner"));
		if (d->string_id[i] == sp[1]->args[0])
			KT_CHECK(!strcmp(d->string_text[i], "outer"));
	}
	decoded_done(t, d, &s);
}

/*
 * A span of another thread (type 7), written later by a reader that was
 * told of it: decoders see it on that thread, from its start to its own
 * end, with its stack; an end not after its start is a span of length 0.
 */
static void span_of_another_thread(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct stream s = { 0 };
	struct decoded *d;
	struct tracebuf_ev ev;
	uint64_t me = (uint64_t)syscall(SYS_gettid), start, end;
	uintptr_t pcs[2] = { 0x1234, 0x5678 };
	const struct tracedec_event *sp[2];
	int n = 0;

	KT_REQUIRE(t);
	tracebuf_start(t);
	start = tracebuf_ticks();
	end = start + 1000;
	KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
	KT_CHECK_EQ(tracebuf_ev_span_of(&ev,
					tracebuf_ev_string(&ev, "mutex wait"),
					start, end, me + 4242, pcs, 2),
		    0);
	KT_CHECK_EQ(tracebuf_ev_span_of(&ev, 1, end, start, me + 7, NULL, 0),
		    0);
	KT_CHECK_EQ(tracebuf_ev_span_of(&ev, 1, start, end, 1, NULL, 1),
		    -EINVAL);
	tracebuf_end(&ev);
	d = stop_and_decode(t, &s);
	for (size_t i = 0; i < d->nev; i++)
		if (d->ev[i].type == TRACEBUF_EV_SPAN_OF && n < 2)
			sp[n++] = &d->ev[i];
	KT_REQUIRE(n == 2);
	KT_CHECK_EQ(sp[0]->thread, me + 4242);
	KT_CHECK_EQ(sp[0]->tid, me); /* written by this thread */
	KT_CHECK_EQ(sp[0]->time, start);
	KT_CHECK_EQ(sp[0]->duration, 1000);
	KT_CHECK_EQ(sp[0]->nargs, 5);
	KT_CHECK_EQ(sp[0]->args[4], d->stack_id[0]);
	KT_CHECK_EQ(d->stack_n[0], 2);
	/* Backwards: length 0 at its end. */
	KT_CHECK_EQ(sp[1]->thread, me + 7);
	KT_CHECK_EQ(sp[1]->time, start);
	KT_CHECK_EQ(sp[1]->duration, 0);
	KT_CHECK_EQ(sp[1]->args[4], 0);
	for (uint64_t i = 0; i < d->strings; i++)
		if (d->string_id[i] == sp[0]->args[0])
			KT_CHECK(!strcmp(d->string_text[i], "mutex wait"));
	decoded_done(t, d, &s);
}

/*
 * Types 1-7 are the library's: every public emit refuses them, inline
 * or called, so that a forged CPU sample can never reach the stream;
 * the library's own functions still write them.
 */
static void emit_refuses_library_types(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct stream s = { 0 };
	struct decoded *d;
	struct tracebuf_ev ev;
	uint64_t args[4] = { 1, 2, 3, 4 };
	uintptr_t pc = 0x1234;
	int accepted = 0, own = 0;

	KT_REQUIRE(t);
	tracebuf_start(t);
	for (unsigned int type = 0; type < TRACEBUF_EV_USER; type++) {
		accepted += tracebuf_emit(t, type, args, 4) != -EINVAL;
		accepted += (tracebuf_emit)(t, type, args, 4) != -EINVAL;
		KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
		accepted += tracebuf_ev_emit(&ev, type, args, 4) != -EINVAL;
		accepted +=
			tracebuf_ev_emit_bytes(&ev, type, "x", 1) != -EINVAL;
		tracebuf_end(&ev);
	}
	KT_CHECK_EQ(accepted, 0);
	KT_CHECK_EQ(tracebuf_emit(t, TRACEBUF_EV_USER, args, 4), 0);
	KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
	KT_CHECK_EQ(
		tracebuf_ev_cpu_sample(&ev, tracebuf_ticks(), 99, &pc, 1, 2),
		0);
	KT_CHECK_EQ(tracebuf_ev_lost_samples(&ev, 5), 0);
	KT_CHECK_EQ(tracebuf_ev_cpu_sample(&ev, 1, 99, NULL, 1, 1), -EINVAL);
	tracebuf_end(&ev);
	d = stop_and_decode(t, &s);
	for (size_t i = 0; i < d->nev; i++) {
		const struct tracedec_event *e = &d->ev[i];

		if (e->type == TRACEBUF_EV_CPU_SAMPLE)
			own += e->args[1] == 99 && e->args[3] == 2 &&
			       e->args[2] == d->stack_id[0];
		else if (e->type == TRACEBUF_EV_LOST_SAMPLES)
			own += e->args[0] == 5;
		else
			KT_CHECK_EQ(e->type, TRACEBUF_EV_USER);
	}
	KT_CHECK_EQ(own, 2);
	decoded_done(t, d, &s);
}

/* What the iterator needs back: the header size a buffer was made with. */
static void profbuf_hdrsize_getter(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct profbuf *pb = profbuf_new(3, 1024, 16);
	size_t size = (profbuf_shared_size(5, 1024, 16) + 4095) & ~(size_t)4095;
	void *mem = aligned_alloc(4096, size);

	KT_REQUIRE(t && pb && mem);
	memset(mem, 0, size);
	KT_CHECK_EQ(profbuf_hdrsize(tracebuf_cpu_profbuf(t)), 2);
	KT_CHECK_EQ(profbuf_hdrsize(pb), 3);
	KT_CHECK_EQ(
		profbuf_hdrsize(profbuf_shared_init(mem, size, 5, 1024, 16)),
		5);
	KT_CHECK_EQ(profbuf_hdrsize(NULL), 0);
	free(mem);
	profbuf_free(pb);
	tracebuf_free(t);
}

/* ---- the decoder on bad input ------------------------------------------- */

static struct stream sample_stream(void)
{
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct stream s = { 0 };
	struct tracebuf_ev ev;
	uintptr_t pcs[2] = { 1, 2 };

	tracebuf_name_type(t, 8, "x", "uk");
	tracebuf_start(t);
	for (int g = 0; g < 3; g++) {
		for (uint64_t i = 0; i < 50; i++)
			tracebuf_emit(t, 8, &i, 1);
		if (tracebuf_begin(t, &ev) == 0) {
			uint64_t a[2] = { tracebuf_ev_string(&ev, "s"),
					  tracebuf_ev_stack(&ev, pcs, 2) };

			tracebuf_ev_emit(&ev, 9, a, 2);
			tracebuf_ev_emit_bytes(&ev, 10, "abc", 3);
			tracebuf_end(&ev);
		}
		tracebuf_advance(t);
	}
	tracebuf_stop(t);
	read_to_eof(t, &s);
	tracebuf_free(t);
	return s;
}

static void decoder_truncated(void)
{
	struct stream s = sample_stream();
	struct tracedec_error err;
	size_t ok = 0, bad = 0, wrong = 0, rec = 0, next = TB_STREAM_HDR;

	KT_REQUIRE(tracedec_decode(s.p, s.len, NULL, NULL, &err) == 0);
	for (size_t cut = 0; cut < s.len; cut++) {
		/* A copy of exactly @cut bytes: ASan sees any over-read. */
		uint8_t *p = malloc(cut ? cut : 1);
		int rc;

		/* @rec: the record @cut falls in (0: the stream header). */
		if (cut > next) {
			rec = next;
			next += TB_REC_HDR + tb_get_u32(s.p + next + 4);
		}
		memcpy(p, s.p, cut);
		err.offset = SIZE_MAX;
		rc = tracedec_decode(p, cut, NULL, NULL, &err);
		if (rc == 0) {
			KT_CHECK(cut == next);
			ok++;
		} else {
			KT_CHECK_EQ(rc, -EBADMSG);
			KT_CHECK(err.what);
			/* The offset of the record cut short (tracedec.h). */
			if (err.offset != rec && !wrong++)
				printf("  cut at %zu: offset %zu, not %zu\n",
				       cut, err.offset, rec);
			bad++;
		}
		free(p);
	}
	KT_CHECK_EQ(wrong, 0);
	/* Cuts at record boundaries decode; the rest are errors. */
	KT_CHECK(ok > 3 && bad > ok);
	free(s.p);
}

static void decoder_corrupted(void)
{
	struct stream s = sample_stream();
	uint64_t rng = 99;
	int errors = 0;

	for (int i = 0; i < 20000; i++) {
		uint8_t *p = malloc(s.len);
		struct tracedec_error err;
		int rc;

		memcpy(p, s.p, s.len);
		for (int k = 0; k < 1 + i % 4; k++)
			p[stress_rand(&rng) % s.len] ^=
				(uint8_t)(1 + stress_rand(&rng) % 255);
		rc = tracedec_decode(p, s.len, NULL, NULL, &err);
		if (rc) {
			KT_CHECK_EQ(rc, -EBADMSG);
			/* == len: the stream ends where more was due. */
			KT_CHECK(err.offset <= s.len && err.what);
			errors++;
		}
		free(p);
	}
	KT_CHECK(errors > 1000);
	free(s.p);
}

static int on_string_len(void *arg, uint64_t gen, uint64_t id, const char *s,
			 size_t len)
{
	size_t *max = arg;

	(void)gen, (void)id, (void)s;
	if (len > *max)
		*max = len;
	return 0;
}

/* A stream of one S record: one string of @len bytes. */
static size_t string_record(uint8_t *p, size_t len)
{
	uint8_t *q = p + TB_STREAM_HDR + TB_REC_HDR;

	tb_put_stream_hdr(p);
	tb_put_u64(q, 1);
	q += 8;
	q += ring_varint_put(q, 1);
	q += ring_varint_put(q, len);
	memset(q, 'x', len);
	q += len;
	tb_put_rec_hdr(p + TB_STREAM_HDR, TB_KIND_STRINGS, 0,
		       (uint32_t)(q - p - TB_STREAM_HDR - TB_REC_HDR));
	return (size_t)(q - p);
}

/*
 * The string limit is one number (TB_MAX_STRING): the writer keeps that
 * many bytes of a longer string, the decoder takes that many and refuses
 * one more.
 */
static void string_limit(void)
{
	static const struct tracedec_visitor v = { .string = on_string_len };
	static uint8_t buf[TB_STREAM_HDR + TB_REC_HDR + 64 + 2 * TB_MAX_STRING];
	char long_s[TB_MAX_STRING + 500];
	struct tracebuf *t = new_tracer(1 << 20, 4096);
	struct tracedec_error err;
	struct stream s = { 0 };
	struct tracebuf_ev ev;
	size_t max = 0, n;

	KT_REQUIRE(t);
	KT_CHECK_EQ(TRACEBUF_MAX_STRING, TB_MAX_STRING);
	KT_CHECK_EQ(TRACEDEC_MAX_STRING, TB_MAX_STRING);
	memset(long_s, 'y', sizeof(long_s) - 1);
	long_s[sizeof(long_s) - 1] = 0;
	KT_REQUIRE(tracebuf_start(t) == 0);
	KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
	n = tracebuf_ev_string(&ev, long_s);
	long_s[TB_MAX_STRING] = 0; /* the same first TB_MAX_STRING bytes */
	KT_CHECK(n && tracebuf_ev_string(&ev, long_s) == n);
	tracebuf_end(&ev);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	read_to_eof(t, &s);
	KT_CHECK_EQ(tracedec_decode(s.p, s.len, &v, &max, &err), 0);
	KT_CHECK_EQ(max, TB_MAX_STRING);
	free(s.p);
	tracebuf_free(t);

	max = 0;
	n = string_record(buf, TB_MAX_STRING);
	KT_CHECK_EQ(tracedec_decode(buf, n, &v, &max, &err), 0);
	KT_CHECK_EQ(max, TB_MAX_STRING);
	n = string_record(buf, TB_MAX_STRING + 1);
	KT_CHECK_EQ(tracedec_decode(buf, n, &v, &max, &err), -EBADMSG);
	KT_CHECK(err.what && !strcmp(err.what, "bad string length"));
}

/* ---- fork ----------------------------------------------------------- */

static struct tracebuf *fork_tr;
static atomic_int fork_stop;

static void *fork_emitter_main(void *arg)
{
	uint64_t a[2] = { 1, 2 };

	(void)arg;
	while (!atomic_load_explicit(&fork_stop, memory_order_relaxed))
		tracebuf_emit(fork_tr, 1, a, 2);
	return NULL;
}

static void *fork_drainer_main(void *arg)
{
	struct tracebuf_chunk c;

	(void)arg;
	while (tracebuf_read(fork_tr, PROFBUF_BLOCKING, &c) == 0 && !c.eof)
		;
	return NULL;
}

/* In a child: close a generation, then stop. */
static int advance_child(void)
{
	if (tracebuf_advance(fork_tr))
		return 2;
	return tracebuf_stop(fork_tr) ? 3 : 0;
}

/*
 * A hundred forks while two threads emit and one reads: in each child
 * tracebuf_advance() and tracebuf_stop() return (the grace period must
 * not wait for the parent's threads, which do not exist there); advance
 * hung in 99 of 100 children.
 */
static void advance_in_fork_child(void)
{
	pthread_t th[3];
	int bad;

	fork_tr = new_tracer(16 << 20, 4096);
	KT_REQUIRE(fork_tr && tracebuf_start(fork_tr) == 0);
	atomic_store_explicit(&fork_stop, 0, memory_order_relaxed);
	KT_REQUIRE(pthread_create(&th[2], NULL, fork_drainer_main, NULL) == 0);
	for (int i = 0; i < 2; i++)
		KT_REQUIRE(pthread_create(&th[i], NULL, fork_emitter_main,
					  NULL) == 0);
	bad = testing_fork_children(100, advance_child);
	atomic_store_explicit(&fork_stop, 1, memory_order_relaxed);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	KT_CHECK_EQ(tracebuf_stop(fork_tr), 0);
	pthread_join(th[2], NULL);
	KT_CHECK_EQ(bad, 0);
	tracebuf_free(fork_tr);
}

int main(void)
{
	KT_RUN(roundtrip_every_form);
	KT_RUN(emit_errors);
	KT_RUN(table_sizes);
	KT_RUN(stop_never_started);
	KT_RUN(second_reader_busy);
	KT_RUN(threads_advance_reader);
	KT_RUN(threads_tiny_memory);
	KT_RUN(nested_sigprof);
	KT_RUN(threads_exit_mid_trace);
	KT_RUN(thread_slots_exhausted);
	KT_RUN(tracers_sharing_a_way);
	KT_RUN(emit_gate_closed);
	KT_RUN(emit_nested_too_deep);
	KT_RUN(emit_sees_gen_zero);
	KT_RUN(way_holds_anothers_slot);
	KT_RUN(cpu_samples);
	KT_RUN(cpu_samples_after_stop_refused);
	KT_RUN(cpu_samples_own_thread_and_time);
	KT_RUN(spans);
	KT_RUN(span_of_another_thread);
	KT_RUN(emit_refuses_library_types);
	KT_RUN(profbuf_hdrsize_getter);
	KT_RUN(decoder_truncated);
	KT_RUN(decoder_corrupted);
	KT_RUN(string_limit);
	KT_RUN(advance_in_fork_child);
	return ktest_exit();
}
