// SPDX-License-Identifier: MIT
/*
 * prof_test - profring-prof through its API, in-process: sessions and
 * their errors, every thread sampled, exact accounting, CPU time right at
 * 10 kHz, stacks walked through frames (also on threads whose bounds are
 * unknown, and with libunwind), fork, the setitimer fallback.
 *
 * The workload burns CPU in burn_leaf() called from burn_mid(); the
 * profile read back (report.h's decoder) must put the samples there, with
 * burn_mid() as the caller.  The binary is built with frame pointers.
 */
#include <profring/prof.h>

#include "testing/ktest.h"
#include "prof/agent/collector.h"
#include "pprof/report.h"
#include "prof/agent/unwind.h"

#include <errno.h>
#include <signal.h>
#include <dirent.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NBURNERS 8 /* every_thread_sampled()'s threads, in two waves */

static char tmpdir[64];
static char output[128];
static volatile uint64_t sink;

__attribute__((noinline)) uint64_t burn_leaf(uint64_t x, long n);
__attribute__((noinline)) uint64_t burn_mid(long ms);

static double thread_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn_step(uint64_t *x);

/* Not a leaf: GCC 12 gives leaf functions no frame (see prof_demo.c). */
__attribute__((noinline)) void burn_step(uint64_t *x)
{
	__asm__ __volatile__("" : : "r"(x) : "memory");
}

__attribute__((noinline)) uint64_t burn_leaf(uint64_t x, long n)
{
	while (n-- > 0) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (!(n & 0xffff))
			burn_step(&x);
		__asm__ __volatile__("" : "+r"(x));
	}
	return x;
}

/* About @ms of this thread's CPU time, nearly all in burn_leaf(). */
__attribute__((noinline)) uint64_t burn_mid(long ms)
{
	double end = thread_cpu_seconds() + (double)ms / 1e3;
	uint64_t x = 1;

	while (thread_cpu_seconds() < end)
		x = burn_leaf(x | 1, 200000);
	return x;
}

struct burner {
	pthread_t thread;
	long ms;
	pid_t tid;
	double cpu_seconds;
	uint64_t result;
};

static void *burner_main(void *arg)
{
	struct burner *b = arg;
	double t0 = thread_cpu_seconds();

	b->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), "burner");
	b->result = burn_mid(b->ms);
	b->cpu_seconds = thread_cpu_seconds() - t0;
	return NULL;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
			 void *);

static int run_burners(struct burner *b, int n, long ms, create_fn create)
{
	int i;

	for (i = 0; i < n; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		b[i].ms = ms;
		if (create(&b[i].thread, NULL, burner_main, &b[i]))
			return -1;
	}
	for (i = 0; i < n; i++)
		pthread_join(b[i].thread, NULL);
	return 0;
}

static const struct prof_report_func *find_func(const struct prof_summary *s,
						const char *name)
{
	size_t i;

	for (i = 0; i < s->nfuncs; i++)
		if (!strcmp(s->funcs[i].name, name))
			return &s->funcs[i];
	return NULL;
}

static int64_t flat_of(const struct prof_summary *s, const char *name)
{
	const struct prof_report_func *f = find_func(s, name);

	return f ? f->flat : 0;
}

static int64_t cum_of(const struct prof_summary *s, const char *name)
{
	const struct prof_report_func *f = find_func(s, name);

	return f ? f->cum : 0;
}

static int64_t tid_value(const struct prof_summary *s, pid_t tid)
{
	size_t i;

	for (i = 0; i < s->ntids; i++)
		if (s->tids[i].has_tid && s->tids[i].tid == (uint64_t)tid)
			return s->tids[i].value;
	return 0;
}

static const char *tid_name(const struct prof_summary *s, pid_t tid)
{
	size_t i;

	for (i = 0; i < s->ntids; i++)
		if (s->tids[i].has_tid && s->tids[i].tid == (uint64_t)tid)
			return s->tids[i].name;
	return "";
}

static struct profring_prof_opts opts_at(unsigned int hz)
{
	struct profring_prof_opts o;

	memset(&o, 0, sizeof(o));
	o.hz = hz;
	o.output = output;
	return o;
}

