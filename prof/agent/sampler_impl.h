/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/sampler_impl.h - the sampler's state and what its two files share:
 * sampler.c (the handler, the signal, sessions) and sampler_threads.c
 * (the timer registry, threads starting and exiting).  The protocol is
 * sampler.c's opening comment.
 *
 * Internal to the sampler: never installed.
 */
#ifndef PROFRING_PROF_SAMPLER_IMPL_H
#define PROFRING_PROF_SAMPLER_IMPL_H

#include "prof/agent/perf_event.h"
#include "prof/agent/sampler.h"
#include "prof/agent/unwind.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* A thread's own state, read by the handler. */
struct prof_thread {
	struct prof_stack_bounds bounds;
	pid_t tid; /* 0 until first needed */
};

extern _Thread_local struct prof_thread prof_self
	__attribute__((tls_model("initial-exec")));

/*
 * A thread's timer: its perf counter, or a POSIX timer (also once the
 * program closed the counter's descriptor: sampler.c's Descriptors).
 */
struct timer_entry {
	pid_t tid;
	bool seen; /* in the latest /proc/self/task listing */
	int timer; /* the kernel's timer id, or -1 */
	struct prof_perf_counter perf; /* perf.fd -1: none */
	uint64_t base_ns; /* the thread's CPU clock when armed */
};

struct sampler_state {
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
	 * The process's CPU clock when a CPU session started (0: none
	 * running, or a wall session): for counters->cpu_ns, under `lock`.
	 */
	uint64_t cpu_start_ns;
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
	bool key_ok; /* prof_smp_exit_key was created */
	pid_t exclude_tid;
	pid_t own_tids[2]; /* wall mode: not signalled either (sampler.h) */
	struct timer_entry *timers;
	size_t ntimers;
	size_t captimers;
	/* Names of the session's threads that exited, taken as they went. */
	struct tid_name *exited;
	size_t nexited;
	size_t capexited;
	bool counting; /* a session runs: count threads */
	int64_t exit_carry_ns; /* exiting threads' CPU (thread_cpu.c) */
	bool perf; /* arm threads with perf counters (else timers) */
	size_t nperf; /* perf counters held (perf_event.c's share) */
	size_t watch_next; /* the next entry the watch checks */
	bool watch_armed; /* the watch timer (sampler.c's Descriptors) */
	timer_t watch_timer;
	bool perf_kernel; /* ...sampling in the kernel too, until refused */
	bool proc_timer_armed;
	timer_t proc_timer;
	int installed_signo; /* the signal our handler is installed for */
	/* Wall mode (wall.c): the ticker runs; its thread. */
	bool wall;
	pthread_t wall_thread;
	/* A thread started: the ticker lists threads again (relaxed: a
	 * hint, nothing published with it). */
	atomic_bool wall_rescan;
};

extern struct sampler_state prof_smp;

extern pthread_key_t prof_smp_exit_key;

/* sampler.c */
pid_t prof_smp_tid(void);
void prof_smp_stack_bounds(void);
void prof_smp_count(_Atomic uint64_t *c);

/* wall.c: the handler's side (async-signal-safe) and the ticker's */
bool prof_wall_is_ours(const siginfo_t *si);
uint64_t prof_wall_weight(const siginfo_t *si, uint64_t *state);
uint64_t prof_wall_state(void *ucontext, uint64_t guess);
void prof_wall_done(const siginfo_t *si, uint64_t state);
int prof_wall_start(void);
void prof_wall_stop(void);

/* sampler_threads.c (all under prof_smp.lock, but the first) */
uint64_t prof_smp_thread_cpu_ns(pid_t tid);
void prof_smp_timers_delete_all(void);
int prof_smp_timers_sync(bool prune);
int prof_smp_process_timer_set(uint64_t period_ns);
void prof_smp_count_present_threads(void);
void prof_smp_thread_exit(void *unused);
int prof_smp_watch_set(bool on);
void prof_smp_watch(void); /* in the handler: takes the lock if free */

#endif /* PROFRING_PROF_SAMPLER_IMPL_H */
