// SPDX-License-Identifier: MIT
/*
 * prof/wire/shm.c - create, attach and read the launcher's shared memory
 * (layout and rules in shm.h).
 */
#include <profring/prof.h>

#include "prof/wire/shm.h"
#include "prof/agent/ring_guard.h"
#include "prof/agent/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The ring this process writes, as it attached (ring_guard.h). */
struct prof_ring_snap prof_ring_snap;

/* The header rounded up to pages: the ring starts on a page. */
static size_t header_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct prof_shm) + page - 1) & ~(page - 1);
}

/**
 * prof_shm_create() - the launcher's shared memory: a memfd holding a
 * header filled in from @p and an empty shared ring.
 * @p: the session.
 * @m: receives the mapping.  The memfd is close-on-exec: the launcher
 *     clears that in the child it runs.  Its size is sealed (it can
 *     neither shrink nor grow, and no seal can be added): the program
 *     inherits a writable descriptor, and an ftruncate() of it would
 *     otherwise take the pages from under the launcher's mapping (SIGBUS
 *     in the launcher, whatever it checks).
 *
 * Return: 0 or -errno.
 */
int prof_shm_create(const struct prof_shm_params *p, struct prof_shm_map *m)
{
	/* A record is at least 5 words: one tag per 4 words is plenty. */
	size_t ntags = p->buffer_words / 4 + 1;
	size_t ring =
		profbuf_shared_size(PROF_HDR_WORDS, p->buffer_words, ntags);
	struct prof_shm *h;
	int err;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (!ring)
		return -EINVAL;
	m->size = header_bytes() + ring;
	m->fd = memfd_create("profring-prof", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m->fd < 0)
		return -errno;
	if (ftruncate(m->fd, (off_t)m->size) ||
	    fcntl(m->fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail;
	m->base = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd,
		       0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		goto fail;
	}
	h = m->hdr = m->base;
	h->magic = PROF_SHM_MAGIC;
	h->version = PROF_SHM_VERSION;
	h->nslots = PROF_SHM_SLOTS;
	h->size = m->size;
	h->ring_offset = header_bytes();
	h->ring_size = ring;
	h->hz = p->hz;
	h->max_frames = p->max_frames;
	h->timer = p->timer;
	h->mode = p->mode;
	h->unwinder = p->unwinder;
	h->children = p->children;
	h->cpu = p->cpu;
	h->heap_rate = p->heap_rate;
	h->mutex_rate = p->mutex_rate;
	m->buf = profbuf_shared_init((char *)m->base + h->ring_offset, ring,
				     PROF_HDR_WORDS, p->buffer_words, ntags);
	if (!m->buf)
		goto fail;
	/* Wake the launcher in batches, as in-process (sampler.h says why). */
	profbuf_set_wake_watermark(m->buf, p->buffer_words / 4 < PROF_WAKE_WORDS
						   ? p->buffer_words / 4
						   : PROF_WAKE_WORDS);
	return 0;
fail:
	err = -errno;
	prof_shm_unmap(m);
	return err;
}

/**
 * prof_shm_attach() - map the launcher's memory from its descriptor.
 * @fd: the inherited memfd.
 * @m:  receives the mapping.
 *
 * Return: 0; -EPROTO for memory that is not a profring-prof header of
 * this version; -errno.
 */
int prof_shm_attach(int fd, struct prof_shm_map *m)
{
	struct prof_shm *h;
	struct stat st;
	int err = -EPROTO;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size < header_bytes())
		return -EPROTO;
	m->size = (size_t)st.st_size;
	m->base =
		mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		return -errno;
	}
	h = m->hdr = m->base;
	/*
	 * An earlier image of the program may have overwritten the header:
	 * the session must be one the launcher could have set, since the
	 * sampler sizes its work by it (max_frames, hz).
	 */
	if (h->magic != PROF_SHM_MAGIC || h->version != PROF_SHM_VERSION ||
	    h->size != m->size || h->nslots != PROF_SHM_SLOTS ||
	    h->ring_offset != header_bytes() ||
	    h->ring_size > m->size - h->ring_offset || !h->hz ||
	    h->hz > PROFRING_PROF_MAX_HZ || !h->max_frames ||
	    h->max_frames > PROFRING_PROF_MAX_FRAMES)
		goto fail;
	m->buf = profbuf_shared_attach((char *)m->base + h->ring_offset,
				       h->ring_size);
	if (!m->buf) {
		err = -errno;
		goto fail;
	}
	/* Checked by profbuf_shared_attach() a moment ago: 0 here. */
	err = pb_check_layout(m->buf, h->ring_size, &prof_ring_snap.l);
	if (err)
		goto fail;
	prof_ring_snap.b = m->buf;
	m->fd = fd;
	return 0;
