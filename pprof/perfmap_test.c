// SPDX-License-Identifier: MIT
/*
 * perfmap_test.c - unit tests for the perf map reader (perfmap.c) and the
 * symbolizer's use of it (symbolize.c):
 *
 * - the format: 0x or none, either case, tabs, "\r\n", NAMEs with spaces;
 * - later lines win: whole and partial overlaps by hand, and random lists
 *   checked address by address against a slow reference (the last line
 *   that covers it);
 * - hostile lines, each skipped and counted in its class, the good lines
 *   around them kept: not hex, 17 digits, no SIZE or NAME, a zero SIZE,
 *   one of 4 GiB, START + SIZE past 2^64, a NUL, a 1 MiB line, a last
 *   line with no newline;
 * - bounds: 1,000,000 lines read whole (timed, peak memory measured
 *   against the bound perfmap.h states), more than
 *   PROF_PERFMAP_MAX_ENTRIES lines cut there, a file larger than
 *   PROF_PERFMAP_MAX_BYTES read from its last line back to the cut;
 * - files that are not there, a directory, a FIFO (no hang), one owned by
 *   another user (skipped unless root can make one);
 * - the symbolizer: another process's perf map names JIT code in its own
 *   "[perf-...]" mapping, while ELF names win inside a file's mapping;
 *   in-process, prof_symbolizer_new() finds /tmp/perf-<pid>.map.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "testing/ktest.h"
#include "testing/tmpfiles.h"
#include "pprof/perfmap.h"
#include "pprof/symbolize.h"

/* Memory measured under a sanitizer may grow this many times more. */
#define RSS_SLACK (TESTING_UNDER_ASAN || TESTING_UNDER_TSAN ? 3 : 1)

static struct prof_perfmap *parse_str(const char *text,
				      struct prof_perfmap_stats *st)
{
	return prof_perfmap_parse(text, strlen(text), st);
}

static bool name_is(const struct prof_perfmap *m, uint64_t addr,
		    const char *want)
{
	const char *got = prof_perfmap_lookup(m, addr);

	if (!want || !got)
		return !want && !got;
	return !strcmp(got, want);
}

static void format_basics(void)
{
	struct prof_perfmap_stats st;
	struct prof_perfmap *m = parse_str("1000 10 plain\n"
					   "0x2000 0x20 JS:*hot /x/y.js:1:2\n"
					   "0X3000\t0X8\ttabbed name\r\n"
					   "4000   ABC upper\n"
					   "ffffffffffffff00 ff top\n",
					   &st);
	uint64_t lo, hi;

	KT_REQUIRE(m);
	KT_CHECK_EQ(st.lines, 5);
	KT_CHECK_EQ(st.entries, 5);
	KT_CHECK_EQ(st.malformed + st.too_long + st.truncated + st.over_cap, 0);
	KT_CHECK(name_is(m, 0x1000, "plain"));
	KT_CHECK(name_is(m, 0x100f, "plain"));
	KT_CHECK(name_is(m, 0x1010, NULL));
	KT_CHECK(name_is(m, 0xfff, NULL));
	KT_CHECK(name_is(m, 0x201f, "JS:*hot /x/y.js:1:2"));
	KT_CHECK(name_is(m, 0x3007, "tabbed name"));
	KT_CHECK(name_is(m, 0x3008, NULL));
	KT_CHECK(name_is(m, 0x4abb, "upper"));
	KT_CHECK(name_is(m, 0xfffffffffffffffe, "top"));
	KT_CHECK(name_is(m, 0xffffffffffffffff, NULL));
	KT_CHECK_EQ(prof_perfmap_range(m, &lo, &hi), 5);
	KT_CHECK(lo == 0x1000 && hi == 0xffffffffffffffff);
	prof_perfmap_free(m);
	m = parse_str("", &st);
	KT_REQUIRE(m);
	KT_CHECK_EQ(st.lines, 0);
	KT_CHECK(name_is(m, 0, NULL));
	KT_CHECK_EQ(prof_perfmap_range(m, &lo, &hi), 0);
	prof_perfmap_free(m);
	KT_CHECK(!prof_perfmap_lookup(NULL, 1));
}

