// SPDX-License-Identifier: MIT
/*
 * profbuf_hostile_stress.c - the guarded reader (profbuf_reader_attach())
 * against writer processes that scribble on the shared ring they write:
 * the launcher (prof/launcher/record.c) against a program that writes over the
 * profiler's memory.
 *
 * Round after round: a fresh shared ring (profbuf_shared_init() in
 * MAP_SHARED | MAP_ANONYMOUS memory, its size drawn per round unless
 * --bufwords says), a guarded reader attached to it, and --writers writer
 * processes writing the profiler's records (prof/wire/stream.h: a HELLO, a
 * MAP, then samples, wall samples, allocations and frees) as fast as they
 * can and, about once in --rate writes (drawn per round unless given),
 * scribbling instead: a word anywhere, the write index, the overflow
 * word, record lengths, tags, owner and commit stamps, the geometry, a
 * forged record, hostile records written the proper way (HELLO and MAP
 * records with bad paths, bad kinds, pids and periods), or the whole
 * block set to 0xff.  A writer trusts the memory, so it may crash or spin
 * on what it wrote: one that dies is reaped and replaced (its stderr goes
 * to /dev/null: a writer's crash report is expected, not a finding).
 * With --kill the reader's process SIGKILLs writers at random moments
 * (dead writers to step over), with --stop it SIGSTOPs one for a while (a
 * live writer to wait for).  Without --rate, one round in four
 * scribbles, kills and stops nothing: there the reader must find no
 * corruption, every sample must be as written, and records read +
 * overflow counts must equal the writes accepted.  The writers' counts
 * lie a GUARD of PROT_NONE away from the ring, out of reach of a writer
 * that follows a scribbled offset.
 *
 * The reader reads with a timeout drawn per read (0 to 20 ms) until -EIO
 * (corruption found: sticky), EOF or the round's time; then the writers
 * are stopped (SIGKILLed if they do not stop), the ring closed and
 * drained for at most DRAIN_NS.  Each run is taken with prof_agg_take(),
 * as the launcher takes it (unless --no-agg), and the profile is built at
 * the end of the round.  Writers run at nice 10, so that the reader's
 * timing is about the reader, not about two cores shared with spinners.
 *
 * Violations: a read that returns more than 10 x its timeout + 100 ms
 * after it began, not counting the time it waited for a CPU
 * (/proc/thread-self/schedstat; past timeout + 2 ms, that time included,
 * is only counted: late=, and the worst overrun reported); a read
 * that allocates (heap in use before and after it differ); a return code
 * the header does not document; a run that is malformed, points into the
 * shared block or changes while the caller holds it; -EIO with no
 * corruption named; records taken but not counted by the aggregation; a
 * profile that does not hold together; heap in use growing from round to
 * round; and in clean rounds any corruption reported, a sample not as
 * written, an early EOF or missing accounting.  The reader's process
 * must not die or hang: run.sh sees a death as a missing summary line,
 * and a round that outlives its watchdog (a minute past --round-ms) ends
 * the run with a message and status 3.
 *
 * Exit status 0 only if nothing was violated.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <profring/prof.h>
#include <profring/profbuf.h>

#include "prof/common/aggregate.h"
#include "prof/common/heap_agg.h"
#include "prof/wire/stream.h"
#include "profbuf/profbuf_impl.h"
#include "ring/pindex.h"
#include "testing/harness.h"
#include "testing/sanitizer.h"

#define PROG "profbuf_hostile_stress"
#define MAX_WRITERS 16
#define HDR PROF_HDR_WORDS
#define MAX_PCS 16
#define MAX_HOSTILE 640 /* words of a hostile record: a path past 4 KiB */
#define MS 1000000u
#define LATE_NS (2 * MS)
#define GROSS_NS (100 * MS)
#define DRAIN_NS (200 * MS)
#define WATCHDOG_S 60 /* past --round-ms: a round takes 2.5 s more at most */
#define HEAP_SLACK (1u << 20)
#define NO_TASK (1u << 30) /* past any pid_max: a dead owner */
#define GUARD ((size_t)1 << 30) /* around the ring (map_in()) */

static struct {
	long seconds, writers, seed, bufwords, rate, round_ms;
	bool kill, stop, no_agg, unguarded;
} opt = {
	.seconds = 5,
	.writers = 3,
	.seed = 1,
	.round_ms = 100,
};

static const struct stress_flag flags[] = {
	{ "seconds", "run time (default 5)", STRESS_INT, &opt.seconds },
	{ "writers", "writer processes (default 3, at most 16)", STRESS_INT,
	  &opt.writers },
	{ "seed", "PRNG seed (default 1)", STRESS_INT, &opt.seed },
	{ "bufwords", "ring words (default: drawn per round, 64 to 16384)",
	  STRESS_INT, &opt.bufwords },
	{ "rate", "a scribble per RATE writes (default: drawn per round)",
	  STRESS_INT, &opt.rate },
	{ "round-ms", "longest round (default 100)", STRESS_INT,
	  &opt.round_ms },
	{ "kill", "SIGKILL writers at random moments", STRESS_BOOL, &opt.kill },
	{ "stop", "SIGSTOP a writer for a while", STRESS_BOOL, &opt.stop },
	{ "no-agg", "do not aggregate the runs", STRESS_BOOL, &opt.no_agg },
	{ "unguarded",
	  "read with a plain handle (profbuf_shared_attach()) instead: "
	  "what the launcher did before; expected to fail",
	  STRESS_BOOL, &opt.unguarded },
	{ NULL, NULL, 0, NULL },
};

/* ---- shared with the writers (not scribbled on) ---- */

struct slot {
	_Atomic uint64_t accepted; /* writes that returned 0 or -ENOSPC */
	_Atomic uint64_t writes;
	_Atomic uint64_t scribbles;
	char pad[40];
};

