// SPDX-License-Identifier: MIT
/*
 * symbolize.c - in-process symbolization from /proc/self/maps and the ELF
 * files mapped there.
 *
 * prof_symbolizer_new() keeps the executable mappings (those of files and
 * the [vdso]) of /proc/self/maps, in address order.  A mapped file is
 * opened and mmap'd read-only at the first lookup in one of its mappings
 * (or prof_symbolizer_mappings(), for the build-id); its symbol table at
 * the first lookup.  Files are shared by path between mappings; the
 * [vdso] is read in place, in memory.  A file that cannot be read, is not
 * a 64-bit little-endian ELF, or has been deleted since it was mapped
 * (whatever is at its path now is another file) has no ELF symbols, and
 * lookups in it go straight to dladdr().
 *
 * Load bias: a mapping maps file offset @offset at address @start.  The
 * PT_LOAD segment whose file range holds @offset (its p_offset rounded
 * down to the page, as the kernel maps it, up to p_offset + p_filesz;
 * executable segments first) says that file offset p_offset is virtual
 * address p_vaddr, so @offset is at p_vaddr + (@offset - p_offset) in the
 * ELF's address space, and
 *
 *	bias = @start - (p_vaddr + @offset - p_offset)
 *
 * (modulo 2^64).  A symbol's st_value plus the bias is its address in
 * the process.  This holds for PIE executables and shared libraries
 * (p_vaddr near p_offset, bias the load address) and for non-PIE
 * executables (p_vaddr absolute, bias 0) alike.
 *
 * Symbols: .symtab if the file has one with functions, else the .symtab
 * of its separate debug file, else .dynsym.  The debug file (Debian ships
 * the .symtab of its libraries there, in the -dbg and -dbgsym packages) is
 *
 *	<debug dir>/.build-id/<2 first hex digits of the build-id>/<rest>.debug
 *
 * the debug dir being /usr/lib/debug unless a test says otherwise.  It is
 * used only if it is an ELF file as above, whose own build-id is the
 * mapped file's, with a .symtab; its symbol values are the same link-time
 * addresses, so the bias still comes from the mapped file, and it stays
 * mapped for the names.  (.gnu_debuglink is not read.)  Of a symbol
 * table, the STT_FUNC and STT_GNU_IFUNC symbols that are defined and named
 * are kept, sorted by address, one per address (aliases: sized before
 * size 0, global before weak before local, then by name).  A lookup
 * binary-searches the last symbol at or below the address; a symbol of
 * size 0 covers up to the next one.  No symbol there: dladdr(), whose name
 * is copied.
 *
 * Every header, table and string is checked against the file size before
 * it is read, and read with memcpy (no alignment assumed), so a truncated
 * or hostile file gives no symbols rather than a crash.  (A file truncated
 * on disk while we hold it mapped would still raise SIGBUS: that is the
 * price of mmap.)
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pprof/symbolize.h"

#define BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 (sha1) */
#define DELETED_SUFFIX " (deleted)"
#define DEBUG_DIR "/usr/lib/debug"

struct elf_sym {
	uint64_t value;
	uint64_t size;
	const char *name; /* in the mapped file's string table */
	int rank; /* binding: 0 global, 1 weak, 2 local */
};

enum elf_state { ELF_NEW, ELF_OPEN, ELF_BAD };

struct elf_file {
	struct elf_file *next;
	char *path;
	bool deleted;
	bool in_memory; /* the [vdso]: not ours to unmap */
	bool foreign_vdso; /* another process's: read ours instead */
	bool syms_read;
	enum elf_state state;
	const uint8_t *base;
	size_t size;
	Elf64_Ehdr eh;
	struct elf_sym *syms;
	size_t nsyms;
	struct elf_file *debug; /* holds the names in @syms, or NULL */
	char build_id[2 * BUILD_ID_MAX + 1];
};

/* What the symbolizer keeps beside each struct prof_mapping. */
struct map_ext {
	struct elf_file *file;
	bool bias_done;
	bool has_bias;
	uint64_t bias;
};

struct name_node {
	struct name_node *next;
	char name[];
};

