// SPDX-License-Identifier: MIT
/*
 * prof/sampler.c - the signal side of profring-prof: the handler, the
 * CPU-time timers, and the thread tracking that arms them.
 *
 * Protocol.
 *
 * Our signal.  Samples arrive on a real-time signal of our own, chosen at
 * the first start: the highest one from SIGRTMAX down to SIGRTMIN + 2
 * whose disposition is still SIG_DFL (glibc keeps two below SIGRTMIN for
 * itself; libraries that take one usually take SIGRTMIN or SIGRTMIN + 1).
 * So a program's SIGPROF handler, its setitimer(ITIMER_PROF) and threads
 * that sigwait() for SIGPROF see nothing of ours.  If the program later
 * installs its own handler for our signal (the sigaction()/signal() hooks
 * in hooks.c call prof_sampler_taken_over() first), sampling stops, the
 * counters say so, and the program gets the signal.
 *
 * The handler and a session.  A session publishes its configuration (the
 * ring, the unwinder, the frame limit, a generation number, the counters)
 * in plain fields, then sets `active` with a seq_cst store.  The handler,
 * which may run on any thread at any moment, increments `inflight`, then
 * loads `active` (both seq_cst) and samples only if it is set; it
 * decrements `inflight` (release) when done.  Stop clears `active` and then
 * waits for `inflight` to read 0 (both seq_cst).  This is Dekker's
 * pattern: in the single seq_cst order either the handler's load of
 * `active` comes after stop's store (it sees 0 and does nothing), or its
 * increment comes before stop's load of `inflight` (stop waits for it).  So
 * once stop returns no handler touches the ring, and the ring can be closed
 * and freed; the handler's seq_cst load of `active` is also the acquire
 * that makes the configuration fields visible.  The handler stays
 * installed after stop: a signal still pending would otherwise kill the
 * process.  The handler blocks only its own signal while it runs: every
 * other signal, SIGTERM and SIGINT among them, still reaches the program
 * (a handler stuck for any reason never makes the process unkillable).
 * A program's handler that interrupts ours and never returns (siglongjmp)
 * leaves inflight raised and perhaps a reserved record unwritten: stop
 * gives up after two seconds and the session's ring is leaked rather than
 * freed under it.
 *
 * Stale signals.  Timer signals carry the session's generation in
 * si_value; a signal from an earlier session's timer that arrives during
 * a later session is ignored, and so is any signal that did not come from
 * a timer of ours (kill(), sigqueue()).
 *
 * Timers.  Each thread gets a POSIX timer on its own CPU-time clock whose
 * signal goes to that thread (SIGEV_THREAD_ID), so threads are sampled in
 * proportion to their CPU time and the handler runs on the sampled thread.
 * Timers live in a registry (tid -> timer) under a mutex, touched only
 * outside signal handlers: by start (which arms every thread listed in
 * /proc/self/task), by new threads (which arm themselves as they start, if
 * a session is active), by exiting threads (a pthread key destructor
 * deletes their timer) and by stop (which deletes them all).  A thread
 * starting during start() is armed by whichever of the two takes the
 * registry lock second: a thread replaces any entry for its own tid (the
 * entry may be a dead thread's whose tid was reused), start only adds tids
 * that have none.  Every 200 ms the in-process collector has the registry
 * synced with /proc/self/task: threads our pthread_create never saw
 * (thrd_create, a raw clone) get a timer, dead threads' timers are
 * deleted.  The process timer (--timer process, or when per-thread timers
 * cannot be had) is one POSIX timer on CLOCK_PROCESS_CPUTIME_ID with our
 * signal, to whichever thread runs; POSIX timers, unlike ITIMER_PROF, do
 * not survive exec.
 *
 * Weights.  A CPU-time timer fires at the kernel's tick at most.  A
 * per-thread timer's sample weighs the thread's CPU since its last
 * sample in whole periods, the remainder carried to the next, and a
 * thread started through our pthread_create leaves, as it exits, a
 * sample for the CPU it used since its last one (or since it started):
 * thread_cpu.c's protocol, which keeps the CPU of threads shorter than a
 * period or a tick in the profile.  The exit sample is written by the
 * key destructor (below) under the registry's lock, only while the
 * session arms threads, into the same ring by the same lock-free write as
 * the handler's, and counted as written or refused like a signal's.  A
 * process-timer signal carries the expiries it stands for (1 + overrun).
 *
 * Thread count.  `threads` counts each thread once: when a start or a
 * rescan arms a tid that had no timer, or when a thread starting through
 * our pthread_create finds none for its tid (one it finds was armed for it
 * by a rescan that saw it first).
 *
 * Stack bounds.  The frame-pointer unwinder needs the thread's stack
 * bounds; pthread_getattr_np() is not async-signal-safe, so they are read
 * when a thread starts (our pthread_create, pthread_hook.c) and for the main
 * thread when the library loads, and kept in initial-exec TLS, which the
 * handler reads without allocating.
 */
