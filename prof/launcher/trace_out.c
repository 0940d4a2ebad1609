// SPDX-License-Identifier: MIT
/*
 * prof/launcher/trace_out.c - `record --trace FILE` (trace_out.h).
 *
 * The launcher's reader thread hands each read of the profiler's ring to
 * prof_trace_take() after the aggregation has it, and the records become
 * events of a tracer (tracebuf.h) in that thread:
 *   - a CPU sample: a "cpu sample" event (the time it was taken, the
 *     sampled thread, its stack, its periods), from every process;
 *   - a wall-clock sample (--mode wall): a "wall sample" event, type
 *     PROF_TRACE_EV_WALL (user defined: the format has no library type
 *     for it; named in every generation's T record, arguments "tukus"):
 *     the time it was taken, the sampled thread, its stack, its periods
 *     (wall ticks), and its state as a string id, "running" or
 *     "sleeping".  A REPEAT record (a thread that did not run since its
 *     last sample) has no stack: the event gets that of the thread's
 *     last wall sample, kept here per (pid, tid) and interned again, so
 *     that every generation stands alone ([no stack], id 0, before any;
 *     an exec forgets the image's stacks, as the aggregation does);
 *   - an overflow record: a "lost samples" event with its count;
 *   - a recorded lock wait (with --mutex or --block): a span of the
 *     waiting thread (tracebuf_ev_span_of()) named "mutex wait",
 *     "rwlock wait", "cond wait" or "sem wait", ending at the record's
 *     time and as long as its delay, with the waiter's stack.  Only the
 *     waits the agent recorded (1 in rate) are spans;
 *   - a sampled allocation and its free (the heap profiler's, with
 *     --heap): alloc and free events through the tracer's memory table,
 *     so that every generation starts with the snapshot of the sampled
 *     objects still live.  Only those of the process started, whose
 *     addresses are the table's: its forked children's are counted as
 *     not traced, and at an exec its objects are freed (the image that
 *     had them is gone).  An allocation the heap profiler could not track
 *     (its free will never be seen) is not traced either.
 * The file is opened as the profiles are written (pprof/outfile.h: no
 * link another user planted is followed, nothing is created through a
 * link; a regular file is truncated and written in place, a FIFO or
 * /dev/stdout appended to).
 * A writer thread moves the stream to the file and advances the
 * generation every second; at the end prof_trace_close() stops the
 * tracer (the last generation ends) and waits for the writer to reach
 * EOF.
 *
 * Times: a CPU sample's first argument is its time in the program
 * (ring_clock_ticks(), the tracer's clock too), as a lock wait span's
 * start and end are the wait's; every event's own time
 * is when the launcher read it, up to the reader's period (0.1 s) later.
 * Memory events sit in the reader thread's batches, not the allocating
 * thread's: the ring's records say which thread, the format's memory
 * events do not.
 */
#include "prof/launcher/trace_out.h"
#include "prof/wire/stream.h"

#include <profring/tracebuf.h>

#include "pprof/outfile.h"
#include "ring/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GENERATION_NS 1000000000u
#define WRITER_IDLE_NS 10000000
/* Live sampled objects the memory table holds, as the heap table does. */
#define MEM_OBJECTS_SMALL_RATE ((size_t)1 << 21)
#define MEM_OBJECTS ((size_t)1 << 16)
#define SMALL_RATE (64 << 10)
#define WALLS_MIN 64 /* the last-stack table's first size */

/* A thread's last wall stack (key 0: a free entry). */
struct wall_last {
	uint64_t key; /* pid << 32 | tid */
	uint32_t n, cap;
	uintptr_t *pcs;
};

struct prof_trace {
	struct tracebuf *t;
	int fd;
	pthread_t writer;
	int error; /* the writer's first -errno */
	uint64_t bytes, generations;
	/* The reader thread's. */
	pid_t pid; /* whose memory is traced: the first HELLO's */
	uint64_t not_traced;
	struct wall_last *walls; /* open addressing, a power of 2 */
	size_t nwalls, usedwalls;
	uint64_t hz; /* ring_clock_ticks() per second */
};

