// SPDX-License-Identifier: MIT
/*
 * profbuf/profbuf_shared_test.c - a profbuf in memory shared by processes:
 * layout checks, writers in other processes with exact accounting, a
 * reader woken across processes, a writer killed mid-record (stepped over
 * and counted) and a writer stopped mid-record (waited for).
 */
#include <profring/profbuf.h>

#include "profbuf/profbuf_testing.h"
#include "testing/ktest.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HDR 2
#define WORDS 4096
#define TAGS 1024
#define PER_WRITER 20000

struct area {
	_Atomic uint64_t accepted[8]; /* per writer: 0 or -ENOSPC returns */
	_Atomic int park; /* the claim hook spins while this is 1 */
	_Atomic int parked;
	char pad[64];
};

static struct profbuf *child_buf;
static struct area *child_area;

static size_t ring_bytes(void)
{
	return profbuf_shared_size(HDR, WORDS, TAGS);
}

/* An anonymous shared mapping: the area, then the ring on a page. */
static void *map_shared(size_t *ring_off, size_t *total)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *m;

	*ring_off = (sizeof(struct area) + page - 1) & ~(page - 1);
	*total = *ring_off + ring_bytes();
	m = mmap(NULL, *total, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void layout_checks(void)
{
	int refused = 0;
	size_t off, total;
	char *m = map_shared(&off, &total);
	struct profbuf *b;

	KT_REQUIRE(m);
	KT_CHECK(profbuf_shared_size(0, WORDS, TAGS) == 0);
	KT_CHECK(!profbuf_shared_init(m + off, ring_bytes() - 1, HDR, WORDS,
				      TAGS));
	KT_CHECK(!profbuf_shared_init(m + off + 8, ring_bytes(), HDR, WORDS,
				      TAGS));
	KT_CHECK(!profbuf_shared_attach(m + off, ring_bytes()));
	KT_CHECK_EQ(errno, EPROTO);
	b = profbuf_shared_init(m + off, ring_bytes(), HDR, WORDS, TAGS);
	KT_REQUIRE(b);
	KT_CHECK(profbuf_shared_attach(m + off, ring_bytes()) == b);
	KT_CHECK(!profbuf_shared_attach(m + off, ring_bytes() - 8));
	KT_CHECK_EQ(errno, EINVAL);
	/*
	 * A scribbled geometry is refused: flip a bit in every header word in
	 * turn.  The magic, version, flag, sizes, offsets and total (eight
	 * words or more) must each be refused; the atomics' words (counts,
	 * flags) may change and still be a valid buffer.
	 */
	for (size_t i = 0; i < 4096 / 8; i++) {
		uint64_t *w = (uint64_t *)(m + off) + i, keep = *w;

		*w ^= 0x40;
		refused += !profbuf_shared_attach(m + off, ring_bytes());
		*w = keep;
	}
	printf("  %d of 512 header words refused when flipped\n", refused);
	KT_CHECK(refused >= 8);
	profbuf_free(b); /* frees nothing: the mapping stays usable */
	KT_CHECK(profbuf_shared_attach(m + off, ring_bytes()) == b);
	munmap(m, total);
}

/* A fresh shared buffer in child_buf, its area in child_area. */
static char *setup(size_t *off, size_t *total)
{
	char *m = map_shared(off, total);

	if (!m)
		return NULL;
	child_area = (struct area *)m;
	child_buf =
		profbuf_shared_init(m + *off, ring_bytes(), HDR, WORDS, TAGS);
	if (!child_buf) {
		munmap(m, *total);
		return NULL;
	}
	return m;
}

/* Read until EOF or @deadline_ms; count records and losses. */
static int drain(struct profbuf *b, uint64_t *records, uint64_t *lost,
		 int deadline_ms)
{
	struct profbuf_read r;
	struct profbuf_record rec;
	struct profbuf_iter it;
	int rc;

	for (int waited = 0; waited < deadline_ms; waited += 20) {
		rc = profbuf_read_timeout(b, 20000000, &r);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc)
			return rc;
		if (r.eof)
			return 0;
		profbuf_iter_init(&it, &r, HDR);
		while (profbuf_iter_next(&it, &rec)) {
			if (profbuf_record_is_overflow(&rec))
				*lost += profbuf_record_overflow_count(&rec);
			else
				(*records)++;
		}
		if (profbuf_iter_malformed(&it))
			return -EIO;
	}
	return -ETIMEDOUT;
}

