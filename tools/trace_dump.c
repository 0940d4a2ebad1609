// SPDX-License-Identifier: MIT
/*
 * trace_dump.c - profring-trace dump: every record and event of a
 * stream as text, ids resolved through the first pass's tables.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <profring/tracedec.h>

#include "tools/trace_report_impl.h"

static void dump_batch_line(struct trace *t, const struct tracedec_event *ev)
{
	if (t->in_batch && t->last_gen == ev->gen && t->last_tid == ev->tid &&
	    t->last_level == ev->level && t->last_seq == ev->batch_seq)
		return;
	fprintf(t->out,
		"batch gen=%" PRIu64 " thread=%" PRIu64 " level=%u seq=%" PRIu64
		"\n",
		ev->gen, ev->tid, ev->level, ev->batch_seq);
	t->in_batch = true;
	t->last_gen = ev->gen;
	t->last_tid = ev->tid;
	t->last_level = ev->level;
	t->last_seq = ev->batch_seq;
}

static void dump_arg(struct trace *t, const struct gen_info *g, char kind,
		     uint64_t v)
{
	if (put_ref(t, g, kind, v, false))
		return;
	if (kind == 's' || kind == 'k') {
		fprintf(t->out, "%s#%" PRIu64 "(%s)",
			kind == 's' ? "string" : "stack", v,
			v ? "missing" : "lost");
	} else if (kind == 'o' && g && g->has_mem_info) {
		fprintf(t->out, "%" PRIu64 "@0x%" PRIx64, v,
			g->min_addr + v * g->align);
	} else {
		fprintf(t->out, "%" PRIu64, v);
	}
}

static int dump_event(void *arg, const struct tracedec_event *ev)
{
	struct trace *t = arg;
	const struct gen_info *g = gen_get(t, ev->gen, false);
	/* The batch line has the writer; the event, the thread it is about. */
	uint64_t ns = to_ns(t, g, ev->time) - t->base_ns;

	dump_batch_line(t, ev);
	fprintf(t->out,
		"  event gen=%" PRIu64 " thread=%" PRIu64 " level=%u t=%" PRIu64
		"ns ",
		ev->gen, ev->thread, ev->level, ns);
	put_type(t->out, g, ev->type, false);
	if (ev->bytes) {
		fprintf(t->out, " bytes[%zu]=", ev->nbytes);
		put_hex_bytes(t->out, ev->bytes, ev->nbytes);
	}
	for (unsigned int i = 0; i < ev->nargs; i++) {
		char kind = type_arg(g, ev->type, i);

		fprintf(t->out, " %c:", kind);
		dump_arg(t, g, kind, ev->args[i]);
	}
	putc('\n', t->out);
	return 0;
}

static int dump_string(void *arg, uint64_t gen, uint64_t id, const char *s,
		       size_t len)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "string gen=%" PRIu64 " id=%" PRIu64 " ", gen, id);
	put_quoted(t->out, s, len);
	putc('\n', t->out);
	return 0;
}

static int dump_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		      size_t n)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "stack gen=%" PRIu64 " id=%" PRIu64 " frames=%zu", gen,
		id, n);
	for (size_t i = 0; i < n; i++)
		fprintf(t->out, " 0x%" PRIx64, pcs[i]);
	putc('\n', t->out);
	return 0;
}

static int dump_type(void *arg, uint64_t gen, unsigned int type,
		     const char *name, size_t name_len, const char *spec,
		     size_t spec_len)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "type gen=%" PRIu64 " type=%u name=", gen, type);
	put_quoted(t->out, name, name_len);
	fputs(" spec=", t->out);
	put_quoted(t->out, spec, spec_len);
	putc('\n', t->out);
	return 0;
}

static int dump_freq(void *arg, uint64_t gen, uint64_t hz)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out, "freq gen=%" PRIu64 " hz=%" PRIu64 "\n", gen, hz);
	return 0;
}

static int dump_lost(void *arg, uint64_t gen, uint64_t tid, unsigned int level,
		     uint64_t count)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out,
		"lost gen=%" PRIu64 " thread=%" PRIu64
		" level=%u count=%" PRIu64 "\n",
		gen, tid, level, count);
	return 0;
}

static int dump_end(void *arg, uint64_t gen, uint64_t batches, uint64_t flags)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out,
		"end gen=%" PRIu64 " batches=%" PRIu64 " flags=%#" PRIx64
		"%s\n",
		gen, batches, flags,
		flags & 1 ? " (tables incomplete: out of memory)" : "");
	return 0;
}

static int dump_mem_info(void *arg, uint64_t gen, uint64_t min_addr,
			 uint64_t align, uint64_t page_size)
{
	struct trace *t = arg;

	t->in_batch = false;
	fprintf(t->out,
		"meminfo gen=%" PRIu64 " min_addr=0x%" PRIx64 " align=%" PRIu64
		" page_size=%" PRIu64 "\n",
		gen, min_addr, align, page_size);
	return 0;
}

static const struct tracedec_visitor dump_visitor = {
	.mem_info = dump_mem_info,
	.event = dump_event,
	.string = dump_string,
	.stack = dump_stack,
	.type = dump_type,
	.freq = dump_freq,
	.lost = dump_lost,
	.gen_end = dump_end,
};

int trace_dump(struct trace *t)
{
	fputs("# ", t->out);
	put_text(t->out, t->path, strlen(t->path));
	fprintf(t->out,
		": %zu bytes, %" PRIu64
		" events; t= ns since the first event\n",
		t->len, t->events);
	if (t->hz_guessed)
		fprintf(t->out,
			"# some generations have no frequency record\n");
	return trace_decode(t, &dump_visitor);
}
