/* SPDX-License-Identifier: MIT */
/*
 * pprof/symbolize_testing.h - what the symbolizer's and the writers' tests
 * share: three functions of the test program to symbolize (each test
 * binary gets its own copy, at its own addresses), an address in libc,
 * and look-ups in the symbolizer's mappings.  Included by tests only.
 */
#ifndef PROFRING_PPROF_SYMBOLIZE_TESTING_H
#define PROFRING_PPROF_SYMBOLIZE_TESTING_H

#include <stdint.h>
#include <string.h>

#include "pprof/symbolize.h"

static volatile unsigned long sink;

__attribute__((noinline, unused)) static void leaf_fn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 3;
}

__attribute__((noinline, unused)) static void mid_fn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		sink ^= i;
		leaf_fn(i);
	}
}

__attribute__((noinline, unused)) static void root_fn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		sink += 7;
		mid_fn(i);
	}
}

/* Their addresses, and one inside libc (find_functions() sets them). */
static uintptr_t leaf, mid, root, libc_pc;

__attribute__((unused)) static void find_functions(void)
{
	leaf = (uintptr_t)&leaf_fn;
	mid = (uintptr_t)&mid_fn;
	root = (uintptr_t)&root_fn;
	libc_pc = (uintptr_t)&strlen + 1;
}

__attribute__((unused)) static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

__attribute__((unused)) static const struct prof_mapping *
mapping_by_id(struct prof_symbolizer *s, unsigned int id)
{
	const struct prof_mapping *m;
	size_t n = prof_symbolizer_mappings(s, &m);

	return id && id <= n ? &m[id - 1] : NULL;
}

#endif /* PROFRING_PPROF_SYMBOLIZE_TESTING_H */
