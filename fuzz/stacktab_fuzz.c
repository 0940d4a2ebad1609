// SPDX-License-Identifier: MIT
/*
 * stacktab_fuzz.c - stacktab against a reference map, driven by libFuzzer.
 *
 * The input picks an arena size (often tiny, to exhaust it) and a sequence
 * of puts (stacks from a small alphabet of PCs, so that stacks repeat and
 * share prefixes; empty ones; ones past STACKTAB_MAX_DEPTH), gets (of ids
 * handed out, and of ids never handed out), iterations and resets.  The
 * model is a plain list of the generation's stacks in insertion order: one
 * thread inserts, so ids are 1, 2, 3 ... in that order; the same stack
 * (after truncation) must get the same id; a new stack is lost exactly
 * when its node (24 bytes + 8 per frame, after the arena's reserved first
 * word) no longer fits max_bytes (a bound to the byte: the fuzzer picks
 * sizes that are not page multiples too); get, foreach and the reset
 * dump must return exactly the model's stacks; a reset from inside a walk
 * of the same table is refused with -EDEADLK; losses and bytes are
 * counted.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "stacktab_fuzz"
#include "fuzz_input.h"
#include <profring/stacktab.h>

#define MAX_STACKS 4096
#define ARENA_MAX (1 << 16)

struct model {
	size_t arena, used, nstacks;
	uint64_t losses;
	uint32_t n[MAX_STACKS];
	uintptr_t *pcs[MAX_STACKS];
};

static uint32_t model_find(struct model *m, const uintptr_t *pcs, size_t n)
{
	for (size_t i = 0; i < m->nstacks; i++)
		if (m->n[i] == n && !memcmp(m->pcs[i], pcs, n * sizeof(*pcs)))
			return (uint32_t)i + 1;
	return 0;
}

static uint32_t model_put(struct model *m, const uintptr_t *pcs, size_t n)
{
	size_t node = 24 + 8 * n;
	uint32_t id;

	if (!n)
		return 0;
	if (n > STACKTAB_MAX_DEPTH)
		n = STACKTAB_MAX_DEPTH;
	id = model_find(m, pcs, n);
	if (id)
		return id;
	if (m->used + 24 + 8 * n > m->arena || m->nstacks == MAX_STACKS) {
		m->losses++;
		return 0;
	}
	node = 24 + 8 * n;
	m->used += node;
	m->n[m->nstacks] = (uint32_t)n;
	m->pcs[m->nstacks] = malloc(n * sizeof(uintptr_t));
	memcpy(m->pcs[m->nstacks], pcs, n * sizeof(uintptr_t));
	return (uint32_t)++m->nstacks;
}

static void model_clear(struct model *m)
{
	for (size_t i = 0; i < m->nstacks; i++)
		free(m->pcs[i]);
	m->nstacks = 0;
	m->used = 8;
}

struct walk {
	struct model *m;
	struct stacktab *t;
	uint32_t next;
};

/* foreach / dump: exactly the model's stacks, in id order. */
static int check_stack(void *arg, uint32_t id, const uintptr_t *pcs, size_t n)
{
	struct walk *w = arg;

	if (id != ++w->next || id > w->m->nstacks)
		fuzz_fail("walk id", id, w->next);
	if (n != w->m->n[id - 1] ||
	    memcmp(pcs, w->m->pcs[id - 1], n * sizeof(*pcs)))
		fuzz_fail("walk stack", id, (long long)n);
	/* It would wait for itself: refused, and nothing changes. */
	if (id == 1 && stacktab_reset(w->t, NULL, NULL) != -EDEADLK)
		fuzz_fail("reset inside a walk", id, 0);
	return 0;
}

static void check_walk(struct stacktab *t, struct model *m, bool reset)
{
	struct walk w = { m, t, 0 };
	int rc;

	if (reset)
		rc = stacktab_reset(t, check_stack, &w);
	else
		rc = stacktab_foreach(t, check_stack, &w);
	if (rc)
		fuzz_fail("walk refused", rc, reset);
	if (w.next != m->nstacks)
		fuzz_fail("walk missed stacks", w.next, (long long)m->nstacks);
	if (reset)
		model_clear(m);
}

static void do_put(struct stacktab *t, struct model *m, struct fuzz_input *in)
{
	uintptr_t pcs[STACKTAB_MAX_DEPTH + 16];
	uint8_t len = fuzz_byte(in), alpha = 1 + fuzz_byte(in) % 8;
	size_t n = len % 24;
	uint32_t got, want;

	if (len >= 250)
		n = STACKTAB_MAX_DEPTH + (len - 250) * 3; /* truncated */
	for (size_t i = 0; i < n; i++)
		pcs[i] = 0x1000 + 8 * (uintptr_t)((fuzz_byte(in) % alpha));
	got = stacktab_put(t, pcs, n);
	want = model_put(m, pcs, n);
	if (got != want)
		fuzz_fail("put id", got, want);
}

static void do_get(struct stacktab *t, struct model *m, struct fuzz_input *in)
{
	uintptr_t out[STACKTAB_MAX_DEPTH];
	uint32_t id = fuzz_byte(in);
	size_t got = stacktab_get(t, id, out, STACKTAB_MAX_DEPTH);

	if (!id || id > m->nstacks) {
		if (got)
			fuzz_fail("get of a missing id", id, (long long)got);
		return;
	}
	if (got != m->n[id - 1] ||
	    memcmp(out, m->pcs[id - 1], got * sizeof(*out)))
		fuzz_fail("get", id, (long long)got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	struct model *m = calloc(1, sizeof(*m));
	struct stacktab_stats st;
	struct stacktab *t;
	uint8_t op0;

	/* 4 KiB ... 64 KiB, plus 0 ... 663 bytes; offset 0 reserved. */
	op0 = fuzz_byte(&in);
	m->arena = ((size_t)4096 << (op0 % 5)) + (size_t)(op0 / 5) * 13;
	t = stacktab_new(m->arena, 1 + fuzz_byte(&in));
	if (!t)
		fuzz_fail("stacktab_new", 0, 0);
	m->used = 8;
	while (in.left) {
		uint8_t op = fuzz_byte(&in) % 16;

		if (op < 10)
			do_put(t, m, &in);
		else if (op < 13)
			do_get(t, m, &in);
		else if (op < 15)
			check_walk(t, m, false);
		else
			check_walk(t, m, true);
	}
	stacktab_stats(t, &st);
	if (st.stacks != m->nstacks || st.losses != m->losses)
		fuzz_fail("stats", (long long)st.stacks, (long long)m->nstacks);
	if (st.bytes != m->used || st.bytes > m->arena)
		fuzz_fail("stats bytes", (long long)st.bytes,
			  (long long)m->used);
	check_walk(t, m, true);
	stacktab_free(t);
	model_clear(m);
	free(m);
	return 0;
}