struct ctl {
	_Atomic int stop;
	struct slot w[MAX_WRITERS];
};

static struct ctl *ctl;

/* One round's ring: where it is and its geometry, as laid out. */
struct ring {
	char *mem;
	size_t size;
	struct pb_layout l;
	uint64_t rate; /* a scribble per @rate writes; 0: a clean round */
	uint32_t no;
};

/* ---- the writers ---- */

struct writer {
	struct profbuf *b;
	const struct ring *rg;
	struct slot *s;
	uint64_t rng, seq;
	uint32_t pid, slot;
	uint64_t buf[MAX_HOSTILE];
};

static uint64_t rnd(struct writer *w, uint64_t n)
{
	return stress_rand(&w->rng) % n;
}

/* A sample's PC @i (i >= 1); PC 0 is its sequence number. */
static uint64_t pc_of(uint64_t pid, uint64_t seq, size_t i)
{
	return 0x400000 +
	       ((pid * 0x9e3779b97f4a7c15ull) ^ (seq * 31 + i)) % 0x100000;
}

static int put(struct writer *w, uint64_t kind_word, uint64_t tid, uint64_t pid,
	       const uint64_t *stk, size_t n)
{
	uint64_t hdr[HDR];
	int rc;

	hdr[PROF_HDR_KIND_PERIODS] = kind_word;
	hdr[PROF_HDR_TID] = tid;
	hdr[PROF_HDR_PID] = pid;
	rc = profbuf_write(w->b, (const void *)(uintptr_t)(w->slot + 1),
			   (int64_t)stress_now_ns(), hdr, HDR,
			   (const uintptr_t *)stk, n);
	/* Relaxed: counts, read after the writer exited. */
	atomic_fetch_add_explicit(&w->s->writes, 1, memory_order_relaxed);
	if (rc == 0 || rc == -ENOSPC)
		atomic_fetch_add_explicit(&w->s->accepted, 1,
					  memory_order_relaxed);
	return rc;
}

static void put_path_record(struct writer *w, enum prof_rec_kind kind,
			    uint64_t a, uint64_t b, uint64_t c,
			    const char *path, size_t nfixed)
{
	size_t len = strlen(path);

	w->buf[0] = a;
	w->buf[1] = b;
	w->buf[2] = c;
	prof_stream_pack(w->buf + nfixed, path, len);
	put(w, prof_hdr_kind_word(kind, 0), w->pid, w->pid, w->buf,
	    nfixed + prof_stream_words(len));
}

static void write_sample(struct writer *w)
{
	uint64_t seq = ++w->seq;
	size_t n = 1 + seq % MAX_PCS;

	w->buf[0] = seq;
	for (size_t i = 1; i < n; i++)
		w->buf[i] = pc_of(w->pid, seq, i);
	put(w, prof_hdr_kind_word(PROF_REC_SAMPLE, 1 + seq % 3), w->pid, w->pid,
	    w->buf, n);
}

/* Mostly samples; now and then the profiler's other records. */
static void write_record(struct writer *w)
{
	uint64_t addr = 0x10000 + 16 * rnd(w, 64);

	switch (rnd(w, 64)) {
	case 0:
		put_path_record(w, PROF_REC_MAP, 0x400000, 0x500000, 0,
				"/nonexistent/hostile_writer", 3);
		return;
	case 1:
		w->buf[0] = PROF_WALL_SLEEPING;
		w->buf[1] = pc_of(w->pid, 0, 1);
		put(w, prof_hdr_kind_word(PROF_REC_WALL, 1), w->pid, w->pid,
		    w->buf, 2);
		return;
	case 2:
		w->buf[PROF_ALLOC_ADDR] = addr;
		w->buf[PROF_ALLOC_SIZE] = 64;
		w->buf[PROF_ALLOC_FLAGS] = 0;
		w->buf[PROF_ALLOC_WORDS] = pc_of(w->pid, 0, 2);
		put(w, prof_hdr_kind_word(PROF_REC_ALLOC, 1), w->pid, w->pid,
		    w->buf, PROF_ALLOC_WORDS + 1);
		return;
	case 3:
		w->buf[0] = addr;
		put(w, prof_hdr_kind_word(PROF_REC_FREE, 1), w->pid, w->pid,
		    w->buf, 1);
		return;
	default:
		write_sample(w);
	}
}

/* ---- scribbles: what a wild write of the program could do ---- */

static uint64_t any_value(struct writer *w, uint64_t cur)
{
	switch (rnd(w, 10)) {
	case 0:
		return 0;
	case 1:
		return ~(uint64_t)0;
	case 2:
		return rnd(w, 256);
	case 3:
		return cur + 1 + rnd(w, 16);
	case 4:
		return cur - 1 - rnd(w, 16);
	case 5:
		return cur ^ (uint64_t)1 << rnd(w, 64);
	case 6:
		return cur << 1;
	case 7:
		return (uint64_t)INT32_MAX + rnd(w, 3);
	default:
		return stress_rand(&w->rng);
	}
}

/* A length a record could be given: near the bounds the reader checks. */
static uint64_t len_value(struct writer *w, uint32_t di)
{
	const struct pb_layout *l = &w->rg->l;

	switch (rnd(w, 8)) {
	case 0:
		return rnd(w, 2 + l->hdrsize); /* too short (0: a marker) */
	case 1:
		return 2 + l->hdrsize + rnd(w, 4);
	case 2:
		return l->data_len - di;
	case 3:
		return l->data_len - di + 1 + rnd(w, 4);
	case 4:
		return l->data_len + rnd(w, 2);
	default:
		return any_value(w, 2 + l->hdrsize);
	}
}

