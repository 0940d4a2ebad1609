// SPDX-License-Identifier: MIT
/*
 * prof/launcher/record_report.c - the launcher's end (record.c runs the program
 * and reads the ring): the profiles, their comments, the warnings, the
 * summary line and the exit status.
 *
 * What the program wrote is its claim (record.c, "Hostile memory"): its
 * counters are shown only when credible (check_counts()), the reading's
 * end is said as it was (ring_outcome()), and every output that can be
 * written is written, each failure said on its own line.
 */
#include "prof/launcher/record_impl.h"
#include "prof/common/heap_agg.h"
#include "prof/common/mutex_agg.h"
#include "prof/common/procfs.h"

#include "pprof/demangle.h"
#include "pprof/outfile.h"
#include "pprof/pprof.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* "exited with status 0", "was killed by signal 11 (Segmentation fault)" */
static void describe_end(int status, char *out, size_t len)
{
	if (WIFEXITED(status))
		snprintf(out, len, "exited with status %d",
			 WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, len, "was killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(out, len, "ended with wait status %#x", status);
}

static void format_comments(const struct prof_record_args *a,
			    const struct outcome *o,
			    char c[NCOMMENTS][COMMENT_LEN])
{
	const struct prof_counts *k = &o->counts;
	char end[128];

	describe_end(o->status, end, sizeof(end));
	snprintf(c[0], COMMENT_LEN,
		 "profring-prof: %u Hz, %s on signal %u, %s unwinding",
		 a->opts.hz,
		 a->opts.mode == PROFRING_PROF_MODE_WALL
			 ? "wall clock (a ticker thread)"
			 : prof_engines_name(k->engines),
		 k->signo,
		 a->opts.unwinder == PROFRING_PROF_UNWIND_LIBUNWIND
			 ? "libunwind"
			 : "frame-pointer");
	snprintf(c[1], COMMENT_LEN, "program: %s %s", prof_record_prog, end);
	if (o->doubt[0])
		snprintf(c[2], COMMENT_LEN,
			 "read %" PRIu64 ", lost %" PRIu64
			 "; the program's counters are not shown: %.200s",
			 o->agg.read, o->agg.lost, o->doubt);
	else
		snprintf(c[2], COMMENT_LEN,
			 "signals %" PRIu64 " = written %" PRIu64
			 " + refused %" PRIu64 "; read %" PRIu64
			 ", lost %" PRIu64,
			 k->written + k->refused, k->written, k->refused,
			 o->agg.read, o->agg.lost);
	snprintf(c[3], COMMENT_LEN,
		 "processes %" PRIu64 ", images %" PRIu64 ", threads %" PRIu64
		 " (%" PRIu64 " with samples), stacks %" PRIu64
		 ", truncated %" PRIu64 ", unchecked unwinds %" PRIu64
		 ", stack table full %" PRIu64,
		 o->agg.pids, o->agg.images, k->threads, o->agg.threads,
		 o->agg.stacks, k->truncated, k->unchecked, o->agg.table_full);
	snprintf(c[4], COMMENT_LEN,
		 "libunwind fallbacks %" PRIu64 ", mappings %" PRIu64
		 " (lost %" PRIu64 ", past the limits %" PRIu64
		 "), bad records %" PRIu64
		 ", dropped past the limits: images %" PRIu64
		 ", records %" PRIu64 "%s",
		 k->unwind_fallback, o->agg.maps, k->maps_lost,
		 o->agg.maps_dropped, o->agg.bad, o->agg.images_dropped,
		 o->agg.dropped,
		 k->taken_over ? ", the program took our signal over" : "");
	snprintf(c[5], COMMENT_LEN, "ring: %.300s", o->ring);
}

/*
 * Say that @path could not be written, and why: a link refused when the
 * file was written (planted after the options were checked) is explained
 * as the check explains it.
 */
static int cannot_write(const char *path, int err)
{
	char why[512];

	if (prof_outfile_check(path, why, sizeof(why)) != err)
		snprintf(why, sizeof(why), "%s", strerror(-err));
	fprintf(stderr, "profring-prof: cannot write %s: %s\n", path, why);
	return err;
}

/*
 * -o and -f: each written if it can be (one refused loses only itself),
 * each failure said here.  Return: 0, or the first error.
 */
static int write_profile(const struct prof_record_args *a, struct reader *rd,
			 const struct outcome *o)
{
	char comments[NCOMMENTS][COMMENT_LEN];
	const char *lines[NCOMMENTS];
	struct prof_profile p;
	int err;

	err = prof_agg_profile(rd->agg, &p);
	if (err)
		return cannot_write(a->output, err);
	prof_demangle_allow_load(); /* our own process: a C++ runtime may load */
	format_comments(a, o, comments);
	for (int i = 0; i < NCOMMENTS; i++)
		lines[i] = comments[i];
	p.ncomments = NCOMMENTS - 1;
	if (prof_symbolizer_perf_map_comment(
		    p.spaces, p.nspaces, comments[NCOMMENTS - 1], COMMENT_LEN))
		p.ncomments = NCOMMENTS;
	p.period_ns = 1000000000u / a->opts.hz;
	p.wall = a->opts.mode == PROFRING_PROF_MODE_WALL;
	p.time_nanos = o->start_realtime_ns;
	p.duration_nanos = o->duration_ns;
	p.comments = lines;
	err = prof_pprof_write(&p, NULL, a->output);
	if (err)
		cannot_write(a->output, err);
	if (a->folded) {
		int ferr = prof_folded_write(&p, NULL, a->folded);

		if (ferr)
			cannot_write(a->folded, ferr);
		err = err ? err : ferr;
	}
	prof_agg_profile_free(&p);
	return err;
}

/*
 * A heap or lock profile @p to @path, its comments @line (the
 * accounting) and the program's; @p is freed.
 */
static int write_accounted(struct prof_profile *p, const struct outcome *o,
			   const char *line, const char *path)
{
	char prog[COMMENT_LEN], end[128];
	const char *lines[2] = { line, prog };
	int err;

	describe_end(o->status, end, sizeof(end));
	snprintf(prog, COMMENT_LEN, "program: %s %s", prof_record_prog, end);
	p->time_nanos = o->start_realtime_ns;
	p->duration_nanos = o->duration_ns;
	p->comments = lines;
	p->ncomments = 2;
	err = prof_pprof_write(p, NULL, path);
	prof_agg_profile_free(p);
	return err;
}

static int write_heap(const struct prof_record_args *a, struct reader *rd,
		      const struct outcome *o, uint64_t rate)
{
	const struct prof_counts *k = &o->counts;
	char line[COMMENT_LEN];
	struct prof_heap_counts hc;
	struct prof_profile p;
	int err;

	err = prof_agg_heap_profile(rd->agg, rate, NULL, &p);
	if (err)
		return err;
	prof_demangle_allow_load();
	prof_agg_heap_counts(rd->agg, &hc);
	prof_heap_comment(line, COMMENT_LEN, rate, &hc,
			  k->heap_allocs + k->heap_frees, k->heap_refused,
			  k->heap_untracked);
	return write_accounted(&p, o, line, a->heap);
}

/*
 * The mutex profile (@block false) or the block profile to @path, and
 * its summary line.
 */
static int write_lock(const struct prof_record_args *a, struct reader *rd,
		      const struct outcome *o, bool block, const char *path)
{
	const struct prof_counts *k = &o->counts;
	char line[COMMENT_LEN];
	uint64_t rate = rd->mutex_rate;
	struct prof_profile p;
	uint64_t waits = 0, ns = 0;
	int err;

	err = prof_agg_lock_profile(rd->agg, block, rate, k->lock_refused, NULL,
				    &p);
	if (err)
		return err;
	prof_demangle_allow_load();
	prof_lock_comment(line, COMMENT_LEN, block, rate,
			  prof_agg_lock_waits(rd->agg), k->lock_written,
			  k->lock_refused);
	for (size_t i = 0; i < p.nsamples; i++) {
		waits += p.samples[i].samples;
		ns += p.samples[i].periods;
	}
	err = write_accounted(&p, o, line, path);
	if (err)
		return err;
	if (k->lock_refused)
		fprintf(stderr,
			"profring-prof: %" PRIu64 " lock records were refused "
			"(the ring was full): counted as waits of unknown "
			"delay\n",
			k->lock_refused);
	if (!a->quiet)
		fprintf(stderr,
			"profring-prof: wrote %s: %" PRIu64
			" %s, %.3f s of delay (one wait in %" PRIu64
			" recorded, scaled)\n",
			path, waits, block ? "waits" : "contentions",
			(double)ns / 1e9, rate);
	return 0;
}

static double ru_cpu_s(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	       (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}

/*
 * The heap profile's summary line, and what it cannot show: records the
 * ring refused (heap records wait up to a second for room first), and
 * processes whose malloc is not ours, or none seen at all for a program
 * that ran a while (a wrapper that cleared LD_PRELOAD before exec).
 */
static void heap_summary(const struct prof_record_args *a, struct reader *rd,
			 const struct outcome *o, uint64_t rate)
{
	const struct prof_counts *k = &o->counts;
	struct prof_heap_counts hc;
	double cpu = ru_cpu_s(&o->ru);

	prof_agg_heap_counts(rd->agg, &hc);
	if (k->heap_refused && !o->doubt[0])
		fprintf(stderr,
			"profring-prof: %" PRIu64 " heap records were refused "
			"(the ring stayed full for a second): the heap profile "
			"misses those allocations and frees\n",
			k->heap_refused);
	if (k->heap_foreign && !o->doubt[0])
		fprintf(stderr,
			"profring-prof: the heap profile sees no allocation of "
			"%u process%s: their malloc is not ours (another "
			"allocator comes first in the lookup order, or the "
			"program has its own)\n",
			k->heap_foreign, k->heap_foreign == 1 ? "" : "es");
	else if (!hc.allocs && cpu >= 0.5 && rate <= (1u << 20))
		fprintf(stderr,
			"profring-prof: no allocation was sampled in %.2f s of "
			"CPU: the program may not allocate through malloc, or "
			"ran without our library (a wrapper that cleared "
			"LD_PRELOAD, a static program)\n",
			cpu);
	if (a->quiet)
		return;
	fprintf(stderr,
		"profring-prof: wrote %s: %" PRIu64
		" sampled allocations, %" PRIu64 " of them freed (rate %" PRIu64
		" bytes)\n",
		a->heap, hc.allocs, hc.frees, rate);
}

/*
 * --timer kernel asked and no counter sampled the kernel (the kernel
 * refused: perf_event.c; the agent fell back, PROF_ENGINE_* bits): said,
 * not left to the profile's comment.
 */
static void warn_kernel_refused(const struct prof_record_args *a,
				const struct outcome *o)
{
	char level[16] = "unknown";
	FILE *f;

	if (a->opts.timer != PROFRING_PROF_TIMER_KERNEL ||
	    a->opts.mode == PROFRING_PROF_MODE_WALL || !o->counts.engines ||
	    (o->counts.engines & PROF_ENGINE_KERNEL))
		return;
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (!fgets(level, sizeof(level), f))
			snprintf(level, sizeof(level), "unknown");
		level[strcspn(level, "\n")] = 0;
		fclose(f);
	}
	fprintf(stderr,
		"profring-prof: --timer kernel not granted (sampling the "
		"kernel needs perf_event_paranoid 1 or less, or CAP_PERFMON; "
		"it is %s): samples from %s\n",
		level, prof_engines_name(o->counts.engines));
}

/* The warnings: what a user must know to trust (or not) the profile. */
static void warn(const struct prof_record_args *a, const struct outcome *o)
{
	double cpu = ru_cpu_s(&o->ru);
	double seen = (double)o->agg.periods / a->opts.hz;

	warn_kernel_refused(a, o);

	if (o->counts.taken_over && !o->doubt[0])
		fprintf(stderr,
			"profring-prof: the program took signal %u for itself "
			"(its own handler, or a mask or wait naming it): "
			"sampling stopped there\n",
			o->counts.signo);
	if (o->agg.images_dropped || o->agg.maps_dropped || o->agg.dropped)
		fprintf(stderr,
			"profring-prof: past the launcher's limits: %" PRIu64
			" process images and %" PRIu64
			" records dropped, %" PRIu64
			" mappings not kept (that code is shown as raw "
			"addresses)\n",
			o->agg.images_dropped, o->agg.dropped,
			o->agg.maps_dropped);
	if (o->counts.maps_lost && !o->doubt[0])
		fprintf(stderr,
			"profring-prof: %" PRIu64 " mapping records were lost "
			"(ring full, or written after the program ended): "
			"some code may be shown as raw addresses\n",
			o->counts.maps_lost);
	if (cpu >= 0.2 && seen < cpu / 2 && !o->counts.taken_over &&
	    a->opts.mode != PROFRING_PROF_MODE_WALL) /* seen: wall time */
		fprintf(stderr,
			"profring-prof: the samples account for %.2f s of the "
			"program's %.2f s of CPU: it may block signal %u, run "
			"code in processes not profiled (%s), or "
			"in threads that end within a CPU tick (try --timer "
			"process)\n",
			seen, cpu, o->counts.signo,
			a->children ? "static ones, or ones started without "
				      "our environment"
				    : "--no-children was given");
}

/*
 * The summary line: the in-process mode's (prof.c) format, so that
 * scripts read both, with the processes and the program's end after it.
 */
static void summary(const struct prof_record_args *a, const struct outcome *o)
{
	char end[128];

	describe_end(o->status, end, sizeof(end));
	if (o->doubt[0]) {
		fprintf(stderr,
			"profring-prof: wrote %s: %" PRIu64
			" samples (read %" PRIu64 " + lost %" PRIu64
			"; the program's counters not shown), %" PRIu64
			" stacks, %" PRIu64 " process%s; the program %s\n",
			a->output, o->agg.read + o->agg.lost, o->agg.read,
			o->agg.lost, o->agg.stacks, o->agg.pids,
			o->agg.pids == 1 ? "" : "es", end);
		return;
	}
	fprintf(stderr,
		"profring-prof: wrote %s: %" PRIu64 " samples (signals %" PRIu64
		" = read %" PRIu64 " + lost %" PRIu64 "), %" PRIu64
		" thread%s, %" PRIu64 " stacks, %" PRIu64
		" process%s; the program %s\n",
		a->output, o->agg.read + o->agg.lost,
		o->counts.written + o->counts.refused, o->agg.read, o->agg.lost,
		o->counts.threads, o->counts.threads == 1 ? "" : "s",
		o->agg.stacks, o->agg.pids, o->agg.pids == 1 ? "" : "es", end);
}

/* The launcher's own status for the program's @status (see the top). */
int prof_record_pass_on(int status)
{
	struct rlimit none = { 0, 0 };
	sigset_t set;
	int sig;

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (!WIFSIGNALED(status))
		return 125;
	sig = WTERMSIG(status);
	setrlimit(RLIMIT_CORE, &none); /* the program dumped its own */
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig;
}

/* --trace: the last generation, the file closed, a line about it. */
static int close_trace(const struct prof_record_args *a, struct reader *rd)
{
	struct prof_trace_counts c;
	int err = prof_trace_close(rd->trace, &c);

	rd->trace = NULL;
	if (err) {
		fprintf(stderr, "profring-prof: cannot write %s: %s\n",
			a->trace, strerror(-err));
		return err;
	}
	if (c.lost)
		fprintf(stderr,
			"profring-prof: warning: %" PRIu64
			" events lost from %s (counted in it)\n",
			c.lost, a->trace);
	if (!a->quiet)
		fprintf(stderr,
			"profring-prof: wrote %s: %" PRIu64 " bytes, %" PRIu64
			" generations%s\n",
			a->trace, c.bytes, c.generations,
			c.not_traced ? "; heap records of forked children "
				       "not traced"
				     : "");
	return 0;
}

/*
 * Each process's CPU over its session (its slot's cpu_ns), for the
 * profile's unsampled CPU entry; not the last slot's, which processes
 * past PROF_SHM_SLOTS share.
 */
static void take_process_cpu(const struct prof_record_args *a,
			     struct reader *rd, struct prof_shm *h,
			     const struct outcome *o)
{
	/* Relaxed: the program is gone (wait4 ordered its stores). */
	uint32_t n = atomic_load_explicit(&h->next_slot, memory_order_relaxed);
	/* A claim: no process has more CPU than every CPU for the run. */
	uint64_t most = (uint64_t)o->duration_ns *
			(uint64_t)sysconf(_SC_NPROCESSORS_CONF);
	uint64_t cpu;

	if (n > PROF_SHM_SLOTS - 1)
		n = PROF_SHM_SLOTS - 1;
	for (uint32_t i = 0; i < n; i++) {
		cpu = atomic_load_explicit(&h->slots[i].ctr.cpu_ns,
					   memory_order_relaxed);
		if (cpu <= most)
			prof_agg_set_process_cpu(
				rd->agg,
				atomic_load_explicit(&h->slots[i].pid,
						     memory_order_relaxed),
				cpu, 1000000000u / a->opts.hz);
	}
}

/*
 * ring_outcome() - how the reading of the ring ended, in @o->ring (for
 * the profile's comment and, when records were lost by it, stderr).
 */
static void ring_outcome(const struct reader *rd, struct outcome *o)
{
	o->ring_lost = rd->corrupt || rd->cut;
	if (rd->corrupt)
		snprintf(o->ring, sizeof(o->ring),
			 "the shared ring was found corrupted (%s): the "
			 "program overwrote the profiler's memory; what was "
			 "read before is kept, every later sample of the "
			 "program is lost",
			 rd->corrupt);
	else if (rd->cut)
		snprintf(o->ring, sizeof(o->ring),
			 "reading stopped %u s after the program ended with "
			 "%" PRIu32 " records unread (lost): a process died "
			 "or stopped in the middle of writing one, or kept "
			 "the reader busy",
			 DRAIN_LIMIT_NS / 1000000000u, rd->unread);
	else
		snprintf(o->ring, sizeof(o->ring), "read to its end");
}

/*
 * check_counts() - the program's counters are its claims: @o->doubt says
 * why they are not believed (empty when they are).  Every sample read was
 * written, and no count grows faster than one per RECORD_MIN_NS of every
 * CPU.
 */
static void check_counts(struct outcome *o)
{
	const struct prof_counts *k = &o->counts;
	uint64_t most = (uint64_t)(o->duration_ns > 1000000 ? o->duration_ns
							    : 1000000) /
			RECORD_MIN_NS * (uint64_t)sysconf(_SC_NPROCESSORS_CONF);
	const struct {
		const char *name;
		uint64_t n;
	} c[] = {
		{ "samples written", k->written },
		{ "samples refused", k->refused },
		{ "threads", k->threads },
		{ "truncated stacks", k->truncated },
		{ "unchecked unwinds", k->unchecked },
		{ "unwinder fallbacks", k->unwind_fallback },
		{ "mapping records lost", k->maps_lost },
		{ "heap records written", k->heap_allocs + k->heap_frees },
		{ "heap records refused", k->heap_refused },
		{ "untracked allocations", k->heap_untracked },
	};

	o->doubt[0] = 0;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (c[i].n > most) {
			snprintf(o->doubt, sizeof(o->doubt),
				 "they claim %" PRIu64 " %s, more than one "
				 "per %u ns of every CPU (its memory was "
				 "overwritten)",
				 c[i].n, c[i].name, RECORD_MIN_NS);
			return;
		}
	if (k->written < o->agg.read)
		snprintf(o->doubt, sizeof(o->doubt),
			 "they claim %" PRIu64 " samples written, but %" PRIu64
			 " were read (its memory was overwritten)",
			 k->written, o->agg.read);
}

/*
 * The start time of process @pid ("self" or digits; clock ticks since
 * boot, /proc/PID/stat's field 22) and its state in *@state; -1 if
 * unreadable.
 */
static long long start_of(const char *pid, char *state)
{
	char path[sizeof("/proc//stat") + NAME_MAX], buf[1024], *p;
	long long t;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (prof_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strrchr(buf, ')'); /* the name may hold anything */
	if (!p || p[1] != ' ' ||
	    sscanf(p + 2,
		   "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
		   "%*d %*d %*d %*d %*d %*d %lld",
		   state, &t) != 2)
		return -1;
	return t;
}

/* Does process @pid map the memfd of inode @ino (ours)? */
static bool maps_memfd(const char *pid, unsigned long ino)
{
	char path[sizeof("/proc//maps") + NAME_MAX], line[512];
	unsigned long i;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " /memfd:profring-prof") &&
			sscanf(line, "%*s %*s %*s %*s %lu", &i) == 1 &&
			i == ino;
	fclose(f);
	return found;
}

/*
 * Processes of the program that still run when it ended (a daemon()
 * child, whose parent exits at once): from the ring's close on, their
 * samples are refused, so their work is not in the profile.  Said on
 * stderr.  They are the processes started after the launcher that still
 * map its memfd @fd (a forked child maps it from the fork on, before it
 * ever runs; an image that attached maps it again): found in /proc
 * (those of other users cannot be read, and are not the program's).
 */
static void warn_still_running(int fd)
{
	long long self, t;
	struct dirent *e;
	struct stat st;
	unsigned int alive = 0;
	pid_t first = 0, me = getpid();
	char state;
	DIR *d;

	self = start_of("self", &state);
	if (self < 0 || fstat(fd, &st))
		return;
	d = opendir("/proc");
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
		    atoi(e->d_name) == me)
			continue;
		t = start_of(e->d_name, &state);
		if (t < self || strchr("ZXx", state) ||
		    !maps_memfd(e->d_name, (unsigned long)st.st_ino))
			continue;
		if (!alive++)
			first = atoi(e->d_name);
	}
	closedir(d);
	if (alive)
		fprintf(stderr,
			"profring-prof: %s of the program (pid %d%s) still "
			"ran when it ended (a daemon() child, say): what %s "
			"did after that is not in the profile\n",
			alive > 1 ? "processes" : "a process", (int)first,
			alive > 1 ? ", ..." : "", alive > 1 ? "they" : "it");
}

