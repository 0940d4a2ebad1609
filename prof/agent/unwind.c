// SPDX-License-Identifier: MIT
/*
 * prof/agent/unwind.c - stack walkers that run inside the SIGPROF handler.
 *
 * Both are async-signal-safe: they read only the signal's register context
 * and the interrupted thread's stack, allocate nothing and take no lock.
 *
 * Frame pointers.  With frame pointers every function's frame starts with a
 * record {saved caller frame pointer, return address} at the address held
 * in the frame pointer register (rbp on x86-64, x29 on arm64).  The walk
 * starts from the interrupted PC and frame pointer and follows the chain.
 * A frame pointer is only a number the interrupted code left in a register:
 * code built without frame pointers uses the register for anything.  So
 * before reading a record the walk checks that it lies inside the thread's
 * stack, above the interrupted stack pointer and above the previous record
 * (stacks grow down, so callers' records are at higher addresses), and is
 * aligned.  Every record read is then mapped stack memory and the walk
 * ends, at worst with a few bogus PCs, without ever faulting.  The bounds
 * come from pthread_getattr_np() when the thread started (never from the
 * handler).  For a thread whose bounds are unknown (it existed before the
 * profiler was loaded) each record is read with process_vm_readv() on our
 * own pid, which returns EFAULT instead of faulting: slower (a system call
 * per frame) but just as safe.
 *
 * libunwind.  unw_init_local2(UNW_INIT_SIGNAL_FRAME) on the signal's
 * context walks with the DWARF unwind tables, for code without frame
 * pointers.  It finds the tables through dl_iterate_phdr(), which takes the
 * dynamic loader's lock: see PROFRING_PROF_UNWIND_LIBUNWIND in prof.h.
 */
#include "prof/agent/unwind.h"

#include <profring/prof.h>

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#ifdef PROFRING_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

/* A frame record: the caller's frame pointer, then the return address. */
struct frame_record {
	uintptr_t next_fp;
	uintptr_t ret;
};

static bool context_registers(const void *ucontext, uintptr_t *pc,
			      uintptr_t *fp, uintptr_t *sp)
{
	const ucontext_t *uc = ucontext;

#if defined(__x86_64__)
	*pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	*fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	*sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	return true;
#elif defined(__aarch64__)
	*pc = (uintptr_t)uc->uc_mcontext.pc;
	*fp = (uintptr_t)uc->uc_mcontext.regs[29];
	*sp = (uintptr_t)uc->uc_mcontext.sp;
	return true;
#else
	(void)uc;
	*pc = *fp = *sp = 0;
	return false;
#endif
}

/*
 * arm64 code built with -mbranch-protection=pac-ret saves signed return
 * addresses: the signature sits in the pointer's top bits.  XPACLRI (a
 * hint, a no-op on CPUs without pointer authentication) strips it from
 * x30.  Not exercised here: the machines this was written on are x86-64.
 */
static inline uintptr_t strip_pac(uintptr_t ret)
{
#if defined(__aarch64__)
	register uintptr_t x30 __asm__("x30") = ret;

	__asm__("hint #7" : "+r"(x30));
	return x30;
#else
	return ret;
#endif
}

/*
 * Read the record at @fp.  @self_pid 0: the bounds check vouched for it,
 * read it directly.  Otherwise nobody did: process_vm_readv() on our own
 * pid fails with EFAULT where a load would fault.
 */
__attribute__((no_sanitize("address"))) static bool
read_record(uintptr_t fp, pid_t self_pid, struct frame_record *rec)
{
	const volatile uintptr_t *p = (const volatile uintptr_t *)fp;
	struct iovec local = { rec, sizeof(*rec) };
	struct iovec remote = { (void *)fp, sizeof(*rec) };

	if (!self_pid) {
		rec->next_fp = p[0];
		rec->ret = p[1];
		return true;
	}
	return syscall(SYS_process_vm_readv, (long)self_pid, &local, 1L,
		       &remote, 1L, 0L) == (long)sizeof(*rec);
}

/*
 * Walk the chain from the frame record at @fp, appending return addresses
 * to @pcs after the @res->n already there.  @lo is the lowest address a
 * record may sit at (the stack pointer), @hi the stack's top.
 */
static void walk_chain(uintptr_t fp, uintptr_t lo, uintptr_t hi, bool checked,
		       uintptr_t *pcs, size_t max,
		       struct prof_unwind_result *res)
{
	struct frame_record rec;
	pid_t self_pid = checked ? 0 : getpid(); /* one system call per walk */

	for (;;) {
		if (fp < lo || fp & (sizeof(uintptr_t) - 1) ||
		    fp > hi - sizeof(rec))
			return;
		if (!read_record(fp, self_pid, &rec))
			return;
		rec.ret = strip_pac(rec.ret);
		if (rec.ret < 4096)
			return; /* the outermost frame's zero, or junk */
		if (res->n == max) {
			res->truncated = true;
			return;
		}
		pcs[res->n++] = rec.ret;
		lo = fp + sizeof(rec);
		fp = rec.next_fp;
	}
}

/**
 * prof_unwind_fp() - walk the frame-pointer chain of a signal context.
 * @ucontext:	the handler's third argument.
 * @b:		the interrupted thread's stack bounds (zeros if unknown).
 * @pcs:	receives the PCs, leaf first.
 * @max:	room in @pcs.
 * @res:	receives the count and flags.
 *
 * Async-signal-safe; may change errno (the caller preserves it).
 */
