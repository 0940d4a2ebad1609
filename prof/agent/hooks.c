// SPDX-License-Identifier: MIT
/*
 * prof/agent/hooks.c - libprofring-prof.so's interposed dlopen, dlclose,
 * dl_iterate_phdr, sigaction and signal, and the calls that take signal
 * masks and sets: sigprocmask, pthread_sigmask, signalfd, sigwait,
 * sigwaitinfo and sigtimedwait.
 *
 * The loader.  libunwind finds unwind tables through dl_iterate_phdr(),
 * which takes the loader's lock.  A sample taken with libunwind on a thread
 * that holds that lock (inside dlopen, dlclose or dl_iterate_phdr itself),
 * or while another thread holds it and waits, in turn, for a lock the
 * sampled thread's libunwind holds, deadlocks.  So every call into the
 * loader through these entry points is counted in `in_loader` (an atomic
 * add before and a sub after), and the handler unwinds with frame pointers
 * instead of libunwind while the count is nonzero (sampler.c counts it in
 * unwind_fallback).  The count is raised before the real call takes the
 * lock and lowered after it released it, so a handler that sees 0 knows
 * that no thread is in one of these calls; a thread that enters one after
 * that handler started waits for the lock its libunwind may hold only if
 * that handler is itself inside dl_iterate_phdr, and then the handler
 * finishes (it waits for nothing the entering thread holds).  Loader
 * locks taken by paths that do not go through these functions (glibc's
 * own TLS set-up for new threads) are not seen: libunwind stays opt-in.
 * After dlopen and dlclose return, the mappings are reported
 * (prof_maps_changed(), agent.c), outside any handler.  The loader
 * resolves a bare name along its caller's search path and takes the
 * caller from dlopen's return address, which would be ours: the hook
 * searches the caller's path itself (open_as_caller()).  A name with a
 * dynamic string token ("$ORIGIN/...") is still expanded against our
 * library, not the caller's.
 *
 * Signals.  A program that installs its own disposition for the
 * sampler's signal takes it over: prof_sampler_taken_over() stops
 * sampling before the call goes through, so our timers never fire into
 * the program's handler.  Every other call passes through unchanged, with
 * its result and errno.  (bsd_signal, sysv_signal and sigset are not
 * hooked.)
 *
 * Masks.  A program that blocks every signal and collects them itself
 * (signalfd, sigwait*, the event-loop pattern) must neither read ours nor
 * stop being sampled.  So while a session's signal is chosen, the sets the
 * program gives sigprocmask, pthread_sigmask, signalfd, sigwait,
 * sigwaitinfo and sigtimedwait go to libc without our signal: a blocking
 * mask never blocks it (SIG_SETMASK keeps its state as it is on the
 * thread: blocked only in our handler and our thread start and exit
 * windows), a signalfd or a wait never takes it.  The program is told what
 * it set: each thread keeps the program's view of our signal (blocked or
 * not; thread_view, initial-exec TLS), and every old mask returned says
 * it.  A thread that has not set it yet (one started with an inherited
 * mask) is told it is blocked if it is, or if every other real-time signal
 * is.  sigwaitinfo and sigtimedwait (unlike sigwait, whose glibc loop
 * retries) return EINTR when any handler runs: ours is blocked on the
 * thread for the wait, so a sample is taken when the wait returns instead
 * of cutting it short.  A set that holds our signal and at most half of
 * the other real-time signals names it on purpose (a program that took
 * SIGRTMAX for itself without a handler): that is a takeover, as a handler
 * is, and the call goes through as given.  After a takeover a thread whose
 * view was "blocked" gets the signal blocked for real, the taking thread
 * at once, the others at their next hooked call.  Masks set and signalfds
 * made before the session chose its signal (none under `record`, whose
 * session starts before main), raw rt_sigprocmask syscalls, and the masks
 * that sigsuspend, ppoll, pselect and epoll_pwait hold for their wait are
 * not seen: at worst they keep our samples of that thread pending.  Calls
 * from our own library (the collector blocks every signal on purpose) and
 * from libunwind (which blocks every signal around locks our handler's
 * walk may take) pass through unchanged: the caller's return address
 * tells.
 *
 * The next definitions are found with dlsym(RTLD_NEXT) once (the signal
 * functions' at load, by the constructor: dlsym is no call for a signal
 * handler).  Sanitizer builds (make tsan, make asan) interpose none of
 * this: the sanitizer runtimes intercept the same functions and call
 * dl_iterate_phdr before any instrumented code of ours may run, so there
 * the loader fallback, the takeover check, the mask guard and the mapping
 * reports after dlopen are off.
 */
