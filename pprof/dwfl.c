// SPDX-License-Identifier: MIT
/*
 * pprof/dwfl.c - a mapped file as elfutils' libdwfl reads it (dwarf.h):
 * opened once, its symbol table tabled by address; the source lines and
 * inlined frames of its DWARF are dwarf.c's.
 *
 * Why libdwfl, loaded with dlopen().  Symbol tables (.symtab, .dynsym,
 * those of separate debug files found by build-id or .gnu_debuglink,
 * MiniDebugInfo) and DWARF (line programs, abbreviations,
 * inlined-subroutine trees, split, dwz'd and compressed debug files) are
 * what libdwfl reads, and it is the well-kept reader that perf and
 * systemd use: nothing of it is written again here.  It is not linked
 * into libprofring-prof.so: that library is preloaded into every
 * profiled program, and libdw would bring libelf, zlib, liblzma, libbz2
 * and libzstd into each at start-up; here they come only when a profile
 * is symbolized (at the end, or at a served request).  A machine
 * without libdw.so.1 (or a process with PROFRING_PROF_NO_LIBDW set,
 * dwarf.h) gets its names from the files' own symbol tables, read by
 * elfsym.c, and no source lines (symbolize.c says so); the profile keeps
 * each mapping's path and build-id, from which pprof can name the code
 * itself.
 *
 * Files.  Each (path, build-id, debug directory) gets one Dwfl holding one
 * module, the file reported at base 0 with its p_vaddr added (so the
 * module's addresses are the file's own p_vaddr numbering, for a prelinked
 * library, p_vaddr not 0, too).  Its debug information: the file itself,
 * else DEBUG_DIR/.build-id/xx/yyyy.debug (Debian's -dbg and -dbgsym
 * packages), else its .gnu_debuglink beside it, in .debug beside it or
 * under DEBUG_DIR, a file with its build-id (find_debuginfo()); a dwz file
 * its DWARF names, by build-id or path (set_alt()).  The [vdso], in memory
 * only, is given to libdwfl as a copy in a memfd.  Files are kept for the
 * life of the process (a profile served every minute must not read
 * libpython's DWARF every minute), at most MAX_FILES of them; past that,
 * further files get no names (a bound on memory, not a loss of samples).
 * A kept file holds no file descriptor: once libdwfl has found and opened
 * its files, libelf is made to hold them in memory (mapped) and their
 * descriptors are closed (let_go_of_files(), open_alt()), so a profiled
 * program that serves profiles does not see its descriptors taken, one or
 * two per library, for good.  Nothing is opened in a blocking way: a FIFO
 * is never opened (safe_to_search(), open_alt()).
 *
 * Locking.  One mutex (pprof_dwfl_lock) around everything, here and in
 * dwarf.c: libdw's objects are not meant for concurrent use, and
 * symbolizing runs in normal threads only (the server's, the
 * collector's, the launcher's), never in a signal handler.
 */
#include "pprof/dwarf.h"

#ifdef PROFRING_HAVE_LIBDW
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pprof/dwfl_impl.h"
#include "pprof/elfsym.h"

#define LIBDW "libdw.so.1"
#define MAX_FILES 1024

struct pprof_dw_funcs pprof_dw;
pthread_mutex_t pprof_dwfl_lock = PTHREAD_MUTEX_INITIALIZER;

/* Why libdw is not loaded, once dw_load() failed (under the lock). */
static char dw_why[256];

/* libdw at @h lacks the function @name: unloaded, said; false. */
static bool dw_lacks(void *h, const char *name)
{
	snprintf(dw_why, sizeof(dw_why), "%s lacks %s", LIBDW, name);
	dlclose(h);
	return false;
}

/*
 * Load libdw once; false, with the reason in dw_why, if it (or one of
 * its functions) is missing, or the test and diagnostic knob
 * PPROF_ENV_NO_LIBDW says to act as if it were.
 */
static bool dw_load(void)
{
	const char *off = getenv(PPROF_ENV_NO_LIBDW), *err;
	void *h;

	if (pprof_dw.tried)
		return pprof_dw.ok;
	pprof_dw.tried = true;
	if (off && *off && strcmp(off, "0")) {
		snprintf(dw_why, sizeof(dw_why), "%s=%.32s", PPROF_ENV_NO_LIBDW,
			 off);
		return false;
	}
	h = dlopen(LIBDW, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		err = dlerror();
		snprintf(dw_why, sizeof(dw_why), "%s",
			 err ? err : LIBDW ": cannot be loaded");
		return false;
	}
	DW_FUNCS(DW_RESOLVE)
	pprof_dw.ok = true;
	return true;
}

