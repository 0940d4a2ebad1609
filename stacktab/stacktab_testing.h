/* SPDX-License-Identifier: MIT */
/*
 * stacktab/stacktab_testing.h - helpers shared by stacktab's tests.
 */
#ifndef PROFRING_STACKTAB_TESTING_H
#define PROFRING_STACKTAB_TESTING_H

#include <stddef.h>
#include <stdint.h>

/* A stacktab_foreach()/stacktab_reset() callback: counts into *(int *)arg. */
static inline int stacktab_test_count(void *arg, uint32_t id,
				      const uintptr_t *pcs, size_t n)
{
	(void)id;
	(void)pcs;
	(void)n;
	++*(int *)arg;
	return 0;
}

#endif /* PROFRING_STACKTAB_TESTING_H */