#include "prof/agent/hooks.h"
#include "prof/agent/sampler.h"
#include "prof/agent/sampler_impl.h"
#include "prof/wire/stream.h"

#include "ring/compiler.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PROF_HOOKS_OFF 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PROF_HOOKS_OFF 1
#endif

#ifdef PROF_HOOKS_OFF
bool prof_hooks_in_loader(void)
{
	return false;
}

int prof_hooks_real_sigaction(int sig, const struct sigaction *act,
			      struct sigaction *old)
{
	return sigaction(sig, act, old);
}
#else
static atomic_int in_loader;

/* NEXT(type, name): the next definition of @name, looked up once. */
#define NEXT(fn_type, name)                                                 \
	({                                                                  \
		static _Atomic(fn_type) next_;                              \
		fn_type f_ =                                                \
			atomic_load_explicit(&next_, memory_order_relaxed); \
		if (!f_) {                                                  \
			void *p_ = dlsym(RTLD_NEXT, #name);                 \
			memcpy(&f_, &p_, sizeof(f_));                       \
			/* Any thread finds the same: relaxed. */           \
			atomic_store_explicit(&next_, f_,                   \
					      memory_order_relaxed);        \
		}                                                           \
		f_;                                                         \
	})

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);
typedef int (*phdr_cb)(struct dl_phdr_info *, size_t, void *);
typedef int (*iterate_fn)(phdr_cb, void *);
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);
typedef int (*signalfd_fn)(int, const sigset_t *, int);
typedef int (*sigwait_fn)(const sigset_t *, int *);
typedef int (*sigtimedwait_fn)(const sigset_t *, siginfo_t *,
			       const struct timespec *);

/* The next signal functions: one lookup each, shared by their callers. */
#define NEXT_FN(fn_type, name)              \
	static fn_type next_##name(void)    \
	{                                   \
		return NEXT(fn_type, name); \
	}
NEXT_FN(sigaction_fn, sigaction)
NEXT_FN(signal_fn, signal)
NEXT_FN(sigmask_fn, sigprocmask)
NEXT_FN(sigmask_fn, pthread_sigmask)
NEXT_FN(signalfd_fn, signalfd)
NEXT_FN(sigwait_fn, sigwait)
NEXT_FN(sigtimedwait_fn, sigtimedwait)

static void enter_loader(void)
{
	/* seq_cst: ordered before the real call's lock, see the top. */
	atomic_fetch_add_explicit(&in_loader, 1, memory_order_seq_cst);
}

static void leave_loader(void)
{
	/* seq_cst: after the real call released the lock. */
	atomic_fetch_sub_explicit(&in_loader, 1, memory_order_seq_cst);
}

/**
 * prof_hooks_in_loader() - is any thread inside dlopen, dlclose or
 * dl_iterate_phdr?  Async-signal-safe.
 */
bool prof_hooks_in_loader(void)
{
	/* seq_cst: pairs with enter_loader() and leave_loader(). */
	return atomic_load_explicit(&in_loader, memory_order_seq_cst) != 0;
}

static int dlclose_real(void *handle);

/*
 * The loader finds a bare name through the *caller's* search path (its
 * DT_RPATH, LD_LIBRARY_PATH, its DT_RUNPATH), and it learns who the
 * caller is from dlopen's return address: called from here, that would be
 * us, and a program that opens its plugins through its own RUNPATH would
 * fail to find them.  So a bare name not already loaded is looked for
 * along the caller's search path (dlinfo(RTLD_DI_SERINFO) on the caller's
 * link map) and opened by its full path; a name already loaded, a path, a
 * name found nowhere there (the ld.so cache, the default directories)
 * goes to the loader as it is.
 */