static void later_lines_win(void)
{
	struct prof_perfmap *m = parse_str("1000 100 a\n"
					   "1040 40 b\n"
					   "2000 100 old\n"
					   "2000 100 new\n"
					   "3000 10 x\n"
					   "2ff8 10 y\n"
					   "4000 100 big\n"
					   "4000 80 small-later\n",
					   NULL);
	uint64_t lo, hi;

	KT_REQUIRE(m);
	KT_CHECK(name_is(m, 0x103f, "a"));
	KT_CHECK(name_is(m, 0x1040, "b"));
	KT_CHECK(name_is(m, 0x107f, "b"));
	KT_CHECK(name_is(m, 0x1080, "a")); /* the rest of a is still a */
	KT_CHECK(name_is(m, 0x10ff, "a"));
	KT_CHECK(name_is(m, 0x2050, "new"));
	KT_CHECK(name_is(m, 0x2ff8, "y"));
	KT_CHECK(name_is(m, 0x3007, "y"));
	KT_CHECK(name_is(m, 0x3008, "x"));
	KT_CHECK(name_is(m, 0x407f, "small-later"));
	KT_CHECK(name_is(m, 0x4080, "big"));
	/* a b a, new, y x, small-later big */
	KT_CHECK_EQ(prof_perfmap_range(m, &lo, &hi), 8);
	prof_perfmap_free(m);
}

#define RAND_LINES 64
#define RAND_SPACE 512

static void later_lines_win_random(void)
{
	uint64_t start[RAND_LINES], size[RAND_LINES];
	char text[RAND_LINES * 40], name[16];
	unsigned int seed = 12345;
	int bad = 0;

	for (int round = 0; round < 300 && !bad; round++) {
		int n = 1 + rand_r(&seed) % RAND_LINES;
		struct prof_perfmap *m;
		size_t len = 0;

		for (int i = 0; i < n; i++) {
			start[i] = 0x10000 +
				   (uint64_t)(rand_r(&seed) % RAND_SPACE);
			size[i] = 1 + (uint64_t)(rand_r(&seed) % 64);
			len += (size_t)snprintf(text + len, sizeof(text) - len,
						"%" PRIx64 " %" PRIx64 " f%d\n",
						start[i], size[i], i);
		}
		m = prof_perfmap_parse(text, len, NULL);
		KT_REQUIRE(m);
		for (uint64_t a = 0x10000 - 2; a < 0x10000 + RAND_SPACE + 66;
		     a++) {
			int want = -1;

			for (int i = 0; i < n; i++)
				if (a >= start[i] && a < start[i] + size[i])
					want = i;
			snprintf(name, sizeof(name), "f%d", want);
			if (!name_is(m, a, want < 0 ? NULL : name)) {
				fprintf(stderr, "  round %d addr %" PRIx64 "\n",
					round, a);
				bad = 1;
				break;
			}
		}
		prof_perfmap_free(m);
	}
	KT_CHECK(!bad);
}

static void hostile_lines(void)
{
	static const char *const bad[] = {
		"zz00 10 nothex\n",
		"1000 1g0 badsize\n",
		"1000\n",
		"1000 10\n",
		"1000 10 \n",
		"\n",
		" 1000 10 leading-blank\n",
		"1000 0 zerosize\n",
		"1000 100000000 four-gib\n",
		"fffffffffffffff0 11 wraps\n",
		"10000000000000000 10 seventeen-digits\n",
		"0x 10 no-digits\n",
		"1000-10 dash\n",
	};
	const size_t nbad = sizeof(bad) / sizeof(bad[0]);
	size_t cap = (size_t)4 << 20, len = 0;
	char *text = malloc(cap);
	struct prof_perfmap_stats st;
	struct prof_perfmap *m;

	KT_REQUIRE(text);
	len += (size_t)sprintf(text + len, "100 10 good-first\n");
	for (size_t i = 0; i < nbad; i++)
		len += (size_t)sprintf(text + len, "%s", bad[i]);
	/* A NUL inside a line. */
	memcpy(text + len, "2000 10 nul\0inside\n", 19);
	len += 19;
	/* A 1 MiB line that starts well. */
	len += (size_t)sprintf(text + len, "3000 10 ");
	memset(text + len, 'x', (size_t)1 << 20);
	len += (size_t)1 << 20;
	text[len++] = '\n';
	/* A line just under the limit: kept. */
	len += (size_t)sprintf(text + len, "4000 10 ");
	memset(text + len, 'y', PROF_PERFMAP_MAX_LINE - 8);
	len += PROF_PERFMAP_MAX_LINE - 8;
	text[len++] = '\n';
	len += (size_t)sprintf(text + len, "500 10 good-last\n");
	len += (size_t)sprintf(text + len, "600 10 cut-off");
	m = prof_perfmap_parse(text, len, &st);
	KT_REQUIRE(m);
	KT_CHECK_EQ(st.lines, 1 + nbad + 1 + 1 + 1 + 1 + 1);
	KT_CHECK_EQ(st.entries, 3);
	KT_CHECK_EQ(st.malformed, nbad + 1);
	KT_CHECK_EQ(st.too_long, 1);
	KT_CHECK_EQ(st.truncated, 1);
	KT_CHECK_EQ(st.over_cap, 0);
	KT_CHECK(name_is(m, 0x100, "good-first"));
	KT_CHECK(name_is(m, 0x500, "good-last"));
	KT_CHECK(name_is(m, 0x600, NULL));
	KT_CHECK(name_is(m, 0x1000, NULL));
	KT_CHECK(name_is(m, 0x2000, NULL));
	KT_CHECK(name_is(m, 0x3000, NULL));
	KT_CHECK(prof_perfmap_lookup(m, 0x4000) &&
		 strlen(prof_perfmap_lookup(m, 0x4000)) ==
			 PROF_PERFMAP_MAX_LINE - 8);
	prof_perfmap_free(m);
	free(text);
	errno = 0;
	KT_CHECK(!prof_perfmap_parse("", PROF_PERFMAP_MAX_BYTES + 1, NULL));
	KT_CHECK_EQ(errno, EFBIG);
}

