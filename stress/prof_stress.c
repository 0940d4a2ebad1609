// SPDX-License-Identifier: MIT
/*
 * prof_stress - profring-prof sessions, one after another, under thread
 * churn.
 *
 * Churner threads create short-lived threads without pause (through
 * pthread_create, which the profiler interposes, and thrd_create, which
 * only its /proc/self/task rescan finds); each burns 0.5-5 ms of CPU at
 * the bottom of a recursion of random depth and exits.  Meanwhile the
 * main thread starts a session with random settings (frequency 99 Hz to
 * 10 kHz, per-thread timers or setitimer, frame pointers or libunwind,
 * with --tiny a ring of 64 words and a collector that naps 20 ms after
 * each read; with --wall, wall-clock sessions too, at 50 Hz to 1 kHz:
 * the ticker signals threads as they come and go, and writes REPEAT
 * records for those that sleep), lets it run 50-300 ms, stops it, and
 * checks the books:
 *
 *  - start and stop succeed, and a second stop finds no session
 *    (-ESHUTDOWN);
 *  - signals = samples read + samples lost; every sample written was
 *    read, every one refused was counted lost;
 *  - no POSIX timer is left behind (/proc/self/timers is empty);
 *  - the profile file holds exactly read + lost samples, the lost ones in
 *    the "[profring: lost samples]" entry.
 *
 * Summary: ops = sessions, verified = samples read and found in the
 * profiles, lost = samples counted lost.
 */
#include <profring/prof.h>

#include "prof/agent/collector.h"
#include "pprof/report.h"
#include "prof/agent/unwind.h"
#include "testing/harness.h"
#include "testing/sanitizer.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

#define PROG "prof_stress"

static struct {
	long seconds;
	long churners;
	long seed;
	bool tiny;
	bool process;
	bool libunwind;
	bool wall;
} opt = { .seconds = 5, .churners = 4, .seed = 1 };

static const struct stress_flag flags[] = {
	{ "seconds", "run time (default 5)", STRESS_INT, &opt.seconds },
	{ "churners", "threads creating threads (default 4)", STRESS_INT,
	  &opt.churners },
	{ "seed", "PRNG seed (default 1)", STRESS_INT, &opt.seed },
	{ "tiny", "64-word rings: samples are lost, and counted", STRESS_BOOL,
	  &opt.tiny },
	{ "process", "also setitimer sessions", STRESS_BOOL, &opt.process },
	{ "libunwind", "also libunwind sessions", STRESS_BOOL, &opt.libunwind },
	{ "wall", "also wall-clock sessions", STRESS_BOOL, &opt.wall },
	{ NULL, NULL, 0, NULL },
};

static atomic_bool stop;
static atomic_ullong threads_created;
static atomic_ullong violations;

static void violation(const char *what, unsigned long long a,
		      unsigned long long b)
{
	fprintf(stderr, "%s: violation: %s (%llu vs %llu)\n", PROG, what, a, b);
	/* Relaxed: a count, kept and read by the main thread only. */
	atomic_fetch_add_explicit(&violations, 1, memory_order_relaxed);
}

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Burn @ns of CPU @depth frames down. */
__attribute__((noinline)) static uint64_t burn(long depth, double ns)
{
	double end;
	uint64_t x = (uint64_t)depth;

	if (depth > 0)
		return burn(depth - 1, ns) + 1;
	end = thread_cpu_ns() + ns;
	while (thread_cpu_ns() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005u + 1;
	return x;
}

struct job {
	long depth;
	double ns;
	uint64_t result;
};

static void *job_main(void *arg)
{
	struct job *j = arg;

	j->result = burn(j->depth, j->ns);
	return NULL;
}

#if !TESTING_UNDER_TSAN
static int job_main_c11(void *arg)
{
	job_main(arg);
	return 0;
}
#endif

/*
 * A thread the pthread_create wrapper does not see: thrd_create (glibc
 * calls its internal pthread_create directly).  TSan does not intercept
 * thrd_create, so under TSan the wrapper is bypassed another way.
 */
static bool unseen_thread(struct job *j)
{
#if TESTING_UNDER_TSAN
	pthread_t pt;

	if (prof_real_pthread_create(&pt, NULL, job_main, j))
		return false;
	pthread_join(pt, NULL);
#else
	thrd_t ct;

	if (thrd_create(&ct, job_main_c11, j) != thrd_success)
		return false;
	thrd_join(ct, NULL);
#endif
	return true;
}

static void *churner(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg;
	struct job j;
	pthread_t pt;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		j.depth = (long)(stress_rand(&rng) % 40);
		j.ns = 500000.0 + (double)(stress_rand(&rng) % 4500000);
		if (stress_rand(&rng) % 4) {
			if (pthread_create(&pt, NULL, job_main, &j))
				continue;
			pthread_join(pt, NULL);
		} else if (!unseen_thread(&j)) {
			continue;
		}
		atomic_fetch_add_explicit(&threads_created, 1,
					  memory_order_relaxed);
	}
	return NULL;
}

