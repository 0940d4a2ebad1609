// SPDX-License-Identifier: MIT
/*
 * profbuf_test.c - unit tests for profbuf.
 *
 * The single-threaded cases are Go's runtime/profbuf_test.go, word for
 * word (every subtest; see "Go's cases"); then the record iterator
 * (normal, overflow and malformed reads); then wrap-around, misuse,
 * close/EOF, timeouts, watermark and wakeup accounting; then concurrent
 * writers and writers nested in a real SIGPROF handler, with exact
 * accounting (testing/checkrec.h, cross-checked with the iterator).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <profring/profbuf.h>

#include "testing/ktest.h"
#include "testing/checkrec.h"
#include "testing/harness.h"
#include "profbuf/profbuf_testing.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define U64S(...) ((const uint64_t[]){ __VA_ARGS__ })
#define PCS(...) ((const uintptr_t[]){ __VA_ARGS__ })
#define WORDS(...) U64S(__VA_ARGS__), ARRAY_SIZE(U64S(__VA_ARGS__))

static char my_tags[100];

static int wr(struct profbuf *b, const void *tag, int64_t now,
	      const uint64_t *hdr, size_t nhdr, const uintptr_t *stk,
	      size_t nstk)
{
	return profbuf_write(b, tag, now, hdr, nhdr, stk, nstk);
}

#define WRITE(b, tag, now, hdr, stk) \
	wr(b, tag, now, hdr, ARRAY_SIZE(hdr), stk, ARRAY_SIZE(stk))
#define HDR(...) U64S(__VA_ARGS__)
#define STK(...) PCS(__VA_ARGS__)

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Walk @r with the iterator: it must take every record, in order, with its
 * tag, and end exactly at the end of the words and the tags.
 */
static void expect_walk(const struct profbuf_read *r, size_t hdrsize)
{
	struct profbuf_iter it;
	struct profbuf_record rec;
	size_t n = 0, words = 0;

	profbuf_iter_init(&it, r, hdrsize);
	while (profbuf_iter_next(&it, &rec)) {
		KT_REQUIRE(n < r->ntags);
		KT_CHECK(rec.hdr == r->data + words + 2);
		KT_CHECK(rec.tag == r->tags[n]);
		words += 2 + rec.nhdr + rec.nstk;
		n++;
	}
	KT_CHECK(!profbuf_iter_malformed(&it));
	KT_CHECK_EQ(n, r->ntags);
	KT_CHECK_EQ(words, r->ndata);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
}

/*
 * Compare a read with the expected words and tags.  As in Go, where an
 * empty read is (nil, nil), an empty read has data and tags NULL.
 */
static void expect(const struct profbuf_read *r, size_t hdrsize,
		   const uint64_t *data, size_t ndata, const void *const *tags,
		   size_t ntags)
{
	KT_CHECK_EQ(r->ndata, ndata);
	KT_CHECK_EQ(r->ntags, ntags);
	KT_CHECK(!r->eof);
	if (r->ndata == ndata)
		KT_CHECK(ndata == 0 || !memcmp(r->data, data, ndata * 8));
	if (r->ntags == ntags)
		for (size_t i = 0; i < ntags; i++)
			KT_CHECK(r->tags[i] == tags[i]);
	if (ndata == 0)
		KT_CHECK(r->data == NULL);
	if (ntags == 0)
		KT_CHECK(r->tags == NULL);
	expect_walk(r, hdrsize);
}

static void read_nb(struct profbuf *b, size_t hdrsize, const uint64_t *data,
		    size_t ndata, const void *const *tags, size_t ntags)
{
	struct profbuf_read r;

	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	expect(&r, hdrsize, data, ndata, tags, ntags);
}

#define TAGS(...) ((const void *const[]){ __VA_ARGS__ })
/* A non-blocking read of a buffer of hdrsize 2 (READ) or 1 (READ1). */
#define READ(b, data, ...) \
	read_nb(b, 2, data, TAGS(__VA_ARGS__), ARRAY_SIZE(TAGS(__VA_ARGS__)))
#define READ1(b, data, ...) \
	read_nb(b, 1, data, TAGS(__VA_ARGS__), ARRAY_SIZE(TAGS(__VA_ARGS__)))
#define READ_NONE(b) read_nb(b, 1, NULL, 0, NULL, 0)

/*
 * ---- Go's cases -----------------------------------------------------
 *
 * Every subtest of TestProfBuf in Go 1.19's runtime/profbuf_test.go, with
 * its sizes, writes and expected reads:
 *	BasicWriteRead		basic_write_read
 *	ReadMany		read_many
 *	ReadManyShortData	read_many_short_data
 *	ReadManyShortTags	read_many_short_tags
 *	ReadAfterOverflow1	overflow_written_by_writer
 *	ReadAfterOverflow2	overflow_synthesized_by_reader
 *	ReadAtEndAfterOverflow	overflow_at_end
 *	BlockingWriteRead	blocking_write_read
 *	DataWraparound, TagWraparound, BothWraparound	(same names)
 * profring rounds ring sizes up to powers of two (Go uses them as given):
 * 11 and 12 words become 16, 50 become 64, 5 tags become 8, 50 become 64.
 * No expected read changes with it.  The one case Go's words cannot pass
 * as they stand is ReadAfterOverflow2, which writes a record larger than
 * the ring: see there.  Beyond Go, each read is also walked with the
 * iterator (expect()), and the writes' return codes are checked.
 */

static void basic_write_read(void)
{
	struct profbuf *b = profbuf_new(2, 11, 1);

	KT_REQUIRE(b);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9)),
		    0);
	READ(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
	READ_NONE(b);
	KT_CHECK_EQ(WRITE(b, &my_tags[2], 99, HDR(101, 102),
			  STK(201, 202, 203, 204)),
		    0);
	READ(b, WORDS(8, 99, 101, 102, 201, 202, 203, 204), &my_tags[2]);
	profbuf_free(b);
}

static void read_many(void)
{
	struct profbuf *b = profbuf_new(2, 50, 50);

	KT_REQUIRE(b);
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9));
	WRITE(b, &my_tags[2], 99, HDR(101, 102), STK(201, 202, 203, 204));
	WRITE(b, &my_tags[1], 500, HDR(502, 504), STK(506));
	READ(b,
	     WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 8, 99, 101, 102, 201, 202,
		   203, 204, 5, 500, 502, 504, 506),
	     &my_tags[0], &my_tags[2], &my_tags[1]);
	profbuf_free(b);
}

/*
 * Go's ReadManyShortData and ReadManyShortTags.  In Go 1.19 both are the
 * same words: ReadMany's buffer (2, 50, 50), its first two writes, one
 * read of both; ported as they are.  (Reads cut short by the end of the
 * tag ring or by a rewind are read_stops_at_tag_ring_end and
 * read_stops_at_rewind below.)
 */
static void read_many_short_case(void)
{
	struct profbuf *b = profbuf_new(2, 50, 50);

	KT_REQUIRE(b);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9)),
		    0);
	KT_CHECK_EQ(WRITE(b, &my_tags[2], 99, HDR(101, 102),
			  STK(201, 202, 203, 204)),
		    0);
	READ(b,
	     WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 8, 99, 101, 102, 201, 202,
		   203, 204),
	     &my_tags[0], &my_tags[2]);
	profbuf_free(b);
}

static void read_many_short_data(void)
{
	read_many_short_case();
}

static void read_many_short_tags(void)
{
	read_many_short_case();
}

/* A read stops at the end of the tag ring and goes on from its start. */
static void read_stops_at_tag_ring_end(void)
{
	struct profbuf *b = profbuf_new_at(2, 64, 4, 0, 3);

	KT_REQUIRE(b);
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4));
	WRITE(b, &my_tags[1], 5, HDR(6, 7), STK(8));
	READ(b, WORDS(5, 1, 2, 3, 4), &my_tags[0]);
	READ(b, WORDS(5, 5, 6, 7, 8), &my_tags[1]);
	READ_NONE(b);
	profbuf_free(b);
}

