// SPDX-License-Identifier: MIT
/*
 * tracemem_test.c - unit tests of the tracer's memory events: a round trip
 * through three generations (ids, sizes, stacks, the snapshot, the memory
 * info record), every error, a full table, an allocation whose free was
 * missed, threads allocating and freeing while generations advance (the
 * snapshot's race: every generation checked by tracedec_mem_check(), the
 * last one's live set against the threads' own; again with SIGPROF
 * handlers allocating and freeing inside the threads' events, errno
 * kept), tracebuf_mem_free_all(), and the decoder on
 * version 1 streams and on bad memory records.
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <profring/tracebuf.h>
#include <profring/tracedec.h>

#include "ring/varint.h"
#include "testing/ktest.h"
#include "testing/trace_stream.h"
#include "tracebuf/tracebuf_format.h"

#define MIN_ADDR 0x100000u
#define ALIGN 16u

static struct tracebuf *mem_tracer(size_t objects, size_t max_bytes)
{
	struct tracebuf_opts o = {
		.max_bytes = max_bytes,
		.buf_size = 4096,
		.stack_bytes = 1 << 20,
		.mem_objects = objects,
		.mem_min_addr = MIN_ADDR,
		.mem_align = ALIGN,
	};

	return tracebuf_new(&o);
}

/* ---- what a stream says --------------------------------------------------- */

#define MAX_MEV 64

struct mem_seen {
	struct tracedec_event ev[MAX_MEV];
	size_t nev;
	uint64_t info_gen[8], min_addr[8], align[8], page[8];
	size_t ninfo;
	uint64_t stack_gen[32], stack_id[32], stack_pc0[32];
	size_t nstacks;
};

static int seen_event(void *arg, const struct tracedec_event *ev)
{
	struct mem_seen *m = arg;

	if (ev->type >= 3 && ev->type <= 5 && m->nev < MAX_MEV)
		m->ev[m->nev++] = *ev;
	return 0;
}

static int seen_info(void *arg, uint64_t gen, uint64_t min_addr, uint64_t align,
		     uint64_t page)
{
	struct mem_seen *m = arg;

	if (m->ninfo < 8) {
		m->info_gen[m->ninfo] = gen;
		m->min_addr[m->ninfo] = min_addr;
		m->align[m->ninfo] = align;
		m->page[m->ninfo++] = page;
	}
	return 0;
}

static int seen_stack(void *arg, uint64_t gen, uint64_t id, const uint64_t *pcs,
		      size_t n)
{
	struct mem_seen *m = arg;

	(void)n;
	if (m->nstacks < 32) {
		m->stack_gen[m->nstacks] = gen;
		m->stack_id[m->nstacks] = id;
		m->stack_pc0[m->nstacks++] = pcs[0];
	}
	return 0;
}

/* The first PC of stack @id of @gen, 0 if none. */
static uint64_t pc0(const struct mem_seen *m, uint64_t gen, uint64_t id)
{
	for (size_t i = 0; i < m->nstacks; i++)
		if (m->stack_gen[i] == gen && m->stack_id[i] == id)
			return m->stack_pc0[i];
	return 0;
}

static const struct tracedec_visitor seen_visitor = {
	.event = seen_event,
	.stack = seen_stack,
	.mem_info = seen_info,
};

/* tracedec_mem_check()'s generations, kept. */
#define MAX_GENS 8192

struct gens {
	struct tracedec_mem_gen g[MAX_GENS];
	size_t n;
	int64_t bytes, objects; /* sum of the changes */
};

static int keep_gen(void *arg, const struct tracedec_mem_gen *g)
{
	struct gens *gs = arg;

	if (gs->n < MAX_GENS)
		gs->g[gs->n++] = *g;
	return 0;
}

static int keep_change(void *arg, uint64_t gen, uint64_t ticks, int64_t bytes,
		       int64_t objects)
{
	struct gens *gs = arg;

	(void)gen, (void)ticks;
	gs->bytes += bytes;
	gs->objects += objects;
	return 0;
}

