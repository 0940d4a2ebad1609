// SPDX-License-Identifier: MIT
/*
 * pprof_test.c - unit tests for the profile's way out and back in: the
 * wire helpers (proto.h), the pprof and folded writers (pprof.c), the
 * decoder (decode.c), the summary (summary.c) and the report (print.c).
 * The symbolizer and the output files have their own tests beside them
 * (symbolize_test.c, outfile_test.c).
 *
 * A synthetic profile is written as pprof, decoded back and checked
 * exactly: names, flat and cum values of both sample types, values per
 * tid, locations (adjusted addresses, mappings), mappings, header fields
 * and comments.  The folded file is checked byte for byte.  Then every
 * truncation of the encoding and of the gzip'd file must be refused with
 * -EBADMSG, and thousands of random corruptions must give a profile or
 * -EBADMSG, never a crash (run it under ASan/UBSan too).
 *
 * Hostile profiles, built field by field, each summarized in a child
 * process under alarm() (a regression hangs no one) whose peak memory is
 * measured: a sample citing a location of 50,000 lines 50,000 times must
 * be summarized at once and exactly; millions of samples must take no
 * memory each; a profile past the limits of memory or frames must be
 * refused with a message naming the limit.  The report must escape the
 * control characters of the profile's strings, print nothing on stderr,
 * and explain each failure in one line that says what failed.
 *
 * With PPROF_TEST_KEEP set in the environment, the last pprof and folded
 * files are left in the temporary directory, for `go tool pprof`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "testing/ktest.h"
#include "testing/harness.h"
#include "testing/tmpfiles.h"
#include "pprof/pprof.h"
#include "pprof/proto.h"
#include "pprof/report.h"
#include "pprof/symbolize.h"
#include "pprof/symbolize_testing.h"

#define PERIOD_NS 10000000ull
#define LOST "[profring: lost samples]"
#define ODD "[odd;name\nhere]"
#define NSAMPLES 8

/* The test profile: stacks of the functions above, libc, junk. */
static uintptr_t pcs_a[3], pcs_b[3], pcs_c[3], pcs_d[2], pcs_e[2], pcs_f[3];
static struct prof_sample samples[NSAMPLES];
static const char *const comments[] = { "profring: test comment one",
					"second comment" };
static struct prof_profile profile;

static void make_profile(void)
{
	find_functions();
	memcpy(pcs_a, (uintptr_t[]){ leaf + 4, mid + 9, root + 9 }, 24);
	memcpy(pcs_b, (uintptr_t[]){ leaf + 6, mid + 9, root + 9 }, 24);
	memcpy(pcs_c, (uintptr_t[]){ libc_pc, mid + 9, root + 9 }, 24);
	memcpy(pcs_d, (uintptr_t[]){ 0x10, root + 9 }, 16);
	memcpy(pcs_e, (uintptr_t[]){ mid + 12, root + 9 }, 16);
	memcpy(pcs_f, (uintptr_t[]){ leaf + 4, leaf + 9, root + 9 }, 24);
	samples[0] = (struct prof_sample){ .pcs = pcs_a,
					   .npcs = 3,
					   .tid = 101,
					   .thread_name = "worker-a",
					   .samples = 3,
					   .periods = 4,
					   .pid = 0,
					   .space = 0,
					   .special = NULL };
	samples[1] = (struct prof_sample){ .pcs = pcs_b,
					   .npcs = 3,
					   .tid = 102,
					   .thread_name = NULL,
					   .samples = 2,
					   .periods = 2,
					   .pid = 0,
					   .space = 0,
					   .special = NULL };
	samples[2] = (struct prof_sample){ .pcs = pcs_c,
					   .npcs = 3,
					   .tid = 101,
					   .thread_name = "worker-a",
					   .samples = 1,
					   .periods = 1,
					   .pid = 0,
					   .space = 0,
					   .special = NULL };
	samples[3] = (struct prof_sample){ .pcs = pcs_d,
					   .npcs = 2,
					   .tid = 0,
					   .thread_name = NULL,
					   .samples = 1,
					   .periods = 1,
					   .pid = 0,
					   .space = 0,
					   .special = NULL };
	samples[4] = (struct prof_sample){ .pcs = NULL,
					   .npcs = 0,
					   .tid = 0,
					   .thread_name = NULL,
					   .samples = 7,
					   .periods = 9,
					   .pid = 0,
					   .space = 0,
					   .special = LOST };
	samples[5] = (struct prof_sample){ .pcs = pcs_e,
					   .npcs = 2,
					   .tid = 103,
					   .thread_name = "w3",
					   .samples = 1,
					   .periods = 1,
					   .pid = 0,
					   .space = 0,
					   .special = NULL };
	samples[6] = (struct prof_sample){ .pcs = pcs_f,
					   .npcs = 3,
					   .tid = 101,
					   .thread_name = "worker-a",
					   .samples = 2,
					   .periods = 2,
					   .pid = 0,
					   .space = 0,
					   .special = NULL };
	samples[7] = (struct prof_sample){ .pcs = NULL,
					   .npcs = 0,
					   .tid = 0,
					   .thread_name = NULL,
					   .samples = 1,
					   .periods = 1,
					   .pid = 0,
					   .space = 0,
					   .special = ODD };
	profile = (struct prof_profile){
		.samples = samples,
		.nsamples = NSAMPLES,
		.period_ns = PERIOD_NS,
		.time_nanos = 1700000000123456789ll,
		.duration_nanos = 1500000000,
		.comments = comments,
		.ncomments = 2,
	};
}

/* The name the writers must give @addr (the rule of pprof.h). */
static void expected_name(struct prof_symbolizer *s, uintptr_t addr, char *buf,
			  size_t n)
{
	unsigned int id;
	const char *name = prof_symbolize(s, addr, &id);
	const struct prof_mapping *m = mapping_by_id(s, id);

	if (name)
		snprintf(buf, n, "%s", name);
	else if (m)
		snprintf(buf, n, "%s+0x%" PRIx64, base_of(m->path),
			 (uint64_t)addr - m->start + m->offset);
	else
		snprintf(buf, n, "0x%" PRIxPTR, addr);
}

/* ---- proto.h ---- */

