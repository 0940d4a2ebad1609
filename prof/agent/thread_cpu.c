// SPDX-License-Identifier: MIT
/*
 * prof/agent/thread_cpu.c - every thread's CPU time in the profile: what each
 * sample of a per-thread timer weighs, and the sample a thread leaves as
 * it exits.
 *
 * Protocol.
 *
 * The problem.  A thread's CPU-time timer fires once per period P of its
 * CPU, at a kernel tick at the earliest.  A thread that uses less than P
 * (or less than a tick) never sees its timer fire, and a thread's CPU
 * since its last sample is lost when it exits: a thread-per-task program
 * whose threads run for 0.1 ms showed none of their CPU at 99, 999 or
 * 10,000 Hz.  And a weight of 1 + overrun rounds each interval down to
 * whole periods.
 *
 * The account.  Each thread keeps, in initial-exec TLS, acct: the point on
 * its own CPU clock (CLOCK_THREAD_CPUTIME_ID) up to which its CPU is in the
 * profile, and gen: the session (the sampler's generation) acct belongs
 * to.  Only the thread itself touches them: in the handler, and outside it
 * only with our signal blocked (thread start and exit, sampler.c), so the
 * handler never interrupts an update.
 *   - A sample weighs the whole periods between acct and the clock now, at
 *     least one (every signal is one sample), and acct advances by that
 *     many periods: the remainder, less than P, is carried to the next
 *     sample instead of dropped.  A signal that came early (its period
 *     was counted by the previous sample's rounding) still weighs 1: acct
 *     then runs ahead of the clock by less than a period, and the next
 *     samples weigh that much less.
 *   - A thread started through our pthread_create while a session runs
 *     arms its own timer, then opens its account at its clock's reading;
 *     the CPU it used until then (all of its life: starting, arming)
 *     goes into the carry below as its start-up, under the stack
 *     [prof_sampler_thread_enter, start_thread]: the profiler's cost of a
 *     thread, shown as such.
 *   - A thread armed by someone else (start, or the rescan) has no account
 *     yet: its first sample weighs 1 + overrun as before and opens the
 *     account at the clock's reading then.  The timer registry keeps the
 *     thread's clock reading when it was armed (sampler.c's base_ns) for
 *     a thread that exits before that first sample.
 *
 * Exit and the carry.  A thread started through our pthread_create runs
 * the sampler's key destructor as it exits (after its function returned,
 * or in pthread_exit() or a cancellation).  There, with our signal
 * blocked and under the registry's lock, its unaccounted CPU (the clock
 * now less acct, or less the registry's base_ns if it never had a sample)
 * goes into the session's carry, shared by every starting and exiting
 * thread; the whole periods in the carry are taken out as one sample
 * written by the thread that added them (its tid, the same lock-free ring
 * write as the handler's), and the rest stays for the next.  So 10,000
 * threads of 0.1 ms at 99 Hz (a hundredth of a period each) leave about
 * 100 samples of one period, spread over them as the CPU was: the
 * profile's total is right to a period, and each function's share is
 * right in expectation, like the process timer's.  Nothing is written
 * once the session has stopped (the destructor checks, under the lock,
 * that the session still arms threads).
 *
 * The exit sample's stack.  At the destructor the thread's function has
 * returned: its own stack would show only the exit path.  The tail is
 * CPU spent in the thread's function, so the stack is that function (its
 * entry address, as the leaf, which pprof takes as is) and the return
 * address into the code that called it (glibc's start_thread):
 * [thread_fn, start_thread], what a sample inside it shows without its
 * callees.  Our pthread_create's trampoline records both as the thread
 * starts (prof_thread_cpu_started()), before the destructor can run.
 *
 * What stays unaccounted here.  The carry left at stop (less than one
 * period for the whole session); the CPU a thread uses after its
 * destructor (glibc's and the kernel's exit: about 5-14 us a thread on
 * the machines this ran on, 5-12% of a 0.1 ms thread); threads our
 * pthread_create never started (thrd_create, raw clone), whose exit is
 * seen only by the rescan, lose their tail (at most about a period and a
 * tick each); and threads still running when the session stops keep
 * theirs (the same bound, per live thread): their account is in their
 * own TLS, which only they can read safely, and stop, unlike an exit,
 * has no stack of theirs to give the time to.  A first sample of a
 * thread armed by someone else rounds as before (once per thread and
 * session).  None of it is lost silently: the process's CPU over the
 * session (sampler.c's counters' cpu_ns, at stop or exit) less what the
 * samples stand for is the profile's "[profring: unsampled CPU]" entry
 * (aggregate_profile.c), so the total is the process's CPU (less, when
 * samples were lost: those are subtracted, whatever process lost them).
 */
#include "prof/agent/thread_cpu.h"

#include <signal.h>
#include <stdatomic.h>
#include <time.h>

/* The calling thread's account (see the protocol). */
struct thread_cpu {
	uint64_t acct_ns;
	int gen; /* the session acct_ns belongs to; 0: none */
	uintptr_t start_fn; /* the thread's function: 0 if unknown */
	uintptr_t start_ret; /* where its caller resumes */
};

