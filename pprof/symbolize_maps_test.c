// SPDX-License-Identifier: MIT
/*
 * symbolize_maps_test.c - unit tests for a symbolizer over the mappings
 * another process reported (prof_symbolizer_new_maps(), the launcher's
 * case), using this process's own mappings as the report:
 *
 * - the executable mappings of /proc/self/maps, as read here, give the
 *   same mappings and the same names as prof_symbolizer_new();
 * - its [vdso] moved elsewhere is still named (from ours), and no
 *   dladdr(): an address only dladdr() could name stays unnamed;
 * - overlapping mappings: the last one wins, even over a partial overlap,
 *   and a mapping removed stays removed; random lists against a slow
 *   reference of that rule;
 * - files gone (never there, unlinked before the first lookup, " (deleted)"),
 *   not ELF, or a directory: no name, the mapping still found, no crash;
 * - an empty list, a NULL one, empty and pathless mappings.
 */
#include <dlfcn.h>
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
#include "pprof/symbolize.h"
#include "pprof/symbolize_testing.h"

#define MAX_SPECS 512

/* The executable mappings of /proc/self/maps, parsed here. */
static struct prof_map_spec own_specs[MAX_SPECS];
static char *own_paths[MAX_SPECS];
static size_t own_n;

static void read_own_maps(void)
{
	FILE *fp = fopen("/proc/self/maps", "re");
	unsigned long long lo, hi, off;
	char line[4096], perms[8], path[4096];

	own_n = 0;
	if (!fp)
		return;
	while (own_n < MAX_SPECS && fgets(line, sizeof(line), fp)) {
		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo,
			   &hi, perms, &off, path) < 4 ||
		    perms[2] != 'x' ||
		    (path[0] != '/' && strcmp(path, "[vdso]")))
			continue;
		own_paths[own_n] = strdup(path);
		if (!own_paths[own_n])
			break;
		own_specs[own_n] =
			(struct prof_map_spec){ lo, hi, off, own_paths[own_n] };
		own_n++;
	}
	fclose(fp);
}

static void free_own_maps(void)
{
	for (size_t i = 0; i < own_n; i++)
		free(own_paths[i]);
	own_n = 0;
}

/* The reported mapping (from /proc/self/maps) holding @addr, or NULL. */
static const struct prof_map_spec *own_spec_of(uintptr_t addr)
{
	for (size_t i = 0; i < own_n; i++)
		if (own_specs[i].start <= addr && addr < own_specs[i].limit)
			return &own_specs[i];
	return NULL;
}

static bool same_name(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/*
 * libc's own qsort, exported in its .dynsym (&qsort may be a sanitizer's
 * interceptor in this executable); set by main().
 */
static uintptr_t libc_qsort;

static uintptr_t find_libc_qsort(void)
{
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "qsort") : NULL;

	if (h)
		dlclose(h);
	return (uintptr_t)fn;
}

/*
 * This process's own mappings, read from /proc/self/maps here and given
 * as a list: the same mappings, and the same names wherever the list's
 * symbolizer names something (the other one may also ask dladdr()).
 */
static void maps_like_own(void)
{
	struct prof_symbolizer *own = prof_symbolizer_new(), *s;
	const struct prof_mapping *mo, *ms;
	size_t no, ns, named = 0, probes = 0;
	unsigned int ido, ids;
	const char *a, *b;

	KT_REQUIRE(own && own_n >= 2 && libc_qsort);
	s = prof_symbolizer_new_maps(own_specs, own_n);
	KT_REQUIRE(s);
	KT_CHECK(same_name(prof_symbolize(s, leaf + 4, NULL), "leaf_fn"));
	KT_CHECK(same_name(prof_symbolize(s, mid + 8, NULL), "mid_fn"));
	KT_CHECK(same_name(prof_symbolize(s, root, NULL), "root_fn"));
	KT_CHECK(same_name(prof_symbolize(s, libc_qsort + 1, NULL),
			   prof_symbolize(own, libc_qsort + 1, NULL)));
	a = prof_symbolize(s, libc_pc, &ids);
	b = prof_symbolize(own, libc_pc, &ido);
	KT_CHECK(ids && ids == ido && (!a || same_name(a, b)));

	no = prof_symbolizer_mappings(own, &mo);
	ns = prof_symbolizer_mappings(s, &ms);
	KT_CHECK_EQ(ns, no);
	for (size_t i = 0; i < no && i < ns; i++) {
		KT_CHECK(ms[i].start == mo[i].start &&
			 ms[i].limit == mo[i].limit &&
			 ms[i].offset == mo[i].offset && ms[i].id == mo[i].id);
		KT_CHECK(!strcmp(ms[i].path, mo[i].path));
		KT_CHECK(!strcmp(ms[i].build_id, mo[i].build_id));
	}
	/* 256 addresses through each mapping. */
	for (size_t i = 0; i < no; i++) {
		uint64_t len = mo[i].limit - mo[i].start;

		for (uint64_t k = 0; k < 256; k++) {
			uintptr_t at = (uintptr_t)(mo[i].start + len * k / 256);

			a = prof_symbolize(s, at, &ids);
			b = prof_symbolize(own, at, &ido);
			probes++;
			KT_CHECK_EQ(ids, ido);
			if (!a)
				continue;
			named++;
			if (!same_name(a, b)) {
				fprintf(stderr, "  %#" PRIxPTR ": %s vs %s\n",
					at, a, b ? b : "(null)");
				KT_CHECK(same_name(a, b));
			}
		}
	}
	printf("# %zu mappings, %zu of %zu probes named\n", no, named, probes);
	KT_CHECK(named > probes / 4);
	prof_symbolizer_free(s);
	prof_symbolizer_free(own);
}

