// SPDX-License-Identifier: MIT
/*
 * prof/record.c - `profring-prof record`: run a program and profile it
 * from outside.
 *
 * The launcher creates the shared memory (shm.h), forks, and the child
 * execs the program with libprofring-prof.so in LD_PRELOAD and
 * PROF_SHM_ENV naming the memfd (agent.c attaches the program to it).  The
 * launcher, not the program, reads the ring (a reader thread with every
 * signal blocked), aggregates, symbolizes from the mappings the program
 * reported, and writes the profile: whatever ends the program (exit,
 * _exit, a signal, exec into something else), what it wrote is in the
 * launcher's memory.
 *
 * Signals.  The launcher blocks the signals it waits for (SIGCHLD and the
 * ones it forwards) and takes them with sigwaitinfo(); the child gets the
 * mask and dispositions the launcher was given, before exec.  SIGTERM,
 * SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2 sent to the launcher by a
 * process (kill, timeout(1)) are passed on to the program; the ones a
 * terminal sends reach the whole foreground group, the program included,
 * so they are not sent twice.
 *
 * The end.  When the program (the process the launcher started, through
 * its execs) has been reaped, the ring is closed: later writes (from
 * descendants still running, unless --no-children) are refused and counted by
 * their writers.  The reader drains to EOF; a record that a process left
 * reserved and never finished can hold EOF back forever, and a ring the
 * program filled with forged records can keep the reader busy, so the
 * drain stops DRAIN_LIMIT_NS after the close whatever the ring holds,
 * and says how many records it left unread.
 *
 * Hostile memory.  Everything in the shared memory is the program's to
 * overwrite (a wild write of the program being debugged).  The memfd's
 * size is sealed before the program runs, so the mapping cannot fault.
 * The ring is read by a guarded reader (profbuf_reader_attach()): the
 * geometry and the reader's state are the launcher's own, every run is
 * copied and checked, and the first corruption ends the reading; what
 * was read before it is written, and the profile and stderr say what
 * was corrupted.  The session's settings are taken from the launcher's
 * own copy, never from the header; the counters the program keeps are
 * its claims, checked against what the launcher read and against the
 * run's length before they are shown.
 *
 * Exit status: the program's (its exit code; for a death by signal the
 * launcher kills itself with the same signal, after writing, so that a
 * shell sees what it would have seen); 125 when no profile could be made
 * (nothing attached, or the file could not be written); 126/127 when the
 * program could not be run.
 */
#include "prof/record.h"
#include "prof/heap_agg.h"
#include "prof/aggregate.h"
#include "prof/record_http.h"
#include "prof/trace_out.h"
#include "prof/shm.h"

#include "pprof/demangle.h"
#include "pprof/outfile.h"
#include "pprof/pprof.h"
#include "ring/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIB_NAME "libprofring-prof.so"
#define READ_PERIOD_NS 100000000u
#define DRAIN_LIMIT_NS 2000000000u
#define NCOMMENTS 7 /* the last: which symbolizer ran, when it matters */
#define COMMENT_LEN 320

/* The command run, for messages. */
static const char *prog_name;

/* The signals passed on to the program when a process sends them. */
static const int forwarded[] = { SIGTERM, SIGHUP,  SIGINT,
				 SIGQUIT, SIGUSR1, SIGUSR2 };

/*
 * struct reader - the reader thread and what it found.
 * @rb:      the guarded reader of the shared ring.
 * @closed:  the ring was closed: drain, then stop.
 * @cut:     the drain stopped at DRAIN_LIMIT_NS, @unread records unread.
 * @corrupt: what the reader found corrupted (reading stopped), or NULL.
 * @heap_rate, @cpu: the session, the launcher's own copy.
 * @ovf_since: when the losses of the last overflow record were counted.
 * @cpus:    the machine's CPUs, for what the program could have done.
 */
struct reader {
	struct profbuf_reader *rb;
	struct prof_agg *agg;
	pthread_mutex_t lock; /* around each take into agg: --http looks */
	struct prof_trace *trace; /* --trace, or NULL */
	pthread_t thread;
	_Atomic bool closed;
	bool cut;
	uint32_t unread;
	const char *corrupt;
	uint64_t heap_rate;
	bool cpu;
	uint64_t ovf_since;
	uint64_t cpus;
	int error;
};

/*
 * No process makes a record in less than RECORD_MIN_NS of one CPU: no
 * count the program claims (losses, samples, threads) can grow faster
 * than one per RECORD_MIN_NS of every CPU of the machine.
 */
