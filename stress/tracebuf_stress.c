// SPDX-License-Identifier: MIT
/*
 * tracebuf_stress.c - torture the tracer: threads that start and exit all
 * the time, SIGPROF handlers emitting nested events, advance at random
 * moments from its own thread, a tiny memory bound if asked, and a reader
 * that decodes and checks everything as it comes.
 *
 * Each of --writers lanes runs worker threads one after another, each for
 * a few milliseconds.  A worker (writer id w) and its signal handler
 * (writer id w + 1) emit events of type 8 with arguments (writer id,
 * sequence number); every 16th event also interns a string and a stack.
 * The reader decodes every chunk as it arrives (tracedec_decode on each
 * record) and checks:
 *  - for every writer, each (level, generation) run of its events comes in
 *    increasing sequence order, and its runs of different generations do
 *    not overlap and follow the generation order;
 *  - every writer's decoded events == its accepted emits, and per thread
 *    id, the lost counts in the stream == the emits it was refused;
 *  - every end record's batch count == the batches of that generation,
 *    and generations end in order, each once;
 *  - every string and stack id an event uses is in its generation's
 *    tables;
 *  - every read succeeds, and after the stop every call that needs a
 *    running tracer returns -ESHUTDOWN and the reader sees EOF.
 * Exit status 0 only if nothing was violated.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The inline emit path, perturbed as the library is (make stress-perturb). */
#include "ring/perturb.h"
#define TRACEBUF__PERTURB() ring_perturb()
#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "tracebuf/tracebuf_format.h"
#include "testing/harness.h"

#define PROG "tracebuf_stress"
#define MAX_WRITERS (1 << 16)
#define RUNS 6 /* (gen, min, max) runs tracked per writer and level */

static struct {
	long seconds, writers, seed, hz, memory, buf;
	bool signals;
} opt = {
	.seconds = 5,
	.writers = 4,
	.seed = 1,
	.hz = 5000,
	.memory = 4 << 20,
	.buf = 16384,
};

static const struct stress_flag flags[] = {
	{ "seconds", "run time (default 5)", STRESS_INT, &opt.seconds },
	{ "writers", "concurrent worker lanes (default 4)", STRESS_INT,
	  &opt.writers },
	{ "seed", "PRNG seed (default 1)", STRESS_INT, &opt.seed },
	{ "signals", "SIGPROF handlers emit nested events", STRESS_BOOL,
	  &opt.signals },
	{ "hz", "signals per second per thread (default 5000)", STRESS_INT,
	  &opt.hz },
	{ "memory", "tracer memory bound, bytes (default 4 MiB)", STRESS_INT,
	  &opt.memory },
	{ "buf", "per-thread buffer bytes (default 16384)", STRESS_INT,
	  &opt.buf },
	{ NULL, NULL, 0, NULL },
};

struct run {
	uint64_t gen, min, max;
};

/* What a writer did (filled by it) and what the reader saw of it. */
struct wstat {
	uint64_t tid, ok, lost, seq;
	uint64_t seen;
	struct run runs[2][RUNS];
	uint8_t nruns[2];
};

static struct tracebuf *tracer;
static struct wstat *ws;
static atomic_uint next_writer;
static atomic_bool stop;
static atomic_ulong violations;
static uintptr_t stack_pool[8][12];

static void violation(const char *what, uint64_t a, uint64_t b)
{
	if (atomic_fetch_add(&violations, 1) < 10)
		fprintf(stderr, PROG ": %s (%llu, %llu)\n", what,
			(unsigned long long)a, (unsigned long long)b);
}

/* ---- writers ------------------------------------------------------------- */

/*
 * One event of writer @w: every 16th with a string and a stack, in a
 * begin/end pair; the others by tracebuf_emit(), alternately inline
 * (<profring/tracebuf_inline.h>) and through the library's symbol, so
 * that the two paths race each other, the handlers and advance.
 */
static void emit_one(uint32_t w)
{
	struct wstat *s = &ws[w];
	struct tracebuf_ev ev;
	uint64_t args[4] = { w, s->seq++ };
	int rc;

	if (args[1] & 15) {
		if (args[1] & 1)
			rc = tracebuf_emit(tracer, 8, args, 2);
		else
			rc = (tracebuf_emit)(tracer, 8, args, 2);
	} else {
		rc = tracebuf_begin(tracer, &ev);
		if (!rc) {
			args[2] = tracebuf_ev_string(&ev, "stress");
			args[3] = tracebuf_ev_stack(&ev, stack_pool[w & 7], 12);
			rc = tracebuf_ev_emit(&ev, 8, args, 4);
			tracebuf_end(&ev);
		}
	}
	if (rc == 0)
		s->ok++;
	else if (rc == -ENOSPC)
		s->lost++;
	else
		violation("emit refused", w, (uint64_t)-rc);
}

