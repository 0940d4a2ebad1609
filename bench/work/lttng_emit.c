// SPDX-License-Identifier: MIT
/*
 * bench/work/lttng_emit.c - the driver of bench/lttng_bench.sh: N events
 * of two integer arguments in a tight loop, timed with
 * clock_gettime(CLOCK_MONOTONIC) around the loop, through one of
 *
 *	lttng_emit lttng N
 *		the tracepoint profring_bench:ev2 (lttng_tp.h), recorded by
 *		whatever LTTng session the script set up before starting us;
 *	lttng_emit tracebuf N FILE
 *		tracebuf_emit() of type 8 with 2 arguments, a reader thread
 *		draining the stream into FILE while the loop runs (as LTTng's
 *		consumer daemon drains its buffers to disk).
 *
 * Event i carries (i, i ^ 0x5bd1e995) in both, so that the two record
 * the same values.  Prints one line, "lttng_emit: MODE events N ns T"
 * followed, for tracebuf, by " bytes B lost L" (B: the stream bytes the
 * reader wrote to FILE, header and every batch included; L: events
 * tracebuf counted as lost).  Exit status 0, or 1 with a message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <profring/tracebuf.h>

#include "lttng_tp.h"

#define EV_TYPE 8

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run_lttng(uint64_t n)
{
	uint64_t t0, t1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		lttng_ust_tracepoint(profring_bench, ev2, i, i ^ 0x5bd1e995);
	t1 = now_ns();
	printf("lttng_emit: lttng events %llu ns %llu\n", (unsigned long long)n,
	       (unsigned long long)(t1 - t0));
	return 0;
}

struct drain {
	struct tracebuf *t;
	FILE *f;
	uint64_t bytes;
	int err;
};

/* The reader: blocking reads until EOF, each piece written to the file. */
static void *drain_main(void *arg)
{
	struct drain *d = arg;
	struct tracebuf_chunk c;
	int rc;

	for (;;) {
		rc = tracebuf_read(d->t, PROFBUF_BLOCKING, &c);
		if (rc) {
			d->err = rc;
			break;
		}
		if (c.len && fwrite(c.data, 1, c.len, d->f) != c.len) {
			d->err = -EIO;
			break;
		}
		d->bytes += c.len;
		if (c.eof)
			break;
	}
	return NULL;
}

static int run_tracebuf(uint64_t n, const char *path)
{
	struct tracebuf_opts o = { .max_bytes = 64u << 20 };
	struct drain d = { 0 };
	struct tracebuf_stats st;
	pthread_t th;
	uint64_t t0, t1, a[2];
	int bad = 0, rc = 1;

	d.f = fopen(path, "wb");
	if (!d.f) {
		fprintf(stderr, "lttng_emit: %s: %s\n", path, strerror(errno));
		return 1;
	}
	d.t = tracebuf_new(&o);
	if (!d.t) {
		fprintf(stderr, "lttng_emit: tracebuf_new: %s\n",
			strerror(errno));
		goto out_close;
	}
	if (tracebuf_start(d.t)) {
		fprintf(stderr, "lttng_emit: tracebuf_start failed\n");
		goto out_free;
	}
	if (pthread_create(&th, NULL, drain_main, &d)) {
		fprintf(stderr, "lttng_emit: pthread_create failed\n");
		tracebuf_stop(d.t);
		goto out_free;
	}
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		a[0] = i;
		a[1] = i ^ 0x5bd1e995;
		bad |= tracebuf_emit(d.t, EV_TYPE, a, 2);
	}
	t1 = now_ns();
	tracebuf_stop(d.t);
	pthread_join(th, NULL);
	tracebuf_stats(d.t, &st);
	if (d.err) {
		fprintf(stderr, "lttng_emit: tracebuf_read: %d\n", d.err);
		goto out_free;
	}
	if (bad && bad != -ENOSPC) {
		fprintf(stderr, "lttng_emit: tracebuf_emit: %d\n", bad);
		goto out_free;
	}
	printf("lttng_emit: tracebuf events %llu ns %llu bytes %llu lost %llu\n",
	       (unsigned long long)n, (unsigned long long)(t1 - t0),
	       (unsigned long long)d.bytes, (unsigned long long)st.lost);
	rc = 0;
out_free:
	tracebuf_free(d.t);
out_close:
	if (fclose(d.f) && !rc) {
		fprintf(stderr, "lttng_emit: %s: %s\n", path, strerror(errno));
		rc = 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	char *end;
	uint64_t n;

	if (argc < 3 ||
	    (strcmp(argv[1], "lttng") && strcmp(argv[1], "tracebuf")) ||
	    (!strcmp(argv[1], "tracebuf") && argc != 4) ||
	    (!strcmp(argv[1], "lttng") && argc != 3)) {
		fprintf(stderr,
			"usage: lttng_emit lttng N | lttng_emit tracebuf N FILE\n");
		return 2;
	}
	errno = 0;
	n = strtoull(argv[2], &end, 10);
	if (errno || *end || end == argv[2] || n == 0) {
		fprintf(stderr, "lttng_emit: '%s' is not a positive count\n",
			argv[2]);
		return 2;
	}
	if (!strcmp(argv[1], "lttng"))
		return run_lttng(n);
	return run_tracebuf(n, argv[3]);
}
