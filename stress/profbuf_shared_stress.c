// SPDX-License-Identifier: MIT
/*
 * profbuf_shared_stress.c - a shared profbuf (profbuf_shared_init()) with
 * writer processes, signal storms in them, and writer processes SIGKILLed
 * mid-write; every record accounted for.
 *
 * --procs P writer processes each run --threads T threads writing records
 * [writer, seq] + a payload derived from them as fast as they can; with
 * --signals every thread also gets SIGPROF from its own CPU timer and the
 * handler writes to the same buffer, often inside its thread's own write.
 * Each writer counts, in memory shared with the reader, its writes that
 * returned 0 or -ENOSPC (accepted).  The parent reads (timed, blocking)
 * and checks every record: payload, and per writer strictly increasing
 * seq.  With --kill it SIGKILLs each writer process at a random moment.
 * Odd threads write in place (profbuf_reserve(), profbuf_commit() of
 * fewer words than reserved), so kills also land inside reservations.
 *
 * Accounting at the end, after close and drain: records read + overflow
 * counts = accepted + in flight, where in flight is 0 without --kill and
 * at most two writes (a thread's own and its handler's) per thread of a
 * killed process (killed after its write landed but before its count, or
 * inside the write: stepped over by the reader as a dead writer's).  A
 * record left with no owner stamp (a kill in the few instructions between
 * reservation and stamp) is reported as stalled, not as a violation: the
 * header documents that only the reader's timeout bounds it.
 *
 * Under TSan the writers are threads of the reader's process instead (TSan
 * cannot follow the hand-back of slots by a reader in another process)
 * and --kill is ignored.
 *
 * Exit status 0 only if nothing was violated.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <profring/profbuf.h>

#include "testing/harness.h"
#include "testing/sanitizer.h"

#define PROG "profbuf_shared_stress"
#define MAX_PROCS 16
#define MAX_THREADS 8
#define HDR 2
#define MAX_PAYLOAD 16

static struct {
	long seconds, procs, threads, seed, bufwords, hz;
	bool signals, kill;
} opt = {
	.seconds = 5,
	.procs = 3,
	.threads = 2,
	.seed = 1,
	.bufwords = 1 << 14,
	.hz = 10000,
};

static const struct stress_flag flags[] = {
	{ "seconds", "run time (default 5)", STRESS_INT, &opt.seconds },
	{ "procs", "writer processes (default 3, at most 16)", STRESS_INT,
	  &opt.procs },
	{ "threads", "threads per process (default 2, at most 8)", STRESS_INT,
	  &opt.threads },
	{ "seed", "PRNG seed (default 1)", STRESS_INT, &opt.seed },
	{ "bufwords", "ring words (default 16384)", STRESS_INT, &opt.bufwords },
	{ "hz", "signals per CPU second (default 10000)", STRESS_INT, &opt.hz },
	{ "signals", "handlers write too", STRESS_BOOL, &opt.signals },
	{ "kill", "SIGKILL every writer process at a random moment",
	  STRESS_BOOL, &opt.kill },
	{ NULL, NULL, 0, NULL },
};

/* Per writer (process, thread, and its handler apart). */
struct counts {
	_Atomic uint64_t accepted;
	_Atomic uint64_t refused;
};

struct area {
	_Atomic int stop;
	struct counts w[MAX_PROCS][MAX_THREADS][2];
};

static struct area *area;
static struct profbuf *buf;

struct writer {
	int proc, thread;
	uint64_t seq[2];
	uint64_t rng;
};

static _Thread_local struct writer *self;

static uint64_t writer_id(int proc, int thread, int handler)
{
	return 1 + (uint64_t)(proc * MAX_THREADS + thread) * 2 + handler;
}

/*
 * Odd threads (and their handlers) write in place: reserve @extra stack
 * words more than the @n of @pay, fill the reservation, commit @n (a
 * shorter commit: given back, or padding), so that kills land inside
 * reservations and shorter commits too.
 */
static int write_in_place(const uint64_t *hdr, const uintptr_t *pay, size_t n,
			  size_t extra)
{
	struct profbuf_resv rv;
	int rc = profbuf_reserve(buf, (void *)(uintptr_t)hdr[0], 0, hdr, HDR,
				 n + extra, &rv);

	if (rc)
		return rc;
	memcpy(rv.stk, pay, n * sizeof(*pay));
	return profbuf_commit(&rv, n);
}