#define RECORD_MIN_NS 10u

/* ---- the reader thread ---- */

/*
 * How long the next read may wait: READ_PERIOD_NS, and after the close no
 * further than DRAIN_LIMIT_NS from it.  Return: 0 when that has passed.
 */
static uint64_t read_budget(struct reader *rd, uint64_t *closed_at)
{
	uint64_t now, spent;

	/* Acquire: pairs with the release store in reader_close(). */
	if (!atomic_load_explicit(&rd->closed, memory_order_acquire))
		return READ_PERIOD_NS;
	now = ring_clock_mono_ns();
	if (!*closed_at)
		*closed_at = now;
	spent = now - *closed_at;
	if (spent >= DRAIN_LIMIT_NS)
		return 0;
	return DRAIN_LIMIT_NS - spent < READ_PERIOD_NS ? DRAIN_LIMIT_NS - spent
						       : READ_PERIOD_NS;
}

/*
 * overflow_credible() - every overflow record of @r claims no more lost
 * writes than the program could have attempted since the last one (a
 * record costs at least RECORD_MIN_NS of a CPU).  Otherwise the ring is
 * forged: @rd->corrupt says so and the run is not taken.
 */
static bool overflow_credible(struct reader *rd, const struct profbuf_read *r)
{
	uint64_t now = ring_clock_mono_ns(), most;
	struct profbuf_record rec;
	struct profbuf_iter it;

	most = (now - rd->ovf_since) / RECORD_MIN_NS * rd->cpus + 1024;
	profbuf_iter_init(&it, r, PROF_HDR_WORDS);
	while (profbuf_iter_next(&it, &rec)) {
		if (!profbuf_record_is_overflow(&rec))
			continue;
		if (profbuf_record_overflow_count(&rec) > most) {
			rd->corrupt = "an overflow record claims more lost "
				      "writes than could have been made";
			return false;
		}
		most -= profbuf_record_overflow_count(&rec);
		rd->ovf_since = now;
	}
	return true;
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct profbuf_reader_stats st;
	uint64_t closed_at = 0, budget;
	struct profbuf_read r;
	int err;

	while ((budget = read_budget(rd, &closed_at))) {
		err = profbuf_reader_read(rd->rb, budget, &r);
		if (!err && r.eof)
			goto out;
		if (!err && r.ndata) {
			if (!overflow_credible(rd, &r))
				goto out;
			pthread_mutex_lock(&rd->lock);
			err = prof_agg_take(rd->agg, &r);
			pthread_mutex_unlock(&rd->lock);
			if (err && !rd->error)
				rd->error = err;
			if (rd->trace)
				prof_trace_take(rd->trace, &r);
			continue;
		}
		if (err == -EIO)
			goto out; /* corrupted: the stats say what */
		if (err && err != -ETIMEDOUT) {
			rd->error = err;
			goto out;
		}
	}
	rd->cut = true;
out:
	profbuf_reader_stats(rd->rb, &st);
	if (st.corrupt)
		rd->corrupt = st.corrupt;
	rd->unread = rd->cut ? st.unread : 0;
	return NULL;
}

static int reader_start(struct reader *rd)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&rd->thread, NULL, reader_main, rd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}

static void reader_close(struct reader *rd)
{
	profbuf_reader_close(rd->rb);
	/* Release: pairs with the acquire load in reader_main(). */
	atomic_store_explicit(&rd->closed, true, memory_order_release);
	pthread_join(rd->thread, NULL);
}

/* ---- starting the program ---- */

static bool readable(const char *path)
{
	return access(path, R_OK) == 0;
}

/* Where libprofring-prof.so is: @out gets a path (or the bare name). */
static void find_library(char *out, size_t len)
{
	static const char *const rel[] = { "/" LIB_NAME, "/../" LIB_NAME,
					   "/../lib/" LIB_NAME };
	const char *env = getenv(PROFRING_PROF_ENV_LIB);
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(out, len, "%s%s", self, rel[i]);
			if (readable(out))
				return;
		}
	}
	snprintf(out, len, "%s", LIB_NAME);
}

/*
 * The program's environment: ours, with the library first in LD_PRELOAD
 * (our malloc hands each call to the next definition, so an allocator
 * preloaded there still serves it and the heap profile sees it; only a
 * sanitizer runtime stays ahead: it must come first) and PROF_SHM_ENV;
 * the pid in the latter is written by the child (child_env_pid()), so
 * everything is allocated before the fork.
 */
