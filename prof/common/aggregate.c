// SPDX-License-Identifier: MIT
/*
 * prof/common/aggregate.c - from records to a profile: the records taken here,
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
 *     A mapping's path is held once however many spaces have it (interned
 *     in `paths`).  A new image of a pid that had one is an exec: the old
 *     image's sampled heap blocks are no longer in use;
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
 * Every count, length and index it holds is checked before use (paths
 * end in a NUL within PROF_AGG_PATH_MAX, samples hold at most
 * PROFRING_PROF_MAX_FRAMES), and what it may make the aggregation hold is
 * bounded (struct prof_agg_limits: spaces, threads, mappings per image,
 * the memory of all mappings): past a limit, what does not fit is dropped
 * and counted (images_dropped, maps_dropped, dropped), never allocated.
 * The work is linear in what is read: every count is kept as records
 * come, none is recounted by a walk over what was kept (an exec's heap
 * blocks are retired at once, heap_agg.c), and a fork child's inherited
 * mappings are bounded by the limits.
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
#include "prof/common/aggregate_impl.h"
#include "prof/common/procfs.h"
#include "prof/wire/stream.h"

#include <profring/stacktab.h>

#include "pprof/symbolize.h" /* struct prof_map_spec */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/*
 * A new address space for @pid, which becomes its current one.  Past the
 * limit of spaces there is none: -ENOSPC, and a pid that had one has
 * none now (SPACE_NONE: its new image's records are dropped).
 */
int prof_agg_space_new(struct prof_agg *a, pid_t pid, uint32_t *out)
{
	struct agg_space *v;
	struct index_entry *e;
	size_t before = a->pid_space.n;

	if (a->nspaces >= a->lim.spaces) {
		e = keyed_table_find(&a->pid_space, (uint64_t)(uint32_t)pid,
				     NULL, NULL);
		if (e)
			e->index = SPACE_NONE;
		return -ENOSPC;
	}
	v = array_grow(a->spaces, &a->capspaces, a->nspaces + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	a->spaces = v;
	e = keyed_table_insert(&a->pid_space, (uint64_t)(uint32_t)pid, NULL,
			       NULL);
	if (!e)
		return -ENOMEM;
	a->n.pids += a->pid_space.n > before;
	memset(&v[a->nspaces], 0, sizeof(v[0]));
	v[a->nspaces].pid = pid;
	e->index = (uint32_t)a->nspaces;
	*out = (uint32_t)a->nspaces++;
	return 0;
}

/* A 64-bit hash of @len bytes at @p, seeded (never 0: a table key). */
static uint64_t path_hash(uint64_t seed, const char *p, size_t len)
{
	uint64_t h = seed ^ (len * UINT64_C(0x9e3779b97f4a7c15)), w;

	for (size_t i = 0; i < len; i += 8) {
		w = 0;
		memcpy(&w, p + i, len - i < 8 ? len - i : 8);
		h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
		h ^= h >> 29;
	}
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 32;
	return h ? h : 1;
}

static bool path_eq(const void *entry, const void *arg)
{
	return !strcmp(((const struct agg_path *)entry)->path, arg);
}

/* @path (@len bytes) as the aggregation's one copy of it, or NULL. */
static const char *path_intern(struct prof_agg *a, const char *path, size_t len)
{
	uint64_t key = path_hash(a->path_seed, path, len);
	struct agg_path *e = keyed_table_find(&a->paths, key, path_eq, path);
	char *copy;

	if (e)
		return e->path;
	copy = strndup(path, len);
	if (!copy)
		return NULL;
	e = keyed_table_insert(&a->paths, key, path_eq, copy);
	if (!e) {
		free(copy);
		return NULL;
	}
	e->path = copy;
	return copy;
}

/*
 * What a mapping of a path of @len bytes costs (limits' map_bytes): the
 * spec here, and what its image's symbolizer keeps for it at the end (its
 * mapping, its private record of it, the file's record, the path's copy).
 */
static uint64_t map_cost(size_t len)
{
	return PROF_AGG_MAP_COST + len + 1;
}

/* Room in space @s for one more mapping of @cost: else count it dropped. */
static bool map_fits(struct prof_agg *a, const struct agg_space *s,
		     uint64_t cost)
{
	if (s->nmaps < a->lim.space_maps &&
	    a->n.map_bytes + cost <= a->lim.map_bytes)
		return true;
	a->n.maps_dropped++;
	return false;
}

/* Append a mapping whose @path is interned, its room made and counted. */
static void space_put_map(struct prof_agg *a, struct agg_space *s,
			  const struct prof_map_spec *m, uint64_t cost)
{
	s->maps[s->nmaps++] = *m;
	a->n.map_bytes += cost;
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
		return e->index == SPACE_NONE ? -ENOSPC : 0;
	}
	return prof_agg_space_new(a, pid, out);
}

