// SPDX-License-Identifier: MIT
/*
 * symbolize.c - which executable mapping holds an address, and the name
 * of the function there, from the symbol table of the ELF file mapped;
 * with prof_symbolize_frames(), also its source line and the functions
 * inlined there, from the file's DWARF, the outermost frame keeping the
 * symbol table's name.  libdwfl reads a file's symbols and DWARF
 * (dwfl.c, dwarf.c); elfsym.c reads its build-id and the load bias of
 * each mapping of it.
 *
 * Two kinds of symbolizer.  prof_symbolizer_new() keeps the executable
 * mappings (those of files and the [vdso]) of /proc/self/maps, in address
 * order: this process's own code, and dladdr() is asked about an address
 * no ELF symbol names.  prof_symbolizer_new_maps() keeps the mappings
 * another process reported (the launcher's case: that process may be gone
 * and its libraries unloaded); dladdr() is never asked (it would look in
 * this process) and a [vdso] is read from ours (elfsym.c).
 *
 * A reported list is in the order things happened, so mappings in it may
 * overlap: a library dlclosed, another dlopened at its addresses.  The
 * LAST one wins: each mapping removes every earlier one it overlaps, even
 * in part, whatever becomes of it later (latest_maps()).  The survivors
 * are disjoint and sorted, as /proc/self/maps is.
 *
 * A mapped file is opened at the first lookup in one of its mappings (or
 * prof_symbolizer_mappings(), for the build-id), by its path; files are
 * shared by path between mappings.  A file that cannot be read, is not
 * ELF, or was deleted since it was mapped has no ELF symbols: only
 * dladdr() can name its addresses, in a symbolizer of this process; else
 * the writers name them "file+0xoffset".  A file replaced at its path
 * since it was mapped (a rebuild during the run) is read as it is now:
 * a report carries no build-id to tell.
 *
 * DWARF.  A symbolizer of another process's mappings reads every file's
 * DWARF, its own or a separate debug file's.  One of this process's own
 * (an in-process session: the profiled program symbolizes) reads only
 * the DWARF a mapped file holds itself (pprof_elf_has_dwarf(): the
 * program's own -g build), and takes only names from separate debug
 * files: Debian's -dbg and -dbgsym files are compressed, and libdw
 * inflates a file's whole DWARF at once, in the program, as it ends
 * (libc6-dbg's libc: 50-70 ms, against 7-9 ms without it, for a profile
 * of a dozen stacks).  `profring-prof record` symbolizes in the launcher,
 * with every line.
 *
 * No libdw.  Where libdw.so.1 cannot be loaded (a slim container; the
 * knob PROFRING_PROF_NO_LIBDW, dwarf.h), a file's functions are named
 * from its own .symtab, else its .dynsym, read by elfsym.c
 * (pprof_elf_symbol()): an unstripped program keeps its names, and has
 * no source lines or inlined frames.  The profile's comment
 * (prof_symbolizer_perf_map_comment()) says so and why, and, in a
 * process that asked for it (prof_symbolizer_warn_to(): the launcher),
 * so does one line, once per process.
 *
 * JIT code lies in no file.  A symbolizer may have a perf map
 * (perfmap.h: /tmp/perf-PID.map, which a JIT such as node
 * --perf-basic-prof writes): prof_symbolizer_new() looks for its own
 * process's (not one last written before the process began: an earlier
 * process of the same pid left it), prof_symbolizer_set_perf_map()
 * names another's.  It is read once, at the first lookup or
 * prof_symbolizer_mappings(), and asked about
 * an address that no ELF symbol names, after the ELF files and before
 * dladdr().  If it names code outside the mappings of files, the
 * symbolizer has one more mapping, after theirs (its id is theirs + 1):
 * "[perf-PID.map]" (the map's file name in brackets: no file of code, and
 * pprof does not look for one), spanning that code (the JIT's anonymous
 * memory; V8 also lists its builtins, which lie in the node binary).  An
 * address the perf map names outside any mapping of a file belongs to
 * it; one inside a file's mapping (a stripped file) keeps that mapping.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pprof/dwarf.h"
#include "pprof/elfsym.h"
#include "pprof/perfmap.h"
#include "pprof/table.h"
#include "pprof/symbolize.h"

#define DELETED_SUFFIX " (deleted)"
#define MAX_FRAMES 32 /* at one address: inlining deeper is cut */

