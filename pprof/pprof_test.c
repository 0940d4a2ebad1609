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
 * With PPROF_TEST_KEEP set in the environment, the last pprof and folded
 * files are left in the temporary directory, for `go tool pprof`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testing/ktest.h"
#include "testing/harness.h"
#include "testing/tmpfiles.h"
#include "pprof/pprof.h"
#include "pprof/proto.h"
#include "pprof/report.h"
#include "pprof/symbolize.h"

#define PERIOD_NS 10000000ull
#define LOST "[profring: lost samples]"
#define ODD "[odd;name\nhere]"
#define NSAMPLES 8

static volatile unsigned long sink;

__attribute__((noinline)) static void leaf_fn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 3;
}

__attribute__((noinline)) static void mid_fn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		sink ^= i;
		leaf_fn(i);
	}
}

__attribute__((noinline)) static void root_fn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		sink += 7;
		mid_fn(i);
	}
}

/* The test profile: stacks of the functions above, libc, junk. */
static uintptr_t leaf, mid, root, libc_pc;
static uintptr_t pcs_a[3], pcs_b[3], pcs_c[3], pcs_d[2], pcs_e[2], pcs_f[3];
static struct prof_sample samples[NSAMPLES];
static const char *const comments[] = { "profring: test comment one",
					"second comment" };
static struct prof_profile profile;

static void make_profile(void)
{
	leaf = (uintptr_t)&leaf_fn;
	mid = (uintptr_t)&mid_fn;
	root = (uintptr_t)&root_fn;
	libc_pc = (uintptr_t)&strlen + 1;
	memcpy(pcs_a, (uintptr_t[]){ leaf + 4, mid + 9, root + 9 }, 24);
	memcpy(pcs_b, (uintptr_t[]){ leaf + 6, mid + 9, root + 9 }, 24);
	memcpy(pcs_c, (uintptr_t[]){ libc_pc, mid + 9, root + 9 }, 24);
	memcpy(pcs_d, (uintptr_t[]){ 0x10, root + 9 }, 16);
	memcpy(pcs_e, (uintptr_t[]){ mid + 12, root + 9 }, 16);
	memcpy(pcs_f, (uintptr_t[]){ leaf + 4, leaf + 9, root + 9 }, 24);
	samples[0] =
		(struct prof_sample){ pcs_a, 3, 101, "worker-a", 3, 4, NULL };
	samples[1] = (struct prof_sample){ pcs_b, 3, 102, NULL, 2, 2, NULL };
	samples[2] =
		(struct prof_sample){ pcs_c, 3, 101, "worker-a", 1, 1, NULL };
	samples[3] = (struct prof_sample){ pcs_d, 2, 0, NULL, 1, 1, NULL };
	samples[4] = (struct prof_sample){ NULL, 0, 0, NULL, 7, 9, LOST };
	samples[5] = (struct prof_sample){ pcs_e, 2, 103, "w3", 1, 1, NULL };
	samples[6] =
		(struct prof_sample){ pcs_f, 3, 101, "worker-a", 2, 2, NULL };
	samples[7] = (struct prof_sample){ NULL, 0, 0, NULL, 1, 1, ODD };
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

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static const struct prof_mapping *mapping_by_id(struct prof_symbolizer *s,
						unsigned int id)
{
	const struct prof_mapping *m;
	size_t n = prof_symbolizer_mappings(s, &m);

	return id && id <= n ? &m[id - 1] : NULL;
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
	struct prof_sample bad = { NULL, 2, 0, NULL, 1, 1, NULL };
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
	/* Paths (sorted below) and their counts. */
	snprintf(buf[0], sizeof(buf[0]), "[odd:name here]\t1");
	snprintf(buf[1], sizeof(buf[1]), "[profring: lost samples]\t7");
	snprintf(buf[2], sizeof(buf[2]), "root_fn;0x10\t1");
	snprintf(buf[3], sizeof(buf[3]), "root_fn;leaf_fn;leaf_fn\t2");
	snprintf(buf[4], sizeof(buf[4]), "root_fn;mid_fn\t1");
	snprintf(buf[5], sizeof(buf[5]), "root_fn;mid_fn;%s\t1", libc_name);
	snprintf(buf[6], sizeof(buf[6]), "root_fn;mid_fn;leaf_fn\t5");
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
	KT_CHECK_EQ(prof_report(cut, stdout, NULL), -EBADMSG);
	KT_CHECK_EQ(prof_report(tmp_path("absent"), stdout, NULL), -ENOENT);
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
	KT_CHECK_EQ(prof_report(path, f, &o), 0);
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
	KT_RUN(writer_errors);
	KT_RUN(folded_exact);
	KT_RUN(decoder_refuses_truncation);
	KT_RUN(decoder_survives_corruption);
	KT_RUN(report_text);
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
