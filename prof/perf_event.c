// SPDX-License-Identifier: MIT
/*
 * prof/perf_event.c - per-thread CPU sampling with perf_event_open()
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
 * epoll_wait and the others signal(7) lists, returning EINTR (README,
 * "Kernel time").  User mode only, an overflow's signal is delivered as
 * the interrupt that raised it returns to user mode, and cuts no call.
 *
 * The descriptor is set O_ASYNC with F_SETSIG our signal and F_SETOWN_EX
 * the thread, so each overflow queues our real-time signal to that thread
 * with si_code POLL_IN and si_fd the counter's descriptor; no ring buffer
 * is mapped (the signal is all we need: the handler unwinds the thread's
 * own stack, as with timers).
 *
 * Telling our signals.  A counter's signal carries no value of ours; its
 * si_fd does.  Armed descriptors are marked in a bitmap (up to MAX_FD): a
 * signal with POLL_IN (or POLL_HUP) whose si_fd is marked is ours.  The
 * mark is set (release) before the counter is enabled and cleared
 * (release) after it is disabled, before the descriptor is closed; the
 * handler's load is relaxed: a signal queued by a counter since closed
 * finds its bit clear and is dropped, unless the number was reused by a
 * counter of a later session meanwhile (then it counts as that session's
 * sample: one at most per closed counter).
 */
#include "prof/perf_event.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_FD 65536

static _Atomic uint64_t armed[MAX_FD / 64];

static void mark(int fd, bool on)
{
	uint64_t bit = UINT64_C(1) << (fd % 64);

	/* Release: orders the counter's set-up before (and its disable
	 * after) the mark the handler tests; see the top of the file. */
	if (on)
		atomic_fetch_or_explicit(&armed[fd / 64], bit,
					 memory_order_release);
	else
		atomic_fetch_and_explicit(&armed[fd / 64], ~bit,
					  memory_order_release);
}

int prof_perf_arm(pid_t tid, int signo, uint64_t period_ns, bool kernel)
{
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = tid };
	struct perf_event_attr a;
	int fd, err;

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
	if (fd >= MAX_FD) {
		close(fd);
		return -EMFILE;
	}
	if (fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, signo) ||
	    fcntl(fd, F_SETOWN_EX, &owner))
		goto fail;
	mark(fd, true);
	if (!ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
		return fd;
	mark(fd, false);
fail:
	err = -errno;
	close(fd);
	return err;
}

void prof_perf_disarm(int fd)
{
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	mark(fd, false);
	close(fd);
}

void prof_perf_forget(int fd)
{
	mark(fd, false);
	close(fd);
}

bool prof_perf_is_ours(const siginfo_t *si)
{
	int fd = si->si_fd;

	if ((si->si_code != POLL_IN && si->si_code != POLL_HUP) || fd < 0 ||
	    fd >= MAX_FD)
		return false;
	/* Relaxed: see the top of the file (a stale bit costs one sample). */
	return atomic_load_explicit(&armed[fd / 64], memory_order_relaxed) &
	       (UINT64_C(1) << (fd % 64));
}