static const struct tracedec_mem_visitor gens_visitor = {
	.gen = keep_gen,
	.change = keep_change,
};

static uint64_t id_of(uintptr_t addr)
{
	return (addr - MIN_ADDR) / ALIGN;
}

static bool is_mev(const struct tracedec_event *e, unsigned int type,
		   uint64_t gen, uintptr_t addr)
{
	return e->type == type && e->gen == gen && e->args[0] == id_of(addr);
}

/*
 * Three generations: A and B allocated and A freed in 1; B freed in 2
 * (from 2's snapshot) and C allocated; C live through 3.
 */
static void roundtrip(void)
{
	struct tracebuf *t = mem_tracer(64, 1 << 20);
	static struct gens gs;
	const uintptr_t a = MIN_ADDR + 32, b = MIN_ADDR + 4096,
			c = MIN_ADDR + (1 << 20);
	const uintptr_t sa[2] = { 0x1000, 0x2000 }, sb[1] = { 0x3000 };
	struct stream s = { 0 };
	struct tracedec_error err;
	struct mem_seen m = { 0 };
	struct tracebuf_stats st;

	KT_REQUIRE(t && tracebuf_start(t) == 0);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, a, 100, sa, 2), 0);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, b, 200, sb, 1), 0);
	KT_CHECK_EQ(tracebuf_mem_free(t, a), 0);
	KT_CHECK_EQ(tracebuf_advance(t), 0);
	KT_CHECK_EQ(tracebuf_mem_free(t, b), 0);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, c, 300, NULL, 0), 0);
	KT_CHECK_EQ(tracebuf_advance(t), 0);
	tracebuf_stats(t, &st);
	KT_CHECK_EQ(st.mem_live, 1);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	read_to_eof(t, &s);
	KT_REQUIRE(tracedec_decode(s.p, s.len, &seen_visitor, &m, &err) == 0);
	KT_REQUIRE(m.nev == 7);
	KT_CHECK(is_mev(&m.ev[0], TRACEBUF_EV_ALLOC, 1, a));
	KT_CHECK_EQ(m.ev[0].args[1], 100);
	KT_CHECK_EQ(pc0(&m, 1, m.ev[0].args[2]), 0x1000);
	KT_CHECK(is_mev(&m.ev[1], TRACEBUF_EV_ALLOC, 1, b));
	KT_CHECK(is_mev(&m.ev[2], TRACEBUF_EV_FREE, 1, a));
	KT_CHECK_EQ(m.ev[2].nargs, 1);
	/* Gen 2: B's exists (its stack re-interned), its free, C. */
	KT_CHECK(is_mev(&m.ev[3], TRACEBUF_EV_EXISTS, 2, b));
	KT_CHECK_EQ(m.ev[3].args[1], 200);
	KT_CHECK_EQ(pc0(&m, 2, m.ev[3].args[2]), 0x3000);
	KT_CHECK(is_mev(&m.ev[4], TRACEBUF_EV_FREE, 2, b));
	KT_CHECK(is_mev(&m.ev[5], TRACEBUF_EV_ALLOC, 2, c));
	KT_CHECK_EQ(m.ev[5].args[2], 0);
	KT_CHECK(is_mev(&m.ev[6], TRACEBUF_EV_EXISTS, 3, c));
	KT_CHECK_EQ(m.ev[6].args[1], 300);
	KT_CHECK_EQ(m.ev[6].version, 3);
	KT_REQUIRE(m.ninfo == 3);
	for (size_t i = 0; i < 3; i++) {
		KT_CHECK_EQ(m.info_gen[i], i + 1);
		KT_CHECK_EQ(m.min_addr[i], MIN_ADDR);
		KT_CHECK_EQ(m.align[i], ALIGN);
		KT_CHECK_EQ(m.page[i], sysconf(_SC_PAGESIZE));
	}
	KT_REQUIRE(tracedec_mem_check(s.p, s.len, &gens_visitor, &gs, &err) ==
		   0);
	KT_REQUIRE(gs.n == 3);
	KT_CHECK_EQ(gs.g[0].allocs, 2);
	KT_CHECK_EQ(gs.g[0].frees, 1);
	KT_CHECK_EQ(gs.g[0].live_objects, 1);
	KT_CHECK_EQ(gs.g[0].live_bytes, 200);
	KT_CHECK_EQ(gs.g[1].exists, 1);
	KT_CHECK_EQ(gs.g[1].live_bytes, 300);
	KT_CHECK_EQ(gs.g[2].exists, 1);
	KT_CHECK_EQ(gs.g[2].live_objects, 1);
	for (size_t i = 0; i < 3; i++) {
		KT_CHECK_EQ(gs.g[i].unknown_frees, 0);
		KT_CHECK_EQ(gs.g[i].snapshot_missing, 0);
		KT_CHECK_EQ(gs.g[i].snapshot_extra, 0);
	}
	/* Per generation the changes add up to its live set at the end. */
	KT_CHECK_EQ(gs.bytes, 200 + 300 + 300);
	free(s.p);
	tracebuf_free(t);
}

