// SPDX-License-Identifier: MIT
/*
 * prof/agent/agent.c - the profiled process's side of `profring-prof record`.
 *
 * The launcher (record.c) runs the program with libprofring-prof.so in
 * LD_PRELOAD and PROF_SHM_ENV = "FD:ROOTPID" naming a memfd it shares
 * (shm.h).  When the library loads (prof.c's constructor calls
 * prof_agent_init()) the agent:
 *   1. checks that FD is still the launcher's memfd (by its name in
 *      /proc/self/fd: a program may have closed it and reused the number)
 *      and that this process may attach: the root pid (and the images it
 *      execs into, which keep the pid), or any process (the default, unless
 *      --no-children);
 *   2. maps it, claims a counter slot (prof_shm_claim()), writes a HELLO
 *      record and one MAP record per executable mapping (stream.h);
 *   3. starts the sampler writing into the shared ring with the
 *      launcher's settings and the slot's counters.
 * No thread of ours runs in the program: nothing can keep it alive or be
 * left holding a lock, and whatever ends it, what it wrote is already in
 * the launcher's memory.
 *
 * After dlopen/dlclose (prof_maps_changed(), called by the loader hooks)
 * the mappings not reported yet are reported; nothing is ever withdrawn,
 * so code that dlclose unmapped is still named in the profile.
 *
 * fork: a child has no timers.  Following children (the default), the
 * atfork child handler claims a slot for it, writes a HELLO saying it is
 * a fork child (its mappings are its parent's) and starts its sampler;
 * with --no-children, it marks the memfd close-on-exec (if the number is
 * still the memfd) so that the child's execs do not inherit it.
 * exec: the new image loads the library again and attaches as in 1-3.
 * exit: the slot gets the process's CPU time over the session
 * (agent_fini()); the sampler is not stopped.
 *
 * Mapping records are written outside signal handlers; when the ring has
 * no room they are retried for up to MAP_RETRY_NS, then counted in
 * maps_lost.  Reporting is serialized by a mutex (dlopen may run on
 * several threads); the mutex is never taken in a signal handler.
 */
#include "prof/agent/agent.h"
#include "prof/agent/ring_guard.h"
#include "prof/agent/heap.h"
#include "prof/agent/mutex.h"
#include "prof/agent/sampler.h"
#include "prof/wire/shm.h"
#include "prof/wire/stream.h"

#include "ring/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAP_RETRY_NS 100000000u
#define MEMFD_LINK "/memfd:profring-prof"

/* A mapping already reported. */
struct sent_map {
	uint64_t start, limit, offset;
	char *path;
};

static struct {
	pthread_mutex_t lock;
	bool attached;
	bool children;
	struct prof_shm_map map;
	dev_t memfd_dev; /* the memfd's identity, as attached */
	ino_t memfd_ino;
	struct prof_counters *ctr;
	struct prof_sampler_config cfg;
	struct sent_map *sent;
	size_t nsent, capsent;
} agent = { .lock = PTHREAD_MUTEX_INITIALIZER, .map = { .fd = -1 } };

/*
 * Write one record, retrying while the ring is full (not in a handler).
 * Return: 0 or the last error.
 */
static int put(enum prof_rec_kind kind, const uint64_t *w, size_t n)
{
	uint64_t hdr[PROF_HDR_WORDS];
	uint64_t waited = 0;
	struct timespec ts = { 0, 1000000 };
	int rc;

	hdr[PROF_HDR_KIND_PERIODS] = prof_hdr_kind_word(kind, 0);
	hdr[PROF_HDR_TID] = (uint64_t)syscall(SYS_gettid);
	hdr[PROF_HDR_PID] = (uint64_t)getpid();
	for (;;) {
		rc = prof_ring_write(agent.map.buf, NULL,
				     (int64_t)ring_clock_ticks(), hdr,
				     PROF_HDR_WORDS, (const uintptr_t *)w, n);
		if (rc != -ENOSPC || waited >= MAP_RETRY_NS)
			return rc;
		nanosleep(&ts, NULL);
		waited += (uint64_t)ts.tv_nsec;
	}
}

static void count_map_lost(void)
{
	/* Relaxed: a counter. */
	atomic_fetch_add_explicit(&agent.ctr->maps_lost, 1,
				  memory_order_relaxed);
}

