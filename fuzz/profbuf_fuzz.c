// SPDX-License-Identifier: MIT
/*
 * profbuf_fuzz.c - profbuf against a reference model, driven by libFuzzer.
 *
 * The input picks the buffer's sizes and starting counters (possibly just
 * below the 2^32 / 2^30 wrap, through the test hook), then a sequence of
 * operations: writes of every shape (short, empty or all-zero headers,
 * stacks up to past the ring size), non-blocking reads and closes.  Each
 * is applied to the library and to the model below - a plain,
 * single-threaded transliteration of Go's runtime/profbuf.go with
 * profring's documented differences (records larger than the ring or an
 * all-zero header are -EINVAL, a write after close -ESHUTDOWN; a second
 * close is -EALREADY) - and every return code, every word and every tag of every
 * read must be what the model says.  Every read is also walked with the
 * record iterator, which must take it apart exactly, and at the end the
 * records it found and the overflow counts it summed must equal the
 * writes that returned 0 and -ENOSPC.  Any difference aborts.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "profbuf_fuzz"
#include "fuzz_input.h"
#include <profring/profbuf.h>

#include "profbuf/profbuf_testing.h"

#define MAX_WORDS 512
#define MAX_TAGS 64

struct model {
	size_t hdrsize, dlen, tlen;
	uint64_t data[MAX_WORDS];
	const void *tags[MAX_TAGS];
	uint64_t r_data, r_tag, w_data, w_tag, n_data, n_tag; /* absolute */
	uint32_t ovf_count;
	uint64_t ovf_time, ovf_rec[3 + 8];
	bool closed, eof;
};

/* ---- the model: Go's algorithm, one writer, no atomics ---------------- */

static bool can_write(struct model *m, size_t want1, size_t want2, int n)
{
	int64_t nd = (int64_t)(m->r_data + m->dlen - m->w_data);
	size_t pos = m->w_data % m->dlen;
	size_t want[2] = { want1, want2 };

	if (m->r_tag + m->tlen - m->w_tag < (uint64_t)n)
		return false;
	for (int i = 0; i < n; i++) {
		if (pos + want[i] > m->dlen) {
			nd -= (int64_t)(m->dlen - pos);
			pos = 0;
		}
		if (i == n - 1)
			break;
		pos += want[i];
		nd -= (int64_t)want[i];
	}
	return nd >= (int64_t)want[n - 1];
}

static void model_put(struct model *m, const void *tag, uint64_t now,
		      const uint64_t *hdr, size_t nhdr, const uint64_t *stk,
		      size_t nstk)
{
	size_t want = 2 + m->hdrsize + nstk, pos = m->w_data % m->dlen;

	if (pos + want > m->dlen) {
		m->data[pos] = 0;
		m->w_data += m->dlen - pos;
		pos = 0;
	}
	m->data[pos] = want;
	m->data[pos + 1] = now;
	for (size_t i = 0; i < m->hdrsize; i++)
		m->data[pos + 2 + i] = i < nhdr ? hdr[i] : 0;
	for (size_t i = 0; i < nstk; i++)
		m->data[pos + 2 + m->hdrsize + i] = stk[i];
	m->tags[m->w_tag % m->tlen] = tag;
	m->w_data += want;
	m->w_tag++;
}

static int model_write(struct model *m, const void *tag, uint64_t now,
		       const uint64_t *hdr, size_t nhdr, const uint64_t *stk,
		       size_t nstk)
{
	uint64_t any = 0, count;
	size_t want = 2 + m->hdrsize + nstk;

	for (size_t i = 0; i < nhdr; i++)
		any |= hdr[i];
	if (nhdr > m->hdrsize || !any || want > m->dlen)
		return -EINVAL;
	if (m->closed)
		return -ESHUTDOWN;
	if (m->ovf_count && can_write(m, 3 + m->hdrsize, want, 2)) {
		count = m->ovf_count;
		m->ovf_count = 0;
		model_put(m, NULL, m->ovf_time, NULL, 0, &count, 1);
	} else if (m->ovf_count || !can_write(m, want, 0, 1)) {
		if (!m->ovf_count++)
			m->ovf_time = now;
		return -ENOSPC;
	}
	model_put(m, tag, now, hdr, nhdr, stk, nstk);
	return 0;
}