static void errors(void)
{
	struct tracebuf_opts o = { .mem_objects =
					   TRACEBUF_MAX_MEM_OBJECTS + 1 };
	struct tracebuf *t = tracebuf_new(NULL);
	uint64_t args[3] = { 1, 2, 3 };
	struct tracebuf_stats st;
	struct tracebuf_ev ev;

	KT_REQUIRE(t && tracebuf_start(t) == 0);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR, 8, NULL, 0), -EOPNOTSUPP);
	KT_CHECK_EQ(tracebuf_mem_free(t, MIN_ADDR), -EOPNOTSUPP);
	/* The memory types are the memory API's alone. */
	for (unsigned int type = 3; type <= 5; type++) {
		KT_CHECK_EQ(tracebuf_emit(t, type, args, 3), -EINVAL);
		KT_REQUIRE(tracebuf_begin(t, &ev) == 0);
		KT_CHECK_EQ(tracebuf_ev_emit_bytes(&ev, type, "x", 1), -EINVAL);
		tracebuf_end(&ev);
	}
	tracebuf_stop(t);
	tracebuf_free(t);

	errno = 0;
	KT_CHECK(!tracebuf_new(&o) && errno == EINVAL);
	o.mem_objects = 16;
	o.mem_align = 24;
	errno = 0;
	KT_CHECK(!tracebuf_new(&o) && errno == EINVAL);

	t = mem_tracer(16, 1 << 20);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR, 8, NULL, 0), -ESHUTDOWN);
	KT_REQUIRE(t && tracebuf_start(t) == 0);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR - ALIGN, 8, NULL, 0),
		    -EINVAL);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR + 8, 8, NULL, 0), -EINVAL);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR, 8, NULL, 2), -EINVAL);
	KT_CHECK_EQ(tracebuf_mem_free(t, MIN_ADDR + 8), -EINVAL);
	KT_CHECK_EQ(tracebuf_mem_free(t, MIN_ADDR), -ENOENT);
	KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR, 8, NULL, 0), 0);
	KT_CHECK_EQ(tracebuf_mem_free(t, MIN_ADDR), 0);
	KT_CHECK_EQ(tracebuf_mem_free(t, MIN_ADDR), -ENOENT);
	tracebuf_stats(t, &st);
	KT_CHECK_EQ(st.lost, 0);
	KT_CHECK_EQ(st.mem_live, 0);
	tracebuf_stop(t);
	tracebuf_free(t);
}

/*
 * A table of 32 slots (mem_objects 16): the 33rd object finds no slot;
 * it is refused, counted in mem_full and as a lost event, and nothing of
 * it is in the stream.  An allocation at an address still live frees
 * the old object first.
 */
