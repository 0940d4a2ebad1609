// SPDX-License-Identifier: MIT
/*
 * trace_demo.c - write a small profring trace to a file.
 *
 *	trace_demo OUTFILE
 *
 * Starts a tracer with three named event types and a memory table, runs
 * four threads for about 0.3 s each emitting events (requests with a
 * string and a stack, plain ticks, one byte payload per thread, a span
 * "batch of 16" over every 16 events, and the allocations and frees of
 * real malloc() blocks, 64 at most per thread)
 * while a reader thread writes the stream to OUTFILE and the main thread
 * advances the generation a few times; when the workers are done, the
 * main thread writes a span "worker run" of each worker, on that worker
 * (tracebuf_ev_span_of(): counted as the worker's); then stops the
 * tracer.  Prints two
 * lines to stdout:
 *
 *	trace_demo: accepted N lost M; thread TID accepted N lost M; ...
 *	trace_demo: memory allocs N frees N live_objects N live_bytes N
 *
 * where "accepted" counts the events the threads wrote (they must all be
 * in the file, beside the snapshots' exists events) and "lost" those the
 * tracer refused (counted in the stream instead); the memory line says
 * which allocations and frees were accepted, and what the threads still
 * held when the tracer stopped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <profring/tracebuf.h>

#define NTHREADS 4
#define RUN_NS 300000000ull
#define NADVANCES 5
#define NBLOCKS 64 /* malloc() blocks a worker holds at most */

enum demo_type {
	EV_REQUEST = TRACEBUF_EV_USER, /* id, path string, stack */
	EV_TICK, /* counter */
	EV_BLOB, /* byte payload */
};

struct worker {
	struct tracebuf *t;
	pthread_t th;
	unsigned int index;
	long tid;
	uint64_t t0, t1; /* its run, in tracebuf_ticks() */
	uint64_t accepted, lost;
	uint64_t allocs, frees;
	void *block[NBLOCKS];
	size_t size[NBLOCKS]; /* 0: its allocation was not accepted */
};

struct reader {
	struct tracebuf *t;
	FILE *out;
	pthread_t th;
	int error;
};