struct child_env {
	char **envp;
	char *preload;
	char *shm; /* PROF_SHM_ENV "=FD:" followed by room for the pid */
	size_t shm_pid_at;
};

static int child_env_make(struct child_env *ce, int fd)
{
	char lib[PATH_MAX];
	const char *old = getenv("LD_PRELOAD"), *rest = "", *base;
	size_t n = 0, k = 0, len, first = 0;

	find_library(lib, sizeof(lib));
	for (char **e = environ; *e; e++)
		n++;
	if (old) { /* first: a sanitizer runtime's length, or 0 */
		first = strcspn(old, ": ");
		base = memrchr(old, '/', first);
		base = base ? base + 1 : old;
		if (!memmem(base, (size_t)(old + first - base), "san.so", 6) &&
		    !memmem(base, (size_t)(old + first - base), "san-", 4))
			first = 0;
		rest = old + first + strspn(old + first, ": ");
	}
	ce->envp = calloc(n + 3, sizeof(*ce->envp));
	len = strlen("LD_PRELOAD=") + strlen(lib) + (old ? strlen(old) : 0) + 3;
	ce->preload = malloc(len);
	ce->shm = malloc(sizeof(PROF_SHM_ENV) + 48);
	if (!ce->envp || !ce->preload || !ce->shm)
		return -ENOMEM;
	snprintf(ce->preload, len, "LD_PRELOAD=%.*s%s%s%s%s", (int)first,
		 old ? old : "", first ? ":" : "", lib, *rest ? ":" : "", rest);
	ce->shm_pid_at = (size_t)snprintf(ce->shm, sizeof(PROF_SHM_ENV) + 48,
					  "%s=%d:", PROF_SHM_ENV, fd);
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) &&
		    strncmp(*e, PROF_SHM_ENV "=", sizeof(PROF_SHM_ENV)))
			ce->envp[k++] = *e;
	ce->envp[k++] = ce->preload;
	ce->envp[k++] = ce->shm;
	ce->envp[k] = NULL;
	return 0;
}

static void child_env_free(struct child_env *ce)
{
	free(ce->envp);
	free(ce->preload);
	free(ce->shm);
}

/* In the child: write our pid into PROF_SHM_ENV (no allocation). */
static void child_env_pid(struct child_env *ce)
{
	char digits[16];
	int n = 0;
	unsigned int pid = (unsigned int)getpid();
	char *p = ce->shm + ce->shm_pid_at;

	do
		digits[n++] = (char)('0' + pid % 10);
	while ((pid /= 10));
	while (n)
		*p++ = digits[--n];
	*p = 0;
}

/*
 * Fork and exec @argv.  An exec failure comes back through a
 * close-on-exec pipe as the child's errno.
 * Return: the child's pid, or -errno of the fork or the exec.
 */
static pid_t spawn(char **argv, struct child_env *ce, int memfd,
		   const sigset_t *mask, const struct sigaction *chld)
{
	int pfd[2], err = 0;
	pid_t pid;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0) {
		close(pfd[0]);
		sigaction(SIGCHLD, chld, NULL);
		sigprocmask(SIG_SETMASK, mask, NULL);
		fcntl(memfd, F_SETFD, 0); /* inherited by the program */
		child_env_pid(ce);
		execvpe(argv[0], argv, ce->envp);
		err = errno;
		n = write(pfd[1], &err, sizeof(err));
		(void)n;
		_exit(127);
	}
	close(pfd[1]);
	n = read(pfd[0], &err, sizeof(err));
	close(pfd[0]);
	if (n == sizeof(err)) {
		waitpid(pid, NULL, 0);
		return -err;
	}
	return pid;
}

/* ---- waiting ---- */

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(set, forwarded[i]);
}

/*
 * Wait for the program to end, passing on the signals processes send us.
 * Return: its wait status; *@ru its resource usage.
 */
static int wait_program(pid_t pid, const sigset_t *set, struct rusage *ru)
{
	siginfo_t si;
	int status;
	pid_t w;

	for (;;) {
		w = wait4(pid, &status, WNOHANG, ru);
		if (w == pid)
			return status;
		if (w < 0 && errno != EINTR)
			return 0; /* cannot happen: it is our child */
		if (sigwaitinfo(set, &si) < 0 || si.si_signo == SIGCHLD)
			continue;
		/* A terminal's signal reached the program too. */
		if (si.si_code == SI_USER || si.si_code == SI_QUEUE)
			kill(pid, si.si_signo);
	}
}

/* ---- the profile ---- */