static void table_full_and_missed_free(void)
{
	struct tracebuf *t = mem_tracer(16, 1 << 20);
	struct stream s = { 0 };
	struct tracedec_error err;
	static struct gens gs;
	struct tracebuf_stats st;
	int ok = 0, full = 0;

	memset(&gs, 0, sizeof(gs));
	KT_REQUIRE(t && tracebuf_start(t) == 0);
	for (uintptr_t i = 0; i < 40; i++) {
		int rc = tracebuf_mem_alloc(t, MIN_ADDR + i * ALIGN, 10, NULL,
					    0);

		ok += rc == 0;
		full += rc == -ENOSPC;
	}
	KT_CHECK_EQ(ok, 32);
	KT_CHECK_EQ(full, 8);
	/* Again at a live address: its old object is freed first. */
	KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR, 50, NULL, 0), 0);
	tracebuf_stats(t, &st);
	KT_CHECK_EQ(st.mem_full, 8);
	KT_CHECK_EQ(st.mem_live, 32);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	read_to_eof(t, &s);
	tracebuf_stats(t, &st);
	KT_CHECK_EQ(st.lost, 8);
	KT_REQUIRE(tracedec_mem_check(s.p, s.len, &gens_visitor, &gs, &err) ==
		   0);
	KT_REQUIRE(gs.n == 1);
	KT_CHECK_EQ(gs.g[0].allocs, 33);
	KT_CHECK_EQ(gs.g[0].frees, 1);
	KT_CHECK_EQ(gs.g[0].double_allocs, 0);
	KT_CHECK_EQ(gs.g[0].live_objects, 32);
	KT_CHECK_EQ(gs.g[0].live_bytes, 31 * 10 + 50);
	KT_CHECK_EQ(gs.g[0].lost, 8);
	free(s.p);
	tracebuf_free(t);
}

/* tracebuf_mem_free_all(): every live object freed, with its event. */
static void free_all(void)
{
	struct tracebuf *t = mem_tracer(64, 1 << 20);
	struct stream s = { 0 };
	struct tracedec_error err;
	static struct gens gs;
	struct tracebuf_stats st;

	memset(&gs, 0, sizeof(gs));
	KT_REQUIRE(t && tracebuf_start(t) == 0);
	for (uintptr_t i = 0; i < 10; i++)
		KT_CHECK_EQ(tracebuf_mem_alloc(t, MIN_ADDR + i * ALIGN, 10,
					       NULL, 0),
			    0);
	KT_CHECK_EQ(tracebuf_mem_free(t, MIN_ADDR), 0);
	KT_CHECK_EQ(tracebuf_advance(t), 0);
	KT_CHECK_EQ(tracebuf_mem_free_all(t), 9);
	KT_CHECK_EQ(tracebuf_mem_free_all(t), 0);
	tracebuf_stats(t, &st);
	KT_CHECK_EQ(st.mem_live, 0);
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	read_to_eof(t, &s);
	KT_REQUIRE(tracedec_mem_check(s.p, s.len, &gens_visitor, &gs, &err) ==
		   0);
	KT_REQUIRE(gs.n == 2);
	KT_CHECK_EQ(gs.g[1].exists, 9);
	KT_CHECK_EQ(gs.g[1].frees, 9);
	KT_CHECK_EQ(gs.g[1].live_objects, 0);
	KT_CHECK_EQ(gs.g[1].unknown_frees, 0);
	free(s.p);
	tracebuf_free(t);
	KT_CHECK_EQ(tracebuf_mem_free_all(NULL), -EINVAL);
}

/* ---- the snapshot's race ---------------------------------------------------- */

#define RACE_THREADS 3
#define RACE_SLOTS 4096 /* addresses per thread */
#define RACE_OPS 200000 /* allocations and frees per thread */

struct racer {
	struct tracebuf *t;
	pthread_t th;
	unsigned int index;
	uint64_t allocs, frees, lost, live, live_bytes, errno_changed;
	uint32_t size[RACE_SLOTS]; /* 0: not live */
};

static _Atomic int race_running;

