// SPDX-License-Identifier: MIT
/*
 * profbuf/read.c - profbuf's reader: the committed run, the overflow
 * record, sleeping and waking, EOF, fork children, and, in shared
 * buffers, stepping over dead writers.  The protocol is described at the
 * top of profbuf.c; this file follows its "Read", "Sleeping and waking",
 * "Overflow" (the reader's part), "Close and EOF" and "Dead writers"
 * rules, on a view of the buffer (struct pb_view): the block's own
 * geometry and state for a plain handle, or a guarded reader's copies
 * (guard.c), for which it also checks every claim the block makes.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <profring/profbuf.h>

#include "ring/compiler.h"
#include "ring/futex.h"
#include "ring/perturb.h"
#include "ring/pindex.h"
#include "profbuf/profbuf_impl.h"

static const void *const overflow_tag[1];

/*
 * record_at() - the length word of the record that starts at data offset
 * *@di or after it: steps over a pad marker (the unused tail of a shorter
 * commit, profbuf.c "Shorter commits") and then a rewind marker, moving
 * *@di to the record and adding the words stepped over to *@skip.  A pad
 * marker that leaves the ring reads as length 0, which every caller
 * rejects.
 */
static uint64_t record_at(const uint64_t *data, uint32_t data_len, uint32_t *di,
			  uint32_t *skip)
{
	uint64_t len = data[*di];

	if (len & PB_PAD_MARK) {
		uint64_t pad = len & ~PB_PAD_MARK;

		if (pad == 0 || pad > data_len - *di)
			return 0;
		*skip += (uint32_t)pad;
		*di += (uint32_t)pad;
		if (*di == data_len) /* the next record is at 0 */
			*di = 0;
		len = data[*di];
	}
	if (len == 0) { /* the rewind marker: the record is at 0 */
		*skip += data_len - *di;
		*di = 0;
		len = data[0];
	}
	return len;
}

/* ---- after fork ----------------------------------------------------- */

/*
 * committed_end() - the position after the records committed in order
 * from r_next, up to the first reserved record that is not (its length,
 * and so where the records after it start, may never be written).
 */
static uint64_t committed_end(struct profbuf *b, uint64_t bw)
{
	uint64_t pos = b->rs.r_next & ~RING_PINDEX_FLAGS;
	int32_t reserved =
		ring_count_sub(ring_pindex_tag(bw), ring_pindex_tag(pos));

	for (int32_t k = 0; k < reserved; k++) {
		uint32_t ti = ring_pindex_tag(pos) & (b->tag_len - 1);
		uint32_t di = ring_pindex_data(pos) & (b->data_len - 1);
		uint32_t skip = 0;
		uint64_t len;

		/* Acquire: pairs with the release store in put_record(). */
		if (atomic_load_explicit(&pb_stamps(b)[ti],
					 memory_order_acquire) !=
		    PB_STAMP_COMMITTED)
			break;
		len = record_at(pb_data(b), b->data_len, &di, &skip);
		if (len < 2 + b->hdrsize || len > b->data_len - di)
			break; /* malformed: give up from here */
		pos = ring_pindex_add(pos, skip + (uint32_t)len, 1);
	}
	return pos;
}

/*
 * profbuf_after_fork() - see profbuf.h.  The caller is the child's only
 * user of @b (no writer, reader or handler runs meanwhile), so plain
 * atomic stores suffice; relaxed, since the threads that use @b later are
 * started by the caller (thread creation orders them after us).
 */
