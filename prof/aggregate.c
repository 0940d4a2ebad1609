// SPDX-License-Identifier: MIT
/*
 * prof/aggregate.c - from records to a profile.
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
#include "prof/aggregate.h"
#include "prof/heap_agg.h"
#include "prof/stream.h"

#include <profring/stacktab.h>

#include "pprof/perfmap.h"
#include "pprof/symbolize.h"
#include "pprof/table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pseudo stack ids for the synthetic entries (real ids are small). */
#define STACK_TABLE_FULL UINT32_MAX
#define STACK_EMPTY (UINT32_MAX - 1)

/* The key's thread half: a wall entry, its state; the thread index + 1. */
#define KEY_WALL (UINT32_C(1) << 30)
#define KEY_SLEEPING (UINT32_C(1) << 31)
#define KEY_THREAD(k) ((uint32_t)(k) & (KEY_WALL - 1))

/* The stack table's arena (address space, committed as used) and size. */
#define AGG_STACKS_MAX_BYTES ((size_t)64 << 20)
#define AGG_EXPECTED_STACKS 16384

/* Samples are interned whole: the stack table must not cut them. */
_Static_assert(PROFRING_PROF_MAX_FRAMES <= STACKTAB_MAX_DEPTH,
	       "a sample's frames must fit the stack table");

/* One image of one process: its pid and the mappings it reported. */
struct agg_space {
	pid_t pid;
	struct prof_map_spec *maps;
	size_t nmaps, capmaps;
};

struct agg_thread {
	uint32_t space;
	uint32_t tid;
	uint32_t wall_stack; /* its last wall sample's stack; 0: none */
	char name[16]; /* comm: at most 15 bytes and a NUL; "" if unknown */
};

/* Keyed table entries (pprof/table.h): a nonzero 64-bit key first. */
struct agg_entry {
	uint64_t key; /* stack << 32 | KEY_* | thread index + 1 */
	uint64_t samples;
	uint64_t periods;
};

struct index_entry {
	uint64_t key; /* thread: (space + 1) << 32 | tid; pid: pid */
	uint32_t index;
};

struct prof_agg {
	bool in_process;
	struct stacktab *tab;
	struct keyed_table agg; /* struct agg_entry */
	struct keyed_table thread_index; /* struct index_entry */
	struct keyed_table pid_space; /* pid -> current space */
	struct agg_thread *threads;
	size_t nthreads, capthreads;
	struct agg_space *spaces;
	size_t nspaces, capspaces;
	struct prof_symbolizer **syms; /* made by prof_agg_profile() */
	size_t nsyms;
	struct prof_agg_counts n;
	struct prof_heap_agg heap;
	uint64_t heap_refused;
};

static void read_comm(pid_t pid, uint32_t tid, char name[16])
{
	char path[64];
	ssize_t n;
	int fd;

	name[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)pid, tid);
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

/* ---- address spaces ---- */

static int space_new(struct prof_agg *a, pid_t pid, uint32_t *out)
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
	return space_new(a, pid, out);
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
	err = space_new(a, pid, &space);
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
	read_comm(a->spaces[space].pid, tid, v[a->nthreads].name);
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

/* ---- the profile ---- */

static const char *special_name(uint32_t stack)
{
	if (stack == STACK_TABLE_FULL)
		return PROF_TABLE_FULL_NAME;
	if (stack == STACK_EMPTY)
		return PROF_NO_STACK_NAME;
	return NULL;
}

static int fill_sample(struct prof_agg *a, const struct agg_entry *e,
		       struct prof_sample *s)
{
	uint32_t stack = (uint32_t)(e->key >> 32), who = (uint32_t)e->key;
	const struct agg_thread *t = &a->threads[KEY_THREAD(who) - 1];

	memset(s, 0, sizeof(*s));
	if (who & KEY_WALL)
		s->state = who & KEY_SLEEPING ? "sleeping" : "running";
	s->tid = t->tid;
	s->thread_name = t->name[0] ? t->name : NULL;
	s->space = t->space;
	s->pid = a->in_process ? 0 : (uint32_t)a->spaces[t->space].pid;
	s->samples = e->samples;
	s->periods = e->periods;
	s->special = special_name(stack);
	return s->special ? 0 : prof_sample_copy_stack(a->tab, stack, s);
}

/*
 * One symbolizer per address space: the process's own, or its reports.
 * JIT code is named from the perf map of the space's pid (perf's
 * /tmp/perf-PID.map, which stays after the process is gone): in-process,
 * prof_symbolizer_new() looks for its own; under the launcher, each space
 * is given its pid's (every image of a pid that exec'd gets the same file:
 * the map names only addresses in no mapped file of that image, or that
 * the file's symbols do not name).
 */