static uintptr_t racer_addr(const struct racer *r, unsigned int i)
{
	return MIN_ADDR + ((uintptr_t)r->index * RACE_SLOTS + i) * ALIGN;
}

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (r->index + 1);
	uintptr_t pcs[2] = { 0x400000 + r->index, 0 };

	for (unsigned int op = 0; op < RACE_OPS; op++) {
		unsigned int i;
		int rc;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		i = (unsigned int)(rng % RACE_SLOTS);
		if (!r->size[i]) {
			uint32_t size = 1 + (uint32_t)(rng >> 40) % 1000;

			pcs[1] = 0x500000 + size % 7;
			errno = 4321;
			rc = tracebuf_mem_alloc(r->t, racer_addr(r, i), size,
						pcs, 2);
			r->errno_changed += errno != 4321;
			if (!rc) {
				r->size[i] = size;
				r->allocs++;
			}
		} else {
			errno = 4321;
			rc = tracebuf_mem_free(r->t, racer_addr(r, i));
			r->errno_changed += errno != 4321;
			r->size[i] = 0;
			r->frees += rc == 0;
		}
		r->lost += rc == -ENOSPC;
	}
	for (unsigned int i = 0; i < RACE_SLOTS; i++) {
		r->live += r->size[i] != 0;
		r->live_bytes += r->size[i];
	}
	atomic_fetch_sub(&race_running, 1);
	return NULL;
}

/* EXISTS events written by another thread than the advancing one. */
struct helped {
	uint64_t advancer, count;
};

static int count_helped(void *arg, const struct tracedec_event *ev)
{
	struct helped *h = arg;

	h->count += ev->type == TRACEBUF_EV_EXISTS && ev->tid != h->advancer;
	return 0;
}

static const struct tracedec_visitor helped_visitor = {
	.event = count_helped,
};

/*
 * Three threads allocate and free at random among their own addresses
 * (about half live at a time), RACE_OPS times each, while the main
 * thread advances as fast as it can: every walk races frees and
 * allocations.  Every generation is then
 * checked: no free of an unknown id, no double allocation, its snapshot
 * exactly the live set of the generation before; the last generation's
 * live set is the threads' own; and the events count exactly what the
 * threads did.  Some frees must have beaten a walk (an EXISTS written by
 * a thread other than the advancing one), or the race was not run.
 */
/*
 * SIGPROF handlers (with signals): each allocates a new object of its own
 * address range in whatever event its thread was writing, frees three
 * in four of them at once, and leaves the fourth live.
 */
#define HANDLER_BASE (MIN_ADDR + ((uintptr_t)1 << 32))

static struct tracebuf *handler_tracer;
static _Atomic uint64_t handler_next, handler_live, handler_bytes, handler_lost;

static void on_sigprof(int sig)
{
	uint64_t k = atomic_fetch_add(&handler_next, 1);
	uintptr_t addr = HANDLER_BASE + k * ALIGN;
	int saved = errno, rc;

	(void)sig;
	rc = tracebuf_mem_alloc(handler_tracer, addr, 24, NULL, 0);
	if (rc) {
		atomic_fetch_add(&handler_lost, 1);
	} else if (k % 4 == 3) {
		atomic_fetch_add(&handler_live, 1);
		atomic_fetch_add(&handler_bytes, 24);
	} else if (tracebuf_mem_free(handler_tracer, addr)) {
		atomic_fetch_add(&handler_lost, 1);
	}
	errno = saved;
}

/* Memory events written by signal handlers nested in another event. */
static int count_nested(void *arg, const struct tracedec_event *ev)
{
	uint64_t *n = arg;

	*n += ev->level == 1 && ev->type >= 3 && ev->type <= 5;
	return 0;
}

static const struct tracedec_visitor nested_visitor = {
	.event = count_nested,
};

static void start_handlers(struct tracebuf *t)
{
	struct sigaction sa = { .sa_handler = on_sigprof,
				.sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };

	handler_tracer = t;
	atomic_store(&handler_next, 0);
	atomic_store(&handler_live, 0);
	atomic_store(&handler_bytes, 0);
	atomic_store(&handler_lost, 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
}

static void stop_handlers(void)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_PROF, &off, NULL);
	signal(SIGPROF, SIG_IGN);
}

/* Frees that beat the walk in the last run_race() (0 if it stopped early). */
static uint64_t race_helped;