/* HELLO: [ppid, flags, exe path packed]. */
static void say_hello(unsigned int flags)
{
	uint64_t w[2 + (PATH_MAX + 8) / 8];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		n = 0;
	w[0] = (uint64_t)getppid();
	w[1] = flags;
	prof_stream_pack(w + 2, exe, (size_t)n);
	if (put(PROF_REC_HELLO, w, 2 + prof_stream_words((size_t)n)))
		count_map_lost();
	/* Relaxed: a count the launcher reads after the program ended. */
	atomic_fetch_add_explicit(&agent.map.hdr->attached, 1,
				  memory_order_relaxed);
}

static bool already_sent(uint64_t start, uint64_t limit, uint64_t offset,
			 const char *path)
{
	for (size_t i = 0; i < agent.nsent; i++) {
		const struct sent_map *m = &agent.sent[i];

		if (m->start == start && m->limit == limit &&
		    m->offset == offset && !strcmp(m->path, path))
			return true;
	}
	return false;
}

static void remember(uint64_t start, uint64_t limit, uint64_t offset,
		     const char *path)
{
	struct sent_map *v;
	char *copy;

	if (agent.nsent == agent.capsent) {
		size_t cap = agent.capsent ? 2 * agent.capsent : 64;

		v = realloc(agent.sent, cap * sizeof(*v));
		if (!v)
			return; /* sent again next time: harmless */
		agent.sent = v;
		agent.capsent = cap;
	}
	copy = strdup(path);
	if (!copy)
		return;
	agent.sent[agent.nsent++] =
		(struct sent_map){ start, limit, offset, copy };
}

/* One line of /proc/self/maps: report it if it is new code. */
static void report_line(const char *line)
{
	unsigned long long start, limit, offset;
	uint64_t w[3 + (PATH_MAX + 8) / 8];
	char perms[8];
	int pos = 0;
	const char *path;
	size_t len;

	if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &limit, perms,
		   &offset, &pos) < 4 ||
	    !pos || perms[2] != 'x')
		return;
	path = line + pos;
	len = strcspn(path, "\n");
	if (!len || len >= PATH_MAX ||
	    (path[0] != '/' && strncmp(path, "[vdso]", 6)))
		return;
	/* " (deleted)": the file is gone; its name still says what it was */
	if (len > 10 && !strncmp(path + len - 10, " (deleted)", 10))
		len -= 10;
	w[0] = start;
	w[1] = limit;
	w[2] = offset;
	prof_stream_pack(w + 3, path, len);
	path = (const char *)(w + 3);
	if (already_sent(start, limit, offset, path))
		return;
	if (put(PROF_REC_MAP, w, 3 + prof_stream_words(len)))
		count_map_lost();
	else
		remember(start, limit, offset, path);
}

static void report_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return;
	while (getline(&line, &cap, f) > 0)
		report_line(line);
	free(line);
	fclose(f);
}

/**
 * prof_maps_changed() - see stream.h: report the mappings not reported
 * yet.  errno is preserved.
 */
void prof_maps_changed(void)
{
	int saved = errno;

	prof_heap_ignore_begin();
	pthread_mutex_lock(&agent.lock);
	if (agent.attached)
		report_maps();
	pthread_mutex_unlock(&agent.lock);
	prof_heap_ignore_end();
	errno = saved;
}

/*
 * The memfd's number is still the memfd (fstat identity at attach): the
 * program may have closed it and opened a file of its own there.
 */
static bool memfd_still_ours(void)
{
	struct stat st;

	return agent.map.fd >= 0 && !fstat(agent.map.fd, &st) &&
	       st.st_dev == agent.memfd_dev && st.st_ino == agent.memfd_ino;
}

/* After fork, in the child (see the opening comment). */
static void agent_after_fork_child(void)
{
	pthread_mutex_init(&agent.lock, NULL);
	if (!agent.attached)
		return;
	if (!agent.children) {
		if (agent.map.hdr->heap_rate)
			prof_heap_after_fork_child(false, NULL);
		if (agent.map.hdr->mutex_rate)
			prof_lock_after_fork_child(false, NULL);
		agent.attached = false;
		if (memfd_still_ours())
			fcntl(agent.map.fd, F_SETFD, FD_CLOEXEC);
		return;
	}
	agent.ctr = prof_shm_claim(agent.map.hdr, getpid());
	agent.cfg.counters = agent.ctr;
	say_hello(PROF_HELLO_FORKED);
	if (agent.map.hdr->heap_rate)
		prof_heap_after_fork_child(true, agent.ctr);
	if (agent.map.hdr->mutex_rate)
		prof_lock_after_fork_child(true, agent.ctr);
	if (agent.map.hdr->cpu)
		prof_sampler_start(&agent.cfg);
}

/* Is @fd the launcher's memfd? */
static bool is_our_memfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strncmp(link, MEMFD_LINK, sizeof(MEMFD_LINK) - 1);
}

