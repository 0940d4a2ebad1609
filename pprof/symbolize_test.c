// SPDX-License-Identifier: MIT
/*
 * symbolize_test.c - unit tests for the symbolizer of this process's own
 * mappings (symbolize.c, elfsym.c, dwfl.c): this program's own static
 * functions, libc, the vDSO, a copy of this executable mapped at other offsets,
 * truncated, corrupted, deleted and non-ELF files, and a stripped copy
 * with its separate debug file, right, wrong or corrupted (objcopy and
 * strip must be there).  Mappings another process reported:
 * symbolize_maps_test.c.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testing/ktest.h"
#include "testing/harness.h"
#include "testing/tmpfiles.h"
#include "pprof/symbolize.h"
#include "pprof/symbolize_testing.h"

/* Data of this program: no function, no mapping of code. */
static char own_data[64];

/* ---- the symbolizer ---- */

static const char *exe_path(void)
{
	static char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static int is_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

static void symbolize_own_functions(void)
{
	struct prof_symbolizer *s = prof_symbolizer_new();
	const struct prof_mapping *m;
	unsigned int id, id2;
	const char *name;
	int local = 0;

	KT_REQUIRE(s);
	name = prof_symbolize(s, leaf + 4, &id);
	KT_CHECK(name && !strcmp(name, "leaf_fn"));
	KT_CHECK(id != 0);
	name = prof_symbolize(s, mid + 8, &id2);
	KT_CHECK(name && !strcmp(name, "mid_fn"));
	KT_CHECK(id2 == id);
	name = prof_symbolize(s, mid + 12, NULL);
	KT_CHECK(name && !strcmp(name, "mid_fn"));
	name = prof_symbolize(s, root + 8, NULL);
	KT_CHECK(name && !strcmp(name, "root_fn"));
	name = prof_symbolize(s, leaf, NULL);
	KT_CHECK(name && !strcmp(name, "leaf_fn"));
	m = mapping_by_id(s, id);
	KT_REQUIRE(m);
	KT_CHECK(m->id == id && m->start <= leaf && leaf < m->limit);
	KT_CHECK(!strcmp(m->path, exe_path()));
	KT_CHECK(m->has_functions);
	KT_CHECK(strlen(m->build_id) % 2 == 0 && is_hex(m->build_id));
	/* Nothing maps these: no name, no mapping. */
	KT_CHECK(!prof_symbolize(s, 0x10, &id) && id == 0);
	KT_CHECK(!prof_symbolize(s, (uintptr_t)&local, &id) && id == 0);
	KT_CHECK(!prof_symbolize(s, (uintptr_t)own_data, &id) && id == 0);
	KT_CHECK(!prof_symbolize(s, UINTPTR_MAX, &id) && id == 0);
	KT_CHECK(!prof_symbolize(NULL, leaf, &id) && id == 0);
	prof_symbolizer_free(s);
	prof_symbolizer_free(NULL);
}

static void symbolize_libc_and_mappings(void)
{
	struct prof_symbolizer *s = prof_symbolizer_new();
	const struct prof_mapping *maps, *m;
	Dl_info di;
	unsigned int id;
	size_t n;
	int vdso = 0;

	KT_REQUIRE(s);
	prof_symbolize(s, libc_pc, &id);
	m = mapping_by_id(s, id);
	KT_REQUIRE(m && dladdr((void *)libc_pc, &di) && di.dli_fname);
	KT_CHECK(!strcmp(base_of(m->path), base_of(di.dli_fname)));
	/* qsort: a plain exported function, in libc's .dynsym. */
	KT_CHECK(prof_symbolize(s, (uintptr_t)&qsort, NULL) != NULL);
	n = prof_symbolizer_mappings(s, &maps);
	KT_CHECK(n >= 3);
	for (size_t i = 0; i < n; i++) {
		KT_CHECK(maps[i].id == i + 1);
		KT_CHECK(maps[i].start < maps[i].limit);
		KT_CHECK(!i || maps[i - 1].limit <= maps[i].start);
		KT_CHECK(maps[i].path[0] == '/' ||
			 !strcmp(maps[i].path, "[vdso]"));
		KT_CHECK(is_hex(maps[i].build_id));
		vdso += !strcmp(maps[i].path, "[vdso]");
	}
	KT_CHECK(vdso <= 1);
	KT_CHECK(m->build_id[0] != '\0'); /* Debian's libc has one */
	prof_symbolizer_free(s);
}

/* The vDSO is read in place, from memory. */
static void symbolize_vdso(void)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	struct prof_symbolizer *s;
	const struct prof_mapping *m;
	const char *name;
	unsigned int id;
	void *fn;

	fn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	if (!fn) {
		printf("# no vDSO clock_gettime: skipped\n");
		return;
	}
	s = prof_symbolizer_new();
	KT_REQUIRE(s);
	name = prof_symbolize(s, (uintptr_t)fn + 1, &id);
	m = mapping_by_id(s, id);
	KT_REQUIRE(name && m);
	KT_CHECK(!strcmp(m->path, "[vdso]") && m->has_functions);
	KT_CHECK(dlsym(h, name) == fn);
	KT_CHECK(is_hex(m->build_id));
	prof_symbolizer_free(s);
	dlclose(h);
}