static void write_one(struct writer *w, int handler)
{
	uint64_t hdr[HDR];
	uintptr_t pay[MAX_PAYLOAD];
	size_t n;
	int rc;

	hdr[0] = writer_id(w->proc, w->thread, handler);
	hdr[1] = ++w->seq[handler];
	n = (size_t)(hdr[1] % MAX_PAYLOAD);
	for (size_t i = 0; i < n; i++)
		pay[i] = hdr[0] * 31 + hdr[1] + i;
	if (w->thread & 1)
		rc = write_in_place(hdr, pay, n, w->rng++ % 8);
	else
		rc = profbuf_write(buf, (void *)(uintptr_t)hdr[0], 0, hdr, HDR,
				   pay, n);
	atomic_fetch_add_explicit(
		rc == 0 || rc == -ENOSPC
			? &area->w[w->proc][w->thread][handler].accepted
			: &area->w[w->proc][w->thread][handler].refused,
		1, memory_order_relaxed);
}

static void on_sigprof(int sig)
{
	int saved = errno;

	(void)sig;
	if (self)
		write_one(self, 1);
	errno = saved;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct stress_timer t = { 0 };

	self = w;
	if (opt.signals)
		stress_timer_start(&t, SIGPROF, opt.hz, true);
	while (!atomic_load_explicit(&area->stop, memory_order_relaxed))
		write_one(w, 0);
	if (opt.signals)
		stress_timer_stop(&t);
	self = NULL;
	return NULL;
}