/* ---- the writer thread ---------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *writer_main(void *arg)
{
	static const struct timespec idle = { 0, WRITER_IDLE_NS };
	struct prof_trace *pt = arg;
	uint64_t last = ring_clock_mono_ns();
	struct tracebuf_chunk c;

	for (;;) {
		uint64_t now = ring_clock_mono_ns();

		if (now - last >= GENERATION_NS) {
			/* -ESHUTDOWN once stopped: EOF follows. */
			if (tracebuf_advance(pt->t) != -ESHUTDOWN)
				pt->generations++;
			last = now;
		}
		if (tracebuf_read(pt->t, PROFBUF_NONBLOCKING, &c))
			break; /* -EBUSY: we are the only reader */
		if (c.len) {
			int err = write_all(pt->fd, c.data, c.len);

			if (err && !pt->error)
				pt->error = err;
			pt->bytes += c.len;
			continue;
		}
		if (c.eof)
			break;
		nanosleep(&idle, NULL);
	}
	return NULL;
}

/* ---- records to events ------------------------------------------------------ */

static void take_sample(struct prof_trace *pt, const struct profbuf_record *rec)
{
	struct tracebuf_ev ev;

	if (tracebuf_begin(pt->t, &ev))
		return; /* counted by the tracer */
	tracebuf_ev_cpu_sample(
		&ev, (uint64_t)rec->time, rec->hdr[PROF_HDR_TID], rec->stk,
		rec->nstk, rec->hdr[PROF_HDR_KIND_PERIODS] & PROF_PERIODS_MASK);
	tracebuf_end(&ev);
}

/* The entry of @key, a new one if none (NULL: no memory). */
static struct wall_last *wall_entry(struct prof_trace *pt, uint64_t key)
{
	struct wall_last *v, *e;
	size_t i, n;

	if (2 * (pt->usedwalls + 1) > pt->nwalls) { /* grow: load <= 1/2 */
		n = pt->nwalls ? 2 * pt->nwalls : WALLS_MIN;
		v = calloc(n, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t j = 0; j < pt->nwalls; j++) {
			if (!pt->walls[j].key)
				continue;
			for (i = pt->walls[j].key * 0x9e3779b97f4a7c15u >> 32;
			     v[i & (n - 1)].key; i++)
				;
			v[i & (n - 1)] = pt->walls[j];
		}
		free(pt->walls);
		pt->walls = v;
		pt->nwalls = n;
	}
	for (i = key * 0x9e3779b97f4a7c15u >> 32;; i++) {
		e = &pt->walls[i & (pt->nwalls - 1)];
		if (e->key == key)
			return e;
		if (!e->key)
			break;
	}
	e->key = key;
	pt->usedwalls++;
	return e;
}

/* Keep @n frames at @pcs as @e's last stack (none if no memory). */
static void wall_keep(struct wall_last *e, const uintptr_t *pcs, size_t n)
{
	if (n > e->cap) {
		uintptr_t *v = realloc(e->pcs, n * sizeof(*v));

		if (!v) {
			e->n = 0; /* its REPEATs get no stack, not a stale one */
			return;
		}
		e->pcs = v;
		e->cap = (uint32_t)n;
	}
	memcpy(e->pcs, pcs, n * sizeof(*pcs));
	e->n = (uint32_t)n;
}

static void take_wall(struct prof_trace *pt, const struct profbuf_record *rec,
		      pid_t pid, bool repeat)
{
	uint64_t key = (uint64_t)(uint32_t)pid << 32 |
		       (uint32_t)rec->hdr[PROF_HDR_TID];
	struct wall_last *e;
	struct tracebuf_ev ev;
	const uintptr_t *pcs = NULL;
	size_t n = 0;
	uint64_t args[5];

	if (!rec->nstk || rec->stk[0] > PROF_WALL_SLEEPING)
		return; /* a bad record: the aggregation counts it */
	e = wall_entry(pt, key);
	if (!repeat) {
		pcs = rec->stk + 1;
		n = rec->nstk - 1;
		if (e)
			wall_keep(e, pcs, n);
	} else if (e) {
		pcs = e->pcs;
		n = e->n;
	}
	if (tracebuf_begin(pt->t, &ev))
		return; /* counted by the tracer */
	args[0] = (uint64_t)rec->time;
	args[1] = rec->hdr[PROF_HDR_TID];
	args[2] = n ? tracebuf_ev_stack(&ev, pcs, n) : 0;
	args[3] = rec->hdr[PROF_HDR_KIND_PERIODS] & PROF_PERIODS_MASK;
	args[4] = tracebuf_ev_string(&ev, rec->stk[0] == PROF_WALL_SLEEPING
						  ? "sleeping"
						  : "running");
	tracebuf_ev_emit(&ev, PROF_TRACE_EV_WALL, args, 5);
	tracebuf_end(&ev);
}