static _Thread_local uint32_t tls_handler_writer;

static void on_sigprof(int sig)
{
	int saved = errno;

	(void)sig;
	if (tls_handler_writer)
		emit_one(tls_handler_writer);
	errno = saved;
}

static void *worker_main(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg;
	uint64_t rng = w * 2654435761u + (uint64_t)opt.seed;
	uint64_t end = stress_now_ns() + 1000000 + stress_rand(&rng) % 20000000;
	struct stress_timer timer = { 0 };

	ws[w].tid = ws[w + 1].tid = (uint64_t)syscall(SYS_gettid);
	if (opt.signals) {
		tls_handler_writer = w + 1;
		stress_timer_start(&timer, SIGPROF, opt.hz, false);
	}
	while (stress_now_ns() < end) {
		for (int i = 0; i < 32; i++)
			emit_one(w);
		if (stress_rand(&rng) % 4 == 0)
			sched_yield();
	}
	stress_timer_stop(&timer);
	tls_handler_writer = 0;
	return NULL;
}

static void *lane_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		uint32_t w = atomic_fetch_add(&next_writer, 2);
		pthread_t th;

		if (w + 2 > MAX_WRITERS)
			break;
		pthread_create(&th, NULL, worker_main, (void *)(uintptr_t)w);
		pthread_join(th, NULL);
	}
	return NULL;
}

static void *advancer_main(void *arg)
{
	uint64_t rng = (uint64_t)opt.seed, *advances = arg;

	while (!atomic_load(&stop)) {
		stress_sleep_ns(stress_rand(&rng) % 10000000);
		if (tracebuf_advance(tracer) == 0)
			(*advances)++;
	}
	return NULL;
}

/* ---- the reader's checks ------------------------------------------------ */

struct check {
	uint64_t last_end, events, records, bytes, batches_by_gen[64];
	/* Ids (below 64) used by events, and present in the tables. */
	uint64_t strings_used[64], stacks_used[64];
	uint64_t strings_have[64], stacks_have[64];
	uint64_t lost_by_tid_total;
	uint64_t *lost_by_tid; /* indexed by tid % 2^16, checked at the end */
};

static void track_run(struct wstat *s, unsigned int lv, uint64_t gen,
		      uint64_t seq)
{
	struct run *r = NULL;

	for (int i = 0; i < s->nruns[lv]; i++)
		if (s->runs[lv][i].gen == gen)
			r = &s->runs[lv][i];
	if (!r) {
		if (s->nruns[lv] == RUNS)
			return; /* a long-lived writer: stop tracking runs */
		r = &s->runs[lv][s->nruns[lv]++];
		*r = (struct run){ gen, seq, seq };
		return;
	}
	if (seq <= r->max)
		violation("events out of order in a generation", seq, r->max);
	r->max = seq;
}

static int on_event(void *arg, const struct tracedec_event *ev)
{
	struct check *c = arg;
	uint64_t w = ev->args[0], g = ev->gen & 63;

	c->events++;
	if (ev->type != 8 || ev->nargs < 2 || w >= MAX_WRITERS)
		return violation("foreign event", ev->type, w), 0;
	ws[w].seen++;
	track_run(&ws[w], ev->level, ev->gen, ev->args[1]);
	if (ev->nargs == 4) {
		if (ev->args[2] < 64)
			c->strings_used[g] |= 1ull << ev->args[2];
		if (ev->args[3] < 64)
			c->stacks_used[g] |= 1ull << ev->args[3];
	}
	return 0;
}

static int on_string(void *arg, uint64_t gen, uint64_t id, const char *s,
		     size_t len)
{
	struct check *c = arg;

	if (len != 6 || memcmp(s, "stress", 6))
		violation("bad string", gen, len);
	if (id < 64)
		c->strings_have[gen & 63] |= 1ull << id;
	return 0;
}

static int on_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		    size_t n)
{
	struct check *c = arg;

	if (n != 12 || pcs[0] < 0x1000)
		violation("bad stack", gen, n);
	if (id < 64)
		c->stacks_have[gen & 63] |= 1ull << id;
	return 0;
}

