// SPDX-License-Identifier: MIT
/*
 * spaces_test.c - unit tests for profiles of several processes (pprof.c
 * with struct prof_profile's address spaces and pids): the launcher's
 * profiles of a program and its children.
 *
 * Two address spaces, pid 100 and pid 200, each symbolized by its own
 * prof_symbolizer_new_maps(): the same addresses are this program's
 * functions in the one and a missing file in the other, where this
 * program's code is mapped elsewhere.  The pprof file, decoded back
 * (decode.c), must give each sample its pid label and its names, one
 * location per address and space, and mappings numbered across spaces;
 * `go tool pprof -raw` must read it when /usr/bin/go is there.  The
 * folded file is checked byte for byte: rooted at "[pid N]" with two
 * pids, not with one.  And the writers refuse a sample of a space that
 * is not there.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "testing/ktest.h"
#include "testing/tmpfiles.h"
#include "pprof/decode.h"
#include "pprof/pprof.h"
#include "pprof/symbolize.h"
#include "pprof/symbolize_testing.h"

#define LOST "[profring: lost samples]"
/* Where space 1 maps this program; other.so's offset at its code. */
#define MOVED ((uint64_t)1 << 32)
#define OTHER_OFF ((uint64_t)0x5000)
#define NS 5

static struct prof_mapping exe; /* the mapping of this program's code */
static char exe_path[4096];
static uintptr_t pcs[NS][3];
static struct prof_sample samples[NS];
static struct prof_symbolizer *spaces[2];
static struct prof_profile profile;

/* What each sample must read back as. */
struct want {
	uint32_t pid, tid;
	const char *names[3]; /* leaf first */
	uint64_t map_start; /* of the leaf's mapping */
	const char *map_file;
};

static char other_names[3][64];
static struct want want[NS];

static int make_profile(void)
{
	struct prof_symbolizer *own = prof_symbolizer_new();
	unsigned int id;
	const struct prof_mapping *m;
	struct prof_map_spec l0[1], l1[2];
	uintptr_t at[3] = { leaf + 4, mid + 9, root + 9 };

	prof_symbolize(own, root, &id);
	m = mapping_by_id(own, id);
	if (!m || strlen(m->path) >= sizeof(exe_path)) {
		prof_symbolizer_free(own);
		return -1;
	}
	exe = *m;
	snprintf(exe_path, sizeof(exe_path), "%s", m->path);
	exe.path = exe_path;
	prof_symbolizer_free(own);

	l0[0] = (struct prof_map_spec){ exe.start, exe.limit, exe.offset,
					exe_path };
	l1[0] = (struct prof_map_spec){ exe.start, exe.limit, OTHER_OFF,
					"/nonexistent/other.so" };
	l1[1] = (struct prof_map_spec){ exe.start + MOVED, exe.limit + MOVED,
					exe.offset, exe_path };
	spaces[0] = prof_symbolizer_new_maps(l0, 1);
	spaces[1] = prof_symbolizer_new_maps(l1, 2);
	if (!spaces[0] || !spaces[1])
		return -1;

	for (int i = 0; i < 3; i++) {
		uint64_t addr = at[i] - (i ? 1 : 0); /* as pprof stores it */

		pcs[0][i] = pcs[1][i] = at[i];
		pcs[2][i] = at[i] + MOVED;
		pcs[3][i] = at[i];
		snprintf(other_names[i], sizeof(other_names[i]),
			 "other.so+0x%" PRIx64, addr - exe.start + OTHER_OFF);
	}
	pcs[3][0] = leaf + 6;
	samples[0] = (struct prof_sample){ .pcs = pcs[0],
					   .npcs = 3,
					   .tid = 100,
					   .thread_name = "main",
					   .samples = 3,
					   .periods = 3,
					   .pid = 100,
					   .space = 0 };
	samples[1] = (struct prof_sample){ .pcs = pcs[1],
					   .npcs = 3,
					   .tid = 201,
					   .thread_name = "worker",
					   .samples = 2,
					   .periods = 2,
					   .pid = 200,
					   .space = 1 };
	samples[2] = (struct prof_sample){ .pcs = pcs[2],
					   .npcs = 3,
					   .tid = 200,
					   .samples = 5,
					   .periods = 6,
					   .pid = 200,
					   .space = 1 };
	samples[3] = (struct prof_sample){ .pcs = pcs[3],
					   .npcs = 3,
					   .tid = 100,
					   .thread_name = "main",
					   .samples = 1,
					   .periods = 1,
					   .pid = 100,
					   .space = 0 };
	samples[4] = (struct prof_sample){ .samples = 4,
					   .periods = 4,
					   .special = LOST };
	profile = (struct prof_profile){ .samples = samples,
					 .nsamples = NS,
					 .period_ns = 1000000,
					 .spaces = spaces,
					 .nspaces = 2 };

	for (int i = 0; i < NS; i++) {
		want[i].pid = samples[i].pid;
		want[i].tid = samples[i].tid;
		for (int k = 0; k < 3; k++)
			want[i].names[k] = i == 1   ? other_names[k]
					   : k == 0 ? "leaf_fn"
					   : k == 1 ? "mid_fn"
						    : "root_fn";
		want[i].map_start = i == 2 ? exe.start + MOVED : exe.start;
		want[i].map_file = i == 1 ? "/nonexistent/other.so" : exe_path;
	}
	want[4].names[0] = LOST;
	want[4].names[1] = want[4].names[2] = NULL;
	want[4].map_file = NULL;
	return 0;
}