struct outcome {
	int status; /* wait status */
	struct rusage ru;
	struct prof_counts counts;
	struct prof_agg_counts agg;
	char ring[COMMENT_LEN]; /* how the reading of the ring ended */
	bool ring_lost; /* ... and records were lost by it */
	char doubt[COMMENT_LEN]; /* why the program's counters are not shown */
	int64_t start_realtime_ns;
	int64_t duration_ns;
};

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
	snprintf(c[1], COMMENT_LEN, "program: %s %s", prog_name, end);
	if (o->doubt[0])
		snprintf(c[2], COMMENT_LEN,
			 "read %" PRIu64 ", lost %" PRIu64
			 "; the program's counters are not shown: %s",
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

static int write_heap(const struct prof_record_args *a, struct reader *rd,
		      const struct outcome *o, uint64_t rate)
{
	const struct prof_counts *k = &o->counts;
	char comments[2][COMMENT_LEN], end[128];
	const char *lines[2] = { comments[0], comments[1] };
	struct prof_heap_counts hc;
	struct prof_profile p;
	int err;

	err = prof_agg_heap_profile(rd->agg, rate, NULL, &p);
	if (err)
		return err;
	prof_demangle_allow_load();
	prof_agg_heap_counts(rd->agg, &hc);
	prof_heap_comment(comments[0], COMMENT_LEN, rate, &hc,
			  k->heap_allocs + k->heap_frees, k->heap_refused,
			  k->heap_untracked);
	describe_end(o->status, end, sizeof(end));
	snprintf(comments[1], COMMENT_LEN, "program: %s %s", prog_name, end);
	p.time_nanos = o->start_realtime_ns;
	p.duration_nanos = o->duration_ns;
	p.comments = lines;
	p.ncomments = 2;
	err = prof_pprof_write(&p, NULL, a->heap);
	prof_agg_profile_free(&p);
	return err;
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

/* The warnings: what a user must know to trust (or not) the profile. */
static void warn(const struct prof_record_args *a, const struct outcome *o)
{
	double cpu = ru_cpu_s(&o->ru);
	double seen = (double)o->agg.periods / a->opts.hz;

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
			"(ring full): some code is shown as raw addresses\n",
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
		" threads, %" PRIu64 " stacks, %" PRIu64
		" process%s; the program %s\n",
		a->output, o->agg.read + o->agg.lost,
		o->counts.written + o->counts.refused, o->agg.read, o->agg.lost,
		o->counts.threads, o->agg.stacks, o->agg.pids,
		o->agg.pids == 1 ? "" : "es", end);
}

/* The launcher's own status for the program's @status (see the top). */
static int pass_on(int status)
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

static int finish(const struct prof_record_args *a, struct reader *rd,
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
			prog_name, LIB_NAME, end);
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
	if (a->output && write_profile(a, rd, o))
		return 125;
	if (a->output) {
		warn(a, o);
		if (!a->quiet)
			summary(a, o);
	}
	return failed ? 125 : pass_on(o->status);
}

/*
 * --http: serve the program's profiles from @rd's aggregation while it
 * runs (record_http.c), with every signal blocked in the server's
 * threads.  A server that cannot start is said on stderr; the program
 * runs on.
 */
static void serve(const struct prof_record_args *a, struct reader *rd,
		  const struct prof_shm_map *m, pid_t pid,
		  const struct outcome *o, int64_t t0,
		  struct prof_record_view *v)
{
	sigset_t all, old;

