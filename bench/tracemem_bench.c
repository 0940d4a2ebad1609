// SPDX-License-Identifier: MIT
/*
 * bench/tracemem_bench.c - the tracer's memory events against the plain
 * events that carry the same information, and the snapshot's cost.
 *
 * What it measures.
 *
 * 1. "mem alloc+free": ns per object for tracebuf_mem_alloc() of an
 *    object (its address, its size and a 16-frame stack already interned
 *    in the generation) and, 256 objects later, tracebuf_mem_free() of
 *    it, on one thread: two events and a table insert and remove.
 * 2. Its anchor, "plain events": the same two events without the table:
 *    tracebuf_begin(), tracebuf_ev_stack() of the same stack,
 *    tracebuf_ev_emit() of { id, size, stack id } (type 8),
 *    tracebuf_end(), then tracebuf_emit() of { id } (type 9).  So the
 *    ratio is what the live-object table costs over writing the events
 *    at all.  Goal: at most 2x.
 * 3. "snapshot N live": tracebuf_advance() with N live objects (N = 10^4,
 *    10^5), divided by N, against an advance with an empty table of the
 *    same size (which still walks every slot and waits for its grace
 *    periods), divided by the same N, for information.
 *
 * Each repetition writes --batch objects per timed batch; between
 * batches, untimed, the stream is drained.  At the end every stream is
 * checked with tracedec_mem_check(): the allocations and frees counted
 * are the ones made, nothing is lost, and no generation contradicts
 * itself; the snapshots' exists events are the live objects.  Any
 * failure aborts the benchmark.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "bench/harness.h"
#include "ring/compiler.h"

#define STACK_DEPTH 16
#define LAG 256 /* objects live at a time in the write cases */
#define BASE 0x10000000u
#define ALIGN 16u
#define REP_OBJECTS (1u << 18)

static uintptr_t stack_pcs[STACK_DEPTH];

struct mem_case {
	const char *name;
	bool mem; /* the memory API; else plain events */
	struct tracebuf *tb;
	unsigned int batch;
	uint64_t next; /* objects made */
	uint64_t allocs, frees; /* what the checks expect */
	uint8_t *stream;
	size_t len, cap;
};

static int fail(const char *what, int err)
{
	return bench_fail(what, err < 0 ? -err : err);
}

static int drain(struct mem_case *c)
{
	struct tracebuf_chunk ch;

	while (tracebuf_read(c->tb, PROFBUF_NONBLOCKING, &ch) == 0 &&
	       (ch.len || ch.eof)) {
		if (c->len + ch.len > c->cap) {
			size_t cap = (c->len + ch.len) * 2;
			uint8_t *p = realloc(c->stream, cap);

			if (!p)
				return fail("realloc", ENOMEM);
			c->stream = p;
			c->cap = cap;
		}
		memcpy(c->stream + c->len, ch.data, ch.len);
		c->len += ch.len;
		if (ch.eof)
			break;
	}
	return 0;
}

static uintptr_t addr_of(uint64_t i)
{
	return BASE + (uintptr_t)(i % (4 * LAG)) * ALIGN;
}

static int mem_batch(struct mem_case *c, struct bench_sample *s)
{
	struct bench_timer t;
	uint64_t i = c->next;
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int k = 0; k < c->batch; k++, i++) {
		bad |= tracebuf_mem_alloc(c->tb, addr_of(i), 64 + (i & 63),
					  stack_pcs, STACK_DEPTH);
		if (i >= LAG)
			bad |= tracebuf_mem_free(c->tb, addr_of(i - LAG));
	}
	bench_timer_stop(&t, s, c->batch);
	/* Freed: objects next - LAG ... i - LAG - 1, those that exist. */
	c->frees += i > LAG ? i - LAG - (c->next > LAG ? c->next - LAG : 0) : 0;
	c->allocs += c->batch;
	c->next = i;
	return bad ? fail("tracebuf_mem_alloc/free", bad) : 0;
}