/* A record that does not fit at the end rewinds; the read stops there. */
static void read_stops_at_rewind(void)
{
	struct profbuf *b = profbuf_new(1, 16, 8);

	KT_REQUIRE(b);
	WRITE(b, &my_tags[0], 1, HDR(2), STK(3, 4, 5, 6, 7, 8, 9)); /* 10 */
	READ1(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
	WRITE(b, &my_tags[1], 11, HDR(12), STK(13)); /* 4: ends at 14 */
	READ1(b, WORDS(4, 11, 12, 13), &my_tags[1]);
	WRITE(b, &my_tags[2], 21, HDR(22), STK(23)); /* rewinds to 0 */
	WRITE(b, &my_tags[3], 31, HDR(32), STK(33));
	READ1(b, WORDS(4, 21, 22, 23, 4, 31, 32, 33), &my_tags[2], &my_tags[3]);
	profbuf_free(b);
}

/*
 * Go's overflow cases take the counters' start values, so that they can be
 * run again across the 2^32 / 2^30 wrap (start at a multiple of the ring
 * size: the expected words depend on the position in the ring).
 */
static void overflow_written_by_writer_at(uint32_t data0, uint32_t tag0)
{
	struct profbuf *b = profbuf_new_at(2, 16, 5, data0, tag0);

	KT_REQUIRE(b);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9)),
		    0);
	READ(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5)), 0);
	READ(b, WORDS(6, 1, 2, 3, 4, 5), &my_tags[0]);
	/* now 10 available */
	KT_CHECK_EQ(WRITE(b, &my_tags[2], 99, HDR(101, 102),
			  STK(201, 202, 203, 204, 205, 206, 207, 208, 209)),
		    -ENOSPC);
	for (int i = 0; i < 299; i++)
		KT_CHECK_EQ(WRITE(b, &my_tags[3], 100 + i, HDR(101, 102),
				  STK(201, 202, 203, 204)),
			    -ENOSPC);
	KT_CHECK_EQ(WRITE(b, &my_tags[1], 500, HDR(502, 504), STK(506)), 0);
	READ(b, WORDS(5, 99, 0, 0, 300, 5, 500, 502, 504, 506), NULL,
	     &my_tags[1]);
	profbuf_free(b);
}

static void overflow_synthesized_by_reader_at(uint32_t data0, uint32_t tag0)
{
	struct profbuf *b = profbuf_new_at(2, 16, 5, data0, tag0);

	KT_REQUIRE(b);
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9));
	/*
	 * Go writes a 17-word record into the 16-word ring here and counts
	 * it lost; profring refuses a record larger than the ring with
	 * -EINVAL, so this case uses one of exactly 16 words.
	 */
	KT_CHECK_EQ(WRITE(b, &my_tags[2], 99, HDR(101, 102),
			  STK(201, 202, 203, 204, 205, 206, 207, 208, 209, 210,
			      211, 212, 213)),
		    -EINVAL);
	KT_CHECK_EQ(WRITE(b, &my_tags[2], 99, HDR(101, 102),
			  STK(201, 202, 203, 204, 205, 206, 207, 208, 209, 210,
			      211, 212)),
		    -ENOSPC);
	for (int i = 0; i < 299; i++)
		WRITE(b, &my_tags[3], 100, HDR(101, 102),
		      STK(201, 202, 203, 204));
	READ(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
	/* still overflow: no room for the overflow record and this one */
	KT_CHECK_EQ(wr(b, &my_tags[1], 500, HDR(502, 504), 2, NULL, 0),
		    -ENOSPC);
	READ(b, WORDS(5, 99, 0, 0, 301), NULL);
	KT_CHECK_EQ(WRITE(b, &my_tags[1], 500, HDR(502, 505), STK(506)), 0);
	READ(b, WORDS(5, 500, 502, 505, 506), &my_tags[1]);
	profbuf_free(b);
}

static void overflow_at_end_at(uint32_t data0, uint32_t tag0)
{
	struct profbuf *b = profbuf_new_at(2, 12, 5, data0, tag0);

	KT_REQUIRE(b);
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9));
	WRITE(b, &my_tags[2], 99, HDR(101, 102), STK(201, 202, 203, 204));
	for (int i = 0; i < 299; i++)
		WRITE(b, &my_tags[3], 100, HDR(101, 102),
		      STK(201, 202, 203, 204));
	READ(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
	READ(b, WORDS(5, 99, 0, 0, 300), NULL);
	WRITE(b, &my_tags[1], 500, HDR(502, 504), STK(506));
	READ(b, WORDS(5, 500, 502, 504, 506), &my_tags[1]);
	profbuf_free(b);
}

static void overflow_written_by_writer(void)
{
	overflow_written_by_writer_at(0, 0);
}

static void overflow_synthesized_by_reader(void)
{
	overflow_synthesized_by_reader_at(0, 0);
}

static void overflow_at_end(void)
{
	overflow_at_end_at(0, 0);
}

struct blocked_read {
	pthread_t thread;
	struct profbuf *b;
	struct profbuf_read r;
	int rc;
	atomic_bool done;
	/* copies: the read's pointers are only valid until the next read */
	uint64_t data[64];
	const void *tags[8];
};

static void *blocked_read_main(void *arg)
{
	struct blocked_read *br = arg;

	br->rc = profbuf_read(br->b, PROFBUF_BLOCKING, &br->r);
	if (br->r.ndata && br->r.ndata <= ARRAY_SIZE(br->data))
		memcpy(br->data, br->r.data, br->r.ndata * 8);
	if (br->r.ntags && br->r.ntags <= ARRAY_SIZE(br->tags))
		memcpy(br->tags, br->r.tags, br->r.ntags * sizeof(void *));
	atomic_store(&br->done, true);
	return NULL;
}

/* Start a blocking read and let it go to sleep (Go's readBlock). */
static void start_blocked_read(struct blocked_read *br, struct profbuf *b)
{
	memset(br, 0, sizeof(*br));
	br->b = b;
	pthread_create(&br->thread, NULL, blocked_read_main, br);
	sleep_ms(10);
}

/*
 * Wait for the blocked read to return (Go's wait()).  Go gives it 1 s;
 * 5 s here, for sanitizer builds on a loaded machine.  On timeout, fail
 * and close the buffer so that the reader returns and can be joined.
 */
static void finish_blocked_read(struct blocked_read *br)
{
	struct timespec deadline;
	int rc;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 5;
	rc = pthread_timedjoin_np(br->thread, NULL, &deadline);
	KT_CHECK_EQ(rc, 0); /* ETIMEDOUT: timeout waiting for blocked read */
	if (rc) {
		profbuf_close(br->b);
		pthread_join(br->thread, NULL);
	}
	KT_CHECK_EQ(br->rc, 0);
}

static void blocking_write_read(void)
{
	struct profbuf *b = profbuf_new(2, 11, 1);
	struct blocked_read br;
	struct profbuf_read r;
	struct profbuf_test_counters c;

	KT_REQUIRE(b);
	start_blocked_read(&br, b);
	KT_CHECK(!atomic_load(&br.done));
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9));
	finish_blocked_read(&br);
	/* No read since: br.r's words are still valid. */
	expect(&br.r, 2, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9),
	       TAGS(&my_tags[0]), 1);

	start_blocked_read(&br, b);
	KT_CHECK(!atomic_load(&br.done));
	sleep_ms(10);
	WRITE(b, &my_tags[2], 99, HDR(101, 102), STK(201, 202, 203, 204));
	finish_blocked_read(&br);
	expect(&br.r, 2, WORDS(8, 99, 101, 102, 201, 202, 203, 204),
	       TAGS(&my_tags[2]), 1);

	/* readBlock(nil, nil): close wakes it with EOF, no data, no tags. */
	start_blocked_read(&br, b);
	KT_CHECK_EQ(profbuf_close(b), 0);
	finish_blocked_read(&br);
	KT_CHECK(br.r.eof && br.r.ndata == 0 && br.r.ntags == 0);
	KT_CHECK(br.r.data == NULL && br.r.tags == NULL);
	/* readBlock(nil, nil) again: EOF at once. */
	start_blocked_read(&br, b);
	finish_blocked_read(&br);
	KT_CHECK(br.r.eof && br.r.ndata == 0 && br.r.ntags == 0);
	KT_CHECK(br.r.data == NULL && br.r.tags == NULL);

	/* readEOF: blocking, then non-blocking. */
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_BLOCKING, &r), 0);
	KT_CHECK(r.eof && r.ndata == 0 && r.data == NULL && r.tags == NULL);
	KT_CHECK_EQ(r.ntags, 0);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.eof && r.ndata == 0 && r.data == NULL && r.tags == NULL);
	KT_CHECK_EQ(r.ntags, 0);

	/* Each of the three sleeps was ended by exactly one wakeup. */
	profbuf_test_counters(b, &c);
	KT_CHECK_EQ(c.sleeps, 3);
	KT_CHECK_EQ(c.wakeups + c.withdrawn, c.sleeps);
	KT_CHECK_EQ(c.wakeups, 3);
	profbuf_free(b);
}