static void proto_roundtrip(void)
{
	static const uint64_t packed[] = { 0, 1, 127, 128, 300, UINT64_MAX };
	struct proto_buf b = { 0 }, sub = { 0 };
	struct proto_reader r, s;
	enum proto_wire w;
	uint64_t v;
	uint32_t f;

	proto_put_uint64(&sub, 1, 42);
	proto_put_uint64(&b, 1, UINT64_MAX);
	proto_put_int64(&b, 2, -2);
	proto_put_bool(&b, 3, true);
	proto_put_string(&b, 4, "hello");
	proto_put_packed(&b, 5, packed, 6);
	proto_put_message(&b, 6, &sub);
	proto_put_raw(&b, "\x3d\x01\x02\x03\x04", 5); /* field 7, I32 */
	proto_put_raw(&b,
		      "\x41"
		      "12345678",
		      9); /* field 8, I64 */
	proto_put_raw(&b, "\x4b\x08\x01\x53\x08\x02\x54\x4c", 8); /* groups */
	proto_put_uint64(&b, PROTO_MAX_FIELD, 7);
	KT_REQUIRE(!b.err && !sub.err);
	proto_reader_init(&r, b.data, b.len);
	KT_CHECK(!proto_read_key(&r, &f, &w) && f == 1 && w == PROTO_VARINT);
	KT_CHECK(!proto_read_varint(&r, &v) && v == UINT64_MAX);
	KT_CHECK(!proto_read_key(&r, &f, &w) && f == 2);
	KT_CHECK(!proto_read_varint(&r, &v) && (int64_t)v == -2);
	KT_CHECK(!proto_read_key(&r, &f, &w) && f == 3);
	KT_CHECK(!proto_read_varint(&r, &v) && v == 1);
	KT_CHECK(!proto_read_key(&r, &f, &w) && f == 4 && w == PROTO_LEN);
	KT_CHECK(!proto_read_len(&r, &s) && s.len == 5 &&
		 !memcmp(s.p, "hello", 5));
	KT_CHECK(!proto_read_key(&r, &f, &w) && f == 5);
	KT_REQUIRE(!proto_read_repeated(&r, w, &s));
	for (int i = 0; i < 6; i++)
		KT_CHECK(!proto_read_varint(&s, &v) && v == packed[i]);
	KT_CHECK(!proto_more(&s));
	KT_CHECK(!proto_read_key(&r, &f, &w) && f == 6);
	KT_REQUIRE(!proto_read_len(&r, &s));
	KT_CHECK(!proto_read_key(&s, &f, &w) && f == 1);
	KT_CHECK(!proto_read_varint(&s, &v) && v == 42 && !proto_more(&s));
	for (uint32_t want = 7; want <= 9; want++) {
		KT_CHECK(!proto_read_key(&r, &f, &w) && f == want);
		KT_CHECK(!proto_skip(&r, f, w));
	}
	KT_CHECK(!proto_read_key(&r, &f, &w) && f == PROTO_MAX_FIELD);
	KT_CHECK(!proto_read_varint(&r, &v) && v == 7 && !proto_more(&r));
	/* An unpacked repeated varint is a one-element window. */
	proto_reader_init(&r, "\x05", 1);
	KT_CHECK(!proto_read_repeated(&r, PROTO_VARINT, &s) && s.len == 1);
	proto_buf_free(&b);
	proto_buf_free(&sub);
}

/* @len bytes at @p must be refused by a key read or a skip. */
static int refused(const char *p, size_t len)
{
	struct proto_reader r;
	enum proto_wire w;
	uint32_t f;
	size_t pos;

	proto_reader_init(&r, p, len);
	while (proto_more(&r)) {
		pos = r.pos;
		if (proto_read_key(&r, &f, &w))
			return r.pos == pos;
		if (proto_skip(&r, f, w))
			return 1;
	}
	return 0;
}