fail:
	munmap(m->base, m->size);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	return err;
}

/* prof_shm_unmap() - drop this process's view (the memfd too). */
void prof_shm_unmap(struct prof_shm_map *m)
{
	profbuf_free(m->buf); /* the local handle only */
	if (m->base)
		munmap(m->base, m->size);
	if (m->fd >= 0)
		close(m->fd);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
}

/**
 * prof_shm_claim() - a counter slot for process @pid.
 *
 * Slots are handed out by one fetch_add; past the last, processes share
 * it (their counts add up the same).  Async-signal-safe (an atfork child
 * handler calls it).
 *
 * Return: the counters to give the sampler.
 */
struct prof_counters *prof_shm_claim(struct prof_shm *h, pid_t pid)
{
	/* Relaxed: the slot index is the only thing handed over. */
	uint32_t i = atomic_fetch_add_explicit(&h->next_slot, 1,
					       memory_order_relaxed);
	struct prof_shm_slot *s;
	int32_t none = 0;

	if (i >= PROF_SHM_SLOTS)
		i = PROF_SHM_SLOTS - 1;
	s = &h->slots[i];
	/* Relaxed: the pid is a label for the launcher's report. */
	atomic_compare_exchange_strong_explicit(&s->pid, &none, (int32_t)pid,
						memory_order_relaxed,
						memory_order_relaxed);
	return &s->ctr;
}

/**
 * prof_shm_parse_env() - parse PROF_SHM_ENV's "FD:ROOTPID".
 *
 * Return: 0, or -EINVAL for anything else (strictly decimal, in range).
 */
int prof_shm_parse_env(const char *v, int *fd, pid_t *root)
{
	long n[2];
	int i;

	for (i = 0; i < 2; i++) {
		n[i] = 0;
		if (*v < '0' || *v > '9')
			return -EINVAL;
		while (*v >= '0' && *v <= '9') {
			n[i] = n[i] * 10 + (*v++ - '0');
			if (n[i] > INT_MAX)
				return -EINVAL;
		}
		if (*v != (i ? '\0' : ':'))
			return -EINVAL;
		v++;
	}
	*fd = (int)n[0];
	*root = (pid_t)n[1];
	return 0;
}

static uint64_t rd(_Atomic uint64_t *c)
{
	/* Relaxed: counters; nothing is published through them. */
	return atomic_load_explicit(c, memory_order_relaxed);
}

/**
 * prof_counters_add() - add one process's counters to @sum.
 */
void prof_counters_add(struct prof_counters *c, struct prof_counts *sum)
{
	sum->written += rd(&c->written);
	sum->refused += rd(&c->refused);
	sum->truncated += rd(&c->truncated);
	sum->unchecked += rd(&c->unchecked);
	sum->unwind_fallback += rd(&c->unwind_fallback);
	sum->threads += rd(&c->threads);
	sum->maps_lost += rd(&c->maps_lost);
	sum->heap_allocs += rd(&c->heap_allocs);
	sum->heap_frees += rd(&c->heap_frees);
	sum->heap_refused += rd(&c->heap_refused);
	sum->heap_untracked += rd(&c->heap_untracked);
	sum->lock_written += rd(&c->lock_written);
	sum->lock_refused += rd(&c->lock_refused);
	/* Relaxed: as above. */
	sum->taken_over +=
		atomic_load_explicit(&c->taken_over, memory_order_relaxed);
	sum->engines |= /* relaxed: as above */
		atomic_load_explicit(&c->engines, memory_order_relaxed);
	sum->heap_foreign += /* relaxed: as above */
		atomic_load_explicit(&c->heap_foreign, memory_order_relaxed);
	if (!sum->signo) /* relaxed: as above */
		sum->signo =
			atomic_load_explicit(&c->signo, memory_order_relaxed);
}