/* Go's DataWraparound, TagWraparound, BothWraparound. */
static void wraparound_case(size_t bufwords, size_t ntags, uint32_t data0,
			    uint32_t tag0, int rounds)
{
	struct profbuf *b = profbuf_new_at(2, bufwords, ntags, data0, tag0);

	KT_REQUIRE(b);
	for (int i = 0; i < rounds; i++) {
		KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(2, 3),
				  STK(4, 5, 6, 7, 8, 9)),
			    0);
		READ(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
		READ_NONE(b);
	}
	profbuf_free(b);
}

static void data_wraparound(void)
{
	wraparound_case(16, 1024, 0, 0, 10);
}

static void tag_wraparound(void)
{
	wraparound_case(1024, 2, 0, 0, 10);
}

static void both_wraparound(void)
{
	wraparound_case(16, 2, 0, 0, 10);
}

/* ---- the record iterator --------------------------------------------- */

/* Ordinary records: every field, the end of the walk, empty reads. */
static void iter_records(void)
{
	struct profbuf *b = profbuf_new(2, 64, 8);
	struct profbuf_read r;
	struct profbuf_iter it;
	struct profbuf_record rec;

	KT_REQUIRE(b);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9)),
		    0);
	/* A padded header, an empty stack, a negative time. */
	KT_CHECK_EQ(wr(b, &my_tags[2], -99, HDR(101), 1, NULL, 0), 0);
	/* An overflow record's shape but for one header word. */
	KT_CHECK_EQ(wr(b, NULL, 500, HDR(0, 504), 2, STK(506), 1), 0);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK_EQ(r.ntags, 3);
	profbuf_iter_init(&it, &r, 2);

	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK_EQ(rec.time, 1);
	KT_CHECK(rec.hdr == r.data + 2 && rec.nhdr == 2);
	KT_CHECK(rec.hdr[0] == 2 && rec.hdr[1] == 3);
	KT_CHECK(rec.stk == (const uintptr_t *)r.data + 4);
	KT_CHECK_EQ(rec.nstk, 6);
	KT_CHECK(rec.stk[0] == 4 && rec.stk[5] == 9);
	KT_CHECK(rec.tag == &my_tags[0]);
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 0);

	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK_EQ(rec.time, -99);
	KT_CHECK(rec.hdr == r.data + 12 && rec.nhdr == 2);
	KT_CHECK(rec.hdr[0] == 101 && rec.hdr[1] == 0);
	KT_CHECK_EQ(rec.nstk, 0);
	KT_CHECK(rec.tag == &my_tags[2]);
	KT_CHECK(!profbuf_record_is_overflow(&rec));

	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK_EQ(rec.time, 500);
	KT_CHECK(rec.hdr[0] == 0 && rec.hdr[1] == 504);
	KT_CHECK(rec.nstk == 1 && rec.stk[0] == 506);
	KT_CHECK(rec.tag == NULL);
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 0);

	/* The end, on this call and every later one. */
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_iter_malformed(&it));
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_iter_malformed(&it));

	/* An empty read and an EOF read have no records, and are fine. */
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.ndata == 0 && !r.eof);
	profbuf_iter_init(&it, &r, 2);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_iter_malformed(&it));
	KT_CHECK_EQ(profbuf_close(b), 0);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.eof);
	profbuf_iter_init(&it, &r, 2);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_iter_malformed(&it));
	profbuf_free(b);
}

/*
 * Overflow records, written by a writer (Go's ReadAfterOverflow1) and
 * synthesized by the reader (Go's ReadAtEndAfterOverflow).
 */
static void iter_overflow_records(void)
{
	struct profbuf *b = profbuf_new(2, 16, 5);
	struct profbuf_read r;
	struct profbuf_iter it;
	struct profbuf_record rec;

	KT_REQUIRE(b);
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9));
	READ(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5));
	READ(b, WORDS(6, 1, 2, 3, 4, 5), &my_tags[0]);
	KT_CHECK_EQ(WRITE(b, &my_tags[2], 99, HDR(101, 102),
			  STK(201, 202, 203, 204, 205, 206, 207, 208, 209)),
		    -ENOSPC);
	for (int i = 0; i < 299; i++)
		WRITE(b, &my_tags[3], 100 + i, HDR(101, 102),
		      STK(201, 202, 203, 204));
	KT_CHECK_EQ(WRITE(b, &my_tags[1], 500, HDR(502, 504), STK(506)), 0);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	profbuf_iter_init(&it, &r, 2);
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK(profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 300);
	KT_CHECK_EQ(rec.time, 99); /* the first lost write's */
	KT_CHECK(rec.nhdr == 2 && rec.hdr[0] == 0 && rec.hdr[1] == 0);
	KT_CHECK(rec.nstk == 1 && rec.stk[0] == 300 && rec.tag == NULL);
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 0);
	KT_CHECK(rec.time == 500 && rec.tag == &my_tags[1]);
	KT_CHECK(rec.nstk == 1 && rec.stk[0] == 506);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_iter_malformed(&it));
	profbuf_free(b);

	b = profbuf_new(2, 12, 5);
	KT_REQUIRE(b);
	WRITE(b, &my_tags[0], 1, HDR(2, 3), STK(4, 5, 6, 7, 8, 9));
	WRITE(b, &my_tags[2], 99, HDR(101, 102), STK(201, 202, 203, 204));
	for (int i = 0; i < 299; i++)
		WRITE(b, &my_tags[3], 100, HDR(101, 102),
		      STK(201, 202, 203, 204));
	READ(b, WORDS(10, 1, 2, 3, 4, 5, 6, 7, 8, 9), &my_tags[0]);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	profbuf_iter_init(&it, &r, 2);
	KT_REQUIRE(profbuf_iter_next(&it, &rec));
	KT_CHECK(profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 300);
	KT_CHECK_EQ(rec.time, 99);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(!profbuf_iter_malformed(&it));
	profbuf_free(b);
}

/*
 * Walk @nw words and @nt tags held in heap blocks of exactly that size, so
 * that ASan catches any read past them.  Return: the records returned; the
 * walk's malformed flag in *@malformed.
 */
static size_t walk_words(const uint64_t *w, size_t nw, size_t nt,
			 size_t hdrsize, bool *malformed)
{
	uint64_t *data = malloc(nw * sizeof(*data) + !nw);
	const void **tags = malloc(nt * sizeof(*tags) + !nt);
	struct profbuf_read r = { 0 };
	struct profbuf_iter it;
	struct profbuf_record rec;
	size_t n = 0;

	*malformed = true;
	if (!data || !tags) {
		KT_CHECK(data && tags);
		goto out;
	}
	memcpy(data, w, nw * sizeof(*data));
	for (size_t i = 0; i < nt; i++)
		tags[i] = &my_tags[i % 8];
	r.data = data;
	r.ndata = nw;
	r.tags = tags;
	r.ntags = nt;
	profbuf_iter_init(&it, &r, hdrsize);
	while (profbuf_iter_next(&it, &rec)) {
		KT_CHECK(rec.hdr >= data &&
			 rec.stk + rec.nstk <= (const uintptr_t *)data + nw);
		KT_CHECK(rec.tag == tags[n]);
		if (++n > nw) /* cannot happen: each record is >= 3 words */
			break;
	}
	*malformed = profbuf_iter_malformed(&it);
	/* Stopped for good: a later call returns nothing, touches nothing. */
	memset(&rec, 0xa5, sizeof(rec));
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(rec.nstk == (size_t)0xa5a5a5a5a5a5a5a5ull);
out:
	free(data);
	free(tags);
	return n;
}

