// SPDX-License-Identifier: MIT
/*
 * prof/hooks.c - libprofring-prof.so's interposed dlopen, dlclose,
 * dl_iterate_phdr, sigaction and signal.
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
 * The next definitions are found with dlsym(RTLD_NEXT) once.  Sanitizer
 * builds (make tsan, make asan) interpose none of this: the sanitizer
 * runtimes intercept the same functions and call dl_iterate_phdr before
 * any instrumented code of ours may run, so there the loader fallback,
 * the takeover check and the mapping reports after dlopen are off.
 */
#include "prof/hooks.h"
#include "prof/sampler.h"
#include "prof/stream.h"

#include "ring/compiler.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	sigaction_fn next = NEXT(sigaction_fn, sigaction);

	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(sig, act, old);
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
		prof_sampler_taken_over(sig);
	return prof_hooks_real_sigaction(sig, act, old);
}

RING_API sighandler_t signal(int sig, sighandler_t handler)
{
	signal_fn next = NEXT(signal_fn, signal);

	if (!next) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	if (installs_other(sig, (const void *)handler))
		prof_sampler_taken_over(sig);
	return next(sig, handler);
}
#endif /* PROF_HOOKS_OFF */
