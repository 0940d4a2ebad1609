// SPDX-License-Identifier: MIT
/*
 * summary.c - summarize a decoded profile (decode.h) per function and per
 * thread, for one sample type: struct prof_summary (report.h).
 *
 * The frames of a sample are its locations leaf first and, within a
 * location, its lines in order (line[0] is the innermost inlined
 * function).  A frame is named by its function's name (its system name if
 * the name is empty), or "0x<address>" when its location has no line or
 * the line no named function; by line (prof_summary_load_opts() with
 * @by_line), a named frame is "name file:line" instead (as `go tool
 * pprof -lines` names it; "name:line" without a file, the name alone
 * without a line number), built once per line of the profile.  Frames are grouped by name: a sample's
 * value goes to the flat value of its first frame and, once per sample,
 * to the cum value of every name among its frames.  Per thread, a
 * sample's value goes to its "tid" label's number (the samples without
 * one have a row of their own), named by a "thread" label of one of them.
 * Sums saturate instead of overflowing (prof_sat_add()).
 *
 * The work is linear in the profile.  Frame names are grouped by sorting
 * once each string that names a function.  A location's groups are
 * listed, each once, before any sample is read.  A sample adds up the
 * lists of its distinct locations (a location it cites again adds
 * nothing).  That is still the product of samples and lines when every
 * sample cites one large location, so the frames visited are counted
 * against a limit set by the size of the profile (SUM_FRAMES_PER_BYTE,
 * SUM_FRAMES_BASE_M), past which the answer is -EFBIG.  Samples are read
 * from the message as they are added up (pprof_doc_samples()), not kept;
 * only the samples with a "tid" label leave a row each, for the values
 * per tid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof/decode.h"
#include "pprof/report.h"
#include "pprof/table.h"

/* Frames a summary may visit: per byte of the message, plus. */
#define SUM_FRAMES_PER_BYTE 32
#define SUM_FRAMES_BASE_M 16

/* The most frames a summary of @doc may visit. */
static size_t frames_limit(const struct pprof_doc *doc)
{
	return SUM_FRAMES_PER_BYTE * doc->rawlen +
	       ((size_t)SUM_FRAMES_BASE_M << 20);
}

/* A location's frame groups, each once, leaf first: in summary.lgroups. */
struct loc_groups {
	size_t first, n;
};

/*
 * What prof_summary_decode() hands out (as &pub) and prof_summary_free()
 * takes back: the summary, the decoded profile its strings point into,
 * and the arrays it is built from.  Every array is counted against the
 * profile's memory limit: allocated by sum_alloc(), or grown by
 * pprof_vec_reserve().
 */
struct summary {
	struct prof_summary pub;
	struct pprof_doc doc;
	struct pprof_err *e;
	const char **comments;
	const char **names; /* sorted, unique: the frame groups */
	size_t ngroups;
	char *loc_text; /* the "0x<address>" names, one after another */
	const char **loc_name; /* per location: its "0x<address>", or NULL */
	bool by_line;
	char *line_text; /* by line: the "name file:line" names */
	const char **line_name; /* per line: its name, or NULL */
	size_t *line_group;
	size_t *str_group; /* per string: the group it names, if it does */
	size_t *func_group, *loc_group;
	struct loc_groups *lg; /* per location */
	size_t *lgroups;
	/* Adding samples up (sum_samples()). */
	int64_t *flat, *cum;
	size_t *gstamp, *lstamp, stamp;
	size_t frames_left;
	struct vec rows; /* a struct prof_report_tid per sample with a tid */
	struct prof_report_tid none; /* the samples without one */
	size_t nnone;
	struct prof_report_func *funcs;
	struct prof_report_tid *tids;
	struct prof_report_location *locs;
	struct prof_report_mapping *maps;
};

/*
 * @n + 1 zeroed elements of @size bytes, counted against the profile's
 * memory limit; NULL with the error noted (*@err: -EFBIG or -ENOMEM).
 */
static void *sum_alloc(struct summary *s, size_t n, size_t size, int *err)
{
	void *p = NULL;

	*err = 0;
	if (n == SIZE_MAX || pprof_doc_charge(&s->doc, n + 1, size))
		*err = pprof_err_big(s->e, &s->doc);
	else if (!(p = calloc(n + 1, size)))
		*err = pprof_err_nomem(s->e);
	return p;
}