#define WALK(nt, hdrsize, bad, ...)                                      \
	walk_words(U64S(__VA_ARGS__), ARRAY_SIZE(U64S(__VA_ARGS__)), nt, \
		   hdrsize, bad)

/* A malformed read stops the walk, and nothing past it is ever read. */
static void iter_malformed(void)
{
	struct profbuf_read r = { 0 };
	struct profbuf_iter it;
	struct profbuf_record rec;
	bool bad;

	/* Well-formed, for contrast: two records, the second stackless. */
	KT_CHECK_EQ(WALK(2, 2, &bad, 5, 1, 2, 3, 4, 4, 5, 6, 7), 2);
	KT_CHECK(!bad);
	/* A zero length word (a naive loop would spin on it forever). */
	KT_CHECK_EQ(WALK(1, 2, &bad, 0, 1, 2, 3), 0);
	KT_CHECK(bad);
	/* Shorter than 2 + hdrsize. */
	KT_CHECK_EQ(WALK(1, 2, &bad, 3, 1, 2), 0);
	KT_CHECK(bad);
	KT_CHECK_EQ(WALK(2, 2, &bad, 5, 1, 2, 3, 4, 1, 0, 0, 0), 1);
	KT_CHECK(bad);
	/* Longer than the words left: the first record, then a stop. */
	KT_CHECK_EQ(WALK(2, 2, &bad, 5, 1, 2, 3, 4, 6, 7, 8, 9, 10), 1);
	KT_CHECK(bad);
	KT_CHECK_EQ(WALK(1, 2, &bad, UINT64_MAX, 1, 2, 3), 0);
	KT_CHECK(bad);
	KT_CHECK_EQ(WALK(1, 2, &bad, 1ull << 63, 1, 2, 3), 0);
	KT_CHECK(bad);
	/* More tags than records, more records than tags. */
	KT_CHECK_EQ(WALK(2, 2, &bad, 5, 1, 2, 3, 4), 1);
	KT_CHECK(bad);
	KT_CHECK_EQ(WALK(1, 2, &bad, 4, 1, 2, 3, 4, 5, 6, 7), 1);
	KT_CHECK(bad);
	KT_CHECK_EQ(WALK(0, 2, &bad, 4, 1, 2, 3), 0);
	KT_CHECK(bad);
	/* The wrong hdrsize misreads the words but stays inside them. */
	KT_CHECK_EQ(WALK(2, 3, &bad, 5, 1, 2, 3, 4, 4, 5, 6, 7), 1);
	KT_CHECK(bad);
	/* hdrsize 0 (profbuf_new() refuses it) and absurd ones. */
	KT_CHECK_EQ(WALK(2, 0, &bad, 5, 1, 2, 3, 4, 4, 5, 6, 7), 0);
	KT_CHECK(bad);
	KT_CHECK_EQ(WALK(1, SIZE_MAX, &bad, 5, 1, 2, 3, 4), 0);
	KT_CHECK(bad);
	KT_CHECK_EQ(WALK(1, SIZE_MAX - 1, &bad, 5, 1, 2, 3, 4), 0);
	KT_CHECK(bad);
	/* NULL words or tags with a count: never dereferenced. */
	r.ndata = 4;
	r.ntags = 1;
	r.tags = TAGS(NULL);
	profbuf_iter_init(&it, &r, 2);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(profbuf_iter_malformed(&it));
	r.data = U64S(4, 1, 2, 3);
	r.tags = NULL;
	profbuf_iter_init(&it, &r, 2);
	KT_CHECK(!profbuf_iter_next(&it, &rec));
	KT_CHECK(profbuf_iter_malformed(&it));
}

/* Only the exact overflow shape is an overflow record. */
static void iter_overflow_shape(void)
{
	const uint64_t zero[3] = { 0, 0, 0 }, hdr[2] = { 0, 1 };
	const uintptr_t count[2] = { 7, 8 };
	struct profbuf_record rec = { .time = 1,
				      .hdr = zero,
				      .nhdr = 2,
				      .stk = count,
				      .nstk = 1,
				      .tag = NULL };

	KT_CHECK(profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 7);
	rec.nhdr = 3;
	KT_CHECK(profbuf_record_is_overflow(&rec));
	rec.tag = &my_tags[0];
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 0);
	rec.tag = NULL;
	rec.nstk = 2;
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 0);
	rec.nstk = 0; /* the count is not read */
	rec.stk = NULL;
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 0);
	rec.stk = count;
	rec.nstk = 1;
	rec.hdr = hdr;
	rec.nhdr = 2;
	KT_CHECK(!profbuf_record_is_overflow(&rec));
	KT_CHECK_EQ(profbuf_record_overflow_count(&rec), 0);
}

/* ---- counters across their 2^32 / 2^30 wrap ----------------------- */

static void counters_wrap(void)
{
	/*
	 * The 10-word record fits an empty 16-word ring only at offsets
	 * 0-6 and 10-15 (a record never wraps), so start at a multiple of 16.
	 */
	wraparound_case(16, 2, UINT32_MAX - 47, (1u << 30) - 5, 40);
	wraparound_case(16, 1024, UINT32_MAX - 3, (1u << 30) - 1, 40);
	wraparound_case(1024, 2, UINT32_MAX - 100, (1u << 30) - 2, 40);
}

/*
 * A record that ends exactly where the data count wraps to 0 (2^32 words
 * in all) must not carry into w's flags: a carry sets SLEEPING with no
 * reader asleep, and the next writer then "wakes" a reader that never
 * slept (a wakeup without a sleep in the accounting).  profbuf_write()'s
 * fast path adds to w directly, so it must leave such a record to the
 * slow path (whose ring_pindex_add() keeps the flags): this fails if it
 * takes it.
 */
