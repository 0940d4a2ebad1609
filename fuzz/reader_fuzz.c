// SPDX-License-Identifier: MIT
/*
 * reader_fuzz.c - the launcher's read of a shared ring whose memory is
 * anything: the guarded reader (profbuf_reader_attach(),
 * profbuf_reader_read()) on a block the input writes over, and the
 * aggregation of what it returns (prof_agg_take(), the profile).
 *
 * A fresh shared ring (profbuf_shared_init(), the profiler's header size,
 * one of four sizes chosen by the first byte) is laid out in zeroed
 * MAP_SHARED memory; the rest of the input is a list of operations, each
 * a byte and its arguments: write a profiler record through
 * profbuf_write() (only while the geometry is the one laid out: a writer
 * trusts it, and writers are not what is fuzzed here); set a word of the
 * header, a record word, a tag or a commit/owner stamp (to a value near
 * the bounds the reader checks, or raw); move the write index; copy up to
 * 64 input bytes anywhere in the block; read once (timeout 0, or a tiny
 * one that reaches the reader's waits and its dead-writer steps); close.
 * If the first byte says so the reader attaches at the first read, after
 * what came before it (attaching may then fail: with EINVAL or EPROTO).
 * At the end the ring is closed and read until -EIO, EOF or an empty
 * read.
 *
 * Whatever the input, nothing may crash, and: every run returned lies in
 * the reader's memory, within the ring's sizes, and walks whole with the
 * record iterator; -EIO names what was corrupted and stays; the reading
 * ends (no more runs than the ring holds, plus overflow records, after
 * the last write); the aggregation counts every record it was given, and
 * its profile holds together, as agg_fuzz checks.
 */
#define FUZZ_NAME "reader_fuzz"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <profring/prof.h>
#include <profring/profbuf.h>

#include "fuzz/fuzz_input.h"
#include "prof/common/aggregate.h"
#include "prof/common/heap_agg.h"
#include "prof/wire/stream.h"
#include "profbuf/profbuf_impl.h"
#include "ring/pindex.h"

#define HDR PROF_HDR_WORDS
#define MAX_REC_WORDS 40
#define NO_TASK (1u << 30) /* past any pid_max: a dead owner */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct state {
	struct fuzz_input in;
	char *mem;
	size_t size;
	struct pb_layout l; /* as laid out */
	struct profbuf *b; /* the writers' handle */
	struct profbuf_reader *rd;
	struct prof_agg *agg;
	uint64_t taken; /* records given to the aggregation */
	bool late_attach, attach_failed, enomem, eio;
};

static uint64_t word(struct fuzz_input *in)
{
	uint64_t w = 0;

	for (int i = 0; i < 8; i++)
		w |= (uint64_t)fuzz_byte(in) << (8 * i);
	return w;
}

static uint32_t u16(struct fuzz_input *in)
{
	uint32_t lo = fuzz_byte(in);

	return lo | (uint32_t)fuzz_byte(in) << 8;
}

/* A value for a word now @cur: near the bounds the reader checks, or raw. */
static uint64_t value(struct state *s, uint64_t cur)
{
	uint8_t b = fuzz_byte(&s->in);
	uint64_t small = b >> 3;

	switch (b & 7) {
	case 0:
		return small == 0 ? 0 : ~(uint64_t)0;
	case 1:
		return small;
	case 2:
		return cur + 1 + small;
	case 3:
		return cur - 1 - small;
	case 4:
		return 2 + s->l.hdrsize + small % 8 - 4; /* a record length */
	case 5:
		return s->l.data_len - 2 + small % 4; /* a length at the end */
	case 6:
		return cur ^ (uint64_t)1 << (small % 64);
	default:
		return word(&s->in);
	}
}