static void run_race(bool signals)
{
	struct tracebuf *t = mem_tracer(RACE_THREADS * RACE_SLOTS, 64 << 20);
	static struct racer r[RACE_THREADS];
	static struct gens gs;
	struct stream s = { 0 };
	struct tracedec_error err;
	uint64_t allocs = 0, frees = 0, lost = 0, live = 0, bytes = 0;
	uint64_t g_allocs = 0, g_frees = 0, bad = 0, errno_changed = 0;
	uint64_t nested = 0;
	size_t advances = 0;
	struct helped helped = { .advancer = (uint64_t)syscall(SYS_gettid) };

	KT_REQUIRE(t && tracebuf_start(t) == 0);
	if (signals)
		start_handlers(t);
	memset(r, 0, sizeof(r));
	memset(&gs, 0, sizeof(gs));
	atomic_store(&race_running, RACE_THREADS);
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		r[i].t = t;
		r[i].index = i;
		KT_REQUIRE(pthread_create(&r[i].th, NULL, racer_main, &r[i]) ==
			   0);
	}
	while (atomic_load(&race_running) || advances < 20) {
		if (advances == MAX_GENS - 1) {
			usleep(1000); /* as many as gens can hold */
			continue;
		}
		KT_CHECK_EQ(tracebuf_advance(t), 0);
		advances++;
		read_ready(t, &s);
	}
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		pthread_join(r[i].th, NULL);
		allocs += r[i].allocs;
		frees += r[i].frees;
		lost += r[i].lost;
		live += r[i].live;
		bytes += r[i].live_bytes;
		errno_changed += r[i].errno_changed;
	}
	if (signals) {
		stop_handlers();
		live += atomic_load(&handler_live);
		bytes += atomic_load(&handler_bytes);
		lost += atomic_load(&handler_lost);
	}
	KT_CHECK_EQ(tracebuf_stop(t), 0);
	read_to_eof(t, &s);
	KT_REQUIRE(tracedec_mem_check(s.p, s.len, &gens_visitor, &gs, &err) ==
		   0);
	KT_REQUIRE(gs.n == advances + 1);
	for (size_t i = 0; i < gs.n; i++) {
		const struct tracedec_mem_gen *g = &gs.g[i];

		g_allocs += g->allocs;
		g_frees += g->frees;
		if (g->lost)
			continue; /* a loss explains what follows */
		bad += g->unknown_frees + g->double_allocs +
		       g->snapshot_missing + g->snapshot_extra;
	}
	KT_REQUIRE(tracedec_decode(s.p, s.len, &helped_visitor, &helped,
				   &err) == 0);
	printf("# %llu allocs, %llu frees, %llu lost, %llu live at the end; "
	       "%llu frees beat the walk\n",
	       (unsigned long long)allocs, (unsigned long long)frees,
	       (unsigned long long)lost, (unsigned long long)live,
	       (unsigned long long)helped.count);
	KT_CHECK_EQ(errno_changed, 0);
	if (signals) {
		KT_REQUIRE(tracedec_decode(s.p, s.len, &nested_visitor, &nested,
					   &err) == 0);
		printf("# %llu handler allocations, %llu memory events nested "
		       "in another\n",
		       (unsigned long long)atomic_load(&handler_next),
		       (unsigned long long)nested);
		KT_CHECK(atomic_load(&handler_next) > 0);
		/* TSan delivers signals at its own safe points. */
		if (!getenv("TSAN_OPTIONS"))
			KT_CHECK(nested > 0);
	}
	KT_CHECK_EQ(lost, 0);
	KT_CHECK_EQ(bad, 0);
	if (!signals) {
		KT_CHECK_EQ(g_allocs, allocs);
		KT_CHECK_EQ(g_frees, frees);
	} else {
		uint64_t h = atomic_load(&handler_next);

		/* Each handler: one allocation, and three in four a free. */
		KT_CHECK_EQ(g_allocs, allocs + h);
		KT_CHECK_EQ(g_frees, frees + h - h / 4);
	}
	KT_CHECK_EQ(gs.g[gs.n - 1].live_objects, live);
	KT_CHECK_EQ(gs.g[gs.n - 1].live_bytes, bytes);
	KT_CHECK_EQ(allocs + frees, RACE_THREADS * RACE_OPS);
	free(s.p);
	tracebuf_free(t);
	race_helped = helped.count;
}

