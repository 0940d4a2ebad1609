// SPDX-License-Identifier: MIT
/*
 * trace_report.c - profring-trace's reports of a trace stream held in
 * memory (trace_report.h): the stream is validated, then printed.
 *
 * The stream is decoded twice with trace_walk() (the incremental decoder,
 * a window at a time): the first pass (trace_collect.c) validates it and
 * collects each generation's tables, the second prints, resolving ids
 * through those tables: every record as text (trace_dump.c), the counts
 * (trace_summary.c) or trace-event JSON (trace_json.c), the memory
 * events' lines and track in each (trace_mem.c), the bytes escaped by
 * trace_text.c.  A mapped file's pages are given back as each window is
 * done (a table looked up later is read again from the file), so that a
 * report takes the memory of the tables, not of the file; the memory
 * reports (trace_mem.c) walk it the same way with the incremental
 * tracedec_mem_stream_*.
 *
 * Linear time: generations and threads are found through hash indexes
 * (trace_index.c); a generation's strings and stacks are sorted once
 * and found by binary search.  Linear memory: strings and type names are
 * not copied (they point into the stream), the PCs of all stacks share
 * one pool, a generation holds only the types it names, and arrays grow
 * by half, their room untouched until used.  The worst stream is one of
 * minimal table entries: 2 bytes of string entry take 24 bytes of table;
 * an ordinary trace, mostly events (which are not kept), needs a small
 * fraction of its size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include <profring/tracedec.h>

#include "tools/trace_report.h"
#include "tools/trace_report_impl.h"
#include "tracebuf/tracebuf_format.h"

/* A generation without its end record lacks its tables: refuse it. */
static int check_ended(const struct trace *t)
{
	char msg[128];

	for (size_t i = 0; i < t->ngens; i++) {
		if (t->gens[i].ended)
			continue;
		snprintf(msg, sizeof(msg),
			 "offset %zu: stream ends inside generation %" PRIu64
			 " (no end record)",
			 t->len, t->gens[i].gen);
		complain(t, msg);
		return -1;
	}
	return 0;
}

/* Give back the pages of a mapped stream in [*from, @to) (page-aligned). */
static void drop_pages(struct trace *t, size_t *from, size_t to)
{
	size_t page = (size_t)getauxval(AT_PAGESZ);

	to &= ~(page - 1);
	if (!t->mapped || to <= *from)
		return;
	madvise((void *)(t->buf + *from), to - *from, MADV_DONTNEED);
	*from = to;
}

/* An incremental decoder, whichever: its feed and end. */
struct walker {
	void *s;
	int (*feed)(void *s, const uint8_t *buf, size_t len, size_t *used,
		    struct tracedec_error *err);
	int (*end)(void *s, size_t left, struct tracedec_error *err);
};

/* Feed the stream to @w a window at a time (see trace_walk()). */
static int walk(struct trace *t, const struct walker *w,
		struct tracedec_error *err)
{
	size_t off = 0, dropped = 0, used = 0;
	int rc = 0;

	while (off < t->len && !rc) {
		size_t rest = t->len - off;
		size_t n = rest < WALK_WINDOW ? rest : WALK_WINDOW;

		rc = w->feed(w->s, t->buf + off, n, &used, err);
		if (!rc && !used && n < rest) {
			/* A record longer than the window: all of it. */
			n = TB_STREAM_HDR + TB_REC_HDR + TB_MAX_REC_PAYLOAD;
			rc = w->feed(w->s, t->buf + off, rest < n ? rest : n,
				     &used, err);
		}
		if (!used)
			break;
		off += used;
		drop_pages(t, &dropped, off);
	}
	if (!rc)
		rc = w->end(w->s, t->len - off, err);
	drop_pages(t, &dropped, t->len);
	return rc;
}

static int dec_feed(void *s, const uint8_t *buf, size_t len, size_t *used,
		    struct tracedec_error *err)
{
	return tracedec_stream_feed(s, buf, len, used, err);
}

static int dec_end(void *s, size_t left, struct tracedec_error *err)
{
	return tracedec_stream_end(s, left, err);
}

int trace_walk(struct trace *t, const struct tracedec_visitor *v, void *arg,
	       struct tracedec_error *err)
{
	struct walker w = { tracedec_stream_new(v, arg), dec_feed, dec_end };
	int rc;

	if (!w.s)
		return -ENOMEM;
	rc = walk(t, &w, err);
	tracedec_stream_free(w.s);
	return rc;
}

static int mem_feed(void *s, const uint8_t *buf, size_t len, size_t *used,
		    struct tracedec_error *err)
{
	return tracedec_mem_stream_feed(s, buf, len, used, err);
}

static int mem_end(void *s, size_t left, struct tracedec_error *err)
{
	return tracedec_mem_stream_end(s, left, err);
}

int trace_mem_walk(struct trace *t, const struct tracedec_mem_visitor *v,
		   void *arg)
{
	struct walker w = { tracedec_mem_stream_new(v, arg), mem_feed,
			    mem_end };
	int rc;

	if (!w.s)
		return -ENOMEM;
	rc = walk(t, &w, NULL);
	tracedec_mem_stream_free(w.s);
	return rc;
}

/**
 * trace_decode() - run trace_walk() over the stream with @v.
 *
 * Return: 0, or -1 with the error and its offset on t->err.
 */
int trace_decode(struct trace *t, const struct tracedec_visitor *v)
{
	struct tracedec_error err = { 0 };
	int rc = trace_walk(t, v, t, &err);
	char msg[160];

	if (rc == -EBADMSG) {
		snprintf(msg, sizeof(msg), "offset %zu: %s", err.offset,
			 err.what ? err.what : "bad stream");
		complain(t, msg);
		return -1;
	}
	if (rc) {
		complain(t, strerror(rc < 0 ? -rc : rc));
		return -1;
	}
	return 0;
}

int trace_report(enum trace_report_cmd cmd, const char *name,
		 const uint8_t *buf, size_t len, FILE *out, FILE *err)
{
	return trace_report_mapped(cmd, name, buf, len, false, out, err);
}

int trace_report_mapped(enum trace_report_cmd cmd, const char *name,
			const uint8_t *buf, size_t len, bool mapped, FILE *out,
			FILE *err)
{
	struct trace t = { .path = name,
			   .buf = buf,
			   .len = len,
			   .mapped = mapped,
			   .seed = trace_seed(),
			   .out = out,
			   .err = err };
	int rc = -1;

	if (len >= 12) /* else trace_decode() says what is wrong */
		t.version = (unsigned int)buf[8] | (unsigned int)buf[9] << 8 |
			    (unsigned int)buf[10] << 16 |
			    (unsigned int)buf[11] << 24;
	if (trace_decode(&t, &trace_collect_visitor) || check_ended(&t))
		goto out;
	trace_finish_collect(&t);
	switch (cmd) {
	case TRACE_REPORT_DUMP:
		rc = trace_dump(&t);
		break;
	case TRACE_REPORT_SUMMARY:
		rc = trace_summary(&t);
		break;
	case TRACE_REPORT_JSON:
		rc = trace_json(&t);
		break;
	default:
		complain(&t, "unknown report");
		break;
	}
out:
	trace_free(&t);
	return rc;
}