/* What the symbolizer keeps beside each struct prof_mapping. */
struct map_ext {
	struct pprof_elf *file;
	bool bias_done;
	bool has_bias;
	uint64_t bias;
	bool dwarf_done;
	struct pprof_dwarf *dwarf; /* NULL: none */
};

struct name_node {
	struct name_node *next;
	char name[];
};

/* The perf map of a symbolizer (see the top of the file). */
struct jit_map {
	char *path; /* NULL: none */
	char *label; /* "[<file name of path>]" */
	struct prof_perfmap *map;
	struct prof_perfmap_stats stats;
	int err; /* what reading it said */
	bool done; /* read (or tried) */
	bool mapped; /* names something: maps[nmaps] is its mapping */
};

struct prof_symbolizer {
	struct prof_mapping *maps; /* the files', then the perf map's */
	struct map_ext *ext;
	size_t nmaps, cap; /* nmaps: mappings of files */
	struct pprof_elf *files;
	struct name_node *names; /* copies of dladdr() names */
	bool foreign; /* another process's mappings: no dladdr() */
	struct jit_map jit;
};

/* Where separate debug files are looked for (prof_symbolizer_set_debug_dir). */
static const char *debug_dir = "/usr/lib/debug";

void prof_symbolizer_set_debug_dir(const char *dir)
{
	debug_dir = dir ? dir : "/usr/lib/debug";
}

/* Where the line on the symbol tables goes (prof_symbolizer_warn_to()). */
static FILE *_Atomic warn_stream;
static atomic_bool warned;

void prof_symbolizer_warn_to(FILE *f)
{
	/* Release: a stream set up before is seen set up. */
	atomic_store_explicit(&warn_stream, f, memory_order_release);
}

/* The line, once per process, where it was asked for. */
static void warn_tables(const char *why)
{
	/* Acquire: pairs with prof_symbolizer_warn_to(). */
	FILE *f = atomic_load_explicit(&warn_stream, memory_order_acquire);

	/* Relaxed: only which caller says it is decided here. */
	if (!f || atomic_exchange_explicit(&warned, true, memory_order_relaxed))
		return;
	fprintf(f,
		"profring-prof: function names from the ELF symbol tables "
		"(.symtab, .dynsym), no source lines or inlined frames: "
		"libdw not loaded (%s)\n",
		why);
	fflush(f);
}

/*
 * The file mapping @i maps, opened, with the mapping's load bias, at the
 * first use; false if it cannot be read or no program header says where
 * the mapping lies in it.
 */
static bool placed(struct prof_symbolizer *s, size_t i)
{
	struct map_ext *e = &s->ext[i];
	struct prof_mapping *m = &s->maps[i];

	if (!pprof_elf_open(e->file, m->start, m->limit, m->offset))
		return false;
	if (!e->bias_done) {
		e->bias_done = true;
		e->has_bias =
			pprof_elf_bias(e->file, m->start, m->offset, &e->bias);
	}
	return e->has_bias;
}

/*
 * The file mapping @i maps, as libdwfl reads it (its symbols and DWARF),
 * opened at the first use; NULL if it has neither, cannot be placed
 * (placed()), or libdw cannot be loaded.
 */
static struct pprof_dwarf *file_of(struct prof_symbolizer *s, size_t i)
{
	struct map_ext *e = &s->ext[i];
	struct prof_mapping *m = &s->maps[i];
	struct pprof_elf *f = e->file;

	if (!placed(s, i))
		return NULL;
	if (!e->dwarf_done) {
		e->dwarf_done = true;
		/* Another process's: all its DWARF; ours: see the top. */
		e->dwarf =
			pprof_dwarf_get(f->path, f->build_id, debug_dir,
					f->in_memory ? f->base : NULL,
					f->in_memory ? f->size : 0,
					s->foreign || pprof_elf_has_dwarf(f));
	}
	if (e->dwarf)
		m->has_functions = 1;
	return e->dwarf;
}

/*
 * The symbol table's name for @addr in mapping @i: libdwfl's, or without
 * libdw, the file's own table's (see the top of the file).
 */