	*v = (struct prof_record_view){
		.agg = rd->agg,
		.lock = &rd->lock,
		.shm = m->hdr,
		.pid = pid,
		.hz = a->opts.hz,
		.cpu = a->output && a->opts.mode != PROFRING_PROF_MODE_WALL,
		.wall = a->opts.mode == PROFRING_PROF_MODE_WALL,
		.heap_rate = rd->heap_rate,
		.start_realtime_ns = o->start_realtime_ns,
		.start_mono_ns = t0,
	};
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (prof_record_http_start(a->http, v))
		v->agg = NULL; /* not serving */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/**
 * prof_record_run() - run @argv under the profiler, as `record` does.
 * @a:    the parsed and checked options.
 * @argv: the command and its arguments.
 *
 * Return: the exit status for the launcher (see the top of this file);
 * may not return at all, when it ends by the program's signal.
 */
int prof_record_run(const struct prof_record_args *args, char **argv)
{
	struct prof_record_args full = *args;
	const struct prof_record_args *a = &full;
	struct prof_shm_params sp = {
		.buffer_words = a->opts.buffer_words,
		.hz = a->opts.hz,
		.max_frames = a->opts.max_frames,
		.timer = a->opts.timer,
		.unwinder = a->opts.unwinder,
		.children = a->children,
		.cpu = a->output != NULL,
		.mode = a->opts.mode,
	};
	struct reader rd = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct prof_record_view view = { 0 };
	struct child_env ce = { 0 };
	struct prof_shm_map m;
	struct outcome o = { 0 };
	struct sigaction dfl = { .sa_handler = SIG_DFL }, chld;
	sigset_t set, old;
	int64_t t0;
	pid_t pid;
	int err, rc = 125;

	prog_name = argv[0];
	if (!full.opts.hz)
		full.opts.hz = full.opts.mode == PROFRING_PROF_MODE_WALL
				       ? PROFRING_PROF_DEFAULT_WALL_HZ
				       : PROFRING_PROF_DEFAULT_HZ;
	if (!full.opts.max_frames)
		full.opts.max_frames = PROFRING_PROF_DEFAULT_FRAMES;
	if (!full.opts.buffer_words)
		full.opts.buffer_words = PROFRING_PROF_DEFAULT_BUFFER_WORDS;
	sp.hz = full.opts.hz;
	sp.max_frames = full.opts.max_frames;
	sp.buffer_words = full.opts.buffer_words;
	if (a->heap || full.opts.heap_rate) /* the latter: --http's */
		sp.heap_rate = full.opts.heap_rate
				       ? full.opts.heap_rate
				       : PROFRING_PROF_DEFAULT_HEAP_RATE;
	err = prof_shm_create(&sp, &m);
	if (err) {
		fprintf(stderr, "profring-prof: cannot set up: %s\n",
			strerror(-err));
		return 125;
	}
	rd.heap_rate = sp.heap_rate;
	rd.cpus = (uint64_t)sysconf(_SC_NPROCESSORS_CONF);
	rd.ovf_since = ring_clock_mono_ns();
	rd.cpu = sp.cpu;
	rd.rb = profbuf_reader_attach((char *)m.base + m.hdr->ring_offset,
				      m.hdr->ring_size);
	if (!rd.rb) {
		fprintf(stderr, "profring-prof: cannot set up: %s\n",
			strerror(errno));
		goto out;
	}
	if (a->trace) {
		err = prof_trace_open(&rd.trace, a->trace, sp.heap_rate,
				      a->opts.mode == PROFRING_PROF_MODE_WALL);
		if (err) {
			fprintf(stderr, "profring-prof: cannot write %s: %s\n",
				a->trace, strerror(-err));
			goto out;
		}
	}
	rd.agg = prof_agg_new(false, 0, &err);
	if (!rd.agg || child_env_make(&ce, m.fd)) {
		fprintf(stderr, "profring-prof: cannot set up: %s\n",
			strerror(rd.agg ? ENOMEM : -err));
		goto out;
	}
	forwarded_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	/* SIGCHLD ignored would reap the program for us: wait4 needs it. */
	sigaction(SIGCHLD, &dfl, &chld);
	o.start_realtime_ns = (int64_t)ring_clock_ns(CLOCK_REALTIME);
	t0 = (int64_t)ring_clock_mono_ns();
	pid = spawn(argv, &ce, m.fd, &old, &chld);
	if (pid < 0) {
		fprintf(stderr, "profring-prof: cannot run %s: %s\n", argv[0],
			strerror((int)-pid));
		rc = pid == -ENOENT ? 127 : 126;
		goto unmask;
	}
	err = reader_start(&rd);
	if (!err && a->http)
		serve(a, &rd, &m, pid, &o, t0, &view);
	o.status = wait_program(pid, &set, &o.ru);
	o.duration_ns = (int64_t)ring_clock_mono_ns() - t0;
	if (view.agg)
		prof_record_http_stop();
	if (err) {
		fprintf(stderr, "profring-prof: cannot read samples: %s\n",
			strerror(-err));
		rc = pass_on(o.status);
		goto unmask;
	}
	reader_close(&rd);
	rc = finish(a, &rd, &m, &o);
unmask:
	sigaction(SIGCHLD, &chld, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
out:
	if (rd.trace) { /* not run: an empty trace */
		struct prof_trace_counts c;

		prof_trace_close(rd.trace, &c);
	}
	child_env_free(&ce);
	profbuf_reader_free(rd.rb);
	prof_agg_free(rd.agg);
	prof_shm_unmap(&m);
	return rc;
}