/*
 * Another process's [vdso] at addresses where this process has nothing:
 * named from ours; a missing file over libc's code names nothing (no
 * dladdr(), which would name qsort from this process).
 */
static void maps_vdso_and_no_dladdr(void)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *vfn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	const uint64_t moved = 0x100000000ull; /* nothing of ours there */
	const struct prof_map_spec *m, *vm;
	struct prof_map_spec spec[2];
	Dl_info di;
	struct prof_symbolizer *s;
	unsigned int id;

	KT_REQUIRE(libc_qsort);
	m = own_spec_of(libc_qsort);
	vm = vfn ? own_spec_of((uintptr_t)vfn) : NULL;
	KT_REQUIRE(m && dladdr((void *)(libc_qsort + 1), &di) &&
		   same_name(di.dli_sname, "qsort"));
	spec[0] = (struct prof_map_spec){ m->start, m->limit, m->offset,
					  "/nonexistent/lib.so" };
	spec[1] = (struct prof_map_spec){ moved, moved + 8192, 0, "[vdso]" };
	if (vm)
		spec[1].limit = moved + (vm->limit - vm->start);
	s = prof_symbolizer_new_maps(spec, 2);
	KT_REQUIRE(s);
	KT_CHECK(!prof_symbolize(s, libc_qsort + 1, &id));
	KT_CHECK(id &&
		 !strcmp(mapping_by_id(s, id)->path, "/nonexistent/lib.so"));
	if (vm)
		KT_CHECK(same_name(
			prof_symbolize(s,
				       moved + ((uintptr_t)vfn - vm->start) + 1,
				       NULL),
			"__vdso_clock_gettime"));
	else
		printf("# no vDSO clock_gettime: [vdso] not checked\n");
	prof_symbolizer_free(s);
	if (h)
		dlclose(h);
}

/* The paths of the mappings of @s, in order, joined by spaces. */
static void mapping_paths(struct prof_symbolizer *s, char *buf, size_t len)
{
	const struct prof_mapping *m;
	size_t n = prof_symbolizer_mappings(s, &m), used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 i ? " " : "", base_of(m[i].path));
}

/* The symbolizer of @n specs, the paths of its mappings into @paths. */
static struct prof_symbolizer *from(const struct prof_map_spec *specs, size_t n,
				    char *paths, size_t len)
{
	struct prof_symbolizer *s = prof_symbolizer_new_maps(specs, n);

	paths[0] = '\0';
	if (s)
		mapping_paths(s, paths, len);
	return s;
}

/*
 * A later mapping replaces every earlier one it overlaps, even in part,
 * and one it removed stays removed when it is itself replaced.
 */
