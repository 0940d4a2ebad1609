// SPDX-License-Identifier: MIT
/*
 * author.c - issue 36's profiler author, each seam in turn, written as a
 * user writes it: the installed headers and libraries (pkg-config), C11
 * or C++17 (built both ways by testing/user_test.sh, under ASan+UBSan
 * and, against profring-tsan, under TSan).  Prints "ok NAME" or
 * "not ok NAME" for each check; exits 1 if any failed.
 */
#include <profring/profbuf.h>
#include <profring/stacktab.h>
#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The host's own names, also names inside the library (item 8). */
int ring_page_size(void);
int tb_emit(void);
int ring_page_size(void)
{
	return 42;
}
int tb_emit(void)
{
	return 7;
}
#ifdef __cplusplus
}
#endif

static int failed;

static void check(const char *name, int ok)
{
	printf("%s %s\n", ok ? "ok" : "not ok", name);
	failed |= !ok;
}

/* The stream, as the reader thread collects it. */
struct collected {
	struct tracebuf *t;
	uint8_t *p;
	size_t len, cap;
};

static void *trace_reader(void *arg)
{
	struct collected *c = (struct collected *)arg;
	struct tracebuf_chunk ch;

	while (tracebuf_read(c->t, PROFBUF_BLOCKING, &ch) == 0 && !ch.eof) {
		if (c->len + ch.len > c->cap) {
			c->cap = 2 * (c->len + ch.len);
			c->p = (uint8_t *)realloc(c->p, c->cap);
			if (!c->p)
				abort();
		}
		memcpy(c->p + c->len, ch.data, ch.len);
		c->len += ch.len;
	}
	return NULL;
}

struct sampler {
	struct profbuf *pb;
	uint64_t tid, ticks[5];
	int refused_after_stop;
};

static void *sampler_main(void *arg)
{
	struct sampler *s = (struct sampler *)arg;
	uintptr_t pc = 0x401000;

	s->tid = (uint64_t)syscall(SYS_gettid);
	for (int i = 0; i < 5; i++) {
		uint64_t hdr[2];

		hdr[0] = s->tid;
		hdr[1] = 1;
		s->ticks[i] = tracebuf_ticks();
		profbuf_write(s->pb, NULL, (int64_t)s->ticks[i], hdr, 2, &pc,
			      1);
	}
	return NULL;
}

/* What the decoder saw. */
struct seen {
	uint64_t samples, own_thread, spans, span_ok, events;
	const struct sampler *s;
};

static int on_event(void *arg, const struct tracedec_event *ev)
{
	struct seen *n = (struct seen *)arg;

	n->events++;
	if (ev->type == TRACEBUF_EV_CPU_SAMPLE) {
		n->samples++;
		n->own_thread += ev->thread == n->s->tid &&
				 ev->time == n->s->ticks[(n->samples - 1) % 5];
	} else if (ev->type == TRACEBUF_EV_SPAN) {
		n->spans++;
		n->span_ok += ev->duration > 0 && ev->nargs == 2;
	}
	return 0;
}