static uint32_t owner_value(struct writer *w)
{
	switch (rnd(w, 5)) {
	case 0:
		return PB_STAMP_OWNER | w->pid; /* alive: waited for */
	case 1:
		return PB_STAMP_OWNER | NO_TASK; /* dead: stepped over */
	case 2:
		return PB_STAMP_OWNER | 1; /* init: alive for ever */
	case 3:
		return PB_STAMP_OWNER;
	default:
		return (uint32_t)stress_rand(&w->rng);
	}
}

static uint64_t *ring_data(struct writer *w)
{
	return (uint64_t *)(w->rg->mem + w->rg->l.data_off);
}

static _Atomic uint32_t *ring_stamps(struct writer *w)
{
	return (_Atomic uint32_t *)(w->rg->mem + w->rg->l.stamps_off);
}

/* Relaxed, all: a wild write publishes nothing. */
static uint64_t load_w(struct writer *w)
{
	return atomic_load_explicit(&w->b->w, memory_order_relaxed);
}

static void scribble_word(struct writer *w)
{
	volatile uint64_t *p =
		(volatile uint64_t *)w->rg->mem + rnd(w, w->rg->l.size / 8);

	*p = any_value(w, *p);
}

static void scribble_range(struct writer *w)
{
	size_t words = w->rg->l.size / 8, at = rnd(w, words);
	size_t n = 1 + rnd(w, 64);
	uint64_t v = rnd(w, 2) ? ~(uint64_t)0 : stress_rand(&w->rng);

	if (n > words - at)
		n = words - at;
	for (size_t i = 0; i < n; i++)
		((volatile uint64_t *)w->rg->mem)[at + i] = v;
}

/* The write index: more records claimed, fewer, or nonsense. */
static void scribble_w(struct writer *w)
{
	const struct pb_layout *l = &w->rg->l;
	uint64_t bw = load_w(w), r, nw;

	switch (rnd(w, 6)) {
	case 0:
		nw = ring_pindex_add(bw, (uint32_t)rnd(w, 2 * l->data_len),
				     1 + (uint32_t)rnd(w, l->tag_len + 2));
		break;
	case 1:
		nw = ring_pindex_make(
			ring_pindex_data(bw) - (uint32_t)rnd(w, 64),
			ring_pindex_tag(bw) - 1 - (uint32_t)rnd(w, 8));
		break;
	case 2:
		nw = bw ^ (RING_PINDEX_FLAGS & stress_rand(&w->rng));
		break;
	case 3:
		r = atomic_load_explicit(&w->b->r, memory_order_relaxed);
		nw = ring_pindex_add(r & ~RING_PINDEX_FLAGS, 0,
				     l->tag_len + 1 + (uint32_t)rnd(w, 4));
		break;
	default:
		nw = any_value(w, bw);
	}
	atomic_store_explicit(&w->b->w, nw, memory_order_relaxed);
}

/* The overflow word and its companions: forged counts, BUSY, CLOSED. */
static void scribble_ovf(struct writer *w)
{
	struct profbuf *b = w->b;
	uint64_t o = atomic_load_explicit(&b->ovf, memory_order_relaxed);

	switch (rnd(w, 7)) {
	case 0:
		o = ovf_add(o, (uint32_t)stress_rand(&w->rng));
		break;
	case 1:
		atomic_store_explicit(&b->busy_owner, owner_value(w),
				      memory_order_relaxed);
		o |= OVF_BUSY;
		break;
	case 2:
		o |= OVF_CLOSED;
		break;
	case 3:
		o |= OVF_SEALED;
		break;
	case 4:
		atomic_store_explicit(&b->ovf_time, stress_rand(&w->rng),
				      memory_order_relaxed);
		return;
	default:
		o = any_value(w, o);
	}
	atomic_store_explicit(&b->ovf, o, memory_order_relaxed);
}

/* The words the reader owns in a plain handle, and the futex word. */
static void scribble_reader_words(struct writer *w)
{
	struct profbuf *b = w->b;

	switch (rnd(w, 4)) {
	case 0:
		atomic_store_explicit(&b->r, any_value(w, 0),
				      memory_order_relaxed);
		break;
	case 1:
		atomic_store_explicit(&b->limit, any_value(w, 0),
				      memory_order_relaxed);
		break;
	case 2:
		atomic_fetch_add_explicit(&b->wake_seq, 1,
					  memory_order_relaxed);
		break;
	default:
		atomic_store_explicit(&b->wake_watermark,
				      (uint32_t)any_value(w, 0),
				      memory_order_relaxed);
	}
}

/* A record length near where the reader reads or the writers write. */
static void scribble_len(struct writer *w)
{
	const struct pb_layout *l = &w->rg->l;
	uint64_t at = rnd(w, 2) ? load_w(w)
				: atomic_load_explicit(&w->b->r,
						       memory_order_relaxed);
	uint32_t di = (ring_pindex_data(at) + (uint32_t)rnd(w, 64) - 32) &
		      (l->data_len - 1);

	((volatile uint64_t *)ring_data(w))[di] = len_value(w, di);
}

static void scribble_tag(struct writer *w)
{
	const struct pb_layout *l = &w->rg->l;
	uint32_t ti = (ring_pindex_tag(load_w(w)) - (uint32_t)rnd(w, 8)) &
		      (l->tag_len - 1);

	((volatile uint64_t *)(w->rg->mem + l->tags_off))[ti] =
		rnd(w, 2) ? 0 : any_value(w, w->slot + 1);
}

