// SPDX-License-Identifier: MIT
/*
 * prof/agent/perf_event.c - per-thread CPU sampling with perf_event_open()
 * (perf_event.h), async-profiler's cpu engine and perf's cpu-clock.
 *
 * Why.  A POSIX CPU-time timer fires at the kernel's tick at the earliest
 * (250 Hz on Debian's kernels): asked for 999 Hz, a thread gets about 250
 * signals per CPU-second, each weighing four periods, and the profile is
 * as noisy as 250 Hz.  A software cpu-clock perf event is an hrtimer on
 * the thread's CPU time: it overflows at the period asked, tick or not.
 *
 * How.  One counter per thread (pid = its tid, any CPU), sample_period =
 * the period in nanoseconds.  By default user mode only (exclude_kernel:
 * what perf_event_paranoid 2, Debian's default, allows a process on
 * itself): an overflow that finds the thread in the kernel is no sample
 * at all, and the CPU of that period goes into the weight of the
 * thread's next sample (thread_cpu.c), which lands wherever the thread
 * runs in user mode when a later period ends, not where it entered the
 * kernel.  So a program's system calls and page faults are charged to
 * the code that runs after them.  Asked to (@kernel, `--timer kernel`),
 * the counter counts overflows in the kernel too (exclude_kernel 0:
 * perf_event_paranoid 1 or less, or CAP_PERFMON / CAP_SYS_ADMIN; refused
 * with EACCES otherwise); the signal of such an overflow is delivered
 * as the thread returns to user mode, on the instruction after the
 * system call or on the faulting one, so the time is charged where the
 * program entered the kernel, as perf charges its kernel samples to
 * their first user-space frame.  The price: the signal is pending while
 * the thread is still in the kernel, and a call that then goes to sleep
 * is cut short: restarted (SA_RESTART) or, for poll, nanosleep,
 * epoll_wait and the others signal(7) lists, returning EINTR (profring-prof(1),
 * --timer kernel).  User mode only, an overflow's signal is delivered as
 * the interrupt that raised it returns to user mode, and cuts no call.
 *
 * The descriptor is set O_ASYNC with F_SETSIG our signal and F_SETOWN_EX
 * the thread, so each overflow queues our real-time signal to that thread
 * with si_code POLL_IN and si_fd the counter's descriptor; no ring buffer
 * is mapped (the signal is all we need: the handler unwinds the thread's
 * own stack, as with timers).
 *
 * Telling our signals.  A counter's signal carries no value of ours; its
 * si_fd does.  Each armed descriptor's number (up to MAX_FD) holds its
 * event's id in `armed`: a signal with POLL_IN (or POLL_HUP) whose si_fd
 * holds one is ours.  The id is stored (release) before the counter is
 * enabled and cleared (release) after it is disabled, before the
 * descriptor is closed, and only if it is still that counter's (a
 * compare-exchange: the number may hold a later counter of ours); the
 * handler's load is relaxed: a signal queued by a counter since closed
 * finds its number clear and is dropped, unless the number was reused by
 * a later counter of ours meanwhile (then it counts as that counter's
 * sample: one at most per closed counter).
 *
 * Descriptors.  The program owns its descriptor table: it may close
 * every number above 2 (closefrom, a daemon's start, code about to exec)
 * or dup2() over any, and its next open() takes the lowest free number,
 * perhaps one of ours it closed.  So (issue 37):
 *   - a counter is moved at once (F_DUPFD_CLOEXEC) to the lowest free
 *     number at or above a floor, half the soft RLIMIT_NOFILE but at most
 *     1024: the program, which gets the lowest free numbers, reaches
 *     ours only after it holds that many, and loops that close 3 to 255
 *     or to FD_SETSIZE leave them alone;
 *   - the process holds at most half the soft RLIMIT_NOFILE in counters
 *     (the caller says how many it holds: @held): past that, and when no
 *     number at or above the floor is free, arming fails with EMFILE and
 *     the thread gets a POSIX timer (which holds no descriptor), so the
 *     program keeps at least half its limit;
 *   - a descriptor is ours only while fstat() shows the file our counter
 *     had (the same device and inode: every perf event's, eventfd's and
 *     epoll's anonymous inode) and PERF_EVENT_IOC_ID (an ioctl only perf
 *     events answer, '$' being perf's ioctl letter) gives our event's id,
 *     unique in the system; prof_perf_disarm() and prof_perf_forget()
 *     close nothing else.  A number the program closed or took over is
 *     only forgotten.  (A program thread that closes our number and
 *     opens a file on it in the microseconds between that check and our
 *     close() can still lose its file: only a program that closes
 *     numbers it never opened can.)
 */
