// SPDX-License-Identifier: MIT
/*
 * elfsym.c - what the symbolizer (symbolize.c) reads itself in a mapped
 * ELF file: its build-id, the load bias of a mapping of it, and, when
 * libdw cannot be loaded, its symbol table.
 *
 * A file is opened and mmap'd read-only at its first use (pprof_elf_open:
 * the header is checked, the build-id read).  The [vdso] is read in place, in
 * memory; another process's [vdso] from ours (own_vdso()).  A file that
 * cannot be read, is not a 64-bit ELF of this byte order, or has been
 * deleted since it was mapped (whatever is at its path now is another
 * file) has no symbols.
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
 * (modulo 2^64).  The file's own addresses (a symbol's value, a DWARF
 * range) plus the bias are addresses in the process.  This holds for
 * PIE executables and shared libraries (p_vaddr near p_offset, bias the
 * load address) and for non-PIE executables (p_vaddr absolute, bias 0)
 * alike.
 *
 * Symbols and DWARF are libdwfl's to read (dwfl.c), given the path, the
 * build-id and the bias found here.  What stays here is what a profile
 * needs of a mapping even without libdw (its build-id, for pprof to find
 * the file again), what libdwfl has no call for (the bias of one mapping
 * of a file, and the [vdso]'s bytes), and, for a machine without
 * libdw.so.1, the file's own symbol table (pprof_elf_symbol()): its
 * .symtab, else its .dynsym, the functions tabled by address as dwfl.c
 * tables libdwfl's (pprof_syms_sort()), their names pointing into the
 * mapped file.  An unstripped program is named by function so; its
 * source lines, inlined frames and separate debug files need libdw.
 *
 * Every header, table and string is checked against the file size before
 * it is read, and read with memcpy (no alignment assumed), so a truncated
 * or hostile file gives no build-id or bias rather than a crash.  (A file
 * truncated on disk while we hold it mapped would still raise SIGBUS:
 * that is the price of mmap.)
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pprof/elfsym.h"
#include "pprof/table.h"

/* [@off, @off + @len) lies inside the file. */
static bool in_file(const struct pprof_elf *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

static bool elf_read(const struct pprof_elf *f, uint64_t off, void *dst,
		     size_t len)
{
	if (!in_file(f, off, len))
		return false;
	memcpy(dst, f->base + off, len);
	return true;
}

static bool elf_phdr(const struct pprof_elf *f, size_t i, Elf64_Phdr *ph)
{
	if (i >= f->eh.e_phnum || f->eh.e_phentsize != sizeof(*ph) ||
	    f->eh.e_phoff > f->size)
		return false;
	return elf_read(f, f->eh.e_phoff + i * sizeof(*ph), ph, sizeof(*ph));
}

/* Number of section headers (extended numbering: in section 0). */
static size_t elf_shnum(const struct pprof_elf *f)
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

static bool elf_shdr(const struct pprof_elf *f, size_t i, Elf64_Shdr *sh)
{
	if (i >= elf_shnum(f) || f->eh.e_shoff > f->size)
		return false;
	return elf_read(f, f->eh.e_shoff + i * sizeof(*sh), sh, sizeof(*sh));
}

static bool elf_header_ok(struct pprof_elf *f)
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

static void hex_build_id(struct pprof_elf *f, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		f->build_id[2 * i] = digits[p[i] >> 4];
		f->build_id[2 * i + 1] = digits[p[i] & 15];
	}
	f->build_id[2 * n] = '\0';
}

/* Look for NT_GNU_BUILD_ID among the notes at [@off, @off + @len). */
static bool notes_build_id(struct pprof_elf *f, uint64_t off, uint64_t len,
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
		    nh.n_descsz <= PPROF_BUILD_ID_MAX) {
			hex_build_id(f, p + pos + namesz, nh.n_descsz);
			return true;
		}
		if (descsz > len - pos - namesz)
			return false;
		pos += namesz + descsz;
	}
	return false;
}

