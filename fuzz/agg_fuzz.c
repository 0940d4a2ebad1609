// SPDX-License-Identifier: MIT
/*
 * agg_fuzz.c - the launcher's aggregation (prof/aggregate.c) on records a
 * profiled program could write: anything.
 *
 * Under `profring-prof record` the records come from another process, so
 * the aggregation treats them as untrusted.  The input is a list of
 * records, each [kind, pid, tid, n, n words of 8 bytes]; they go through
 * a real ring (profbuf_write() refuses what no writer could write, such
 * as an all-zero header) or, if the first byte is odd, straight into a
 * read the way a scribbled shared ring could present them (the record
 * iterator must stop at a bad length).  Whatever the input, taking the
 * records must not crash, every record must be counted as read, lost,
 * a mapping, an image or bad, and the profile made from them must hold
 * together: every sample in a known address space, no more frames than a
 * sample can have, a pid on every real sample.
 */
#define FUZZ_NAME "agg_fuzz"

#include <profring/profbuf.h>

#include "fuzz/fuzz_input.h"
#include "prof/aggregate.h"
#include "prof/stream.h"

#include <string.h>

#define MAX_WORDS 4096
#define MAX_REC_WORDS 40

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t word(struct fuzz_input *in)
{
	uint64_t w = 0;

	for (int i = 0; i < 8; i++)
		w |= (uint64_t)fuzz_byte(in) << (8 * i);
	return w;
}

/* One record's header and payload from the input; its payload length. */
static size_t next_record(struct fuzz_input *in, uint64_t *hdr,
			  uint64_t *stk)
{
	uint8_t kind = fuzz_byte(in) % 5;
	size_t n = fuzz_byte(in) % MAX_REC_WORDS;

	hdr[PROF_HDR_KIND_PERIODS] =
		prof_hdr_kind_word((enum prof_rec_kind)kind, fuzz_byte(in) % 4);
	hdr[PROF_HDR_PID] = fuzz_byte(in) % 8;
	hdr[PROF_HDR_TID] = fuzz_byte(in) % 8;
	for (size_t i = 0; i < n; i++)
		stk[i] = i < 3 ? fuzz_byte(in) * 4096u : word(in);
	return n;
}

static void check_profile(struct prof_agg *a)
{
	struct prof_profile p;

	if (prof_agg_profile(a, &p))
		return; /* out of memory */
	for (size_t i = 0; i < p.nsamples; i++) {
		const struct prof_sample *s = &p.samples[i];

		if (s->npcs > PROFRING_PROF_MAX_FRAMES)
			fuzz_fail("too many frames", (long long)s->npcs, 0);
		if (!s->special && (s->space >= p.nspaces || !s->pid))
			fuzz_fail("sample outside the spaces",
				  (long long)s->space, (long long)p.nspaces);
	}
	prof_agg_profile_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	static uint64_t words[MAX_WORDS];
	static const void *tags[MAX_WORDS];
	uint64_t hdr[PROF_HDR_WORDS], stk[MAX_REC_WORDS];
	struct prof_agg_counts c;
	struct profbuf_read r;
	struct prof_agg *a;
	struct profbuf *b;
	int err;
	bool raw = fuzz_byte(&in) & 1;

	a = prof_agg_new(false, 1 << 20, &err);
	if (!a)
		return 0;
	if (raw) {
		/* A run as a scribbled ring could hand it over. */
		memset(&r, 0, sizeof(r));
		r.data = words;
		r.tags = tags;
		while (in.left && r.ndata < MAX_WORDS)
			words[r.ndata++] = word(&in) % 64;
		r.ntags = r.ndata;
		prof_agg_take(a, &r);
		goto out;
	}
	b = profbuf_new(PROF_HDR_WORDS, MAX_WORDS, MAX_WORDS / 4);
	if (!b)
		goto out;
	while (in.left) {
		size_t n = next_record(&in, hdr, stk);

		profbuf_write(b, NULL, 1, hdr, PROF_HDR_WORDS,
			      (const uintptr_t *)stk, n);
	}
	profbuf_close(b);
	for (int i = 0; i < 64; i++) {
		if (profbuf_read(b, PROFBUF_NONBLOCKING, &r) || r.eof)
			break;
		prof_agg_take(a, &r);
	}
	profbuf_free(b);
out:
	prof_agg_counts(a, &c);
	check_profile(a);
	prof_agg_free(a);
	return 0;
}