#include "prof/agent/perf_event.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_FD 65536
#define MAX_FLOOR 1024

/* Each number's counter's id, 0 if none (see the top of the file). */
static _Atomic uint64_t armed[MAX_FD];

static void mark(const struct prof_perf_counter *c)
{
	/* Release: orders the counter's set-up before the mark the
	 * handler tests; see the top of the file. */
	atomic_store_explicit(&armed[c->fd], c->id, memory_order_release);
}

static void unmark(const struct prof_perf_counter *c)
{
	uint64_t id = c->id;

	/* Release: orders the disable before; only if the number is still
	 * this counter's (see the top of the file).  Relaxed on failure:
	 * nothing was written. */
	atomic_compare_exchange_strong_explicit(&armed[c->fd], &id, 0,
						memory_order_release,
						memory_order_relaxed);
}

/*
 * The floor our descriptors are placed at (see Descriptors); *@share:
 * how many counters the process may hold.
 */
static int fd_floor(size_t *share)
{
	struct rlimit rl;
	rlim_t soft = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &rl))
		soft = rl.rlim_cur;
	if (soft > MAX_FD)
		soft = MAX_FD;
	*share = (size_t)soft / 2;
	return soft / 2 < MAX_FLOOR ? (int)(soft / 2) : MAX_FLOOR;
}

/* Move @fd, ours, to the floor or above; -EMFILE if no number is free. */
static int move_up(int fd, int floor)
{
	int high;

	if (fd >= floor)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	close(fd);
	return high < 0 ? -EMFILE : high;
}

/* Fill in @c's identity (its file, its event's id); -errno. */
static int identify(struct prof_perf_counter *c)
{
	struct stat st;
	uint64_t id = 0;

	if (fstat(c->fd, &st) || ioctl(c->fd, PERF_EVENT_IOC_ID, &id))
		return -errno;
	if (!id)
		return -EINVAL;
	c->dev = (uint64_t)st.st_dev;
	c->ino = (uint64_t)st.st_ino;
	c->id = id;
	return 0;
}

int prof_perf_arm(struct prof_perf_counter *c, pid_t tid, int signo,
		  uint64_t period_ns, bool kernel, size_t held)
{
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = tid };
	struct perf_event_attr a;
	size_t share;
	int floor = fd_floor(&share);
	int fd, err;

	c->fd = -1;
	if (held >= share)
		return -EMFILE;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = period_ns;
	a.disabled = 1;
	a.exclude_kernel = !kernel;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	fd = move_up(fd, floor);
	if (fd < 0)
		return fd;
	c->fd = fd;
	if (fd >= MAX_FD) {
		err = -EMFILE;
		goto fail;
	}
	err = identify(c);
	if (err)
		goto fail;
	if (fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, signo) ||
	    fcntl(fd, F_SETOWN_EX, &owner))
		goto fail_errno;
	mark(c);
	if (!ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
		return 0;
	unmark(c);
fail_errno:
	err = -errno;
fail:
	close(fd);
	c->fd = -1;
	return err;
}

bool prof_perf_is_intact(const struct prof_perf_counter *c)
{
	struct stat st;
	uint64_t id = 0;

	if (c->fd < 0 || fstat(c->fd, &st) || (uint64_t)st.st_dev != c->dev ||
	    (uint64_t)st.st_ino != c->ino)
		return false;
	return !ioctl(c->fd, PERF_EVENT_IOC_ID, &id) && id == c->id;
}

bool prof_perf_disarm(struct prof_perf_counter *c)
{
	bool ours = prof_perf_is_intact(c);

	if (c->fd < 0)
		return false;
	if (ours)
		ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0);
	unmark(c);
	if (ours)
		close(c->fd);
	c->fd = -1;
	return ours;
}

void prof_perf_forget(struct prof_perf_counter *c)
{
	/* No disable: the event is the parent's too. */
	bool ours = prof_perf_is_intact(c);

	if (c->fd < 0)
		return;
	unmark(c);
	if (ours)
		close(c->fd);
	c->fd = -1;
}

bool prof_perf_is_ours(const siginfo_t *si)
{
	int fd = si->si_fd;

	if ((si->si_code != POLL_IN && si->si_code != POLL_HUP) || fd < 0 ||
	    fd >= MAX_FD)
		return false;
	/* Relaxed: see the top of the file (a stale id costs one sample). */
	return atomic_load_explicit(&armed[fd], memory_order_relaxed) != 0;
}