/* Write @n lines "START 10 fn_I" (START = 0x10000000 + 0x10 * I) to @path. */
static int write_lines(const char *path, size_t n, size_t first)
{
	FILE *fp = fopen(path, "we");

	if (!fp)
		return -1;
	for (size_t i = first; i < first + n; i++)
		fprintf(fp, "%zx 10 fn_%zu\n", (size_t)0x10000000 + 0x10 * i,
			i);
	return fclose(fp);
}

static double secs_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static long peak_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void million_lines(void)
{
	const char *path = tmp_path("million.map");
	const size_t n = 1000000;
	struct prof_perfmap_stats st;
	struct prof_perfmap *m;
	struct timespec t0;
	long before, grew, bound;
	char want[32];
	struct stat sb;
	int bad = 0;

	KT_REQUIRE(!write_lines(path, n, 0));
	KT_REQUIRE(!stat(path, &sb));
	before = peak_kb();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	KT_REQUIRE(!prof_perfmap_read(path, &m, &st));
	printf("# %zu lines, %lld bytes: read in %.3f s", n,
	       (long long)sb.st_size, secs_since(&t0));
	grew = peak_kb() - before;
	/*
	 * perfmap.h: the bytes read, 20 B a line, 16 B a range, arrays
	 * doubled; 4 MiB of slack (sanitizers: their shadow and redzones).
	 */
	bound = (long)(((size_t)sb.st_size + 20 * n + 32 * n) / 1024) + 4096;
	bound *= RSS_SLACK;
	printf(", peak memory grew %ld kB (bound %ld kB)\n", grew, bound);
	KT_CHECK(grew <= bound);
	KT_CHECK_EQ(st.entries, n);
	KT_CHECK_EQ(st.lines, n);
	for (size_t i = 0; i < n; i += 997) {
		snprintf(want, sizeof(want), "fn_%zu", i);
		if (!name_is(m, 0x10000000 + 0x10 * i + 0xf, want))
			bad++;
	}
	KT_CHECK(!bad);
	KT_CHECK(name_is(m, 0x10000000 + 0x10 * n, NULL));
	prof_perfmap_free(m);
	unlink(path);
}

static void entries_capped(void)
{
	const char *path = tmp_path("capped.map");
	const size_t n = PROF_PERFMAP_MAX_ENTRIES + 1000;
	struct prof_perfmap_stats st;
	struct prof_perfmap *m;

	KT_REQUIRE(!write_lines(path, n, 0));
	KT_REQUIRE(!prof_perfmap_read(path, &m, &st));
	KT_CHECK_EQ(st.entries, PROF_PERFMAP_MAX_ENTRIES);
	KT_CHECK_EQ(st.over_cap, 1000);
	KT_CHECK(name_is(m, 0x10000000, "fn_0"));
	KT_CHECK(
		name_is(m, 0x10000000 + 0x10 * PROF_PERFMAP_MAX_ENTRIES, NULL));
	prof_perfmap_free(m);
	unlink(path);
}