/* The gunzip'd bytes of @path (free() them), or NULL. */
static uint8_t *gunzip_file(const char *path, size_t *len)
{
	gzFile gz = gzopen(path, "rb");
	uint8_t *buf = NULL, *p;
	size_t cap = 0;
	int n;

	*len = 0;
	if (!gz)
		return NULL;
	do {
		if (cap - *len < 65536) {
			p = realloc(buf, cap + 65536);
			if (!p) {
				n = -1;
				break;
			}
			buf = p;
			cap += 65536;
		}
		n = gzread(gz, buf + *len, (unsigned int)(cap - *len));
		if (n > 0)
			*len += (size_t)n;
	} while (n > 0);
	gzclose(gz);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* What the walk over the decoded samples found. */
struct walk {
	struct pprof_doc *doc;
	int n; /* samples seen */
	int bad; /* checks failed */
	size_t loc_of[NS][3]; /* location index of each frame */
};

static const char *label_key(const struct pprof_doc *doc,
			     const struct d_label *l)
{
	return doc_str(doc, l->key);
}

/* The numeric label @key of @s: 1 with *@num, 0 if none, -1 if twice. */
static int num_label(const struct pprof_doc *doc, const struct d_sample *s,
		     const char *key, int64_t *num)
{
	int found = 0;

	for (size_t i = 0; i < s->nlab; i++)
		if (!strcmp(label_key(doc, &s->labels[i]), key)) {
			if (found || !s->labels[i].has_num)
				return -1;
			*num = s->labels[i].num;
			found = 1;
		}
	return found;
}

#define WCHECK(w, cond)                                                      \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "  sample %d: %s\n", (w)->n, #cond); \
			(w)->bad++;                                          \
		}                                                            \
	} while (0)

static int check_sample(void *arg, const struct d_sample *s)
{
	struct walk *w = arg;
	struct pprof_doc *doc = w->doc;
	const struct want *wt;
	int64_t num = 0;
	size_t nframes;

	if (w->n >= NS) {
		w->bad++;
		return 0;
	}
	wt = &want[w->n];
	nframes = wt->names[1] ? 3 : 1;
	WCHECK(w, s->nval == 2 &&
			  s->vals[0] == (int64_t)samples[w->n].samples &&
			  s->vals[1] == (int64_t)(samples[w->n].periods *
						  profile.period_ns));
	if (wt->pid)
		WCHECK(w,
		       num_label(doc, s, "pid", &num) == 1 && num == wt->pid);
	else
		WCHECK(w, num_label(doc, s, "pid", &num) == 0);
	if (wt->tid)
		WCHECK(w,
		       num_label(doc, s, "tid", &num) == 1 && num == wt->tid);
	WCHECK(w, s->nloc == nframes);
	for (size_t k = 0; k < s->nloc && k < nframes; k++) {
		const struct d_loc *l =
			&VEC_AT(doc->locs, struct d_loc, s->locs[k]);
		const struct d_line *ln;
		const struct d_func *f;

		w->loc_of[w->n][k] = s->locs[k];
		WCHECK(w, l->nline == 1);
		if (l->nline != 1)
			continue;
		ln = &VEC_AT(doc->lines, struct d_line, l->line0);
		WCHECK(w, ln->func != DOC_NONE);
		if (ln->func == DOC_NONE)
			continue;
		f = &VEC_AT(doc->funcs, struct d_func, ln->func);
		if (strcmp(doc_str(doc, f->name), wt->names[k])) {
			fprintf(stderr, "  sample %d frame %zu: %s, not %s\n",
				w->n, k, doc_str(doc, f->name), wt->names[k]);
			w->bad++;
		}
		if (!wt->map_file) {
			WCHECK(w, l->map == DOC_NONE && !l->address);
			continue;
		}
		WCHECK(w, l->address ==
				  (uint64_t)samples[w->n].pcs[k] - (k ? 1 : 0));
		WCHECK(w, l->map != DOC_NONE);
		if (l->map != DOC_NONE && !k) {
			const struct d_map *m =
				&VEC_AT(doc->maps, struct d_map, l->map);

			WCHECK(w, m->start == wt->map_start &&
					  m->start <= l->address &&
					  l->address < m->limit);
			WCHECK(w, !strcmp(doc_str(doc, m->filename),
					  wt->map_file));
		}
	}
	w->n++;
	return 0;
}

