// SPDX-License-Identifier: MIT
/*
 * prof/common/aggregate_test.c - records in, profile out: processes, images,
 * fork children, mappings, losses and records that make no sense; wall
 * samples and their repeats; and what a hostile program's records cost:
 * work linear in them, memory under the stated limits, what a limit
 * dropped counted.  The costs are asserted as counts (and the memory the
 * allocator holds); times are printed, never asserted.
 */
#include "prof/common/aggregate.h"
#include "prof/common/heap_agg.h"
#include "prof/wire/stream.h"

#include "testing/ktest.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING_WORDS 4096

static struct profbuf *ring(void)
{
	return profbuf_new(PROF_HDR_WORDS, RING_WORDS, RING_WORDS / 4);
}

static int put(struct profbuf *b, enum prof_rec_kind kind, uint64_t periods,
	       uint32_t pid, uint32_t tid, const uint64_t *w, size_t n)
{
	uint64_t hdr[PROF_HDR_WORDS];

	hdr[PROF_HDR_KIND_PERIODS] = prof_hdr_kind_word(kind, periods);
	hdr[PROF_HDR_TID] = tid;
	hdr[PROF_HDR_PID] = pid;
	return profbuf_write(b, NULL, 1, hdr, PROF_HDR_WORDS,
			     (const uintptr_t *)w, n);
}

static void hello(struct profbuf *b, uint32_t pid, uint32_t ppid,
		  unsigned int flags)
{
	uint64_t w[2 + 2];

	w[0] = ppid;
	w[1] = flags;
	prof_stream_pack(w + 2, "/bin/x", 6);
	KT_CHECK_EQ(put(b, PROF_REC_HELLO, 0, pid, pid, w, 3), 0);
}

static void map(struct profbuf *b, uint32_t pid, uint64_t start, uint64_t limit,
		const char *path)
{
	uint64_t w[3 + 8];

	w[0] = start;
	w[1] = limit;
	w[2] = 0;
	prof_stream_pack(w + 3, path, strlen(path));
	KT_CHECK_EQ(put(b, PROF_REC_MAP, 0, pid, pid, w,
			3 + prof_stream_words(strlen(path))),
		    0);
}

static void sample(struct profbuf *b, uint32_t pid, uint32_t tid, uint64_t pc,
		   uint64_t periods)
{
	KT_CHECK_EQ(put(b, PROF_REC_SAMPLE, periods, pid, tid, &pc, 1), 0);
}

/* Read everything written so far into @a. */
static void drain(struct profbuf *b, struct prof_agg *a)
{
	struct profbuf_read r;

	profbuf_close(b);
	for (int i = 0; i < 100; i++) {
		KT_REQUIRE(profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0);
		if (r.eof)
			break;
		KT_CHECK_EQ(prof_agg_take(a, &r), 0);
	}
}

static const struct prof_sample *find(const struct prof_profile *p,
				      uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].pid == pid && p->samples[i].tid == tid &&
		    !p->samples[i].special)
			return &p->samples[i];
	return NULL;
}

/*
 * Two processes, one of them a fork child and one exec'ing: each image is
 * its own address space, the same tid in two images two threads.
 */