/* A commit or owner stamp, just before or after the write index. */
static void scribble_stamp(struct writer *w)
{
	const struct pb_layout *l = &w->rg->l;
	uint32_t ti = (ring_pindex_tag(load_w(w)) + (uint32_t)rnd(w, 8) - 4) &
		      (l->tag_len - 1);
	uint32_t v;

	switch (rnd(w, 3)) {
	case 0:
		v = PB_STAMP_COMMITTED;
		break;
	case 1:
		v = PB_STAMP_FREE;
		break;
	default:
		v = owner_value(w);
	}
	atomic_store_explicit(&ring_stamps(w)[ti], v, memory_order_relaxed);
}

/* The geometry the writers follow (and the reader compares). */
static void scribble_geometry(struct writer *w)
{
	struct profbuf *b = w->b;

	switch (rnd(w, 12)) {
	case 0:
		b->hdrsize = (uint32_t)any_value(w, b->hdrsize);
		break;
	case 1:
		b->data_len = (uint32_t)any_value(w, b->data_len);
		break;
	case 2:
		b->tag_len = (uint32_t)any_value(w, b->tag_len);
		break;
	case 3:
		b->shared = (uint32_t)any_value(w, b->shared);
		break;
	case 4:
		b->inline_hdrsize = (uint32_t)any_value(w, b->inline_hdrsize);
		break;
	case 5:
		b->data_off = any_value(w, b->data_off);
		break;
	case 6:
		b->tags_off = any_value(w, b->tags_off);
		break;
	case 7:
		b->stamps_off = any_value(w, b->stamps_off);
		break;
	case 8:
		b->ovf_rec_off = any_value(w, b->ovf_rec_off);
		break;
	case 9:
		b->size = any_value(w, b->size);
		break;
	case 10:
		b->magic = any_value(w, b->magic);
		break;
	default:
		b->version = (uint32_t)any_value(w, b->version);
	}
}

/*
 * A record nobody reserved, stamped committed at the write index: any
 * kind, pid and payload, or an overflow record with a forged count.
 */
static void forge_record(struct writer *w)
{
	const struct pb_layout *l = &w->rg->l;
	uint64_t bw = load_w(w), *d = ring_data(w);
	uint32_t ti = ring_pindex_tag(bw) & (l->tag_len - 1);
	uint32_t di = ring_pindex_data(bw) & (l->data_len - 1);
	uint32_t len = 2 + l->hdrsize + (uint32_t)rnd(w, 8);
	bool ovf = !rnd(w, 4);

	if (ovf)
		len = 3 + l->hdrsize;
	if (di + len > l->data_len)
		return;
	d[di] = len;
	d[di + 1] = stress_rand(&w->rng);
	for (uint32_t i = 2; i < len; i++)
		d[di + i] = ovf ? 0 : any_value(w, w->pid);
	if (ovf)
		d[di + len - 1] = any_value(w, 1);
	((volatile uint64_t *)(w->rg->mem + l->tags_off))[ti] =
		ovf ? 0 : w->slot + 1;
	/* Release: as put_record(), for a reader that believes the stamp. */
	atomic_store_explicit(&ring_stamps(w)[ti], PB_STAMP_COMMITTED,
			      memory_order_release);
	atomic_compare_exchange_strong_explicit(
		&w->b->w, &bw, ring_pindex_add(bw, len, 1),
		memory_order_relaxed, memory_order_relaxed);
}

/* A record written the proper way whose content is hostile. */
static void hostile_record(struct writer *w)
{
	static const uint64_t pids[] = { 0, 1, (uint64_t)INT32_MAX + 1,
					 UINT64_MAX };
	size_t most = w->rg->l.data_len / 2 - 2 - HDR;
	size_t n = rnd(w, 8) ? rnd(w, 48) : rnd(w, MAX_HOSTILE);
	uint64_t kind = rnd(w, 8), pid = w->pid, fill;

	if (n > most)
		n = most;
	if (!rnd(w, 2))
		pid = rnd(w, 2) ? pids[rnd(w, 4)] : any_value(w, w->pid);
	fill = rnd(w, 2) ? 0x4141414141414141ull : stress_rand(&w->rng);
	for (size_t i = 0; i < n; i++)
		w->buf[i] = i < 3 && rnd(w, 2) ? any_value(w, 0x400000) : fill;
	if (n && rnd(w, 2))
		w->buf[n - 1] = 0; /* a path that ends */
	put(w, kind << PROF_KIND_SHIFT | any_value(w, 1) % 5, any_value(w, 1),
	    pid, w->buf, n);
}

static void scribble(struct writer *w)
{
	/* Relaxed: a count, read after the writer exited. */
	atomic_fetch_add_explicit(&w->s->scribbles, 1, memory_order_relaxed);
	switch (rnd(w, 32)) {
	case 0:
	case 1:
	case 2:
	case 3:
		scribble_word(w);
		break;
	case 4:
	case 5:
	case 6:
		scribble_w(w);
		break;
	case 7:
	case 8:
	case 9:
		scribble_ovf(w);
		break;
	case 10:
	case 11:
		scribble_reader_words(w);
		break;
	case 12:
	case 13:
	case 14:
	case 15:
		scribble_len(w);
		break;
	case 16:
	case 17:
		scribble_tag(w);
		break;
	case 18:
	case 19:
	case 20:
	case 21:
		scribble_stamp(w);
		break;
	case 22:
		scribble_geometry(w);
		break;
	case 23:
	case 24:
		scribble_range(w);
		break;
	case 25:
	case 26:
	case 27:
		forge_record(w);
		break;
	case 28:
	case 29:
	case 30:
		hostile_record(w);
		break;
	default:
		if (!rnd(w, 8))
			memset(w->rg->mem, 0xff, w->rg->l.size);
		else
			scribble_word(w);
	}
}

static void die_quietly(int sig)
{
	_exit(100 + sig);
}