static unsigned long long posix_timers_alive(void)
{
	char line[256];
	unsigned long long n = 0;
	FILE *f = fopen("/proc/self/timers", "r");

	if (!f)
		return 0; /* kernel without CONFIG_CHECKPOINT_RESTORE */
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, "ID:", 3);
	fclose(f);
	return n;
}

static void random_opts(struct profring_prof_opts *o, uint64_t *rng,
			const char *path)
{
	static const unsigned int hz[] = { 99, 250, 1000, 4000,
					   PROFRING_PROF_MAX_HZ };

	memset(o, 0, sizeof(*o));
	o->output = path;
	o->hz = hz[stress_rand(rng) % 5];
	if (opt.process && !(stress_rand(rng) % 3))
		o->timer = PROFRING_PROF_TIMER_PROCESS;
	if (opt.wall && !(stress_rand(rng) % 2)) {
		o->mode = PROFRING_PROF_MODE_WALL;
		o->hz = hz[stress_rand(rng) % 3] / 2 + 1; /* 50 to 501 Hz */
	}
	if (opt.libunwind && prof_unwind_libunwind_available() &&
	    !(stress_rand(rng) % 3))
		o->unwinder = PROFRING_PROF_UNWIND_LIBUNWIND;
	if (opt.tiny) {
		o->buffer_words = 64;
		o->max_frames = 8;
		/* and a reader that naps: the ring overflows */
		prof_collector_set_test_stall(20000);
	}
}

/* One session; adds to the totals. */
static void session(uint64_t *rng, const char *path,
		    unsigned long long *verified, unsigned long long *lost)
{
	struct profring_prof_stats st;
	struct profring_prof_opts o;
	struct prof_summary *s = NULL;
	int err;

	random_opts(&o, rng, path);
	err = profring_prof_start(&o);
	if (err) {
		violation("start failed", (unsigned long long)-err, 0);
		return;
	}
	stress_sleep_ns(50000000u + stress_rand(rng) % 250000000u);
	err = profring_prof_stop();
	if (err)
		violation("stop failed", (unsigned long long)-err, 0);
	err = profring_prof_stop();
	if (err != -ESHUTDOWN)
		violation("second stop not -ESHUTDOWN",
			  (unsigned long long)-err, ESHUTDOWN);
	profring_prof_get_stats(&st);
	if (st.signals != st.read + st.lost)
		violation("signals != read + lost", st.signals,
			  st.read + st.lost);
	/* Every written sample read, every refused one counted lost. */
	if (st.written != st.read)
		violation("written != read", st.written, st.read);
	if (st.refused != st.lost)
		violation("refused != lost", st.refused, st.lost);
	if (posix_timers_alive())
		violation("timers left after stop", posix_timers_alive(), 0);
	err = prof_summary_load(path, 0, &s, NULL, 0);
	if (err) {
		violation("profile unreadable", (unsigned long long)-err, 0);
		return;
	}
	if ((unsigned long long)s->total != st.read + st.lost)
		violation("profile samples != read + lost",
			  (unsigned long long)s->total, st.read + st.lost);
	*verified += st.read;
	*lost += st.lost;
	prof_summary_free(s);
}

int main(int argc, char **argv)
{
	unsigned long long sessions = 0, verified = 0, lost = 0, threads;
	char dir[] = "/tmp/prof_stress.XXXXXX", path[64], fields[512];
	uint64_t rng, start, end;
	pthread_t *ch;
	long i;

	stress_parse(argc, argv, PROG, flags);
	rng = (uint64_t)opt.seed;
	if (!mkdtemp(dir)) {
		perror(PROG ": mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/p.pb.gz", dir);
	ch = calloc((size_t)opt.churners, sizeof(*ch));
	if (!ch)
		return 1;
	for (i = 0; i < opt.churners; i++)
		if (pthread_create(&ch[i], NULL, churner,
				   (void *)(uintptr_t)(opt.seed * 977 + i + 1)))
			return 1;
	start = stress_now_ns();
	end = start + (uint64_t)opt.seconds * 1000000000u;
	while (stress_now_ns() < end) {
		session(&rng, path, &verified, &lost);
		sessions++;
	}
	/* Relaxed: a flag only; the joins below order what the churners did. */
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (i = 0; i < opt.churners; i++)
		pthread_join(ch[i], NULL);
	free(ch);
	unlink(path);
	rmdir(dir);
	/* Relaxed: the churners are joined. */
	threads = atomic_load_explicit(&threads_created, memory_order_relaxed);
	snprintf(fields, sizeof(fields),
		 "churners=%ld tiny=%d process=%d libunwind=%d wall=%d "
		 "seconds=%.1f "
		 "ops=%llu verified=%llu lost=%llu threads=%llu",
		 opt.churners, opt.tiny, opt.process, opt.libunwind, opt.wall,
		 (double)(stress_now_ns() - start) / 1e9, sessions, verified,
		 lost, threads);
	/* Relaxed: see violation(). */
	return stress_summary(
		PROG, fields,
		atomic_load_explicit(&violations, memory_order_relaxed));
}
