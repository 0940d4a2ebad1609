// SPDX-License-Identifier: MIT
/*
 * tracedec_test.c - the incremental decoder (tracedec_stream_*) against
 * the whole-buffer one: a stream fed in pieces of every size, cut at every
 * byte, and damaged at every byte gives the same callbacks, the same
 * errors and the same offsets as tracedec_decode() given it whole; and
 * the incremental memory check (tracedec_mem_stream_*) reports what
 * tracedec_mem_check() does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "testing/ktest.h"
#include "testing/trace_stream.h"

/* A digest of every callback, in order. */
struct digest {
	uint64_t h, calls;
};

static void mix(struct digest *g, uint64_t v)
{
	g->h = (g->h ^ v) * 0x100000001b3ull;
}

static int on_event(void *arg, const struct tracedec_event *ev)
{
	struct digest *g = arg;

	mix(g, ev->gen ^ ev->tid << 8 ^ ev->ticks << 16 ^ ev->type);
	mix(g, ev->thread ^ ev->time ^ ev->duration ^ ev->nargs ^ ev->nbytes);
	for (unsigned int i = 0; i < ev->nargs; i++)
		mix(g, ev->args[i]);
	for (size_t i = 0; i < ev->nbytes; i++)
		mix(g, ev->bytes[i]);
	g->calls++;
	return 0;
}

static int on_string(void *arg, uint64_t gen, uint64_t id, const char *s,
		     size_t len)
{
	struct digest *g = arg;

	mix(g, gen ^ id << 4 ^ len);
	for (size_t i = 0; i < len; i++)
		mix(g, (uint8_t)s[i]);
	g->calls++;
	return 0;
}

static int on_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		    size_t n)
{
	struct digest *g = arg;

	mix(g, gen ^ id << 4 ^ n);
	for (size_t i = 0; i < n; i++)
		mix(g, pcs[i]);
	g->calls++;
	return 0;
}

static int on_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct digest *g = arg;

	mix(g, gen ^ batches << 8 ^ flags << 40);
	g->calls++;
	return 0;
}

static const struct tracedec_visitor visitor = {
	.event = on_event,
	.string = on_string,
	.stack = on_stack,
	.gen_end = on_end,
};

struct result {
	int rc;
	struct tracedec_error err;
	struct digest g;
};

static struct result whole(const uint8_t *p, size_t len)
{
	struct result r = { 0 };

	r.rc = tracedec_decode(p, len, &visitor, &r.g, &r.err);
	return r;
}

/*
 * Feed @len bytes in pieces of @piece new bytes each (after the carry of
 * the last feed), as a reader of a pipe would.
 */
static struct result pieces(const uint8_t *p, size_t len, size_t piece)
{
	struct result r = { 0 };
	struct tracedec_stream *s = tracedec_stream_new(&visitor, &r.g);
	uint8_t *buf = malloc(len + 1);
	size_t have = 0, off = 0, used;

	if (!s || !buf)
		abort();
	while (off < len) {
		size_t n = len - off < piece ? len - off : piece;

		memcpy(buf + have, p + off, n);
		have += n;
		off += n;
		r.rc = tracedec_stream_feed(s, buf, have, &used, &r.err);
		if (r.rc)
			break;
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	if (!r.rc)
		r.rc = tracedec_stream_end(s, have, &r.err);
	tracedec_stream_free(s);
	free(buf);
	return r;
}

static bool same(const struct result *a, const struct result *b)
{
	if (a->rc != b->rc || a->g.h != b->g.h || a->g.calls != b->g.calls)
		return false;
	return a->rc != -EBADMSG || (a->err.offset == b->err.offset &&
				     !strcmp(a->err.what, b->err.what));
}

/* A stream of a few generations: events, a payload, strings, stacks. */
static struct stream make_stream(void)
{
	struct tracebuf *t = tracebuf_new(&(struct tracebuf_opts){
		.buf_size = 4096, .max_bytes = 1 << 20 });
	struct stream s = { 0 };
	uintptr_t pcs[3] = { 0x1000, 0x2000, 0x3000 };

