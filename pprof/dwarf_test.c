// SPDX-License-Identifier: MIT
/*
 * dwarf_test.c - source lines and inlined frames (pprof/dwarf.c through
 * prof_symbolize_frames()).
 *
 * This program's own code is the subject: outer_fn() calls inner_fn(),
 * which is always inlined and calls probe(), which keeps its return
 * address: an address inside inner_fn's inlined body.  Symbolized, it
 * must give two frames, inner_fn at the line of its call to probe() and
 * outer_fn at the line of its call to inner_fn(), in this file, with the
 * lines the functions start at; the mapping says it has lines.  Then a
 * copy of this executable stripped of its DWARF gives one frame and no
 * lines, until its separate debug file (objcopy --only-keep-debug) is put
 * where the build-id says: then the same frames, and no file descriptor
 * is left open.  Addresses in no
 * function's DWARF (libc's, without libc6-dbg) give the symbol table's
 * name alone.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testing/ktest.h"
#include "testing/tmpfiles.h"
#include "pprof/symbolize.h"

static volatile unsigned long sink;
static uintptr_t probed;

/* GCC clones a function it can specialize (outer_fn.constprop.0). */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

/* clang-format off */
NOINLINE static void probe(void)
{
	probed = (uintptr_t)__builtin_return_address(0);
	sink++;
}

static const unsigned int inner_start = __LINE__ + 1;
static inline __attribute__((always_inline)) void inner_fn(unsigned long n)
{
	sink += n;
	probe(); static const unsigned int inner_call = __LINE__;
	(void)inner_call;
	sink ^= n;
}
static const unsigned int inner_call_line = __LINE__ - 4;

static const unsigned int outer_start = __LINE__ + 1;
NOINLINE static void outer_fn(unsigned long n)
{
	sink += 3;
	inner_fn(n);
	sink += 5;
}
static const unsigned int outer_call_line = __LINE__ - 3;
/* clang-format on */

static const char *base_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* The frames at the probed address (a return address: less one). */
static size_t frames_at(struct prof_symbolizer *s, struct prof_frame *f,
			unsigned int *mapid)
{
	return prof_symbolize_frames(s, probed - 1, f, 8, mapid);
}

static void check_two_frames(const struct prof_frame *f, size_t n)
{
	KT_CHECK_EQ(n, 2);
	if (n != 2)
		return;
	KT_CHECK(f[0].name && !strcmp(f[0].name, "inner_fn"));
	KT_CHECK(f[1].name && !strcmp(f[1].name, "outer_fn"));
	KT_CHECK(f[0].file && !strcmp(base_of(f[0].file), "dwarf_test.c"));
	KT_CHECK(f[1].file && !strcmp(base_of(f[1].file), "dwarf_test.c"));
	KT_CHECK_EQ(f[0].line, inner_call_line);
	KT_CHECK_EQ(f[1].line, outer_call_line);
	KT_CHECK_EQ(f[0].start_line, inner_start);
	KT_CHECK_EQ(f[1].start_line, outer_start);
	KT_CHECK(f[0].decl_file &&
		 !strcmp(base_of(f[0].decl_file), "dwarf_test.c"));
}

static const struct prof_mapping *mapping(struct prof_symbolizer *s,
					  unsigned int id)
{
	const struct prof_mapping *m;
	size_t n = prof_symbolizer_mappings(s, &m);

	return id && id <= n ? &m[id - 1] : NULL;
}

static void inline_frames(void)
{
	struct prof_symbolizer *s = prof_symbolizer_new();
	struct prof_frame f[8];
	unsigned int mapid = 0;
	size_t n;

	KT_REQUIRE(s);
	outer_fn(1);
	KT_REQUIRE(probed);
	n = frames_at(s, f, &mapid);
	for (size_t i = 0; i < n; i++)
		printf("  frame %zu: %s %s:%u (starts at %u)\n", i, f[i].name,
		       f[i].file, f[i].line, f[i].start_line);
	check_two_frames(f, n);
	KT_CHECK(mapping(s, mapid) && mapping(s, mapid)->has_lines);
	/* Asked again (the cache): the same. */
	KT_CHECK_EQ(frames_at(s, f, NULL), n);
	check_two_frames(f, n);
	/* max 1: the innermost alone. */
	KT_CHECK_EQ(prof_symbolize_frames(s, probed - 1, f, 1, NULL), 1);
	KT_CHECK(f[0].name && !strcmp(f[0].name, "inner_fn"));
	prof_symbolizer_free(s);
}

/* How many file descriptors this process has open. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Whether this process has a file whose path holds @what mapped. */
static bool mapped(const char *what)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* This executable's mapping of the probed address, from /proc/self/maps. */
static int own_mapping(struct prof_map_spec *m)
{
	char line[4096], path[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = -1;

	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &a, &b,
			   perms, &off, path) == 5 &&
		    a <= probed && probed < b && perms[2] == 'x') {
			m->start = a;
			m->limit = b;
			m->offset = off;
			found = 0;
		}
	}
	fclose(f);
	return found;
}