static int plain_batch(struct mem_case *c, struct bench_sample *s)
{
	struct tracebuf_ev ev;
	struct bench_timer t;
	uint64_t i = c->next, a[3];
	int bad = 0;

	bench_timer_start(&t);
	for (unsigned int k = 0; k < c->batch; k++, i++) {
		bad |= tracebuf_begin(c->tb, &ev);
		if (ring_unlikely(bad))
			break;
		a[0] = (addr_of(i) - BASE) / ALIGN;
		a[1] = 64 + (i & 63);
		a[2] = tracebuf_ev_stack(&ev, stack_pcs, STACK_DEPTH);
		bad |= tracebuf_ev_emit(&ev, TRACEBUF_EV_USER, a, 3);
		tracebuf_end(&ev);
		if (i >= LAG) {
			a[0] = (addr_of(i - LAG) - BASE) / ALIGN;
			bad |= tracebuf_emit(c->tb, TRACEBUF_EV_USER + 1, a, 1);
		}
	}
	bench_timer_stop(&t, s, c->batch);
	c->next = i;
	return bad ? fail("tracebuf_begin/emit", bad) : 0;
}

static int write_run(void *arg, struct bench_sample *s)
{
	struct mem_case *c = arg;
	int rc = 0;

	for (unsigned int done = 0; done < REP_OBJECTS && !rc;
	     done += c->batch) {
		rc = c->mem ? mem_batch(c, s) : plain_batch(c, s);
		if (!rc)
			rc = drain(c);
	}
	return rc;
}

/* ---- the checks ------------------------------------------------------------- */

struct totals {
	uint64_t allocs, frees, exists, lost, bad;
};

static int add_gen(void *arg, const struct tracedec_mem_gen *g)
{
	struct totals *t = arg;

	t->allocs += g->allocs;
	t->frees += g->frees;
	t->exists += g->exists;
	t->lost += g->lost;
	t->bad += g->unknown_frees + g->double_allocs + g->snapshot_missing +
		  g->snapshot_extra;
	return 0;
}

/* The whole stream of @c (stopped): what it was asked to write. */
static int check(struct mem_case *c, uint64_t exists)
{
	static const struct tracedec_mem_visitor v = { .gen = add_gen };
	struct tracedec_error err = { 0 };
	struct totals t = { 0 };
	int rc = tracedec_mem_check(c->stream, c->len, &v, &t, &err);

	if (rc) {
		fprintf(stderr, "tracemem_bench: %s: stream: %s at %zu\n",
			c->name, err.what ? err.what : strerror(-rc),
			err.offset);
		return -1;
	}
	if (t.allocs != c->allocs || t.frees != c->frees || t.lost || t.bad ||
	    t.exists != exists) {
		fprintf(stderr,
			"tracemem_bench: %s: %llu allocs (want %llu), %llu "
			"frees (want %llu), %llu exists (want %llu), %llu "
			"lost, %llu contradictions\n",
			c->name, (unsigned long long)t.allocs,
			(unsigned long long)c->allocs,
			(unsigned long long)t.frees,
			(unsigned long long)c->frees,
			(unsigned long long)t.exists,
			(unsigned long long)exists, (unsigned long long)t.lost,
			(unsigned long long)t.bad);
		return -1;
	}
	return 0;
}

static int case_init(struct mem_case *c, size_t objects)
{
	struct tracebuf_opts o = {
		.max_bytes = 64 << 20,
		.mem_objects = objects,
		.mem_min_addr = BASE,
		.mem_align = ALIGN,
		.cpu_words = 0,
	};

	c->tb = tracebuf_new(&o);
	if (!c->tb)
		return fail("tracebuf_new", errno);
	if (tracebuf_start(c->tb))
		return fail("tracebuf_start", EINVAL);
	return 0;
}

static int case_stop(struct mem_case *c)
{
	int rc = tracebuf_stop(c->tb);

	if (rc)
		return fail("tracebuf_stop", rc);
	return drain(c);
}

static void case_fini(struct mem_case *c)
{
	tracebuf_free(c->tb);
	free(c->stream);
}