	if (!t || tracebuf_start(t))
		abort();
	for (int g = 0; g < 3; g++) {
		for (uint64_t i = 0; i < 300; i++) {
			struct tracebuf_ev ev;
			uint64_t a[3] = { i, 0, 0 };

			if (tracebuf_begin(t, &ev))
				continue;
			a[1] = tracebuf_ev_string(&ev, i % 2 ? "odd" : "even");
			a[2] = tracebuf_ev_stack(&ev, pcs, 1 + i % 3);
			tracebuf_ev_emit(&ev, TRACEBUF_EV_USER, a, 3);
			if (i % 50 == 0)
				tracebuf_ev_emit_bytes(&ev,
						       TRACEBUF_EV_USER + 1,
						       "payload", 7);
			tracebuf_end(&ev);
		}
		tracebuf_span(t, "generation", tracebuf_ticks(), NULL, 0);
		tracebuf_advance(t);
		read_ready(t, &s);
	}
	tracebuf_stop(t);
	read_to_eof(t, &s);
	tracebuf_free(t);
	return s;
}

/* Pieces of any size give what the whole stream gives. */
static void any_piece_size(void)
{
	struct stream s = make_stream();
	struct result w = whole(s.p, s.len);
	size_t sizes[] = { 1,  2,  3,	7,    8,    9,	   15,
			   16, 17, 100, 4095, 4096, 65536, s.len };
	int bad = 0;

	KT_CHECK_EQ(w.rc, 0);
	KT_CHECK(w.g.calls > 900);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct result r = pieces(s.p, s.len, sizes[i]);

		bad += !same(&w, &r);
	}
	KT_CHECK_EQ(bad, 0);
	free(s.p);
}

/* Cut at every byte: the same error at the same offset. */
static void cut_anywhere(void)
{
	struct stream s = make_stream();
	int bad = 0;

	for (size_t len = 0; len <= s.len; len += 1 + len / 64) {
		struct result w = whole(s.p, len);
		struct result r = pieces(s.p, len, 1000);

		bad += !same(&w, &r);
	}
	KT_CHECK_EQ(bad, 0);
	free(s.p);
}

/* Damaged at every byte: the same error at the same offset. */
static void damaged_anywhere(void)
{
	struct stream s = make_stream();
	uint8_t *p = malloc(s.len);
	int bad = 0, errors = 0;

	KT_REQUIRE(p);
	for (size_t at = 0; at < s.len; at += 1 + at / 128) {
		struct result w, r;

		memcpy(p, s.p, s.len);
		p[at] ^= 0xa5;
		w = whole(p, s.len);
		r = pieces(p, s.len, 1 + at % 5000);
		bad += !same(&w, &r);
		errors += w.rc == -EBADMSG;
	}
	KT_CHECK_EQ(bad, 0);
	KT_CHECK(errors > 0);
	free(p);
	free(s.p);
}

/* The memory check's callbacks, digested. */
static int on_mem_gen(void *arg, const struct tracedec_mem_gen *m)
{
	struct digest *g = arg;

	mix(g, m->gen ^ m->exists << 8 ^ m->allocs << 16 ^ m->frees << 24);
	mix(g, m->live_objects ^ m->live_bytes << 8 ^ m->unknown_frees << 40);
	mix(g, m->double_allocs ^ m->snapshot_missing << 8 ^
		       m->snapshot_extra << 16 ^ m->lost << 24);
	g->calls++;
	return 0;
}

static int on_mem_change(void *arg, uint64_t gen, uint64_t ticks, int64_t bytes,
			 int64_t objects)
{
	struct digest *g = arg;

	mix(g, gen ^ ticks << 4 ^ (uint64_t)bytes << 20 ^ (uint64_t)objects);
	g->calls++;
	return 0;
}

static const struct tracedec_mem_visitor mem_visitor = {
	.gen = on_mem_gen,
	.change = on_mem_change,
};