/*
 * The pprof file read back: pid labels, names in each space, locations
 * per address and space, mappings of both spaces numbered 1, 2, 3.
 */
static void spaces_pprof_roundtrip(void)
{
	const char *path = tmp_path("spaces.pb.gz");
	struct pprof_doc doc;
	struct walk w = { .doc = &doc };
	char msg[256] = "";
	struct pprof_err e = { msg, sizeof(msg), false };
	uint8_t *raw;
	size_t len;

	KT_REQUIRE(!prof_pprof_write(&profile, NULL, path));
	raw = gunzip_file(path, &len);
	KT_REQUIRE(raw);
	memset(&doc, 0, sizeof(doc));
	KT_CHECK_EQ(pprof_doc_decode(&doc, raw, len, &e), 0);
	if (e.failed)
		fprintf(stderr, "  decode: %s\n", msg);
	KT_CHECK_EQ(doc.nsamples, NS);
	KT_CHECK_EQ(pprof_doc_samples(&doc, check_sample, &w, &e), 0);
	KT_CHECK_EQ(w.n, NS);
	KT_CHECK_EQ(w.bad, 0);

	/* Mappings: space 0's, then space 1's, ids 1, 2, 3 in order. */
	KT_CHECK_EQ(doc.maps.n, 3);
	for (size_t i = 0; i < doc.maps.n; i++)
		KT_CHECK_EQ(VEC_AT(doc.maps, struct d_map, i).id, i + 1);
	if (doc.maps.n == 3) {
		KT_CHECK_EQ(VEC_AT(doc.maps, struct d_map, 0).start, exe.start);
		KT_CHECK_EQ(VEC_AT(doc.maps, struct d_map, 1).start, exe.start);
		KT_CHECK_EQ(VEC_AT(doc.maps, struct d_map, 1).offset,
			    OTHER_OFF);
		KT_CHECK_EQ(VEC_AT(doc.maps, struct d_map, 2).start,
			    exe.start + MOVED);
	}
	/* Same addresses, two spaces: two locations; one space: one. */
	for (int k = 0; k < 3; k++)
		KT_CHECK(w.loc_of[0][k] != w.loc_of[1][k]);
	KT_CHECK(w.loc_of[0][0] != w.loc_of[3][0]); /* leaf + 6 */
	KT_CHECK(w.loc_of[0][1] == w.loc_of[3][1]);
	KT_CHECK(w.loc_of[0][2] == w.loc_of[3][2]);
	/* 3 + 3 + 3 + 1 distinct frames and the lost samples' one */
	KT_CHECK_EQ(doc.locs.n, 11);

	if (getenv("PPROF_TEST_KEEP"))
		printf("# kept %s\n", path);
	else
		unlink(path);
	pprof_doc_free(&doc);
	free(raw);
}

/* Run @cmd through sh; its exit status, or -1. */
static int run(const char *cmd)
{
	int rc = system(cmd);

	return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/*
 * `go tool pprof -raw` reads the profile and shows the pids and names.
 * (It merges mappings of the same size, offset and build-id, and the
 * locations at the same offset in them: this program mapped at two
 * places in two spaces is one mapping there, the same code.)
 */
static void spaces_go_pprof(void)
{
	const char *path = tmp_path("go.pb.gz");
	const char *out = tmp_path("go.txt");
	const char *home = tmp_path("gohome");
	char cmd[16384], *text;
	size_t len;
	int rc;

	if (access("/usr/bin/go", X_OK))
		KT_SKIP("no /usr/bin/go");
	KT_REQUIRE(!prof_pprof_write(&profile, NULL, path));
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s' && HOME='%s' GOFLAGS= timeout 120 "
		 "/usr/bin/go tool pprof -raw -symbolize=none '%s' >'%s' 2>&1",
		 home, home, path, out);
	rc = run(cmd);
	text = read_text(out, &len);
	KT_CHECK_EQ(rc, 0);
	KT_REQUIRE(text);
	if (rc)
		fprintf(stderr, "%s", text);
	KT_CHECK(strstr(text, "pid:[100]") && strstr(text, "pid:[200]"));
	KT_CHECK(strstr(text, "tid:[201]"));
	KT_CHECK(strstr(text, "leaf_fn") && strstr(text, "root_fn"));
	KT_CHECK(strstr(text, other_names[0]) && strstr(text, other_names[2]));
	KT_CHECK(strstr(text, "/nonexistent/other.so") && strstr(text, LOST));
	free(text);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
	KT_CHECK_EQ(run(cmd), 0);
	unlink(out);
	unlink(path);
}

