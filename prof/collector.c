// SPDX-License-Identifier: MIT
/*
 * prof/collector.c - the reader side of profring-prof.
 *
 * One thread, with every signal blocked (it is never sampled), drains the
 * session's profbuf until EOF: blocking reads with a timeout, woken by the
 * writers only past a watermark (see COLLECT_PERIOD_NS).  Each sample record is
 * [len, time, periods, tid, pc0 ... pcN]; its stack is interned in a
 * stacktab (one copy of each distinct stack, a small id) and the pair
 * (stack id, tid) is counted in an open-addressing table: samples and
 * periods.  Overflow records ([len, time, 0, 0, count], NULL tag) add to
 * the lost count, which becomes a "[profring: lost samples]" entry of the
 * profile: a gap is always visible, never silent.  Stacks the table had no
 * room for are counted under "[profring: stack table full]", empty stacks
 * (an unwinder that found no PC) under "[profring: no stack]".
 *
 * Thread names.  A thread's name (its comm) is read from
 * /proc/self/task/TID/comm when its first sample is read, and again when
 * the profile is made, so that a name set later counts.  A thread gone
 * by then has the name it exited with if the sampler saw it exit
 * (prof_sampler_exited_names()), else the one read at its first sample;
 * it is nameless only if neither could be had.
 *
 * The table and the aggregation are the collector thread's alone until it
 * is joined; prof_collector_profile() reads them after the join, which
 * orders everything (pthread_join synchronizes with the thread's end).
 */
#include "prof/collector.h"

#include <profring/stacktab.h>

#include "ring/clock.h"
#include "pprof/table.h"

#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Pseudo stack ids for the synthetic entries (real ids are small). */
#define STACK_TABLE_FULL UINT32_MAX
#define STACK_EMPTY (UINT32_MAX - 1)

/*
 * The collector's stack table: its arena (address space, committed as
 * used) and the number of distinct stacks it is sized for.
 */
#define COLLECTOR_STACKS_MAX_BYTES ((size_t)64 << 20)
#define COLLECTOR_EXPECTED_STACKS 16384

/* Samples are interned whole: the stack table must not cut them. */
_Static_assert(PROFRING_PROF_MAX_FRAMES <= STACKTAB_MAX_DEPTH,
	       "a sample's frames must fit the stack table");

/*
 * The writers wake the collector only once PROF_WAKE_WORDS are pending (or
 * on overflow or close): a wakeup per sample would cost the profiled
 * program a context switch per sample.  What stays below the mark is read
 * at least every COLLECT_PERIOD_NS.
 */
#define COLLECT_PERIOD_NS 200000000u

/*
 * The collector keeps two keyed tables (pprof/table.h: open addressing,
 * entries that start with a nonzero 64-bit key): samples by (stack, tid)
 * and thread names by tid.  Keys are unique in both.
 */
struct agg_entry {
	uint64_t key; /* stack << 32 | tid */
	uint64_t samples;
	uint64_t periods;
};

struct name_entry {
	uint64_t key; /* tid */
	char name[16]; /* comm: at most 15 bytes and a NUL; "" if unknown */
};

struct prof_collector {
	struct profbuf *buf;
	struct stacktab *tab;
	pthread_t thread;
	sem_t started;
	pid_t tid;
	int error;

	struct keyed_table agg; /* struct agg_entry */
	struct keyed_table names; /* struct name_entry */

	uint64_t read;
	uint64_t lost;
	uint64_t periods;
	uint64_t table_full;
};

/* Test hook: a pause after every read, so that a small ring overflows. */
static atomic_uint test_stall_us;
/*
 * Test hook: a small stack table, so that it fills.  The hooks are relaxed
 * settings: no data is published with them.
 */
static atomic_size_t test_table_bytes;

/**
 * prof_collector_set_test_table_bytes() - size the next collectors' stack
 * tables (tests only).
 * @bytes: arena bytes, at least 4096; 0 for the default.
 */
void prof_collector_set_test_table_bytes(size_t bytes)
{
	atomic_store_explicit(&test_table_bytes, bytes, memory_order_relaxed);
}

/**
 * prof_collector_set_test_stall() - make the reader slow (tests only).
 * @us: microseconds to sleep after each read; 0 for none.
 */
void prof_collector_set_test_stall(unsigned int us)
{
	atomic_store_explicit(&test_stall_us, us, memory_order_relaxed);
}

static void test_stall(void)
{
	unsigned int us =
		atomic_load_explicit(&test_stall_us, memory_order_relaxed);
	struct timespec ts = { 0, (long)us * 1000 };

	if (us)
		nanosleep(&ts, NULL);
}

static int agg_add(struct prof_collector *c, uint32_t stack, uint32_t tid,
		   uint64_t periods)
{
	uint64_t key = (uint64_t)stack << 32 | tid;
	struct agg_entry *e = keyed_table_insert(&c->agg, key, NULL, NULL);

	if (!e)
		return -ENOMEM;
	e->samples++;
	e->periods += periods;
	return 0;
}

