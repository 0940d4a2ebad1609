// SPDX-License-Identifier: MIT
/*
 * pprof_test.c - unit tests for the profiler's output side: the wire
 * helpers (proto.h), the symbolizer (symbolize.c, on this program's own
 * static functions, libc, a copy of this executable mapped at other
 * offsets, truncated, corrupted, deleted and non-ELF files, and a
 * stripped copy with its separate debug file, right, wrong or corrupted:
 * objcopy and strip must be there), the pprof and folded writers (pprof.c)
 * and the decoder and report (report.c).
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
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "testing/ktest.h"
#include "testing/harness.h"
#include "pprof/outfile.h"
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

static char tmpdir[256];

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

static const char *tmp_path(const char *name)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ & 3];

	snprintf(p, sizeof(buf[0]), "%s/%s", tmpdir, name);
	return p;
}

static char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 &&
	    !fseek(f, 0, SEEK_SET)) {
		buf = calloc(1, (size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static int write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(p, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
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
	KT_CHECK(!prof_symbolize(s, (uintptr_t)tmpdir, &id) && id == 0);
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
 * find the symbols: see the bias at the top of symbolize.c.
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

/* Map @n bytes of @data as a file, look around in it, unmap it. */
static int probe_hostile(const char *path, const char *data, size_t n,
			 uint64_t *rng)
{
	struct prof_symbolizer *s;
	const struct prof_mapping *maps;
	size_t len, nm;
	uint8_t *p;
	int names = 0, ok = 1;

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
	return ok ? names : -1;
}

static void symbolize_hostile_files(void)
{
	const char *path = tmp_path("hostile.elf");
	uint64_t rng = 7;
	size_t len, cut;
	char *orig, *data;
	int bad = 0, names = 0, r;

	KT_REQUIRE(!copy_exe(path, &orig, &len));
	data = malloc(len);
	KT_REQUIRE(data);
	/* Truncated: a few bytes, the headers, then all through the file. */
	for (int i = 1; i <= 160; i++) {
		cut = i <= 80 ? (size_t)i * 13 : (len / 80) * (size_t)(i - 80);
		r = probe_hostile(path, orig, cut ? cut : 1, &rng);
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
		r = probe_hostile(path, data, len, &rng);
		bad += r < 0;
		names += r > 0;
	}
	/* Not ELF at all. */
	bad += probe_hostile(path, "just some text\n", 15, &rng) < 0;
	KT_CHECK_EQ(bad, 0);
	KT_CHECK(names > 100); /* most corrupted copies still have symbols */
	unlink(path);
	free(data);
	free(orig);
}

/* ---- separate debug files ---- */

/* Run a shell command; nonzero, said loudly, if it failed. */
__attribute__((format(printf, 1, 2))) static int run_cmd(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	rc = system(cmd);
	if (rc)
		fprintf(stderr,
			"  `%s` failed (status %d): binutils (objcopy, strip) "
			"missing?\n",
			cmd, rc);
	return rc;
}

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

