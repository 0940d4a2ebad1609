// SPDX-License-Identifier: MIT
/*
 * prof/agent/wall.c - wall-clock sampling (PROFRING_PROF_MODE_WALL): every
 * thread, running or sleeping, at a rate of real time.
 *
 * Protocol.
 *
 * The ticker.  A thread of the library (started with every signal
 * blocked, so it never takes one; its allocations ignored by the heap
 * profiler; never sampled itself) wakes on CLOCK_MONOTONIC deadlines a
 * period apart on average (1e9 / hz ns, each interval drawn uniformly
 * from half to one and a half periods: ticks a fixed period apart would
 * land on the same phases of every cycle of a program whose own cycle is
 * a multiple of it, 100 ms under 50 Hz, and show it 10 points off) and
 * keeps, in a table of its own, an entry per thread of the program but
 * itself, the in-process collector and the profiler's threads in
 * sampler.h's own_tids (a served window's): the real time it owes the
 * thread since its last sample (a sample carries it in whole periods, the
 * remainder owed on).  It lists /proc/self/task every
 * WALL_RESCAN_TICKS ticks (a third of its cost when done every tick), and
 * at the next tick after a thread started through our pthread_create (it
 * sets prof_smp.wall_rescan, sampler_threads.c); a thread started
 * otherwise is found within WALL_RESCAN_TICKS ticks, and its time before
 * that is not in the profile.  A thread that exited is skipped (its CPU
 * clock cannot be read) until the next listing frees its entry.  Each
 * tick, every entry is owed the time since the last tick, and the ticker
 * visits the threads owed a whole period or more from a rotating start,
 * sending at most PROFRING_PROF_WALL_CAP signals a tick; every thread it
 * does not reach keeps owing, so a sample weighs all the time since the
 * thread's last one and the wall time in the profile stays right however
 * many threads there are (at worst their samples grow rarer and
 * heavier).
 *
 * The signal.  The sampler's real-time signal, sent with
 * rt_tgsigqueueinfo() to the thread, si_code SI_QUEUE, si_pid our pid,
 * and in si_value (64 bits): a magic tag, the session's generation (low
 * 16 bits), the state (running or sleeping), the thread's slot and the
 * periods it stands for.  So the handler (sampler.c) knows the signal for
 * the current session's (a signal of an earlier session, or one the
 * program forged with sigqueue() and a wrong tag, is ignored) and writes
 * a PROF_REC_WALL record with that weight, never weighed by CPU time
 * (thread_cpu.c is the CPU mode's).
 *
 * Threads that did not run.  A thread asleep since its last sample would
 * show the same stack again: async-profiler's answer, taken here, is not
 * to interrupt it and to count its last stack again.  The handler, as it
 * ends, stores the thread's CPU clock and the state it found in the
 * thread's slot (a static array, so it never moves or goes away under a
 * handler; relaxed atomics: a value, nothing published with it; the
 * ticker zeroes a slot before sending, and the kernel's delivery orders
 * that store before the handler's).  At a visit the ticker reads the thread's CPU clock
 * (prof_smp_thread_cpu_ns(): glibc's encoding of a thread's CPU clock,
 * which the CPU mode's timers use too):
 *   - slot still 0: the signal is pending (the thread has not run since):
 *     nothing, the time stays owed;
 *   - CPU less than WALL_IDLE_NS past the slot: it has not run since its
 *     sample but to take it (the handler's tail, sigreturn, its blocking
 *     call entered again): a PROF_REC_REPEAT record, written by the
 *     ticker into the ring with the thread's tid, for the whole periods
 *     owed; the aggregation adds them to the thread's last wall stack.
 *     That is when the last sample found it in a blocking call (the slot
 *     keeps the state beside the CPU time): it is still there, sleeping.
 *     If the last sample found it in its own code, it was preempted since
 *     (runnable) or it blocked right after the sample (on a loaded
 *     machine a thread that was preempted for long often resumes, takes
 *     the signal and blocks at once): its /proc/self/task/TID/stat tells
 *     (a read for such threads only): R, a REPEAT, running; else its last
 *     stack is stale, and it gets a signal;
 *   - else a signal.
 * The state.  The handler tells it from the interrupted context (x86-64,
 * arm64): a thread the signal took out of a blocking system call was
 * sleeping; one it took in user code was running (on a CPU, or runnable
 * and waiting for one).  The kernel, running a handler on a thread in a
 * system call, either makes the call return EINTR (nanosleep, poll,
 * select, epoll_wait...: the return register holds -EINTR, the PC
 * follows the system call instruction) or arranges for it to be made
 * again (SA_RESTART: the PC is back on the instruction).  So: sleeping if
 * the PC is on a system call instruction, or follows one with -EINTR in
 * the return register; else running.  The instruction bytes are read
 * only within the PC's page (code the thread was running: mapped and
 * readable).  Elsewhere the ticker's guess, sent in si_value, stands:
 * running if /proc/self/task/TID/stat says R as it sends.
 * A thread that blocks our signal for good (a raw clone with every signal
 * blocked) keeps its signal pending and is not sampled again; threads
 * started by our pthread_create unblock it (sampler_threads.c).
 *
 * Sessions.  The sampler starts the ticker under its lock after setting
 * `active` (sampler.c), and stops it (a flag, then the join: at most one
 * period) before clearing `active`: so no REPEAT record is written after
 * stop, and the ring is not closed under the ticker.  A forked child has
 * no ticker (sampler.c's fork handler says so).  When no thread of the
 * program is left (main ended with pthread_exit()) the ticker ends its
 * own thread, so that it never keeps the process alive (in-process, the
 * collector then ends it with exit(0); under the launcher the process
 * ends as it would have).
 *
 * Cost to the program: the signal interrupts blocking calls; those the
 * kernel does not restart under SA_RESTART (nanosleep, poll, epoll_wait,
 * select, ...) return EINTR (profring-prof(1), --mode wall;
 * bench/RESULTS.md, wall_overhead, has what that did to real programs).
 * The handler counts the calls it cut short on the thread
 * (prof_wall_cuts), so that the interposed sleeps
 * (sleep_hook.c) can resume one that only our signal cut short.
 */