void prof_unwind_fp(const void *ucontext, const struct prof_stack_bounds *b,
		    uintptr_t *pcs, size_t max, struct prof_unwind_result *res)
{
	uintptr_t pc, fp, sp;
	bool checked = b->hi > b->lo;

	res->n = 0;
	res->truncated = false;
	res->unchecked = !checked;
	if (!max || !context_registers(ucontext, &pc, &fp, &sp) || !pc)
		return;
	pcs[res->n++] = pc;
	/* On another stack (sigaltstack, coroutine): the leaf only. */
	if (checked && (sp < b->lo || sp >= b->hi))
		return;
	walk_chain(fp, sp, checked ? b->hi : UINTPTR_MAX, checked, pcs, max,
		   res);
}

/**
 * prof_unwind_fp_caller() - the return addresses above a frame of ours.
 * @fp:		__builtin_frame_address(0) of the function whose callers
 *		are wanted: pcs[0] is its own return address.
 * @b:		the calling thread's stack bounds (zeros if unknown).
 * @pcs, @max, @res: as prof_unwind_fp().
 *
 * For code that runs on the thread it unwinds (the heap profiler's
 * allocation hooks).  Async-signal-safe; may change errno.
 */
void prof_unwind_fp_caller(uintptr_t fp, const struct prof_stack_bounds *b,
			   uintptr_t *pcs, size_t max,
			   struct prof_unwind_result *res)
{
	bool checked = b->hi > b->lo;

	res->n = 0;
	res->truncated = false;
	res->unchecked = !checked;
	if (!max || (checked && (fp < b->lo || fp >= b->hi)))
		return;
	walk_chain(fp, fp, checked ? b->hi : UINTPTR_MAX, checked, pcs, max,
		   res);
}

#ifdef PROFRING_HAVE_LIBUNWIND
bool prof_unwind_libunwind_available(void)
{
	return true;
}

/**
 * prof_unwind_libunwind_prepare() - run libunwind's one-time set-up now.
 *
 * Its first unwind initialises global state under a mutex with signals
 * masked: that must not happen first inside a SIGPROF handler (a lock in
 * a handler; two threads' handlers racing through its init).  Called
 * from session start, outside any handler.
 */
void prof_unwind_libunwind_prepare(void)
{
	unw_context_t uc;
	unw_cursor_t cursor;

	if (unw_getcontext(&uc) || unw_init_local(&cursor, &uc) < 0)
		return;
	unw_step(&cursor);
}

/**
 * prof_unwind_libunwind() - walk a signal context with libunwind.
 * @ucontext:	the handler's third argument.
 * @pcs:	receives the PCs, leaf first.
 * @max:	room in @pcs.
 * @res:	receives the count and flags.
 */
void prof_unwind_libunwind(void *ucontext, uintptr_t *pcs, size_t max,
			   struct prof_unwind_result *res)
{
	unw_cursor_t cursor;
	unw_word_t ip;

	res->n = 0;
	res->truncated = false;
	res->unchecked = false;
	if (!max || unw_init_local2(&cursor, (unw_context_t *)ucontext,
				    UNW_INIT_SIGNAL_FRAME) < 0)
		return;
	do {
		if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || !ip)
			return;
		if (res->n == max) {
			res->truncated = true;
			return;
		}
		pcs[res->n++] = (uintptr_t)ip;
	} while (unw_step(&cursor) > 0);
}

/* Frames of ours above the one prof_unwind_libunwind_from() looks for. */
#define FROM_SKIP_MAX 16

/**
 * prof_unwind_libunwind_from() - libunwind's walk of the calling thread,
 * from the frame whose PC is @first on.
 * @first:	a return address on the caller's stack (the interposed
 *		allocator's own, read from its frame record): frames
 *		before it (ours) are skipped; none found, nothing kept.
 * @pcs, @max, @res: as prof_unwind_fp().
 *
 * Not for signal handlers: libunwind may take the loader's lock.  May
 * allocate (the caller keeps that out of the heap profile).
 */
void prof_unwind_libunwind_from(uintptr_t first, uintptr_t *pcs, size_t max,
				struct prof_unwind_result *res)
{
	void *ips[FROM_SKIP_MAX + PROFRING_PROF_MAX_FRAMES + 1];
	int n, at;

	res->n = 0;
	res->truncated = false;
	res->unchecked = false;
	if (!max)
		return;
	if (max > PROFRING_PROF_MAX_FRAMES)
		max = PROFRING_PROF_MAX_FRAMES;
	/*
	 * unw_backtrace(), not unw_step(): its walk caches each frame's
	 * shape per thread (a few ns a frame once warm), where unw_step()
	 * parses the CFI and validates addresses with system calls at every
	 * step (tens of microseconds a stack).
	 */
	n = unw_backtrace(ips, (int)(FROM_SKIP_MAX + max + 1));
	for (at = 0; at < n && at <= FROM_SKIP_MAX; at++)
		if ((uintptr_t)ips[at] == first)
			break;
	if (at >= n || at > FROM_SKIP_MAX)
		return;
	for (int i = at; i < n; i++) {
		if (res->n == max) {
			res->truncated = true;
			return;
		}
		pcs[res->n++] = (uintptr_t)ips[i];
	}
}
#else
bool prof_unwind_libunwind_available(void)
{
	return false;
}

void prof_unwind_libunwind_prepare(void)
{
}

void prof_unwind_libunwind(void *ucontext, uintptr_t *pcs, size_t max,
			   struct prof_unwind_result *res)
{
	(void)ucontext;
	(void)pcs;
	(void)max;
	res->n = 0;
	res->truncated = false;
	res->unchecked = false;
}

void prof_unwind_libunwind_from(uintptr_t first, uintptr_t *pcs, size_t max,
				struct prof_unwind_result *res)
{
	(void)first;
	(void)pcs;
	(void)max;
	res->n = 0;
	res->truncated = false;
	res->unchecked = false;
}
#endif