/* A file past PROF_PERFMAP_MAX_BYTES: its end is read, from a line start. */
static void bytes_capped(void)
{
	const char *path = tmp_path("big.map");
	size_t line = 4000, nlines = PROF_PERFMAP_MAX_BYTES / line + 100;
	struct prof_perfmap_stats st;
	struct prof_perfmap *m;
	char *junk = malloc(line);
	struct stat sb;
	FILE *fp;

	KT_REQUIRE(junk);
	memset(junk, 'j', line - 1);
	junk[line - 1] = '\n';
	fp = fopen(path, "we");
	KT_REQUIRE(fp);
	fprintf(fp, "100 10 first-line\n");
	for (size_t i = 0; i < nlines; i++)
		fwrite(junk, 1, line, fp);
	fprintf(fp, "200 10 last-line\n");
	KT_REQUIRE(!fclose(fp));
	free(junk);
	KT_REQUIRE(!stat(path, &sb));
	KT_REQUIRE(!prof_perfmap_read(path, &m, &st));
	KT_CHECK(name_is(m, 0x200, "last-line"));
	KT_CHECK(name_is(m, 0x100, NULL));
	KT_CHECK_EQ(st.entries, 1);
	/* every junk line read is malformed; none is cut in the middle */
	KT_CHECK_EQ(st.malformed, PROF_PERFMAP_MAX_BYTES / line);
	KT_CHECK_EQ(st.bytes_skipped + PROF_PERFMAP_MAX_BYTES / line * line +
			    strlen("200 10 last-line\n"),
		    (uint64_t)sb.st_size);
	prof_perfmap_free(m);
	unlink(path);
}

static void files_refused(void)
{
	const char *fifo = tmp_path("fifo.map");
	const char *dir = tmp_path("dir.map");
	const char *other = tmp_path("other.map");
	struct prof_perfmap_stats st;
	struct prof_perfmap *m;

	KT_CHECK_EQ(prof_perfmap_read(tmp_path("none.map"), &m, &st), -ENOENT);
	KT_CHECK(!m);
	KT_REQUIRE(!mkdir(dir, 0700));
	KT_CHECK_EQ(prof_perfmap_read(dir, &m, &st), -EINVAL);
	rmdir(dir);
	KT_REQUIRE(!mkfifo(fifo, 0600));
	KT_CHECK_EQ(prof_perfmap_read(fifo, &m, &st), -EINVAL);
	unlink(fifo);
	KT_REQUIRE(!write_lines(other, 3, 0));
	if (geteuid() != 0 || chown(other, 65534, 65534)) {
		unlink(other);
		KT_SKIP("cannot give a file to another user (not root)");
	}
	KT_CHECK_EQ(prof_perfmap_read(other, &m, &st), -EPERM);
	KT_CHECK(!m);
	unlink(other);
}

static __attribute__((noinline)) int an_elf_function(int x)
{
	return x * 3 + 1;
}