static void processes_and_images(void)
{
	struct profbuf *b = ring();
	struct prof_agg_counts n;
	struct prof_profile p;
	const struct prof_sample *s;
	struct prof_agg *a;
	int err;

	KT_REQUIRE(b);
	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	hello(b, 100, 1, 0);
	map(b, 100, 0x1000, 0x2000, "/lib/a.so");
	sample(b, 100, 100, 0x1100, 2);
	sample(b, 100, 101, 0x1100, 1);
	hello(b, 200, 100, PROF_HELLO_FORKED); /* inherits a.so */
	sample(b, 200, 200, 0x1100, 1);
	hello(b, 100, 1, 0); /* exec: a new image of 100 */
	map(b, 100, 0x5000, 0x6000, "/bin/new");
	sample(b, 100, 100, 0x5100, 4);
	drain(b, a);
	prof_agg_counts(a, &n);
	KT_CHECK_EQ(n.read, 4);
	KT_CHECK_EQ(n.periods, 8);
	KT_CHECK_EQ(n.images, 3);
	KT_CHECK_EQ(n.maps, 2);
	KT_CHECK_EQ(n.threads, 4); /* 100 twice (two images), 101, 200 */
	KT_CHECK_EQ(n.pids, 2);
	KT_CHECK_EQ(n.bad, 0);
	KT_CHECK_EQ(prof_agg_profile(a, &p), 0);
	KT_CHECK_EQ(p.nspaces, 3);
	KT_CHECK_EQ(p.nsamples, 4);
	s = find(&p, 200, 200);
	KT_REQUIRE(s);
	KT_CHECK_EQ(s->npcs, 1);
	KT_CHECK_EQ(s->pcs[0], 0x1100);
	KT_CHECK(s->space != find(&p, 100, 101)->space);
	prof_agg_profile_free(&p);
	prof_agg_free(a);
	profbuf_free(b);
}

/* Overflow records become the lost count; nonsense is counted, skipped. */
static void losses_and_nonsense(void)
{
	struct profbuf *b = ring();
	struct prof_agg_counts n;
	struct prof_agg *a;
	uint64_t w[4] = { 0x2000, 0x1000, 0, 0 }; /* start > limit */
	int err;

	KT_REQUIRE(b);
	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	KT_CHECK_EQ(put(b, PROF_REC_MAP, 0, 7, 7, w, 4), 0);
	KT_CHECK_EQ(put(b, (enum prof_rec_kind)9, 0, 7, 7, w, 1), 0);
	KT_CHECK_EQ(put(b, PROF_REC_SAMPLE, 1, 0, 7, w, 1), 0); /* pid 0 */
	KT_CHECK_EQ(put(b, PROF_REC_SAMPLE, 0, 7, 7, w, 1), 0); /* 0 periods */
	KT_CHECK_EQ(put(b, PROF_REC_HELLO, 0, 7, 7, w, 1), 0); /* short */
	sample(b, 7, 7, 0x10, 1);
	drain(b, a);
	prof_agg_counts(a, &n);
	KT_CHECK_EQ(n.bad, 5);
	KT_CHECK_EQ(n.read, 1);
	KT_CHECK_EQ(n.maps, 0);
	prof_agg_free(a);
	profbuf_free(b);
}

/* In-process: one space, no pid label, whatever pid the records carry. */
static void in_process_has_one_space(void)
{
	struct profbuf *b = ring();
	struct prof_profile p;
	struct prof_agg *a;
	int err;

	KT_REQUIRE(b);
	a = prof_agg_new(true, 0, &err);
	KT_REQUIRE(a);
	sample(b, 7, 7, 0x10, 1);
	sample(b, 7, 8, 0x20, 1);
	drain(b, a);
	KT_CHECK_EQ(prof_agg_profile(a, &p), 0);
	KT_CHECK_EQ(p.nspaces, 1);
	KT_CHECK_EQ(p.nsamples, 2);
	for (size_t i = 0; i < p.nsamples; i++) {
		KT_CHECK_EQ(p.samples[i].pid, 0);
		KT_CHECK_EQ(p.samples[i].space, 0);
	}
	prof_agg_profile_free(&p);
	prof_agg_free(a);
	profbuf_free(b);
}

/* The wall-clock entry of (@tid, @pc, @state), or NULL. */
static const struct prof_sample *find_wall(const struct prof_profile *p,
					   uint32_t tid, uint64_t pc,
					   const char *state)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if (s->tid == tid && s->state && !strcmp(s->state, state) &&
		    ((!pc && s->special) ||
		     (pc && s->npcs == 1 && s->pcs[0] == pc)))
			return s;
	}
	return NULL;
}

/*
 * Wall records: a sample is counted under its stack and state; a repeat
 * adds to its thread's last wall stack (none yet: "no stack"), sleeping;
 * a state word that is neither is nonsense.
 */