static int writes(const struct bench_opts *o)
{
	struct mem_case c[2] = {
		{ .name = "mem alloc+free", .mem = true, .batch = o->batch },
		{ .name = "plain events", .batch = o->batch },
	};
	struct bench_case bc[2] = {
		{ c[0].name, write_run, &c[0] },
		{ c[1].name, write_run, &c[1] },
	};
	struct bench_stats st[2];
	struct bench_row row = {
		.name = "mem alloc+free",
		.unit = BENCH_NS_PER_OP,
		.ours = &st[0],
		.ours_name = c[0].name,
		.anchor = &st[1],
		.anchor_name = c[1].name,
		.goal_ratio = 2.0,
		.goal_le = true,
		.note = "per object: 2 events + table insert and remove",
	};
	int rc = -1;

	if (case_init(&c[0], 4 * LAG) || case_init(&c[1], 0))
		goto out;
	if (bench_run_cases(bc, 2, o, st))
		goto out;
	/* Live at the stop: the last LAG objects; one generation. */
	if (case_stop(&c[0]) || case_stop(&c[1]) || check(&c[0], 0))
		goto out;
	bench_report_row(&row);
	rc = 0;
out:
	case_fini(&c[0]);
	case_fini(&c[1]);
	return rc;
}

/* ---- the snapshot ---------------------------------------------------------- */

struct snap_case {
	struct mem_case m;
	size_t live; /* objects live at each advance */
	size_t per; /* an advance counts as this many operations */
	uint64_t advances;
};

static int snap_run(void *arg, struct bench_sample *s)
{
	struct snap_case *c = arg;
	struct bench_timer t;
	int rc;

	bench_timer_start(&t);
	rc = tracebuf_advance(c->m.tb);
	bench_timer_stop(&t, s, c->per);
	c->advances++;
	if (rc)
		return fail("tracebuf_advance", rc);
	return drain(&c->m);
}

static int snap_fill(struct snap_case *c)
{
	for (size_t i = 0; i < c->live; i++) {
		int rc = tracebuf_mem_alloc(c->m.tb, BASE + i * ALIGN, 100,
					    stack_pcs, 1 + i % STACK_DEPTH);

		if (rc)
			return fail("tracebuf_mem_alloc", rc);
	}
	c->m.allocs = c->live;
	return drain(&c->m);
}

static int snapshot(const struct bench_opts *o, size_t live)
{
	struct snap_case c[2] = {
		{ .m.name = "advance, live", .live = live, .per = live },
		{ .m.name = "advance, none", .per = live },
	};
	struct bench_case bc[2] = {
		{ c[0].m.name, snap_run, &c[0] },
		{ c[1].m.name, snap_run, &c[1] },
	};
	struct bench_stats st[2];
	char name[48], note[96];
	int rc = -1;

	for (int i = 0; i < 2; i++)
		if (case_init(&c[i].m, live))
			goto out;
	if (snap_fill(&c[0]) || bench_run_cases(bc, 2, o, st))
		goto out;
	if (case_stop(&c[0].m) || case_stop(&c[1].m) ||
	    check(&c[0].m, c[0].advances * live))
		goto out;
	/* Both divided by the live count of ours. */
	snprintf(name, sizeof(name), "snapshot %zu live", live);
	snprintf(note, sizeof(note),
		 "info; advance / %zu; anchor: the same table (%zu slots) "
		 "empty",
		 live, 2 * live);
	bench_info_row(name, BENCH_NS_PER_OP, &st[0], c[0].m.name, &st[1],
		       c[1].m.name, note);
	rc = 0;
out:
	case_fini(&c[0].m);
	case_fini(&c[1].m);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o;

	bench_parse_args(argc, argv, &o);
	for (int i = 0; i < STACK_DEPTH; i++)
		stack_pcs[i] = 0x400000 + (uintptr_t)i * 0x40;
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "tracemem_bench: cannot pin to CPU 0\n");
	bench_report_begin("tracemem_bench", &o);
	if (writes(&o) || snapshot(&o, 10000) || snapshot(&o, 100000))
		return 1;
	bench_report_note(
		"tracebuf memory events, one thread: an object allocated and "
		"freed %d objects later, against the same two events written "
		"without the live-object table; and tracebuf_advance() with "
		"N live objects (their snapshot) against one with none.",
		LAG);
	bench_report_end();
	return 0;
}