struct prof_symbolizer {
	struct prof_mapping *maps;
	struct map_ext *ext;
	size_t nmaps, cap;
	struct elf_file *files;
	struct name_node *names; /* copies of dladdr() names */
	bool foreign; /* another process's mappings: no dladdr() */
};

static const char *debug_dir = DEBUG_DIR;

void prof_symbolizer_set_debug_dir(const char *dir)
{
	debug_dir = dir ? dir : DEBUG_DIR;
}

/* [@off, @off + @len) lies inside the file. */
static bool in_file(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

static bool elf_read(const struct elf_file *f, uint64_t off, void *dst,
		     size_t len)
{
	if (!in_file(f, off, len))
		return false;
	memcpy(dst, f->base + off, len);
	return true;
}

static bool elf_phdr(const struct elf_file *f, size_t i, Elf64_Phdr *ph)
{
	if (i >= f->eh.e_phnum || f->eh.e_phentsize != sizeof(*ph) ||
	    f->eh.e_phoff > f->size)
		return false;
	return elf_read(f, f->eh.e_phoff + i * sizeof(*ph), ph, sizeof(*ph));
}

/* Number of section headers (extended numbering: in section 0). */
static size_t elf_shnum(const struct elf_file *f)
{
	Elf64_Shdr sh0;

	if (!f->eh.e_shoff || f->eh.e_shentsize != sizeof(sh0))
		return 0;
	if (f->eh.e_shnum)
		return f->eh.e_shnum;
	if (!elf_read(f, f->eh.e_shoff, &sh0, sizeof(sh0)) ||
	    sh0.sh_size > f->size / sizeof(sh0))
		return 0;
	return (size_t)sh0.sh_size;
}

static bool elf_shdr(const struct elf_file *f, size_t i, Elf64_Shdr *sh)
{
	if (i >= elf_shnum(f) || f->eh.e_shoff > f->size)
		return false;
	return elf_read(f, f->eh.e_shoff + i * sizeof(*sh), sh, sizeof(*sh));
}

static bool elf_header_ok(struct elf_file *f)
{
	const unsigned char *id = f->eh.e_ident;

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	return false;
#endif
	if (!elf_read(f, 0, &f->eh, sizeof(f->eh)))
		return false;
	return !memcmp(id, ELFMAG, SELFMAG) && id[EI_CLASS] == ELFCLASS64 &&
	       id[EI_DATA] == ELFDATA2LSB && id[EI_VERSION] == EV_CURRENT;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static void hex_build_id(struct elf_file *f, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		f->build_id[2 * i] = digits[p[i] >> 4];
		f->build_id[2 * i + 1] = digits[p[i] & 15];
	}
	f->build_id[2 * n] = '\0';
}

/* Look for NT_GNU_BUILD_ID among the notes at [@off, @off + @len). */
static bool notes_build_id(struct elf_file *f, uint64_t off, uint64_t len,
			   uint64_t align)
{
	uint64_t a = align == 8 ? 8 : 4, pos = 0, namesz, descsz;
	const uint8_t *p;
	Elf64_Nhdr nh;

	if (!in_file(f, off, len))
		return false;
	p = f->base + off;
	while (len - pos >= sizeof(nh)) {
		memcpy(&nh, p + pos, sizeof(nh));
		pos += sizeof(nh);
		namesz = round_up(nh.n_namesz, a);
		descsz = round_up(nh.n_descsz, a);
		if (namesz > len - pos || nh.n_descsz > len - pos - namesz)
			return false;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p + pos, "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz <= BUILD_ID_MAX) {
			hex_build_id(f, p + pos + namesz, nh.n_descsz);
			return true;
		}
		if (descsz > len - pos - namesz)
			return false;
		pos += namesz + descsz;
	}
	return false;
}

static void elf_read_build_id(struct elf_file *f)
{
	Elf64_Phdr ph;
	Elf64_Shdr sh;

	for (size_t i = 0; elf_phdr(f, i, &ph); i++)
		if (ph.p_type == PT_NOTE &&
		    notes_build_id(f, ph.p_offset, ph.p_filesz, ph.p_align))
			return;
	for (size_t i = 0; elf_shdr(f, i, &sh); i++)
		if (sh.sh_type == SHT_NOTE &&
		    notes_build_id(f, sh.sh_offset, sh.sh_size,
				   sh.sh_addralign))
			return;
}