RING_API int profbuf_after_fork(struct profbuf *b, int64_t now)
{
	uint64_t bw, o, cut;
	int32_t lost;

	if (!b)
		return -EINVAL;
	/* The parent's read in progress has no thread here. */
	atomic_store_explicit(&b->reading, 0, memory_order_relaxed);
	o = atomic_load_explicit(&b->ovf, memory_order_relaxed);
	if (o & OVF_SEALED)
		return 0; /* drained and sealed: EOF stays final */
	bw = atomic_load_explicit(&b->w, memory_order_relaxed);
	cut = committed_end(b, bw);
	lost = ring_count_sub(ring_pindex_tag(bw), ring_pindex_tag(cut));
	for (int32_t k = 0; k < lost; k++) {
		uint32_t ti =
			(ring_pindex_tag(cut) + (uint32_t)k) & (b->tag_len - 1);

		pb_tags(b)[ti] = NULL;
		atomic_store_explicit(&pb_stamps(b)[ti], 0,
				      memory_order_relaxed);
	}
	/* No reader sleeps here; EXTRA is re-derived from ovf by reads. */
	atomic_store_explicit(&b->w, cut | PB_EXTRA, memory_order_relaxed);
	/* A BUSY holder is a parent thread: its hold ends here. */
	o &= ~OVF_BUSY;
	if (lost > 0) {
		if (ovf_count(o) == 0) {
			o = ovf_next_gen(o);
			atomic_store_explicit(&b->ovf_time, (uint64_t)now,
					      memory_order_relaxed);
		}
		o = ovf_add(o, (uint32_t)lost);
	}
	atomic_store_explicit(&b->ovf, o, memory_order_relaxed);
	return lost > 0 ? lost : 0;
}

/* ---- the reader ----------------------------------------------------- */

/*
 * The reader works on a view (struct pb_view, profbuf_impl.h): where the
 * rings are, their sizes and what the reader keeps between reads.  A
 * plain handle (profbuf_read()) builds it from the block at each read and
 * keeps its state in the block.  A guarded reader
 * (profbuf_reader_attach()) built it once, from a geometry it checked,
 * and keeps everything in its own memory: of the block it reads only the
 * words writers write (w, ovf, ovf_time, busy_owner, the stamps, the
 * records and tags), and it treats each of them as a claim to check.
 */

/* Guarded: the ring is corrupted; every later read says so. */
int pb_corrupt(struct pb_view *v, const char *what)
{
	if (v->guard && !v->guard->corrupt)
		v->guard->corrupt = what;
	return -EIO;
}

/*
 * give_back_run() - commit the previous read: its slots go back to the
 * writers.
 */
static void give_back_run(struct pb_view *v)
{
	struct pb_rstate *st = v->st;
	uint64_t prev = st->r_given;
	int32_t n = ring_count_sub(ring_pindex_tag(st->r_next),
				   ring_pindex_tag(prev));
	uint32_t ti = ring_pindex_tag(prev) & (v->tag_len - 1);

	if (prev == st->r_next)
		return;
	for (int32_t i = 0; i < n; i++) {
		v->tags[ti] = NULL;
		/* Relaxed: published by the release store of r below. */
		atomic_store_explicit(&v->stamps[ti], 0, memory_order_relaxed);
		ti = (ti + 1) & (v->tag_len - 1);
	}
	st->r_given = st->r_next;
	/* Release: pairs with the acquire load of r in reserve(). */
	atomic_store_explicit(&v->b->r, st->r_next, memory_order_release);
	/*
	 * Release: pairs with the acquire load of limit in
	 * profbuf__write_fast().  Until it lands, an inline writer sees the
	 * old, smaller room: at worst it goes the slow way, which reads r.
	 */
	atomic_store_explicit(&v->b->limit,
			      ring_pindex_add(st->r_next & ~RING_PINDEX_FLAGS,
					      v->data_len, v->tag_len),
			      memory_order_release);
}

/*
 * guard_copy() - a guarded reader returns a copy of the run, in its own
 * memory, walked again there: what the consumer parses cannot change
 * under it, and a length a writer changed between the scan and the copy
 * is caught here.
 * Return: 0, or -EIO.
 */