static void elf_read_build_id(struct pprof_elf *f)
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

static int map_file(struct pprof_elf *f)
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

static void unmap_file(struct pprof_elf *f)
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
 * Stage 1: map the file, check its header, read its build-id.  The
 * mapping is read only for a file in memory (the [vdso]; another
 * process's is read from ours: own_vdso()).
 */
bool pprof_elf_open(struct pprof_elf *f, uint64_t start, uint64_t limit,
		    uint64_t offset)
{
	if (f->state != PPROF_ELF_NEW)
		return f->state == PPROF_ELF_OPEN;
	f->state = PPROF_ELF_BAD;
	if (f->deleted)
		return false;
	if (f->in_memory) {
		if (offset != 0 || start >= limit)
			return false;
		f->base = (const uint8_t *)(uintptr_t)start;
		f->size = (size_t)(limit - start);
		if (f->foreign_vdso && !own_vdso(&f->base, &f->size))
			return false;
	} else if (map_file(f)) {
		return false;
	}
	if (!elf_header_ok(f)) {
		unmap_file(f);
		return false;
	}
	f->state = PPROF_ELF_OPEN;
	elf_read_build_id(f);
	return true;
}

/* See elfsym.h.  The section names are read with bounds (e_shstrndx). */
bool pprof_elf_has_dwarf(const struct pprof_elf *f)
{
	static const char want[] = ".debug_info";
	Elf64_Shdr names, sh;
	size_t n = elf_shnum(f);

	if (f->state != PPROF_ELF_OPEN || f->eh.e_shstrndx == SHN_UNDEF ||
	    f->eh.e_shstrndx >= SHN_LORESERVE ||
	    !elf_shdr(f, f->eh.e_shstrndx, &names) || names.sh_offset > f->size)
		return false;
	for (size_t i = 1; i < n && elf_shdr(f, i, &sh); i++) {
		char name[sizeof(want)];

		if (sh.sh_type != SHT_NOBITS && sh.sh_size &&
		    sh.sh_name < names.sh_size &&
		    names.sh_size - sh.sh_name >= sizeof(want) &&
		    elf_read(f, names.sh_offset + sh.sh_name, name,
			     sizeof(want)) &&
		    !memcmp(name, want, sizeof(want)))
			return true;
	}
	return false;
}

void pprof_elf_close(struct pprof_elf *f)
{
	unmap_file(f);
	free(f->syms);
	f->syms = NULL;
	f->nsyms = 0;
	f->syms_done = false;
	f->state = PPROF_ELF_NEW;
}

void pprof_elf_free(struct pprof_elf *f)
{
	if (!f)
		return;
	pprof_elf_close(f);
	free(f->path);
	free(f);
}

/* See the top of the file. */
bool pprof_elf_bias(const struct pprof_elf *f, uint64_t start, uint64_t offset,
		    uint64_t *bias)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t mask = page > 0 ? ~((uint64_t)page - 1) : ~(uint64_t)4095;
	Elf64_Phdr ph, best = { 0 };
	bool found = false;

	if (f->state != PPROF_ELF_OPEN)
		return false;
	for (size_t i = 0; elf_phdr(f, i, &ph); i++) {
		if (ph.p_type != PT_LOAD || !ph.p_filesz ||
		    offset < (ph.p_offset & mask) ||
		    (offset >= ph.p_offset &&
		     offset - ph.p_offset >= ph.p_filesz))
			continue;
		if (!found || (!(best.p_flags & PF_X) && (ph.p_flags & PF_X)))
			best = ph;
		found = true;
	}
	if (found)
		*bias = start - (best.p_vaddr + (offset - best.p_offset));
	return found;
}

int pprof_sym_rank(unsigned char info)
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