/* A writer process: its crashes end it quietly (expected: see above). */
static void writer_setup(void)
{
	static const int deadly[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL,
				      SIGABRT };
	struct sigaction sa = { .sa_handler = die_quietly };
	struct rlimit none = { 0, 0 };
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		dup2(fd, 2);
		close(fd);
	}
	setrlimit(RLIMIT_CORE, &none);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(deadly) / sizeof(deadly[0]); i++)
		sigaction(deadly[i], &sa, NULL);
	if (nice(10) == -1)
		(void)0; /* the reader's timing only suffers */
}

static void writer_main(const struct ring *rg, uint32_t slot, uint64_t seed)
{
	static struct writer w;

	writer_setup();
	w = (struct writer){
		.b = (struct profbuf *)rg->mem,
		.rg = rg,
		.s = &ctl->w[slot],
		.rng = seed,
		.pid = (uint32_t)getpid(),
		.slot = slot,
	};
	put_path_record(&w, PROF_REC_HELLO, (uint64_t)getppid(), 0, 0,
			"hostile_writer", 2);
	put_path_record(&w, PROF_REC_MAP, 0x400000, 0x500000, 0,
			"/nonexistent/hostile_writer", 3);
	/* Relaxed: a flag; nothing is published through it. */
	while (!atomic_load_explicit(&ctl->stop, memory_order_relaxed)) {
		if (rg->rate && !rnd(&w, rg->rate))
			scribble(&w);
		else
			write_record(&w);
	}
}

/* ---- the reader's side ---- */

struct tally {
	uint64_t rounds, eio, eof, cut, clean, writes, scribbles;
	uint64_t deaths, kills, stops, reads, late, over_max, own_over_max;
	uint64_t runs;
	uint64_t records, verified, lost, samples, unread_max;
	size_t heap_base, heap_max;
	long rss_kb;
	uint64_t violations;
};

static struct tally tally;

/* What the reader found corrupted, and how often (static strings). */
#define MAX_FINDINGS 24
static struct {
	const char *what;
	uint64_t n;
} findings[MAX_FINDINGS];

static void found(const char *what)
{
	for (int i = 0; i < MAX_FINDINGS; i++) {
		if (!findings[i].what)
			findings[i].what = what;
		if (findings[i].what == what) {
			findings[i].n++;
			return;
		}
	}
}
static pid_t pids[MAX_WRITERS];
static bool killed[MAX_WRITERS];
static uint64_t rng;

/* The sanitizers own malloc: their runtime counts the heap. */
size_t __sanitizer_get_current_allocated_bytes(void);

static size_t heap_in_use(void)
{
#if TESTING_UNDER_ASAN || TESTING_UNDER_TSAN
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
#endif
}

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

__attribute__((format(printf, 1, 2))) static void violation(const char *fmt,
							    ...)
{
	va_list ap;

	if (tally.violations++ < 20) {
		va_start(ap, fmt);
		fprintf(stderr, PROG ": round %llu: ",
			(unsigned long long)tally.rounds);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

static void start_writer(const struct ring *rg, uint32_t slot)
{
	uint64_t seed = stress_rand(&rng) | 1;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		writer_main(rg, slot, seed);
		_exit(0);
	}
	pids[slot] = pid > 0 ? pid : 0;
	killed[slot] = false;
}

/* Reap the writers that ended; replace them if @rg is given. */
static void reap(const struct ring *rg, bool block)
{
	int status;

	for (uint32_t i = 0; i < (uint32_t)opt.writers; i++) {
		if (!pids[i] ||
		    waitpid(pids[i], &status, block ? 0 : WNOHANG) != pids[i])
			continue;
		pids[i] = 0;
		if (!killed[i] && !(WIFEXITED(status) && !WEXITSTATUS(status)))
			tally.deaths++;
		if (rg)
			start_writer(rg, i);
	}
}

static bool writers_alive(void)
{
	for (int i = 0; i < opt.writers; i++)
		if (pids[i])
			return true;
	return false;
}

/*
 * Stop the round's writers: ask, wait @grace_ns, then SIGKILL.
 * Return: true if all stopped when asked.
 */
static bool stop_writers(uint64_t grace_ns)
{
	uint64_t until = stress_now_ns() + grace_ns;

	/* Relaxed: a flag; the writers' counts are read after waitpid. */
	atomic_store_explicit(&ctl->stop, 1, memory_order_relaxed);
	while (writers_alive() && stress_now_ns() < until) {
		reap(NULL, false);
		stress_sleep_ns(200000);
	}
	if (!writers_alive())
		return true;
	for (int i = 0; i < opt.writers; i++) {
		if (!pids[i])
			continue;
		killed[i] = true;
		kill(pids[i], SIGKILL);
	}
	reap(NULL, true);
	return false;
}

/* The reader's state for one round. */
struct reading {
	struct profbuf_reader *rd;
	struct profbuf *plain; /* --unguarded */
	struct prof_agg *agg;
	const struct ring *rg;
	uint64_t last[MAX_WRITERS];
	uint64_t taken; /* non-overflow records given to the aggregation */
	uint64_t records, lost;
	bool enomem, clean;
};

static uint64_t run_hash(const struct profbuf_read *r)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < r->ndata; i++)
		h = (h ^ r->data[i]) * 0x100000001b3ull;
	for (size_t i = 0; i < r->ntags; i++)
		h = (h ^ (uint64_t)(uintptr_t)r->tags[i]) * 0x100000001b3ull;
	return h;
}

