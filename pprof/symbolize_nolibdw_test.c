// SPDX-License-Identifier: MIT
/*
 * symbolize_nolibdw_test.c - the symbolizer on a machine without
 * libdw.so.1, simulated by PROFRING_PROF_NO_LIBDW=1 (pprof/dwarf.h), set
 * before the first lookup: this unstripped program's static functions,
 * which only its .symtab names (dladdr() reads .dynsym), are named from
 * the ELF symbol tables (elfsym.c), by a symbolizer of this process and
 * by one of its mappings as another process would report them; the
 * profile's comment and the one stderr line say which symbolizer ran and
 * why there are no lines; copies of this executable with random bytes
 * written over its section headers and symbol tables name nothing wrong
 * and crash nothing.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testing/ktest.h"
#include "testing/harness.h"
#include "testing/tmpfiles.h"
#include "pprof/dwarf.h"
#include "pprof/symbolize.h"
#include "pprof/symbolize_testing.h"

#define MAX_SPECS 512

/* This program's executable mappings of itself, as a report would list. */
static struct prof_map_spec specs[MAX_SPECS];
static size_t nspecs;
static char exe[4096];

static void read_exe_maps(void)
{
	FILE *fp = fopen("/proc/self/maps", "re");
	unsigned long long lo, hi, off;
	char line[4096], perms[8], path[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	nspecs = 0;
	while (fp && nspecs < MAX_SPECS && fgets(line, sizeof(line), fp)) {
		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo,
			   &hi, perms, &off, path) == 5 &&
		    perms[2] == 'x' && !strcmp(path, exe))
			specs[nspecs++] =
				(struct prof_map_spec){ lo, hi, off, exe };
	}
	if (fp)
		fclose(fp);
}

/* The three functions are named in @s; @frames: one frame, no line. */
static void names_own_functions(struct prof_symbolizer *s)
{
	struct prof_frame f[4];
	const struct prof_mapping *m;
	unsigned int id = 0;
	const char *name;

	name = prof_symbolize(s, leaf + 4, &id);
	KT_CHECK(name && !strcmp(name, "leaf_fn"));
	name = prof_symbolize(s, mid + 8, NULL);
	KT_CHECK(name && !strcmp(name, "mid_fn"));
	name = prof_symbolize(s, root, NULL);
	KT_CHECK(name && !strcmp(name, "root_fn"));
	KT_CHECK_EQ(prof_symbolize_frames(s, mid + 8, f, 4, NULL), 1);
	KT_CHECK(f[0].name && !strcmp(f[0].name, "mid_fn"));
	KT_CHECK(!f[0].file && !f[0].line);
	m = mapping_by_id(s, id);
	KT_REQUIRE(m);
	KT_CHECK(m->has_functions && !m->has_lines);
	KT_CHECK(!strcmp(m->path, exe));
	/* Data of no function: no name. */
	KT_CHECK(!prof_symbolize(s, (uintptr_t)&sink, NULL));
}

static void no_libdw_names_from_symtab(void)
{
	struct prof_symbolizer *s = prof_symbolizer_new();
	const char *why = NULL;

	KT_REQUIRE(s);
	names_own_functions(s);
	KT_CHECK(!pprof_dwarf_loaded(&why));
	KT_CHECK(why && strstr(why, PPROF_ENV_NO_LIBDW));
	prof_symbolizer_free(s);
}

static void no_libdw_names_reported_maps(void)
{
	struct prof_symbolizer *s;

	KT_REQUIRE(nspecs > 0);
	s = prof_symbolizer_new_maps(specs, nspecs);
	KT_REQUIRE(s);
	names_own_functions(s);
	prof_symbolizer_free(s);
}

/*
 * The comment (said before any lookup: the writers symbolize after the
 * comments are made) and the stderr line, once per process.
 */
static void no_libdw_says_so(void)
{
	struct prof_symbolizer *s[2] = { prof_symbolizer_new_maps(NULL, 0),
					 NULL };
	char buf[320], line[512] = "", path[4096];
	FILE *fp;
	int lines = 0;

	snprintf(path, sizeof(path), "%s", tmp_path("warn.txt"));
	fp = fopen(path, "w+");
	KT_REQUIRE(s[0] && fp);
	/* No mappings: nothing to say. */
	KT_CHECK(!prof_symbolizer_perf_map_comment(s, 2, buf, sizeof(buf)));
	prof_symbolizer_free(s[0]);
	s[0] = prof_symbolizer_new();
	KT_REQUIRE(s[0]);
	KT_CHECK(prof_symbolizer_perf_map_comment(s, 2, buf, sizeof(buf)));
	KT_CHECK(!strncmp(buf, "symbolizer: ELF symbol tables", 29));
	prof_symbolizer_warn_to(fp);
	KT_CHECK(prof_symbolize(s[0], leaf, NULL));
	s[1] = prof_symbolizer_new();
	KT_REQUIRE(s[1]);
	KT_CHECK(prof_symbolize(s[1], mid, NULL));
	prof_symbolizer_warn_to(NULL);
	KT_CHECK(prof_symbolizer_perf_map_comment(s, 2, buf, sizeof(buf)));
	printf("# comment: %s\n", buf);
	KT_CHECK(!strncmp(buf, "symbolizer: ELF symbol tables", 29));
	KT_CHECK(strstr(buf, "no source lines") != NULL);
	KT_CHECK(strstr(buf, PPROF_ENV_NO_LIBDW) != NULL);
	rewind(fp);
	while (fgets(line + (lines ? strlen(line) : 0),
		     (int)(sizeof(line) - (lines ? strlen(line) : 0)), fp))
		lines++;
	printf("# stderr: %s", line);
	KT_CHECK_EQ(lines, 1); /* two symbolizers, one line */
	KT_CHECK(!strncmp(line, "profring-prof: ", 15));
	KT_CHECK(strstr(line, "ELF symbol tables") != NULL);
	KT_CHECK(strstr(line, PPROF_ENV_NO_LIBDW) != NULL);
	fclose(fp);
	unlink(path);
	prof_symbolizer_free(s[0]);
	prof_symbolizer_free(s[1]);
}