static uint32_t stamp(struct state *s)
{
	uint8_t b = fuzz_byte(&s->in);

	switch (b % 7) {
	case 0:
		return PB_STAMP_FREE;
	case 1:
	case 2:
		return PB_STAMP_COMMITTED;
	case 3:
		return PB_STAMP_OWNER | (uint32_t)getpid(); /* alive */
	case 4:
		return PB_STAMP_OWNER | NO_TASK; /* dead */
	case 5:
		return PB_STAMP_OWNER | (b >> 3); /* 0, init, ... */
	default:
		return (uint32_t)word(&s->in);
	}
}

/*
 * Is the geometry the writers follow still the one laid out?  The inline
 * write path (<profring/profbuf_inline.h>) trusts inline_hdrsize: 0 in a
 * shared buffer.
 */
static bool geometry_intact(const struct state *s)
{
	const struct profbuf *b = s->b;

	return b->hdrsize == s->l.hdrsize && b->data_len == s->l.data_len &&
	       b->tag_len == s->l.tag_len && b->shared == 1 &&
	       b->inline_hdrsize == 0 && b->data_off == s->l.data_off &&
	       b->tags_off == s->l.tags_off && b->stamps_off == s->l.stamps_off;
}

/* A profiler record from the input, written the proper way. */
static void op_write(struct state *s)
{
	uint64_t hdr[HDR], stk[MAX_REC_WORDS];
	uint8_t kind = fuzz_byte(&s->in) % 8, b = fuzz_byte(&s->in);
	size_t n = fuzz_byte(&s->in) % MAX_REC_WORDS;
	size_t most = s->l.data_len - 2 - HDR;

	hdr[PROF_HDR_KIND_PERIODS] = (uint64_t)kind << PROF_KIND_SHIFT | b % 4;
	b = fuzz_byte(&s->in);
	hdr[PROF_HDR_PID] = b < 250 ? b % 8 : (uint64_t)b << 30;
	hdr[PROF_HDR_TID] = fuzz_byte(&s->in) % 8;
	for (size_t i = 0; i < n; i++) {
		/* the first words: a small number or an address; then raw */
		b = i < 3 ? fuzz_byte(&s->in) : 0;
		stk[i] = i >= 3 ? word(&s->in) : b & 1 ? b >> 1 : b * 4096u;
	}
	if (n > most)
		n = most;
	if (geometry_intact(s))
		profbuf_write(s->b, (const void *)(uintptr_t)(n % 3), 1, hdr,
			      HDR, (const uintptr_t *)stk, n);
}

static void op_poke(struct state *s, uint8_t what)
{
	const struct pb_layout *l = &s->l;
	volatile uint64_t *w;
	_Atomic uint32_t *st;

	switch (what) {
	case 0: /* a word of the header */
		w = (volatile uint64_t *)s->mem +
		    fuzz_byte(&s->in) % (l->data_off / 8);
		break;
	case 1: /* a record word (a length, most likely) */
		w = (volatile uint64_t *)(s->mem + l->data_off) +
		    u16(&s->in) % l->data_len;
		break;
	case 2: /* a tag */
		w = (volatile uint64_t *)(s->mem + l->tags_off) +
		    fuzz_byte(&s->in) % l->tag_len;
		break;
	default: /* a commit or owner stamp */
		st = (_Atomic uint32_t *)(s->mem + l->stamps_off) +
		     fuzz_byte(&s->in) % l->tag_len;
		/* Relaxed: one thread. */
		atomic_store_explicit(st, stamp(s), memory_order_relaxed);
		return;
	}
	*w = value(s, *w);
}

/* The write index moved by small amounts, flags as the input says. */
static void op_move_w(struct state *s)
{
	/* Relaxed, both: one thread. */
	uint64_t bw = atomic_load_explicit(&s->b->w, memory_order_relaxed);
	int8_t dd = (int8_t)fuzz_byte(&s->in), dt = (int8_t)fuzz_byte(&s->in);
	uint8_t f = fuzz_byte(&s->in);
	uint64_t nw = ring_pindex_make(ring_pindex_data(bw) + (uint32_t)dd,
				       ring_pindex_tag(bw) + (uint32_t)dt);

	nw |= (f & 3) == 3 ? bw & RING_PINDEX_FLAGS : (uint64_t)(f & 3) << 32;
	atomic_store_explicit(&s->b->w, nw, memory_order_relaxed);
}