bool pprof_dwarf_loaded(const char **why)
{
	bool ok;

	pthread_mutex_lock(&pprof_dwfl_lock);
	ok = dw_load();
	pthread_mutex_unlock(&pprof_dwfl_lock);
	*why = ok ? NULL : dw_why; /* set once, under the lock, before */
	return ok;
}

static struct {
	struct pprof_dwarf *files;
	size_t nfiles;
	struct pprof_dwarf *opening; /* the file open_dwfl() is opening */
} cache;

/* @path is a regular file, or nothing: open() would block on a FIFO. */
static bool not_special(const char *path)
{
	struct stat st;

	return stat(path, &st) || S_ISREG(st.st_mode);
}

/*
 * The @i-th place (0 to 2) where @file_name's debug link @link may be:
 * beside it, in .debug beside it, under the debug directory at its
 * directory's path (gdb's and libdwfl's order).  False past the last.
 */
static bool link_place(const struct pprof_dwarf *d, const char *file_name,
		       const char *link, int i, char *p, size_t len)
{
	const char *slash = file_name ? strrchr(file_name, '/') : NULL;
	int dir = slash ? (int)(slash - file_name) : 0;

	int n;

	if (!link || !*link || strchr(link, '/') || !slash || i > 2)
		return false;
	if (i == 0)
		n = snprintf(p, len, "%.*s/%s", dir, file_name, link);
	else if (i == 1)
		n = snprintf(p, len, "%.*s/.debug/%s", dir, file_name, link);
	else
		n = snprintf(p, len, "%s%.*s/%s", d->debug_dir, dir, file_name,
			     link);
	if (n < 0 || (size_t)n >= len)
		*p = '\0'; /* too long: no such place (stat() fails) */
	return true;
}

/* The build-id place of @hex under @dir, into @p; false if too long. */
static bool build_id_place(const char *dir, const char *hex, char *p,
			   size_t len)
{
	int n = snprintf(p, len, "%s/.build-id/%.2s/%s.debug", dir, hex,
			 hex + 2);

	return n > 0 && (size_t)n < len;
}

/*
 * The places searched for @d's debug file: none may be a FIFO or a
 * device (libdwfl opens the build-id one without O_NONBLOCK).
 */
static bool safe_to_search(struct pprof_dwarf *d, const char *file_name,
			   const char *link)
{
	char p[PATH_MAX];

	if (strlen(d->build_id) > 2 &&
	    (!build_id_place(d->debug_dir, d->build_id, p, sizeof(p)) ||
	     !not_special(p)))
		return false;
	for (int i = 0; link_place(d, file_name, link, i, p, sizeof(p)); i++)
		if (!not_special(p))
			return false;
	return true;
}

/*
 * @d's debug file by its .gnu_debuglink @link: the first place
 * (link_place()) holding an ELF file, not @file_name itself, with @d's
 * build-id (a file without one has no debug file by link here).  Return:
 * its descriptor, *@found its path (malloc'd), or -1.
 */
static int find_by_link(struct pprof_dwarf *d, const char *file_name,
			const char *link, char **found)
{
	struct stat self, st;
	char p[PATH_MAX];

	if (strlen(d->build_id) <= 2 || stat(file_name, &self))
		return -1;
	for (int i = 0; link_place(d, file_name, link, i, p, sizeof(p)); i++) {
		struct pprof_elf f = { .path = p };
		bool same;
		int fd;

		if (stat(p, &st) || !S_ISREG(st.st_mode) ||
		    (st.st_dev == self.st_dev && st.st_ino == self.st_ino) ||
		    !pprof_elf_open(&f, 0, 0, 0))
			continue;
		same = !strcmp(f.build_id, d->build_id);
		pprof_elf_close(&f);
		if (!same)
			continue;
		fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		*found = fd >= 0 ? strdup(p) : NULL;
		if (fd >= 0 && !*found) {
			close(fd);
			fd = -1;
		}
		return fd;
	}
	return -1;
}

/* Whether the ELF file at @path has the build-id @hex. */
static bool has_build_id(const char *path, const char *hex)
{
	struct pprof_elf f = { .path = (char *)path };
	bool same;

	if (!path || !pprof_elf_open(&f, 0, 0, 0))
		return false;
	same = !strcmp(f.build_id, hex);
	pprof_elf_close(&f);
	return same;
}

/* Refuse a file libdwfl was handed: close it, forget its name; -1. */
static int refuse(int fd, char **name)
{
	if (fd >= 0)
		close(fd);
	free(*name);
	*name = NULL;
	return -1;
}