struct exec_seg {
	uintptr_t bias;
	uint64_t p_offset, p_vaddr;
	int found;
};

static int find_exec_seg(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct exec_seg *e = arg;

	(void)size;
	if (e->found)
		return 1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    leaf >= info->dlpi_addr + ph->p_vaddr &&
		    leaf < info->dlpi_addr + ph->p_vaddr + ph->p_memsz) {
			e->bias = info->dlpi_addr;
			e->p_offset = ph->p_offset;
			e->p_vaddr = ph->p_vaddr;
			e->found = 1;
			return 1;
		}
	}
	return 0;
}

static void *map_exec(const char *path, off_t off, size_t *len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size <= off) {
		close(fd);
		return NULL;
	}
	*len = (size_t)(st.st_size - off);
	p = mmap(NULL, *len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, off);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static int copy_exe(const char *dst, char **data, size_t *len)
{
	*data = read_text("/proc/self/exe", len);
	return *data && !write_bytes(dst, *data, *len) ? 0 : -1;
}

/*
 * Move every virtual address of the ELF image @data by @k: the PT_LOAD
 * segments and the defined symbols.  The file layout stays, so a lookup
 * must now subtract p_vaddr - p_offset (which is 0 in most binaries) to
 * find the symbols: see the bias at the top of elfsym.c.
 */
static int shift_vaddrs(char *data, size_t len, uint64_t k)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr sh;
	Elf64_Sym sym;

	memcpy(&eh, data, sizeof(eh));
	if (eh.e_phoff + eh.e_phnum * sizeof(ph) > len ||
	    eh.e_shoff + eh.e_shnum * sizeof(sh) > len)
		return -1;
	for (size_t i = 0; i < eh.e_phnum; i++) {
		memcpy(&ph, data + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD) {
			ph.p_vaddr += k;
			ph.p_paddr += k;
		}
		memcpy(data + eh.e_phoff + i * sizeof(ph), &ph, sizeof(ph));
	}
	for (size_t i = 0; i < eh.e_shnum; i++) {
		memcpy(&sh, data + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    sh.sh_offset + sh.sh_size > len)
			continue;
		for (size_t j = 0; j < sh.sh_size / sizeof(sym); j++) {
			char *at = data + sh.sh_offset + j * sizeof(sym);

			memcpy(&sym, at, sizeof(sym));
			if (sym.st_shndx != SHN_UNDEF &&
			    sym.st_shndx < SHN_LORESERVE)
				sym.st_value += k;
			memcpy(at, &sym, sizeof(sym));
		}
	}
	return 0;
}

/*
 * This executable, copied, mapped again from offset 0 and from its code
 * segment's page; and a copy whose virtual addresses are moved by 1 MiB
 * (as in a non-PIE executable, p_vaddr != p_offset), mapped the same two
 * ways.  Each time leaf_fn must be found where its bytes are mapped.
 */