/*
 * The race is real only if some free beat the walk.  Whether one does is
 * up to the scheduler: on 2 loaded cores (sanitizer builds beside other
 * jobs) half the runs or more see none.  So the race is run again until
 * one does, for up to RACE_TRIES runs or RACE_BUDGET_S seconds, every run
 * checked whole, each run's figures printed as a "#" line.
 */
#define RACE_TRIES 40
#define RACE_BUDGET_S 30

static void race_until_helped(bool signals)
{
	time_t end = time(NULL) + RACE_BUDGET_S;
	uint64_t helped = 0;
	int i;

	for (i = 0; i < RACE_TRIES && !helped && time(NULL) < end; i++) {
		race_helped = 0;
		run_race(signals);
		helped = race_helped;
	}
	if (!helped)
		printf("# no free beat the walk in %d runs\n", i);
	KT_CHECK(helped > 0);
}

static void snapshot_race(void)
{
	race_until_helped(false);
}

/* The same with SIGPROF handlers allocating and freeing in between. */
static void snapshot_race_signals(void)
{
	race_until_helped(true);
}

/* ---- the decoder ------------------------------------------------------------ */

/* A one-generation stream: @events (one batch), then an end record. */
static size_t make_stream(uint8_t *buf, uint32_t version, const uint8_t *events,
			  size_t n, const uint8_t *extra, size_t nextra)
{
	size_t off = TB_STREAM_HDR;

	tb_put_stream_hdr(buf);
	tb_put_u32(buf + 8, version);
	tb_put_rec_hdr(buf + off, TB_KIND_BATCH, 0, (uint32_t)(32 + n));
	tb_put_u64(buf + off + 8, 1);
	memset(buf + off + 16, 0, 24);
	memcpy(buf + off + 40, events, n);
	off += 40 + n;
	if (nextra)
		memcpy(buf + off, extra, nextra);
	off += nextra;
	tb_put_rec_hdr(buf + off, TB_KIND_END, 0, 24);
	tb_put_u64(buf + off + 8, 1);
	tb_put_u64(buf + off + 16, 1);
	tb_put_u64(buf + off + 24, 0);
	return off + 32;
}

static size_t meminfo_rec(uint8_t *p, uint64_t align)
{
	tb_put_rec_hdr(p, TB_KIND_MEMINFO, 0, 32);
	tb_put_u64(p + 8, 1);
	tb_put_u64(p + 16, MIN_ADDR);
	tb_put_u64(p + 24, align);
	tb_put_u64(p + 32, 4096);
	return 40;
}

static int count_events(void *arg, const struct tracedec_event *ev)
{
	unsigned int *versions = arg;

	*versions = *versions * 10 + ev->version;
	return 0;
}

