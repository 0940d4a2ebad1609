/* SPDX-License-Identifier: MIT */
/*
 * testing/checkrec.h - self-checking profbuf records, shared by the unit
 * tests and the stress programs.
 *
 * A record written by writer W (0-based) with sequence number S has
 *	hdr = [W + 1, S, 0 ...]   tag = (void *)(W + 1)   time = S
 *	stk[i] = checkrec_word(W, S, i), nstk chosen by the writer
 * so that the reader can check every word, per-writer order, and the
 * accounting: for each writer, records read == writes that returned 0, and
 * the counts in overflow records add up to the writes that returned
 * -ENOSPC.
 */
#ifndef PROFRING_TESTING_CHECKREC_H
#define PROFRING_TESTING_CHECKREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <profring/profbuf.h>

#define CHECKREC_MAX_WRITERS 256

static inline uint64_t checkrec_word(uint32_t writer, uint64_t seq, size_t i)
{
	uint64_t z = ((uint64_t)writer << 48) ^ (seq << 12) ^ i;

	/* splitmix64 finaliser */
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Fill a record's header and stack; returns nhdr. */
static inline size_t checkrec_fill(uint64_t *hdr, uintptr_t *stk,
				   uint32_t writer, uint64_t seq, size_t nstk)
{
	hdr[0] = writer + 1;
	hdr[1] = seq;
	for (size_t i = 0; i < nstk; i++)
		stk[i] = (uintptr_t)checkrec_word(writer, seq, i);
	return 2;
}

struct checkrec_state {
	size_t hdrsize;
	uint64_t records; /* ordinary records read intact */
	uint64_t overflow_records; /* overflow records read */
	uint64_t lost; /* sum of their counts */
	uint64_t violations;
	uint64_t read_by_writer[CHECKREC_MAX_WRITERS];
	uint64_t next_seq[CHECKREC_MAX_WRITERS]; /* lowest acceptable seq */
};

static inline void checkrec_violation(struct checkrec_state *st,
				      const char *what, uint64_t a, uint64_t b)
{
	if (st->violations++ < 10)
		fprintf(stderr, "checkrec: %s (%llu, %llu)\n", what,
			(unsigned long long)a, (unsigned long long)b);
}

/* Check one record at @rec (its first word is its length). */
static inline void checkrec_one(struct checkrec_state *st, const uint64_t *rec,
				const void *tag)
{
	uint64_t len = rec[0];
	const uint64_t *hdr = rec + 2;
	const uint64_t *stk = hdr + st->hdrsize;
	uint64_t w = hdr[0], seq;
	bool zero = true;

	for (size_t i = 0; i < st->hdrsize; i++)
		zero &= hdr[i] == 0;
	if (zero) {
		if (len != 3 + st->hdrsize || tag != NULL || stk[0] == 0)
			checkrec_violation(st, "bad overflow record", len,
					   stk[0]);
		st->overflow_records++;
		st->lost += stk[0];
		return;
	}
	if (st->hdrsize < 2 || w == 0 || w > CHECKREC_MAX_WRITERS) {
		checkrec_violation(st, "bad writer id", w, len);
		return;
	}
	w--;
	seq = hdr[1];
	if ((uintptr_t)tag != w + 1)
		checkrec_violation(st, "tag mismatch", (uintptr_t)tag, w + 1);
	if (rec[1] != seq)
		checkrec_violation(st, "time mismatch", rec[1], seq);
	for (size_t i = 2; i < st->hdrsize; i++)
		if (hdr[i])
			checkrec_violation(st, "header not zero-padded", w, i);
	if (seq < st->next_seq[w])
		checkrec_violation(st, "writer order", seq, st->next_seq[w]);
	st->next_seq[w] = seq + 1;
	for (uint64_t i = 0; i < len - 2 - st->hdrsize; i++)
		if (stk[i] != checkrec_word((uint32_t)w, seq, i)) {
			checkrec_violation(st, "corrupt stack word", seq, i);
			break;
		}
	st->records++;
	st->read_by_writer[w]++;
}

/* Check a whole read: @ndata words holding @ntags records. */
static inline void checkrec_run(struct checkrec_state *st, const uint64_t *data,
				size_t ndata, const void *const *tags,
				size_t ntags)
{
	size_t di = 0, ti = 0;

	while (di < ndata && ti < ntags) {
		if (data[di] < 2 + st->hdrsize || data[di] > ndata - di) {
			checkrec_violation(st, "bad record length", data[di],
					   ndata - di);
			return;
		}
		checkrec_one(st, data + di, tags[ti]);
		di += data[di];
		ti++;
	}
	if (di != ndata || ti != ntags)
		checkrec_violation(st, "records and tags out of step", di, ti);
}

/*
 * Check one read: checkrec_run() checks every word; profbuf's record
 * iterator walks the same read and must find the same records and
 * overflow counts, and no malformed read.  Disagreements are violations.
 */
static inline void checkrec_read(struct checkrec_state *st,
				 const struct profbuf_read *r)
{
	uint64_t records = st->records, ovf = st->overflow_records;
	uint64_t lost = st->lost, n = 0, nov = 0, nlost = 0;
	struct profbuf_iter it;
	struct profbuf_record rec;

	checkrec_run(st, r->data, r->ndata, r->tags, r->ntags);
	profbuf_iter_init(&it, r, st->hdrsize);
	while (profbuf_iter_next(&it, &rec)) {
		if (profbuf_record_is_overflow(&rec)) {
			nov++;
			nlost += profbuf_record_overflow_count(&rec);
		} else {
			n++;
		}
	}
	if (profbuf_iter_malformed(&it))
		checkrec_violation(st, "iterator: malformed read", r->ndata,
				   r->ntags);
	if (n != st->records - records || nov != st->overflow_records - ovf)
		checkrec_violation(st, "iterator: record count", n, nov);
	if (nlost != st->lost - lost)
		checkrec_violation(st, "iterator: overflow count", nlost,
				   st->lost - lost);
}

#endif /* PROFRING_TESTING_CHECKREC_H */