static void symbolize_remapped_copy(void)
{
	long page = sysconf(_SC_PAGESIZE);
	const char *path[2] = { tmp_path("copy.elf"), tmp_path("moved.elf") };
	struct exec_seg e = { 0 };
	uint64_t off[4], file_off;
	struct prof_symbolizer *s;
	uint8_t *map[4];
	size_t len[4], elen;
	char *data;
	unsigned int id;
	const char *name;

	KT_REQUIRE(!copy_exe(path[0], &data, &elen));
	KT_CHECK(!shift_vaddrs(data, elen, 1 << 20));
	KT_REQUIRE(!write_bytes(path[1], data, elen));
	free(data);
	dl_iterate_phdr(find_exec_seg, &e);
	KT_REQUIRE(e.found);
	file_off = leaf - e.bias - e.p_vaddr + e.p_offset;
	for (int i = 0; i < 4; i++) {
		off[i] = i % 2 ? e.p_offset & ~(uint64_t)(page - 1) : 0;
		map[i] = map_exec(path[i / 2], (off_t)off[i], &len[i]);
		if (!map[i])
			printf("# cannot map %s executable (noexec?)\n",
			       path[i / 2]);
		KT_REQUIRE(map[i]);
	}
	s = prof_symbolizer_new();
	KT_REQUIRE(s);
	for (int i = 0; i < 4; i++) {
		uintptr_t a = (uintptr_t)map[i] + file_off - off[i] + 4;

		name = prof_symbolize(s, a, &id);
		KT_CHECK(name && !strcmp(name, "leaf_fn"));
		KT_CHECK(id &&
			 !strcmp(mapping_by_id(s, id)->path, path[i / 2]));
	}
	prof_symbolizer_free(s);
	unlink(path[0]);
	unlink(path[1]);
	/* Deleted since mapped: no ELF symbols (and no crash). */
	s = prof_symbolizer_new();
	KT_REQUIRE(s);
	name = prof_symbolize(s, (uintptr_t)map[0] + file_off + 4, &id);
	KT_CHECK(!name && id && !strcmp(mapping_by_id(s, id)->path, path[0]));
	prof_symbolizer_free(s);
	for (int i = 0; i < 4; i++)
		munmap(map[i], len[i]);
}

/*
 * Map @n bytes of @data as a file, look around in it, unmap it.  A new
 * path each time: symbolizers keep what they read of a file by (path,
 * build-id) for the life of the process.
 */
static int probe_hostile(const char *data, size_t n, uint64_t *rng)
{
	static int seq;
	char file[64];
	const char *path;
	struct prof_symbolizer *s;
	const struct prof_mapping *maps;
	size_t len, nm;
	uint8_t *p;
	int names = 0, ok = 1;

	snprintf(file, sizeof(file), "hostile-%d.elf", seq++);
	path = tmp_path(file);
	if (write_bytes(path, data, n))
		return -1;
	p = map_exec(path, 0, &len);
	if (!p)
		return -1;
	s = prof_symbolizer_new();
	ok = s != NULL;
	if (s) {
		nm = prof_symbolizer_mappings(s, &maps);
		for (size_t i = 0; i < nm; i++)
			ok &= is_hex(maps[i].build_id);
		for (int k = 0; k < 64; k++) {
			const char *name = prof_symbolize(
				s, (uintptr_t)p + stress_rand(rng) % len, NULL);

			names += name && strlen(name) < (1 << 20);
		}
	}
	prof_symbolizer_free(s);
	munmap(p, len);
	unlink(path);
	return ok ? names : -1;
}

static void symbolize_hostile_files(void)
{
	char path[512];
	uint64_t rng = 7;
	size_t len, cut;
	char *orig, *data;
	int bad = 0, names = 0, r;

	snprintf(path, sizeof(path), "%s", tmp_path("hostile.elf"));
	KT_REQUIRE(!copy_exe(path, &orig, &len));
	data = malloc(len);
	KT_REQUIRE(data);
	/* Truncated: a few bytes, the headers, then all through the file. */
	for (int i = 1; i <= 160; i++) {
		cut = i <= 80 ? (size_t)i * 13 : (len / 80) * (size_t)(i - 80);
		r = probe_hostile(orig, cut ? cut : 1, &rng);
		bad += r < 0;
		names += r > 0;
	}
	/* Corrupted: random bytes, mostly in the headers and tables. */
	for (int i = 0; i < 200; i++) {
		memcpy(data, orig, len);
		for (int k = 0; k < 8; k++) {
			size_t at = stress_rand(&rng) % (i % 2 ? 256 : len);

			if (i % 4 == 3)
				at = len - 1 - stress_rand(&rng) % 4096 % len;
			data[at] = (char)stress_rand(&rng);
		}
		r = probe_hostile(data, len, &rng);
		bad += r < 0;
		names += r > 0;
	}
	/* Not ELF at all. */
	bad += probe_hostile("just some text\n", 15, &rng) < 0;
	KT_CHECK_EQ(bad, 0);
	KT_CHECK(names > 100); /* most corrupted copies still have symbols */
	unlink(path);
	free(data);
	free(orig);
}

/* ---- separate debug files ---- */

/* A stripped copy of this executable, mapped, and where its functions are. */
struct stripped {
	const char *path;
	uint8_t *map;
	size_t len;
	uintptr_t at[3]; /* in leaf_fn, mid_fn, root_fn */
};