/* A clean round's record is one a writer wrote. */
static void verify(struct reading *rs, const struct profbuf_record *rec)
{
	uint64_t slot = (uint64_t)(uintptr_t)rec->tag - 1, seq;

	if (slot >= (uint64_t)opt.writers) {
		violation("clean round: a record with tag %#llx",
			  (unsigned long long)slot + 1);
		return;
	}
	if (prof_hdr_kind(rec->hdr[PROF_HDR_KIND_PERIODS]) != PROF_REC_SAMPLE)
		return;
	seq = rec->nstk ? rec->stk[0] : 0;
	if (rec->nstk != 1 + seq % MAX_PCS || seq <= rs->last[slot]) {
		violation("clean round: sample %llu of writer %llu out of "
			  "order or cut (%zu pcs)",
			  (unsigned long long)seq, (unsigned long long)slot,
			  rec->nstk);
		return;
	}
	rs->last[slot] = seq;
	for (size_t i = 1; i < rec->nstk; i++)
		if (rec->stk[i] != pc_of(rec->hdr[PROF_HDR_PID], seq, i)) {
			violation("clean round: sample %llu pc %zu not as "
				  "written",
				  (unsigned long long)seq, i);
			return;
		}
	tally.verified++;
}

/* One run the reader returned: it must be whole, private and stable. */
static void take_run(struct reading *rs, const struct profbuf_read *r)
{
	const char *mem = rs->rg->mem;
	struct profbuf_record rec;
	struct profbuf_iter it;
	uint64_t h = run_hash(r), n = 0;

	tally.runs++;
	if (!rs->plain && (const char *)r->data + r->ndata * 8 > mem &&
	    (const char *)r->data < mem + rs->rg->size)
		violation("a run points into the shared block");
	if (r->ntags > rs->rg->l.tag_len || r->ndata > rs->rg->l.data_len)
		violation("a run longer than the ring (%zu words, %zu tags)",
			  r->ndata, r->ntags);
	profbuf_iter_init(&it, r, HDR);
	while (profbuf_iter_next(&it, &rec)) {
		if (profbuf_record_is_overflow(&rec)) {
			rs->lost += profbuf_record_overflow_count(&rec);
			continue;
		}
		n++;
		if (rs->clean)
			verify(rs, &rec);
	}
	if (profbuf_iter_malformed(&it))
		violation("a run the guarded reader returned is malformed");
	rs->records += n;
	if (rs->agg && !rs->enomem) {
		if (prof_agg_take(rs->agg, r))
			rs->enomem = true; /* some records were not taken */
		else
			rs->taken += n;
	}
	if (run_hash(r) != h)
		violation("a run changed while its reader held it");
}

static int schedstat_fd = -1;

/*
 * How long this (the main) thread has waited on a run queue, in ns: the
 * time a read lasted that the reader could not have used (two cores
 * shared with spinning writers and whatever else runs).  0 if unknown.
 */