static void model_read(struct model *m, struct profbuf_read *r)
{
	size_t pos, end, tpos, tend, di, ti;

	memset(r, 0, sizeof(*r));
	m->r_data = m->n_data;
	m->r_tag = m->n_tag;
	if (m->eof) {
		r->eof = true;
		return;
	}
	if (m->w_tag == m->n_tag) {
		if (m->ovf_count) {
			m->ovf_rec[0] = 3 + m->hdrsize;
			m->ovf_rec[1] = m->ovf_time;
			memset(m->ovf_rec + 2, 0, m->hdrsize * 8);
			m->ovf_rec[2 + m->hdrsize] = m->ovf_count;
			m->ovf_count = 0;
			r->data = m->ovf_rec;
			r->ndata = 3 + m->hdrsize;
			r->ntags = 1;
			return;
		}
		r->eof = m->eof = m->closed;
		return;
	}
	pos = m->n_data % m->dlen;
	end = m->w_data - m->n_data < m->dlen - pos
		      ? pos + (m->w_data - m->n_data)
		      : m->dlen;
	if (m->data[pos] == 0) { /* rewind marker */
		m->n_data += m->dlen - pos;
		pos = 0;
		end = m->w_data - m->n_data < m->dlen ? m->w_data - m->n_data
						      : m->dlen;
	}
	tpos = m->n_tag % m->tlen;
	tend = m->w_tag - m->n_tag < m->tlen - tpos
		       ? tpos + (m->w_tag - m->n_tag)
		       : m->tlen;
	for (di = pos, ti = tpos; di < end && m->data[di] && ti < tend; ti++)
		di += m->data[di];
	r->data = m->data + pos;
	r->ndata = di - pos;
	r->tags = m->tags + tpos;
	r->ntags = ti - tpos;
	m->n_data += di - pos;
	m->n_tag += ti - tpos;
}

/* ---- driving both ------------------------------------------------------ */

/*
 * The accounting, seen through the record iterator: writes that returned
 * 0 or -ENOSPC, against records read plus the counts of overflow records.
 */
static struct {
	uint64_t accepted, lost, records, counted;
} tally;

/* Walk a library read with the iterator: it must take it all apart. */
static void walk_read(const struct profbuf_read *got, size_t hdrsize)
{
	struct profbuf_iter it;
	struct profbuf_record rec;
	size_t n = 0, words = 0;

	profbuf_iter_init(&it, got, hdrsize);
	while (profbuf_iter_next(&it, &rec)) {
		if (rec.tag != got->tags[n] || rec.nhdr != hdrsize ||
		    rec.hdr != got->data + words + 2)
			fuzz_fail("iterator record", (long long)n,
				  (long long)words);
		if (profbuf_record_is_overflow(&rec))
			tally.counted += profbuf_record_overflow_count(&rec);
		else
			tally.records++;
		words += 2 + hdrsize + rec.nstk;
		n++;
	}
	if (profbuf_iter_malformed(&it) || n != got->ntags ||
	    words != got->ndata)
		fuzz_fail("iterator walk", (long long)n, (long long)words);
}

static void compare_reads(const struct profbuf_read *got,
			  const struct profbuf_read *want)
{
	if (got->eof != want->eof)
		fuzz_fail("eof", got->eof, want->eof);
	if (got->ndata != want->ndata)
		fuzz_fail("ndata", (long long)got->ndata,
			  (long long)want->ndata);
	if (got->ntags != want->ntags)
		fuzz_fail("ntags", (long long)got->ntags,
			  (long long)want->ntags);
	for (size_t i = 0; i < got->ndata; i++)
		if (got->data[i] != want->data[i])
			fuzz_fail("data word", (long long)i,
				  (long long)got->data[i]);
	for (size_t i = 0; i < got->ntags; i++)
		if (got->tags[i] != (want->tags ? want->tags[i] : NULL))
			fuzz_fail("tag", (long long)i, 0);
}