static void proto_malformed(void)
{
	char deep[2 * (PROTO_MAX_DEPTH + 2)];
	struct proto_reader r;
	uint64_t v;

	KT_CHECK(refused("\x08", 1)); /* no value */
	KT_CHECK(refused("\x08\x80", 2)); /* truncated varint */
	KT_CHECK(refused("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11));
	KT_CHECK(refused("\x12\x05"
			 "abc",
			 5)); /* length past the end */
	KT_CHECK(refused("\x12\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10));
	KT_CHECK(refused("\x0e", 1)); /* wire type 6 */
	KT_CHECK(refused("\x0f", 1)); /* wire type 7 */
	KT_CHECK(refused("\x00\x01", 2)); /* field 0 */
	KT_CHECK(refused("\x0c", 1)); /* end group outside a group */
	KT_CHECK(refused("\x0b\x08\x01", 3)); /* group never closed */
	KT_CHECK(refused("\x0b\x14", 2)); /* closed with another field */
	KT_CHECK(refused("\x09\x01\x02", 3)); /* short I64 */
	KT_CHECK(refused("\x0d\x01", 2)); /* short I32 */
	KT_CHECK(refused("\xf8\xff\xff\xff\xff\x01", 6)); /* field 2^32-1 */
	for (int i = 0; i < PROTO_MAX_DEPTH + 2; i++)
		deep[i] = 0x0b; /* field 1, start group */
	for (int i = PROTO_MAX_DEPTH + 2; i < (int)sizeof(deep); i++)
		deep[i] = 0x0c;
	KT_CHECK(refused(deep, sizeof(deep)));
	KT_CHECK(!refused("\x0b\x0b\x0c\x0c", 4));
	proto_reader_init(&r, NULL, 0);
	KT_CHECK(proto_read_varint(&r, &v) == -EBADMSG);
}

/* ---- pprof, decoded back ---- */

struct want_func {
	const char *name;
	int64_t flat[2], cum[2];
};

static char libc_name[512], unknown_name[32];

static void fill_want(struct want_func *w, struct prof_symbolizer *s)
{
	expected_name(s, libc_pc, libc_name, sizeof(libc_name));
	snprintf(unknown_name, sizeof(unknown_name), "0x10");
	w[0] = (struct want_func){ "leaf_fn", { 7, 8 }, { 7, 8 } };
	w[1] = (struct want_func){ "mid_fn", { 1, 1 }, { 7, 8 } };
	w[2] = (struct want_func){ "root_fn", { 0, 0 }, { 10, 11 } };
	w[3] = (struct want_func){ libc_name, { 1, 1 }, { 1, 1 } };
	w[4] = (struct want_func){ unknown_name, { 1, 1 }, { 1, 1 } };
	w[5] = (struct want_func){ LOST, { 7, 9 }, { 7, 9 } };
	w[6] = (struct want_func){ ODD, { 1, 1 }, { 1, 1 } };
}

static const struct prof_report_func *find_func(const struct prof_summary *p,
						const char *name)
{
	for (size_t i = 0; i < p->nfuncs; i++)
		if (!strcmp(p->funcs[i].name, name))
			return &p->funcs[i];
	return NULL;
}

static void check_funcs(const struct prof_summary *p, const struct want_func *w,
			int idx)
{
	int64_t mul = idx ? (int64_t)PERIOD_NS : 1;

	KT_CHECK_EQ(p->nfuncs, 7);
	for (int i = 0; i < 7; i++) {
		const struct prof_report_func *f = find_func(p, w[i].name);

		KT_CHECK(f != NULL);
		if (!f) {
			fprintf(stderr, "  missing function %s\n", w[i].name);
			continue;
		}
		KT_CHECK_EQ(f->flat, w[i].flat[idx] * mul);
		KT_CHECK_EQ(f->cum, w[i].cum[idx] * mul);
	}
	for (size_t i = 1; i < p->nfuncs; i++)
		KT_CHECK(p->funcs[i - 1].flat > p->funcs[i].flat ||
			 (p->funcs[i - 1].flat == p->funcs[i].flat &&
			  strcmp(p->funcs[i - 1].name, p->funcs[i].name) < 0));
}

static void check_tids(const struct prof_summary *p, int idx)
{
	static const int64_t want[2][4] = { { 6, 2, 1, 9 }, { 7, 2, 1, 11 } };
	static const uint64_t tids[3] = { 101, 102, 103 };
	static const char *const names[3] = { "worker-a", "", "w3" };
	int64_t mul = idx ? (int64_t)PERIOD_NS : 1;

	KT_REQUIRE(p->ntids == 4);
	for (int i = 0; i < 3; i++) {
		KT_CHECK(p->tids[i].has_tid && p->tids[i].tid == tids[i]);
		KT_CHECK(!strcmp(p->tids[i].name, names[i]));
		KT_CHECK_EQ(p->tids[i].value, want[idx][i] * mul);
	}
	KT_CHECK(!p->tids[3].has_tid);
	KT_CHECK_EQ(p->tids[3].value, want[idx][3] * mul);
}

static void check_header(const struct prof_summary *p, int idx)
{
	KT_CHECK_EQ(p->nsample_types, 2);
	KT_CHECK_EQ(p->default_index, 1);
	KT_CHECK_EQ(p->sample_index, idx);
	KT_CHECK(!strcmp(p->type, idx ? "cpu" : "samples"));
	KT_CHECK(!strcmp(p->unit, idx ? "nanoseconds" : "count"));
	KT_CHECK_EQ(p->total, idx ? 21 * (int64_t)PERIOD_NS : 18);
	KT_CHECK_EQ(p->nsamples, NSAMPLES);
	KT_CHECK(!strcmp(p->period_type, "cpu"));
	KT_CHECK(!strcmp(p->period_unit, "nanoseconds"));
	KT_CHECK_EQ(p->period, PERIOD_NS);
	KT_CHECK_EQ(p->time_nanos, profile.time_nanos);
	KT_CHECK_EQ(p->duration_nanos, profile.duration_nanos);
	KT_REQUIRE(p->ncomments == 2);
	KT_CHECK(!strcmp(p->comments[0], comments[0]));
	KT_CHECK(!strcmp(p->comments[1], comments[1]));
}

static const struct prof_report_location *
find_loc(const struct prof_summary *p, uint64_t addr, const char *name)
{
	for (size_t i = 0; i < p->nlocs; i++)
		if (p->locs[i].address == addr && p->locs[i].name &&
		    !strcmp(p->locs[i].name, name))
			return &p->locs[i];
	return NULL;
}

/* Each location: its adjusted address, function and mapping. */
static void check_locations(const struct prof_summary *p,
			    struct prof_symbolizer *s)
{
	const struct {
		uintptr_t addr;
		const char *name;
	} want[] = {
		{ leaf + 4, "leaf_fn" },
		{ leaf + 6, "leaf_fn" },
		{ leaf + 8, "leaf_fn" },
		{ mid + 8, "mid_fn" },
		{ mid + 12, "mid_fn" },
		{ root + 8, "root_fn" },
		{ libc_pc, libc_name },
		{ 0x10, "0x10" },
		{ 0, LOST },
		{ 0, ODD },
	};
	const struct prof_report_location *l;
	const struct prof_mapping *m;
	unsigned int id;

	KT_CHECK_EQ(p->nlocs, 10);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		l = find_loc(p, want[i].addr, want[i].name);
		KT_CHECK(l != NULL);
		if (!l)
			continue;
		prof_symbolize(s, want[i].addr, &id);
		m = mapping_by_id(s, id);
		KT_CHECK_EQ(l->mapping, m ? (long)id - 1 : -1);
		if (m && l->mapping >= 0 && (size_t)l->mapping < p->nmaps)
			KT_CHECK(
				!strcmp(p->maps[l->mapping].filename, m->path));
	}
}

static void check_mappings(const struct prof_summary *p,
			   struct prof_symbolizer *s)
{
	const struct prof_mapping *m;
	size_t n = prof_symbolizer_mappings(s, &m);

	KT_REQUIRE(p->nmaps == n);
	for (size_t i = 0; i < n; i++) {
		const struct prof_report_mapping *d = &p->maps[i];

		KT_CHECK(d->id == m[i].id && d->start == m[i].start &&
			 d->limit == m[i].limit && d->offset == m[i].offset);
		KT_CHECK(!strcmp(d->filename, m[i].path));
		KT_CHECK(!strcmp(d->build_id, m[i].build_id));
		if (m[i].start <= leaf && leaf < m[i].limit)
			KT_CHECK(d->has_functions);
	}
}

static void pprof_roundtrip(void)
{
	const char *path = tmp_path("prof.pb.gz");
	struct prof_symbolizer *s = prof_symbolizer_new();
	struct want_func want[7];
	struct prof_summary *p;
	char err[256];

	KT_REQUIRE(s);
	KT_CHECK_EQ(prof_pprof_write(&profile, s, path), 0);
	fill_want(want, s);
	for (int idx = -1; idx < 2; idx++) {
		KT_CHECK_EQ(prof_summary_load(path, idx, &p, err, sizeof(err)),
			    0);
		if (!p) {
			fprintf(stderr, "  %s\n", err);
			continue;
		}
		check_header(p, idx < 0 ? 1 : idx);
		check_funcs(p, want, idx < 0 ? 1 : idx);
		check_tids(p, idx < 0 ? 1 : idx);
		check_locations(p, s);
		check_mappings(p, s);
		prof_summary_free(p);
	}
	KT_CHECK_EQ(prof_summary_load(path, 2, &p, err, sizeof(err)), -EINVAL);
	KT_CHECK(p == NULL && strstr(err, "sample index"));
	KT_CHECK_EQ(prof_summary_load(path, -2, &p, err, sizeof(err)), -EINVAL);
	prof_symbolizer_free(s);
}

/* A wall-clock profile: "wall" where a CPU profile says "cpu". */
static void pprof_wall_types(void)
{
	const char *path = tmp_path("wall.pb.gz");
	struct prof_profile w = profile;
	struct prof_summary *p;
	char err[256];

	w.wall = true;
	KT_CHECK_EQ(prof_pprof_write(&w, NULL, path), 0);
	KT_CHECK_EQ(prof_summary_load(path, -1, &p, err, sizeof(err)), 0);
	KT_REQUIRE(p);
	KT_CHECK_EQ(p->nsample_types, 2);
	KT_CHECK_EQ(p->default_index, 1);
	KT_CHECK(!strcmp(p->type, "wall"));
	KT_CHECK(!strcmp(p->unit, "nanoseconds"));
	KT_CHECK(!strcmp(p->period_type, "wall"));
	KT_CHECK_EQ(p->period, PERIOD_NS);
	KT_CHECK_EQ(p->total, 21 * (int64_t)PERIOD_NS);
	prof_summary_free(p);
}

static void pprof_without_symbolizer(void)
{
	const char *path = tmp_path("nosym.pb.gz");
	struct prof_summary *p;
	char name[32];

	KT_CHECK_EQ(prof_pprof_write(&profile, NULL, path), 0);
	KT_REQUIRE(!prof_summary_load(path, -1, &p, NULL, 0));
	KT_CHECK_EQ(p->nmaps, 0);
	KT_CHECK_EQ(p->nlocs, 10);
	snprintf(name, sizeof(name), "0x%" PRIxPTR, leaf + 8);
	KT_CHECK(find_loc(p, leaf + 8, name) != NULL);
	KT_CHECK(find_loc(p, 0, LOST) != NULL);
	KT_CHECK_EQ(p->total, 21 * (int64_t)PERIOD_NS);
	prof_summary_free(p);
}

static void writer_errors(void)
{
	struct prof_sample bad = { .pcs = NULL,
				   .npcs = 2,
				   .tid = 0,
				   .thread_name = NULL,
				   .samples = 1,
				   .periods = 1,
				   .pid = 0,
				   .space = 0,
				   .special = NULL };
	struct prof_profile bp = { .samples = &bad, .nsamples = 1 };
	struct prof_profile empty = { .period_ns = 1 };
	const char *missing = tmp_path("no/such/dir.pb.gz");
	struct prof_summary *p;

	KT_CHECK_EQ(prof_pprof_write(NULL, NULL, tmp_path("x")), -EINVAL);
	KT_CHECK_EQ(prof_pprof_write(&profile, NULL, NULL), -EINVAL);
	KT_CHECK_EQ(prof_pprof_write(&bp, NULL, tmp_path("x")), -EINVAL);
	KT_CHECK_EQ(prof_folded_write(&bp, NULL, tmp_path("x")), -EINVAL);
	KT_CHECK_EQ(prof_pprof_write(&profile, NULL, missing), -ENOENT);
	KT_CHECK_EQ(prof_folded_write(&profile, NULL, missing), -ENOENT);
	/* An empty profile is still a valid one. */
	KT_CHECK_EQ(prof_pprof_write(&empty, NULL, tmp_path("empty.pb.gz")), 0);
	KT_CHECK_EQ(prof_summary_load(tmp_path("empty.pb.gz"), -1, &p, NULL, 0),
		    0);
	KT_CHECK(p && p->total == 0 && p->nfuncs == 0 && p->nsamples == 0);
	prof_summary_free(p);
	unlink(tmp_path("x"));
	unlink(tmp_path("empty.pb.gz"));
}

/* ---- folded ---- */

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void folded_exact(void)
{
	const char *path = tmp_path("prof.folded");
	struct prof_symbolizer *s = prof_symbolizer_new();
	char want[2048] = "", *lines[7], *text;
	char buf[7][640];
	size_t len;

	KT_REQUIRE(s);
	expected_name(s, libc_pc, libc_name, sizeof(libc_name));
	/* Paths (sorted below) and their counts: periods, not signals. */
	snprintf(buf[0], sizeof(buf[0]), "[odd:name here]\t1");
	snprintf(buf[1], sizeof(buf[1]), "[profring: lost samples]\t9");
	snprintf(buf[2], sizeof(buf[2]), "root_fn;0x10\t1");
	snprintf(buf[3], sizeof(buf[3]), "root_fn;leaf_fn;leaf_fn\t2");
	snprintf(buf[4], sizeof(buf[4]), "root_fn;mid_fn\t1");
	snprintf(buf[5], sizeof(buf[5]), "root_fn;mid_fn;%s\t1", libc_name);
	snprintf(buf[6], sizeof(buf[6]), "root_fn;mid_fn;leaf_fn\t6");
	for (int i = 0; i < 7; i++)
		lines[i] = buf[i];
	qsort(lines, 7, sizeof(lines[0]), line_cmp);
	for (int i = 0; i < 7; i++) {
		*strchr(lines[i], '\t') = ' ';
		strcat(want, lines[i]);
		strcat(want, "\n");
	}
	KT_CHECK_EQ(prof_folded_write(&profile, s, path), 0);
	text = read_text(path, &len);
	KT_REQUIRE(text);
	KT_CHECK(!strcmp(text, want));
	if (strcmp(text, want))
		fprintf(stderr, "  got:\n%s  want:\n%s", text, want);
	free(text);
	prof_symbolizer_free(s);
}

/* ---- the decoder against broken input ---- */

static void decoder_refuses_truncation(void)
{
	const char *path = tmp_path("prof.pb.gz");
	const char *cut = tmp_path("cut.pb.gz");
	struct prof_summary *p;
	size_t len, gzlen;
	uint8_t *plain;
	char *gz;
	int wrong = 0;

	KT_REQUIRE(!prof_pprof_write(&profile, NULL, path));
	KT_REQUIRE(!prof_read_file(path, &plain, &len));
	KT_CHECK(!prof_summary_decode(plain, len, -1, &p, NULL, 0));
	prof_summary_free(p);
	for (size_t n = 0; n < len; n++) {
		if (prof_summary_decode(plain, n, -1, &p, NULL, 0) != -EBADMSG)
			wrong++;
		prof_summary_free(p);
	}
	KT_CHECK_EQ(wrong, 0);
	gz = read_text(path, &gzlen);
	KT_REQUIRE(gz);
	for (size_t n = 0; n < gzlen; n++) {
		KT_REQUIRE(!write_bytes(cut, gz, n));
		if (prof_summary_load(cut, -1, &p, NULL, 0) != -EBADMSG)
			wrong++;
		prof_summary_free(p);
	}
	KT_CHECK_EQ(wrong, 0);
	KT_CHECK_EQ(prof_report(cut, stdout, NULL, NULL, 0), -EBADMSG);
	KT_CHECK_EQ(prof_report(tmp_path("absent"), stdout, NULL, NULL, 0),
		    -ENOENT);
	unlink(cut);
	free(gz);
	free(plain);
}

/* A decoded summary must hold together. */
static int sane(const struct prof_summary *p)
{
	int ok = p->type && p->unit && p->sample_index < p->nsample_types;

	for (size_t i = 0; i < p->nfuncs; i++)
		ok &= p->funcs[i].name != NULL && strlen(p->funcs[i].name) < 64;
	for (size_t i = 0; i < p->nlocs; i++)
		ok &= p->locs[i].mapping < (long)p->nmaps;
	for (size_t i = 0; i < p->nmaps; i++)
		ok &= p->maps[i].filename && p->maps[i].build_id;
	return ok;
}

static void decoder_survives_corruption(void)
{
	const char *path = tmp_path("prof.pb.gz");
	const char *bad = tmp_path("bad.pb.gz");
	struct prof_summary *p;
	uint8_t *plain, *copy;
	size_t len, gzlen;
	uint64_t rng = 12345;
	int wrong = 0, refused = 0, rc;
	char *gz;

	KT_REQUIRE(!prof_pprof_write(&profile, NULL, path));
	KT_REQUIRE(!prof_read_file(path, &plain, &len));
	copy = malloc(len);
	KT_REQUIRE(copy);
	for (int i = 0; i < 5000; i++) {
		memcpy(copy, plain, len);
		for (int k = 0; k <= i % 3; k++) {
			size_t at = stress_rand(&rng) % len;

			if (i % 2)
				copy[at] ^= (uint8_t)(1u << (stress_rand(&rng) %
							     8));
			else
				copy[at] = (uint8_t)stress_rand(&rng);
		}
		rc = prof_summary_decode(copy, len, -1, &p, NULL, 0);
		wrong += rc && rc != -EBADMSG;
		wrong += !rc && !sane(p);
		refused += rc == -EBADMSG;
		prof_summary_free(p);
	}
	KT_CHECK_EQ(wrong, 0);
	KT_CHECK(refused > 1000);
	/* Random garbage of random lengths. */
	for (int i = 0; i < 2000; i++) {
		size_t n = stress_rand(&rng) % len;

		for (size_t k = 0; k < n; k++)
			copy[k] = (uint8_t)stress_rand(&rng);
		rc = prof_summary_decode(copy, n, -1, &p, NULL, 0);
		wrong += rc && rc != -EBADMSG;
		prof_summary_free(p);
	}
	KT_CHECK_EQ(wrong, 0);
	gz = read_text(path, &gzlen);
	KT_REQUIRE(gz);
	for (int i = 0; i < 300; i++) {
		size_t at = stress_rand(&rng) % gzlen;
		char was = gz[at];

		gz[at] ^= (char)(1u << (stress_rand(&rng) % 8));
		KT_REQUIRE(!write_bytes(bad, gz, gzlen));
		rc = prof_summary_load(bad, -1, &p, NULL, 0);
		wrong += rc && rc != -EBADMSG;
		prof_summary_free(p);
		gz[at] = was;
	}
	KT_CHECK_EQ(wrong, 0);
	unlink(bad);
	free(gz);
	free(copy);
	free(plain);
}

/* ---- the printed report ---- */

static void report_text(void)
{
	const char *path = tmp_path("prof.pb.gz");
	const char *out = tmp_path("report.txt");
	struct prof_report_opts o = { .top = 3,
				      .by_thread = 1,
				      .sample_index = -1 };
	struct prof_symbolizer *s = prof_symbolizer_new();
	int before = ktest_failed_checks;
	size_t len;
	char *text;
	FILE *f;

	KT_REQUIRE(s);
	KT_REQUIRE(!prof_pprof_write(&profile, s, path));
	prof_symbolizer_free(s);
	f = fopen(out, "w");
	KT_REQUIRE(f);
	KT_CHECK_EQ(prof_report(path, f, &o, NULL, 0), 0);
	fclose(f);
	text = read_text(out, &len);
	KT_REQUIRE(text);
	KT_CHECK(strstr(text, "Type: cpu (nanoseconds)\n"));
	KT_CHECK(strstr(text,
			"Duration: 1.50s, Total: 210ms in 8 sample records\n"));
	KT_CHECK(strstr(text, "Comment: profring: test comment one\n"));
	KT_CHECK(strstr(text, "Showing top 3 of 7 functions"));
	KT_CHECK(strstr(text,
			"      flat  flat%   sum%        cum   cum%  name\n"));
	KT_CHECK(strstr(text,
			"      90ms 42.86% 42.86%       90ms 42.86%  " LOST
			"\n"));
	KT_CHECK(strstr(text, "      80ms 38.10% 80.95%       80ms 38.10%  "
			      "leaf_fn\n"));
	KT_CHECK(strstr(text, "      70ms 33.33%  101  worker-a\n"));
	KT_CHECK(strstr(text, "      20ms  9.52%  102\n"));
	KT_CHECK(strstr(text, "     110ms 52.38%  (none)\n"));
	KT_CHECK(!strstr(text, "root_fn")); /* not in the top 3 */
	if (ktest_failed_checks != before)
		fprintf(stderr, "%s", text);
	free(text);
	unlink(out);
}

/* ---- hostile profiles ---- */

/*
 * A profile.proto message built field by field (pprof/proto.h); the
 * string table grows as strings are asked for, entry 0 being "".
 */
struct pb {
	struct proto_buf p;
	int64_t nstr, tid_key, thread_key;
};

static void pb_init(struct pb *b)
{
	*b = (struct pb){ .nstr = 1 };
	proto_put_string(&b->p, 6, "");
}

/* A new string table entry for @s: its index. */
static int64_t pb_str(struct pb *b, const char *s)
{
	proto_put_string(&b->p, 6, s);
	return b->nstr++;
}

static void pb_stype(struct pb *b, const char *type, const char *unit)
{
	struct proto_buf m = { 0 };

	proto_put_int64(&m, 1, pb_str(b, type));
	proto_put_int64(&m, 2, pb_str(b, unit));
	proto_put_message(&b->p, 1, &m);
	proto_buf_free(&m);
}

static void pb_func(struct pb *b, uint64_t id, const char *name)
{
	struct proto_buf m = { 0 };

	proto_put_uint64(&m, 1, id);
	proto_put_int64(&m, 2, pb_str(b, name));
	proto_put_message(&b->p, 5, &m);
	proto_buf_free(&m);
}

/* Location @id: @n lines, of functions @funcs (NULL: all of function 1). */
static void pb_loc(struct pb *b, uint64_t id, uint64_t addr,
		   const uint64_t *funcs, size_t n)
{
	struct proto_buf m = { 0 }, l = { 0 };

	proto_put_uint64(&m, 1, id);
	proto_put_uint64(&m, 3, addr);
	for (size_t i = 0; i < n; i++) {
		proto_buf_reset(&l);
		proto_put_uint64(&l, 1, funcs ? funcs[i] : 1);
		proto_put_message(&m, 4, &l);
	}
	proto_put_message(&b->p, 4, &m);
	proto_buf_free(&m);
	proto_buf_free(&l);
}

/*
 * A sample of value @v at @locs (leaf first), with a "tid" label if @tid
 * and a "thread" label if @thread.
 */
static void pb_sample(struct pb *b, const uint64_t *locs, size_t n, int64_t v,
		      uint64_t tid, const char *thread)
{
	struct proto_buf m = { 0 }, l = { 0 };

	proto_put_packed(&m, 1, locs, n);
	proto_put_packed(&m, 2, (const uint64_t *)&v, 1);
	if (tid) {
		if (!b->tid_key)
			b->tid_key = pb_str(b, "tid");
		proto_put_int64(&l, 1, b->tid_key);
		proto_put_uint64(&l, 3, tid);
		proto_put_message(&m, 3, &l);
	}
	if (thread) {
		if (!b->thread_key)
			b->thread_key = pb_str(b, "thread");
		proto_buf_reset(&l);
		proto_put_int64(&l, 1, b->thread_key);
		proto_put_int64(&l, 2, pb_str(b, thread));
		proto_put_message(&m, 3, &l);
	}
	proto_put_message(&b->p, 2, &m);
	proto_buf_free(&m);
	proto_buf_free(&l);
}

/* Sanitizers' shadow memory and quarantine: peak memory grows more. */
#define RSS_SLACK (TESTING_UNDER_ASAN || TESTING_UNDER_TSAN ? 3 : 1)

/*
 * Run @fn(@arg) in a child process under alarm(@secs).  *@grew_kb gets
 * how much the child's peak resident set grew while @fn ran (-1 if it did
 * not finish).
 *
 * Return: true if @fn returned 0 in time; else false, why on stderr.
 */
static bool in_child(int (*fn)(void *), void *arg, unsigned int secs,
		     long *grew_kb)
{
	struct rusage before, after;
	int fd[2], status;
	long grew = -1;
	pid_t pid;

	*grew_kb = -1;
	fflush(stdout);
	fflush(stderr);
	if (pipe(fd))
		return false;
	pid = fork();
	if (pid < 0)
		return false;
	if (!pid) {
		close(fd[0]);
		alarm(secs);
		getrusage(RUSAGE_SELF, &before);
		status = fn(arg);
		getrusage(RUSAGE_SELF, &after);
		grew = after.ru_maxrss - before.ru_maxrss;
		if (write(fd[1], &grew, sizeof(grew)) != sizeof(grew))
			status = 1;
		_exit(status ? 1 : 0);
	}
	close(fd[1]);
	if (read(fd[0], &grew, sizeof(grew)) == sizeof(grew))
		*grew_kb = grew;
	close(fd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return false;
	if (WIFSIGNALED(status))
		fprintf(stderr, "  child killed by signal %d%s\n",
			WTERMSIG(status),
			WTERMSIG(status) == SIGALRM ? " (out of time)" : "");
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A summary to check in a child, and what it must be. */
struct hostile {
	struct pb b;
	const char *path; /* read this file instead of b */
	int want_rc;
	const char *want_msg; /* in the error, with want_rc */
	int64_t total;
	size_t nfuncs;
	bool (*check)(const struct prof_summary *p, const struct hostile *h);
	int64_t v; /* for check_fg() */
	size_t n;
	bool has_f;
};

static int summarize_child(void *arg)
{
	const struct hostile *h = arg;
	struct prof_summary *p;
	char err[256];
	int rc, bad = 0;

	if (h->path)
		rc = prof_summary_load(h->path, -1, &p, err, sizeof(err));
	else
		rc = prof_summary_decode(h->b.p.data, h->b.p.len, -1, &p, err,
					 sizeof(err));
	if (rc != h->want_rc) {
		fprintf(stderr, "  rc %d, want %d: %s\n", rc, h->want_rc, err);
		bad = 1;
	} else if (rc && (!strstr(err, h->want_msg) || strchr(err, '\n'))) {
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err,
			h->want_msg);
		bad = 1;
	}
	if (!rc && !bad) {
		if (p->total != h->total || p->nfuncs != h->nfuncs ||
		    (h->check && !h->check(p, h))) {
			fprintf(stderr, "  total %" PRId64 ", %zu functions\n",
				p->total, p->nfuncs);
			bad = 1;
		}
		prof_summary_free(p);
	}
	return bad;
}

#define BIG_LINES 200000 /* location 1: lines of function 1, "f" */
#define WIDE 2000 /* location 2: a line for each of functions g0... */
#define CITES 200000 /* times one sample cites each of them */

/*
 * With h->has_f, f is the leaf: flat and cum h->v; else g0 is, flat
 * h->v * h->n.  Every g: cum h->v * h->n.
 */
static bool check_fg(const struct prof_summary *p, const struct hostile *h)
{
	const struct prof_report_func *f = find_func(p, "f");
	int64_t all = h->v * (int64_t)h->n;
	bool ok = h->has_f ? f && f->flat == h->v && f->cum == h->v : !f;
	char name[16];

	for (size_t i = 0; ok && i < WIDE; i++) {
		snprintf(name, sizeof(name), "g%zu", i);
		f = find_func(p, name);
		ok = f && f->flat == (!i && !h->has_f ? all : 0) &&
		     f->cum == all;
	}
	return ok;
}

/* Functions 2.. named g0..g(WIDE-1); location 2 has a line for each. */
static void add_wide(struct pb *b)
{
	uint64_t *funcs = malloc(WIDE * sizeof(*funcs));
	char name[16];

	for (size_t i = 0; i < WIDE; i++) {
		snprintf(name, sizeof(name), "g%zu", i);
		pb_func(b, i + 2, name);
		if (funcs)
			funcs[i] = i + 2;
	}
	pb_loc(b, 2, 0x2000, funcs, funcs ? WIDE : 0);
	free(funcs);
}

/*
 * One sample citing a location of BIG_LINES lines and one of WIDE
 * functions, CITES times each (1.2 MB): 4e10 frames read naively (minutes),
 * 2,001 once a sample's repeated locations and a location's repeated
 * functions are dropped.  It must take a moment (alarm: 20 s) and be
 * exact.
 */
static void summary_is_linear(void)
{
	struct hostile h = { .total = 3,
			     .nfuncs = WIDE + 1,
			     .check = check_fg,
			     .v = 3,
			     .n = 1,
			     .has_f = true };
	uint64_t *cites = malloc(2 * CITES * sizeof(*cites));
	long grew;

	KT_REQUIRE(cites);
	pb_init(&h.b);
	pb_stype(&h.b, "samples", "count");
	pb_func(&h.b, 1, "f");
	pb_loc(&h.b, 1, 0x1000, NULL, BIG_LINES);
	add_wide(&h.b);
	for (size_t i = 0; i < 2 * CITES; i++)
		cites[i] = i % 2 ? 2 : 1;
	pb_sample(&h.b, cites, 2 * CITES, 3, 0, NULL);
	free(cites);
	KT_REQUIRE(!h.b.p.err);
	KT_CHECK(in_child(summarize_child, &h, 20, &grew));
	proto_buf_free(&h.b.p);
}

/*
 * Many samples citing the location of WIDE functions once each: the work
 * grows as their product, so past the frames limit (32 per byte of the
 * profile + 16M) the profile is refused, quickly; under it, exact.
 */
static void summary_frames_limit(void)
{
	static const size_t nsamples[] = { 2000, 20000 };
	uint64_t loc = 2;
	long grew;

	for (int k = 0; k < 2; k++) {
		struct hostile h = { .total = 5 * (int64_t)nsamples[k],
				     .nfuncs = WIDE,
				     .check = check_fg,
				     .v = 5,
				     .n = nsamples[k] };

		pb_init(&h.b);
		pb_stype(&h.b, "samples", "count");
		add_wide(&h.b);
		for (size_t i = 0; i < nsamples[k]; i++)
			pb_sample(&h.b, &loc, 1, 5, 0, NULL);
		KT_REQUIRE(!h.b.p.err);
		if (k) {
			h.want_rc = -EFBIG;
			h.want_msg = "frames (the limit: 32 per byte + 16M)";
		}
		KT_CHECK(in_child(summarize_child, &h, 20, &grew));
		proto_buf_free(&h.b.p);
	}
}

/* Write @b's message gzip'd, then @n copies of the @len bytes at @rec. */
static int write_gz(const char *path, const struct pb *b, const void *rec,
		    size_t len, size_t n)
{
	char buf[4096];
	size_t per = sizeof(buf) / len, k;
	gzFile gz = gzopen(path, "wb1");
	int ok;

	if (!gz)
		return -1;
	for (size_t i = 0; i < per; i++)
		memcpy(buf + i * len, rec, len);
	ok = gzwrite(gz, b->p.data, (unsigned int)b->p.len) > 0;
	for (size_t i = 0; ok && i < n; i += k) {
		k = n - i < per ? n - i : per;
		ok = gzwrite(gz, buf, (unsigned int)(k * len)) > 0;
	}
	return gzclose(gz) == Z_OK && ok ? 0 : -1;
}

#define MANY 2000000 /* samples of 4 bytes: 8 MB */

/*
 * Millions of samples of no location, one value each, gzip'd: they must
 * take no memory each (the read buffer aside: peak growth under 4 bytes
 * per byte of profile + 16 MiB), and add up; the same samples with no
 * value are refused, as cheaply.
 */
static void summary_memory_bounded(void)
{
	struct hostile h = { .path = tmp_path("many.pb.gz"),
			     .total = MANY,
			     .nfuncs = 0 };
	long grew, bound_kb = RSS_SLACK * (4L * MANY * 4 + (16L << 20)) >> 10;

	pb_init(&h.b);
	pb_stype(&h.b, "samples", "count");
	KT_REQUIRE(!h.b.p.err);
	/* sample { value: [1] } */
	KT_REQUIRE(!write_gz(h.path, &h.b, "\x12\x02\x10\x01", 4, MANY));
	KT_CHECK(in_child(summarize_child, &h, 60, &grew));
	KT_CHECK(grew >= 0 && grew < bound_kb);
	printf("# %d samples, %d bytes: peak memory grew %ld kB (bound %ld "
	       "kB)\n",
	       MANY, 4 * MANY, grew, bound_kb);
	/* sample { }: no value for the one sample type */
	KT_REQUIRE(!write_gz(h.path, &h.b, "\x12\x00", 2, 2 * MANY));
	h.want_rc = -EBADMSG;
	h.want_msg = "a sample has 0 values for 1 sample types";
	KT_CHECK(in_child(summarize_child, &h, 60, &grew));
	KT_CHECK(grew >= 0 && grew < bound_kb);
	printf("# %d samples of no value: peak memory grew %ld kB\n", 2 * MANY,
	       grew);
	unlink(h.path);
	proto_buf_free(&h.b.p);
}

#define NMAPS 1000000

/*
 * A million mappings and nothing else: 56 bytes each decoded and 56 in
 * the summary, for 6 of profile.  Past the memory limit (16 bytes per
 * byte + 16 MiB) it is refused with a message naming the limit, having
 * used no more than the limit; a message past PROF_PROFILE_MAX is refused
 * before it is read.
 */
static void summary_memory_limit(void)
{
	struct hostile h = { .want_rc = -EFBIG,
			     .want_msg = "(the limit: 16 bytes per byte + "
					 "16 MiB)" };
	struct proto_buf m = { 0 };
	struct prof_summary *p;
	size_t big = (size_t)PROF_PROFILE_MAX + 1;
	long grew, bound_kb;
	char err[256];
	void *huge;

	pb_init(&h.b);
	pb_stype(&h.b, "samples", "count");
	for (uint64_t id = 1; id <= NMAPS; id++) {
		proto_buf_reset(&m);
		proto_put_uint64(&m, 1, id);
		proto_put_message(&h.b.p, 3, &m);
	}
	proto_buf_free(&m);
	KT_REQUIRE(!h.b.p.err);
	bound_kb = RSS_SLACK * (17L * (long)h.b.p.len + (24L << 20)) >> 10;
	KT_CHECK(in_child(summarize_child, &h, 60, &grew));
	KT_CHECK(grew >= 0 && grew < bound_kb);
	printf("# %d mappings, %zu bytes: refused; peak memory grew %ld kB "
	       "(bound %ld kB)\n",
	       NMAPS, h.b.p.len, grew, bound_kb);
	proto_buf_free(&h.b.p);
	/* Never read: its pages are never touched. */
	huge = mmap(NULL, big, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	KT_REQUIRE(huge != MAP_FAILED);
	KT_CHECK_EQ(prof_summary_decode(huge, big, -1, &p, err, sizeof(err)),
		    -EFBIG);
	KT_CHECK(p == NULL && strstr(err, "(the limit: 128 MiB)"));
	munmap(huge, big);
}

/*
 * Does @text hold a control character but newlines, or a byte past ASCII
 * but those of "é" (c3 a9, the only one report_escapes() keeps)?
 */
static bool has_controls(const char *text, size_t len)
{
	const unsigned char *u = (const unsigned char *)text;

	for (size_t i = 0; i < len; i++) {
		if ((u[i] < 0x20 && u[i] != '\n') || u[i] == 0x7f)
			return true;
		if (u[i] == 0xc3 && i + 1 < len && u[i + 1] == 0xa9)
			i++;
		else if (u[i] >= 0x80)
			return true;
	}
	return false;
}

/*
 * Names, a comment, a type and a thread name that would drive a terminal
 * (or reorder what it shows) are printed escaped (pprof/escape.h), the
 * UTF-8 of printable characters kept.
 */
static void report_escapes(void)
{
	const char *path = tmp_path("hostile.pb");
	const char *out = tmp_path("hostile.txt");
	struct prof_report_opts o = { .top = 20,
				      .by_thread = 1,
				      .sample_index = -1 };
	static const char *const names[] = {
		"\x1b]0;pwned\a", "\x1b[2Jclear",
		"cr\rlf\nnul?",	  "back\\slash",
		"h\xc3\xa9llo",	  "c1\xc2\x9b\x33\x31m",
		"bad\xff\xc3(",	  "rtl\xe2\x80\xae\x65vil",
	};
	static const char *const want[] = {
		"  \\x1b]0;pwned\\x07\n",
		"  \\x1b[2Jclear\n",
		"  cr\\x0dlf\\x0anul?\n",
		"  back\\\\slash\n",
		"  h\xc3\xa9llo\n",
		"  c1\\xc2\\x9b31m\n",
		"  bad\\xff\\xc3(\n",
		"  rtl\\xe2\\x80\\xaeevil\n",
		"Type: \\x1b[1mcpu (nano\\x09seconds)\n",
		"Comment: \\x1b]2;title\\x07\n",
		"  42  \\x1b[31mred\n",
	};
	struct pb b;
	int64_t c;
	uint64_t loc;
	size_t len;
	char *text, err[256];
	FILE *f;

	pb_init(&b);
	pb_stype(&b, "\x1b[1mcpu", "nano\tseconds");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		pb_func(&b, i + 1, names[i]);
		loc = i + 1;
		pb_loc(&b, loc, 0x100 * loc, &loc, 1);
		pb_sample(&b, &loc, 1, 1, 42, "\x1b[31mred");
	}
	c = pb_str(&b, "\x1b]2;title\a");
	proto_put_int64(&b.p, 13, c);
	KT_REQUIRE(!b.p.err);
	KT_REQUIRE(!write_bytes(path, b.p.data, b.p.len));
	proto_buf_free(&b.p);
	f = fopen(out, "w");
	KT_REQUIRE(f);
	KT_CHECK_EQ(prof_report(path, f, &o, err, sizeof(err)), 0);
	fclose(f);
	text = read_text(out, &len);
	KT_REQUIRE(text);
	KT_CHECK(!has_controls(text, len));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		KT_CHECK(strstr(text, want[i]));
		if (!strstr(text, want[i]))
			fprintf(stderr, "  missing: %s", want[i]);
	}
	free(text);
	unlink(out);
	unlink(path);
}

/* prof_report(@path) to @out, with stderr caught: what it printed there. */
static int report_quietly(const char *path, FILE *out, char *err, size_t errlen,
			  size_t *said)
{
	const char *caught = tmp_path("stderr.txt");
	int saved = dup(2), fd, rc;
	char *text;

	*said = (size_t)-1;
	fflush(stderr);
	fd = open(caught, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved < 0 || fd < 0 || dup2(fd, 2) < 0)
		return -1000;
	close(fd);
	rc = prof_report(path, out, NULL, err, errlen);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	text = read_text(caught, said);
	free(text);
	unlink(caught);
	return rc;
}

/*
 * prof_report() prints nothing on stderr: a failure is one line in @err,
 * naming the file when reading it failed, the report when writing it did.
 */
static void report_errors(void)
{
	char good[512], bad[512], absent[512], err[1024], want[1100];
	size_t said;
	FILE *ro;

	/* Copies: report_quietly() calls tmp_path() too. */
	snprintf(good, sizeof(good), "%s", tmp_path("prof.pb.gz"));
	snprintf(bad, sizeof(bad), "%s", tmp_path("bad.pb"));
	snprintf(absent, sizeof(absent), "%s", tmp_path("absent"));

	KT_REQUIRE(!prof_pprof_write(&profile, NULL, good));
	KT_REQUIRE(!write_bytes(bad, "\x08", 1));
	ro = fopen(bad, "r"); /* writing to it fails */
	KT_REQUIRE(ro);
	KT_CHECK_EQ(report_quietly(absent, stdout, err, sizeof(err), &said),
		    -ENOENT);
	snprintf(want, sizeof(want), "%s: %s", absent, strerror(ENOENT));
	KT_CHECK(!strcmp(err, want) && said == 0);
	KT_CHECK_EQ(report_quietly(bad, stdout, err, sizeof(err), &said),
		    -EBADMSG);
	snprintf(want, sizeof(want), "%s: malformed profile: ", bad);
	KT_CHECK(!strncmp(err, want, strlen(want)) && said == 0);
	KT_CHECK(!strchr(err, '\n'));
	KT_CHECK(report_quietly(good, ro, err, sizeof(err), &said) < 0);
	KT_CHECK(!strncmp(err, "writing the report: ", 20) && said == 0);
	KT_CHECK(!strstr(err, good));
	fclose(ro);
	unlink(bad);
}

int main(void)
{
	if (tmpfiles_init("pprof_test"))
		return EXIT_FAILURE;
	root_fn(3); /* they are real functions */
	make_profile();
	KT_RUN(proto_roundtrip);
	KT_RUN(proto_malformed);
	KT_RUN(pprof_roundtrip);
	KT_RUN(pprof_without_symbolizer);
	KT_RUN(pprof_wall_types);
	KT_RUN(writer_errors);
	KT_RUN(folded_exact);
	KT_RUN(decoder_refuses_truncation);
	KT_RUN(decoder_survives_corruption);
	KT_RUN(report_text);
	KT_RUN(summary_is_linear);
	KT_RUN(summary_frames_limit);
	KT_RUN(summary_memory_bounded);
	KT_RUN(summary_memory_limit);
	KT_RUN(report_escapes);
	KT_RUN(report_errors);
	if (getenv("PPROF_TEST_KEEP")) {
		printf("# prof.pb.gz and prof.folded kept in %s\n",
		       tmpfiles_dir());
		return ktest_exit();
	}
	unlink(tmp_path("prof.pb.gz"));
	unlink(tmp_path("nosym.pb.gz"));
	unlink(tmp_path("prof.folded"));
	tmpfiles_done();
	return ktest_exit();
}
