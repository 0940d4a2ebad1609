// SPDX-License-Identifier: MIT
/*
 * summary.c - summarize a decoded profile (decode.h) per function and per
 * thread, for one sample type: struct prof_summary (report.h).
 *
 * The frames of a sample are its locations leaf first and, within a
 * location, its lines in order (line[0] is the innermost inlined
 * function).  A frame is named by its function's name (its system name if
 * the name is empty), or "0x<address>" when its location has no line or
 * the line no named function.  Frames are grouped by name: a sample's
 * value goes to the flat value of its first frame and, once per sample,
 * to the cum value of every name among its frames.  Per thread, a
 * sample's value goes to its "tid" label's number (the samples without
 * one have a row of their own), named by a "thread" label of one of them.
 * Sums saturate instead of overflowing (prof_sat_add()).
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

/*
 * What prof_summary_decode() hands out (as &pub) and prof_summary_free()
 * takes back: the summary, the decoded profile its strings point into,
 * and the arrays it is built from.
 */
struct summary {
	struct prof_summary pub;
	struct pprof_doc doc;
	const char **comments;
	const char **names; /* sorted, unique: the frame groups */
	size_t ngroups;
	const char **fname; /* per function: its name, or NULL */
	char **loc_name; /* per location: "0x<address>", or NULL */
	size_t *func_group, *loc_group;
	struct prof_report_func *funcs;
	struct prof_report_tid *tids;
	struct prof_report_location *locs;
	struct prof_report_mapping *maps;
};

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t group_of(const struct summary *s, const char *name)
{
	const char **e;

	if (!name)
		return DOC_NONE;
	e = bsearch(&name, s->names, s->ngroups, sizeof(*s->names),
		    str_ptr_cmp);
	return e ? (size_t)(e - s->names) : DOC_NONE;
}

/* Does location @l need its address as a name (a frame without one)? */
static bool loc_needs_name(const struct summary *s, const struct d_loc *l)
{
	if (!l->nline)
		return true;
	for (size_t k = 0; k < l->nline; k++) {
		size_t f =
			VEC_AT(s->doc.lines, struct d_line, l->line0 + k).func;

		if (f == DOC_NONE || !s->fname[f])
			return true;
	}
	return false;
}

static int name_funcs(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;

	s->fname = calloc(doc->funcs.n + 1, sizeof(*s->fname));
	if (!s->fname)
		return -ENOMEM;
	for (size_t i = 0; i < doc->funcs.n; i++) {
		const struct d_func *f = &VEC_AT(doc->funcs, struct d_func, i);
		const char *n = doc_str(doc, f->name);

		if (!n[0])
			n = doc_str(doc, f->system_name);
		s->fname[i] = n[0] ? n : NULL;
	}
	return 0;
}

static int name_locs(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	char buf[32];

	s->loc_name = calloc(doc->locs.n + 1, sizeof(*s->loc_name));
	if (!s->loc_name)
		return -ENOMEM;
	for (size_t i = 0; i < doc->locs.n; i++) {
		const struct d_loc *l = &VEC_AT(doc->locs, struct d_loc, i);

		if (!loc_needs_name(s, l))
			continue;
		snprintf(buf, sizeof(buf), "0x%" PRIx64, l->address);
		s->loc_name[i] = strdup(buf);
		if (!s->loc_name[i])
			return -ENOMEM;
	}
	return 0;
}

/* The distinct frame names, and each function's and location's. */
static int make_groups(struct summary *s)
{
	size_t nf = s->doc.funcs.n, nl = s->doc.locs.n, n = 0;

	s->names = calloc(nf + nl + 1, sizeof(*s->names));
	s->func_group = calloc(nf + 1, sizeof(*s->func_group));
	s->loc_group = calloc(nl + 1, sizeof(*s->loc_group));
	if (!s->names || !s->func_group || !s->loc_group)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++)
		if (s->fname[i])
			s->names[n++] = s->fname[i];
	for (size_t i = 0; i < nl; i++)
		if (s->loc_name[i])
			s->names[n++] = s->loc_name[i];
	qsort(s->names, n, sizeof(*s->names), str_ptr_cmp);
	for (size_t i = 0; i < n; i++)
		if (!s->ngroups ||
		    strcmp(s->names[i], s->names[s->ngroups - 1]))
			s->names[s->ngroups++] = s->names[i];
	for (size_t i = 0; i < nf; i++)
		s->func_group[i] = group_of(s, s->fname[i]);
	for (size_t i = 0; i < nl; i++)
		s->loc_group[i] = group_of(s, s->loc_name[i]);
	return 0;
}

