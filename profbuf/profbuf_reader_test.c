// SPDX-License-Identifier: MIT
/*
 * profbuf/profbuf_reader_test.c - the guarded reader
 * (profbuf_reader_attach()) against memory its writers scribble on: the
 * geometry and the reader's state forged in the block change nothing,
 * forged indices and lengths end the reading with -EIO after what was
 * read before, a dead writer's records forged all over the ring do not
 * hold a read past its deadline, and random scribbles never crash it.
 */
#include <profring/profbuf.h>

#include "profbuf/profbuf_impl.h"
#include "testing/ktest.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HDR 2
#define WORDS 4096
#define TAGS 1024

struct fixture {
	void *mem;
	size_t size;
	struct profbuf *b; /* the writers' handle */
	struct profbuf_reader *rd;
};

static int setup(struct fixture *f)
{
	f->size = profbuf_shared_size(HDR, WORDS, TAGS);
	f->mem = mmap(NULL, f->size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f->mem == MAP_FAILED)
		return -1;
	f->b = profbuf_shared_init(f->mem, f->size, HDR, WORDS, TAGS);
	f->rd = profbuf_reader_attach(f->mem, f->size);
	return f->b && f->rd ? 0 : -1;
}

static void teardown(struct fixture *f)
{
	profbuf_reader_free(f->rd);
	munmap(f->mem, f->size);
}

static int write_one(struct fixture *f, uint64_t pc)
{
	uint64_t hdr[HDR] = { 7, 8 };

	return profbuf_write(f->b, (const void *)(uintptr_t)1, 100, hdr, HDR,
			     &pc, 1);
}

