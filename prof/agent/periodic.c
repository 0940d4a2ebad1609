// SPDX-License-Identifier: MIT
/*
 * prof/agent/periodic.c - PROFRING_PROF_PERIOD: a thread of the profiler's own
 * (its allocations ignored by the heap profiler, never sampled by the
 * window it takes) loops: a CPU window of the period (serve.c's, so that
 * it is exactly the HTTP server's /debug/pprof/profile; in wall-clock
 * mode a wall window, /debug/pprof/wall's: the sampler in wall mode for
 * the window, period type wall/nanoseconds), written with its time_nanos
 * and duration_nanos; then the heap profile as it is now.
 * Each file goes to its pattern's name, written to a temporary name and
 * renamed into place (prof_outfile_write()), so that a collector never
 * reads half a file; the oldest beyond the last @keep is deleted.  At
 * stop the window in progress ends at once and is written too: the end
 * of a run is not lost.
 */
#include "prof/agent/periodic.h"
#include "prof/agent/heap.h"
#include "prof/agent/serve.h"
#include "pprof/outfile.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAME_MAX_LEN 4096

struct rotation {
	const char *pattern;
	char **names; /* the last @keep written, oldest first */
	unsigned int n;
};

static struct {
	pthread_t thread;
	bool running;
	_Atomic bool quit;
	unsigned int period, keep, hz;
	bool wall; /* the windows are wall-clock windows */
	struct rotation cpu, heap;
} per;

/* @pattern with %p, %t (@start), %n (@seq) filled in; NULL if too long. */
static char *expand(const char *pattern, time_t start, unsigned long seq)
{
	char *out = malloc(NAME_MAX_LEN), stamp[32];
	size_t n = 0;
	struct tm tm;

	if (!out)
		return NULL;
	gmtime_r(&start, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (const char *p = pattern; *p && n < NAME_MAX_LEN - 32; p++) {
		if (*p != '%') {
			out[n++] = *p;
			continue;
		}
		switch (*++p) {
		case 'p':
			n += (size_t)snprintf(out + n, 32, "%d", (int)getpid());
			break;
		case 't':
			n += (size_t)snprintf(out + n, 32, "%s", stamp);
			break;
		case 'n':
			n += (size_t)snprintf(out + n, 32, "%lu", seq);
			break;
		default: /* %% (prof_periodic_check() let nothing else by) */
			out[n++] = '%';
			break;
		}
	}
	out[n] = 0;
	return out;
}

/* Write @b under the next name of @r; the oldest beyond keep goes. */
static void put(struct rotation *r, struct prof_blob *b, time_t start,
		unsigned long seq)
{
	char *name = expand(r->pattern, start, seq);
	int err;

	if (!name) {
		free(b->data);
		return;
	}
	err = prof_outfile_write(name, b->data, b->len);
	free(b->data);
	if (err) {
		fprintf(stderr, "profring-prof: cannot write %s: %s\n", name,
			strerrordesc_np(-err));
		free(name);
		return;
	}
	if (!per.keep) {
		free(name);
		return;
	}
	if (r->n == per.keep) {
		unlink(r->names[0]);
		free(r->names[0]);
		memmove(r->names, r->names + 1,
			(per.keep - 1) * sizeof(*r->names));
		r->n--;
	}
	r->names[r->n++] = name;
}

static void *periodic_main(void *arg)
{
	unsigned long seq = 0;

	(void)arg;
	prof_heap_ignore_thread();
	do {
		struct prof_blob b = { 0 };
		time_t start = time(NULL);
		int err = 0;

		seq++;
		if (per.cpu.pattern) {
			err = per.wall ? prof_serve_wall(per.period, per.hz,
							 &per.quit, true, &b)
				       : prof_serve_cpu(per.period, per.hz,
							&per.quit, true, &b);
			if (!err)
				put(&per.cpu, &b, start, seq);
		} else {
			struct timespec t = { 0, 50000000 };

			/* No CPU window to wait in: wait here. */
			for (unsigned int i = 0;
			     i < per.period * 20u &&
			     !atomic_load_explicit(&per.quit,
						   memory_order_relaxed);
			     i++)
				nanosleep(&t, NULL);
		}
		if (per.heap.pattern &&
		    !prof_serve_heap(prof_session_heap, false, 0, &per.quit,
				     &b))
			put(&per.heap, &b, start, seq);
		if (err == -EBUSY)
			fprintf(stderr,
				"profring-prof: window %lu: the CPU "
				"sampler is busy (an HTTP request)\n",
				seq);
		/* Relaxed: a flag to poll; the join orders the rest. */
	} while (!atomic_load_explicit(&per.quit, memory_order_relaxed));
	return NULL;
}

static void rotation_free(struct rotation *r)
{
	for (unsigned int i = 0; i < r->n; i++)
		free(r->names[i]);
	free(r->names);
	memset(r, 0, sizeof(*r));
}

int prof_periodic_start(const char *cpu, const char *heap, unsigned int period,
			unsigned int keep, unsigned int hz, bool wall)
{
	int err;

	if (per.running)
		return -EALREADY;
	memset(&per.cpu, 0, sizeof(per.cpu));
	memset(&per.heap, 0, sizeof(per.heap));
	per.period = period;
	per.keep = keep;
	per.hz = hz;
	per.wall = wall;
	per.cpu.pattern = cpu;
	per.heap.pattern = heap;
	if (keep) {
		per.cpu.names = calloc(keep, sizeof(char *));
		per.heap.names = calloc(keep, sizeof(char *));
		if (!per.cpu.names || !per.heap.names) {
			err = -ENOMEM;
			goto fail;
		}
	}
	atomic_store_explicit(&per.quit, false, memory_order_relaxed);
	err = -pthread_create(&per.thread, NULL, periodic_main, NULL);
	if (err)
		goto fail;
	per.running = true;
	return 0;
fail:
	rotation_free(&per.cpu);
	rotation_free(&per.heap);
	return err;
}

void prof_periodic_stop(void)
{
	if (!per.running)
		return;
	/* Relaxed: polled; the join below orders what the thread did. */
	atomic_store_explicit(&per.quit, true, memory_order_relaxed);
	pthread_join(per.thread, NULL);
	per.running = false;
	rotation_free(&per.cpu);
	rotation_free(&per.heap);
}