static int writer_child(void)
{
	uint64_t hdr[HDR] = { 1, 0 };
	uintptr_t stk[4] = { 1, 2, 3, 4 };
	int idx = atomic_fetch_add(&child_area->parked, 1);

	hdr[1] = (uint64_t)idx + 1;
	for (int i = 0; i < PER_WRITER; i++) {
		int rc = profbuf_write(child_buf, (void *)(uintptr_t)idx, i,
				       hdr, HDR, stk, 1 + i % 4);

		if (rc == 0 || rc == -ENOSPC)
			atomic_fetch_add(&child_area->accepted[idx], 1);
	}
	return 0;
}

/* Four writer processes, the reader here: every write is accounted for. */
static void writer_processes(void)
{
	size_t off, total;
	char *m;
	uint64_t records = 0, lost = 0, accepted = 0;
	pid_t pids[4];
	int status;

	if (TESTING_UNDER_TSAN)
		KT_SKIP("TSan does not follow writes from other processes");
	m = setup(&off, &total);
	KT_REQUIRE(m);
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(writer_child());
	}
	/* read while they write; stop once all are done and drained */
	for (int done = 0; done < 4;) {
		struct profbuf_read r;
		struct profbuf_record rec;
		struct profbuf_iter it;

		if (!profbuf_read_timeout(child_buf, 10000000, &r)) {
			profbuf_iter_init(&it, &r, HDR);
			while (profbuf_iter_next(&it, &rec)) {
				if (profbuf_record_is_overflow(&rec))
					lost += profbuf_record_overflow_count(
						&rec);
				else
					records++;
			}
		}
		for (int i = 0; i < 4; i++)
			if (pids[i] &&
			    waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				KT_CHECK(WIFEXITED(status) &&
					 !WEXITSTATUS(status));
				pids[i] = 0;
				done++;
			}
	}
	profbuf_close(child_buf);
	KT_CHECK_EQ(drain(child_buf, &records, &lost, 5000), 0);
	for (int i = 0; i < 4; i++)
		accepted += atomic_load(&child_area->accepted[i]);
	printf("  read %llu + lost %llu = accepted %llu\n",
	       (unsigned long long)records, (unsigned long long)lost,
	       (unsigned long long)accepted);
	KT_CHECK_EQ(accepted, 4 * PER_WRITER);
	KT_CHECK_EQ(records + lost, accepted);
	munmap(m, total);
}

static void park(void)
{
	atomic_store(&child_area->parked, 1);
	while (atomic_load(&child_area->park))
		;
}

/* A child that claims a record and parks before committing it. */
static pid_t parked_writer(void)
{
	pid_t pid = fork();
	uint64_t hdr[HDR] = { 1, 2 };
	uintptr_t pc = 42;

	if (pid)
		return pid;
	profbuf_test_claim_hook = park;
	profbuf_write(child_buf, NULL, 1, hdr, HDR, &pc, 1);
	_exit(0);
}

static void wait_parked(void)
{
	for (int i = 0; i < 5000 && !atomic_load(&child_area->parked); i++)
		usleep(1000);
}