static char *caller_search(const char *file, const void *caller)
{
	struct link_map *lm = NULL;
	Dl_serinfo size, *info = NULL;
	char *found = NULL, *path;
	Dl_info di;

	if (!dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm ||
	    dlinfo(lm, RTLD_DI_SERINFOSIZE, &size))
		return NULL;
	info = malloc(size.dls_size);
	if (!info)
		return NULL;
	info->dls_size = size.dls_size;
	info->dls_cnt = size.dls_cnt;
	if (dlinfo(lm, RTLD_DI_SERINFO, info))
		goto out;
	for (unsigned int i = 0; !found && i < info->dls_cnt; i++) {
		if (asprintf(&path, "%s/%s", info->dls_serpath[i].dls_name,
			     file) < 0)
			break;
		if (!access(path, R_OK))
			found = path;
		else
			free(path);
	}
out:
	free(info);
	return found;
}

static void *open_as_caller(dlopen_fn next, const char *file, int mode,
			    const void *caller)
{
	void *h;
	char *path;

	if (!file || strchr(file, '/'))
		return next(file, mode);
	h = next(file, mode | RTLD_NOLOAD); /* by name, as the loader does */
	if (h) {
		void *again = next(file, mode); /* the caller's own reference */

		dlclose_real(h);
		return again;
	}
	path = caller_search(file, caller);
	if (!path)
		return next(file, mode);
	h = next(path, mode);
	free(path);
	return h ? h : next(file, mode);
}

RING_API void *dlopen(const char *file, int mode)
{
	dlopen_fn next = NEXT(dlopen_fn, dlopen);
	const void *caller = __builtin_return_address(0);
	int saved;
	void *h;

	if (!next)
		return NULL;
	enter_loader();
	saved = errno;
	h = open_as_caller(next, file, mode, caller);
	leave_loader();
	if (h) {
		errno = saved;
		prof_maps_changed(); /* keeps errno */
	}
	return h;
}

/* The next dlclose, for our own extra references. */
static int dlclose_real(void *handle)
{
	dlclose_fn next = NEXT(dlclose_fn, dlclose);

	return next ? next(handle) : -1;
}

RING_API int dlclose(void *handle)
{
	dlclose_fn next = NEXT(dlclose_fn, dlclose);
	int rc;

	if (!next)
		return -1;
	enter_loader();
	rc = next(handle);
	leave_loader();
	prof_maps_changed(); /* keeps errno */
	return rc;
}

RING_API int dl_iterate_phdr(phdr_cb cb, void *data)
{
	iterate_fn next = NEXT(iterate_fn, dl_iterate_phdr);
	int rc;

	if (!next)
		return 0;
	enter_loader();
	rc = next(cb, data);
	leave_loader();
	return rc;
}

/**
 * prof_hooks_real_sigaction() - sigaction() without the takeover check.
 */
int prof_hooks_real_sigaction(int sig, const struct sigaction *act,
			      struct sigaction *old)
{
	sigaction_fn next = next_sigaction();

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(sig, act, old);
}

/*
 * The program's view of our signal on this thread (see Masks): 0
 * unknown, else (signal << 1) | blocked, so that a view of a signal no
 * longer ours reads as unknown.  One int: a handler that interrupts an
 * update and sets its own leaves a whole value.
 */
static _Thread_local int thread_view __attribute__((tls_model("initial-exec")));

/*
 * A view kept of a signal that is no longer ours (@sig now): if the
 * program has it blocked here, it is blocked now, as the program set it
 * (other threads are settled at their next call).
 */
static void settle_view(int sig)
{
	sigmask_fn mask = next_pthread_sigmask();
	int v = thread_view;
	sigset_t one;

	if (!v || v >> 1 == sig)
		return;
	thread_view = 0;
	if (!(v & 1) || !mask)
		return;
	sigemptyset(&one);
	sigaddset(&one, v >> 1);
	mask(SIG_BLOCK, &one, NULL);
}

/* The program takes @sig: if ours, sampling stops for good. */
static void take_over(int sig)
{
	prof_sampler_taken_over(sig);
	/* Relaxed: taken_over() cleared it on this thread. */
	settle_view(
		atomic_load_explicit(&prof_smp.signo, memory_order_relaxed));
}

static bool installs_other(int sig, const void *handler)
{
	(void)sig;
	return !prof_sampler_is_our_handler(handler);
}

