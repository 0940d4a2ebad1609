// SPDX-License-Identifier: MIT
/*
 * prof/e2e/scribble.c - a program whose wild writes land in the
 * profiler's shared memory, for prof/e2e/scribble_test.sh.
 *
 *	scribble MODE [SEED]
 *
 * Under `profring-prof record` it maps the memfd that PROFRING_PROF_SHM
 * names (as a buggy program's stray pointer could reach it) and, after
 * burning 300 ms of CPU so that samples are in the ring, overwrites it:
 *   ff        every byte of the mapping set to 0xff
 *   random    random whole words all over the mapping for 1.5 s, while
 *             it burns (SEED picks the words)
 *   dataoff   the ring's data_off set to 2^40
 *   state     every word of the ring's reader state set to 1 (EOF
 *             returned, reading, positions)
 *   truncate  ftruncate(fd, 0) on the memfd (the pages under the
 *             launcher's mapping)
 *   dead      every tag slot stamped by a dead thread, the write index
 *             2^29 - 1 records ahead, the overflow BUSY bit held by pid 1
 *   counters  every counter slot set to huge numbers
 * then burns 200 ms more, prints "scribble MODE: done" and exits 7: the
 * line and the status are what the launcher must leave unchanged, and it
 * must write a profile of what it read before the scribbles, in bounded
 * time.  Run plainly (no PROFRING_PROF_SHM) it only burns.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "prof/wire/shm.h"
#include "profbuf/profbuf_impl.h"

static volatile uint64_t sink;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static __attribute__((noinline)) void burn(uint64_t ms)
{
	uint64_t end = mono_ms() + ms;

	while (mono_ms() < end)
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t)i * sink + 1;
}

static uint64_t next_word(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random words at random places while burning, for @ms. */
static void scribble_random(uint64_t *w, size_t nwords, uint64_t seed,
			    uint64_t ms)
{
	uint64_t end = mono_ms() + ms, s = seed | 1;

	while (mono_ms() < end) {
		for (int i = 0; i < 64; i++) {
			uint64_t v = next_word(&s);

			switch (v & 3) {
			case 0:
				v = ~(uint64_t)0;
				break;
			case 1:
				v >>= 40; /* small: lengths, counts */
				break;
			default:
				break;
			}
			w[next_word(&s) % nwords] = v;
		}
		burn(1);
	}
}

static void scribble(const char *mode, int fd, uint64_t seed)
{
	struct stat st;
	struct prof_shm *h;
	struct profbuf *b;
	size_t size;
	char *m;

	if (fstat(fd, &st))
		return;
	size = (size_t)st.st_size;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return;
	h = (struct prof_shm *)m;
	b = (struct profbuf *)(m + h->ring_offset);
	if (!strcmp(mode, "ff")) {
		memset(m, 0xff, size);
	} else if (!strcmp(mode, "random")) {
		scribble_random((uint64_t *)m, size / 8, seed, 1500);
	} else if (!strcmp(mode, "dataoff")) {
		b->data_off = (uint64_t)1 << 40;
	} else if (!strcmp(mode, "state")) {
		char *from = (char *)&b->reading;

		memset(from, 1, sizeof(*b) - (size_t)(from - (char *)b));
	} else if (!strcmp(mode, "truncate")) {
		if (ftruncate(fd, 0) == 0)
			fprintf(stderr, "scribble: the memfd was truncated\n");
	} else if (!strcmp(mode, "dead")) {
		_Atomic uint32_t *stamps =
			(_Atomic uint32_t *)((char *)b + b->stamps_off);

		for (uint32_t i = 0; i < b->tag_len; i++)
			stamps[i] = PB_STAMP_OWNER | 0x7ffffffe;
		b->busy_owner = PB_STAMP_OWNER | 1;
		b->ovf |= OVF_BUSY;
		b->w = ring_pindex_make(0, PB_SEAL_DISTANCE - 1);
	} else if (!strcmp(mode, "counters")) {
		for (uint32_t i = 0; i < PROF_SHM_SLOTS; i++)
			memset(&h->slots[i].ctr, 0xc9, sizeof(h->slots[i].ctr));
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv(PROF_SHM_ENV);
	const char *mode = argc > 1 ? argv[1] : "ff";
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	int fd;

	burn(300);
	if (env && sscanf(env, "%d:", &fd) == 1)
		scribble(mode, fd, seed);
	burn(200);
	printf("scribble %s: done\n", mode);
	return 7;
}
