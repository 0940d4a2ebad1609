/* SPDX-License-Identifier: MIT */
/*
 * prof/wire/shm.h - the memory `profring-prof record` shares with the processes
 * it profiles.
 *
 * The launcher creates a memfd, lays out a header, one counter slot per
 * profiled process and a shared profbuf (profbuf_shared_init()), and
 * passes the descriptor to the program through PROF_SHM_ENV
 * ("FD:ROOTPID").  libprofring-prof.so, loaded into the program by
 * LD_PRELOAD, maps it (agent.c) when it starts and again in the image an
 * exec loads (the descriptor is inherited), claims a slot for its counters
 * and writes its records (stream.h) into the ring.  Because the counters
 * and the ring live in the launcher's memory too, what a process wrote and
 * counted survives its death, however it dies.
 *
 * The header is written by the launcher before the program runs and only
 * read afterwards, except for the atomics below.  The launcher treats
 * everything in the mapping as untrusted input from the program: it reads
 * the geometry from its own copy, and every count it reads is just a
 * number to report.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_SHM_H
#define PROFRING_PROF_SHM_H

#include <profring/profbuf.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "prof/wire/stream.h"

/* The variable that carries "FD:ROOTPID" to the program. */
#define PROF_SHM_ENV "PROFRING_PROF_SHM"
#define PROF_SHM_MAGIC UINT64_C(0x316d6873666f7270) /* "profshm1" */
#define PROF_SHM_VERSION 6u
/* Processes with a slot of their own; later ones share the last. */
#define PROF_SHM_SLOTS 1024u

/*
 * struct prof_shm_slot - one attached process's counters.
 * @pid: the process (0: free; the last slot, shared, keeps the first).
 */
struct prof_shm_slot {
	_Atomic int32_t pid;
	uint32_t pad;
	struct prof_counters ctr;
};

/*
 * struct prof_shm - the header at offset 0 of the mapping.
 * @magic, @version, @size: identify the layout; @size is the mapping's.
 * @ring_offset, @ring_size: where the shared profbuf lies.
 * @hz, @max_frames, @timer, @unwinder: the session, for attaching
 *	processes (the launcher validated them).
 * @children: forked descendants attach too (record's default;
 *	--no-children clears it).
 * @cpu: CPU sampling runs (0 with --heap alone).
 * @mode: its enum profring_prof_mode (wall: wall.c's ticker instead of
 *	CPU timers).
 * @heap_rate: the heap profiler's rate in bytes; 0: no heap profiling.
 * @mutex_rate: one contended lock wait in this many is recorded (mutex.c);
 *	0: no lock profiling.
 * @root_pid: without @children, the one process that may attach (its
 *	execs keep the pid).
 * @attached: images that attached (a HELLO each); 0 at the end means
 *	nothing was profiled.
 * @next_slot: slots handed out (may pass PROF_SHM_SLOTS).
 */
struct prof_shm {
	uint64_t magic;
	uint32_t version;
	uint32_t nslots;
	uint64_t size;
	uint64_t ring_offset;
	uint64_t ring_size;
	uint32_t hz;
	uint32_t max_frames;
	uint32_t timer;
	uint32_t unwinder;
	uint32_t children;
	int32_t root_pid;
	uint32_t cpu;
	uint32_t mode;
	uint64_t heap_rate;
	uint64_t mutex_rate;
	_Atomic uint32_t attached;
	_Atomic uint32_t next_slot;
	struct prof_shm_slot slots[PROF_SHM_SLOTS];
};

/*
 * struct prof_shm_map - one process's view of the shared memory.
 * @fd:   the memfd (the launcher's, or the inherited one).
 * @base: the mapping; @size its length.
 * @hdr:  the header (== @base).
 * @buf:  the shared ring's handle in this process.
 */
struct prof_shm_map {
	int fd;
	void *base;
	size_t size;
	struct prof_shm *hdr;
	struct profbuf *buf;
};

/*
 * struct prof_shm_params - what the launcher puts in a new header.
 */
struct prof_shm_params {
	size_t buffer_words;
	uint32_t hz;
	uint32_t max_frames;
	uint32_t timer;
	uint32_t unwinder;
	bool children;
	bool cpu;
	uint32_t mode;
	uint64_t heap_rate;
	uint64_t mutex_rate;
};

int prof_shm_create(const struct prof_shm_params *p, struct prof_shm_map *m);
int prof_shm_attach(int fd, struct prof_shm_map *m);
void prof_shm_unmap(struct prof_shm_map *m);
struct prof_counters *prof_shm_claim(struct prof_shm *h, pid_t pid);
int prof_shm_parse_env(const char *v, int *fd, pid_t *root);
/* The counters of every slot, added up (plain numbers to report). */
struct prof_counts {
	uint64_t written, refused, truncated, unchecked, unwind_fallback;
	uint64_t threads, maps_lost, taken_over;
	uint64_t heap_allocs, heap_frees, heap_refused, heap_untracked;
	uint64_t lock_written, lock_refused;
	uint32_t engines; /* PROF_ENGINE_* bits, of every process */
	uint32_t heap_foreign; /* processes whose malloc is not ours */
	uint32_t processes; /* slots claimed */
	uint32_t signo; /* the first process's signal */
};

void prof_shm_sum(const struct prof_shm *h, struct prof_counts *sum);
const char *prof_engines_name(uint32_t engines);
void prof_counters_add(struct prof_counters *c, struct prof_counts *sum);

#endif /* PROFRING_PROF_SHM_H */