static int map_file(struct elf_file *f)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf64_Ehdr))
		goto fail;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	close(fd);
	f->base = p;
	f->size = (size_t)st.st_size;
	return 0;
fail:
	close(fd);
	return -EINVAL;
}

static void unmap_file(struct elf_file *f)
{
	if (f->base && !f->in_memory)
		munmap((void *)f->base, f->size);
	f->base = NULL;
	f->size = 0;
}

/*
 * own_vdso() - this process's [vdso], from /proc/self/maps: the kernel
 * maps the same image into every process of one architecture, so another
 * process's [vdso] addresses are named from ours.  Its size is ours, never
 * the one a record claims.  Return: true with *@base and *@size set.
 */
static bool own_vdso(const uint8_t **base, size_t *size)
{
	FILE *fp = fopen("/proc/self/maps", "re");
	unsigned long long lo, hi;
	char line[512];
	bool found = false;

	if (!fp)
		return false;
	while (!found && fgets(line, sizeof(line), fp))
		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2 && lo < hi) {
			*base = (const uint8_t *)(uintptr_t)lo;
			*size = (size_t)(hi - lo);
			found = true;
		}
	fclose(fp);
	return found;
}

/*
 * Stage 1: map the file, check its header, read its build-id.  @m, the
 * mapping, is read only for a file in memory (the [vdso]; another
 * process's is read from ours: own_vdso()).
 */
static bool elf_open(struct elf_file *f, const struct prof_mapping *m)
{
	if (f->state != ELF_NEW)
		return f->state == ELF_OPEN;
	f->state = ELF_BAD;
	if (f->deleted)
		return false;
	if (f->in_memory) {
		if (m->offset != 0)
			return false;
		f->base = (const uint8_t *)(uintptr_t)m->start;
		f->size = (size_t)(m->limit - m->start);
		if (f->foreign_vdso && !own_vdso(&f->base, &f->size))
			return false;
	} else if (map_file(f)) {
		return false;
	}
	if (!elf_header_ok(f)) {
		unmap_file(f);
		return false;
	}
	f->state = ELF_OPEN;
	elf_read_build_id(f);
	return true;
}