#include "prof/agent/sampler_impl.h"
#include "prof/agent/ring_guard.h"
#include "prof/common/procfs.h"
#include "prof/agent/heap.h"
#include "prof/agent/sleep_hook.h"

#include "ring/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define WALL_MAX_THREADS 4096u /* slots: threads beyond are not sampled */
#define WALL_IDLE_NS 100000u /* CPU a thread may use and still not "run" */
#define WALL_MAGIC UINT64_C(0x7761)
#define WALL_MAX_WEIGHT 0xffffu
#define WALL_RESCAN_TICKS 10u /* list /proc/self/task at least this often */

/* si_value: magic 63..48, generation 47..32, state 31, slot 30..16,
 * weight 15..0. */
#define WALL_V_MAGIC(v) ((v) >> 48)
#define WALL_V_GEN(v) (((v) >> 32) & 0xffffu)
#define WALL_V_STATE(v) (((v) >> 31) & 1u)
#define WALL_V_SLOT(v) (((v) >> 16) & 0x7fffu)
#define WALL_V_WEIGHT(v) ((v)&0xffffu)

_Static_assert(WALL_MAX_THREADS <= 0x8000u, "a slot fits 15 bits");

/* Written by the handler, read and zeroed by the ticker (relaxed). */
static _Atomic uint64_t slots[WALL_MAX_THREADS];

_Thread_local _Atomic unsigned long prof_wall_cuts
	__attribute__((tls_model("initial-exec")));

/* A call of this thread cut short: one more in prof_wall_cuts. */
static void count_cut(void)
{
	/* Relaxed: see sleep_hook.h (only this thread's handler writes). */
	atomic_store_explicit(
		&prof_wall_cuts,
		atomic_load_explicit(&prof_wall_cuts, memory_order_relaxed) + 1,
		memory_order_relaxed);
}

/* The ticker's own table: one entry per slot. */
struct wall_thread {
	pid_t tid; /* 0: a free slot */
	bool seen; /* in the latest listing */
	bool sent; /* a signal was sent since it was found */
	uint64_t owed_ns; /* real time since its last sample */
};

static struct {
	struct wall_thread *t; /* WALL_MAX_THREADS entries */
	uint32_t hi; /* slots at and above are free */
	pid_t self;
	uint32_t rotor;
	unsigned int since_rescan; /* ticks since the last listing */
	uint64_t period_ns;
	uint64_t rng; /* xorshift64 state, for the ticks' jitter */
	atomic_bool quit; /* relaxed: a flag, nothing published with it */
} ticker;

static uint64_t wall_value(const siginfo_t *si)
{
	return (uint64_t)(uintptr_t)si->si_value.sival_ptr;
}

