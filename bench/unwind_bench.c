// SPDX-License-Identifier: MIT
/*
 * bench/unwind_bench.c - the profiler's per-sample work against stack
 * walkers that a profiler could call instead.
 *
 * What it measures.
 *
 * The work profring-prof's SIGPROF handler does for one sample, outside
 * the kernel's signal delivery: prof_unwind_fp() (prof/agent/unwind.c)
 * walks the frame-pointer chain of a register context within the thread's
 * stack bounds, then profbuf_write() appends the record (header {1, tid},
 * the PCs) to a profbuf.  The stack is real: a recursion of D = 8, 32 and
 * 64 frames of descend(), built with frame pointers (this file must be
 * compiled with -fno-omit-frame-pointer; descend() is noipa and does work
 * after its call, so GCC keeps one frame per level), under the harness's
 * frames and main().  At the bottom of the recursion the context is
 * captured with getcontext() - the handler gets the same registers from
 * the kernel - and the stack bounds are those pthread_getattr_np() gave
 * for the main thread, as the profiler records them when a thread starts.
 * Four cases, each timed in batches of --batch samples taken at the bottom
 * of the recursion, REP_SAMPLES samples per repetition:
 *
 *  - fp+write: prof_unwind_fp() then profbuf_write() of the record, what
 *    the handler does.  After each batch the ring is drained, untimed,
 *    with non-blocking reads; it holds a full batch of the largest
 *    records, so no write ever finds it full.
 *  - fp:       prof_unwind_fp() alone.
 *  - backtrace:      glibc's backtrace() (execinfo.h; DWARF unwinding
 *                    through libgcc_s).
 *  - unw_backtrace:  libunwind's unw_backtrace() (UNW_LOCAL_ONLY).
 *
 * Why the anchors are fair.  Both anchors walk the current stack, so they
 * are called from the bottom of the same recursion, from the same call
 * site in descend(): they see the same frames as ours.  They are given
 * room for exactly as many PCs as prof_unwind_fp() returns, so they stop
 * at the same frame, main()'s, where the frame-pointer chain ends (left
 * alone they would go on into glibc's start code, which has no frame
 * pointers: two frames more here); ours is given room for
 * PROF_MAX_FRAMES (128).  Neither anchor writes its result
 * anywhere: the fp+write rows charge ours for a ring write the anchors do
 * not do.  backtrace() and unw_backtrace() are each called once before
 * anything is timed (backtrace()'s first call loads libgcc_s,
 * unw_backtrace()'s first call sets up its caches), and there is a
 * warm-up repetition.
 *
 * Checks.  Every repetition starts at the bottom of the recursion with a
 * reference walk, untimed: prof_unwind_fp() must return exactly 1 + D + A
 * PCs - the PC in the bottom function, the D return addresses into
 * descend() (the first one at its call of the bottom, the D - 1 others all
 * at its recursive call), then A frames above the recursion, the last of
 * them main()'s return address (where the frame pointers end) - with no
 * truncation and known bounds, and backtrace() and unw_backtrace(), given
 * room for 128, must return the same list from the second PC on (the
 * first is the PC of their own call site) and more frames beyond it.
 * Then every sample is checked: each walk's count, the last walk's PCs
 * against the reference, and for fp+write every record the drain reads
 * (length, time stamp, header and all PCs) and their number.  Any
 * mismatch aborts the benchmark.
 *
 * Caveats.
 *
 *  - The context is a getcontext() of the bottom function, so the walk
 *    starts at a frame that is always in cache.  In the profiler the
 *    interrupted stack is as warm or as cold as the program left it, and
 *    the handler also pays the signal delivery, the sampler's checks and
 *    counters and a time stamp (RDTSC; see trace_bench's note for its
 *    cost), none of which is here.  The records' time stamps are a
 *    counter.
 *  - In the handler an anchor would walk through the signal frame
 *    (__restore_rt) as well; here they start from an ordinary call, which
 *    is cheaper for them.
 *  - prof_unwind_fp() and profbuf_write() are called through their
 *    object file and library (no inlining across the call), as are the
 *    anchors.
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <profring/prof.h>
#include <profring/profbuf.h>

#include "prof/agent/unwind.h"
#include "harness.h"

#define MAX_FRAMES PROFRING_PROF_MAX_FRAMES /* the handler's room */
#define HDR_WORDS 2 /* PROF_HDR_WORDS: periods, thread id */
#define REP_SAMPLES (1u << 17) /* samples per repetition */
#define FN_SPAN 4096 /* a PC that far above a bottom's entry is in it */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Keep a function out of inlining, cloning and every other IPA pass. */
#if defined(__GNUC__) && !defined(__clang__)
#define BENCH_NOIPA __attribute__((noipa))
#else
#define BENCH_NOIPA __attribute__((noinline))
#endif

