// SPDX-License-Identifier: MIT
/*
 * prof/agent/pthread_hook.c - the interposed pthread_create(): every thread
 * started through it runs prof_sampler_thread_enter() (sampler.c: stack
 * bounds, our signal unblocked, its timer armed) before its own function;
 * it first notes its function for its exit sample (thread_cpu.c);
 * a thread started by one whose allocations the heap profiler ignores
 * (the HTTP server's, and the threads that library starts) is ignored
 * too.
 *
 * The next pthread_create is found once: a sanitizer runtime linked into
 * the same executable has its interceptor called (our strong definition
 * replaced its weak one), else dlsym(RTLD_NEXT) finds libc's (or that of
 * a sanitizer runtime preloaded before us).  Unlike hooks.c this one is
 * on in sanitizer builds: those runtimes expect pthread_create to be
 * interposed and provide their interceptor for it.
 */
#include "prof/agent/heap.h"
#include "prof/agent/sampler.h"
#include "prof/agent/thread_cpu.h"

#include "ring/compiler.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct thread_start {
	void *(*fn)(void *);
	void *arg;
	bool heap_ignored; /* created by a thread of the profiler's own */
};

static void *thread_trampoline(void *p)
{
	struct thread_start st = *(struct thread_start *)p;

	free(p);
	/* The profiler's threads' threads (the HTTP server's) are its own. */
	if (st.heap_ignored)
		prof_heap_ignore_thread();
	/* The stack its exit sample will have (thread_cpu.c). */
	prof_thread_cpu_started((uintptr_t)st.fn,
				(uintptr_t)__builtin_return_address(0));
	prof_sampler_thread_enter();
	return st.fn(st.arg);
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *,
				 void *(*)(void *), void *);

/*
 * Sanitizer runtimes interpose pthread_create too.  Linked statically into
 * the executable that holds our objects (a sanitizer build of a test), our
 * strong pthread_create replaces their weak one: we must call their
 * interceptor, which calls libc.  A runtime in a shared object loaded
 * before us (LD_PRELOAD=libclang_rt.asan...so:libprofring-prof.so) calls
 * us as its "real" pthread_create: we must call the next one, libc's.
 */
extern int __interceptor_pthread_create(pthread_t *, const pthread_attr_t *,
					void *(*)(void *), void *)
	__attribute__((weak));

static bool same_module(const void *a, const void *b)
{
	Dl_info ia, ib;

	return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

static _Atomic(pthread_create_fn) next_pthread_create;

static pthread_create_fn find_next_pthread_create(void)
{
	pthread_create_fn fn;
	void *sym;

	fn = atomic_load_explicit(&next_pthread_create, memory_order_relaxed);
	if (fn)
		return fn;
	if (__interceptor_pthread_create &&
	    same_module((const void *)__interceptor_pthread_create,
			(const void *)find_next_pthread_create)) {
		fn = __interceptor_pthread_create;
	} else {
		sym = dlsym(RTLD_NEXT, "pthread_create");
		memcpy(&fn, &sym, sizeof(fn));
	}
	/* Any thread finds the same function: relaxed is enough. */
	atomic_store_explicit(&next_pthread_create, fn, memory_order_relaxed);
	return fn;
}

/**
 * prof_real_pthread_create() - pthread_create without our wrapper.
 * @t, @attr, @fn, @arg: as for pthread_create().
 *
 * Return: as pthread_create(); EAGAIN if the next definition is missing.
 */
int prof_real_pthread_create(pthread_t *t, const pthread_attr_t *attr,
			     void *(*fn)(void *), void *arg)
{
	pthread_create_fn next = find_next_pthread_create();

	return next ? next(t, attr, fn, arg) : EAGAIN;
}

/**
 * pthread_create() - interposed: the new thread records its stack bounds
 * and arms its timer before running @fn.
 * @t, @attr, @fn, @arg: as for pthread_create().
 *
 * Return: as pthread_create().
 */
RING_API int pthread_create(pthread_t *t, const pthread_attr_t *attr,
			    void *(*fn)(void *), void *arg)
{
	bool ignored = prof_heap_self.ignore != 0;
	struct thread_start *st;
	int rc;

	prof_heap_ignore_begin(); /* the profiler's block, not the program's */
	st = malloc(sizeof(*st));
	prof_heap_ignore_end();
	if (!st) /* the thread still starts, unsampled */
		return prof_real_pthread_create(t, attr, fn, arg);
	st->fn = fn;
	st->arg = arg;
	st->heap_ignored = ignored;
	rc = prof_real_pthread_create(t, attr, thread_trampoline, st);
	if (rc)
		free(st);
	return rc;
}