static int guard_copy(struct pb_view *v, struct profbuf_read *out)
{
	struct pb_guard *g = v->guard;
	size_t at = 0;
	uint64_t len;

	memcpy(g->copy, out->data, out->ndata * sizeof(uint64_t));
	memcpy(g->tag_copy, out->tags, out->ntags * sizeof(void *));
	for (size_t k = 0; k < out->ntags; k++) {
		len = g->copy[at];
		if (len < 2 + (uint64_t)v->hdrsize || len > out->ndata - at)
			return pb_corrupt(v, "a record's length changed as it "
					     "was read");
		v->st->last_time = g->copy[at + 1];
		at += len;
	}
	if (at != out->ndata)
		return pb_corrupt(v,
				  "a record's length changed as it was read");
	out->data = g->copy;
	out->tags = g->tag_copy;
	return 0;
}

/*
 * scan_run() - find the committed run at r_next (see the protocol).
 *
 * Return: 1 with @out filled in, 0 if the first reserved record (if any)
 * is not committed, -EIO if the ring is malformed (cannot happen unless
 * memory was corrupted).
 */
static int scan_run(struct pb_view *v, uint64_t bw, struct profbuf_read *out)
{
	struct pb_rstate *st = v->st;
	uint64_t br = st->r_next;
	int32_t reserved =
		ring_count_sub(ring_pindex_tag(bw), ring_pindex_tag(br));
	uint32_t ti = ring_pindex_tag(br) & (v->tag_len - 1);
	uint32_t start = ring_pindex_data(br) & (v->data_len - 1);
	uint32_t tag_room = v->tag_len - ti;
	uint32_t skip = 0, di = start, n = 0, last = start;

	if (v->guard && (reserved < 0 || (uint32_t)reserved > v->tag_len))
		return pb_corrupt(v, "the write index is out of range");
	if (reserved > 0 && (uint32_t)reserved < tag_room)
		tag_room = (uint32_t)reserved;
	else if (reserved <= 0)
		tag_room = 0;
	/*
	 * Acquire: pairs with the release store of the stamp in
	 * put_record(): the record's words and tag are visible.
	 */
	while (n < tag_room && di < v->data_len &&
	       atomic_load_explicit(&v->stamps[ti + n], memory_order_acquire) ==
		       PB_STAMP_COMMITTED) {
		uint64_t len = v->data[di];

		if (len == 0 || (len & PB_PAD_MARK)) {
			/* rewind or padding: the next read steps over it */
			if (n > 0)
				break;
			len = record_at(v->data, v->data_len, &di, &skip);
			start = di;
		}
		if (len < 2 + v->hdrsize || len > v->data_len - di)
			return pb_corrupt(v,
					  "a record's length is out of range");
		last = di;
		di += (uint32_t)len;
		n++;
	}
	if (n == 0)
		return 0;
	st->last_time = v->data[last + 1];
	out->data = v->data + start;
	out->ndata = di - start;
	out->tags = v->tags + ti;
	out->ntags = n;
	if (v->guard && guard_copy(v, out))
		return -EIO;
	st->r_next = ring_pindex_make(ring_pindex_data(br) + skip + di - start,
				      ring_pindex_tag(br) + n);
	return 1;
}

/*
 * take_overflow() - the reader takes the pending overflow, unless a
 * writer holds BUSY.
 *
 * Return: true with the overflow record in @out.
 */