#include "prof/sampler.h"
#include "prof/heap.h"
#include "prof/hooks.h"
#include "prof/thread_cpu.h"
#include "prof/unwind.h"

#include "ring/clock.h"
#include "ring/compiler.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* A thread's own state, read by the handler. */
struct prof_thread {
	struct prof_stack_bounds bounds;
	pid_t tid; /* 0 until first needed */
};

static _Thread_local struct prof_thread prof_self
	__attribute__((tls_model("initial-exec")));

struct timer_entry {
	pid_t tid;
	bool seen; /* in the latest /proc/self/task listing */
	timer_t timer;
	uint64_t base_ns; /* the thread's CPU clock when armed */
};

static struct {
	/* Read by the handler; written by start before `active` is set. */
	struct profbuf *buf;
	enum profring_prof_unwinder unwinder;
	unsigned int max_frames;
	int generation;
	uint64_t period_ns;
	/*
	 * Where the handler counts (relaxed counters: nothing is published
	 * through them).  A sample is either written or refused.
	 */
	struct prof_counters *counters;
	/* The process's id, for the records; reset in a fork child. */
	pid_t pid;
	/*
	 * false: the process timer.  Relaxed everywhere: written under
	 * `lock`, published to the handler by the seq_cst store of `active`.
	 */
	atomic_bool thread_timers;
	/* Our signal: 0 until chosen; taken by the program: chosen anew. */
	atomic_int signo;

	atomic_int active;
	atomic_uint inflight;

	/* The timer registry; everything below is under `lock`. */
	pthread_mutex_t lock;
	bool arming; /* new threads arm themselves */
	bool key_ok; /* thread_exit_key was created */
	pid_t exclude_tid;
	struct timer_entry *timers;
	size_t ntimers;
	size_t captimers;
	/* Names of the session's threads that exited, taken as they went. */
	struct tid_name *exited;
	size_t nexited;
	size_t capexited;
	bool counting; /* a session runs: count threads */
	int64_t exit_carry_ns; /* exiting threads' CPU (thread_cpu.c) */
	bool proc_timer_armed;
	timer_t proc_timer;
	int installed_signo; /* the signal our handler is installed for */
} sampler = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_key_t thread_exit_key;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static pid_t current_tid(void)
{
	if (!prof_self.tid)
		prof_self.tid = (pid_t)syscall(SYS_gettid);
	return prof_self.tid;
}