/* The string index function @f is named by, or -1 if none. */
static int64_t func_name_ix(const struct pprof_doc *doc, size_t f)
{
	const struct d_func *fn = &VEC_AT(doc->funcs, struct d_func, f);

	if (doc_str(doc, fn->name)[0])
		return fn->name;
	if (doc_str(doc, fn->system_name)[0])
		return fn->system_name;
	return -1;
}

/* Does location @l need its address as a name (a frame without one)? */
static bool loc_needs_name(const struct summary *s, const struct d_loc *l)
{
	if (!l->nline)
		return true;
	for (size_t k = 0; k < l->nline; k++) {
		size_t f =
			VEC_AT(s->doc.lines, struct d_line, l->line0 + k).func;

		if (f == DOC_NONE || func_name_ix(&s->doc, f) < 0)
			return true;
	}
	return false;
}

/* "0x<address>": at most 18 characters and a NUL. */
#define LOC_NAME_MAX 19

static int name_locs(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	size_t at = 0;
	int err;

	s->loc_name = sum_alloc(s, doc->locs.n, sizeof(*s->loc_name), &err);
	if (!err)
		for (size_t i = 0; i < doc->locs.n; i++)
			if (loc_needs_name(s,
					   &VEC_AT(doc->locs, struct d_loc, i)))
				s->loc_name[i] = ""; /* named below */
	for (size_t i = 0; !err && i < doc->locs.n; i++)
		at += s->loc_name[i] ? LOC_NAME_MAX : 0;
	if (!err)
		s->loc_text = sum_alloc(s, at, 1, &err);
	at = 0;
	for (size_t i = 0; !err && i < doc->locs.n; i++) {
		if (!s->loc_name[i])
			continue;
		s->loc_name[i] = s->loc_text + at;
		at += (size_t)snprintf(
			      s->loc_text + at, LOC_NAME_MAX, "0x%" PRIx64,
			      VEC_AT(doc->locs, struct d_loc, i).address) +
		      1;
	}
	return err;
}

/* By line: "name file:line" for each line of a named function. */
static int name_lines(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	size_t nl = doc->lines.n, at = 0, len;
	int err;

	if (!s->by_line)
		return 0;
	s->line_name = sum_alloc(s, nl, sizeof(*s->line_name), &err);
	for (int pass = 0; !err && pass < 2; pass++) {
		for (size_t i = 0; i < nl; i++) {
			const struct d_line *l =
				&VEC_AT(doc->lines, struct d_line, i);
			const struct d_func *f;
			int64_t x;

			if (l->func == DOC_NONE ||
			    (x = func_name_ix(doc, l->func)) < 0)
				continue;
			f = &VEC_AT(doc->funcs, struct d_func, l->func);
			len = strlen(doc_str(doc, x)) +
			      strlen(doc_str(doc, f->filename)) + 24;
			if (pass) {
				s->line_name[i] = s->line_text + at;
				snprintf(s->line_text + at, len,
					 l->line > 0 ? "%s%s%s:%" PRId64 : "%s",
					 doc_str(doc, x),
					 doc_str(doc, f->filename)[0] ? " "
								      : "",
					 doc_str(doc, f->filename), l->line);
			}
			at += len;
		}
		if (!pass)
			s->line_text = sum_alloc(s, at, 1, &err);
		at = 0;
	}
	return err;
}

/* A frame name and where it came from: a string index, or a location. */
struct name_ref {
	const char *name;
	size_t origin; /* string index; past the string table: a location */
};

static int name_ref_cmp(const void *a, const void *b)
{
	const struct name_ref *x = a, *y = b;

	return x->name == y->name ? 0 : strcmp(x->name, y->name);
}

/*
 * The distinct frame names, and each function's and location's group:
 * every string that names a function and every location name is sorted
 * once (a string named by many functions is sorted once, not once per
 * function: the time is that of sorting the profile's own strings).
 */