static int make_symbolizers(struct prof_agg *a)
{
	char path[64];
	int err;

	a->syms = calloc(a->nspaces + 1, sizeof(*a->syms));
	if (!a->syms)
		return -ENOMEM;
	for (a->nsyms = 0; a->nsyms < a->nspaces; a->nsyms++) {
		const struct agg_space *s = &a->spaces[a->nsyms];
		struct prof_symbolizer *sym =
			a->in_process
				? prof_symbolizer_new()
				: prof_symbolizer_new_maps(s->maps, s->nmaps);

		if (!sym)
			return -errno;
		a->syms[a->nsyms] = sym;
		if (a->in_process)
			continue;
		snprintf(path, sizeof(path), PROF_PERFMAP_PATH_FMT,
			 (int)s->pid);
		err = prof_symbolizer_set_perf_map(sym, path);
		if (err)
			return err;
	}
	return 0;
}

/**
 * prof_agg_refresh_names() - read the names of the threads again (those
 * still alive: a name set after the first sample counts).
 */
void prof_agg_refresh_names(struct prof_agg *a)
{
	char name[16];

	for (size_t i = 0; i < a->nthreads; i++) {
		read_comm(a->spaces[a->threads[i].space].pid, a->threads[i].tid,
			  name);
		if (name[0])
			memcpy(a->threads[i].name, name, sizeof(name));
	}
}

/* Lost records that were not heap records: samples (or mappings). */
static uint64_t cpu_lost(const struct prof_agg *a)
{
	return a->n.lost > a->heap_refused ? a->n.lost - a->heap_refused : 0;
}

static int ensure_spaces(struct prof_agg *a)
{
	uint32_t unused;

	if (a->in_process && !a->nspaces)
		return space_new(a, getpid(), &unused);
	return 0;
}

/* An empty profile with the aggregation's address spaces. */
static int profile_begin(struct prof_agg *a, struct prof_profile *p)
{
	int err;

	memset(p, 0, sizeof(*p));
	err = ensure_spaces(a);
	if (!err && !a->syms)
		err = make_symbolizers(a);
	if (err)
		return err;
	p->spaces = a->syms;
	p->nspaces = a->nsyms;
	return 0;
}

/**
 * prof_agg_set_heap_refused() - how many heap records the writers saw
 * the ring refuse (their counters): not CPU samples lost.
 */
void prof_agg_set_heap_refused(struct prof_agg *a, uint64_t n)
{
	a->heap_refused = n;
}

/**
 * prof_agg_heap_profile() - the heap profile of the records taken.
 * @a:		the aggregation; no record may be taken afterwards, unless
 *		prof_agg_forget_symbols() is called before the next profile.
 * @rate:	the sampling rate (bytes).
 * @base:	NULL, or a delta's start (prof_agg_heap_base()).
 * @p:		as prof_agg_profile(): free with prof_agg_profile_free().
 *
 * Return: 0 or -errno.
 */
int prof_agg_heap_profile(struct prof_agg *a, uint64_t rate,
			  const struct prof_heap_base *base,
			  struct prof_profile *p)
{
	struct prof_sample *v;
	size_t n;
	int err;

	err = profile_begin(a, p);
	if (err)
		return err;
	p->heap_rate = rate ? rate : 1;
	v = calloc(prof_heap_agg_count(&a->heap), sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->samples = v;
	err = prof_heap_agg_fill(&a->heap, a->tab, rate, a->heap_refused, base,
				 v, &n);
	for (size_t i = 0; i < n && !a->in_process; i++)
		if (!v[i].special)
			v[i].pid = (uint32_t)a->spaces[v[i].space].pid;
	p->nsamples = n;
	if (err)
		prof_agg_profile_free(p);
	return err;
}

/**
 * prof_agg_heap_base() - the start of a delta heap profile: every site's
 * allocations so far.  Free with prof_heap_base_free().
 *
 * Return: 0 or -ENOMEM.
 */
int prof_agg_heap_base(const struct prof_agg *a, struct prof_heap_base *b)
{
	return prof_heap_agg_base(&a->heap, b);
}

/**
 * prof_agg_forget_symbols() - drop the symbolizers the last profile made,
 * so that the next profile reads the process's mappings again (a profile
 * taken while the program runs: it may have loaded code since).  The
 * profiles made before must have been freed.
 */
void prof_agg_forget_symbols(struct prof_agg *a)
{
	for (size_t i = 0; i < a->nsyms; i++)
		prof_symbolizer_free(a->syms[i]);
	free(a->syms);
	a->syms = NULL;
	a->nsyms = 0;
}

/**
 * prof_agg_heap_counts() - what the heap records said so far.
 */
void prof_agg_heap_counts(const struct prof_agg *a, struct prof_heap_counts *c)
{
	*c = a->heap.n;
}

/**
 * prof_agg_cpu_base() - the start of a CPU profile of a window: every
 * (stack, thread)'s samples so far, and the samples lost so far.  Free
 * with prof_cpu_base_free().
 *
 * Return: 0 or -ENOMEM (free @b all the same).
 */
int prof_agg_cpu_base(const struct prof_agg *a, struct prof_cpu_base *b)
{
	const struct agg_entry *e;
	size_t i = 0;

	keyed_table_init(&b->entries, sizeof(struct agg_entry));
	b->lost = cpu_lost(a);
	while ((e = keyed_table_next(&a->agg, &i))) {
		struct agg_entry *c =
			keyed_table_insert(&b->entries, e->key, NULL, NULL);

		if (!c)
			return -ENOMEM;
		*c = *e;
	}
	return 0;
}

void prof_cpu_base_free(struct prof_cpu_base *b)
{
	keyed_table_free(&b->entries);
}

/* @e less what @base had of it; false when nothing is left. */
static bool since(const struct agg_entry *e, const struct prof_cpu_base *base,
		  struct agg_entry *out)
{
	const struct agg_entry *b =
		base ? keyed_table_find(&base->entries, e->key, NULL, NULL)
		     : NULL;

