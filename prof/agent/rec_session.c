// SPDX-License-Identifier: MIT
/*
 * prof/agent/rec_session.c - a heap or lock profiling session's start,
 * stop and fork (rec_session.h says how they pair with the writers).
 */
#include "prof/agent/rec_session.h"
#include "prof/agent/unwind.h"

#include <link.h>
#include <time.h>
#include <unistd.h>

struct prof_self_text prof_self_text;

static int find_self_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t me = (uintptr_t)arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo &&
		    me < lo + ph->p_memsz) {
			prof_self_text.lo = lo;
			prof_self_text.hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/**
 * prof_rec_start() - start a session of @s: its fields, then @on set.
 * @libunwind:	walk stacks with libunwind, if it is there.
 *
 * Not async-signal-safe.  The caller serializes the starts and stops of
 * both profilers, and has checked the arguments.
 */
void prof_rec_start(struct prof_rec_session *s, atomic_uint *on,
		    struct profbuf *buf, uint64_t rate, unsigned int max_frames,
		    struct prof_counters *counters, bool libunwind)
{
	s->buf = buf;
	s->rate = rate;
	s->max_frames = max_frames;
	s->counters = counters;
	s->libunwind = libunwind && prof_unwind_libunwind_available();
	if (s->libunwind)
		prof_unwind_libunwind_prepare();
	if (!prof_self_text.hi)
		dl_iterate_phdr(find_self_text,
				(void *)(uintptr_t)prof_rec_start);
	s->pid = getpid();
	/* Relaxed: published by the seq_cst store below. */
	atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
	/* seq_cst: pairs with prof_rec_enter()'s load (and publishes). */
	atomic_store_explicit(on, 1, memory_order_seq_cst);
}

/**
 * prof_rec_stop() - clear @on; return once no slow path of @s is writing.
 *
 * Not async-signal-safe.  After it the ring may be closed and freed.
 */
void prof_rec_stop(struct prof_rec_session *s, atomic_uint *on)
{
	struct timespec ts = { 0, 100000 };

	/* seq_cst: the other half of prof_rec_enter()'s pair. */
	atomic_store_explicit(on, 0, memory_order_seq_cst);
	/* Acquire: pairs with prof_rec_leave()'s release. */
	while (atomic_load_explicit(&s->inflight, memory_order_acquire))
		nanosleep(&ts, NULL);
}

/**
 * prof_rec_after_fork_child() - in a fork child (one thread).
 * @keep:	the child is profiled too (its records go where its
 *		parent's went, counted in @counters); else @on is cleared.
 *
 * The parent's other threads do not exist in the child: their in-flight
 * counts are dropped.
 */
void prof_rec_after_fork_child(struct prof_rec_session *s, atomic_uint *on,
			       bool keep, struct prof_counters *counters)
{
	/* Relaxed: one thread. */
	atomic_store_explicit(&s->inflight, 0, memory_order_relaxed);
	s->pid = getpid();
	if (keep && counters)
		s->counters = counters;
	else
		atomic_store_explicit(on, 0, memory_order_relaxed);
}