/* Group of line @k of location @li. */
static size_t frame_group(const struct summary *s, size_t li, size_t k)
{
	const struct d_loc *l = &VEC_AT(s->doc.locs, struct d_loc, li);
	size_t f;

	if (k >= l->nline)
		return s->loc_group[li];
	f = VEC_AT(s->doc.lines, struct d_line, l->line0 + k).func;
	if (f == DOC_NONE || s->func_group[f] == DOC_NONE)
		return s->loc_group[li];
	return s->func_group[f];
}

struct acc {
	int64_t *flat, *cum;
	size_t *stamp;
};

static void add_sample(const struct summary *s, const struct d_sample *ds,
		       size_t stamp, int64_t v, struct acc *a)
{
	bool leaf = true;

	for (size_t k = 0; k < ds->nloc; k++) {
		size_t li = (size_t)VEC_AT(s->doc.sample_locs, uint64_t,
					   ds->loc0 + k);
		size_t nl = VEC_AT(s->doc.locs, struct d_loc, li).nline;

		for (size_t j = 0; j < (nl ? nl : 1); j++) {
			size_t g = frame_group(s, li, j);

			if (leaf)
				a->flat[g] = prof_sat_add(a->flat[g], v);
			leaf = false;
			if (a->stamp[g] != stamp) {
				a->stamp[g] = stamp;
				a->cum[g] = prof_sat_add(a->cum[g], v);
			}
		}
	}
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

static void fill_funcs(struct summary *s, const struct acc *a)
{
	size_t n = 0;

	for (size_t g = 0; g < s->ngroups; g++) {
		if (!a->flat[g] && !a->cum[g])
			continue;
		s->funcs[n].name = s->names[g];
		s->funcs[n].flat = a->flat[g];
		s->funcs[n++].cum = a->cum[g];
	}
	qsort(s->funcs, n, sizeof(*s->funcs), func_cmp);
	s->pub.funcs = s->funcs;
	s->pub.nfuncs = n;
}

static int sum_funcs(struct summary *s)
{
	size_t idx = s->pub.sample_index, g = s->ngroups + 1;
	struct acc a;
	int err = -ENOMEM;

	a.flat = calloc(g, sizeof(*a.flat));
	a.cum = calloc(g, sizeof(*a.cum));
	a.stamp = calloc(g, sizeof(*a.stamp));
	s->funcs = calloc(g, sizeof(*s->funcs));
	if (!a.flat || !a.cum || !a.stamp || !s->funcs)
		goto out;
	for (size_t i = 0; i < s->doc.samples.n; i++) {
		const struct d_sample *ds =
			&VEC_AT(s->doc.samples, struct d_sample, i);
		int64_t v = VEC_AT(s->doc.values, int64_t, ds->val0 + idx);

		s->pub.total = prof_sat_add(s->pub.total, v);
		add_sample(s, ds, i + 1, v, &a);
	}
	fill_funcs(s, &a);
	err = 0;
out:
	free(a.flat);
	free(a.cum);
	free(a.stamp);
	return err;
}

/* The "tid" label of sample @ds: 1 and *tid, or 0; its "thread" name. */
static int sample_tid(const struct pprof_doc *doc, const struct d_sample *ds,
		      uint64_t *tid, const char **name)
{
	int found = 0;

	*name = "";
	for (size_t k = 0; k < ds->nlab; k++) {
		const struct d_label *l =
			&VEC_AT(doc->labels, struct d_label, ds->lab0 + k);

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

static int tid_cmp(const void *a, const void *b)
{
	const struct prof_report_tid *x = a, *y = b;

	if (x->has_tid != y->has_tid)
		return x->has_tid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int sum_tids(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;
	size_t n = 0, i, j;

	s->tids = calloc(doc->samples.n + 1, sizeof(*s->tids));
	if (!s->tids)
		return -ENOMEM;
	for (i = 0; i < doc->samples.n; i++) {
		const struct d_sample *ds =
			&VEC_AT(doc->samples, struct d_sample, i);

		s->tids[i].has_tid =
			sample_tid(doc, ds, &s->tids[i].tid, &s->tids[i].name);
		s->tids[i].value = VEC_AT(doc->values, int64_t,
					  ds->val0 + s->pub.sample_index);
	}
	qsort(s->tids, doc->samples.n, sizeof(*s->tids), tid_cmp);
	for (i = 0; i < doc->samples.n; i = j) {
		s->tids[n] = s->tids[i];
		for (j = i + 1;
		     j < doc->samples.n && !tid_cmp(&s->tids[i], &s->tids[j]);
		     j++) {
			s->tids[n].value = prof_sat_add(s->tids[n].value,
							s->tids[j].value);
			if (!*s->tids[n].name)
				s->tids[n].name = s->tids[j].name;
		}
		n++;
	}
	s->pub.tids = s->tids;
	s->pub.ntids = n;
	return 0;
}

static int fill_tables(struct summary *s)
{
	const struct pprof_doc *doc = &s->doc;

	s->locs = calloc(doc->locs.n + 1, sizeof(*s->locs));
	s->maps = calloc(doc->maps.n + 1, sizeof(*s->maps));
	if (!s->locs || !s->maps)
		return -ENOMEM;
	for (size_t i = 0; i < doc->locs.n; i++) {
		const struct d_loc *l = &VEC_AT(doc->locs, struct d_loc, i);
		size_t f = l->nline
				   ? VEC_AT(doc->lines, struct d_line, l->line0)
					     .func
				   : DOC_NONE;

		s->locs[i] = (struct prof_report_location){
			.id = l->id,
			.address = l->address,
			.mapping = l->map == DOC_NONE ? -1 : (long)l->map,
			.name = f == DOC_NONE ? NULL : s->fname[f],
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

/* Header fields; the default sample type; the one to summarize. */
static int fill_header(struct summary *s, int sample_index, struct pprof_err *e)
{
	const struct pprof_doc *doc = &s->doc;
	struct prof_summary *p = &s->pub;
	const struct d_vt *vt;

	p->nsample_types = doc->stypes.n;
	p->default_index = doc->stypes.n - 1;
	for (size_t i = 0; doc->default_st && i < doc->stypes.n; i++)
		if (!strcmp(doc_str(doc,
				    VEC_AT(doc->stypes, struct d_vt, i).type),
			    doc_str(doc, doc->default_st))) {
			p->default_index = i;
			break;
		}
	if (sample_index < -1 ||
	    (sample_index >= 0 && (size_t)sample_index >= doc->stypes.n)) {
		pprof_err_bad(e,
			      "sample index %d out of range: %zu sample types",
			      sample_index, doc->stypes.n);
		return -EINVAL;
	}
	p->sample_index =
		sample_index < 0 ? p->default_index : (size_t)sample_index;
	vt = &VEC_AT(doc->stypes, struct d_vt, p->sample_index);
	p->type = doc_str(doc, vt->type);
	p->unit = doc_str(doc, vt->unit);
	p->nsamples = doc->samples.n;
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

	s->comments = calloc(doc->comments.n + 1, sizeof(*s->comments));
	if (!s->comments)
		return -ENOMEM;
	for (size_t i = 0; i < doc->comments.n; i++)
		s->comments[i] =
			doc_str(doc, VEC_AT(doc->comments, int64_t, i));
	s->pub.comments = s->comments;
	s->pub.ncomments = doc->comments.n;
	return 0;
}

static int summarize(struct summary *s, int sample_index, struct pprof_err *e)
{
	static int (*const steps[])(struct summary *) = {
		fill_comments, name_funcs, name_locs,	make_groups,
		sum_funcs,     sum_tids,   fill_tables,
	};
	int err = fill_header(s, sample_index, e);

	if (err)
		return err;
	for (size_t i = 0; !err && i < sizeof(steps) / sizeof(steps[0]); i++)
		err = steps[i](s);
	return err ? pprof_err_nomem(e) : 0;
}

void prof_summary_free(struct prof_summary *p)
{
	struct summary *s = (struct summary *)p;

	if (!s)
		return;
	if (s->loc_name)
		for (size_t i = 0; i < s->doc.locs.n; i++)
			free(s->loc_name[i]);
	free(s->loc_name);
	free(s->comments);
	free(s->names);
	free(s->fname);
	free(s->func_group);
	free(s->loc_group);
	free(s->funcs);
	free(s->tids);
	free(s->locs);
	free(s->maps);
	pprof_doc_free(&s->doc);
	free(s);
}

int prof_summary_decode(const void *data, size_t len, int sample_index,
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
	rc = pprof_doc_decode(&s->doc, data, len, &e);
	if (!rc)
		rc = summarize(s, sample_index, &e);
	if (rc) {
		prof_summary_free(&s->pub);
		return rc;
	}
	*out = &s->pub;
	return 0;
}

int prof_summary_load(const char *path, int sample_index,
		      struct prof_summary **out, char *err, size_t errlen)
{
	uint8_t *data;
	size_t len;
	int rc;

	*out = NULL;
	rc = prof_read_file(path, &data, &len);
	if (rc) {
		if (errlen)
			snprintf(err, errlen, "%s",
				 rc == -EBADMSG ? "corrupt gzip stream"
						: strerror(-rc));
		return rc;
	}
	rc = prof_summary_decode(data, len, sample_index, out, err, errlen);
	free(data);
	return rc;
}
