// SPDX-License-Identifier: MIT
/*
 * symbolize_bench.c - how long a profile of 10,000 distinct locations
 * takes to symbolize with source lines and inlined frames
 * (prof_symbolize_frames(): pprof/dwarf.c through libdw), beside binutils'
 * addr2line -i -f doing the same work on the same addresses.
 *
 *	[SYMBOLIZE_BENCH_FILE=FILE] symbolize_bench [--reps N]
 *
 * FILE (default: the C library this program runs with) is read from disk
 * as a profile's mapping of it would be, with its separate debug file
 * found by build-id (/usr/lib/debug; libc6-dbg for libc).  The addresses
 * are 10,000 points spread evenly over its executable segment.
 *
 * Cold: a fresh process (fork) symbolizes them all, as the first profile
 * of a run does (libdw loaded, the file's DWARF opened, every address
 * looked up); its anchor is addr2line, one process given all of them on
 * its standard input.  Warm: the same addresses again in this process
 * (the per-file cache of pprof/dwarf.c: a second profile of the same
 * code, as a server's next scrape).
 */
#include "bench/harness.h"
#include "pprof/symbolize.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NADDRS 10000u

static struct {
	const char *path;
	uint64_t seg_vaddr, seg_size, seg_offset; /* the executable segment */
	uint64_t addrs[NADDRS]; /* run-time, at BASE */
	char input[NADDRS * 20]; /* addr2line's: file addresses, one a line */
	size_t input_len;
	uint64_t frames, lines; /* of the last pass, for the note */
} w;

#define BASE 0x7f0000000000ull

/* The first executable PT_LOAD of @path. */
static int exec_segment(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const Elf64_Ehdr *eh;
	const uint8_t *map;
	int rc = -1;

	if (fd < 0 || fstat(fd, &st))
		goto out;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	eh = (const Elf64_Ehdr *)map;
	for (unsigned int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph =
			(const Elf64_Phdr *)(map + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			w.seg_vaddr = ph->p_vaddr;
			w.seg_size = ph->p_filesz;
			w.seg_offset = ph->p_offset;
			rc = 0;
			break;
		}
	}
	munmap((void *)map, (size_t)st.st_size);
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	static char path[4096];

	(void)size;
	if (strstr(info->dlpi_name, "/libc.so")) {
		snprintf(path, sizeof(path), "%s", info->dlpi_name);
		*(const char **)arg = path;
		return 1;
	}
	return 0;
}

/* One pass over the addresses; counts frames and lines. */
static int symbolize_all(void)
{
	struct prof_map_spec m = { BASE + w.seg_offset,
				   BASE + w.seg_offset + w.seg_size,
				   w.seg_offset, w.path };
	struct prof_symbolizer *s = prof_symbolizer_new_maps(&m, 1);
	struct prof_frame f[32];

	if (!s)
		return -1;
	w.frames = w.lines = 0;
	for (unsigned int i = 0; i < NADDRS; i++) {
		size_t n = prof_symbolize_frames(s, w.addrs[i], f, 32, NULL);

		w.frames += n;
		w.lines += n && f[0].line;
	}
	prof_symbolizer_free(s);
	return 0;
}

/* Time a child process: @fn in it (ours), or exec'd addr2line. */
static int run_child(struct bench_sample *smp, bool ours)
{
	int in[2];
	uint64_t t0;
	pid_t pid;
	int st;

	if (!ours && pipe(in))
		return -1;
	fflush(stdout); /* the child's stdout is not to print it again */
	t0 = bench_now_ns();
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (ours)
			_exit(symbolize_all() ? 1 : 0);
		dup2(in[0], 0);
		close(in[0]);
		close(in[1]);
		if (!freopen("/dev/null", "w", stdout))
			_exit(1);
		execlp("addr2line", "addr2line", "-i", "-f", "-e", w.path,
		       (char *)NULL);
		_exit(127);
	}
	if (!ours) {
		close(in[0]);
		if (write(in[1], w.input, w.input_len) != (ssize_t)w.input_len)
			return -1;
		close(in[1]);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "symbolize_bench: %s failed (status %#x)\n",
			ours ? "the child" : "addr2line", st);
		return -1;
	}
	smp->ns += bench_now_ns() - t0;
	smp->ops += NADDRS;
	return 0;
}

static int ours_cold(void *ctx, struct bench_sample *smp)
{
	(void)ctx;
	return run_child(smp, true);
}

static int addr2line_cold(void *ctx, struct bench_sample *smp)
{
	(void)ctx;
	return run_child(smp, false);
}

static int ours_warm(void *ctx, struct bench_sample *smp)
{
	uint64_t t0 = bench_now_ns();

	(void)ctx;
	if (symbolize_all())
		return -1;
	smp->ns += bench_now_ns() - t0;
	smp->ops += NADDRS;
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_case cold[] = {
		{ "ours, cold process", ours_cold, NULL },
		{ "addr2line -i -f", addr2line_cold, NULL },
	};
	struct bench_case warm[] = { { "ours, warm cache", ours_warm, NULL } };
	struct bench_stats st[2], sw;
	char note[256];

	bench_parse_args(argc, argv, &o);
	w.path = getenv("SYMBOLIZE_BENCH_FILE");
	if (!w.path || !*w.path)
		dl_iterate_phdr(find_libc, &w.path);
	if (!w.path || exec_segment(w.path))
		return bench_fail("no ELF file with an executable segment",
				  ENOENT);
	for (unsigned int i = 0; i < NADDRS; i++) {
		uint64_t off = w.seg_size * i / NADDRS;

		w.addrs[i] = BASE + w.seg_offset + off;
		w.input_len += (size_t)snprintf(
			w.input + w.input_len, sizeof(w.input) - w.input_len,
			"%#llx\n", (unsigned long long)(w.seg_vaddr + off));
	}
	if (o.reps > 5)
		o.reps = 5; /* each repetition is a whole process */
	o.warmup = 0;
	bench_report_begin("symbolize_bench", &o);
	if (bench_run_cases(cold, 2, &o, st))
		return bench_fail("a case", EIO);
	if (symbolize_all()) /* this process's first pass: warms the cache */
		return bench_fail("symbolize", ENOMEM);
	if (bench_run_cases(warm, 1, &o, &sw))
		return bench_fail("a case", EIO);
	snprintf(note, sizeof(note),
		 "%s: %llu frames, %llu of %u addresses with a line; 10k "
		 "cold total %.0f ms",
		 w.path, (unsigned long long)w.frames,
		 (unsigned long long)w.lines, NADDRS,
		 st[0].median * NADDRS / 1e6);
	bench_report_row(&(struct bench_row){
		.name = "symbolize 10k locations, lines + inlines, cold",
		.unit = BENCH_NS_PER_OP,
		.ours = &st[0],
		.ours_name = cold[0].name,
		.anchor = &st[1],
		.anchor_name = cold[1].name,
		.goal_ratio = 1.0,
		.goal_le = true,
		.note = note,
	});
	bench_info_row("symbolize 10k locations again (cached)",
		       BENCH_NS_PER_OP, &sw, warm[0].name, &st[0], cold[0].name,
		       "a second profile of the same code");
	bench_report_end();
	return 0;
}