/* Stop, check the books, load the profile (sample type @index). */
static int stop_and_load(int index, struct prof_summary **s,
			 struct profring_prof_stats *st)
{
	int err = profring_prof_stop();

	KT_CHECK_EQ(err, 0);
	KT_CHECK_EQ(profring_prof_get_stats(st), 0);
	/* Every signal is read or counted lost; nothing refused. */
	KT_CHECK_EQ(st->signals, st->read + st->lost);
	KT_CHECK_EQ(st->written + st->refused, st->signals);
	if (err)
		return err;
	err = prof_summary_load(output, index, s, NULL, 0);
	KT_CHECK_EQ(err, 0);
	return err;
}

/* Most of the samples are in burn_leaf(), called from burn_mid(). */
static void check_stacks(const struct prof_summary *s, double min_share)
{
	int64_t leaf = flat_of(s, "burn_leaf");

	KT_CHECK(s->total > 0);
#if TESTING_UNDER_TSAN
	/* TSan runs handlers late, at its next interceptor: the samples
	 * land there, not where the signal came. */
	(void)leaf;
	(void)min_share;
	return;
#endif
	KT_CHECK(leaf >= (int64_t)(min_share * (double)s->total));
	KT_CHECK(cum_of(s, "burn_mid") >= (int64_t)(0.95 * (double)leaf));
	KT_CHECK(cum_of(s, "burner_main") >= (int64_t)(0.9 * (double)leaf));
}