static _Thread_local struct thread_cpu cpu_self
	__attribute__((tls_model("initial-exec")));

/**
 * prof_thread_cpu_now() - the calling thread's CPU time.
 * @ns: receives it, in nanoseconds.
 *
 * Async-signal-safe (clock_gettime() is); errno is changed on failure
 * (the handler restores it).
 * Return: 0, or -1 if the clock could not be read.
 */
int prof_thread_cpu_now(uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return -1;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 0;
}

/**
 * prof_thread_cpu_weigh() - the periods one per-thread timer signal
 * stands for: the calling thread's CPU since its account, carrying the
 * remainder (see the protocol).  Called by the handler only.
 * @gen:	the session's generation.
 * @period_ns:	the sampling period.
 * @fallback:	1 + the signal's overrun: the weight when the thread has
 *		no account in this session yet (or its clock fails).
 *
 * Async-signal-safe: TLS and clock_gettime() only.
 * Return: the weight, at least 1.
 */
uint64_t prof_thread_cpu_weigh(int gen, uint64_t period_ns, uint64_t fallback)
{
	struct thread_cpu *s = &cpu_self;
	uint64_t now, w = 0;

	if (prof_thread_cpu_now(&now))
		return fallback;
	if (s->gen != gen) {
		s->acct_ns = now;
		s->gen = gen;
		return fallback;
	}
	if ((int64_t)(now - s->acct_ns) > 0)
		w = (now - s->acct_ns) / period_ns;
	if (!w)
		w = 1; /* an early signal: acct runs ahead (the protocol) */
	s->acct_ns += w * period_ns;
	return w;
}

/**
 * prof_thread_cpu_started() - a thread started through our pthread_create
 * notes its function and its caller's return address, the stack of its
 * exit sample (see the protocol).
 * @fn:  the thread's start routine.
 * @ret: the return address into the code that calls it.
 */
void prof_thread_cpu_started(uintptr_t fn, uintptr_t ret)
{
	cpu_self.start_fn = fn;
	cpu_self.start_ret = ret;
}

/**
 * prof_thread_cpu_born() - the calling thread has armed its own timer as
 * it started, in session @gen: unless a signal of that session already
 * opened its account, the account opens at @now_ns, and the CPU it used
 * before (all of its life so far: starting, arming) is returned, for the
 * start-up sample.  Our signal must be blocked.
 * @gen:	the session's generation.
 * @now_ns:	the thread's CPU clock now.
 *
 * Return: the nanoseconds of CPU to account for the thread's start.
 */
int64_t prof_thread_cpu_born(int gen, uint64_t now_ns)
{
	if (cpu_self.gen == gen)
		return 0;
	cpu_self.acct_ns = now_ns;
	cpu_self.gen = gen;
	return (int64_t)now_ns;
}

/**
 * prof_thread_cpu_exit() - the calling thread exits: its CPU since its
 * account, or since @base_ns if it has none in this session.  Its account
 * closes.  Our signal must be blocked.
 * @gen:	the session's generation.
 * @base_ns:	the thread's CPU clock when it was armed (the registry's).
 * @now_ns:	its CPU clock now.
 *
 * Return: the nanoseconds to account (negative if the account ran ahead
 * of the clock).
 */
int64_t prof_thread_cpu_exit(int gen, uint64_t base_ns, uint64_t now_ns)
{
	if (cpu_self.gen == gen)
		base_ns = cpu_self.acct_ns;
	cpu_self.gen = 0; /* accounted: nothing more of this thread's */
	return (int64_t)(now_ns - base_ns);
}

/**
 * prof_thread_cpu_carry() - add @ns to the session's exit carry and take
 * out its whole periods (see the protocol).  The caller's lock holds
 * @carry_ns.
 * @carry_ns:	the carry (may be negative: accounts that ran ahead).
 * @ns:		the CPU to add.
 * @period_ns:	the sampling period.
 *
 * Return: the periods the sample must weigh; 0: no sample.
 */
uint64_t prof_thread_cpu_carry(int64_t *carry_ns, int64_t ns,
			       uint64_t period_ns)
{
	uint64_t periods;

	*carry_ns += ns;
	if (*carry_ns < (int64_t)period_ns)
		return 0;
	periods = (uint64_t)*carry_ns / period_ns;
	*carry_ns -= (int64_t)(periods * period_ns);
	return periods;
}

/**
 * prof_thread_cpu_stack() - a start-up or exit sample's stack (see the
 * protocol): [@leaf, the return address into the thread's caller], @leaf
 * 0 standing for the thread's start routine.
 * @leaf: the leaf PC, or 0.
 * @pcs:  receives the PCs, leaf first (room for 2).
 *
 * Return: the number of PCs (0 if the start routine is unknown).
 */
size_t prof_thread_cpu_stack(uintptr_t leaf, uintptr_t *pcs)
{
	pcs[0] = leaf ? leaf : cpu_self.start_fn;
	pcs[1] = cpu_self.start_ret;
	if (!pcs[0])
		return 0;
	return pcs[1] ? 2 : 1;
}