/* Another process's perf map: JIT code in its own mapping, ELF first. */
static void symbolizer_foreign(void)
{
	const char *path = tmp_path("perf-4242.map");
	uintptr_t fn = (uintptr_t)an_elf_function;
	struct prof_map_spec spec = { 0 };
	struct prof_perfmap_stats st;
	const struct prof_mapping *maps;
	struct prof_symbolizer *s;
	unsigned int id = 99;
	char text[256];
	FILE *fp;
	size_t n;

	/* The mapping of this test's own text, as a report would give it. */
	fp = fopen("/proc/self/maps", "re");
	KT_REQUIRE(fp);
	while (fgets(text, sizeof(text), fp)) {
		unsigned long long lo, hi, off;
		char perms[8], file[200] = "";

		if (sscanf(text, "%llx-%llx %7s %llx %*s %*s %199s", &lo, &hi,
			   perms, &off, file) == 5 &&
		    perms[2] == 'x' && fn >= lo && fn < hi) {
			spec = (struct prof_map_spec){ lo, hi, off, NULL };
			spec.path = strdup(file);
		}
	}
	fclose(fp);
	KT_REQUIRE(spec.path);
	fp = fopen(path, "we");
	KT_REQUIRE(fp);
	fprintf(fp, "7f0000001000 100 JS:*jitted /a.js:1:1\n");
	fprintf(fp, "%" PRIxPTR " 10 masks-an-elf-name\n", fn);
	fprintf(fp, "garbage\n");
	KT_REQUIRE(!fclose(fp));
	s = prof_symbolizer_new_maps(&spec, 1);
	KT_REQUIRE(s);
	KT_CHECK_EQ(prof_symbolizer_set_perf_map(s, path), 0);
	KT_CHECK(!strcmp(prof_symbolize(s, 0x7f0000001080, &id),
			 "JS:*jitted /a.js:1:1"));
	KT_CHECK_EQ(id, 2);
	KT_CHECK(!prof_symbolize(s, 0x7f0000001100, &id));
	KT_CHECK_EQ(id, 0);
	KT_CHECK(!strcmp(prof_symbolize(s, fn, &id), "an_elf_function"));
	KT_CHECK_EQ(id, 1);
	n = prof_symbolizer_mappings(s, &maps);
	KT_REQUIRE(n == 2);
	KT_CHECK(!strcmp(maps[1].path, "[perf-4242.map]"));
	KT_CHECK(maps[1].id == 2 && maps[1].has_functions);
	KT_CHECK(maps[1].start == 0x7f0000001000 &&
		 maps[1].limit == 0x7f0000001100);
	KT_CHECK_EQ(prof_symbolizer_perf_map_stats(s, &st), 0);
	KT_CHECK(st.entries == 2 && st.malformed == 1);
	KT_CHECK_EQ(prof_symbolizer_set_perf_map(s, path), -EBUSY);
	prof_symbolizer_free(s);
	/* No perf map set, or none there: nothing named, no extra mapping. */
	s = prof_symbolizer_new_maps(&spec, 1);
	KT_REQUIRE(s);
	KT_CHECK(!prof_symbolize(s, 0x7f0000001080, &id));
	KT_CHECK_EQ(prof_symbolizer_mappings(s, &maps), 1);
	KT_CHECK_EQ(prof_symbolizer_perf_map_stats(s, &st), -ENOENT);
	prof_symbolizer_free(s);
	s = prof_symbolizer_new_maps(&spec, 1);
	KT_REQUIRE(s);
	KT_CHECK_EQ(prof_symbolizer_set_perf_map(s, tmp_path("gone.map")), 0);
	KT_CHECK(!prof_symbolize(s, 0x7f0000001080, &id));
	KT_CHECK_EQ(prof_symbolizer_mappings(s, &maps), 1);
	prof_symbolizer_free(s);
	unlink(path);
	free((char *)spec.path);
}

/*
 * In-process: /tmp/perf-<our pid>.map names code in no file; one older
 * than this process (another process of our pid left it) is not read.
 */
static void symbolizer_own(void)
{
	char path[64];
	void *heap = malloc(64); /* an address in no file's mapping */
	uintptr_t a = (uintptr_t)heap;
	struct prof_symbolizer *s;
	unsigned int id = 0;
	const char *name;
	FILE *fp;

	KT_REQUIRE(heap);
	snprintf(path, sizeof(path), PROF_PERFMAP_PATH_FMT, (int)getpid());
	if (!access(path, F_OK)) {
		free(heap);
		KT_SKIP("a perf map of our pid is already there");
	}
	fp = fopen(path, "wx");
	KT_REQUIRE(fp);
	fprintf(fp, "%" PRIxPTR " 40 own-jit-code\n", a);
	fclose(fp);
	s = prof_symbolizer_new();
	name = s ? prof_symbolize(s, a + 8, &id) : NULL;
	KT_CHECK(name && !strcmp(name, "own-jit-code"));
	KT_CHECK(id > 0);
	prof_symbolizer_free(s);
	/* Last written an hour before we began: an earlier process's. */
	KT_REQUIRE(!utime(path,
			  &(struct utimbuf){ .actime = time(NULL) - 3600,
					     .modtime = time(NULL) - 3600 }));
	s = prof_symbolizer_new();
	KT_REQUIRE(s);
	id = 1;
	KT_CHECK(!prof_symbolize(s, a + 8, &id));
	KT_CHECK_EQ(id, 0);
	prof_symbolizer_free(s);
	unlink(path);
	free(heap);
}

int main(void)
{
	if (tmpfiles_init("perfmap_test"))
		return EXIT_FAILURE;
	KT_RUN(format_basics);
	KT_RUN(later_lines_win);
	KT_RUN(later_lines_win_random);
	KT_RUN(hostile_lines);
	KT_RUN(million_lines);
	KT_RUN(entries_capped);
	KT_RUN(bytes_capped);
	KT_RUN(files_refused);
	KT_RUN(symbolizer_foreign);
	KT_RUN(symbolizer_own);
	tmpfiles_done();
	return ktest_exit();
}