/* An exec of @pid: its threads' last stacks were the old image's. */
static void wall_forget(struct prof_trace *pt, pid_t pid)
{
	for (size_t i = 0; i < pt->nwalls; i++)
		if (pt->walls[i].key >> 32 == (uint32_t)pid)
			pt->walls[i].n = 0;
}

static void take_hello(struct prof_trace *pt, const struct profbuf_record *rec,
		       pid_t pid)
{
	if (!pt->pid) {
		pt->pid = pid; /* the program started */
		return;
	}
	if (rec->nstk >= 2 && !(rec->stk[1] & PROF_HELLO_FORKED))
		wall_forget(pt, pid); /* an exec, or a pid's first image */
	/* An exec: the objects of the image before are gone. */
	if (pid == pt->pid && rec->nstk >= 2 &&
	    !(rec->stk[1] & PROF_HELLO_FORKED))
		tracebuf_mem_free_all(pt->t);
}

static void take_heap(struct prof_trace *pt, const struct profbuf_record *rec,
		      pid_t pid, bool is_free)
{
	if (pid != pt->pid || !pt->pid || !rec->nstk ||
	    (!is_free && (rec->nstk < PROF_ALLOC_WORDS ||
			  rec->stk[PROF_ALLOC_FLAGS] & PROF_ALLOC_UNTRACKED))) {
		pt->not_traced++;
		return;
	}
	if (is_free) {
		/* -ENOENT: its allocation was not traced. */
		tracebuf_mem_free(pt->t, rec->stk[PROF_ALLOC_ADDR]);
		return;
	}
	tracebuf_mem_alloc(
		pt->t, rec->stk[PROF_ALLOC_ADDR], rec->stk[PROF_ALLOC_SIZE],
		rec->stk + PROF_ALLOC_WORDS, rec->nstk - PROF_ALLOC_WORDS);
}

/* A recorded lock wait: a span of the waiting thread, "mutex wait" ... */
static void take_lock(struct prof_trace *pt, const struct profbuf_record *rec)
{
	static const char *const names[PROF_LOCK_KINDS] = {
		[PROF_LOCK_MUTEX] = "mutex wait",
		[PROF_LOCK_RWLOCK_RD] = "rwlock wait",
		[PROF_LOCK_RWLOCK_WR] = "rwlock wait",
		[PROF_LOCK_COND] = "cond wait",
		[PROF_LOCK_SEM] = "sem wait",
	};
	uint64_t end = (uint64_t)rec->time, ticks;
	struct tracebuf_ev ev;

	if (rec->nstk < PROF_LOCK_WORDS ||
	    rec->stk[PROF_LOCK_KIND] >= PROF_LOCK_KINDS)
		return; /* a bad record: the aggregation counts it */
	/* The delay (ns) in the tracer's ticks, ending at the record's time. */
	ticks = (uint64_t)((unsigned __int128)rec->stk[PROF_LOCK_DELAY] *
			   pt->hz / 1000000000u);
	if (tracebuf_begin(pt->t, &ev))
		return; /* counted by the tracer */
	tracebuf_ev_span_of(
		&ev, tracebuf_ev_string(&ev, names[rec->stk[PROF_LOCK_KIND]]),
		ticks < end ? end - ticks : 0, end, rec->hdr[PROF_HDR_TID],
		rec->stk + PROF_LOCK_WORDS, rec->nstk - PROF_LOCK_WORDS);
	tracebuf_end(&ev);
}