/*
 * How many of leaf_fn, mid_fn and root_fn a new symbolizer names in the
 * stripped copy, with the debug directory as it is now; -1 if a lookup
 * finds another mapping, or a name too long to be one.
 */
static int stripped_names(const struct stripped *c)
{
	static const char *const want[3] = { "leaf_fn", "mid_fn", "root_fn" };
	struct prof_symbolizer *s = prof_symbolizer_new();
	const struct prof_mapping *m;
	const char *name;
	unsigned int id;
	int n = 0;

	if (!s)
		return -1;
	for (int i = 0; i < 3; i++) {
		name = prof_symbolize(s, c->at[i], &id);
		m = mapping_by_id(s, id);
		if (!m || strcmp(m->path, c->path) ||
		    (name && strlen(name) >= (1 << 20)))
			n = -100;
		n += name && !strcmp(name, want[i]);
	}
	prof_symbolizer_free(s);
	return n < 0 ? -1 : n;
}

/*
 * Debug directories: a new one for each debug file, set as the
 * symbolizers' (they keep what they read of a file by (path, build-id,
 * debug directory) for the life of the process), all under debug_base.
 */
static char debug_base[512], debug_dir[600], debug_id[2 * 64 + 1];

/* A new, empty debug directory, set; the path of its debug file, or NULL. */
static const char *fresh_debug(void)
{
	static char dbg[800];
	static int seq;

	snprintf(debug_dir, sizeof(debug_dir), "%s/%d", debug_base, seq++);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s/%s.debug", debug_dir,
		 debug_id, debug_id + 2);
	if (run_cmd("mkdir -p '%s/.build-id/%.2s'", debug_dir, debug_id))
		return NULL;
	prof_symbolizer_set_debug_dir(debug_dir);
	return dbg;
}

/* Put @n bytes of @data as the debug file, in a new debug directory. */
static int put_debug(const void *data, size_t n)
{
	const char *dbg = fresh_debug();

	return dbg ? write_bytes(dbg, data, n) : -1;
}

/* File offset of the first section header of type @type, or 0. */
static size_t shdr_at(const char *data, size_t len, uint32_t type)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh;

	memcpy(&eh, data, sizeof(eh));
	if (eh.e_shoff > len || eh.e_shnum > (len - eh.e_shoff) / sizeof(sh))
		return 0;
	for (size_t i = 0; i < eh.e_shnum; i++) {
		memcpy(&sh, data + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == type)
			return eh.e_shoff + i * sizeof(sh);
	}
	return 0;
}

/* The raw bytes of the lowercase hex build-id @hex; their number. */
static size_t unhex(const char *hex, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned int b;

	for (; hex[0] && hex[1] && n < max; hex += 2)
		if (sscanf(hex, "%2x", &b) == 1)
			out[n++] = (uint8_t)b;
	return n;
}

/*
 * A targeted corruption of the debug file: the field at @field (64 bits,
 * or 32 for sh_type and sh_link) of the section header of its .symtab, or
 * of the string table the .symtab links to, set to @set (if not 0), plus
 * @add: the table out of the file, of the wrong type or entry size,
 * linked to a section that is not there, its strings not NUL-terminated.
 */
struct shdr_poke {
	bool strtab;
	size_t field, size;
	uint64_t set, add;
};

#define POKE(str, name, set, add)                                 \
	{                                                         \
		str, offsetof(Elf64_Shdr, name),                  \
			sizeof(((Elf64_Shdr *)0)->name), set, add \
	}

/* Apply @p to the ELF image @data; false if its tables are not found. */
static bool poke(char *data, size_t len, const struct shdr_poke *p)
{
	size_t off = shdr_at(data, len, SHT_SYMTAB);
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	uint64_t v = 0;

	if (!off)
		return false;
	if (p->strtab) {
		memcpy(&eh, data, sizeof(eh));
		memcpy(&sh, data + off, sizeof(sh));
		if (sh.sh_link >= eh.e_shnum)
			return false;
		off = eh.e_shoff + sh.sh_link * sizeof(sh);
	}
	memcpy(&v, data + off + p->field, p->size);
	v = (p->set ? p->set : v) + p->add;
	memcpy(data + off + p->field, &v, p->size);
	return true;
}