/* Where the section headers and the symbol and string tables lie. */
struct spans {
	uint64_t off[3], len[3];
};

static void find_spans(const char *data, size_t len, struct spans *sp)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, str;

	memset(sp, 0, sizeof(*sp));
	memcpy(&eh, data, sizeof(eh));
	sp->off[0] = eh.e_shoff;
	sp->len[0] = (uint64_t)eh.e_shnum * sizeof(sh);
	for (size_t i = 1; i < eh.e_shnum; i++) {
		memcpy(&sh, data + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum)
			continue;
		memcpy(&str, data + eh.e_shoff + sh.sh_link * sizeof(sh),
		       sizeof(str));
		sp->off[1] = sh.sh_offset;
		sp->len[1] = sh.sh_size;
		sp->off[2] = str.sh_offset;
		sp->len[2] = str.sh_size;
	}
	for (int i = 0; i < 3; i++) /* one not found: the headers again */
		if (!sp->len[i] || sp->off[i] + sp->len[i] > len) {
			sp->off[i] = sp->off[0];
			sp->len[i] = sp->len[0];
		}
}

/* A forged word, mostly one that lies: huge, past the end, -1. */
static uint64_t forged(uint64_t *rng, size_t len)
{
	switch (stress_rand(rng) % 4) {
	case 0:
		return UINT64_MAX - stress_rand(rng) % 64;
	case 1:
		return len - stress_rand(rng) % 64;
	case 2:
		return stress_rand(rng) % 64;
	default:
		return stress_rand(rng);
	}
}

/*
 * Copies of this executable with random bytes and forged words over its
 * section headers and its symbol and string tables: the three addresses
 * get a name or none, and nothing crashes (ASan: nothing read out of
 * bounds).
 */
static void no_libdw_hostile_tables(void)
{
	char path[4096];
	uint64_t rng = 0x5eed;
	size_t len = 0;
	char *data = read_text(exe, &len);
	struct spans sp;
	int named = 0, rounds = 300;

	snprintf(path, sizeof(path), "%s", tmp_path("copy"));
	KT_REQUIRE(data && len > 4096 && nspecs > 0);
	find_spans(data, len, &sp);
	printf("# section headers at %" PRIu64 ", symtab %" PRIu64
	       " bytes, strtab %" PRIu64 " bytes\n",
	       sp.off[0], sp.len[1], sp.len[2]);
	for (int round = 0; round < rounds; round++) {
		struct prof_map_spec copy[MAX_SPECS];
		struct prof_symbolizer *s;
		char *bad = malloc(len);
		const char *name;

		KT_REQUIRE(bad);
		memcpy(bad, data, len);
		for (int k = 0; k < 1 + round % 8; k++) {
			int w = (int)(stress_rand(&rng) % 3);
			uint64_t pos =
				sp.off[w] + stress_rand(&rng) % sp.len[w];

			if (round % 2 && pos + 8 <= len) {
				uint64_t v = forged(&rng, len);

				memcpy(bad + (pos & ~7ull), &v, sizeof(v));
			} else {
				bad[pos] = (char)stress_rand(&rng);
			}
		}
		KT_REQUIRE(!write_bytes(path, bad, len));
		free(bad);
		for (size_t i = 0; i < nspecs; i++) {
			copy[i] = specs[i];
			copy[i].path = path;
		}
		s = prof_symbolizer_new_maps(copy, nspecs);
		KT_REQUIRE(s);
		name = prof_symbolize(s, leaf + 4, NULL);
		named += name && !strcmp(name, "leaf_fn");
		prof_symbolize(s, mid, NULL);
		prof_symbolize(s, root + 8, NULL);
		prof_symbolizer_free(s);
	}
	printf("# %d of %d corrupted copies still named leaf_fn\n", named,
	       rounds);
	KT_CHECK(named > 0 && named < rounds);
	unlink(path);
	free(data);
}

int main(void)
{
	/* Before anything looks for libdw: the machine has none. */
	setenv(PPROF_ENV_NO_LIBDW, "1", 1);
	if (tmpfiles_init("symbolize_nolibdw_test"))
		return EXIT_FAILURE;
	root_fn(3); /* they are real functions */
	find_functions();
	read_exe_maps();
	KT_RUN(no_libdw_names_from_symtab);
	KT_RUN(no_libdw_names_reported_maps);
	KT_RUN(no_libdw_says_so);
	KT_RUN(no_libdw_hostile_tables);
	tmpfiles_done();
	return ktest_exit();
}