/**
 * prof_wall_is_ours() - is @si a wall signal of the current session?
 * Async-signal-safe (the handler's, after its seq_cst load of active).
 */
bool prof_wall_is_ours(const siginfo_t *si)
{
	uint64_t v = wall_value(si);

	return si->si_code == SI_QUEUE && si->si_pid == prof_smp.pid &&
	       WALL_V_MAGIC(v) == WALL_MAGIC &&
	       WALL_V_GEN(v) == ((unsigned int)prof_smp.generation & 0xffffu) &&
	       WALL_V_SLOT(v) < WALL_MAX_THREADS && WALL_V_WEIGHT(v);
}

/**
 * prof_wall_weight() - the periods a wall signal stands for, and its state
 * (PROF_WALL_*) in @state.  Async-signal-safe.
 */
uint64_t prof_wall_weight(const siginfo_t *si, uint64_t *state)
{
	uint64_t v = wall_value(si);

	*state = WALL_V_STATE(v) ? PROF_WALL_SLEEPING : PROF_WALL_RUNNING;
	return WALL_V_WEIGHT(v);
}

/*
 * The state of the interrupted thread, told from @ucontext (see the
 * protocol); @guess where the architecture gives no way.  A call cut
 * short is counted (count_cut()).
 */
uint64_t prof_wall_state(void *ucontext, uint64_t guess)
{
#if defined(__x86_64__)
	const ucontext_t *uc = ucontext;
	const unsigned char *pc =
		(const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t off = (uintptr_t)pc & 4095u;
	long ret = (long)uc->uc_mcontext.gregs[REG_RAX];

	(void)guess;
	if (off <= 4094u && pc[0] == 0x0f && pc[1] == 0x05)
		return PROF_WALL_SLEEPING; /* to be made again */
	if (off >= 2u && ret == -EINTR && pc[-2] == 0x0f && pc[-1] == 0x05) {
		count_cut();
		return PROF_WALL_SLEEPING; /* cut short */
	}
	return PROF_WALL_RUNNING;
#elif defined(__aarch64__)
	const ucontext_t *uc = ucontext;
	const uint32_t *pc = (const uint32_t *)uc->uc_mcontext.pc;
	uintptr_t off = (uintptr_t)pc & 4095u;
	const uint32_t svc0 = 0xd4000001u;

	(void)guess;
	if (!(off & 3u) && pc[0] == svc0)
		return PROF_WALL_SLEEPING;
	if (!(off & 3u) && off >= 4u &&
	    (long)uc->uc_mcontext.regs[0] == -EINTR && pc[-1] == svc0) {
		count_cut();
		return PROF_WALL_SLEEPING;
	}
	return PROF_WALL_RUNNING;
#else
	(void)ucontext;
	return guess;
#endif
}

/**
 * prof_wall_done() - the handler is done with a wall signal: the thread's
 * CPU clock and the sample's @state (PROF_WALL_*) into its slot (see the
 * protocol).  Async-signal-safe: clock_gettime() is, and errno is the
 * handler's to restore.
 */
void prof_wall_done(const siginfo_t *si, uint64_t state)
{
	struct timespec ts;
	uint64_t ns = 0;

	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	/* Relaxed: a value (see the protocol); never 0, which is pending. */
	atomic_store_explicit(&slots[WALL_V_SLOT(wall_value(si))],
			      (ns | 1u) << 1 | (state & 1u),
			      memory_order_relaxed);
}

/* ---- the ticker ---- */

/* Is thread @tid on a CPU or runnable ('R' in its stat)? */
static bool stat_running(pid_t tid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (prof_read_small(path, buf, sizeof(buf)) < 0)
		return false;
	p = strrchr(buf, ')'); /* the name may hold anything */
	return p && p[1] == ' ' && p[2] == 'R';
}

/* The state the signal carries: the handler tells it where it can. */
static bool wall_guess_running(pid_t tid)
{
#if defined(__x86_64__) || defined(__aarch64__)
	(void)tid;
	return true;
#else
	return stat_running(tid);
#endif
}

static struct wall_thread *entry_of(pid_t tid, uint32_t *free_slot)
{
	*free_slot = ticker.hi;
	for (uint32_t i = 0; i < ticker.hi; i++) {
		if (ticker.t[i].tid == tid)
			return &ticker.t[i];
		if (!ticker.t[i].tid && *free_slot == ticker.hi)
			*free_slot = i;
	}
	return NULL;
}

/*
 * List the program's threads: new ones get a slot (and are counted),
 * gone ones free theirs.  Return: the program's threads listed, or -1 if
 * the listing failed.
 */
static int rescan(void)
{
	struct wall_thread *e;
	struct dirent *d;
	uint32_t slot;
	int n = 0;
	pid_t tid;
	DIR *dir = opendir("/proc/self/task");

	if (!dir)
		return -1;
	for (uint32_t i = 0; i < ticker.hi; i++)
		ticker.t[i].seen = false;
	while ((d = readdir(dir))) {
		tid = (pid_t)atoi(d->d_name);
		if (tid <= 0 || tid == ticker.self ||
		    tid == prof_smp.exclude_tid ||
		    tid == prof_smp.own_tids[0] || tid == prof_smp.own_tids[1])
			continue;
		n++;
		e = entry_of(tid, &slot);
		if (!e && slot < WALL_MAX_THREADS) {
			if (slot == ticker.hi)
				ticker.hi++;
			e = &ticker.t[slot];
			*e = (struct wall_thread){ .tid = tid };
			prof_smp_count(&prof_smp.counters->threads);
		}
		if (e)
			e->seen = true;
	}
	closedir(dir);
	for (uint32_t i = 0; i < ticker.hi; i++)
		if (!ticker.t[i].seen)
			ticker.t[i].tid = 0;
	while (ticker.hi && !ticker.t[ticker.hi - 1].tid)
		ticker.hi--;
	return n;
}

/* A REPEAT record for @e's whole periods owed (see the protocol). */
static void repeat(struct wall_thread *e, uintptr_t state)
{
	uint64_t hdr[PROF_HDR_WORDS], periods = e->owed_ns / ticker.period_ns;
	int rc;

	hdr[PROF_HDR_KIND_PERIODS] =
		prof_hdr_kind_word(PROF_REC_REPEAT, periods);
	hdr[PROF_HDR_TID] = (uint64_t)e->tid;
	hdr[PROF_HDR_PID] = (uint64_t)prof_smp.pid;
	rc = prof_ring_write(prof_smp.buf, NULL, (int64_t)ring_clock_ticks(),
			     hdr, PROF_HDR_WORDS, &state, 1);
	prof_smp_count(rc ? &prof_smp.counters->refused
			  : &prof_smp.counters->written);
	e->owed_ns -= periods * ticker.period_ns;
}

/* Send @e's thread (slot @i) its signal.  Return: true if sent. */
static bool send_signal(struct wall_thread *e, uint32_t i)
{
	uint64_t w = e->owed_ns / ticker.period_ns;
	uint64_t v =
		WALL_MAGIC << 48 |
		((uint64_t)(unsigned int)prof_smp.generation & 0xffffu) << 32 |
		(uint64_t)!wall_guess_running(e->tid) << 31 | (uint64_t)i << 16;
	siginfo_t si;

	if (w > WALL_MAX_WEIGHT)
		w = WALL_MAX_WEIGHT;
	v |= w;
	memset(&si, 0, sizeof(si));
	si.si_signo = prof_smp.installed_signo;
	si.si_code = SI_QUEUE;
	si.si_pid = prof_smp.pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)v;
	/* Relaxed: see the protocol (the delivery orders it). */
	atomic_store_explicit(&slots[i], 0, memory_order_relaxed);
	if (syscall(SYS_rt_tgsigqueueinfo, prof_smp.pid, e->tid,
		    prof_smp.installed_signo, &si))
		return false;
	e->sent = true;
	e->owed_ns -= w * ticker.period_ns;
	return true;
}