RING_API int sigaction(int sig, const struct sigaction *act,
		       struct sigaction *old)
{
	if (act && installs_other(sig, (const void *)act->sa_sigaction))
		take_over(sig);
	return prof_hooks_real_sigaction(sig, act, old);
}

RING_API sighandler_t signal(int sig, sighandler_t handler)
{
	signal_fn next = next_signal();

	if (!next) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	if (installs_other(sig, (const void *)handler))
		take_over(sig);
	return next(sig, handler);
}

/* ---- masks and waits (see Masks, above) ---- */

/* Our own object, from its ELF header to its end (the linker's). */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _end[] __attribute__((visibility("hidden")));

/* libunwind's code: set once at load (find_libunwind()), then read. */
#define MAX_RANGES 4
static uintptr_t unw_lo[MAX_RANGES], unw_hi[MAX_RANGES];
static atomic_int unw_n;

static int find_libunwind(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = strrchr(info->dlpi_name, '/');
	int n = atomic_load_explicit(&unw_n, memory_order_relaxed);

	(void)size;
	(void)data;
	name = name ? name + 1 : info->dlpi_name;
	if (strncmp(name, "libunwind", 9))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && n < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		unw_lo[n] = info->dlpi_addr + ph->p_vaddr;
		unw_hi[n] = unw_lo[n] + ph->p_memsz;
		/* Release: the range before the count that covers it. */
		atomic_store_explicit(&unw_n, ++n, memory_order_release);
	}
	return 0;
}

/* Is @caller (a return address) in our library or in libunwind? */
static bool from_us(const void *caller)
{
	uintptr_t pc = (uintptr_t)caller;
	/* Acquire: pairs with find_libunwind()'s release. */
	int n = atomic_load_explicit(&unw_n, memory_order_acquire);

	if (pc >= (uintptr_t)__ehdr_start && pc < (uintptr_t)_end)
		return true;
	for (int i = 0; i < n; i++)
		if (pc >= unw_lo[i] && pc < unw_hi[i])
			return true;
	return false;
}

/*
 * The session's signal if the call from @caller is to be guarded, else 0
 * (no signal chosen, or taken over; a call of ours or libunwind's).
 */
static int guarded(const void *caller)
{
	/* Relaxed: set by start before any timer is armed. */
	int sig = atomic_load_explicit(&prof_smp.signo, memory_order_relaxed);

	settle_view(sig);
	return sig && !from_us(caller) ? sig : 0;
}

/*
 * How many of the real-time signals other than @sig does @set hold, out
 * of how many (*@of)?
 */
static int other_rt(const sigset_t *set, int sig, int *of)
{
	int held = 0;

	*of = 0;
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
		if (s == sig)
			continue;
		++*of;
		held += sigismember(set, s) == 1;
	}
	return held;
}

/*
 * The set to give libc for the program's @set: @set itself when it lacks
 * @sig, else a copy in @copy without it.  When @takes (the call blocks or
 * waits), a set that names @sig on purpose, with at most half of the
 * other real-time signals (sigfillset's sets and "all but these few" hold
 * them all), takes our signal over: NULL, and the call is to go through
 * as given.
 */
static const sigset_t *without_ours(const sigset_t *set, int sig, bool takes,
				    sigset_t *copy)
{
	int of;

	if (!set || sigismember(set, sig) != 1)
		return set;
	if (takes && other_rt(set, sig, &of) * 2 <= of) {
		take_over(sig);
		return NULL;
	}
	*copy = *set;
	sigdelset(copy, sig);
	return copy;
}

/*
 * Is @sig blocked in the program's view, libc's mask being @real?
 * Unknown on this thread: if it is blocked there, or every other
 * real-time signal is (a mask inherited from a thread that blocked all).
 */
static bool view_blocked(int sig, const sigset_t *real)
{
	int v = thread_view, of;

	if (v >> 1 == sig)
		return v & 1;
	return sigismember(real, sig) == 1 || other_rt(real, sig, &of) == of;
}

