/* SPDX-License-Identifier: MIT */
/*
 * ring/ktest.h - the unit-test harness: one binary per component, one
 * PASS or FAIL line per test case, counted by `make check`.
 */
#ifndef PROFRING_RING_KTEST_H
#define PROFRING_RING_KTEST_H

#include <stdio.h>
#include <stdlib.h>

static int ktest_failed_checks;

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

static inline int ktest_run(const char *name, void (*fn)(void))
{
	int before = ktest_failed_checks;

	fn();
	printf("%s %s\n", ktest_failed_checks == before ? "PASS" : "FAIL",
	       name);
	fflush(stdout);
	return ktest_failed_checks == before;
}

#define KT_RUN(fn) ktest_run(#fn, fn)

static inline int ktest_exit(void)
{
	return ktest_failed_checks ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* PROFRING_RING_KTEST_H */