int prof_record_finish(const struct prof_record_args *a, struct reader *rd,
		       struct prof_shm_map *m, struct outcome *o)
{
	bool failed = false;
	int err;

	ring_outcome(rd, o);
	prof_shm_sum(m->hdr, &o->counts);
	if (rd->cpu && a->opts.mode != PROFRING_PROF_MODE_WALL)
		take_process_cpu(a, rd, m->hdr, o);
	prof_agg_set_heap_refused(rd->agg, o->counts.heap_refused);
	prof_agg_counts(rd->agg, &o->agg);
	check_counts(o);
	warn_still_running(m->fd);
	if (o->ring_lost)
		fprintf(stderr, "profring-prof: %s\n", o->ring);
	if (o->doubt[0])
		fprintf(stderr,
			"profring-prof: the program's own counters are not "
			"shown: %s\n",
			o->doubt);
	/* Relaxed: the program is gone; a count to report. */
	if (!atomic_load_explicit(&m->hdr->attached, memory_order_relaxed)) {
		char end[128];

		describe_end(o->status, end, sizeof(end));
		fprintf(stderr,
			"profring-prof: nothing was profiled: %s never loaded "
			"%s (a static or setuid program ignores LD_PRELOAD); "
			"it %s\n",
			prof_record_prog, LIB_NAME, end);
		return 125;
	}
	/* A file that cannot be written loses only itself: the others are
	 * still written, each failure is said, and the status is 125. */
	if (rd->trace && close_trace(a, rd))
		failed = true;
	if (a->heap) {
		err = write_heap(a, rd, o, rd->heap_rate);
		if (err) {
			cannot_write(a->heap, err);
			failed = true;
		} else {
			heap_summary(a, rd, o, rd->heap_rate);
		}
	}
	err = a->mutex ? write_lock(a, rd, o, false, a->mutex) : 0;
	if (err) {
		cannot_write(a->mutex, err);
		failed = true;
	}
	err = a->block ? write_lock(a, rd, o, true, a->block) : 0;
	if (err) {
		cannot_write(a->block, err);
		failed = true;
	}
	if (a->output && write_profile(a, rd, o))
		return 125;
	if (a->output) {
		warn(a, o);
		if (!a->quiet)
			summary(a, o);
	}
	return failed ? 125 : prof_record_pass_on(o->status);
}