static void maps_last_wins(void)
{
	struct prof_map_spec exe, lib, fake, l[4];
	const struct prof_mapping *maps;
	const struct prof_map_spec *m;
	struct prof_symbolizer *s;
	unsigned int id;
	char paths[512];

	m = own_spec_of(root);
	KT_REQUIRE(m && libc_qsort && own_spec_of(libc_qsort));
	exe = *m;
	lib = *own_spec_of(libc_qsort);
	KT_REQUIRE(root + 8 < exe.limit - 1);
	fake = (struct prof_map_spec){ exe.start, exe.limit, exe.offset,
				       "/nonexistent/fake.so" };

	/* The same addresses: the last file names them. */
	l[0] = lib, l[1] = fake, l[2] = exe;
	s = from(l, 3, paths, sizeof(paths));
	KT_REQUIRE(s);
	KT_CHECK(same_name(prof_symbolize(s, root + 8, NULL), "root_fn"));
	KT_CHECK(same_name(prof_symbolize(s, libc_qsort + 1, NULL), "qsort"));
	KT_CHECK_EQ(prof_symbolizer_mappings(s, &maps), 2);
	prof_symbolizer_free(s);
	l[1] = exe, l[2] = fake;
	s = from(l, 3, paths, sizeof(paths));
	KT_REQUIRE(s);
	KT_CHECK(!prof_symbolize(s, root + 8, &id));
	KT_CHECK(id && !strcmp(mapping_by_id(s, id)->path, fake.path));
	prof_symbolizer_free(s);

	/* One byte in common at the end: the code is gone, not named. */
	fake.start = exe.limit - 1;
	fake.limit = exe.limit + 4096;
	l[0] = exe, l[1] = fake;
	s = from(l, 2, paths, sizeof(paths));
	KT_REQUIRE(s);
	KT_CHECK(!strcmp(paths, "fake.so"));
	KT_CHECK(!prof_symbolize(s, root + 8, &id) && id == 0);
	prof_symbolizer_free(s);

	/* ... and back: the executable again over the fake. */
	l[2] = exe;
	s = from(l, 3, paths, sizeof(paths));
	KT_REQUIRE(s);
	KT_CHECK(!strcmp(paths, base_of(exe.path)));
	KT_CHECK(same_name(prof_symbolize(s, root + 8, NULL), "root_fn"));
	prof_symbolizer_free(s);

	/* A removed mapping does not come back when its remover goes. */
	l[1] = (struct prof_map_spec){ exe.start - 4096, exe.start + 4096, 0,
				       "/nonexistent/one.so" };
	l[2] = (struct prof_map_spec){ exe.start - 8192, exe.start - 4095, 0,
				       "/nonexistent/two.so" };
	s = from(l, 3, paths, sizeof(paths));
	KT_REQUIRE(s);
	KT_CHECK(!strcmp(paths, "two.so"));
	KT_CHECK(!prof_symbolize(s, root + 8, &id) && id == 0);
	prof_symbolizer_free(s);
}

/* Random lists against the rule, checked the slow way. */
static void maps_random_overlaps(void)
{
	static char names[64][32];
	struct prof_map_spec l[64];
	uint64_t rng = 12345, keep_start[64], keep_limit[64];
	int bad = 0;

	for (int i = 0; i < 64; i++)
		snprintf(names[i], sizeof(names[i]), "/nonexistent/m%d", i);
	for (int round = 0; round < 300 && !bad; round++) {
		size_t n = 1 + stress_rand(&rng) % 64, k = 0, nm;
		const struct prof_mapping *m;
		struct prof_symbolizer *s;

		for (size_t i = 0; i < n; i++) {
			uint64_t a = 0x1000 * (1 + stress_rand(&rng) % 64);
			uint64_t len = 0x1000 * (stress_rand(&rng) % 9);

			l[i] = (struct prof_map_spec){ a, a + len, 0,
						       stress_rand(&rng) % 16
							       ? names[i]
							       : NULL };
		}
		/* Survivors: valid, and no later valid one overlaps them. */
		for (size_t i = 0; i < n; i++) {
			bool stays = l[i].start < l[i].limit && l[i].path;

			for (size_t j = i + 1; stays && j < n; j++)
				stays = !(l[j].start < l[j].limit &&
					  l[j].path &&
					  l[j].start < l[i].limit &&
					  l[i].start < l[j].limit);
			if (stays) {
				keep_start[k] = l[i].start;
				keep_limit[k++] = l[i].limit;
			}
		}
		s = prof_symbolizer_new_maps(l, n);
		KT_REQUIRE(s);
		nm = prof_symbolizer_mappings(s, &m);
		bad += nm != k;
		for (size_t i = 0; i < nm && i < k; i++) {
			/* the reference is in list order: find it */
			size_t j = 0;

			while (j < k && keep_start[j] != m[i].start)
				j++;
			bad += j == k || keep_limit[j] != m[i].limit ||
			       m[i].id != i + 1 ||
			       (i && m[i - 1].limit > m[i].start);
		}
		/* Every address: in the mapping found, or in none. */
		for (uint64_t a = 0; a < 0x4a000; a += 0x800) {
			unsigned int id;
			bool in_any = false;

			prof_symbolize(s, (uintptr_t)a, &id);
			for (size_t j = 0; j < k; j++)
				in_any |=
					keep_start[j] <= a && a < keep_limit[j];
			bad += id ? !(m[id - 1].start <= a &&
				      a < m[id - 1].limit)
				  : in_any;
		}
		prof_symbolizer_free(s);
	}
	KT_CHECK_EQ(bad, 0);
}