static int on_lost(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		   uint64_t count)
{
	struct check *c = arg;

	(void)gen, (void)level;
	c->lost_by_tid[tid & 0xffff] += count;
	c->lost_by_tid_total += count;
	return 0;
}

static const struct tracedec_visitor visitor = {
	.event = on_event,
	.string = on_string,
	.stack = on_stack,
	.lost = on_lost,
};

/* Decode one record on its own (a stream header, then the record). */
static void decode_record(struct check *c, const uint8_t *rec, size_t len)
{
	static uint8_t buf[TB_STREAM_HDR + (1 << 24)];
	struct tracedec_error err;

	if (len > sizeof(buf) - TB_STREAM_HDR)
		return violation("huge record", len, 0);
	tb_put_stream_hdr(buf);
	memcpy(buf + TB_STREAM_HDR, rec, len);
	if (tracedec_decode(buf, TB_STREAM_HDR + len, &visitor, c, &err))
		violation("record does not decode", err.offset, rec[0]);
}

/* The end record: its batch count and order, and the tables' ids. */
static void check_end(struct check *c, const uint8_t *rec)
{
	uint64_t gen = tb_get_u64(rec + 8), batches = tb_get_u64(rec + 16);
	uint64_t g = gen & 63;

	if (gen != c->last_end + 1)
		violation("generation ends out of order", gen, c->last_end);
	if (batches != c->batches_by_gen[g])
		violation("end record batch count", batches,
			  c->batches_by_gen[g]);
	/* Ids are not dense: an insert that loses a race wastes one. */
	if ((c->strings_used[g] & ~c->strings_have[g]) ||
	    (c->stacks_used[g] & ~c->stacks_have[g]))
		violation("an event uses an id its tables lack", gen,
			  c->stacks_used[g] & ~c->stacks_have[g]);
	c->last_end = gen;
	c->batches_by_gen[g] = 0;
	c->strings_used[g] = c->stacks_used[g] = 0;
	c->strings_have[g] = c->stacks_have[g] = 0;
}

/* A chunk is whole records: decode the others, check the end ourselves. */
static void check_chunk(struct check *c, const uint8_t *p, size_t len)
{
	c->bytes += len;
	while (len >= TB_REC_HDR) {
		size_t n = TB_REC_HDR + tb_get_u32(p + 4);
		uint64_t gen = n >= 16 ? tb_get_u64(p + 8) : 0;

		if (n > len || n < 16)
			return violation("chunk not made of records", n, len);
		if (gen <= c->last_end)
			violation("record after its generation ended", gen,
				  c->last_end);
		c->records++;
		if (p[0] == TB_KIND_END) {
			check_end(c, p);
		} else {
			c->batches_by_gen[gen & 63] += p[0] == TB_KIND_BATCH;
			decode_record(c, p, n);
		}
		p += n;
		len -= n;
	}
	if (len)
		violation("chunk not made of records", len, 0);
}

static void *reader_main(void *arg)
{
	struct check *c = arg;
	struct tracebuf_chunk ch;
	bool header = true;
	int rc;

	while ((rc = tracebuf_read(tracer, PROFBUF_BLOCKING, &ch)) == 0 &&
	       !ch.eof) {
		if (header) {
			if (ch.len != TB_STREAM_HDR ||
			    memcmp(ch.data, TB_MAGIC, 8))
				violation("bad stream header", ch.len, 0);
			header = false;
			c->bytes += ch.len;
			continue;
		}
		check_chunk(c, ch.data, ch.len);
	}
	if (rc)
		violation("read refused", (uint64_t)-rc, 0);
	return NULL;
}

/* ---- the end ------------------------------------------------------------ */

/*
 * Stopped: everything says so with -ESHUTDOWN; the reader sees EOF; the
 * stats count every byte read, the stream header's too.
 */
static void check_stopped(const struct check *c)
{
	uint64_t args[2] = { 0, 0 };
	struct tracebuf_chunk ch;
	struct tracebuf_stats st;

	if (tracebuf_emit(tracer, 8, args, 2) != -ESHUTDOWN ||
	    tracebuf_advance(tracer) != -ESHUTDOWN ||
	    tracebuf_stop(tracer) != -ESHUTDOWN ||
	    tracebuf_start(tracer) != -ESHUTDOWN)
		violation("not -ESHUTDOWN after stop", 0, 0);
	if (tracebuf_read(tracer, PROFBUF_NONBLOCKING, &ch) || !ch.eof)
		violation("no EOF after stop", 0, 0);
	tracebuf_stats(tracer, &st);
	if (st.bytes != c->bytes)
		violation("stats bytes != bytes read", st.bytes, c->bytes);
}