/* By address; of one address, the one to keep first (pprof_syms_sort()). */
static int sym_cmp(const void *a, const void *b)
{
	const struct pprof_sym *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (!x->size != !y->size)
		return !x->size ? 1 : -1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

size_t pprof_syms_sort(struct pprof_sym *syms, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(syms, n, sizeof(*syms), sym_cmp);
	for (size_t i = 0; i < n; i++) /* the first of each address */
		if (!k || syms[i].lo != syms[k - 1].lo)
			syms[k++] = syms[i];
	return k;
}

const char *pprof_syms_find(const struct pprof_sym *syms, size_t n,
			    uint64_t vaddr)
{
	size_t i = pprof_upper_bound(syms, n, sizeof(*syms),
				     offsetof(struct pprof_sym, lo), vaddr);
	const struct pprof_sym *e = i ? &syms[i - 1] : NULL;

	/* Size 0: up to the next symbol, which lies above @vaddr. */
	return e && (!e->size || vaddr - e->lo < e->size) ? e->name : NULL;
}

/*
 * The first section of @type (SHT_SYMTAB, SHT_DYNSYM) into @sym, and the
 * string table it links to into @str, both inside the file, its entries
 * Elf64_Sym.  False if there is none so.
 */
static bool find_symtab(const struct pprof_elf *f, uint32_t type,
			Elf64_Shdr *sym, Elf64_Shdr *str)
{
	for (size_t i = 1; elf_shdr(f, i, sym); i++) {
		if (sym->sh_type != type)
			continue;
		return sym->sh_entsize == sizeof(Elf64_Sym) && sym->sh_link &&
		       elf_shdr(f, sym->sh_link, str) &&
		       str->sh_type == SHT_STRTAB &&
		       in_file(f, sym->sh_offset, sym->sh_size) &&
		       in_file(f, str->sh_offset, str->sh_size);
	}
	return false;
}

/* The NUL-terminated string at @off of @str, in the file; NULL if not. */
static const char *str_at(const struct pprof_elf *f, const Elf64_Shdr *str,
			  uint64_t off)
{
	const char *p = (const char *)f->base + str->sh_offset + off;

	if (off >= str->sh_size || !memchr(p, '\0', str->sh_size - off))
		return NULL;
	return p;
}

/*
 * The functions of @f's .symtab, else its .dynsym, tabled once by
 * address: defined, named STT_FUNC and STT_GNU_IFUNC symbols, one per
 * address (pprof_syms_sort()).  Without memory, what was tabled so far.
 */
static void table_syms(struct pprof_elf *f)
{
	Elf64_Shdr sh, str;
	size_t cap = 0;

	f->syms_done = true;
	if (!find_symtab(f, SHT_SYMTAB, &sh, &str) &&
	    !find_symtab(f, SHT_DYNSYM, &sh, &str))
		return;
	/* Entry 0 is the undefined symbol. */
	for (uint64_t off = sizeof(Elf64_Sym);
	     off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
		struct pprof_sym *e;
		const char *name;
		Elf64_Sym sym;

		memcpy(&sym, f->base + sh.sh_offset + off, sizeof(sym));
		if (sym.st_shndx == SHN_UNDEF ||
		    (ELF64_ST_TYPE(sym.st_info) != STT_FUNC &&
		     ELF64_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
			continue;
		name = str_at(f, &str, sym.st_name);
		if (!name || !*name)
			continue;
		e = array_grow(f->syms, &cap, f->nsyms + 1, sizeof(*e));
		if (!e)
			break;
		f->syms = e;
		f->syms[f->nsyms++] =
			(struct pprof_sym){ sym.st_value, sym.st_size, name,
					    pprof_sym_rank(sym.st_info) };
	}
	f->nsyms = pprof_syms_sort(f->syms, f->nsyms);
}

const char *pprof_elf_symbol(struct pprof_elf *f, uint64_t vaddr)
{
	if (f->state != PPROF_ELF_OPEN)
		return NULL;
	if (!f->syms_done)
		table_syms(f);
	return pprof_syms_find(f->syms, f->nsyms, vaddr);
}