/*
 * Per-thread counters with timers for some threads, and why (the
 * PROF_ENGINE_FDS and PROF_ENGINE_LOST bits, @why 1 to 3; sampler.c's
 * Descriptors), @kernel: counters in kernel mode too.
 */
static const char *engines_mixed(bool kernel, uint32_t why)
{
	static const char *const name[2][3] = {
		{ "per-thread perf_event counters up to half the descriptor "
		  "limit, CPU timers beyond",
		  "per-thread perf_event counters, CPU timers where refused "
		  "or where the program closed a counter's descriptor",
		  "per-thread perf_event counters up to half the descriptor "
		  "limit, CPU timers beyond and where the program closed a "
		  "counter's descriptor" },
		{ "per-thread perf_event counters (kernel mode too) up to "
		  "half the descriptor limit, CPU timers beyond",
		  "per-thread perf_event counters (kernel mode too), CPU "
		  "timers where refused or where the program closed a "
		  "counter's descriptor",
		  "per-thread perf_event counters (kernel mode too) up to "
		  "half the descriptor limit, CPU timers beyond and where the "
		  "program closed a counter's descriptor" },
	};

	return name[kernel][why - 1];
}

/**
 * prof_engines_name() - what drove the samples, for a profile's comment.
 * @engines: PROF_ENGINE_* bits (struct prof_counters' engines).
 */
const char *prof_engines_name(uint32_t engines)
{
	bool kernel = engines & PROF_ENGINE_KERNEL;
	uint32_t why = (engines & PROF_ENGINE_FDS ? 1 : 0) |
		       (engines & PROF_ENGINE_LOST ? 2 : 0);

	engines &= ~(PROF_ENGINE_FDS | PROF_ENGINE_LOST);
	if (why && (engines & ~PROF_ENGINE_KERNEL) ==
			   (PROF_ENGINE_PERF | PROF_ENGINE_TIMERS))
		return engines_mixed(kernel, why);
	switch (engines & ~PROF_ENGINE_KERNEL) {
	case PROF_ENGINE_PERF:
		return kernel ? "per-thread perf_event cpu-clock counters "
				"(kernel mode too)"
			      : "per-thread perf_event cpu-clock counters";
	case PROF_ENGINE_TIMERS:
		return why & 1 ? "per-thread CPU timers (tick-bound; perf_event "
				 "counters would pass half the descriptor "
				 "limit)"
			       : "per-thread CPU timers (tick-bound)";
	case PROF_ENGINE_PERF | PROF_ENGINE_TIMERS:
		return kernel ? "per-thread perf_event counters (kernel mode "
				"too), CPU timers where refused"
			      : "per-thread perf_event counters, CPU timers "
				"where refused";
	case 0:
		return "no timer";
	}
	return engines & PROF_ENGINE_PERF ? "perf_event counters and CPU timers"
	       : engines & PROF_ENGINE_TIMERS
		       ? "per-thread and process CPU timers"
		       : "process CPU timer";
}

/**
 * prof_shm_sum() - every slot's counters added up.
 */
void prof_shm_sum(const struct prof_shm *h, struct prof_counts *sum)
{
	struct prof_shm *w = (struct prof_shm *)h;
	/*
	 * Relaxed: read after the program ended (wait4 orders its stores
	 * before us) or, while it runs, any recent count will do.
	 */
	uint32_t n = atomic_load_explicit(&w->next_slot, memory_order_relaxed);

	memset(sum, 0, sizeof(*sum));
	sum->processes = n;
	if (n > PROF_SHM_SLOTS)
		n = PROF_SHM_SLOTS;
	for (uint32_t i = 0; i < n; i++)
		prof_counters_add(&w->slots[i].ctr, sum);
}