/* The folded file of @p, compared with @want. */
static void check_folded(const struct prof_profile *p, const char *want_s)
{
	const char *path = tmp_path("spaces.folded");
	size_t len;
	char *text;

	KT_REQUIRE(!prof_folded_write(p, NULL, path));
	text = read_text(path, &len);
	KT_REQUIRE(text);
	if (strcmp(text, want_s))
		fprintf(stderr, "  got:\n%s  want:\n%s", text, want_s);
	KT_CHECK(!strcmp(text, want_s));
	free(text);
	unlink(path);
}

/*
 * Folded stacks: with two pids, each stack under its "[pid N]" (the
 * lost samples, of no pid, not); with one pid and the lost samples, none.
 * Counts are periods: pid 200's root_fn;mid_fn;leaf_fn is 5 signals, 6
 * periods.
 */
static void spaces_folded(void)
{
	struct prof_profile one = profile;
	struct prof_sample s1[3] = { samples[0], samples[3], samples[4] };
	char want_s[1024];

	snprintf(want_s, sizeof(want_s),
		 "[pid 100];root_fn;mid_fn;leaf_fn 4\n"
		 "[pid 200];%s;%s;%s 2\n"
		 "[pid 200];root_fn;mid_fn;leaf_fn 6\n" LOST " 4\n",
		 other_names[2], other_names[1], other_names[0]);
	check_folded(&profile, want_s);
	one.samples = s1;
	one.nsamples = 3;
	check_folded(&one, LOST " 4\nroot_fn;mid_fn;leaf_fn 4\n");
}

/* A sample of no space, spaces that are not there: refused. */
static void spaces_errors(void)
{
	const char *path = tmp_path("never.pb.gz");
	struct prof_symbolizer *none[2] = { NULL, NULL };
	struct prof_sample s[1] = { samples[0] };
	struct prof_profile p = profile;

	p.samples = s;
	p.nsamples = 1;
	s[0].space = 2;
	KT_CHECK_EQ(prof_pprof_write(&p, NULL, path), -EINVAL);
	KT_CHECK_EQ(prof_folded_write(&p, NULL, path), -EINVAL);
	p.spaces = NULL;
	s[0].space = 0;
	KT_CHECK_EQ(prof_pprof_write(&p, NULL, path), -EINVAL);
	p.nspaces = 0; /* one space, the symbolizer argument */
	s[0].space = 1;
	KT_CHECK_EQ(prof_folded_write(&p, spaces[0], path), -EINVAL);
	KT_CHECK(access(path, F_OK) && errno == ENOENT);
	/* A space without a symbolizer: raw addresses. */
	p.spaces = none;
	p.nspaces = 2;
	s[0].space = 1;
	KT_CHECK_EQ(prof_folded_write(&p, spaces[0], path), 0);
	{
		char want_s[128], *text;
		size_t len;

		snprintf(want_s, sizeof(want_s),
			 "0x%" PRIxPTR ";0x%" PRIxPTR ";0x%" PRIxPTR " 3\n",
			 root + 8, mid + 8, leaf + 4);
		text = read_text(path, &len);
		KT_CHECK(text && !strcmp(text, want_s));
		free(text);
	}
	unlink(path);
}

int main(void)
{
	int rc = 0;

	if (tmpfiles_init("spaces_test"))
		return EXIT_FAILURE;
	root_fn(3); /* they are real functions */
	find_functions();
	if (make_profile()) {
		printf("FAIL make_profile\n");
		rc = 1;
	} else {
		KT_RUN(spaces_pprof_roundtrip);
		KT_RUN(spaces_go_pprof);
		KT_RUN(spaces_folded);
		KT_RUN(spaces_errors);
	}
	prof_symbolizer_free(spaces[0]);
	prof_symbolizer_free(spaces[1]);
	tmpfiles_done();
	return rc ? EXIT_FAILURE : ktest_exit();
}