static void separate_debug_file(void)
{
	char exe[512] = { 0 };
	char strip[512], debug_dir[512], dbg[1024];
	struct prof_map_spec m = { 0 };
	const struct prof_mapping *pm;
	struct prof_symbolizer *s;
	struct prof_frame f[8];
	unsigned int mapid;
	char id[130];
	size_t n;
	int fds;

	/* Not /proc/self/exe: in the commands, that is the shell. */
	KT_REQUIRE(readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0);
	snprintf(strip, sizeof(strip), "%s", tmp_path("stripped"));
	snprintf(debug_dir, sizeof(debug_dir), "%s", tmp_path("debug"));
	KT_REQUIRE(!own_mapping(&m));
	KT_REQUIRE(!run_cmd("objcopy --strip-debug '%s' '%s'", exe, strip));
	m.path = strip;

	/* Stripped, no debug file: the symbol table's name. */
	prof_symbolizer_set_debug_dir(tmp_path("none"));
	s = prof_symbolizer_new_maps(&m, 1);
	KT_REQUIRE(s);
	n = frames_at(s, f, &mapid);
	KT_CHECK_EQ(n, 1);
	KT_CHECK(n && f[0].name && !strcmp(f[0].name, "outer_fn"));
	KT_CHECK(n && !f[0].file && !f[0].line);
	pm = mapping(s, mapid);
	KT_REQUIRE(pm && strlen(pm->build_id) > 2);
	KT_CHECK(!pm->has_lines);
	snprintf(id, sizeof(id), "%s", pm->build_id);
	prof_symbolizer_free(s);
	/* Looked for and not found: debuginfod was not asked (nor loaded). */
	KT_CHECK(!mapped("libdebuginfod"));
	KT_CHECK(!mapped("libcurl"));

	/* The debug file where the build-id says: the frames again. */
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s/%s.debug", debug_dir, id,
		 id + 2);
	KT_REQUIRE(!run_cmd("mkdir -p \"$(dirname '%s')\" && objcopy "
			    "--only-keep-debug '%s' '%s'",
			    dbg, exe, dbg));
	prof_symbolizer_set_debug_dir(debug_dir);
	fds = open_fds();
	s = prof_symbolizer_new_maps(&m, 1);
	KT_REQUIRE(s);
	n = frames_at(s, f, &mapid);
	check_two_frames(f, n);
	pm = mapping(s, mapid);
	KT_CHECK(pm && pm->has_lines);
	prof_symbolizer_free(s);
	/* The file and its debug file stay read, but hold no descriptor. */
	KT_CHECK_EQ(open_fds(), fds);
	prof_symbolizer_set_debug_dir(NULL);
	unlink(strip);
	run_cmd("rm -rf '%s'", tmp_path("debug"));
}

/*
 * A stripped copy with a .gnu_debuglink to a debug file beside it: found
 * by the link (the debug directory holds nothing), with the same frames;
 * a file of another build-id at the link's place is not taken.
 */
static void debug_link(void)
{
	char exe[512] = { 0 };
	char strip[512], dbg[512], other[512];
	struct prof_map_spec m = { 0 };
	struct prof_symbolizer *s;
	struct prof_frame f[8];
	size_t n;

	KT_REQUIRE(readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0);
	KT_REQUIRE(!own_mapping(&m));
	snprintf(dbg, sizeof(dbg), "%s", tmp_path("linked.dbg"));
	snprintf(strip, sizeof(strip), "%s", tmp_path("linked"));
	snprintf(other, sizeof(other), "%s", tmp_path("other"));
	KT_REQUIRE(!run_cmd("objcopy --only-keep-debug '%s' '%s'", exe, dbg));
	KT_REQUIRE(!run_cmd("objcopy --strip-debug --add-gnu-debuglink='%s' "
			    "'%s' '%s'",
			    dbg, exe, strip));
	m.path = strip;
	prof_symbolizer_set_debug_dir(tmp_path("none"));
	s = prof_symbolizer_new_maps(&m, 1);
	KT_REQUIRE(s);
	n = frames_at(s, f, NULL);
	check_two_frames(f, n);
	prof_symbolizer_free(s);
	unlink(strip);

	/*
	 * Another file's debug file at the link's place (env's: another
	 * build-id), beside a new copy (files are cached by path): no DWARF.
	 */
	snprintf(strip, sizeof(strip), "%s", tmp_path("linked2"));
	KT_REQUIRE(!run_cmd("objcopy --only-keep-debug /usr/bin/env '%s' && "
			    "objcopy --strip-debug --add-gnu-debuglink='%s' "
			    "'%s' '%s'",
			    other, other, exe, strip));
	m.path = strip;
	s = prof_symbolizer_new_maps(&m, 1);
	KT_REQUIRE(s);
	n = frames_at(s, f, NULL);
	KT_CHECK_EQ(n, 1);
	KT_CHECK(n && f[0].name && !strcmp(f[0].name, "outer_fn") &&
		 !f[0].line);
	prof_symbolizer_free(s);
	prof_symbolizer_set_debug_dir(NULL);
	unlink(strip);
	unlink(dbg);
	unlink(other);
}

