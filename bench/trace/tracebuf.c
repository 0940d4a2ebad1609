// SPDX-License-Identifier: MIT
/*
 * bench/trace/tracebuf.c - the tracebuf cases: tracebuf_emit() inline and
 * through the library's symbol, begin + stack + emit + end; the timed
 * batches, the untimed drains and each generation's validation.
 */
#include "bench/trace/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracedec.h>

#include "ring/compiler.h"

/*
 * The stream of one generation of the case being run, accumulated by the
 * drains for the validation at the end of the repetition.
 */
static uint8_t *acc;
static size_t acc_len, acc_cap;

/* ---- tracebuf ------------------------------------------------------------ */

/*
 * tb_batch_n() - a timed batch of tracebuf_emit(): as a C caller of the
 * library emits, inline (<profring/tracebuf_inline.h>), or with @call
 * through the library's symbol, as a binary built without the inline path
 * does (C++, PROFRING_NO_INLINE, or before it existed).
 */
static inline __attribute__((always_inline)) int
tb_batch_n(struct ev_case *c, struct bench_sample *s, unsigned int nargs,
	   bool call)
{
	struct tracebuf *tb = c->tb;
	uint64_t a[TRACEBUF_MAX_ARGS], n = c->n;
	struct bench_timer t;
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		make_args(n++, nargs, false, 0, a);
		if (call)
			bad |= (tracebuf_emit)(tb, EV_TYPE, a, nargs);
		else
			bad |= tracebuf_emit(tb, EV_TYPE, a, nargs);
	}
	bench_timer_stop(&t, s, c->batch);
	c->n = n;
	return bad ? fail(c, "tracebuf_emit", bad) : 0;
}

static int tb_batch_stack(struct ev_case *c, struct bench_sample *s)
{
	struct tracebuf *tb = c->tb;
	uint64_t a[2], n = c->n, id = c->stack_id, badid = 0;
	struct tracebuf_ev ev;
	struct bench_timer t;
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int i = 0; i < c->batch; i++) {
		bad = tracebuf_begin(tb, &ev);
		if (ring_unlikely(bad))
			break;
		a[0] = n++;
		a[1] = tracebuf_ev_stack(&ev, stack_pcs, STACK_DEPTH);
		badid |= a[1] ^ id;
		bad = tracebuf_ev_emit(&ev, EV_TYPE, a, 2);
		tracebuf_end(&ev);
		if (ring_unlikely(bad))
			break;
	}
	bench_timer_stop(&t, s, c->batch);
	c->n = n;
	if (bad)
		return fail(c, "tracebuf_begin/ev_emit", bad);
	return badid ? fail(c, "tracebuf_ev_stack (id changed)", EPROTO) : 0;
}

static int tb_batch(struct ev_case *c, struct bench_sample *s)
{
	bool call = c->impl == IM_CALL;

	if (c->stack)
		return tb_batch_stack(c, s);
	if (c->nargs == 0)
		return call ? tb_batch_n(c, s, 0, true)
			    : tb_batch_n(c, s, 0, false);
	if (c->nargs == 2)
		return call ? tb_batch_n(c, s, 2, true)
			    : tb_batch_n(c, s, 2, false);
	return call ? tb_batch_n(c, s, 4, true) : tb_batch_n(c, s, 4, false);
}

static int acc_append(const uint8_t *p, size_t len)
{
	uint8_t *q;
	size_t cap;

	if (acc_len + len > acc_cap) {
		cap = acc_cap ? acc_cap : 1 << 20;
		while (cap < acc_len + len)
			cap *= 2;
		q = realloc(acc, cap);
		if (!q)
			return -ENOMEM;
		acc = q;
		acc_cap = cap;
	}
	memcpy(acc + acc_len, p, len);
	acc_len += len;
	return 0;
}

/* Read everything the tracer has queued, into acc; untimed. */
static int tb_drain(struct ev_case *c)
{
	struct tracebuf_chunk ch;
	int rc;

	do {
		rc = tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
		if (!rc && ch.len)
			rc = acc_append(ch.data, ch.len);
		if (rc)
			return fail(c, "tracebuf_read", rc);
	} while (ch.len);
	return 0;
}

/*
 * struct verify - the validation of one generation.
 * @c:      the case
 * @next:   counter of the next event expected
 * @ticks:  time of the previous event
 * @stacks: stack records matching the interned stack
 * @ends:   end records
 * @why:    what was wrong
 */
struct verify {
	const struct ev_case *c;
	uint64_t next;
	uint64_t ticks;
	uint64_t stacks;
	uint64_t ends;
	const char *why;
};

static int v_bad(struct verify *v, const char *why)
{
	v->why = why;
	return -EPROTO;
}

static int v_event(void *arg, const struct tracedec_event *ev)
{
	struct verify *v = arg;
	const struct ev_case *c = v->c;
	uint64_t want[TRACEBUF_MAX_ARGS];

	if (ev->type != EV_TYPE || ev->nargs != c->nargs || ev->level)
		return v_bad(v, "event type, argument count or level");
	if (ev->ticks < v->ticks)
		return v_bad(v, "event time went back");
	v->ticks = ev->ticks;
	if (c->stack)
		make_args(v->next, 2, true, c->stack_id, want);
	else
		make_args(v->next, 4, false, 0, want);
	if (memcmp(ev->args, want, c->nargs * sizeof(want[0])))
		return v_bad(v, "event arguments");
	v->next++;
	return 0;
}