static void record_ending_at_count_wrap(void)
{
	struct profbuf_test_counters c;
	struct profbuf *b = profbuf_new_at(2, 16, 1024, 0u - 32, 0);

	KT_REQUIRE(b);
	for (int i = 0; i < 4; i++) {
		/* The whole ring: the second ends at 2^32. */
		KT_CHECK_EQ(
			WRITE(b, &my_tags[0], 1, HDR(2, 3),
			      STK(4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
			0);
		READ(b,
		     WORDS(16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
			   15),
		     &my_tags[0]);
		READ_NONE(b);
	}
	profbuf_test_counters(b, &c);
	KT_CHECK_EQ(c.sleeps, 0);
	KT_CHECK_EQ(c.wakeups, 0);
	profbuf_free(b);
}

/*
 * The tag ring full just after the data count wrapped past 2^32 while r's
 * has not: w's data count is then below r's, and a tag distance taken
 * from w - r whole would borrow one from the tag counts and let a fifth
 * record into four slots, over an unread tag.  The fifth write must be
 * counted lost, and the four read back intact.
 */
static void tag_room_across_data_wrap(void)
{
	/* 4-word records from 2^32 - 6: the second rewinds past 2^32. */
	struct profbuf *b = profbuf_new_at(1, 1024, 4, 0u - 6, 0);
	struct profbuf_iter it;
	struct profbuf_record rec;
	struct profbuf_read r;
	size_t n = 0;
	uint64_t lost = 0;

	KT_REQUIRE(b);
	for (int i = 0; i < 4; i++)
		KT_CHECK_EQ(WRITE(b, &my_tags[i], i, HDR(7), STK(9)), 0);
	KT_CHECK_EQ(WRITE(b, &my_tags[4], 4, HDR(7), STK(9)), -ENOSPC);
	do {
		KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
		profbuf_iter_init(&it, &r, 1);
		while (profbuf_iter_next(&it, &rec)) {
			if (profbuf_record_is_overflow(&rec)) {
				lost += profbuf_record_overflow_count(&rec);
				continue;
			}
			KT_CHECK(n < 4 && rec.tag == &my_tags[n] &&
				 rec.time == (int64_t)n && rec.nstk == 1 &&
				 rec.stk[0] == 9);
			n++;
		}
	} while (r.ndata);
	KT_CHECK_EQ(n, 4);
	KT_CHECK_EQ(lost, 1);
	profbuf_free(b);
}

/*
 * Headers and stacks of every length up to past the writer's inline
 * copies (profbuf__copy(): under 4 words the first, last and middle ones,
 * up to 16 two to four 4-word copies, the last overlapping; over 16 words
 * memcpy()), with headers short of hdrsize (zero-padded): every word lands
 * where it belongs.
 */
static void record_lengths(void)
{
	enum { HS = 24, MAXSTK = 40 };
	uint64_t hdr[HS], want[2 + HS + MAXSTK];
	uintptr_t stk[MAXSTK];
	struct profbuf *b = profbuf_new(HS, 256, 16);

	KT_REQUIRE(b);
	for (size_t i = 0; i < HS; i++)
		hdr[i] = 1000 + i;
	for (size_t i = 0; i < MAXSTK; i++)
		stk[i] = 5000 + i;
	for (size_t nhdr = 1; nhdr <= HS; nhdr++) {
		for (size_t nstk = 0; nstk <= MAXSTK; nstk++) {
			struct profbuf_read r;
			size_t len = 2 + HS + nstk;

			KT_CHECK_EQ(profbuf_write(b, &my_tags[1], 7, hdr, nhdr,
						  stk, nstk),
				    0);
			want[0] = len;
			want[1] = 7;
			for (size_t i = 0; i < HS; i++)
				want[2 + i] = i < nhdr ? hdr[i] : 0;
			for (size_t i = 0; i < nstk; i++)
				want[2 + HS + i] = stk[i];
			KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r),
				    0);
			expect(&r, HS, want, len, TAGS(&my_tags[1]), 1);
		}
	}
	profbuf_free(b);
}

/*
 * Go's overflow cases again with the data count crossing 2^32 and the tag
 * count just below 2^30 (both starting at multiples of the ring sizes: the
 * expected words depend on the positions in the rings).
 */
static void overflow_near_wrap(void)
{
	for (uint32_t back = 16; back <= 64; back += 16) {
		uint32_t d0 = 0u - back, t0 = (1u << 30) - 8;

		overflow_written_by_writer_at(d0, t0);
		overflow_synthesized_by_reader_at(d0, t0);
		overflow_at_end_at(d0, t0);
	}
}

/*
 * Random writes (many lost) and reads, one thread, crossing the 2^32 data
 * and 2^30 tag wraps at several ring positions: every accepted record is
 * read intact and in order, every loss is counted.
 */
static void wrap_random_ops(void)
{
	static const uint32_t starts[][2] = {
		{ UINT32_MAX - 1000, (1u << 30) - 100 },
		{ UINT32_MAX - 3, (1u << 30) - 1 },
		{ UINT32_MAX - 77, (1u << 30) - 3 },
	};

	for (size_t k = 0; k < ARRAY_SIZE(starts); k++) {
		struct profbuf *b =
			profbuf_new_at(2, 64, 8, starts[k][0], starts[k][1]);
		struct checkrec_state *st = calloc(1, sizeof(*st));
		struct profbuf_read r;
		uint64_t ok = 0, lost = 0;
		unsigned seed = 100 + (unsigned)k;

		KT_REQUIRE(b && st);
		st->hdrsize = 2;
		for (uint64_t s = 0; s < 20000; s++) {
			uint64_t hdr[2];
			uintptr_t stk[32];
			size_t n = rand_r(&seed) % 24;
			int rc;

			checkrec_fill(hdr, stk, 0, s, n);
			rc = profbuf_write(b, (void *)1, (int64_t)s, hdr, 2,
					   stk, n);
			ok += rc == 0;
			lost += rc == -ENOSPC;
			KT_CHECK(rc == 0 || rc == -ENOSPC);
			if (rand_r(&seed) % 3 == 0) {
				KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING,
							 &r),
					    0);
				checkrec_read(st, &r);
			}
		}
		profbuf_close(b);
		do {
			KT_CHECK_EQ(profbuf_read(b, PROFBUF_BLOCKING, &r), 0);
			checkrec_read(st, &r);
		} while (!r.eof);
		KT_CHECK_EQ(st->violations, 0);
		KT_CHECK_EQ(st->records, ok);
		KT_CHECK_EQ(st->lost, lost);
		KT_CHECK(ok > 1000 && lost > 1000);
		free(st);
		profbuf_free(b);
	}
}

/* ---- errors ----------------------------------------------------------- */

static void new_errors(void)
{
	errno = 0;
	KT_CHECK(profbuf_new(0, 16, 4) == NULL && errno == EINVAL);
	errno = 0;
	KT_CHECK(profbuf_new(1, 1u << 28, 4) == NULL && errno == EINVAL);
	errno = 0;
	KT_CHECK(profbuf_new(1, 16, 1u << 28) == NULL && errno == EINVAL);
	errno = 0;
	KT_CHECK(profbuf_new((1u << 27) + 1, 16, 4) == NULL && errno == EINVAL);
	/* Rounding up must not sneak past the limit either. */
	errno = 0;
	KT_CHECK(profbuf_new(1, (1u << 28) - 1, 4) == NULL && errno == EINVAL);
	errno = 0;
	KT_CHECK(profbuf_new(1, 16, (1u << 28) - 1) == NULL && errno == EINVAL);
	/* Largest legal sizes round up fine; tiny ones are raised. */
	struct profbuf *b = profbuf_new(3, 1, 0);

	KT_REQUIRE(b);
	/* 2 + 3 + 1 = 6 words rounds to 8: a 3-word stack fits, 4 does not */
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, PCS(1, 2, 3), 3), 0);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, PCS(1, 2, 3, 4), 4), -EINVAL);
	profbuf_free(b);
	profbuf_free(NULL);
}

static void write_errors(void)
{
	struct profbuf *b = profbuf_new(2, 16, 4);
	struct profbuf_read r;

	KT_REQUIRE(b);
	KT_CHECK_EQ(wr(NULL, NULL, 1, HDR(1), 1, NULL, 0), -EINVAL);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1, 2, 3), 3, NULL, 0), -EINVAL);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(0, 0), 2, STK(1), 1), -EINVAL);
	KT_CHECK_EQ(wr(b, NULL, 1, NULL, 0, STK(1), 1), -EINVAL);
	KT_CHECK_EQ(wr(b, NULL, 1, NULL, 1, STK(1), 1), -EINVAL);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, NULL, 1), -EINVAL);
	/* 2 + 2 + 13 = 17 > 16 words */
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1,
		       PCS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13), 13),
		    -EINVAL);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, PCS(1), SIZE_MAX), -EINVAL);
	/* Nothing was written or counted by the refusals. */
	READ_NONE(b);
	/* A header shorter than hdrsize is zero-padded. */
	KT_CHECK_EQ(wr(b, &my_tags[1], 7, HDR(9), 1, STK(8), 1), 0);
	READ(b, WORDS(5, 7, 9, 0, 8), &my_tags[1]);
	/* The padding can be nonzero in the second word only. */
	KT_CHECK_EQ(wr(b, &my_tags[1], 7, HDR(0, 9), 2, NULL, 0), 0);
	READ(b, WORDS(4, 7, 0, 9), &my_tags[1]);

	KT_CHECK_EQ(profbuf_read(NULL, PROFBUF_NONBLOCKING, &r), -EINVAL);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, NULL), -EINVAL);
	KT_CHECK_EQ(profbuf_read(b, (enum profbuf_mode)7, &r), -EINVAL);
	KT_CHECK_EQ(profbuf_close(NULL), -EINVAL);
	KT_CHECK_EQ(profbuf_set_wake_watermark(NULL, 1), -EINVAL);
	KT_CHECK_EQ(profbuf_set_wake_watermark(b, 17), -EINVAL);

	KT_CHECK_EQ(profbuf_close(b), 0);
	KT_CHECK_EQ(profbuf_close(b), -EALREADY);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, STK(1), 1), -ESHUTDOWN);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.eof);
	profbuf_free(b);
}