/* One tick's visits: at most PROFRING_PROF_WALL_CAP signals. */
static void visit(void)
{
	unsigned int sent = 0;
	uint32_t k, i = ticker.rotor < ticker.hi ? ticker.rotor : 0;
	uint64_t cpu, slot, after;

	for (k = 0; k < ticker.hi && sent < PROFRING_PROF_WALL_CAP;
	     k++, i = (i + 1) % ticker.hi) {
		struct wall_thread *e = &ticker.t[i];

		if (!e->tid || e->owed_ns < ticker.period_ns)
			continue; /* not a whole period owed yet */
		cpu = prof_smp_thread_cpu_ns(e->tid);
		if (!cpu)
			continue; /* gone: the next listing frees it */
		if (e->sent) {
			/* Relaxed: see the protocol. */
			slot = atomic_load_explicit(&slots[i],
						    memory_order_relaxed);
			if (!slot)
				continue; /* pending: it has not run */
			after = slot >> 1; /* (CPU ns | 1) << 1 | state */
			if (cpu < after + WALL_IDLE_NS &&
			    (slot & 1u) == PROF_WALL_SLEEPING) {
				repeat(e, PROF_WALL_SLEEPING); /* still there */
				continue;
			}
			if (cpu < after + WALL_IDLE_NS &&
			    stat_running(e->tid)) {
				repeat(e, PROF_WALL_RUNNING); /* preempted */
				continue;
			}
			/* It ran; or it blocked right after a sample in its
			 * own code, which is stale: a sample. */
		}
		sent += send_signal(e, i);
	}
	ticker.rotor = i;
}