static void record_stack_bounds(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &attr))
		return;
	if (!pthread_attr_getstack(&attr, &addr, &size)) {
		prof_self.bounds.lo = (uintptr_t)addr;
		prof_self.bounds.hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

/**
 * prof_sampler_self() - the calling thread's id and stack bounds, as the
 * handler knows them (for the heap profiler's unwinds, heap.c).
 * @bounds: receives the bounds (zeros if unknown).
 *
 * Async-signal-safe: initial-exec TLS, and gettid() the first time.
 * Return: the thread's id.
 */
pid_t prof_sampler_self(struct prof_stack_bounds *bounds)
{
	*bounds = prof_self.bounds;
	return current_tid();
}

/* ---- the handler ---- */

static void count(_Atomic uint64_t *c)
{
	/* Relaxed: a counter (see the sampler's fields). */
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static size_t take_stack(void *ucontext, uintptr_t *pcs)
{
	struct prof_unwind_result res;
	bool fp = sampler.unwinder != PROFRING_PROF_UNWIND_LIBUNWIND;

	/* libunwind takes the loader's lock: not while anyone holds it. */
	if (!fp && prof_hooks_in_loader()) {
		fp = true;
		count(&sampler.counters->unwind_fallback);
	}
	if (fp)
		prof_unwind_fp(ucontext, &prof_self.bounds, pcs,
			       sampler.max_frames, &res);
	else
		prof_unwind_libunwind(ucontext, pcs, sampler.max_frames, &res);
	if (res.truncated)
		count(&sampler.counters->truncated);
	if (res.unchecked)
		count(&sampler.counters->unchecked);
	return res.n;
}

/* Is this signal one of the current session's samples? */
static bool signal_is_ours(const siginfo_t *si)
{
	return si->si_code == SI_TIMER &&
	       si->si_value.sival_int == sampler.generation;
}

/*
 * The periods a timer signal stands for (see Weights): a per-thread
 * timer's, the thread's CPU since its last sample; the process timer's,
 * 1 + the expiries it missed.
 */
static uint64_t weigh(const siginfo_t *si)
{
	uint64_t expiries =
		1 + (si->si_overrun > 0 ? (uint64_t)si->si_overrun : 0);

	/* Relaxed: published by the seq_cst store of active (start). */
	if (!atomic_load_explicit(&sampler.thread_timers, memory_order_relaxed))
		return expiries;
	return prof_thread_cpu_weigh(sampler.generation, sampler.period_ns,
				     expiries);
}

static void sample(const siginfo_t *si, void *ucontext)
{
	uintptr_t pcs[PROFRING_PROF_MAX_FRAMES];
	uint64_t hdr[PROF_HDR_WORDS];
	size_t n;
	int rc;

	if (!signal_is_ours(si))
		return;
	n = take_stack(ucontext, pcs);
	hdr[PROF_HDR_KIND_PERIODS] =
		prof_hdr_kind_word(PROF_REC_SAMPLE, weigh(si));
	hdr[PROF_HDR_TID] = (uint64_t)current_tid();
	hdr[PROF_HDR_PID] = (uint64_t)sampler.pid;
	rc = profbuf_write(sampler.buf, NULL, (int64_t)ring_clock_ticks(), hdr,
			   PROF_HDR_WORDS, pcs, n);
	count(rc ? &sampler.counters->refused : &sampler.counters->written);
}

static void on_sample(int sig, siginfo_t *si, void *ucontext)
{
	int saved_errno = errno;

	(void)sig;
	/* A cheap filter only; the seq_cst load below decides. */
	if (!atomic_load_explicit(&sampler.active, memory_order_relaxed))
		goto out;
	/*
	 * The increment and the load pair with stop's store of active and
	 * load of inflight (Dekker); the load also pairs with start's store
	 * of active, which publishes the configuration.
	 */
	atomic_fetch_add_explicit(&sampler.inflight, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&sampler.active, memory_order_seq_cst))
		sample(si, ucontext);
	/*
	 * Release: our ring write and counters happen before stop's seq_cst
	 * load in wait_handlers() sees inflight 0.
	 */
	atomic_fetch_sub_explicit(&sampler.inflight, 1, memory_order_release);
out:
	errno = saved_errno;
}

/**
 * prof_sampler_is_our_handler() - is @fn the sampling handler?  For the
 * sigaction() hook: installing it is ours, not a takeover.
 */
bool prof_sampler_is_our_handler(const void *fn)
{
	return fn == (const void *)on_sample;
}

/* The highest real-time signal nobody handles (see the protocol). */
static int choose_signal(void)
{
	struct sigaction sa;

	for (int sig = SIGRTMAX; sig >= SIGRTMIN + 2; sig--)
		if (!prof_hooks_real_sigaction(sig, NULL, &sa) &&
		    !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL)
			return sig;
	return -EBUSY;
}

static int install_handler(void)
{
	struct sigaction sa;
	int sig = atomic_load_explicit(&sampler.signo, memory_order_relaxed);

	if (sig && sig == sampler.installed_signo)
		return 0;
	sig = choose_signal();
	if (sig < 0)
		return sig;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	/* Only our own signal is blocked meanwhile (the kernel's default):
	 * everything else still reaches the program (see the protocol). */
	sigemptyset(&sa.sa_mask);
	if (prof_hooks_real_sigaction(sig, &sa, NULL))
		return -errno;
	sampler.installed_signo = sig;
	/* Relaxed: read by the hooks and by start, under or after `lock`. */
	atomic_store_explicit(&sampler.signo, sig, memory_order_relaxed);
	return 0;
}

/* ---- timers (all under sampler.lock) ---- */

/* The CPU-time clock of thread @tid (glibc's MAKE_THREAD_CPUCLOCK). */
static clockid_t thread_cpu_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned int)tid << 3) | 4u /* per thread */ |
			   2u /* scheduler clock */);
}