static int writer_process(int proc)
{
	struct writer w[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	struct sigaction sa = { .sa_handler = on_sigprof };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	memset(w, 0, sizeof(w));
	for (int i = 0; i < opt.threads; i++) {
		w[i].proc = proc;
		w[i].thread = i;
		pthread_create(&t[i], NULL, writer_main, &w[i]);
	}
	for (int i = 0; i < opt.threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static void *writer_thread(void *arg)
{
	writer_process((int)(intptr_t)arg);
	return NULL;
}

/*
 * Start writer @i: a process, or under TSan (which cannot see the
 * reader's hand-back from another process, and would report the slots'
 * reuse as races) a thread of this process using the same shared buffer.
 * Return: its pid (or this process's pid for a thread: nonzero).
 */
static pid_t start_writer(int i, pthread_t *t)
{
	pid_t pid;

	if (TESTING_UNDER_TSAN) {
		pthread_create(t, NULL, writer_thread, (void *)(intptr_t)i);
		return getpid();
	}
	pid = fork();
	if (pid == 0)
		_exit(writer_process(i));
	return pid;
}

static bool writer_done(pid_t pid, pthread_t t)
{
	int status;

	if (TESTING_UNDER_TSAN)
		return !pthread_tryjoin_np(t, NULL);
	return waitpid(pid, &status, WNOHANG) == pid;
}

/* The reader's view: last seq per writer, totals, violations. */
struct reader {
	uint64_t last[MAX_PROCS * MAX_THREADS * 2 + 1];
	uint64_t records, lost, bad;
};

static void check_read(struct reader *rd, const struct profbuf_read *r)
{
	struct profbuf_record rec;
	struct profbuf_iter it;

	profbuf_iter_init(&it, r, HDR);
	while (profbuf_iter_next(&it, &rec)) {
		uint64_t id = rec.hdr[0], seq = rec.hdr[1];

		if (profbuf_record_is_overflow(&rec)) {
			rd->lost += profbuf_record_overflow_count(&rec);
			continue;
		}
		rd->records++;
		if (!id || id > MAX_PROCS * MAX_THREADS * 2 ||
		    rec.nstk != seq % MAX_PAYLOAD || seq <= rd->last[id] ||
		    rec.tag != (const void *)(uintptr_t)id) {
			rd->bad++;
			continue;
		}
		rd->last[id] = seq;
		for (size_t i = 0; i < rec.nstk; i++)
			if (rec.stk[i] != id * 31 + seq + i)
				rd->bad++;
	}
	if (profbuf_iter_malformed(&it))
		rd->bad++;
}

/* Read until EOF, or until @ms pass without progress. */
static bool drain(struct reader *rd, int ms)
{
	struct profbuf_read r;
	int idle = 0;

	while (idle < ms) {
		int rc = profbuf_read_timeout(buf, 10000000, &r);

		if (rc == -ETIMEDOUT || (!rc && !r.ndata && !r.eof)) {
			idle += 10;
			continue;
		}
		if (rc) {
			rd->bad++;
			return false;
		}
		if (r.eof)
			return true;
		idle = 0;
		check_read(rd, &r);
	}
	return false;
}

int main(int argc, char **argv)
{
	static struct reader rd;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), off, ring, total;
	uint64_t accepted = 0, rng, deadline, kill_at[MAX_PROCS];
	struct profbuf_stats st;
	pthread_t units[MAX_PROCS];
	pid_t pids[MAX_PROCS];
	int alive;
	bool eof;
	char fields[512];
	char *m;

	stress_parse(argc, argv, PROG, flags);
	if (opt.procs < 1 || opt.procs > MAX_PROCS || opt.threads < 1 ||
	    opt.threads > MAX_THREADS) {
		fprintf(stderr, PROG ": --procs 1..16, --threads 1..8\n");
		return 2;
	}
	off = (sizeof(struct area) + page - 1) & ~(page - 1);
	ring = profbuf_shared_size(HDR, (size_t)opt.bufwords,
				   (size_t)opt.bufwords / 4);
	total = off + ring;
	m = mmap(NULL, total, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	area = (struct area *)m;
	buf = profbuf_shared_init(m + off, ring, HDR, (size_t)opt.bufwords,
				  (size_t)opt.bufwords / 4);
	if (!buf)
		return 1;
	rng = (uint64_t)opt.seed * 0x9e3779b97f4a7c15ull + 1;
	deadline = stress_now_ns() + (uint64_t)opt.seconds * 1000000000u;
	if (TESTING_UNDER_TSAN && opt.kill) {
		printf("# --kill ignored under TSan: writers run as threads\n");
		opt.kill = false;
	}
	for (int i = 0; i < opt.procs; i++) {
		kill_at[i] = opt.kill ? stress_now_ns() +
						stress_rand(&rng) %
							((uint64_t)opt.seconds *
							 1000000000u)
				      : 0;
		pids[i] = start_writer(i, &units[i]);
	}
	for (alive = (int)opt.procs; alive > 0;) {
		struct profbuf_read r;
		uint64_t now = stress_now_ns();

		if (!profbuf_read_timeout(buf, 10000000, &r))
			check_read(&rd, &r);
		if (now >= deadline)
			atomic_store(&area->stop, 1);
		for (int i = 0; i < opt.procs; i++) {
			if (!pids[i])
				continue;
			if (kill_at[i] && now >= kill_at[i]) {
				kill(pids[i], SIGKILL);
				kill_at[i] = 0;
			}
			if (writer_done(pids[i], units[i])) {
				pids[i] = 0;
				alive--;
			}
		}
	}
	profbuf_close(buf);
	eof = drain(&rd, 3000);
	for (int p = 0; p < opt.procs; p++)
		for (int t = 0; t < opt.threads; t++)
			for (int h = 0; h < 2; h++)
				accepted +=
					atomic_load(&area->w[p][t][h].accepted);
	profbuf_stats(buf, &st);
	if (eof) {
		uint64_t got = rd.records + rd.lost;
		uint64_t slack =
			opt.kill ? 2 * (uint64_t)(opt.procs * opt.threads) : 0;

		if (got < accepted || got > accepted + slack)
			rd.bad++;
	}
	snprintf(fields, sizeof(fields),
		 "seconds=%ld procs=%ld threads=%ld ops=%llu verified=%llu "
		 "lost=%llu dead_skipped=%llu stalled=%d unowned=%u",
		 opt.seconds, opt.procs, opt.threads,
		 (unsigned long long)accepted, (unsigned long long)rd.records,
		 (unsigned long long)rd.lost,
		 (unsigned long long)st.dead_skipped, !eof, st.stalled_unowned);
	munmap(m, total);
	return stress_summary(PROG, fields, rd.bad);
}