/*
 * The next interval: the period times a uniform 0.5 to 1.5 (mean: the
 * period), so that a program whose own cycle is a multiple of the period
 * is not sampled at the same phases of every cycle (aliasing).
 */
static uint64_t next_interval(void)
{
	ticker.rng ^= ticker.rng << 13;
	ticker.rng ^= ticker.rng >> 7;
	ticker.rng ^= ticker.rng << 17;
	return ticker.period_ns / 2 + ticker.rng % (ticker.period_ns + 1);
}

static void *ticker_main(void *unused)
{
	uint64_t last = ring_clock_mono_ns(), next = last, now;
	struct timespec ts;

	(void)unused;
	prof_heap_ignore_thread(); /* our allocations are not the program's */
	ticker.self = (pid_t)syscall(SYS_gettid);
	ticker.rng = last | 1;
	/* Relaxed: a flag (stop joins us after setting it). */
	while (!atomic_load_explicit(&ticker.quit, memory_order_relaxed)) {
		next += next_interval();
		ts.tv_sec = (time_t)(next / 1000000000u);
		ts.tv_nsec = (long)(next % 1000000000u);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
		now = ring_clock_mono_ns();
		if (now > next + ticker.period_ns)
			next = now; /* overslept: the time is owed all the same */
		/* Relaxed: a hint; the listing itself is the truth. */
		if ((atomic_exchange_explicit(&prof_smp.wall_rescan, false,
					      memory_order_relaxed) ||
		     ++ticker.since_rescan >= WALL_RESCAN_TICKS)) {
			ticker.since_rescan = 0;
			if (rescan() == 0)
				break; /* the program's last thread is gone */
		}
		for (uint32_t i = 0; i < ticker.hi; i++)
			if (ticker.t[i].tid)
				ticker.t[i].owed_ns += now - last;
		last = now;
		visit();
	}
	return NULL;
}

/**
 * prof_wall_start() - start the ticker for the session prof_smp describes
 * (under prof_smp.lock, `active` set).
 *
 * Return: 0 or -errno (no ticker).
 */
int prof_wall_start(void)
{
	sigset_t all, old;
	int rc;

	/*
	 * The table and the thread (glibc allocates its TLS with malloc)
	 * are the profiler's, not the program's: under the launcher the heap
	 * profiler is already on here (agent.c starts it first).
	 */
	prof_heap_ignore_begin();
	ticker.t = calloc(WALL_MAX_THREADS, sizeof(*ticker.t));
	if (!ticker.t) {
		prof_heap_ignore_end();
		return -ENOMEM;
	}
	ticker.rotor = ticker.hi = 0;
	ticker.since_rescan = WALL_RESCAN_TICKS; /* list at the first tick */
	ticker.period_ns = prof_smp.period_ns ? prof_smp.period_ns : 1;
	/* Relaxed: the thread's creation publishes it. */
	atomic_store_explicit(&ticker.quit, false, memory_order_relaxed);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = prof_real_pthread_create(&prof_smp.wall_thread, NULL, ticker_main,
				      NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		free(ticker.t);
		ticker.t = NULL;
	}
	prof_heap_ignore_end();
	if (rc)
		return -rc;
	prof_smp.wall = true;
	return 0;
}

/**
 * prof_wall_stop() - stop the ticker and wait for it (under prof_smp.lock,
 * before `active` is cleared); a no-op if none runs.
 */
void prof_wall_stop(void)
{
	if (!prof_smp.wall)
		return;
	/* Relaxed: a flag; the join orders the rest. */
	atomic_store_explicit(&ticker.quit, true, memory_order_relaxed);
	pthread_join(prof_smp.wall_thread, NULL);
	prof_smp.wall = false;
	prof_heap_ignore_begin();
	free(ticker.t);
	prof_heap_ignore_end();
	ticker.t = NULL;
}