/* Up to 63 input bytes copied anywhere in the block. */
static void op_overlay(struct state *s)
{
	size_t at = (size_t)word(&s->in) % s->size;
	size_t n = fuzz_byte(&s->in) % 64;

	if (n > s->size - at)
		n = s->size - at;
	if (n > s->in.left)
		n = s->in.left;
	memcpy(s->mem + at, s->in.p, n);
	s->in.p += n;
	s->in.left -= n;
}

static bool attach(struct state *s)
{
	if (s->rd || s->attach_failed)
		return s->rd;
	s->rd = profbuf_reader_attach(s->mem, s->size);
	if (s->rd)
		return true;
	if (errno != EINVAL && errno != EPROTO)
		fuzz_fail("attach failed with an errno it does not document",
			  errno, 0);
	s->attach_failed = true;
	return false;
}

/* Non-overflow records in a run; it must walk whole. */
static uint64_t check_run(struct state *s, const struct profbuf_read *r)
{
	struct profbuf_record rec;
	struct profbuf_iter it;
	uint64_t n = 0;

	if ((const char *)r->data < s->mem + s->size &&
	    (const char *)(r->data + r->ndata) > s->mem)
		fuzz_fail("a run points into the shared block", 0, 0);
	if (r->ntags > s->l.tag_len || r->ndata > s->l.data_len)
		fuzz_fail("a run longer than the ring", (long long)r->ndata,
			  (long long)r->ntags);
	profbuf_iter_init(&it, r, HDR);
	while (profbuf_iter_next(&it, &rec))
		n += !profbuf_record_is_overflow(&rec);
	if (profbuf_iter_malformed(&it))
		fuzz_fail("a run does not walk whole", (long long)r->ndata,
			  (long long)r->ntags);
	return n;
}

static const uint64_t timeouts[8] = { 0, 0, 0, 0, 0, 1000, 100000, 2000000 };

/* One read.  Return: 1 if it returned a run, 0 empty, -1 the end. */
static int read_once(struct state *s, uint64_t timeout_ns)
{
	struct profbuf_reader_stats st;
	struct profbuf_read r;
	uint64_t n;
	int rc, err;

	if (!attach(s))
		return -1;
	rc = profbuf_reader_read(s->rd, timeout_ns, &r);
	if (rc == -EIO) {
		profbuf_reader_stats(s->rd, &st);
		if (!st.corrupt)
			fuzz_fail("-EIO and no corruption named", 0, 0);
		s->eio = true;
		return -1;
	}
	if (s->eio)
		fuzz_fail("-EIO did not stay", rc, 0);
	if (rc == -ETIMEDOUT)
		return 0;
	if (rc)
		fuzz_fail("a read failed with a code it does not document", rc,
			  0);
	if (r.eof)
		return -1;
	if (!r.ndata)
		return 0;
	n = check_run(s, &r);
	/* Made at the first run: most inputs return none, and it costs. */
	if (!s->agg && !s->enomem) {
		s->agg = prof_agg_new(false, 1 << 20, &err);
		s->enomem = !s->agg;
	}
	if (s->agg && !s->enomem) {
		if (prof_agg_take(s->agg, &r))
			s->enomem = true; /* some records were not taken */
		else
			s->taken += n;
	}
	return 1;
}

static void run_ops(struct state *s)
{
	uint8_t op;

	while (s->in.left && !s->eio && !s->attach_failed) {
		op = fuzz_byte(&s->in);
		switch (op % 12) {
		case 0:
		case 1:
		case 2:
			op_write(s);
			break;
		case 3:
		case 4:
		case 5:
		case 6:
			op_poke(s, (uint8_t)(op % 12 - 3));
			break;
		case 7:
			op_move_w(s);
			break;
		case 8:
			op_overlay(s);
			break;
		case 9:
		case 10:
			read_once(s, timeouts[op >> 5]);
			break;
		default:
			if (attach(s))
				profbuf_reader_close(s->rd);
		}
	}
}

