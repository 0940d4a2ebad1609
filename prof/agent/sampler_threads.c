// SPDX-License-Identifier: MIT
/*
 * prof/agent/sampler_threads.c - the sampler's threads: the timer registry
 * (tid -> POSIX CPU-time timer), the process timer, and what threads do
 * as they start (arm themselves) and exit (their timer deleted, their
 * name kept, their CPU since the last sample accounted: thread_cpu.c).
 *
 * The protocol (Timers, Weights, Thread count) is sampler.c's opening
 * comment; everything here runs outside signal handlers, under
 * prof_smp.lock unless it says otherwise.
 */
#include "prof/agent/sampler_impl.h"
#include "prof/agent/ring_guard.h"
#include "prof/agent/heap.h"
#include "prof/agent/perf_event.h"
#include "prof/agent/thread_cpu.h"

#include "ring/clock.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- timers (all under prof_smp.lock) ---- */

/* The watch: its period (of the process's CPU), the entries per signal. */
#define WATCH_NS 20000000L
#define WATCH_BATCH 4

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

/*
 * Thread @tid's CPU time now, or 0 if it cannot be read (it exited).  Any
 * thread may call it (wall.c's ticker does, unlocked).
 */
uint64_t prof_smp_thread_cpu_ns(pid_t tid)
{
	struct timespec ts;

	if (clock_gettime(thread_cpu_clock(tid), &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A thread's CPU-time timer, by the system calls themselves (its id is
 * the kernel's): async-signal-safe, as glibc's timer_create() was not
 * before 2.34 (it allocated), so that the watch can arm one in the
 * handler (sampler.c, Descriptors).  Started at the session's period;
 * 0 or -errno.
 */
static int timer_arm(pid_t tid, int *out)
{
	struct itimerspec its;
	struct sigevent sev;
	int id, err;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = prof_smp.installed_signo;
	sev.sigev_value.sival_int = prof_smp.generation;
	sev._sigev_un._tid = tid;
	if (syscall(SYS_timer_create, thread_cpu_clock(tid), &sev, &id))
		return -errno;
	its.it_interval = period_timespec(prof_smp.period_ns);
	its.it_value = its.it_interval;
	if (syscall(SYS_timer_settime, id, 0, &its, NULL)) {
		err = -errno;
		syscall(SYS_timer_delete, id);
		return err;
	}
	*out = id;
	return 0;
}

/* A perf counter for @e's thread (see entry_arm()); 0 or -errno. */
static int entry_arm_perf(pid_t tid, struct timer_entry *e)
{
	int err = prof_perf_arm(&e->perf, tid, prof_smp.installed_signo,
				prof_smp.period_ns, prof_smp.perf_kernel,
				prof_smp.nperf);

	if (prof_smp.perf_kernel && (err == -EACCES || err == -EPERM)) {
		prof_smp.perf_kernel = false;
		err = prof_perf_arm(&e->perf, tid, prof_smp.installed_signo,
				    prof_smp.period_ns, false, prof_smp.nperf);
	}
	if (err == -EACCES || err == -EPERM || err == -ENOSYS ||
	    err == -ENOENT || err == -EOPNOTSUPP || err == -EINVAL ||
	    err == -ENOTTY)
		prof_smp.perf = false;
	return err;
}

/*
 * Arm @e's thread: a perf counter while the session may use them (the
 * first refusal by the kernel turns them off for the session: the
 * threads after it get timers) and while the process holds fewer than its
 * share of descriptors in counters (perf_event.c, Descriptors: past it,
 * timers, and the profile says so); else a POSIX timer.  With --timer
 * kernel the counter samples in the kernel too; the first refusal of
 * that (not privileged enough: perf_event.c) turns it off for the
 * session, and that thread and the ones after it get counters of user
 * mode only.  The engine used is told in the counters.
 */
static int entry_arm(pid_t tid, struct timer_entry *e)
{
	uint32_t engine = PROF_ENGINE_TIMERS;
	int err = -1;

	e->perf.fd = -1;
	e->timer = -1;
	if (prof_smp.perf) {
		err = entry_arm_perf(tid, e);
		if (!err)
			engine =
				PROF_ENGINE_PERF |
				(prof_smp.perf_kernel ? PROF_ENGINE_KERNEL : 0);
		else if (err == -EMFILE || err == -ENFILE)
			engine |= PROF_ENGINE_FDS;
	}
	if (err)
		err = timer_arm(tid, &e->timer);
	else
		prof_smp.nperf++;
	if (err)
		return err;
	/* Relaxed: a count for the report. */
	atomic_fetch_or_explicit(&prof_smp.counters->engines, engine,
				 memory_order_relaxed);
	return 0;
}

static struct timer_entry *timer_find(pid_t tid)
{
	size_t i;

	for (i = 0; i < prof_smp.ntimers; i++)
		if (prof_smp.timers[i].tid == tid)
			return &prof_smp.timers[i];
	return NULL;
}

static void timer_remove(pid_t tid)
{
	struct timer_entry *e = timer_find(tid);

	if (!e)
		return;
	if (e->perf.fd >= 0) {
		/* Closed only if still ours (perf_event.c, Descriptors). */
		prof_perf_disarm(&e->perf);
		prof_smp.nperf--;
	}
	if (e->timer >= 0)
		syscall(SYS_timer_delete, e->timer);
	*e = prof_smp.timers[--prof_smp.ntimers];
}

static int timer_add(pid_t tid)
{
	struct timer_entry *v;
	size_t cap;
	int err;

	if (prof_smp.ntimers == prof_smp.captimers) {
		cap = prof_smp.captimers ? 2 * prof_smp.captimers : 64;
		v = realloc(prof_smp.timers, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		prof_smp.timers = v;
		prof_smp.captimers = cap;
	}
	v = &prof_smp.timers[prof_smp.ntimers];
	/* Before the timer: its periods are counted from no earlier. */
	v->base_ns = prof_smp_thread_cpu_ns(tid);
	err = entry_arm(tid, v);
	if (err)
		return err;
	v->tid = tid;
	v->seen = true;
	prof_smp.ntimers++;
	return 0;
}

void prof_smp_timers_delete_all(void)
{
	while (prof_smp.ntimers)
		timer_remove(prof_smp.timers[0].tid);
}

/* Delete the timers of threads the latest listing did not show. */
static void timers_prune(void)
{
	size_t i = 0;

	while (i < prof_smp.ntimers) {
		if (prof_smp.timers[i].seen)
			i++;
		else
			timer_remove(prof_smp.timers[i].tid);
	}
}

/*
 * Arm every thread of the process but the collector that has no timer;
 * with @prune, delete the timers of threads that are gone.  At start, and
 * every COLLECT_PERIOD_NS from the collector: that arms the threads our
 * pthread_create never saw (thrd_create, raw clone, threads of a static
 * executable) and retires those whose exit no key destructor reported.
 */
int prof_smp_timers_sync(bool prune)
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
	for (i = 0; i < prof_smp.ntimers; i++)
		prof_smp.timers[i].seen = false;
	while (!err && (d = readdir(dir))) {
		tid = (pid_t)atoi(d->d_name);
		if (tid <= 0 || tid == prof_smp.exclude_tid)
			continue;
		e = timer_find(tid);
		if (e) {
			e->seen = true;
			continue;
		}
		err = timer_add(tid);
		if (!err)
			prof_smp_count(&prof_smp.counters->threads);
		if (err == -EINVAL || err == -ESRCH)
			err = 0; /* exited since the listing */
	}
	closedir(dir);
	if (prune && !err)
		timers_prune();
	return err;
}

/*
 * The watch (sampler.c, Descriptors): a process CPU-time timer, every
 * WATCH_NS of the process's CPU, whose signal (tagged with the bitwise
 * complement of the generation) makes the handler check WATCH_BATCH
 * entries' counters.  @on false deletes it.
 */
int prof_smp_watch_set(bool on)
{
	struct itimerspec its = { { 0, WATCH_NS }, { 0, WATCH_NS } };
	struct sigevent sev;
	int err;

	if (prof_smp.watch_armed) {
		timer_delete(prof_smp.watch_timer);
		prof_smp.watch_armed = false;
	}
	if (!on)
		return 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = prof_smp.installed_signo;
	sev.sigev_value.sival_int = ~prof_smp.generation;
	if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &prof_smp.watch_timer))
		return -errno;
	if (timer_settime(prof_smp.watch_timer, 0, &its, NULL)) {
		err = -errno;
		timer_delete(prof_smp.watch_timer);
		return err;
	}
	prof_smp.watch_armed = true;
	return 0;
}

/*
 * Check the counters of up to WATCH_BATCH entries, from where the last
 * check ended: one the program closed or replaced is forgotten (never
 * closed: the number is the program's) and its thread gets a timer.
 * Under the lock; async-signal-safe (fstat, ioctl, timer_arm()).
 */
static void counters_check(void)
{
	uint32_t engine = PROF_ENGINE_LOST;
	struct timer_entry *e;

	for (size_t k = 0; k < WATCH_BATCH && k < prof_smp.ntimers; k++) {
		if (prof_smp.watch_next >= prof_smp.ntimers)
			prof_smp.watch_next = 0;
		e = &prof_smp.timers[prof_smp.watch_next++];
		if (e->perf.fd < 0 || prof_perf_is_intact(&e->perf))
			continue;
		prof_perf_disarm(&e->perf); /* not ours: forgotten only */
		prof_smp.nperf--;
		if (!timer_arm(e->tid, &e->timer))
			engine |= PROF_ENGINE_TIMERS;
		/* Relaxed: a count for the report. */
		atomic_fetch_or_explicit(&prof_smp.counters->engines, engine,
					 memory_order_relaxed);
	}
}

/**
 * prof_smp_watch() - the watch's signal (in the handler, during a
 * session): check a batch of counters if the registry's lock is free.
 * Never waits for the lock: it may be held by the very thread the
 * handler interrupted, or by one that waits for the handlers in flight
 * while holding it (start's failure path); a batch skipped waits for the
 * next signal.
 */
void prof_smp_watch(void)
{
	if (pthread_mutex_trylock(&prof_smp.lock))
		return;
	if (prof_smp.arming)
		counters_check();
	pthread_mutex_unlock(&prof_smp.lock);
}

/* The process-wide timer (see the protocol): @period_ns 0 deletes it. */
int prof_smp_process_timer_set(uint64_t period_ns)
{
	struct itimerspec its;
	struct sigevent sev;
	int err;

	if (prof_smp.proc_timer_armed) {
		timer_delete(prof_smp.proc_timer);
		prof_smp.proc_timer_armed = false;
	}
	if (!period_ns)
		return 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = prof_smp.installed_signo;
	sev.sigev_value.sival_int = prof_smp.generation;
	if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &prof_smp.proc_timer))
		return -errno;
	its.it_interval = period_timespec(period_ns);
	its.it_value = its.it_interval;
	if (timer_settime(prof_smp.proc_timer, 0, &its, NULL)) {
		err = -errno;
		timer_delete(prof_smp.proc_timer);
		return err;
	}
	prof_smp.proc_timer_armed = true;
	return 0;
}