static void wall_samples_and_repeats(void)
{
	struct profbuf *b = ring();
	struct prof_agg_counts n;
	const struct prof_sample *s;
	struct prof_profile p;
	struct prof_agg *a;
	uint64_t w[2];
	int err;

	KT_REQUIRE(b);
	a = prof_agg_new(true, 0, &err);
	KT_REQUIRE(a);
	w[0] = PROF_WALL_SLEEPING;
	KT_CHECK_EQ(put(b, PROF_REC_REPEAT, 2, 7, 9, w, 1), 0); /* no stack */
	w[0] = PROF_WALL_RUNNING;
	w[1] = 0x10;
	KT_CHECK_EQ(put(b, PROF_REC_WALL, 1, 7, 9, w, 2), 0);
	w[0] = PROF_WALL_SLEEPING;
	w[1] = 0x20;
	KT_CHECK_EQ(put(b, PROF_REC_WALL, 3, 7, 9, w, 2), 0);
	KT_CHECK_EQ(put(b, PROF_REC_REPEAT, 4, 7, 9, w, 1), 0);
	KT_CHECK_EQ(put(b, PROF_REC_REPEAT, 5, 7, 9, w, 1), 0);
	w[0] = 2; /* no such state */
	KT_CHECK_EQ(put(b, PROF_REC_WALL, 1, 7, 9, w, 2), 0);
	drain(b, a);
	prof_agg_counts(a, &n);
	KT_CHECK_EQ(n.bad, 1);
	KT_CHECK_EQ(n.read, 5);
	KT_CHECK_EQ(n.periods, 15);
	KT_CHECK_EQ(prof_agg_profile(a, &p), 0);
	KT_CHECK_EQ(p.nsamples, 3);
	s = find_wall(&p, 9, 0, "sleeping");
	KT_REQUIRE(s);
	KT_CHECK_EQ(s->periods, 2);
	s = find_wall(&p, 9, 0x10, "running");
	KT_REQUIRE(s);
	KT_CHECK_EQ(s->periods, 1);
	s = find_wall(&p, 9, 0x20, "sleeping");
	KT_REQUIRE(s);
	KT_CHECK_EQ(s->samples, 3);
	KT_CHECK_EQ(s->periods, 12);
	prof_agg_profile_free(&p);
	prof_agg_free(a);
	profbuf_free(b);
}

static const struct prof_sample *special(const struct prof_profile *p,
					 const char *name)
{
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].special &&
		    !strcmp(p->samples[i].special, name))
			return &p->samples[i];
	return NULL;
}

/*
 * The unsampled CPU entry: each process's whole periods of CPU less its
 * samples' periods (an exec's images counted under its pid), none for a
 * process whose samples stand for more, nor one whose CPU is unknown.
 */
static void unsampled_cpu(void)
{
	struct profbuf *b = ring();
	struct prof_profile p;
	const struct prof_sample *s;
	struct prof_agg *a;
	int err;

	KT_REQUIRE(b);
	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	hello(b, 100, 1, 0);
	sample(b, 100, 100, 0x1100, 3);
	sample(b, 100, 101, 0x1200, 2);
	hello(b, 100, 1, 0); /* exec */
	sample(b, 100, 100, 0x1300, 1);
	hello(b, 200, 100, PROF_HELLO_FORKED);
	sample(b, 200, 200, 0x1100, 9);
	hello(b, 300, 100, PROF_HELLO_FORKED);
	sample(b, 300, 300, 0x1100, 1);
	drain(b, a);
	/* No CPU known: no entry. */
	KT_CHECK_EQ(prof_agg_profile(a, &p), 0);
	KT_CHECK(!special(&p, PROF_UNSAMPLED_NAME));
	prof_agg_profile_free(&p);
	/* 100: 10.5 periods, 6 seen; 200: 8 periods, 9 seen; 300: none. */
	KT_CHECK_EQ(prof_agg_set_process_cpu(a, 100, 10500, 1000), 0);
	KT_CHECK_EQ(prof_agg_set_process_cpu(a, 200, 8000, 1000), 0);
	KT_CHECK_EQ(prof_agg_set_process_cpu(a, 300, 0, 1000), 0);
	KT_CHECK_EQ(prof_agg_profile(a, &p), 0);
	s = special(&p, PROF_UNSAMPLED_NAME);
	KT_REQUIRE(s);
	KT_CHECK_EQ(s->periods, 4);
	KT_CHECK_EQ(s->samples, 0);
	prof_agg_profile_free(&p);
	prof_agg_free(a);
	profbuf_free(b);
}

