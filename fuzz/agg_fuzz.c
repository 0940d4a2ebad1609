// SPDX-License-Identifier: MIT
/*
 * agg_fuzz.c - the launcher's aggregation (prof/common/aggregate.c) on records a
 * profiled program could write: anything.
 *
 * Under `profring-prof record` the records come from another process, so
 * the aggregation treats them as untrusted.  The input is a list of
 * records, each [kind, pid, tid, n, n words of 8 bytes]; they go through
 * a real ring (profbuf_write() refuses what no writer could write, such
 * as an all-zero header) or, if the first byte is odd, straight into a
 * read the way a scribbled shared ring could present them (the record
 * iterator must stop at a bad length).  The first byte's other bits, when
 * any is set, choose small limits (struct prof_agg_limits), so that what
 * happens past each limit is reached.  Whatever the input, taking the
 * records must not crash, every record must be counted (read, a mapping,
 * an image, an allocation or free, bad or dropped), the limits must hold
 * (address spaces, threads, the mappings' memory), and the profiles made
 * from them (CPU, heap) must hold together: every sample in a known
 * address space that has a symbolizer, no more frames than a sample can
 * have, a pid on every real sample.
 */
#define FUZZ_NAME "agg_fuzz"

#include <profring/profbuf.h>

#include "fuzz/fuzz_input.h"
#include "prof/common/aggregate.h"
#include "prof/common/heap_agg.h"
#include "prof/wire/stream.h"

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
static size_t next_record(struct fuzz_input *in, uint64_t *hdr, uint64_t *stk)
{
	uint8_t kind = fuzz_byte(in) % 7;
	size_t n = fuzz_byte(in) % MAX_REC_WORDS;
	uint8_t b;

	hdr[PROF_HDR_KIND_PERIODS] =
		prof_hdr_kind_word((enum prof_rec_kind)kind, fuzz_byte(in) % 4);
	b = fuzz_byte(in);
	/* now and then a pid word past 31 bits */
	hdr[PROF_HDR_PID] = b < 250 ? b % 8 : (uint64_t)b << 30;
	hdr[PROF_HDR_TID] = fuzz_byte(in) % 8;
	for (size_t i = 0; i < n; i++) {
		/* the first words: a small number (ppid, flags) or an address */
		b = i < 3 ? fuzz_byte(in) : 0;
		stk[i] = i >= 3 ? word(in) : b & 1 ? b >> 1 : b * 4096u;
	}
	return n;
}

/* Small limits chosen by @v (7 bits, not all clear). */
static void small_limits(unsigned int v, struct prof_agg_limits *lim)
{
	lim->spaces = 1 + (v & 3);
	lim->threads = 1 + (v >> 2 & 3);
	lim->space_maps = 1 + (v >> 4 & 3);
	lim->map_bytes = v >> 6 ? 4096 : 100;
}

/* Non-overflow records in @r. */
static uint64_t records_in(const struct profbuf_read *r)
{
	struct profbuf_record rec;
	struct profbuf_iter it;
	uint64_t n = 0;

	profbuf_iter_init(&it, r, PROF_HDR_WORDS);
	while (profbuf_iter_next(&it, &rec))
		n += !profbuf_record_is_overflow(&rec);
	return n;
}

/* The limits held, and every one of @nrec records was counted. */
static void check_counts(struct prof_agg *a, const struct prof_agg_limits *lim,
			 uint64_t nrec)
{
	struct prof_agg_counts c;
	struct prof_heap_counts hc;
	uint64_t counted;

	prof_agg_counts(a, &c);
	prof_agg_heap_counts(a, &hc);
	if (c.map_bytes > lim->map_bytes)
		fuzz_fail("mappings' memory past the limit",
			  (long long)c.map_bytes, (long long)lim->map_bytes);
	if (c.threads > lim->threads)
		fuzz_fail("threads past the limit", (long long)c.threads,
			  (long long)lim->threads);
	counted = c.read + c.maps + c.images + c.bad + c.dropped + hc.allocs +
		  hc.frees + hc.unknown_frees;
	if (nrec != UINT64_MAX && counted != nrec)
		fuzz_fail("records not counted", (long long)nrec,
			  (long long)counted);
}

/* @p's samples: each in a known space that has a symbolizer, with a pid. */
static void check_samples(const struct prof_profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if (s->npcs > PROFRING_PROF_MAX_FRAMES)
			fuzz_fail("too many frames", (long long)s->npcs, 0);
		if (s->special)
			continue;
		if (s->space >= p->nspaces || !s->pid)
			fuzz_fail("sample outside the spaces",
				  (long long)s->space, (long long)p->nspaces);
		if (!p->spaces[s->space])
			fuzz_fail("sample in a space with no symbolizer",
				  (long long)s->space, 0);
	}
}

/* The CPU profile, then the heap profile, hold together. */
static void check_profile(struct prof_agg *a, const struct prof_agg_limits *lim)
{
	struct prof_profile p;

	if (prof_agg_profile(a, &p))
		return; /* out of memory */
	if (p.nspaces > lim->spaces)
		fuzz_fail("address spaces past the limit", (long long)p.nspaces,
			  (long long)lim->spaces);
	check_samples(&p);
	prof_agg_profile_free(&p);
	if (prof_agg_heap_profile(a, 4096, NULL, &p))
		return;
	check_samples(&p);
	prof_agg_profile_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	static uint64_t words[MAX_WORDS];
	static const void *tags[MAX_WORDS];
	uint64_t hdr[PROF_HDR_WORDS], stk[MAX_REC_WORDS];
	struct prof_agg_limits lim = { PROF_AGG_SPACES_MAX,
				       PROF_AGG_THREADS_MAX,
				       PROF_AGG_SPACE_MAPS_MAX,
				       PROF_AGG_MAP_BYTES_MAX };
	uint64_t nrec = UINT64_MAX; /* not known: a raw read */
	struct profbuf_read r;
	struct prof_agg *a;
	struct profbuf *b;
	int err;
	uint8_t first = fuzz_byte(&in);
	bool raw = first & 1, enomem = false;

	a = prof_agg_new(false, 1 << 20, &err);
	if (!a)
		return 0;
	if (first >> 1) {
		small_limits(first >> 1, &lim);
		prof_agg_set_limits(a, &lim);
	}
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
	nrec = 0;
	for (int i = 0; i < 64; i++) {
		if (profbuf_read(b, PROFBUF_NONBLOCKING, &r) || r.eof)
			break;
		nrec += records_in(&r);
		if (prof_agg_take(a, &r))
			enomem = true; /* some records were not taken */
	}
	profbuf_free(b);
	if (enomem)
		nrec = UINT64_MAX;
out:
	check_counts(a, &lim, nrec);
	check_profile(a, &lim);
	prof_agg_free(a);
	return 0;
}