static void api_errors(void)
{
	struct profring_prof_opts o = opts_at(100);
	struct profring_prof_stats st;

	KT_CHECK_EQ(profring_prof_stop(), -ESHUTDOWN);
	KT_CHECK_EQ(profring_prof_get_stats(NULL), -EINVAL);
	o.hz = PROFRING_PROF_MAX_HZ + 1;
	KT_CHECK_EQ(profring_prof_start(&o), -EINVAL);
	o = opts_at(100);
	o.max_frames = PROFRING_PROF_MAX_FRAMES + 1;
	KT_CHECK_EQ(profring_prof_start(&o), -EINVAL);
	o = opts_at(100);
	o.timer = (enum profring_prof_timer)7;
	KT_CHECK_EQ(profring_prof_start(&o), -EINVAL);
	o = opts_at(100);
	o.unwinder = (enum profring_prof_unwinder)7;
	KT_CHECK_EQ(profring_prof_start(&o), -EINVAL);
	o = opts_at(100);
	o.mode = (enum profring_prof_mode)7;
	KT_CHECK_EQ(profring_prof_start(&o), -EINVAL);
	o = opts_at(PROFRING_PROF_MAX_WALL_HZ + 1);
	o.mode = PROFRING_PROF_MODE_WALL;
	KT_CHECK_EQ(profring_prof_start(&o), -EINVAL);
	o = opts_at(100);
	o.mode = PROFRING_PROF_MODE_WALL;
	o.http = "127.0.0.1:0";
	KT_CHECK_EQ(profring_prof_start(&o), -EINVAL);
	/* A wall session of a sleeping process: its books balance. */
	o = opts_at(100);
	o.mode = PROFRING_PROF_MODE_WALL;
	KT_REQUIRE(profring_prof_start(&o) == 0);
	{
		/* Our signal cuts a sleep short (EINTR): go on sleeping. */
		struct timespec ts = { 0, 200000000 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	KT_CHECK_EQ(profring_prof_stop(), 0);
	KT_CHECK_EQ(profring_prof_get_stats(&st), 0);
	KT_CHECK_EQ(st.signals, st.read + st.lost);
	KT_CHECK(st.read >= 10); /* 20 ticks of the main thread, about */
	o = opts_at(100);
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(profring_prof_start(&o), -EBUSY);
	KT_CHECK_EQ(profring_prof_stop(), 0);
	KT_CHECK_EQ(profring_prof_stop(), -ESHUTDOWN);
	KT_CHECK_EQ(profring_prof_get_stats(&st), 0);
	KT_CHECK_EQ(st.signals, st.read + st.lost);
	KT_CHECK_EQ(access(output, R_OK), 0);
}

/* Threads created after start, in two waves: every one is sampled. */
static void every_thread_sampled(void)
{
	struct profring_prof_opts o = opts_at(1000);
	struct burner b[NBURNERS];
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	int i;

	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(run_burners(b, NBURNERS / 2, 60, pthread_create), 0);
	KT_CHECK_EQ(
		run_burners(b + NBURNERS / 2, NBURNERS / 2, 60, pthread_create),
		0);
	KT_REQUIRE(stop_and_load(0, &s, &st) == 0);
	for (i = 0; i < NBURNERS; i++) {
		if (tid_value(s, b[i].tid) <= 0)
			fprintf(stderr, "  thread %d (tid %d) not sampled\n", i,
				(int)b[i].tid);
		KT_CHECK(tid_value(s, b[i].tid) > 0);
		KT_CHECK(!strcmp(tid_name(s, b[i].tid), "burner"));
	}
	KT_CHECK(st.threads >= NBURNERS);
	KT_CHECK_EQ(st.unwind_unchecked, 0);
	check_stacks(s, 0.8);
	prof_summary_free(s);
}

/*
 * At 10 kHz the kernel's tick limits the signals; the overruns each signal
 * reports keep the profile's CPU time equal to the threads' CPU time.
 */
static void cpu_time_at_10khz(void)
{
	struct profring_prof_opts o = opts_at(10000);
	struct burner b[2];
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	double cpu, ratio;

	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(run_burners(b, 2, 300, pthread_create), 0);
	KT_REQUIRE(stop_and_load(1, &s, &st) == 0);
	KT_CHECK(!strcmp(s->type, "cpu") && !strcmp(s->unit, "nanoseconds"));
	cpu = b[0].cpu_seconds + b[1].cpu_seconds;
	ratio = (double)s->total / 1e9 / cpu;
	printf("# 10 kHz: %.3f s of CPU, profile says %.3f s (%.3f); %llu signals for %llu periods\n",
	       cpu, (double)s->total / 1e9, ratio,
	       (unsigned long long)st.signals, (unsigned long long)st.periods);
	KT_CHECK(ratio > 0.85 && ratio < 1.05);
	check_stacks(s, 0.8);
	prof_summary_free(s);
}

/* A thread the wrapper did not see: no bounds, frames read safely. */
static void unknown_bounds_thread(void)
{
	struct profring_prof_opts o = opts_at(1000);
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	struct burner b[1];

	/* Started during the session behind the wrapper's back (as
	 * thrd_create or a raw clone would): the collector's rescan of
	 * /proc/self/task arms it within 200 ms; its bounds are unknown. */
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(run_burners(b, 1, 600, prof_real_pthread_create), 0);
	KT_REQUIRE(stop_and_load(0, &s, &st) == 0);
	KT_CHECK(tid_value(s, b[0].tid) > 0);
	KT_CHECK(st.unwind_unchecked > 0);
	check_stacks(s, 0.5);
	prof_summary_free(s);

	/* Started before the session: armed from /proc/self/task, with no
	 * bounds known, so its frames are read with process_vm_readv. */
	o = opts_at(1000);
	memset(b, 0, sizeof(b));
	b[0].ms = 150;
	KT_REQUIRE(prof_real_pthread_create(&b[0].thread, NULL, burner_main,
					    &b[0]) == 0);
	KT_REQUIRE(profring_prof_start(&o) == 0);
	pthread_join(b[0].thread, NULL);
	KT_REQUIRE(stop_and_load(0, &s, &st) == 0);
	KT_CHECK(tid_value(s, b[0].tid) > 0);
	KT_CHECK(st.unwind_unchecked > 0);
	check_stacks(s, 0.5);
	prof_summary_free(s);
}

static void fork_child_has_no_session(void)
{
	struct profring_prof_opts o = opts_at(1000);
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	struct burner b[1];
	int status = -1;
	pid_t pid;

	KT_REQUIRE(profring_prof_start(&o) == 0);
	pid = fork();
	if (pid == 0) {
		sink += burn_mid(50);
		_exit(profring_prof_stop() == -ESHUTDOWN ? 0 : 1);
	}
	KT_REQUIRE(pid > 0);
	KT_CHECK_EQ(run_burners(b, 1, 100, pthread_create), 0);
	KT_CHECK_EQ(waitpid(pid, &status, 0), pid);
	KT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	KT_REQUIRE(stop_and_load(0, &s, &st) == 0);
	KT_CHECK(tid_value(s, b[0].tid) > 0);
	prof_summary_free(s);
}

static atomic_int stop_spinning;

static void *spinner(void *arg)
{
	volatile uint64_t x = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop_spinning, memory_order_relaxed))
		x++;
	return NULL;
}

