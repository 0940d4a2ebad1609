// SPDX-License-Identifier: MIT
/*
 * bench/scaling_bench.c - profbuf under many writers, and its reader.
 * (profbuf's write inside a SIGPROF handler is sigprof_bench.c's;
 * tracebuf's generation advance is trace_bench.c's.)  This file is the
 * description and main(); the parts are in bench/scaling/ (scaling.h
 * says which file holds which).
 *
 * What it measures.
 *
 * 1. Writer scaling.  W = 1, 2, 4, ... up to the number of CPUs, that
 *    number itself, and twice it, writer threads writing 34-word records
 *    (hdrsize 2) as fast as they can for --seconds, and one reader thread
 *    draining: records delivered to the reader per second and the
 *    fraction of writes lost to a full ring, for profbuf (blocking reader)
 *    and four anchors carrying the same record.  One row per W and anchor
 *    ("scaling Ww 34w"), and one line per W and implementation in
 *    bench/results/scaling.csv for bench/plot.sh.  The timed region runs
 *    from the common start of all threads to the end of the reader's
 *    drain after the writers stopped.  Each W group runs its cases
 *    interleaved, (--reps + 1) / 2 repetitions (7 implementations times
 *    the W list times --seconds would otherwise take minutes).
 * 2. The write path alone ("contend Ww 34w").  W = 1, 2, 4, ... up to
 *    the CPU count, and that count (never more writers than CPUs),
 *    writer threads writing 400000 records in all, as fast as they can,
 *    into one profbuf or each into its own ring of a profbuf_group, with
 *    no reader running: the rings hold every record, their pages touched
 *    before (untimed).  Writes per second over all writers, from their
 *    common start to the last one's end: what the write path allows
 *    when writers share the ring's write word, and when they share no
 *    cache line.  Every record is read back afterwards (untimed).
 * 3. Reader drain rate.  A profbuf of 2^20 words prefilled (untimed) with
 *    34-word records; timed: profbuf_read() non-blocking until the ring is
 *    empty, each returned run copied out to a destination array (a reader
 *    that does not touch the words measures nothing).  Words per second.
 *
 * The record is harness.h's bench_rec, which sigprof_bench writes too.
 *
 * Every result is checked, and any mismatch aborts the benchmark: profbuf
 * records read + overflow counts == writes accepted + writes refused,
 * exactly; for every anchor, records the reader got == writes accepted;
 * every record delivered is intact; the drained and the copied words are
 * the words written.
 *
 * Why the anchors are fair.
 *
 *  - ck_mpmc: ConcurrencyKit's typed by-value ring (CK_RING_PROTOTYPE) of
 *    34-word structs, the multi-producer enqueue, one reader dequeueing
 *    by value with the MPMC dequeue; a failed enqueue counts as lost.
 *    Like profbuf it is a lock-free bounded ring of copied records; it is
 *    not signal-safe against a handler interrupting an enqueue to the
 *    same ring on the same thread, and a writer preempted in the middle of
 *    an enqueue stalls the other writers (profbuf's do not wait).  The
 *    goal, for W >= 2: profbuf delivers >= 1.0 x ck_mpmc.
 *  - mutex: a ring of the same slots behind one pthread mutex; the writer
 *    copies its record in under the lock, the reader copies one record out
 *    under the lock.  The obvious design, not signal-safe.  Info.
 *  - pipe: each writer write(2)s the record's 272 bytes (< PIPE_BUF, so
 *    atomic) to a pipe whose write end is O_NONBLOCK (EAGAIN counts as
 *    lost) and whose size is set to the rings' footprint; the reader
 *    read(2)s 64 records' worth at a time, blocking.  Signal-safe, one
 *    syscall per record.  Info.
 *  - wfcq: liburcu's wait-free concurrent queue (inline, _LGPL_SOURCE,
 *    as ck_ring is inline).  Each writer owns a pool of SC_SLOTS / W
 *    preallocated nodes (the same records in flight as the rings hold) and
 *    cds_wfcq_enqueue()s one, record copied in; an empty pool counts as
 *    lost.  The reader __cds_wfcq_dequeue_blocking()s, copies the record
 *    out and gives the node back to its writer through a per-writer
 *    ck_ring SPSC of node pointers (the reader is its only producer, the
 *    writer its only consumer).  Info.
 *  - profbuf_group: the same records written with profbuf_group_write()
 *    to a group (<profring/profbuf_group.h>) of one ring per CPU, each
 *    of the single profbuf's size, read with profbuf_group_read()
 *    (blocking): every writer thread has a ring of its own while W <=
 *    CPUs.  Rows "group Ww 34w": against profbuf at the same W, and
 *    against profbuf with one writer (info both).
 *  - profbuf_owned: the same records written with profbuf_owned_write()
 *    to a group made by profbuf_group_new_owned() with one owned ring
 *    per writer (and one shared ring), each of the single profbuf's
 *    size: each writer thread claims one (profbuf_group_claim(), before
 *    the start) and writes it with no locked instruction; read with
 *    profbuf_group_read() (blocking).  Rows "owned Ww 34w": against the
 *    group at the same W (info), and against profbuf with one writer
 *    (issue 32's goal for W >= 2: per-thread rings deliver at least one
 *    writer's rate).
 *  - drain: memcpy of the same number of words from a prefilled array of
 *    the ring's size to a destination of the same size.  profbuf's reader
 *    does this copy and the read protocol on top; info.
 *
 * The readers of ck_mpmc, mutex and wfcq yield the CPU when they find
 * nothing; profbuf's sleeps on a futex, the pipe's in read(2).  With
 * --pin the reader has the last CPU to itself and the writers share the
 * others; unpinned, the scheduler places all threads.  profbuf is called
 * through the static library; ck_ring and wfcq are inline.
 *
 * Caveats, so that the numbers are read right.
 *
 *  - W > CPUs - 1 is oversubscribed (on 2 CPUs, W >= 2 always is): a
 *    writer preempted between reserving and committing holds up the
 *    reader (all rings) and, in ck_ring, the other writers too; a wfcq
 *    enqueuer preempted between its exchange and its link makes the
 *    dequeuer sleep 10 ms (liburcu's adaptive wait).  Those rows mostly
 *    measure how each design tolerates preemption.
 */
#include <stdio.h>

#include "scaling/scaling.h"

int main(int argc, char **argv)
{
	struct bench_opts o;

	bench_parse_args(argc, argv, &o);
	bench_rec_init();
	if (o.pin && bench_pin_cpu(0))
		fprintf(stderr, "scaling_bench: cannot pin to CPU 0\n");
	bench_report_begin("scaling_bench", &o);
	if (scaling(&o) || contend(&o) || drain(&o))
		return 1;
	bench_report_note("Scaling: W writers + 1 reader, 34-word records, "
			  "%g s per repetition, %u repetitions, %d CPUs; "
			  "Mop/s = records delivered to the reader per "
			  "second; lost = writes refused / writes attempted; "
			  "curves in %s.",
			  o.seconds, (o.reps + 1) / 2, bench_ncpus(),
			  SCALING_CSV);
	bench_report_note("Contend: W writers (W <= CPUs), no reader "
			  "running, %u records of %d words per repetition "
			  "over all writers into rings that hold them all; "
			  "Mop/s = million writes per second over all "
			  "writers.",
			  CT_RECORDS, WORDS);
	bench_report_note("Drain: %u records of %d words prefilled untimed, "
			  "then read non-blocking and copied out, %d rounds "
			  "per repetition; Mop/s = million words per second.",
			  DR_RECS, WORDS, DR_ROUNDS);
	bench_report_end();
	return 0;
}