static bool take_overflow(struct pb_view *v, struct profbuf_read *out)
{
	struct profbuf *b = v->b;
	/*
	 * Acquire: pairs with ovf_release_busy(): the run's ovf_time is
	 * visible once we see its count with BUSY clear.
	 */
	uint64_t o = atomic_load_explicit(&b->ovf, memory_order_acquire);
	uint64_t time;

	do {
		if (ovf_count(o) == 0 || (o & OVF_BUSY))
			return false;
		time = atomic_load_explicit(&b->ovf_time, memory_order_relaxed);
		/*
		 * The generation makes the CAS fail if the count went to 0
		 * and back (a new run, a new time) since we loaded it.
		 * Acquire (also on failure, which reloads o): pairs with
		 * ovf_release_busy() as the load above does.  Release: pairs
		 * with the acquire of the next run's claim in pb_count_loss(),
		 * so the ovf_time we loaded above cannot be the next run's
		 * (load buffering, as on ARMv8).
		 */
	} while (!atomic_compare_exchange_weak_explicit(
		&b->ovf, &o, ovf_next_gen(o), memory_order_acq_rel,
		memory_order_acquire));

	memset(v->ovf_rec, 0, (3 + (size_t)v->hdrsize) * sizeof(uint64_t));
	v->ovf_rec[0] = 3 + v->hdrsize;
	v->ovf_rec[1] = time;
	v->ovf_rec[2 + v->hdrsize] = ovf_count(o);
	out->data = v->ovf_rec;
	out->ndata = 3 + v->hdrsize;
	out->tags = overflow_tag;
	out->ntags = 1;
	return true;
}

/*
 * seal() - the buffer is closed and drained as of @bw: make every later
 * write fail, so that EOF is final (see the protocol).
 *
 * Return: 1 sealed; 0 if w moved (look again); -EAGAIN if an overflow is
 * pending or being written (wait for it: its end calls wakeup_extra()).
 */
static int seal(struct profbuf *b, uint64_t bw)
{
	uint64_t o = atomic_load_explicit(&b->ovf, memory_order_relaxed);
	uint64_t sealed =
		ring_pindex_add(bw & ~RING_PINDEX_FLAGS, 0, PB_SEAL_DISTANCE);

	/* Relaxed: atomicity against pb_count_loss() is all we need. */
	while (!(o & OVF_SEALED)) {
		if (ovf_count(o) || (o & OVF_BUSY))
			return -EAGAIN;
		if (atomic_compare_exchange_weak_explicit(
			    &b->ovf, &o, o | OVF_SEALED, memory_order_relaxed,
			    memory_order_relaxed))
			break;
	}
	/* Relaxed: atomicity against reservations is all we need. */
	return atomic_compare_exchange_strong_explicit(
		&b->w, &bw, sealed, memory_order_relaxed, memory_order_relaxed);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_timespec(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };
	return ts;
}

/*
 * struct pb_wait - how long a read may still wait.
 * @block:    false: never wait
 * @deadline: CLOCK_MONOTONIC ns, or 0 for no limit
 * @backoff:  steps taken polling for an uncommitted record
 */
struct pb_wait {
	bool block;
	uint64_t deadline;
	uint32_t backoff;
};

/* Time left before the deadline; false if it has passed. */
static bool wait_left(const struct pb_wait *wt, struct timespec *left)
{
	uint64_t t;

	if (!wt->deadline)
		return true;
	t = now_ns();
	if (t >= wt->deadline)
		return false;
	*left = ns_to_timespec(wt->deadline - t);
	return true;
}

/*
 * wait_for_commit() - a record is reserved but not committed: back off.
 * Spin first (the writer is usually mid-memcpy), then yield, then sleep
 * 1 us doubling to 1 ms (the writer was preempted).
 */
static void wait_for_commit(struct pb_wait *wt)
{
	uint32_t step = wt->backoff++;
	struct timespec ts;

	if (step < 64) {
		for (int i = 0; i < 32; i++)
			ring_cpu_relax();
	} else if (step < 96) {
		sched_yield();
	} else {
		step -= 96;
		ts = ns_to_timespec(step < 10 ? 1000u << step : 1000000u);
		nanosleep(&ts, NULL);
	}
}

/*
 * sleep_reader() - sleep until a writer or close wakes us, starting from
 * @bw (nothing reserved beyond r_next, EXTRA clear).
 *
 * Return: 0 to look again, -ETIMEDOUT.
 */