/*
 * Files that cannot name anything: the mapping is still found (the
 * writers name the address "file+0xoffset"), no name, no crash.
 */
static void maps_files_gone(void)
{
	const char *copy = tmp_path("exe-copy");
	const char *text = tmp_path("not-elf");
	const struct prof_map_spec *m;
	struct prof_map_spec l[1];
	struct prof_symbolizer *s;
	const char *bad[5];
	char del[4200], *data;
	size_t len;
	unsigned int id;

	m = own_spec_of(root);
	KT_REQUIRE(m);
	data = read_text("/proc/self/exe", &len);
	KT_REQUIRE(data && !write_bytes(copy, data, len));
	free(data);
	KT_REQUIRE(!write_bytes(text, "just some text\n", 15));

	/* A copy of this executable: the same names. */
	l[0] = (struct prof_map_spec){ m->start, m->limit, m->offset, copy };
	s = prof_symbolizer_new_maps(l, 1);
	KT_REQUIRE(s);
	KT_CHECK(same_name(prof_symbolize(s, root + 8, NULL), "root_fn"));
	prof_symbolizer_free(s);
	/* Unlinked after the report, before the first lookup: gone. */
	s = prof_symbolizer_new_maps(l, 1);
	KT_REQUIRE(s);
	unlink(copy);
	KT_CHECK(!prof_symbolize(s, root + 8, &id) && id == 1);
	KT_CHECK(!strcmp(mapping_by_id(s, 1)->path, copy));
	KT_CHECK(!strcmp(mapping_by_id(s, 1)->build_id, ""));
	prof_symbolizer_free(s);

	snprintf(del, sizeof(del), "%s (deleted)", m->path);
	bad[0] = "/nonexistent/lib.so";
	bad[1] = text;
	bad[2] = tmpfiles_dir();
	bad[3] = del;
	bad[4] = "";
	for (size_t i = 0; i < 5; i++) {
		l[0].path = bad[i];
		s = prof_symbolizer_new_maps(l, 1);
		KT_REQUIRE(s);
		KT_CHECK(!prof_symbolize(s, root + 8, &id) && id == 1);
		KT_CHECK(!prof_symbolize(s, leaf, &id) && id == 1);
		KT_CHECK(!strcmp(mapping_by_id(s, 1)->build_id, ""));
		prof_symbolizer_free(s);
	}
	/* " (deleted)" is not part of the path. */
	l[0].path = del;
	s = prof_symbolizer_new_maps(l, 1);
	KT_REQUIRE(s);
	KT_CHECK(!strcmp(mapping_by_id(s, 1)->path, m->path));
	prof_symbolizer_free(s);
	unlink(text);
}

static void maps_edges(void)
{
	struct prof_map_spec l[3] = {
		{ 0x2000, 0x2000, 0, "/nonexistent/empty.so" },
		{ 0x3000, 0x2000, 0, "/nonexistent/backwards.so" },
		{ 0x2000, 0x3000, 0, NULL },
	};
	const struct prof_mapping *m;
	struct prof_symbolizer *s;
	unsigned int id = 7;

	s = prof_symbolizer_new_maps(NULL, 0);
	KT_REQUIRE(s);
	KT_CHECK_EQ(prof_symbolizer_mappings(s, &m), 0);
	KT_CHECK(!prof_symbolize(s, leaf, &id) && id == 0);
	prof_symbolizer_free(s);
	errno = 0;
	KT_CHECK(!prof_symbolizer_new_maps(NULL, 1) && errno == EINVAL);
	s = prof_symbolizer_new_maps(l, 3);
	KT_REQUIRE(s);
	KT_CHECK_EQ(prof_symbolizer_mappings(s, &m), 0);
	KT_CHECK(!prof_symbolize(s, 0x2800, &id) && id == 0);
	prof_symbolizer_free(s);
}

int main(void)
{
	if (tmpfiles_init("symbolize_maps_test"))
		return EXIT_FAILURE;
	root_fn(3); /* they are real functions */
	find_functions();
	libc_qsort = find_libc_qsort();
	read_own_maps();
	KT_RUN(maps_like_own);
	KT_RUN(maps_vdso_and_no_dladdr);
	KT_RUN(maps_last_wins);
	KT_RUN(maps_random_overlaps);
	KT_RUN(maps_files_gone);
	KT_RUN(maps_edges);
	free_own_maps();
	tmpfiles_done();
	return ktest_exit();
}
