// SPDX-License-Identifier: MIT
/*
 * prof/aggregate_test.c - records in, profile out: processes, images,
 * fork children, mappings, losses and records that make no sense; wall
 * samples and their repeats.
 */
#include "prof/aggregate.h"
#include "prof/stream.h"

#include "testing/ktest.h"

#include <string.h>

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

int main(void)
{
	KT_RUN(processes_and_images);
	KT_RUN(losses_and_nonsense);
	KT_RUN(in_process_has_one_space);
	KT_RUN(wall_samples_and_repeats);
	KT_RUN(unsampled_cpu);
	return ktest_exit();
}