/* The raw bytes of the lowercase hex @hex into @out; their number. */
static size_t unhex(const char *hex, unsigned char *out, size_t max)
{
	size_t n = 0;
	unsigned int b;

	while (n < max && sscanf(hex + 2 * n, "%2x", &b) == 1)
		out[n++] = (unsigned char)b;
	return n;
}

/*
 * A copy of this executable whose DWARF names a dwz file
 * (.gnu_debugaltlink: @alt's path, and @id, this executable's build-id,
 * which the alternate file, its debug copy, has too), as the path
 * @copy; the frames at the probed address, *@fds the change in open
 * descriptors.  0 frames if anything failed.
 */
static size_t frames_with_alt(const char *exe, const char *copy,
			      const char *alt, const char *id, int *fds)
{
	struct prof_map_spec m = { 0 };
	struct prof_symbolizer *s;
	struct prof_frame f[8];
	unsigned char raw[64];
	char link[1024];
	size_t n = strlen(alt) + 1, nid = unhex(id, raw, sizeof(raw));
	int before;

	memcpy(link, alt, n);
	memcpy(link + n, raw, nid);
	if (own_mapping(&m) ||
	    write_bytes(tmp_path("altlink.bin"), link, n + nid) ||
	    run_cmd("objcopy --add-section .gnu_debugaltlink='%s' '%s' '%s'",
		    tmp_path("altlink.bin"), exe, copy))
		return 0;
	m.path = copy;
	before = open_fds();
	s = prof_symbolizer_new_maps(&m, 1);
	if (!s)
		return 0;
	n = frames_at(s, f, NULL);
	prof_symbolizer_free(s);
	*fds = open_fds() - before;
	unlink(copy);
	return n;
}

/*
 * A dwz file (.gnu_debugaltlink) found at its path: the frames, and no
 * descriptor kept; one that is a FIFO or missing: names only, no hang
 * and no descriptor (libdw's own search would block on the FIFO and keep
 * what it opens).
 */
static void dwz_alternate(void)
{
	char exe[512] = { 0 }, alt[512], fifo[512], none[512], id[130];
	struct prof_map_spec m = { 0 };
	struct prof_symbolizer *s;
	const struct prof_mapping *pm;
	unsigned int mapid;
	struct prof_frame f[8];
	int fds = -1;

	KT_REQUIRE(readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0);
	KT_REQUIRE(!own_mapping(&m));
	m.path = exe;
	s = prof_symbolizer_new_maps(&m, 1);
	KT_REQUIRE(s);
	frames_at(s, f, &mapid);
	pm = mapping(s, mapid);
	KT_REQUIRE(pm && strlen(pm->build_id) > 2);
	snprintf(id, sizeof(id), "%s", pm->build_id);
	prof_symbolizer_free(s);
	snprintf(alt, sizeof(alt), "%s", tmp_path("alt.debug"));
	snprintf(fifo, sizeof(fifo), "%s", tmp_path("alt.fifo"));
	snprintf(none, sizeof(none), "%s", tmp_path("alt.none"));
	KT_REQUIRE(!run_cmd("objcopy --only-keep-debug '%s' '%s'", exe, alt));
	KT_REQUIRE(!mkfifo(fifo, 0600));
	prof_symbolizer_set_debug_dir(tmp_path("none"));

	KT_CHECK_EQ(frames_with_alt(exe, tmp_path("with-alt"), alt, id, &fds),
		    2);
	KT_CHECK_EQ(fds, 0);
	fds = -1;
	KT_CHECK_EQ(frames_with_alt(exe, tmp_path("with-fifo"), fifo, id, &fds),
		    1);
	KT_CHECK_EQ(fds, 0);
	fds = -1;
	KT_CHECK_EQ(frames_with_alt(exe, tmp_path("with-none"), none, id, &fds),
		    1);
	KT_CHECK_EQ(fds, 0);
	prof_symbolizer_set_debug_dir(NULL);
	unlink(alt);
	unlink(fifo);
	unlink(tmp_path("altlink.bin"));
}

int main(void)
{
	if (tmpfiles_init("dwarf_test"))
		return 1;
	KT_RUN(inline_frames);
	KT_RUN(separate_debug_file);
	KT_RUN(debug_link);
	KT_RUN(dwz_alternate);
	tmpfiles_done();
	return ktest_exit();
}