static int sleep_reader(struct pb_view *v, uint64_t bw, struct pb_wait *wt)
{
	struct profbuf *b = v->b;
	struct timespec left, *timeout = NULL;
	uint32_t seq = atomic_load_explicit(&b->wake_seq, memory_order_relaxed);
	uint64_t cur;
	int rc;

	if (wt->deadline) {
		if (!wait_left(wt, &left))
			return -ETIMEDOUT;
		timeout = &left;
	}
	/*
	 * Release: pairs with the acquire fence in wake_reader(): our load
	 * of wake_seq above happens before the waker's increment.
	 */
	if (!atomic_compare_exchange_strong_explicit(
		    &b->w, &bw, bw | PB_SLEEPING, memory_order_release,
		    memory_order_relaxed))
		return 0;
	if (!(bw & PB_SLEEPING))
		v->st->sleeps++;
	ring_perturb();
	rc = ring_futex_wait_op(&b->wake_seq, seq, timeout, v->shared);
	if (rc != -ETIMEDOUT)
		return 0;
	/* Timed out: take our flag back, unless a waker already did. */
	cur = atomic_load_explicit(&b->w, memory_order_relaxed);
	/* Relaxed: we only withdraw the flag; nothing is published. */
	while (cur & PB_SLEEPING) {
		if (atomic_compare_exchange_weak_explicit(
			    &b->w, &cur, cur & ~PB_SLEEPING,
			    memory_order_relaxed, memory_order_relaxed)) {
			v->st->withdrawn++;
			break;
		}
	}
	return -ETIMEDOUT;
}

/*
 * Dead writers (shared buffers).  A writer process killed between its
 * reservation and its commit would hold the reader at its record forever.
 * In a shared buffer a writer stores the record's length (and rewind
 * marker), then an owner stamp naming its thread, before filling the
 * record (claim_record()).  A reader that has waited on such a record
 * into its sleeping back-off (about a millisecond) asks whether the owner
 * is gone (kill(tid, 0) fails with ESRCH, or /proc says zombie or dead);
 * if so it steps over the record, counts it as a loss in the overflow
 * word, as a writer that found no room would, and in dead_skipped.  A
 * stopped or merely slow writer is alive and is waited for.  The owner
 * stamp is stored a few instructions after the reservation: a writer
 * killed in between leaves a record with no owner, which only the
 * reader's own timeout bounds (stalled_unowned says so).  Stepping over
 * is work per record (a kill() and perhaps an open()): it stops at the
 * read's deadline, and a read that may not wait steps over nothing.
 */
#define PB_DEAD_CHECK_STEP 96

static bool task_is_gone(uint32_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd, saved = errno;
	bool gone = false;

	if (kill((pid_t)tid, 0) && errno == ESRCH) {
		gone = true;
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%u/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		gone = errno == ENOENT;
		goto out;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		p = strrchr(buf, ')');
		gone = p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	}
out:
	errno = saved;
	return gone;
}

/*
 * skip_dead_writer() - the first reserved record is not committed: step
 * over it if its owner died.
 * Return: 1 skipped (look again), 0 not, -EIO for a malformed length.
 */
static int skip_dead_writer(struct pb_view *v)
{
	struct pb_rstate *st = v->st;
	uint32_t ti = ring_pindex_tag(st->r_next) & (v->tag_len - 1);
	uint32_t di = ring_pindex_data(st->r_next) & (v->data_len - 1);
	uint32_t skip = 0;
	/* Acquire: pairs with the release store in claim_record(). */
	uint32_t stamp =
		atomic_load_explicit(&v->stamps[ti], memory_order_acquire);
	uint64_t len;

	if (stamp == PB_STAMP_FREE) {
		st->stalled_unowned = 1;
		return 0;
	}
	st->stalled_unowned = 0;
	if (!(stamp & PB_STAMP_OWNER) || !task_is_gone(stamp & ~PB_STAMP_OWNER))
		return 0;
	len = record_at(v->data, v->data_len, &di, &skip);
	if (len < 2 + v->hdrsize || len > v->data_len - di)
		return pb_corrupt(v, "a dead writer's record length is out of "
				     "range");
	st->r_next = ring_pindex_make(ring_pindex_data(st->r_next) + skip +
					      (uint32_t)len,
				      ring_pindex_tag(st->r_next) + 1);
	st->dead_skipped++;
	/* Counted like a write that found no room; -EINVAL only if sealed,
	 * which cannot be while a record is reserved. */
	pb_count_loss(v->b, (int64_t)st->last_time);
	return 1;
}