/* The real-time signal whose handler takes SA_SIGINFO: ours, or 0. */
static int our_signal(struct sigaction *cur)
{
	for (int sig = SIGRTMAX; sig >= SIGRTMIN; sig--)
		if (!sigaction(sig, NULL, cur) && (cur->sa_flags & SA_SIGINFO))
			return sig;
	return 0;
}

/*
 * The sampler takes a real-time signal of its own, never SIGPROF (a
 * program's SIGPROF handler, setitimer and sigwait see nothing of ours),
 * and its handler blocks no other signal: SIGTERM and the rest still
 * reach a program whose thread is inside it.
 */
static void own_signal_blocks_nothing_else(void)
{
	static const int others[] = { SIGUSR1, SIGUSR2, SIGINT,	 SIGTERM,
				      SIGALRM, SIGCHLD, SIGQUIT, SIGHUP };
	struct profring_prof_opts o = opts_at(100);
	struct sigaction cur, prof;
	struct itimerval itv;
	size_t i;

	KT_REQUIRE(sigaction(SIGPROF, NULL, &prof) == 0);
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK(our_signal(&cur) >= SIGRTMIN + 2);
	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		KT_CHECK(sigismember(&cur.sa_mask, others[i]) == 0);
	KT_REQUIRE(sigaction(SIGPROF, NULL, &cur) == 0);
	KT_CHECK(cur.sa_handler == prof.sa_handler);
	KT_CHECK(getitimer(ITIMER_PROF, &itv) == 0 && !itv.it_value.tv_sec &&
		 !itv.it_value.tv_usec);
	KT_CHECK_EQ(profring_prof_stop(), 0);
}

static atomic_int own_sigprof_count;

static void count_sigprof(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&own_sigprof_count, 1, memory_order_relaxed);
}

/*
 * A program with its own SIGPROF handler and ITIMER_PROF gets its own
 * signals, as many as without us, while we sample.
 */
static void program_sigprof_untouched(void)
{
	struct profring_prof_opts o = opts_at(1000);
	struct profring_prof_stats st;
	struct itimerval itv = { { 0, 10000 }, { 0, 10000 } }, off = { 0 };
	struct sigaction sa = { .sa_handler = count_sigprof }, old;
	struct burner b[1];
	int n;

	sigemptyset(&sa.sa_mask);
	KT_REQUIRE(sigaction(SIGPROF, &sa, &old) == 0);
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_REQUIRE(setitimer(ITIMER_PROF, &itv, NULL) == 0);
	KT_CHECK_EQ(run_burners(b, 1, 300, pthread_create), 0);
	setitimer(ITIMER_PROF, &off, NULL);
	KT_CHECK_EQ(profring_prof_stop(), 0);
	profring_prof_get_stats(&st);
	sigaction(SIGPROF, &old, NULL);
	n = atomic_load_explicit(&own_sigprof_count, memory_order_relaxed);
	/* 100 Hz of about 0.3 s of process CPU: ~30, never our 1 kHz */
	printf("# the program's own SIGPROFs: %d; our samples: %llu\n", n,
	       (unsigned long long)st.signals);
	KT_CHECK(n >= 10 && n <= 60);
	KT_CHECK(st.signals > 0);
}

/*
 * A program that installs a handler for our signal takes it over: we
 * stop sampling (our timers would fire into its handler) and keep books.
 */