static void take_record(struct prof_trace *pt, const struct profbuf_record *rec)
{
	pid_t pid = (pid_t)rec->hdr[PROF_HDR_PID];

	if (profbuf_record_is_overflow(rec)) {
		struct tracebuf_ev ev;

		if (tracebuf_begin(pt->t, &ev))
			return; /* counted by the tracer */
		tracebuf_ev_lost_samples(&ev,
					 profbuf_record_overflow_count(rec));
		tracebuf_end(&ev);
		return;
	}
	switch (prof_hdr_kind(rec->hdr[PROF_HDR_KIND_PERIODS])) {
	case PROF_REC_SAMPLE:
		take_sample(pt, rec);
		break;
	case PROF_REC_HELLO:
		take_hello(pt, rec, pid);
		break;
	case PROF_REC_ALLOC:
		take_heap(pt, rec, pid, false);
		break;
	case PROF_REC_FREE:
		take_heap(pt, rec, pid, true);
		break;
	case PROF_REC_MAP:
		break; /* symbols are the profiles' business */
	case PROF_REC_WALL:
		take_wall(pt, rec, pid, false);
		break;
	case PROF_REC_REPEAT:
		take_wall(pt, rec, pid, true);
		break;
	case PROF_REC_LOCK:
		take_lock(pt, rec);
		break;
	}
}

void prof_trace_take(struct prof_trace *pt, const struct profbuf_read *r)
{
	struct profbuf_record rec;
	struct profbuf_iter it;

	profbuf_iter_init(&it, r, PROF_HDR_WORDS);
	while (profbuf_iter_next(&it, &rec))
		take_record(pt, &rec);
}

/* ---- life cycle ------------------------------------------------------------- */

int prof_trace_open(struct prof_trace **out, const char *path,
		    uint64_t heap_rate, bool wall)
{
	struct tracebuf_opts o = {
		.max_bytes = 64 << 20,
		.mem_objects = heap_rate && heap_rate < SMALL_RATE
				       ? MEM_OBJECTS_SMALL_RATE
				       : MEM_OBJECTS,
		.mem_align = 8,
	};
	struct prof_trace *pt = calloc(1, sizeof(*pt));
	int err = -ENOMEM;

	if (!pt)
		return err;
	pt->fd = -1;
	pt->hz = ring_clock_hz();
	pt->t = tracebuf_new(&o);
	if (!pt->t)
		goto fail;
	if (wall) {
		err = tracebuf_name_type(pt->t, PROF_TRACE_EV_WALL,
					 "wall sample", "tukus");
		if (err)
			goto fail;
	}
	/* As the other outputs reach theirs: links another user planted
	 * after the options were checked are refused (pprof/outfile.h). */
	pt->fd = prof_outfile_open(path);
	if (pt->fd < 0) {
		err = pt->fd;
		goto fail;
	}
	err = tracebuf_start(pt->t);
	pt->generations = 1;
	if (!err)
		err = -pthread_create(&pt->writer, NULL, writer_main, pt);
	if (err)
		goto fail;
	*out = pt;
	return 0;
fail:
	if (pt->fd >= 0)
		close(pt->fd);
	if (pt->t) {
		tracebuf_stop(pt->t);
		tracebuf_free(pt->t);
	}
	free(pt);
	return err;
}

int prof_trace_close(struct prof_trace *pt, struct prof_trace_counts *c)
{
	struct tracebuf_stats st;
	int err;

	tracebuf_stop(pt->t);
	pthread_join(pt->writer, NULL);
	tracebuf_stats(pt->t, &st);
	err = pt->error;
	if (close(pt->fd) && !err)
		err = -errno;
	memset(c, 0, sizeof(*c));
	c->bytes = pt->bytes;
	c->generations = pt->generations;
	c->lost = st.lost;
	c->not_traced = pt->not_traced;
	tracebuf_free(pt->t);
	for (size_t i = 0; i < pt->nwalls; i++)
		free(pt->walls[i].pcs);
	free(pt->walls);
	free(pt);
	return err;
}