/*
 * This executable, stripped of its .symtab and mapped: its static
 * functions are named from the debug file under a temporary debug
 * directory only when that file is there, is ELF, has their .symtab and
 * has the copy's build-id.  Wrong, truncated and corrupted debug files
 * give no names (or, corrupted where it does not matter, the right ones),
 * never a crash.
 */
static void symbolize_debug_file(void)
{
	static const struct shdr_poke pokes[] = {
		POKE(false, sh_offset, 1ull << 40, 0),
		POKE(false, sh_offset, UINT64_MAX - 7, 0),
		POKE(false, sh_size, 1ull << 40, 0),
		POKE(false, sh_size, UINT64_MAX, 0),
		POKE(false, sh_entsize, 0, 1),
		POKE(false, sh_link, 1u << 20, 0),
		POKE(false, sh_type, SHT_STRTAB, 0),
		POKE(true, sh_offset, 1ull << 40, 0),
		POKE(true, sh_offset, UINT64_MAX - 7, 0),
		POKE(true, sh_size, 1ull << 40, 0),
		POKE(true, sh_size, 0, UINT64_MAX), /* its last NUL left out */
		POKE(true, sh_type, SHT_PROGBITS, 0),
	};
	const char *full = tmp_path("full.elf");
	const char *strip = tmp_path("stripped.elf");
	const char *good = tmp_path("good.debug");
	const char *dbg;
	struct stripped c = { .path = strip };
	struct prof_symbolizer *s;
	const struct prof_mapping *m;
	struct exec_seg e = { 0 };
	uint8_t raw[64], *at;
	char *data, *copy;
	size_t len, nraw, off;
	uint64_t rng = 99;
	unsigned int mapid;
	int bad = 0, named = 0, r;
	Elf64_Shdr sh;

	snprintf(debug_base, sizeof(debug_base), "%s", tmp_path("debug"));
	KT_REQUIRE(!copy_exe(full, &data, &len));
	free(data);
	KT_REQUIRE(!run_cmd("strip -s -o '%s' '%s'", strip, full));
	KT_REQUIRE(!run_cmd("objcopy --only-keep-debug '%s' '%s'", full, good));
	dl_iterate_phdr(find_exec_seg, &e);
	KT_REQUIRE(e.found);
	c.map = map_exec(strip, 0, &c.len);
	KT_REQUIRE(c.map);
	c.at[0] = (uintptr_t)c.map + leaf - e.bias - e.p_vaddr + e.p_offset + 4;
	c.at[1] = (uintptr_t)c.map + mid - e.bias - e.p_vaddr + e.p_offset + 8;
	c.at[2] = (uintptr_t)c.map + root - e.bias - e.p_vaddr + e.p_offset + 8;

	/* The copy's build-id is this executable's. */
	s = prof_symbolizer_new();
	KT_REQUIRE(s);
	prof_symbolize(s, c.at[0], &mapid);
	m = mapping_by_id(s, mapid);
	KT_REQUIRE(m && !strcmp(m->path, strip));
	snprintf(debug_id, sizeof(debug_id), "%s", m->build_id);
	prof_symbolize(s, leaf, &mapid);
	m = mapping_by_id(s, mapid);
	KT_CHECK(m && !strcmp(m->build_id, debug_id));
	prof_symbolizer_free(s);
	KT_REQUIRE(strlen(debug_id) > 2); /* the toolchain writes one */
	nraw = unhex(debug_id, raw, sizeof(raw));

	/* No debug file: no names (not even from the default directory). */
	KT_CHECK_EQ(stripped_names(&c), 0);
	KT_REQUIRE(fresh_debug());
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* The debug file: all three names. */
	data = read_text(good, &len);
	KT_REQUIRE(data && len > sizeof(Elf64_Ehdr));
	copy = malloc(len);
	KT_REQUIRE(copy);
	KT_REQUIRE(!put_debug(data, len));
	KT_CHECK_EQ(stripped_names(&c), 3);
	s = prof_symbolizer_new();
	KT_REQUIRE(s);
	KT_CHECK(prof_symbolize(s, c.at[1], &mapid) != NULL);
	m = mapping_by_id(s, mapid);
	KT_CHECK(m && m->has_functions);
	prof_symbolizer_free(s);

	/* Another build-id in it: ignored. */
	memcpy(copy, data, len);
	at = memmem(copy, len, raw, nraw);
	KT_REQUIRE(at);
	at[nraw - 1] ^= 1;
	KT_REQUIRE(!put_debug(copy, len));
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* A debug file without .symtab (the stripped copy's): ignored. */
	KT_REQUIRE((dbg = fresh_debug()));
	KT_REQUIRE(!run_cmd("objcopy --only-keep-debug '%s' '%s'", strip, dbg));
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* Not a file, not ELF, empty, 32-bit: ignored. */
	KT_REQUIRE((dbg = fresh_debug()));
	KT_REQUIRE(!mkfifo(dbg, 0600));
	KT_CHECK_EQ(stripped_names(&c), 0);
	KT_REQUIRE((dbg = fresh_debug()));
	KT_REQUIRE(!mkdir(dbg, 0700));
	KT_CHECK_EQ(stripped_names(&c), 0);
	KT_REQUIRE(!put_debug("just some text\n", 15));
	KT_CHECK_EQ(stripped_names(&c), 0);
	KT_REQUIRE(!put_debug("", 0));
	KT_CHECK_EQ(stripped_names(&c), 0);
	memcpy(copy, data, len);
	copy[EI_CLASS] = ELFCLASS32;
	KT_REQUIRE(!put_debug(copy, len));
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* Truncated anywhere: the section headers are at the end. */
	for (int i = 1; i <= 100; i++) {
		size_t cut =
			i <= 40 ? (size_t)i * 17 : len / 61 * (size_t)(i - 40);

		KT_REQUIRE(!put_debug(data, cut < len ? cut : len - 1));
		r = stripped_names(&c);
		bad += r != 0;
	}
	KT_CHECK_EQ(bad, 0);

	/*
	 * The symbol table or its strings out of bounds or malformed: no
	 * names, or (libelf reads a table whose sh_entsize is 0 by its type,
	 * and strings whose table's last NUL is cut off) the right ones.
	 */
	for (size_t i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
		memcpy(copy, data, len);
		KT_REQUIRE(poke(copy, len, &pokes[i]));
		KT_REQUIRE(!put_debug(copy, len));
		r = stripped_names(&c);
		KT_CHECK(r == 0 || r == 3);
		if (r)
			fprintf(stderr, "  poke %zu: %d names\n", i, r);
	}

	/*
	 * Random bytes anywhere, in the ELF header, in the symbols and their
	 * strings, in the section headers at the end: a build-id still right
	 * and a symbol table still sane give names, wrong ones perhaps.
	 */
	off = shdr_at(data, len, SHT_SYMTAB);
	KT_REQUIRE(off);
	memcpy(&sh, data + off, sizeof(sh));
	KT_REQUIRE(sh.sh_offset < len && sh.sh_size <= len - sh.sh_offset &&
		   sh.sh_size > 0);
	bad = 0;
	for (int i = 0; i < 200; i++) {
		memcpy(copy, data, len);
		for (int k = 0; k < 8; k++) {
			size_t pos = stress_rand(&rng);

			switch (i % 4) {
			case 0:
				pos %= len;
				break;
			case 1:
				pos %= 256;
				break;
			case 2: /* the .symtab, then its .strtab */
				pos = sh.sh_offset + pos % sh.sh_size;
				pos += k % 2 ? sh.sh_size : 0;
				pos = pos < len ? pos : len - 1;
				break;
			default:
				pos = len - 1 - pos % 8192 % len;
			}
			copy[pos] = (char)stress_rand(&rng);
		}
		KT_REQUIRE(!put_debug(copy, len));
		r = stripped_names(&c);
		bad += r < 0;
		named += r > 0;
	}
	KT_CHECK_EQ(bad, 0);
	KT_CHECK(named > 20); /* not all refused: their tables were read */

	/* And back to the real one. */
	KT_REQUIRE(!put_debug(data, len));
	KT_CHECK_EQ(stripped_names(&c), 3);
	prof_symbolizer_set_debug_dir(NULL);
	KT_CHECK_EQ(stripped_names(&c), 0);

	munmap(c.map, c.len);
	free(copy);
	free(data);
	run_cmd("rm -rf '%s'", debug_base);
	unlink(good);
	unlink(strip);
	unlink(full);
}

int main(void)
{
	if (tmpfiles_init("symbolize_test"))
		return EXIT_FAILURE;
	root_fn(3); /* they are real functions */
	find_functions();
	KT_RUN(symbolize_own_functions);
	KT_RUN(symbolize_libc_and_mappings);
	KT_RUN(symbolize_vdso);
	KT_RUN(symbolize_remapped_copy);
	KT_RUN(symbolize_hostile_files);
	KT_RUN(symbolize_debug_file);
	tmpfiles_done();
	return ktest_exit();
}