static const char *lookup_elf(struct prof_symbolizer *s, size_t i,
			      uintptr_t addr)
{
	struct pprof_dwarf *d = file_of(s, i);
	uint64_t vaddr = (uint64_t)addr - s->ext[i].bias;
	const char *why;

	if (d)
		return pprof_dwarf_symbol(d, vaddr);
	if (!placed(s, i) || pprof_dwarf_loaded(&why))
		return NULL;
	warn_tables(why);
	return pprof_elf_symbol(s->ext[i].file, vaddr);
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
	size_t i =
		pprof_upper_bound(s->maps, s->nmaps, sizeof(*s->maps),
				  offsetof(struct prof_mapping, start), addr);

	if (!i || addr >= s->maps[i - 1].limit)
		return -1;
	return (long)(i - 1);
}

/* Make room for one more mapping. */
static int grow_maps(struct prof_symbolizer *s)
{
	size_t cap = s->cap ? 2 * s->cap : 64;
	void *p;

	if (s->nmaps < s->cap)
		return 0;
	p = realloc(s->maps, cap * sizeof(*s->maps));
	if (!p)
		return -ENOMEM;
	s->maps = p;
	p = realloc(s->ext, cap * sizeof(*s->ext));
	if (!p)
		return -ENOMEM;
	s->ext = p;
	s->cap = cap;
	return 0;
}

/*
 * Read the perf map, once; if it names code outside the files' mappings,
 * its mapping goes after theirs (not counted in nmaps: find_map() never
 * sees it), from the lowest start of such a range of the map to the
 * highest end (lookup_jit() widens it for a range that starts in a
 * file's mapping and ends outside).
 */
static void load_jit(struct prof_symbolizer *s)
{
	struct jit_map *j = &s->jit;
	uint64_t start = UINT64_MAX, limit = 0, a, b;
	size_t n;

	if (j->done || !j->path)
		return;
	j->done = true;
	j->err = prof_perfmap_read(j->path, &j->map, &j->stats);
	n = j->err ? 0 : prof_perfmap_range(j->map, &a, &b);
	for (size_t i = 0; i < n; i++) {
		prof_perfmap_range_at(j->map, i, &a, &b);
		if (find_map(s, a) >= 0)
			continue;
		start = a < start ? a : start;
		limit = b > limit ? b : limit;
	}
	if (start >= limit || grow_maps(s))
		return; /* lookup_jit() names code, with no mapping */
	s->maps[s->nmaps] =
		(struct prof_mapping){ .start = start,
				       .limit = limit,
				       .path = j->label,
				       .build_id = "",
				       .id = (unsigned int)s->nmaps + 1 };
	j->mapped = true;
}

/* The perf map's name for @addr; *@id set to its mapping's if @i < 0. */
static const char *lookup_jit(struct prof_symbolizer *s, long i, uintptr_t addr,
			      unsigned int *id)
{
	struct prof_mapping *m;
	const char *name;

	load_jit(s);
	name = prof_perfmap_lookup(s->jit.map, (uint64_t)addr);
	if (name && i < 0 && s->jit.mapped) {
		m = &s->maps[s->nmaps];
		m->has_functions = 1;
		m->start = addr < m->start ? addr : m->start;
		m->limit = addr >= m->limit ? addr + 1 : m->limit;
		*id = m->id;
	}
	return name;
}

const char *prof_symbolize(struct prof_symbolizer *s, uintptr_t addr,
			   unsigned int *mapping_id)
{
	long i = s ? find_map(s, addr) : -1;
	unsigned int id = i >= 0 ? s->maps[i].id : 0;
	const char *name = NULL;

	if (s && i >= 0)
		name = lookup_elf(s, (size_t)i, addr);
	if (s && !name)
		name = lookup_jit(s, i, addr, &id);
	if (s && !name && !s->foreign)
		name = lookup_dladdr(s, addr);
	if (name && i >= 0)
		s->maps[i].has_functions = 1;
	if (mapping_id)
		*mapping_id = id;
	return name;
}

/* The DWARF frames at @addr in mapping @i, or 0. */
static size_t dwarf_frames(struct prof_symbolizer *s, size_t i, uintptr_t addr,
			   struct prof_frame *out, size_t max)
{
	struct pprof_dwarf *d = file_of(s, i);

	return d ? pprof_dwarf_frames(d, (uint64_t)addr - s->ext[i].bias, out,
				      max)
		 : 0;
}