static void say(const char *what, const char *why)
{
	fprintf(stderr, "profring-prof: %s: %s\n", what, why);
}

/*
 * The heap profile would be empty without a word: the program's malloc is
 * another allocator's, which comes before ours in the lookup order (the
 * program's own, or one preloaded ahead of us), so our hooks never run.
 * The launcher says so (heap_foreign): the program's stderr is its own.
 */
static void note_malloc_foreign(void)
{
	if (prof_malloc_foreign && prof_malloc_foreign())
		/* Relaxed: a flag the launcher reads after the program. */
		atomic_store_explicit(&agent.ctr->heap_foreign, 1,
				      memory_order_relaxed);
}

/* Claim a slot, say hello, report the mappings (agent.lock held). */
static void attach(void)
{
	const struct prof_shm *h = agent.map.hdr;

	agent.children = h->children;
	agent.ctr = prof_shm_claim(agent.map.hdr, getpid());
	memset(&agent.cfg, 0, sizeof(agent.cfg));
	agent.cfg.buf = agent.map.buf;
	agent.cfg.period_ns = 1000000000u / (h->hz ? h->hz : 1);
	agent.cfg.timer = (enum profring_prof_timer)h->timer;
	agent.cfg.unwinder = (enum profring_prof_unwinder)h->unwinder;
	agent.cfg.max_frames = h->max_frames;
	agent.cfg.counters = agent.ctr;
	agent.cfg.wall = h->mode == PROFRING_PROF_MODE_WALL;
	agent.attached = true;
	say_hello(0);
	report_maps();
}

/**
 * prof_agent_init() - attach to the launcher's session if there is one.
 *
 * Called once, by the library's constructor, before main().
 *
 * Return: true if PROF_SHM_ENV is set (the launcher runs us: there is no
 * in-process session, whether we attached or not), false if not.
 */
bool prof_agent_init(void)
{
	const char *v = getenv(PROF_SHM_ENV);
	pid_t root;
	int fd, err;

	if (!v)
		return false;
	if (prof_shm_parse_env(v, &fd, &root)) {
		say(PROF_SHM_ENV, "not FD:PID; this process is not profiled");
		return true;
	}
	if (!is_our_memfd(fd))
		return true; /* closed by the program: a descendant, not ours */
	err = prof_shm_attach(fd, &agent.map);
	if (err) {
		say("cannot attach to the launcher", strerror(-err));
		return true;
	}
	{
		struct stat st;

		if (!fstat(fd, &st)) {
			agent.memfd_dev = st.st_dev;
			agent.memfd_ino = st.st_ino;
		}
	}
	if (getpid() != root && !agent.map.hdr->children) {
		/* A descendant the launcher was not asked to profile: the
		 * descriptor stays the program's business. */
		agent.map.fd = -1;
		prof_shm_unmap(&agent.map);
		return true;
	}
	pthread_mutex_lock(&agent.lock);
	attach();
	pthread_mutex_unlock(&agent.lock);
	pthread_atfork(NULL, NULL, agent_after_fork_child);
	if (agent.map.hdr->heap_rate) {
		struct prof_heap_config hc = {
			.buf = agent.map.buf,
			.rate = agent.map.hdr->heap_rate,
			.max_frames = agent.cfg.max_frames,
			.counters = agent.ctr,
			/* Rare, and never in a handler: complete stacks. */
			.libunwind = true,
		};

		err = prof_heap_start(&hc);
		if (err)
			say("cannot start the heap profiler", strerror(-err));
		else
			note_malloc_foreign();
	}
	if (agent.map.hdr->mutex_rate) {
		struct prof_lock_config lc = {
			.buf = agent.map.buf,
			.rate = agent.map.hdr->mutex_rate,
			.max_frames = agent.cfg.max_frames,
			.counters = agent.ctr,
			/* Waits block anyway: complete stacks. */
			.libunwind = true,
		};

		err = prof_lock_start(&lc);
		if (err)
			say("cannot start the lock profiler", strerror(-err));
	}
	err = agent.map.hdr->cpu ? prof_sampler_start(&agent.cfg) : 0;
	if (err)
		say("cannot start sampling", strerror(-err));
	return true;
}

/*
 * At exit (exit() or main's return; not _exit, a fatal signal or exec):
 * the session is never stopped (nothing of ours outlives the program),
 * but the CPU time it covered goes to the counters, for the profile's
 * "[profring: unsampled CPU]" entry (stream.h's cpu_ns).
 */
__attribute__((destructor)) static void agent_fini(void)
{
	if (agent.attached)
		prof_sampler_note_cpu();
}