static uint64_t runq_wait_ns(void)
{
	unsigned long long run, wait;
	char buf[128];
	ssize_t n;

	if (schedstat_fd < 0)
		return 0;
	n = pread(schedstat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return 0;
	return wait;
}

/* A read took @dt ns of which @queued waiting for a CPU. */
static void check_time(uint64_t timeout_ns, uint64_t dt, uint64_t queued)
{
	uint64_t own = dt > queued ? dt - queued : 0;

	if (dt > timeout_ns && dt - timeout_ns > tally.over_max)
		tally.over_max = dt - timeout_ns;
	if (own > timeout_ns && own - timeout_ns > tally.own_over_max)
		tally.own_over_max = own - timeout_ns;
	if (dt > timeout_ns + LATE_NS)
		tally.late++;
	if (own > 10 * timeout_ns + GROSS_NS)
		violation("a read with timeout %llu us took %llu us (%llu us "
			  "waiting for a CPU)",
			  (unsigned long long)timeout_ns / 1000,
			  (unsigned long long)dt / 1000,
			  (unsigned long long)queued / 1000);
}

/* One guarded read, timed and weighed. */
static int timed_read(struct reading *rs, uint64_t timeout_ns,
		      struct profbuf_read *r)
{
	size_t heap = heap_in_use();
	uint64_t q0 = runq_wait_ns(), t0 = stress_now_ns(), dt;
	int rc = rs->plain ? profbuf_read_timeout(rs->plain, timeout_ns, r)
			   : profbuf_reader_read(rs->rd, timeout_ns, r);

	dt = stress_now_ns() - t0;
	tally.reads++;
	if (heap_in_use() != heap)
		violation("a read allocated (%zu bytes in use, then %zu)", heap,
			  heap_in_use());
	check_time(timeout_ns, dt, runq_wait_ns() - q0);
	if (rc && rc != -ETIMEDOUT && rc != -EIO)
		violation("a read returned %d", rc);
	if (rc == 0 && r->ndata)
		take_run(rs, r);
	return rc;
}

static uint64_t pick_timeout(void)
{
	static const uint64_t t[] = { 0, 10000, 200000, 2 * MS, 20 * MS };

	return t[stress_rand(&rng) % 5];
}

/* The round's random events: a SIGKILL, a SIGSTOP and its SIGCONT. */
struct events {
	uint64_t kill_at, stop_at, cont_at;
	int stopped;
};

static void events_plan(struct events *ev, uint64_t start, uint64_t len,
			bool clean)
{
	memset(ev, 0, sizeof(*ev));
	ev->stopped = -1;
	if (clean)
		return;
	if (opt.kill)
		ev->kill_at = start + stress_rand(&rng) % len;
	if (opt.stop) {
		ev->stop_at = start + stress_rand(&rng) % len;
		ev->cont_at = ev->stop_at + stress_rand(&rng) % len;
	}
}

static void events_run(struct events *ev, uint64_t now)
{
	int i = (int)(stress_rand(&rng) % (uint64_t)opt.writers);

	if (ev->kill_at && now >= ev->kill_at && pids[i]) {
		killed[i] = true;
		kill(pids[i], SIGKILL);
		tally.kills++;
		ev->kill_at = 0;
	}
	if (ev->stop_at && now >= ev->stop_at && pids[i]) {
		kill(pids[i], SIGSTOP);
		tally.stops++;
		ev->stopped = i;
		ev->stop_at = 0;
	}
	if (ev->stopped >= 0 && now >= ev->cont_at) {
		if (pids[ev->stopped])
			kill(pids[ev->stopped], SIGCONT);
		ev->stopped = -1;
	}
}

/*
 * Read while the writers write and scribble, until -EIO, EOF or @until.
 * Return: the last read's code, 1 for EOF.
 */
static int read_round(struct reading *rs, uint64_t until)
{
	struct profbuf_read r;
	struct events ev;
	uint64_t now = stress_now_ns(), next_reap = 0;
	int rc;

	events_plan(&ev, now, until - now, rs->clean);
	for (; now < until; now = stress_now_ns()) {
		rc = timed_read(rs, pick_timeout(), &r);
		if (rc == -EIO)
			return rc;
		if (!rc && r.eof)
			return 1;
		if (now < next_reap)
			continue;
		next_reap = now + MS;
		events_run(&ev, now);
		reap(rs->rg, false);
	}
	return 0;
}

/* After close: what is left, for at most DRAIN_NS.  Return as above. */
static int drain(struct reading *rs)
{
	uint64_t until = stress_now_ns() + DRAIN_NS;
	struct profbuf_read r;
	int rc;

	while (stress_now_ns() < until) {
		rc = timed_read(rs, pick_timeout(), &r);
		if (rc == -EIO)
			return rc;
		if (!rc && r.eof)
			return 1;
	}
	return 0;
}

/* The aggregation counted every record, and its profile holds together. */
static void check_agg(struct reading *rs)
{
	struct prof_agg_counts c;
	struct prof_heap_counts hc;
	struct prof_profile p;
	uint64_t counted;

	prof_agg_counts(rs->agg, &c);
	prof_agg_heap_counts(rs->agg, &hc);
	counted = c.read + c.maps + c.images + c.bad + c.dropped + hc.allocs +
		  hc.frees + hc.unknown_frees;
	if (!rs->enomem && counted != rs->taken)
		violation("%llu records taken, %llu counted",
			  (unsigned long long)rs->taken,
			  (unsigned long long)counted);
	if (prof_agg_profile(rs->agg, &p))
		return; /* out of memory */
	for (size_t i = 0; i < p.nsamples; i++) {
		const struct prof_sample *s = &p.samples[i];

		if (s->npcs > PROFRING_PROF_MAX_FRAMES ||
		    (!s->special && (s->space >= p.nspaces || !s->pid)))
			violation("profile sample %zu: %zu pcs, space %u of "
				  "%zu, pid %u",
				  i, s->npcs, s->space, p.nspaces, s->pid);
	}
	tally.samples += p.nsamples;
	prof_agg_profile_free(&p);
}

static uint64_t accepted_sum(void)
{
	uint64_t n = 0;

	/* Relaxed: the writers have exited (reaped). */
	for (int i = 0; i < opt.writers; i++)
		n += atomic_load_explicit(&ctl->w[i].accepted,
					  memory_order_relaxed);
	return n;
}

/* The end of a round: what the reader and the writers say. */
static void round_end(struct reading *rs, int rc, bool stopped)
{
	struct profbuf_reader_stats st = { 0 };

	if (rs->rd)
		profbuf_reader_stats(rs->rd, &st);
	else if (rc == -EIO)
		st.corrupt = "a record's length (the plain reader's check)";
	if (st.unread > rs->rg->l.tag_len)
		violation("unread %u past the ring's tags", st.unread);
	if (rc == -EIO && !st.corrupt)
		violation("-EIO with no corruption named");
	if (st.corrupt)
		found(st.corrupt);
	tally.unread_max =
		st.unread > tally.unread_max ? st.unread : tally.unread_max;
	tally.eio += rc == -EIO;
	tally.eof += rc == 1;
	tally.cut += rc == 0;
	/* Relaxed: counts; the writers have been reaped. */
	for (int i = 0; i < opt.writers; i++) {
		tally.writes += atomic_load_explicit(&ctl->w[i].writes,
						     memory_order_relaxed);
		tally.scribbles += atomic_load_explicit(&ctl->w[i].scribbles,
							memory_order_relaxed);
	}
	if (!rs->clean)
		return;
	tally.clean++;
	tally.records += rs->records;
	tally.lost += rs->lost;
	if (st.corrupt)
		violation("clean round: corruption reported: %s", st.corrupt);
	else if (rc != 1)
		violation("clean round: no EOF (%d)", rc);
	else if (stopped && rs->records + rs->lost != accepted_sum())
		violation("clean round: %llu read + %llu lost, %llu accepted",
			  (unsigned long long)rs->records,
			  (unsigned long long)rs->lost,
			  (unsigned long long)accepted_sum());
}

static void ring_init(struct ring *rg, char *mem, size_t cap)
{
	static const size_t sizes[] = { 64, 256, 1024, 4096, 16384 };
	size_t words = opt.bufwords ? (size_t)opt.bufwords
				    : sizes[stress_rand(&rng) % 5];
	size_t ntags = words / 4 + 1; /* as the profiler's (prof/wire/shm.c) */
	const struct profbuf *b;

	rg->mem = mem;
	rg->size = profbuf_shared_size(HDR, words, ntags);
	memset(mem, 0, cap);
	b = profbuf_shared_init(mem, rg->size, HDR, words, ntags);
	/* The geometry as laid out (0: it was just made). */
	pb_check_layout(b, rg->size, &rg->l);
	if (opt.rate > 0)
		rg->rate = (uint64_t)opt.rate;
	else if (stress_rand(&rng) % 4 == 0)
		rg->rate = 0;
	else
		rg->rate = (uint64_t)16 << stress_rand(&rng) % 16;
	rg->no = (uint32_t)tally.rounds;
}

static void round_heap(void)
{
	size_t heap = heap_in_use();

	if (tally.rounds == 3)
		tally.heap_base = heap;
	if (heap > tally.heap_max)
		tally.heap_max = heap;
	if (tally.rounds > 3 && heap > tally.heap_base + HEAP_SLACK)
		violation("heap in use grew: %zu bytes, %zu after round 3",
			  heap, tally.heap_base);
}

/* A round that does not end: a read hung (or the writers' reaping). */
static void on_watchdog(int sig)
{
	static const char msg[] = PROG ": a round outlived its watchdog "
				       "(a read or a writer hung)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void one_round(char *mem, size_t cap)
{
	static struct reading rs;
	struct ring rg;
	uint64_t len = (uint64_t)opt.round_ms * MS;
	int err, rc;
	bool stopped;

	alarm(WATCHDOG_S + (unsigned int)(opt.round_ms / 1000));
	ring_init(&rg, mem, cap);
	memset(&rs, 0, sizeof(rs));
	memset(ctl, 0, sizeof(*ctl));
	rs.rg = &rg;
	rs.clean = !rg.rate;
	if (opt.unguarded)
		rs.plain = profbuf_shared_attach(mem, rg.size);
	else
		rs.rd = profbuf_reader_attach(mem, rg.size);
	if (!rs.rd && !rs.plain) {
		violation("attach: %s", strerror(errno));
		return;
	}
	rs.agg = opt.no_agg ? NULL : prof_agg_new(false, 0, &err);
	for (uint32_t i = 0; i < (uint32_t)opt.writers; i++)
		start_writer(&rg, i);
	rc = read_round(&rs, stress_now_ns() + len);
	if (rs.clean && rc == 1)
		violation("clean round: EOF before the close");
	stopped = stop_writers(rs.clean ? 2000 * MS : MS);
	if (rc == 0) {
		if (rs.plain)
			profbuf_close(rs.plain);
		else
			profbuf_reader_close(rs.rd);
		rc = drain(&rs);
	}
	round_end(&rs, rc, stopped);
	if (rs.agg) {
		check_agg(&rs);
		prof_agg_free(rs.agg);
	}
	profbuf_reader_free(rs.rd);
	tally.rounds++;
	round_heap();
	alarm(0);
}

/*
 * Shared memory at @at, in the reservation main() makes: the ring sits
 * GUARD bytes past the writers' counts, the gap mapped PROT_NONE, so
 * that a writer that follows a scribbled offset faults rather than write
 * over the counts.
 */
static void *map_in(char *at, size_t len)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
	size_t cap;
	uint64_t deadline;
	char fields[768];
	char *area, *mem;

	stress_parse(argc, argv, PROG, flags);
	if (opt.writers < 1 || opt.writers > MAX_WRITERS || opt.bufwords < 0 ||
	    opt.bufwords > (1 << 20) || opt.round_ms < 1) {
		fprintf(stderr, PROG ": --writers 1..16, --bufwords 0..2^20, "
				     "--round-ms 1 or more\n");
		return 2;
	}
	cap = profbuf_shared_size(
		HDR, opt.bufwords ? (size_t)opt.bufwords : 16384,
		opt.bufwords ? (size_t)opt.bufwords / 4 + 1 : 16384 / 4 + 1);
	area = mmap(NULL, 2 * GUARD + cap, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED)
		return 1;
	ctl = map_in(area, sizeof(*ctl));
	mem = map_in(area + GUARD, cap);
	if (!ctl || !mem)
		return 1;
	signal(SIGALRM, on_watchdog);
	schedstat_fd =
		open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	rng = (uint64_t)opt.seed * 0x9e3779b97f4a7c15ull + 1;
	deadline = stress_now_ns() + (uint64_t)opt.seconds * 1000 * MS;
	while (stress_now_ns() < deadline)
		one_round(mem, cap);
	tally.rss_kb = rss_kb();
	snprintf(fields, sizeof(fields),
		 "seconds=%ld writers=%ld rounds=%llu eio=%llu eof=%llu "
		 "cut=%llu clean=%llu ops=%llu scribbles=%llu deaths=%llu "
		 "kills=%llu stops=%llu reads=%llu runs=%llu late=%llu "
		 "over_max_us=%llu own_over_max_us=%llu verified=%llu "
		 "lost=%llu samples=%llu "
		 "heap_growth=%lld rss_kb=%ld",
		 opt.seconds, opt.writers, (unsigned long long)tally.rounds,
		 (unsigned long long)tally.eio, (unsigned long long)tally.eof,
		 (unsigned long long)tally.cut, (unsigned long long)tally.clean,
		 (unsigned long long)tally.writes,
		 (unsigned long long)tally.scribbles,
		 (unsigned long long)tally.deaths,
		 (unsigned long long)tally.kills,
		 (unsigned long long)tally.stops,
		 (unsigned long long)tally.reads,
		 (unsigned long long)tally.runs, (unsigned long long)tally.late,
		 (unsigned long long)tally.over_max / 1000,
		 (unsigned long long)tally.own_over_max / 1000,
		 (unsigned long long)tally.verified,
		 (unsigned long long)tally.lost,
		 (unsigned long long)tally.samples,
		 (long long)(tally.heap_max - tally.heap_base), tally.rss_kb);
	for (int i = 0; i < MAX_FINDINGS && findings[i].what; i++)
		printf("# %llu rounds: %s\n", (unsigned long long)findings[i].n,
		       findings[i].what);
	munmap(area, 2 * GUARD + cap);
	return stress_summary(PROG, fields, tally.violations);
}
