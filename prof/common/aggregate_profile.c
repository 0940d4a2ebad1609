// SPDX-License-Identifier: MIT
/*
 * prof/common/aggregate_profile.c - from an aggregation (aggregate.c, whose
 * opening comment says what it holds) to a profile: its entries as
 * samples, CPU or wall-clock, with their threads' names and, for wall
 * samples, their state; one symbolizer per address space; windows (the
 * entries since a base); the heap profile (heap_agg.c's).
 */
#include "prof/common/aggregate_impl.h"

#include "pprof/perfmap.h"
#include "pprof/symbolize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
 * The program the user ran: the last image of the first process (a
 * wrapper's exec), not the wrapper, is pprof's main binary.
 */
static size_t main_space(const struct prof_agg *a)
{
	size_t main = 0;

	for (size_t i = 1; i < a->nspaces; i++)
		if (a->spaces[i].pid == a->spaces[0].pid)
			main = i;
	return main;
}

/*
 * Space @i's symbolizer: the process's own, or its reports.  JIT code is
 * named from the perf map of the space's pid (perf's /tmp/perf-PID.map,
 * which stays after the process is gone): in-process,
 * prof_symbolizer_new() looks for its own; under the launcher, each space
 * is given its pid's (every image of a pid that exec'd gets the same file:
 * the map names only addresses in no mapped file of that image, or that
 * the file's symbols do not name).
 */
static int make_symbolizer(struct prof_agg *a, size_t i)
{
	const struct agg_space *s = &a->spaces[i];
	struct prof_symbolizer *sym;
	char path[64];

	sym = a->in_process ? prof_symbolizer_new()
			    : prof_symbolizer_new_maps(s->maps, s->nmaps);
	if (!sym)
		return -errno;
	a->syms[i] = sym;
	if (a->in_process)
		return 0;
	snprintf(path, sizeof(path), PROF_PERFMAP_PATH_FMT, (int)s->pid);
	return prof_symbolizer_set_perf_map(sym, path);
}

/*
 * One symbolizer per address space that has something to name (a thread
 * with samples, a heap site) and the main one; the others' stay NULL (no
 * mappings in the profile, nothing to look up), so that images that
 * never sent a sample (a flood of HELLOs) cost nothing here.
 */
static int make_symbolizers(struct prof_agg *a)
{
	size_t main = main_space(a);
	int err;

	a->syms = calloc(a->nspaces + 1, sizeof(*a->syms));
	if (!a->syms)
		return -ENOMEM;
	a->nsyms = a->nspaces;
	for (size_t i = 0; i < a->nspaces; i++) {
		if (!a->in_process && !a->spaces[i].sampled && i != main)
			continue;
		err = make_symbolizer(a, i);
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
		prof_agg_read_comm(a->spaces[a->threads[i].space].pid,
				   a->threads[i].tid, name);
		if (name[0])
			memcpy(a->threads[i].name, name, sizeof(name));
	}
}

/* Lost records that were not heap records: samples (or mappings). */
uint64_t prof_agg_cpu_lost(const struct prof_agg *a)
{
	return a->n.lost > a->heap_refused ? a->n.lost - a->heap_refused : 0;
}

static int ensure_spaces(struct prof_agg *a)
{
	uint32_t unused;

	if (a->in_process && !a->nspaces)
		return prof_agg_space_new(a, getpid(), &unused);
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
	p->main_space = main_space(a);
	return 0;
}

/* profile_begin(), and room in @p for @count samples, at *@v. */
static int profile_begin_room(struct prof_agg *a, struct prof_profile *p,
			      size_t count, struct prof_sample **v)
{
	int err = profile_begin(a, p);

	if (err)
		return err;
	*v = calloc(count, sizeof(**v));
	if (!*v)
		return -ENOMEM;
	p->samples = *v;
	return 0;
}

/*
 * profile_end() - @n samples filled in at @v, @p's (by a fill that
 * returned @err): their pids, their count; on an error the profile is
 * freed.
 */
static int profile_end(const struct prof_agg *a, struct prof_profile *p,
		       struct prof_sample *v, size_t n, int err)
{
	for (size_t i = 0; i < n && !a->in_process; i++)
		if (!v[i].special)
			v[i].pid = (uint32_t)a->spaces[v[i].space].pid;
	p->nsamples = n;
	if (err)
		prof_agg_profile_free(p);
	return err;
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

	err = profile_begin_room(a, p, prof_heap_agg_count(&a->heap), &v);
	if (err)
		return err;
	p->heap_rate = rate ? rate : 1;
	err = prof_heap_agg_fill(&a->heap, a->tab, rate, a->heap_refused, base,
				 v, &n);
	return profile_end(a, p, v, n, err);
}

/**
 * prof_agg_lock_profile() - the mutex profile (@block false: contention on
 * mutexes and rwlocks) or the block profile (every lock wait) of the
 * records taken (mutex_agg.c).
 * @rate:	one wait in @rate was recorded: the scaling.
 * @lost:	lock records the writers saw refused.
 * @base:	NULL, or a delta's start (prof_agg_lock_base()).
 * @p:		as prof_agg_profile(): free with prof_agg_profile_free().
 *
 * Return: 0 or -errno.
 */
int prof_agg_lock_profile(struct prof_agg *a, bool block, uint64_t rate,
			  uint64_t lost, const struct prof_lock_base *base,
			  struct prof_profile *p)
{
	struct prof_sample *v;
	size_t n;
	int err;

	err = profile_begin_room(a, p, prof_lock_agg_count(&a->lock), &v);
	if (err)
		return err;
	p->lock_rate = rate ? rate : 1;
	p->period_ns = 1;
	err = prof_lock_agg_fill(&a->lock, a->tab, block, rate, lost, base, v,
				 &n);
	return profile_end(a, p, v, n, err);
}

/**
 * prof_agg_lock_base() - the start of a delta lock profile: every site's
 * waits so far, and @lost, the records refused so far.  Free with
 * prof_lock_base_free().
 *
 * Return: 0 or -ENOMEM.
 */
int prof_agg_lock_base(const struct prof_agg *a, uint64_t lost,
		       struct prof_lock_base *b)
{
	return prof_lock_agg_base(&a->lock, lost, b);
}

/* prof_agg_lock_waits() - the lock records taken so far. */
uint64_t prof_agg_lock_waits(const struct prof_agg *a)
{
	return a->lock.waits;
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
	b->lost = prof_agg_cpu_lost(a);
	return keyed_table_copy(&b->entries, &a->agg);
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

/*
 * The periods of CPU no sample shows: for each process whose CPU time over
 * its session is known (prof_agg_set_process_cpu()), its whole periods
 * less those its CPU samples stand for, less the samples lost (already an
 * entry of their own, counted one period each; those of processes whose
 * CPU is unknown too, so the entry errs low).  What it holds: the CPU
 * threads use after their last look at their clocks (glibc's and the
 * kernel's exit work), that of threads our pthread_create did not start,
 * the profiler's own threads' (in-process), and what the samples' rounding
 * leaves.  A process whose samples stand for more than its CPU adds
 * nothing; a pid's samples of its images before an exec count against its
 * last image's CPU (so it is an underestimate there).
 */
struct pid_periods {
	uint64_t key; /* pid */
	uint64_t periods;
};

static uint64_t unsampled_periods(struct prof_agg *a)
{
	struct keyed_table mine; /* struct pid_periods */
	struct pid_periods *m;
	struct cpu_entry *c;
	struct agg_entry *e;
	uint64_t total = 0, lost = prof_agg_cpu_lost(a);
	size_t i = 0;

	if (!a->proc_cpu.n)
		return 0;
	keyed_table_init(&mine, sizeof(struct pid_periods));
	while ((e = keyed_table_next(&a->agg, &i))) {
		uint32_t t = KEY_THREAD(e->key);
		pid_t pid;

		if ((e->key & KEY_WALL) || !t || t > a->nthreads)
			continue;
		pid = a->spaces[a->threads[t - 1].space].pid;
		if (pid <= 0)
			continue;
		m = keyed_table_insert(&mine, (uint64_t)pid, NULL, NULL);
		if (!m)
			goto out; /* without memory: no entry */
		m->periods += e->periods;
	}
	i = 0;
	while ((c = keyed_table_next(&a->proc_cpu, &i))) {
		uint64_t whole = c->ns / a->period_ns, seen = 0;

		m = keyed_table_find(&mine, c->key, NULL, NULL);
		seen = m ? m->periods : 0;
		total += whole > seen ? whole - seen : 0;
	}
	total = total > lost ? total - lost : 0;
out:
	keyed_table_free(&mine);
	return total;
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
	uint64_t lost = prof_agg_cpu_lost(a) - (base ? base->lost : 0);
	uint64_t unsampled = base ? 0 : unsampled_periods(a);
	struct prof_sample *v;
	struct agg_entry *e, d;
	size_t i = 0, n = 0;
	int err;

	err = profile_begin(a, p);
	if (err)
		return err;
	v = calloc(a->agg.n + 2, sizeof(*v));
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
	if (unsampled) {
		/* Periods of CPU, in no sample: a count of 0. */
		v[n].special = PROF_UNSAMPLED_NAME;
		v[n].periods = unsampled;
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
	if (!a->syms[e->index] && make_symbolizer(a, e->index))
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
