// SPDX-License-Identifier: MIT
/*
 * prof/agent/sampler.c - the signal side of profring-prof: the handler, the
 * CPU-time timers, and the thread tracking that arms them (the timer
 * registry and the threads' start and exit are in sampler_threads.c;
 * what the two share, sampler_impl.h).
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
 * a timer or a perf counter of ours (kill(), sigqueue(); perf_event.c
 * says how a counter's signal is told).  In wall mode the signals come
 * from wall.c's ticker instead of timers, tagged with the generation in
 * si_value too (wall.c's protocol), and weigh real time, not CPU time.
 *
 * Timers.  Each thread gets a counter of its own CPU time whose signal
 * goes to that thread, so threads are sampled in proportion to their CPU
 * time and the handler runs on the sampled thread: a perf_event cpu-clock
 * counter (perf_event.c: at the rate asked, where the kernel allows a
 * process to sample itself; the first refusal turns them off for the
 * session), else a POSIX timer on the thread's CPU-time clock
 * (SIGEV_THREAD_ID; at the kernel's tick at most).  "Timer" below means
 * either.
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
 * Descriptors.  A perf counter is a file descriptor, in a table that is
 * the program's (perf_event.c, Descriptors: where ours are placed, the
 * share of the limit they may take, how one is told from the program's
 * files).  A counter is closed only if its number still holds it: at a
 * thread's exit, at stop, in a fork child.  A counter the program closed
 * or dup2()ed over stops signalling, so a session with counters has a
 * watch: a process CPU-time timer (every 20 ms of the process's CPU)
 * whose signal, tagged with the bitwise complement of the generation, is
 * no sample: the handler that gets it, if it can take the registry's
 * lock without waiting, checks the next 4 entries' counters (fstat and an
 * ioctl each) and, for one no longer ours, forgets the number and arms
 * the thread's POSIX timer (by the system calls themselves, which are
 * async-signal-safe).  So a thread whose counter the program took keeps
 * being sampled, by a timer, within 20 ms of the process's CPU per 4
 * threads, and the profile's first comment says so (PROF_ENGINE_LOST); a
 * thread past the descriptors' share gets a timer at once
 * (PROF_ENGINE_FDS).  This works with no thread of ours in the program
 * (under `record`); it costs one handler run and at most 8 system calls
 * per 20 ms of the process's CPU.
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
#include "prof/agent/sampler.h"
#include "prof/agent/ring_guard.h"
#include "prof/agent/sampler_impl.h"
#include "prof/agent/heap.h"
#include "prof/agent/hooks.h"
#include "prof/agent/perf_event.h"
#include "prof/agent/thread_cpu.h"
#include "prof/agent/unwind.h"

#include "ring/clock.h"
#include "ring/compiler.h"

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

/*
 * A ThreadSanitizer build (the tests') arms POSIX timers, not perf
 * counters: TSan runs a handler at once when its signal lands in a
 * blocking interceptor, even while that interceptor is inside TSan's own
 * free() holding its slot lock (pthread_join() freeing a thread's TLS),
 * and deadlocks; at the counters' full rate (10 kHz in heap_stress) that
 * happened, at the kernel tick's it has not been seen.
 */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
#define BUILT_WITH_TSAN 1
#else
#define BUILT_WITH_TSAN 0
#endif

_Thread_local struct prof_thread prof_self
	__attribute__((tls_model("initial-exec")));
struct sampler_state prof_smp = { .lock = PTHREAD_MUTEX_INITIALIZER };
pthread_key_t prof_smp_exit_key;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

pid_t prof_smp_tid(void)
{
	if (!prof_self.tid)
		prof_self.tid = (pid_t)syscall(SYS_gettid);
	return prof_self.tid;
}

void prof_smp_stack_bounds(void)
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
	return prof_smp_tid();
}

/* ---- the handler ---- */

