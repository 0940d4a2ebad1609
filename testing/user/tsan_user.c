// SPDX-License-Identifier: MIT
/*
 * tsan_user.c - a profiler author's program, built as a user builds it
 * (the installed headers, pkg-config): writer threads hand plain data
 * (a malloc'd block filled with ordinary stores) to a reader thread
 * through profbuf records, stack ids through stacktab, and events through
 * tracebuf.  testing/tsan_user_test.sh builds it with -fsanitize=thread
 * against profring-tsan: ThreadSanitizer must report nothing.
 */
#include <profring/profbuf.h>
#include <profring/stacktab.h>
#include <profring/tracebuf.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITERS 3
#define PER_WRITER 2000

struct block {
	uint64_t value;
	uint64_t sum;
};

static struct profbuf *buf;
static struct stacktab *tab;
static struct tracebuf *tr;
static unsigned long long got, bad;

static void *writer_main(void *arg)
{
	uint64_t w = (uint64_t)(uintptr_t)arg;

	for (uint64_t i = 0; i < PER_WRITER; i++) {
		struct block *b = malloc(sizeof(*b));
		uintptr_t pcs[3] = { 0x1000 + w, 0x2000 + i % 16, 0x3000 };
		uint64_t hdr[2], args[2];

		if (!b)
			abort();
		b->value = w << 32 | i; /* plain stores, handed over below */
		b->sum = b->value * 3;
		hdr[0] = (uint64_t)(uintptr_t)b;
		hdr[1] = stacktab_put_ref(tab, pcs, 3);
		while (profbuf_write(buf, NULL, (int64_t)i, hdr, 2, pcs, 3))
			; /* full: wait for the reader */
		args[0] = w;
		args[1] = i;
		tracebuf_emit(tr, TRACEBUF_EV_USER, args, 2);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct profbuf_read r;

	(void)arg;
	while (profbuf_read(buf, PROFBUF_BLOCKING, &r) == 0 && !r.eof) {
		struct profbuf_iter it;
		struct profbuf_record rec;

		profbuf_iter_init(&it, &r, 2);
		while (profbuf_iter_next(&it, &rec)) {
			struct block *b;
			uintptr_t pcs[8];

			if (profbuf_record_is_overflow(&rec))
				continue;
			b = (struct block *)(uintptr_t)rec.hdr[0];
			bad += b->sum != b->value * 3;
			bad += stacktab_get_ref(tab, rec.hdr[1], pcs, 8) != 3;
			free(b);
			got++;
		}
	}
	return NULL;
}

static void *trace_reader_main(void *arg)
{
	struct tracebuf_chunk c;
	size_t *bytes = arg;

	while (tracebuf_read(tr, PROFBUF_BLOCKING, &c) == 0 && !c.eof)
		*bytes += c.len;
	return NULL;
}

int main(void)
{
	pthread_t w[WRITERS], rd, trd;
	size_t trace_bytes = 0;

	buf = profbuf_new(2, 1 << 12, 64);
	tab = stacktab_new(1 << 20, 1024);
	tr = tracebuf_new(NULL);
	if (!buf || !tab || !tr || tracebuf_start(tr))
		return 1;
	pthread_create(&rd, NULL, reader_main, NULL);
	pthread_create(&trd, NULL, trace_reader_main, &trace_bytes);
	for (int i = 0; i < WRITERS; i++)
		pthread_create(&w[i], NULL, writer_main, (void *)(uintptr_t)i);
	/* One reset: every reference a record carries still resolves. */
	stacktab_reset(tab, NULL, NULL);
	for (int i = 0; i < 5; i++)
		tracebuf_advance(tr);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	profbuf_close(buf);
	pthread_join(rd, NULL);
	tracebuf_stop(tr);
	pthread_join(trd, NULL);
	printf("records %llu of %d, bad %llu, trace bytes %zu\n", got,
	       WRITERS * PER_WRITER, bad, trace_bytes);
	tracebuf_free(tr);
	stacktab_free(tab);
	profbuf_free(buf);
	return got == WRITERS * PER_WRITER && !bad ? 0 : 1;
}