static int v_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		   size_t n)
{
	struct verify *v = arg;

	(void)gen;
	if (id != v->c->stack_id || n != STACK_DEPTH)
		return v_bad(v, "stack table");
	for (size_t i = 0; i < n; i++)
		if (pcs[i] != stack_pcs[i])
			return v_bad(v, "stack PCs");
	v->stacks++;
	return 0;
}

static int v_lost(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		  uint64_t count)
{
	(void)gen;
	(void)tid;
	(void)level;
	(void)count;
	return v_bad(arg, "lost events");
}

static int v_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct verify *v = arg;

	(void)gen;
	(void)batches;
	if (flags)
		return v_bad(v, "end record flags");
	v->ends++;
	return 0;
}

/* Decode the generation in acc: every event written, in order, no loss. */
static int tb_validate(struct ev_case *c)
{
	static const struct tracedec_visitor vis = {
		.event = v_event,
		.stack = v_stack,
		.lost = v_lost,
		.gen_end = v_end,
	};
	struct verify v = { .c = c };
	struct tracedec_error err = { 0 };
	struct tracebuf_stats st;
	int rc;

	rc = tracedec_decode(acc, acc_len, &vis, &v, &err);
	if (rc == -EBADMSG) {
		fprintf(stderr, "trace_bench: %s: bad stream at %zu: %s\n",
			c->name, err.offset, err.what);
		return -1;
	}
	if (rc)
		return fail(c, v.why ? v.why : "tracedec_decode", rc);
	if (v.next != c->n || v.ends != 1 || v.stacks != (c->stack ? 1 : 0)) {
		fprintf(stderr,
			"trace_bench: %s: %llu events written, %llu decoded, "
			"%llu end and %llu stack records\n",
			c->name, (unsigned long long)c->n,
			(unsigned long long)v.next, (unsigned long long)v.ends,
			(unsigned long long)v.stacks);
		return -1;
	}
	tracebuf_stats(c->tb, &st);
	if (st.lost)
		return fail(c, "tracebuf_stats: events lost", -ENOSPC);
	return 0;
}

/* Intern the stack in the new generation (untimed: the one miss). */
static int tb_prime_stack(struct ev_case *c)
{
	struct tracebuf_ev ev;
	int rc = tracebuf_begin(c->tb, &ev);

	if (rc)
		return fail(c, "tracebuf_begin", rc);
	c->stack_id = tracebuf_ev_stack(&ev, stack_pcs, STACK_DEPTH);
	tracebuf_end(&ev);
	return c->stack_id ? 0 : fail(c, "tracebuf_ev_stack", -ENOSPC);
}

/*
 * tb_run() - one repetition: a fresh generation, REP_EVENTS events in
 * timed batches each drained untimed, then advance, drain, validate.
 */
int tb_run(void *arg, struct bench_sample *s)
{
	struct ev_case *c = arg;
	int rc;

	acc_len = 0;
	if (acc_append(c->hdr, HDR_BYTES))
		return fail(c, "realloc", -ENOMEM);
	c->n = 0;
	if (c->stack && tb_prime_stack(c))
		return -1;
	while (c->n < REP_EVENTS)
		if (tb_batch(c, s) || tb_drain(c))
			return -1;
	rc = tracebuf_advance(c->tb);
	if (rc)
		return fail(c, "tracebuf_advance", rc);
	if (tb_drain(c) || tb_validate(c))
		return -1;
	c->bytes += acc_len - HDR_BYTES;
	c->events += c->n;
	return 0;
}

int tb_init(struct ev_case *c)
{
	struct tracebuf_opts o = {
		.buf_size = BUF_SIZE,
		.max_bytes = MAX_BYTES,
		.stack_bytes = 1 << 20,
		.expected_stacks = 64,
		.cpu_words = 0, /* no CPU profile buffer */
	};
	struct tracebuf_chunk ch;
	int rc;

	c->tb = tracebuf_new(&o);
	if (!c->tb)
		return fail(c, "tracebuf_new", errno);
	rc = tracebuf_name_type(c->tb, EV_TYPE, "bench",
				c->stack ? "uk" : &"uuuu"[4 - c->nargs]);
	if (rc)
		return fail(c, "tracebuf_name_type", rc);
	rc = tracebuf_start(c->tb);
	if (rc)
		return fail(c, "tracebuf_start", rc);
	rc = tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
	if (rc || ch.len != HDR_BYTES)
		return fail(c, "tracebuf_read (stream header)", rc ? rc : -EIO);
	memcpy(c->hdr, ch.data, HDR_BYTES);
	return 0;
}

void tb_fini(struct ev_case *c)
{
	struct tracebuf_chunk ch;

	if (!c->tb)
		return;
	tracebuf_stop(c->tb);
	do
		tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch);
	while (ch.len && !ch.eof);
	tracebuf_free(c->tb);
	c->tb = NULL;
}

/* Free the accumulated stream, at exit. */
void tb_free_acc(void)
{
	free(acc);
}