static void decoder_versions(void)
{
	/* type 3 with 2 arguments: an alloc of version 2 needs 3. */
	static const uint8_t two_args[] = { 3 << 3 | 2, 0, 7, 8 };
	static const uint8_t alloc[] = { 3 << 3 | 3, 0, 7, 8, 0 };
	static const uint8_t one_arg_span[] = { 6 << 3 | 1, 0, 7 };
	static const struct tracedec_visitor v = { .event = count_events };
	struct tracedec_error err = { 0 };
	uint8_t buf[256], info[64];
	unsigned int versions = 0;
	static struct gens gs;
	size_t n, ni;

	memset(&gs, 0, sizeof(gs));
	/* Version 1: types 3-5 mean nothing yet; anything goes. */
	n = make_stream(buf, 1, two_args, sizeof(two_args), NULL, 0);
	KT_CHECK_EQ(tracedec_decode(buf, n, &v, &versions, &err), 0);
	KT_CHECK_EQ(versions, 1);
	KT_CHECK_EQ(tracedec_mem_check(buf, n, &gens_visitor, &gs, &err), 0);
	KT_CHECK_EQ(gs.n, 0);
	/* Version 2: checked. */
	n = make_stream(buf, 2, two_args, sizeof(two_args), NULL, 0);
	KT_CHECK_EQ(tracedec_decode(buf, n, NULL, NULL, &err), -EBADMSG);
	KT_CHECK(err.what && strstr(err.what, "memory event"));
	KT_CHECK_EQ(tracedec_mem_check(buf, n, NULL, NULL, &err), -EBADMSG);
	ni = meminfo_rec(info, ALIGN);
	n = make_stream(buf, 2, alloc, sizeof(alloc), info, ni);
	versions = 0;
	KT_CHECK_EQ(tracedec_decode(buf, n, &v, &versions, &err), 0);
	KT_CHECK_EQ(versions, 2);
	KT_CHECK_EQ(tracedec_mem_check(buf, n, &gens_visitor, &gs, &err), 0);
	KT_CHECK_EQ(gs.n, 1);
	KT_CHECK_EQ(gs.g[0].live_bytes, 8);
	/* No memory info record in version 1; none with a bad align. */
	n = make_stream(buf, 1, alloc, sizeof(alloc), info, ni);
	KT_CHECK_EQ(tracedec_decode(buf, n, NULL, NULL, &err), -EBADMSG);
	KT_CHECK(err.what && strstr(err.what, "unknown record"));
	ni = meminfo_rec(info, 24);
	n = make_stream(buf, 2, alloc, sizeof(alloc), info, ni);
	KT_CHECK_EQ(tracedec_decode(buf, n, NULL, NULL, &err), -EBADMSG);
	KT_CHECK(err.what && strstr(err.what, "power of two"));
	n = make_stream(buf, 4, alloc, sizeof(alloc), NULL, 0);
	KT_CHECK_EQ(tracedec_decode(buf, n, NULL, NULL, &err), -EBADMSG);
	KT_CHECK(err.what && strstr(err.what, "version"));
	/* A span (type 6) needs a name and a start from version 3 on. */
	n = make_stream(buf, 3, one_arg_span, sizeof(one_arg_span), NULL, 0);
	KT_CHECK_EQ(tracedec_decode(buf, n, NULL, NULL, &err), -EBADMSG);
	KT_CHECK(err.what && strstr(err.what, "span"));
	n = make_stream(buf, 2, one_arg_span, sizeof(one_arg_span), NULL, 0);
	KT_CHECK_EQ(tracedec_decode(buf, n, NULL, NULL, &err), 0);
}

/* A free of an id the generation never saw is reported, not a crash. */
static void unknown_free_reported(void)
{
	static const uint8_t ev[] = {
		4 << 3 | 1, 0, 9, /* free of 9 */
		3 << 3 | 3, 0, 5, 10, 0, /* alloc of 5 */
		4 << 3 | 1, 1, 5, /* free of 5 */
		4 << 3 | 1, 1, 5, /* free of 5 again */
	};
	struct tracedec_error err = { 0 };
	static struct gens gs;
	uint8_t buf[256];
	size_t n = make_stream(buf, 2, ev, sizeof(ev), NULL, 0);

	memset(&gs, 0, sizeof(gs));
	KT_REQUIRE(tracedec_mem_check(buf, n, &gens_visitor, &gs, &err) == 0);
	KT_REQUIRE(gs.n == 1);
	KT_CHECK_EQ(gs.g[0].unknown_frees, 2);
	KT_CHECK_EQ(gs.g[0].first_unknown_id, 5);
	KT_CHECK_EQ(gs.g[0].live_objects, 0);
}

int main(void)
{
	KT_RUN(roundtrip);
	KT_RUN(errors);
	KT_RUN(table_full_and_missed_free);
	KT_RUN(free_all);
	KT_RUN(snapshot_race);
	KT_RUN(snapshot_race_signals);
	KT_RUN(decoder_versions);
	KT_RUN(unknown_free_reported);
	return ktest_exit();
}