	*out = *e;
	if (b) {
		out->samples -= b->samples;
		out->periods -= b->periods;
	}
	return out->samples != 0;
}

/**
 * prof_agg_profile_since() - the samples aggregated since @base (all of
 * them without), with a symbolizer per address space (valid until
 * prof_agg_free() or prof_agg_forget_symbols()).
 * @a:	  the aggregation; no record may be taken afterwards, unless
 *	  prof_agg_forget_symbols() is called before the next profile.
 * @base: NULL, or a window's start (prof_agg_cpu_base()).
 * @p:	  receives samples, spaces; the caller fills in the period, times
 *	  and comments.  Free with prof_agg_profile_free().
 *
 * Return: 0 or -errno.
 */
int prof_agg_profile_since(struct prof_agg *a, const struct prof_cpu_base *base,
			   struct prof_profile *p)
{
	uint64_t lost = cpu_lost(a) - (base ? base->lost : 0);
	struct prof_sample *v;
	struct agg_entry *e, d;
	size_t i = 0, n = 0;
	int err;

	err = profile_begin(a, p);
	if (err)
		return err;
	v = calloc(a->agg.n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->samples = v;
	while ((e = keyed_table_next(&a->agg, &i))) {
		if (!since(e, base, &d))
			continue;
		err = fill_sample(a, &d, &v[n]);
		if (err) {
			p->nsamples = n;
			prof_agg_profile_free(p);
			return err;
		}
		n++;
	}
	if (lost) {
		/* An overflow record counts samples, not periods: one each. */
		v[n].special = PROF_LOST_NAME;
		v[n].samples = lost;
		v[n].periods = lost;
		n++;
	}
	p->nsamples = n;
	return 0;
}

/**
 * prof_agg_profile() - all the aggregated samples: prof_agg_profile_since()
 * with no base.
 */
int prof_agg_profile(struct prof_agg *a, struct prof_profile *p)
{
	return prof_agg_profile_since(a, NULL, p);
}

/**
 * prof_agg_symbol() - the name of the function at @pc in the address
 * space @pid has now (symbolizers made as a profile makes them).
 *
 * Return: the name (valid until the symbolizers are forgotten), or NULL.
 */
const char *prof_agg_symbol(struct prof_agg *a, pid_t pid, uint64_t pc)
{
	struct index_entry *e;

	if (ensure_spaces(a) || (!a->syms && make_symbolizers(a)))
		return NULL;
	e = keyed_table_find(&a->pid_space, (uint64_t)(uint32_t)pid, NULL,
			     NULL);
	if (!e || e->index >= a->nsyms)
		return NULL;
	return prof_symbolize(a->syms[e->index], (uintptr_t)pc, NULL);
}

/**
 * prof_agg_profile_free() - free what prof_agg_profile() made (but the
 * symbolizers, which live as long as the aggregation).
 */
void prof_agg_profile_free(struct prof_profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++)
		free((void *)p->samples[i].pcs);
	free((void *)p->samples);
	p->samples = NULL;
	p->nsamples = 0;
}

/**
 * prof_agg_counts() - what the records said so far.
 */
void prof_agg_counts(const struct prof_agg *a, struct prof_agg_counts *c)
{
	struct stacktab_stats ts;
	uint64_t pids = 0;

	*c = a->n;
	c->lost = cpu_lost(a);
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
	prof_heap_agg_free(&a->heap);
	stacktab_free(a->tab);
	free(a);
}