static int make_groups(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	size_t ns = doc->strs.n, nf = doc->funcs.n, nl = doc->locs.n, n = 0;
	size_t nn = s->by_line ? doc->lines.n : 0;
	struct name_ref *refs;
	int err;

	s->str_group = sum_alloc(s, ns, sizeof(*s->str_group), &err);
	if (!err)
		s->func_group = sum_alloc(s, nf, sizeof(*s->func_group), &err);
	if (!err)
		s->loc_group = sum_alloc(s, nl, sizeof(*s->loc_group), &err);
	if (!err && nn)
		s->line_group = sum_alloc(s, nn, sizeof(*s->line_group), &err);
	if (!err)
		s->names = sum_alloc(s, ns + nl + nn, sizeof(*s->names), &err);
	refs = err ? NULL : sum_alloc(s, ns + nl + nn, sizeof(*refs), &err);
	if (err)
		return err;
	for (size_t i = 0; i < ns; i++)
		s->str_group[i] = DOC_NONE;
	for (size_t i = 0; i < nf; i++) {
		int64_t x = func_name_ix(doc, i);

		if (x >= 0 && s->str_group[x] == DOC_NONE) {
			s->str_group[x] = 0; /* named; its group is below */
			refs[n++] =
				(struct name_ref){ doc_str(doc, x), (size_t)x };
		}
	}
	for (size_t i = 0; i < nl; i++)
		if (s->loc_name[i])
			refs[n++] = (struct name_ref){ s->loc_name[i], ns + i };
	for (size_t i = 0; i < nn; i++) {
		s->line_group[i] = DOC_NONE;
		if (s->line_name[i])
			refs[n++] = (struct name_ref){ s->line_name[i],
						       ns + nl + i };
	}
	qsort(refs, n, sizeof(*refs), name_ref_cmp);
	for (size_t i = 0; i < n; i++) {
		if (!s->ngroups || strcmp(refs[i].name, refs[i - 1].name))
			s->names[s->ngroups++] = refs[i].name;
		if (refs[i].origin < ns)
			s->str_group[refs[i].origin] = s->ngroups - 1;
		else if (refs[i].origin < ns + nl)
			s->loc_group[refs[i].origin - ns] = s->ngroups - 1;
		else
			s->line_group[refs[i].origin - ns - nl] =
				s->ngroups - 1;
	}
	for (size_t i = 0; i < nf; i++) {
		int64_t x = func_name_ix(doc, i);

		s->func_group[i] = x >= 0 ? s->str_group[x] : DOC_NONE;
	}
	for (size_t i = 0; i < nl; i++)
		if (!s->loc_name[i])
			s->loc_group[i] = DOC_NONE;
	free(refs);
	return 0;
}

/* Group of line @k of location @li. */
static size_t frame_group(const struct summary *s, size_t li, size_t k)
{
	const struct d_loc *l = &VEC_AT(s->doc.locs, struct d_loc, li);
	size_t f;

	if (k >= l->nline)
		return s->loc_group[li];
	if (s->by_line)
		return s->line_group[l->line0 + k] != DOC_NONE
			       ? s->line_group[l->line0 + k]
			       : s->loc_group[li];
	f = VEC_AT(s->doc.lines, struct d_line, l->line0 + k).func;
	if (f == DOC_NONE || s->func_group[f] == DOC_NONE)
		return s->loc_group[li];
	return s->func_group[f];
}

/*
 * Each location's frame groups, each once, in frame order (the first is
 * its leaf frame's), and the arrays that add samples up.  A location's
 * lines are read here once, not once per sample that cites it.
 */
static int group_locs(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	size_t nl = doc->locs.n, g = s->ngroups, n = 0;
	int err;

	s->lg = sum_alloc(s, nl, sizeof(*s->lg), &err);
	if (!err)
		s->lgroups = sum_alloc(s, doc->lines.n + nl,
				       sizeof(*s->lgroups), &err);
	if (!err)
		s->flat = sum_alloc(s, g, sizeof(*s->flat), &err);
	if (!err)
		s->cum = sum_alloc(s, g, sizeof(*s->cum), &err);
	if (!err)
		s->gstamp = sum_alloc(s, g, sizeof(*s->gstamp), &err);
	if (!err)
		s->lstamp = sum_alloc(s, nl, sizeof(*s->lstamp), &err);
	if (err)
		return err;
	for (size_t li = 0; li < nl; li++) {
		size_t nline = VEC_AT(doc->locs, struct d_loc, li).nline;

		s->stamp++;
		s->lg[li].first = n;
		for (size_t k = 0; k < (nline ? nline : 1); k++) {
			size_t gr = frame_group(s, li, k);

			if (s->gstamp[gr] != s->stamp) {
				s->gstamp[gr] = s->stamp;
				s->lgroups[n++] = gr;
			}
		}
		s->lg[li].n = n - s->lg[li].first;
	}
	return 0;
}