/* ---- hostile volumes: a big ring read as it fills ---- */

#define FEED_WORDS (1u << 20)

/* A ring read into @a whenever it is half full. */
struct feed {
	struct profbuf *b;
	struct prof_agg *a;
	size_t pending; /* words written since the last read */
};

static void feed_init(struct feed *f, struct prof_agg *a)
{
	f->b = profbuf_new(PROF_HDR_WORDS, FEED_WORDS, FEED_WORDS / 4);
	f->a = a;
	f->pending = 0;
	KT_REQUIRE(f->b);
}

/* Take everything committed so far. */
static void feed_flush(struct feed *f)
{
	struct profbuf_read r;

	for (;;) {
		KT_REQUIRE(profbuf_read(f->b, PROFBUF_NONBLOCKING, &r) == 0);
		if (!r.ndata || r.eof)
			break;
		KT_CHECK_EQ(prof_agg_take(f->a, &r), 0);
	}
	f->pending = 0;
}

static void feed_put(struct feed *f, enum prof_rec_kind kind, uint64_t periods,
		     uint64_t pid, uint64_t tid, const uint64_t *w, size_t n)
{
	uint64_t hdr[PROF_HDR_WORDS];

	if (f->pending + n + 2 + PROF_HDR_WORDS > FEED_WORDS / 4)
		feed_flush(f);
	hdr[PROF_HDR_KIND_PERIODS] = prof_hdr_kind_word(kind, periods);
	hdr[PROF_HDR_TID] = tid;
	hdr[PROF_HDR_PID] = pid;
	KT_CHECK_EQ(profbuf_write(f->b, NULL, 1, hdr, PROF_HDR_WORDS,
				  (const uintptr_t *)w, n),
		    0);
	f->pending += n + 2 + PROF_HDR_WORDS;
}

static void feed_end(struct feed *f)
{
	feed_flush(f);
	drain(f->b, f->a);
	profbuf_free(f->b);
}

static void feed_hello(struct feed *f, uint32_t pid, uint32_t ppid,
		       unsigned int flags)
{
	uint64_t w[2 + 1];

	w[0] = ppid;
	w[1] = flags;
	prof_stream_pack(w + 2, "/bin/x", 6);
	feed_put(f, PROF_REC_HELLO, 0, pid, pid, w, 3);
}