/*
 * recover_dead_busy() - shared buffers: BUSY is held by a writer whose
 * thread is gone: clear it, so that the pending losses can be taken.
 * The acquire load of ovf pairs with the release CAS that last cleared
 * BUSY (ovf_release_busy(), write_with_overflow()), which follows its
 * holder's busy_leaving(): the owner we then read is the current holder's
 * or 0 (unknown: left alone).  If the holder let go meanwhile our CAS
 * fails.  Counts only ever move by CAS, so none is lost or taken twice;
 * a first loss's time that was never stored reads as the previous one's.
 * Return: true if BUSY was cleared.
 */
static bool recover_dead_busy(struct pb_view *v)
{
	struct profbuf *b = v->b;
	uint64_t o = atomic_load_explicit(&b->ovf, memory_order_acquire);
	uint32_t owner;

	if (!(o & OVF_BUSY))
		return false;
	owner = atomic_load_explicit(&b->busy_owner, memory_order_relaxed);
	if (!(owner & PB_STAMP_OWNER) || !task_is_gone(owner & ~PB_STAMP_OWNER))
		return false;
	/* Release: as ovf_release_busy(), for whoever takes the count. */
	if (!atomic_compare_exchange_strong_explicit(&b->ovf, &o, o & ~OVF_BUSY,
						     memory_order_release,
						     memory_order_relaxed))
		return false;
	v->st->dead_skipped++;
	return true;
}

/*
 * read_step() - one look at the buffer.
 *
 * Return: 1 when @out holds something to return (data, overflow, EOF), 0
 * to look again, -EAGAIN when there is nothing and we may not wait, or an
 * error.
 */
static int read_step(struct pb_view *v, struct pb_wait *wt,
		     struct profbuf_read *out)
{
	struct profbuf *b = v->b;
	/*
	 * Relaxed: each record is published by its stamp, read with acquire
	 * in scan_run(); w only bounds the scan.
	 */
	uint64_t bw = atomic_load_explicit(&b->w, memory_order_relaxed);
	bool reserved = ring_pindex_tag(bw) != ring_pindex_tag(v->st->r_next);
	struct timespec left;
	int rc = scan_run(v, bw, out);

	if (rc)
		return rc;
	if (take_overflow(v, out))
		return 1;
	/* Acquire: pairs with the fetch_or in profbuf_close(). */
	if (!reserved && (atomic_load_explicit(&b->ovf, memory_order_acquire) &
			  OVF_CLOSED)) {
		rc = seal(b, bw);
		if (rc == 1) {
			v->st->withdrawn += !!(bw & PB_SLEEPING);
			v->st->eof_returned = true;
			out->eof = true;
			return 1;
		}
		if (rc == 0)
			return 0;
	}
	if (bw & PB_EXTRA) {
		/*
		 * Acquire: pairs with the release CAS in wakeup_extra(): the
		 * ovf change (count, BUSY, CLOSED) behind it is visible when
		 * we look again.  Failure means w moved: look again anyway.
		 */
		atomic_compare_exchange_strong_explicit(
			&b->w, &bw, bw & ~PB_EXTRA, memory_order_acquire,
			memory_order_relaxed);
		return 0;
	}
	if (!wt->block)
		return -EAGAIN;
	if (!wait_left(wt, &left))
		return -ETIMEDOUT;
	if (reserved && v->shared && wt->backoff >= PB_DEAD_CHECK_STEP) {
		rc = skip_dead_writer(v);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	if (reserved) {
		wait_for_commit(wt);
		return 0;
	}
	return sleep_reader(v, bw, wt);
}

/*
 * Looks that find w or ovf moved, or step over a dead writer, ask for
 * another look without waiting: a read with a deadline checks it every
 * PB_LOOKS_PER_CHECK of them, so that writers that keep w moving (or
 * memory that says so) cannot hold it past its deadline.
 */
#define PB_LOOKS_PER_CHECK 64u

static int read_steps(struct pb_view *v, struct pb_wait *wt,
		      struct profbuf_read *out)
{
	struct timespec left;
	uint32_t looks = 0;
	int rc;