static int func_cmp(const void *a, const void *b)
{
	const struct prof_report_func *x = a, *y = b;
	int c;

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->cum > y->cum ? -1 : x->cum < y->cum;
}

static int fill_funcs(struct summary *s)
{
	size_t n = 0;
	int err;

	s->funcs = sum_alloc(s, s->ngroups, sizeof(*s->funcs), &err);
	if (err)
		return err;
	for (size_t g = 0; g < s->ngroups; g++) {
		if (!s->flat[g] && !s->cum[g])
			continue;
		s->funcs[n].name = s->names[g];
		s->funcs[n].flat = s->flat[g];
		s->funcs[n++].cum = s->cum[g];
	}
	qsort(s->funcs, n, sizeof(*s->funcs), func_cmp);
	s->pub.funcs = s->funcs;
	s->pub.nfuncs = n;
	return 0;
}

/* The "tid" label of sample @ds: 1 and *tid, or 0; its "thread" name. */
static int sample_tid(const struct pprof_doc *doc, const struct d_sample *ds,
		      uint64_t *tid, const char **name)
{
	int found = 0;

	*name = "";
	for (size_t k = 0; k < ds->nlab; k++) {
		const struct d_label *l = &ds->labels[k];

		if (l->has_num && !strcmp(doc_str(doc, l->key), "tid")) {
			*tid = (uint64_t)l->num;
			found = 1;
		} else if (!l->has_num &&
			   !strcmp(doc_str(doc, l->key), "thread")) {
			*name = doc_str(doc, l->str);
		}
	}
	return found;
}

/*
 * Add sample @ds up (pprof_doc_samples() calls it with each).  Its value
 * goes to the total, to the flat value of its leaf frame's group and,
 * once, to the cum value of each group among its frames: a location cited
 * again by the sample adds nothing new and is skipped, and each location's
 * groups are already distinct (group_locs()), so the work is the sum of
 * the sizes of its distinct locations' group lists, counted against
 * frames_left.  A sample with a "tid" label gets a row for sum_tids().
 */
static int add_sample(void *arg, const struct d_sample *ds)
{
	struct summary *s = arg;
	size_t stamp = ++s->stamp;
	int64_t v = ds->vals[s->pub.sample_index];
	struct prof_report_tid t = { .value = v };
	int err;

	s->pub.total = prof_sat_add(s->pub.total, v);
	for (size_t k = 0; k < ds->nloc; k++) {
		size_t li = (size_t)ds->locs[k];
		const struct loc_groups *lg = &s->lg[li];

		if (s->lstamp[li] == stamp)
			continue;
		s->lstamp[li] = stamp;
		if (lg->n > s->frames_left) {
			pprof_err_bad(
				s->e,
				"profile too complex: summarizing its %zu "
				"bytes visits over %zu frames (the "
				"limit: %d per byte + %dM)",
				s->doc.rawlen, frames_limit(&s->doc),
				SUM_FRAMES_PER_BYTE, SUM_FRAMES_BASE_M);
			return -EFBIG;
		}
		s->frames_left -= lg->n;
		for (size_t j = 0; j < lg->n; j++) {
			size_t g = s->lgroups[lg->first + j];

			if (!k && !j)
				s->flat[g] = prof_sat_add(s->flat[g], v);
			if (s->gstamp[g] != stamp) {
				s->gstamp[g] = stamp;
				s->cum[g] = prof_sat_add(s->cum[g], v);
			}
		}
	}
	t.has_tid = sample_tid(&s->doc, ds, &t.tid, &t.name);
	if (!t.has_tid) {
		s->nnone++;
		s->none.value = prof_sat_add(s->none.value, v);
		if (!*s->none.name)
			s->none.name = t.name;
		return 0;
	}
	err = pprof_vec_reserve(&s->doc, &s->rows, s->rows.n + 1, sizeof(t),
				s->e);
	if (!err)
		VEC_AT(s->rows, struct prof_report_tid, s->rows.n++) = t;
	return err;
}

/* Add the samples up, reading them from the message once more. */
static int sum_samples(struct summary *s)
{
	s->frames_left = frames_limit(&s->doc);
	s->none = (struct prof_report_tid){ .name = "" };
	return pprof_doc_samples(&s->doc, add_sample, s, s->e);
}

