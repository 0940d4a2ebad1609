// SPDX-License-Identifier: MIT
/*
 * prof/aggregate.c - from records to a profile: the records taken here,
 * the profile made in aggregate_profile.c (what both share,
 * aggregate_impl.h).
 *
 * Records come in the ring's order (stream.h says what each holds):
 *   - a sample's stack is interned in a stacktab (one copy of each
 *     distinct stack, a small id) and the pair (stack id, thread) counted
 *     in a keyed table: samples and periods;
 *   - an overflow record adds to the lost count, which becomes the
 *     "[profring: lost samples]" entry: a gap is always visible;
 *   - a HELLO starts a new address space for its pid (a new image, whose
 *     MAP records follow, or a fork child, which starts with a copy of its
 *     parent's mappings); a MAP adds a mapping to its pid's current space.
 *     A new image of a pid that had one is an exec: the old image's
 *     sampled heap blocks are no longer in use;
 * A thread is (address space, tid): the same tid in an image after exec is
 * another thread of the profile, with the new image's code.
 *   - a wall sample (PROF_REC_WALL) is counted as a sample is, with its
 *     state (running, sleeping) in the key, and its stack becomes its
 *     thread's last; a REPEAT adds its ticks to that last stack (none
 *     yet: "[profring: no stack]").
 *
 * In-process mode (the collector thread inside the profiled program) has
 * one space, the process itself, symbolized from /proc/self/maps at the
 * end; its records carry its own pid.  Under the launcher every space is
 * symbolized from the mappings its process reported, so code that was
 * unloaded, and processes that are gone, are still named.
 *
 * Everything read from the ring comes from the profiled program: a record
 * whose kind or payload makes no sense is counted in `bad` and skipped.
 *
 * Heap records (sampled allocations and frees) go to heap_agg.c, with the
 * stack table and the address spaces shared; prof_agg_heap_profile()
 * makes the heap profile.  The ring's overflow records count lost records
 * of every kind: the heap records the writers saw refused
 * (prof_agg_set_heap_refused()) are taken off the CPU's lost count and
 * shown in the heap profile instead.
 * Thread names: a thread's comm is read from /proc/PID/task/TID/comm when
 * its first sample is read; in-process, again when the profile is made
 * (a name set later counts), and the sampler passes on the names of
 * threads that exited (prof_agg_set_thread_name()).
 */
#include "prof/aggregate_impl.h"
#include "prof/procfs.h"
#include "prof/stream.h"

#include <profring/stacktab.h>

#include "pprof/symbolize.h" /* struct prof_map_spec */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Thread @tid of @pid's comm into @name ("" if it cannot be read). */
void prof_agg_read_comm(pid_t pid, uint32_t tid, char name[16])
{
	char path[64];
	ssize_t n;

	name[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)pid, tid);
	n = prof_read_small(path, name, 16);
	if (n < 0)
		return;
	if (name[n - 1] == '\n')
		name[n - 1] = 0;
}

/* ---- address spaces ---- */