static void taking_our_signal_stops_sampling(void)
{
	struct profring_prof_opts o = opts_at(1000);
	struct profring_prof_stats st1, st2;
	struct sigaction cur, mine = { .sa_handler = count_sigprof };
	struct burner b[1];
	int sig;

	if (TESTING_UNDER_TSAN || TESTING_UNDER_ASAN)
		KT_SKIP("sanitizer builds do not hook sigaction (prof/agent/hooks.c)");
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(run_burners(b, 1, 100, pthread_create), 0);
	sig = our_signal(&cur);
	KT_REQUIRE(sig > 0);
	sigemptyset(&mine.sa_mask);
	atomic_store(&own_sigprof_count, 0);
	KT_REQUIRE(sigaction(sig, &mine, NULL) == 0);
	profring_prof_get_stats(&st1);
	KT_CHECK_EQ(run_burners(b, 1, 100, pthread_create), 0);
	profring_prof_get_stats(&st2);
	KT_CHECK_EQ(st1.signals, st2.signals); /* no sample after */
	KT_CHECK_EQ(atomic_load(&own_sigprof_count), 0); /* none of ours */
	KT_CHECK_EQ(profring_prof_stop(), 0);
	signal(sig, SIG_DFL);
}

/*
 * Children forked while other threads are inside the handler start and
 * stop sessions of their own: the parent's handlers in flight must not
 * be waited for in the child (an alarm kills a child that hangs).
 */
static void fork_during_samples(void)
{
	struct profring_prof_opts o = opts_at(10000);
	int i, status, bad = 0;
	char child_out[sizeof(tmpdir) + 16];
	pthread_t t[2];
	pid_t pid;

	snprintf(child_out, sizeof(child_out), "%s/child.pb.gz", tmpdir);
	/* Relaxed: before the spinners are created. */
	atomic_store_explicit(&stop_spinning, 0, memory_order_relaxed);
	KT_REQUIRE(profring_prof_start(&o) == 0);
	for (i = 0; i < 2; i++)
		KT_REQUIRE(pthread_create(&t[i], NULL, spinner, NULL) == 0);
	for (i = 0; i < 40; i++) {
		pid = fork();
		if (pid == 0) {
			struct profring_prof_opts co = opts_at(1000);

			alarm(10);
#if TESTING_UNDER_TSAN || TESTING_UNDER_ASAN
			/* A child of a threaded parent may only count on
			 * async-signal-safe calls; glibc's malloc is fork-safe,
			 * the sanitizers' are not (TSan refuses threads, ASan's
			 * allocator lock may be held by a parent thread). */
			(void)co;
			_exit(profring_prof_stop() == -ESHUTDOWN ? 0 : 3);
#endif
			/* Never a system path: run as root, a bug in the
			 * output code would replace it. */
			co.output = child_out;
			if (profring_prof_start(&co))
				_exit(2);
			_exit(profring_prof_stop() ? 3 : 0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "  child %d: status 0x%x\n", i, status);
			bad++;
		}
		unlink(child_out);
	}
	/* Relaxed: a flag only, nothing published (the joins follow). */
	atomic_store_explicit(&stop_spinning, 1, memory_order_relaxed);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	KT_CHECK_EQ(bad, 0);
	KT_CHECK_EQ(profring_prof_stop(), 0);
}

static void libunwind_stacks(void)
{
	struct profring_prof_opts o = opts_at(1000);
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	struct burner b[2];

	o.unwinder = PROFRING_PROF_UNWIND_LIBUNWIND;
	if (!prof_unwind_libunwind_available()) {
		KT_CHECK_EQ(profring_prof_start(&o), -ENOTSUP);
		return;
	}
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(run_burners(b, 2, 100, pthread_create), 0);
	KT_REQUIRE(stop_and_load(0, &s, &st) == 0);
	check_stacks(s, 0.8);
	prof_summary_free(s);
}

/*
 * A ring of 32 words holds two samples and the reader sleeps 20 ms after
 * each read: samples are lost, and every one is counted and shown.
 */
static void tiny_ring_counts_losses(void)
{
	struct profring_prof_opts o = opts_at(10000);
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	struct burner b[4];

	o.buffer_words = 32;
	o.max_frames = 2; /* and every stack is cut */
	prof_collector_set_test_stall(20000); /* a slow reader */
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(run_burners(b, 4, 100, pthread_create), 0);
	KT_REQUIRE(stop_and_load(0, &s, &st) == 0);
	prof_collector_set_test_stall(0);
	KT_CHECK(st.lost > 0);
	KT_CHECK(st.truncated > 0);
	printf("# tiny ring: %llu signals, %llu read, %llu lost, %llu truncated\n",
	       (unsigned long long)st.signals, (unsigned long long)st.read,
	       (unsigned long long)st.lost, (unsigned long long)st.truncated);
	KT_CHECK_EQ(flat_of(s, PROF_LOST_NAME), (int64_t)st.lost);
	KT_CHECK_EQ(s->total, (int64_t)(st.read + st.lost));
	prof_summary_free(s);
}

