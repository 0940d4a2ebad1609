// SPDX-License-Identifier: MIT
/*
 * trace_json.c - profring-trace json: Chrome trace-event JSON (for the
 * Perfetto UI), an instant event per trace event on its thread's
 * track; the live-heap counter track comes from trace_mem.c.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "tools/trace_report_impl.h"

static void json_u64(FILE *out, uint64_t v)
{
	/* Above 2^53 a JavaScript number loses digits: keep them as text. */
	if (v > JSON_MAX_SAFE_INT)
		fprintf(out, "\"%" PRIu64 "\"", v);
	else
		fprintf(out, "%" PRIu64, v);
}

static void json_arg(const struct trace *t, const struct gen_info *g, char kind,
		     uint64_t v)
{
	if (!put_ref(t, g, kind, v, true))
		json_u64(t->out, v); /* a number, or an id not resolved */
}

/* A span's name: its string, or "span" if the string is not there. */
static void json_span_name(const struct trace *t, const struct gen_info *g,
			   uint64_t id)
{
	const struct str_ent *s = find_string(g, id);

	if (s)
		put_quoted(t->out, s->s, s->len);
	else
		fputs("\"span\"", t->out);
}

/* Microseconds with nanosecond digits, as the format's ts and dur take. */
static void json_us(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000,
		(unsigned int)(ns % 1000));
}

static int json_event(void *arg, const struct tracedec_event *ev)
{
	struct trace *t = arg;
	const struct gen_info *g = gen_get(t, ev->gen, false);
	/* A CPU sample on the track of the thread it sampled, at its time. */
	uint64_t ns = to_ns(t, g, ev->time) - t->base_ns;

	fputs(t->printed++ ? ",\n{\"name\":" : "\n{\"name\":", t->out);
	if (is_span(ev)) {
		/* A complete event: a slice from its start, nested by time. */
		json_span_name(t, g, ev->args[0]);
		fputs(",\"cat\":\"profring\",\"ph\":\"X\"", t->out);
		json_us(t->out, "ts", ns);
		json_us(t->out, "dur",
			to_ns(t, g, ev->time + ev->duration) - t->base_ns - ns);
	} else {
		put_type(t->out, g, ev->type, true);
		fputs(",\"cat\":\"profring\",\"ph\":\"i\",\"s\":\"t\"", t->out);
		json_us(t->out, "ts", ns);
	}
	fprintf(t->out,
		",\"pid\":1,\"tid\":%" PRIu64 ",\"args\":{\"gen\":%" PRIu64
		",\"level\":%u",
		ev->thread, ev->gen, ev->level);
	if (ev->bytes) {
		fputs(",\"bytes\":\"", t->out);
		put_hex_bytes(t->out, ev->bytes, ev->nbytes);
		putc('"', t->out);
	}
	for (unsigned int i = 0; i < ev->nargs; i++) {
		fprintf(t->out, ",\"arg%u\":", i);
		json_arg(t, g, type_arg(g, ev->type, i), ev->args[i]);
	}
	fputs("}}", t->out);
	return 0;
}

static const struct tracedec_visitor json_visitor = {
	.event = json_event,
};

/* Thread-name metadata, so that each track is labelled. */
static void json_threads(struct trace *t)
{
	for (size_t i = 0; i < t->nthreads; i++)
		fprintf(t->out,
			"%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%" PRIu64
			",\"args\":{\"name\":\"thread %" PRIu64 "\"}}",
			t->printed++ ? "," : "", t->threads[i].tid,
			t->threads[i].tid);
}

int trace_json(struct trace *t)
{
	fputs("{\"traceEvents\":[", t->out);
	if (trace_decode(t, &json_visitor))
		return -1;
	if (trace_mem_json(t))
		return -1;
	json_threads(t);
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", t->out);
	return 0;
}
