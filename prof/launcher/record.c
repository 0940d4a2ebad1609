// SPDX-License-Identifier: MIT
/*
 * prof/launcher/record.c - `profring-prof record`: run a program and profile it
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
#include "prof/launcher/record_impl.h"
#include "prof/common/heap_agg.h"
#include "prof/agent/mutex.h"
#include "prof/common/aggregate.h"
#include "prof/launcher/record_http.h"
#include "prof/launcher/trace_out.h"
#include "prof/wire/shm.h"
#include "prof/common/procfs.h"

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
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define READ_PERIOD_NS 100000000u

/* The command run, for messages. */
const char *prof_record_prog;

/* The signals passed on to the program when a process sends them. */
static const int forwarded[] = { SIGTERM, SIGHUP,  SIGINT,
				 SIGQUIT, SIGUSR1, SIGUSR2 };

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

/**
 * prof_record_lib_check() - the library PROFRING_PROF_LIB names, if it
 * names one, is a readable file that LD_PRELOAD can name (no ':' or
 * blank, which separate its entries): else the program would run
 * unprofiled, with the loader's error and ours blaming the program.  A
 * bare name (no '/') is the loader's to search for, as LD_PRELOAD's.
 *
 * Return: 0, or -1 with one line naming the variable in @err.
 */
int prof_record_lib_check(char *err, size_t len)
{
	const char *env = getenv(PROFRING_PROF_ENV_LIB), *why;
	struct stat st;

	if (!env || !*env)
		return 0;
	if (strpbrk(env, ": \t")) {
		snprintf(err, len,
			 "%s=%s: LD_PRELOAD cannot name a path with ':' or a "
			 "blank",
			 PROFRING_PROF_ENV_LIB, env);
		return -1;
	}
	if (!strchr(env, '/'))
		return 0;
	if (stat(env, &st) || !readable(env))
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else
		return 0;
	snprintf(err, len, "%s=%s: cannot preload it: %s",
		 PROFRING_PROF_ENV_LIB, env, why);
	return -1;
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

/* ---- the end ---- */

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
		.mutex_rate = rd->mutex_rate,
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

	prof_record_prog = argv[0];
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
	if (a->mutex || a->block || a->mutex_rate) /* the latter: --http's */
		sp.mutex_rate =
			a->mutex_rate ? a->mutex_rate : PROF_LOCK_DEFAULT_RATE;
	err = prof_shm_create(&sp, &m);
	if (err) {
		fprintf(stderr, "profring-prof: cannot set up: %s\n",
			strerror(-err));
		return 125;
	}
	rd.heap_rate = sp.heap_rate;
	rd.mutex_rate = sp.mutex_rate;
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
		rc = prof_record_pass_on(o.status);
		goto unmask;
	}
	reader_close(&rd);
	rc = prof_record_finish(a, &rd, &m, &o);
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