/* Recurse @depth frames, then burn: one distinct stack per depth. */
__attribute__((noinline)) static uint64_t burn_at(long depth, long ms)
{
	uint64_t x;

	if (depth > 0) {
		x = burn_at(depth - 1, ms);
		__asm__ __volatile__("" : "+r"(x)); /* no tail call */
		return x;
	}
	return burn_mid(ms);
}

static void *deep_burner(void *arg)
{
	long depths = *(long *)arg;

	for (long d = 0; d < depths; d++)
		sink += burn_at(d, 8);
	return NULL;
}

/*
 * A 4 KiB stack table holds a few dozen stacks; 60 distinct ones arrive:
 * those that find no room are kept, counted, under their own entry.
 */
static void stack_table_full(void)
{
	struct profring_prof_opts o = opts_at(1000);
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	long depths = 60;
	pthread_t t;

	prof_collector_set_test_table_bytes(4096);
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(pthread_create(&t, NULL, deep_burner, &depths), 0);
	pthread_join(t, NULL);
	KT_REQUIRE(stop_and_load(0, &s, &st) == 0);
	prof_collector_set_test_table_bytes(0);
	printf("# small table: %llu samples, %llu stacks interned, %llu kept without\n",
	       (unsigned long long)st.read, (unsigned long long)st.stacks,
	       (unsigned long long)st.stack_table_full);
	KT_CHECK(st.stack_table_full > 0);
	KT_CHECK_EQ(flat_of(s, PROF_TABLE_FULL_NAME),
		    (int64_t)st.stack_table_full);
	KT_CHECK_EQ(s->total, (int64_t)(st.read + st.lost));
	prof_summary_free(s);
}

/* Threads of this process now. */
static int tasks_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * The process timer at 10 kHz: one POSIX timer on the process CPU clock,
 * one signal a tick, each weighed by its overrun: the profile's CPU time
 * still matches the threads'.
 */
static void process_timer(void)
{
	struct profring_prof_opts o = opts_at(10000);
	struct profring_prof_stats st;
	struct prof_summary *s = NULL;
	struct burner b[2];
	double cpu, ratio;
	int before = tasks_now();

	o.timer = PROFRING_PROF_TIMER_PROCESS;
	KT_REQUIRE(profring_prof_start(&o) == 0);
	KT_CHECK_EQ(run_burners(b, 2, 300, pthread_create), 0);
	KT_REQUIRE(stop_and_load(1, &s, &st) == 0);
	/* the threads there were (a sanitizer has its own), two burners */
	KT_CHECK_EQ(st.threads, before + 2);
	cpu = b[0].cpu_seconds + b[1].cpu_seconds;
	ratio = (double)s->total / 1e9 / cpu;
	printf("# process timer 10 kHz: %.3f s of CPU, profile says %.3f s (%.3f); %llu signals\n",
	       cpu, (double)s->total / 1e9, ratio,
	       (unsigned long long)st.signals);
	KT_CHECK(ratio > 0.85 && ratio < 1.15);
	check_stacks(s, 0.8);
	prof_summary_free(s);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/prof_test.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(output, sizeof(output), "%s/prof.pb.gz", tmpdir);
	KT_RUN(api_errors);
	KT_RUN(every_thread_sampled);
	KT_RUN(cpu_time_at_10khz);
	KT_RUN(unknown_bounds_thread);
	KT_RUN(fork_child_has_no_session);
	KT_RUN(own_signal_blocks_nothing_else);
	KT_RUN(program_sigprof_untouched);
	KT_RUN(taking_our_signal_stops_sampling);
	KT_RUN(fork_during_samples);
	KT_RUN(libunwind_stacks);
	KT_RUN(tiny_ring_counts_losses);
	KT_RUN(process_timer);
	KT_RUN(stack_table_full);
	unlink(output);
	rmdir(tmpdir);
	return ktest_exit();
}