static void do_write(struct profbuf *b, struct model *m, struct fuzz_input *in,
		     uint64_t now)
{
	uint64_t hdr[8], stk[MAX_WORDS + 8];
	uint8_t shape = fuzz_byte(in);
	size_t nhdr = shape % (m->hdrsize + 2);
	size_t nstk = fuzz_byte(in);
	const void *tag = (const void *)(uintptr_t)(fuzz_byte(in) % 8);
	int got, want;

	if (shape & 0x80) /* now and then, longer than the ring */
		nstk = m->dlen - 2 - m->hdrsize + (nstk & 3);
	else
		nstk %= m->dlen / 2 + 1;
	for (size_t i = 0; i < nhdr && i < 8; i++)
		hdr[i] = (shape & 0x40) ? 0 : fuzz_byte(in) + (i == 0);
	for (size_t i = 0; i < nstk; i++)
		stk[i] = now * 1000 + i;
	got = profbuf_write(b, tag, (int64_t)now, hdr, nhdr,
			    (const uintptr_t *)stk, nstk);
	want = model_write(m, tag, now, hdr, nhdr, stk, nstk);
	if (got != want)
		fuzz_fail("write result", got, want);
	tally.accepted += got == 0;
	tally.lost += got == -ENOSPC;
}

static void do_read(struct profbuf *b, struct model *m)
{
	struct profbuf_read got, want;
	int rc = profbuf_read(b, PROFBUF_NONBLOCKING, &got);

	if (rc)
		fuzz_fail("read result", rc, 0);
	model_read(m, &want);
	compare_reads(&got, &want);
	walk_read(&got, m->hdrsize);
}

static void do_close(struct profbuf *b, struct model *m)
{
	int got = profbuf_close(b), want = m->closed ? -EALREADY : 0;

	m->closed = true;
	if (got != want)
		fuzz_fail("close result", got, want);
}

static void setup(struct model *m, struct fuzz_input *in, uint32_t *d0,
		  uint32_t *t0)
{
	uint8_t a = fuzz_byte(in), c = fuzz_byte(in);

	memset(m, 0, sizeof(*m));
	m->hdrsize = 1 + a % 4;
	m->dlen = (size_t)8 << (a >> 2 & 3); /* 8 ... 64 */
	m->tlen = (size_t)1 << (c & 3); /* 1 ... 8 */
	/* Near the 2^32 wrap, at any position in the ring. */
	*d0 = (c & 4) ? 0u - (uint32_t)m->dlen * (c >> 4) - (a >> 4) : 0;
	*t0 = (c & 8) ? (1u << 30) - (uint32_t)(c >> 4) - 1 : 0;
	m->r_data = m->w_data = m->n_data = *d0;
	m->r_tag = m->w_tag = m->n_tag = *t0;
	/* Keep the model's absolute counters consistent modulo the sizes. */
	m->r_data += (uint64_t)1 << 32;
	m->w_data = m->n_data = m->r_data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	struct model *m = malloc(sizeof(*m));
	struct profbuf *b;
	uint32_t d0, t0;
	uint64_t now = 1;

	memset(&tally, 0, sizeof(tally));
	setup(m, &in, &d0, &t0);
	b = profbuf_new_at(m->hdrsize, m->dlen, m->tlen, d0, t0);
	if (!b)
		fuzz_fail("profbuf_new_at", errno, 0);
	while (in.left) {
		uint8_t op = fuzz_byte(&in) % 8;

		if (op < 5)
			do_write(b, m, &in, now++);
		else if (op < 7)
			do_read(b, m);
		else if (fuzz_byte(&in) < 16)
			do_close(b, m);
	}
	/* Drain: everything the model holds comes out, then EOF. */
	do_close(b, m);
	for (int i = 0; i < 4 * MAX_TAGS && !m->eof; i++)
		do_read(b, m);
	if (!m->eof)
		fuzz_fail("no eof after draining", 0, 0);
	do_read(b, m);
	/* Nothing accepted went missing, nothing discarded went uncounted. */
	if (tally.records != tally.accepted || tally.counted != tally.lost)
		fuzz_fail("accounting", (long long)tally.records,
			  (long long)tally.counted);
	profbuf_free(b);
	free(m);
	return 0;
}
