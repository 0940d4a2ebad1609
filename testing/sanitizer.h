/* SPDX-License-Identifier: MIT */
/*
 * testing/sanitizer.h - which sanitizer a test build runs under, the one
 * place that asks (gcc defines __SANITIZE_*__, clang answers
 * __has_feature): TESTING_UNDER_TSAN and TESTING_UNDER_ASAN are 0 or 1.
 */
#ifndef PROFRING_TESTING_SANITIZER_H
#define PROFRING_TESTING_SANITIZER_H

#ifndef __has_feature
#define __has_feature(x) 0
#endif

#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
#define TESTING_UNDER_TSAN 1
#else
#define TESTING_UNDER_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define TESTING_UNDER_ASAN 1
#else
#define TESTING_UNDER_ASAN 0
#endif

#endif /* PROFRING_TESTING_SANITIZER_H */