/* Records in one read (each checked: length 2 + HDR + 1). */
static int records_in(const struct profbuf_read *r)
{
	struct profbuf_iter it;
	struct profbuf_record rec;
	int n = 0;

	profbuf_iter_init(&it, r, HDR);
	while (profbuf_iter_next(&it, &rec))
		n++;
	return profbuf_iter_malformed(&it) ? -1 : n;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void attach_checks(void)
{
	struct fixture f;

	KT_REQUIRE(!setup(&f));
	KT_CHECK(!profbuf_reader_attach(f.mem, f.size - 8));
	KT_CHECK_EQ(errno, EINVAL);
	f.b->data_off = (uint64_t)1 << 40;
	KT_CHECK(!profbuf_reader_attach(f.mem, f.size));
	KT_CHECK_EQ(errno, EINVAL);
	teardown(&f);
}

/*
 * The reader's state forged in the block (EOF returned, a read in
 * progress, positions): the guarded reader keeps its own, and reads on.
 */
static void forged_reader_state(void)
{
	struct profbuf_read r;
	struct fixture f;

	KT_REQUIRE(!setup(&f));
	KT_REQUIRE(write_one(&f, 42) == 0);
	f.b->rs.eof_returned = true;
	f.b->rs.r_next = 12345;
	f.b->rs.r_given = 999;
	atomic_store(&f.b->reading, 1);
	KT_CHECK_EQ(profbuf_reader_read(f.rd, 10000000, &r), 0);
	KT_REQUIRE(r.ntags == 1);
	KT_CHECK_EQ(records_in(&r), 1);
	KT_CHECK_EQ(r.data[2 + HDR], 42);
	/* The run is the reader's copy, not the block's words. */
	KT_CHECK(r.data < (uint64_t *)f.mem ||
		 r.data >= (uint64_t *)((char *)f.mem + f.size));
	teardown(&f);
}

/*
 * The geometry overwritten after one commit (data_off = 2^40, as the
 * issue's store): the run read before stays, the next read is -EIO, never
 * a fault, and the stats say why.
 */
static void forged_geometry(void)
{
	struct profbuf_reader_stats st;
	struct profbuf_read r;
	struct fixture f;

	KT_REQUIRE(!setup(&f));
	KT_REQUIRE(write_one(&f, 42) == 0);
	KT_CHECK_EQ(profbuf_reader_read(f.rd, 10000000, &r), 0);
	KT_REQUIRE(r.ntags == 1);
	KT_CHECK_EQ(r.data[2 + HDR], 42);
	f.b->data_off = (uint64_t)1 << 40;
	f.b->ovf_rec_off = (uint64_t)1 << 42;
	KT_CHECK_EQ(profbuf_reader_read(f.rd, 10000000, &r), -EIO);
	KT_CHECK_EQ(r.ndata, 0);
	KT_CHECK_EQ(profbuf_reader_stats(f.rd, &st), 0);
	KT_CHECK(st.corrupt && strstr(st.corrupt, "geometry"));
	teardown(&f);
}

/* A forged write index ends the reading after what was read. */
static void forged_write_index(void)
{
	struct profbuf_reader_stats st;
	struct profbuf_read r;
	struct fixture f;

	KT_REQUIRE(!setup(&f));
	KT_REQUIRE(write_one(&f, 1) == 0);
	KT_CHECK_EQ(profbuf_reader_read(f.rd, 10000000, &r), 0);
	KT_CHECK_EQ(r.ntags, 1);
	/* Every tag slot reserved 2^29 - 1 times over. */
	atomic_store(&f.b->w, ring_pindex_make(0, PB_SEAL_DISTANCE - 1));
	KT_CHECK_EQ(profbuf_reader_read(f.rd, 10000000, &r), -EIO);
	KT_CHECK_EQ(r.ntags, 0);
	KT_CHECK_EQ(profbuf_reader_read(f.rd, 10000000, &r), -EIO);
	KT_CHECK_EQ(profbuf_reader_stats(f.rd, &st), 0);
	KT_CHECK(st.corrupt != NULL);
	teardown(&f);
}

/* A committed record whose length is out of range: -EIO, sticky. */
static void forged_length(void)
{
	struct profbuf_reader_stats st;
	struct profbuf_read r;
	struct fixture f;
	uint64_t *data;

	KT_REQUIRE(!setup(&f));
	data = (uint64_t *)((char *)f.mem + f.b->data_off);
	KT_REQUIRE(write_one(&f, 1) == 0);
	KT_REQUIRE(write_one(&f, 2) == 0);
	data[5] = 1u << 20; /* the second record's length */
	KT_CHECK_EQ(profbuf_reader_read(f.rd, 10000000, &r), -EIO);
	KT_CHECK_EQ(profbuf_reader_stats(f.rd, &st), 0);
	KT_CHECK(st.corrupt != NULL);
	teardown(&f);
}

/*
 * A forged overflow record's place does not move ours, and a dead
 * writer's stamp on every reserved slot, with BUSY held by a live
 * process, does not hold a read past its deadline.
 */
static void dead_writers_forged_everywhere(void)
{
	struct profbuf_read r;
	struct fixture f;
	_Atomic uint32_t *stamps;
	uint64_t *data, t0;
	int rc;

	KT_REQUIRE(!setup(&f));
	stamps = (_Atomic uint32_t *)((char *)f.mem + f.b->stamps_off);
	data = (uint64_t *)((char *)f.mem + f.b->data_off);
	/* 819 records of 5 words, each "reserved" by thread 2^31 - 2. */
	for (uint32_t i = 0; i < WORDS / 5; i++) {
		data[i * 5] = 5;
		atomic_store(&stamps[i], PB_STAMP_OWNER | 0x7ffffffe);
	}
	atomic_store(&f.b->w, ring_pindex_make(WORDS / 5 * 5, WORDS / 5));
	atomic_store(&f.b->busy_owner, PB_STAMP_OWNER | 1);
	atomic_store(&f.b->ovf, OVF_BUSY | 3);
	t0 = mono_ms();
	for (int i = 0; i < 5; i++) {
		rc = profbuf_reader_read(f.rd, 50000000, &r);
		KT_CHECK(rc == 0 || rc == -ETIMEDOUT);
	}
	/* Five reads of 50 ms: a wide bound, for a loaded machine. */
	printf("  5 reads of 50 ms took %llu ms\n",
	       (unsigned long long)(mono_ms() - t0));
	teardown(&f);
}

/*
 * Random scribbles over the whole block between reads: no
 * read crashes, every read ends, and once -EIO is returned it stays.
 */
static void random_scribbles(void)
{
	unsigned seed = 12345;
	int eio = 0, reads = 0;

	for (int round = 0; round < 200; round++) {
		struct profbuf_read r;
		struct fixture f;
		uint64_t *w;
		bool broken = false;

		KT_REQUIRE(!setup(&f));
		w = f.mem;
		/* Writers trust the block: they write before the scribbles. */
		for (int k = 0; k < 100; k++)
			write_one(&f, (uint64_t)k);
		for (int step = 0; step < 20; step++) {
			for (int k = 0; k < 4; k++) {
				size_t i = (size_t)rand_r(&seed) % (f.size / 8);
				w[i] = rand_r(&seed) % 3 == 0
					       ? ~(uint64_t)0
					       : (uint64_t)rand_r(&seed)
							 << (rand_r(&seed) %
							     40);
			}
			int rc = profbuf_reader_read(f.rd, 1000000, &r);

			reads++;
			if (rc == -EIO) {
				eio++;
				broken = true;
			} else {
				KT_CHECK(!broken);
				KT_CHECK(rc == 0 || rc == -ETIMEDOUT);
				if (rc == 0 && r.ndata)
					KT_CHECK(records_in(&r) >= 0);
			}
		}
		teardown(&f);
	}
	printf("  %d reads, %d found the ring corrupted\n", reads, eio);
}

int main(void)
{
	KT_RUN(attach_checks);
	KT_RUN(forged_reader_state);
	KT_RUN(forged_geometry);
	KT_RUN(forged_write_index);
	KT_RUN(forged_length);
	KT_RUN(dead_writers_forged_everywhere);
	KT_RUN(random_scribbles);
	return ktest_exit();
}