static void tracer_seams(void)
{
	struct tracebuf *t = tracebuf_new(NULL);
	struct collected c;
	struct sampler s;
	struct seen n, m;
	struct tracedec_visitor v;
	struct tracedec_error err;
	struct tracedec_stream *ds;
	pthread_t rd, th;
	uint64_t a[1] = { 1 }, start;
	uintptr_t pc = 0x402000;
	size_t off = 0, have = 0, used;
	uint8_t piece[256];
	int rc;

	memset(&c, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	memset(&n, 0, sizeof(n));
	memset(&v, 0, sizeof(v));
	if (!t || tracebuf_start(t))
		abort();
	c.t = t;
	s.pb = tracebuf_cpu_profbuf(t);
	pthread_create(&rd, NULL, trace_reader, &c);
	check("hdrsize_getter", profbuf_hdrsize(s.pb) == 2);
	pthread_create(&th, NULL, sampler_main, &s);
	pthread_join(th, NULL);
	start = tracebuf_ticks();
	tracebuf_advance(t);
	check("span_written", tracebuf_span(t, "advance", start, NULL, 0) == 0);
	check("reserved_types_refused",
	      tracebuf_emit(t, TRACEBUF_EV_CPU_SAMPLE, a, 1) == -EINVAL &&
		      tracebuf_emit(t, 7, a, 1) == -EINVAL &&
		      tracebuf_emit(t, TRACEBUF_EV_USER, a, 1) == 0);
	tracebuf_stop(t);
	pthread_join(rd, NULL);
	for (int i = 0; i < 3; i++) {
		uint64_t hdr[2] = { 1, 1 };

		s.refused_after_stop += profbuf_write(s.pb, NULL, 0, hdr, 2,
						      &pc, 1) == -ESHUTDOWN;
	}
	check("samples_after_stop_shutdown", s.refused_after_stop == 3);
	n.s = &s;
	v.event = on_event;
	rc = tracedec_decode(c.p, c.len, &v, &n, &err);
	check("trace_decodes", rc == 0);
	check("samples_all_in", n.samples == 5);
	check("samples_own_thread_time", n.own_thread == 5);
	check("span_decoded", n.spans == 1 && n.span_ok == 1);
	/* The same stream in 256-byte pieces. */
	memset(&m, 0, sizeof(m));
	m.s = &s;
	ds = tracedec_stream_new(&v, &m);
	rc = ds ? 0 : -ENOMEM;
	while (!rc && off < c.len) {
		size_t k = c.len - off < sizeof(piece) - have
				   ? c.len - off
				   : sizeof(piece) - have;
		uint8_t *big = NULL;
		const uint8_t *p = piece;

		memcpy(piece + have, c.p + off, k);
		off += k;
		have += k;
		/* A record longer than a piece: feed it from the stream. */
		if (have == sizeof(piece)) {
			big = c.p + off - have;
			p = big;
			have = c.len - (off - have);
			off = c.len;
		}
		rc = tracedec_stream_feed(ds, p, have, &used, &err);
		if (big) {
			have -= used;
			off -= have;
			have = 0;
			continue;
		}
		memmove(piece, piece + used, have - used);
		have -= used;
	}
	if (!rc)
		rc = tracedec_stream_end(ds, have, &err);
	tracedec_stream_free(ds);
	check("stream_decode_same",
	      rc == 0 && m.events == n.events && m.samples == n.samples);
	free(c.p);
	tracebuf_free(t);
}

static void stacktab_seams(void)
{
	struct stacktab *tab = stacktab_new(1 << 20, 1024);
	uintptr_t pcs[3] = { 0x1000, 0x2000, 0x3000 }, out[3];
	uint64_t ref;

	if (!tab)
		abort();
	ref = stacktab_put_ref(tab, pcs, 3);
	stacktab_reset(tab, NULL, NULL);
	check("ref_survives_reset",
	      stacktab_get_ref(tab, ref, out, 3) == 3 && out[2] == 0x3000);
	stacktab_reset(tab, NULL, NULL);
	check("ref_expires", stacktab_get_ref(tab, ref, out, 3) == 0);
	stacktab_free(tab);
}

static void profbuf_seams(void)
{
	struct profbuf *b = profbuf_new(2, 1 << 10, 16);
	struct profbuf_read r; /* C++ too: the elaborated name */
	struct profbuf_iter it;
	struct profbuf_record rec;
	uint64_t hdr[2] = { 9, 1 };
	uintptr_t pc = 0x5000;
	int records = 0;

	if (!b)
		abort();
	profbuf_write(b, NULL, 1, hdr, 2, &pc, 1);
	profbuf_close(b);
	check("write_after_close_shutdown",
	      profbuf_write(b, NULL, 2, hdr, 2, &pc, 1) == -ESHUTDOWN);
	while (profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0 && !r.eof) {
		profbuf_iter_init(&it, &r, profbuf_hdrsize(b));
		while (profbuf_iter_next(&it, &rec))
			records += rec.hdr[0] == 9;
	}
	check("iter_with_getter", records == 1);
	profbuf_free(b);
}

int main(void)
{
	tracer_seams();
	stacktab_seams();
	profbuf_seams();
	check("host_names_kept", ring_page_size() == 42 && tb_emit() == 7);
	return failed;
}