/* The process timer's thread count: the threads there are now. */
void prof_smp_count_present_threads(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (atoi(d->d_name) > 0 &&
		    atoi(d->d_name) != prof_smp.exclude_tid)
			prof_smp_count(&prof_smp.counters->threads);
	closedir(dir);
}

/* ---- threads ---- */

/* Keep an exiting thread's final name for the profile (under the lock). */
static void note_exited_name(pid_t tid)
{
	struct tid_name *v;
	size_t cap;

	if (prof_smp.nexited == prof_smp.capexited) {
		cap = prof_smp.capexited ? 2 * prof_smp.capexited : 64;
		v = realloc(prof_smp.exited, cap * sizeof(*v));
		if (!v)
			return; /* its first sample's name, if any, stands */
		prof_smp.exited = v;
		prof_smp.capexited = cap;
	}
	v = &prof_smp.exited[prof_smp.nexited];
	memset(v, 0, sizeof(*v));
	if (prctl(PR_GET_NAME, v->name, 0, 0, 0))
		return;
	v->tid = (uint32_t)tid;
	prof_smp.nexited++;
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

	periods = prof_thread_cpu_carry(&prof_smp.exit_carry_ns, ns,
					prof_smp.period_ns);
	if (!periods)
		return;
	n = prof_thread_cpu_stack(leaf, pcs);
	hdr[PROF_HDR_KIND_PERIODS] =
		prof_hdr_kind_word(PROF_REC_SAMPLE, periods);
	hdr[PROF_HDR_TID] = (uint64_t)tid;
	hdr[PROF_HDR_PID] = (uint64_t)prof_smp.pid;
	rc = prof_ring_write(prof_smp.buf, NULL, (int64_t)ring_clock_ticks(),
			     hdr, PROF_HDR_WORDS, pcs, n);
	prof_smp_count(rc ? &prof_smp.counters->refused
			  : &prof_smp.counters->written);
}