static int mask_hook(sigmask_fn next, int how, const sigset_t *set,
		     sigset_t *old, int sig)
{
	sigset_t copy, real_old, cur;
	const sigset_t *give;
	bool was, now, in;
	int rc;

	give = without_ours(set, sig, how != SIG_UNBLOCK, &copy);
	if (set && !give) /* taken over */
		return next(how, set, old);
	if (set && how == SIG_SETMASK) {
		/* Our signal stays as it is on the thread. */
		if (give != &copy) {
			copy = *set;
			give = &copy;
		}
		if (!next(SIG_BLOCK, NULL, &cur) && sigismember(&cur, sig) == 1)
			sigaddset(&copy, sig);
	}
	in = set && sigismember(set, sig) == 1; /* before @old is written */
	rc = next(how, give, &real_old);
	if (rc)
		return rc;
	now = was = view_blocked(sig, &real_old);
	if (set && (how == SIG_SETMASK || in))
		now = how != SIG_UNBLOCK && in;
	thread_view = sig << 1 | now;
	if (old) {
		*old = real_old;
		if (was)
			sigaddset(old, sig);
		else
			sigdelset(old, sig);
	}
	return 0;
}

RING_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigmask_fn next = next_sigprocmask();
	int sig = guarded(__builtin_return_address(0));

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return sig ? mask_hook(next, how, set, old, sig) : next(how, set, old);
}

RING_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigmask_fn next = next_pthread_sigmask();
	int sig = guarded(__builtin_return_address(0));

	if (!next)
		return ENOSYS;
	return sig ? mask_hook(next, how, set, old, sig) : next(how, set, old);
}

RING_API int signalfd(int fd, const sigset_t *mask, int flags)
{
	signalfd_fn next = next_signalfd();
	int sig = guarded(__builtin_return_address(0));
	const sigset_t *give = mask;
	sigset_t copy;

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	if (sig)
		give = without_ours(mask, sig, true, &copy);
	return next(fd, give ? give : mask, flags);
}

RING_API int sigwait(const sigset_t *set, int *out)
{
	sigwait_fn next = next_sigwait();
	int sig = guarded(__builtin_return_address(0));
	const sigset_t *give = set;
	sigset_t copy;

	if (!next)
		return ENOSYS;
	/* glibc's sigwait retries after our handler: nothing to block. */
	if (sig)
		give = without_ours(set, sig, true, &copy);
	return next(give ? give : set, out);
}

/*
 * sigwaitinfo() and sigtimedwait() (@ts NULL: no limit).  A wait that may
 * sleep holds our signal blocked (a handler would cut it short with
 * EINTR) and unblocks it after if it was not blocked before.
 */
static int wait_hook(const sigset_t *set, siginfo_t *info,
		     const struct timespec *ts, int sig)
{
	sigtimedwait_fn next = next_sigtimedwait();
	sigmask_fn mask = next_pthread_sigmask();
	sigset_t copy, one, was;
	const sigset_t *give;
	bool sleeps, held;
	int rc, saved;

	if (!next || !mask) {
		errno = ENOSYS;
		return -1;
	}
	give = sig ? without_ours(set, sig, true, &copy) : NULL;
	if (!give) /* not guarded, or taken over */
		return next(set, info, ts);
	sigemptyset(&one);
	sigaddset(&one, sig);
	/* A zero wait never sleeps: nothing to hold. */
	sleeps = !ts || ts->tv_sec || ts->tv_nsec;
	held = sleeps && !mask(SIG_BLOCK, &one, &was) &&
	       sigismember(&was, sig) != 1;
	rc = next(give, info, ts);
	if (held) {
		saved = errno;
		mask(SIG_UNBLOCK, &one, NULL);
		errno = saved;
	}
	return rc;
}

RING_API int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return wait_hook(set, info, NULL, guarded(__builtin_return_address(0)));
}

RING_API int sigtimedwait(const sigset_t *set, siginfo_t *info,
			  const struct timespec *ts)
{
	return wait_hook(set, info, ts, guarded(__builtin_return_address(0)));
}

/*
 * At load, before prof.c's constructor starts a session and before the
 * program's: libunwind's code, and every next signal function, so that
 * no hook calls dlsym in a signal handler.
 */
__attribute__((constructor(101))) static void hooks_init(void)
{
	dl_iterate_phdr(find_libunwind, NULL);
	next_sigaction();
	next_signal();
	next_sigprocmask();
	next_pthread_sigmask();
	next_signalfd();
	next_sigwait();
	next_sigtimedwait();
}
#endif /* PROF_HOOKS_OFF */