size_t prof_symbolize_frames(struct prof_symbolizer *s, uintptr_t addr,
			     struct prof_frame *out, size_t max,
			     unsigned int *mapping_id)
{
	const char *name = prof_symbolize(s, addr, mapping_id);
	long i = s ? find_map(s, addr) : -1;
	struct prof_frame f[MAX_FRAMES];
	size_t n = 0, k = 0;

	if (i >= 0)
		n = dwarf_frames(s, (size_t)i, addr, f, MAX_FRAMES);
	for (size_t j = 0; j < n; j++) /* an unnamed inlined frame: dropped */
		if (f[j].name || j == n - 1)
			f[k++] = f[j];
	n = k;
	if (n && name)
		f[n - 1].name = name; /* the symbol table's, as without DWARF */
	if (n && f[n - 1].name) {
		s->maps[i].has_lines = 1;
	} else if (name) {
		f[0] = (struct prof_frame){ .name = name };
		n = 1;
	} else {
		return 0;
	}
	n = n < max ? n : max; /* the innermost ones */
	memcpy(out, f, n * sizeof(*out));
	return n;
}

size_t prof_symbolizer_mappings(struct prof_symbolizer *s,
				const struct prof_mapping **out)
{
	if (!s) {
		*out = NULL;
		return 0;
	}
	for (size_t i = 0; i < s->nmaps; i++)
		pprof_elf_open(s->ext[i].file, s->maps[i].start,
			       s->maps[i].limit, s->maps[i].offset);
	load_jit(s);
	*out = s->maps;
	return s->nmaps + s->jit.mapped;
}

int prof_symbolizer_set_perf_map(struct prof_symbolizer *s, const char *path)
{
	struct jit_map *j = &s->jit;
	char *copy = NULL, *label = NULL;
	const char *base;

	if (s->jit.done)
		return -EBUSY;
	if (path) {
		base = strrchr(path, '/');
		base = base ? base + 1 : path;
		copy = strdup(path);
		label = malloc(strlen(base) + 3);
		if (!copy || !label) {
			free(copy);
			free(label);
			return -ENOMEM;
		}
		sprintf(label, "[%s]", base);
	}
	free(j->path);
	free(j->label);
	j->path = copy;
	j->label = label;
	return 0;
}

int prof_symbolizer_perf_map_stats(struct prof_symbolizer *s,
				   struct prof_perfmap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s || !s->jit.path)
		return -ENOENT;
	load_jit(s);
	*st = s->jit.stats;
	return s->jit.err;
}

/*
 * "symbolizer: ..." into @buf (@len > 0) when one of @syms has mappings
 * of files, which it names (or will: the writers symbolize after the
 * comments are made) from their own symbol tables, libdw not being
 * loaded; else "".  Return: the length written.
 */
static size_t tables_comment(struct prof_symbolizer *const *syms, size_t n,
			     char *buf, size_t len)
{
	const char *why;
	int k;

	*buf = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!syms[i] || !syms[i]->nmaps || pprof_dwarf_loaded(&why))
			continue;
		k = snprintf(buf, len,
			     "symbolizer: ELF symbol tables (.symtab, "
			     ".dynsym), no source lines or inlined frames: "
			     "libdw not loaded (%s)",
			     why);
		return k < 0 ? 0 : (size_t)k < len ? (size_t)k : len - 1;
	}
	return 0;
}

int prof_symbolizer_perf_map_comment(struct prof_symbolizer *const *syms,
				     size_t n, char *buf, size_t len)
{
	struct prof_perfmap_stats st, t = { 0 };
	uint64_t nread = 0;
	size_t at = len ? tables_comment(syms, n, buf, len) : 0;

	for (size_t i = 0; i < n; i++) {
		if (prof_symbolizer_perf_map_stats(syms[i], &st))
			continue;
		nread++;
		t.lines += st.lines;
		t.entries += st.entries;
		t.malformed += st.malformed;
		t.too_long += st.too_long;
		t.truncated += st.truncated;
		t.over_cap += st.over_cap;
		t.bytes_skipped += st.bytes_skipped;
	}
	if (!nread)
		return at > 0;
	snprintf(buf + at, len - at,
		 "%sperf maps %" PRIu64 ": lines %" PRIu64 ", kept %" PRIu64
		 ", malformed %" PRIu64 ", too long %" PRIu64
		 ", cut off %" PRIu64 ", past the cap %" PRIu64
		 ", bytes not read %" PRIu64,
		 at ? "; " : "", nread, t.lines, t.entries, t.malformed,
		 t.too_long, t.truncated, t.over_cap, t.bytes_skipped);
	return 1;
}