/*
 * The path packed in @rec's payload from word @at: NULL unless it ends in
 * a NUL within PROF_AGG_PATH_MAX bytes.  Its length goes to @len.
 */
static const char *record_path(const struct profbuf_record *rec, size_t at,
			       size_t *len)
{
	size_t n = rec->nstk > at ? rec->nstk - at : 0;
	const char *path;

	if (n > prof_stream_words(PROF_AGG_PATH_MAX - 1))
		return NULL;
	path = prof_stream_unpack((const uint64_t *)rec->stk + at, n);
	if (path)
		*len = strlen(path); /* < PROF_AGG_PATH_MAX: n bounds it */
	return path;
}

/*
 * A fork child's space @space starts with the mappings space @parent had:
 * the same specs, the same interned paths, as many as the limits let in
 * (in order; the rest counted dropped at once, not one by one).
 */
static int space_inherit(struct prof_agg *a, uint32_t space, uint32_t parent)
{
	struct agg_space *s = &a->spaces[space];
	const struct agg_space *p = &a->spaces[parent];
	struct prof_map_spec *v;
	size_t i, n = p->nmaps;

	if (!n)
		return 0;
	/* the room they take, no more: the child's first MAP grows it */
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->maps = v;
	s->capmaps = n;
	for (i = 0; i < n; i++) {
		uint64_t cost = map_cost(strlen(p->maps[i].path));

		if (!map_fits(a, s, cost))
			break;
		space_put_map(a, s, &p->maps[i], cost);
	}
	if (i < n)
		a->n.maps_dropped += n - i - 1; /* map_fits() counted one */
	return 0;
}

/*
 * HELLO: [ppid, flags, exe path].  A new image (start, exec) or a fork
 * child: a new space either way, the child's with its parent's mappings.
 */
static int take_hello(struct prof_agg *a, const struct profbuf_record *rec,
		      pid_t pid)
{
	struct index_entry *e;
	uint32_t space, parent = SPACE_NONE;
	bool forked;
	size_t len;
	int err;

	if (a->in_process || rec->nstk < 3 || rec->stk[0] > INT32_MAX ||
	    rec->stk[1] & ~(uint64_t)PROF_HELLO_FORKED ||
	    !record_path(rec, 2, &len))
		return -EBADMSG;
	forked = rec->stk[1] & PROF_HELLO_FORKED;
	a->n.images++;
	e = keyed_table_find(&a->pid_space,
			     forked ? (uint64_t)rec->stk[0]
				    : (uint64_t)(uint32_t)pid,
			     NULL, NULL);
	if (e)
		parent = e->index;
	/*
	 * An exec: the blocks of the image it replaces are gone (heap_agg.c
	 * marks the space, in constant time).
	 */
	if (!forked && parent != SPACE_NONE)
		prof_heap_agg_image_gone(&a->heap, parent);
	err = prof_agg_space_new(a, pid, &space);
	if (err == -ENOSPC) {
		a->n.images_dropped++;
		return 0;
	}
	if (err)
		return err;
	if (!forked || parent == SPACE_NONE)
		return 0; /* a new image, or a parent not profiled */
	return space_inherit(a, space, parent);
}