static struct timespec period_timespec(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	return ts;
}

/* Thread @tid's CPU time now, or 0 if it cannot be read (it exited). */
static uint64_t thread_cpu_ns(pid_t tid)
{
	struct timespec ts;

	if (clock_gettime(thread_cpu_clock(tid), &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int timer_arm(pid_t tid, timer_t *out)
{
	struct sigevent sev;
	struct itimerspec its;
	int err;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sampler.installed_signo;
	sev.sigev_value.sival_int = sampler.generation;
	sev._sigev_un._tid = tid;
	if (timer_create(thread_cpu_clock(tid), &sev, out))
		return -errno;
	its.it_interval = period_timespec(sampler.period_ns);
	its.it_value = its.it_interval;
	if (timer_settime(*out, 0, &its, NULL)) {
		err = -errno;
		timer_delete(*out);
		return err;
	}
	return 0;
}

static struct timer_entry *timer_find(pid_t tid)
{
	size_t i;

	for (i = 0; i < sampler.ntimers; i++)
		if (sampler.timers[i].tid == tid)
			return &sampler.timers[i];
	return NULL;
}

static void timer_remove(pid_t tid)
{
	struct timer_entry *e = timer_find(tid);

	if (!e)
		return;
	timer_delete(e->timer);
	*e = sampler.timers[--sampler.ntimers];
}

static int timer_add(pid_t tid)
{
	struct timer_entry *v;
	size_t cap;
	int err;

	if (sampler.ntimers == sampler.captimers) {
		cap = sampler.captimers ? 2 * sampler.captimers : 64;
		v = realloc(sampler.timers, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		sampler.timers = v;
		sampler.captimers = cap;
	}
	v = &sampler.timers[sampler.ntimers];
	/* Before the timer: its periods are counted from no earlier. */
	v->base_ns = thread_cpu_ns(tid);
	err = timer_arm(tid, &v->timer);
	if (err)
		return err;
	v->tid = tid;
	v->seen = true;
	sampler.ntimers++;
	return 0;
}

static void timers_delete_all(void)
{
	while (sampler.ntimers)
		timer_remove(sampler.timers[0].tid);
}

/* Delete the timers of threads the latest listing did not show. */
static void timers_prune(void)
{
	size_t i = 0;

	while (i < sampler.ntimers) {
		if (sampler.timers[i].seen)
			i++;
		else
			timer_remove(sampler.timers[i].tid);
	}
}

/*
 * Arm every thread of the process but the collector that has no timer;
 * with @prune, delete the timers of threads that are gone.  At start, and
 * every COLLECT_PERIOD_NS from the collector: that arms the threads our
 * pthread_create never saw (thrd_create, raw clone, threads of a static
 * executable) and retires those whose exit no key destructor reported.
 */
static int timers_sync(bool prune)
{
	struct timer_entry *e;
	struct dirent *d;
	DIR *dir;
	pid_t tid;
	size_t i;
	int err = 0;

	dir = opendir("/proc/self/task");
	if (!dir)
		return -errno;
	for (i = 0; i < sampler.ntimers; i++)
		sampler.timers[i].seen = false;
	while (!err && (d = readdir(dir))) {
		tid = (pid_t)atoi(d->d_name);
		if (tid <= 0 || tid == sampler.exclude_tid)
			continue;
		e = timer_find(tid);
		if (e) {
			e->seen = true;
			continue;
		}
		err = timer_add(tid);
		if (!err)
			count(&sampler.counters->threads);
		if (err == -EINVAL || err == -ESRCH)
			err = 0; /* exited since the listing */
	}
	closedir(dir);
	if (prune && !err)
		timers_prune();
	return err;
}

/* The process-wide timer (see the protocol): @period_ns 0 deletes it. */
static int process_timer_set(uint64_t period_ns)
{
	struct itimerspec its;
	struct sigevent sev;
	int err;

	if (sampler.proc_timer_armed) {
		timer_delete(sampler.proc_timer);
		sampler.proc_timer_armed = false;
	}
	if (!period_ns)
		return 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = sampler.installed_signo;
	sev.sigev_value.sival_int = sampler.generation;
	if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &sampler.proc_timer))
		return -errno;
	its.it_interval = period_timespec(period_ns);
	its.it_value = its.it_interval;
	if (timer_settime(sampler.proc_timer, 0, &its, NULL)) {
		err = -errno;
		timer_delete(sampler.proc_timer);
		return err;
	}
	sampler.proc_timer_armed = true;
	return 0;
}

/* The process timer's thread count: the threads there are now. */
static void count_present_threads(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (atoi(d->d_name) > 0 &&
		    atoi(d->d_name) != sampler.exclude_tid)
			count(&sampler.counters->threads);
	closedir(dir);
}

/* ---- threads ---- */

/* Keep an exiting thread's final name for the profile (under the lock). */
static void note_exited_name(pid_t tid)
{
	struct tid_name *v;
	size_t cap;

	if (sampler.nexited == sampler.capexited) {
		cap = sampler.capexited ? 2 * sampler.capexited : 64;
		v = realloc(sampler.exited, cap * sizeof(*v));
		if (!v)
			return; /* its first sample's name, if any, stands */
		sampler.exited = v;
		sampler.capexited = cap;
	}
	v = &sampler.exited[sampler.nexited];
	memset(v, 0, sizeof(*v));
	if (prctl(PR_GET_NAME, v->name, 0, 0, 0))
		return;
	v->tid = (uint32_t)tid;
	sampler.nexited++;
}

/*
 * A thread's CPU at its start or exit (thread_cpu.c): into the session's
 * exit carry, and one sample of the calling thread, its stack [@leaf, the
 * thread's caller] (@leaf 0: its start routine), for the whole periods
 * that come out of it.  Under the lock, while the session arms threads
 * (so it runs and its ring is open), with our signal blocked on this
 * thread.
 */
static void carry_sample(pid_t tid, int64_t ns, uintptr_t leaf)
{
	uint64_t hdr[PROF_HDR_WORDS], periods;
	uintptr_t pcs[2];
	size_t n;
	int rc;

	periods = prof_thread_cpu_carry(&sampler.exit_carry_ns, ns,
					sampler.period_ns);
	if (!periods)
		return;
	n = prof_thread_cpu_stack(leaf, pcs);
	hdr[PROF_HDR_KIND_PERIODS] =
		prof_hdr_kind_word(PROF_REC_SAMPLE, periods);
	hdr[PROF_HDR_TID] = (uint64_t)tid;
	hdr[PROF_HDR_PID] = (uint64_t)sampler.pid;
	rc = profbuf_write(sampler.buf, NULL, (int64_t)ring_clock_ticks(), hdr,
			   PROF_HDR_WORDS, pcs, n);
	count(rc ? &sampler.counters->refused : &sampler.counters->written);
}

/* Block (@how SIG_BLOCK) or unblock our signal in the calling thread. */
static void mask_our_signal(int how)
{
	/* Relaxed: installed before any thread was armed (start, lock). */
	int sig = atomic_load_explicit(&sampler.signo, memory_order_relaxed);
	sigset_t set;

	if (!sig)
		return;
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(how, &set, NULL);
}

/*
 * A thread exits (the key's destructor): its CPU since its last sample
 * goes into the profile, its timer goes, its name stays.  Our signal
 * stays blocked from here: no sample can interrupt its exit accounting,
 * and none is due after it.
 */
static void thread_exit(void *unused)
{
	struct timer_entry *e;
	uint64_t now = 0;

	(void)unused;
	mask_our_signal(SIG_BLOCK);
	prof_thread_cpu_now(&now);
	prof_heap_ignore_begin();
	pthread_mutex_lock(&sampler.lock);
	/* A thread never armed (no entry): its CPU is not the session's. */
	if (sampler.arming && (e = timer_find(current_tid()))) {
		note_exited_name(current_tid());
		if (now)
			carry_sample(current_tid(),
				     prof_thread_cpu_exit(sampler.generation,
							  e->base_ns, now),
				     0);
	}
	timer_remove(current_tid());
	pthread_mutex_unlock(&sampler.lock);
	prof_heap_ignore_end();
}

/**
 * prof_sampler_exited_names() - the names of the last session's threads
 * that exited while its per-thread timers were armed, of those started
 * through our pthread_create (their key destructor takes the name; a
 * thread started otherwise, or an exit during a process-timer session, leaves
 * none).
 * @fn:  called for each, under the sampler's lock (it must not call back).
 * @arg: passed to @fn.
 */
void prof_sampler_exited_names(prof_name_fn fn, void *arg)
{
	size_t i;

	pthread_mutex_lock(&sampler.lock);
	for (i = 0; i < sampler.nexited; i++)
		fn(arg, &sampler.exited[i]);
	pthread_mutex_unlock(&sampler.lock);
}

/**
 * prof_sampler_thread_enter() - a thread starts (pthread_hook.c calls it
 * first thing in the new thread): note its stack, arm it if a session
 * runs (its CPU account opens at 0, thread_cpu.c), unblock our signal.
 *
 * Our signal is blocked until the end (a rescan may have armed the thread
 * already: no sample interrupts the account's opening), then unblocked: a
 * new thread that inherited a mask blocking every signal (liblzma's and
 * many pools' workers are started so, to keep the program's signals
 * away) would otherwise never take a sample; our signal, which the
 * program does not know of, is unblocked in it.  Its mask is otherwise
 * left as it was.
 */
void prof_sampler_thread_enter(void)
{
	pid_t tid;

	mask_our_signal(SIG_BLOCK);
	/* The profiler's allocations (the registry, the attributes), not
	 * the program's: the heap profiler ignores them. */
	prof_heap_ignore_begin();
	prof_sampler_init_process(); /* if a constructor's thread beat ours */
	prof_self.tid = 0; /* never inherited, but be sure */
	tid = current_tid();
	record_stack_bounds();
	if (sampler.key_ok)
		pthread_setspecific(thread_exit_key, (void *)1);
	pthread_mutex_lock(&sampler.lock);
	if (sampler.arming) {
		/* One found was armed for us by a rescan (or is a dead
		 * thread's whose tid we reuse, whose exit we never saw). */
		bool counted = timer_find(tid) != NULL;
		uint64_t now;

		timer_remove(tid);
		if (!timer_add(tid)) {
			if (!counted)
				count(&sampler.counters->threads);
			/* Its start-up so far: under this function. */
			if (!prof_thread_cpu_now(&now))
				carry_sample(
					tid,
					prof_thread_cpu_born(sampler.generation,
							     now),
					(uintptr_t)prof_sampler_thread_enter);
		}
	} else if (sampler.counting) {
		count(&sampler.counters->threads);
	}
	pthread_mutex_unlock(&sampler.lock);
	prof_heap_ignore_end();
	mask_our_signal(SIG_UNBLOCK);
}

/* ---- process ---- */

static void after_fork_in_child(void)
{
	/*
	 * No timer, no collector crossed the fork: no session here (until a
	 * start in this child).  Relaxed: the child has one thread, and no
	 * timer to send it a signal.
	 */
	atomic_store_explicit(&sampler.active, 0, memory_order_relaxed);
	/* Other threads' handlers in flight at the fork do not exist here. */
	atomic_store_explicit(&sampler.inflight, 0, memory_order_relaxed);
	prof_self.tid = 0;
	sampler.pid = getpid();
	pthread_mutex_init(&sampler.lock, NULL);
	sampler.arming = false;
	sampler.counting = false;
	sampler.proc_timer_armed = false; /* timers are not inherited */
	/* Not freed: only async-signal-safe calls are sure in the child of
	 * a threaded parent (the parent's copy is its own to free). */
	sampler.timers = NULL;
	sampler.ntimers = sampler.captimers = 0;
	sampler.exited = NULL;
	sampler.nexited = sampler.capexited = 0;
}

static void init_process_once(void)
{
	/* Without the key, exiting threads' timers wait for stop. */
	sampler.key_ok = !pthread_key_create(&thread_exit_key, thread_exit);
	pthread_atfork(NULL, NULL, after_fork_in_child);
}

/**
 * prof_sampler_init_process() - once per process, on the main thread if
 * possible (the library's constructor): its stack bounds, the thread-exit
 * key, the fork handler.
 */
void prof_sampler_init_process(void)
{
	pthread_once(&process_once, init_process_once);
	/* Whoever ran the once, the calling thread records its own bounds:
	 * the constructor's call is the main thread's only chance. */
	if (!prof_self.bounds.hi)
		record_stack_bounds();
}

static int start_timers(const struct prof_sampler_config *c)
{
	int err;

	if (c->timer == PROFRING_PROF_TIMER_THREAD) {
		sampler.arming = true;
		err = timers_sync(false);
		if (!err)
			return 0;
		timers_delete_all();
		sampler.arming = false;
	}
	/*
	 * The process timer: signals to whichever thread runs.  Relaxed: see
	 * thread_timers.
	 */
	atomic_store_explicit(&sampler.thread_timers, false,
			      memory_order_relaxed);
	err = process_timer_set(c->period_ns);
	if (!err)
		count_present_threads();
	return err;
}

/* Wait for the handlers in flight, at most about two seconds. */
static int wait_handlers(void)
{
	struct timespec pause = { 0, 50000 };
	int i;

	for (i = 0; i < 40000; i++) {
		/* Pairs with the handler's seq_cst increment (Dekker) and
		 * its release decrement (its writes are done). */
		if (!atomic_load_explicit(&sampler.inflight,
					  memory_order_seq_cst))
			return 0;
		nanosleep(&pause, NULL);
	}
	return -ETIMEDOUT;
}

/**
 * prof_sampler_rescan() - arm threads nobody armed, retire dead ones'
 * timers (see timers_sync()); a no-op outside a per-thread session.
 */
void prof_sampler_rescan(void)
{
	pthread_mutex_lock(&sampler.lock);
	if (sampler.arming)
		timers_sync(true);
	pthread_mutex_unlock(&sampler.lock);
}

/**
 * prof_sampler_start() - install the handler and arm the timers.
 * @c: the session's configuration.
 *
 * Return: 0 or -errno (nothing left armed).
 */
int prof_sampler_start(const struct prof_sampler_config *c)
{
	int err;

	prof_sampler_init_process();
	pthread_mutex_lock(&sampler.lock);
	err = install_handler();
	if (err)
		goto out;
	if (c->unwinder == PROFRING_PROF_UNWIND_LIBUNWIND)
		prof_unwind_libunwind_prepare(); /* not in a handler */
	sampler.buf = c->buf;
	sampler.unwinder = c->unwinder;
	sampler.max_frames = c->max_frames;
	sampler.generation++;
	sampler.period_ns = c->period_ns;
	sampler.exclude_tid = c->exclude_tid;
	sampler.counters = c->counters;
	sampler.pid = getpid();
	sampler.nexited = 0;
	sampler.exit_carry_ns = 0;
	sampler.counting = true;
	/* Relaxed: a count for the report, read after the session. */
	atomic_store_explicit(&c->counters->signo,
			      (uint32_t)sampler.installed_signo,
			      memory_order_relaxed);
	/* Relaxed: this, like the plain fields above, is published by the
	 * seq_cst store of active below. */
	atomic_store_explicit(&sampler.thread_timers,
			      c->timer == PROFRING_PROF_TIMER_THREAD,
			      memory_order_relaxed);
	/* Publishes the fields above to the handler's seq_cst load. */
	atomic_store_explicit(&sampler.active, 1, memory_order_seq_cst);
	err = start_timers(c);
	if (err) {
		/* Pairs with the handler's increment and load (Dekker). */
		atomic_store_explicit(&sampler.active, 0, memory_order_seq_cst);
		wait_handlers(); /* nothing armed: cannot time out */
		sampler.counting = false;
	}
out:
	pthread_mutex_unlock(&sampler.lock);
	return err;
}

/**
 * prof_sampler_stop() - disarm every timer and wait for the handlers in
 * flight; afterwards no handler touches the session's ring.
 *
 * Return: 0; -ETIMEDOUT if a handler stayed in flight for two seconds (a
 * thread stopped or cancelled inside it): the ring must then be leaked.
 */
int prof_sampler_stop(void)
{
	pthread_mutex_lock(&sampler.lock);
	sampler.arming = false;
	sampler.counting = false;
	timers_delete_all();
	process_timer_set(0);
	/* Pairs with the handler's increment and load (Dekker, above). */
	atomic_store_explicit(&sampler.active, 0, memory_order_seq_cst);
	pthread_mutex_unlock(&sampler.lock);
	return wait_handlers();
}

/**
 * prof_sampler_taken_over() - the program is about to install its own
 * disposition for @sig (the sigaction()/signal() hooks): if it is ours,
 * stop sampling for good, say so in the counters, and let a later start
 * choose another signal.  Not async-signal-safe; a no-op for any other
 * signal.
 */
void prof_sampler_taken_over(int sig)
{
	/* Relaxed: signo is set under the lock by start; a stale 0 here
	 * means no session was ever started, so nothing to stop. */
	if (!sig ||
	    sig != atomic_load_explicit(&sampler.signo, memory_order_relaxed))
		return;
	prof_sampler_stop();
	pthread_mutex_lock(&sampler.lock);
	if (sampler.counters)
		/* Relaxed: a flag for the report. */
		atomic_store_explicit(&sampler.counters->taken_over, 1,
				      memory_order_relaxed);
	sampler.installed_signo = 0;
	atomic_store_explicit(&sampler.signo, 0, memory_order_relaxed);
	pthread_mutex_unlock(&sampler.lock);
}

/**
 * prof_sampler_timer_used() - the timer kind the last start armed.
 *
 * Not under the sampler's lock: the caller must be ordered after that
 * start (prof.c calls both under its session lock).
 *
 * Return: PROFRING_PROF_TIMER_THREAD or PROFRING_PROF_TIMER_PROCESS.
 */
enum profring_prof_timer prof_sampler_timer_used(void)
{
	/* Relaxed: ordered after start by the caller (above). */
	return atomic_load_explicit(&sampler.thread_timers,
				    memory_order_relaxed)
		       ? PROFRING_PROF_TIMER_THREAD
		       : PROFRING_PROF_TIMER_PROCESS;
}

static uint64_t counter(_Atomic uint64_t *c)
{
	/*
	 * Relaxed: after stop, wait_handlers() already ordered the handlers'
	 * increments before us; while a session runs, any recent value does.
	 */
	return atomic_load_explicit(c, memory_order_relaxed);
}

/**
 * prof_sampler_add_stats() - fill in the handler's side of @st from the
 * session's counters @c.
 * @st: signals, written, refused, truncated, unwind_unchecked, threads.
 * @c:  the counters the session was started with.
 */
void prof_sampler_add_stats(struct profring_prof_stats *st,
			    struct prof_counters *c)
{
	st->written = counter(&c->written);
	st->refused = counter(&c->refused);
	st->signals = st->written + st->refused;
	st->truncated = counter(&c->truncated);
	st->unwind_unchecked = counter(&c->unchecked);
	st->threads = counter(&c->threads);
}