/* Block (@how SIG_BLOCK) or unblock our signal in the calling thread. */
static void mask_our_signal(int how)
{
	/* Relaxed: installed before any thread was armed (start, lock). */
	int sig = atomic_load_explicit(&prof_smp.signo, memory_order_relaxed);
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
void prof_smp_thread_exit(void *unused)
{
	struct timer_entry *e;
	uint64_t now = 0, after = 0, base;
	bool ours;

	(void)unused;
	mask_our_signal(SIG_BLOCK);
	prof_heap_ignore_begin();
	pthread_mutex_lock(&prof_smp.lock);
	/* A thread never armed (no entry): its CPU is not the session's. */
	e = prof_smp.arming ? timer_find(prof_smp_tid()) : NULL;
	ours = e != NULL;
	base = e ? e->base_ns : 0;
	if (ours && prof_thread_cpu_now(&now))
		ours = false;
	timer_remove(prof_smp_tid());
	if (ours) {
		note_exited_name(prof_smp_tid());
		/* Its own tail, under its function (thread_cpu.c). */
		carry_sample(
			prof_smp_tid(),
			prof_thread_cpu_exit(prof_smp.generation, base, now),
			0);
		/* Disarming (a perf counter's close is dear): ours, shown
		 * as such, under this function. */
		if (!prof_thread_cpu_now(&after) && after > now)
			carry_sample(prof_smp_tid(), (int64_t)(after - now),
				     (uintptr_t)prof_smp_thread_exit);
	}
	pthread_mutex_unlock(&prof_smp.lock);
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

	pthread_mutex_lock(&prof_smp.lock);
	for (i = 0; i < prof_smp.nexited; i++)
		fn(arg, &prof_smp.exited[i]);
	pthread_mutex_unlock(&prof_smp.lock);
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
	tid = prof_smp_tid();
	prof_smp_stack_bounds();
	if (prof_smp.key_ok)
		pthread_setspecific(prof_smp_exit_key, (void *)1);
	pthread_mutex_lock(&prof_smp.lock);
	if (prof_smp.arming) {
		/* One found was armed for us by a rescan (or is a dead
		 * thread's whose tid we reuse, whose exit we never saw). */
		bool counted = timer_find(tid) != NULL;
		uint64_t now;

		timer_remove(tid);
		if (!timer_add(tid)) {
			if (!counted)
				prof_smp_count(&prof_smp.counters->threads);
			/* Its start-up so far: under this function. */
			if (!prof_thread_cpu_now(&now))
				carry_sample(
					tid,
					prof_thread_cpu_born(
						prof_smp.generation, now),
					(uintptr_t)prof_sampler_thread_enter);
		}
	} else if (prof_smp.counting) {
		prof_smp_count(&prof_smp.counters->threads);
	} else if (prof_smp.wall) {
		/* Relaxed: a hint to the ticker (wall.c). */
		atomic_store_explicit(&prof_smp.wall_rescan, true,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&prof_smp.lock);
	prof_heap_ignore_end();
	mask_our_signal(SIG_UNBLOCK);
}
