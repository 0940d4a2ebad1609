// SPDX-License-Identifier: MIT
/*
 * testing/harness.c - the test kit shared by the stress programs and the
 * unit tests (testing/harness.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing/harness.h"

static void usage(const char *prog, const struct stress_flag *flags, int rc)
{
	fprintf(rc ? stderr : stdout, "usage: %s [flags]\n", prog);
	for (const struct stress_flag *f = flags; f->name; f++)
		fprintf(rc ? stderr : stdout, "  --%-14s %s\n", f->name,
			f->help);
	exit(rc);
}

static const struct stress_flag *find_flag(const struct stress_flag *flags,
					   const char *name)
{
	for (const struct stress_flag *f = flags; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

void stress_parse(int argc, char **argv, const char *prog,
		  const struct stress_flag *flags)
{
	for (int i = 1; i < argc; i++) {
		const struct stress_flag *f = NULL;
		char *end;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			usage(prog, flags, 0);
		if (!strncmp(argv[i], "--", 2))
			f = find_flag(flags, argv[i] + 2);
		if (!f) {
			fprintf(stderr, "%s: unknown flag %s\n", prog, argv[i]);
			usage(prog, flags, 2);
		}
		if (f->type == STRESS_BOOL) {
			*(bool *)f->value = true;
			continue;
		}
		if (++i == argc) {
			fprintf(stderr, "%s: --%s needs a value\n", prog,
				f->name);
			exit(2);
		}
		if (f->type == STRESS_STR) {
			*(const char **)f->value = argv[i];
			continue;
		}
		errno = 0;
		*(long *)f->value = strtol(argv[i], &end, 0);
		if (errno || *end || end == argv[i]) {
			fprintf(stderr, "%s: bad number for --%s: %s\n", prog,
				f->name, argv[i]);
			exit(2);
		}
	}
}

uint64_t stress_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void stress_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int stress_timer_start(struct stress_timer *t, int signo, long hz,
		       bool cpu_clock)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID,
				.sigev_signo = signo };
	long period = 1000000000L / (hz > 0 ? hz : 1);
	struct itimerspec its = {
		.it_interval = { period / 1000000000L, period % 1000000000L },
		.it_value = { period / 1000000000L, period % 1000000000L }
	};

	sev._sigev_un._tid = gettid();
	t->armed = false;
	if (timer_create(cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC,
			 &sev, &t->id))
		return -errno;
	if (timer_settime(t->id, 0, &its, NULL)) {
		int err = errno;

		timer_delete(t->id);
		return -err;
	}
	t->armed = true;
	return 0;
}

void stress_timer_stop(struct stress_timer *t)
{
	if (t->armed)
		timer_delete(t->id);
	t->armed = false;
}

int stress_summary(const char *prog, const char *fields, uint64_t violations)
{
	printf("%s: %s violations=%llu %s\n", prog, fields,
	       (unsigned long long)violations, violations ? "FAILED" : "OK");
	fflush(stdout);
	return violations ? EXIT_FAILURE : EXIT_SUCCESS;
}

int testing_fork_children(int n, int (*child)(void))
{
	int bad = 0, status = 0;
	pid_t pid;

	for (int i = 0; i < n; i++) {
		pid = fork();
		if (pid == 0) {
			alarm(10);
			_exit(child());
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "  child %d: status 0x%x\n", i, status);
			bad++;
		}
	}
	return bad;
}