static void errno_preserved(void)
{
	struct profbuf *b = profbuf_new(1, 8, 2);
	struct blocked_read br;

	KT_REQUIRE(b);
	errno = 1234;
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, STK(1), 1), 0);
	KT_CHECK_EQ(errno, 1234);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, STK(1, 2, 3, 4), 4), -ENOSPC);
	KT_CHECK_EQ(errno, 1234);
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(0), 1, STK(1), 1), -EINVAL);
	KT_CHECK_EQ(errno, 1234);
	READ1(b, WORDS(4, 1, 1, 1), NULL);
	READ1(b, WORDS(4, 1, 0, 1), NULL);
	READ_NONE(b);
	/* The wake path makes a futex syscall: errno survives it too. */
	start_blocked_read(&br, b);
	errno = 4321;
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, STK(1), 1), 0);
	KT_CHECK_EQ(errno, 4321);
	finish_blocked_read(&br);
	KT_CHECK_EQ(br.r.ndata, 4);
	errno = 99;
	KT_CHECK_EQ(profbuf_close(b), 0);
	KT_CHECK_EQ(errno, 99);
	profbuf_free(b);
}

/* ---- close, EOF, timeouts, watermark --------------------------------- */

static void eof_after_drain(void)
{
	struct profbuf *b = profbuf_new(1, 16, 8);
	struct profbuf_read r;

	KT_REQUIRE(b);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(5), STK(1, 2, 3, 4, 5, 6)), 0);
	KT_CHECK_EQ(WRITE(b, &my_tags[1], 2, HDR(5), STK(1, 2, 3, 4, 5, 6)),
		    -ENOSPC);
	KT_CHECK_EQ(profbuf_close(b), 0);
	/* Data first, then the pending overflow, then EOF, then EOF. */
	READ1(b, WORDS(9, 1, 5, 1, 2, 3, 4, 5, 6), &my_tags[0]);
	READ1(b, WORDS(4, 2, 0, 1), NULL);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_BLOCKING, &r), 0);
	KT_CHECK(r.eof && r.ndata == 0 && r.ntags == 0);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
	KT_CHECK(r.eof);
	/* Sealed: a write racing close now is refused, not lost. */
	KT_CHECK_EQ(wr(b, NULL, 1, HDR(1), 1, STK(1), 1), -ESHUTDOWN);
	profbuf_free(b);
}

/*
 * A writer that loaded ovf just before close (so it did not see CLOSED)
 * and reserves after the reader sealed w: its room test alone must refuse
 * the write.  The tag room after a sealed w is about 2^29 tags, less the
 * one the low bits borrow (here from EXTRA, and from the data count, 8
 * words short of 2^32, that a 4-word record takes past limit's): a test
 * that read it signed would take it for room in a 1-tag ring.
 */
static void write_after_seal_refused(void)
{
	static const uint32_t starts[] = { 0, 0u - 8 };

	for (size_t k = 0; k < ARRAY_SIZE(starts); k++) {
		struct profbuf *b = profbuf_new_at(1, 64, 1, starts[k], 0);
		struct profbuf_read r;

		KT_REQUIRE(b);
		KT_CHECK_EQ(profbuf_close(b), 0);
		KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
		KT_CHECK(r.eof);
		profbuf_test_close_late(b);
		KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(5), STK(6)),
			    -ESHUTDOWN);
		KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), 0);
		KT_CHECK(r.eof && r.ndata == 0);
		profbuf_free(b);
	}
}

static void *delayed_write(void *arg)
{
	sleep_ms(30);
	WRITE((struct profbuf *)arg, &my_tags[1], 4, HDR(5), STK(6));
	return NULL;
}

static void read_timeout(void)
{
	struct profbuf *b = profbuf_new(1, 16, 8);
	struct profbuf_read r;
	struct profbuf_test_counters c;

	KT_REQUIRE(b);
	KT_CHECK_EQ(profbuf_read_timeout(b, 20 * 1000000, &r), -ETIMEDOUT);
	KT_CHECK(r.ndata == 0 && !r.eof);
	KT_CHECK_EQ(profbuf_read_timeout(b, 0, &r), -ETIMEDOUT);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 3, HDR(5), STK(6)), 0);
	KT_CHECK_EQ(profbuf_read_timeout(b, 20 * 1000000, &r), 0);
	expect(&r, 1, WORDS(4, 3, 5, 6), TAGS(&my_tags[0]), 1);
	/* UINT64_MAX means no limit, not a wrapped deadline. */
	pthread_t th;

	pthread_create(&th, NULL, delayed_write, b);
	KT_CHECK_EQ(profbuf_read_timeout(b, UINT64_MAX, &r), 0);
	expect(&r, 1, WORDS(4, 4, 5, 6), TAGS(&my_tags[1]), 1);
	pthread_join(th, NULL);
	profbuf_test_counters(b, &c);
	KT_CHECK(c.sleeps >= 1);
	KT_CHECK_EQ(c.wakeups + c.withdrawn, c.sleeps);
	profbuf_free(b);
}

static void wake_watermark(void)
{
	struct profbuf *b = profbuf_new(1, 64, 16);
	struct blocked_read br;

	KT_REQUIRE(b);
	KT_CHECK_EQ(profbuf_set_wake_watermark(b, 8), 0);
	start_blocked_read(&br, b);
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 1, HDR(5), STK(6)), 0); /* 4 */
	sleep_ms(30);
	/* Below the watermark: the reader must still be asleep. */
	KT_CHECK(!atomic_load(&br.done));
	KT_CHECK_EQ(WRITE(b, &my_tags[1], 2, HDR(7), STK(8)), 0); /* 8 */
	finish_blocked_read(&br);
	KT_CHECK_EQ(br.r.ndata, 8);
	KT_CHECK(!memcmp(br.data, U64S(4, 1, 5, 6, 4, 2, 7, 8), 64));

	/* Overflow wakes regardless of the watermark. */
	KT_CHECK_EQ(profbuf_set_wake_watermark(b, 64), 0);
	start_blocked_read(&br, b); /* gives back the first 8 words */
	for (int i = 0; i < 15; i++)
		WRITE(b, &my_tags[0], 1, HDR(5), STK(6)); /* 60 words */
	sleep_ms(30);
	KT_CHECK(!atomic_load(&br.done));
	KT_CHECK_EQ(WRITE(b, &my_tags[0], 9, HDR(5), STK(6, 7, 8, 9, 10)),
		    -ENOSPC);
	finish_blocked_read(&br);
	/* The run ends at the end of the ring: records at 8 ... 63. */
	KT_CHECK_EQ(br.r.ntags, 14);
	profbuf_free(b);
}

static void second_reader_busy(void)
{
	struct profbuf *b = profbuf_new(1, 16, 8);
	struct blocked_read br;
	struct profbuf_read r;

	KT_REQUIRE(b);
	start_blocked_read(&br, b);
	KT_CHECK_EQ(profbuf_read(b, PROFBUF_NONBLOCKING, &r), -EBUSY);
	profbuf_close(b);
	finish_blocked_read(&br);
	KT_CHECK(br.r.eof);
	profbuf_free(b);
}

/* ---- concurrent writers ------------------------------------------------ */

struct writer_ctx {
	struct profbuf *b;
	uint32_t id;
	uint64_t nwrites;
	uint64_t ok, lost, refused;
	unsigned seed;
	atomic_bool *stop;
};

static int write_checked(struct profbuf *b, uint32_t id, uint64_t seq,
			 size_t nstk)
{
	uint64_t hdr[2];
	uintptr_t stk[64];
	size_t nhdr = checkrec_fill(hdr, stk, id, seq, nstk);

	return profbuf_write(b, (void *)(uintptr_t)(id + 1), (int64_t)seq, hdr,
			     nhdr, stk, nstk);
}

static void count_result(struct writer_ctx *w, int rc)
{
	if (rc == 0)
		w->ok++;
	else if (rc == -ENOSPC)
		w->lost++;
	else
		w->refused++;
}