static int take_map(struct prof_agg *a, const struct profbuf_record *rec,
		    pid_t pid)
{
	struct prof_map_spec m;
	struct agg_space *s;
	const char *path;
	struct prof_map_spec *v;
	uint32_t space;
	size_t len;
	uint64_t cost;
	int err;

	if (rec->nstk < 4 || rec->stk[0] >= rec->stk[1])
		return -EBADMSG;
	path = record_path(rec, 3, &len);
	if (!path || !len)
		return -EBADMSG;
	err = space_of(a, pid, &space);
	if (err)
		return err;
	a->n.maps++;
	s = &a->spaces[space];
	cost = map_cost(len);
	if (!map_fits(a, s, cost))
		return 0;
	v = array_grow(s->maps, &s->capmaps, s->nmaps + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->maps = v;
	m.start = rec->stk[0];
	m.limit = rec->stk[1];
	m.offset = rec->stk[2];
	m.path = path_intern(a, path, len);
	if (!m.path)
		return -ENOMEM;
	space_put_map(a, s, &m, cost);
	return 0;
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
	if (a->nthreads >= a->lim.threads)
		return -ENOSPC;
	v = array_grow(a->threads, &a->capthreads, a->nthreads + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	a->threads = v;
	e = keyed_table_insert(&a->thread_index, key, NULL, NULL);
	if (!e)
		return -ENOMEM;
	e->index = (uint32_t)a->nthreads;
	a->spaces[space].sampled = true;
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

/* A sample's periods (1 to PROF_AGG_PERIODS_MAX) and tid make sense. */
static bool sample_ok(const struct profbuf_record *rec)
{
	uint64_t periods = rec->hdr[PROF_HDR_KIND_PERIODS] & PROF_PERIODS_MASK;
	uint64_t tid = rec->hdr[PROF_HDR_TID];

	return periods && periods <= PROF_AGG_PERIODS_MAX && tid &&
	       tid <= INT32_MAX;
}

static int take_sample(struct prof_agg *a, const struct profbuf_record *rec,
		       pid_t pid)
{
	uint64_t periods = rec->hdr[PROF_HDR_KIND_PERIODS] & PROF_PERIODS_MASK;
	uint32_t tid = (uint32_t)rec->hdr[PROF_HDR_TID];
	uint32_t stack, space, thread;
	int err;

	if (!sample_ok(rec) || rec->nstk > PROFRING_PROF_MAX_FRAMES)
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

	if (!sample_ok(rec) || rec->nstk < 1 ||
	    rec->nstk > 1 + PROFRING_PROF_MAX_FRAMES || rec->stk[0] > 1 ||
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
	err = prof_heap_agg_take(
		&a->heap, a->tab, rec, space,
		prof_hdr_kind(rec->hdr[PROF_HDR_KIND_PERIODS]) ==
			PROF_REC_FREE);
	if (!err)
		a->spaces[space].sampled = true; /* it may have a site */
	return err;
}

static int take_lock(struct prof_agg *a, const struct profbuf_record *rec,
		     pid_t pid)
{
	uint32_t space;
	int err = space_of(a, pid, &space);

	if (err)
		return err;
	err = prof_lock_agg_take(&a->lock, a->tab, rec, space);
	if (!err)
		a->spaces[space].sampled = true; /* it has a site */
	return err;
}

static int take_record(struct prof_agg *a, const struct profbuf_record *rec)
{
	pid_t pid = (pid_t)rec->hdr[PROF_HDR_PID];

	if (profbuf_record_is_overflow(rec)) {
		a->n.lost += profbuf_record_overflow_count(rec);
		return 0;
	}
	if (!rec->hdr[PROF_HDR_PID] || rec->hdr[PROF_HDR_PID] > INT32_MAX)
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
	case PROF_REC_LOCK:
		return take_lock(a, rec, pid);
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
 * skipped; so is one past a limit (prof_agg_counts().dropped).  The work
 * is linear in the words read, and at most the limits' worth more (a
 * fork child's inherited mappings).
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
		else if (err == -ENOSPC)
			a->n.dropped++;
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

	*c = a->n; /* pids counted as they came (prof_agg_space_new()) */
	c->lost = prof_agg_cpu_lost(a);
	stacktab_stats(a->tab, &ts);
	c->stacks = ts.stacks;
}

/**
 * prof_agg_set_limits() - other limits than the defaults (a test's, a
 * fuzzer's), before any record is taken.  The threads are held under
 * what the keys can number.
 */
void prof_agg_set_limits(struct prof_agg *a, const struct prof_agg_limits *lim)
{
	a->lim = *lim;
	if (a->lim.threads > KEY_WALL - 2)
		a->lim.threads = KEY_WALL - 2;
	if (a->lim.spaces > SPACE_NONE - 1)
		a->lim.spaces = SPACE_NONE - 1;
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
	struct timespec ts;

	if (!a) {
		*err = -ENOMEM;
		return NULL;
	}
	a->in_process = in_process;
	a->lim =
		(struct prof_agg_limits){ .spaces = PROF_AGG_SPACES_MAX,
					  .threads = PROF_AGG_THREADS_MAX,
					  .space_maps = PROF_AGG_SPACE_MAPS_MAX,
					  .map_bytes = PROF_AGG_MAP_BYTES_MAX };
	clock_gettime(CLOCK_MONOTONIC, &ts);
	a->path_seed = (uint64_t)(uintptr_t)a ^ (uint64_t)ts.tv_nsec << 20 ^
		       (uint64_t)ts.tv_sec;
	keyed_table_init(&a->paths, sizeof(struct agg_path));
	keyed_table_init(&a->agg, sizeof(struct agg_entry));
	keyed_table_init(&a->thread_index, sizeof(struct index_entry));
	keyed_table_init(&a->pid_space, sizeof(struct index_entry));
	keyed_table_init(&a->proc_cpu, sizeof(struct cpu_entry));
	prof_heap_agg_init(&a->heap);
	prof_lock_agg_init(&a->lock);
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
	struct agg_path *p;
	size_t slot = 0;

	if (!a)
		return;
	prof_agg_forget_symbols(a);
	for (size_t i = 0; i < a->nspaces; i++)
		free(a->spaces[i].maps); /* their paths are interned */
	free(a->spaces);
	while ((p = keyed_table_next(&a->paths, &slot)))
		free(p->path);
	keyed_table_free(&a->paths);
	free(a->threads);
	keyed_table_free(&a->agg);
	keyed_table_free(&a->thread_index);
	keyed_table_free(&a->pid_space);
	keyed_table_free(&a->proc_cpu);
	prof_heap_agg_free(&a->heap);
	prof_lock_agg_free(&a->lock);
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