/*
 * Where libdwfl is told to look for debug information: by build-id under
 * the debug directory (dwfl_build_id_find_debuginfo()), else by debug
 * link (find_by_link()), and only a file with @d's own build-id: a dwz
 * file (.gnu_debugaltlink), which libdwfl asks for here too, is
 * open_alt()'s.  Not dwfl_standard_find_debuginfo(): past those two it
 * asks debuginfod, and libdw 0.188 then loads libdebuginfod and starts
 * libcurl (curl_global_init(), libssh2's and the TLS library's start-up)
 * in the process, whether DEBUGINFOD_URLS is set or not: in node at exit
 * that crashed in OpenSSL's torn-down locks, and a profiler must not
 * reach for the network.  The places are checked first
 * (safe_to_search()); each descriptor handed over is remembered with its
 * file's identity (under pprof_dwfl_lock) for let_go_of_files(), which
 * closes only those still open on that file (libdwfl closes some itself).
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct pprof_dwarf *d = cache.opening;
	struct stat st;
	int fd;

	if (!d || !safe_to_search(d, file_name, debuglink_file))
		return -1;
	fd = pprof_dw.dwfl_build_id_find_debuginfo(
		mod, userdata, modname, base, file_name, debuglink_file,
		debuglink_crc, debuginfo_file_name);
	if (fd >= 0 && !has_build_id(*debuginfo_file_name, d->build_id))
		fd = refuse(fd, debuginfo_file_name); /* a dwz file's */
	if (fd < 0) {
		refuse(-1, debuginfo_file_name);
		fd = find_by_link(d, file_name, debuglink_file,
				  debuginfo_file_name);
	}
	if (fd < 0)
		return -1;
	if (d->nfds == MAX_FDS || fstat(fd, &st))
		return refuse(fd, debuginfo_file_name);
	d->fds[d->nfds].fd = fd;
	d->fds[d->nfds].dev = st.st_dev;
	d->fds[d->nfds].ino = st.st_ino;
	d->nfds++;
	if (!d->debug_path && *debuginfo_file_name)
		d->debug_path = strdup(*debuginfo_file_name);
	return fd;
}

/*
 * Make libelf hold all of an ELF file in memory (elf_rawfile(): a file
 * libelf mapped, or one in memory, already is; else it is read now) and
 * stop using its descriptor (ELF_C_FDDONE; refused, harmlessly, when it
 * has none).  False if the file could not be read.
 */
static bool elf_fd_done(Elf *e)
{
	size_t n;

	if (!e)
		return true;
	if (!pprof_dw.elf_rawfile(e, &n))
		return false;
	pprof_dw.elf_cntl(e, ELF_C_FDDONE);
	return true;
}

/*
 * Close the descriptors of @d's files: the file itself (@fd) and its debug
 * file (a dwz file's is open_alt()'s), once libelf holds what it needs of
 * each (mapped or read).  A cached file must not hold descriptors: it
 * lives as long as the process, and in a profiled program (an in-process
 * session's server) a descriptor per library would change what the program
 * sees. The Dwfl is never ended after this (it would close them again).
 * False, with nothing closed, if libelf refused for one of them.
 */
static bool let_go_of_files(struct pprof_dwarf *d, int fd)
{
	Dwarf_Addr bias;
	GElf_Sym sym;
	GElf_Word shndx;
	Elf *sym_elf = NULL;
	Dwarf *dbg = d->has_dwarf ? pprof_dw.dwfl_module_getdwarf(d->mod, &bias)
				  : NULL;

	if (pprof_dw.dwfl_module_getsymtab(d->mod) > 1)
		pprof_dw.dwfl_module_getsym_info(d->mod, 1, &sym, &bias, &shndx,
						 &sym_elf, &bias);
	if (!elf_fd_done(pprof_dw.dwfl_module_getelf(d->mod, &bias)) ||
	    !elf_fd_done(sym_elf) ||
	    !elf_fd_done(dbg ? pprof_dw.dwarf_getelf(dbg) : NULL))
		return false;
	close(fd);
	for (unsigned int i = 0; i < d->nfds; i++) {
		struct stat st;

		if (!fstat(d->fds[i].fd, &st) && st.st_dev == d->fds[i].dev &&
		    st.st_ino == d->fds[i].ino)
			close(d->fds[i].fd);
	}
	d->nfds = 0;
	return true;
}

/*
 * A descriptor for @d: its path opened, or for a file in memory (@image),
 * a memfd holding a copy of it.
 */