/* The file record for @path (shared between its mappings), or NULL. */
static struct pprof_elf *get_file(struct prof_symbolizer *s, const char *path,
				  bool deleted)
{
	bool vdso = !strcmp(path, "[vdso]");
	struct pprof_elf *f;

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
	struct pprof_elf *f;

	if (grow_maps(s))
		return -ENOMEM;
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

/*
 * This process's start, in seconds since the epoch: /proc/self/stat's
 * starttime (clock ticks after boot) plus /proc/stat's btime; 0 if
 * either cannot be read.
 */
static time_t process_start(void)
{
	char buf[1024], *p;
	unsigned long long ticks = 0, btime = 0;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *fp = fopen("/proc/self/stat", "re");
	int field = 2; /* the command, up to its last ")"; starttime is 22 */

	if (!fp)
		return 0;
	p = fgets(buf, sizeof(buf), fp) ? strrchr(buf, ')') : NULL;
	fclose(fp);
	while (p && field < 22 && (p = strchr(p + 1, ' ')))
		field++;
	if (!p || sscanf(p, " %llu", &ticks) != 1 || hz <= 0)
		return 0;
	fp = fopen("/proc/stat", "re");
	while (fp && fgets(buf, sizeof(buf), fp))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	if (fp)
		fclose(fp);
	return btime ? (time_t)(btime + ticks / (unsigned long long)hz) : 0;
}

/*
 * Whether the file at @path was last written before this process began:
 * a perf map an earlier process of the same pid left (JITs do not remove
 * theirs), naming code that is not ours.  A second of slack: btime is
 * rounded.  False when unsure.
 */
static bool left_by_another(const char *path)
{
	time_t start = process_start();
	struct stat st;

	return start && !stat(path, &st) && st.st_mtime + 1 < start;
}

struct prof_symbolizer *prof_symbolizer_new(void)
{
	struct prof_symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	err = read_maps(s);
	if (!err) {
		char path[64];

		snprintf(path, sizeof(path), PROF_PERFMAP_PATH_FMT,
			 (int)getpid());
		if (!left_by_another(path))
			err = prof_symbolizer_set_perf_map(s, path);
	}
	if (err) {
		prof_symbolizer_free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

/*
 * The mappings of @maps that stay (see the top of the file), in address
 * order, into @keep: each removes the run of earlier survivors it
 * overlaps, and takes its place.  The survivors stay sorted and disjoint
 * (so their limits are sorted too), and the run is found by two binary
 * searches.  Empty mappings and those without a path are left out.
 * Return: how many.
 */
static size_t latest_maps(const struct prof_map_spec *maps, size_t n,
			  const struct prof_map_spec **keep)
{
	size_t k = 0, lo, hi, mid, end;

	for (size_t i = 0; i < n; i++) {
		const struct prof_map_spec *m = &maps[i];

		if (m->start >= m->limit || !m->path)
			continue;
		/* lo: the first survivor that ends above m->start */
		for (lo = 0, hi = k; lo < hi;) {
			mid = lo + (hi - lo) / 2;
			if (keep[mid]->limit <= m->start)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* end: the first from lo that starts at or above m->limit */
		for (end = lo, hi = k; end < hi;) {
			mid = end + (hi - end) / 2;
			if (keep[mid]->start < m->limit)
				end = mid + 1;
			else
				hi = mid;
		}
		memmove(&keep[lo + 1], &keep[end], (k - end) * sizeof(*keep));
		keep[lo] = m;
		k = k - (end - lo) + 1;
	}
	return k;
}

struct prof_symbolizer *
prof_symbolizer_new_maps(const struct prof_map_spec *maps, size_t n)
{
	struct prof_symbolizer *s;
	const struct prof_map_spec **keep;
	size_t k;
	int err = 0;

	if (!maps && n) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	keep = calloc(n + 1, sizeof(*keep));
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
	struct pprof_elf *f, *fn;
	struct name_node *n, *nn;

	if (!s)
		return;
	for (f = s->files; f; f = fn) {
		fn = f->next;
		pprof_elf_free(f);
	}
	for (n = s->names; n; n = nn) {
		nn = n->next;
		free(n);
	}
	prof_perfmap_free(s->jit.map);
	free(s->jit.path);
	free(s->jit.label);
	free(s->maps);
	free(s->ext);
	free(s);
}