/* A MAP of @path (@len bytes) at [@start, @start + 0x1000). */
static void feed_map(struct feed *f, uint32_t pid, uint64_t start,
		     const char *path, size_t len)
{
	static uint64_t w[3 + (1 << 18) + 1];

	w[0] = start;
	w[1] = start + 0x1000;
	w[2] = 0;
	prof_stream_pack(w + 3, path, len);
	feed_put(f, PROF_REC_MAP, 0, pid, pid, w, 3 + prof_stream_words(len));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Bytes the allocator holds for the program (0 where it cannot say). */
static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

/*
 * Every HELLO of a new pid adds an address space; counting the processes
 * walked every pair of them (320k HELLOs: 23 s a count, so these 100
 * counts ran past the test runner's 10 minutes).  They are counted as they
 * come now (the time is printed).  The profile makes a symbolizer only
 * for the images with samples and the main one, not for the 320k.
 */
static void many_processes_counted_as_they_come(void)
{
	const uint32_t n = 320000;
	struct prof_agg_counts c;
	struct prof_profile p;
	struct prof_agg *a;
	struct feed f;
	uint64_t pc = 0x1000;
	size_t nsyms = 0;
	double t0;
	int err;

	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	feed_init(&f, a);
	t0 = now_s();
	for (uint32_t pid = 1; pid <= n; pid++)
		feed_hello(&f, pid, 1, 0);
	feed_put(&f, PROF_REC_SAMPLE, 1, 7, 7, &pc, 1);
	feed_end(&f);
	for (int i = 0; i < 100; i++)
		prof_agg_counts(a, &c);
	printf("# %u HELLOs taken and counted 100 times: %.2f s\n", n,
	       now_s() - t0);
	KT_CHECK_EQ(c.pids, n);
	KT_CHECK_EQ(c.images, n);
	KT_CHECK_EQ(c.images_dropped, 0);
	KT_CHECK_EQ(c.bad, 0);
	KT_CHECK_EQ(c.read, 1);
	t0 = now_s();
	KT_CHECK_EQ(prof_agg_profile(a, &p), 0);
	printf("# their profile: %.2f s\n", now_s() - t0);
	KT_CHECK_EQ(p.nspaces, n);
	for (size_t i = 0; i < p.nspaces; i++)
		nsyms += p.spaces[i] != NULL;
	KT_CHECK_EQ(nsyms, 2); /* pid 7's image, and the first process's */
	KT_CHECK(p.spaces[0] && p.spaces[6]);
	prof_agg_profile_free(&p);
	prof_agg_free(a);
}

static void feed_alloc(struct feed *f, uint32_t pid, uint64_t addr,
		       uint64_t size)
{
	uint64_t w[PROF_ALLOC_WORDS + 1] = { addr, size, 0, 0x4000 };

	feed_put(f, PROF_REC_ALLOC, 1, pid, pid, w, PROF_ALLOC_WORDS + 1);
}

/* The heap profile's in-use objects of @pid's sites (raw: rate 1). */
static uint64_t inuse_of(struct prof_agg *a, uint32_t pid)
{
	struct prof_profile p;
	uint64_t n = 0;

	KT_CHECK_EQ(prof_agg_heap_profile(a, 1, NULL, &p), 0);
	for (size_t i = 0; i < p.nsamples; i++)
		if (!p.samples[i].special && p.samples[i].pid == pid)
			n += p.samples[i].heap[PROF_HEAP_INUSE_OBJECTS];
	prof_agg_profile_free(&p);
	prof_agg_forget_symbols(a);
	return n;
}

/*
 * An exec retires the blocks its image had live, and only those: the
 * other process's stay in use, a block freed before is not counted again.
 * It used to walk every live block of every process (500k blocks, 4,000
 * execs: 27 s here, so these 200,000 ran past the test runner's 10
 * minutes); it is constant time now (printed).
 */
static void exec_retires_blocks_without_a_walk(void)
{
	const uint32_t nblocks = 500000, nexecs = 200000;
	struct prof_heap_counts hc;
	struct prof_agg *a;
	struct feed f;
	uint64_t addr[1] = { 0 };
	double t0;
	int err;

	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	feed_init(&f, a);
	feed_hello(&f, 100, 1, 0);
	feed_hello(&f, 200, 1, 0);
	feed_alloc(&f, 200, 0x10000, 64); /* another process's: stays */
	feed_alloc(&f, 100, 0x10000, 32);
	addr[0] = 0x10000;
	feed_put(&f, PROF_REC_FREE, 1, 100, 100, addr, 1); /* freed: not gone */
	for (uint32_t i = 0; i < nblocks; i++)
		feed_alloc(&f, 100, 0x100000 + 16 * (uint64_t)i, 16);
	feed_end(&f);
	KT_CHECK_EQ(inuse_of(a, 100), nblocks);
	feed_init(&f, a);
	t0 = now_s();
	for (uint32_t i = 0; i < nexecs; i++)
		feed_hello(&f, 100, 1, 0); /* exec after exec */
	feed_end(&f);
	printf("# %u execs over %u live blocks: %.3f s\n", nexecs, nblocks,
	       now_s() - t0);
	t0 = now_s();
	prof_agg_heap_counts(a, &hc);
	KT_CHECK_EQ(inuse_of(a, 100), 0);
	printf("# heap profile of %u spaces: %.3f s\n", nexecs + 2,
	       now_s() - t0);
	KT_CHECK_EQ(hc.allocs, nblocks + 2);
	KT_CHECK_EQ(hc.frees, 1);
	KT_CHECK_EQ(hc.exec_gone, nblocks);
	KT_CHECK_EQ(inuse_of(a, 100), 0);
	KT_CHECK_EQ(inuse_of(a, 200), 1);
	/* the new image's own blocks are in use, its frees matched */
	feed_init(&f, a);
	feed_alloc(&f, 100, 0x100000, 16);
	feed_alloc(&f, 100, 0x100010, 16);
	addr[0] = 0x100000;
	feed_put(&f, PROF_REC_FREE, 1, 100, 100, addr, 1);
	feed_end(&f);
	prof_agg_heap_counts(a, &hc);
	KT_CHECK_EQ(hc.frees, 2);
	KT_CHECK_EQ(hc.replaced, 0);
	KT_CHECK_EQ(inuse_of(a, 100), 1);
	prof_agg_free(a);
}

static char *long_path(size_t len, char c)
{
	char *p = malloc(len + 1);

	if (!p)
		abort();
	memset(p, c, len);
	p[0] = '/';
	p[len] = 0;
	return p;
}

/*
 * Fork children share their parent's mapping paths, never copy them: ten
 * mappings of the longest path an agent writes and forty fork children
 * hold the paths once (the allocator's figure), while the memory they
 * stand for (map_bytes: each image's symbolizer copies its own) is
 * counted whole.  A path longer than any agent writes (2 MB: 916 MB of
 * copies with forty children) is a bad record.
 */
static void fork_children_share_mapping_paths(void)
{
	const size_t len = PROF_AGG_PATH_MAX - 1;
	const uint64_t each = PROF_AGG_MAP_COST + len + 1;
	struct prof_agg_counts c;
	struct prof_agg *a;
	struct feed f;
	size_t before, held;
	char *path = long_path(2 << 20, 'a');
	int err;

	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	before = heap_in_use();
	feed_init(&f, a);
	feed_hello(&f, 100, 1, 0);
	for (int i = 0; i < 10; i++) {
		path[len - 1] = (char)('0' + i);
		feed_map(&f, 100, 0x100000 * (uint64_t)(i + 1), path, len);
	}
	for (uint32_t pid = 101; pid <= 140; pid++)
		feed_hello(&f, pid, 100, PROF_HELLO_FORKED);
	feed_end(&f);
	held = heap_in_use() - before;
	printf("# 10 mappings of %zu-byte paths, 40 fork children: %zu bytes "
	       "held, %zu counted\n",
	       len, held, (size_t)(41 * 10 * each));
	prof_agg_counts(a, &c);
	KT_CHECK_EQ(c.maps, 10);
	KT_CHECK_EQ(c.maps_dropped, 0);
	KT_CHECK_EQ(c.map_bytes, 41 * 10 * each);
	KT_CHECK_EQ(c.bad, 0);
	/* ten paths held once, not 41 times (1.7 MB) */
	KT_CHECK(held < 41 * 10 * len / 4);
	prof_agg_free(a);

	/* paths no agent writes: 2 MB, or one byte over the limit */
	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	feed_init(&f, a);
	feed_hello(&f, 100, 1, 0);
	feed_map(&f, 100, 0x100000, path, 2 << 20);
	feed_map(&f, 100, 0x200000, path, PROF_AGG_PATH_MAX);
	feed_map(&f, 100, 0x300000, path, PROF_AGG_PATH_MAX - 1); /* fits */
	feed_end(&f);
	prof_agg_counts(a, &c);
	KT_CHECK_EQ(c.bad, 2);
	KT_CHECK_EQ(c.maps, 1);
	prof_agg_free(a);
	free(path);
}

/*
 * The mappings' memory has a limit: fork children of a process with one
 * long mapping (each child's copy counted whole) fill it, and then inherit
 * nothing, counted dropped; the memory counted never passes the limit.
 * A process's own mappings past the limit per image are dropped too.
 */
static void mapping_memory_is_capped(void)
{
	const size_t len = PROF_AGG_PATH_MAX - 1;
	const uint64_t each = PROF_AGG_MAP_COST + len + 1;
	const uint64_t fit = PROF_AGG_MAP_BYTES_MAX / each;
	const uint32_t children = (uint32_t)fit + 1000;
	struct prof_agg_limits lim;
	struct prof_agg_counts c;
	struct prof_agg *a;
	struct feed f;
	char *path = long_path(len, 'b');
	char name[32];
	int err;

	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	feed_init(&f, a);
	feed_hello(&f, 1, 1, 0);
	feed_map(&f, 1, 0x100000, path, len);
	for (uint32_t pid = 2; pid < 2 + children; pid++)
		feed_hello(&f, pid, 1, PROF_HELLO_FORKED);
	feed_end(&f);
	prof_agg_counts(a, &c);
	printf("# %u fork children: mappings counted %llu bytes, dropped %llu\n",
	       children, (unsigned long long)c.map_bytes,
	       (unsigned long long)c.maps_dropped);
	KT_CHECK(c.map_bytes <= PROF_AGG_MAP_BYTES_MAX);
	KT_CHECK_EQ(c.map_bytes, fit * each);
	KT_CHECK_EQ(c.maps_dropped, children + 1 - fit);
	KT_CHECK_EQ(c.images, children + 1);
	prof_agg_free(a);
	free(path);

	/* four mappings an image; more are dropped, inherited ones too */
	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	lim = (struct prof_agg_limits){ .spaces = 100,
					.threads = 100,
					.space_maps = 4,
					.map_bytes = 1 << 20 };
	prof_agg_set_limits(a, &lim);
	feed_init(&f, a);
	feed_hello(&f, 1, 1, 0);
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "/lib/%d.so", i);
		feed_map(&f, 1, 0x100000 * (uint64_t)(i + 1), name,
			 strlen(name));
	}
	feed_hello(&f, 2, 1, PROF_HELLO_FORKED);
	feed_map(&f, 2, 0x900000, "/lib/child.so", 13);
	feed_end(&f);
	prof_agg_counts(a, &c);
	KT_CHECK_EQ(c.maps, 7);
	KT_CHECK_EQ(c.maps_dropped, 3); /* two of 1's, the child's own */
	prof_agg_free(a);
}