/* A new address space for @pid, which becomes its current one. */
int prof_agg_space_new(struct prof_agg *a, pid_t pid, uint32_t *out)
{
	struct agg_space *v;
	struct index_entry *e;

	v = array_grow(a->spaces, &a->capspaces, a->nspaces + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	a->spaces = v;
	e = keyed_table_insert(&a->pid_space, (uint64_t)(uint32_t)pid, NULL,
			       NULL);
	if (!e)
		return -ENOMEM;
	memset(&v[a->nspaces], 0, sizeof(v[0]));
	v[a->nspaces].pid = pid;
	e->index = (uint32_t)a->nspaces;
	*out = (uint32_t)a->nspaces++;
	return 0;
}

static int space_add_map(struct agg_space *s, uint64_t start, uint64_t limit,
			 uint64_t offset, const char *path)
{
	struct prof_map_spec *v;
	char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	v = array_grow(s->maps, &s->capmaps, s->nmaps + 1, sizeof(*v));
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	s->maps = v;
	v[s->nmaps].start = start;
	v[s->nmaps].limit = limit;
	v[s->nmaps].offset = offset;
	v[s->nmaps].path = copy;
	s->nmaps++;
	return 0;
}

/* The current space of @pid, made (with no mappings) if none. */
static int space_of(struct prof_agg *a, pid_t pid, uint32_t *out)
{
	struct index_entry *e;

	if (a->in_process && a->nspaces) {
		*out = 0;
		return 0;
	}
	e = keyed_table_find(&a->pid_space, (uint64_t)(uint32_t)pid, NULL,
			     NULL);
	if (e) {
		*out = e->index;
		return 0;
	}
	return prof_agg_space_new(a, pid, out);
}

static int take_hello(struct prof_agg *a, const struct profbuf_record *rec,
		      pid_t pid)
{
	struct index_entry *e;
	uint32_t space, parent;
	int err;

	if (rec->nstk < 2 || a->in_process)
		return -EBADMSG;
	a->n.images++;
	/* An exec: the blocks of the image it replaces are gone. */
	if (!(rec->stk[1] & PROF_HELLO_FORKED)) {
		e = keyed_table_find(&a->pid_space, (uint64_t)(uint32_t)pid,
				     NULL, NULL);
		if (e)
			prof_heap_agg_image_gone(&a->heap, e->index);
	}
	/* A new image (start, exec) or a fork child: a new space either way. */
	err = prof_agg_space_new(a, pid, &space);
	if (err)
		return err;
	if (!(rec->stk[1] & PROF_HELLO_FORKED))
		return 0;
	e = keyed_table_find(&a->pid_space, (uint64_t)(uint32_t)rec->stk[0],
			     NULL, NULL);
	if (!e)
		return 0; /* the parent is not profiled: raw addresses */
	parent = e->index;
	for (size_t i = 0; i < a->spaces[parent].nmaps; i++) {
		const struct prof_map_spec *m = &a->spaces[parent].maps[i];

		err = space_add_map(&a->spaces[space], m->start, m->limit,
				    m->offset, m->path);
		if (err)
			return err;
	}
	return 0;
}

static int take_map(struct prof_agg *a, const struct profbuf_record *rec,
		    pid_t pid)
{
	const char *path;
	uint32_t space;
	int err;

	if (rec->nstk < 4 || rec->stk[0] >= rec->stk[1])
		return -EBADMSG;
	path = prof_stream_unpack((const uint64_t *)rec->stk + 3,
				  rec->nstk - 3);
	if (!path || !*path)
		return -EBADMSG;
	err = space_of(a, pid, &space);
	if (err)
		return err;
	a->n.maps++;
	return space_add_map(&a->spaces[space], rec->stk[0], rec->stk[1],
			     rec->stk[2], path);
}

/* ---- samples ---- */

static int thread_of(struct prof_agg *a, uint32_t space, uint32_t tid,
		     uint32_t *out)
{
	uint64_t key = (uint64_t)(space + 1) << 32 | tid;
	struct index_entry *e =
		keyed_table_find(&a->thread_index, key, NULL, NULL);
	struct agg_thread *v;

	if (e) {
		*out = e->index;
		return 0;
	}
	v = array_grow(a->threads, &a->capthreads, a->nthreads + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	a->threads = v;
	e = keyed_table_insert(&a->thread_index, key, NULL, NULL);
	if (!e)
		return -ENOMEM;
	e->index = (uint32_t)a->nthreads;
	v[a->nthreads].space = space;
	v[a->nthreads].tid = tid;
	prof_agg_read_comm(a->spaces[space].pid, tid, v[a->nthreads].name);
	*out = (uint32_t)a->nthreads++;
	a->n.threads++;
	return 0;
}

/* One more sample of @periods on (@stack, @who: KEY_* | thread + 1). */
static int count(struct prof_agg *a, uint32_t stack, uint32_t who,
		 uint64_t periods)
{
	struct agg_entry *e = keyed_table_insert(
		&a->agg, (uint64_t)stack << 32 | who, NULL, NULL);

	if (!e)
		return -ENOMEM;
	e->samples++;
	e->periods += periods;
	return 0;
}

static int take_sample(struct prof_agg *a, const struct profbuf_record *rec,
		       pid_t pid)
{
	uint64_t periods = rec->hdr[PROF_HDR_KIND_PERIODS] & PROF_PERIODS_MASK;
	uint32_t tid = (uint32_t)rec->hdr[PROF_HDR_TID];
	uint32_t stack, space, thread;
	int err;

	if (!periods || !tid)
		return -EBADMSG;
	err = space_of(a, pid, &space);
	if (!err)
		err = thread_of(a, space, tid, &thread);
	if (err)
		return err;
	a->n.read++;
	a->n.periods += periods;
	if (!rec->nstk) {
		stack = STACK_EMPTY;
	} else {
		stack = stacktab_put(a->tab, rec->stk, rec->nstk);
		if (!stack) {
			stack = STACK_TABLE_FULL;
			a->n.table_full++;
		}
	}
	return count(a, stack, thread + 1, periods);
}

/* A wall record: its stack (PROF_REC_WALL) or its thread's last. */
static int take_wall(struct prof_agg *a, const struct profbuf_record *rec,
		     pid_t pid, bool repeat)
{
	uint64_t periods = rec->hdr[PROF_HDR_KIND_PERIODS] & PROF_PERIODS_MASK;
	uint32_t tid = (uint32_t)rec->hdr[PROF_HDR_TID];
	uint32_t stack = STACK_EMPTY, space, thread, flags = KEY_WALL;
	int err;

	if (!periods || !tid || rec->nstk < 1 || rec->stk[0] > 1 ||
	    (repeat && rec->nstk != 1))
		return -EBADMSG;
	if (rec->stk[0] == PROF_WALL_SLEEPING)
		flags |= KEY_SLEEPING;
	err = space_of(a, pid, &space);
	if (!err)
		err = thread_of(a, space, tid, &thread);
	if (err)
		return err;
	if (thread + 1 >= KEY_WALL)
		return -EBADMSG;
	if (repeat) {
		if (a->threads[thread].wall_stack)
			stack = a->threads[thread].wall_stack;
	} else if (rec->nstk > 1) {
		stack = stacktab_put(a->tab, rec->stk + 1, rec->nstk - 1);
		if (!stack) {
			stack = STACK_TABLE_FULL;
			a->n.table_full++;
		}
		a->threads[thread].wall_stack = stack;
	}
	a->n.read++;
	a->n.periods += periods;
	return count(a, stack, flags | (thread + 1), periods);
}

static int take_heap(struct prof_agg *a, const struct profbuf_record *rec,
		     pid_t pid)
{
	uint32_t space;
	int err = space_of(a, pid, &space);

	if (err)
		return err;
	return prof_heap_agg_take(
		&a->heap, a->tab, rec, space,
		prof_hdr_kind(rec->hdr[PROF_HDR_KIND_PERIODS]) ==
			PROF_REC_FREE);
}

static int take_record(struct prof_agg *a, const struct profbuf_record *rec)
{
	pid_t pid = (pid_t)rec->hdr[PROF_HDR_PID];

	if (profbuf_record_is_overflow(rec)) {
		a->n.lost += profbuf_record_overflow_count(rec);
		return 0;
	}
	if (pid <= 0)
		return -EBADMSG;
	switch (prof_hdr_kind(rec->hdr[PROF_HDR_KIND_PERIODS])) {
	case PROF_REC_SAMPLE:
		return take_sample(a, rec, pid);
	case PROF_REC_MAP:
		return take_map(a, rec, pid);
	case PROF_REC_HELLO:
		return take_hello(a, rec, pid);
	case PROF_REC_ALLOC:
	case PROF_REC_FREE:
		return take_heap(a, rec, pid);
	case PROF_REC_WALL:
	case PROF_REC_REPEAT:
		return take_wall(
			a, rec, pid,
			prof_hdr_kind(rec->hdr[PROF_HDR_KIND_PERIODS]) ==
				PROF_REC_REPEAT);
	}
	return -EBADMSG;
}

/**
 * prof_agg_take() - take one read's worth of records.
 * @a: the aggregation.
 * @r: a read of the profiler's ring (PROF_HDR_WORDS header words).
 *
 * A record that makes no sense is counted (prof_agg_counts().bad) and
 * skipped.
 *
 * Return: 0, or -ENOMEM (the record that met it is not counted).
 */
int prof_agg_take(struct prof_agg *a, const struct profbuf_read *r)
{
	struct profbuf_record rec;
	struct profbuf_iter it;
	int err;

	profbuf_iter_init(&it, r, PROF_HDR_WORDS);
	while (profbuf_iter_next(&it, &rec)) {
		err = take_record(a, &rec);
		if (err == -EBADMSG)
			a->n.bad++;
		else if (err)
			return err;
	}
	/* a ring another process scribbled on: the rest of the read */
	if (profbuf_iter_malformed(&it))
		a->n.bad++;
	return 0;
}

/**
 * prof_agg_set_thread_name() - the name an in-process thread exited with.
 * @a:    the aggregation (in-process).
 * @tid:  the thread.
 * @name: its comm.
 */
void prof_agg_set_thread_name(struct prof_agg *a, pid_t tid, const char *name)
{
	struct index_entry *e =
		keyed_table_find(&a->thread_index,
				 (uint64_t)1 << 32 | (uint32_t)tid, NULL, NULL);

	if (e && name[0])
		snprintf(a->threads[e->index].name, sizeof(a->threads[0].name),
			 "%s", name);
}

/**
 * prof_agg_counts() - what the records said so far.
 */
void prof_agg_counts(const struct prof_agg *a, struct prof_agg_counts *c)
{
	struct stacktab_stats ts;
	uint64_t pids = 0;

	*c = a->n;
	c->lost = prof_agg_cpu_lost(a);
	stacktab_stats(a->tab, &ts);
	c->stacks = ts.stacks;
	for (size_t i = 0; i < a->nspaces; i++) {
		size_t j;

		for (j = 0; j < i; j++)
			if (a->spaces[j].pid == a->spaces[i].pid)
				break;
		pids += j == i;
	}
	c->pids = pids;
}

/**
 * prof_agg_new() - an empty aggregation.
 * @in_process: the records are this process's own (one address space,
 *		symbolized from /proc/self/maps).
 * @table_bytes: the stack table's arena, 0 for the default.
 * @err:	receives -errno on failure.
 *
 * Return: the aggregation, or NULL.
 */
struct prof_agg *prof_agg_new(bool in_process, size_t table_bytes, int *err)
{
	struct prof_agg *a = calloc(1, sizeof(*a));

	if (!a) {
		*err = -ENOMEM;
		return NULL;
	}
	a->in_process = in_process;
	keyed_table_init(&a->agg, sizeof(struct agg_entry));
	keyed_table_init(&a->thread_index, sizeof(struct index_entry));
	keyed_table_init(&a->pid_space, sizeof(struct index_entry));
	keyed_table_init(&a->proc_cpu, sizeof(struct cpu_entry));
	prof_heap_agg_init(&a->heap);
	a->tab = stacktab_new(table_bytes ? table_bytes : AGG_STACKS_MAX_BYTES,
			      AGG_EXPECTED_STACKS);
	if (!a->tab) {
		*err = -errno;
		free(a);
		return NULL;
	}
	return a;
}

/**
 * prof_agg_free() - free everything, symbolizers included.
 * @a: may be NULL.
 */
void prof_agg_free(struct prof_agg *a)
{
	if (!a)
		return;
	prof_agg_forget_symbols(a);
	for (size_t i = 0; i < a->nspaces; i++) {
		for (size_t j = 0; j < a->spaces[i].nmaps; j++)
			free((void *)a->spaces[i].maps[j].path);
		free(a->spaces[i].maps);
	}
	free(a->spaces);
	free(a->threads);
	keyed_table_free(&a->agg);
	keyed_table_free(&a->thread_index);
	keyed_table_free(&a->pid_space);
	keyed_table_free(&a->proc_cpu);
	prof_heap_agg_free(&a->heap);
	stacktab_free(a->tab);
	free(a);
}

/**
 * prof_agg_set_process_cpu() - the CPU time process @pid used over its
 * session (its counters' cpu_ns), for the "[profring: unsampled CPU]"
 * entry of the whole run's profile.
 * @a:		the aggregation.
 * @pid:	the process (0: ignored).
 * @ns:		its CPU time; 0: not known (ignored).
 * @period_ns:	the sampling period (one CPU sample's period).
 *
 * Return: 0, or -ENOMEM (the process is then left out of the entry).
 */
int prof_agg_set_process_cpu(struct prof_agg *a, pid_t pid, uint64_t ns,
			     uint64_t period_ns)
{
	struct cpu_entry *e;

	if (pid <= 0 || !ns || !period_ns)
		return 0;
	e = keyed_table_insert(&a->proc_cpu, (uint64_t)pid, NULL, NULL);
	if (!e)
		return -ENOMEM;
	e->ns = ns;
	a->period_ns = period_ns;
	return 0;
}