static int open_file(struct pprof_dwarf *d, const void *image, size_t size)
{
	int fd;

	if (!image)
		return open(d->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	fd = memfd_create("profring-elf", MFD_CLOEXEC);
	if (fd >= 0 && write(fd, image, size) != (ssize_t)size) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * The dwz file at @p, if it is a regular ELF file with the build-id @hex
 * and DWARF: opened without blocking, made @dbg's alternate DWARF
 * (dwarf_setalt()), held in memory, its descriptor closed.  Kept for the
 * life of the process, as the file it serves.
 */
static bool open_alt(Dwarf *dbg, const char *p, const char *hex)
{
	struct stat st;
	Dwarf *alt;
	Elf *elf;
	int fd;

	if (!*p || stat(p, &st) || !S_ISREG(st.st_mode) ||
	    !has_build_id(p, hex))
		return false;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	elf = pprof_dw.elf_begin(fd, ELF_C_READ_MMAP, NULL);
	alt = elf ? pprof_dw.dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	if (!alt) {
		if (elf)
			pprof_dw.elf_end(elf);
		close(fd);
		return false;
	}
	if (!elf_fd_done(elf))
		return false; /* libelf still reads through fd: both kept */
	close(fd);
	pprof_dw.dwarf_setalt(dbg, alt);
	return true;
}

/*
 * @d's DWARF (@dbg) may name a dwz file (.gnu_debugaltlink: a path and
 * its build-id) holding what its units share.  libdwfl asks
 * find_debuginfo() for it, which declines; libdw would then look for it
 * itself at the first DIE that needs it, with a blocking open() (a FIFO
 * hangs it) and a descriptor kept for good.  So it is found here: under
 * the debug directory by its build-id, at its path if absolute, or
 * beside the debug file if relative.  False if it is named and not found:
 * the file is then read for names only.
 */
static bool set_alt(struct pprof_dwarf *d, Dwarf *dbg)
{
	const char *name, *dir;
	const void *id;
	char hex[2 * 64 + 1], p[PATH_MAX];
	ssize_t n = pprof_dw.dwelf_dwarf_gnu_debugaltlink(dbg, &name, &id);
	int len;

	if (n == 0)
		return true; /* none */
	if (n < 0 || n > 64)
		return false;
	for (ssize_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", ((const uint8_t *)id)[i]);
	if (build_id_place(d->debug_dir, hex, p, sizeof(p)) &&
	    open_alt(dbg, p, hex))
		return true;
	if (name[0] == '/')
		return open_alt(dbg, name, hex);
	dir = d->debug_path ? d->debug_path : d->path;
	len = (int)(strrchr(dir, '/') ? strrchr(dir, '/') - dir : 0);
	n = snprintf(p, sizeof(p), "%.*s/%s", len, dir, name);
	return n > 0 && (size_t)n < sizeof(p) && open_alt(dbg, p, hex);
}

/*
 * Open @d's Dwfl; false when the file has no symbols and no DWARF.
 * Without @want_dwarf its DWARF is not read (dwarf.h says when).
 */
static bool open_dwfl(struct pprof_dwarf *d, const char *debug_dir,
		      const void *image, size_t size, bool want_dwarf)
{
	Dwarf_Addr bias;
	Dwarf *dbg;
	int fd;

	if (asprintf(&d->debuginfo_path, ":.debug:%s", debug_dir) < 0) {
		d->debuginfo_path = NULL;
		return false;
	}
	d->cb.find_debuginfo = find_debuginfo;
	d->cb.section_address = pprof_dw.dwfl_offline_section_address;
	d->cb.debuginfo_path = &d->debuginfo_path;
	fd = open_file(d, image, size);
	if (fd < 0)
		return false;
	d->dwfl = pprof_dw.dwfl_begin(&d->cb);
	if (!d->dwfl)
		goto close_fd;
	cache.opening = d;
	pprof_dw.dwfl_report_begin(d->dwfl);
	d->mod = pprof_dw.dwfl_report_elf(d->dwfl, d->path, d->path, fd, 0,
					  true);
	pprof_dw.dwfl_report_end(d->dwfl, NULL, NULL);
	if (!d->mod)
		goto end; /* fd is still ours */
	dbg = want_dwarf ? pprof_dw.dwfl_module_getdwarf(d->mod, &bias) : NULL;
	d->has_dwarf = dbg && set_alt(d, dbg);
	if (!d->has_dwarf && pprof_dw.dwfl_module_getsymtab(d->mod) <= 1)
		goto end_owned;
	if (!let_go_of_files(d, fd))
		goto end_owned;
	cache.opening = NULL;
	return true;
end_owned:
	fd = -1; /* the module's now: dwfl_end() closes it */
end:
	cache.opening = NULL;
	pprof_dw.dwfl_end(d->dwfl);
	d->dwfl = NULL;
	d->has_dwarf = false;
close_fd:
	if (fd >= 0)
		close(fd);
	return false;
}

/* A new entry of the cache for @path, @build_id, @debug_dir; NULL: none. */
static struct pprof_dwarf *new_file(const char *path, const char *build_id,
				    const char *debug_dir)
{
	struct pprof_dwarf *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->path = strdup(path);
	d->build_id = strdup(build_id);
	d->debug_dir = strdup(debug_dir);
	if (!d->path || !d->build_id || !d->debug_dir) {
		free(d->path);
		free(d->build_id);
		free(d->debug_dir);
		free(d);
		return NULL;
	}
	keyed_table_init(&d->addrs, sizeof(struct addr_entry));
	keyed_table_init(&d->units, sizeof(struct cu_funcs));
	return d;
}

struct pprof_dwarf *pprof_dwarf_get(const char *path, const char *build_id,
				    const char *debug_dir, const void *image,
				    size_t size, bool want_dwarf)
{
	struct pprof_dwarf *d;

	if (!debug_dir)
		debug_dir = "/usr/lib/debug";
	pthread_mutex_lock(&pprof_dwfl_lock);
	for (d = cache.files; d; d = d->next)
		if (!strcmp(d->path, path) && !strcmp(d->build_id, build_id) &&
		    !strcmp(d->debug_dir, debug_dir) &&
		    d->want_dwarf == want_dwarf)
			goto out;
	if (cache.nfiles >= MAX_FILES || !dw_load())
		goto out; /* d is NULL */
	d = new_file(path, build_id, debug_dir);
	if (!d)
		goto out;
	/* Kept without symbols too: the file is not read again. */
	d->want_dwarf = want_dwarf;
	open_dwfl(d, debug_dir, image, size, want_dwarf);
	d->next = cache.files;
	cache.files = d;
	cache.nfiles++;
out:
	pthread_mutex_unlock(&pprof_dwfl_lock);
	return d && d->dwfl ? d : NULL;
}

/*
 * The functions of @d's symbol table, as libdwfl reads it (its .symtab,
 * else its debug file's, else .dynsym; MiniDebugInfo's too), tabled once
 * by address: libdwfl's own look-up (dwfl_module_addrinfo()) walks the
 * whole table for every address, 0.6 ms an address in libc's.  Defined,
 * named STT_FUNC and STT_GNU_IFUNC symbols; one per address
 * (pprof_syms_sort(): sized before size 0, global before weak before
 * local, then by name).  Without memory, what was tabled so far.
 */
static void table_syms(struct pprof_dwarf *d)
{
	int n = pprof_dw.dwfl_module_getsymtab(d->mod);
	size_t cap = 0;

	d->syms_done = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		struct pprof_sym *e;
		const char *name = pprof_dw.dwfl_module_getsym_info(
			d->mod, i, &sym, &addr, &shndx, NULL, NULL);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
			continue;
		e = array_grow(d->syms, &cap, d->nsyms + 1, sizeof(*e));
		if (!e)
			break;
		d->syms = e;
		d->syms[d->nsyms++] =
			(struct pprof_sym){ addr, sym.st_size, name,
					    pprof_sym_rank(sym.st_info) };
	}
	d->nsyms = pprof_syms_sort(d->syms, d->nsyms);
}

const char *pprof_dwarf_symbol(struct pprof_dwarf *d, uint64_t vaddr)
{
	const char *name;

	pthread_mutex_lock(&pprof_dwfl_lock);
	if (!d->syms_done)
		table_syms(d);
	name = pprof_syms_find(d->syms, d->nsyms, vaddr);
	pthread_mutex_unlock(&pprof_dwfl_lock);
	return name;
}

#else /* !PROFRING_HAVE_LIBDW: no libdw (symbolize.c reads the tables) */

bool pprof_dwarf_loaded(const char **why)
{
	*why = "built without elfutils' headers";
	return false;
}

struct pprof_dwarf *pprof_dwarf_get(const char *path, const char *build_id,
				    const char *debug_dir, const void *image,
				    size_t size, bool want_dwarf)
{
	(void)want_dwarf;
	(void)path;
	(void)build_id;
	(void)debug_dir;
	(void)image;
	(void)size;
	return NULL;
}

const char *pprof_dwarf_symbol(struct pprof_dwarf *d, uint64_t vaddr)
{
	(void)d;
	(void)vaddr;
	return NULL;
}

#endif