void prof_smp_count(_Atomic uint64_t *c)
{
	/* Relaxed: a counter (see the sampler's fields). */
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static size_t take_stack(void *ucontext, uintptr_t *pcs, size_t max)
{
	struct prof_unwind_result res;
	bool fp = prof_smp.unwinder != PROFRING_PROF_UNWIND_LIBUNWIND;

	/* libunwind takes the loader's lock: not while anyone holds it. */
	if (!fp && prof_hooks_in_loader()) {
		fp = true;
		prof_smp_count(&prof_smp.counters->unwind_fallback);
	}
	if (fp)
		prof_unwind_fp(ucontext, &prof_self.bounds, pcs, max, &res);
	else
		prof_unwind_libunwind(ucontext, pcs, max, &res);
	if (res.truncated)
		prof_smp_count(&prof_smp.counters->truncated);
	if (res.unchecked)
		prof_smp_count(&prof_smp.counters->unchecked);
	return res.n;
}

/* Is this signal one of the current session's samples? */
static bool signal_is_ours(const siginfo_t *si)
{
	return (si->si_code == SI_TIMER &&
		si->si_value.sival_int == prof_smp.generation) ||
	       prof_perf_is_ours(si) || prof_wall_is_ours(si);
}

/*
 * The periods a timer signal stands for (see Weights): a per-thread
 * timer's, the thread's CPU since its last sample; the process timer's,
 * 1 + the expiries it missed.
 */
static uint64_t weigh(const siginfo_t *si)
{
	uint64_t expiries = si->si_code != SI_TIMER || si->si_overrun <= 0
				    ? 1 /* a perf counter's: one period */
				    : 1 + (uint64_t)si->si_overrun;

	/* Relaxed: published by the seq_cst store of active (start). */
	if (!atomic_load_explicit(&prof_smp.thread_timers,
				  memory_order_relaxed))
		return expiries;
	return prof_thread_cpu_weigh(prof_smp.generation, prof_smp.period_ns,
				     expiries);
}

/*
 * A wall signal's record (wall.c): PROF_REC_WALL, its ticks, the state
 * word before the PCs; a timer's, PROF_REC_SAMPLE weighed by CPU time.
 * The stack is walked straight into the ring: the record is reserved
 * with room for the frame limit, the unwinder writes the PCs into it,
 * and the commit keeps the frames found (the rest goes back to the
 * ring).  The wall state is decided before the walk, as it was.
 */
static void sample(const siginfo_t *si, void *ucontext)
{
	uint64_t hdr[PROF_HDR_WORDS], state = 0;
	bool wall = prof_wall_is_ours(si);
	struct profbuf_resv rv;
	size_t n, max = prof_smp.max_frames;
	int rc;

	if (si->si_code == SI_TIMER &&
	    si->si_value.sival_int == ~prof_smp.generation) {
		prof_smp_watch(); /* not a sample (Descriptors) */
		return;
	}
	if (!signal_is_ours(si))
		return;
	if (wall) {
		hdr[PROF_HDR_KIND_PERIODS] = prof_hdr_kind_word(
			PROF_REC_WALL, prof_wall_weight(si, &state));
		state = prof_wall_state(ucontext, state);
	} else {
		hdr[PROF_HDR_KIND_PERIODS] =
			prof_hdr_kind_word(PROF_REC_SAMPLE, weigh(si));
	}
	hdr[PROF_HDR_TID] = (uint64_t)prof_smp_tid();
	hdr[PROF_HDR_PID] = (uint64_t)prof_smp.pid;
	rc = prof_ring_reserve(prof_smp.buf, NULL, (int64_t)ring_clock_ticks(),
			       hdr, PROF_HDR_WORDS, wall + max, &rv);
	if (!rc) {
		if (wall) {
			rv.stk[0] = (uintptr_t)state;
			n = 1 + take_stack(ucontext, rv.stk + 1, max);
		} else {
			n = take_stack(ucontext, rv.stk, max);
		}
		rc = prof_ring_commit(&rv, n);
	}
	prof_smp_count(rc ? &prof_smp.counters->refused
			  : &prof_smp.counters->written);
	if (wall)
		prof_wall_done(si, state);
}

static void on_sample(int sig, siginfo_t *si, void *ucontext)
{
	int saved_errno = errno;

	(void)sig;
	/* A cheap filter only; the seq_cst load below decides. */
	if (!atomic_load_explicit(&prof_smp.active, memory_order_relaxed))
		goto out;
	/*
	 * The increment and the load pair with stop's store of active and
	 * load of inflight (Dekker); the load also pairs with start's store
	 * of active, which publishes the configuration.
	 */
	atomic_fetch_add_explicit(&prof_smp.inflight, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&prof_smp.active, memory_order_seq_cst))
		sample(si, ucontext);
	/*
	 * Release: our ring write and counters happen before stop's seq_cst
	 * load in wait_handlers() sees inflight 0.
	 */
	atomic_fetch_sub_explicit(&prof_smp.inflight, 1, memory_order_release);
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
	int sig = atomic_load_explicit(&prof_smp.signo, memory_order_relaxed);

	if (sig && sig == prof_smp.installed_signo)
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
	prof_smp.installed_signo = sig;
	/* Relaxed: read by the hooks and by start, under or after `lock`. */
	atomic_store_explicit(&prof_smp.signo, sig, memory_order_relaxed);
	return 0;
}