/*
 * The limits of address spaces and threads: an image past the limit gets
 * none and its records are dropped (not given to the pid's image before
 * an exec), counted; the processes and threads within are whole.
 */
static void spaces_and_threads_are_capped(void)
{
	struct prof_agg_limits lim = { .spaces = 10,
				       .threads = 12,
				       .space_maps = 16,
				       .map_bytes = 1 << 20 };
	struct prof_agg_counts c;
	struct prof_profile p;
	struct prof_agg *a;
	struct feed f;
	uint64_t pc = 0x1000;
	int err;

	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	prof_agg_set_limits(a, &lim);
	feed_init(&f, a);
	for (uint32_t pid = 1; pid <= 15; pid++) {
		feed_hello(&f, pid, 1, 0);
		feed_put(&f, PROF_REC_SAMPLE, 1, pid, pid, &pc, 1);
	}
	feed_hello(&f, 1, 1, 0); /* an exec past the limit */
	feed_put(&f, PROF_REC_SAMPLE, 1, 1, 1, &pc, 1);
	for (uint32_t tid = 100; tid < 105; tid++) /* 2 more threads fit */
		feed_put(&f, PROF_REC_SAMPLE, 1, 2, tid, &pc, 1);
	feed_end(&f);
	prof_agg_counts(a, &c);
	KT_CHECK_EQ(c.images, 16);
	KT_CHECK_EQ(c.images_dropped, 6);
	KT_CHECK_EQ(c.pids, 10);
	KT_CHECK_EQ(c.read, 12);
	KT_CHECK_EQ(c.threads, 12);
	KT_CHECK_EQ(c.dropped, 5 + 1 + 3);
	KT_CHECK_EQ(c.bad, 0);
	KT_CHECK_EQ(prof_agg_profile(a, &p), 0);
	KT_CHECK_EQ(p.nspaces, 10);
	KT_CHECK_EQ(p.nsamples, 12);
	prof_agg_profile_free(&p);
	prof_agg_free(a);
}