/* Read /proc/self/task/@tid/comm into @name ("" if the thread is gone). */
static void read_comm(uint32_t tid, char name[16])
{
	char path[64];
	ssize_t n;
	int fd;

	name[0] = 0;
	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, name, 15);
	close(fd);
	if (n <= 0)
		return;
	name[n] = 0;
	if (name[n - 1] == '\n')
		name[n - 1] = 0;
}

/* The first sample of a thread: note its name while it may still run. */
static int note_thread(struct prof_collector *c, uint32_t tid)
{
	struct name_entry *e;

	if (!tid || keyed_table_find(&c->names, tid, NULL, NULL))
		return 0;
	e = keyed_table_insert(&c->names, tid, NULL, NULL);
	if (!e)
		return -ENOMEM;
	read_comm(tid, e->name);
	return 0;
}

/* A name the sampler took from an exiting thread: its final one. */
static void take_exited_name(void *arg, const struct tid_name *n)
{
	struct prof_collector *c = arg;
	struct name_entry *e = keyed_table_find(&c->names, n->tid, NULL, NULL);

	if (e)
		memcpy(e->name, n->name, sizeof(e->name));
}

/*
 * Final names: threads still alive are asked again (a name set after the
 * first sample counts), exited ones come from the sampler.
 */
static void refresh_names(struct prof_collector *c)
{
	struct name_entry *e;
	char name[16];
	size_t i = 0;

	while ((e = keyed_table_next(&c->names, &i))) {
		read_comm((uint32_t)e->key, name);
		if (name[0])
			memcpy(e->name, name, sizeof(name));
	}
	prof_sampler_exited_names(take_exited_name, c);
}

static const char *thread_name(const struct prof_collector *c, uint32_t tid)
{
	const struct name_entry *e =
		tid ? keyed_table_find(&c->names, tid, NULL, NULL) : NULL;

	return e && e->name[0] ? e->name : NULL;
}

static int take_sample(struct prof_collector *c,
		       const struct profbuf_record *rec)
{
	uint64_t periods = rec->hdr[PROF_HDR_PERIODS];
	uint32_t tid = (uint32_t)rec->hdr[PROF_HDR_TID];
	uint32_t stack;

	c->read++;
	c->periods += periods;
	if (!rec->nstk) {
		stack = STACK_EMPTY;
	} else {
		stack = stacktab_put(c->tab, rec->stk, rec->nstk);
		if (!stack) {
			stack = STACK_TABLE_FULL;
			c->table_full++;
		}
	}
	note_thread(c, tid); /* -ENOMEM: no name */
	return agg_add(c, stack, tid, periods);
}

/* One read's worth of whole records. */
static int take_records(struct prof_collector *c, const struct profbuf_read *r)
{
	struct profbuf_record rec;
	struct profbuf_iter it;
	int err;

	profbuf_iter_init(&it, r, PROF_HDR_WORDS);
	while (profbuf_iter_next(&it, &rec)) {
		if (profbuf_record_is_overflow(&rec)) {
			c->lost += profbuf_record_overflow_count(&rec);
			continue;
		}
		err = take_sample(c, &rec);
		if (err)
			return err;
	}
	/* cannot happen: profbuf hands out whole records of its layout */
	return profbuf_iter_malformed(&it) ? -EBADMSG : 0;
}

/* Every COLLECT_PERIOD_NS: arm threads that started unseen. */
static void maybe_rescan(uint64_t *last)
{
	uint64_t now = ring_clock_mono_ns();

	if (now - *last < COLLECT_PERIOD_NS)
		return;
	*last = now;
	prof_sampler_rescan();
}

static void *collector_main(void *arg)
{
	struct prof_collector *c = arg;
	uint64_t last_rescan = ring_clock_mono_ns();
	struct profbuf_read r;
	int err;

	c->tid = (pid_t)syscall(SYS_gettid);
	sem_post(&c->started);
	for (;;) {
		maybe_rescan(&last_rescan);
		err = profbuf_read_timeout(c->buf, COLLECT_PERIOD_NS, &r);
		/* On a timeout the next read takes what is below the mark. */
		if (err == -ETIMEDOUT)
			continue;
		if (!err)
			err = take_records(c, &r);
		if (err) {
			/* Keep draining so that writers are not left to
			 * overflow, but remember the first error. */
			if (!c->error)
				c->error = err;
			if (err != -ENOMEM && err != -EBADMSG)
				break;
		}
		if (r.eof)
			break;
		test_stall();
	}
	return NULL;
}

/**
 * prof_collector_start() - start the reader thread on @buf.
 * @buf: the session's ring.
 * @err: receives -errno on failure.
 *
 * Return: the collector, or NULL.
 */