_Static_assert(sizeof(uintptr_t) == sizeof(void *), "PCs are pointers");

enum uw_impl { UW_FP_WRITE, UW_FP, UW_GLIBC, UW_LIBUNWIND, UW_N };

static const char *const uw_names[UW_N] = { "fp+write", "fp", "backtrace",
					    "unw_backtrace" };

struct uw_case;

typedef int uw_bottom_fn(struct uw_case *c, struct bench_sample *s);

/*
 * struct uw_case - the state of one case at one depth.
 * @name:   case name
 * @bottom: what runs at the bottom of the recursion: one repetition
 * @walk:   the anchor's unwinder (backtrace, unw_backtrace), or NULL
 * @depth:  frames of descend() above @bottom
 * @batch:  samples per timed batch
 * @hdr:    the record header, {1, tid}
 * @pb:     fp+write's ring
 * @now:    next record time stamp (fp+write)
 * @nref:   PCs in the reference walk of the current repetition
 * @ref:    the reference walk: prof_unwind_fp() of the bottom's context
 */
struct uw_case {
	const char *name;
	uw_bottom_fn *bottom;
	int (*walk)(void **pcs, int max);
	unsigned int depth;
	unsigned int batch;
	uint64_t hdr[HDR_WORDS];
	struct profbuf *pb;
	int64_t now;
	size_t nref;
	uintptr_t ref[MAX_FRAMES];
};

/* The thread's stack, as the profiler records it when a thread starts. */
static struct prof_stack_bounds stack_bounds;

/* main()'s return address: the last PC of a frame-pointer walk. */
static uintptr_t main_ret;

static int fail(const struct uw_case *c, const char *what, int err)
{
	fprintf(stderr,
		"unwind_bench: %s depth %u: %s failed (%d: %s); "
		"aborting\n",
		c ? c->name : "setup", c ? c->depth : 0, what, err,
		strerror(err < 0 ? -err : err));
	return -1;
}

static int mismatch(const struct uw_case *c, const char *what)
{
	fprintf(stderr, "unwind_bench: %s depth %u: %s; aborting\n", c->name,
		c->depth, what);
	return -1;
}

