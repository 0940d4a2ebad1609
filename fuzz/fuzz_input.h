/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_input.h - what every fuzz target needs: a cursor over the
 * input that reads zeros once it runs out, and a loud failure.
 * Define FUZZ_NAME before including it.
 */
#ifndef PROFRING_FUZZ_INPUT_H
#define PROFRING_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct fuzz_input {
	const uint8_t *p;
	size_t left;
};

static inline uint8_t fuzz_byte(struct fuzz_input *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

/* The reference model and the library disagree: stop, loudly. */
static inline void fuzz_fail(const char *what, long long a, long long b)
{
	fprintf(stderr, FUZZ_NAME ": %s (%lld, %lld)\n", what, a, b);
	abort();
}

#endif /* PROFRING_FUZZ_INPUT_H */