/* A writer killed mid-record: stepped over, counted, nothing after lost. */
static void killed_writer_is_skipped(void)
{
	uint64_t hdr[HDR] = { 1, 3 }, records = 0, lost = 0;
	uintptr_t pc = 7;
	struct profbuf_stats st;
	size_t off, total;
	char *m;
	pid_t pid;

	if (TESTING_UNDER_TSAN)
		KT_SKIP("TSan does not follow writes from other processes");
	m = setup(&off, &total);
	KT_REQUIRE(m);
	atomic_store(&child_area->park, 1);
	pid = parked_writer();
	wait_parked();
	KT_REQUIRE(atomic_load(&child_area->parked));
	/* a record behind the parked one */
	KT_CHECK_EQ(profbuf_write(child_buf, NULL, 2, hdr, HDR, &pc, 1), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	profbuf_close(child_buf);
	KT_CHECK_EQ(drain(child_buf, &records, &lost, 5000), 0);
	KT_CHECK_EQ(records, 1);
	KT_CHECK_EQ(lost, 1);
	KT_CHECK_EQ(profbuf_stats(child_buf, &st), 0);
	KT_CHECK_EQ(st.dead_skipped, 1);
	munmap(m, total);
}

/* A writer stopped mid-record is alive: waited for, never skipped. */
static void stopped_writer_is_waited_for(void)
{
	uint64_t records = 0, lost = 0;
	struct profbuf_read r;
	size_t off, total;
	char *m;
	pid_t pid;

	if (TESTING_UNDER_TSAN)
		KT_SKIP("TSan does not follow writes from other processes");
	m = setup(&off, &total);
	KT_REQUIRE(m);
	atomic_store(&child_area->park, 1);
	pid = parked_writer();
	wait_parked();
	kill(pid, SIGSTOP);
	KT_CHECK_EQ(profbuf_read_timeout(child_buf, 100000000, &r), -ETIMEDOUT);
	atomic_store(&child_area->park, 0);
	kill(pid, SIGCONT);
	waitpid(pid, NULL, 0);
	profbuf_close(child_buf);
	KT_CHECK_EQ(drain(child_buf, &records, &lost, 5000), 0);
	KT_CHECK_EQ(records, 1);
	KT_CHECK_EQ(lost, 0);
	munmap(m, total);
}

/* A blocking reader in one process is woken by a writer in another. */
static void reader_woken_across_processes(void)
{
	uint64_t hdr[HDR] = { 1, 4 };
	uintptr_t pc = 9;
	struct profbuf_read r;
	size_t off, total;
	char *m;
	pid_t pid;

	if (TESTING_UNDER_TSAN)
		KT_SKIP("TSan does not follow writes from other processes");
	m = setup(&off, &total);
	KT_REQUIRE(m);
	pid = fork();
	if (pid == 0) {
		usleep(100000); /* the parent is asleep by now */
		profbuf_write(child_buf, NULL, 1, hdr, HDR, &pc, 1);
		_exit(0);
	}
	/* blocks until the child's write wakes it (10 s bounds a bug) */
	KT_CHECK_EQ(profbuf_read_timeout(child_buf, 10000000000u, &r), 0);
	KT_CHECK_EQ(r.ntags, 1);
	waitpid(pid, NULL, 0);
	munmap(m, total);
}

static struct profbuf *thread_buf;

static void *thread_writer(void *arg)
{
	uint64_t hdr[HDR] = { 1, (uint64_t)(uintptr_t)arg };
	uintptr_t pc = 5;

	for (int i = 0; i < 5000; i++)
		profbuf_write(thread_buf, arg, i, hdr, HDR, &pc, 1);
	return NULL;
}

/* Two handles on one mapping in one process (this part runs under TSan). */
static void two_handles_one_process(void)
{
	uint64_t records = 0, lost = 0;
	struct profbuf *reader;
	size_t off, total;
	pthread_t t[2];
	char *m = map_shared(&off, &total);

	KT_REQUIRE(m);
	reader = profbuf_shared_init(m + off, ring_bytes(), HDR, WORDS, TAGS);
	KT_REQUIRE(reader);
	thread_buf = profbuf_shared_attach(m + off, ring_bytes());
	KT_REQUIRE(thread_buf);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, thread_writer,
			       (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	profbuf_close(reader);
	KT_CHECK_EQ(drain(reader, &records, &lost, 5000), 0);
	KT_CHECK_EQ(records + lost, 10000);
	munmap(m, total);
}

int main(void)
{
	KT_RUN(layout_checks);
	KT_RUN(two_handles_one_process);
	KT_RUN(writer_processes);
	KT_RUN(reader_woken_across_processes);
	KT_RUN(killed_writer_is_skipped);
	KT_RUN(stopped_writer_is_waited_for);
	return ktest_exit();
}