	while ((rc = read_step(v, wt, out)) == 0) {
		if (++looks % PB_LOOKS_PER_CHECK == 0 && wt->deadline &&
		    !wait_left(wt, &left))
			return -ETIMEDOUT;
	}
	return rc;
}

static int read_view(struct pb_view *v, struct pb_wait *wt,
		     struct profbuf_read *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (v->guard && v->guard->corrupt)
		return -EIO;
	if (v->st->eof_returned) {
		out->eof = true;
		return 0;
	}
	give_back_run(v);
	rc = read_steps(v, wt, out);
	if (rc == -ETIMEDOUT) {
		if (v->shared)
			recover_dead_busy(v);
		/* One last look, so that a timeout never hides a record. */
		wt->block = false;
		rc = read_steps(v, wt, out);
		if (rc == -EAGAIN)
			rc = -ETIMEDOUT;
	}
	if (rc == 1 || rc == -EAGAIN)
		rc = 0;
	if (rc == -EIO)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* The view of a plain handle: the block's own geometry and state. */
static void block_view(struct profbuf *b, struct pb_view *v)
{
	*v = (struct pb_view){
		.b = b,
		.data = pb_data(b),
		.tags = pb_tags(b),
		.stamps = pb_stamps(b),
		.ovf_rec = pb_ovf_rec(b),
		.hdrsize = b->hdrsize,
		.data_len = b->data_len,
		.tag_len = b->tag_len,
		.shared = b->shared,
		.st = &b->rs,
	};
	/* Relaxed: only the reader stores r; we are the reader. */
	b->rs.r_given = atomic_load_explicit(&b->r, memory_order_relaxed);
}

static int read_common(struct profbuf *b, struct pb_wait *wt,
		       struct profbuf_read *out)
{
	struct pb_view v;
	int rc;

	if (!b || !out)
		return -EINVAL;
	/*
	 * Acquire: pairs with the release store at the end of the previous
	 * read, handing over the reader-owned fields.
	 */
	if (atomic_exchange_explicit(&b->reading, 1, memory_order_acquire))
		return -EBUSY;
	block_view(b, &v);
	rc = read_view(&v, wt, out);
	/* Release: pairs with the acquire exchange above. */
	atomic_store_explicit(&b->reading, 0, memory_order_release);
	return rc;
}

/* A deadline @timeout_ns from now; 0 ("none") past 2^64 ns. */
static uint64_t deadline_in(uint64_t timeout_ns)
{
	uint64_t d = now_ns() + timeout_ns;

	return d < timeout_ns ? 0 : d;
}

RING_API int profbuf_read(struct profbuf *b, enum profbuf_mode mode,
			  struct profbuf_read *r)
{
	struct pb_wait wt = { .block = mode == PROFBUF_BLOCKING };

	if (mode != PROFBUF_BLOCKING && mode != PROFBUF_NONBLOCKING)
		return -EINVAL;
	return read_common(b, &wt, r);
}

RING_API int profbuf_read_timeout(struct profbuf *b, uint64_t timeout_ns,
				  struct profbuf_read *r)
{
	struct pb_wait wt = { .block = true };

	wt.deadline = deadline_in(timeout_ns);
	return read_common(b, &wt, r);
}

int pb_read_view_timeout(struct pb_view *v, uint64_t timeout_ns,
			 struct profbuf_read *r)
{
	struct pb_wait wt = { .block = true };

	wt.deadline = deadline_in(timeout_ns);
	return read_view(v, &wt, r);
}