/* ---- process ---- */

static void after_fork_in_child(void)
{
	/*
	 * No timer, no collector crossed the fork: no session here (until a
	 * start in this child).  Relaxed: the child has one thread, and no
	 * timer to send it a signal.
	 */
	atomic_store_explicit(&prof_smp.active, 0, memory_order_relaxed);
	/* Other threads' handlers in flight at the fork do not exist here. */
	atomic_store_explicit(&prof_smp.inflight, 0, memory_order_relaxed);
	prof_self.tid = 0;
	prof_smp.pid = getpid();
	prof_smp.cpu_start_ns = 0; /* the parent's clock, not this one's */
	pthread_mutex_init(&prof_smp.lock, NULL);
	prof_smp.arming = false;
	prof_smp.counting = false;
	prof_smp.proc_timer_armed = false; /* timers are not inherited */
	prof_smp.wall = false; /* nor the wall ticker (wall.c) */
	prof_smp.watch_armed = false; /* a timer too */
	/* Perf counters' descriptors are: they count the parent's threads
	 * (closed only where the number is still the counter's). */
	for (size_t i = 0; i < prof_smp.ntimers; i++)
		prof_perf_forget(&prof_smp.timers[i].perf);
	prof_smp.nperf = 0;
	/* Not freed: only async-signal-safe calls are sure in the child of
	 * a threaded parent (the parent's copy is its own to free). */
	prof_smp.timers = NULL;
	prof_smp.ntimers = prof_smp.captimers = 0;
	prof_smp.exited = NULL;
	prof_smp.nexited = prof_smp.capexited = 0;
}

static void init_process_once(void)
{
	/* Without the key, exiting threads' timers wait for stop. */
	prof_smp.key_ok =
		!pthread_key_create(&prof_smp_exit_key, prof_smp_thread_exit);
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
		prof_smp_stack_bounds();
}

static int start_timers(const struct prof_sampler_config *c)
{
	int err;

	if (c->timer != PROFRING_PROF_TIMER_PROCESS) {
		prof_smp.perf = (c->timer == PROFRING_PROF_TIMER_THREAD ||
				 c->timer == PROFRING_PROF_TIMER_KERNEL) &&
				!BUILT_WITH_TSAN;
		prof_smp.perf_kernel = c->timer == PROFRING_PROF_TIMER_KERNEL;
		prof_smp.arming = true;
		prof_smp.watch_next = 0;
		err = prof_smp_timers_sync(false);
		/* Without the watch, counters still sample. */
		if (!err && prof_smp.perf)
			prof_smp_watch_set(true);
		if (!err)
			return 0;
		prof_smp_timers_delete_all();
		prof_smp.arming = false;
	}
	/*
	 * The process timer: signals to whichever thread runs.  Relaxed: see
	 * thread_timers.
	 */
	atomic_store_explicit(&prof_smp.thread_timers, false,
			      memory_order_relaxed);
	err = prof_smp_process_timer_set(c->period_ns);
	if (!err) {
		prof_smp_count_present_threads();
		/* Relaxed: a count for the report. */
		atomic_fetch_or_explicit(&c->counters->engines,
					 PROF_ENGINE_PROCESS,
					 memory_order_relaxed);
	}
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
		if (!atomic_load_explicit(&prof_smp.inflight,
					  memory_order_seq_cst))
			return 0;
		nanosleep(&pause, NULL);
	}
	return -ETIMEDOUT;
}

/**
 * prof_sampler_rescan() - arm threads nobody armed, retire dead ones'
 * timers (see prof_smp_timers_sync()); a no-op outside a per-thread session.
 */
void prof_sampler_rescan(void)
{
	pthread_mutex_lock(&prof_smp.lock);
	if (prof_smp.arming)
		prof_smp_timers_sync(true);
	pthread_mutex_unlock(&prof_smp.lock);
}

/* The process's CPU clock, in ns (at least 1); 0 if it cannot be read. */
static uint64_t process_cpu_ns(void)
{
	struct timespec ts;
	uint64_t ns;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return ns ? ns : 1;
}