/*
 * The end: close and read what is left.  Nobody writes now, so every
 * run takes at least a record off the ring and the reader's overflow
 * goes once: the reading must end within the ring's tags and a few.
 */
static void drain(struct state *s)
{
	uint32_t runs = 0;
	int rc;

	if (s->eio || !attach(s))
		return;
	profbuf_reader_close(s->rd);
	while ((rc = read_once(s, 0)) == 1)
		if (++runs > 2 * s->l.tag_len + 8)
			fuzz_fail("the reading does not end", runs, 0);
	if (s->eio && read_once(s, 0) != -1)
		fuzz_fail("-EIO did not stay", 0, 0);
}

/* The aggregation counted every record, and its profile holds. */
static void check_agg(struct state *s)
{
	struct prof_agg_counts c;
	struct prof_heap_counts hc;
	struct prof_profile p;
	uint64_t counted;

	prof_agg_counts(s->agg, &c);
	prof_agg_heap_counts(s->agg, &hc);
	counted = c.read + c.maps + c.images + c.bad + c.dropped + hc.allocs +
		  hc.frees + hc.unknown_frees + prof_agg_lock_waits(s->agg);
	if (!s->enomem && counted != s->taken)
		fuzz_fail("records not counted", (long long)s->taken,
			  (long long)counted);
	if (prof_agg_profile(s->agg, &p))
		return; /* out of memory */
	for (size_t i = 0; i < p.nsamples; i++) {
		const struct prof_sample *sm = &p.samples[i];

		if (sm->npcs > PROFRING_PROF_MAX_FRAMES)
			fuzz_fail("too many frames", (long long)sm->npcs, 0);
		if (!sm->special && (sm->space >= p.nspaces || !sm->pid))
			fuzz_fail("sample outside the spaces",
				  (long long)sm->space, (long long)p.nspaces);
	}
	prof_agg_profile_free(&p);
}

/* The shared memory, mapped once: the largest ring's size. */
static char *block(size_t size)
{
	static char *mem;
	static size_t cap;

	if (!mem) {
		cap = profbuf_shared_size(HDR, 1024, 1024 / 4 + 1);
		mem = mmap(NULL, cap, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			fuzz_fail("mmap", errno, 0);
	}
	if (size > cap)
		fuzz_fail("ring larger than the block", (long long)size,
			  (long long)cap);
	memset(mem, 0, size);
	return mem;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t words[4] = { 16, 64, 256, 1024 };
	struct state s = { .in = { data, size } };
	uint8_t first = fuzz_byte(&s.in);
	size_t ntags = words[first & 3] / 4 + 1; /* as prof/wire/shm.c */

	s.size = profbuf_shared_size(HDR, words[first & 3], ntags);
	s.mem = block(s.size);
	s.b = profbuf_shared_init(s.mem, s.size, HDR, words[first & 3], ntags);
	if (!s.b)
		fuzz_fail("shared_init", errno, 0);
	s.l = (struct pb_layout){
		.hdrsize = s.b->hdrsize,
		.data_len = s.b->data_len,
		.tag_len = s.b->tag_len,
		.data_off = s.b->data_off,
		.tags_off = s.b->tags_off,
		.stamps_off = s.b->stamps_off,
		.ovf_rec_off = s.b->ovf_rec_off,
		.size = s.b->size,
	};
	s.late_attach = first & 4;
	if (!s.late_attach && !attach(&s))
		fuzz_fail("attach to a fresh ring", errno, 0);
	run_ops(&s);
	drain(&s);
	if (s.agg) {
		check_agg(&s);
		prof_agg_free(s.agg);
	}
	profbuf_reader_free(s.rd);
	return 0;
}