static int tid_cmp(const void *a, const void *b)
{
	const struct prof_report_tid *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * The value per tid, by tid (a "thread" name of one of its samples), and
 * the row of the samples without one last, if there are any.
 */
static int sum_tids(struct summary *s)
{
	struct prof_report_tid *rows = s->rows.data;
	size_t n = 0, nrows = s->rows.n, i, j;
	int err;

	s->tids = sum_alloc(s, nrows + 1, sizeof(*s->tids), &err);
	if (err)
		return err;
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), tid_cmp);
	for (i = 0; i < nrows; i = j) {
		s->tids[n] = rows[i];
		for (j = i + 1; j < nrows && !tid_cmp(&rows[i], &rows[j]);
		     j++) {
			s->tids[n].value =
				prof_sat_add(s->tids[n].value, rows[j].value);
			if (!*s->tids[n].name)
				s->tids[n].name = rows[j].name;
		}
		n++;
	}
	if (s->nnone)
		s->tids[n++] = s->none;
	s->pub.tids = s->tids;
	s->pub.ntids = n;
	return 0;
}

static int fill_tables(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	int err;

	s->locs = sum_alloc(s, doc->locs.n, sizeof(*s->locs), &err);
	if (!err)
		s->maps = sum_alloc(s, doc->maps.n, sizeof(*s->maps), &err);
	if (err)
		return err;
	for (size_t i = 0; i < doc->locs.n; i++) {
		const struct d_loc *l = &VEC_AT(doc->locs, struct d_loc, i);
		size_t f = l->nline
				   ? VEC_AT(doc->lines, struct d_line, l->line0)
					     .func
				   : DOC_NONE;
		int64_t x = f == DOC_NONE ? -1 : func_name_ix(doc, f);

		s->locs[i] = (struct prof_report_location){
			.id = l->id,
			.address = l->address,
			.mapping = l->map == DOC_NONE ? -1 : (long)l->map,
			.name = x < 0 ? NULL : doc_str(doc, x),
		};
	}
	for (size_t i = 0; i < doc->maps.n; i++) {
		const struct d_map *m = &VEC_AT(doc->maps, struct d_map, i);

		s->maps[i] = (struct prof_report_mapping){
			.id = m->id,
			.start = m->start,
			.limit = m->limit,
			.offset = m->offset,
			.filename = doc_str(doc, m->filename),
			.build_id = doc_str(doc, m->build_id),
			.has_functions = m->has_functions,
		};
	}
	s->pub.locs = s->locs;
	s->pub.nlocs = doc->locs.n;
	s->pub.maps = s->maps;
	s->pub.nmaps = doc->maps.n;
	return 0;
}

/*
 * The index of the default sample type (the last one if it names none):
 * the first whose type is the string default_sample_type names.  A
 * string is compared with it once however many types name it (@seen).
 */
static int default_type(struct summary *s, size_t *out)
{
	const struct pprof_doc *doc = &s->doc;
	const char *want = doc_str(doc, doc->default_st);
	uint8_t *seen;
	int err;

	*out = doc->stypes.n - 1;
	if (!doc->default_st)
		return 0;
	seen = sum_alloc(s, doc->strs.n, 1, &err);
	if (err)
		return err;
	for (size_t i = 0; i < doc->stypes.n; i++) {
		int64_t t = VEC_AT(doc->stypes, struct d_vt, i).type;

		if (t != doc->default_st && seen[t])
			continue;
		if (t == doc->default_st || !strcmp(doc_str(doc, t), want)) {
			*out = i;
			break;
		}
		seen[t] = 1;
	}
	free(seen);
	return 0;
}

/* Header fields; the default sample type; the one to summarize. */
static int fill_header(struct summary *s, int sample_index)
{
	const struct pprof_doc *doc = &s->doc;
	struct prof_summary *p = &s->pub;
	const struct d_vt *vt;
	int err;

	p->nsample_types = doc->stypes.n;
	err = default_type(s, &p->default_index);
	if (err)
		return err;
	if (sample_index < -1 ||
	    (sample_index >= 0 && (size_t)sample_index >= doc->stypes.n)) {
		pprof_err_bad(s->e,
			      "sample index %d out of range: %zu sample types",
			      sample_index, doc->stypes.n);
		return -EINVAL;
	}
	p->sample_index =
		sample_index < 0 ? p->default_index : (size_t)sample_index;
	vt = &VEC_AT(doc->stypes, struct d_vt, p->sample_index);
	p->type = doc_str(doc, vt->type);
	p->unit = doc_str(doc, vt->unit);
	p->nsamples = doc->nsamples;
	p->period_type = doc_str(doc, doc->period_type.type);
	p->period_unit = doc_str(doc, doc->period_type.unit);
	p->period = doc->period;
	p->time_nanos = doc->time_nanos;
	p->duration_nanos = doc->duration_nanos;
	return 0;
}

