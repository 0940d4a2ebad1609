/* SPDX-License-Identifier: MIT */
/*
 * testing/harness.h - what the stress programs and the unit tests share:
 * flags, a seeded PRNG, clocks, per-thread signal timers and the stress
 * programs' one-line summary.
 */
#ifndef PROFRING_TESTING_HARNESS_H
#define PROFRING_TESTING_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* One command-line flag: --name VALUE (or --name alone for a bool). */
struct stress_flag {
	const char *name;
	const char *help;
	enum { STRESS_INT, STRESS_BOOL, STRESS_STR } type;
	void *value; /* long *, bool *, const char ** */
};

/* Parse argv against @flags (NULL-name terminated); exits on --help/error. */
void stress_parse(int argc, char **argv, const char *prog,
		  const struct stress_flag *flags);

/* xorshift64*: deterministic per seed, cheap, async-signal-safe. */
static inline uint64_t stress_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint64_t stress_now_ns(void);
void stress_sleep_ns(uint64_t ns);

/*
 * A timer that sends @signo to the calling thread @hz times a second of
 * its CPU time (@cpu_clock, CLOCK_THREAD_CPUTIME_ID: the kernel checks
 * CPU-time timers at its tick, so they fire at most HZ times a second) or
 * of wall time (CLOCK_MONOTONIC: high resolution, 10 kHz and more).
 */
struct stress_timer {
	timer_t id;
	bool armed;
};

int stress_timer_start(struct stress_timer *t, int signo, long hz,
		       bool cpu_clock);
void stress_timer_stop(struct stress_timer *t);

/* Prints "PROG: k=v ... OK|FAILED" and returns the exit status. */
int stress_summary(const char *prog, const char *fields, uint64_t violations);

/*
 * Fork @n children one after another, each running @child and exiting
 * with its return value (0: good) under a 10 s alarm; print the status of
 * every child that did not exit 0, and return how many.
 */
int testing_fork_children(int n, int (*child)(void));

#endif /* PROFRING_TESTING_HARNESS_H */
