// SPDX-License-Identifier: MIT
/*
 * bench/trace_bench.c - tracebuf's event write path against its anchors,
 * and its generation advance.  This file is the description and main();
 * the parts are in bench/trace/ (trace.h says which file holds which).
 *
 * What it measures.
 *
 * One thread, ns per event, for an event of type 8 with
 *
 * 1. 2 arguments - a counter (0, 1, 2, ... within a repetition: a 1- to
 *    3-byte varint) and a 48-bit value (a multiplicative hash of the
 *    counter: mostly 7 bytes) - written with tracebuf_emit();
 * 2. the same event with a stack id: tracebuf_begin(), tracebuf_ev_stack()
 *    of a 16-frame stack already interned in this generation (the hit
 *    path), tracebuf_ev_emit() of { counter, stack id }, tracebuf_end();
 * 3. 0 and 4 arguments (the 2 above, plus counter & 63 and the 48-bit
 *    value >> 20), with tracebuf_emit(), with the same goals as 2.
 *
 * Each repetition writes REP_EVENTS events in timed batches of --batch.
 * Between batches, untimed, the stream is drained with non-blocking
 * tracebuf_read() (so full buffers go back to the pool); at the end of a
 * repetition, untimed, tracebuf_advance() closes the generation and the
 * whole generation's stream is decoded and validated with
 * tracedec_decode(): every event's type, argument count, arguments (the
 * exact sequence written) and time order, the stack table, the end
 * record, and no lost record; tracebuf_stats() must count no loss.  Every
 * emit must return 0.  The memory bound (16 MiB of 64 KiB buffers) is far
 * more than a batch needs.  Any failure aborts the benchmark.  Each
 * tracebuf case has its own tracer (no CPU profile buffer).
 *
 * Then, generation advance with N idle threads, N = 0, 16, 64, each
 * N with its own tracer (no CPU profile buffer): before every advance,
 * untimed, each thread emits one tracebuf event of type 8 and goes back
 * to sleep on a condition variable; then tracebuf_advance() is timed
 * (median over ADV_ROUNDS advances, whatever --reps says) and the stream
 * drained, untimed.  Rows "advance 16 idle" and "advance 64 idle".  Each
 * advance must have flushed exactly N thread buffers and lost nothing,
 * and every emit must return 0, or the benchmark aborts.
 *
 * Why the anchors are fair.
 *
 *  - floor: what any varint event writer must do - write the type byte,
 *    the time delta since the previous event as a varint (time read the
 *    same way, ring_clock_ticks(), i.e. RDTSC, with the same "never
 *    negative" rule), and the same arguments with the same
 *    ring_varint_put(), into a thread-local 64 KiB byte array (tracebuf's
 *    buffer size) at a thread-local position, which goes back to 0 when
 *    fewer bytes than tracebuf's worst-case event are left.  It has no
 *    generation, no buffer hand-off, no batch header, no signal nesting,
 *    no argument check and is inlined, so tracebuf can only approach it:
 *    the goal is emit <= 1.3 x floor, at 0, 2 and 4 arguments and with
 *    a stack id (issue 18).  What it wrote is decoded and checked after
 *    every batch, untimed (so nothing can be optimised away).  The stack row's floor interns before it writes { counter,
 *    id }, as stacktab_bench's floor does on a hit: it hashes the 16 PCs
 *    with the same ring_hash_words() (the stack and its length hidden
 *    from the hash, as the library cannot know them) and compares the
 *    hash, the length and the PCs with a stored copy found by index: no
 *    table, no section, the id taken from the copy.
 *  - seqlock: the floor inside Go's writer protocol: traceAcquire() and
 *    traceRelease() each do an atomic add on the M's seqlock, which the
 *    generation switcher polls.  Here, atomic_fetch_add(seq, 1) on a
 *    thread-local counter before and after each event (checked after the
 *    batch).  tracebuf's begin/end do the same job with plain stores
 *    (ring/grace.h); the goal is emit <= 1.0 x seqlock.
 *  - advance: N = 0 is the anchor of N = 16 and N = 64.  Info.
 *
 * All cases of a row group run interleaved repetition by repetition
 * (harness.c) with the same argument sequence and batch size.
 * tracebuf_emit() runs as a C caller of the library runs it: its fast
 * path inline (<profring/tracebuf_inline.h>), the static library called
 * only when it declines; the anchors are inline too.  tracebuf_call is
 * the same event through the library's symbol (its own tracer), as a
 * binary built without the inline path (C++, PROFRING_NO_INLINE, or
 * before it existed) emits: its row says what the inline path saves.
 * The begin + stack + emit + end row calls the library.
 *
 * Caveats, so that the numbers are read right.
 *
 *  - On the KVM guests these figures come from, RDTSC alone costs about
 *    10 ns (printed under the table), so the floor is almost all clock
 *    read and barely depends on the argument count; the ratios are
 *    ratios to a clock-bound anchor.  Where RDTSC is cheaper the floor
 *    drops and the ratios rise.
 *  - On a shared host tracebuf's figures are bimodal (about 13 vs 21-29
 *    ns for 2 arguments), switching from one repetition to the next
 *    inside one process, while the clock-bound floor moves by 10%.  Code
 *    with more stores and calls per event (tracebuf, and the seqlock's
 *    locked adds) slows most in the slow periods - the signature of a
 *    busy SMT sibling on the host, though without hardware counters in
 *    the guest that cannot be proven.  Compare min with min, and use
 *    --reps 11 or more for medians.
 */
#include <stdio.h>

#include "trace/trace.h"

/* The 16 PCs of the interned stack. */
uintptr_t stack_pcs[STACK_DEPTH];

int main(int argc, char **argv)
{
	struct bench_opts o;

	bench_parse_args(argc, argv, &o);
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "trace_bench: cannot pin to CPU 0\n");
	for (int i = 0; i < STACK_DEPTH; i++)
		stack_pcs[i] = (uintptr_t)(0x555555554000ull + 0x1337 * i);
	flr_init();
	bench_report_begin("trace_bench", &o);
	if (groups_run(&o) || advance(&o))
		return 1;
	bench_report_note("One thread; %u events per repetition in batches "
			  "of %u, drained untimed; event type 8; arguments: "
			  "counter, 48-bit value (2 args), + counter & 63, "
			  "value >> 20 (4 args); stack: 16 frames, interned "
			  "(hit); bytes/event: tracebuf stream (batch headers "
			  "included) vs the floor's array.",
			  REP_EVENTS, o.batch);
	bench_report_note("ring_clock_ticks() (RDTSC) alone: %.2f ns per "
			  "read (best of 5 x 2^20).",
			  clock_cost());
	bench_report_note("Advance: ns per tracebuf_advance() with N idle "
			  "threads, each of which emitted one event in the "
			  "generation; median of %d advances.",
			  ADV_ROUNDS);
	bench_report_end();
	tb_free_acc();
	return 0;
}