static int fill_comments(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	int err;

	s->comments = sum_alloc(s, doc->comments.n, sizeof(*s->comments), &err);
	if (err)
		return err;
	for (size_t i = 0; i < doc->comments.n; i++)
		s->comments[i] =
			doc_str(doc, VEC_AT(doc->comments, int64_t, i));
	s->pub.comments = s->comments;
	s->pub.ncomments = doc->comments.n;
	return 0;
}

/* Each step notes its error in s->e. */
static int summarize(struct summary *s, int sample_index)
{
	static int (*const steps[])(struct summary *) = {
		fill_comments, name_locs,  name_lines, make_groups, group_locs,
		sum_samples,   fill_funcs, sum_tids,   fill_tables,
	};
	int err = fill_header(s, sample_index);

	for (size_t i = 0; !err && i < sizeof(steps) / sizeof(steps[0]); i++)
		err = steps[i](s);
	return err;
}

/* What the summary no longer needs once made. */
static void free_work(struct summary *s)
{
	free(s->str_group);
	free(s->func_group);
	free(s->loc_group);
	free(s->line_group);
	free(s->line_name);
	free(s->lg);
	free(s->lgroups);
	free(s->flat);
	free(s->cum);
	free(s->gstamp);
	free(s->lstamp);
	free(s->rows.data);
	s->str_group = s->func_group = s->loc_group = s->line_group = NULL;
	s->line_name = NULL;
	s->lg = NULL;
	s->lgroups = NULL;
	s->flat = s->cum = NULL;
	s->gstamp = s->lstamp = NULL;
	s->rows = (struct vec){ 0 };
}

void prof_summary_free(struct prof_summary *p)
{
	struct summary *s = (struct summary *)p;

	if (!s)
		return;
	free_work(s);
	free(s->loc_name);
	free(s->loc_text);
	free(s->line_text);
	free(s->comments);
	free(s->names);
	free(s->funcs);
	free(s->tids);
	free(s->locs);
	free(s->maps);
	pprof_doc_free(&s->doc);
	free(s);
}

static int decode(const void *data, size_t len, int sample_index, bool by_line,
		  struct prof_summary **out, char *err, size_t errlen)
{
	struct summary *s = calloc(1, sizeof(*s));
	struct pprof_err e = { .msg = err, .len = errlen };
	int rc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (!s)
		return pprof_err_nomem(&e);
	s->e = &e;
	s->by_line = by_line;
	rc = pprof_doc_decode(&s->doc, data, len, &e);
	if (!rc)
		rc = summarize(s, sample_index);
	free_work(s);
	s->e = NULL;
	s->doc.raw = NULL; /* @data is the caller's again */
	s->doc.rawlen = 0;
	if (rc) {
		prof_summary_free(&s->pub);
		return rc;
	}
	*out = &s->pub;
	return 0;
}

int prof_summary_decode(const void *data, size_t len, int sample_index,
			struct prof_summary **out, char *err, size_t errlen)
{
	return decode(data, len, sample_index, false, out, err, errlen);
}

int prof_summary_load_opts(const char *path, int sample_index, bool by_line,
			   struct prof_summary **out, char *err, size_t errlen)
{
	uint8_t *data;
	size_t len;
	int rc;

	*out = NULL;
	rc = prof_read_file(path, &data, &len);
	if (rc == -EFBIG && errlen)
		snprintf(err, errlen,
			 "profile too large: over %u MiB uncompressed (the "
			 "limit)",
			 PROF_PROFILE_MAX >> 20);
	else if (rc && errlen)
		snprintf(err, errlen, "%s",
			 rc == -EBADMSG ? "corrupt gzip stream"
					: strerror(-rc));
	if (rc)
		return rc;
	rc = decode(data, len, sample_index, by_line, out, err, errlen);
	free(data);
	return rc;
}

int prof_summary_load(const char *path, int sample_index,
		      struct prof_summary **out, char *err, size_t errlen)
{
	return prof_summary_load_opts(path, sample_index, false, out, err,
				      errlen);
}