/* Store the CPU the process used since its CPU session started. */
static void note_cpu_locked(void)
{
	uint64_t now;

	if (!prof_smp.cpu_start_ns || !prof_smp.counters)
		return;
	now = process_cpu_ns();
	if (now > prof_smp.cpu_start_ns)
		/* Relaxed: a number for the report, read after the end. */
		atomic_store_explicit(&prof_smp.counters->cpu_ns,
				      now - prof_smp.cpu_start_ns,
				      memory_order_relaxed);
}

/**
 * prof_sampler_note_cpu() - store the process's CPU time since its CPU
 * session started in the session's counters (cpu_ns, stream.h), as a
 * session that is never stopped ends: at exit, under the launcher
 * (agent.c).  Sampling goes on.  Not async-signal-safe; a no-op without
 * a CPU session (a fork child has none until it starts one).
 */
void prof_sampler_note_cpu(void)
{
	pthread_mutex_lock(&prof_smp.lock);
	note_cpu_locked();
	pthread_mutex_unlock(&prof_smp.lock);
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
	pthread_mutex_lock(&prof_smp.lock);
	err = install_handler();
	if (err)
		goto out;
	if (c->unwinder == PROFRING_PROF_UNWIND_LIBUNWIND)
		prof_unwind_libunwind_prepare(); /* not in a handler */
	prof_smp.buf = c->buf;
	prof_smp.unwinder = c->unwinder;
	prof_smp.max_frames = c->max_frames;
	prof_smp.generation++;
	prof_smp.period_ns = c->period_ns;
	prof_smp.exclude_tid = c->exclude_tid;
	for (int i = 0; i < 2; i++)
		prof_smp.own_tids[i] = c->wall ? c->own_tids[i] : 0;
	prof_smp.counters = c->counters;
	prof_smp.pid = getpid();
	prof_smp.nexited = 0;
	prof_smp.exit_carry_ns = 0;
	/* Wall mode: the ticker counts the threads it finds. */
	prof_smp.counting = !c->wall;
	/* Relaxed: a count for the report, read after the session. */
	atomic_store_explicit(&c->counters->signo,
			      (uint32_t)prof_smp.installed_signo,
			      memory_order_relaxed);
	/* Relaxed: this, like the plain fields above, is published by the
	 * seq_cst store of active below. */
	atomic_store_explicit(&prof_smp.thread_timers,
			      !c->wall &&
				      c->timer != PROFRING_PROF_TIMER_PROCESS,
			      memory_order_relaxed);
	/* Publishes the fields above to the handler's seq_cst load. */
	atomic_store_explicit(&prof_smp.active, 1, memory_order_seq_cst);
	err = c->wall ? prof_wall_start() : start_timers(c);
	prof_smp.cpu_start_ns = c->wall || err ? 0 : process_cpu_ns();
	if (err) {
		/* Pairs with the handler's increment and load (Dekker). */
		atomic_store_explicit(&prof_smp.active, 0,
				      memory_order_seq_cst);
		wait_handlers(); /* nothing armed: cannot time out */
		prof_smp.counting = false;
	}
out:
	pthread_mutex_unlock(&prof_smp.lock);
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
	pthread_mutex_lock(&prof_smp.lock);
	note_cpu_locked();
	prof_smp.cpu_start_ns = 0;
	prof_wall_stop(); /* no wall signal or REPEAT record after this */
	prof_smp.arming = false;
	prof_smp.counting = false;
	prof_smp_watch_set(false);
	prof_smp_timers_delete_all();
	prof_smp_process_timer_set(0);
	/* Pairs with the handler's increment and load (Dekker, above). */
	atomic_store_explicit(&prof_smp.active, 0, memory_order_seq_cst);
	pthread_mutex_unlock(&prof_smp.lock);
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
	    sig != atomic_load_explicit(&prof_smp.signo, memory_order_relaxed))
		return;
	prof_sampler_stop();
	pthread_mutex_lock(&prof_smp.lock);
	if (prof_smp.counters)
		/* Relaxed: a flag for the report. */
		atomic_store_explicit(&prof_smp.counters->taken_over, 1,
				      memory_order_relaxed);
	prof_smp.installed_signo = 0;
	atomic_store_explicit(&prof_smp.signo, 0, memory_order_relaxed);
	pthread_mutex_unlock(&prof_smp.lock);
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