/* A stream of memory events over several generations. */
static struct stream make_mem_stream(void)
{
	struct tracebuf *t =
		tracebuf_new(&(struct tracebuf_opts){ .buf_size = 4096,
						      .max_bytes = 1 << 20,
						      .mem_objects = 1024,
						      .mem_min_addr = 0x10000,
						      .mem_align = 16 });
	struct stream s = { 0 };
	uintptr_t pc = 0x1000;

	if (!t || tracebuf_start(t))
		abort();
	for (uint64_t g = 0; g < 4; g++) {
		for (uint64_t i = 0; i < 200; i++) {
			uintptr_t addr = 0x10000 + 16 * ((i * 7 + g) % 150);

			if (tracebuf_mem_free(t, addr) == -ENOENT)
				tracebuf_mem_alloc(t, addr, 16 + i, &pc, 1);
		}
		tracebuf_advance(t);
		read_ready(t, &s);
	}
	tracebuf_stop(t);
	read_to_eof(t, &s);
	tracebuf_free(t);
	return s;
}

/*
 * The incremental memory check, fed in pieces of any size, reports what
 * tracedec_mem_check() reports of the whole stream.
 */
static void mem_check_pieces(void)
{
	struct stream s = make_mem_stream();
	struct digest whole_g = { 0 };
	size_t sizes[] = { 1, 7, 100, 4096, s.len };
	int bad = 0;

	KT_CHECK_EQ(
		tracedec_mem_check(s.p, s.len, &mem_visitor, &whole_g, NULL),
		0);
	KT_CHECK(whole_g.calls > 100);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct digest g = { 0 };
		struct tracedec_mem_stream *ms =
			tracedec_mem_stream_new(&mem_visitor, &g);
		uint8_t *buf = malloc(s.len);
		size_t have = 0, off = 0, used;
		int rc = 0;

		KT_REQUIRE(ms && buf);
		while (off < s.len && !rc) {
			size_t n =
				s.len - off < sizes[k] ? s.len - off : sizes[k];

			memcpy(buf + have, s.p + off, n);
			have += n;
			off += n;
			rc = tracedec_mem_stream_feed(ms, buf, have, &used,
						      NULL);
			memmove(buf, buf + used, have - used);
			have -= used;
		}
		if (!rc)
			rc = tracedec_mem_stream_end(ms, have, NULL);
		bad += rc || g.h != whole_g.h || g.calls != whole_g.calls;
		tracedec_mem_stream_free(ms);
		free(buf);
	}
	KT_CHECK_EQ(bad, 0);
	free(s.p);
}

static void bad_calls(void)
{
	struct tracedec_stream *s = tracedec_stream_new(NULL, NULL);
	struct tracedec_error err;
	size_t used = 1;

	KT_REQUIRE(s);
	KT_CHECK_EQ(tracedec_stream_feed(s, NULL, 1, &used, &err), -EINVAL);
	KT_CHECK_EQ(
		tracedec_stream_feed(s, (const uint8_t *)"PR", 2, NULL, &err),
		-EINVAL);
	/* A wrong magic is said at once, and again. */
	KT_CHECK_EQ(
		tracedec_stream_feed(s, (const uint8_t *)"PX", 2, &used, &err),
		-EBADMSG);
	KT_CHECK_EQ(used, 0);
	KT_CHECK_EQ(err.offset, 0);
	KT_CHECK_EQ(tracedec_stream_end(s, 0, &err), -EBADMSG);
	tracedec_stream_free(s);
	tracedec_stream_free(NULL);
	s = tracedec_stream_new(NULL, NULL);
	KT_REQUIRE(s);
	/* Nothing at all is not a trace. */
	KT_CHECK_EQ(tracedec_stream_end(s, 0, &err), -EBADMSG);
	KT_CHECK(err.what && strstr(err.what, "not a profring trace"));
	tracedec_stream_free(s);
}

int main(void)
{
	KT_RUN(any_piece_size);
	KT_RUN(cut_anywhere);
	KT_RUN(damaged_anywhere);
	KT_RUN(mem_check_pieces);
	KT_RUN(bad_calls);
	return ktest_exit();
}