static uint32_t round_pow2(size_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Whether @pc lies in the function starting at @fn. */
static bool pc_in(uintptr_t pc, uw_bottom_fn *fn)
{
	return pc - (uintptr_t)fn < FN_SPAN;
}

/* Print a walk to stderr, for a mismatch's diagnosis. */
static void dump(const char *what, const uintptr_t *pcs, size_t n)
{
	fprintf(stderr, "  %s (%zu):", what, n);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %#lx", (unsigned long)pcs[i]);
	fputc('\n', stderr);
}

/*
 * anchor_agrees() - whether an anchor's walk from the bottom function
 * (@a[0] its call site there) is the reference from the second PC on.
 */
static bool anchor_agrees(const struct uw_case *c, const uintptr_t *a, size_t n)
{
	return n == c->nref && pc_in(a[0], c->bottom) &&
	       !memcmp(a + 1, c->ref + 1, (n - 1) * sizeof(*a));
}

/**
 * reference_walk() - walk the bottom's context, check the walk against
 * the recursion and both anchors, and keep it as the reference.
 * @c:  the case; @c->ref and @c->nref are filled in
 * @uc: getcontext() of @c->bottom, which called us
 *
 * This function is a frame of its own (noipa), so the anchors called
 * here see it first, then the bottom: their PC i + 1 is the reference's
 * PC i.
 *
 * Return: 0, or -1 after printing what disagreed.
 */
static BENCH_NOIPA int reference_walk(struct uw_case *c, const ucontext_t *uc)
{
	uintptr_t bt[MAX_FRAMES], unw[MAX_FRAMES];
	struct prof_unwind_result res;
	size_t d = c->depth, n;
	int nbt, nunw;

	prof_unwind_fp(uc, &stack_bounds, c->ref, MAX_FRAMES, &res);
	n = c->nref = res.n;
	nbt = backtrace((void **)bt, MAX_FRAMES);
	nunw = unw_backtrace((void **)unw, MAX_FRAMES);
	if (res.truncated || res.unchecked || n < d + 2 ||
	    c->ref[n - 1] != main_ret || !pc_in(c->ref[0], c->bottom))
		goto bad;
	/* ref[1]: descend()'s call of the bottom; ref[2 .. d]: recursion. */
	for (size_t i = 2; i <= d; i++)
		if (c->ref[i] != c->ref[2] || c->ref[i] == c->ref[1])
			goto bad;
	if (c->ref[d + 1] == c->ref[d])
		goto bad; /* a descend() frame more than asked for */
	if (nbt < 0 || (size_t)nbt <= n + 1 || !pc_in(bt[1], c->bottom) ||
	    memcmp(bt + 2, c->ref + 1, (n - 1) * sizeof(*bt)))
		goto bad;
	if (nunw < 0 || (size_t)nunw <= n + 1 || !pc_in(unw[1], c->bottom) ||
	    memcmp(unw + 2, c->ref + 1, (n - 1) * sizeof(*unw)))
		goto bad;
	return 0;
bad:
	fprintf(stderr, "main returns to %#lx, bottom at %p\n",
		(unsigned long)main_ret, (void *)c->bottom);
	dump("prof_unwind_fp", c->ref, n);
	dump("backtrace (from here)", bt, nbt > 0 ? (size_t)nbt : 0);
	dump("unw_backtrace (from here)", unw, nunw > 0 ? (size_t)nunw : 0);
	return mismatch(c, "the reference walk disagrees with the recursion "
			   "or the anchors");
}

/* ---- the cases ----------------------------------------------------------- */

/*
 * fp_check_run() - count the records of a read, each the reference
 * record with the next time stamp.
 *
 * Return: the count, or -1.
 */
static long fp_check_run(struct uw_case *c, const struct profbuf_read *rd,
			 int64_t *now)
{
	size_t len = 2 + HDR_WORDS + c->nref, off = 0;

	for (size_t i = 0; i < rd->ntags; i++) {
		const uint64_t *r = rd->data + off;

		if (off + len > rd->ndata || r[0] != len ||
		    r[1] != (uint64_t)*now || r[2] != c->hdr[0] ||
		    r[3] != c->hdr[1] ||
		    memcmp(r + 4, c->ref, c->nref * sizeof(c->ref[0])))
			return -1;
		++*now;
		off += len;
	}
	return off == rd->ndata ? (long)rd->ntags : -1;
}

/* Read until a read comes back empty; exactly one batch must come out. */
static int fp_drain(struct uw_case *c, int64_t first)
{
	struct profbuf_read rd;
	unsigned int got = 0;
	long n;
	int rc;

	do {
		rc = profbuf_read(c->pb, PROFBUF_NONBLOCKING, &rd);
		if (rc)
			return fail(c, "profbuf_read", rc);
		n = fp_check_run(c, &rd, &first);
		if (n < 0)
			return mismatch(c, "a record read back is not the "
					   "reference record");
		got += (unsigned int)n;
	} while (rd.ndata);
	if (got != c->batch)
		return mismatch(c, "the drain read back another number of "
				   "records than written");
	return 0;
}

/*
 * fp_write_bottom() - fp+write: per sample, walk the context and write the
 * record, as the SIGPROF handler does; drain after each batch.
 */
static BENCH_NOIPA int fp_write_bottom(struct uw_case *c,
				       struct bench_sample *s)
{
	uintptr_t pcs[MAX_FRAMES];
	struct prof_unwind_result res;
	struct bench_timer t;
	ucontext_t uc;
	size_t total;
	int bad;

	if (getcontext(&uc))
		return fail(c, "getcontext", errno);
	if (reference_walk(c, &uc))
		return -1;
	for (uint32_t done = 0; done < REP_SAMPLES; done += c->batch) {
		int64_t first = c->now, now = first;

		total = 0;
		bad = 0;
		bench_timer_start(&t);
		for (unsigned int i = 0; i < c->batch; i++) {
			prof_unwind_fp(&uc, &stack_bounds, pcs, MAX_FRAMES,
				       &res);
			bad |= profbuf_write(c->pb, NULL, now++, c->hdr,
					     HDR_WORDS, pcs, res.n);
			total += res.n;
		}
		bench_timer_stop(&t, s, c->batch);
		c->now = now;
		if (bad)
			return fail(c, "profbuf_write", bad);
		if (total != (size_t)c->batch * c->nref)
			return mismatch(c, "a walk returned another number "
					   "of PCs than the reference");
		if (fp_drain(c, first))
			return -1;
	}
	return 0;
}

/* fp_bottom() - fp: the walk alone. */
static BENCH_NOIPA int fp_bottom(struct uw_case *c, struct bench_sample *s)
{
	uintptr_t pcs[MAX_FRAMES];
	struct prof_unwind_result res;
	struct bench_timer t;
	ucontext_t uc;
	size_t total;

	if (getcontext(&uc))
		return fail(c, "getcontext", errno);
	if (reference_walk(c, &uc))
		return -1;
	for (uint32_t done = 0; done < REP_SAMPLES; done += c->batch) {
		total = 0;
		bench_timer_start(&t);
		for (unsigned int i = 0; i < c->batch; i++) {
			prof_unwind_fp(&uc, &stack_bounds, pcs, MAX_FRAMES,
				       &res);
			total += res.n;
		}
		bench_timer_stop(&t, s, c->batch);
		if (total != (size_t)c->batch * c->nref ||
		    memcmp(pcs, c->ref, c->nref * sizeof(pcs[0])))
			return mismatch(c, "a walk is not the reference");
	}
	return 0;
}

/* An anchor's unwinder: backtrace() and unw_backtrace() alike. */
typedef int uw_walk_fn(void **pcs, int max);

/*
 * anchor_bottom() - backtrace or unw_backtrace (@c->walk): the anchor's
 * walk of the current stack, room for the reference's PCs.
 */
static BENCH_NOIPA int anchor_bottom(struct uw_case *c, struct bench_sample *s)
{
	uintptr_t pcs[MAX_FRAMES];
	struct bench_timer t;
	ucontext_t uc;
	long total;

	if (getcontext(&uc))
		return fail(c, "getcontext", errno);
	if (reference_walk(c, &uc))
		return -1;
	for (uint32_t done = 0; done < REP_SAMPLES; done += c->batch) {
		int n = 0;

		total = 0;
		bench_timer_start(&t);
		for (unsigned int i = 0; i < c->batch; i++) {
			n = c->walk((void **)pcs, (int)c->nref);
			total += n;
		}
		bench_timer_stop(&t, s, c->batch);
		if (total != (long)c->batch * (long)c->nref ||
		    !anchor_agrees(c, pcs, (size_t)n))
			return mismatch(c, "the anchor disagrees with the "
					   "reference");
	}
	return 0;
}

static uw_bottom_fn *const uw_bottoms[UW_N] = { fp_write_bottom, fp_bottom,
						anchor_bottom, anchor_bottom };
static uw_walk_fn *const uw_walks[UW_N] = { NULL, NULL, backtrace,
					    unw_backtrace };

/*
 * descend() - the recursion: @depth frames of descend(), then the case's
 * bottom.  The empty asm after the call keeps GCC from turning the call
 * into a jump or the recursion into a loop.
 */
static BENCH_NOIPA int descend(struct uw_case *c, struct bench_sample *s,
			       unsigned int depth)
{
	int rc = depth > 1 ? descend(c, s, depth - 1) : c->bottom(c, s);

	__asm__ volatile("" : "+r"(rc));
	return rc;
}

/* One repetition of a case: at the bottom of its recursion. */
static int uw_run(void *arg, struct bench_sample *s)
{
	struct uw_case *c = arg;

	return descend(c, s, c->depth);
}

/* ---- one depth ----------------------------------------------------------- */

/*
 * uw_init() - a case: fp+write gets a ring that holds a batch of records
 * of MAX_FRAMES PCs (a record never wraps; the skipped tail counts as
 * used, hence one record more).
 */
static int uw_init(struct uw_case *c, enum uw_impl impl, unsigned int depth,
		   const struct bench_opts *o, uint64_t tid)
{
	size_t words = ((size_t)o->batch + 1) * (2 + HDR_WORDS + MAX_FRAMES);

	*c = (struct uw_case){
		.name = uw_names[impl],
		.bottom = uw_bottoms[impl],
		.walk = uw_walks[impl],
		.depth = depth,
		.batch = o->batch,
		.hdr = { 1, tid },
		.now = 1,
	};
	if (impl != UW_FP_WRITE)
		return 0;
	c->pb = profbuf_new(HDR_WORDS, round_pow2(words),
			    round_pow2((size_t)o->batch + 1));
	return c->pb ? 0 : fail(c, "profbuf_new", errno);
}

static void uw_report(const char *name, const struct uw_case *c,
		      const struct bench_stats *st)
{
	struct bench_row row = {
		.name = name,
		.unit = BENCH_NS_PER_OP,
		.goal_ratio = 1.0,
		.goal_le = true,
	};
	char note[64];

	for (int ours = UW_FP_WRITE; ours <= UW_FP; ours++) {
		snprintf(note, sizeof(note), "%s%zu PCs",
			 ours == UW_FP ? "info: unwind alone; " : "",
			 c[ours].nref);
		row.ours = &st[ours];
		row.ours_name = uw_names[ours];
		row.note = note;
		for (int i = UW_GLIBC; i <= UW_LIBUNWIND; i++) {
			row.anchor = &st[i];
			row.anchor_name = uw_names[i];
			bench_report_row(&row);
		}
	}
}

/**
 * at_depth() - measure and report the four cases at one depth.
 * @o:     options
 * @depth: frames of recursion
 * @tid:   the calling thread's id, for the record header
 *
 * Return: 0, or -1 if anything failed.
 */
static int at_depth(const struct bench_opts *o, unsigned int depth,
		    uint64_t tid)
{
	struct uw_case c[UW_N];
	struct bench_case bc[UW_N];
	struct bench_stats st[UW_N];
	char name[16];
	int rc = -1;

	memset(c, 0, sizeof(c));
	for (int i = 0; i < UW_N; i++) {
		if (uw_init(&c[i], (enum uw_impl)i, depth, o, tid))
			goto out;
		bc[i] = (struct bench_case){ uw_names[i], uw_run, &c[i] };
	}
	rc = bench_run_cases(bc, UW_N, o, st);
	if (rc)
		goto out;
	for (int i = 1; i < UW_N; i++) {
		if (c[i].nref != c[0].nref) {
			rc = mismatch(&c[i], "the cases walked different "
					     "stacks");
			goto out;
		}
	}
	snprintf(name, sizeof(name), "depth %u", depth);
	uw_report(name, c, st);
out:
	profbuf_free(c[UW_FP_WRITE].pb);
	return rc;
}

/* The calling thread's stack bounds, or -1. */
static int get_stack_bounds(struct prof_stack_bounds *b)
{
	pthread_attr_t attr;
	size_t size;
	void *addr;
	int rc;

	rc = pthread_getattr_np(pthread_self(), &attr);
	if (rc)
		return fail(NULL, "pthread_getattr_np", rc);
	rc = pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	if (rc)
		return fail(NULL, "pthread_attr_getstack", rc);
	b->lo = (uintptr_t)addr;
	b->hi = (uintptr_t)addr + size;
	return 0;
}

static const unsigned int depths[] = { 8, 32, 64 };

int main(int argc, char **argv)
{
	uint64_t tid = (uint64_t)syscall(SYS_gettid);
	void *warm[MAX_FRAMES];
	struct bench_opts o;

	main_ret = (uintptr_t)__builtin_return_address(0);
	bench_parse_args(argc, argv, &o);
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "unwind_bench: cannot pin to CPU 0\n");
	if (get_stack_bounds(&stack_bounds))
		return 1;
	/* First calls: libgcc_s is loaded, libunwind's caches set up. */
	if (backtrace(warm, MAX_FRAMES) <= 0 ||
	    unw_backtrace(warm, MAX_FRAMES) <= 0) {
		fprintf(stderr, "unwind_bench: an anchor cannot walk the "
				"stack; aborting\n");
		return 1;
	}
	bench_report_begin("unwind_bench", &o);
	for (size_t i = 0; i < ARRAY_SIZE(depths); i++)
		if (at_depth(&o, depths[i], tid))
			return 1;
	bench_report_note("ns per sample, taken at the bottom of a recursion "
			  "of the row's depth in frames; PCs: the walk's "
			  "length, frames above the recursion included; "
			  "anchors given room for as many PCs as ours "
			  "returns.  %u samples per repetition in batches of "
			  "%u; fp+write's ring drained untimed after each "
			  "batch.",
			  REP_SAMPLES, o.batch);
	bench_report_end();
	return 0;
}