static void *writer_main(void *arg)
{
	struct writer_ctx *w = arg;

	for (uint64_t s = 0; s < w->nwrites; s++)
		count_result(w, write_checked(w->b, w->id, s,
					      rand_r(&w->seed) % 40));
	return NULL;
}

/* Drain @b until EOF, checking every record; stall now and then. */
static void drain_checked(struct profbuf *b, struct checkrec_state *st,
			  unsigned seed, bool stall)
{
	struct profbuf_read r;

	for (;;) {
		int rc = profbuf_read(b, PROFBUF_BLOCKING, &r);

		KT_CHECK_EQ(rc, 0);
		if (rc || r.eof)
			break;
		checkrec_read(st, &r);
		if (stall && rand_r(&seed) % 64 == 0)
			usleep(rand_r(&seed) % 500);
	}
}

static void check_accounting(struct checkrec_state *st, struct writer_ctx *w,
			     int n)
{
	uint64_t lost = 0;

	KT_CHECK_EQ(st->violations, 0);
	for (int i = 0; i < n; i++) {
		KT_CHECK_EQ(st->read_by_writer[i], w[i].ok);
		lost += w[i].lost;
	}
	KT_CHECK_EQ(st->lost, lost);
}

static atomic_int writers_done;

static void *counted_writer_main(void *arg)
{
	writer_main(arg);
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static void concurrent_writers_case(size_t bufwords, size_t ntags, bool stall)
{
	enum { NW = 4 };
	struct profbuf *b = profbuf_new(2, bufwords, ntags);
	struct writer_ctx w[NW];
	pthread_t th[NW];
	struct checkrec_state *st = calloc(1, sizeof(*st));
	struct profbuf_test_counters c;
	struct profbuf_read r;
	uint64_t ok = 0, lost = 0;
	unsigned seed = 11;

	KT_REQUIRE(b && st);
	st->hdrsize = 2;
	atomic_store(&writers_done, 0);
	for (int i = 0; i < NW; i++) {
		w[i] = (struct writer_ctx){ .b = b,
					    .id = (uint32_t)i,
					    .nwrites = 100000,
					    .seed = 7u + (unsigned)i };
		pthread_create(&th[i], NULL, counted_writer_main, &w[i]);
	}
	/* Non-blocking reader while they write, then close and drain. */
	while (atomic_load(&writers_done) < NW) {
		KT_REQUIRE(profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0);
		checkrec_read(st, &r);
		if (r.ndata == 0)
			sched_yield();
		if (stall && rand_r(&seed) % 256 == 0)
			usleep(200);
	}
	for (int i = 0; i < NW; i++)
		pthread_join(th[i], NULL);
	KT_CHECK_EQ(profbuf_close(b), 0);
	drain_checked(b, st, 1, false);
	check_accounting(st, w, NW);
	for (int i = 0; i < NW; i++) {
		ok += w[i].ok;
		lost += w[i].lost;
		KT_CHECK_EQ(w[i].refused, 0);
	}
	KT_CHECK_EQ(ok + lost, NW * 100000);
	KT_CHECK_EQ(st->records, ok);
	profbuf_test_counters(b, &c);
	KT_CHECK_EQ(c.wakeups + c.withdrawn, c.sleeps);
	printf("  %llu written, %llu lost and counted\n",
	       (unsigned long long)ok, (unsigned long long)lost);
	free(st);
	profbuf_free(b);
}

static void concurrent_writers_big_ring(void)
{
	concurrent_writers_case(1 << 16, 1 << 12, false);
}

static void concurrent_writers_tiny_ring_slow_reader(void)
{
	concurrent_writers_case(64, 4, true);
}

/* Blocking reader, writers close the buffer while others still write. */
struct close_race {
	struct profbuf *b;
	struct writer_ctx w[4];
};

static void *close_race_writer(void *arg)
{
	struct writer_ctx *w = arg;

	for (uint64_t s = 0; s < w->nwrites; s++) {
		int rc = write_checked(w->b, w->id, s, s % 20);

		count_result(w, rc);
		if (rc == -ESHUTDOWN)
			break; /* closed */
	}
	return NULL;
}

static void close_under_load(void)
{
	enum { NW = 4 };
	struct close_race cr;
	pthread_t th[NW];
	struct checkrec_state *st = calloc(1, sizeof(*st));
	struct profbuf_test_counters c;

	KT_REQUIRE(st);
	cr.b = profbuf_new(2, 256, 16);
	KT_REQUIRE(cr.b);
	st->hdrsize = 2;
	for (int i = 0; i < NW; i++) {
		cr.w[i] = (struct writer_ctx){ .b = cr.b,
					       .id = (uint32_t)i,
					       .nwrites = UINT64_MAX };
		pthread_create(&th[i], NULL, close_race_writer, &cr.w[i]);
	}
	/* Drain for a while with a blocking reader, then close mid-stream. */
	struct profbuf_read r;

	for (int n = 0; n < 2000; n++) {
		KT_REQUIRE(profbuf_read(cr.b, PROFBUF_BLOCKING, &r) == 0);
		checkrec_read(st, &r);
	}
	KT_CHECK_EQ(profbuf_close(cr.b), 0);
	drain_checked(cr.b, st, 3, false);
	for (int i = 0; i < NW; i++) {
		pthread_join(th[i], NULL);
		KT_CHECK_EQ(cr.w[i].refused, 1);
	}
	/* Everything accepted was read, everything discarded counted. */
	check_accounting(st, cr.w, NW);
	profbuf_test_counters(cr.b, &c);
	KT_CHECK_EQ(c.wakeups + c.withdrawn, c.sleeps);
	free(st);
	profbuf_free(cr.b);
}

/* ---- writers nested in a real SIGPROF handler ------------------------- */

static struct profbuf *sig_buf;
static _Thread_local uint64_t sig_seq;
static _Thread_local struct writer_ctx *sig_ctx;
static _Thread_local volatile sig_atomic_t in_write;
static atomic_ulong sig_nested, sig_writes, sig_errno_broken;

static void sigprof_handler(int sig)
{
	struct writer_ctx *w = sig_ctx;
	int saved = errno, rc;

	(void)sig;
	if (!w)
		return;
	if (in_write)
		atomic_fetch_add_explicit(&sig_nested, 1, memory_order_relaxed);
	errno = 777;
	/* The handler is writer id + 1 of its thread: its own sequence. */
	rc = write_checked(sig_buf, w->id + 1, sig_seq, sig_seq % 30);
	sig_seq++;
	if (errno != 777)
		atomic_fetch_add_explicit(&sig_errno_broken, 1,
					  memory_order_relaxed);
	errno = saved;
	count_result(w + 1, rc);
	atomic_fetch_add_explicit(&sig_writes, 1, memory_order_relaxed);
}

static void *sig_writer_main(void *arg)
{
	/* w[0]: the thread (nwrites: how long, in ns); w[1]: its handler */
	struct writer_ctx *w = arg;
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID,
				.sigev_signo = SIGPROF };
	struct itimerspec its = { .it_interval = { 0, 100000 },
				  .it_value = { 0, 100000 } }; /* 10 kHz */
	timer_t timer;
	int rc;

	sev._sigev_un._tid = gettid();
	sig_ctx = w;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &timer) ||
	    timer_settime(timer, 0, &its, NULL)) {
		w->refused = UINT64_MAX; /* reported by the test */
		return NULL;
	}
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t s = 0;; s++) {
		if ((s & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000000000L +
				    (t.tv_nsec - t0.tv_nsec) >
			    (long)w->nwrites)
				break;
		}
		in_write = 1;
		rc = write_checked(w->b, w->id, s, s % 40);
		in_write = 0;
		count_result(w, rc);
	}
	timer_delete(timer);
	sig_ctx = NULL;
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static void nested_sigprof_writers(void)
{
	enum { NT = 2 };
	struct writer_ctx w[2 * NT];
	pthread_t th[NT];
	struct checkrec_state *st = calloc(1, sizeof(*st));
	struct sigaction sa = { .sa_handler = sigprof_handler,
				.sa_flags = SA_RESTART };
	uint64_t hw = 0;

	KT_REQUIRE(st);
	sig_buf = profbuf_new(2, 1 << 12, 1 << 8);
	KT_REQUIRE(sig_buf);
	atomic_store(&writers_done, 0);
	st->hdrsize = 2;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	memset(w, 0, sizeof(w));
	for (int i = 0; i < NT; i++) {
		w[2 * i] = (struct writer_ctx){ .b = sig_buf,
						.id = (uint32_t)(2 * i),
						.nwrites = 500000000 };
		w[2 * i + 1].id = (uint32_t)(2 * i + 1);
		pthread_create(&th[i], NULL, sig_writer_main, &w[2 * i]);
	}
	struct profbuf_read r;

	while (atomic_load(&writers_done) < NT) {
		int rc = profbuf_read_timeout(sig_buf, 1000000, &r);

		KT_REQUIRE(rc == 0 || rc == -ETIMEDOUT);
		checkrec_read(st, &r);
	}
	for (int i = 0; i < NT; i++) {
		pthread_join(th[i], NULL);
		KT_CHECK(w[2 * i].refused != UINT64_MAX);
		hw += w[2 * i + 1].ok + w[2 * i + 1].lost;
	}
	signal(SIGPROF, SIG_IGN);
	profbuf_close(sig_buf);
	drain_checked(sig_buf, st, 5, false);
	check_accounting(st, w, 2 * NT);
	KT_CHECK_EQ(hw, atomic_load(&sig_writes));
	KT_CHECK(hw > 0);
	KT_CHECK_EQ(atomic_load(&sig_errno_broken), 0);
	/* TSan defers signals to safe points: no nesting to observe there. */
	if (!TESTING_UNDER_TSAN)
		KT_CHECK(atomic_load(&sig_nested) > 0);
	printf("  handler writes %llu, nested in a write %lu\n",
	       (unsigned long long)hw, atomic_load(&sig_nested));
	free(st);
	profbuf_free(sig_buf);
}

