// SPDX-License-Identifier: MIT
/*
 * pprof/demangle.c - demangle C++ symbols with the C++ runtime's own
 * __cxa_demangle (libstdc++ or libc++abi), found at run time: profring
 * links no C++ runtime, and a hand-written demangler would be a large
 * thing to get wrong.
 *
 * In a profiled C++ program the runtime is already loaded and is found by
 * dlsym(RTLD_DEFAULT).  A C program has no mangled names, and loading a
 * C++ runtime into it at exit would change the program, so it is loaded
 * only where prof_demangle_allow_load() said so (the launcher, a process
 * of our own).  Without a runtime, names stay as they are.
 */
#include "pprof/demangle.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static atomic_bool may_load;
static _Atomic(cxa_demangle_fn) demangler;
static atomic_bool looked;

/**
 * prof_demangle_allow_load() - this process may load a C++ runtime to
 * demangle (the launcher's own process).
 */
void prof_demangle_allow_load(void)
{
	/* Relaxed: a setting read by the same thread later. */
	atomic_store_explicit(&may_load, true, memory_order_relaxed);
}

static cxa_demangle_fn find_demangler(void)
{
	cxa_demangle_fn fn =
		atomic_load_explicit(&demangler, memory_order_relaxed);
	void *sym, *h;

	if (fn || atomic_load_explicit(&looked, memory_order_relaxed))
		return fn;
	sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!sym && atomic_load_explicit(&may_load, memory_order_relaxed)) {
		h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		sym = h ? dlsym(h, "__cxa_demangle") : NULL;
	}
	memcpy(&fn, &sym, sizeof(fn));
	/*
	 * Relaxed: any thread finds the same function, or none.  Not found
	 * while loading was not allowed: look again once it is.
	 */
	atomic_store_explicit(&demangler, fn, memory_order_relaxed);
	if (fn || atomic_load_explicit(&may_load, memory_order_relaxed))
		atomic_store_explicit(&looked, true, memory_order_relaxed);
	return fn;
}

/**
 * prof_demangle() - the readable name of a C++ symbol.
 * @sym: a symbol name.
 *
 * Return: a malloc'd demangled name, or NULL when @sym is not a mangled
 * C++ name, no C++ runtime is at hand, or it would not demangle.
 */
char *prof_demangle(const char *sym)
{
	cxa_demangle_fn fn;
	int status = -1;
	char *out;

	if (strncmp(sym, "_Z", 2))
		return NULL;
	fn = find_demangler();
	if (!fn)
		return NULL;
	out = fn(sym, NULL, NULL, &status);
	if (status) {
		free(out);
		return NULL;
	}
	return out;
}
