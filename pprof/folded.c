// SPDX-License-Identifier: MIT
/*
 * pprof/folded.c - the profile as folded stacks (pprof.h:
 * prof_folded_write()), as flamegraph.pl and speedscope read them.
 *
 * Frames are named as in the pprof encoding (builder.c's tables; an
 * inlined function is a frame of its own).  The writer joins them root
 * first with ';', sorts the paths and adds up the
 * sampling periods of equal paths: a line's count is CPU time in periods
 * (period_ns each), so its share is the share of pprof's cpu/nanoseconds
 * value, not of the signals (profile.h).  A heap profile's lines count
 * the bytes of its default sample type (inuse_space, or alloc_space); a
 * path whose count is 0 has no line.  When samples come from more than one process (two
 * distinct nonzero pids), each real stack is rooted at a "[pid N]" frame,
 * so that a flame graph splits by process first, as perf's
 * stackcollapse-perf.pl --pid does with "comm-pid" (we have no process
 * name, and brackets mark our synthetic frames); a sample of pid 0, such
 * as the lost-samples entry, has no such frame.
 */
#include "pprof/builder.h"
#include "pprof/outfile.h"
#include "pprof/proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append @name to @text with ';' and newlines replaced. */
static void put_folded_name(struct proto_buf *text, const char *name)
{
	for (const char *c = name; *c; c++) {
		char ch = *c == ';' ? ':' : *c == '\n' || *c == '\r' ? ' ' : *c;

		proto_put_raw(text, &ch, 1);
	}
}

/*
 * Append the path of @ps, NUL-terminated, to @text; with @by_pid, rooted
 * at a "[pid N]" frame when its pid is known (a profile of several
 * processes: see the top of the file).
 */
static void put_folded_path(struct builder *b, struct proto_buf *text,
			    const struct prof_sample *ps, bool by_pid)
{
	char root[32];
	uint32_t loc;

	if (by_pid && ps->pid) {
		snprintf(root, sizeof(root), "[pid %u];", ps->pid);
		proto_put_raw(text, root, strlen(root));
	}
	if (ps->special)
		put_folded_name(text, ps->special);
	for (size_t i = ps->special ? 0 : ps->npcs; i-- > 0;) {
		const struct loc *l;

		loc = pb_frame_loc(b, ps, i);
		if (b->err)
			break;
		if (!loc)
			continue; /* junk (pb_frame_loc()), never the leaf */
		l = &b->locs[loc - 1];
		for (uint32_t k = l->nlines; k-- > 0;) { /* outermost first */
			put_folded_name(
				text,
				pb_func_name(b, b->lines[l->line0 + k].func));
			if (k)
				proto_put_raw(text, ";", 1);
		}
		if (i)
			proto_put_raw(text, ";", 1);
	}
	proto_put_raw(text, "", 1);
}

struct folded_line {
	size_t off; /* of the path in the text */
	const char *path;
	uint64_t count;
};

static int line_cmp(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/* Sort the paths, add up equal ones, print "path count\n" lines (not 0). */
static int folded_text(struct folded_line *lines, size_t n,
		       struct proto_buf *out)
{
	char num[32];
	size_t i, j;

	qsort(lines, n, sizeof(*lines), line_cmp);
	for (i = 0; i < n; i = j) {
		uint64_t count = 0;

		for (j = i; j < n && !strcmp(lines[j].path, lines[i].path); j++)
			count += lines[j].count;
		if (!count)
			continue; /* a heap site with nothing in use */
		snprintf(num, sizeof(num), " %" PRIu64 "\n", count);
		proto_put_raw(out, lines[i].path, strlen(lines[i].path));
		proto_put_raw(out, num, strlen(num));
	}
	return out->err;
}

/* A folded line's weight: pprof's default sample type, in its units. */
static uint64_t folded_count(const struct prof_profile *p,
			     const struct prof_sample *ps)
{
	if (!p->heap_rate)
		return ps->periods;
	return ps->heap[p->heap_alloc_default ? PROF_HEAP_ALLOC_SPACE
					      : PROF_HEAP_INUSE_SPACE];
}

/* Every sample's path into @text, and a line for it into @*linesp. */
static int folded_paths(struct builder *b, const struct prof_profile *p,
			struct proto_buf *text, struct folded_line **linesp,
			size_t *nlines)
{
	struct folded_line *lines = calloc(p->nsamples + 1, sizeof(*lines));
	bool by_pid = false;
	uint32_t pid = 0;
	size_t n = 0;

	if (!lines)
		return -ENOMEM;
	/* Two distinct nonzero pids: several processes. */
	for (size_t i = 0; i < p->nsamples && !by_pid; i++) {
		uint32_t q = p->samples[i].pid;

		by_pid = q && pid && q != pid;
		pid = q ? q : pid;
	}
	*linesp = lines;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *ps = &p->samples[i];

		if (!ps->special && !ps->npcs)
			continue;
		lines[n].off = text->len;
		lines[n++].count = folded_count(p, ps);
		put_folded_path(b, text, ps, by_pid);
	}
	if (b->err || text->err)
		return b->err ? b->err : text->err;
	for (size_t i = 0; i < n; i++)
		lines[i].path = (const char *)text->data + lines[i].off;
	*nlines = n;
	return 0;
}

int prof_folded_write(const struct prof_profile *p, struct prof_symbolizer *s,
		      const char *path)
{
	struct proto_buf text = { 0 }, out = { 0 };
	struct folded_line *lines = NULL;
	struct builder b;
	size_t n = 0;
	int err;

	err = path ? pb_check_profile(p) : -EINVAL;
	if (err)
		return err;
	err = pb_init(&b, p, s);
	if (err)
		goto out;
	err = folded_paths(&b, p, &text, &lines, &n);
	if (err)
		goto out;
	err = folded_text(lines, n, &out);
	if (err)
		goto out;
	err = prof_outfile_write(path, out.data, out.len);
out:
	free(lines);
	proto_buf_free(&text);
	proto_buf_free(&out);
	pb_free(&b);
	return err;
}
