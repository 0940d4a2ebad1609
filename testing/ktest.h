/* SPDX-License-Identifier: MIT */
/*
 * testing/ktest.h - the unit-test harness: one binary per component, one
 * PASS, FAIL or SKIP line per test case, counted by testing/run-tests.sh.
 *
 * A case fails if any check in it failed; it is skipped (SKIP, never
 * counted as a pass) if it called KT_SKIP() with no check failed before.
 */
#ifndef PROFRING_TESTING_KTEST_H
#define PROFRING_TESTING_KTEST_H

#include <stdio.h>
#include <stdlib.h>

#include "testing/sanitizer.h"

static int ktest_failed_checks;
static const char *ktest_skip_reason;

/* Record a failed check and go on (the case is reported FAIL). */
#define KT_CHECK(cond)                                                 \
	do {                                                           \
		if (!(cond)) {                                         \
			fprintf(stderr, "  %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);            \
			ktest_failed_checks++;                         \
		}                                                      \
	} while (0)

#define KT_CHECK_EQ(a, b)                                                   \
	do {                                                                \
		long long ka_ = (long long)(a), kb_ = (long long)(b);       \
		if (ka_ != kb_) {                                           \
			fprintf(stderr,                                     \
				"  %s:%d: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, #a, #b, ka_, kb_);      \
			ktest_failed_checks++;                              \
		}                                                           \
	} while (0)

/* Stop the case here if a check failed (later checks would crash). */
#define KT_REQUIRE(cond)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "  %s:%d: required: %s\n", __FILE__, \
				__LINE__, #cond);                            \
			ktest_failed_checks++;                               \
			return;                                              \
		}                                                            \
	} while (0)

/* Stop the case here and report it SKIP: what it tests cannot run here. */
#define KT_SKIP(reason)                      \
	do {                                 \
		ktest_skip_reason = (reason); \
		return;                      \
	} while (0)

static inline int ktest_run(const char *name, void (*fn)(void))
{
	int before = ktest_failed_checks;

	ktest_skip_reason = NULL;
	fn();
	if (ktest_failed_checks != before)
		printf("FAIL %s\n", name);
	else if (ktest_skip_reason)
		printf("SKIP %s (%s)\n", name, ktest_skip_reason);
	else
		printf("PASS %s\n", name);
	fflush(stdout);
	return ktest_failed_checks == before;
}

#define KT_RUN(fn) ktest_run(#fn, fn)

static inline int ktest_exit(void)
{
	return ktest_failed_checks ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* PROFRING_TESTING_KTEST_H */