/*
 * Every count, length and index a record holds is checked: a path with
 * no NUL or past PROF_AGG_PATH_MAX, unknown HELLO flags, more frames than
 * a sample has, more periods than PROF_AGG_PERIODS_MAX, a pid or tid
 * word past 31 bits (once cut to 32 bits and taken) are bad records.
 */
static void record_fields_are_bounded(void)
{
	static uint64_t w[2 + PROFRING_PROF_MAX_FRAMES + 600];
	struct prof_agg_counts c;
	struct prof_agg *a;
	struct feed f;
	int err, bad = 0;

	a = prof_agg_new(false, 0, &err);
	KT_REQUIRE(a);
	feed_init(&f, a);
	feed_hello(&f, 5, 1, 0);
	/* HELLO: unknown flags; a path without its NUL; a path too long */
	w[0] = 1;
	w[1] = 2;
	prof_stream_pack(w + 2, "/bin/x", 6);
	feed_put(&f, PROF_REC_HELLO, 0, 5, 5, w, 3), bad++;
	w[1] = 0;
	memset(w + 2, 'x', 8);
	feed_put(&f, PROF_REC_HELLO, 0, 5, 5, w, 3), bad++;
	memset(w + 2, 'x', 8 * 600);
	w[2 + 599] = 0;
	feed_put(&f, PROF_REC_HELLO, 0, 5, 5, w, 2 + 600), bad++;
	/* MAP: a path without its NUL */
	w[0] = 0x1000;
	w[1] = 0x2000;
	w[2] = 0;
	memset(w + 3, 'y', 16);
	feed_put(&f, PROF_REC_MAP, 0, 5, 5, w, 5), bad++;
	/* samples: one frame too many; periods past the limit; pid, tid */
	for (size_t i = 0; i < PROFRING_PROF_MAX_FRAMES + 2; i++)
		w[i] = 0x1000 + i;
	feed_put(&f, PROF_REC_SAMPLE, 1, 5, 5, w, PROFRING_PROF_MAX_FRAMES);
	feed_put(&f, PROF_REC_SAMPLE, 1, 5, 5, w, PROFRING_PROF_MAX_FRAMES + 1),
		bad++;
	w[0] = PROF_WALL_RUNNING;
	feed_put(&f, PROF_REC_WALL, 1, 5, 5, w, PROFRING_PROF_MAX_FRAMES + 2),
		bad++;
	feed_put(&f, PROF_REC_SAMPLE, PROF_AGG_PERIODS_MAX, 5, 5, w + 1, 1);
	feed_put(&f, PROF_REC_SAMPLE, PROF_AGG_PERIODS_MAX + 1, 5, 5, w + 1, 1),
		bad++;
	feed_put(&f, PROF_REC_SAMPLE, 1, (UINT64_C(1) << 32) + 5, 5, w + 1, 1),
		bad++;
	feed_put(&f, PROF_REC_SAMPLE, 1, 5, (UINT64_C(1) << 32) + 5, w + 1, 1),
		bad++;
	feed_end(&f);
	prof_agg_counts(a, &c);
	KT_CHECK_EQ(c.bad, (uint64_t)bad);
	KT_CHECK_EQ(c.read, 2);
	KT_CHECK_EQ(c.images, 1);
	KT_CHECK_EQ(c.maps, 0);
	prof_agg_free(a);
}

int main(void)
{
	KT_RUN(processes_and_images);
	KT_RUN(losses_and_nonsense);
	KT_RUN(in_process_has_one_space);
	KT_RUN(wall_samples_and_repeats);
	KT_RUN(unsampled_cpu);
	KT_RUN(many_processes_counted_as_they_come);
	KT_RUN(exec_retires_blocks_without_a_walk);
	KT_RUN(fork_children_share_mapping_paths);
	KT_RUN(mapping_memory_is_capped);
	KT_RUN(spaces_and_threads_are_capped);
	KT_RUN(record_fields_are_bounded);
	return ktest_exit();
}