/* ---- fork ----------------------------------------------------------- */

static struct profbuf *fork_buf;
static atomic_int fork_stop;
static const char fork_child_tag[1];

static void *fork_writer_main(void *arg)
{
	uint64_t hdr[1] = { 1 };
	uintptr_t stk[24] = { 0 };
	unsigned int n = 0;

	(void)arg;
	while (!atomic_load_explicit(&fork_stop, memory_order_relaxed))
		profbuf_write(fork_buf, NULL, 1, hdr, 1, stk, 1 + n++ % 24);
	return NULL;
}

static void *fork_reader_main(void *arg)
{
	struct profbuf_read r;

	(void)arg;
	/* Blocking reads: at a fork the reader is often asleep in one. */
	while (profbuf_read(fork_buf, PROFBUF_BLOCKING, &r) == 0 && !r.eof)
		;
	return NULL;
}

/*
 * The child of a fork, with the parent's writers mid-write and its reader
 * mid-read: after profbuf_after_fork() it drains, writes, closes and
 * reads to EOF.  Exit status: 0 good; 2 -EBUSY; 3 its own records not all
 * read, or fewer losses counted than records given up; 4 a parent's
 * record read after the child's; 5, 6, 7 an error from after_fork, a
 * read or write, the iterator; killed by SIGALRM (testing_fork_children()
 * arms it): no EOF.
 */
/* Walk one read of the child: count overflow and its own records. */
static int fork_child_walk(const struct profbuf_read *r, uint64_t *ovf,
			   int *mine)
{
	struct profbuf_record rec;
	struct profbuf_iter it;

	profbuf_iter_init(&it, r, 1);
	while (profbuf_iter_next(&it, &rec)) {
		if (profbuf_record_is_overflow(&rec))
			*ovf += profbuf_record_overflow_count(&rec);
		else if (rec.tag == fork_child_tag)
			++*mine;
		else if (*mine)
			return 4;
	}
	return profbuf_iter_malformed(&it) ? 7 : 0;
}

static int fork_child(void)
{
	uint64_t hdr[1] = { 2 }, ovf = 0;
	uintptr_t stk[1] = { 7 };
	struct profbuf_read r;
	int rc, mine = 0, lost;

	lost = profbuf_after_fork(fork_buf, 2);
	if (lost < 0)
		return 5;
	/* Room for ours: drain what the parent left (an empty read: done). */
	while ((rc = profbuf_read(fork_buf, PROFBUF_NONBLOCKING, &r)) == 0 &&
	       r.ntags)
		if ((rc = fork_child_walk(&r, &ovf, &mine)))
			return rc;
	if (rc)
		return rc == -EBUSY ? 2 : 6;
	for (int i = 0; i < 10; i++)
		if (profbuf_write(fork_buf, fork_child_tag, 3, hdr, 1, stk, 1))
			return 6;
	profbuf_close(fork_buf);
	while ((rc = profbuf_read(fork_buf, PROFBUF_BLOCKING, &r)) == 0 &&
	       !r.eof)
		if ((rc = fork_child_walk(&r, &ovf, &mine)))
			return rc;
	if (rc == -EBUSY)
		return 2;
	if (rc || mine != 10 || ovf < (uint64_t)lost)
		return 3;
	return 0;
}

/*
 * A hundred forks while two writers fill a small ring and a reader sleeps
 * in it: every child gets the reader role, loses only what the parent's
 * threads had reserved (counted), and reaches EOF.
 */
static void after_fork_under_load(void)
{
	pthread_t wt[2], rt;
	int bad;

	fork_buf = profbuf_new(1, 1024, 64);
	KT_REQUIRE(fork_buf);
	atomic_store_explicit(&fork_stop, 0, memory_order_relaxed);
	KT_REQUIRE(pthread_create(&rt, NULL, fork_reader_main, NULL) == 0);
	for (int i = 0; i < 2; i++)
		KT_REQUIRE(pthread_create(&wt[i], NULL, fork_writer_main,
					  NULL) == 0);
	bad = testing_fork_children(100, fork_child);
	atomic_store_explicit(&fork_stop, 1, memory_order_relaxed);
	for (int i = 0; i < 2; i++)
		pthread_join(wt[i], NULL);
	profbuf_close(fork_buf);
	pthread_join(rt, NULL);
	KT_CHECK_EQ(bad, 0);
	KT_CHECK_EQ(profbuf_after_fork(NULL, 0), -EINVAL);
	profbuf_free(fork_buf);
}

int main(void)
{
	KT_RUN(basic_write_read);
	KT_RUN(read_many);
	KT_RUN(read_many_short_data);
	KT_RUN(read_many_short_tags);
	KT_RUN(read_stops_at_tag_ring_end);
	KT_RUN(read_stops_at_rewind);
	KT_RUN(overflow_written_by_writer);
	KT_RUN(overflow_synthesized_by_reader);
	KT_RUN(overflow_at_end);
	KT_RUN(blocking_write_read);
	KT_RUN(data_wraparound);
	KT_RUN(tag_wraparound);
	KT_RUN(both_wraparound);
	KT_RUN(iter_records);
	KT_RUN(iter_overflow_records);
	KT_RUN(iter_malformed);
	KT_RUN(iter_overflow_shape);
	KT_RUN(counters_wrap);
	KT_RUN(record_ending_at_count_wrap);
	KT_RUN(record_lengths);
	KT_RUN(tag_room_across_data_wrap);
	KT_RUN(overflow_near_wrap);
	KT_RUN(wrap_random_ops);
	KT_RUN(new_errors);
	KT_RUN(write_errors);
	KT_RUN(errno_preserved);
	KT_RUN(eof_after_drain);
	KT_RUN(write_after_seal_refused);
	KT_RUN(read_timeout);
	KT_RUN(wake_watermark);
	KT_RUN(second_reader_busy);
	KT_RUN(concurrent_writers_big_ring);
	KT_RUN(concurrent_writers_tiny_ring_slow_reader);
	KT_RUN(close_under_load);
	KT_RUN(nested_sigprof_writers);
	KT_RUN(after_fork_under_load);
	return ktest_exit();
}