/* Put @n bytes of @data at @path, a new file each time. */
static int put_debug(const char *path, const void *data, size_t n)
{
	unlink(path);
	return write_bytes(path, data, n);
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
	static char dir[512];
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
	char sub[600], dbg[800], id[2 * 64 + 1];
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

	snprintf(dir, sizeof(dir), "%s", tmp_path("debug"));
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
	snprintf(id, sizeof(id), "%s", m->build_id);
	prof_symbolize(s, leaf, &mapid);
	m = mapping_by_id(s, mapid);
	KT_CHECK(m && !strcmp(m->build_id, id));
	prof_symbolizer_free(s);
	KT_REQUIRE(strlen(id) > 2); /* the toolchain writes one */
	nraw = unhex(id, raw, sizeof(raw));

	/* No debug file: no names (not even from the default directory). */
	KT_CHECK_EQ(stripped_names(&c), 0);
	prof_symbolizer_set_debug_dir(dir);
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* The debug file: all three names. */
	snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, id);
	snprintf(dbg, sizeof(dbg), "%s/%s.debug", sub, id + 2);
	KT_REQUIRE(!run_cmd("mkdir -p '%s'", sub));
	data = read_text(good, &len);
	KT_REQUIRE(data && len > sizeof(Elf64_Ehdr));
	copy = malloc(len);
	KT_REQUIRE(copy);
	KT_REQUIRE(!put_debug(dbg, data, len));
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
	KT_REQUIRE(!put_debug(dbg, copy, len));
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* A debug file without .symtab (the stripped copy's): ignored. */
	KT_REQUIRE(!run_cmd("objcopy --only-keep-debug '%s' '%s'", strip, dbg));
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* Not a file, not ELF, empty, 32-bit: ignored. */
	unlink(dbg);
	KT_REQUIRE(!mkfifo(dbg, 0600));
	KT_CHECK_EQ(stripped_names(&c), 0);
	unlink(dbg);
	KT_REQUIRE(!mkdir(dbg, 0700));
	KT_CHECK_EQ(stripped_names(&c), 0);
	rmdir(dbg);
	KT_REQUIRE(!put_debug(dbg, "just some text\n", 15));
	KT_CHECK_EQ(stripped_names(&c), 0);
	KT_REQUIRE(!put_debug(dbg, "", 0));
	KT_CHECK_EQ(stripped_names(&c), 0);
	memcpy(copy, data, len);
	copy[EI_CLASS] = ELFCLASS32;
	KT_REQUIRE(!put_debug(dbg, copy, len));
	KT_CHECK_EQ(stripped_names(&c), 0);

	/* Truncated anywhere: the section headers are at the end. */
	for (int i = 1; i <= 100; i++) {
		size_t cut =
			i <= 40 ? (size_t)i * 17 : len / 61 * (size_t)(i - 40);

		KT_REQUIRE(!put_debug(dbg, data, cut < len ? cut : len - 1));
		r = stripped_names(&c);
		bad += r != 0;
	}
	KT_CHECK_EQ(bad, 0);

	/* The symbol table or its strings out of bounds or malformed. */
	for (size_t i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
		memcpy(copy, data, len);
		KT_REQUIRE(poke(copy, len, &pokes[i]));
		KT_REQUIRE(!put_debug(dbg, copy, len));
		r = stripped_names(&c);
		KT_CHECK_EQ(r, 0);
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
		KT_REQUIRE(!put_debug(dbg, copy, len));
		r = stripped_names(&c);
		bad += r < 0;
		named += r > 0;
	}
	KT_CHECK_EQ(bad, 0);
	KT_CHECK(named > 20); /* not all refused: their tables were read */

	/* And back to the real one. */
	KT_REQUIRE(!put_debug(dbg, data, len));
	KT_CHECK_EQ(stripped_names(&c), 3);
	prof_symbolizer_set_debug_dir(NULL);
	KT_CHECK_EQ(stripped_names(&c), 0);

	munmap(c.map, c.len);
	free(copy);
	free(data);
	unlink(dbg);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	rmdir(sub);
	rmdir(dir);
	unlink(good);
	unlink(strip);
	unlink(full);
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

/* Write @text through prof_outfile_write() and read @check back. */
static bool outfile_holds(const char *path, const char *check, const char *text)
{
	size_t len;
	char *got;
	bool ok;

	if (prof_outfile_write(path, text, strlen(text)))
		return false;
	got = read_text(check, &len);
	ok = got && len == strlen(text) && !memcmp(got, text, len);
	free(got);
	return ok;
}

/*
 * Regular files and new paths are replaced atomically; symlinks are
 * followed; devices, FIFOs and /proc/self/fd are written through and stay
 * what they were (`-o /dev/null` as root once replaced /dev/null).
 */
static void outfile_targets(void)
{
	const char *reg = tmp_path("out.reg"), *lnk = tmp_path("out.lnk");
	const char *fifo = tmp_path("out.fifo");
	char buf[64], self[64];
	struct stat st, st2;
	ssize_t n;
	int fd;

	KT_CHECK(outfile_holds(reg, reg, "new\n"));
	KT_REQUIRE(chmod(reg, 0604) == 0 && stat(reg, &st) == 0);
	KT_CHECK(outfile_holds(reg, reg, "replaced\n"));
	KT_REQUIRE(stat(reg, &st2) == 0);
	KT_CHECK(st2.st_ino != st.st_ino); /* renamed into place */
	KT_CHECK_EQ(st2.st_mode & 07777, 0604);

	/* A relative symlink: its target changes, the link stays. */
	KT_REQUIRE(symlink("out.reg", lnk) == 0);
	KT_CHECK(outfile_holds(lnk, reg, "through a link\n"));
	KT_CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(reg); /* now dangling: the target is created */
	KT_CHECK(outfile_holds(lnk, reg, "dangling\n"));
	KT_CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(lnk);
	KT_REQUIRE(symlink(lnk, lnk) == 0); /* a loop */
	KT_CHECK_EQ(prof_outfile_write(lnk, "x", 1), -ELOOP);
	unlink(lnk);
	KT_CHECK_EQ(prof_outfile_write(tmpdir, "x", 1), -EISDIR);

	/* A FIFO with a reader: the bytes arrive, the FIFO stays. */
	KT_REQUIRE(mkfifo(fifo, 0600) == 0);
	fd = open(fifo, O_RDONLY | O_NONBLOCK);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(prof_outfile_write(fifo, "fifo\n", 5), 0);
	n = read(fd, buf, sizeof(buf));
	KT_CHECK(n == 5 && !memcmp(buf, "fifo\n", 5));
	close(fd);
	KT_CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	unlink(fifo);

	/* /proc/self/fd/N on a regular file the program holds open (what
	 * /dev/stdout is under `> file`): appended, same file. */
	fd = open(reg, O_RDWR | O_CREAT | O_TRUNC, 0600);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(write(fd, "program\n", 8), 8);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	KT_CHECK_EQ(prof_outfile_write(self, "profile\n", 8), 0);
	KT_CHECK(fstat(fd, &st) == 0 && stat(reg, &st2) == 0 &&
		 st.st_ino == st2.st_ino);
	close(fd);
	KT_CHECK(outfile_holds(reg, reg, "replaced\n")); /* then atomically */
	unlink(reg);
}

/* A private character device (the kernel's null, 1:3) stays one. */
static void outfile_chardev(void)
{
	const char *dev = tmp_path("out.null");
	struct stat st;

	if (mknod(dev, S_IFCHR | 0600, makedev(1, 3)) != 0)
		KT_SKIP("mknod needs root");
	KT_CHECK_EQ(prof_outfile_write(dev, "gone\n", 5), 0);
	KT_CHECK(lstat(dev, &st) == 0 && S_ISCHR(st.st_mode) &&
		 st.st_rdev == makedev(1, 3));
	unlink(dev);
}

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
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/pprof_test.XXXXXX",
		 t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	root_fn(3); /* they are real functions */
	make_profile();
	KT_RUN(proto_roundtrip);
	KT_RUN(proto_malformed);
	KT_RUN(symbolize_own_functions);
	KT_RUN(symbolize_libc_and_mappings);
	KT_RUN(symbolize_vdso);
	KT_RUN(symbolize_remapped_copy);
	KT_RUN(symbolize_hostile_files);
	KT_RUN(symbolize_debug_file);
	KT_RUN(pprof_roundtrip);
	KT_RUN(pprof_without_symbolizer);
	KT_RUN(writer_errors);
	KT_RUN(folded_exact);
	KT_RUN(outfile_targets);
	KT_RUN(outfile_chardev);
	KT_RUN(decoder_refuses_truncation);
	KT_RUN(decoder_survives_corruption);
	KT_RUN(report_text);
	if (getenv("PPROF_TEST_KEEP")) {
		printf("# prof.pb.gz and prof.folded kept in %s\n", tmpdir);
		return ktest_exit();
	}
	unlink(tmp_path("prof.pb.gz"));
	unlink(tmp_path("nosym.pb.gz"));
	unlink(tmp_path("prof.folded"));
	rmdir(tmpdir);
	return ktest_exit();
}