static const char *const paths[] = {
	"GET /index.html",
	"POST /api/v1/items",
	"GET /static/\"quoted\".css",
	"PUT /caf\xc3\xa9",
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(struct worker *w, int rc)
{
	if (rc == 0)
		w->accepted++;
	else
		w->lost++;
}

/* A request event: a number, an interned string and an interned stack. */
static void emit_request(struct worker *w, uint64_t i)
{
	uintptr_t pcs[3] = { 0x401000 + w->index * 0x100,
			     0x402000 + (i % 4) * 0x10, 0x403000 };
	struct tracebuf_ev ev;
	uint64_t args[3];
	int rc;

	rc = tracebuf_begin(w->t, &ev);
	if (rc) {
		count(w, rc);
		return;
	}
	args[0] = i;
	args[1] = tracebuf_ev_string(&ev, paths[i % 4]);
	args[2] = tracebuf_ev_stack(&ev, pcs, 1 + (i / 3) % 3);
	count(w, tracebuf_ev_emit(&ev, EV_REQUEST, args, 3));
	tracebuf_end(&ev);
}

/* One event with a byte payload. */
static void emit_blob(struct worker *w)
{
	uint8_t data[16];
	struct tracebuf_ev ev;
	int rc;

	for (unsigned int i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(w->index * 16 + i);
	rc = tracebuf_begin(w->t, &ev);
	if (rc) {
		count(w, rc);
		return;
	}
	count(w, tracebuf_ev_emit_bytes(&ev, EV_BLOB, data, sizeof(data)));
	tracebuf_end(&ev);
}

/* Allocate block @j if it is free, else free it; the tracer sees both. */
static void alloc_or_free(struct worker *w, uint64_t i, unsigned int j)
{
	uintptr_t pcs[2] = { 0x404000 + w->index * 0x100,
			     0x405000 + (j % 3) * 0x10 };
	int rc;

	if (!w->block[j]) {
		size_t size = 16 + (i * 37 + j) % 4000;

		w->block[j] = malloc(size);
		if (!w->block[j])
			return;
		rc = tracebuf_mem_alloc(w->t, (uintptr_t)w->block[j], size, pcs,
					2);
		count(w, rc);
		w->allocs += rc == 0;
		w->size[j] = rc == 0 ? size : 0;
		return;
	}
	/* -ENOENT: its allocation was lost; no event, no loss. */
	rc = tracebuf_mem_free(w->t, (uintptr_t)w->block[j]);
	if (rc != -ENOENT) {
		count(w, rc);
		w->frees += rc == 0;
	}
	free(w->block[j]);
	w->block[j] = NULL;
	w->size[j] = 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t end = now_ns() + RUN_NS, start = 0;

	w->tid = syscall(SYS_gettid);
	w->t0 = tracebuf_ticks();
	emit_blob(w);
	for (uint64_t i = 0; now_ns() < end; i++) {
		if (i % 16 == 0)
			start = tracebuf_ticks();
		if (i % 3 == 0) {
			emit_request(w, i);
		} else if (i % 3 == 1 && i % 2) {
			alloc_or_free(w, i, (unsigned int)(i * 7 % NBLOCKS));
		} else {
			uint64_t arg0 = i;

			count(w, tracebuf_emit(w->t, EV_TICK, &arg0, 1));
		}
		if (i % 16 == 15) {
			/* A span: the 16 events just written, then a rest. */
			count(w,
			      tracebuf_span(w->t, "batch of 16", start, &i, 1));
			usleep(200);
		}
	}
	w->t1 = tracebuf_ticks();
	return NULL;
}

/* Each worker's run: a span of that worker, written by this thread. */
static void emit_runs(struct tracebuf *t, struct worker *w)
{
	struct tracebuf_ev ev;

	for (int i = 0; i < NTHREADS; i++) {
		uintptr_t pc = 0x404000 + (uintptr_t)i * 0x10;

		if (tracebuf_begin(t, &ev)) {
			w[i].lost++;
			continue;
		}
		count(&w[i],
		      tracebuf_ev_span_of(
			      &ev, tracebuf_ev_string(&ev, "worker run"),
			      w[i].t0, w[i].t1, (uint64_t)w[i].tid, &pc, 1));
		tracebuf_end(&ev);
	}
}

/* Write every chunk of the stream to the file, until EOF. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct tracebuf_chunk c = { 0 };
	int rc;

	while (!c.eof) {
		rc = tracebuf_read(r->t, PROFBUF_BLOCKING, &c);
		if (rc) {
			r->error = -rc;
			break;
		}
		if (c.len && fwrite(c.data, 1, c.len, r->out) != c.len) {
			r->error = errno ? errno : EIO;
			break;
		}
	}
	return NULL;
}

static int start_workers(struct tracebuf *t, struct worker *w)
{
	for (unsigned int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .t = t, .index = i };
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i])) {
			fprintf(stderr, "trace_demo: pthread_create failed\n");
			while (i--)
				pthread_join(w[i].th, NULL);
			return -1;
		}
	}
	return 0;
}

static void print_summary(const struct worker *w)
{
	uint64_t accepted = 0, lost = 0;

	for (int i = 0; i < NTHREADS; i++) {
		accepted += w[i].accepted;
		lost += w[i].lost;
	}
	printf("trace_demo: accepted %llu lost %llu",
	       (unsigned long long)accepted, (unsigned long long)lost);
	for (int i = 0; i < NTHREADS; i++)
		printf("; thread %ld accepted %llu lost %llu", w[i].tid,
		       (unsigned long long)w[i].accepted,
		       (unsigned long long)w[i].lost);
	printf("\n");
}

/* The memory line (see the top); then the blocks go back. */
static void print_memory(struct worker *w)
{
	uint64_t allocs = 0, frees = 0, live = 0, bytes = 0;

	for (int i = 0; i < NTHREADS; i++) {
		allocs += w[i].allocs;
		frees += w[i].frees;
		for (int j = 0; j < NBLOCKS; j++) {
			live += w[i].size[j] != 0;
			bytes += w[i].size[j];
			free(w[i].block[j]);
		}
	}
	printf("trace_demo: memory allocs %llu frees %llu live_objects %llu "
	       "live_bytes %llu\n",
	       (unsigned long long)allocs, (unsigned long long)frees,
	       (unsigned long long)live, (unsigned long long)bytes);
}

static int name_types(struct tracebuf *t)
{
	if (tracebuf_name_type(t, EV_REQUEST, "request", "usk") ||
	    tracebuf_name_type(t, EV_TICK, "tick", "u") ||
	    tracebuf_name_type(t, EV_BLOB, "blob", "b")) {
		fprintf(stderr, "trace_demo: tracebuf_name_type failed\n");
		return -1;
	}
	return 0;
}

/**
 * run() - trace the workers into @r->out with @r->t, advancing meanwhile.
 *
 * Return: 0, or -1 with a message on stderr.
 */
static int run(struct reader *r, struct worker *w)
{
	int rc = -1, err;

	if (name_types(r->t))
		return -1;
	err = tracebuf_start(r->t);
	if (err) {
		fprintf(stderr, "trace_demo: tracebuf_start: %s\n",
			strerror(-err));
		return -1;
	}
	if (pthread_create(&r->th, NULL, reader_main, r)) {
		fprintf(stderr, "trace_demo: pthread_create failed\n");
		tracebuf_stop(r->t);
		return -1;
	}
	if (start_workers(r->t, w))
		goto stop;
	for (int i = 0; i < NADVANCES; i++) {
		usleep(RUN_NS / 1000 / (NADVANCES + 1));
		err = tracebuf_advance(r->t);
		if (err)
			fprintf(stderr, "trace_demo: tracebuf_advance: %s\n",
				strerror(-err));
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(w[i].th, NULL);
	emit_runs(r->t, w);
	rc = 0;
stop:
	tracebuf_stop(r->t);
	pthread_join(r->th, NULL);
	if (r->error) {
		fprintf(stderr, "trace_demo: writing the trace: %s\n",
			strerror(r->error));
		rc = -1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct worker w[NTHREADS];
	struct reader r = { 0 };
	int rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: trace_demo OUTFILE\n");
		return 2;
	}
	r.out = fopen(argv[1], "wb");
	if (!r.out) {
		fprintf(stderr, "trace_demo: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	r.t = tracebuf_new(&(struct tracebuf_opts){
		.cpu_words = 1 << 17,
		.mem_objects = NTHREADS * NBLOCKS,
		.mem_align = _Alignof(max_align_t), /* what malloc() gives */
	});
	if (!r.t) {
		fprintf(stderr, "trace_demo: tracebuf_new: %s\n",
			strerror(errno));
		goto close;
	}
	if (run(&r, w) == 0) {
		print_summary(w);
		print_memory(w);
		rc = 0;
	}
	tracebuf_free(r.t);
close:
	if (fclose(r.out) && rc == 0) {
		fprintf(stderr, "trace_demo: %s: %s\n", argv[1],
			strerror(errno));
		rc = 1;
	}
	return rc;
}