static int sym_rank(unsigned char info)
{
	switch (ELF64_ST_BIND(info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

/* The string table of a symbol table, checked to end with a NUL. */
static bool sym_strtab(const struct elf_file *f, const Elf64_Shdr *symtab,
		       Elf64_Shdr *str)
{
	if (!elf_shdr(f, symtab->sh_link, str) || str->sh_type != SHT_STRTAB ||
	    !str->sh_size || !in_file(f, str->sh_offset, str->sh_size))
		return false;
	return f->base[str->sh_offset + str->sh_size - 1] == '\0';
}

/* Keep @sym if it is a defined, named function. */
static bool sym_keep(const struct elf_file *f, const Elf64_Sym *sym,
		     const Elf64_Shdr *str, struct elf_sym *out)
{
	int type = ELF64_ST_TYPE(sym->st_info);
	const char *name;

	if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
	    sym->st_shndx == SHN_UNDEF || !sym->st_value ||
	    sym->st_name >= str->sh_size)
		return false;
	name = (const char *)f->base + str->sh_offset + sym->st_name;
	if (!*name)
		return false;
	out->value = sym->st_value;
	out->size = sym->st_size;
	out->name = name;
	out->rank = sym_rank(sym->st_info);
	return true;
}

/* Sort by address and keep the first of each address. */
static void sym_sort(struct elf_file *f)
{
	size_t n = 0;

	qsort(f->syms, f->nsyms, sizeof(*f->syms), sym_cmp);
	for (size_t i = 0; i < f->nsyms; i++)
		if (!n || f->syms[i].value != f->syms[n - 1].value)
			f->syms[n++] = f->syms[i];
	f->nsyms = n;
}

/* Load the functions of the first symbol table of type @type. */
static bool sym_load(struct elf_file *f, uint32_t type)
{
	Elf64_Shdr sh, str;
	Elf64_Sym sym;
	size_t i, n;

	for (i = 0; elf_shdr(f, i, &sh); i++)
		if (sh.sh_type == type)
			break;
	if (!elf_shdr(f, i, &sh) || sh.sh_entsize != sizeof(sym) ||
	    !in_file(f, sh.sh_offset, sh.sh_size) || !sym_strtab(f, &sh, &str))
		return false;
	n = (size_t)(sh.sh_size / sizeof(sym));
	f->syms = calloc(n ? n : 1, sizeof(*f->syms));
	if (!f->syms)
		return false;
	for (i = 0; i < n; i++) {
		memcpy(&sym, f->base + sh.sh_offset + i * sizeof(sym),
		       sizeof(sym));
		if (sym_keep(f, &sym, &str, &f->syms[f->nsyms]))
			f->nsyms++;
	}
	sym_sort(f);
	if (f->nsyms)
		return true;
	free(f->syms);
	f->syms = NULL;
	return false;
}

static void elf_free(struct elf_file *f)
{
	if (!f)
		return;
	unmap_file(f);
	elf_free(f->debug);
	free(f->syms);
	free(f->path);
	free(f);
}

/*
 * The .symtab of the debug file of @f (see the top of the file), opened,
 * checked and loaded as @f's own would be; it goes to @f->debug.
 */
static bool debug_load(struct elf_file *f)
{
	static const char fmt[] = "%s/.build-id/%.2s/%s.debug";
	const char *id = f->build_id;
	struct elf_file *d;
	int len;

	if (strlen(id) <= 2 || !debug_dir || !*debug_dir)
		return false;
	d = calloc(1, sizeof(*d));
	if (!d)
		return false;
	len = snprintf(NULL, 0, fmt, debug_dir, id, id + 2);
	d->path = len > 0 ? malloc((size_t)len + 1) : NULL;
	if (!d->path) {
		free(d);
		return false;
	}
	snprintf(d->path, (size_t)len + 1, fmt, debug_dir, id, id + 2);
	if (!elf_open(d, NULL) || strcmp(d->build_id, id) ||
	    !sym_load(d, SHT_SYMTAB)) {
		elf_free(d);
		return false;
	}
	f->syms = d->syms;
	f->nsyms = d->nsyms;
	d->syms = NULL;
	d->nsyms = 0;
	f->debug = d;
	return true;
}

/* Stage 2: the symbol table, .symtab, else the debug file's, else .dynsym. */
static void elf_read_symbols(struct elf_file *f)
{
	if (f->syms_read)
		return;
	f->syms_read = true;
	if (!sym_load(f, SHT_SYMTAB) && !debug_load(f))
		sym_load(f, SHT_DYNSYM);
}

/*
 * Index of the first of the @n elements of @size bytes at @base, sorted by
 * the uint64_t at offset @off in each, whose key is above @key; @n if none.
 */
static size_t upper_bound(const void *base, size_t n, size_t size, size_t off,
			  uint64_t key)
{
	size_t lo = 0, hi = n, mid;
	uint64_t v;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		memcpy(&v, (const char *)base + mid * size + off, sizeof(v));
		if (v <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const char *elf_lookup(const struct elf_file *f, uint64_t vaddr)
{
	size_t i = upper_bound(f->syms, f->nsyms, sizeof(*f->syms),
			       offsetof(struct elf_sym, value), vaddr);
	const struct elf_sym *sym;

	if (!i)
		return NULL;
	sym = &f->syms[i - 1];
	/* Size 0: up to the next symbol, which lies above @vaddr. */
	if (!sym->size || vaddr - sym->value < sym->size)
		return sym->name;
	return NULL;
}

/* See the top of the file. */
static void map_bias(struct map_ext *e, const struct prof_mapping *m)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t mask = page > 0 ? ~((uint64_t)page - 1) : ~(uint64_t)4095;
	Elf64_Phdr ph, best = { 0 };
	bool found = false;

	e->bias_done = true;
	for (size_t i = 0; elf_phdr(e->file, i, &ph); i++) {
		if (ph.p_type != PT_LOAD || !ph.p_filesz ||
		    m->offset < (ph.p_offset & mask) ||
		    (m->offset >= ph.p_offset &&
		     m->offset - ph.p_offset >= ph.p_filesz))
			continue;
		if (!found || (!(best.p_flags & PF_X) && (ph.p_flags & PF_X)))
			best = ph;
		found = true;
	}
	if (!found)
		return;
	e->has_bias = true;
	e->bias = m->start - (best.p_vaddr + (m->offset - best.p_offset));
}

static const char *lookup_elf(struct prof_symbolizer *s, size_t i,
			      uintptr_t addr)
{
	struct map_ext *e = &s->ext[i];
	struct prof_mapping *m = &s->maps[i];

	if (!elf_open(e->file, m))
		return NULL;
	if (!e->bias_done)
		map_bias(e, m);
	elf_read_symbols(e->file);
	if (!e->has_bias || !e->file->nsyms)
		return NULL;
	m->has_functions = 1;
	return elf_lookup(e->file, (uint64_t)addr - e->bias);
}

static const char *lookup_dladdr(struct prof_symbolizer *s, uintptr_t addr)
{
	struct name_node *n;
	Dl_info info;
	size_t len;

	if (!dladdr((void *)addr, &info) || !info.dli_sname || !*info.dli_sname)
		return NULL;
	len = strlen(info.dli_sname);
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	memcpy(n->name, info.dli_sname, len + 1);
	n->next = s->names;
	s->names = n;
	return n->name;
}

/* Index of the mapping holding @addr, or -1. */
static long find_map(const struct prof_symbolizer *s, uint64_t addr)
{
	size_t i = upper_bound(s->maps, s->nmaps, sizeof(*s->maps),
			       offsetof(struct prof_mapping, start), addr);

	if (!i || addr >= s->maps[i - 1].limit)
		return -1;
	return (long)(i - 1);
}

const char *prof_symbolize(struct prof_symbolizer *s, uintptr_t addr,
			   unsigned int *mapping_id)
{
	long i = s ? find_map(s, addr) : -1;
	const char *name = NULL;

	if (mapping_id)
		*mapping_id = i >= 0 ? s->maps[i].id : 0;
	if (!s)
		return NULL;
	if (i >= 0)
		name = lookup_elf(s, (size_t)i, addr);
	if (!name && !s->foreign)
		name = lookup_dladdr(s, addr);
	if (name && i >= 0)
		s->maps[i].has_functions = 1;
	return name;
}

size_t prof_symbolizer_mappings(struct prof_symbolizer *s,
				const struct prof_mapping **out)
{
	if (!s) {
		*out = NULL;
		return 0;
	}
	for (size_t i = 0; i < s->nmaps; i++)
		elf_open(s->ext[i].file, &s->maps[i]);
	*out = s->maps;
	return s->nmaps;
}

/* The file record for @path (shared between its mappings), or NULL. */
static struct elf_file *get_file(struct prof_symbolizer *s, const char *path,
				 bool deleted)
{
	bool vdso = !strcmp(path, "[vdso]");

	struct elf_file *f;

	for (f = s->files; f; f = f->next)
		if (f->deleted == deleted && !strcmp(f->path, path))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	f->deleted = deleted;
	f->in_memory = vdso;
	/* Another process's [vdso] is not in our memory: ours is read. */
	f->foreign_vdso = vdso && s->foreign;
	f->next = s->files;
	s->files = f;
	return f;
}

static int add_mapping(struct prof_symbolizer *s, uint64_t start,
		       uint64_t limit, uint64_t offset, char *path)
{
	size_t plen = strlen(path), slen = strlen(DELETED_SUFFIX);
	bool deleted =
		plen > slen && !strcmp(path + plen - slen, DELETED_SUFFIX);
	struct prof_mapping *m;
	struct elf_file *f;

	if (s->nmaps == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		void *p = realloc(s->maps, cap * sizeof(*s->maps));

		if (!p)
			return -ENOMEM;
		s->maps = p;
		p = realloc(s->ext, cap * sizeof(*s->ext));
		if (!p)
			return -ENOMEM;
		s->ext = p;
		s->cap = cap;
	}
	if (deleted)
		path[plen - slen] = '\0';
	f = get_file(s, path, deleted);
	if (!f)
		return -ENOMEM;
	m = &s->maps[s->nmaps];
	*m = (struct prof_mapping){ .start = start,
				    .limit = limit,
				    .offset = offset,
				    .path = f->path,
				    .build_id = f->build_id,
				    .id = (unsigned int)s->nmaps + 1 };
	s->ext[s->nmaps++] = (struct map_ext){ .file = f };
	return 0;
}

/* One line of /proc/self/maps: keep it if it is executable code. */
static int parse_line(struct prof_symbolizer *s, char *line)
{
	uint64_t start, limit, offset;
	char perms[5], *path, *nl;
	int n = -1;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*s %*s %n",
		   &start, &limit, perms, &offset, &n) != 4 ||
	    n < 0)
		return 0;
	path = line + n;
	nl = strchr(path, '\n');
	if (nl)
		*nl = '\0';
	if (strlen(perms) < 3 || perms[2] != 'x' || start >= limit ||
	    (path[0] != '/' && strcmp(path, "[vdso]")))
		return 0;
	if (s->nmaps && start < s->maps[s->nmaps - 1].limit)
		return 0; /* not in address order: never seen */
	return add_mapping(s, start, limit, offset, path);
}

static int read_maps(struct prof_symbolizer *s)
{
	FILE *fp = fopen("/proc/self/maps", "re");
	size_t cap = 0;
	char *line = NULL;
	int err = 0;

	if (!fp)
		return -errno;
	while (!err && getline(&line, &cap, fp) > 0)
		err = parse_line(s, line);
	if (!err && ferror(fp))
		err = -EIO;
	free(line);
	fclose(fp);
	return err;
}

struct prof_symbolizer *prof_symbolizer_new(void)
{
	struct prof_symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	err = read_maps(s);
	if (err) {
		prof_symbolizer_free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

static int cmp_start(const void *a, const void *b)
{
	const struct prof_map_spec *x = *(const struct prof_map_spec *const *)a;
	const struct prof_map_spec *y = *(const struct prof_map_spec *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The mappings of @maps that stay: a later one replaces every earlier one
 * it overlaps.  Return: how many, their pointers in @keep, sorted.
 */
static size_t latest_maps(const struct prof_map_spec *maps, size_t n,
			  const struct prof_map_spec **keep)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j = 0;

		if (maps[i].start >= maps[i].limit || !maps[i].path)
			continue;
		for (size_t t = 0; t < k; t++)
			if (keep[t]->limit <= maps[i].start ||
			    keep[t]->start >= maps[i].limit)
				keep[j++] = keep[t];
		k = j;
		keep[k++] = &maps[i];
	}
	qsort(keep, k, sizeof(*keep), cmp_start);
	return k;
}

struct prof_symbolizer *
prof_symbolizer_new_maps(const struct prof_map_spec *maps, size_t n)
{
	struct prof_symbolizer *s = calloc(1, sizeof(*s));
	const struct prof_map_spec **keep = calloc(n + 1, sizeof(*keep));
	size_t k;
	int err = 0;

	if (!s || !keep) {
		free(keep);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->foreign = true;
	k = latest_maps(maps, n, keep);
	for (size_t i = 0; !err && i < k; i++) {
		char *path = strdup(keep[i]->path);

		err = path ? add_mapping(s, keep[i]->start, keep[i]->limit,
					 keep[i]->offset, path)
			   : -ENOMEM;
		free(path);
	}
	free(keep);
	if (err) {
		prof_symbolizer_free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void prof_symbolizer_free(struct prof_symbolizer *s)
{
	struct elf_file *f, *fn;
	struct name_node *n, *nn;

	if (!s)
		return;
	for (f = s->files; f; f = fn) {
		fn = f->next;
		elf_free(f);
	}
	for (n = s->names; n; n = nn) {
		nn = n->next;
		free(n);
	}
	free(s->maps);
	free(s->ext);
	free(s);
}