struct prof_collector *prof_collector_start(struct profbuf *buf, int *err)
{
	struct prof_collector *c = calloc(1, sizeof(*c));
	size_t table_bytes;
	sigset_t all, old;
	int rc;

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->buf = buf;
	keyed_table_init(&c->agg, sizeof(struct agg_entry));
	keyed_table_init(&c->names, sizeof(struct name_entry));
	table_bytes =
		atomic_load_explicit(&test_table_bytes, memory_order_relaxed);
	c->tab = stacktab_new(table_bytes ? table_bytes
					  : COLLECTOR_STACKS_MAX_BYTES,
			      COLLECTOR_EXPECTED_STACKS);
	if (!c->tab) {
		*err = -errno;
		goto fail_tab;
	}
	if (sem_init(&c->started, 0, 0)) {
		*err = -errno;
		goto fail_sem;
	}
	/* The thread inherits the mask: it never takes SIGPROF (or any). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = prof_real_pthread_create(&c->thread, NULL, collector_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		*err = -rc;
		goto fail_thread;
	}
	while (sem_wait(&c->started) && errno == EINTR)
		;
	return c;

fail_thread:
	sem_destroy(&c->started);
fail_sem:
	stacktab_free(c->tab);
fail_tab:
	free(c);
	return NULL;
}

/**
 * prof_collector_tid() - the reader thread's id (never to be sampled).
 * @c: the collector.
 *
 * Return: its tid.
 */
pid_t prof_collector_tid(const struct prof_collector *c)
{
	return c->tid;
}

/**
 * prof_collector_join() - wait for the reader to reach EOF (the ring must
 * have been closed).
 * @c: the collector.
 *
 * Return: 0, or the first error the reader met.
 */
int prof_collector_join(struct prof_collector *c)
{
	pthread_join(c->thread, NULL);
	return c->error;
}

static const char *special_name(uint32_t stack)
{
	if (stack == STACK_TABLE_FULL)
		return PROF_TABLE_FULL_NAME;
	if (stack == STACK_EMPTY)
		return PROF_NO_STACK_NAME;
	return NULL;
}

static int fill_sample(struct prof_collector *c, const struct agg_entry *e,
		       struct prof_sample *s)
{
	uintptr_t pcs[PROFRING_PROF_MAX_FRAMES];
	uintptr_t *copy;
	size_t n;

	uint32_t stack = (uint32_t)(e->key >> 32);

	memset(s, 0, sizeof(*s));
	s->tid = (uint32_t)e->key;
	s->thread_name = thread_name(c, s->tid);
	s->samples = e->samples;
	s->periods = e->periods;
	s->special = special_name(stack);
	if (s->special)
		return 0;
	n = stacktab_get(c->tab, stack, pcs, PROFRING_PROF_MAX_FRAMES);
	if (n > PROFRING_PROF_MAX_FRAMES)
		n = PROFRING_PROF_MAX_FRAMES;
	copy = malloc(n * sizeof(*copy) + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, pcs, n * sizeof(*copy));
	s->pcs = copy;
	s->npcs = n;
	return 0;
}

/**
 * prof_collector_profile() - the aggregated samples, after the join.
 * @c: the collector.
 * @p: receives the samples (and nothing else: the caller fills in the
 *     period, times and comments); free with
 *     prof_collector_profile_free().
 *
 * Return: 0 or -ENOMEM.
 */
int prof_collector_profile(struct prof_collector *c, struct prof_profile *p)
{
	struct prof_sample *v;
	struct agg_entry *e;
	size_t i = 0, n = 0;
	int err;

	memset(p, 0, sizeof(*p));
	refresh_names(c);
	v = calloc(c->agg.n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->samples = v;
	while ((e = keyed_table_next(&c->agg, &i))) {
		err = fill_sample(c, e, &v[n]);
		if (err) {
			p->nsamples = n;
			prof_collector_profile_free(p);
			return err;
		}
		n++;
	}
	if (c->lost) {
		/* An overflow record counts samples, not periods: one each. */
		v[n].special = PROF_LOST_NAME;
		v[n].samples = c->lost;
		v[n].periods = c->lost;
		n++;
	}
	p->nsamples = n;
	return 0;
}

/**
 * prof_collector_profile_free() - free what prof_collector_profile() made.
 * @p: the profile; its samples are freed and zeroed.
 */
void prof_collector_profile_free(struct prof_profile *p)
{
	size_t i;

	for (i = 0; i < p->nsamples; i++)
		free((void *)p->samples[i].pcs);
	free((void *)p->samples);
	p->samples = NULL;
	p->nsamples = 0;
}

/**
 * prof_collector_add_stats() - fill in the reader's side of @st.
 * @c:  the collector, joined.
 * @st: read, lost, periods, stacks, stack_table_full.
 */
void prof_collector_add_stats(const struct prof_collector *c,
			      struct profring_prof_stats *st)
{
	struct stacktab_stats ts;

	stacktab_stats(c->tab, &ts);
	st->read = c->read;
	st->lost = c->lost;
	st->periods = c->periods;
	st->stacks = ts.stacks;
	st->stack_table_full = c->table_full;
}

/**
 * prof_collector_free() - free a joined collector.
 * @c: the collector, or NULL.
 */
void prof_collector_free(struct prof_collector *c)
{
	if (!c)
		return;
	sem_destroy(&c->started);
	stacktab_free(c->tab);
	keyed_table_free(&c->agg);
	keyed_table_free(&c->names);
	free(c);
}