static void check_writers(struct check *c, uint32_t nwriters, uint64_t *ok,
			  uint64_t *lost)
{
	uint64_t *lost_by_tid = calloc(1 << 16, sizeof(uint64_t));

	*ok = *lost = 0;
	for (uint32_t w = 0; w < nwriters; w++) {
		struct wstat *s = &ws[w];

		if (s->seen != s->ok)
			violation("events decoded != accepted", s->seen, s->ok);
		for (int lv = 0; lv < 2; lv++)
			for (int i = 1; i < s->nruns[lv]; i++)
				if (s->runs[lv][i].gen >
					    s->runs[lv][i - 1].gen &&
				    s->runs[lv][i].min <=
					    s->runs[lv][i - 1].max)
					violation("generations overlap", w, i);
		lost_by_tid[s->tid & 0xffff] += s->lost;
		*ok += s->ok;
		*lost += s->lost;
	}
	for (int i = 0; i < 1 << 16; i++)
		if (lost_by_tid[i] != c->lost_by_tid[i])
			violation("lost in the stream != refused (thread)",
				  c->lost_by_tid[i], lost_by_tid[i]);
	free(lost_by_tid);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigprof,
				.sa_flags = SA_RESTART };
	struct tracebuf_opts o = { 0 };
	struct check *c = calloc(1, sizeof(*c));
	pthread_t *lanes, reader, advancer;
	uint64_t start, advances = 0, ok, lost;
	uint32_t nwriters;
	char fields[512];

	stress_parse(argc, argv, PROG, flags);
	if (opt.writers < 1 || !c)
		return 2;
	o.buf_size = (size_t)opt.buf;
	o.max_bytes = (size_t)opt.memory;
	o.stack_bytes = 1 << 20;
	o.expected_stacks = 64;
	tracer = tracebuf_new(&o);
	ws = calloc(MAX_WRITERS, sizeof(*ws));
	c->lost_by_tid = calloc(1 << 16, sizeof(uint64_t));
	lanes = calloc((size_t)opt.writers, sizeof(*lanes));
	if (!tracer || !ws || !c->lost_by_tid || !lanes) {
		perror(PROG);
		return 2;
	}
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 12; k++)
			stack_pool[i][k] = 0x1000 + (uintptr_t)(i * 100 + k);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);

	start = stress_now_ns();
	if (tracebuf_start(tracer))
		violation("start refused", 0, 0);
	pthread_create(&reader, NULL, reader_main, c);
	pthread_create(&advancer, NULL, advancer_main, &advances);
	for (long i = 0; i < opt.writers; i++)
		pthread_create(&lanes[i], NULL, lane_main, NULL);
	stress_sleep_ns((uint64_t)opt.seconds * 1000000000u);
	atomic_store(&stop, true);
	for (long i = 0; i < opt.writers; i++)
		pthread_join(lanes[i], NULL);
	pthread_join(advancer, NULL);
	if (tracebuf_stop(tracer))
		violation("stop refused", 0, 0);
	pthread_join(reader, NULL);
	signal(SIGPROF, SIG_IGN);
	check_stopped(c);

	nwriters = atomic_load(&next_writer);
	if (nwriters > MAX_WRITERS)
		nwriters = MAX_WRITERS;
	check_writers(c, nwriters, &ok, &lost);
	if (c->last_end != advances + 1)
		violation("generations ended != advances + 1", c->last_end,
			  advances + 1);
	snprintf(fields, sizeof(fields),
		 "lanes=%ld signals=%d threads=%u generations=%llu "
		 "seconds=%.1f ops=%llu verified=%llu lost=%llu records=%llu "
		 "bytes=%llu rate=%.2fM/s",
		 opt.writers, opt.signals, nwriters / 2,
		 (unsigned long long)c->last_end,
		 (double)(stress_now_ns() - start) / 1e9,
		 (unsigned long long)(ok + lost), (unsigned long long)c->events,
		 (unsigned long long)lost, (unsigned long long)c->records,
		 (unsigned long long)c->bytes,
		 (double)c->events * 1e3 / (double)(stress_now_ns() - start));
	tracebuf_free(tracer);
	free(lanes);
	free(ws);
	free(c->lost_by_tid);
	free(c);
	return stress_summary(PROG, fields, atomic_load(&violations));
}
